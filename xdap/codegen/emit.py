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

import itertools
import json
from pathlib import Path

from .config import Arg, KernelConfig, ModuleConfig, Variant, check_hide_expr
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
    returned has two).  The numbering is the same whether the outputs are
    gumath outputs or, for a variant that ``allocates``, inplace arguments
    after the inputs: gumath's stack holds them in that order either way."""

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
        if v.placeholder:        # the unused uint8 argument gumath needs
            self.nargs = 1
            self.ctype[0] = "uint8_t"


def _call(v: Variant, value, pointer) -> str:
    """The C call of the variant's function; value(arg)/pointer(arg) give
    the expressions passed for by-value and by-pointer parameters."""
    params = ", ".join(pointer(a) if a.pointer else value(a) for a in v.args)
    return f"{v.prototype.name}({params})"


_FLOAT_CTYPES = ("float", "double")


def _expr_c(expr: str, arrays, ctypes) -> tuple:
    """A .cfg expression as checked C: ``(code, kind)``, ``kind`` "i"
    (int64 arithmetic) or "f" (double).  Names are the scalars' locals
    ``v_NAME`` (``ctypes[NAME]`` their C types); ``len(x, k)`` /
    ``ndim(x)`` come from ``arrays[x] = (length, ndim)``, ``length(k)`` the
    C expression of the array's length along k.  Integer ``+ - * / %``
    and negation go through the prelude's ``xdap_i_*`` (overflow and a
    zero divisor set ``xdap_bad``: an error, never a signal), float ``/``
    and ``%`` through ``xdap_f_*`` (a zero divisor likewise); the caller
    declares ``int xdap_bad = 0`` and checks it."""
    toks = check_hide_expr(expr)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take():
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    def as_f(code, kind):
        return code if kind == "f" else f"((double)({code}))"

    def binary(op, left, right):
        (a, ka), (b, kb) = left, right
        if ka == kb == "i":
            name = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}[op]
            return f"xdap_i_{name}({a}, {b}, &xdap_bad)", "i"
        a, b = as_f(a, ka), as_f(b, kb)
        if op == "/":
            return f"xdap_f_div({a}, {b}, &xdap_bad)", "f"
        if op == "%":
            return f"xdap_f_mod({a}, {b}, &xdap_bad)", "f"
        return f"(({a}) {op} ({b}))", "f"

    def atom():
        t = take()
        if t[0] == "len":
            return f"((int64_t)({arrays[t[1]][0](t[2])}))", "i"
        if t[0] == "ndim":
            return f"((int64_t){arrays[t[1]][1]})", "i"
        if t[0] == "name":
            return (f"((double)v_{t[1]})", "f") if ctypes.get(t[1]) in _FLOAT_CTYPES else \
                (f"((int64_t)v_{t[1]})", "i")
        if t[0] == "num":
            floating = any(c in t[1] for c in ".eE")
            return (f"({t[1]})", "f") if floating else (f"((int64_t){t[1]}LL)", "i")
        if t == ("op", "("):
            inner = sum_()
            take()                                # ")"
            return inner
        if t in (("op", "-"), ("op", "+")):
            code, kind = atom()
            if t[1] == "+":
                return code, kind
            return (f"xdap_i_neg({code}, &xdap_bad)", "i") if kind == "i" else \
                (f"(-({code}))", "f")
        raise ValueError(f"cannot read expression {expr!r}")

    def product():
        left = atom()
        while peek() in (("op", "*"), ("op", "/"), ("op", "%")):
            op = take()[1]
            left = binary(op, left, atom())
        return left

    def sum_():
        left = product()
        while peek() in (("op", "+"), ("op", "-")):
            op = take()[1]
            left = binary(op, left, product())
        return left

    return sum_()


