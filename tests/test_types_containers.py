"""Types (classification, dtype tables) and local containers (zero-copy parts)."""
import gc
import os

import numpy as np
import pytest
from ndtypes import ndt
from xdap import _xndbuf
from xdap.parts import Parts, as_container, container, parts
from xdap.rows import concat_parts, expand_ranges, leaf_counts, take_rows
from xdap.types import DTYPES, buffer_format, dtype_from_format, dtype_from_numpy, type_info


@pytest.mark.parametrize("text, kind, shape, var_ndim, dtype, optional", [
    ("3 * 4 * float64", "fixed", (3, 4), 0, "float64", False),
    ("5 * ?int8", "fixed", (5,), 0, "int8", True),
    ("var * var * int64", "ragged", (), 2, "int64", False),
    ("var * var * var * ?complex128", "ragged", (), 3, "complex128", True),
    ("2 * 3 * bool", "fixed", (2, 3), 0, "bool", False),
])
def test_classify(text, kind, shape, var_ndim, dtype, optional):
    info = type_info(text)
    assert (info.kind, info.shape, info.var_ndim, info.dtype, info.optional) == \
        (kind, shape, var_ndim, dtype, optional)
    assert type_info(ndt(text)) == info
    assert ndt(info.type_string()) == ndt(text)


@pytest.mark.parametrize("text, reason", [
    ("{a: int64, b: float64}", "no dimension to distribute.*'N \\* \\{a : int64"),
    ("3 * {v: 3 * ?float64}", "not inside a fixed dimension"),
    ("3 * {s: string}", "variable-length string items make 1-d arrays only.*fixed_string"),
    ("3 * 2 * bytes", "variable-length bytes arrays have one dimension"),
    ("3 * ?string", "optional string items are not supported"),
    ("3 * fixed_string(2, 'utf16')", "utf16.*no NumPy equivalent"),
    ("3 * ref(int64)", "an element is a number"),
    ("6 * var * int64", "no fixed dimension above a var one.*'var \\* var \\* int64'"),
    ("var * var * 3 * float64", "below a var one.*'var \\* var \\* \\{v: 3 \\* float64\\}'"),
    ("float64", "no dimension to distribute"),
    ("var * float64", "outer dimension of rows"),
    ("?var * var * float64", "optional dimensions"),
    ("N * float64", "neither fixed nor var"),
    ("not a type", "not an ndtypes type"),
])
def test_undistributable_types_are_refused(text, reason):
    with pytest.raises(TypeError, match=reason):
        type_info(text)


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_dtype_tables_agree(name):
    np_dtype, fmt = DTYPES[name]
    assert dtype_from_numpy(np_dtype) == name
    assert dtype_from_format(fmt, np_dtype.itemsize) == name
    assert buffer_format(name) == fmt
    # numpy reads our format and memoryview accepts it
    a = np.zeros(3, np_dtype)
    assert np.asarray(memoryview(a)).dtype == np_dtype
    assert dtype_from_format(memoryview(a).format) == name


def test_format_edge_cases():
    assert dtype_from_format("=d") == "float64"
    assert dtype_from_format("<i") == "int32"
    assert dtype_from_format("=l") == "int32"      # standard size
    assert dtype_from_format("l") == "int64"       # native size (LP64)
    with pytest.raises(TypeError, match="native byte order"):
        dtype_from_format(">d")
    with pytest.raises(TypeError, match="unsupported buffer format"):
        dtype_from_format("O")
    with pytest.raises(TypeError, match="itemsize"):
        dtype_from_format("d", 4)
    with pytest.raises(TypeError, match="unsupported NumPy dtype"):
        dtype_from_numpy(np.dtype("O"))
    with pytest.raises(TypeError, match="align=True"):
        dtype_from_numpy(np.dtype([("a", "i1"), ("b", "f8")]))  # packed


