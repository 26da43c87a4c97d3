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

from pathlib import Path

from .config import Arg, KernelConfig, ModuleConfig, Variant
from .typemap import DTYPE_SIZE

CAPSULE_NAME = "xdap.gm_tbl_t"
_TEMPLATES = Path(__file__).with_name("templates")


def _template(name: str) -> str:
    """A C file of ``templates/``, copied into every generated module."""
    return (_TEMPLATES / name).read_text()




def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _fn(kernel: KernelConfig, index: int, what: str) -> str:
    return f"xk_{kernel.name}_{index}_{what}"


class _Slots:
    """gumath slot numbers of a variant's arguments (an argument both passed and
    returned has two)."""

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


def _slot(s: _Slots, a: Arg) -> int:
    """The slot the function works on: the output's for an output (and for
    input+output, after the caller's value is copied there), else the
    input's (inplace+output copies it to the output afterwards)."""
    return s.output[a.name] if a.role in ("output", "input+output") else s.input[a.name]


def _private(a: Arg) -> bool:
    """An input passed through a non-const pointer: the function may write
    it, so it gets a private copy (the caller's data stays as it was)."""
    return a.role == "input" and a.pointer and not a.const


def _elementwise_body(v: Variant, s: _Slots, elem, indent: str) -> list:
    """Statements applying the function to element i; elem(slot) is an lvalue."""
    lines = []
    for a in v.args:
        if a.role == "input+output":
            lines.append(f"{elem(s.output[a.name])} = {elem(s.input[a.name])};")
        elif _private(a):
            lines.append(f"{a.ctype} t_{a.name} = {elem(s.input[a.name])};")

    def pointer(a: Arg) -> str:
        return f"&t_{a.name}" if _private(a) else f"&{elem(_slot(s, a))}"

    call = _call(v, lambda a: elem(_slot(s, a)), pointer)
    if v.ret is not None:
        lines.append(f"{elem(s.output['return'])} = {call};")
    else:
        lines.append(f"{call};")
    for a in v.args:
        if a.role == "inplace+output":
            lines.append(f"{elem(s.output[a.name])} = {elem(s.input[a.name])};")
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


def _copies_to_outputs(v: Variant, s: _Slots, role: str) -> list:
    """C statements copying each ``role`` argument's input slot to its
    output slot (whole buffers for arrays)."""
    out = []
    for a in v.args:
        if a.role != role:
            continue
        i_, o_ = s.input[a.name], s.output[a.name]
        if a.is_array:
            out.append(f"    memcpy(b{o_}.data, b{i_}.data, (size_t)(b{o_}.nelem * b{o_}.itemsize));")
        else:
            out.append(f"    *({a.ctype} *)stack[{o_}].ptr = *({a.ctype} *)stack[{i_}].ptr;")
    return out


def _emit_array_xnd(kernel: KernelConfig, i: int, v: Variant) -> str:
    from .config import check_hide_expr
    s = _Slots(v)
    array_slots = []  # (slot, arg, fill, put, private copy)
    for a in v.inputs:
        if a.is_array:
            array_slots.append((s.input[a.name], a, True,
                                a.role in ("inplace", "inplace+output"), _private(a)))
    for a in v.outputs:
        if a.is_array:
            array_slots.append((s.output[a.name], a, False, True, False))
    out = [f"/* {v.prototype.c_declaration()}: Xnd kernel on whole arrays. */",
           "static int",
           f"{_fn(kernel, i, 'xnd')}(xnd_t stack[], ndt_context_t *ctx)",
           "{",
           "    int ret = -1;"]
    for k, a, *_ in array_slots:
        out.append(f"    xdap_buf_t b{k};")
    for k, a, *_ in array_slots:
        out.append(f"    b{k}.copied = false;")
    for k, a, fill, _, private in array_slots:
        out += [f"    if (xdap_buf_get(&b{k}, &stack[{k}], {len(a.dims)}, (int64_t)sizeof({a.ctype}), "
                f"{'true' if fill else 'false'}, {'true' if private else 'false'}, ctx) < 0) {{",
                "        goto done;", "    }"]
    # Arguments sharing a dimension name must agree; the signature ensures
    # it for fixed dims, not for ragged rows (var).
    first = {}
    for k, a, *_ in array_slots:
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
    out += _copies_to_outputs(v, s, "input+output")      # the caller's value in
    out.append("    {")
    for a in v.args:
        if a.role in ("input", "input+output") and not a.pointer:
            out.append(f"        const {a.ctype} v_{a.name} = *(const {a.ctype} *)stack[{_slot(s, a)}].ptr;")
        elif _private(a) and not a.is_array:
            out.append(f"        {a.ctype} t_{a.name} = *(const {a.ctype} *)stack[{s.input[a.name]}].ptr;")
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

    def pointer(a):
        if a.is_array:
            return f"({a.ctype} *)b{_slot(s, a)}.data"
        if _private(a):
            return f"&t_{a.name}"
        return f"({a.ctype} *)stack[{_slot(s, a)}].ptr"

    call = _call(v, lambda a: f"v_{a.name}", pointer)
    if v.ret is not None:
        out.append(f"        *({v.ret.ctype} *)stack[{s.output['return']}].ptr = {call};")
    else:
        out.append(f"        {call};")
    out.append("    }")
    out += _copies_to_outputs(v, s, "inplace+output")    # written in place: returned too
    for k, a, _, put, _ in array_slots:
        if put:
            out.append(f"    xdap_buf_put(&b{k});")
    out += ["    ret = 0;", "", "done:"]
    for k, a, *_ in array_slots:
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
    out.append(_template("prelude.c"))
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
    out.append(_template("module.c")        # the doc last: it is user text
               .replace("@MODULE_NAME@", _c_string(mod))
               .replace("@CAPSULE@", _c_string(CAPSULE_NAME))
               .replace("@MODULE@", mod)
               .replace("@MODULE_DOC@", _c_string(_module_doc(config, rows))))
    return "\n".join(out)
