"""Apply a gumath multimethod to DistArrays (per rank) or plain containers.

``apply(func, *args, out=None)`` takes ANY gumath callable -- a function of
our kernel library, of a module built with ``xdap kernel build``, or of
gumath itself -- and runs it on every rank's local container:

- elementwise kernels (every signature argument ``... * T``) take the fast
  path (``xdap._apply``): the kernel is selected once per dtype tuple, the
  leaves of fixed, ragged (``var * var * T``) and optional (``?T``) data are
  one flat array, the output is allocated without zeroing, and for ``?T``
  the result's validity is the AND of the operands' bitmaps;
- other kernels (array arguments such as ``N * float32``) are called
  through gumath on each local container.

Operands: DistArrays (all sharing one distribution and type shape -- else
a ValueError on every rank saying what differs), plain xnd containers or
NumPy arrays (when no DistArray is given), and Python scalars (broadcast).
Mixed dtypes are converted to their common exact type (a copy of the
converted operand); there is no conversion that loses values.

>>> import numpy as np, gumath, xdap
>>> from mpi4py import MPI
>>> from xdap.kernels import apply
>>> a = xdap.from_global(np.array([0.0, 0.5, 1.0]), comm=MPI.COMM_SELF)
>>> apply(gumath.sin, a).to_global().value == np.sin([0.0, 0.5, 1.0]).tolist()
True
"""
from __future__ import annotations

import dataclasses

import numpy as np
from xnd import xnd

from .. import _xndbuf
from .. import comm as _comm
from .operands import (common_dtype, describe_layout, is_scalar, layout_key, scalar_dtype,
                       to_container)
from ..containers import Parts, as_container, container, parts
from ..types import type_info

__all__ = ["apply", "fast"]

_FAST = {}


def fast(func):
    """The cached fast-path handle (``xdap._apply.Func``) of a gumath callable."""
    _apply = _apply_module()
    if isinstance(func, _apply.Func):
        return func
    hit = _FAST.get(id(func))        # gufuncs are unhashable: key by id, keep func alive
    if hit is None or hit[0] is not func:
        hit = _FAST[id(func)] = (func, _apply.Func(func))
    return hit[1]


_MOD = []


def _apply_module():
    """xdap._apply, imported on first use (kept out of import time)."""
    if not _MOD:
        from .. import _apply
        _MOD.append(_apply)
    return _MOD[0]


def _distarray_type():
    from ..array import DistArray
    return DistArray


def apply(func, *args, out=None):
    """Apply ``func`` (a gumath callable) elementwise per rank.

    Returns a DistArray with the operands' distribution when any operand is
    a DistArray (collective: every rank must call), else an xnd container.
    ``out=`` (a DistArray or container of the result's layout and dtype) is
    written in place and returned; nothing is allocated. Copies happen only
    for operands whose dtype must be converted, for non-contiguous views and
    for operands that partially overlap ``out=`` (NumPy's semantics).
    """
    DistArray = _distarray_type()
    dists = [a for a in args if isinstance(a, DistArray)]
    if not dists:
        if isinstance(out, DistArray):
            raise TypeError("out= is a DistArray but no operand is: pass DistArray operands")
        return local_apply(func, args, out)
    first = dists[0]
    locals_ = [a._local if isinstance(a, DistArray) else a for a in args]
    if out is None and all(a is first or is_scalar(a) for a in args):
        # One DistArray (and scalars): the ranks agree on its dtype and layout
        # class, so every rank reaches the same verdict without communicating.
        result = local_apply(func, locals_, None)
    elif _verdict_is_global(args, out, first, DistArray):
        # Fixed layouts (or ragged operands derived from one another): every
        # check depends only on metadata equal on all ranks (distribution,
        # dtype, type shape; a rank's local shape follows from the
        # distribution), so each rank raises the same error on its own.
        check_distarrays(args, out, DistArray)
        result = local_apply(func, locals_, None if out is None else out._local)
    else:
        # Independent ragged operands: their row lengths are compared rank by
        # rank and may differ on some ranks only -- agree (one allgather).
        result = None
        with _comm.collective_checks(first.comm):
            check_distarrays(args, out, DistArray)
            result = local_apply(func, locals_, None if out is None else out._local)
        # Every rank now knows these rows are equal everywhere (and they never
        # change): share one token so later calls on them skip the allgather.
        token = _rows_token(first)
        for a in args if out is None else args + (out,):
            if isinstance(a, DistArray):
                a._kernel_rows = token
    if out is not None:
        return out
    if isinstance(result, tuple):
        return tuple(derive(first, r) for r in result)
    if result is None:
        return None
    return derive(first, result)


