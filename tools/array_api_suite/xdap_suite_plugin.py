"""pytest plugin for running the Array API test suite (data-apis/array-api-tests)
on several MPI ranks; ``tools/array_api_suite/run.py`` loads it.

Every rank must draw the same examples, or the ranks' collective calls part
ways.  Derandomized hypothesis nearly does it; two things do not:

- hypothesis (>= 6.131) mixes into its draws constants read from the source
  of every *local* module in ``sys.modules`` -- a set that grows as modules
  are imported lazily, not alike on every rank (and cached in a directory the
  ranks share).  Off: no module's constants;
- health checks time the draws (``too_slow``): a slow, oversubscribed rank
  could fail one the others pass.  Off;
- a few tests draw with ``strategy.example()``, which shuffles its batch
  with the process's global ``random``: seeded from the test's id before
  each test, alike on every rank.

Each rank also writes every test's outcome the moment it is known to
``$XDAP_SUITE_OUT/outcomes.<rank>`` (a hung rank's progress stays readable).

``XDAP_SUITE_LAYOUT`` (test-only, ``run.py --layout``): the namespace's
creation functions (and ``reshape``, with which hypothesis shapes what it
made) lay every array of two or more elements out over all ranks, as a
user's data would be, instead of the default blocks that leave a small
array on one rank (``default``):

- ``split`` (``run.py --split``): irregular blocks with an empty rank, or
  a 2-D grid of unequal sizes;
- ``cyclic``: dim 0 cyclic, block 1 (2 for odd lengths);
- ``block-cyclic``: dim 0 in blocks of 2 or more dealt round the ranks, the
  last block partial;
- ``grid``: a 2-D grid whose trailing dim is split (1 x P, or 2 x P/2);
- ``empty``: irregular blocks with one rank holding nothing (on 2 ranks,
  the other holds everything);
- ``random``: one of these for each array, drawn from the test's id and
  the array's place in the test -- the same choice on every rank.

The arrays the creation functions hand out are counted
(``$XDAP_SUITE_OUT/arrays.<rank>``): 0-d, on one rank, split over several,
empty -- and by the layout each took.
"""
import functools
import json
import os
import random
import zlib

import pytest
from hypothesis.internal.conjecture import providers

providers._get_local_constants = lambda: providers._local_constants    # stays empty

_RANK = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
_OUT = None


