"""Emit the C source of a gumath kernel module from a validated config.

What maps to what (gumath 0.2.0dev3):

* every prototype of a ``[KERNEL name]`` becomes one or more kernel sets of
  the gumath function ``name`` -- one per ellipsis (``...`` -> ``... * T``,
  xndtools' ``var...`` -> ``D... * T``, ``none`` -> ``T``);
* an elementwise prototype (all arguments single values) gets a Strided
  loop (``int f(char **args, intptr_t *dimensions, intptr_t *steps, void *)``,
  with a contiguous fast path gcc vectorises) and a vectorised Xnd kernel
  that hands each innermost fixed or var slice to the same loop;
* a prototype with array arguments (``x(n)``) gets an Xnd kernel that passes
  contiguous buffers to the C function (copying strided views in and out);
* the C and Fortran slots stay NULL: dev3 cannot apply them.

The module keeps one ``gm_tbl_t`` for its lifetime, exposes the functions
with ``Gumath_AddFunctions`` and the table as the capsule ``_table`` (name
``"xdap.gm_tbl_t"``).

>>> from xdap.codegen.config import parse_config
>>> src = generate_c(parse_config('''
... [MODULE m]
... [KERNEL twice]
... prototypes = double twice(double x);
... '''))
>>> 'PyInit_m' in src and '"... * float64 -> ... * float64"' in src
True
"""
from __future__ import annotations

from .config import Arg, KernelConfig, ModuleConfig, Variant
from .typemap import DTYPE_SIZE

CAPSULE_NAME = "xdap.gm_tbl_t"

