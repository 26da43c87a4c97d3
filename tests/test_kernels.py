"""The kernel library on plain containers (serial): every kernel family x
layout (fixed / var / optional, mixed optional and not) x dtype class,
against NumPy (or math) references computed independently."""
import math

import numpy as np
import pytest
from xnd import xnd

from xdap import kernels as K
from xdap.parts import Parts, as_container, container, parts
from xdap.bitmaps import pack_validity
from xdap.kernels.library import gufunc
from xdap.types import dtype_from_numpy, type_info

INTS = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]      # exact float exists
ALL_INTS = INTS + ["int64", "uint64"]
EXACT_FLOAT = {"bool": "float32", "int8": "float32", "int16": "float32", "uint8": "float32",
               "uint16": "float32", "int32": "float64", "uint32": "float64",
               "float32": "float32", "float64": "float64", "complex128": "complex128",
               # no exact float: NumPy's float64 (np.sin(int64_array) is float64)
               "int64": "float64", "uint64": "float64"}

def _vec(f):
    """A math-module function over arrays; poles give inf, as C's lgamma/tgamma."""
    def safe(v):
        try:
            return f(v)
        except ValueError:
            return math.inf
    return np.frompyfunc(safe, 1, 1)


UNARY_REF = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "cbrt": np.cbrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": _vec(math.erf), "erfc": _vec(math.erfc),
    "lgamma": _vec(math.lgamma), "tgamma": _vec(math.gamma),
}
COMPLEX_UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                 "cosh", "tanh", "asinh", "acosh", "atanh"]


def domain(name, dtype, n, rng):
    """Values inside the function's domain, of the given dtype."""
    if dtype == "bool":
        return rng.random(n) < 0.5
    lo, hi = {"log": (0.1, 20), "log2": (0.1, 20), "log10": (0.1, 20), "log1p": (0, 20),
              "sqrt": (0, 20), "asin": (-1, 1), "acos": (-1, 1), "atanh": (-0.95, 0.95),
              "acosh": (1, 20), "tgamma": (0.2, 12), "lgamma": (0.2, 30),
              "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-20, 20), "sinh": (-20, 20),
              "cosh": (-20, 20)}.get(name, (-20, 20))
    if dtype in ALL_INTS:
        lo_i = max(math.ceil(lo), 0 if dtype.startswith("u") else -128)
        hi_i = max(math.floor(hi), lo_i)
        return rng.integers(lo_i, hi_i + 1, n).astype(dtype)
    if dtype == "complex128":
        return (rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)).astype(dtype)
    return rng.uniform(lo, hi, n).astype(dtype)


def close(got, want, dtype):
    want = np.asarray(want, dtype=got.dtype)
    if dtype in ("float32",):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    elif dtype in ("float64", "complex128"):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    else:
        np.testing.assert_array_equal(got, want)


def ragged(values, rng, optional_mask=None):
    """A var * var * T container over the given flat values (random rows)."""
    n = len(values)
    cuts = np.sort(rng.integers(0, n + 1, 4))
    inner = np.concatenate([[0], cuts, [n]]).astype(np.int32)
    info = type_info(f"var * var * {'?' if optional_mask is not None else ''}"
                     f"{dtype_from_numpy(values.dtype)}")
    validity = None if optional_mask is None else pack_validity(optional_mask)
    return container(Parts(info, values, validity,
                           (np.array([0, len(inner) - 1], np.int32), inner)))


def layouts(values, rng, mask):
    """(label, container, valid mask or None) for each layout of these values."""
    n = len(values)
    yield "fixed", as_container(values.reshape(2, n // 2)), None
    yield "var", ragged(values, rng), None
    yield "optional", as_container(np.ma.masked_array(values, mask=~mask)), mask
    yield "var optional", ragged(values, rng, mask), mask


def flat(x):
    p = parts(x)
    return p.values.ravel(), (None if p.validity is None else p.valid_mask().ravel())


@pytest.mark.parametrize("name", sorted(UNARY_REF))
@pytest.mark.parametrize("dtype", ["bool"] + INTS + ["float32", "float64", "complex128"])
def test_unary_math(name, dtype):
    if dtype == "complex128" and name not in COMPLEX_UNARY:
        with pytest.raises(TypeError, match="no kernel for complex128"):
            getattr(K, name)(np.zeros(2, complex))
        return
    rng = np.random.default_rng(7)
    x = domain(name, dtype, 40, rng)
    out_dtype = EXACT_FLOAT[dtype]
    with np.errstate(all="ignore"):
        want = np.asarray(UNARY_REF[name](x.astype(out_dtype)), dtype=out_dtype)
    mask = rng.random(40) < 0.8
    for label, c, m in layouts(x, rng, mask):
        r = getattr(K, name)(c)
        got, valid = flat(r)
        assert got.dtype == np.dtype(out_dtype), label
        assert str(r.type).split(" * ")[:-1] == str(c.type).split(" * ")[:-1], label
        if m is None:
            assert valid is None, label
            close(got, want, out_dtype)
        else:
            np.testing.assert_array_equal(valid, m)
            close(got[m], want[m], out_dtype)


def test_unary_special_values_ieee():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -745.2, 710.0])
    for name in ["exp", "log", "sqrt", "sin", "cos", "tanh", "expm1", "log1p", "atan", "cbrt"]:
        with np.errstate(all="ignore"):
            want = UNARY_REF[name](x)
        got = flat(getattr(K, name)(as_container(x)))[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-13, err_msg=name)


