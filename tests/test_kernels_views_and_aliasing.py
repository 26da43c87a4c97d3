"""The kernel call path on awkward operands (serial): out= aliasing its operands
(values and validity bitmaps), ragged views, and the result-type sharing.
References are NumPy computations on independent copies."""
import numpy as np
import pytest
from xnd import xnd

from helpers import import_module_at
from xdap import kernels as K
from xdap.parts import as_container, parts


def test_out_that_is_an_operand_keeps_that_operands_missing_values():
    # add(a, b, out=b): the result's validity is valid(a) AND valid(b); writing
    # b's bitmap before reading it lost b's NA at index 1.
    a = xnd([None, 1.0, 2.0, 3.0, 4.0], dtype="?float64")
    b = xnd([1.0, None, 2.0, 3.0, None], dtype="?float64")
    K.add(a, b, out=b)
    assert b.value == [None, None, 4.0, 6.0, None]
    c = xnd([None, 1.0, 2.0], dtype="?float64")
    K.multiply(2.0, c, out=c)
    assert c.value == [None, 2.0, 4.0]


@pytest.mark.parametrize("n", [10, 40_000])          # small and Buffer-backed sizes
@pytest.mark.parametrize("shift", [1, -1, 3])
def test_out_partially_overlapping_an_input_gives_numpys_result(n, shift):
    base = np.random.default_rng(n).uniform(1, 2, n + 3)
    ref = base.copy()
    if shift > 0:
        src, dst = slice(0, n - shift), slice(shift, n)
    else:
        src, dst = slice(-shift, n), slice(0, n + shift)
    np.add(ref[src], ref[src], out=ref[dst])          # NumPy: inputs read first
    K.add(as_container(base[src]), as_container(base[src]), out=as_container(base[dst]))
    np.testing.assert_array_equal(base, ref)


def test_out_overlapping_with_another_item_size_is_copied_first():
    # an int32 operand whose bytes are the float64 output's first half
    buf = np.zeros(8)
    ints = buf.view(np.int32)[:8]
    ints[:] = np.arange(1, 9)
    expect = np.arange(1, 9, dtype=np.float64) * 1.0
    K.multiply(as_container(ints), 1.0, out=as_container(buf))
    np.testing.assert_array_equal(buf, expect)


def test_exact_alias_in_place_is_not_copied_and_correct():
    a = np.arange(1.0, 50_001.0)
    ref = a + a
    K.add(as_container(a), as_container(a), out=as_container(a))
    np.testing.assert_array_equal(a, ref)


def test_sliced_ragged_view_is_copied_not_refused():
    x = xnd([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    got = K.sin(x[1:]).value
    assert [len(r) for r in got] == [1, 3]
    np.testing.assert_allclose(sum(got, []), np.sin([3.0, 4.0, 5.0, 6.0]), rtol=1e-15)
    assert K.add(x[:, 1:], 1.0).value == [[3.0], [], [6.0, 7.0]]


def test_large_ragged_result_shares_the_operands_type_and_outlives_it():
    # a result of the operand's leaf dtype refers to the operand's (immutable)
    # type object instead of copying its offsets (O(rows) per call)
    rng = np.random.default_rng(5)
    rows = [list(rng.uniform(0, 1, k)) for k in rng.integers(0, 6, 20_000)]
    x = as_container(rows, type="var * var * float64")
    y = as_container(rows, type="var * var * float64")
    r = K.add(x, y)
    assert r.type is x.type
    s = K.less(x, 0.5)                                 # bool leaf: its own type
    assert str(s.type) == "var * var * bool"
    del x, y
    import gc
    gc.collect()
    expect = [[2 * v for v in row] for row in rows]
    assert r.value == expect
    assert r[3].value == expect[3]
    np.testing.assert_allclose(parts(K.sin(r)).values, np.sin(np.concatenate(expect)), rtol=1e-15)
    o = as_container([[None, 1.0]] * 6000, type="var * var * ?float64")
    ro = K.multiply(o, 3.0)
    assert ro.type is o.type and ro[5999].value == [None, 3.0]


def test_cached_python_scalars_keep_signed_zero_and_dtype_apart():
    x = np.array([1.0, -2.0])
    assert K.copysign(x, -0.0).value == [-1.0, -2.0]
    assert K.copysign(x, 0.0).value == [1.0, 2.0]
    assert K.copysign(x, -0.0).value == [-1.0, -2.0]
    f = np.array([1.5], dtype=np.float32)
    assert str(K.add(f, 2).type) == "1 * float32" and str(K.add(x, 2).type) == "2 * float64"
    assert K.add(np.array([1], np.int8), 2).value == [3]
    assert K.add(np.array([True]), True).value == np.add(np.array([True]), True).tolist()


def test_strided_one_dimensional_views_in_and_out_without_copies():
    base = np.arange(1.0, 21.0)
    x = xnd(base.tolist())
    o = xnd([0.0] * 20)
    r = K.multiply(x[::-2], 3.0, out=o[1::2])           # reversed input, strided output
    assert r is not None
    expect = np.zeros(20)
    expect[1::2] = base[::-2] * 3.0
    assert o.value == expect.tolist()
    col = xnd([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])[:, 1]
    assert K.add(col, col).value == [4.0, 8.0, 12.0]
    # in place through the same strided view: element for element
    y = xnd(base.tolist())
    K.add(y[::3], 1.0, out=y[::3])
    ref = base.copy()
    ref[::3] += 1.0
    assert y.value == ref.tolist()
    # a reversed view of the output as input: NumPy's result (inputs read first)
    z = xnd(base.tolist())
    K.add(z[::-1], 0.0, out=z)
    assert z.value == base[::-1].tolist()


def test_out_that_cannot_be_written_in_place_is_a_clear_error():
    o = xnd([[0.0] * 4] * 4)
    with pytest.raises(ValueError, match="out= must be C-contiguous or a 1-D strided view"):
        K.sin(xnd([[1.0, 2.0]] * 2), out=o[::2, ::2])
    with pytest.raises(ValueError, match="out= must be"):
        K.sin(xnd([1.0, 2.0], dtype="?float64"), out=xnd([0.0, None, 0.0, 0.0], dtype="?float64")[::2])


def test_hidden_length_out_of_range_of_its_c_type_is_an_error(tmp_path):
    # `int8_t n = len(r)`: 200 items must not run the function with n = -56
    from xdap.codegen import build
    (tmp_path / "fill.h").write_text("#include <stdint.h>\nvoid fill(int8_t n, double *r);\n")
    (tmp_path / "fill.c").write_text(
        '#include "fill.h"\nvoid fill(int8_t n, double *r) { for (int i = 0; i < n; i++) r[i] = i; }\n')
    (tmp_path / "fill.cfg").write_text(
        "[MODULE xk_review_fill]\nincludes = fill.h\nsources = fill.c\n"
        "[KERNEL fill]\nprototypes = void fill(int8_t n, double *r);\n"
        "dimension = r(n)\ninplace = r\nhide = n = len(r)\n")
    mod = import_module_at(build(tmp_path / "fill.cfg", tmp_path), "xk_review_fill")
    small = xnd([-1.0] * 100)
    mod.fill(small)
    assert small.value == [float(i) for i in range(100)]
    with pytest.raises(ValueError, match=r"n = len\(r\) is 200, not a value of C type int8_t"):
        mod.fill(xnd([-1.0] * 200))
