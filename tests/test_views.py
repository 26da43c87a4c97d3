"""Views cost a view: ``a.T``, ``permute_dims``, strided slices and
``reshape`` into whole rows keep every rank's block as a view of the
array's memory (O(1), no copy, no data moved), and everything downstream
-- kernels, ``out=``, in-place operators, reductions, sort, movement,
exports -- reads and writes the array itself.  Against NumPy on the
global array, on 1-4 ranks, for block (with empty ranks and padding),
cyclic and 2-D grids."""
import numpy as np
import pytest

import xdap
from helpers import check_global, layouts2

RANKS = (1, 2, 3, 4)
G = np.random.default_rng(5).standard_normal((7, 5))


def shares(view, base) -> bool:
    """This rank's block of ``view`` is a view into ``base``'s (or empty)."""
    v = view.local_numpy()
    return v.size == 0 or np.shares_memory(v, base.local_numpy())


@pytest.mark.mpi(ranks=RANKS)
def test_transposes_and_strided_slices_are_views(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        dist = tuple(kw.get("dist", ("b",))) + ("n", "n")
        # (what, the view, NumPy's, the dims of a it slices: views where they are blocks)
        for what, view, want, sliced in (("T", a.T, G.T, ()),
                                         ("permute", xdap.permute_dims(a, (1, 0)), G.T, ()),
                                         ("[::2]", a[::2], G[::2], (0,)),
                                         ("[::-1, 1::2]", a[::-1, 1::2], G[::-1, 1::2], (0, 1)),
                                         ("T[::-2]", a.T[::-2], G.T[::-2], (1,))):
            if all(dist[j] in "bn" for j in sliced):
                assert shares(view, a), (what, kw)
            check_global(view, want, (what, kw))
            check_global(view + 1, want + 1, (what, "+ 1", kw))
            check_global(np.sin(view) * view, np.sin(want) * want, (what, "sin", kw))
            check_global(view.sum(axis=0), want.sum(axis=0), (what, "sum", kw))
            check_global(xdap.sort(view, axis=0), np.sort(want, axis=0), (what, "sort", kw))
            check_global(view.redistribute(dist=("n", "b")), want, (what, "moved", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_writes_through_a_view_reach_the_array(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        want = G.copy()
        t = a.T
        t += 1                                  # in place, through the strided view
        want += 1
        check_global(a, want, ("T += 1", kw))
        xdap.kernels.multiply(t, 2.0, out=t)    # out= a strided view
        want *= 2
        check_global(a, want, ("out=T", kw))
        if kw.get("dist", ("b",))[0] == "b":
            s = a[::2]
            s -= 3
            want[::2] -= 3
            check_global(a, want, ("[::2] -= 3", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_reshape_into_whole_rows_is_a_view(comm):
    line = np.arange(60.0 * comm.size)
    a = xdap.from_global(line, comm=comm)
    for shape in ((comm.size * 6, 10), (comm.size * 3, 4, 5), (comm.size, 60)):
        r = xdap.reshape(a, shape, copy=False)
        assert shares(r, a)
        check_global(r, line.reshape(shape), shape)
        axes = tuple(range(len(shape)))[::-1]
        check_global(xdap.permute_dims(r, axes), line.reshape(shape).transpose(axes), shape)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_missing_values_and_exports_of_views(comm):
    masked = np.ma.masked_less(G, 0.0)
    a = xdap.from_global(masked, comm=comm)
    t = a.T                                     # a bitmap has no strides: a copy
    got = t.to_numpy()
    assert np.array_equal(np.ma.getmaskarray(got), masked.mask.T)
    assert np.array_equal(np.ma.filled(got, 0), masked.filled(0).T)
    b = xdap.from_global(G, comm=comm)
    d = b.T.__distarray__()                      # the DAP buffer is the strided view itself
    assert np.array_equal(np.asarray(d["buffer"]), b.T.local_numpy())
    assert np.asarray(d["buffer"]).size == 0 or \
        np.shares_memory(np.asarray(d["buffer"]), b.local_numpy())
