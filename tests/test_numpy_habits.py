"""NumPy habits on a DistArray, on real ranks, checked against NumPy on the
global array: ufuncs and operators (with NumPy's promotion), readable
objects, to_numpy, astype/copy, element reads, scalar reductions and
rank-ordered printing."""
import io

import warnings

import numpy as np
import pytest
from mpi4py import MPI

import xdap

RANKS = (1, 2, 3, 4)


def ints(shape=(6, 5)):
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) - 7


@pytest.mark.mpi(ranks=RANKS)
def test_ufuncs_and_operators_follow_numpy():
    comm = MPI.COMM_WORLD
    g = ints()
    a = xdap.from_global(g, dist=("c", "b"), comm=comm)
    for got, want in [(np.sin(a), np.sin(g)), (a + 1, g + 1), (a * 0.5, g * 0.5),
                      (a / 2, g / 2), (np.maximum(a, 3), np.maximum(g, 3)),
                      (np.arctan2(a, 2.0), np.arctan2(g, 2.0)), (a < 0, g < 0),
                      (np.float32(2) * a, np.float32(2) * g), (-a, -g), (abs(a), abs(g))]:
        assert got.dtype == want.dtype, (got, want.dtype)
        np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-15)
        assert got.distribution == a.distribution
    f = a.astype("float64")
    np.add(f, 1.5, out=f)
    np.testing.assert_array_equal(f.to_numpy(), g + 1.5)


@pytest.mark.mpi(ranks=(1, 2))
@pytest.mark.parametrize("call, message", [
    (lambda a: np.asarray(a), "to_numpy\\(\\).*a.local"),
    (lambda a: np.divmod(a, 2), "np.divmod on a DistArray: ufuncs with 2 outputs"),
    (lambda a: np.add.reduce(a), "np.add.reduce on a DistArray"),
    (lambda a: np.add(a, 1, where=True), "with where="),
    # NumPy's own refusal, on every rank's values (its loop runs where the library has no kernel)
    (lambda a: np.negative(a > 0), "boolean negative.*is not supported"),
    (lambda a: a.astype("{x: int8}"), "astype"),
])
def test_what_numpy_would_refuse_is_one_clear_error(call, message):
    a = xdap.from_global(ints(), comm=MPI.COMM_WORLD)
    with pytest.raises(TypeError, match=message):
        call(a)


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
@pytest.mark.parametrize("dtype", ["uint8", "uint64", "int8"])
def test_a_python_int_beyond_the_dtype_is_numpys_overflow_and_a_value_error(dtype, debug,
                                                                              monkeypatch):
    """``uint8_array + -1``: NumPy 2 raises OverflowError; xdap raises one
    error that is both (its bad input is a ValueError) on every rank --
    through the operators' fast path, the kernels' and NumPy's ufuncs, in
    default and debug mode (was a raw OverflowError)."""
    import xdap.agreement
    monkeypatch.setattr(xdap.agreement, "_DEBUG", debug)
    g = np.arange(11, dtype=dtype)
    a = xdap.from_global(g, comm=MPI.COMM_WORLD, dist=("c",))
    bad = -1 if dtype.startswith("u") else 2 ** 70
    calls = [lambda: a + bad, lambda: bad - a, lambda: a & bad, lambda: a // bad,
             lambda: a << bad, lambda: np.add(a, bad), lambda: np.bitwise_or(bad, a)]
    if dtype == "int8":                 # a bound that clips every value beyond the dtype
        calls.append(lambda: xdap.array_api.clip(a, 216))
    with pytest.raises(OverflowError):
        np.add(g, bad)                              # NumPy's own refusal
    for call in calls:
        with pytest.raises(ValueError) as e:
            call()
        assert isinstance(e.value, OverflowError), e.value
        assert dtype in str(e.value), e.value
    np.testing.assert_array_equal((a + 1).to_numpy(), g + 1)     # a later call works


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_operands_with_other_distributions_are_aligned_with_a_warning():
    """``a + b`` of one shape, distributed differently: ``b`` is moved to
    ``a``'s distribution (one exchange), rank 0 warns; slices of one array
    (irregular blocks) meet the same way."""
    comm = MPI.COMM_WORLD
    g = ints()
    a = xdap.from_global(g, dist=("b",), comm=comm)
    b = xdap.from_global(g, dist=("c",), comm=comm)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = a + b
        t = a[1:] * a[:-1]
        w = xdap.where(a[2:] > 3, a[2:], b[:-2])
    assert s.distribution == a.distribution
    np.testing.assert_array_equal(s.to_numpy(), 2 * g)
    np.testing.assert_array_equal(t.to_numpy(), g[1:] * g[:-1])
    np.testing.assert_array_equal(w.to_numpy(), np.where(g[2:] > 3, g[2:], g[:-2]))
    warned = [x.category for x in seen].count(xdap.RedistributionWarning)
    if comm.rank > 0:
        assert warned == 0                      # printed once: by rank 0
    elif comm.size > 1:
        assert warned == 3


