"""Arrow and Awkward interop: every dtype, fixed / var / optional, nested var;
zero-copy checked by buffer addresses and np.shares_memory; DistArrays from
per-rank Arrow/awkward arrays on 1-4 ranks."""
import pickle

import awkward as ak
import numpy as np
import pyarrow as pa
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import as_container, parts
from xdap.protocols.arrow import ComplexType, from_arrow, parts_from_arrow, to_arrow
from xdap.protocols.awkward import from_awkward, to_awkward

from helpers import DTYPES


def sample(dtype, n, rng):
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype.startswith("complex"):
        return (rng.integers(-9, 9, n) + 1j * rng.integers(-9, 9, n)).astype(dtype)
    return rng.integers(0, 100, n).astype(dtype)


def ragged_lists(values, mask, rng, nrows, depth):
    """Nested Python lists of `depth` var levels over the values (None = masked)."""
    items = [None if m else v.item() for v, m in zip(values, mask)]
    for _ in range(depth - 1):
        cuts = np.sort(rng.integers(0, len(items) + 1, max(nrows, 1) - 1))
        bounds = [0, *cuts.tolist(), len(items)]
        items = [items[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return items


def cases(dtype):
    """(type string, python value) pairs: fixed 1-d/3-d, optional, var 2/3 levels."""
    rng = np.random.default_rng(11)
    v = sample(dtype, 24, rng)
    m = rng.random(24) < 0.3
    plain = [x.item() for x in v]
    out = [(f"24 * {dtype}", plain),
           (f"2 * 3 * 4 * {dtype}", np.array(plain, dtype=object).reshape(2, 3, 4).tolist()),
           (f"24 * ?{dtype}", [None if mm else x for x, mm in zip(plain, m)]),
           (f"4 * 6 * ?{dtype}", np.array([None if mm else x for x, mm in zip(plain, m)],
                                          dtype=object).reshape(4, 6).tolist()),
           (f"var * var * {dtype}", ragged_lists(v, np.zeros(24, bool), rng, 7, 2)),
           (f"var * var * ?{dtype}", ragged_lists(v, m, rng, 7, 2)),
           (f"var * var * var * ?{dtype}", ragged_lists(v, m, rng, 5, 3)),
           (f"0 * {dtype}", [])]
    return out


def leaves_shared(x, y):
    px, py = parts(x), parts(y)
    if px.values.size == 0:
        return True
    ok = np.shares_memory(px.values, py.values)
    if px.validity is not None:
        ok = ok and np.shares_memory(px.validity, py.validity)
    # offsets: xnd copies them into the ndtypes type (4 B a row) whenever a
    # ragged container is made, so two containers never share them; the
    # Arrow-side checks below look at the offsets buffers directly
    return ok


@pytest.mark.parametrize("dtype", DTYPES)
def test_arrow_roundtrip_every_dtype(dtype):
    for t, value in cases(dtype):
        x = as_container(value, type=t)
        arr = to_arrow(x)
        assert len(arr) == len(value)
        want = value
        assert arr.to_pylist() == want, t
        y = from_arrow(arr)
        assert str(y.type) == t and y.value == value, t
        if dtype != "bool":                       # Arrow bit-packs booleans: one copy
            assert leaves_shared(x, y), t
            # the Arrow buffers ARE the xnd memory
            px = parts(x)
            leaf = arr
            while pa.types.is_list(leaf.type) or pa.types.is_fixed_size_list(leaf.type):
                leaf = leaf.values
            if isinstance(leaf.type, ComplexType):
                validity_buf, leaf = leaf.storage.buffers()[0], leaf.storage.values
            else:
                validity_buf = leaf.buffers()[0]
            if px.values.size:
                assert leaf.buffers()[1].address == px.values.ctypes.data, t
            if px.validity is not None and px.values.size:
                assert validity_buf.address == px.validity.ctypes.data, t
            # offsets: Arrow's offsets buffers are xnd's, and parts_from_arrow views them
            level, pp = arr, parts_from_arrow(arr)
            for k, off in enumerate(px.offsets[1:]):
                assert level.buffers()[1].address == off.ctypes.data, t
                assert np.shares_memory(pp.offsets[k + 1], off), t
                level = level.values
        # pickle keeps values and the complex extension type
        assert from_arrow(pickle.loads(pickle.dumps(arr))).value == value


@pytest.mark.parametrize("dtype", DTYPES)
def test_awkward_roundtrip_every_dtype(dtype):
    for t, value in cases(dtype):
        x = as_container(value, type=t)
        arr = to_awkward(x)
        assert arr.to_list() == value, t
        assert str(arr.type).split(" * ", 1)[1] == t.split(" * ", 1)[1], (arr.type, t)
        y = from_awkward(arr)
        assert str(y.type) == t and y.value == value, t
        assert leaves_shared(x, y), t           # bool too: awkward keeps a byte per bool


def test_arrow_from_producers():
    # pyarrow's own arrays: nulls, slices (offsets not at 0, bit offsets), chunks, large lists
    arr = pa.array([[1, None], [], [3, 4, 5], [6]], pa.list_(pa.int64()))
    sl = arr.slice(2)
    y = from_arrow(sl)
    assert y.value == [[3, 4, 5], [6]]
    assert np.shares_memory(parts(y).values, np.frombuffer(arr.values.buffers()[1], np.int64))
    prim = pa.array([1.0, None, 3.0, 4.0, None, 6.0, 7.0, 8.0, 9.0, None, 11.0])
    assert from_arrow(prim.slice(3)).value == [4.0, None, 6.0, 7.0, 8.0, 9.0, None, 11.0]
    assert from_arrow(prim.slice(8)).value == [9.0, None, 11.0]
    assert from_arrow(pa.chunked_array([[1, 2], [3]])).value == [1, 2, 3]
    big = pa.array([[1], [2, 3]], pa.large_list(pa.int32()))
    assert from_arrow(big).type == as_container([[1], [2, 3]], dtype="int32").type
    fsl = pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float64(), 2))
    assert from_arrow(fsl, type="2 * complex128").value == [1 + 2j, 3 + 4j]
    assert str(from_arrow(pa.array([1, 2]), type="2 * ?int64").type) == "2 * ?int64"
    assert str(from_arrow(pa.array([1, None]).slice(0, 1), type="1 * int64").type) == "1 * int64"


