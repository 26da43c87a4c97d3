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
KERNEL_KEYS = ({"prototypes", "description", "kinds", "ellipses", "dimension", "dimensions", "skip"}
               | set(ROLE_KEYS) | set(ROLE_KEYS.values()))
KINDS = {"xnd": "Xnd", "strided": "Strided", "c": "C", "fortran": "Fortran"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ELLIPSIS = re.compile(r"^(\.\.\.|var\.\.\.|none|[A-Z][A-Za-z0-9_]*\.\.\.)$")
VAR_ELLIPSIS = "D..."  # what xndtools' `var...` becomes: a named ellipsis matches var dims on dev3


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
    role: str                 # input | inplace | output | input+output | inplace+output
    #                           | hide | return (see ROLE_MEANING)
    dims: tuple = ()          # dimension names as written, e.g. ('n',) for x(n)
    hide_expr: str | None = None
    const: bool = False       # a const pointer: the function promises not to write

    @property
    def is_array(self) -> bool:
        return bool(self.dims)


@dataclass
class Variant:
    """One C prototype of a kernel: the C function and its argument roles."""
    prototype: Prototype
    args: list                # Args in prototype order (without the return value)
    ret: Arg | None           # the return value when it is an output
    dim_symbols: dict = field(default_factory=dict)  # dim name -> ndtypes symbol

    @property
    def inputs(self):
        """gumath input slots, in prototype order: every argument the caller
        passes (input, inplace, and those also returned)."""
        return [a for a in self.args if a.role in ("input", "inplace", "input+output",
                                                    "inplace+output")]

    @property
    def outputs(self):
        """gumath output slots: the return value, then the returned args."""
        outs = [self.ret] if self.ret is not None else []
        return outs + [a for a in self.args if a.role in ("output", "input+output",
                                                          "inplace+output")]

    @property
    def hidden(self):
        return [a for a in self.args if a.role == "hide"]

    @property
    def is_scalar(self) -> bool:
        """True when every argument is one element (no x(n), no hide): such a
        kernel is elementwise and gets a Strided loop."""
        return not self.hidden and not any(a.is_array for a in self.args)

    @property
    def rowwise(self) -> bool:
        """True when every array argument is 1-D over one shared dimension
        name: then a named ellipsis (xndtools' var...) also takes ragged rows,
        ``D... * var * T``, and the kernel runs once per row."""
        dims = {a.dims for a in self.args if a.is_array}
        return len(dims) == 1 and len(next(iter(dims))) == 1 and not next(iter(dims))[0].isdigit()

    def _arg_type(self, a: Arg, prefix: str, var: bool) -> str:
        dims = "".join("var * " if var else f"{self.dim_symbols[d]} * " for d in a.dims)
        return f"{prefix}{dims}{a.dtype}"

    def signature(self, ellipsis: str) -> str:
        """The gumath signature for one ellipsis ('...', 'D...', 'X...' or '').

        Under a named ellipsis the core dimension of a row-wise kernel is
        ``var``: fixed data match the '...' set, ragged rows this one.
        """
        prefix = f"{ellipsis} * " if ellipsis else ""
        var = ellipsis not in ("", "...") and self.rowwise
        ins = ", ".join(self._arg_type(a, prefix, var) for a in self.inputs)
        outs = ", ".join(self._arg_type(a, prefix, var) for a in self.outputs) or "void"
        return f"{ins} -> {outs}"


@dataclass
class KernelConfig:
    name: str
    section: str
    description: str
    kinds: tuple
    ellipses: tuple           # translated: '...', 'D...' (for var...), '' (none), 'X...'
    variants: list


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


def _parse_arg_list(r, section, key, text):
    """'x(n), y(n), a' -> [('x', ('n',)), ('y', ('n',)), ('a', ())]."""
    out = []
    for item in _items(text):
        m = re.match(r"^([A-Za-z_]\w*)\s*(?:\(([^()]*)\))?$", item)
        if not m:
            raise r.error(section, key, f"cannot read argument {item!r} (expected NAME or NAME(dim, ...))")
        dims = tuple(d.strip() for d in m.group(2).split(",")) if m.group(2) is not None else ()
        for d in dims:
            if not (_IDENT.match(d) or d.isdigit()):
                raise r.error(section, key, f"bad dimension {d!r} in {item!r}")
        out.append((m.group(1), dims))
    return out


def _parse_hide(r, section, key, text):
    """'n = len(x), m' -> [('n', 'len(x)'), ('m', None)]."""
    out = []
    for item in _items(text):
        name, sep, expr = item.partition("=")
        name = name.strip()
        if not _IDENT.match(name):
            raise r.error(section, key, f"cannot read hidden argument {item!r} (expected NAME = EXPRESSION)")
        out.append((name, expr.strip() if sep else None))
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


_EXPR_TOKEN = re.compile(r"\s*(?:(len|shape)\s*\(\s*([A-Za-z_]\w*)\s*(?:,\s*(\d+)\s*)?\)|([A-Za-z_]\w*)|(\d+)|([-+*/%()]))")


def check_hide_expr(expr: str):
    """Tokenise a hide expression; return the tokens or None if unreadable.

    Tokens: ('len', arg, axis), ('name', n), ('num', s), ('op', s).
    """
    pos, toks = 0, []
    expr = expr.strip()
    while pos < len(expr):
        m = _EXPR_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return None
        if m.group(1):
            toks.append(("len", m.group(2), int(m.group(3) or 0)))
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
              frozenset(("inout", "output")): "inplace+output"}


