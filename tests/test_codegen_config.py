"""The kernel generator's front end, on one process: C prototypes, .cfg
parsing and validation (errors name file, section and key), signatures,
the skeleton writer, and that xdap.codegen loads without MPI or xnd."""
import pathlib
import subprocess
import sys
import textwrap

import pytest

from xdap.codegen import (ConfigError, generate_c, kernel_table, load_config, parse_prototype,
                          scan_header, skeleton_config, write_skeleton)

EXAMPLES = pathlib.Path(__file__).parent / "kernel_examples"
ROOT = pathlib.Path(__file__).parent.parent


def cfg(tmp_path, text, name="k.cfg"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


# --- prototypes -------------------------------------------------------------

@pytest.mark.parametrize("text, ret, params", [
    ("extern double square(double);", "double", [("a", "double", False, False)]),
    ("double square(double   a);", "double", [("a", "double", False, False)]),
    ("void add(int n, float *x, float* y, float * r)", "void",
     [("n", "int", False, False), ("x", "float", True, False), ("y", "float", True, False),
      ("r", "float", True, False)]),
    ('extern "C" void add_gpu(int n, const float x[], float *r);', "void",
     [("n", "int", False, False), ("x", "float", True, True), ("r", "float", True, False)]),
    ("unsigned long long f(unsigned int, long long b, signed char);", "unsigned long long",
     [("a", "unsigned int", False, False), ("b", "long long", False, False),
      ("c", "signed char", False, False)]),
    ("int g(void);", "int", []),
    ("static inline double h(const double x, double complex z);", "double",
     [("x", "double", False, False), ("z", "double complex", False, False)]),
])
def test_parse_prototype(text, ret, params):
    p = parse_prototype(text)
    assert p.ret == ret
    assert [(q.name, q.ctype, q.pointer, q.const) for q in p.params] == params


@pytest.mark.parametrize("text, words", [
    ("double f(double **x);", "pointers to pointers"),
    ("double *f(double x);", "returning pointers"),
    ("int printf(const char *fmt, ...);", "variadic"),
    ("double f(double x[3]);", "fixed-size array"),
    ("this is not C", "not a C function prototype"),
])
def test_parse_prototype_rejects(text, words):
    with pytest.raises(ValueError, match=words):
        parse_prototype(text)


def test_scan_header_skips_non_prototypes():
    header = """
    #ifndef H
    #define H
    /* a comment with f(x); inside */
    typedef double (*fp)(double);
    struct s { int a; };
    #ifdef __cplusplus
    extern "C" {
    #endif
    extern double square(double);   // the kernel
    static inline int one(void) { return 1; }
    void add(int n, float *x, float *y, float *r);
    #endif
    """
    assert [p.name for p in scan_header(header)] == ["square", "one", "add"]


# --- configs: the tutorial files ---------------------------------------------

def test_gpu_tutorial_cfg_old_spelling():
    c = load_config(EXAMPLES / "add-kernels.cfg")
    assert c.name == "add_cpu"
    assert c.sources == [str((EXAMPLES / "add.c").resolve())]
    assert c.kinds == ("C",) and c.ellipses == ("",)
    (k,) = c.kernels
    (v,) = k.variants
    assert [(a.name, a.role, a.dims) for a in v.args] == [
        ("n", "hide", ()), ("x", "input", ("n",)), ("y", "input", ("n",)), ("r", "inplace", ("n",))]
    assert v.hidden[0].hide_expr == "len(x)"
    assert not v.is_scalar
    assert v.signature("") == "N * float32, N * float32, N * float32 -> void"
    assert kernel_table(c) == [("add", "N * float32, N * float32, N * float32 -> void", False,
                                "xk_add_0_xnd", None)]


def test_new_spelling_equals_old(tmp_path):
    new = load_config(cfg(tmp_path, """
        [MODULE add_cpu]
        typemaps = float: float32
        ellipses = none
        [KERNEL add]
        prototypes = void add(int n, float *x, float *y, float *r);
        input = x(n), y(n)
        inplace = r(n)
        hide = n = len(x)
    """))
    old = load_config(EXAMPLES / "add-kernels.cfg")
    assert new.kernels[0].variants[0].args == old.kernels[0].variants[0].args


def test_square_skeleton_roundtrip(tmp_path):
    for f in ("square.h", "square.c"):
        (tmp_path / f).write_text((EXAMPLES / f).read_text())
    out = write_skeleton(tmp_path / "square.h")
    assert out == tmp_path / "square-kernels.cfg"
    c = load_config(out)
    assert c.name == "square" and c.sources == [str(tmp_path / "square.c")]
    assert c.includes == ["square.h"]
    (v,) = c.kernels[0].variants
    assert v.is_scalar and v.signature("...") == "... * float64 -> ... * float64"
    # xndtools' default ellipses: '...' (fixed, broadcasting) and 'var...' (-> D...)
    assert [r[1] for r in kernel_table(c)] == ["... * float64 -> ... * float64",
                                             "D... * float64 -> D... * float64"]


def test_skeleton_lists_unknown_types_for_the_user():
    text = skeleton_config("real f(real x, int *y);", "f.h", "f")
    assert "real: FILL_IN_DTYPE" in text
    assert "inplace = y" in text and "input = x" in text


def test_several_prototypes_one_kernel(tmp_path):
    c = load_config(cfg(tmp_path, """
        [MODULE m]
        typemaps =
            real: float64
        [KERNEL hyp]
        prototypes =
            double hyp(double x, double y);
            float hypf(float x, float y);
            long ihyp(long x, long y);
        ellipses = ..., var..., none
    """))
    sigs = [r[1] for r in kernel_table(c)]
    assert sigs == [
        "... * float64, ... * float64 -> ... * float64", "... * float32, ... * float32 -> ... * float32",
        "... * int64, ... * int64 -> ... * int64",
        "D... * float64, D... * float64 -> D... * float64", "D... * float32, D... * float32 -> D... * float32",
        "D... * int64, D... * int64 -> D... * int64",
        "float64, float64 -> float64", "float32, float32 -> float32", "int64, int64 -> int64"]
    src = generate_c(c)
    for name in ("hyp", "hypf", "ihyp"):
        assert f"= {name}(" in src  # called directly, so gcc can inline it
    assert src.count(".Strided = ") == 9 and ".C = " not in src and ".Fortran = " not in src


def test_roles_slots_and_symbols(tmp_path):
    c = load_config(cfg(tmp_path, """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(int n, int m, double a, const double *x, double *y, double *z);
        input = a, x(n, m)
        inout = y(n)
        output = z(m)
        hide = n = len(x), m = len(x, 1)
        ellipses = ...
    """))
    v = c.kernels[0].variants[0]
    # inout is xndtools' "written in the caller's container": an input slot only
    assert [a.name for a in v.inputs] == ["a", "x", "y"]
    # xndtools' order: the argument outputs, then the return value
    assert [a.name for a in v.outputs] == ["z", "return"]
    assert v.signature("...") == ("... * float64, ... * N * M * float64, ... * N * float64 -> "
                                  "... * M * float64, ... * float64")


def test_hide_inferred_from_dimension(tmp_path):
    c = load_config(cfg(tmp_path, """
        [MODULE m]
        [KERNEL dot]
        prototypes = double dot(int n, const double *x, const double *y);
        input = x(n), y(n)
        hide = n
    """))
    assert c.kernels[0].variants[0].hidden[0].hide_expr == "len(x, 0)"
    # row-wise (all arrays 1-D over one name): var... takes ragged rows; a
    # stack of calls (one leading dim on each batched input) is looped in C
    assert [r[1] for r in kernel_table(c)] == [
        "XdapBatch * N * float64, XdapBatch * N * float64 -> XdapBatch * float64",
        "XdapBatch * N * float64, N * float64 -> XdapBatch * float64",
        "N * float64, XdapBatch * N * float64 -> XdapBatch * float64",
        "... * N * float64, ... * N * float64 -> ... * float64",
        "D... * var * float64, D... * var * float64 -> D... * float64"]


def test_skip_and_comments(tmp_path):
    c = load_config(cfg(tmp_path, """
        # comment
        [MODULE m]
        [KERNEL a]
        skip = # REMOVE THIS LINE WHEN READY
        prototypes = double a(double x);
        [KERNEL b]
        prototypes = double b(double x);  # inline comment
    """))
    assert [k.name for k in c.kernels] == ["b"]


# --- configs: errors name file, section and key --------------------------------

BAD = [
    ("unknown C type", """
        [MODULE m]
        [KERNEL f]
        prototypes = real f(real x);
     """, r"k\.cfg \[KERNEL f\] prototypes: unknown C type 'real' of parameter 'x' in real f\(real x\)"),
    ("unknown return type", """
        [MODULE m]
        [KERNEL f]
        prototypes = real f(double x);
     """, r"k\.cfg \[KERNEL f\] prototypes: unknown C return type 'real'"),
    ("argument not in prototype", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x);
        input = y
     """, r"k\.cfg \[KERNEL f\] input: 'y' is not a parameter of double f\(double x\)"),
    ("old spelling names the key too", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x);
        input_arguments = x, q
     """, r"\[KERNEL f\] input: 'q' is not a parameter"),
    ("hidden not in prototype", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = m = len(x)
     """, r"\[KERNEL f\] hide: 'm' is not a parameter"),
    ("hide divides by a constant zero", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = len(x) / (2 - 2)
     """, r"\[KERNEL f\] hide: expression 'len\(x\) / \(2 - 2\)' for 'n': divides by a "
          r"constant zero"),
    ("hide nested 3000 deep", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = """ + "(" * 3000 + "len(x)" + ")" * 3000 + """
     """, r"\[KERNEL f\] hide: expression .* for 'n': nests deeper than 64"),
    ("hide unbalanced", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = (len(x) + 1
     """, r"\[KERNEL f\] hide: expression .* for 'n': a '\(' is not closed"),
    ("dimension of unknown arg", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        dimension = z(n)
     """, r"\[KERNEL f\] dimension: 'z' is not a parameter"),
    ("missing module", """
        [KERNEL f]
        prototypes = double f(double x);
     """, r"k\.cfg \[MODULE\]: expected exactly one \[MODULE name\] section, found 0"),
    ("missing prototypes", """
        [MODULE m]
        [KERNEL f]
        input = x
     """, r"k\.cfg \[KERNEL f\] prototypes: missing"),
    ("no kernels", """
        [MODULE m]
     """, r"\[MODULE m\]: no \[KERNEL name\] sections"),
    ("unknown key", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x);
        inputs = x
     """, r"\[KERNEL f\] inputs: unknown key"),
    ("unknown module key", """
        [MODULE m]
        include = m.h
        [KERNEL f]
        prototypes = double f(double x);
     """, r"\[MODULE m\] include: unknown key"),
    ("bad typemap", """
        [MODULE m]
        typemaps = real: float128
        [KERNEL f]
        prototypes = double f(double x);
     """, r"\[MODULE m\] typemaps: cannot read 'real: float128'"),
    ("bad ellipsis", """
        [MODULE m]
        ellipses = ..., var
        [KERNEL f]
        prototypes = double f(double x);
     """, r"\[MODULE m\] ellipses: unknown ellipsis 'var'"),
    ("bad kind", """
        [MODULE m]
        [KERNEL f]
        kinds = Cuda
        prototypes = double f(double x);
     """, r"\[KERNEL f\] kinds: unknown kind 'Cuda'"),
    ("initial value of an array", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        input = x(n) = 5
     """, r"\[KERNEL f\] input: 'x\(n\) = 5': an initial value is for scalar arguments"),
    ("column-major 1-D array", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        fortran = x
     """, r"\[KERNEL f\] fortran: 'x' must be an array of two or more dimensions"),
    ("fortran names no parameter", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n, n)
        fortran = y
     """, r"\[KERNEL f\] fortran: 'y' is not a parameter"),
    ("output sized by what the function sets", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int *n, double *x);
        output = n, x(n)
     """, r"\[KERNEL f\] output: dimension 'n' of 'x': 'n' is set by the function"),
    ("bad arraytypes", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x);
        arraytypes = ragged
     """, r"\[KERNEL f\] arraytypes: 'ragged': use symbolic"),
    ("variable arrays of a matrix kernel", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n, n)
        arraytypes = variable
     """, r"\[KERNEL f\] arraytypes: variable arrays \(var \* T\) need a row-wise kernel"),
    ("bad debug", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x);
        debug = maybe
     """, r"\[KERNEL f\] debug: 'maybe' is not a boolean"),
    ("another Fortran function", """
        [MODULE m]
        [KERNEL f]
        kinds = C, Fortran
        prototypes = void f(int n, double *x);
        prototypes[Fortran] = void g(int n, double *x);
        inplace = x(n, n)
     """, r"\[KERNEL f\] prototypes\[fortran\]: a Fortran-kind function other than the C one"),
    ("two roles", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(double x, double *y);
        input = x, y
        inplace = y
     """, r"\[KERNEL f\] inplace: 'y' already has the role 'input'"),
    ("output dim from nowhere", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x, double *y);
        input = x(n)
        output = y(k)
        hide = n = len(x)
     """, r"\[KERNEL f\] output: dimension 'k' of 'y' is neither a dimension of a passed array, "
         r"a number, nor a scalar argument"),
    ("bad hide expression", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = len(x) ; system("rm")
     """, r"\[KERNEL f\] hide: cannot read expression"),
    ("hide refers to unknown name", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = len(x) + q
     """, r"\[KERNEL f\] hide: 'q' in the expression for 'n' is not a scalar argument the kernel "
         r"knows first"),
    ("hide with too high axis", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(int n, double *x);
        inplace = x(n)
        hide = n = len(x, 1)
     """, r"\[KERNEL f\] hide: len\(x, 1\): 'x' has 1 dimension"),
    ("duplicate input types", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double x); double g(double x);
     """, r"\[KERNEL f\] prototypes: f and g take the same input types"),
    ("initial value names a later output", """
        [MODULE m]
        [KERNEL f]
        prototypes = void f(double *a, double *b);
        output = a = b, b
     """, r"\[KERNEL f\] output: 'b' in the expression for 'a' is not a scalar argument the "
         r"kernel knows first"),
    ("unreadable prototype", """
        [MODULE m]
        [KERNEL f]
        prototypes = double f(double **x);
     """, r"\[KERNEL f\] prototypes: f: pointers to pointers"),
    ("bad module name", """
        [MODULE my-mod]
        [KERNEL f]
        prototypes = double f(double x);
     """, r"\[MODULE my-mod\]: the section must be \[MODULE name\]"),
    ("unknown section", """
        [MODULE m]
        [KERNELS f]
        prototypes = double f(double x);
     """, r"\[KERNELS f\]: unknown section"),
]


@pytest.mark.parametrize("label, text, message", BAD, ids=[b[0] for b in BAD])
def test_bad_configs(tmp_path, label, text, message):
    with pytest.raises(ValueError, match=message):
        load_config(cfg(tmp_path, text))


def test_config_error_is_value_error_and_missing_file(tmp_path):
    assert issubclass(ConfigError, ValueError)
    with pytest.raises(ValueError, match="cannot read the kernel config"):
        load_config(tmp_path / "nope.cfg")


def test_codegen_imports_without_mpi_or_xnd():
    """setup.py loads the generator by path before xdap (and MPI) exist."""
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location(
            "xdap_codegen", {str(ROOT / 'xdap/codegen/__init__.py')!r},
            submodule_search_locations=[{str(ROOT / 'xdap/codegen')!r}])
        m = importlib.util.module_from_spec(spec)
        sys.modules["xdap_codegen"] = m
        spec.loader.exec_module(m)
        c = m.load_config({str(EXAMPLES / 'add-kernels.cfg')!r})
        assert "PyInit_add_cpu" in m.generate_c(c)
        bad = [n for n in ("mpi4py", "xnd", "ndtypes", "gumath", "xdap", "numpy") if n in sys.modules]
        assert not bad, bad
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


BAD_SECTIONS = """
    [MODULE m]
    [KERNEL good]
    prototypes = double sq(double x);
    [KERNEL unknown_keys]
    prototypes = double sq2(double x);
    fortrans = x
    debugging = 1
    [KERNEL two_roles]
    prototypes = double dot(int n, const double *x, const double *y);
    input = x(n), y(n)
    inplace = x
    [KERNEL const_inplace]
    prototypes = void f(const double *x);
    inplace = x