def test_fixed_parts_are_views_both_ways():
    a = np.arange(12.0).reshape(3, 4)
    x = as_container(a)
    assert str(x.type) == "3 * 4 * float64"
    p = parts(x)
    assert np.shares_memory(p.values, a)
    p.values[1, 2] = -7
    assert x[1, 2] == -7.0 and a[1, 2] == -7


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_dtype_roundtrips_zero_copy(dtype):
    np_dtype = DTYPES[dtype][0]
    values = np.arange(6).astype(np_dtype).reshape(2, 3)
    x = container(Parts(type_info(f"2 * 3 * {dtype}"), values))
    assert np.shares_memory(parts(x).values, values)
    assert parts(x).values.tolist() == values.tolist()


def test_optional_and_ragged_bitmaps_follow_arrow():
    x = as_container([[1.0, None], [], [None, 4.0, 5.0]], type="var * var * ?float64")
    p = parts(x)
    assert p.offsets[0].tolist() == [0, 3] and p.offsets[1].tolist() == [0, 2, 2, 5]
    assert p.valid_mask().tolist() == [True, False, False, True, True]
    # LSB first: bits 0, 3, 4 set
    assert p.validity.tolist() == [0b00011001]
    # xnd itself agrees on the values and on which are missing
    assert x.value == [[1.0, None], [], [None, 4.0, 5.0]]


def test_container_keeps_foreign_buffers_alive():
    values = np.arange(5.0)
    validity = np.array([0b10111], np.uint8)
    x = container(Parts(type_info("var * var * ?float64"), values, validity,
                        (np.array([0, 2], np.int32), np.array([0, 3, 5], np.int32))))
    values[0] = 42.0
    assert x.value == [[42.0, 1.0, 2.0], [None, 4.0]]
    del values, validity
    gc.collect()
    junk = [np.full(5, 9.0) for _ in range(100)]   # reuse freed memory if it was freed
    assert x.value == [[42.0, 1.0, 2.0], [None, 4.0]]
    del junk


def test_readonly_buffers_stay_readonly():
    values = np.arange(4.0)
    values.flags.writeable = False
    x = container(Parts(type_info("4 * float64"), values))
    out = parts(x).values
    assert not out.flags.writeable


def test_from_buffers_rejects_bad_input():
    t = type_info("var * var * float64")
    with pytest.raises(ValueError, match="non-decreasing"):
        container(Parts(t, np.zeros(3), None, (np.array([0, 2], np.int32), np.array([0, 3, 1], np.int32))))
    with pytest.raises(ValueError, match="values buffer has"):
        container(Parts(t, np.zeros(2), None, (np.array([0, 1], np.int32), np.array([0, 3], np.int32))))
    with pytest.raises(ValueError, match="entries"):
        container(Parts(t, np.zeros(3), None, (np.array([0, 2], np.int32), np.array([0, 3], np.int32))))
    with pytest.raises(ValueError, match="validity bitmap has"):
        _xndbuf.from_buffers("9 * ?float64", None, np.zeros(9), np.zeros(1, np.uint8))
    with pytest.raises(ValueError, match="validity given"):
        _xndbuf.from_buffers("2 * float64", None, np.zeros(2), np.zeros(1, np.uint8))


def test_row_selection_and_concatenation():
    t = "var * var * var * ?int64"
    rows = [[[1], [2, None]], [], [[3, 4, 5]], [[6], [], [7]]]
    p = parts(as_container(rows, type=t))
    assert p.nrows == 4
    assert leaf_counts(p).tolist() == [3, 0, 3, 2]
    sel = [3, 1, 0]
    assert container(take_rows(p, sel)).value == [rows[i] for i in sel]
    both = concat_parts([take_rows(p, [0, 1]), take_rows(p, [2, 3])])
    assert container(both).value == rows
    fixed = parts(as_container(np.ma.array(np.arange(6).reshape(3, 2), mask=[[0, 1], [0, 0], [1, 0]])))
    assert container(take_rows(fixed, [2, 0])).value == [[None, 5], [0, None]]