def test_vectorised_math_agrees_with_numpy_to_a_few_ulp():
    rng = np.random.default_rng(3)
    x = rng.uniform(-100, 100, 100_000)
    for name in ["sin", "cos", "exp", "tan", "atan", "sinh"]:
        got = flat(getattr(K, name)(as_container(x / (10 if name in ("exp", "sinh") else 1))))[0]
        want = UNARY_REF[name](x / (10 if name in ("exp", "sinh") else 1))
        ulp = np.abs(got - want) / np.spacing(np.abs(want))
        assert ulp.max() <= 4, (name, ulp.max())
    xf = x.astype(np.float32)
    got = flat(K.sin(as_container(xf)))[0]
    ulp = np.abs(got.astype(np.float64) - np.sin(xf.astype(np.float64))) / np.spacing(np.abs(np.sin(xf)))
    assert ulp.max() <= 4


ROUND_REF = {"ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "nearbyint": np.rint,
             "round": lambda v: np.where(np.abs(v - np.trunc(v)) == 0.5,
                                         np.trunc(v) + np.sign(v), np.rint(v))}


@pytest.mark.parametrize("name", sorted(ROUND_REF))
@pytest.mark.parametrize("dtype", ["bool"] + ALL_INTS + ["float32", "float64"])
def test_rounding(name, dtype):
    rng = np.random.default_rng(5)
    if dtype in ("float32", "float64"):
        x = np.concatenate([np.arange(-3, 3.5, 0.5), rng.uniform(-50, 50, 27)]).astype(dtype)
    else:
        x = domain(name, dtype, 40, rng)
    want = ROUND_REF[name](x) if dtype.startswith("float") else x      # integers: identity
    mask = rng.random(40) < 0.7
    for label, c, m in layouts(x, rng, mask):
        got, valid = flat(getattr(K, name)(c))
        assert got.dtype == x.dtype
        sel = slice(None) if m is None else m
        np.testing.assert_array_equal(got[sel], np.asarray(want)[sel], err_msg=label)


@pytest.mark.parametrize("dtype", ["bool"] + ALL_INTS + ["float32", "float64", "complex128"])
def test_absolute_negative(dtype):
    rng = np.random.default_rng(2)
    x = domain("sin", dtype, 40, rng)
    if dtype in ALL_INTS and not dtype.startswith("u"):
        x[0] = np.iinfo(dtype).min          # wraps, as in NumPy
    for fname, ref in (("absolute", np.absolute), ("fabs", np.absolute), ("negative", np.negative)):
        if dtype == "bool" and fname == "negative":
            with pytest.raises(TypeError, match="no kernel for bool"):
                K.negative(as_container(x))
            continue
        with np.errstate(all="ignore"):
            want = ref(x)
        for label, c, m in layouts(x, rng, rng.random(40) < 0.5):
            got, valid = flat(getattr(K, fname)(c))
            sel = slice(None) if m is None else m
            close(got[sel], want[sel], str(want.dtype))


BINARY_REF = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
              "divide": np.true_divide, "power": np.power, "fmod": np.fmod,
              "maximum": np.maximum, "minimum": np.minimum, "copysign": np.copysign,
              "atan2": np.arctan2, "hypot": np.hypot}
CMP_REF = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less,
           "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal}


def binary_result_dtype(name, dtype):
    if name in CMP_REF:
        return "bool"
    if name in ("divide", "copysign", "atan2", "hypot"):
        return EXACT_FLOAT[dtype]
    return dtype


