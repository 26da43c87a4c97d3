"""Read and validate a kernel configuration file (.cfg, xndtools format).

A file has one ``[MODULE name]`` section and one ``[KERNEL name]`` section
per gumath function.  Every problem raises ValueError naming the file, the
section and the key, e.g. ``square.cfg [KERNEL square] input: 'b' is not a
parameter of double square(double a)``.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "m.cfg").write_text('''
... [MODULE m]
... [KERNEL twice]
... prototypes = double twice(double x); float twicef(float x);
... ''')
>>> cfg = load_config(d / "m.cfg")
>>> cfg.name, [v.prototype.name for v in cfg.kernels[0].variants]
('m', ['twice', 'twicef'])
>>> cfg.kernels[0].variants[0].signature("...")
'... * float64 -> ... * float64'
"""
from __future__ import annotations

import configparser
import math
import pathlib
import re
from dataclasses import dataclass, field

from .prototype import Prototype, parse_prototype
from .typemap import DTYPE_SIZE, parse_typemaps, resolve

MODULE_KEYS = {"typemaps", "includes", "include_dirs", "sources", "libraries",
               "library_dirs", "header_code", "kinds", "ellipses"}
# New spelling -> also accepted older xndtools spelling.
ROLE_KEYS = {"input": "input_arguments", "inplace": "inplace_arguments",
             "inout": "inout_arguments", "output": "output_arguments",
             "hide": "hide_arguments"}
# configparser lowercases keys: xndtools' prototypes[Fortran] arrives as prototypes[fortran]
PROTOTYPE_KEYS = ("prototypes", "prototypes[c]", "prototypes_c")
FORTRAN_PROTOTYPE_KEYS = ("prototypes[fortran]", "prototypes_fortran")
FORTRAN_KEYS = ("fortran", "fortran[c]", "fortran_arguments")
FORTRAN_FORTRAN_KEYS = ("fortran[fortran]",)
KERNEL_KEYS = ({"description", "kinds", "ellipses", "dimension", "dimensions", "skip",
                "arraytypes", "debug"}
               | set(PROTOTYPE_KEYS) | set(FORTRAN_PROTOTYPE_KEYS) | set(FORTRAN_KEYS)
               | set(FORTRAN_FORTRAN_KEYS) | set(ROLE_KEYS) | set(ROLE_KEYS.values()))