"""


def test_a_config_builds_what_it_can_and_says_everything_at_once(tmp_path):
    config = load_config(cfg(tmp_path, BAD_SECTIONS))
    assert [k.name for k in config.kernels] == ["good"]
    assert len(config.refused) == 3
    got = "\n".join(config.refused)
    for needle in ("[KERNEL unknown_keys] debugging, fortrans: unknown keys",
                   "[KERNEL two_roles] inplace: 'x' already has the role 'input'",
                   "[KERNEL const_inplace] inplace: 'x' is const in void f(const double *x)"):
        assert needle in got, got
    with pytest.raises(ConfigError, match=r"3 section\(s\) refused \(strict\)") as e:
        load_config(cfg(tmp_path, BAD_SECTIONS), strict=True)
    assert str(e.value).count("[KERNEL") == 3
    nothing = BAD_SECTIONS.replace("[KERNEL good]\n    prototypes = double sq(double x);\n", "")
    with pytest.raises(ConfigError, match="no kernel can be built:\n"):
        load_config(cfg(tmp_path, nothing, "n.cfg"))


def test_kernel_build_lists_refused_sections_and_strict_fails(tmp_path):
    (tmp_path / "sq.h").write_text("double sq(double x);\ndouble sq2(double x);\n"
                                   "double dot(int n, const double *x, const double *y);\n"
                                   "void f(double x);\n")
    (tmp_path / "sq.c").write_text('#include "sq.h"\ndouble sq(double x) { return x * x; }\n'
                                   "double sq2(double x) { return x * x; }\n")
    text = BAD_SECTIONS.replace("[MODULE m]", "[MODULE xk_refused]\n    includes = sq.h\n"
                                "    sources = sq.c")
    path = cfg(tmp_path, text)
    run = [sys.executable, "-m", "xdap", "kernel", "build", str(path), "--out", str(tmp_path)]
    proc = subprocess.run(run, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "3 section(s) of k.cfg not built" in proc.stderr and "built " in proc.stdout
    assert list(tmp_path.glob("xk_refused*.so"))
    strict = subprocess.run(run[:-2] + ["--out", str(tmp_path / "s"), "--strict"],
                            capture_output=True, text=True)
    assert strict.returncode == 2 and "refused (strict)" in strict.stderr
    assert not list((tmp_path / "s").glob("*.so"))