def binary_supported(name, dtype):
    if dtype == "complex128":
        return name in ("add", "subtract", "multiply", "divide", "power", "equal", "not_equal")
    if dtype == "bool":
        return name not in ("subtract", "power", "fmod")
    return True


def binary_operands(name, dtype, n, rng):
    if dtype == "bool":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if dtype == "complex128":
        a = domain("sin", dtype, n, rng)
        return a, domain("sin", dtype, n, rng) + (1 if name == "divide" else 0)
    if name == "power":
        if dtype.startswith("float"):
            return rng.uniform(0.1, 3, n).astype(dtype), rng.uniform(-3, 3, n).astype(dtype)
        return rng.integers(0, 7, n).astype(dtype), rng.integers(0, 6, n).astype(dtype)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
        b = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
        if name in ("fmod", "divide"):
            b[b == 0] = 3
        b[:3] = a[:3]                     # some equal pairs for the comparisons
        return a, b
    a = rng.uniform(-50, 50, n).astype(dtype)
    b = rng.uniform(-50, 50, n).astype(dtype)
    b[:3] = a[:3]
    return a, b


@pytest.mark.parametrize("name", sorted(BINARY_REF) + sorted(CMP_REF))
@pytest.mark.parametrize("dtype", ["bool"] + ALL_INTS + ["float32", "float64", "complex128"])
def test_binary(name, dtype):
    f = getattr(K, name)
    rng = np.random.default_rng(11)
    a, b = binary_operands(name, dtype, 40, rng)
    if not binary_supported(name, dtype):
        with pytest.raises(TypeError, match=f"no kernel for {dtype}"):
            f(as_container(a), as_container(b))
        return
    rd = binary_result_dtype(name, dtype)
    ref = BINARY_REF.get(name) or CMP_REF[name]
    cast = rd if name not in CMP_REF else dtype
    with np.errstate(all="ignore"):
        want = np.asarray(ref(a.astype(cast), b.astype(cast)))
    ma, mb = rng.random(40) < 0.8, rng.random(40) < 0.8
    la, lb = list(layouts(a, np.random.default_rng(1), ma)), list(layouts(b, np.random.default_rng(1), mb))
    for (label, ca, m1), (_, cb, m2) in zip(la, lb):
        got, valid = flat(f(ca, cb))
        assert got.dtype == np.dtype(rd), (label, got.dtype)
        m = m1 if m2 is None else m2 if m1 is None else (m1 & m2)
        if m is None:
            assert valid is None
            close(got, want, rd if dtype != "complex128" or name in CMP_REF else "complex128")
        else:
            np.testing.assert_array_equal(valid, m, err_msg=label)
            close(got[m], want[m], rd)
    # mixed: optional with non-optional, either order -> validity of the optional one
    opt = as_container(np.ma.masked_array(a, mask=~ma))
    for x, y in ((opt, as_container(b)), (as_container(a), as_container(np.ma.masked_array(b, mask=~ma)))):
        got, valid = flat(f(x, y))
        np.testing.assert_array_equal(valid, ma)
        close(got[ma], want[ma], rd)


def test_optional_validity_and_scalar_broadcast():
    a = xnd([[1.0, None, 3.0], [None]], dtype="?float64")
    b = xnd([[None, 2.0, 4.0], [5.0]], dtype="?float64")
    assert K.add(a, b).value == [[None, None, 7.0], [None]]
    assert K.add(a, 10.0).value == [[11.0, None, 13.0], [None]]
    assert K.subtract(10.0, a).value == [[9.0, None, 7.0], [None]]
    assert K.less(a, 2.0).value == [[True, None, False], [None]]
    assert K.add(a, xnd(None, type="?float64")).value == [[None, None, None], [None]]


def test_scalar_dtype_rules():
    i16 = np.array([1, 2], dtype=np.int16)
    assert str(K.add(i16, 3).type) == "2 * int16"
    assert str(K.add(i16, 0.5).type) == "2 * float32"     # int16 -> float32 exactly
    assert str(K.multiply(np.array([1.0], np.float32), 2.0).type) == "1 * float32"
    assert str(K.add(np.array([1, 2], np.int32), np.array([1.5, 2.5])).type) == "2 * float64"
    assert str(K.add(np.array([1], np.uint32), np.array([1], np.int32)).type) == "1 * int64"