KINDS = {"xnd": "Xnd", "strided": "Strided", "c": "C", "fortran": "Fortran"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ELLIPSIS = re.compile(r"^(\.\.\.|var\.\.\.|none|[A-Z][A-Za-z0-9_]*\.\.\.)$")
VAR_ELLIPSIS = "D..."
# The leading dim of the batched kernel sets (emit.kernel_table): a stack
# of calls looped in the generated C, not by gumath's ellipsis loop.
# xdap.kernels.signature leaves these sets to gumath's own dispatch.
BATCH_DIM = "XdapBatch"  # what xndtools' `var...` becomes: a named ellipsis matches var dims on dev3


class ConfigError(ValueError):
    """A bad kernel configuration; the message names file, section and key."""


@dataclass(frozen=True)
class Arg:
    """One argument of a kernel variant: a prototype parameter (or the
    return value, name 'return') with its role and array dimensions."""
    name: str
    ctype: str
    dtype: str
    pointer: bool
    role: str                 # see ROLES
    dims: tuple = ()          # dimension names as written, e.g. ('n',) for x(n)
    hide_expr: str | None = None   # the value of a hidden scalar
    const: bool = False       # a const pointer: the function promises not to write
    default: str | None = None     # xndtools' initial value 'a = 5': the value of a
    #                                missing item (the argument is then ?T), or of an
    #                                output/hidden scalar before the call
    fortran: bool = False     # the function wants the array column-major
    strict: bool = False      # inout: the caller's array itself, never a copy

    @property
    def is_array(self) -> bool:
        return bool(self.dims)

    @property
    def passed(self) -> bool:
        """True when the caller passes this argument."""
        return self.role in PASSED

    @property
    def returned(self) -> bool:
        return self.role in RETURNED

    @property
    def optional(self) -> bool:
        """A passed scalar with an initial value: its slot is ``?T`` and a
        missing item takes the value."""
        return self.passed and self.default is not None and not self.is_array


# xndtools' intents, as xdap names the effective role of each argument
ROLES = {
    "input": "read; an array is the caller's own buffer when contiguous (the function is "
             "trusted not to write it, as in xndtools), a copy otherwise; a scalar "
             "behind a pointer is a private copy",
    "inplace": "written back into the caller's container (a strided view through a "
               "contiguous copy; a missing item of a ?T argument becomes valid)",
    "input+output": "the caller's value in, the result returned, the caller's container "
                    "unchanged",
    "inplace+output": "written in the caller's container and returned",
    "output": "allocated (zero, or the initial value) and returned",
    "hide": "a local of the kernel: its expression, its initial value or zero; a hidden "
            "array is allocated zeroed",
    "return": "the C return value: returned after the argument outputs",
}
PASSED = ("input", "inplace", "input+output", "inplace+output")
RETURNED = ("output", "input+output", "inplace+output", "return")


@dataclass
class Variant:
    """One C prototype of a kernel: the C function and its argument roles."""
    prototype: Prototype
    args: list                # Args in prototype order (without the return value)
    ret: Arg | None           # the return value when it is an output
    dim_symbols: dict = field(default_factory=dict)  # dim name -> ndtypes symbol
    arraytypes: str = "symbolic"

    @property
    def inputs(self):
        """What the caller passes, in prototype order."""
        return [a for a in self.args if a.passed]

    @property
    def outputs(self):
        """What the kernel returns, in xndtools' order: the argument outputs
        in prototype order, then the C return value."""
        return [a for a in self.args if a.returned] + ([self.ret] if self.ret is not None else [])

    @property
    def hidden(self):
        return [a for a in self.args if a.role == "hide"]

    @property
    def optional(self) -> bool:
        """True when some passed scalar has an initial value: the variant is
        registered twice, for plain ``T`` and for ``?T`` data."""
        return any(a.optional for a in self.args)

    @property
    def allocates(self) -> bool:
        """True when gumath 0.2.0dev3 cannot hold the kernel as it is -- no
        inputs (gumath needs one), more outputs than inputs (its gufunc
        crashes), or an output dimension that no input array has (gumath
        sizes outputs from input shapes alone). Then the outputs are passed
        as inplace arguments of the registered kernel, and the module's
        Python function allocates them (``xdap.kernels.library``)."""
        nin, nout = len(self.inputs), len(self.outputs)
        in_dims = {d for a in self.inputs for d in a.dims}
        sized = all(d.isdigit() or d in in_dims for a in self.outputs for d in a.dims)
        return nin == 0 or nout > nin or not sized

    @property
    def placeholder(self) -> bool:
        """A kernel with nothing to pass and nothing to return (every
        argument hidden) gets one unused ``uint8`` argument: gumath needs
        one.  The module's Python function passes it."""
        return not self.inputs and not self.outputs

    @property
    def is_scalar(self) -> bool:
        """True when every argument is one element and hidden values need no
        array (no x(n), no len()): such a kernel is elementwise and gets a
        Strided loop."""
        if any(a.is_array for a in self.args):
            return False
        return not any(t[0] in ("len", "ndim") for a in self.args
                       for e in (a.hide_expr, a.default) if e for t in check_hide_expr(e) or ())

    @property
    def rowwise(self) -> bool:
        """True when every array argument is 1-D over one shared dimension
        name: then a named ellipsis (xndtools' var...) also takes ragged rows,
        ``D... * var * T``, and the kernel runs once per row."""
        dims = {a.dims for a in self.args if a.is_array and a.role != "hide"}
        if len(dims) != 1:
            return False
        (d,) = dims
        return len(d) == 1 and not d[0].isdigit()

    def _arg_type(self, a: Arg, prefix: str, var: bool, optional: bool) -> str:
        # column-major arguments have the same signature: ndtypes has no
        # abstract column-major type, and the kernel takes each layout itself
        dims = "".join("var * " if var else f"{self.dim_symbols[d]} * " for d in a.dims)
        q = "?" if optional and a.optional else ""
        return f"{prefix}{dims}{q}{a.dtype}"

    def batchable(self) -> tuple:
        """The input slots that may carry a leading batch dim, in the
        batched kernel sets (``emit.kernel_table``): for a kernel with
        arrays whose every passed argument is an array (a mat-vec, a row
        sum, a dot), 1-3 of them; () otherwise."""
        ins = self.inputs
        if self.allocates or not ins or any(not a.is_array for a in ins) or len(ins) > 3 \
                or not any(a.is_array for a in self.args):
            return ()
        return tuple(range(len(ins)))

    def batched_signature(self, batched: tuple) -> str:
        """The signature of a batched set: the inputs in ``batched`` and
        every output get the leading ``BATCH_DIM``."""
        ins = [("" if i not in batched else f"{BATCH_DIM} * ") + self._arg_type(a, "", False, False)
               for i, a in enumerate(self.inputs)]
        outs = [f"{BATCH_DIM} * " + self._arg_type(a, "", False, False) for a in self.outputs]
        return f"{', '.join(ins)} -> {', '.join(outs) or 'void'}"

    def signature(self, ellipsis: str, optional: bool = False, public: bool = False) -> str:
        """The gumath signature for one ellipsis ('...', 'D...', 'X...' or '');
        ``optional``: the slots of passed scalars with an initial value are
        ``?T``.  A variant that ``allocates`` takes its outputs as inplace
        arguments after the inputs (``-> void``); ``public``: the signature
        as the caller sees it all the same (``xdap.kernels.allocate`` checks
        DistArray operands against it).

        Under a named ellipsis the core dimension of a row-wise kernel is
        ``var``: fixed data match the '...' set, ragged rows this one.
        """
        prefix = f"{ellipsis} * " if ellipsis else ""
        var = ellipsis not in ("", "...") and self.rowwise
        ins = [self._arg_type(a, prefix, var, optional) for a in self.inputs]
        outs = [self._arg_type(a, prefix, var, False) for a in self.outputs]
        if public:
            return f"{', '.join(ins)} -> {', '.join(outs) or 'void'}"
        if self.allocates:
            ins, outs = ins + outs, []
        if self.placeholder:
            ins = [f"{prefix}uint8"]
        return f"{', '.join(ins)} -> {', '.join(outs) or 'void'}"


@dataclass
class KernelConfig:
    name: str
    section: str
    description: str
    kinds: tuple
    ellipses: tuple           # translated: '...', 'D...' (for var...), '' (none), 'X...'
    variants: list
    debug: bool = False       # each call prints its name and argument types to stderr


@dataclass
class ModuleConfig:
    """A validated .cfg: paths are absolute (relative ones are taken from the
    cfg file's directory)."""
    name: str
    path: pathlib.Path
    typemaps: dict
    includes: list
    include_dirs: list
    sources: list
    libraries: list
    library_dirs: list
    header_code: str
    kinds: tuple
    ellipses: tuple
    kernels: list
    refused: list = field(default_factory=list)   # one message per refused section

    @property
    def directory(self) -> pathlib.Path:
        return self.path.parent


def _items(text: str):
    """Split a list value on commas and newlines at parenthesis depth 0."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch in ",\n" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _split_prototypes(text: str):
    return [p.strip() for p in text.replace("\n", " ").split(";") if p.strip()]


class _Reader:
    """Error helper bound to one file."""

    def __init__(self, path):
        self.path = pathlib.Path(path)

    def error(self, section, key, msg):
        where = f"{self.path.name} [{section}]" + (f" {key}" if key else "")
        return ConfigError(f"{where}: {msg}")


def _parse_ellipses(r, section, key, text, default):
    if not text.strip():
        return default
    out = []
    for tok in _items(text.replace(" ", "\n")):
        if not _ELLIPSIS.match(tok):
            raise r.error(section, key, f"unknown ellipsis {tok!r} (use '...', 'var...', 'none' "
                                        "or a named ellipsis such as 'D...')")
        out.append({"...": "...", "var...": VAR_ELLIPSIS, "none": ""}.get(tok, tok))
    return tuple(dict.fromkeys(out))


def _parse_kinds(r, section, key, text, default):
    if not text.strip():
        return default
    out = []
    for tok in _items(text.replace(" ", "\n")):
        if tok.lower() not in KINDS:
            raise r.error(section, key, f"unknown kind {tok!r} (use Xnd, Strided, C or Fortran)")
        out.append(KINDS[tok.lower()])
    return tuple(dict.fromkeys(out))


_ARG = re.compile(r"^([A-Za-z_]\w*)\s*(?:\(([^()]*)\))?\s*(?:=\s*(.+))?$")


def _parse_arg_list(r, section, key, text):
    """'x(n), y(n), a, b = 5' -> [('x', ('n',), None), ('y', ('n',), None),
    ('a', (), None), ('b', (), '5')]: names, dimensions, initial values."""
    out = []
    for item in _items(text):
        m = _ARG.match(item)
        if not m:
            raise r.error(section, key, f"cannot read argument {item!r} (expected NAME, "
                          "NAME(dim, ...) or NAME = VALUE)")
        dims = tuple(d.strip() for d in m.group(2).split(",")) if m.group(2) is not None else ()
        for d in dims:
            if not (_IDENT.match(d) or d.isdigit()):
                raise r.error(section, key, f"bad dimension {d!r} in {item!r} (a dimension is a "
                              "name -- another argument's dimension or a scalar argument -- or a number)")
        default = m.group(3).strip() if m.group(3) else None
        if default is not None and dims:
            raise r.error(section, key, f"{item!r}: an initial value is for scalar arguments")
        if default is not None and check_hide_expr(default) is None:
            raise r.error(section, key, f"cannot read expression {default!r} for "
                          f"{m.group(1)!r} ({_EXPR_HELP})")
        out.append((m.group(1), dims, default))
    return out


def _symbols(dim_names):
    """Map dimension names to ndtypes symbolic dims (capitalised, unique)."""
    out, used = {}, {"D"}
    for d in dim_names:
        if d in out:
            continue
        if d.isdigit():
            out[d] = d
            continue
        base = d[0].upper() + d[1:]
        sym, i = base, 0
        while sym in used:
            i += 1
            sym = f"{base}{i}"
        used.add(sym)
        out[d] = sym
    return out


_EXPR_TOKEN = re.compile(r"\s*(?:(len|shape|ndim)\s*\(\s*([A-Za-z_]\w*)\s*(?:,\s*(\d+)\s*)?\)"
                         r"|([A-Za-z_]\w*)|(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
                         r"|([-+*/%()]))")
_EXPR_HELP = ("use numbers, len(x), shape(x, k), ndim(x), other scalar arguments and "
              "+ - * / % ( )")


def check_hide_expr(expr: str):
    """Tokenise a hide expression; return the tokens or None if unreadable.

    Tokens: ('len', arg, axis), ('ndim', arg, 0), ('name', n), ('num', s),
    ('op', s).  ``shape(x, k)`` is ``len(x, k)``.
    """
    pos, toks = 0, []
    expr = expr.strip()
    while pos < len(expr):
        m = _EXPR_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return None
        if m.group(1):
            toks.append(("ndim" if m.group(1) == "ndim" else "len", m.group(2), int(m.group(3) or 0)))
        elif m.group(4):
            toks.append(("name", m.group(4)))
        elif m.group(5):
            toks.append(("num", m.group(5)))
        else:
            toks.append(("op", m.group(6)))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return toks


# One argument under two keys, as xndtools allows: what it means.
_TWO_ROLES = {frozenset(("input", "output")): "input+output",
              frozenset(("inplace", "output")): "inplace+output",
              frozenset(("inout", "output")): "inout+output",
              frozenset(("hide", "output")): "output"}


def _effective_role(role: str, pointer: bool, default) -> str:
    """xndtools' meaning of an intent on a by-value or pointer parameter
    (``ROLES`` says what each effective role does).  A by-value scalar
    under inplace/inout cannot change in C, so it is an input -- unless it
    has an initial value, which is written into the caller's missing items."""
    role = {"inout": "inplace", "inout+output": "inplace+output"}.get(role, role)
    if not pointer and default is None:
        return {"inplace": "input", "inplace+output": "input+output"}.get(role, role)
    return role


MAX_EXPR_DEPTH = 64     # parentheses and signs nested: deeper is refused, not a RecursionError


def expr_structure_error(toks) -> str | None:
    """What is wrong with the form of a tokenised expression, or None:
    operands and operators in turn, parentheses balanced and nested at most
    ``MAX_EXPR_DEPTH`` deep, and no division or remainder by a constant
    that is zero (``n / (2 - 2)`` would fail on every call: refused when
    the module is built).  Iterative -- an expression of any depth is read
    without recursion -- with the constant parts folded as C would
    (integer ``/`` and ``%`` truncate)."""
    depth, expect_operand, values, ops = 0, True, [], []
    prec = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "neg": 3, "pos": 3}

    def apply(op):
        if op in ("neg", "pos"):
            v = values.pop()
            values.append(None if v is None else -v if op == "neg" else v)
            return None
        b, a = values.pop(), values.pop()
        if op in "/%" and b is not None and b == 0:
            return "divides by a constant zero"
        if a is None or b is None:
            values.append(None)
        elif op in "/%" and isinstance(a, int) and isinstance(b, int):
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)     # C truncates
            values.append(q if op == "/" else a - b * q)
        else:
            values.append({"+": a + b, "-": a - b, "*": a * b, "/": a / b,
                           "%": math.fmod(a, b) if op == "%" else None}[op])
        return None

    for t in toks:
        if expect_operand:
            if t in (("op", "-"), ("op", "+"), ("op", "(")):
                ops.append("neg" if t[1] == "-" else "pos" if t[1] == "+" else "(")
                depth += 1
                if depth > MAX_EXPR_DEPTH:
                    return f"nests deeper than {MAX_EXPR_DEPTH} parentheses and signs"
                continue
            if t[0] == "op":
                return f"an operand is missing before {t[1]!r}"
            values.append((float(t[1]) if any(ch in t[1] for ch in ".eE") else int(t[1]))
                          if t[0] == "num" else None)
            expect_operand = False
            while ops and ops[-1] in ("neg", "pos"):
                depth -= 1
                apply(ops.pop())
            continue
        if t == ("op", ")"):
            while ops and ops[-1] != "(":
                problem = apply(ops.pop())
                if problem:
                    return problem
            if not ops:
                return "a ')' closes no '('"
            ops.pop()
            depth -= 1
            while ops and ops[-1] in ("neg", "pos"):
                depth -= 1
                apply(ops.pop())
            continue
        if t[0] != "op" or t[1] == "(":
            return f"an operator is missing before {t[1]!r}"
        while ops and ops[-1] != "(" and prec[ops[-1]] >= prec[t[1]]:
            problem = apply(ops.pop())
            if problem:
                return problem
        ops.append(t[1])
        expect_operand = True
    if expect_operand:
        return "it ends without an operand" if toks else "it is empty"
    while ops:
        op = ops.pop()
        if op == "(":
            return "a '(' is not closed"
        problem = apply(op)
        if problem:
            return problem
    return None


