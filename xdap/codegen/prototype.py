"""Parse C function prototypes (the part of C the kernel generator reads).

Only declarations of the form ``[extern] RET NAME(PARAMS);`` are understood,
where each parameter is a scalar type, optionally followed by one ``*`` or
``[]`` (a pointer to data) and a name.  That covers what the xndtools
generator accepted and what plain numerical C libraries export.

>>> p = parse_prototype("extern double square(double);")
>>> p.name, p.ret, [(a.name, a.ctype, a.pointer) for a in p.params]
('square', 'double', [('a', 'double', False)])
>>> p.c_declaration()
'double square(double a)'
>>> [q.name for q in scan_header('void f(int n, float *x);  /* c */ int g(void);')]
['f', 'g']
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Words that qualify a declaration but do not change the value's layout.
_QUALIFIERS = {"extern", "static", "inline", "__inline", "__inline__", "const",
               "volatile", "restrict", "__restrict", "__restrict__", "register"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_AUTO_NAMES = "abcdefghijklmopqrstuvwxyz"  # 'n' is skipped: it usually names a length


@dataclass(frozen=True)
class Param:
    """One C parameter: its base type (qualifiers dropped), whether it is a
    pointer, whether the pointee is const, and its name."""
    name: str
    ctype: str
    pointer: bool = False
    const: bool = False

    def c_declaration(self) -> str:
        const = "const " if self.const else ""
        return f"{const}{self.ctype} {'*' if self.pointer else ''}{self.name}"


@dataclass(frozen=True)
class Prototype:
    """A C function prototype: return type ('void' for none), name, params."""
    name: str
    ret: str
    params: tuple

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def c_declaration(self) -> str:
        params = ", ".join(p.c_declaration() for p in self.params) or "void"
        return f"{self.ret} {self.name}({params})"


def _normalise_type(words) -> str:
    return " ".join(w for w in words if w not in _QUALIFIERS)


def _split_decl(text: str):
    """Split 'const float *x' into (type words, pointer?, const?, name|None)."""
    text = re.sub(r"(\w*)\s*\[\s*\]", r" * \1", text)  # float x[] == float *x
    if re.search(r"\[[^\]]*\]", text):
        raise ValueError(f"fixed-size array parameters are not supported: {text.strip()!r}")
    text = text.replace("*", " * ")
    words = text.split()
    stars = words.count("*")
    if stars > 1:
        raise ValueError(f"pointers to pointers are not supported: {text.strip()!r}")
    const = False
    if stars:
        at = words.index("*")
        const = "const" in words[:at]
        after = [w for w in words[at + 1:] if w not in _QUALIFIERS]
        before = words[:at]
        if len(after) > 1:
            raise ValueError(f"cannot read parameter {text.strip()!r}")
        name = after[0] if after else None
    else:
        plain = [w for w in words if w not in _QUALIFIERS]
        before = words
        # The last word is the name unless the declaration is a bare type
        # ('double', 'unsigned int'); a type word never names a parameter.
        if len(plain) > 1 and plain[-1] not in _TYPE_WORDS:
            name = plain[-1]
            at = len(words) - 1 - words[::-1].index(name)
            before = words[:at] + words[at + 1:]
        else:
            name = None
    ctype = _normalise_type(before)
    if not ctype:
        raise ValueError(f"parameter without a type: {text.strip()!r}")
    if name is not None and not _IDENT.match(name):
        raise ValueError(f"invalid parameter name {name!r} in {text.strip()!r}")
    return ctype, bool(stars), const, name


# Words that can only be part of a type, never a parameter name.
_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed",
               "unsigned", "_Bool", "bool", "_Complex", "complex"} | _QUALIFIERS


def parse_prototype(text: str) -> Prototype:
    """Parse one prototype such as ``double square(double a);``.

    Unnamed parameters get the names a, b, c, ... (skipping 'n').  Raises
    ValueError saying what could not be read.
    """
    src = text.strip().rstrip(";").strip()
    src = re.sub(r'extern\s+"C"\s*', "", src)
    m = re.match(r"^(?P<head>[^()]*?)\s*\(\s*(?P<params>[^()]*)\)\s*$", src, re.S)
    if not m:
        raise ValueError(f"not a C function prototype: {text.strip()!r}")
    head = m.group("head").replace("*", " * ").split()
    if len(head) < 2 or not _IDENT.match(head[-1]):
        raise ValueError(f"not a C function prototype (no return type or name): {text.strip()!r}")
    name = head[-1]
    if "*" in head[:-1]:
        raise ValueError(f"{name}: functions returning pointers are not supported")
    ret = _normalise_type(head[:-1])
    if not ret:
        raise ValueError(f"{name}: missing return type")
    raw = m.group("params").strip()
    params = []
    if raw and raw != "void":
        taken = set()
        for i, piece in enumerate(raw.split(",")):
            if piece.strip() == "...":
                raise ValueError(f"{name}: variadic functions are not supported")
            try:
                ctype, pointer, const, pname = _split_decl(piece)
            except ValueError as e:
                raise ValueError(f"{name}: {e}") from None
            if pname is None:
                pname = next(c for c in _AUTO_NAMES if c not in taken) if i < len(_AUTO_NAMES) else f"a{i}"
            if pname in taken:
                raise ValueError(f"{name}: parameter name {pname!r} used twice")
            taken.add(pname)
            params.append(Param(pname, ctype, pointer, const))
    return Prototype(name, ret, tuple(params))


def strip_c_comments_and_directives(text: str) -> str:
    """Remove comments, preprocessor lines and ``extern "C" {`` wrappers."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#.*?(?<!\\)$", " ", text, flags=re.M)
    text = re.sub(r'extern\s+"C"\s*\{', " ", text)
    return text


def scan_header(text: str):
    """All function prototypes declared in a C header, in order.

    Declarations that are not simple prototypes (typedefs, structs, function
    pointers, definitions with bodies) are skipped.
    """
    text = strip_c_comments_and_directives(text)
    text = re.sub(r"\{[^{}]*\}", ";", text)  # drop bodies (inline functions, structs)
    found = []
    for stmt in text.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt or "(" not in stmt or stmt.startswith(("typedef", "struct", "enum", "union")):
            continue
        if "(*" in stmt.replace(" ", ""):
            continue  # function pointer
        try:
            found.append(parse_prototype(stmt))
        except ValueError:
            continue
    return found