def test_int64_promotes_as_numpy_does():
    """No exact common type: NumPy's result type (int64 -> float64 rounds),
    values checked against NumPy's own results."""
    i = np.array([1, 2, 2 ** 53 + 1], dtype=np.int64)
    u = np.array([1, 2, 3], dtype=np.uint64)
    f = np.array([0.5, 1.5, 2.5])
    for got, want in ((K.sin(i), np.sin(i)), (K.divide(i, i), np.divide(i, i)),
                      (K.add(i, f), np.add(i, f)), (K.add(u, i), np.add(u, i)),
                      (K.multiply(i, 0.5), np.multiply(i, 0.5)),
                      (K.atan2(u, u), np.arctan2(u, u))):
        assert str(got.type) == f"3 * {want.dtype}"
        # sin and atan2 go through libm's SIMD variants (libmvec, up to 4 ulp
        # from NumPy's own on AVX-512 machines); arithmetic must be exact
        np.testing.assert_array_max_ulp(np.asarray(parts(got).values), want, maxulp=4)
    assert np.array_equal(np.asarray(parts(K.add(i, f)).values), np.add(i, f))
    with pytest.raises(TypeError, match="no kernel for bool in negative.*astype"):
        K.negative(np.array([True]))


def test_integer_division_and_fmod_by_zero_are_defined():
    for dt in ALL_INTS:
        info = np.iinfo(dt)
        a = np.array([7, info.min, info.max, 0, 5], dtype=dt)
        b = np.array([0, 0, 1, 0, 2], dtype=dt)
        got = flat(K.fmod(as_container(a), as_container(b)))[0]
        assert got.tolist() == [0, 0, 0, 0, 1], dt
    m = np.iinfo(np.int32).min
    got = flat(K.fmod(as_container(np.array([m, 7, -7], np.int32)),
                      as_container(np.array([-1, -1, 2], np.int32))))[0]
    assert got.tolist() == [0, 0, -1]                       # INT_MIN % -1 does not trap
    got = flat(K.divide(as_container(np.array([1, -1, 0], np.int32)),
                        as_container(np.array([0, 0, 0], np.int32))))[0]
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    got = flat(K.power(as_container(np.array([2, 1, -1, -1], np.int32)),
                       as_container(np.array([-1, -3, -3, -2], np.int32))))[0]
    assert got.tolist() == [0, 1, -1, 1]


def test_maximum_minimum_propagate_nan():
    a = as_container(np.array([np.nan, 1.0, 2.0]))
    b = as_container(np.array([1.0, np.nan, 1.0]))
    got = flat(K.maximum(a, b))[0]
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 2.0
    got = flat(K.minimum(a, b))[0]
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == 1.0


def test_out_writes_in_place_without_allocating():
    x = np.linspace(0, 1, 11)
    out = np.zeros(11)
    o = as_container(out)
    r = K.sin(as_container(x), out=o)
    assert r is o
    np.testing.assert_allclose(out, np.sin(x), rtol=1e-14)
    K.add(as_container(x), 1.0, out=o)
    np.testing.assert_allclose(out, x + 1.0)
    # optional out: validity written too
    a = xnd([1.0, None, 3.0], dtype="?float64")
    o = xnd([0.0, 0.0, 0.0], dtype="?float64")
    K.multiply(a, 2.0, out=o)
    assert o.value == [2.0, None, 6.0]
    with pytest.raises(TypeError, match="out= has dtype float32"):
        K.sin(as_container(x), out=as_container(np.zeros(11, np.float32)))
    with pytest.raises(ValueError, match="out= must be optional"):
        K.sin(a, out=as_container(np.zeros(3)))
    with pytest.raises(ValueError, match="out= does not fit"):
        K.sin(as_container(x), out=as_container(np.zeros(12)))


def test_operand_mismatch():
    with pytest.raises(ValueError, match="differ in shape"):
        K.add(as_container(np.zeros(3)), as_container(np.zeros(4)))
    with pytest.raises(ValueError, match="list lengths"):
        K.add(xnd([[1.0], [2.0, 3.0]]), xnd([[1.0, 2.0], [3.0]]))
    with pytest.raises(ValueError, match="differ in dimensions"):
        K.add(xnd([[1.0], [2.0, 3.0]]), as_container(np.zeros(3)))