def _check_expr(r, section, key, a, expr, where, by_name, known):
    """The names and len()/ndim() in ``a``'s expression refer to what the
    kernel knows before ``a``'s value is needed; its form is sound."""
    toks = check_hide_expr(expr)
    if toks is None:
        raise r.error(section, key, f"cannot read expression {expr!r} for {a.name!r} ({_EXPR_HELP})")
    problem = expr_structure_error(toks)
    if problem:
        raise r.error(section, key, f"expression {expr if len(expr) <= 60 else expr[:57] + '...'!r} "
                      f"for {a.name!r}: {problem}")
    for t in toks:
        if t[0] in ("len", "ndim"):
            b = by_name.get(t[1])
            if b is None or not b.is_array:
                raise r.error(section, key, f"{t[0]}({t[1]}) in {a.name!r}: {t[1]!r} is not an "
                              f"array argument of {where}")
            if b.role == "output" or b.role == "hide":
                raise r.error(section, key, f"{t[0]}({t[1]}) in {a.name!r}: {t[1]!r} is "
                              f"{'an output' if b.role == 'output' else 'hidden'}; use an input's length")
            if t[0] == "len" and t[2] >= len(b.dims):
                raise r.error(section, key, f"len({t[1]}, {t[2]}): {t[1]!r} has {len(b.dims)} dimension(s)")
        elif t[0] == "name":
            b = by_name.get(t[1])
            if b is None or b.is_array or t[1] not in known:
                raise r.error(section, key, f"{t[1]!r} in the expression for {a.name!r} is not a scalar "
                              "argument the kernel knows first (a passed scalar, or a hidden or "
                              "output scalar earlier in the prototype)")


