"""NumPy's ``einsum`` on DistArrays (and NumPy arrays beside them), with
NumPy's result on the global arrays: ``xr.dot`` and xarray's
``weighted(...)`` reach it (``xp.einsum``), ``np.einsum(...)`` through
``DistArray.__array_function__``.

How it runs: every operand is laid out over all the subscripts' labels
(``permute_dims`` and new axes of size 1, views), multiplied together
(NumPy's broadcasting: an operand of another distribution moves to the
first's once, as ``a * b`` does) and summed over the labels the output
drops (one reduction).  So a contraction costs the largest operand's
memory -- ``'ij,j->i'``, ``'...ab,...b->...a'``, ``'i,i->'``.  A contraction of
two operands without shared free labels (``'ij,jk->ik'``, whose product
would be ``i * j * k``) goes to ``tensordot`` instead.  A label repeated
inside one operand (a diagonal, ``'ii->i'``) is refused.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(2, 3), comm=MPI.COMM_SELF)
>>> np.einsum("ij,j->i", a, np.ones(3)).to_numpy().tolist()
[3.0, 12.0]
"""
from __future__ import annotations

import string

import numpy as np

from .. import arguments
from ..arraylike import is_distributed
from ..contract import collective

__all__ = ["einsum"]

_LETTERS = set(string.ascii_letters)