_PRELUDE = r"""
/* Helpers shared by the generated kernels. */

/* View one argument of a vectorised Xnd call as a flat 1-D slice: its first
   element, its length and its byte step (0 for a single value). */
static GM_UNUSED int
xdap_slice(const xnd_t *x, char **ptr, intptr_t *n, intptr_t *step, ndt_context_t *ctx)
{
    const ndt_t *t = x->type;

    if (t->ndim == 0) {
        *ptr = x->ptr;
        *n = 1;
        *step = 0;
        return 0;
    }
    if (t->ndim == 1 && t->tag == FixedDim) {
        const int64_t itemsize = t->Concrete.FixedDim.itemsize;
        *ptr = x->ptr + x->index * itemsize;
        *n = (intptr_t)t->FixedDim.shape;
        *step = (intptr_t)(t->Concrete.FixedDim.step * itemsize);
        return 0;
    }
    if (t->ndim == 1 && t->tag == VarDim) {
        int64_t start, vstep;
        const int64_t shape = ndt_var_indices(&start, &vstep, t, x->index, ctx);
        const int64_t itemsize = t->Concrete.VarDim.itemsize;
        if (shape < 0) {
            return -1;
        }
        *ptr = x->ptr + start * itemsize;
        *n = (intptr_t)shape;
        *step = (intptr_t)(vstep * itemsize);
        return 0;
    }
    ndt_err_format(ctx, NDT_TypeError, "xdap kernel: expected a value or a 1-D slice");
    return -1;
}

/* Collect the slices of a vectorised Xnd call; single values broadcast. */
static GM_UNUSED int
xdap_slices(xnd_t stack[], int nargs, char **args, intptr_t *n, intptr_t *steps,
            ndt_context_t *ctx)
{
    intptr_t len = 1;

    *n = -1;
    for (int k = 0; k < nargs; k++) {
        if (xdap_slice(&stack[k], &args[k], &len, &steps[k], ctx) < 0) {
            return -1;
        }
        if (stack[k].type->ndim == 0) {
            continue;
        }
        if (*n < 0) {
            *n = len;
        }
        else if (len != *n) {
            ndt_err_format(ctx, NDT_ValueError, "xdap kernel: arguments have different lengths");
            return -1;
        }
    }
    if (*n < 0) {
        *n = 1;
    }
    return 0;
}

/* An array argument handed to a C function: C-contiguous data, copied from
   (and back to) the xnd view only when the view is strided. */
typedef struct {
    char *data;
    char *base;
    int ndim;
    int64_t itemsize;
    int64_t nelem;
    int64_t shape[NDT_MAX_DIM];
    int64_t step[NDT_MAX_DIM];
    bool copied;
} xdap_buf_t;

static GM_UNUSED void
xdap_buf_copy(xdap_buf_t *b, bool to_view)
{
    int64_t idx[NDT_MAX_DIM] = {0};
    char *flat = b->data;

    if (b->nelem == 0) {
        return;
    }
    for (;;) {
        char *p = b->base;
        for (int d = 0; d < b->ndim; d++) {
            p += idx[d] * b->step[d];
        }
        if (to_view) {
            memcpy(p, flat, (size_t)b->itemsize);
        }
        else {
            memcpy(flat, p, (size_t)b->itemsize);
        }
        flat += b->itemsize;
        int d = b->ndim - 1;
        while (d >= 0 && ++idx[d] == b->shape[d]) {
            idx[d] = 0;
            d--;
        }
        if (d < 0) {
            return;
        }
    }
}

static GM_UNUSED int
xdap_buf_get(xdap_buf_t *b, const xnd_t *x, int ndim, int64_t itemsize, bool fill,
             ndt_context_t *ctx)
{
    const ndt_t *t = x->type;
    int64_t expected = itemsize;
    bool contiguous = true;

    b->copied = false;
    b->data = NULL;
    b->ndim = ndim;
    b->itemsize = itemsize;
    b->nelem = 1;
    b->base = x->ptr + x->index * itemsize;
    if (ndim == 1 && t->tag == VarDim) {   /* one ragged row */
        int64_t start, vstep;
        const int64_t shape = ndt_var_indices(&start, &vstep, t, x->index, ctx);
        if (shape < 0) {
            return -1;
        }
        b->base = x->ptr + start * itemsize;
        b->shape[0] = shape;
        b->step[0] = vstep * itemsize;
        b->nelem = shape;
        t = t->VarDim.type;
    }
    else for (int d = 0; d < ndim; d++) {
        if (t->tag != FixedDim) {
            ndt_err_format(ctx, NDT_TypeError,
                           "xdap kernel: array arguments need fixed dimensions");
            return -1;
        }
        b->shape[d] = t->FixedDim.shape;
        b->step[d] = t->Concrete.FixedDim.step * itemsize;
        b->nelem *= b->shape[d];
        t = t->FixedDim.type;
    }
    for (int d = ndim - 1; d >= 0; d--) {
        if (b->shape[d] > 1 && b->step[d] != expected) {
            contiguous = false;
        }
        expected *= b->shape[d];
    }
    if (contiguous) {
        b->data = b->base;
        return 0;
    }
    b->data = malloc((size_t)(b->nelem > 0 ? b->nelem * itemsize : 1));
    if (b->data == NULL) {
        ndt_err_format(ctx, NDT_MemoryError, "out of memory");
        return -1;
    }
    b->copied = true;
    if (fill) {
        xdap_buf_copy(b, false);
    }
    return 0;
}

static GM_UNUSED void
xdap_buf_put(xdap_buf_t *b)
{
    if (b->copied) {
        xdap_buf_copy(b, true);
    }
}

static GM_UNUSED void
xdap_buf_free(xdap_buf_t *b)
{
    if (b->copied) {
        free(b->data);
        b->copied = false;
    }
}
"""


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _fn(kernel: KernelConfig, index: int, what: str) -> str:
    return f"xk_{kernel.name}_{index}_{what}"


class _Slots:
    """gumath slot numbers of a variant's arguments (inout args have two)."""

    def __init__(self, v: Variant):
        self.nin = len(v.inputs)
        self.input = {a.name: i for i, a in enumerate(v.inputs)}
        self.output = {a.name: self.nin + i for i, a in enumerate(v.outputs)}
        self.ctype = {}
        for a in v.inputs:
            self.ctype[self.input[a.name]] = a.ctype
        for a in v.outputs:
            self.ctype[self.output[a.name]] = a.ctype
        self.nargs = self.nin + len(v.outputs)