def _checked(name: str, ctype: str, dtype: str, expr: str, arrays, ctypes, target: str,
             fail: list) -> list:
    """C statements giving ``target`` (of C type ``ctype``, dtype
    ``dtype``) the value of the expression ``expr`` for the argument
    ``name``, checked: a zero divisor, an integer overflow, or a value the
    type cannot hold (NaN or an infinity into an integer, 2**40 into an
    ``int``, -1 into an unsigned) runs the statements ``fail`` --
    ``RAISE`` among them is the error saying which, with the value --
    instead of the C that would trap or truncate."""
    code, kind = _expr_c(expr, arrays, ctypes)
    lines = ["{ int xdap_bad = 0;",
             f"  const {'int64_t' if kind == 'i' else 'double'} h = {code};"]
    if ctype in _FLOAT_CTYPES:
        lines.append(f"  if (!xdap_bad) {target} = ({ctype})h;")
    else:
        whole = "h" if kind == "i" else "(int64_t)h"
        if kind == "f":           # a double into an integer: whole and in int64's range first
            lines.append("  if (!xdap_bad && !(h >= -9223372036854775808.0 && "
                         "h < 9223372036854775808.0 && h == (double)(int64_t)h)) xdap_bad = 2;")
        if dtype.startswith("uint"):
            lines.append(f"  if (!xdap_bad && {whole} < 0) xdap_bad = 2;")
        if dtype not in ("int64", "uint64"):
            lines.append(f"  if (!xdap_bad && (int64_t)({ctype}){whole} != {whole}) xdap_bad = 2;")
        lines.append(f"  if (!xdap_bad) {target} = ({ctype}){whole};")
    shown = f"{name} = {expr}".replace("%", "%%")
    value = ("%lld", "(long long)h") if kind == "i" else ("%.17g", "h")
    raise_ = [f"if (xdap_bad == 1) ndt_err_format(ctx, NDT_ValueError, "
              f"{_c_string('%s: ' + shown + ' divides by zero or overflows')}, XDAP_KERNEL);",
              f"else ndt_err_format(ctx, NDT_ValueError, "
              f"{_c_string('%s: ' + shown + ' is ' + value[0] + ', not a value of C type ' + ctype)}"
              f", XDAP_KERNEL, {value[1]});"]
    lines.append("  if (xdap_bad) {")
    for f in fail:
        lines += ["      " + r for r in raise_] if f == "RAISE" else ["      " + f]
    lines.append("  } }")
    return lines


def _scalar_value(a: Arg, arrays, ctypes, fail) -> list:
    """Statements giving a scalar the caller does not pass its starting
    value ``v_NAME``: its expression (hide), its initial value, or zero."""
    expr = a.hide_expr if a.role == "hide" else a.default
    if expr is None:
        return [f"v_{a.name} = ({a.ctype})0;"]
    return _checked(a.name, a.ctype, a.dtype, expr, arrays, ctypes, f"v_{a.name}", fail)


# what a Strided loop says of an expression it refused (xdap/_apply.c says the same)
_EXPR_FAILED = ("a hidden or initial value's expression divides by zero, overflows or "
                "is out of range for its C type")

# what a checked expression's failure does in a kernel: the error, then out
_FAIL = ["RAISE", "goto done;"]


def _scalars_in(v: Variant, s: _Slots, elem, arrays, optional: bool, indent: str,
                na=None, fail=None) -> list:
    """Statements giving every scalar argument its local ``v_NAME`` before
    the call: passed ones from their slot (a missing item of a ``?T`` slot
    takes the initial value), then the others in prototype order -- every
    expression checked (``_checked``: an error, never a signal)."""
    ctypes = {a.name: a.ctype for a in v.args if not a.is_array}
    fail = _FAIL if fail is None else fail
    lines = []
    for a in v.args:
        if a.is_array or not a.passed:
            continue
        value = elem(s.input[a.name])
        if optional and a.optional:
            lines.append(f"if ({na(s.input[a.name])}) {{")
            lines += ["    " + x for x in _checked(a.name, a.ctype, a.dtype, a.default or "0",
                                                   arrays, ctypes, f"v_{a.name}", fail)]
            lines += ["}", f"else v_{a.name} = {value};"]
        else:
            lines.append(f"v_{a.name} = {value};")
    for a in v.args:
        if a.is_array or a.passed:
            continue
        lines += _scalar_value(a, arrays, ctypes, fail)
    return [indent + line for line in lines]