def _terms(subscripts, shapes):
    """The labels of each operand and of the output: lists of letters, an
    ellipsis's dims as ``'0'``, ``'1'``, ... (right-aligned, as NumPy
    broadcasts them)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {type(subscripts).__name__} "
                        "(the interleaved form is not supported)")
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands")
    extras = []
    for j, (term, shape) in enumerate(zip(terms, shapes)):
        letters = term.replace("...", "")
        if term.count("...") > 1 or "." in letters or not set(letters) <= _LETTERS:
            raise ValueError(f"einsum: invalid subscripts {term!r} (letters and one '...')")
        if len(set(letters)) != len(letters):
            raise ValueError(f"einsum: a label repeated in one operand ({term!r}: a diagonal) "
                             "is not supported on a DistArray")
        extra = len(shape) - len(letters)
        if extra < 0 or (extra and "..." not in term):
            raise ValueError(f"einsum: operand {j} has {len(shape)} dims, its subscripts "
                             f"{term!r} name {len(letters)}")
        extras.append(extra)
    ellipsis = max(extras, default=0)
    parsed = []
    for term, extra in zip(terms, extras):
        before, has, after = term.partition("...")
        dims = [str(ellipsis - extra + k) for k in range(extra)] if has else []
        parsed.append(list(before) + dims + list(after))
    counts = {}
    for t in parsed:
        for lab in t:
            counts[lab] = counts.get(lab, 0) + 1
    dots = [str(k) for k in range(ellipsis)]
    if arrow:
        if output.count("...") > 1 or not set(output.replace("...", "")) <= _LETTERS:
            raise ValueError(f"einsum: invalid output subscripts {output!r}")
        before, has, after = output.partition("...")
        out = list(before) + (dots if has else []) + list(after)
        if ellipsis and not has:
            raise ValueError("einsum: the output must keep the ellipsis's dims ('...')")
        unknown = [lab for lab in out if lab not in counts]
        if unknown or len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscript {''.join(unknown) or output!r} is not "
                             "an operand's, or is repeated")
    else:
        out = dots + sorted(lab for lab, c in counts.items() if c == 1 and not lab.isdigit())
    return parsed, out


def _sizes(parsed, shapes):
    sizes = {}
    for t, shape in zip(parsed, shapes):
        for lab, n in zip(t, shape):
            if lab in sizes and n != sizes[lab] and 1 not in (n, sizes[lab]):
                raise ValueError(f"einsum: label {lab!r} has sizes {sizes[lab]} and {n}")
            sizes[lab] = max(sizes.get(lab, n), n) if n != 1 else sizes.get(lab, 1)
    return sizes


@collective
def einsum(subscripts, /, *operands, dtype=None, optimize=False, **numpy_kw):
    """NumPy's ``np.einsum(subscripts, *operands)`` (the string form, with
    ``...``), DistArrays and NumPy arrays; ``dtype`` converts the operands
    first; ``optimize`` is accepted and ignored.  A DistArray, or a NumPy
    scalar for a full contraction.  What moves: see the module docstring.
    Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(3.0), comm=MPI.COMM_SELF)
    >>> float(xdap.einsum("i,i->", a, a))
    5.0
    """
    given = [k for k, v in numpy_kw.items() if v is not None]
    if given:
        raise TypeError(f"einsum: {', '.join(given)}= not supported on a DistArray")
    if not any(is_distributed(a) for a in operands):
        raise TypeError("einsum: at least one operand must be a DistArray")
    checked = []
    for a in operands:
        if is_distributed(a):
            arguments.numeric("einsum", a, "every array operand")
            checked.append(a)
        else:
            v = np.asarray(a)
            if v.dtype.kind not in "biufc":
                raise TypeError(f"einsum: an operand of dtype {v.dtype} is not numeric")
            checked.append(v)
    arguments.same_comm("einsum", [a for a in checked if is_distributed(a)])
    dt = arguments.dtype("einsum", dtype)
    parsed, out = _terms(subscripts, [a.shape for a in checked])
    sizes = _sizes(parsed, [a.shape for a in checked])
    yield dict(subscripts=("".join(map(str, out)), tuple(map(tuple, parsed))),
               operands=tuple(checked), dtype=dt, optimize=None, numpy_kw=None)
    if dt is not None:
        from .data_types import astype
        checked = [astype(a, dt) if is_distributed(a) else a.astype(dt) for a in checked]
    return _contract(checked, parsed, out, sizes)


def _contract(operands, parsed, out, sizes):
    from .linear_algebra import tensordot
    from .manipulation import permute_dims
    from .statistical import sum as total
    two = len(operands) == 2 and all(is_distributed(a) for a in operands)
    if two:
        a, b = parsed
        shared = [lab for lab in a if lab in b]
        if shared and not any(lab in out for lab in shared) and \
                all(sizes[lab] == n for t, op in zip(parsed, operands)
                    for lab, n in zip(t, op.shape)):
            result = tensordot(operands[0], operands[1],
                               axes=([a.index(lab) for lab in shared],
                                     [b.index(lab) for lab in shared]))
            labels = [lab for lab in a if lab not in shared] + \
                [lab for lab in b if lab not in shared]
            return _ordered(result, labels, out, permute_dims)
    order = []
    for t in parsed:
        order += [lab for lab in t if lab not in order]
    product = None
    for a, t in zip(operands, parsed):
        spread = _spread(a, t, order)
        product = spread if product is None else product * spread
    dropped = tuple(j for j, lab in enumerate(order) if lab not in out)
    if dropped:
        product = total(product, axis=dropped)
    kept = [lab for lab in order if lab in out]
    if not is_distributed(product):
        return product
    return _ordered(product, kept, out, permute_dims)


def _ordered(x, labels, out, permute_dims):
    if not is_distributed(x) or labels == out:
        return x
    return permute_dims(x, tuple(labels.index(lab) for lab in out))


def _spread(a, labels, order):
    """Operand ``a`` (its dims ``labels``) over all the labels of ``order``:
    its dims permuted to that order, size-1 dims where it has no label."""
    mine = [lab for lab in order if lab in labels]
    perm = tuple(labels.index(lab) for lab in mine)
    key = tuple(slice(None) if lab in labels else None for lab in order)
    if not is_distributed(a):
        return np.transpose(a, perm)[key]
    from .indexing import getitem
    from .manipulation import permute_dims
    if perm != tuple(range(len(perm))):
        a = permute_dims(a, perm)
    return getitem(a, key) if None in key else a
