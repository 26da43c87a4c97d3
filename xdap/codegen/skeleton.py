"""Write a starting .cfg from the prototypes in a C header.

Every prototype becomes a ``[KERNEL name]`` section: parameters passed by
value are inputs, pointers are inplace single values (add ``x(n)``-style
dimensions and a ``hide`` entry for array functions), the return value is
the output.  C types the default typemap does not know are listed under
``typemaps`` with a placeholder the user must fill in (the generator
rejects the file until then).

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
        ins = [q.name for q in p.params if not q.pointer]
        ptrs = [q.name for q in p.params if q.pointer]
        lines += [f"[KERNEL {p.name}]"]
        lines += _block("prototypes", [p.c_declaration() + ";"])
        lines += ["description =", "dimension =",
                  f"input = {', '.join(ins)}".rstrip(),
                  f"inplace = {', '.join(ptrs)}".rstrip(),
                  "inout =", "output =", "hide =", ""]
    return "\n".join(lines)


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
