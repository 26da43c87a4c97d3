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

``XDAP_SUITE_SPLIT=1`` (test-only, ``run.py --split``): the namespace's
creation functions (and ``reshape``, with which hypothesis shapes what it
made) spread every array of two or more elements over all ranks --
irregular blocks with an empty rank, or a 2-D grid of unequal sizes --
as a user's data would be, instead of the default blocks that leave a
small array on one rank.  Either way the arrays the creation functions
hand out are counted (``$XDAP_SUITE_OUT/arrays.<rank>``): 0-d, on one
rank, split over several.
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


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from hypothesis import HealthCheck, settings
    settings.register_profile("xdap-mpi", parent=settings.get_profile("array-api-tests"),
                              suppress_health_check=list(HealthCheck))
    settings.load_profile("xdap-mpi")


# -- the arrays the suite gets: counted, and spread over the ranks on request -------
_COUNTS = {"0-d": 0, "one rank": 0, "split": 0, "empty": 0}
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


def _wrap(f, split):
    @functools.wraps(f)                 # the suite checks each function's signature
    def wrapped(*args, **kwargs):
        out = f(*args, **kwargs)
        # copy=False promises a view of the input: moving it would break that
        if split and kwargs.get("copy") is not False and not any(out is a for a in args):
            out = _spread(out)
        _count(out)
        return out
    return wrapped


def _instrument():
    import xdap.array_api as xp
    split = os.environ.get("XDAP_SUITE_SPLIT", "0") not in ("", "0")
    for name in _CREATION:
        setattr(xp, name, _wrap(getattr(xp, name), split))


_instrument()


def pytest_sessionfinish(session, exitstatus):
    where = os.environ.get("XDAP_SUITE_OUT", ".")
    with open(os.path.join(where, f"arrays.{_RANK}"), "w") as f:
        json.dump(_COUNTS, f)


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