def _build_variant(r, section, proto: Prototype, roles, dims, fortran, typemap, arraytypes):
    """Combine one prototype with the kernel's argument roles."""
    where = proto.c_declaration()
    # Every named argument must exist in this prototype.
    for key, names in list(roles.items()) + [("dimension", dims)]:
        for name, *_ in names:
            if proto.param(name) is None:
                raise r.error(section, key, f"{name!r} is not a parameter of {where}")
    for name in fortran:
        if proto.param(name) is None:
            raise r.error(section, "fortran", f"{name!r} is not a parameter of {where}")

    role_of, dims_of, default_of = {}, {n: d for n, d, _ in dims}, {}
    for key, names in roles.items():
        for name, d, default in names:
            if name in role_of:
                both = _TWO_ROLES.get(frozenset((role_of[name], key)))
                if both is None:
                    raise r.error(section, key, f"{name!r} already has the role {role_of[name]!r} "
                                  "(xndtools allows input, inplace, inout or hide together with output)")
                role_of[name] = both
            else:
                role_of[name] = key
            if d:
                if name in dims_of and dims_of[name] != d:
                    raise r.error(section, key, f"{name!r} has two different dimensions")
                dims_of[name] = d
            if default is not None:
                if name in default_of and default_of[name] != default:
                    raise r.error(section, key, f"{name!r} has two different initial values")
                default_of[name] = default

    args = []
    for p in proto.params:
        key = role_of.get(p.name, "inplace" if p.pointer else "input")
        d = dims_of.get(p.name, ())
        default = default_of.get(p.name)
        dtype = resolve(p.ctype, typemap)
        if dtype is None:
            raise r.error(section, "prototypes", f"unknown C type {p.ctype!r} of parameter {p.name!r} "
                          f"in {where}; add it to [MODULE] typemaps (e.g. '{p.ctype}: float64')")
        if d and not p.pointer:
            raise r.error(section, "dimension", f"{p.name!r} has dimensions {d} but is not a pointer in {where}")
        role = _effective_role(key, p.pointer, default)
        if role in ("inplace", "inplace+output") and p.const:
            raise r.error(section, key, f"{p.name!r} is const in {where}, so it cannot be written "
                          "in place")
        if p.name in fortran and len(d) < 2:
            raise r.error(section, "fortran", f"{p.name!r} must be an array of two or more dimensions "
                          "to be column-major (fortran)")
        hide_expr = default if role == "hide" else None
        args.append(Arg(p.name, p.ctype, dtype, p.pointer, role, d, hide_expr, p.const,
                        None if role == "hide" else default, p.name in fortran,
                        key.startswith("inout")))

    ret = None
    if proto.ret != "void":
        dtype = resolve(proto.ret, typemap)
        if dtype is None:
            raise r.error(section, "prototypes", f"unknown C return type {proto.ret!r} in {where}; "
                          f"add it to [MODULE] typemaps")
        ret = Arg("return", proto.ret, dtype, False, "return")

    # A hidden scalar without expression that names an array's dimension is
    # that length (n of x(n)); any other starts at zero, as an output does.
    for i, a in enumerate(args):
        if a.role == "hide" and not a.is_array and a.hide_expr is None:
            owner = next(((b, k) for b in args if b.passed for k, dn in enumerate(b.dims)
                          if dn == a.name), None)
            if owner is not None:
                args[i] = Arg(a.name, a.ctype, a.dtype, a.pointer, a.role, a.dims,
                              f"len({owner[0].name}, {owner[1]})", a.const)

    # Expressions: passed scalars are known first, then hidden and output
    # scalars in prototype order.
    by_name = {a.name: a for a in args}
    known = {a.name for a in args if a.passed and not a.is_array}
    for a in args:
        if a.default is not None:
            _check_expr(r, section, "input" if a.passed else "output", a, a.default, where, by_name,
                        known - {a.name})
    for a in args:
        if not a.passed and not a.is_array:
            expr = a.hide_expr if a.role == "hide" else a.default
            if expr is not None:
                _check_expr(r, section, "hide" if a.role == "hide" else "output", a, expr, where,
                            by_name, known)
            known.add(a.name)
    # A dimension is another array's, a number, or a scalar argument's value.
    array_dims = {dn for a in args if a.passed for dn in a.dims}
    for a in args:
        for dn in a.dims:
            if dn.isdigit() or dn in array_dims:
                continue
            b = by_name.get(dn)
            if b is None or b.is_array:
                raise r.error(section, "hide" if a.role == "hide" else a.role.split("+")[-1],
                              f"dimension {dn!r} of {a.name!r} is neither a dimension of a passed "
                              f"array, a number, nor a scalar argument of {where}")
            if b.pointer and b.role not in PASSED:
                raise r.error(section, a.role.split("+")[-1], f"dimension {dn!r} of {a.name!r}: "
                              f"{dn!r} is set by the function (a pointer), so the kernel cannot size "
                              f"{a.name!r} before the call")
            if a.passed:
                # the caller's array is checked against the value, in the kernel
                continue

    variant = Variant(proto, args, ret, arraytypes=arraytypes)
    variant.dim_symbols = _symbols([dn for a in args for dn in a.dims])
    if variant.allocates and any(a.returned and a.is_array and len(a.dims) > 1 and a.fortran
                                 for a in args):
        raise r.error(section, "fortran", "an output allocated by the module is row-major; "
                      "a column-major output needs a column-major input of its shape")
    return variant