def _scalars_out(v: Variant, s: _Slots, elem, optional: bool, indent: str, valid=None) -> list:
    """Statements after the call: scalars written in place go back to the
    caller's slot (a ``?T`` item becomes valid), returned ones to theirs."""
    lines = []
    for a in v.args:
        if a.is_array:
            continue
        if a.role in ("inplace", "inplace+output"):
            lines.append(f"{elem(s.input[a.name])} = v_{a.name};")
            if optional and a.optional:
                lines.append(f"{valid(s.input[a.name])};")
        if a.returned:
            lines.append(f"{elem(s.output[a.name])} = v_{a.name};")
    return [indent + line for line in lines]


def _scalar_call(v: Variant, s: _Slots, elem, array_ptr, indent: str) -> list:
    def pointer(a: Arg) -> str:
        return array_ptr(a) if a.is_array else f"&v_{a.name}"

    call = _call(v, lambda a: f"v_{a.name}", pointer)
    if v.ret is not None:
        return [f"{indent}{elem(s.output['return'])} = {call};"]
    return [f"{indent}{call};"]


def _declare_scalars(v: Variant, indent: str) -> list:
    return [f"{indent}{a.ctype} v_{a.name};" for a in v.args if not a.is_array]


def _elementwise_body(v: Variant, s: _Slots, elem, indent: str) -> list:
    """Statements applying the function to element i; elem(slot) is an lvalue."""
    lines = [indent + "{"]
    lines += _declare_scalars(v, indent + "    ")
    # a Strided loop has no error context: a refused expression returns
    # EXPR_FAILED, which the Xnd kernel and xdap._apply turn into the error
    lines += _scalars_in(v, s, elem, {}, False, indent + "    ",
                         fail=["return XDAP_EXPR_FAILED;"])
    lines += _scalar_call(v, s, elem, None, indent + "    ")
    lines += _scalars_out(v, s, elem, False, indent + "    ")
    return lines + [indent + "}"]


def _emit_strided(kernel: KernelConfig, i: int, v: Variant) -> str:
    s = _Slots(v)
    name = _fn(kernel, i, "strided")
    readonly = {s.input[a.name] for a in v.inputs if a.role in ("input", "input+output")}
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
        body = [f"    if ({' && '.join(conds) or '1'}) {{  /* {comment} */"]
        for k in range(s.nargs):
            if k in scalar_slots:
                body.append(f"        const {s.ctype[k]} s{k} = *(const {s.ctype[k]} *)args[{k}];")
            elif not v.placeholder:
                const = "const " if k in readonly else ""
                body.append(f"        {const}{s.ctype[k]} *restrict p{k} = ({const}{s.ctype[k]} *)args[{k}];")
        body.append("        for (intptr_t i = 0; i < n; i++) {")
        body += _elementwise_body(v, s, lambda k: f"s{k}" if k in scalar_slots else f"p{k}[i]", " " * 12)
        body += ["        }", "        return 0;", "    }"]
        return body

    out += contiguous_path(set())
    # A single-value operand (Python scalar broadcast) with contiguous others:
    # only for functions whose inputs are all read-only.
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
        f"    if ({_fn(kernel, i, 'strided')}(args, &n, steps, NULL) == XDAP_EXPR_FAILED) {{",
        f"        ndt_err_format(ctx, NDT_ValueError, \"%s: {_EXPR_FAILED}\", "
        f"\"{kernel.name}\");",
        "        return -1;",
        "    }",
        "    return 0;",
        "}", ""])


def _dim_c(dn: str, a: Arg, first) -> str:
    """A dimension's value in C: a number, a scalar's local, or the length
    of the first passed array that has it."""
    if dn.isdigit():
        return dn
    if dn in first:
        k, axis, _ = first[dn]
        return f"b{k}.shape[{axis}]"
    return f"(int64_t)v_{dn}"


