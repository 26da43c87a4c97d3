"""NumPy's functions beyond the standard that xarray reaches (xdap/api/
nan_functions, numpy_manipulation, einsum; a[:, idx, ...]): each against
NumPy on the global array, through np.<name>(DistArray) and xdap.<name>, on
1-4 ranks, for block, cyclic, a 2-D grid, undistributed rows and empty
ranks; all-NaN slices as NumPy answers them; bad or one-rank-different
arguments one error on every rank."""
import warnings

import numpy as np
import pytest

import xdap
from helpers import check_global, layouts2, same_error

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(51)
G = rng.standard_normal((7, 5))
G[1, :] = np.nan                      # an all-NaN row
G[2, 3] = np.nan
G[:, 4] = np.nan                      # an all-NaN column
REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmin", "nanmax",
              "nanmedian"]


def numpy_quietly(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


def _one_rank(comm, usual, other):
    return other if comm.rank == comm.size - 1 else usual


@pytest.mark.mpi(ranks=RANKS)
def test_nan_reductions_match_numpy(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for name in REDUCTIONS:
            for axis in (None, 0, 1, (0, 1)):
                if name == "nanmedian" and axis == (0, 1):
                    axis = (1, 0)                    # every axis: the median of all
                for keepdims in (False, True):
                    want = numpy_quietly(getattr(np, name), G, axis=axis, keepdims=keepdims)
                    got = getattr(np, name)(a, axis=axis, keepdims=keepdims)
                    check_global(got, want, (name, kw, axis, keepdims), tol=1e-12)
        check_global(xdap.nanvar(a, axis=0, ddof=1), numpy_quietly(np.nanvar, G, axis=0, ddof=1),
                     ("nanvar ddof", kw), tol=1e-12)
        check_global(xdap.nanstd(a, ddof=6), numpy_quietly(np.nanstd, G, ddof=6), "ddof > n")
        for q in (0.3, [0.1, 0.9]):
            for axis in (None, 0, 1):
                check_global(np.nanquantile(a, q, axis=axis),
                             numpy_quietly(np.nanquantile, G, q, axis=axis), ("q", kw, axis))
            check_global(np.nanpercentile(a, np.multiply(q, 100), axis=1),
                         numpy_quietly(np.nanpercentile, G, np.multiply(q, 100), axis=1), "pct")
        for name in ("nancumsum", "nancumprod", "cumsum", "cumprod"):
            for axis in (None, 0, 1):
                check_global(getattr(np, name)(a, axis=axis), getattr(np, name)(G, axis=axis),
                             (name, kw, axis))
        h = np.where(np.isnan(G), 0.5, G)[:, :4]
        h[3, 1] = np.nan
        b = xdap.from_global(h, comm=comm, **kw)
        for name in ("nanargmax", "nanargmin"):
            for axis in (None, 0, 1):
                check_global(getattr(np, name)(b, axis=axis), getattr(np, name)(h, axis=axis),
                             (name, kw, axis))
            same_error(comm, lambda: getattr(np, name)(a, axis=0), ValueError, "All-NaN")


@pytest.mark.mpi(ranks=RANKS)
def test_quantiles_along_an_axis_with_fewer_slices_than_ranks(comm):
    """Quantiles along one axis split the other over the ranks: with 2
    slices on 3 or 4 ranks some hold none, and their empty blocks keep the
    result's shape (NumPy's nanquantile of an empty block does not)."""
    g = G[:, :2].copy()
    for kw in (dict(dist=("b", "n")), dict(dist=("n", "b")), dict(dist=("c", "n"))):
        a = xdap.from_global(g, comm=comm, **kw)
        for q in (0.9, [0.9], [0.1, 0.5]):
            for name in ("nanquantile", "quantile"):
                for keepdims in (False, True):
                    want = numpy_quietly(getattr(np, name), g, q, axis=0, keepdims=keepdims)
                    got = getattr(np, name)(a, q, axis=0, keepdims=keepdims)
                    assert got.parts.values.ndim == np.ndim(want), (name, q, kw, keepdims)
                    check_global(got, want, (name, q, kw, keepdims), dtype=True)
        check_global(np.nanmedian(a, axis=0), numpy_quietly(np.nanmedian, g, axis=0), kw)
        w = xdap.from_global(np.ones_like(g), comm=comm, **kw)
        check_global(xdap.quantile(a, 0.5, axis=0, method="inverted_cdf", weights=w),
                     np.quantile(g, 0.5, axis=0, method="inverted_cdf", weights=np.ones_like(g)),
                     ("weights", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_integers_and_float32_reduce_as_numpy(comm):
    i = np.arange(35, dtype=np.int32).reshape(7, 5)
    f = G.astype(np.float32)
    for kw in layouts2(comm.size):
        a = xdap.from_global(i, comm=comm, **kw)
        check_global(np.nansum(a, axis=0), np.nansum(i, axis=0), ("int nansum", kw))
        check_global(np.nanmax(a), np.nanmax(i), ("int nanmax", kw))
        check_global(np.nanargmin(a, axis=1), np.nanargmin(i, axis=1), ("int nanargmin", kw))
        b = xdap.from_global(f, comm=comm, **kw)
        check_global(np.nansum(b, axis=1), np.nansum(f, axis=1), ("f32 nansum", kw), tol=1e-6)
        check_global(np.nanmax(b, axis=0), numpy_quietly(np.nanmax, f, axis=0), ("f32", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_pad_matches_numpy(comm):
    g = np.arange(7 * 4.0).reshape(7, 4)
    modes = [("constant", {}), ("constant", {"constant_values": np.nan}),
             ("constant", {"constant_values": ((1, 2), (3, 4))}), ("edge", {}), ("wrap", {}),
             ("reflect", {}), ("symmetric", {}), ("empty", {})]
    for kw in layouts2(comm.size):
        a = xdap.from_global(g, comm=comm, **kw)
        for width in (1, (2, 0), ((0, 3), (1, 1)), ((3, 2), (0, 0)), 0):
            for mode, extra in modes:
                got = np.pad(a, width, mode=mode, **extra)
                want = np.pad(g, width, mode="constant" if mode == "empty" else mode, **extra)
                check_global(got, want, (kw, width, mode, extra))
    a = xdap.from_global(np.arange(6), comm=comm)
    same_error(comm, lambda: xdap.pad(a, 1, constant_values=np.nan), ValueError, "does not fit")
    same_error(comm, lambda: xdap.pad(a, 6, mode="reflect"), ValueError, "at most 5")
    same_error(comm, lambda: xdap.pad(a, 1, mode="linear_ramp"), ValueError)
    same_error(comm, lambda: xdap.pad(a, -1), ValueError, ">= 0")
    if comm.size > 1:
        same_error(comm, lambda: xdap.pad(a, _one_rank(comm, 1, 2)))
        same_error(comm, lambda: xdap.pad(a, 1, mode=_one_rank(comm, "edge", "wrap")))


@pytest.mark.mpi(ranks=RANKS)
def test_sliding_windows_match_numpy(comm):
    g = np.arange(7 * 5).reshape(7, 5)
    view = np.lib.stride_tricks.sliding_window_view
    for kw in layouts2(comm.size):
        a = xdap.from_global(g, comm=comm, **kw)
        for window, axis in ((3, 0), (2, 1), (7, 0), (1, 0), ((2, 2), None), ((2, 3), (1, 0))):
            check_global(view(a, window, axis=axis), view(g, window, axis=axis),
                         (kw, window, axis))
    a = xdap.from_global(g, comm=comm)
    same_error(comm, lambda: view(a, 8, axis=0), ValueError, "larger")
    same_error(comm, lambda: view(a, 2, axis=0, writeable=True), ValueError, "copy")
    if comm.size > 1:
        same_error(comm, lambda: view(a, _one_rank(comm, 2, 3), axis=0))


@pytest.mark.mpi(ranks=RANKS)
def test_einsum_matches_numpy(comm):
    A, B = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    C, v = rng.standard_normal((2, 5, 4)), rng.standard_normal(4)
    cases = [("ij,j->i", (A, v)), ("ij,jk->ik", (A, B)), ("ij,jk", (A, B)),
             ("...ab,...b->...a", (A, v)), ("i,i->", (v, v)), ("ij->ji", (A,)),
             ("ij,ij->i", (A, A)), ("...ij,...ij->...i", (C, A)), ("bij,j->bi", (C, v)),
             ("ij,kj->ik", (A, A)), ("ji", (A,)), ("ij,i->j", (A, A[:, 0]))]
    for kw in (dict(dist=("b",)), dict(dist=("c",)), dict(dist=("n", "b"))):
        for subscripts, ops in cases:
            dist = [xdap.from_global(o, comm=comm, **(kw if o.ndim > 1 else {})) for o in ops]
            check_global(np.einsum(subscripts, *dist), np.einsum(subscripts, *ops),
                         (subscripts, kw), tol=1e-12)
        a = xdap.from_global(A, comm=comm, **kw)
        check_global(np.einsum("ij,j->i", a, v), A @ v, ("a NumPy operand", kw), tol=1e-12)
    a = xdap.from_global(A, comm=comm)
    same_error(comm, lambda: xdap.einsum("ii->i", xdap.from_global(np.eye(3), comm=comm)),
               ValueError, "diagonal")
    same_error(comm, lambda: xdap.einsum("ij,j->k", a, v), ValueError, "not an operand's")
    same_error(comm, lambda: xdap.einsum("ij,j->i", a, np.ones(3)), ValueError, "sizes")
    if comm.size > 1:
        same_error(comm, lambda: xdap.einsum(_one_rank(comm, "ij->i", "ij->j"), a))


@pytest.mark.mpi(ranks=RANKS)
def test_one_index_array_among_slices(comm):
    g = np.arange(4 * 7 * 3.0).reshape(4, 7, 3)
    idx = np.array([6, 0, 2, 2, -1])
    for kw in (dict(dist=("b",)), dict(dist=("c",)), dict(dist=("n", "b")),
               dict(dist=("b",), sizes=({1: [4], 2: [0, 4], 3: [1, 0, 3], 4: [2, 0, 2, 0]}
                                        [comm.size],))):
        a = xdap.from_global(g, comm=comm, **kw)
        for key in [(np.array([3, 0, -1]), Ellipsis), (slice(None), idx),
                    (slice(1, 3), idx, Ellipsis), (Ellipsis, np.array([2, 0])),
                    (slice(None), idx, slice(0, 2)), (Ellipsis, idx, slice(None)),
                    (np.array([3, 1]), slice(None, None, 2))]:
            check_global(a[key], g[key], (kw, key))
        j = xdap.from_global(np.array([1, 3, 0]), comm=comm)
        check_global(a[:, j], g[:, [1, 3, 0]], ("a DistArray index", kw))
    a = xdap.from_global(g, comm=comm)
    same_error(comm, lambda: a[..., idx, ...], IndexError, "single ellipsis")
    same_error(comm, lambda: a[:, np.array([9])], IndexError, "out of bounds")
    if comm.size > 1:
        same_error(comm, lambda: a[:, _one_rank(comm, np.array([1]), np.array([2]))])
