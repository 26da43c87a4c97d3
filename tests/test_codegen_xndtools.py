"""The .cfg format with xndtools' semantics, through the whole corpus of
combinations: every intent (input, inplace, inout, output, hide and each
one the format allows with output) x every prototype kind (by value,
pointer, return value, pointer + return value) x with and without an
initial value (``a = 4``), each call checked against a reference model of
xndtools' rules (``expected`` below, written from its documentation) on 0-d,
1-D and ragged data; arrays in every layout (contiguous, strided, looped,
column-major) and every intent; hidden arrays; outputs sized by a scalar;
DistArrays on 1-4 ranks; and the calls that must be refused -- none reads
or writes outside its buffers.
"""
import numpy as np
import pytest
from ndtypes import ndt
from xnd import xnd

import xdap
from helpers import import_module_at
from xdap.codegen import build

INTENTS = ["input", "inplace", "inout", "output", "hide",
           "input+output", "inplace+output", "inout+output"]
KINDS = {  # prototype kind -> (C declaration, body)
    "val": ("void f_val(int64_t a)", "(void)a;"),
    "ptr": ("void f_ptr(int64_t *a)", "*a = 3 * *a + 1;"),
    "ret": ("int64_t f_ret(int64_t a)", "return 2 * a + 7;"),
    "ptr_ret": ("int64_t f_ptr_ret(int64_t *a)", "*a = 3 * *a + 1; return 2 * *a + 7;"),
}
DEFAULT = 4


def kernel_name(kind, intent, default):
    return f"k_{kind}_{intent.replace('+', '_')}" + ("_v" if default else "")


def scalar_config():
    sections = []
    for kind, (decl, _) in KINDS.items():
        for intent in INTENTS:
            for default in (False, True):
                keys = "\n".join(f"{k} = a" + (f" = {DEFAULT}" if default else "")
                                 for k in intent.split("+"))
                sections.append(f"[KERNEL {kernel_name(kind, intent, default)}]\n"
                                f"prototypes = {decl};\n{keys}\n")
    return "[MODULE xk_corpus]\nincludes = corpus.h\nsources = corpus.c\n" \
           "ellipses = none, ..., var...\n\n" + "\n".join(sections)


def expected(kind, intent, default, x):
    """xndtools' rules: what the call returns and what the caller's item
    becomes, for the caller's item ``x`` (None: missing; absent when the
    intent passes nothing)."""
    passed = intent.split("+")[0] in ("input", "inplace", "inout")
    x0 = (x if x is not None else DEFAULT) if passed else (DEFAULT if default else 0)
    a1 = 3 * x0 + 1 if kind.startswith("ptr") else x0     # a C scalar copy never changes
    out = []
    if intent.endswith("output"):
        out.append(a1)
    if kind.endswith("ret"):
        out.append(2 * (a1 if kind == "ptr_ret" else x0) + 7)
    written = intent.split("+")[0] in ("inplace", "inout")
    caller = a1 if written else x
    return (None if not out else out[0] if len(out) == 1 else tuple(out)), caller


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    (d / "corpus.h").write_text("#include <stdint.h>\n" + "".join(
        f"{decl};\n" for decl, _ in KINDS.values()) + ARRAY_HEADER)
    (d / "corpus.c").write_text('#include "corpus.h"\n' + "".join(
        f"{decl} {{ {body} }}\n" for decl, body in KINDS.values()) + ARRAY_SOURCE)
    (d / "corpus.cfg").write_text(scalar_config() + ARRAY_CONFIG)
    return import_module_at(build(d / "corpus.cfg", d), "xk_corpus")


def values(r):
    if r is None:
        return None
    if isinstance(r, tuple):
        return tuple(v.value for v in r)
    return r.value


def per_item(want, i):
    """Item i of a looped call's expected result."""
    if want is None:
        return None
    return tuple(w[i] for w in want) if isinstance(want, tuple) else want[i]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("intent", INTENTS)