def _call(v: Variant, value, pointer) -> str:
    """The C call of the variant's function; value(arg)/pointer(arg) give
    the expressions passed for by-value and by-pointer parameters."""
    params = ", ".join(pointer(a) if a.pointer else value(a) for a in v.args)
    return f"{v.prototype.name}({params})"


def _elementwise_body(v: Variant, s: _Slots, elem, indent: str) -> list:
    """Statements applying the function to element i; elem(slot) is an lvalue."""
    lines = []
    for a in v.args:
        if a.role == "inout":
            lines.append(f"{elem(s.output[a.name])} = {elem(s.input[a.name])};")

    def slot(a: Arg) -> int:
        return s.output[a.name] if a.role in ("output", "inout") else s.input[a.name]

    call = _call(v, lambda a: elem(slot(a)), lambda a: f"&{elem(slot(a))}")
    if v.ret is not None:
        lines.append(f"{elem(s.output['return'])} = {call};")
    else:
        lines.append(f"{call};")
    return [indent + line for line in lines]


def _emit_strided(kernel: KernelConfig, i: int, v: Variant) -> str:
    s = _Slots(v)
    name = _fn(kernel, i, "strided")
    readonly = {s.input[a.name] for a in v.inputs if a.role == "input"}
    out = [f"/* {v.prototype.c_declaration()}: elementwise loop (NumPy ufunc convention). */",
           "static int",
           f"{name}(char **args, intptr_t *dimensions, intptr_t *steps, void *data)",
           "{",
           "    const intptr_t n = dimensions[0];",
           "    (void)data;"]

    def contiguous_path(scalar_slots):
        conds = [f"steps[{k}] == 0" if k in scalar_slots else f"steps[{k}] == (intptr_t)sizeof({s.ctype[k]})"
                 for k in range(s.nargs)]
        comment = ("all arguments contiguous" if not scalar_slots else
                   f"argument {sorted(scalar_slots)[0]} a single value, the others contiguous")
        body = [f"    if ({' && '.join(conds)}) {{  /* {comment} */"]
        for k in range(s.nargs):
            if k in scalar_slots:
                body.append(f"        const {s.ctype[k]} s{k} = *(const {s.ctype[k]} *)args[{k}];")
            else:
                const = "const " if k in readonly else ""
                body.append(f"        {const}{s.ctype[k]} *restrict p{k} = ({const}{s.ctype[k]} *)args[{k}];")
        body.append("        for (intptr_t i = 0; i < n; i++) {")
        body += _elementwise_body(v, s, lambda k: f"s{k}" if k in scalar_slots else f"p{k}[i]", " " * 12)
        body += ["        }", "        return 0;", "    }"]
        return body

    out += contiguous_path(set())
    # A single-value operand (Python scalar broadcast) with contiguous others:
    # only for functions whose inputs are all passed by value.
    if s.nin >= 2 and all(a.role == "input" and not a.pointer for a in v.inputs):
        for k in range(s.nin):
            out += contiguous_path({k})
    out += ["    for (intptr_t i = 0; i < n; i++) {  /* general strides */"]
    out += _elementwise_body(
        v, s, lambda k: f"(*({s.ctype[k]} *)(args[{k}] + i * steps[{k}]))", " " * 8)
    out += ["    }", "    return 0;", "}", ""]
    return "\n".join(out)