def test_arrow_errors():
    with pytest.raises(TypeError, match="null lists are not supported"):
        from_arrow(pa.array([[1], None], pa.list_(pa.int64())))
    with pytest.raises(TypeError, match="below a list level.*type='fixed_string\\(n\\)'"):
        from_arrow(pa.array([["a"], ["b"]]))
    with pytest.raises(TypeError, match="Arrow type .*not supported: an element is"):
        from_arrow(pa.array([1], pa.timestamp("s")))
    with pytest.raises(TypeError, match="mixes fixed-size and variable-size"):
        from_arrow(pa.array([[[1, 2]], [[3, 4]]], pa.list_(pa.list_(pa.int64(), 2))))
    with pytest.raises(ValueError, match="has nulls but the requested type"):
        from_arrow(pa.array([1, None]), type="2 * int64")
    with pytest.raises(TypeError, match="not the requested"):
        from_arrow(pa.array([1, 2]), type="2 * float64")
    with pytest.raises(TypeError, match="expected a pyarrow Array"):
        from_arrow([1, 2])


def test_awkward_other_layouts():
    # layouts awkward builds itself: ByteMasked/IndexedOption, int64 offsets, sliced, ListArray
    a = ak.Array([[1.5, None], [], [2.5]])
    assert from_awkward(a).value == [[1.5, None], [], [2.5]]
    assert from_awkward(a[1:]).value == [[], [2.5]]
    assert from_awkward(ak.Array([[1, 2], [3]])[[1, 0]]).value == [[3], [1, 2]]
    assert str(from_awkward(ak.from_numpy(np.zeros((2, 3)), regulararray=False)).type) == "2 * 3 * float64"
    assert str(from_awkward(ak.to_regular(ak.Array([[1, 2], [3, 4]]), axis=1)).type) == "2 * 2 * int64"
    with pytest.raises(TypeError, match="null lists"):
        from_awkward(ak.Array([[1], None]))
    with pytest.raises(TypeError, match="below a list level.*fixed_string"):
        from_awkward(ak.Array([["a"], ["b"]]))
    assert from_awkward(ak.Array([["a"], ["bc"]]), type="fixed_string(2)").value == [["a"], ["bc"]]


# -- DistArrays and per-rank Arrow arrays -------------------------------------------