@pytest.mark.mpi(ranks=RANKS)
def test_readable_object():
    comm = MPI.COMM_WORLD
    g = ints((7, 4))
    a = xdap.from_global(g, dist=("c", "n"), block_size=(2, None), comm=comm)
    local = a.distribution.local_shape
    assert repr(a) == str(a) == (
        f"DistArray(7 * 4 * int64, dist=('c[2]', 'n'), grid=({comm.size}, 1), "
        f"rank {comm.rank} of {comm.size} holds {local[0]}x{local[1]})")
    assert "\n" not in repr(a)
    assert a.shape == g.shape and a.ndim == 2 and a.size == g.size and a.dtype == g.dtype
    r = xdap.from_global([[1.0], [2.0, 3.0]] * 4, type="var * var * float64", comm=comm)
    assert r.shape == (8, None) and r.dtype is None and r.size is None
    assert repr(r).endswith("rows)") and "var * var * float64" in repr(r)


@pytest.mark.mpi(ranks=RANKS)
def test_to_numpy_global_indices_and_element_reads():
    comm = MPI.COMM_WORLD
    g = ints()
    a = xdap.from_global(g, dist=("c", "b"), comm=comm)
    np.testing.assert_array_equal(a.to_numpy(), g)
    root = a.to_numpy(root=0)
    assert (root is None) == (comm.rank != 0)
    # the indices this rank holds are the ones its local block came from
    i0, i1 = a.global_indices(0), a.global_indices(1)
    np.testing.assert_array_equal(a.local_numpy(), g[np.ix_(i0, i1)])
    assert list(i0) == list(range(a.distribution.coords[0], g.shape[0], a.grid[0]))
    for i in range(g.shape[0]):
        for j in (0, g.shape[1] - 1, -1):
            v = a[i, j]            # the standard's 0-d array, its value on every rank
            assert isinstance(v, xdap.DistArray) and v.shape == () and v.dtype == np.int64
            assert int(v) == g[i, j] and v.item() == g[i, j] and np.asarray(v) == g[i, j]
    m = xdap.from_global(np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0]), comm=comm)
    assert float(m[0]) == 1.0 and m[1].item() is None and float(m[-1]) == 3.0
    np.testing.assert_array_equal(m.to_numpy().mask, [False, True, False])
    with pytest.raises(IndexError, match="out of bounds"):
        a[99, 0]
    np.testing.assert_array_equal(a[1].to_numpy(), g[1])     # a row: basic indexing


@pytest.mark.mpi(ranks=(2, 3))
def test_element_index_that_differs_between_ranks_is_one_error():
    comm = MPI.COMM_WORLD
    a = xdap.from_global(ints(), comm=comm)
    with pytest.raises(ValueError, match="key must be the same on every rank"):
        a[comm.rank % 2, 0]


@pytest.mark.mpi(ranks=RANKS)
def test_reductions_are_numpy_scalars():
    comm = MPI.COMM_WORLD
    g = ints()
    a = xdap.from_global(g, dist=("b", "c"), comm=comm)
    s = a.sum()
    assert isinstance(s, np.int64) and s == g.sum() and float(s) == float(g.sum())
    assert isinstance(a.mean(), np.float64) and a.mean() == pytest.approx(g.mean())
    assert a.max() + 1 == g.max() + 1
    empty = xdap.from_global(np.ma.masked_all(5), comm=comm)
    assert empty.max() is None and empty.count() == 0


@pytest.mark.mpi(ranks=RANKS)
def test_astype_and_copy():
    comm = MPI.COMM_WORLD
    g = ints()
    a = xdap.from_global(g, comm=comm)
    b = a.astype(np.float32)
    assert b.dtype == np.float32 and b.distribution == a.distribution
    np.testing.assert_array_equal(b.to_numpy(), g.astype(np.float32))
    c = a.copy()
    np.multiply(c, 0, out=c)
    np.testing.assert_array_equal(a.to_numpy(), g)          # the copy is its own memory
    assert not c.to_numpy().any()
    m = xdap.from_global(np.ma.array([1, 2, 3], mask=[0, 1, 0]), comm=comm).astype("float64")
    assert m.to_numpy().tolist() == [1.0, None, 3.0]


@pytest.mark.mpi(ranks=RANKS)
def test_a_numpy_array_takes_the_type_asked_for():
    comm = MPI.COMM_WORLD
    g = ints((5, 3)).astype(np.int32)
    for a in [xdap.from_global(g, type="5 * 3 * ?float64", comm=comm),
              xdap.from_global(g if comm.rank == 0 else None, root=0, type="?float64", comm=comm),
              xdap.from_global(g, dtype="?float64", dist=("c", "b"), comm=comm)]:
        assert str(a.type) == "5 * 3 * ?float64"
        got = a.to_numpy()
        assert got.dtype == np.float64 and not np.ma.getmaskarray(got).any()
        np.testing.assert_array_equal(got.filled(np.nan), g.astype(np.float64))
    masked = np.ma.masked_array(g, mask=g % 4 == 0)
    kept = xdap.from_global(masked, type="5 * 3 * ?int64", comm=comm).to_numpy()
    assert np.array_equal(np.ma.getmaskarray(kept), g % 4 == 0)
    assert np.array_equal(kept.compressed(), g[g % 4 != 0])
    unmasked = np.ma.masked_array(g, mask=False)
    assert str(xdap.from_global(unmasked, type="int32", comm=comm).type) == "5 * 3 * int32"
    piece = np.arange(comm.rank + 1, dtype=np.int16)
    b = xdap.from_local(piece, type="?int64", comm=comm)
    assert str(b.local.type) == f"{comm.rank + 1} * ?int64"
    assert b.to_numpy().tolist() == [i for r in range(comm.size) for i in range(r + 1)]