def _emit_scalar_xnd(kernel: KernelConfig, i: int, v: Variant) -> str:
    s = _Slots(v)
    return "\n".join([
        f"/* {v.prototype.c_declaration()}: vectorised Xnd kernel; each innermost",
        "   fixed or var slice goes through the elementwise loop. */",
        "static int",
        f"{_fn(kernel, i, 'xnd')}(xnd_t stack[], ndt_context_t *ctx)",
        "{",
        f"    char *args[{s.nargs}];",
        f"    intptr_t steps[{s.nargs}];",
        "    intptr_t n;",
        f"    if (xdap_slices(stack, {s.nargs}, args, &n, steps, ctx) < 0) {{",
        "        return -1;",
        "    }",
        f"    return {_fn(kernel, i, 'strided')}(args, &n, steps, NULL);",
        "}", ""])


# integer dtypes narrower than the int64 lengths that hidden arguments come from
_NARROW_INTS = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _hide_c(expr_tokens, s) -> str:
    parts = []
    for t in expr_tokens:
        if t[0] == "len":
            parts.append(f"b{s.input[t[1]]}.shape[{t[2]}]")
        elif t[0] == "name":
            parts.append(f"v_{t[1]}")
        else:
            parts.append(t[1])
    return " ".join(parts)


def _emit_array_xnd(kernel: KernelConfig, i: int, v: Variant) -> str:
    from .config import check_hide_expr
    s = _Slots(v)
    array_slots = []  # (slot, arg, fill, put)
    for a in v.inputs:
        if a.is_array:
            array_slots.append((s.input[a.name], a, True, a.role == "inplace"))
    for a in v.outputs:
        if a.is_array:
            array_slots.append((s.output[a.name], a, False, True))
    out = [f"/* {v.prototype.c_declaration()}: Xnd kernel on whole arrays. */",
           "static int",
           f"{_fn(kernel, i, 'xnd')}(xnd_t stack[], ndt_context_t *ctx)",
           "{",
           "    int ret = -1;"]
    for k, a, _, _ in array_slots:
        out.append(f"    xdap_buf_t b{k};")
    for k, a, _, _ in array_slots:
        out.append(f"    b{k}.copied = false;")
    for k, a, fill, _ in array_slots:
        out += [f"    if (xdap_buf_get(&b{k}, &stack[{k}], {len(a.dims)}, (int64_t)sizeof({a.ctype}), "
                f"{'true' if fill else 'false'}, ctx) < 0) {{",
                "        goto done;", "    }"]
    # Arguments sharing a dimension name must agree; the signature ensures
    # it for fixed dims, not for ragged rows (var).
    first = {}
    for k, a, _, _ in array_slots:
        for axis, d in enumerate(a.dims):
            if d.isdigit():
                continue
            if d not in first:
                first[d] = (k, axis, a.name)
                continue
            k0, axis0, name0 = first[d]
            out += [f"    if (b{k}.shape[{axis}] != b{k0}.shape[{axis0}]) {{",
                    f"        ndt_err_format(ctx, NDT_ValueError, \"{kernel.name}: {a.name} and {name0} "
                    f"differ in dimension {d}\");",
                    "        goto done;", "    }"]
    for a in v.args:
        if a.role == "inout" and a.is_array:
            i_, o_ = s.input[a.name], s.output[a.name]
            out.append(f"    memcpy(b{o_}.data, b{i_}.data, (size_t)(b{o_}.nelem * b{o_}.itemsize));")
        elif a.role == "inout":
            i_, o_ = s.input[a.name], s.output[a.name]
            out.append(f"    *({a.ctype} *)stack[{o_}].ptr = *({a.ctype} *)stack[{i_}].ptr;")
    out.append("    {")
    for a in v.args:
        if a.role == "input" and not a.pointer:
            out.append(f"        const {a.ctype} v_{a.name} = *(const {a.ctype} *)stack[{s.input[a.name]}].ptr;")
        elif a.role == "hide" and a.dtype in _NARROW_INTS:
            # lengths are int64: a value the C parameter cannot hold (e.g.
            # 2**31 items for an `int n`) is an error, not a truncated length
            expr = _hide_c(check_hide_expr(a.hide_expr), s)
            out += [f"        const int64_t h_{a.name} = (int64_t)({expr});  /* {a.name} = {a.hide_expr} */",
                    f"        if ((int64_t)({a.ctype})h_{a.name} != h_{a.name}) {{",
                    f"            ndt_err_format(ctx, NDT_ValueError, \"{kernel.name}: {a.name} = "
                    f"{a.hide_expr.replace('%', '%%')} is %lld, out of range for C type {a.ctype}\", (long long)h_{a.name});",
                    "            goto done;", "        }",
                    f"        const {a.ctype} v_{a.name} = ({a.ctype})h_{a.name};"]
        elif a.role == "hide":
            expr = _hide_c(check_hide_expr(a.hide_expr), s)
            out.append(f"        const {a.ctype} v_{a.name} = ({a.ctype})({expr});  /* {a.name} = {a.hide_expr} */")

    def slot(a):
        return s.output[a.name] if a.role in ("output", "inout") else s.input[a.name]

    def pointer(a):
        if a.is_array:
            return f"({a.ctype} *)b{slot(a)}.data"
        return f"({a.ctype} *)stack[{slot(a)}].ptr"

    call = _call(v, lambda a: f"v_{a.name}", pointer)
    if v.ret is not None:
        out.append(f"        *({v.ret.ctype} *)stack[{s.output['return']}].ptr = {call};")
    else:
        out.append(f"        {call};")
    out.append("    }")
    for k, a, _, put in array_slots:
        if put:
            out.append(f"    xdap_buf_put(&b{k});")
    out += ["    ret = 0;", "", "done:"]
    for k, a, _, _ in array_slots:
        out.append(f"    xdap_buf_free(&b{k});")
    out += ["    (void)ctx;", "    return ret;", "}", ""]
    return "\n".join(out)


