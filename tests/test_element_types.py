"""Element types beyond numbers, through every door, on real ranks.

Each case is a global array built independently of xdap (a NumPy structured
or string array, or Python values that xnd types), distributed, moved and
exported through each entry point, and compared with that construction.
"""
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from mpi4py import MPI
from xnd import xnd

import xdap
from xdap.parts import parts

RANKS = (1, 2, 4)
N = 11

PARTICLE = np.dtype([("pos", "f8", (3,)), ("id", "i8"), ("charge", "f4")], align=True)
NESTED = np.dtype([("a", [("b", "i1"), ("c", "i2", (2,))]), ("d", "c16")], align=True)


def particles(n=N):
    g = np.zeros(n, PARTICLE)
    g["pos"] = np.arange(3 * n, dtype=float).reshape(n, 3) / 4
    g["id"] = np.arange(n) * 7 - 3
    g["charge"] = np.linspace(-1, 1, n)
    return g


def nested(n=N):
    g = np.zeros(n, NESTED)
    g["a"]["b"] = np.arange(n) - 5
    g["a"]["c"] = np.arange(2 * n).reshape(n, 2)
    g["d"] = np.arange(n) * (1 - 2j)
    return g


# name -> (global data for from_global, options, the independent expected value)
def cases():
    p, q = particles(), nested()
    tup = np.zeros(N, np.dtype([("f0", "i1"), ("f1", "f4")], align=True))
    tup["f0"], tup["f1"] = np.arange(N), np.arange(N) / 3
    words = [("abc", "x", "", "zz", "é")[i % 5] for i in range(N)]
    cats = [("red", "green", None)[i % 3] for i in range(N)]
    opt = [None if i % 4 == 1 else {"x": i / 2, "n": i} for i in range(N)]
    ragged = [[{"x": float(i), "n": i}] * (i % 3) + ([None] if i % 2 else []) for i in range(N)]
    ragged_bytes = [[bytes([65 + i % 26, 66])] * (i % 3 + 1) for i in range(N)]
    optf = [None if i % 5 == 4 else
            {"x": None if i % 3 == 0 else i / 4, "tag": bytes([97 + i, 98]),
             "pair": (None if i % 2 else i, -i)} for i in range(N)]
    ragf = [[{"x": None if (i + j) % 3 == 0 else float(i), "n": j} for j in range(i % 3 + 1)]
            for i in range(N)]
    ragged_words = [[words[(i + j) % N] for j in range(i % 3)] for i in range(N)]
    opt_words = [None if i % 4 == 2 else w for i, w in enumerate(words)]
    labelled = [{"name": w, "colour": c} for w, c in zip(words, cats)]
    return {
        "record": (p, {}, p.tolist()),
        "nested record": (q, {}, q.tolist()),
        "tuple": (xnd(tup.tolist(), type=f"{N} * (int8, float32)"), {}, tup.tolist()),
        "fixed_bytes": (np.array([w.encode("latin-1") for w in words], "S4"), {},
                        [w.encode("latin-1").ljust(4, b"\0") for w in words]),
        "fixed_string": (xnd(words, type=f"{N} * fixed_string(3)"), {}, words),
        "fixed_string utf32": (np.array(words, "U3"), {}, words),
        "categorical": (xnd(cats, type=f"{N} * categorical('red', 'green', NA)"), {}, cats),
        "optional categorical": (xnd(cats, type=f"{N} * ?categorical('red', 'green')"), {}, cats),
        "optional record": (xnd(opt, type=f"{N} * ?{{x: float64, n: int64}}"), {}, opt),
        "ragged records": (ragged, {"type": "var * var * ?{x: float64, n: int32}"}, ragged),
        "ragged fixed_bytes": (ragged_bytes, {"type": "var * var * fixed_bytes(size=2)"},
                               ragged_bytes),
        "optional fields": (xnd(optf, type=f"{N} * ?{{x: ?float64, tag: fixed_bytes(size=2), "
                                            f"pair: (?int8, int16)}}"), {}, optf),
        "ragged optional fields": (ragf, {"type": "var * var * {x: ?float64, n: int32}"}, ragf),
        "ragged fixed_string": (ragged_words, {"type": "var * var * fixed_string(3)"},
                                ragged_words),
        "optional fixed_string": (xnd(opt_words, type=f"{N} * ?fixed_string(3)"), {},
                                  opt_words),
        "record of text": (xnd(labelled, type=f"{N} * {{name: fixed_string(3), "
                                             f"colour: categorical('red', 'green', NA)}}"),
                           {}, labelled),
        "string": (words, {"type": "string"}, words),
        "bytes": ([w.encode("utf-8") * 2 for w in words], {"type": "bytes"},
                  [w.encode("utf-8") * 2 for w in words]),
    }


