"""One rank's mistake is every rank's error.

Every collective entry point is called with one value different or bad on
ONE rank (the last), the rest as a user would pass them.  Every rank must
raise the same ValueError/TypeError -- never hang, never return different
results per rank.  Each case runs under a watchdog: a hang aborts the launch
after WATCHDOG seconds and fails the case, with every thread's stack.
"""
import os
import tempfile
from decimal import Decimal

import numpy as np
import pytest

import xdap
import xdap.agreement
from helpers import debug_mode, same_error

RANKS = (2, 3, 4)
WATCHDOG = 30


def expect_same_error(comm, call):
    """``call()`` must raise ValueError/TypeError on every rank, the same one."""
    return same_error(comm, call, (ValueError, TypeError), seconds=WATCHDOG)[1]


def odd(comm) -> bool:
    return comm.rank == comm.size - 1


def arr(comm, n=12, **kw):
    return xdap.from_global(np.arange(float(n)), comm=comm, **kw)


def _tmpdir(comm):
    return comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)


# Each case: (comm) -> None, doing the call with the last rank's argument off.
CASES = {
    # -- creation ------------------------------------------------------------------------
    "from_global root differs": lambda c: xdap.from_global(
        np.arange(8.0) if c.rank in (0, c.size - 1) else None, root=c.size - 1 if odd(c) else 0,
        comm=c),
    "from_global dist differs": lambda c: xdap.from_global(
        np.arange(8.0), dist=("c",) if odd(c) else ("b",), comm=c),
    "from_global block_size float": lambda c: xdap.from_global(
        np.arange(8.0), dist=("c",), block_size=(2.7 if odd(c) else 2,), comm=c),
    "from_global block_size bool": lambda c: xdap.from_global(
        np.arange(8.0), dist=("c",), block_size=(True if odd(c) else 1,), comm=c),
    "from_global data differs in shape": lambda c: xdap.from_global(
        np.arange(9.0 if odd(c) else 8.0), comm=c),
    # a 0-d array and a 1-element one of the same value were one argument
    # (two shapes of result, no error): the fuzzer's XDAP_FUZZ_SEED=1 found it
    "asarray 0-d on one rank": lambda c: xdap.array_api.asarray(
        np.float64(np.nan) if odd(c) else np.array([np.nan]), dtype=bool),
    "from_global 0-d on one rank": lambda c: xdap.from_global(
        np.array(3.0) if odd(c) else np.array([3.0]), comm=c),
    "zeros shape differs": lambda c: xdap.zeros((9 if odd(c) else 8,), comm=c),
    "zeros shape float": lambda c: xdap.zeros((8.0 if odd(c) else 8,), comm=c),
    "zeros type differs": lambda c: xdap.zeros((8,), type="int32" if odd(c) else "float64",
                                               comm=c),
    "full fill differs": lambda c: xdap.full((8,), 2.0 if odd(c) else 1.0, comm=c),
    "arange stop differs": lambda c: xdap.arange(9 if odd(c) else 8, comm=c),
    "from_function raises on one rank": lambda c: xdap.from_function(
        (lambda i: 1 / 0) if odd(c) else (lambda i: i * 1.0), (8,), comm=c),
    "from_local dtype differs": lambda c: xdap.from_local(
        np.zeros(3, np.int32 if odd(c) else np.float64), comm=c),
    "from_local trailing dims differ": lambda c: xdap.from_local(
        np.zeros((3, 3 if odd(c) else 2)), comm=c),
    "from_local u indices float": lambda c: xdap.from_local(
        np.zeros(2), dist="u", indices=np.array([2 * c.rank, 2 * c.rank + 1],
                                                float if odd(c) else int), comm=c),
    "from_local u size differs": lambda c: xdap.from_local(
        np.zeros(2), dist="u", indices=[2 * c.rank, 2 * c.rank + 1],
        size=2 * c.size + (1 if odd(c) else 0), comm=c),
    "from_local axis differs": lambda c: xdap.from_local(
        np.zeros((2, 2)), axis=1 if odd(c) else 0, comm=c),
    "DistArray local shape off": lambda c: xdap.DistArray(
        arr(c).distribution, np.zeros(arr(c).distribution.local_shape[0] + odd(c))),
    "from_global option does not pickle": lambda c: xdap.from_global(
        np.arange(8.0), dist=("c",), block_size=((lambda: 1) if odd(c) else 1,), comm=c),
    # -- protocols -----------------------------------------------------------------------
    "from_distarray dim dict does not pickle": lambda c: xdap.from_distarray(
        _dap_with(arr(c), note=lambda: 0), comm=c),
    "from_distarray shared position Decimal size": lambda c: xdap.from_distarray(
        _dap_with(_rows(c), dim=1, size=Decimal(5)), comm=c),
    "from_distarray shared position bool size": lambda c: xdap.from_distarray(
        _dap_with(_rows(c), dim=1, size=True), comm=c),
    "from_distarray u size 2**40, three indices": lambda c: xdap.from_distarray(
        {"__version__": "0.10.0", "buffer": np.zeros(3),
         "dim_data": ({"dist_type": "u", "size": 2 ** 40, "proc_grid_size": c.size,
                       "proc_grid_rank": c.rank, "indices": np.arange(3) + 3 * c.rank},)},
        comm=c),
    "from_distarray size float": lambda c: xdap.from_distarray(
        _dap_with(arr(c), size=12.0 if odd(c) else 12), comm=c),
    "from_distarray size bool grid": lambda c: xdap.from_distarray(
        _dap_with(arr(c), proc_grid_size=True if odd(c) else c.size), comm=c),
    "from_partitioned differs": lambda c: xdap.from_partitioned(
        arr(c, 13 if odd(c) else 12).__partitioned__, comm=c),
    # -- movement ------------------------------------------------------------------------
    "redistribute method differs": lambda c: arr(c).redistribute(
        dist=("c",), method="packed" if odd(c) else "datatypes"),
    "redistribute dist differs": lambda c: arr(c).redistribute(dist=("b",) if odd(c) else ("c",)),
    "redistribute block_size float": lambda c: arr(c).redistribute(
        dist=("c",), block_size=(1.5 if odd(c) else 1,)),
    "to_global root differs": lambda c: arr(c).to_global(root=1 if odd(c) else 0),
    "to_global root out of range": lambda c: arr(c).to_global(root=c.size if odd(c) else 0),
    "to_global root float": lambda c: arr(c).to_global(root=0.0 if odd(c) else 0),
    "sum axis differs": lambda c: _grid2(c).sum(axis=1 if odd(c) else 0),
    "sum axis out of range": lambda c: _grid2(c).sum(axis=5 if odd(c) else 0),
    "reduction op differs": lambda c: (_grid2(c).max() if odd(c) else _grid2(c).sum()),
    "migrate dest out of range": lambda c: arr(c).migrate(
        np.full(arr(c).distribution.local_shape[0], c.size if odd(c) else 0)),
    "migrate dest float": lambda c: arr(c).migrate(
        np.zeros(arr(c).distribution.local_shape[0], float if odd(c) else int)),
    "exchange_halos on a different array": lambda c: (
        _padded(c, "int32") if odd(c) else _padded(c, "float64")).exchange_halos(),
    "exchange_halos read-only on one rank": lambda c: _readonly_padded(c).exchange_halos(),
    "accumulate_halos mode differs": lambda c: _padded(c).accumulate_halos(
        mode="replace" if odd(c) else "add"),
    "Scatter needed out of range": lambda c: xdap.Scatter(
        arr(c), np.array([12 if odd(c) else 0])),
    "Scatter needed float": lambda c: xdap.Scatter(
        arr(c), np.array([0.0 if odd(c) else 0])),
    "Scatter.forward different array": lambda c: xdap.Scatter(arr(c), [0, 1]).forward(
        arr(c).astype_int() if False else (arr(c) * 2 if not odd(c) else _other_dist(c))),
    "Scatter.reverse mode differs": lambda c: xdap.Scatter(arr(c), [0, 1]).reverse(
        np.ones(2), into=arr(c), mode="max" if odd(c) else "add"),
    # -- kernels -------------------------------------------------------------------------
    "kernel out= wrong shape": lambda c: xdap.kernels.sin(
        arr(c), out=arr(c, 13) if odd(c) else arr(c)),
    "kernel scalar type differs": lambda c: xdap.kernels.add(
        xdap.from_global(np.arange(8), comm=c), 1.5 if odd(c) else 1),
    "kernel operand differs": lambda c: xdap.kernels.add(
        arr(c), arr(c, 13) if odd(c) else arr(c)),
    "kernel name differs": lambda c: (xdap.kernels.sin if odd(c) else xdap.kernels.cos)(arr(c)),
    # default mode: the kernel is local; its result's type differs, and the next
    # collective on it (its vote describes the operand) is one error
    "kernel scalar type differs, then a reduction": lambda c: xdap.kernels.add(
        xdap.from_global(np.arange(8), comm=c), 1.5 if odd(c) else 1).sum(),
    # -- save / load ---------------------------------------------------------------------
    "save path differs": lambda c: arr(c).save(os.path.join(_tmpdir(c), "x" if odd(c) else "y")),
    "load dist differs": lambda c: xdap.load(_saved(c), dist=("c",) if odd(c) else ("b",), comm=c),
    "load path differs": lambda c: xdap.load(_saved(c) + ("-no" if odd(c) else ""), comm=c),
}