def _effective_role(role: str, pointer: bool) -> str:
    """xndtools' meaning of an intent on a by-value or pointer parameter:

    input           read; a non-const pointer gets a private copy, so the
                    caller's data is never written
    inplace, inout  written in the caller's container (a by-value C scalar
                    cannot be: it is an input then)
    output          allocated and returned (pointers only)
    input+output    the caller's value goes in, the result is returned, the
                    caller's container is unchanged
    inplace+output  (also inout+output) written in the caller's container and
                    returned; by value: the caller's value is returned
    """
    if role == "inout":
        role = "inplace"
    if not pointer:
        return {"inplace": "input", "inplace+output": "input+output"}.get(role, role)
    return role


def _build_variant(r, section, proto: Prototype, roles, dims, hides, typemap):
    """Combine one prototype with the kernel's argument roles."""
    where = proto.c_declaration()
    # Every named argument must exist in this prototype.
    for key, names in roles.items():
        for name, _ in names:
            if proto.param(name) is None:
                raise r.error(section, key, f"{name!r} is not a parameter of {where}")
    for name, _ in hides:
        if proto.param(name) is None:
            raise r.error(section, "hide", f"{name!r} is not a parameter of {where}")
    for name, _ in dims:
        if proto.param(name) is None:
            raise r.error(section, "dimension", f"{name!r} is not a parameter of {where}")

    role_of, dims_of = {}, dict(dims)
    for key, names in roles.items():
        for name, d in names:
            if name in role_of:
                both = _TWO_ROLES.get(frozenset((role_of[name], key)))
                if both is None:
                    raise r.error(section, key, f"{name!r} already has the role {role_of[name]!r}")
                role_of[name] = both
            else:
                role_of[name] = key
            if d:
                if name in dims_of and dims_of[name] != d:
                    raise r.error(section, key, f"{name!r} has two different dimensions")
                dims_of[name] = d
    hide_expr = {}
    for name, expr in hides:
        if name in role_of:
            raise r.error(section, "hide", f"{name!r} already has the role {role_of[name]!r}")
        role_of[name] = "hide"
        hide_expr[name] = expr

    args = []
    for p in proto.params:
        role = role_of.get(p.name, "inplace" if p.pointer else "input")
        d = dims_of.get(p.name, ())
        dtype = resolve(p.ctype, typemap)
        if dtype is None:
            raise r.error(section, "prototypes", f"unknown C type {p.ctype!r} of parameter {p.name!r} "
                          f"in {where}; add it to [MODULE] typemaps (e.g. '{p.ctype}: float64')")
        key = "hide" if role == "hide" else role
        if d and not p.pointer:
            raise r.error(section, "dimension", f"{p.name!r} has dimensions {d} but is not a pointer in {where}")
        if role == "output" and not p.pointer:
            raise r.error(section, key, f"{p.name!r} must be a pointer to be {role} (it is passed by value in {where})")
        role = _effective_role(role, p.pointer)
        if role == "hide" and p.pointer:
            raise r.error(section, "hide", f"hidden argument {p.name!r} must be passed by value in {where}")
        if role in ("inplace", "inplace+output") and p.const:
            raise r.error(section, key, f"{p.name!r} is const in {where}, so it cannot be written "
                          "in place")
        args.append(Arg(p.name, p.ctype, dtype, p.pointer, role, d, hide_expr.get(p.name),
                        p.const))

    ret = None
    if proto.ret != "void":
        dtype = resolve(proto.ret, typemap)
        if dtype is None:
            raise r.error(section, "prototypes", f"unknown C return type {proto.ret!r} in {where}; "
                          f"add it to [MODULE] typemaps")
        ret = Arg("return", proto.ret, dtype, False, "return")

    # Hidden arguments: infer 'n' from an array dimension named n, check expressions.
    by_name = {a.name: a for a in args}
    known = set()
    for i, a in enumerate(args):
        if a.role != "hide":
            continue
        if a.hide_expr is None:
            owner = next(((b, k) for b in args if b.role != "hide" for k, d in enumerate(b.dims) if d == a.name), None)
            if owner is None:
                raise r.error(section, "hide", f"{a.name!r} has no expression and is no dimension of an "
                              f"array argument; write e.g. '{a.name} = len(x)'")
            expr = f"len({owner[0].name}, {owner[1]})"
            a = args[i] = Arg(a.name, a.ctype, a.dtype, a.pointer, a.role, a.dims, expr)
        toks = check_hide_expr(a.hide_expr)
        if toks is None:
            raise r.error(section, "hide", f"cannot read expression {a.hide_expr!r} for {a.name!r} "
                          "(use len(x), len(x, axis), integers, + - * / % and other scalar inputs)")
        for t in toks:
            if t[0] == "len":
                b = by_name.get(t[1])
                if b is None or not b.is_array:
                    raise r.error(section, "hide", f"len({t[1]}) in {a.name!r}: {t[1]!r} is not an "
                                  f"array argument of {where}")
                if b.role == "output":
                    raise r.error(section, "hide", f"len({t[1]}) in {a.name!r}: {t[1]!r} is an output; "
                                  "use an input's length")
                if t[2] >= len(b.dims):
                    raise r.error(section, "hide", f"len({t[1]}, {t[2]}): {t[1]!r} has {len(b.dims)} dimension(s)")
            elif t[0] == "name":
                b = by_name.get(t[1])
                ok = b is not None and not b.pointer and (b.role == "input" or (b.role == "hide" and b.name in known))
                if not ok:
                    raise r.error(section, "hide", f"{t[1]!r} in the expression for {a.name!r} is not a scalar "
                                  "input or an earlier hidden argument")
        known.add(a.name)

    variant = Variant(proto, args, ret)
    dim_names = [d for a in args for d in a.dims]
    variant.dim_symbols = _symbols(dim_names)
    in_dims = {d for a in variant.inputs for d in a.dims}
    for a in variant.outputs:
        for d in a.dims:
            if not d.isdigit() and d not in in_dims:
                raise r.error(section, "output", f"dimension {d!r} of output {a.name!r} is not a dimension of "
                              "any input, so gumath cannot size the output")
    nin, nout = len(variant.inputs), len(variant.outputs)
    if nin == 0:
        raise r.error(section, "input", f"{where} has no input arguments; a gumath kernel needs at least one")
    if nout > nin:
        raise r.error(section, "output", f"{where} has {nout} outputs but only {nin} inputs; gumath 0.2.0dev3's "
                      "gufunc crashes when outputs outnumber inputs -- make some outputs inplace arguments")
    return variant


