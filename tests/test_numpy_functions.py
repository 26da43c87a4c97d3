"""NumPy's functions on DistArrays (xdap/api/): cumulative_sum,
argmax/argmin, nonzero, where, clip, var/std and matmul, each against
NumPy on the global array, on 1-4 ranks, for block (with empty ranks and
padding), cyclic and 2-D grids, along every axis."""
import numpy as np
import pytest

import xdap
from helpers import check_global, layouts1, layouts2  # noqa: F401

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(3)
G = rng.standard_normal((7, 5))
V = rng.standard_normal(7)


def check(got, want, what):
    check_global(got, want, what)


@pytest.mark.mpi(ranks=RANKS)
def test_along_each_axis_match_numpy(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for ax in (0, 1, -1):
            check(xdap.cumulative_sum(a, axis=ax), np.cumsum(G, axis=ax), ("cumsum", kw, ax))
            check(xdap.argmax(a, axis=ax), np.argmax(G, axis=ax), ("argmax", kw, ax))
            check(xdap.argmin(a, axis=ax), np.argmin(G, axis=ax), ("argmin", kw, ax))
            check(xdap.var(a, axis=ax), np.var(G, axis=ax), ("var", kw, ax))
            check(xdap.std(a, axis=ax, correction=1), np.std(G, axis=ax, ddof=1), ("std", kw))
        assert xdap.argmax(a) == np.argmax(G) and xdap.argmin(a) == np.argmin(G)
        check(xdap.var(a), np.var(G), ("var", kw))
        check(xdap.std(a, correction=1), np.std(G, ddof=1), ("std", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_selection_matches_numpy(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        got = xdap.nonzero(a > 0)
        assert len(got) == 2
        for g, w in zip(got, np.nonzero(G > 0)):
            check(g, w, ("nonzero", kw))
        check(xdap.where(a > 0, a, 0.0), np.where(G > 0, G, 0.0), ("where", kw))
        check(xdap.where(a > 0, 1.0, np.arange(5.0)), np.where(G > 0, 1.0, np.arange(5.0)),
              ("where broadcast", kw))
        check(xdap.clip(a, -0.5, 0.5), np.clip(G, -0.5, 0.5), ("clip", kw))
        check(xdap.clip(a, max=0.0), np.clip(G, None, 0.0), ("clip max", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_matmul_matches_numpy(comm):
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        check(a @ np.arange(5.0), G @ np.arange(5.0), ("matvec", kw))
        check(a @ np.ones((5, 3)), G @ np.ones((5, 3)), ("matmat", kw))
        check(a @ xdap.from_global(np.arange(5.0), dist=("c",), comm=comm), G @ np.arange(5.0),
              ("matvec, a distributed vector", kw))
        r = a @ np.arange(5.0)
        if a.distribution.maps[1].grid_size == 1:      # rows stay where they were
            assert r.distribution == a.distribution.leading(1)
    with pytest.raises(ValueError, match="do not match"):
        xdap.from_global(G, comm=comm) @ np.ones(4)


@pytest.mark.mpi(ranks=RANKS)
def test_one_dimensional_arrays(comm):
    for kw in layouts1(comm.size):
        v = xdap.from_global(V, comm=comm, **kw)
        check(xdap.cumulative_sum(v), np.cumsum(V), ("cumsum", kw))
        check(xdap.cumulative_sum(v[::-1]), np.cumsum(V[::-1]), ("cumsum reversed", kw))
        check(xdap.cumulative_sum(xdap.from_global(np.arange(7, dtype=np.int32), comm=comm, **kw)),
              np.cumsum(np.arange(7, dtype=np.int32)), ("cumsum int32", kw))
        check(v @ v, V @ V, ("dot", kw))
        check(v @ np.ones((7, 2)), V @ np.ones((7, 2)), ("vecmat", kw))
        assert xdap.argmax(v) == np.argmax(V) and xdap.argmin(v) == np.argmin(V)
        w = V.copy()
        w[[3, 5]] = np.nan                               # NaN wins, the first one (NumPy)
        assert xdap.argmax(xdap.from_global(w, comm=comm, **kw)) == np.argmax(w) == 3
        assert xdap.argmin(xdap.from_global(np.zeros(7), comm=comm, **kw)) == 0


@pytest.mark.mpi(ranks=(1, 2))
def test_what_numpy_api_refuses(comm):
    m = xdap.from_global(np.ma.array([1.0, 2.0], mask=[0, 1]), comm=comm)
    with pytest.raises(TypeError, match=r"cumulative_sum: .*fixed numeric data .*\?float64"):
        xdap.cumulative_sum(m)
    with pytest.raises(ValueError, match="axis is required"):
        xdap.cumulative_sum(xdap.from_global(G, comm=comm))
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        xdap.argmax(xdap.from_global(G, comm=comm), axis=3)
    with pytest.raises(TypeError, match="left operand must be a DistArray"):
        xdap.matmul(np.ones(7), xdap.from_global(V, comm=comm))


@pytest.mark.mpi(ranks=RANKS)
def test_shape_and_order_functions_match_numpy(comm):
    """permute_dims/.T (no data moves: the maps follow the dims), flip,
    expand_dims, squeeze, concat (with NumPy's promotion), stack, roll."""
    H = -np.arange(3 * 5.0).reshape(3, 5)
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        b = xdap.from_global(H, comm=comm)
        t = a.T
        assert t.distribution.maps == a.distribution.maps[::-1]
        check(t, G.T, ("T", kw))
        check(xdap.permute_dims(a, (1, 0)) @ np.ones(7), G.T @ np.ones(7), ("T @ v", kw))
        check(xdap.flip(a), np.flip(G), ("flip", kw))
        check(xdap.flip(a, axis=1), np.flip(G, axis=1), ("flip 1", kw))
        check(xdap.expand_dims(a, axis=1), G[:, None], ("expand_dims", kw))
        check(xdap.squeeze(xdap.expand_dims(a, axis=0), 0), G, ("squeeze", kw))
        check(xdap.concat([a, b]), np.concatenate([G, H]), ("concat", kw))
        check(xdap.concat([a, a], axis=1), np.concatenate([G, G], axis=1), ("concat 1", kw))
        check(xdap.stack([a, a], axis=2), np.stack([G, G], axis=2), ("stack", kw))
        check(xdap.roll(a, 3, axis=0), np.roll(G, 3, axis=0), ("roll 0", kw))
        check(xdap.roll(a, -2, axis=1), np.roll(G, -2, axis=1), ("roll 1", kw))
    ints = xdap.from_global(np.arange(3), comm=comm)
    got = xdap.concat([xdap.from_global(V, comm=comm), ints])
    assert got.dtype == np.float64
    check(got, np.concatenate([V, np.arange(3)]), "concat promotes")
    # inputs in padded blocks, with an empty rank, stacked in front
    padded = xdap.from_global(G, dist=("b", "n"), padding=((1, 1), (0, 0)), comm=comm)
    uneven = xdap.from_global(H, dist=("b",), sizes=([0] * (comm.size - 1) + [3],), comm=comm)
    check(xdap.concat([padded, uneven, padded]), np.concatenate([G, H, G]), "concat padded")
    check(xdap.stack([uneven, uneven * 2]), np.stack([H, H * 2]), "stack axis 0")
    check(xdap.roll(xdap.from_global(V, comm=comm), 4), np.roll(V, 4), "roll 1-D")
    with pytest.raises(ValueError, match="differ outside axis 0"):
        xdap.concat([xdap.from_global(G, comm=comm), xdap.from_global(G[:, :2].copy(), comm=comm)])
    with pytest.raises(ValueError, match="not all of size 1"):
        xdap.squeeze(xdap.from_global(G, comm=comm), 0)


@pytest.mark.mpi(ranks=RANKS)
def test_numpy_ufuncs_without_a_kernel_and_their_operators(comm):
    """//, %, &, |, ^, ~, +, <<, np.isnan, np.sign, ...: NumPy's ufunc on
    every rank's values (local work), on fixed, ragged and optional data."""
    ints = np.arange(-6, 9).reshape(3, 5)
    floats = np.array([1.0, np.nan, np.inf, -2.5, 0.0, 3.0, -np.inf])
    for kw in (dict(dist=("b",)), dict(dist=("c", "b"))):
        a = xdap.from_global(ints, comm=comm, **kw)
        for got, want in ((a // 4, ints // 4), (a % 4, ints % 4), (7 // (a + 7), 7 // (ints + 7)),
                          (a & 3, ints & 3), (a | 8, ints | 8), (a ^ 5, ints ^ 5), (~a, ~ints),
                          (+a, +ints), (a << 1, ints << 1), ((a > 0) & (a < 5), (ints > 0) & (ints < 5)),
                          (np.sign(a), np.sign(ints)), (a % np.arange(1, 6), ints % np.arange(1, 6))):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.to_numpy(), want)
        b = a.copy()
        b //= 2
        np.testing.assert_array_equal(b.to_numpy(), ints // 2)
    f = xdap.from_global(floats, comm=comm)
    for fn in (np.isnan, np.isfinite, np.isinf, np.signbit):
        np.testing.assert_array_equal(fn(f).to_numpy(), fn(floats))
    rows = [[1.0, -2.0], [3.0], [-4.0, 5.0, -6.0]] * 2
    r = xdap.from_global(rows, type="var * var * float64", comm=comm)
    assert np.sign(r).to_global().value == [np.sign(x).tolist() for x in rows]
    m = xdap.from_global(np.ma.array([4, 5, 6, 7], mask=[0, 1, 0, 0]), comm=comm)
    got = (m // 2).to_numpy()
    assert got.mask.tolist() == [False, True, False, False] and got[[0, 2, 3]].tolist() == [2, 3, 3]


@pytest.mark.mpi(ranks=(2, 4))
def test_replicated_reduction_results_count_each_index_once(comm):
    """A reduction along the distributed dim of a 2-D grid leaves its result
    owned by a whole team of ranks; functions over it count each index once."""
    a = xdap.from_global(G, dist=("b", "b"), comm=comm)
    rows = a.sum(axis=1)
    want = G.sum(axis=1)
    assert xdap.argmax(rows) == np.argmax(want) and xdap.argmin(rows) == np.argmin(want)
    check(rows @ rows, want @ want, "dot")
    check(rows @ np.ones((7, 2)), want @ np.ones((7, 2)), "vecmat")
    check(xdap.cumulative_sum(rows), np.cumsum(want), "cumsum")
    check(xdap.sort(rows), np.sort(want), "sort")
    check(xdap.unique_values(rows), np.unique(want), "unique")


@pytest.mark.mpi(ranks=RANKS)
def test_reshape_matches_numpy(comm):
    """Where every rank's block is whole rows of the new shape: a view of
    each rank's elements (no data moves); otherwise the C-order line moves
    to the new row blocks (one exchange)."""
    g = np.arange(6 * 4, dtype=float).reshape(6, 4)
    empty = {1: [6], 2: [0, 6], 3: [2, 0, 4], 4: [3, 0, 3, 0]}[comm.size]
    for kw in (dict(dist=("b",)), dict(dist=("c",)), dict(dist=("b", "c")),
               dict(dist=("b",), sizes=(empty,))):
        a = xdap.from_global(g, comm=comm, **kw)
        for shape in [(6, 2, 2), (24,), (4, 6), (2, 3, 4), (3, -1), (1, 24), (24, 1)]:
            check(xdap.reshape(a, shape), g.reshape(shape), ("reshape", kw, shape))
        check(a.reshape(2, 12), g.reshape(2, 12), ("method", kw))
    a = xdap.from_global(g, comm=comm)
    same_rows = xdap.reshape(a, (6, 2, 2), copy=False)
    assert same_rows.local_numpy().size == 0 or np.shares_memory(same_rows.local_numpy(),
                                                                  a.local_numpy())
    # (6, 4) -> (4, 6) in place exactly when every rank's elements -- a range
    # of the C order -- are whole rows of 6 (1 and 2 ranks: yes; 3, 4: no)
    rows = np.asarray(a.distribution.global_indices(0))
    starts = comm.allgather((int(rows[0]) * 4 if rows.size else 0, rows.size * 4))
    if all(lo % 6 == 0 and n % 6 == 0 for lo, n in starts):
        wide = xdap.reshape(a, (4, 6), copy=False)
        check(wide, g.reshape(4, 6), "in place")
        assert wide.local_numpy().size == 0 or np.shares_memory(wide.local_numpy(),
                                                                a.local_numpy())
        assert wide.distribution.maps[0].bounds == tuple(lo // 6 for lo, _ in starts) + (4,)
    else:
        with pytest.raises(ValueError, match="moves data, so it copies"):
            xdap.reshape(a, (4, 6), copy=False)
    # 10^... -> whole rows on every rank count: a line of 12 * P in blocks of 12
    line = np.arange(12.0 * comm.size)
    b = xdap.reshape(xdap.from_global(line, comm=comm), (comm.size * 2, 2, 3), copy=False)
    check(b, line.reshape(-1, 2, 3), "line in place")
    with pytest.raises(ValueError, match="cannot reshape"):
        xdap.reshape(a, (5, 5))



@pytest.mark.mpi(ranks=RANKS)
def test_cumulative_prod_and_include_initial_match_numpy(comm):
    g = (G % 3) * 0.5 + 0.75                      # products that neither vanish nor overflow
    for kw in layouts2(comm.size):
        a = xdap.from_global(g, comm=comm, **kw)
        for ax in (0, 1):
            check(xdap.cumulative_prod(a, axis=ax), np.cumprod(g, axis=ax), ("cumprod", kw, ax))
            pad = [(0, 0), (0, 0)]
            pad[ax] = (1, 0)
            check(xdap.cumulative_sum(a, axis=ax, include_initial=True),
                  np.pad(np.cumsum(g, axis=ax), pad), ("cumsum initial", kw, ax))
            check(xdap.cumulative_prod(a, axis=ax, include_initial=True),
                  np.pad(np.cumprod(g, axis=ax), pad, constant_values=1.0),
                  ("cumprod initial", kw, ax))
    v1 = np.arange(1, 8, dtype=np.int16)
    for kw in layouts1(comm.size):
        v = xdap.from_global(v1, comm=comm, **kw)
        got = xdap.cumulative_prod(v)
        assert got.dtype == np.cumprod(v1).dtype, kw          # int16 accumulates as NumPy's
        check(got, np.cumprod(v1), ("cumprod 1-d", kw))
        check(xdap.cumulative_prod(v, include_initial=True), np.concatenate([[1], np.cumprod(v1)]),
              ("cumprod 1-d initial", kw))
        check(xdap.cumulative_prod(v, dtype=np.float64), np.cumprod(v1, dtype=np.float64),
              ("cumprod dtype", kw))
    if comm.size > 1:                # one rank asking for the initial value: one error on all
        v = xdap.from_global(v1, comm=comm)
        with pytest.raises(ValueError, match=r"include_initial must be the same"):
            xdap.cumulative_sum(v, include_initial=comm.rank == 1)


@pytest.mark.mpi(ranks=RANKS)
def test_broadcast_to_matches_numpy(comm):
    cases = [(np.arange(5.0), (4, 5), {}), (np.arange(5.0), (2, 3, 5), {}),
             (np.arange(6.0).reshape(6, 1), (6, 3), dict(dist=("b", "n"))),  # stretched locally
             (np.arange(6.0).reshape(6, 1), (6, 3), dict(dist=("c",))),
             (np.arange(4.0).reshape(1, 4), (7, 4), dict(dist=("n", "b"))),
             (np.float64(2.5), (3, 2), {}), (np.arange(3, dtype=np.int8), (3,), {})]
    for x, shape, kw in cases:
        a = xdap.from_global(x, comm=comm, **kw)
        b = xdap.broadcast_to(a, shape)
        assert b.shape == shape and b.dtype == x.dtype, (shape, kw)
        np.testing.assert_array_equal(b.to_numpy(), np.broadcast_to(x, shape), err_msg=str(kw))
        assert (a + xdap.zeros_like(b) if a.shape == b.shape else b).shape == shape
    a = xdap.from_global(np.arange(6.0).reshape(6, 1), dist=("b", "n"), comm=comm)
    # stretched locally: the rows keep their distribution (nothing moved)
    assert xdap.broadcast_to(a, (6, 3)).distribution.maps[0] == a.distribution.maps[0]
    with pytest.raises(ValueError, match=r"shape \(5,\) cannot be broadcast to \(4, 3\)"):
        xdap.broadcast_to(xdap.from_global(np.arange(5.0), comm=comm), (4, 3))
    if comm.size > 1:
        with pytest.raises(ValueError, match="shape must be the same"):
            xdap.broadcast_to(xdap.from_global(np.arange(5.0), comm=comm), (comm.rank + 1, 5))


@pytest.mark.mpi(ranks=RANKS)
def test_unique_counts_inverse_all_match_numpy(comm):
    rng = np.random.default_rng(11)                      # the same draws on every rank
    g2 = rng.integers(0, 5, (7, 4)).astype(np.float64)
    g2[2, 1] = g2[5, 3] = np.nan                         # NaNs count as one value
    cases = [(g2, kw) for kw in layouts2(comm.size)] + \
        [(rng.integers(0, 3, 7), kw) for kw in layouts1(comm.size)] + \
        [(np.full(6, 4.0), {}), (np.float64(2.5), {})]
    for g, kw in cases:
        a = xdap.from_global(g, comm=comm, **kw)
        want = np.unique(g, return_index=True, return_inverse=True, return_counts=True,
                         equal_nan=True)
        v, idx, inv, cnt = xdap.unique_all(a)
        np.testing.assert_array_equal(v.to_numpy(), want[0], err_msg=str(kw))
        np.testing.assert_array_equal(idx.to_numpy(), want[1], err_msg=str(kw))
        np.testing.assert_array_equal(inv.to_numpy(), np.reshape(want[2], np.shape(g)),
                                      err_msg=str(kw))
        np.testing.assert_array_equal(cnt.to_numpy(), want[3], err_msg=str(kw))
        assert inv.distribution == a.distribution and cnt.distribution == v.distribution
        v2, c2 = xdap.unique_counts(a)
        np.testing.assert_array_equal(c2.to_numpy(), want[3])
        v3, i3 = xdap.unique_inverse(a)
        np.testing.assert_array_equal(i3.to_numpy(), np.reshape(want[2], np.shape(g)))


@pytest.mark.mpi(ranks=RANKS)
def test_unique_and_searchsorted_of_complex_follow_numpys_order(comm):
    # NumPy orders complex numbers by real part, then imaginary part; a NaN in
    # either part sorts last (R + nanj before nan + Rj) and all NaNs are one value
    nan = np.nan
    g = np.array([1 + 1j, complex(nan, 0), complex(0, nan), -1 + 2j, 1 + 1j, 1 - 1j,
                  complex(nan, 1)])                                  # 7: layouts1's length
    for kw in [{}] + list(layouts1(comm.size)):
        a = xdap.from_global(g, comm=comm, **kw)
        want = np.unique(g, return_inverse=True, return_counts=True, equal_nan=True)
        v, idx, inv, cnt = xdap.unique_all(a)
        np.testing.assert_array_equal(v.to_numpy(), want[0], err_msg=str(kw))
        np.testing.assert_array_equal(inv.to_numpy(), want[1], err_msg=str(kw))
        np.testing.assert_array_equal(cnt.to_numpy(), want[2], err_msg=str(kw))
        # each index points at an occurrence of its value (any NaN for the NaN)
        np.testing.assert_array_equal(g[idx.to_numpy()], want[0], err_msg=str(kw))
    s = np.sort(g)
    q = np.array([complex(nan, 0), 1 + 1j, 1 + 0j, complex(0, nan), -5j, 2 + 0j])
    for kw in ({}, dict(dist=("c",))):
        for side in ("left", "right"):
            np.testing.assert_array_equal(
                xdap.searchsorted(xdap.from_global(s, comm=comm, **kw), q, side=side),
                np.searchsorted(s, q, side=side), err_msg=f"{kw} {side}")


@pytest.mark.mpi(ranks=RANKS)
def test_argmin_argmax_along_the_one_axis_of_a_1d_array(comm):
    # a 0-d array of the whole array's index, whatever the layout (an empty rank too)
    for g in (np.array([3], np.uint8), V, np.array([2, 9, 9, -1])):
        for kw in [{}] + list(layouts1(comm.size) if len(g) == 7 else []):
            a = xdap.from_global(g, comm=comm, **kw)
            for mine, theirs in ((xdap.argmin, np.argmin), (xdap.argmax, np.argmax)):
                check(mine(a, axis=0), theirs(g, axis=0), f"{mine.__name__} {kw}")


@pytest.mark.mpi(ranks=RANKS)
def test_expand_dims_of_a_0d_array(comm):
    import xdap.array_api as xp
    for value in (np.float64(2.5), np.int8(-3)):
        e = xp.expand_dims(xp.asarray(value), axis=0)
        check(e, np.expand_dims(value, 0), f"expand_dims({value!r})")


@pytest.mark.mpi(ranks=RANKS)
def test_searchsorted_places_nan_as_numpy(comm):
    s = np.array([0.0, 1.0, 1.0, 3.0, np.nan, np.nan])          # NumPy sorts NaN last
    q = np.array([np.nan, 1.0, 5.0, -1.0])
    for kw in ({}, dict(dist=("c",))):
        a = xdap.from_global(s, comm=comm, **kw)
        for side in ("left", "right"):
            np.testing.assert_array_equal(xdap.searchsorted(a, q, side=side),
                                          np.searchsorted(s, q, side=side), err_msg=side)


@pytest.mark.mpi(ranks=RANKS)
def test_tril_triu_eye_match_numpy(comm):
    g3 = np.arange(2 * 7 * 5, dtype=np.float64).reshape(2, 7, 5)
    for kw in layouts2(comm.size) + [dict(dist=("b", "b"), padding=((1, 1), (0, 0)))]:
        a = xdap.from_global(G, comm=comm, **kw)
        for k in (-2, 0, 1, 4):
            t = xdap.tril(a, k=k)
            assert t.distribution == a.distribution
            np.testing.assert_array_equal(t.to_numpy(), np.tril(G, k=k), err_msg=str((kw, k)))
            np.testing.assert_array_equal(xdap.triu(a, k=k).to_numpy(), np.triu(G, k=k))
    b = xdap.from_global(g3, dist=("n", "c", "b"), comm=comm)
    np.testing.assert_array_equal(xdap.triu(b, k=1).to_numpy(), np.triu(g3, k=1))
    xp = b.__array_namespace__()
    for args, kw in (((4,), {}), ((3, 5), dict(k=2)), ((5, 2), dict(k=-1, dtype=np.int32))):
        e = xp.eye(*args, **kw)
        np.testing.assert_array_equal(e.to_numpy(), np.eye(*args, **kw), err_msg=str(args))
        assert e.dtype == np.eye(*args, **kw).dtype
    with pytest.raises(ValueError, match="at least 2 dims"):
        xdap.tril(xdap.from_global(V, comm=comm))