def _keys(sec, keys):
    """The text under the first of ``keys`` that the section has."""
    return next((sec[k] for k in keys if k in sec), "")


def _read_kernel(r, section, name, sec, module_kinds, module_ellipses, typemap):
    unknown = set(sec) - KERNEL_KEYS
    if unknown:
        raise r.error(section, ", ".join(sorted(unknown)),
                      f"unknown key{'s' if len(unknown) > 1 else ''} (accepted: "
                      f"{', '.join(sorted(KERNEL_KEYS))})")
    kinds = _parse_kinds(r, section, "kinds", sec.get("kinds", ""), module_kinds)
    prototypes = _keys(sec, PROTOTYPE_KEYS)
    fortran_prototypes = _keys(sec, FORTRAN_PROTOTYPE_KEYS)
    if not prototypes.strip():
        if not fortran_prototypes.strip():
            raise r.error(section, "prototypes", "missing: give one or more C prototypes ending in ';'")
    roles = {}
    for new, old in ROLE_KEYS.items():
        text = "\n".join(sec.get(k, "") for k in (new, old))
        roles[new] = _parse_arg_list(r, section, new, text)
    dims = _parse_arg_list(r, section, "dimension", "\n".join(sec.get(k, "") for k in ("dimension", "dimensions")))
    for n, d, _ in dims:
        if not d:
            raise r.error(section, "dimension", f"{n!r} has no dimensions (write {n}(n))")
    fortran = {n for n, *_ in _parse_arg_list(r, section, "fortran", _keys(sec, FORTRAN_KEYS))}
    arraytypes = sec.get("arraytypes", "symbolic").strip().lower() or "symbolic"
    if arraytypes not in ("symbolic", "variable"):
        raise r.error(section, "arraytypes", f"{arraytypes!r}: use symbolic (N * T) or variable (var * T)")
    try:
        debug = _boolean(sec.get("debug", "0"))
    except ValueError:
        raise r.error(section, "debug", f"{sec['debug']!r} is not a boolean (use 0/1, yes/no, "
                      "true/false)") from None
    # xndtools' Fortran kind calls prototypes[Fortran] with fortran[Fortran]'s
    # arguments column-major when every array is F-contiguous.  gumath
    # 0.2.0dev3 never calls a Fortran slot, and xdap's Xnd kernel takes each
    # layout itself (a column-major argument is passed without a copy), so
    # a kernel whose Fortran prototypes are the C ones needs nothing more; a
    # different Fortran function is refused rather than silently unused.
    if "Fortran" in kinds and fortran_prototypes.strip() and prototypes.strip() and \
            _split_prototypes(fortran_prototypes) != _split_prototypes(prototypes):
        raise r.error(section, "prototypes[fortran]", "a Fortran-kind function other than the C "
                      "one is not supported (gumath 0.2.0dev3 never calls a Fortran slot): "
                      "declare the column-major arguments with 'fortran:' instead")
    if not prototypes.strip():
        prototypes = fortran_prototypes
        fortran |= {n for n, *_ in _parse_arg_list(r, section, "fortran[fortran]",
                                                       _keys(sec, FORTRAN_FORTRAN_KEYS))}
    variants = []
    for text in _split_prototypes(prototypes):
        try:
            proto = parse_prototype(text)
        except ValueError as e:
            raise r.error(section, "prototypes", str(e)) from None
        variants.append(_build_variant(r, section, proto, roles, dims, fortran, typemap, arraytypes))
    seen = {}
    for v in variants:
        key = tuple(a.dtype for a in v.inputs)
        if key in seen:
            raise r.error(section, "prototypes", f"{seen[key]} and {v.prototype.name} take the same input "
                          f"types {key}; gumath would never select the second")
        seen[key] = v.prototype.name
    ellipses = _parse_ellipses(r, section, "ellipses", sec.get("ellipses", ""), module_ellipses)
    if arraytypes == "variable":
        if not all(v.rowwise for v in variants):
            raise r.error(section, "arraytypes", "variable arrays (var * T) need a row-wise kernel: "
                          "every array argument 1-D over one dimension")
        ellipses = tuple(dict.fromkeys(e if e not in ("", "...") else VAR_ELLIPSIS for e in ellipses))
    return KernelConfig(
        name=name, section=section,
        description=" ".join(sec.get("description", "").split()),
        kinds=kinds, ellipses=ellipses, variants=variants, debug=debug)