@pytest.mark.parametrize("default", [False, True], ids=["", "value"])
def test_every_intent_and_prototype_kind(corpus, kind, intent, default):
    f = getattr(corpus, kernel_name(kind, intent, default))
    passed = intent.split("+")[0] in ("input", "inplace", "inout")
    if not passed:
        want, _ = expected(kind, intent, default, None)
        assert values(f()) == want
        return
    items = [10, 11, None] if default else [10, 11, -3]
    dtype = "?int64" if default else "int64"
    for x in items:                                     # one value
        c = xnd(x, type=dtype)
        want, caller = expected(kind, intent, default, x)
        assert values(f(c)) == want, (x,)
        assert c.value == caller and str(c.type) == dtype
    c = xnd(items, type=f"3 * {dtype}")                 # a 1-D loop
    wants = [expected(kind, intent, default, x) for x in items]
    got = values(f(c))
    n_out = 0 if wants[0][0] is None else len(wants[0][0]) if isinstance(wants[0][0], tuple) else 1
    if n_out == 0:
        assert got is None
    elif n_out == 1:
        assert got == [w for w, _ in wants]
    else:
        assert got == tuple([w[k] for w, _ in wants] for k in range(n_out))
    assert c.value == [caller for _, caller in wants]
    if default:                                        # plain data takes the plain twin
        c = xnd([10, 11], type="2 * int64")
        assert c.type == ndt("2 * int64")
        f(c)
        assert c.value == [expected(kind, intent, default, x)[1] for x in (10, 11)]


@pytest.mark.parametrize("kind, intent", [("ptr_ret", "input"), ("ptr_ret", "inplace"),
                                          ("ptr", "input+output"), ("ptr", "inplace+output")])
def test_ragged_rows(corpus, kind, intent):
    """Ragged data through the var... kernel sets (one output per input:
    gumath allocates it; the kernels the module allocates take fixed data)."""
    f = getattr(corpus, kernel_name(kind, intent, False))
    rows = [[1, 2], [], [3, 4, 5]]
    c = xnd(rows)
    got = f(c)
    flat = [expected(kind, intent, False, x) for r in rows for x in r]
    outs = got if isinstance(got, tuple) else (got,)
    for k, o in enumerate(outs):
        assert o.type == c.type
        assert [v for r in o.value for v in r] == [w[0][k] if isinstance(w[0], tuple) else w[0]
                                                   for w in flat]
    assert [v for r in c.value for v in r] == [caller for _, caller in flat]


def test_allocated_outputs_loop_and_refuse(corpus):
    """A kernel whose outputs the module allocates (two outputs, one input)
    loops like any other; ragged data, out= and DistArrays are refused."""
    f = corpus.k_ptr_ret_input_output
    a, r = f(xnd([[1, 2], [3, 4]], type="2 * 2 * int64"))
    assert a.value == [[4, 7], [10, 13]] and r.value == [[15, 21], [27, 33]]
    with pytest.raises(TypeError, match="takes fixed dimensions"):
        f(xnd([[1], []]))
    with pytest.raises(TypeError, match="allocates its outputs itself"):
        f(xnd(1), out=xnd(0))
    with pytest.raises(TypeError, match="no prototype takes float64"):
        f(xnd(1.0))


# --- arrays ---------------------------------------------------------------

ARRAY_HEADER = """
int64_t arr(int64_t n, int64_t *x);
int64_t mat(int64_t n, int64_t *a);
int64_t fill(int64_t n, int64_t m, int64_t *a);
double scale(int64_t n, double *x, double f);
"""
ARRAY_SOURCE = """
/* the sum of x as it came, then x[i] = 2 x[i] + i */
int64_t arr(int64_t n, int64_t *x)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) { s += x[i]; x[i] = 2 * x[i] + i; }
    return s;
}
/* the item at flat position n-1 (a[0, n-1] row-major, a[n-1, 0] column-major),
   then a[k] = k in the function's order */
int64_t mat(int64_t n, int64_t *a)
{
    int64_t r = a[n - 1];
    for (int64_t k = 0; k < n * n; k++) a[k] = k;
    return r;
}
int64_t fill(int64_t n, int64_t m, int64_t *a)
{
    for (int64_t i = 0; i < m; i++) a[i] = i * n;
    return m;
}
double scale(int64_t n, double *x, double f)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) { x[i] *= f; s += x[i]; }
    return s;
}
"""
ARRAY_INTENTS = ["input", "inplace", "inout", "input+output", "inplace+output", "inout+output"]


