"""Basic indexing of DistArrays (a[2:5], a[1], a[:, 0], a[::-1], a[..., None])
and item assignment, against NumPy on the global array, on 1-4 ranks, for
block (regular, irregular with empty ranks, padded), cyclic, block-cyclic
and 2-D grids; keys drawn by hypothesis, the same on every rank
(derandomized).  Plus the Python conversions of 0-d arrays and len/iter.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi4py import MPI

import xdap
import xdap.agreement
import xdap.kernels.library
from test_local_work import Counting

RANKS = (1, 2, 3, 4)
SHAPE = (9, 7)
G = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE) * 1.5 - 11


def layouts(P):
    """(name, from_global keywords): every map kind a key meets."""
    empty = {1: [9], 2: [0, 9], 3: [4, 0, 5], 4: [3, 0, 6, 0]}[P]
    return [("block", dict(dist=("b",))), ("cyclic", dict(dist=("c",))),
            ("block-cyclic", dict(dist=("c",), block_size=(2,))),
            ("2-D grid", dict(dist=("b", "c"))),
            ("empty ranks", dict(dist=("b",), sizes=(empty,))),
            ("padded", dict(dist=("b",), padding=((1, 1),)))]


def slices(n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
    return st.builds(slice, bound, bound, step)


def entry(n):
    return st.one_of(slices(n), st.integers(-n, n - 1))


keys = st.one_of(
    entry(SHAPE[0]),
    st.tuples(entry(SHAPE[0]), entry(SHAPE[1])),
    st.tuples(st.just(Ellipsis), entry(SHAPE[1])),
    st.tuples(entry(SHAPE[0]), st.none(), entry(SHAPE[1])),
    st.tuples(st.none(), entry(SHAPE[0])),
    # every dim an integer, plus an ellipsis: a 0-d array every rank holds
    st.tuples(st.integers(-SHAPE[0], SHAPE[0] - 1), st.just(Ellipsis),
              st.integers(-SHAPE[1], SHAPE[1] - 1)),
    st.tuples(st.integers(-SHAPE[0], SHAPE[0] - 1), st.integers(-SHAPE[1], SHAPE[1] - 1),
              st.just(Ellipsis)),
)


def as_numpy(x):
    return x.to_numpy() if isinstance(x, xdap.DistArray) else np.asarray(x)


@pytest.mark.mpi(ranks=RANKS)
def test_basic_keys_match_numpy(comm):
    arrays = [(name, xdap.from_global(G, comm=comm, **kw)) for name, kw in layouts(comm.size)]

    @settings(derandomize=True, database=None, max_examples=20, deadline=None)
    @given(keys)
    def check(key):
        want = G[key]
        for name, a in arrays:
            got = a[key]
            assert as_numpy(got).shape == want.shape, (name, key)
            np.testing.assert_array_equal(as_numpy(got), want, err_msg=f"{name} {key}")
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_integers_with_an_ellipsis_give_a_0d_array_on_every_rank(comm):
    """``a[i, j, ...]`` is NumPy's 0-d array, not a scalar: every rank holds
    the element, also the ranks that own none of it (a ?T element stays
    missing)."""
    for _, kw in layouts(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        got = a[2, ..., -1]
        assert isinstance(got, xdap.DistArray) and got.shape == ()
        assert float(got) == G[2, -1] and got.local_numpy()[()] == G[2, -1]
    masked = np.ma.array(G[:, 0], mask=np.arange(SHAPE[0]) % 2 == 1)
    m = xdap.from_global(masked, comm=comm)
    assert m[1, ...].local.value is None and m[2, ...].local.value == G[2, 0]


@pytest.mark.mpi(ranks=RANKS)
def test_assignment_matches_numpy(comm):
    @settings(derandomize=True, database=None, max_examples=8, deadline=None)
    @given(keys, st.sampled_from(["scalar", "array"]))
    def check(key, kind):
        for name, kw in layouts(comm.size):
            a = xdap.from_global(G, comm=comm, **kw)
            want = G.copy()
            value = -1.0 if kind == "scalar" else np.arange(want[key].size, dtype=float) \
                .reshape(want[key].shape) + 1000
            want[key] = value
            a[key] = value
            np.testing.assert_array_equal(a.to_numpy(), want, err_msg=f"{name} {key}")
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_slice_of_a_block_moves_nothing_and_shares_memory(comm):
    quiet = Counting(MPI.COMM_WORLD)
    n = 10_000
    a = xdap.from_global(np.arange(n, dtype=float), comm=quiet)
    g = xdap.from_global(G, comm=quiet)
    saved = xdap.agreement.set_debug(False)
    try:
        Counting.calls.clear()
        b = a[1000:-1000]
        c = a[::-1]
        row = g[:, 3]
        # views move nothing and make no MPI call: each key is written in the ledger ...
        assert Counting.calls == []
        # ... which the next collective carries: one message, its own
        assert a.sum() == n * (n - 1) / 2
        assert Counting.calls == ["Allgather"] * (comm.size > 1)
    finally:
        xdap.agreement.set_debug(saved)
    assert b.local_numpy().size == 0 or np.shares_memory(b.local_numpy(), a.local_numpy())
    np.testing.assert_array_equal(b.to_numpy(), np.arange(1000.0, n - 1000))
    np.testing.assert_array_equal(c.to_numpy(), np.arange(n, dtype=float)[::-1])
    np.testing.assert_array_equal(row.to_numpy(), G[:, 3])
    # the result is an irregular block: its bounds follow from the source's
    m = b.distribution.maps[0]
    assert m.dist_type == "b" and m.size == n - 2000 and m.grid_size == comm.size


@pytest.mark.mpi(ranks=(1, 3))
def test_distributed_values_into_a_slice(comm):
    """a[1:-1] = b[1:-1] (one block distribution: nothing moves), and from a
    DistArray of another distribution (moved first)."""
    a = xdap.from_global(G, comm=comm)
    b = xdap.from_global(G * 10, comm=comm)
    a[1:-1] = b[1:-1]
    want = G.copy()
    want[1:-1] = G[1:-1] * 10
    np.testing.assert_array_equal(a.to_numpy(), want)
    c = xdap.from_global(-G[2:5, 1:3], dist=("c",), comm=comm)
    a[2:5, 1:3] = c
    want[2:5, 1:3] = -G[2:5, 1:3]
    np.testing.assert_array_equal(a.to_numpy(), want)
    with pytest.raises(ValueError, match=r"b has shape \(3, 2\), the selection \(2, 2\)"):
        a[2:4, 1:3] = c


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_ragged_and_string_rows_slice(comm):
    rows = [[float(i)] * (i % 4) for i in range(12)]
    r = xdap.from_global(rows, type="var * var * float64", comm=comm)
    s = xdap.from_global([f"s{i}" for i in range(12)], type="string", comm=comm)
    P = comm.size
    # each rank keeps at least one row: ndtypes dev3 has no empty ragged part
    assert r[::1].to_global().value == rows
    assert r[0:12:1].to_global().value == rows
    if P == 1:
        assert r[2:9].to_global().value == rows[2:9]
        assert s[1:7].to_global().value == [f"s{i}" for i in range(1, 7)]
    with pytest.raises(IndexError, match="takes a slice of its rows only"):
        r[3, None]
    with pytest.raises(IndexError, match="takes a slice of its rows only"):
        r[3]


@pytest.mark.mpi(ranks=(1, 2))
def test_bad_keys_are_numpy_errors(comm):
    a = xdap.from_global(G, comm=comm)
    with pytest.raises(IndexError, match="too many indices"):
        a[1:2, 0:1, 3:4]
    with pytest.raises(IndexError, match="out of bounds for dim 1"):
        a[:, 7]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., ...]
    with pytest.raises(TypeError, match=r"basic keys \(ints, slices, ..., None\) and boolean "
                                        "masks only"):
        a[[1, 2]] = 0
    with pytest.raises(IndexError, match="only integers, slices"):
        a[1.5]


@pytest.mark.mpi(ranks=(1, 2))
def test_python_conversions_len_and_iteration(comm):
    z = xdap.from_global(2.5, comm=comm)
    assert float(z) == 2.5 and int(z) == 2 and bool(z) and complex(z) == 2.5 + 0j
    assert z.item() == 2.5
    i = xdap.from_global(np.int64(3), comm=comm)
    assert [10, 11, 12, 13][i] == 13 and i.type == xdap.from_global(np.arange(1)).type.__class__(
        "int64")
    assert xdap.from_global(0.5, dtype="float32", comm=comm).type == \
        xdap.from_global(np.float32(0.5), comm=comm).type
    a = xdap.from_global(G, comm=comm)
    assert len(a) == SHAPE[0]
    with pytest.raises(TypeError, match="only 0-d arrays convert"):
        bool(a < 0)
    with pytest.raises(TypeError, match="len"):
        len(z)
    with pytest.raises(TypeError, match="only 0-d integer arrays are indices"):
        [1, 2][z]
    got = [row.to_numpy() for row in a]
    np.testing.assert_array_equal(np.stack(got), G)
    assert [float(v) for v in xdap.from_global(np.arange(3.0), comm=comm)] == [0.0, 1.0, 2.0]


@pytest.mark.mpi(ranks=RANKS)
def test_boolean_masks_match_numpy(comm):
    """a[a > 0], a[numpy_mask]: the selected elements in global C order, a
    1-D irregular block; layouts whose rows are not in C order move first."""
    for name, kw in layouts(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for got, want in ((a[a > 0], G[G > 0]), (a[G < 2], G[G < 2]), (a[a > 1e9], G[G > 1e9])):
            assert got.ndim == 1 and got.distribution.maps[0].dist_type == "b"
            np.testing.assert_array_equal(got.to_numpy(), want, err_msg=name)
    with pytest.raises(IndexError, match=r"a boolean index of shape \(3,\) does not match"):
        a[np.ones(3, bool)]
    other = xdap.from_global(G > 0, dist=("c",), comm=comm)     # aligned: moved to a's
    np.testing.assert_array_equal(xdap.from_global(G, comm=comm)[other].to_numpy(), G[G > 0])


@pytest.mark.mpi(ranks=RANKS)
def test_a_mask_of_the_leading_dims_selects_rows_as_numpy(comm):
    """a[m] with m of a's leading dims: (selected rows, *trailing dims), in
    C order -- a NumPy mask or a DistArray one, trailing dims of size 0 too."""
    rng = np.random.default_rng(5)                       # the same draws on every rank
    for shape in [(7, 3), (4, 2, 3), (2, 0), (6, 1, 2)]:
        g = rng.standard_normal(shape)
        for k in range(1, len(shape)):
            m = rng.random(shape[:k]) > 0.4
            for kw in ({}, dict(dist=("c",) + ("n",) * (len(shape) - 1))):
                a = xdap.from_global(g, comm=comm, **kw)
                for key in (m, xdap.from_global(m, comm=comm)):
                    got = a[key]
                    assert got.shape == g[m].shape, (shape, k, kw)
                    np.testing.assert_array_equal(got.to_numpy(), g[m], err_msg=f"{shape} {k}")
    # zero-size rows: the count of selected rows, each counted once (a padded mask's ghosts not)
    m = np.array([True, False, True, True, False, True, True])
    for kw in ({}, dict(dist=("b",), padding=((1, 1),)), dict(dist=("c",))):
        got = xdap.from_global(np.zeros((7, 0)), comm=comm)[xdap.from_global(m, comm=comm, **kw)]
        assert got.shape == (5, 0), (kw, got.shape)


@pytest.mark.mpi(ranks=RANKS)
def test_a_whole_key_of_one_boolean_assigns_as_numpy(comm):
    """a[True] = v is a[None][...] = v (every element), a[False] = v writes
    nothing -- a Python bool, NumPy's or a 0-d bool DistArray; 0-d arrays too."""
    for g in (np.float64(1.5), np.arange(5.0), G):
        for flag in (True, False, np.True_, np.False_):
            for v in (7.0, np.full((1,) + np.shape(g), 2.0)):
                for key in (flag, xdap.from_global(np.bool_(flag), comm=comm)):
                    a = xdap.from_global(np.array(g), comm=comm)
                    want = np.array(g)
                    a[key] = v
                    want[flag] = v
                    np.testing.assert_array_equal(a.to_numpy(), want, err_msg=f"{flag} {v}")