def _read_kernel(r, section, name, sec, module_kinds, module_ellipses, typemap):
    unknown = set(sec) - KERNEL_KEYS
    if unknown:
        raise r.error(section, ", ".join(sorted(unknown)),
                      f"unknown key{'s' if len(unknown) > 1 else ''} (accepted: "
                      f"{', '.join(sorted(KERNEL_KEYS))})")
    if "prototypes" not in sec or not sec["prototypes"].strip():
        raise r.error(section, "prototypes", "missing: give one or more C prototypes ending in ';'")
    roles = {}
    for new, old in ROLE_KEYS.items():
        if new == "hide":
            continue
        text = "\n".join(sec.get(k, "") for k in (new, old))
        roles[new] = _parse_arg_list(r, section, new, text)
    hides = _parse_hide(r, section, "hide", "\n".join(sec.get(k, "") for k in ("hide", "hide_arguments")))
    dims = _parse_arg_list(r, section, "dimension", "\n".join(sec.get(k, "") for k in ("dimension", "dimensions")))
    for n, d in dims:
        if not d:
            raise r.error(section, "dimension", f"{n!r} has no dimensions (write {n}(n))")
    variants = []
    for text in _split_prototypes(sec["prototypes"]):
        try:
            proto = parse_prototype(text)
        except ValueError as e:
            raise r.error(section, "prototypes", str(e)) from None
        variants.append(_build_variant(r, section, proto, roles, dims, hides, typemap))
    seen = {}
    for v in variants:
        key = tuple(a.dtype for a in v.inputs)
        if key in seen:
            raise r.error(section, "prototypes", f"{seen[key]} and {v.prototype.name} take the same input "
                          f"types {key}; gumath would never select the second")
        seen[key] = v.prototype.name
    return KernelConfig(
        name=name, section=section,
        description=" ".join(sec.get("description", "").split()),
        kinds=_parse_kinds(r, section, "kinds", sec.get("kinds", ""), module_kinds),
        ellipses=_parse_ellipses(r, section, "ellipses", sec.get("ellipses", ""), module_ellipses),
        variants=variants)


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
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the kernel config: {e.strerror}") from None
    return parse_config(text, path, strict)
