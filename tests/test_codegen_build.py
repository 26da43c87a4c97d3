"""Generated modules, built and called on one process: every argument role,
fixed/strided/var layouts, broadcasting, the `_table` capsule with directly
callable Strided loops, and `xdap kernel config|build` end to end.
Values are checked against NumPy."""
import ctypes
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from xnd import xnd

from helpers import import_module_at
from xdap.codegen import CAPSULE_NAME, build, extension_spec, stack_dirs

EXAMPLES = pathlib.Path(__file__).parent / "kernel_examples"


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    out = tmp_path_factory.mktemp("ops")
    return import_module_at(build(EXAMPLES / "ops.cfg", out), "xk_testops")


def f64(v):
    return xnd(np.asarray(v, np.float64).tolist())


def test_scalar_kernel_all_dtypes_and_broadcast(ops):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(7), rng.standard_normal(7)
    assert np.allclose(ops.hyp(f64(a), f64(b)).value, np.hypot(a, b), rtol=0, atol=1e-15)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    got = ops.hyp(xnd(a32.tolist(), dtype="float32"), xnd(b32.tolist(), dtype="float32"))
    assert str(got.type) == "7 * float32"
    assert np.allclose(got.value, np.hypot(a32, b32), rtol=1e-6)
    i, j = rng.integers(-100, 100, 5), rng.integers(-100, 100, 5)
    got = ops.hyp(xnd(i.tolist(), dtype="int32"), xnd(j.tolist(), dtype="int32"))
    assert got.value == (i + j).tolist() and str(got.type) == "5 * int32"
    # a single value broadcasts against an array ('...' ellipsis)
    assert np.allclose(ops.hyp(f64(a), xnd(2.0)).value, np.hypot(a, 2.0))
    assert np.allclose(ops.hyp(xnd(2.0), f64(a)).value, np.hypot(2.0, a))
    assert ops.hyp(xnd(3.0), xnd(4.0)).value == 5.0


def test_scalar_kernel_strided_views_and_2d(ops):
    m = np.arange(24.0).reshape(4, 6)
    x = xnd(m.tolist())
    assert np.allclose(ops.hyp(x[::-1, ::2], x[:, 1::2]).value, np.hypot(m[::-1, ::2], m[:, 1::2]))
    assert np.allclose(ops.hyp(x, x).value, np.hypot(m, m))
    assert np.allclose(ops.hyp(x[:, 2], x[:, 3]).value, np.hypot(m[:, 2], m[:, 3]))


def test_scalar_kernel_on_var_dims(ops):
    rows = [[3.0, 5.0, 8.0], [], [7.0], [1.0, 2.0]]
    v = xnd(rows)
    w = xnd([[4.0, 12.0, 15.0], [], [24.0], [0.0, 0.0]])
    got = ops.hyp(v, w)
    assert str(got.type) == "var * var * float64"
    assert got.value == [[5.0, 13.0, 17.0], [], [25.0], [1.0, 2.0]]
    got = ops.neg(xnd([[[1.0], [2.0, 3.0]], [[4.0]]]))
    assert got.value == [[[-1.0], [-2.0, -3.0]], [[-4.0]]]


def test_output_and_inout_roles(ops):
    a = np.array([1.5, -2.0, 4.0])
    x = f64(a)
    assert ops.neg(x).value == (-a).tolist()
    assert ops.twice(x) is None
    assert x.value == (2 * a).tolist()   # inout: written in the caller's container (xndtools)


def test_array_kernels(ops):
    rng = np.random.default_rng(1)
    m, n = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    assert np.isclose(ops.dot(f64(m[0]), f64(n[0])).value, m[0] @ n[0])
    # '...' loops over outer dims; strided views are copied to contiguous buffers
    assert np.allclose(ops.dot(f64(m), f64(n)).value, np.einsum("ij,ij->i", m, n))
    assert np.allclose(ops.dot(f64(m)[:, ::2], f64(n)[:, ::2]).value,
                       np.einsum("ij,ij->i", m[:, ::2], n[:, ::2]))
    assert np.allclose(ops.cumsum(f64(m)[:, ::-1]).value, np.cumsum(m[:, ::-1], axis=1))
    got = ops.outer(f64(m[0]), f64(n[1, :4]))
    assert str(got.type) == "5 * 4 * float64" and np.allclose(got.value, np.outer(m[0], n[1, :4]))
    with pytest.raises(TypeError):   # N must agree between x and y
        ops.dot(f64(m[0]), f64(n[0, :3]))