def pytest_runtest_setup(item):
    random.seed(zlib.crc32(item.nodeid.encode()))
    _DRAW["test"], _DRAW["n"] = item.nodeid, 0


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from hypothesis import HealthCheck, settings
    settings.register_profile("xdap-mpi", parent=settings.get_profile("array-api-tests"),
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("xdap-mpi")


# -- the arrays the suite gets: counted, and spread over the ranks on request -------
_COUNTS = {"0-d": 0, "one rank": 0, "split": 0, "empty": 0}
LAYOUTS = ("default", "split", "cyclic", "block-cyclic", "grid", "empty", "random")
_LAID = {}                  # layout -> arrays handed out in it
_DRAW = {"test": "", "n": 0}    # the running test, and how many arrays it was handed
_CREATION = ("asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
             "from_dlpack", "reshape", "zeros_like", "ones_like", "empty_like", "full_like")


def _ranks_holding(x):
    d = x.distribution
    return sum(1 for r in range(d.comm.size) if all(n > 0 for n in d.local_shape_of(r)))


def _count(x):
    if not hasattr(type(x), "__xdap_wrap__"):
        return
    if x.ndim == 0:
        _COUNTS["0-d"] += 1
    elif not x.size:
        _COUNTS["empty"] += 1
    elif _ranks_holding(x) > 1:
        _COUNTS["split"] += 1
    else:
        _COUNTS["one rank"] += 1


def _sizes(n, parts, salt):
    """``n`` items over ``parts`` grid positions, unequal; one position
    empty when there are three or more (which one: by ``salt``), so the
    items still lie on two positions or more.  Every other position holds
    one item at least while there are items enough."""
    if parts == 1:
        return [n]
    empty = salt % parts if parts >= 3 else None
    holders = [q for q in range(parts) if q != empty]
    weights = {q: 1 + (q + salt) % 3 for q in holders}
    sizes = [0] * parts
    first = holders[:n]                          # one each, as far as n goes
    for q in first:
        sizes[q] = 1
    rest = n - len(first)
    total = sum(weights.values())
    for q in holders:
        sizes[q] += rest * weights[q] // total
    sizes[max(holders, key=lambda q: weights[q])] += n - sum(sizes)
    return sizes


def _spread(x):
    """``x`` redistributed over every rank, unevenly (deterministic in its
    shape: every rank makes the same choice)."""
    if not hasattr(type(x), "__xdap_wrap__") or x.ndim == 0 or x.size < 2 or \
            x.parts.info.ragged:
        return x
    P = x.comm.size
    shape = x.shape
    salt = sum((k + 1) * n for k, n in enumerate(shape))
    rest = ("n",) * (len(shape) - 2)
    if len(shape) >= 2 and shape[0] >= 2 and shape[1] >= 2 and P in (2, 4) and salt % 2:
        grid = (2, P // 2) if P == 4 else (1, 2)
        return x.redistribute(dist=("b", "b") + rest, grid=grid + (1,) * len(rest),
                              sizes=(_sizes(shape[0], grid[0], salt),
                                     _sizes(shape[1], grid[1], salt + 1)) + (None,) * len(rest))
    if shape[0] >= 2:
        return x.redistribute(dist=("b",) + ("n",) * (len(shape) - 1),
                              sizes=(_sizes(shape[0], P, salt),) + (None,) * (len(shape) - 1))
    if len(shape) >= 2 and shape[1] >= 2:
        return x.redistribute(dist=("n", "b") + rest,
                              sizes=(None, _sizes(shape[1], P, salt)) + (None,) * len(rest))
    return x


def _cyclic(x, block_size):
    shape = x.shape
    return x.redistribute(dist=("c",) + ("n",) * (len(shape) - 1),
                          block_size=(block_size,) + (None,) * (len(shape) - 1))


def _laid_out(x, layout):
    """``x`` in ``layout`` (``LAYOUTS``), or as it is where the layout does
    not apply (0-d, one element, ragged; a 1-D array has no trailing dim to
    split).  ``(array, the layout it took)``; deterministic in its shape and
    the test's draw: every rank makes the same choice."""
    if not hasattr(type(x), "__xdap_wrap__") or x.ndim == 0 or x.size < 2 or \
            x.parts.info.ragged:
        return x, None
    if layout == "random":
        _DRAW["n"] += 1
        pick = zlib.crc32(f"{_DRAW['test']}#{_DRAW['n']}".encode()) % (len(LAYOUTS) - 2)
        layout = LAYOUTS[1 + pick]                   # one of split .. empty
    shape, P = x.shape, x.comm.size
    salt = sum((k + 1) * n for k, n in enumerate(shape))
    rest = ("n",) * (len(shape) - 1)
    if layout == "split":
        return _spread(x), layout
    if layout in ("cyclic", "block-cyclic") and shape[0] >= 2:
        n = shape[0]
        if layout == "cyclic":
            return _cyclic(x, 1 if n % 2 == 0 else 2), layout
        block = next((b for b in range(2, n) if n % b), 2)     # the last block partial
        return _cyclic(x, block), layout
    if layout == "grid" and len(shape) >= 2 and shape[-1] >= 2:
        grid = (2, P // 2) if P % 2 == 0 and P > 2 and shape[-2] >= 2 else (1, P)
        lead = ("n",) * (len(shape) - 2)
        return x.redistribute(dist=lead + ("b", "b"), grid=(1,) * len(lead) + grid,
                              sizes=(None,) * len(lead) + (_sizes(shape[-2], grid[0], salt),
                                                           _sizes(shape[-1], grid[1], salt + 1))
                              ), layout
    if layout == "empty" and shape[0] >= 1:
        empty = salt % P
        holders = [q for q in range(P) if q != empty] or [0]
        sizes = [0] * P
        for i in range(shape[0]):                        # dealt round the others, in blocks
            sizes[holders[i * len(holders) // shape[0]]] += 1
        return x.redistribute(dist=("b",) + rest, sizes=(sizes,) + (None,) * len(rest)), layout
    return x, None


def _wrap(f, layout):
    @functools.wraps(f)                 # the suite checks each function's signature
    def wrapped(*args, **kwargs):
        out = f(*args, **kwargs)
        # copy=False promises a view of the input: moving it would break that
        if layout != "default" and kwargs.get("copy") is not False and \
                not any(out is a for a in args):
            out, took = _laid_out(out, layout)
            if took:
                _LAID[took] = _LAID.get(took, 0) + 1
        _count(out)
        return out
    return wrapped


def _instrument():
    import xdap.array_api as xp
    layout = os.environ.get("XDAP_SUITE_LAYOUT") or \
        ("split" if os.environ.get("XDAP_SUITE_SPLIT", "0") not in ("", "0") else "default")
    if layout not in LAYOUTS:
        raise ValueError(f"XDAP_SUITE_LAYOUT must be one of {LAYOUTS}, got {layout!r}")
    for name in _CREATION:
        setattr(xp, name, _wrap(getattr(xp, name), layout))


_instrument()


def pytest_sessionfinish(session, exitstatus):
    where = os.environ.get("XDAP_SUITE_OUT", ".")
    with open(os.path.join(where, f"arrays.{_RANK}"), "w") as f:
        json.dump(dict(_COUNTS, layouts=_LAID), f)


def pytest_runtest_logreport(report):
    global _OUT
    if report.when != "call" and not (report.failed or report.skipped):
        return
    if _OUT is None:
        where = os.environ.get("XDAP_SUITE_OUT", ".")
        _OUT = open(os.path.join(where, f"outcomes.{_RANK}"), "w", buffering=1)
    _OUT.write(f"{report.outcome} {report.nodeid}\n")
    if report.failed:
        errors = [line for line in str(report.longrepr).splitlines() if line.startswith("E ")]
        _OUT.write("".join(f"    {line}\n" for line in errors[:6]))
