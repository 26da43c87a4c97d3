"""Kernels with core dimensions on DistArrays (gufunc semantics).

``check_core_operands(name, sig, args)`` then ``core_call(name, func, sig,
args, loop, dists)`` run a kernel whose signature has
core dims (``xdap.kernels.signature``) on every rank's part and returns
the result with the distribution gufunc semantics give it:

- an operand's trailing dims, as many as its core dims in the signature,
  are its core dims; they must be whole on every rank (undistributed, in
  global order) -- a distributed core dim is one ValueError on every rank
  naming ``redistribute``, before any data is touched;
- the loop dims (the rest, outer) may be distributed; every DistArray
  operand has the same loop distribution, and the result keeps it;
- a result's core dims are undistributed, sized by the inputs' core dims
  of the same name;
- beside DistArrays, a NumPy array or xnd container may be passed when it
  holds core dims only (the vector of a mat-vec: the same on every rank,
  as a scalar operand is), and Python scalars where the core is empty.

Every check reads only what every rank agreed when the arrays were made
(distributions, types, the kernel's signature), so every rank reaches the
same verdict with no communication.  The local result is checked against
the shape the result's distribution promises before it is wrapped: a
kernel call never returns values from outside its buffers.

Ragged operands (``var * var * T``, rows distributed) take the kernel's
var family (``D... * var * T``): core dims are the innermost var levels;
the rows are always loop dims.  A result with the rows as its only var
level is a fixed array of rows (a row sum of ragged rows is ``N * T``).

A built module's kernels and ``xdap.kernels.apply`` come here for every
kernel with core dims; ``docs/kernels.md`` has the worked examples.
"""
from __future__ import annotations

import numpy as np
from xnd import xnd

from ..arraylike import is_distributed, unwrap
from ..parts import Parts, as_container, container, parts, parts_of
from ..types import TypeInfo, type_info
from .operands import cast, converts, operand_dtype

__all__ = ["core_call", "check_core_operands"]



def _describe(sig) -> str:
    return f"'{sig.text}'"


def check_core_operands(name, sig, args):
    """The local checks of a core-dim call; returns (the loop distribution,
    each output's distribution -- None for ragged operands, whose results
    take their form from the kernel).  Raises ValueError/TypeError alike on
    every rank."""
    for i, (a, want) in enumerate(zip(args, sig.dtypes)):
        have = operand_dtype(a)
        if have is not None and want is not None and not converts(have, want, "safe"):
            raise TypeError(f"{name}: no kernel takes {have} for operand {i} (the kernel "
                            f"{_describe(sig)} takes {want}), nor anything it converts to "
                            "without loss; convert explicitly with astype")
    loop, sizes, first = None, {}, None
    for i, (a, core) in enumerate(zip(args, sig.inputs)):
        k = len(core)
        if is_distributed(a):
            d, p = unwrap(a)
            if not p.info.numeric:
                p.info.require_numeric(name, f"operand {i}")
            if p.info.ragged:
                this = _ragged_loop(name, sig, i, d, p, k)
            else:
                this = _fixed_loop(name, sig, i, d, core, sizes)
            if loop is None:
                loop, first = this, i
            elif this != loop:
                raise ValueError(f"{name}: operand {i}'s loop dimensions are distributed "
                                 f"otherwise than operand {first}'s ({this!r} vs {loop!r}); "
                                 f"a kernel's loop dims must match (redistribute first)")
        elif isinstance(a, (np.ndarray, xnd)):
            shape = _shape(a)
            if len(shape) != k:
                raise TypeError(f"{name}: operand {i} is a {type(a).__name__} with {len(shape)} "
                                f"dims beside DistArrays; an operand that is not distributed may "
                                f"hold the kernel's core dims only ({k} in {_describe(sig)}), the "
                                "same on every rank -- distribute the rest with xdap.from_global")
            _bind(name, sig, i, core, shape, sizes)
        elif k:
            raise TypeError(f"{name}: operand {i} is a scalar where {_describe(sig)} takes "
                            f"{k} core dims")
    if loop is None:
        raise TypeError(f"{name}: no DistArray operand")
    ragged = sig.ragged and any(is_distributed(a) and a.parts.info.ragged for a in args)
    return loop, None if ragged else result_distributions(name, sig, loop, sizes)


def _fixed_loop(name, sig, i, d, core, sizes):
    k, nd = len(core), d.ndim
    if nd < k or (not sig.looped[i] and nd != k):
        need = f"{k}" if not sig.looped[i] else f"at least {k}"
        raise ValueError(f"{name}: operand {i} has {nd} dims; {_describe(sig)} needs {need}")
    for j in range(nd - k, nd):
        m = d.maps[j]
        if not m.whole:
            raise ValueError(
                f"{name}: core dimension {core[j - nd + k]} of operand {i} (its dim {j}) is "
                f"distributed ({m.describe()} over {m.grid_size} processes); a kernel's core "
                f"dims ({_describe(sig)}) must be whole on every rank: "
                + (f"redistribute it first, e.g. a.redistribute(dist={_suggest(nd, nd - k)!r})"
                   if nd > k else "the kernel consumes every dim of it: call the kernel on "
                   "a.to_global() (the whole array on every rank), or give it loop dims"))
    _bind(name, sig, i, core, d.global_shape[nd - k:], sizes)
    return d.leading(nd - k)