def array_config():
    out = []
    for intent in ARRAY_INTENTS:
        keys = "\n".join(f"{k} = x(n)" for k in intent.split("+"))
        out.append(f"[KERNEL a_{intent.replace('+', '_')}]\nkinds = C, Xnd\n"
                   f"prototypes = int64_t arr(int64_t n, int64_t *x);\n{keys}\nhide = n = len(x)\n")
    out.append("[KERNEL a_output]\nkinds = C, Fortran, Xnd\nellipses = none\n"
               "prototypes = int64_t arr(int64_t n, int64_t *x);\ninput = n\noutput = x(n)\n")
    out.append("[KERNEL a_output_default]\nellipses = none\n"
               "prototypes = int64_t arr(int64_t n, int64_t *x);\ninput = n = 3\noutput = x(n)\n")
    out.append("[KERNEL a_hide]\nellipses = none\n"
               "prototypes = int64_t arr(int64_t n, int64_t *x);\ninput = n\nhide = x(n)\n")
    for name, fortran, intent in (("m_inout_c", "", "inout"), ("m_inout_f", "fortran = a", "inout"),
                                  ("m_inplace_f", "fortran = a", "inplace"),
                                  ("m_input_f", "fortran = a", "input")):
        out.append(f"[KERNEL {name}]\nkinds = Xnd\nellipses = none\n"
                   f"prototypes = int64_t mat(int64_t n, int64_t *a);\n{intent} = a(n, n)\n"
                   f"hide = n = len(a)\n{fortran}\n")
    out.append("[KERNEL fill_twice]\nellipses = none\n"
               "prototypes = int64_t fill(int64_t n, int64_t m, int64_t *a);\n"
               "input = n\nhide = m = 2 * n + 1\noutput = a(m)\n")
    out.append("[KERNEL scale]\nellipses = none, ...\n"
               "prototypes = double scale(int64_t n, double *x, double f);\n"
               "inplace = x(n)\ninput = f = 2.5\nhide = n = len(x)\n")
    return "\n" + "\n".join(out)


ARRAY_CONFIG = array_config()


@pytest.mark.parametrize("intent", ARRAY_INTENTS)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "looped"])
def test_array_intents(corpus, intent, layout):
    f = getattr(corpus, f"a_{intent.replace('+', '_')}")
    base = np.arange(1, 8, dtype=np.int64)
    owner = xnd(base.tolist())
    if layout == "contiguous":
        x = owner
    elif layout == "strided":
        x = owner[1::2]
    else:
        owner = xnd(base[:6].reshape(2, 3).tolist())
        x = owner
    x0 = np.array(x.value)
    if intent.startswith("inout") and layout == "strided":
        with pytest.raises(ValueError, match=r"a_inout\w*: argument x must be C-contiguous \(inout"):
            f(x)
        assert np.array_equal(np.array(x.value), x0)          # nothing written
        return
    got = f(x)
    x1 = 2 * x0 + np.arange(x0.shape[-1])
    s = x0.sum(axis=-1)
    outs = got if isinstance(got, tuple) else (got,)
    if intent.endswith("output"):
        assert np.array_equal(np.array(outs[0].value), x1)
    assert np.array_equal(np.array(outs[-1].value), s)
    # xndtools: an input array is the caller's own buffer when contiguous;
    # input+output works on the output, a copy of the caller's values
    written = intent.split("+")[0] in ("inplace", "inout") or \
        (intent == "input" and layout != "strided")
    assert np.array_equal(np.array(x.value), x1 if written else x0)
    if layout == "strided":                                  # the rest of the owner untouched
        assert np.array(owner.value)[0::2].tolist() == base[0::2].tolist()


