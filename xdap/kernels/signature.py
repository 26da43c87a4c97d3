"""The core dimensions of a gumath kernel: gufunc semantics on DistArrays.

A kernel signature such as ``... * N * float64, ... * N * float64 -> ...
* float64`` splits each operand into *loop* dimensions (the ellipsis:
outer, any number, looped over) and *core* dimensions (``N``: the
signature's own, consumed or produced whole by one call of the C
function).  On distributed data the rule follows: loop dimensions may be
distributed and keep their maps in the result; core dimensions must be
whole on every rank (undistributed), and a result's core dimensions are
undistributed.  This module reads the rule off a kernel's signatures; the
checks against operands live in ``xdap.kernels.cores``.

>>> s = parse("... * N * float64, ... * N * float64 -> ... * float64")
>>> s.inputs, s.outputs, s.elementwise
((('N',), ('N',)), ((),), False)
>>> parse("D... * var * float64 -> D... * float64").ragged
True
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..codegen.config import BATCH_DIM
from .operands import converts

__all__ = ["Signature", "parse", "signature_for"]


@dataclass(frozen=True)
class Signature:
    """One kernel signature, reduced to what distribution needs.

    inputs, outputs   the core dim names of each argument, outer first
                      (``'var'`` for a ragged core dim)
    dtypes            the input leaf dtypes
    looped            per input: whether it has an ellipsis (loop dims)
    ragged            the var-dimension family (``D...`` / ``var...``)
    text              the signature as gumath prints it
    """
    inputs: tuple
    outputs: tuple
    dtypes: tuple
    looped: tuple
    ragged: bool
    text: str

    @property
    def elementwise(self) -> bool:
        """No core dims anywhere: every element is one call."""
        return not any(self.inputs) and not any(self.outputs)


def _split_top(text: str, sep: str) -> list:
    """``text`` split at ``sep`` outside brackets (record dtypes hold commas)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c in "{([<":
            depth += 1
        elif c in "})]>":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    out.append(text[start:])
    return [s.strip() for s in out]


def _argument(text: str):
    """(looped, family, core dim names, dtype) of one argument's type."""
    dims = _split_top(text, " * ")
    dtype = dims.pop()
    looped, family = False, None
    if dims and dims[0].endswith("..."):
        looped, family = True, dims.pop(0)
    return looped, family, tuple(dims), dtype


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> Signature:
    """A gumath kernel signature string as a ``Signature``."""
    lhs, _, rhs = text.partition("->")
    ins = [_argument(a) for a in _split_top(lhs.strip(), ", ") if a]
    rhs = rhs.strip()
    outs = [] if rhs in ("", "void") else [_argument(a) for a in _split_top(rhs, ", ")]
    families = {f for _, f, _, _ in ins + outs if f}
    return Signature(inputs=tuple(c for _, _, c, _ in ins),
                     outputs=tuple(c for _, _, c, _ in outs),
                     dtypes=tuple(d for _, _, _, d in ins),
                     looped=tuple(lp for lp, _, _, _ in ins),
                     ragged=any(f != "..." for f in families) or any(
                         "var" in c for _, _, c, _ in ins),
                     text=text)


def signature_for(kernels: tuple, dtypes: tuple, ragged: bool) -> Signature | None:
    """The signature gumath will pick for operands of these leaf dtypes
    (``None`` for a scalar: any dtype) from ``kernels`` (``f.kernels``):
    the first of the operands' family (fixed or ragged) with their arity
    and dtypes, else the first of the family with their arity (the core
    structure of a multimethod does not depend on the dtype in any config
    xndtools writes; gumath's own error reports a dtype it has no kernel
    for).  None when nothing has their arity."""
    # the batched sets (BATCH_DIM) of generated modules are gumath's to pick
    candidates = [s for s in map(parse, kernels) if len(s.inputs) == len(dtypes)
                  and BATCH_DIM not in s.text]
    family = [s for s in candidates if s.ragged == ragged] or candidates
    # NumPy's gufunc rule -- the first loop every operand converts to --
    # with xdap's: exact conversions first (float32 -> float64), then
    # NumPy's safe ones (int64 -> float64, as np.sin of integers)
    for rule in ("same", "exact", "safe"):
        for s in family:
            if all(d is None or (d == k if rule == "same" else converts(d, k, rule))
                   for d, k in zip(dtypes, s.dtypes)):
                return s
    return family[0] if family else None
