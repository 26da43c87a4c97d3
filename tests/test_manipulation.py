"""xdap.api.manipulation and linear_algebra: the Array API additions (moveaxis,
unstack, tile, repeat, diff, broadcast_arrays, meshgrid, take_along_axis,
vecdot, tensordot, count_nonzero, real/imag, integer-array indexing with
tuples, a[mask] = v, keepdims, the dtype functions), each against NumPy on
the global array, on 1-4 ranks, for block (with empty ranks and padding),
cyclic and 2-D grids."""
import numpy as np
import pytest

import xdap
from helpers import check_global, layouts1, layouts2  # noqa: F401
import xdap.array_api as xp

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(11)
G = rng.standard_normal((7, 5))
I = rng.integers(-3, 4, (7, 5))
V = rng.standard_normal(7)


def check(got, want, what):
    check_global(got, want, what, dtype=True, tol=1e-12)


@pytest.mark.mpi(ranks=RANKS)
def test_shape_functions_match_numpy(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        check(xdap.moveaxis(a, 0, -1), np.moveaxis(G, 0, -1), ("moveaxis", kw))
        rows = xdap.unstack(a, axis=1)
        assert len(rows) == 5
        for j, r in enumerate(rows):
            check(r, G[:, j], ("unstack", kw, j))
        check(xdap.tile(a, (2, 1)), np.tile(G, (2, 1)), ("tile", kw))
        check(xdap.tile(a, (1, 3)), np.tile(G, (1, 3)), ("tile cols", kw))
        check(xdap.tile(a, (2, 1, 2)), np.tile(G, (2, 1, 2)), ("tile more dims", kw))
        check(xdap.tile(a, (0, 1)), np.tile(G, (0, 1)), ("tile 0", kw))
        for ax in (0, 1):
            check(xdap.repeat(a, 2, axis=ax), np.repeat(G, 2, axis=ax), ("repeat", kw, ax))
            counts = np.arange(G.shape[ax]) % 3
            check(xdap.repeat(a, counts, axis=ax), np.repeat(G, counts, axis=ax),
                  ("repeat counts", kw, ax))
            check(xdap.diff(a, axis=ax), np.diff(G, axis=ax), ("diff", kw, ax))
            check(xdap.diff(a, axis=ax, n=2), np.diff(G, axis=ax, n=2), ("diff 2", kw, ax))
        check(xdap.repeat(a, 3), np.repeat(G, 3), ("repeat flat", kw))
        check(xdap.diff(a, axis=0, prepend=0.0, append=np.ones((1, 5))),
              np.diff(G, axis=0, prepend=0.0, append=np.ones((1, 5))), ("diff ends", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_one_dimensional_layouts(comm):
    for kw in layouts1(comm.size):
        v = xdap.from_global(V, comm=comm, **kw)
        counts = np.arange(7) % 3
        check(xdap.repeat(v, counts), np.repeat(V, counts), ("repeat", kw))
        c = xdap.from_global(counts, comm=comm, **kw)
        check(xdap.repeat(v, c), np.repeat(V, counts), ("repeat DistArray counts", kw))
        check(xdap.diff(v), np.diff(V), ("diff", kw))
        check(xdap.tile(v, 2), np.tile(V, 2), ("tile", kw))
        idx = xdap.from_global(np.array([6, 0, -1, 3]), comm=comm)
        check(xdap.take_along_axis(v, idx), np.take_along_axis(V, np.array([6, 0, -1, 3]), 0),
              ("take_along_axis 1-D", kw))
        check(xp.vecdot(v, v), np.vecdot(V, V), ("vecdot", kw))
        check(xdap.count_nonzero(v > 0), np.count_nonzero(V > 0), ("count_nonzero", kw))
        x, y = xdap.meshgrid(v, xdap.from_global(np.arange(3.0), comm=comm))
        X, Y = np.meshgrid(V, np.arange(3.0))
        check(x, X, ("meshgrid x", kw))
        check(y, Y, ("meshgrid y", kw))
        x, y = xdap.meshgrid(v, xdap.from_global(np.arange(3.0), comm=comm), indexing="ij")
        check(x, np.meshgrid(V, np.arange(3.0), indexing="ij")[0], ("meshgrid ij", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_products_and_values_match_numpy(comm):
    C = G + 1j * G[::-1]
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        check(xdap.tensordot(a, G.T, axes=1), np.tensordot(G, G.T, axes=1), ("tensordot 1", kw))
        check(xdap.tensordot(a, a, axes=([0], [0])), np.tensordot(G, G, axes=([0], [0])),
              ("tensordot pairs", kw))
        check(xdap.tensordot(a, G, axes=2), np.tensordot(G, G, axes=2), ("tensordot all", kw))
        check(xdap.vecdot(a, a), np.vecdot(G, G), ("vecdot rows", kw))
        check(xdap.vecdot(a, a, axis=-2), np.vecdot(G, G, axis=-2), ("vecdot cols", kw))
        c = xdap.from_global(C, comm=comm, **kw)
        check(xdap.real(c), C.real, ("real", kw))
        check(xdap.imag(c), C.imag, ("imag", kw))
        check(xdap.vecdot(c, c), np.vecdot(C, C), ("vecdot complex", kw))
        check(xp.log1p(c), np.log1p(C), ("complex log1p: NumPy's loop", kw))
        for ax in (0, 1, (0, 1), None):
            check(xp.count_nonzero(a > 0, axis=ax), np.count_nonzero(G > 0, axis=ax),
                  ("count_nonzero", kw, ax))
        ind = np.argsort(G, axis=1)
        check(xdap.take_along_axis(a, xdap.from_global(ind, comm=comm, **kw), axis=1),
              np.take_along_axis(G, ind, axis=1), ("take_along_axis rows", kw))
        ind0 = np.argsort(G, axis=0)[:3]
        check(xdap.take_along_axis(a, xdap.from_global(ind0, comm=comm), axis=0),
              np.take_along_axis(G, ind0, axis=0), ("take_along_axis cols", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_reductions_keepdims_and_dtypes(comm):
    F = G.astype(np.float32)
    for kw in layouts2(comm.size):
        a = xdap.from_global(F, comm=comm, **kw)
        for ax in (None, 0, 1, (0, 1), ()):
            for name in ("sum", "prod", "max", "min", "mean"):
                want = getattr(np, name)(F, axis=ax, keepdims=True)
                check(getattr(xp, name)(a, axis=ax, keepdims=True), want, (name, kw, ax))
            check(xp.var(a, axis=ax, keepdims=True, correction=1),
                  np.var(F, axis=ax, keepdims=True, ddof=1), ("var", kw, ax))
            check(xp.std(a, axis=ax), np.std(F, axis=ax), ("std", kw, ax))
        s = xp.sum(a)
        assert isinstance(s, xdap.DistArray) and s.shape == () and s.dtype == np.float32
        check(xp.sum(a, dtype=xp.float64), np.sum(F, dtype=np.float64), ("sum dtype", kw))
        check(xp.argmax(a, axis=1, keepdims=True), np.argmax(F, axis=1, keepdims=True),
              ("argmax keepdims", kw))
        empty = xdap.from_global(np.zeros((0, 5)), comm=comm)
        with np.errstate(invalid="ignore"):
            check(xp.mean(empty, axis=0), np.mean(np.zeros((0, 5)), axis=0), ("mean of nothing",))


@pytest.mark.mpi(ranks=RANKS)
def test_integer_array_points_and_mask_assignment(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(I, comm=comm, **kw)
        check(a[[6, 0, -1], 2], I[[6, 0, -1], 2], ("points, NumPy keys", kw))
        rows = xdap.from_global(np.array([[1], [5]]), comm=comm)
        cols = xdap.from_global(np.array([0, -1, 3]), comm=comm)
        check(a[rows, cols], I[np.array([[1], [5]]), np.array([0, -1, 3])], ("points", kw))
        check(a[3, xdap.from_global(np.int64(4), comm=comm)], I[3, 4], ("0-d index", kw))
        with pytest.raises(IndexError, match="index 7 is out of bounds"):
            a[[7], 0]
        b = a.copy()
        b[b > 0] = 9
        want = I.copy()
        want[want > 0] = 9
        check(b, want, ("a[mask] = v", kw))
        b[I < -1] = xdap.from_global(np.int64(-7), comm=comm)
        want[I < -1] = -7
        check(b, want, ("a[numpy mask] = 0-d", kw))
    z = xdap.from_global(np.float64(2.5), comm=comm)
    assert isinstance(z[()], xdap.DistArray) and float(z[()]) == 2.5


@pytest.mark.mpi(ranks=(1, 2))
def test_dtype_functions_and_dlpack(comm):
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(xdap.from_global(np.arange(3, dtype=np.int16), comm=comm)).max == 32767
    assert xp.isdtype(xp.int8, "integral") and not xp.isdtype(xp.float64, ("integral", "bool"))
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.uint8, xp.uint8)
    with pytest.raises(ValueError, match="unknown kind"):
        xp.isdtype(xp.int8, "whole numbers")
    assert xp.result_type(xdap.from_global(np.arange(3, dtype=np.int8), comm=comm), 1) == np.int8
    assert xp.result_type(xp.int8, xp.uint8) == np.int16
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.float64, xp.float32)
    whole = xdap.from_global(np.float64(2.5), comm=comm)        # every rank holds it
    np.testing.assert_array_equal(np.from_dlpack(whole), np.float64(2.5))
    spread = xdap.from_global(np.arange(4.0), comm=comm)
    if comm.size > 1:
        with pytest.raises(BufferError, match="distributed"):
            np.from_dlpack(spread)
    assert xp.from_dlpack(spread) is spread
    check(xp.from_dlpack(np.arange(3.0)), np.arange(3.0), "from_dlpack NumPy")


@pytest.mark.mpi(ranks=(1, 3))
def test_bad_arguments_are_clear(comm):
    a = xdap.from_global(G, comm=comm)
    with pytest.raises(ValueError, match="repeats"):
        xdap.repeat(a, [1, 2], axis=0)
    with pytest.raises(ValueError, match="repetitions"):
        xdap.tile(a, (-1,))
    with pytest.raises(ValueError, match="n must be"):
        xdap.diff(a, n=-1)
    with pytest.raises(np.exceptions.AxisError):
        xdap.moveaxis(a, 2, 0)
    with pytest.raises(ValueError, match="do not pair"):
        xdap.tensordot(a, G, axes=([0], [1]))
    with pytest.raises(ValueError, match="indexing"):
        xdap.meshgrid(xdap.from_global(V, comm=comm), indexing="yx")
    with pytest.raises(IndexError, match="out of bounds"):
        xdap.take_along_axis(a, xdap.from_global(np.full((7, 1), 5), comm=comm), axis=1)