def _verdict_is_global(args, out, first, DistArray):
    """True when no check of this call can fail on some ranks only: operands
    DistArrays or Python scalars, and a fixed layout or ragged arrays that
    share their rows by construction (see ``_rows_token``)."""
    operands = args if out is None else args + (out,)
    for a in operands:
        if not (isinstance(a, DistArray) or is_scalar(a)):
            return False
    if first.info.kind == "fixed":
        return True
    token = _rows_token(first)
    return all(not isinstance(a, DistArray) or a.info.kind != "ragged" or _rows_token(a) is token
               for a in operands)


def _rows_token(a):
    """An object shared by DistArrays whose ragged rows are equal on every
    rank because one was derived from the other by a kernel (``derive``);
    a DistArray built otherwise gets its own."""
    token = a.__dict__.get("_kernel_rows")
    if token is None:
        token = a._kernel_rows = object()
    return token


_INFO = {}


def _result_info(info, leaf):
    """``info`` with the leaf dtype ``leaf`` (cached: called once per result)."""
    key = (info, leaf)
    hit = _INFO.get(key)
    if hit is None:
        if len(_INFO) > 256:
            _INFO.clear()
        hit = _INFO[key] = dataclasses.replace(info, dtype=leaf.lstrip("?"),
                                               optional=leaf.startswith("?"))
    return hit


def derive(a, local):
    """A DistArray with ``a``'s distribution over ``local``, a container of
    ``a``'s layout (any dtype). No communication: the layout equals ``a``'s
    on every rank by construction, so DistArray's collective validation is
    skipped; the attributes are the ones ``DistArray.__init__`` sets."""
    new = object.__new__(type(a))
    new.distribution = a.distribution
    new._local = local
    info = new.info = _result_info(a.info, _leaf(local))
    values, validity, offsets = _xndbuf.layout(local, info.format)   # as parts(), known info
    new._parts = Parts(info, np.asarray(values), None if validity is None else np.asarray(validity),
                       tuple(np.asarray(o) for o in offsets))
    new._leaf_index = a._leaf_index
    if info.kind == "ragged":
        new._kernel_rows = _rows_token(a)
    return new


def check_distarrays(args, out, DistArray):
    """Local part of the collective operand check (raises ValueError/TypeError)."""
    first = None
    for i, a in enumerate(args):
        if isinstance(a, DistArray):
            if first is None:
                first = a
                continue
            _same(first, a, f"operand {i}")
        elif not is_scalar(a):
            raise TypeError(f"operand {i} is a {type(a).__name__}: with DistArray operands the "
                            "others must be DistArrays or Python scalars (distribute it with "
                            "xdap.from_global)")
    if out is not None:
        if not isinstance(out, DistArray):
            raise TypeError(f"out= must be a DistArray like the operands, got {type(out).__name__}")
        _same(first, out, "out=")


_AGREE = {}


def _same(a, b, what):
    da, db, ia, ib = a.distribution, b.distribution, a.info, b.info
    key = (id(da), id(db), ia, ib)
    hit = _AGREE.get(key)
    if hit is not None and hit[0] is da and hit[1] is db:
        return                      # checked before (distributions are immutable)
    if da is not db and da != db:
        raise ValueError(f"{what} has another distribution than operand 0: "
                         f"{db!r} vs {da!r} (redistribute first)")
    if layout_key(ia) != layout_key(ib):
        raise ValueError(f"{what} has another type shape than operand 0: "
                         f"'{describe_layout(ib)}' vs '{describe_layout(ia)}'")
    if ia.kind == "fixed" and a.global_shape != b.global_shape:
        raise ValueError(f"{what} has global shape {b.global_shape}, operand 0 {a.global_shape}")
    if len(_AGREE) > 256:
        _AGREE.clear()
    _AGREE[key] = (da, db)          # the objects keep their ids from being reused


def local_apply(func, args, out=None):
    """One rank's part: containers/NumPy arrays/scalars -> container(s)."""
    f = fast(func)
    xs = list(args)
    if any(type(a) is not xnd for a in xs):
        xs = _as_containers(xs)
    _apply = _apply_module()
    try:
        return f(*xs, out=out)
    except _apply.NeedsCopy:
        xs = [_contiguous(x) for x in xs]
    except _apply.NotElementwise:
        return _gumath_call(func, xs, out)
    except _apply.NoKernel as e:
        return _promoted(f, func, xs, out, e)
    # Copied views take the same dispatch as any container (a bare retry let
    # NoKernel escape: no promotion, another error than for a contiguous one).
    try:
        return f(*xs, out=out)
    except _apply.NotElementwise:
        return _gumath_call(func, xs, out)
    except _apply.NoKernel as e:
        return _promoted(f, func, xs, out, e)