ROWS = ("ragged records", "ragged fixed_bytes", "ragged optional fields", "ragged fixed_string",
        "string",
        "bytes")                                                     # distributed by rows


CASES = cases()
NAMES = sorted(CASES)


def as_xnd_value(v, dt):
    """A NumPy record's tolist() value as xnd spells it: dicts for records,
    lists for sub-arrays."""
    if dt.names is not None:
        return {k: as_xnd_value(x, dt.fields[k][0]) for k, x in zip(dt.names, v)}
    if dt.subdtype is not None:
        return [as_xnd_value(x, dt.subdtype[0]) for x in v]
    return v


def expect(name):
    data, opts, want = CASES[name]
    if isinstance(data, np.ndarray) and data.dtype.names:
        return [as_xnd_value(r, data.dtype) for r in want]
    return want


def distribute(name, comm, **extra):
    data, opts, _ = CASES[name]
    return xdap.from_global(data, comm=comm, **{**opts, **extra})


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("name", NAMES)
def test_every_door_keeps_values_and_type(name):
    comm = MPI.COMM_WORLD
    want = expect(name)
    ragged = name in ROWS
    a = distribute(name, comm, dist=("c",)) if not name.startswith("ragged") else \
        distribute(name, comm)
    gtype = str(a.type)
    assert a.to_global().value == want

    # from_local: each rank hands over its block of the same construction
    data, opts, _ = CASES[name]
    lo, hi = [int(x) for x in np.linspace(0, N, comm.size + 1)[comm.rank:comm.rank + 2]]
    piece = (data[lo:hi] if isinstance(data, (np.ndarray, list)) else
             xnd(data.value[lo:hi], type=f"{hi - lo} * {a.info.leaf}"))
    f = xdap.from_local(piece, comm=comm, **opts)         # (N > ranks: no empty piece)
    assert f.to_global().value == want and str(f.type) == gtype

    # redistribute (and back), migrate
    b = a.redistribute(("b",))
    assert b.to_global().value == want and str(b.type) == gtype
    dest = (np.arange(len(parts(a.local).values) if not ragged else a.parts.nrows)
            + comm.rank) % comm.size
    m, plan = a.migrate(dest)
    assert m.to_global().value == want and str(m.type) == gtype

    # DAP: the buffer's format is a struct/bytes format NumPy reads zero-copy
    d = a.__distarray__()
    if not ragged:
        view = np.asarray(d["buffer"])
        assert np.shares_memory(view, a.parts.values)
        assert view.dtype == a.parts.values.dtype
    c = xdap.from_distarray(d, comm=comm)
    assert c.to_global().value == want and str(c.type) == gtype

    # __partitioned__
    e = xdap.from_partitioned(a.__partitioned__, comm=comm)
    assert e.to_global().value == want and str(e.type) == gtype

    # Arrow and Awkward: each rank's owned rows, stacked back in rank order,
    # as the very type they were -- no type= needed (fixed strings and
    # categoricals carry their ndtypes type where the target has no form)
    arrow = b.to_arrow()
    f = xdap.from_arrow(arrow, comm=comm)
    assert f.to_global().value == want and str(f.type) == gtype
    g = xdap.from_awkward(b.to_awkward(), comm=comm)
    assert g.to_global().value == want and str(g.type) == gtype

    # save / load, onto another distribution too
    path = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    a.save(os.path.join(path, "s"))
    h = xdap.load(os.path.join(path, "s"), comm=comm)
    assert h.to_global().value == want and str(h.type) == gtype
    assert h.distribution.maps[0].to_json()["dist_type"] == (
        "b" if name.startswith("ragged") else "c")
    k = xdap.load(os.path.join(path, "s"), comm=comm, dist=("b",))
    assert k.to_global().value == want


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("name", [n for n in NAMES if n not in ROWS])
def test_local_numpy_is_a_view_of_the_numpy_type(name):
    comm = MPI.COMM_WORLD
    a = distribute(name, comm, dist=("c",))
    view = a.local_numpy()
    data = CASES[name][0]
    if isinstance(data, np.ndarray):
        # rank r holds global elements r, r + P, ... (cyclic)
        np.testing.assert_array_equal(np.asarray(view), data[comm.rank::comm.size])
    base = view.data if isinstance(view, np.ma.MaskedArray) else view
    assert np.shares_memory(base, a.parts.values)