def _dap_with(a, dim=0, **change):
    d = a.__distarray__()
    d["dim_data"] = tuple(dict(x) for x in d["dim_data"])
    if odd(a.comm):
        d["dim_data"][dim].update(change)
    return d


def _rows(c):
    """Rows in blocks, columns whole: every rank shares grid position 0 of dim 1."""
    return xdap.from_global(np.arange(4.0 * c.size * 5).reshape(4 * c.size, 5), comm=c)


def _grid2(c):
    return xdap.from_global(np.arange(24.0).reshape(4, 6), dist=("b", "b"),
                            grid=(1, c.size) if c.size in (2, 3) else (2, 2), comm=c)


def _padded(c, dtype="float64"):
    return xdap.from_global(np.arange(16).astype(dtype), dist=("b",), padding=((1, 1),), comm=c)


def _readonly_padded(c):
    a = _padded(c)
    if odd(c):
        a.parts.values.flags.writeable = False
    return a


def _other_dist(c):
    return arr(c, 12, dist=("c",))


def _saved(c):
    path = os.path.join(_tmpdir(c), "a.xdap")
    arr(c).save(path)
    return path


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_rank_differs(comm, case):
    # an elementwise kernel makes no MPI call in the default mode and writes no
    # ledger entry (its fixed cost is NumPy's): another kernel, or a scalar of
    # another type, on one rank is caught where it happens in debug mode
    with debug_mode(True) if case in DEBUG_ONLY else debug_mode(xdap.agreement.debug()):
        message = expect_same_error(comm, lambda: CASES[case](comm))
    assert message


DEBUG_ONLY = {"kernel name differs", "kernel scalar type differs"}