def _as_containers(args):
    """Arrays as containers; Python scalars as 0-d containers of the dtype
    they take next to the array operands."""
    xs = [None if is_scalar(a) else to_container(a) for a in args]
    arrays = [x for x in xs if x is not None]
    if not arrays:
        raise TypeError("at least one operand must be an array (DistArray, xnd or NumPy)")
    dtype = _dtype(arrays[0])
    for i, a in enumerate(args):
        if xs[i] is None:
            v = a.item() if isinstance(a, np.generic) else a
            xs[i] = _scalar(v, dtype)
    return xs


_SCALARS = {}


def _scalar(v, dtype):
    """A 0-d container of the Python scalar v next to an array of ``dtype``;
    cached (kernels only read it) -- building one costs more than a small call."""
    if type(v) is not int and (type(v) is not float or v == 0.0):
        return xnd(v, type=scalar_dtype(v, dtype))       # keep -0.0 apart from 0.0
    key = (type(v), v, dtype)
    hit = _SCALARS.get(key)
    if hit is None:
        hit = xnd(v, type=scalar_dtype(v, dtype))
        if len(_SCALARS) > 512:
            _SCALARS.clear()
        _SCALARS[key] = hit
    return hit


def _contiguous(x):
    """A whole C-contiguous copy of a view the fast path cannot flatten."""
    if x.type.ndim == 0:
        return xnd(x.value, type=str(x.type))
    if str(x.type).startswith("var"):
        # a sliced ragged view: xnd(value, type=...) cannot rebuild one with an
        # empty list (ndtypes dev3), as_container can
        return as_container(x.value, type=type_info(x).type_string())
    p = parts(x)
    return container(Parts(p.info, np.ascontiguousarray(p.values), p.validity, p.offsets))


def _leaf(x):
    """A container's leaf type, e.g. '?float64' -- also of the 0-d scalar
    operands, which ``types.type_info`` rejects (it classifies what can be
    distributed), and without its full parse on this hot path."""
    return str(x.type).rsplit(" * ", 1)[-1]


def _dtype(x):
    return _leaf(x).lstrip("?")


def _promoted(f, func, xs, out, err):
    """Retry with operands converted to their common exact dtype."""
    dtypes = [_dtype(x) for x in xs]
    common = dtypes[0]
    for d in dtypes[1:]:
        common = common_dtype(common, d) if common is not None else None
    if common is not None and any(d != common for d in dtypes):
        from .. import _apply
        try:
            f.select(*([common] * len(xs)))
        except _apply.NoKernel:
            pass
        else:
            return f(*[_cast(x, common) if d != common else x for x, d in zip(xs, dtypes)],
                     out=out)
    name = getattr(f, "name", "kernel")
    if common is None:
        raise TypeError(f"no kernel for {', '.join(dtypes)} in {name}: gumath converts only "
                        "exactly (int32 -> float64 yes, int64 -> float64 no), and these dtypes "
                        "have no common exact type; convert explicitly") from None
    raise TypeError(f"no kernel for {common} in {name} (no {name}({', '.join(dtypes)})): "
                    "gumath converts only exactly (int32 -> float64 yes, int64 -> float64 no); "
                    "convert explicitly, e.g. to float64, if you accept rounding") from None


def _cast(x, dtype):
    """x converted to dtype (a copy; exact by construction)."""
    if x.type.ndim == 0:
        t = str(x.type)
        return xnd(x.value, type=("?" if t.startswith("?") else "") + dtype)
    p = parts(x)
    info = dataclasses.replace(p.info, dtype=dtype)
    return container(Parts(info, p.values.astype(info.numpy_dtype), p.validity, p.offsets))


def _gumath_call(func, xs, out):
    """Non-elementwise kernels: gumath's own dispatch on the whole containers."""
    result = func(*xs)
    if out is None:
        return result
    res = result if isinstance(result, tuple) else (result,)
    outs = out if isinstance(out, tuple) else (out,)
    for r, o in zip(res, outs):       # gumath has no out=: copy into it
        po, pr = parts(o), parts(r)
        np.copyto(po.values, pr.values.reshape(po.values.shape))
    return out