def test_views_and_numpy_operands():
    x = xnd(list(np.arange(10.0)))
    view = x[::2]                                            # non-contiguous: copied first
    np.testing.assert_allclose(flat(K.sin(view))[0], np.sin(np.arange(0, 10.0, 2)), rtol=1e-15)
    a = np.arange(6.0).reshape(2, 3).T                       # numpy, non-contiguous
    np.testing.assert_allclose(flat(K.exp(a))[0], np.exp(np.ascontiguousarray(a)).ravel())


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "floor", "negative"])
def test_gumath_path_agrees_with_fast_path(name):
    x = as_container(np.random.default_rng(0).uniform(0.5, 4, 24).reshape(4, 6))
    # gumath runs the same Strided loop row by row: the rows' scalar tails use
    # libm, the fast path's one long loop libmvec -- equal to a few ulp.
    np.testing.assert_allclose(flat(gufunc(name)(x))[0], flat(getattr(K, name)(x))[0],
                               rtol=4 * np.finfo(float).eps, atol=0)
    r = xnd([[1.0, 2.0], [3.0]])                             # var... kernels (D... * T)
    np.testing.assert_allclose(flat(gufunc(name)(r))[0], flat(getattr(K, name)(r))[0],
                               rtol=4 * np.finfo(float).eps, atol=0)


@pytest.mark.parametrize("name", ["add", "multiply", "less", "hypot"])
def test_gumath_binary_path_agrees(name):
    rng = np.random.default_rng(4)
    x, y = (as_container(rng.uniform(1, 3, 12).reshape(3, 4)) for _ in range(2))
    assert gufunc(name)(x, y).value == getattr(K, name)(x, y).value


def test_apply_user_gufunc_and_library_functions_listed():
    import gumath
    x = as_container(np.array([0.0, 1.0]))
    assert K.apply(gumath.sin, x).value == np.sin([0.0, 1.0]).tolist()
    assert len(K.UNARY) == 33 and len(K.BINARY) == 11 and len(K.COMPARE) == 6
    for name in K.UNARY + K.BINARY + K.COMPARE:
        assert callable(getattr(K, name)) and gufunc(name) is not None


def test_apply_falls_back_to_gumath_for_kernels_with_core_dims(tmp_path):
    """A kernel with array arguments (`... * N * float64`) is not elementwise:
    apply() hands the whole containers to gumath's own dispatch."""
    import sys
    from xdap.codegen import build
    (tmp_path / "k2twice.h").write_text("void k2twice(int n, double *x, double *r);\n")
    (tmp_path / "k2twice.c").write_text(
        "void k2twice(int n, double *x, double *r) { for (int i = 0; i < n; i++) r[i] = 2 * x[i]; }\n")
    (tmp_path / "k2twice.cfg").write_text("""
[MODULE k2twice_mod]
includes = k2twice.h
sources = k2twice.c
kinds = Xnd
ellipses = ...

[KERNEL twice]
prototypes = void k2twice(int n, double * x, double * r);
dimension = x(n), r(n)
input_arguments = x
output_arguments = r
hide_arguments = n = len(x)
""")
    build(tmp_path / "k2twice.cfg", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        import k2twice_mod
    finally:
        sys.path.remove(str(tmp_path))
    x = np.arange(12.0).reshape(4, 3)
    got = K.apply(k2twice_mod.twice, as_container(x))
    np.testing.assert_array_equal(flat(got)[0], 2 * x.ravel())
    out = np.zeros((4, 3))
    K.apply(k2twice_mod.twice, as_container(x), out=as_container(out))
    np.testing.assert_array_equal(out, 2 * x)
    # float32 converts exactly to the float64 prototype, as NumPy's gufuncs convert
    got = K.apply(k2twice_mod.twice, as_container(x.astype(np.float32)))
    assert str(got.type) == "4 * 3 * float64"
    np.testing.assert_array_equal(flat(got)[0], 2 * x.ravel())
    with pytest.raises(TypeError, match="twice: no kernel takes complex128"):
        K.apply(k2twice_mod.twice, as_container(x.astype(np.complex128)))


def test_the_kernel_library_does_not_import_numba():
    """gumath's optional numba import is blocked (xdap.kernels._import_gumath):
    in a fresh interpreter, with a stand-in numba on the path that would
    record being imported, the first kernel call leaves it unimported."""
    import os
    import subprocess
    import sys
    import tempfile
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d, "numba", "npyufunc"))
    with open(os.path.join(d, "numba", "__init__.py"), "w") as f:
        f.write("raise SystemExit('numba was imported')\n")
    code = ("import numpy as np, xdap.kernels as k, sys; k.sin(np.ones(3)); "
            "print('numba' in sys.modules)")
    from xdap.launcher import clean_environment
    env = clean_environment(PYTHONPATH=d + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
