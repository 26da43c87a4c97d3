"""Write a starting .cfg from the prototypes in a C header.

Every prototype becomes a ``[KERNEL name]`` section with xndtools' guesses
of the intents: parameters passed by value are inputs, ``const T *``
pointers inputs, ``T *`` pointers inplace, the return value the output.  A
function with an integer parameter named like a length (``n``, ``len``,
``size``, ``count``, ...) takes its pointers as arrays of that length
(``x(n)``) and the length is hidden (``hide = n``: the array's length);
otherwise pointers are single values.  Review the guesses: C does not say
what a pointer is.  C types the default typemap does not know are listed under
``typemaps`` with a placeholder the user must fill in (the generator
rejects the file until then).

>>> print(skeleton_config('void scale(int n, double *x, const double *w);', 'v.h', 'v')
...       .split("[KERNEL scale]")[1])
<BLANKLINE>
prototypes =
      void scale(int n, double *x, const double *w);
description =
dimension =
input = w(n)
inplace = x(n)
inout =
output =
hide = n
<BLANKLINE>
>>> print(skeleton_config('extern double square(double);', 'square.h', 'square'))
[MODULE square]
typemaps =
includes =
      square.h
include_dirs =
sources =
libraries =
library_dirs =
header_code =
kinds = Xnd, Strided
ellipses = ..., var...
<BLANKLINE>
[KERNEL square]
prototypes =
      double square(double a);
description =
dimension =
input = a
inplace =
inout =
output =
hide =
<BLANKLINE>
"""
from __future__ import annotations

import pathlib
import re

from .prototype import scan_header
from .typemap import DEFAULT_TYPEMAP, normalise

_INDENT = " " * 6


def _block(key, items):
    if not items:
        return [f"{key} ="]
    return [f"{key} ="] + [_INDENT + i for i in items]


def skeleton_config(header_text: str, header_name: str, module: str, sources=()) -> str:
    """The skeleton .cfg text for a header's prototypes."""
    protos = scan_header(header_text)
    if not protos:
        raise ValueError(f"{header_name}: no C function prototypes found")
    unknown = []
    for p in protos:
        for t in [p.ret] + [q.ctype for q in p.params]:
            t = normalise(t)
            if t != "void" and t not in DEFAULT_TYPEMAP and t not in unknown:
                unknown.append(t)
    lines = [f"[MODULE {module}]"]
    lines += _block("typemaps", [f"{t}: FILL_IN_DTYPE" for t in unknown])
    lines += _block("includes", [header_name])
    lines += ["include_dirs ="]
    lines += _block("sources", list(sources))
    lines += ["libraries =", "library_dirs =", "header_code =",
              "kinds = Xnd, Strided", "ellipses = ..., var...", ""]
    for p in protos:
        length = next((q.name for q in p.params if not q.pointer and q.name in _LENGTH_NAMES
                       and normalise(q.ctype) in _INTEGER_TYPES), None)
        if length is not None and not any(q.pointer for q in p.params):
            length = None

        def arg(q):
            return f"{q.name}({length})" if q.pointer and length else q.name
        ins = [arg(q) for q in p.params if (not q.pointer or q.const) and q.name != length]
        ptrs = [arg(q) for q in p.params if q.pointer and not q.const]
        lines += [f"[KERNEL {p.name}]"]
        lines += _block("prototypes", [p.c_declaration() + ";"])
        lines += ["description =", "dimension =",
                  f"input = {', '.join(ins)}".rstrip(),
                  f"inplace = {', '.join(ptrs)}".rstrip(),
                  "inout =", "output =",
                  f"hide = {length or ''}".rstrip(), ""]
    return "\n".join(lines)


# integer parameters whose name says they are the length of the pointers
_LENGTH_NAMES = {"n", "len", "length", "size", "count", "nelem", "nitems", "num", "N"}
_INTEGER_TYPES = {"int", "long", "long long", "short", "unsigned", "unsigned int", "unsigned long",
                  "size_t", "ssize_t", "int32_t", "int64_t", "uint32_t", "uint64_t", "intptr_t"}


def write_skeleton(header, out=None) -> pathlib.Path:
    """Write the skeleton for ``header`` to ``out`` (default: the header's
    name with ``-kernels.cfg`` next to it).  A ``NAME.c`` next to the header
    is listed under ``sources``, relative to the cfg file."""
    header = pathlib.Path(header)
    try:
        text = header.read_text()
    except OSError as e:
        raise ValueError(f"{header}: cannot read the header: {e.strerror}") from None
    out = pathlib.Path(out) if out else header.with_name(f"{header.stem}-kernels.cfg")
    module = re.sub(r"\W", "_", header.stem)
    if module[0].isdigit():
        module = "_" + module
    sources = []
    impl = header.with_suffix(".c")
    if impl.exists():
        sources.append(str(_relative(impl.resolve(), out.resolve().parent)))
    include = _relative(header.resolve(), out.resolve().parent)
    out.write_text(skeleton_config(text, str(include), module, sources))
    return out


def _relative(path: pathlib.Path, base: pathlib.Path) -> pathlib.Path:
    import os
    return pathlib.Path(os.path.relpath(path, base))