@pytest.mark.mpi(ranks=RANKS)
def test_ragged_local_numpy_is_refused_on_every_rank():
    a = distribute("ragged records", MPI.COMM_WORLD)
    with pytest.raises(TypeError, match="ragged array.*to_arrow"):
        a.local_numpy()


@pytest.mark.mpi(ranks=RANKS)
def test_fields_are_views_that_kernels_and_reductions_use():
    comm = MPI.COMM_WORLD
    g = particles()
    a = xdap.from_global(g, comm=comm, dist=("c",))
    pos = a["pos"]
    assert str(pos.type) == f"{N} * 3 * float64" and pos.grid == (comm.size, 1)
    assert np.shares_memory(pos.parts.values, a.parts.values)
    assert float(a["charge"].sum()) == pytest.approx(float(g["charge"].sum()), abs=1e-5)
    assert int(a.field("id").max()) == int(g["id"].max())
    # kernels write through a field into the records (1-d and N-d strided)
    xdap.kernels.sin(a["pos"], out=a["pos"])
    xdap.kernels.multiply(a["id"], 2, out=a["id"])
    got = parts(a.to_global()).values
    np.testing.assert_allclose(got["pos"], np.sin(g["pos"]))
    np.testing.assert_array_equal(got["id"], g["id"] * 2)
    np.testing.assert_array_equal(got["charge"], g["charge"])       # untouched
    # a field moves like any array
    np.testing.assert_allclose(np.asarray(a["pos"].redistribute(("b", "n")).to_global().value),
                               np.sin(g["pos"]))


@pytest.mark.mpi(ranks=RANKS)
def test_fields_of_ragged_and_optional_arrays_are_read_only_copies():
    comm = MPI.COMM_WORLD
    r = distribute("ragged records", comm)
    x = r["x"]
    want = [[None if v is None else v["x"] for v in row] for row in CASES["ragged records"][2]]
    assert x.to_global().value == want and str(x.type) == "var * var * ?float64"
    with pytest.raises(ValueError, match="read-only"):
        xdap.kernels.sin(x, out=x)
    o = distribute("optional record", comm)
    want = [None if v is None else v["n"] for v in CASES["optional record"][2]]
    assert o["n"].to_global().value == want
    assert o["n"].sum() == sum(v for v in want if v is not None)


