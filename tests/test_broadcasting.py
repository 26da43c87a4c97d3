"""Broadcasting between DistArrays, NumPy arrays and scalars, against NumPy
on the global arrays, on 1-4 ranks: the operand of the result's shape never
moves; NumPy operands contribute this rank's block (no MPI call); smaller
DistArrays are gathered (collective) unless they stretch in place along
size-1 undistributed dims.  Also NumPy's reductions and in-place operators
with NumPy operands."""
import numpy as np
import pytest
from mpi4py import MPI

import xdap
import xdap.agreement
import xdap.kernels.library
from test_local_work import Counting

RANKS = (1, 2, 3, 4)
A = np.arange(5 * 4, dtype=float).reshape(5, 4) * 0.5 - 3


def layouts(P):
    empty = {1: [5], 2: [5, 0], 3: [2, 0, 3], 4: [0, 2, 0, 3]}[P]
    return [dict(dist=("b",)), dict(dist=("c", "b")), dict(dist=("b",), sizes=(empty,)),
            dict(dist=("b",), padding=((1, 1),))]


@pytest.mark.mpi(ranks=RANKS)
def test_broadcasting_matches_numpy(comm):
    for kw in layouts(comm.size):
        a = xdap.from_global(A, comm=comm, **kw)
        z = xdap.from_global(2.0, comm=comm)
        col = xdap.from_global(A[:, :1].copy(), comm=comm, **kw)
        cases = [
            (a - a.mean(axis=0), A - A.mean(axis=0)),
            (a * np.arange(4.0), A * np.arange(4.0)),
            (np.arange(4.0) * a, np.arange(4.0) * A),
            (a + z, A + 2.0), (z * a, 2.0 * A),
            (a / a.sum(axis=1)[:, None], A / A.sum(axis=1)[:, None]),
            (xdap.kernels.add(a, np.arange(5.0)[:, None]), A + np.arange(5.0)[:, None]),
            (a < np.float32(1.0), A < 1.0),
            (np.maximum(a, np.zeros((1, 4))), np.maximum(A, 0.0)),
        ]
        if kw.get("dist") == ("b",) and "padding" not in kw:
            cases.append((col + np.arange(4.0), A[:, :1] + np.arange(4.0)))
        for got, want in cases:
            g = got.to_numpy()
            assert g.shape == want.shape and g.dtype == want.dtype, (kw, g.shape, g.dtype)
            np.testing.assert_allclose(g, want, rtol=1e-15, err_msg=str(kw))
    s = xdap.zeros((4, 3), comm=comm).sum(axis=0) + np.zeros(3)
    np.testing.assert_array_equal(s.to_numpy(), np.zeros(3))


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_numpy_operands_and_aligned_arrays_move_nothing(comm):
    quiet = Counting(MPI.COMM_WORLD)
    a = xdap.from_global(A, comm=quiet)
    rows = a.sum(axis=1)
    saved = xdap.agreement.set_debug(False)
    try:
        Counting.calls.clear()
        column = rows[:, None]               # a view: the key goes in the ledger, no MPI call
        assert Counting.calls == []
        Counting.calls.clear()
        b = a * np.arange(4.0)
        c = a / column                       # the row sums stretch along dim 1 in place
        assert Counting.calls == []
    finally:
        xdap.agreement.set_debug(saved)
    assert b.distribution == a.distribution and c.distribution == a.distribution
    np.testing.assert_allclose(c.to_numpy(), A / A.sum(axis=1)[:, None])


@pytest.mark.mpi(ranks=(1, 3))
def test_shapes_that_do_not_broadcast_are_numpy_errors(comm):
    a = xdap.from_global(A, comm=comm)
    with pytest.raises(ValueError, match="could not be broadcast together"):
        a + np.ones(3)
    with pytest.raises(ValueError, match="could not be broadcast together"):
        a + xdap.from_global(np.ones(7), comm=comm)


@pytest.mark.mpi(ranks=(1, 2))
def test_numpy_functions_and_in_place_operators(comm):
    a = xdap.from_global(A, comm=comm)
    assert np.sum(a) == A.sum() and np.mean(a) == A.mean() and np.max(a) == A.max()
    assert np.min(a) == A.min() and bool(np.any(a)) and not np.all(a)
    np.testing.assert_allclose(np.sum(a, axis=0).to_numpy(), A.sum(axis=0))
    np.testing.assert_allclose(np.sum(a, axis=0, keepdims=True).to_numpy(),
                               A.sum(axis=0, keepdims=True))
    assert np.max(a, keepdims=True).to_numpy().tolist() == A.max(keepdims=True).tolist()
    with pytest.raises(TypeError, match="out= not supported"):
        np.sum(a, out=a)
    b = a
    a += np.arange(4.0)                      # updates a, as NumPy does: b sees it
    assert b is a
    np.testing.assert_array_equal(b.to_numpy(), A + np.arange(4.0))