def test_array_outputs_and_hidden_arrays(corpus):
    x, s = corpus.a_output(xnd(4))
    assert x.value == [0, 1, 2, 3] and s.value == 0         # allocated zeroed, then filled
    assert corpus.a_hide(xnd(5)).value == 0                 # a hidden array is the kernel's own
    a, m = corpus.fill_twice(xnd(3))                         # sized by an expression: 2 n + 1
    assert m.value == 7 and a.value == [3 * i for i in range(7)]
    assert corpus.a_output(xnd(0))[0].value == []
    # a missing size takes the kernel's initial value (n = 3), in Python as in C
    x, s = corpus.a_output_default(xnd(None, type="?int64"))
    assert x.value == [0, 1, 2] and s.value == 0
    assert corpus.a_output_default(xnd(2))[0].value == [0, 1]
    with pytest.raises(ValueError, match=r"a_output: output x would have -2 items"):
        corpus.a_output(xnd(-2))
    with pytest.raises(ValueError, match="sizes an output, so it must be one value"):
        corpus.a_output(xnd([1, 2]))


def test_no_call_reads_outside_its_buffers(corpus):
    """The registered kernel checks the buffers it is handed against the
    sizes it computes: a too-small output is an error, never a write past it."""
    raw = corpus.__gufuncs__["a_output"]
    with pytest.raises(ValueError, match=r"a_output: x has 2 items along dimension n, but n is 4"):
        raw(xnd(4), xnd.empty("2 * int64"), xnd.empty("int64"))
    raw = corpus.__gufuncs__["fill_twice"]
    with pytest.raises(ValueError, match="fill_twice: a has 7 items along dimension m, but m is 9"):
        raw(xnd(4), xnd.empty("7 * int64"), xnd.empty("int64"))


C_MAT = [[10, 20], [30, 40]]


def test_column_major_arguments(corpus):
    c = xnd(C_MAT, type="2 * 2 * int64")
    f = xnd(C_MAT, type="!2 * 2 * int64")
    assert corpus.m_inout_c(c).value == 20                   # a[0, n-1] row-major
    assert corpus.m_inout_f(f).value == 30                   # a[n-1, 0] column-major
    assert f.value == [[0, 2], [1, 3]]                       # written in its own order
    with pytest.raises(ValueError, match=r"m_inout_c: argument a must be C-contiguous \(inout"):
        corpus.m_inout_c(xnd(C_MAT, type="!2 * 2 * int64"))
    with pytest.raises(ValueError, match=r"m_inout_f: argument a must be F-contiguous \(inout"):
        corpus.m_inout_f(xnd(C_MAT, type="2 * 2 * int64"))
    # inplace: a row-major array goes through a column-major copy and back
    c = xnd(C_MAT, type="2 * 2 * int64")
    assert corpus.m_inplace_f(c).value == 30
    assert c.value == [[0, 2], [1, 3]]
    c = xnd(C_MAT, type="2 * 2 * int64")
    assert corpus.m_input_f(c).value == 30 and c.value == C_MAT      # a copy: unchanged


def test_initial_value_beside_an_array(corpus):
    x = xnd([1.0, 2.0], type="2 * float64")
    assert corpus.scale(x, xnd(None, type="?float64")).value == 7.5  # f missing: 2.5
    assert x.value == [2.5, 5.0]
    assert corpus.scale(x, xnd(2.0)).value == 15.0                    # plain float64
    rows = xnd([[1.0, 1.0], [2.0, 2.0]], type="2 * 2 * float64")
    assert corpus.scale(rows, xnd([None, 3.0], type="2 * ?float64")).value == [5.0, 12.0]


# --- DistArrays -----------------------------------------------------------