def _emit_general_xnd(kernel: KernelConfig, i: int, v: Variant, optional: bool) -> str:
    """An Xnd kernel for one call of the C function: whole arrays as
    contiguous buffers (the caller's own when the layout allows), scalars as
    locals; ``optional``: the slots of passed scalars with an initial value
    are ``?T`` and a missing item takes that value."""
    s = _Slots(v)
    what = "xnd_opt" if optional else "xnd"
    # (buffer number, arg, source slot, fill, put back)
    passed, outputs, hidden = [], [], []
    for a in v.args:
        if not a.is_array:
            continue
        if a.role in ("input", "inplace", "inplace+output"):
            passed.append((s.input[a.name], a, True, a.role != "input"))
        if a.role == "input+output":
            passed.append((s.input[a.name], a, True, False))
        if a.returned:
            outputs.append((s.output[a.name], a, False, True))
        if a.role == "hide":
            hidden.append(a)
    buffers = passed + outputs
    # the buffer the function works on
    work = {a.name: (s.output[a.name] if a.role in ("output", "input+output") else s.input[a.name])
            for a in v.args if a.is_array and a.role != "hide"}
    arrays = {a.name: (lambda axis, k=s.input[a.name]: f"b{k}.shape[{axis}]", len(a.dims))
              for a in v.args if a.is_array and a.passed}
    out = [f"/* {v.prototype.c_declaration()}: Xnd kernel on whole arrays"
           + (", ?T slots for the initial values. */" if optional else ". */"),
           "static int",
           f"{_fn(kernel, i, what)}(xnd_t stack[], ndt_context_t *ctx)",
           "{",
           f"#define XDAP_KERNEL \"{kernel.name}\"",
           "    int ret = -1;"]
    out += [f"    xdap_buf_t b{k};" for k, *_ in buffers]
    out += [f"    {a.ctype} *h_{a.name} = NULL;" for a in hidden]
    out += _declare_scalars(v, "    ")
    out += [f"    b{k}.copied = false;" for k, *_ in buffers]
    if kernel.debug:
        out.append(f"    fprintf(stderr, \"xdap kernel {kernel.name}: {v.prototype.c_declaration()}\\n\");")
    for k, a, fill, _ in buffers:
        strict = a.strict and a.passed and k == s.input.get(a.name)
        out += [f"    if (xdap_buf_get(&b{k}, &stack[{k}], {len(a.dims)}, (int64_t)sizeof({a.ctype}), "
                f"{'true' if fill else 'false'}, {'true' if a.fortran else 'false'}, "
                f"{'true' if strict else 'false'}, XDAP_KERNEL, \"{a.name}\", ctx) < 0) {{",
                "        goto done;", "    }"]
    # Arguments sharing a dimension name must agree; the signature ensures
    # it for fixed dims, not for ragged rows (var) or an output passed in.
    first = {}
    for k, a, *_ in buffers:
        for axis, dn in enumerate(a.dims):
            if dn.isdigit():
                continue
            if dn not in first:
                first[dn] = (k, axis, a.name)
                continue
            k0, axis0, name0 = first[dn]
            out += [f"    if (b{k}.shape[{axis}] != b{k0}.shape[{axis0}]) {{",
                    f"        ndt_err_format(ctx, NDT_ValueError, \"%s: {a.name} and {name0} "
                    f"differ in dimension {dn}\", XDAP_KERNEL);",
                    "        goto done;", "    }"]
    out += _scalars_in(v, s, lambda k: f"*({s.ctype[k]} *)stack[{k}].ptr", arrays, optional, "    ",
                       na=lambda k: f"xnd_is_na(&stack[{k}])")
    # A dimension that is a scalar's value: the arrays passed in must have it
    for k, a, *_ in buffers:
        for axis, dn in enumerate(a.dims):
            if not dn.isdigit() and first.get(dn, (k,))[0] == k and first[dn][1] == axis \
                    and dn in {b.name for b in v.args if not b.is_array}:
                out += [f"    if (b{k}.shape[{axis}] != (int64_t)v_{dn}) {{",
                        f"        ndt_err_format(ctx, NDT_ValueError, \"%s: {a.name} has %lld items "
                        f"along dimension {dn}, but {dn} is %lld\", XDAP_KERNEL, "
                        f"(long long)b{k}.shape[{axis}], (long long)v_{dn});",
                        "        goto done;", "    }"]
    for a in hidden:
        size = " * ".join(f"({_dim_c(dn, a, first)})" for dn in a.dims)
        out += ["    {",
                f"        const int64_t n_{a.name} = {size};",
                f"        if (n_{a.name} < 0) {{",
                f"            ndt_err_format(ctx, NDT_ValueError, \"%s: hidden array {a.name} would have "
                f"%lld items\", XDAP_KERNEL, (long long)n_{a.name});",
                "            goto done;", "        }",
                f"        h_{a.name} = calloc((size_t)(n_{a.name} > 0 ? n_{a.name} : 1), sizeof({a.ctype}));",
                f"        if (h_{a.name} == NULL) {{",
                "            ndt_err_format(ctx, NDT_MemoryError, \"out of memory\");",
                "            goto done;", "        }", "    }"]
    out += _copies(v, s, "input+output")      # the caller's value in

    def array_ptr(a: Arg) -> str:
        return f"h_{a.name}" if a.role == "hide" else f"({a.ctype} *)b{work[a.name]}.data"

    out += _scalar_call(v, s, lambda k: f"*({s.ctype[k]} *)stack[{k}].ptr", array_ptr, "    ")
    out += _scalars_out(v, s, lambda k: f"*({s.ctype[k]} *)stack[{k}].ptr", optional, "    ",
                        valid=lambda k: f"xnd_set_valid(&stack[{k}])")
    out += _copies(v, s, "inplace+output")    # written in place: returned too
    for k, a, _, put in buffers:
        if put:
            out.append(f"    xdap_buf_put(&b{k});")
    out += ["    ret = 0;", "    goto done;  /* (the label is used by every kernel) */", "", "done:"]
    out += [f"    xdap_buf_free(&b{k});" for k, *_ in buffers]
    out += [f"    free(h_{a.name});" for a in hidden]
    out += ["    (void)ctx;", "    return ret;", "#undef XDAP_KERNEL", "}", ""]
    return "\n".join(out)