@pytest.mark.mpi(ranks=RANKS)
def test_integer_arrays_match_numpy(comm):
    """a[idx] with a NumPy array / list (the result a block over idx) and a
    1-D integer DistArray (the result distributed like it); xdap.take
    along an undistributed axis is local."""
    for name, kw in layouts(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for idx in ([8, 0, -1, 3, 3], np.array([2]), np.arange(9)[::-1], np.array([], np.int64)):
            want = G[np.asarray(idx, np.int64)]
            got = a[idx]
            assert got.shape == want.shape, (name, idx)
            np.testing.assert_array_equal(got.to_numpy(), want, err_msg=f"{name} {idx}")
        ix = xdap.from_global(np.array([5, 1, 1, 0, -2, 8, 4]), dist=("c",), comm=comm)
        got = a[ix]
        assert got.distribution.maps[0] == ix.distribution.maps[0]
        np.testing.assert_array_equal(got.to_numpy(), G[[5, 1, 1, 0, -2, 8, 4]], err_msg=name)
        np.testing.assert_array_equal(xdap.take(a, [6, 0], axis=1).to_numpy(), G[:, [6, 0]])
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        a[[0, 9]]
    r = xdap.from_global([[1.0], [2.0, 3.0]] * 3, type="var * var * float64", comm=comm)
    with pytest.raises(TypeError, match="fixed numeric data"):
        r[[0, 1]]


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_distarray_values_where_the_selection_has_no_distribution(comm):
    """``a[i, :] = b`` with ``i`` on a distributed dim, and selections of a
    cyclic dim: b's values reach every rank, each writes what it holds."""
    for kw in (dict(dist=("b", "n")), dict(dist=("c", "n")), dict(dist=("b", "b")),
               dict(dist=("c", "c"), block_size=(2, 1))):
        want = G.copy()
        a = xdap.from_global(G, comm=comm, **kw)
        row, col = np.arange(7.0) * 3, np.arange(4.0) - 9
        a[2, :] = xdap.from_global(row, comm=comm)
        a[1:9:2, -1] = xdap.from_global(col, dist=("c",), comm=comm)
        want[2, :] = row
        want[1:9:2, -1] = col
        np.testing.assert_array_equal(a.to_numpy(), want, err_msg=str(kw))


@pytest.mark.mpi(ranks=(1, 2))
def test_ragged_values_are_refused_alike_on_every_rank_count(comm):
    """A ragged b is no value for a[...] = b: one TypeError on every rank,
    on one rank or several (gathered whole, its leaves would have been
    written flat into the row)."""
    a = xdap.from_global(np.zeros((3, 4)), dist=("b", "n"), comm=comm)
    r = xdap.from_global([[1.0, 2.0], [3.0, 4.0]], type="var * var * float64", comm=comm)
    for key in ((0, slice(None)), (slice(0, 2), 0)):
        with pytest.raises(TypeError, match=r"b is var \* var \* float64 data"):
            a[key] = r
    assert not a.to_numpy().any()