@pytest.mark.mpi(ranks=(1, 2, 4))
def test_corpus_kernels_on_distarrays(comm, corpus):
    """Each rank's part goes through the kernel; results keep the
    distribution and match the model on the whole array (empty ranks too)."""
    g = np.arange(-5, 6, dtype=np.int64)
    for intent in ("input", "inplace", "input+output", "inplace+output"):
        for kind in ("ptr", "ptr_ret"):
            f = getattr(corpus, kernel_name(kind, intent, False))
            for sizes in (None, [0] * (comm.size - 1) + [len(g)]):
                kw = {} if sizes is None else {"sizes": (sizes,)}
                a = xdap.from_global(g, comm=comm, **kw)
                got = f(a)
                want = [expected(kind, intent, False, int(x)) for x in g]
                outs = () if got is None else got if isinstance(got, tuple) else (got,)
                for k, o in enumerate(outs):
                    assert o.distribution == a.distribution
                    col = [w[k] if isinstance(w, tuple) else w for w, _ in want]
                    np.testing.assert_array_equal(o.to_numpy(), col)
                np.testing.assert_array_equal(a.to_numpy(), [c for _, c in want])
    # a kernel whose outputs the module allocates (two outputs, one input)
    a = xdap.from_global(g, comm=comm)
    x, r = corpus.k_ptr_ret_input_output(a)
    want = [expected("ptr_ret", "input+output", False, int(v))[0] for v in g]
    assert x.distribution == a.distribution
    np.testing.assert_array_equal(x.to_numpy(), [w[0] for w in want])
    np.testing.assert_array_equal(r.to_numpy(), [w[1] for w in want])
    np.testing.assert_array_equal(a.to_numpy(), g)


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_array_kernel_rows_on_distarrays(comm, corpus):
    g = np.arange(24, dtype=np.int64).reshape(8, 3)
    a = xdap.from_global(g, comm=comm)
    x, s = corpus.a_inplace_output(a)
    want = 2 * g + np.arange(3)
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(s.to_numpy(), g.sum(axis=1))
    np.testing.assert_array_equal(a.to_numpy(), want)


# --- the build's xnd patch --------------------------------------------------

def test_xnd_dtype_and_value_equality():
    """As in later xnd releases (xndtools' tests rely on both)."""
    assert xnd([1, None]).dtype == ndt("?int64") and xnd(3.0).dtype == ndt("float64")
    a = xnd([1, 2, 3, 4, 5, 6])
    assert a[::2] == xnd([1, 3, 5]) and a != xnd([1, 3, 5])
    assert xnd(6) == xnd(6) and xnd(6) != xnd(6.0) and xnd([1]) != xnd(1)
    assert xnd([[1, 2], [3, 4]], type="!2 * 2 * int64") == xnd([[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="unhashable"):   # as in dev3
        hash(xnd(1))


def test_skeleton_guesses_build_and_run(tmp_path):
    """``xdap kernel config``'s guesses, unedited: const pointers are inputs,
    pointers inplace, a length parameter makes them arrays and is hidden."""
    from xdap.codegen import write_skeleton
    (tmp_path / "vec.h").write_text("double dot(int n, const double *x, const double *y);\n"
                                    "void axpy(long n, double a, const double *x, double *y);\n")
    (tmp_path / "vec.c").write_text(
        '#include "vec.h"\n'
        "double dot(int n, const double *x, const double *y)\n"
        "{ double s = 0; for (int i = 0; i < n; i++) s += x[i] * y[i]; return s; }\n"
        "void axpy(long n, double a, const double *x, double *y)\n"
        "{ for (long i = 0; i < n; i++) y[i] += a * x[i]; }\n")
    cfg = write_skeleton(tmp_path / "vec.h")
    text = cfg.read_text()
    assert "input = x(n), y(n)" in text and "inplace = y(n)" in text and "hide = n" in text
    m = import_module_at(build(cfg, tmp_path), "vec")
    x, y = np.arange(5.0), np.linspace(1, 2, 5)
    assert m.dot(xnd(x.tolist()), xnd(y.tolist())).value == pytest.approx(x @ y)
    yy = xnd(y.tolist())
    m.axpy(xnd(2.0), xnd(x.tolist()), yy)
    np.testing.assert_allclose(yy.value, y + 2 * x)