@pytest.mark.mpi(ranks=RANKS)
def test_halos_of_records():
    """Ghost records hold what the same exchange puts in plain numeric
    arrays of each field (whose halos test_halo checks against NumPy)."""
    comm = MPI.COMM_WORLD
    g = particles(4 * comm.size + 2)
    opts = dict(comm=comm, padding=((1, 1),), periodic=(True,))
    a = xdap.from_global(g, **opts)
    ids = xdap.from_global(g["id"].copy(), **opts)
    pos = xdap.from_global(g["pos"].copy(), **{**opts, "padding": ((1, 1), (0, 0)),
                                               "periodic": (True, False)})
    # scramble the ghosts first, so that the exchange has to write them
    a.local_numpy()["id"][[0, -1]] = -99
    a.exchange_halos(), ids.exchange_halos(), pos.exchange_halos()
    np.testing.assert_array_equal(a.local_numpy()["id"], ids.local_numpy())
    np.testing.assert_array_equal(a.local_numpy()["pos"], pos.local_numpy())


@pytest.mark.mpi(ranks=RANKS)
def test_scatter_forward_of_records():
    comm = MPI.COMM_WORLD
    g = particles()
    a = xdap.from_global(g, comm=comm)
    needed = np.array([(comm.rank * 3 + k) % N for k in range(5)])
    s = xdap.Scatter(a, needed)
    got = s.forward(a)
    np.testing.assert_array_equal(got["id"], g["id"][needed])
    np.testing.assert_array_equal(got["pos"], g["pos"][needed])


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("call, message", [
    (lambda a: a.sum(), "reduce sum: the array has element type .*not a number"),
    (lambda a: xdap.kernels.sin(a), "kernel.*not a number.*a\\['x'\\]"),
    (lambda a: a + 1, "kernel.*not a number"),
    (lambda a: a["nope"], "has no field 'nope'; its fields: pos, id, charge"),
    (lambda a: a[0.5], "only integers, slices .* are valid indices, got float 0.5"),
])
def test_clear_refusals_on_every_rank(call, message):
    # NumPy's classes: a missing field is a ValueError, a float index an IndexError
    a = xdap.from_global(particles(), comm=MPI.COMM_WORLD)
    with pytest.raises((TypeError, ValueError, IndexError), match=message):
        call(a)


@pytest.mark.mpi(ranks=(2, 3))
def test_record_fields_in_another_order_on_one_rank_is_one_error():
    comm = MPI.COMM_WORLD
    g = particles()
    if comm.rank == comm.size - 1:
        swapped = np.dtype([("id", "i8"), ("pos", "f8", (3,)), ("charge", "f4")], align=True)
        h = np.zeros(N, swapped)
        for k in swapped.names:
            h[k] = g[k]
        g = h
    with pytest.raises(ValueError, match="data must be the same on every rank"):
        xdap.from_global(g, comm=comm)


@pytest.mark.mpi(ranks=(2, 3))
def test_categories_that_differ_between_ranks_are_one_error():
    comm = MPI.COMM_WORLD
    cats = "'a', 'b'" if comm.rank else "'b', 'a'"
    local = xnd(["a", "b"], type=f"2 * categorical({cats})")
    with pytest.raises(TypeError, match="element type"):
        xdap.from_local(local, comm=comm)


@pytest.mark.mpi(ranks=(2, 3))
def test_a_value_that_does_not_match_its_type_on_one_rank_is_one_error():
    comm = MPI.COMM_WORLD
    local = ([{"x": 1.0, "n": 2}] if comm.rank != 1 else [{"x": "oops", "n": 2}])
    with pytest.raises((TypeError, ValueError), match=r"rank 1"):
        xdap.from_local(local, comm=comm, type="1 * {x: float64, n: int64}")