def _copies(v: Variant, s: _Slots, role: str) -> list:
    """C statements copying each ``role`` array's input to its output slot
    (both C-ordered buffers of the same shape)."""
    out = []
    for a in v.args:
        if a.role != role or not a.is_array:
            continue
        i_, o_ = s.input[a.name], s.output[a.name]
        out.append(f"    memcpy(b{o_}.data, b{i_}.data, (size_t)(b{o_}.nelem * b{o_}.itemsize));")
    return out


def kernel_table(config: ModuleConfig):
    """The module's kernel sets in registration order (gumath selects the
    first whose signature matches): for each ellipsis, each prototype --
    and after a prototype with initial values its ``?T`` twin.

    Returns (kernel name, signature, vectorize, xnd function|None,
    strided function|None) tuples.
    """
    rows = []
    for kernel in config.kernels:
        for ell in kernel.ellipses:
            for i, v in enumerate(kernel.variants):
                if v.is_scalar:
                    # a loop whose scalars come from checked expressions has no error
                    # context to say why it refuses one: gumath then calls the Xnd kernel,
                    # which wraps the loop and says it
                    rows.append((kernel.name, v.signature(ell), True, _fn(kernel, i, "xnd"),
                                 None if _may_refuse(v) else _fn(kernel, i, "strided")))
                else:
                    if ell == "...":
                        for mask in _batch_masks(v):
                            rows.append((kernel.name, v.batched_signature(mask), False,
                                         _fn(kernel, i, "batch" + "".join(map(str, mask))), None))
                    rows.append((kernel.name, v.signature(ell), False, _fn(kernel, i, "xnd"), None))
                if v.optional:
                    rows.append((kernel.name, v.signature(ell, optional=True), False,
                                 _fn(kernel, i, "xnd_opt"), None))
    return rows