def _suggest(ndim: int, loop: int) -> tuple:
    """A distribution that keeps the core dims whole: block rows."""
    return ("b",) + ("n",) * (ndim - 1) if loop else ("n",) * ndim


def _ragged_loop(name, sig, i, d, p, k):
    core = sig.inputs[i]
    if any(c != "var" for c in core):
        raise ValueError(f"{name}: operand {i} is ragged ({p.info.type_string()}) but "
                         f"{_describe(sig)} has fixed core dims inside its var dims; xdap's "
                         "ragged types have var dims only")
    if p.info.var_ndim - k < 1:
        raise ValueError(f"{name}: {_describe(sig)} would consume the rows of ragged operand "
                         f"{i} ({p.info.type_string()}), the dimension that is distributed; "
                         "a kernel's core dims must be whole on every rank")
    return d


def _bind(name, sig, i, core, shape, sizes):
    for n, s in zip(core, shape):
        if n == "var":
            continue
        if sizes.setdefault(n, int(s)) != int(s):
            raise ValueError(f"{name}: core dimension {n} of operand {i} has size {s}, another "
                             f"operand's has {sizes[n]} ({_describe(sig)})")


def _shape(a) -> tuple:
    if isinstance(a, np.ndarray):
        return a.shape
    t = a.type
    return tuple(t.shape) if not str(t).startswith("var") else ()


def result_distributions(name, sig, loop, sizes):
    """The distribution of each fixed output: the loop distribution with
    the output's core dims appended, undistributed."""
    dists = []
    for j, core in enumerate(sig.outputs):
        missing = [n for n in core if n not in sizes]
        if missing:
            raise ValueError(f"{name}: output {j}'s core dims {missing} are not sizes of any "
                             f"input ({_describe(sig)})")
        dists.append(loop.with_trailing(tuple(sizes[n] for n in core)))
    return dists


def core_call(name, func, sig, args, loop, dists):
    """Run the kernel on every rank's part (see the module docstring), with
    what ``check_core_operands`` returned for these operands.  Returns
    (distribution, Parts) per output, or None for a kernel that only writes
    its operands in place (``-> void``)."""
    xs = [_local(a, dtype) for a, dtype in zip(args, sig.dtypes)]
    result = func(*xs)
    if result is None:
        return None
    results = result if isinstance(result, tuple) else (result,)
    got = []
    for j, r in enumerate(results):
        if dists is None:
            got.append(_ragged_result(name, loop, r))
        else:
            got.append(_fixed_result(name, dists[j], r))
    return got


def _local(a, dtype):
    """One operand as gumath takes it: this rank's container, a NumPy
    array's (zero-copy when contiguous), a scalar as a 0-d container of the
    kernel's dtype; converted to the kernel's dtype when it differs (a
    copy: NumPy's gufunc promotion)."""
    if is_distributed(a):
        c = container(a.parts)
    elif isinstance(a, np.ndarray):
        c = as_container(a)      # zero-copy when C-contiguous; complex too
    elif isinstance(a, xnd):
        c = a
    else:
        return xnd(a.item() if isinstance(a, np.generic) else a, type=dtype)
    have = operand_dtype(c)
    # the signature was chosen for operands that convert to it (signature_for)
    return cast(c, dtype) if dtype is not None and have != dtype and converts(have, dtype, "safe") \
        else c


def _fixed_result(name, d, r):
    p = parts(r)
    if p.info.ragged or tuple(p.values.shape) != d.local_shape:
        raise RuntimeError(f"{name}: the kernel returned a local result of type {r.type}, where "
                           f"the result's distribution promises shape {d.local_shape}: refused "
                           "(never values from outside the kernel's buffers)")
    return d, p


def _ragged_result(name, d, r):
    """A ragged kernel's result: ragged rows again, or -- when the rows are
    its only var level -- a fixed array of rows."""
    t = str(r.type)
    if t.startswith("var * ") and " * " not in t[6:]:
        # one var level, the rows: a row's one leaf is its value (zero-copy)
        leaf = t[6:]
        flat = parts_of(r, TypeInfo.of_ragged(1, leaf.lstrip("?"), leaf.startswith("?")))
        p = Parts(TypeInfo.fixed(flat.values.shape, flat.info.dtype, flat.info.optional),
                  flat.values, flat.validity)
    elif t.startswith("var * var * "):
        p = parts_of(r, type_info(r, scalar=True))
    else:
        raise ValueError(f"{name}: the kernel's result type {t} on ragged rows has no xdap "
                         "form (ragged types are var dims over a leaf)")
    if p.nrows != d.local_shape[0]:
        raise RuntimeError(f"{name}: the kernel returned {p.nrows} rows where this rank holds "
                           f"{d.local_shape[0]}: refused")
    return d, p