def _boolean(text: str) -> bool:
    t = text.strip().lower()
    if t in ("", "0", "no", "false", "off"):
        return False
    if t in ("1", "yes", "true", "on"):
        return True
    raise ValueError(text)


def _paths(base, text):
    out = []
    for item in _items(text):
        p = pathlib.Path(item).expanduser()
        out.append(str(p if p.is_absolute() else (base / p).resolve()))
    return out


def parse_config(text: str, path="<string>", strict: bool = False) -> ModuleConfig:
    """Validate the text of a .cfg; relative paths are taken from path's directory.

    A [KERNEL] section that cannot be built is refused, not fatal: the
    config keeps every other kernel and ``refused`` says why, one message
    per section (file, section, key, reason) -- so one build reports every
    problem at once.  ``strict``: any refusal is a ConfigError listing them
    all.  A bad [MODULE] section, or no kernel left, is always an error."""
    r = _Reader(path)
    cp = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#",),
                                   comment_prefixes=("#", ";"), strict=True,
                                   empty_lines_in_values=False)
    try:
        cp.read_string(text, source=str(path))
    except configparser.Error as e:
        raise ConfigError(f"{r.path.name}: cannot read the file: {e}") from None
    modules = [s for s in cp.sections() if s.split()[0] == "MODULE"]
    if len(modules) != 1:
        raise r.error("MODULE", None, f"expected exactly one [MODULE name] section, found {len(modules)}")
    msec_name = modules[0]
    parts = msec_name.split()
    if len(parts) != 2 or not _IDENT.match(parts[1]):
        raise r.error(msec_name, None, "the section must be [MODULE name] with a Python identifier as name")
    msec = cp[msec_name]
    unknown = set(msec) - MODULE_KEYS
    if unknown:
        raise r.error(msec_name, sorted(unknown)[0], f"unknown key (accepted: {', '.join(sorted(MODULE_KEYS))})")
    typemap, bad = parse_typemaps(msec.get("typemaps", ""))
    if bad:
        raise r.error(msec_name, "typemaps", f"cannot read {bad[0]!r} (expected 'C type: dtype' with dtype one of "
                      f"{', '.join(DTYPE_SIZE)})")
    kinds = _parse_kinds(r, msec_name, "kinds", msec.get("kinds", ""), ("Xnd", "Strided"))
    ellipses = _parse_ellipses(r, msec_name, "ellipses", msec.get("ellipses", ""), ("...", VAR_ELLIPSIS))
    base = r.path.parent.resolve() if str(path) != "<string>" else pathlib.Path.cwd()
    kernels, refused = [], []
    for s in cp.sections():
        if s == msec_name:
            continue
        try:
            parts = s.split()
            if parts[0] != "KERNEL":
                raise r.error(s, None, "unknown section (expected [MODULE name] or [KERNEL name])")
            if len(parts) != 2 or not _IDENT.match(parts[1]):
                raise r.error(s, None, "the section must be [KERNEL name] with an identifier as name")
            if "skip" in cp[s]:
                continue
            if any(k.name == parts[1] for k in kernels):
                raise r.error(s, None, "kernel defined twice")
            kernels.append(_read_kernel(r, s, parts[1], cp[s], kinds, ellipses, typemap))
        except ConfigError as e:
            refused.append(str(e))
    if refused and (strict or not kernels):
        head = (f"{r.path.name}: no kernel can be built" if not kernels else
                f"{r.path.name}: {len(refused)} section(s) refused (strict)")
        raise ConfigError(head + ":\n  " + "\n  ".join(refused))
    if not kernels:
        raise r.error(msec_name, None, "no [KERNEL name] sections (or all are skipped)")
    return ModuleConfig(
        name=msec_name.split()[1], path=r.path.resolve() if str(path) != "<string>" else r.path,
        typemaps=typemap,
        includes=_items(msec.get("includes", "")),
        include_dirs=_paths(base, msec.get("include_dirs", "")),
        sources=_paths(base, msec.get("sources", "")),
        libraries=_items(msec.get("libraries", "")),
        library_dirs=_paths(base, msec.get("library_dirs", "")),
        header_code=msec.get("header_code", ""),
        kinds=kinds, ellipses=ellipses, kernels=kernels, refused=refused)


def load_config(path, strict: bool = False) -> ModuleConfig:
    """Read and validate a .cfg file (see the module docstring and
    ``parse_config`` for refused sections and ``strict``)."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the kernel config: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: the kernel config is not UTF-8 text (byte {e.start}: "
                          f"{e.object[e.start:e.start + 1]!r})") from None
    return parse_config(text, path, strict)