def test_expand_ranges_matches_python():
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 100, 50)
    lengths = rng.integers(0, 5, 50)
    expect = [s + k for s, n in zip(starts, lengths) for k in range(n)]
    assert expand_ranges(starts, lengths).tolist() == expect


def same_values(x, y) -> bool:
    """Equal values field by field (padding bytes aside)."""
    if x.dtype.names is None:
        return np.array_equal(x, y)
    return all(same_values(x[k], y[k]) for k in y.dtype.names)


def test_numpy_reads_complex_and_record_containers_in_place():
    # the build's ndtypes exports PEP 3118 formats NumPy takes (tools/patch_stack.py):
    # complex as Zd/Zf, a record's padding before the next field
    from mpi4py import MPI
    import xdap
    comm = MPI.COMM_SELF
    inner = np.dtype([("u", "i2"), ("v", "f8")], align=True)
    cases = {
        "complex128": np.arange(5) * (1 - 2j),
        "complex64": (np.arange(5) * (1 + 1j)).astype(np.complex64),
        "record": np.array([(1, 2.0), (3, 4.5)], np.dtype([("a", "i1"), ("b", "f8")],
                                                            align=True)),
        "nested record": np.array([((1.0, 2.0, 3.0), (7, 0.5))],
                                  np.dtype([("p", "f4", (3,)), ("q", inner)], align=True)),
        "2-d complex": (np.arange(6) * 1j).reshape(2, 3),
    }
    for name, g in cases.items():
        a = xdap.from_global(g, comm=comm)
        for got in (np.asarray(a.local), np.asarray(a.to_global())):
            assert got.dtype.names == g.dtype.names, name
            assert got.dtype.itemsize == g.dtype.itemsize and got.shape == g.shape, name
            assert same_values(got, g), name
        view = np.asarray(a.local)
        assert np.shares_memory(view, a.parts.values), name


def test_new_containers_are_zero_and_usable():
    """The build's xnd patch skips the per-element walk of xnd_init for
    plain leaves (tools/patch_stack.py): new containers of every kind are
    still zero, missing where optional, and writable."""
    from xnd import xnd
    for t, want in [("3 * 2 * float64", [[0.0, 0.0]] * 3), ("2 * ?int32", [None, None]),
                    ("2 * {a: int64, b: ?float64}", [{"a": 0, "b": None}] * 2),
                    ("2 * (int8, float32)", [(0, 0.0)] * 2), ("2 * string", ["", ""]),
                    ("2 * fixed_string(3)", ["", ""]), ("2 * 2 * complex128", [[0j, 0j]] * 2),
                    ("0 * int64", [])]:
        x = xnd.empty(t)
        assert x.value == want, t
    x = xnd.empty("100000 * 8 * float64")
    assert np.asarray(x).sum() == 0
    x[3] = [1.0] * 8
    assert x[3].value == [1.0] * 8 and x[4].value == [0.0] * 8


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_freed_containers_still_free_their_strings():
    """The build's xnd patch skips xnd_clear's per-element walk when no leaf
    owns memory (tools/patch_stack.py); strings and bytes under fixed and
    var dims are still freed: making and dropping 40 MB of them five times
    over leaves the process no larger than after the first time (a leak
    would add 40 MB a round)."""
    from xnd import xnd
    item = "x" * 400
    rows = [[item] * (k % 200) for k in range(1000)]     # ragged: 99,500 strings
    sizes = []
    for _ in range(5):
        for t, v in (("100000 * string", [item] * 100_000), ("var * var * string", rows),
                     ("1000 * 100 * bytes", [[item.encode()] * 100] * 1000)):
            x = xnd(v, dtype="string") if t.startswith("var") else xnd(v, type=t)
            assert str(x.type) == t and x.value == v
            del x
        sizes.append(_rss_bytes())
    assert sizes[-1] - sizes[0] < 20 * 2 ** 20, [s >> 20 for s in sizes]