def kernel_table(config: ModuleConfig):
    """The module's kernel sets in registration order (gumath selects the
    first whose signature matches): for each ellipsis, each prototype.

    Returns (kernel name, signature, vectorize, xnd function|None,
    strided function|None) tuples.
    """
    rows = []
    for kernel in config.kernels:
        for ell in kernel.ellipses:
            for i, v in enumerate(kernel.variants):
                if v.is_scalar:
                    rows.append((kernel.name, v.signature(ell), True,
                                 _fn(kernel, i, "xnd"), _fn(kernel, i, "strided")))
                else:
                    rows.append((kernel.name, v.signature(ell), False, _fn(kernel, i, "xnd"), None))
    return rows


def _module_doc(config: ModuleConfig, rows) -> str:
    lines = [f"gumath kernels generated by xdap.codegen from {config.path.name}.", ""]
    for kernel in config.kernels:
        lines.append(f"{kernel.name}: {kernel.description}" if kernel.description else kernel.name)
        for v in kernel.variants:
            lines.append(f"    {v.prototype.c_declaration()}")
        for r in rows:
            if r[0] == kernel.name:
                lines.append(f"    | {r[1]}")
    return "\n".join(lines)


def generate_c(config: ModuleConfig) -> str:
    """The C source of the extension module for a validated config."""
    out = [f"/* Generated by xdap.codegen from {config.path.name}; do not edit. */",
           "#define PY_SSIZE_T_CLEAN",
           "#include <Python.h>",
           "#include <stdbool.h>",
           "#include <stdint.h>",
           "#include <stdlib.h>",
           "#include <string.h>",
           "#if defined(__FAST_MATH__) && !defined(__STDC_IEC_559__)",
           "/* -ffast-math (which lets gcc call glibc's vector math, libmvec) drops",
           "   __STDC_IEC_559__, which ndtypes.h insists on; float and double are",
           "   still IEEE-754 in memory, which is all ndtypes needs. */",
           "#define __STDC_IEC_559__ 1",
           "#endif",
           '#include "ndtypes.h"',
           '#include "xnd.h"',
           '#include "gumath.h"',
           '#include "pygumath.h"']
    out += [f'#include "{h}"' if not h.startswith("<") else f"#include {h}" for h in config.includes]
    if config.header_code.strip():
        out += ["", "/* header_code */", config.header_code]
    if not config.includes:
        out += ["", "/* The wrapped functions (no includes given). */"]
        seen = set()
        for kernel in config.kernels:
            for v in kernel.variants:
                if v.prototype.name not in seen:
                    seen.add(v.prototype.name)
                    out.append(f"extern {v.prototype.c_declaration()};")
    # The memory layout of each argument is its dtype; the C type must match.
    sizes = {}
    for kernel in config.kernels:
        for v in kernel.variants:
            for a in v.args + ([v.ret] if v.ret else []):
                sizes[a.ctype] = (a.dtype, DTYPE_SIZE[a.dtype])
    out.append("")
    for ctype, (dtype, size) in sorted(sizes.items()):
        out.append(f'_Static_assert(sizeof({ctype}) == {size}, "typemap: C type {ctype} is not {dtype} '
                   f'({size} bytes)");')
    out.append(_PRELUDE)
    for kernel in config.kernels:
        for i, v in enumerate(kernel.variants):
            if v.is_scalar:
                out.append(_emit_strided(kernel, i, v))
                out.append(_emit_scalar_xnd(kernel, i, v))
            else:
                out.append(_emit_array_xnd(kernel, i, v))
    rows = kernel_table(config)
    out.append("static const gm_kernel_init_t xdap_kernels[] = {")
    for name, sig, vec, xnd, strided in rows:
        fields = [f".name = {_c_string(name)}", f".sig = {_c_string(sig)}",
                  f".vectorize = {'true' if vec else 'false'}"]
        if xnd:
            fields.append(f".Xnd = {xnd}")
        if strided:
            fields.append(f".Strided = {strided}")
        out.append("    { " + ", ".join(fields) + " },")
    out += ["    { .name = NULL, .sig = NULL }", "};", ""]
    mod = config.name
    out.append(f"""
/* The table lives as long as the process: the gufunc objects that
   Gumath_AddFunctions creates, and users of the _table capsule, point into it. */
static gm_tbl_t *xdap_table = NULL;

static struct PyModuleDef xdap_module = {{
    PyModuleDef_HEAD_INIT, {_c_string(mod)}, {_c_string(_module_doc(config, rows))}, -1, NULL,
    NULL, NULL, NULL, NULL
}};

PyMODINIT_FUNC
PyInit_{mod}(void)
{{
    NDT_STATIC_CONTEXT(ctx);
    PyObject *m = NULL;
    PyObject *capsule = NULL;

    if (import_gumath() < 0) {{
        return NULL;
    }}
    if (xdap_table == NULL) {{
        gm_tbl_t *tbl = gm_tbl_new(&ctx);
        if (tbl == NULL) {{
            PyErr_SetString(PyExc_MemoryError, ndt_context_msg(&ctx));
            ndt_err_clear(&ctx);
            return NULL;
        }}
        for (const gm_kernel_init_t *k = xdap_kernels; k->name != NULL; k++) {{
            if (gm_add_kernel(tbl, k, &ctx) < 0) {{
                PyErr_Format(PyExc_ValueError, "{mod}: cannot add kernel %s with signature '%s': %s",
                             k->name, k->sig, ndt_context_msg(&ctx));
                ndt_err_clear(&ctx);
                gm_tbl_del(tbl);
                return NULL;
            }}
        }}
        xdap_table = tbl;
    }}
    m = PyModule_Create(&xdap_module);
    if (m == NULL) {{
        return NULL;
    }}
    if (Gumath_AddFunctions(m, xdap_table) < 0) {{
        goto error;
    }}
    capsule = PyCapsule_New(xdap_table, {_c_string(CAPSULE_NAME)}, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_table", capsule) < 0) {{
        Py_XDECREF(capsule);
        goto error;
    }}
    return m;

error:
    Py_DECREF(m);
    return NULL;
}}
""")
    return "\n".join(out)
