"""Sorting distributed data (xdap.sort, xdap.argsort, xdap.unique_values)
against NumPy on the global array, on 1-4 ranks: random values, ties (a
constant array, few distinct values), NaN, empty ranks, every 1-D map kind,
N-d arrays along each axis; arrays drawn by hypothesis with the same
examples on every rank.  The sorted result is an irregular block whose
slices stay balanced even when one value fills the array."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xdap

RANKS = (1, 2, 3, 4)


def layouts(P, n):
    cut = [n] + [0] * (P - 1) if P > 1 else [n]
    return [dict(dist=("b",)), dict(dist=("c",)), dict(dist=("c",), block_size=(3,)),
            dict(dist=("b",), sizes=(cut[::-1],))]


values = st.one_of(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=60),
    st.lists(st.integers(-3, 3), max_size=60),
).map(np.array)


def stable_desc(x):
    return (len(x) - 1 - np.argsort(x[::-1], kind="stable"))[::-1]


@pytest.mark.mpi(ranks=RANKS)
def test_sort_argsort_unique_match_numpy(comm):
    @settings(derandomize=True, database=None, max_examples=15, deadline=None)
    @given(values)
    def check(x):
        for kw in layouts(comm.size, len(x)):
            a = xdap.from_global(x, comm=comm, **kw)
            np.testing.assert_array_equal(xdap.sort(a).to_numpy(), np.sort(x))
            np.testing.assert_array_equal(xdap.argsort(a).to_numpy(), np.argsort(x, kind="stable"))
            np.testing.assert_array_equal(xdap.sort(a, descending=True).to_numpy(), np.sort(x)[::-1])
            np.testing.assert_array_equal(xdap.argsort(a, descending=True).to_numpy(), stable_desc(x))
            np.testing.assert_array_equal(xdap.unique_values(a).to_numpy(), np.unique(x))
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_ties_spread_over_the_ranks(comm):
    """A constant array, and one value filling 90%: every rank gets its share."""
    n = 4000
    rng = np.random.default_rng(2)
    for x in (np.zeros(n), np.where(rng.random(n) < 0.9, 1.0, rng.random(n))):
        s = xdap.sort(xdap.from_global(x, comm=comm))
        sizes = comm.allgather(s.local_numpy().size)
        assert sum(sizes) == n and max(sizes) <= 1.15 * n / comm.size, sizes
        np.testing.assert_array_equal(s.to_numpy(), np.sort(x))
        i = xdap.argsort(xdap.from_global(x, dist=("c",), comm=comm))
        np.testing.assert_array_equal(i.to_numpy(), np.argsort(x, kind="stable"))


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_n_d_along_every_axis(comm):
    g = np.random.default_rng(4).integers(0, 5, (7, 6)).astype(float)
    for kw in (dict(dist=("b",)), dict(dist=("b", "c")), dict(dist=("n", "b"))):
        a = xdap.from_global(g, comm=comm, **kw)
        for axis in (0, 1, -1):
            np.testing.assert_array_equal(xdap.sort(a, axis=axis).to_numpy(), np.sort(g, axis=axis))
            np.testing.assert_array_equal(xdap.argsort(a, axis=axis).to_numpy(),
                                          np.argsort(g, axis=axis, kind="stable"))
        np.testing.assert_array_equal(xdap.unique_values(a).to_numpy(), np.unique(g))


@pytest.mark.mpi(ranks=(1, 2))
def test_what_cannot_be_sorted_is_one_clear_error(comm):
    with pytest.raises(TypeError, match=r"sort: .*fixed numeric data .*\?float64"):
        xdap.sort(xdap.from_global(np.ma.array([1.0, 2.0], mask=[0, 1]), comm=comm))
    with pytest.raises(TypeError, match="var \\* var"):
        xdap.argsort(xdap.from_global([[1.0], [2.0, 3.0]], type="var * var * float64", comm=comm))
    with pytest.raises(ValueError, match="0-d array has no axis"):
        xdap.sort(xdap.from_global(1.0, comm=comm))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        xdap.sort(xdap.from_global(np.zeros((2, 2)), comm=comm), axis=2)


@pytest.mark.mpi(ranks=RANKS)
def test_searchsorted_matches_numpy(comm):
    """Insertion indices in a sorted distributed array (xdap.sort's result
    and sorted block/cyclic arrays, empty ranks included), for replicated
    and distributed queries, both sides; values drawn alike on every rank."""
    @settings(derandomize=True, database=None, max_examples=10, deadline=None)
    @given(st.lists(st.integers(-3, 3), max_size=30).map(np.array),
           st.lists(st.integers(-5, 5), min_size=1, max_size=12).map(np.array))
    def check(x, q):
        x = np.sort(x).astype(float)
        q = q.astype(float)
        for kw in layouts(comm.size, len(x)):
            a = xdap.from_global(x, comm=comm, **kw)
            for side in ("left", "right"):
                want = np.searchsorted(x, q, side=side)
                np.testing.assert_array_equal(xdap.searchsorted(a, q, side=side), want)
                qd = xdap.from_global(q, dist=("c",), comm=comm)
                np.testing.assert_array_equal(xdap.searchsorted(a, qd, side=side).to_numpy(), want)
        s = xdap.sort(xdap.from_global(x[::-1].copy(), comm=comm))
        np.testing.assert_array_equal(xdap.searchsorted(s, q), np.searchsorted(x, q))
    check()


def test_stable_argsort_is_numpys_stable_argsort():
    """The quick path (no ties) and every tie it must see: equal values,
    two NaNs, -0.0 and 0.0, ints; against NumPy's stable argsort."""
    from xdap.movement.sort import stable_argsort
    rng = np.random.default_rng(8)
    cases = [rng.random(1000), rng.random(1000).round(2), np.array([np.nan, 1.0, np.nan, 0.0]),
             np.array([0.0, -0.0, 1.0, -0.0]), np.array([2.0, np.nan, 1.0]),
             rng.integers(0, 5, 100), rng.random(1000).astype(np.float32), np.array([3.0]),
             np.array([], float)]
    for v in cases:
        np.testing.assert_array_equal(stable_argsort(v), np.argsort(v, kind="stable"))