POSITIVE = ints((5, 3)) > 0


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("data, asked, kind, message", [
    (ints((5, 3)), "5 * 3 * int32", TypeError, "only safe casts.*astype\\('int32'\\)"),
    (ints((5, 3)), "4 * 3 * int64", ValueError,
     "dimensions \\(4, 3\\) but the NumPy array has the shape \\(5, 3\\)"),
    (np.ma.masked_array(ints((5, 3)), mask=POSITIVE), "5 * 3 * int64", ValueError,
     f"{POSITIVE.sum()} masked values needs an optional type \\('\\?int64'\\)"),
])
def test_a_type_the_array_cannot_take_is_one_clear_error(data, asked, kind, message):
    comm = MPI.COMM_WORLD
    with pytest.raises(kind, match=message):
        xdap.from_global(data, type=asked, comm=comm)
    with pytest.raises(kind, match=message):        # given on the root only: the same error
        xdap.from_global(data if comm.rank == 0 else None, root=0, type=asked, comm=comm)


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("root", [None, 0])
def test_a_type_named_on_one_rank_only_is_one_clear_error(root):
    comm = MPI.COMM_WORLD
    g = ints((5, 3))
    asked = "?int64" if comm.rank == comm.size - 1 else None
    with pytest.raises(ValueError, match="type must be the same on every rank"):
        xdap.from_global(g if root is None or comm.rank == root else None, root=root,
                         type=asked, comm=comm)


@pytest.mark.mpi(ranks=(1, 3))
def test_rank_ordered_printing():
    comm = MPI.COMM_WORLD
    out = io.StringIO()
    xdap.print("rank", comm.rank, "says", comm.rank * 10, file=out)
    a = xdap.from_global(np.arange(5.0), dist=("c",), comm=comm)
    a.show(file=out)
    text = out.getvalue()
    if comm.rank:
        assert text == ""
        return
    lines = text.splitlines()
    assert lines[:comm.size] == [f"[rank {r}] rank {r} says {r * 10}" for r in range(comm.size)]
    assert lines[comm.size] == f"DistArray(5 * float64, dist=('c'), grid=({comm.size},))" \
        if comm.size > 1 else lines[comm.size].startswith("DistArray(5 * float64")
    for r in range(comm.size):
        mine = [float(v) for v in range(r, 5, comm.size)]
        assert lines[comm.size + 1 + r] == f"[rank {r}] {len(mine)}: {mine}"


@pytest.mark.mpi(ranks=(1, 2))
def test_show_abbreviates_large_partitions_as_numpy_does():
    """A 1000 x 1000 array prints a few lines, not megabytes: NumPy's
    summary of each rank's block; ragged and string rows: the first and
    last rows; missing values as NumPy's masked '--'."""
    comm = MPI.COMM_WORLD
    g = np.arange(10 ** 6, dtype=float).reshape(1000, 1000)
    a = xdap.from_global(g, comm=comm)
    out = io.StringIO()
    a.show(file=out)
    text = out.getvalue()
    if comm.rank == 0:
        assert len(text) < 2000 * comm.size and text.count("...") >= 2 * comm.size
        assert np.array2string(a.local_numpy()[:1, :3], separator=", ")[2:-2].split(",")[0] \
            in text
    r = xdap.from_global([[float(i)] * (i % 3) for i in range(3000)], type="var * var * float64",
                         comm=comm)
    out = io.StringIO()
    r.show(file=out)
    if comm.rank == 0:
        assert "[], [1.0], [2.0, 2.0], ..., " in out.getvalue() and "rows)" in out.getvalue()
    m = xdap.from_global(np.ma.array(np.arange(4000.0), mask=np.arange(4000) % 2 == 0),
                         comm=comm)
    out = io.StringIO()
    m.show(file=out)
    if comm.rank == 0:
        assert "-- 1.0 --" in out.getvalue() and "..." in out.getvalue()


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_astype_to_an_optional_type_keeps_the_question_mark(comm):
    g = np.arange(7.0)
    a = xdap.from_global(g, comm=comm).astype("?float32")
    assert str(a.type) == "7 * ?float32"
    assert a.to_global().value == g.tolist()
    masked = xdap.from_global(np.ma.array(g, mask=g % 3 == 1), comm=comm)
    b = masked.astype("int16")                      # missing values stay missing
    assert str(b.type) == "7 * ?int16"
    assert b.to_global().value == [None if v % 3 == 1 else int(v) for v in g]
    r = xdap.from_global([[1.0], [2.0, 3.0], []], type="var * var * float64", comm=comm)
    assert r.astype("?int32").to_global().value == [[1], [2, 3], []]