def _may_refuse(v: Variant) -> bool:
    """Whether an elementwise variant computes a scalar from an expression
    (hidden, or an initial value): its loop may then refuse a value."""
    return any(not a.is_array and ((not a.passed and (a.hide_expr or a.default) is not None) or
                                   (a.passed and a.optional and a.default is not None))
               for a in v.args)


def _batch_masks(v: Variant):
    """The batched sets of a variant: every non-empty choice of batched
    inputs (a stack of matrices times one vector, or a stack of each)."""
    slots = v.batchable()
    for size in range(len(slots), 0, -1):
        yield from itertools.combinations(slots, size)


def _fast_batch(v: Variant) -> bool:
    """Whether a batched set gets the contiguous fast path: inputs read or
    written in place and outputs, no column-major or strict (inout)
    arguments, no hidden arrays, every dimension another array's or a
    number, every hidden scalar a length expression."""
    if any(a.fortran or a.strict or a.role in ("input+output", "inplace+output")
           or (a.is_array and a.role == "hide") for a in v.args):
        return False
    dims = {dn for a in v.inputs for dn in a.dims}
    if any(not (dn.isdigit() or dn in dims) for a in v.args for dn in a.dims):
        return False
    return all(a.is_array or a.passed or (a.role == "hide" and a.hide_expr is not None)
               for a in v.args)


def _emit_batched(kernel: KernelConfig, i: int, v: Variant, mask: tuple) -> str:
    """One gumath call for a stack of calls.  When every array is
    C-contiguous (the usual case: no copies to make) the buffers are taken
    once and the C function is called per item at its offset; otherwise
    the one-call Xnd kernel runs on item b of each batched argument
    (``xnd_fixed_dim_next``), as gumath's ellipsis loop would -- there, per
    item, the buffers' checks cost more than a small item's work."""
    s = _Slots(v)
    batched = set(mask) | set(range(s.nin, s.nargs))
    out = [f"/* {v.prototype.c_declaration()}: a stack of calls (batched inputs {list(mask)}). */",
           "static int",
           f"{_fn(kernel, i, 'batch' + ''.join(map(str, mask)))}(xnd_t stack[], ndt_context_t *ctx)",
           "{",
           f"    const int64_t nb = stack[{mask[0]}].type->FixedDim.shape;"]
    if _fast_batch(v):
        arg_of = {s.input[a.name]: a for a in v.inputs}
        arg_of.update({s.output[a.name]: a for a in v.outputs})
        slots = sorted(arg_of)
        conds = []
        for k in slots:
            a = arg_of[k]
            nd = len(a.dims) + (1 if k in batched else 0)
            out += [f"    char *p{k};", f"    int64_t s{k}[NDT_MAX_DIM + 1];"]
            conds.append(f"xdap_c_contiguous(&stack[{k}], {nd}, (int64_t)sizeof({a.ctype}), "
                         f"&p{k}, s{k})")
        out.append(f"    if ({' && '.join(conds)}) {{")
        out += [f"        {a.ctype} v_{a.name};" for a in v.args if not a.is_array]
        off = {k: (1 if k in batched else 0) for k in slots}
        first = {}
        for k in slots:
            for axis, dn in enumerate(arg_of[k].dims):
                first.setdefault(dn, f"s{k}[{off[k] + axis}]")
        # lengths from the whole stacks' shapes: a batched one's core dims follow the batch dim
        arrays = {a.name: (lambda axis, k=s.input[a.name]: f"s{k}[{off[k] + axis}]", len(a.dims))
                  for a in v.inputs}
        ctypes = {a.name: a.ctype for a in v.args if not a.is_array}
        for a in v.args:
            if a.is_array or a.passed:
                continue
            # a value the checks refuse: the one-call kernel below says why
            out += ["        " + x for x in _checked(a.name, a.ctype, a.dtype, a.hide_expr or "0",
                                                     arrays, ctypes, f"v_{a.name}",
                                                     ["goto per_item;"])]
        sizes = {}
        for k in slots:
            a = arg_of[k]
            core = " * ".join(first[dn] if not dn.isdigit() else dn for dn in a.dims) or "1"
            sizes[k] = f"(int64_t)sizeof({a.ctype}) * {core}"
        out.append("        for (int64_t b = 0; b < nb; b++) {")

        def ptr(a):
            k = s.input[a.name] if a.passed else s.output[a.name]
            step = f" + b * ({sizes[k]})" if k in batched else ""
            return f"({a.ctype} *)(p{k}{step})"

        call = _call(v, lambda a: f"v_{a.name}", ptr)
        if v.ret is not None:
            k = s.output["return"]
            out.append(f"            (({v.ret.ctype} *)p{k})[b] = {call};")
        else:
            out.append(f"            {call};")
        out += ["        }", "        return 0;", "    }"]
        if any(not a.is_array and not a.passed for a in v.args):
            out.append("per_item:  /* a length its C type cannot hold: the one-call kernel says so */")
    out += [f"    xnd_t sub[{s.nargs}];",
            "    for (int64_t b = 0; b < nb; b++) {"]
    out += [f"        sub[{k}] = " + (f"xnd_fixed_dim_next(&stack[{k}], b);" if k in batched
                                      else f"stack[{k}];") for k in range(s.nargs)]
    out += [f"        if ({_fn(kernel, i, 'xnd')}(sub, ctx) < 0) {{",
            "            return -1;", "        }", "    }", "    return 0;", "}", ""]
    return "\n".join(out)