def test_arrow_forms_of_elements():
    """The Arrow arrays are the ones pyarrow itself builds from the values."""
    from xdap.protocols.arrow import to_arrow, from_arrow, parts_from_arrow
    from xdap.parts import as_container
    g = particles(3)
    arr = to_arrow(as_container(g))
    assert arr.type == pa.struct([pa.field("pos", pa.list_(pa.field("item", pa.float64(), False), 3), False),
                                  pa.field("id", pa.int64(), False),
                                  pa.field("charge", pa.float32(), False)])
    assert arr.field("id").to_pylist() == g["id"].tolist()
    cat = to_arrow(as_container(["b", None, "a"], type="3 * ?categorical('a', 'b')"))
    assert cat.equals(pa.array(["b", None, "a"]).dictionary_encode().cast(
        pa.dictionary(pa.int64(), pa.string()))) or cat.to_pylist() == ["b", None, "a"]
    fb = to_arrow(as_container(np.array([b"ab", b"c"], "S2")))
    assert fb.type == pa.binary(2) and fb.to_pylist() == [b"ab", b"c\0"]
    # Arrow strings: N * string over the same offsets and bytes ...
    s = pa.array(["abc", "", "dé"])
    x = from_arrow(s)
    assert str(x.type) == "3 * string" and x.value == ["abc", "", "dé"]
    q = parts_from_arrow(s)                  # (the xnd container holds copies: pointers)
    assert np.shares_memory(q.values, np.frombuffer(s.buffers()[2], np.uint8))
    assert to_arrow(q).equals(s) and to_arrow(q).buffers()[2].address == s.buffers()[2].address
    # ... below a list level only as fixed-size items, never cut
    with pytest.raises(TypeError, match="below a list level.*type='fixed_string\\(n\\)'"):
        from_arrow(pa.array([["abc"]]))
    with pytest.raises(ValueError, match="never cut"):
        from_arrow(pa.array(["abcd"]), type="fixed_string(3)")
    assert from_arrow(pa.array(["ab", None]), type="?fixed_string(2)").value == ["ab", None]
    # an element-only type for a plain array
    assert str(from_arrow(pa.array([1.5, None]), type="?float64").type) == "2 * ?float64"


# -- 0-d arrays: one element, held by every rank --------------------------------------

@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("value, type", [
    (np.float64(2.5), "float64"),
    (np.array(7, np.int16), "int16"),
    (np.complex128(1 - 2j), "complex128"),
    (np.zeros((), PARTICLE), "{pos : 3 * float64, id : int64, charge : float32}"),
    (xnd(None, type="?float64"), "?float64"),
])
def test_zero_dimensional_arrays(value, type):
    comm = MPI.COMM_WORLD
    want = xnd(value.value if isinstance(value, xnd) else
               as_xnd_value(value.item(), value.dtype), type=type)
    a = xdap.from_global(value, comm=comm)
    assert str(a.type) == type and a.global_shape == () and a.grid == ()
    assert a.to_global().value == want.value
    assert a.to_global(root=0) is None if comm.rank else a.to_global(root=0).value == want.value
    d = a.__distarray__()
    assert d["dim_data"] == () and np.asarray(d["buffer"]).shape == ()
    b = xdap.from_distarray(d, comm=comm)
    assert b.to_global().value == want.value and str(b.type) == type
    if type in ("float64", "complex128"):
        assert xdap.kernels.sin(a).to_global().value == pytest.approx(np.sin(value))
        assert a.sum() == want.value          # the element, once -- not P times
        assert a.count() == 1


@pytest.mark.mpi(ranks=(2, 3))
def test_zero_dimensional_dap_import_needs_one_element_everywhere():
    comm = MPI.COMM_WORLD
    d = {"__version__": "0.10.0", "buffer": np.array(float(comm.rank == 1)), "dim_data": ()}
    with pytest.raises(ValueError, match="0-d array .*must be the same on every rank: rank 0 "
                                         "passed 0.0, rank 1 1.0"):
        xdap.from_distarray(d, comm=comm)