def test_rowwise_array_kernels_on_ragged_rows(ops):
    """x(n)-only kernels under var...: D... * var * T, called once per row."""
    rows = [[1.0, 2.0, 3.0], [], [3.0, 4.0], [0.5]]
    r = xnd(rows)
    got = ops.dot(r, r)
    assert str(got.type) == "var * float64"
    assert got.value == [float(np.dot(x, x)) for x in rows]
    got = ops.cumsum(r)
    assert str(got.type) == "var * var * float64"
    assert got.value == [np.cumsum(x).tolist() for x in rows]
    deep = [[[1.0, 2.0]], [[3.0], [4.0, 5.0]]]
    assert ops.cumsum(xnd(deep)).value == [[np.cumsum(x).tolist() for x in g] for g in deep]
    with pytest.raises(TypeError):   # rows of different lengths do not type-check
        ops.dot(r, xnd([[1.0, 2.0], [], [3.0, 4.0], [1.0]]))


def test_inplace_array_kernel_writes_through_views(ops):
    m = np.arange(12.0).reshape(3, 4)
    x = f64(m)
    assert ops.scale(xnd(10.0), x[:, 1::2]) is None
    expect = m.copy()
    expect[:, 1::2] *= 10
    assert x.value == expect.tolist()


def test_tutorial_gpu_add_on_cpu(tmp_path):
    mod = import_module_at(build(EXAMPLES / "add-kernels.cfg", tmp_path), "add_cpu")
    x = np.arange(1000, dtype=np.float32)
    y = np.full(1000, 1.0, np.float32)
    xs, ys = xnd.from_buffer(x), xnd.from_buffer(y)
    r = xnd.from_buffer(np.zeros(1000, np.float32))
    assert mod.add(xs, ys, r) is None
    assert np.array_equal(np.asarray(r), x + y)
    with pytest.raises(TypeError):   # ellipses = none: exactly N * float32
        mod.add(xnd([[1.0]], dtype="float32"), xnd([[1.0]], dtype="float32"),
                xnd([[1.0]], dtype="float32"))


# --- the table capsule: what xdap.kernels' fast path relies on ----------------

class KernelSet(ctypes.Structure):
    _fields_ = [("sig", ctypes.c_void_p), ("constraint", ctypes.c_void_p),
                ("vectorize", ctypes.c_bool), ("C", ctypes.c_void_p), ("Fortran", ctypes.c_void_p),
                ("Xnd", ctypes.c_void_p), ("Strided", ctypes.c_void_p)]


class Func(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("nkernels", ctypes.c_int), ("kernels", KernelSet * 128)]


STRIDED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                           ctypes.POINTER(ctypes.c_ssize_t), ctypes.POINTER(ctypes.c_ssize_t),
                           ctypes.c_void_p)