def allocation_spec(config: ModuleConfig) -> dict:
    """What the module's Python functions need to allocate the outputs of
    the kernels that gumath cannot hold as they are (``Variant.allocates``):
    per kernel, per prototype, the inputs (dtype, core dims) and each
    output's dtype and core dimensions, each a number, a passed array's
    length, a passed scalar's value or a hidden scalar's expression.
    Exported as the module's ``__xdap_allocating__`` (JSON)."""
    spec = {}
    for kernel in config.kernels:
        if not any(v.allocates for v in kernel.variants):
            continue
        variants = []
        for v in kernel.variants:
            # "default": the value a missing item of a ?T input takes (it may size an output)
            ins = [{"name": a.name, "dtype": a.dtype, "ndim": len(a.dims), "optional": a.optional,
                    "default": a.default} for a in v.inputs]
            index = {a.name: i for i, a in enumerate(v.inputs)}
            scalars = {a.name: (["value", index[a.name]] if a.passed else
                                ["expr", a.hide_expr if a.role == "hide" else a.default])
                       for a in v.args if not a.is_array}
            lengths = {}
            for a in v.inputs:
                for axis, dn in enumerate(a.dims):
                    lengths.setdefault(dn, [index[a.name], axis])

            def dim(dn):
                if dn.isdigit():
                    return ["n", int(dn)]
                if dn in lengths:
                    return ["len", *lengths[dn]]
                return ["scalar", dn]

            outs = [{"name": a.name, "dtype": a.dtype, "dims": [dim(dn) for dn in a.dims]}
                    for a in v.outputs]
            variants.append({"function": v.prototype.name, "inputs": ins, "outputs": outs,
                             "placeholder": v.placeholder,
                             "signature": v.signature("...", public=True),
                             "scalars": scalars, "arrays": {a.name: index[a.name] for a in v.inputs
                                                            if a.is_array}})
        spec[kernel.name] = {"variants": variants, "ellipses": list(kernel.ellipses)}
    return spec


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
           "#include <math.h>",
           "#include <stdbool.h>",
           "#include <stdint.h>",
           "#include <stdio.h>",
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
                out.append(_emit_general_xnd(kernel, i, v, optional=False))
                if "..." in kernel.ellipses:
                    out += [_emit_batched(kernel, i, v, mask) for mask in _batch_masks(v)]
            if v.optional:
                out.append(_emit_general_xnd(kernel, i, v, optional=True))
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
               .replace("@ALLOCATING@", _c_string(json.dumps(allocation_spec(config))))
               .replace("@CAPSULE@", _c_string(CAPSULE_NAME))
               .replace("@MODULE@", mod)
               .replace("@MODULE_DOC@", _c_string(_module_doc(config, rows))))
    return "\n".join(out)