@pytest.mark.mpi(ranks=(1, 2))
@pytest.mark.parametrize("call", [
    lambda a: a.redistribute(), lambda a: a.migrate([0]), lambda a: a.exchange_halos(),
    lambda a: a.to_arrow(), lambda a: a.__partitioned__,
])   # (save and load take 0-d arrays: tests/test_io.py)
def test_zero_dimensional_refusals(call):
    a = xdap.from_global(np.float64(1.0), comm=MPI.COMM_WORLD)
    with pytest.raises(ValueError, match="0-d array \\(one element, held by every rank\\)"):
        call(a)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_scatter_reverse_of_records():
    """replace writes whole records at their owners; add refuses records."""
    comm = MPI.COMM_WORLD
    g = particles()
    a = xdap.from_global(g, comm=comm)
    needed = np.array([comm.rank * 2 % N, (comm.rank * 2 + 1) % N])
    s = xdap.Scatter(a, needed)
    values = s.forward(a)
    values["id"] = -values["id"] - 100
    s.reverse(values, into=a, mode="replace")
    want = g.copy()
    for r in range(comm.size):            # every rank's writes, in rank order (replace)
        for k in (r * 2 % N, (r * 2 + 1) % N):
            want["id"][k] = -g["id"][k] - 100
    np.testing.assert_array_equal(parts(a.to_global()).values["id"], want["id"])
    with pytest.raises(TypeError, match="mode 'add' combines numbers"):
        s.reverse(values, into=a, mode="add")


@pytest.mark.mpi(ranks=RANKS)
def test_optional_fields():
    """A field is missing where its own validity or its record's says so."""
    comm = MPI.COMM_WORLD
    a = distribute("optional fields", comm, dist=("c",))
    records = CASES["optional fields"][2]
    want_x = [None if r is None or r["x"] is None else r["x"] for r in records]
    assert a["x"].to_global().value == want_x
    assert str(a["x"].type) == f"{N} * ?float64"
    assert a["x"].sum() == pytest.approx(sum(v for v in want_x if v is not None))
    assert a["x"].count() == sum(v is not None for v in want_x)
    pair = a["pair"]
    assert pair.to_global().value == [None if r is None else r["pair"] for r in records]
    assert pair["f0"].to_global().value == [None if r is None else r["pair"][0] for r in records]
    # the NumPy view: the hidden validity byte of an optional field is "?name"
    view = a.local_numpy()
    assert view.dtype.names[-1] == "?x"
    mine = records[comm.rank::comm.size]
    present = [k for k, r in enumerate(mine) if r is not None]
    assert [bool(view.data["?x"][k]) for k in present] == [mine[k]["x"] is not None
                                                           for k in present]
    assert view.recordmask.tolist() == [r is None for r in mine]


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("name", NAMES)
def test_every_type_with_a_rank_that_holds_nothing(name, where):
    """Every element type, one rank holding no rows: constructed piece by
    piece, migrated, saved and loaded, through Arrow and Awkward."""
    comm = MPI.COMM_WORLD
    want = expect(name)
    data, opts, _ = CASES[name]
    lonely = 0 if where == "first" else comm.size - 1
    others = [r for r in range(comm.size) if r != lonely]
    bounds = [int(x) for x in np.linspace(0, N, len(others) + 1)]
    lo, hi = (0, 0) if comm.rank == lonely else \
        bounds[others.index(comm.rank):others.index(comm.rank) + 2]
    if isinstance(data, (np.ndarray, list)):
        piece = data[lo:hi]
    else:
        leaf = xdap.from_global(data, comm=MPI.COMM_SELF).info.leaf
        piece = xnd(data.value[lo:hi], type=f"{hi - lo} * {leaf}")
    a = xdap.from_local(piece, comm=comm, **opts)
    gtype = str(distribute(name, comm).type)
    assert a.to_global().value == want and str(a.type) == gtype
    rows = len(a.local.value)
    assert rows == hi - lo
    m, _ = a.migrate(np.full(rows, lonely))            # all to the rank that had none
    assert m.to_global().value == want and len(m.local.value) == (N if comm.rank == lonely else 0)
    path = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    m.save(os.path.join(path, "s"))
    assert xdap.load(os.path.join(path, "s"), comm=comm).to_global().value == want
    assert xdap.from_arrow(a.to_arrow(), comm=comm).to_global().value == want
    assert xdap.from_awkward(a.to_awkward(), comm=comm).to_global().value == want