def kernel_sets(module, name):
    """(signature string, kernel set) of function `name` via the capsule."""
    dirs = stack_dirs()
    # the libraries the module is linked to (already loaded: these are handles to them)
    nd = ctypes.CDLL(str(pathlib.Path(dirs["ndtypes"]) / "libndtypes.so.0"), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(str(pathlib.Path(dirs["xnd"]) / "libxnd.so.0"), mode=ctypes.RTLD_GLOBAL)
    gm = ctypes.CDLL(str(pathlib.Path(dirs["gumath"]) / "libgumath.so.0"))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tbl = get(module._table, CAPSULE_NAME.encode())
    nd.ndt_context_new.restype = ctypes.c_void_p
    nd.ndt_as_string.restype = ctypes.c_void_p
    nd.ndt_as_string.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    gm.gm_tbl_find.restype = ctypes.POINTER(Func)
    gm.gm_tbl_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    ctx = nd.ndt_context_new()
    f = gm.gm_tbl_find(tbl, name.encode(), ctx).contents
    out = []
    for k in range(f.nkernels):
        s = f.kernels[k]
        out.append((ctypes.string_at(nd.ndt_as_string(s.sig, ctx)).decode(), s))
    return out


def test_table_capsule_strided_loop_callable_directly(ops):
    sets = dict(kernel_sets(ops, "hyp"))
    assert list(sets)[:3] == ["... * float64, ... * float64 -> ... * float64",
                             "... * float32, ... * float32 -> ... * float32",
                             "... * int32, ... * int32 -> ... * int32"]
    s = sets["... * float64, ... * float64 -> ... * float64"]
    assert s.Strided and s.Xnd and not s.C and not s.Fortran and s.vectorize
    loop = STRIDED(s.Strided)
    a = np.linspace(0, 3, 11)
    b = np.linspace(1, 2, 11)
    cases = [  # contiguous, one single value, general strides
        (a, b, (8, 8, 8)),
        (a, b[:1], (8, 0, 8)),
        (a[::2], b[::2], (16, 16, 8)),
    ]
    for x, y, steps in cases:
        n = len(x)
        r = np.empty(n)
        args = (ctypes.c_char_p * 3)(*(ctypes.cast(v.ctypes.data, ctypes.c_char_p) for v in (x, y, r)))
        assert loop(args, (ctypes.c_ssize_t * 1)(n), (ctypes.c_ssize_t * 3)(*steps), None) == 0
        ys = np.broadcast_to(y, n) if steps[1] == 0 else y
        assert np.allclose(r, np.hypot(x, ys))
    # var dims go to the Xnd kernel of the D... set
    v = sets["D... * float64, D... * float64 -> D... * float64"]
    assert v.Xnd and v.Strided


def test_extension_spec_for_setuptools(tmp_path):
    spec = extension_spec(EXAMPLES / "ops.cfg", tmp_path)
    assert spec["name"] == "xk_testops"
    assert spec["sources"] == [spec["c_source"], str((EXAMPLES / "ops.c").resolve())]
    assert pathlib.Path(spec["c_source"]).read_text().startswith("/* Generated by xdap.codegen")
    assert {"-Wall", "-Wextra", "-Werror"} <= set(spec["extra_compile_args"])
    assert spec["libraries"][-3:] == ["gumath", "xnd", "ndtypes"]
    assert set(stack_dirs().values()) <= set(spec["runtime_library_dirs"])


# --- the CLI --------------------------------------------------------------------

def xdap_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "xdap", *args], cwd=cwd, capture_output=True, text=True)


def test_cli_square_end_to_end(tmp_path):
    """The tutorial: header -> skeleton cfg -> module -> call."""
    for f in ("square.c", "square.h"):
        (tmp_path / f).write_text((EXAMPLES / f).read_text())
    r = xdap_cli("kernel", "config", "square.h", "-o", "square.cfg", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = xdap_cli("kernel", "build", "square.cfg", "--out", "mod", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    code = ("import sys; sys.path.insert(0, 'mod'); import square; from xnd import xnd; "
            "print(square.square(xnd([1.0, 2.0, 3.0])).value, square.square(xnd([[1.0], [2.0, 3.0]])).value)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.stdout.split("\n")[0] == "[1.0, 4.0, 9.0] [[1.0], [4.0, 9.0]]", out.stderr


def test_cli_reports_bad_config_and_compiler_errors(tmp_path):
    (tmp_path / "bad.cfg").write_text("[MODULE m]\n[KERNEL f]\nprototypes = real f(real x);\n")
    r = xdap_cli("kernel", "build", "bad.cfg", cwd=tmp_path)
    assert r.returncode == 2 and "bad.cfg [KERNEL f] prototypes: unknown C type 'real'" in r.stderr
    (tmp_path / "f.c").write_text("double f(double x) { return x +; }\n")
    (tmp_path / "f.cfg").write_text("[MODULE fm]\nsources = f.c\n[KERNEL f]\nprototypes = double f(double x);\n")
    r = xdap_cli("kernel", "build", "f.cfg", cwd=tmp_path)
    assert r.returncode == 2 and "compiling" in r.stderr and "f.c" in r.stderr
    r = xdap_cli("kernel", "config", "missing.h", cwd=tmp_path)
    assert r.returncode == 2 and "cannot read the header" in r.stderr