@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("t", ["var * var * ?float64", "var * var * var * int32",
                               "N * 3 * ?complex64", "N * int8"])
def test_distarray_from_per_rank_arrow(t):
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(comm.rank)
    n = [3, 0, 5, 1][comm.rank % 4]                        # irregular, an empty rank too
    if t.startswith("var") and n == 0:
        n = 2        # xnd dev3 cannot make a ragged container of 0 rows (var_dim: noffsets < 2)
    dtype = t.rsplit(" ", 1)[1].lstrip("?")
    if t.startswith("var"):
        depth = t.count("var")
        v = sample(dtype, 4 * n + 1, rng)
        local = as_container(ragged_lists(v, rng.random(len(v)) < 0.2 if "?" in t else
                                          np.zeros(len(v), bool), rng, n, depth)[:n] if n else [],
                             type=t)
    else:
        inner = t.split(" * ")[1:-1]
        shape = (n,) + tuple(int(s) for s in inner)
        v = sample(dtype, int(np.prod(shape)), rng).reshape(shape)
        local = as_container(np.ma.MaskedArray(v, rng.random(shape) < 0.3) if "?" in t else v)
    arr = to_arrow(local)
    a = xdap.from_arrow(arr, comm=comm)
    every = comm.allgather(local.value)
    assert a.to_global().value == [row for part in every for row in part]
    sizes = comm.allgather(n)
    assert a.distribution.maps[0].bounds == tuple(np.concatenate([[0], np.cumsum(sizes)]).tolist())
    if parts(local).values.size and dtype != "bool":
        assert leaves_shared(local, a.local)
    # back to Arrow / awkward from the DistArray: the same memory
    out = a.to_arrow()
    assert out.to_pylist() == arr.to_pylist()
    b = xdap.from_arrow(out, comm=comm)
    assert b.to_global().value == a.to_global().value
    k = a.to_awkward()
    assert k.to_list() == local.value
    c = xdap.from_awkward(k, comm=comm)
    assert c.to_global().value == a.to_global().value and c.distribution == a.distribution
    if parts(local).values.size:
        assert np.shares_memory(parts(c.local).values, parts(a.local).values)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_distarray_owned_part_and_type_mismatch():
    comm = MPI.COMM_WORLD
    g = np.arange(40.0).reshape(10, 4)
    a = xdap.from_global(g, dist=("b",), padding=((1, 1),), comm=comm)
    d = a.distribution
    mine = d.maps[0].global_indices(d.coords[0])[d.maps[0].owned_local_slice(d.coords[0])]
    out = a.to_arrow()
    assert out.to_pylist() == g[mine].tolist()              # communication padding left out
    if len(mine):
        assert out.values.buffers()[1].address <= parts(a.local).values.ctypes.data + \
            parts(a.local).values.nbytes
        assert a.to_awkward().to_list() == g[mine].tolist()
    # ranks disagreeing on the element type: the same TypeError everywhere
    arr = pa.array([1.0, 2.0]) if comm.rank != comm.size - 1 else pa.array([1, 2], pa.int32())
    if comm.size > 1:
        with pytest.raises(TypeError, match="ranks hold different element types"):
            xdap.from_arrow(arr, comm=comm)
    bad = pa.array(["x"]) if comm.rank == comm.size - 1 else pa.array([1.0])
    if comm.size > 1:
        with pytest.raises(TypeError, match="different element types"):
            xdap.from_arrow(bad, comm=comm)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_distarray_from_arrow_with_an_empty_ragged_rank():
    # an empty ragged array on one rank: that rank holds no rows
    comm = MPI.COMM_WORLD
    last = comm.rank == comm.size - 1
    arr = pa.array([] if last else [[1.0, 2.0]], pa.list_(pa.float64()))
    want = [[1.0, 2.0]] * (comm.size - 1)
    a = xdap.from_arrow(arr, comm=comm)
    assert a.local.value == ([] if last else [[1.0, 2.0]]) and a.to_global().value == want
    k = ak.Array([[1.0]])[0:0] if last else ak.Array([[1.0, 2.0]])
    assert xdap.from_awkward(k, comm=comm).to_global().value == want
    # and everybody can go on
    assert xdap.from_arrow(pa.array([[float(comm.rank)]]), comm=comm).to_global().value == \
        [[float(r)] for r in range(comm.size)]
