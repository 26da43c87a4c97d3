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

>>> import numpy as np, gumath
>>> from xdap.kernels import apply
>>> apply(gumath.sin, np.array([0.0, 0.5, 1.0])).value == np.sin([0.0, 0.5, 1.0]).tolist()
True
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np
from xnd import xnd

from ..agreement import agreement, debug
from ..contract import failed, inside, nested
from ..arraylike import is_distributed, unwrap, wrap_like
from ..parts import Parts, as_container, container, parts, parts_of
from ..types import dtype_from_numpy, is_numeric, numpy_dtype, type_info
from . import cores
from .operands import (cast, common_dtype, converts, exact_float, is_scalar, operand_dtype,
                       scalar_dtype, to_container)
from .signature import parse, signature_for

__all__ = ["apply", "fast"]


def fast(func):
    """The fast-path handle (``xdap._apply.Func``) of a gumath callable, kept
    in the kernel dispatch cache under the function's table and name
    (gufunc objects are unhashable; their tables live as long as the
    process). Not a plan: the dispatch has its own small cache."""
    _apply = _apply_module()
    if isinstance(func, _apply.Func):
        return func
    key = _apply.key(func)
    handle = _HANDLES.get(key)
    if handle is None:
        if len(_HANDLES) >= _MAX_HANDLES:
            _HANDLES.pop(next(iter(_HANDLES)))      # the oldest: a bounded table
        handle = _HANDLES[key] = _apply.Func(func)
    return handle


# the kernel dispatch cache: {(table, name): fast-path handle}
_HANDLES: dict = {}
_MAX_HANDLES = 256


_MOD = []


def _apply_module():
    """xdap._apply, imported on first use (kept out of import time)."""
    if not _MOD:
        import xdap._apply
        _MOD.append(xdap._apply)
    return _MOD[0]


def apply(func, *args, out=None):
    """Apply ``func`` (a gumath callable) elementwise per rank.

    Returns an array of the operands' kind and distribution when any operand
    is a DistArray (collective: every rank must call), else an xnd
    container.  ``out=`` (a DistArray or container of the result's layout
    and dtype) is written in place and returned; nothing is allocated.
    Copies happen only for operands whose dtype must be converted, for
    non-contiguous views and for operands that partially overlap ``out=``
    (NumPy's semantics).
    """
    if type(func).__name__ == "Kernel":      # a built module's function: its gumath one
        func = func.__gufunc__
    dists = [a for a in args if is_distributed(a)]
    if not dists:
        if is_distributed(out):
            raise TypeError("out= is a DistArray but no operand is: pass DistArray operands")
        return local_apply(func, args, out)
    first = dists[0]
    if debug() and first.distribution.comm.size > 1 and not nested():
        # debug mode: the whole call votes first -- the kernel, every operand
        # and the shape they broadcast to -- and what follows trusts it
        with _agreed_call(first.distribution.comm, _kernel_name(func), args, out,
                          check=functools.partial(_whole_call_checks, func, first)):
            pass
        # the kernel's own failure here, after the vote: the next vote's
        with inside, _OnThisRank(first.distribution.comm, _kernel_name(func)):
            return _apply_distributed(func, args, out, first)
    return _apply_distributed(func, args, out, first)


def _whole_call_checks(func, first, args, out):
    """The checks of a kernel call on DistArrays that hold whatever path
    it then takes (debug mode's vote): operands that are arrays or
    scalars, a DistArray ``out=``, and shapes that broadcast (kernels with
    core dimensions check their own shapes later)."""
    for i, a in enumerate(args):
        if not is_distributed(a) and not is_scalar(a) and \
                not isinstance(a, (np.ndarray, list, xnd)):
            raise TypeError(f"operand {i} is a {type(a).__name__}: with DistArray "
                            "operands the others must be arrays or Python scalars")
    if out is not None and not is_distributed(out):
        raise TypeError(f"out= must be a DistArray like the operands, got "
                        f"{type(out).__name__}")
    if core_signature(func, args) is None and needs_broadcast(args, first):
        broadcast_shape_of(args, out)


def _apply_distributed(func, args, out, first):
    """``apply`` with DistArray operands (see ``apply``)."""
    sig = core_signature(func, args)
    if sig is not None:
        return _apply_core(func, sig, args, out, first)
    if needs_broadcast(args, first):
        args = broadcast_operands(args, out)
        first = next(a for a in args if is_distributed(a))
    d0, p0 = unwrap(first)
    locals_ = [container(a.parts) if is_distributed(a) else a for a in args]
    # an out= of the wrong kind is refused by the checks below (on every
    # rank in debug mode), not by an AttributeError here
    target = container(out.parts) if is_distributed(out) else None
    # The operand checks (distributions, type shapes, out=) read only what
    # every rank agreed when the arrays were made, so every rank reaches the
    # same verdict alone: no communication (in debug mode, a vote).  Ragged
    # operands whose rows were not derived from each other are the
    # exception: their row lengths are this rank's data, so the kernel's
    # verdict joins one agreement -- once: then they share their rows.
    if not _rows_shared(args, out, p0):
        with agreed_call(d0.comm, _kernel_name(func), args, out):
            result = local_apply(func, locals_, target)
        token = p0.rows_token()
        for a in args if out is None else args + (out,):
            if is_distributed(a):
                a.parts.rows = token
    else:
        with local_call(d0.comm, _kernel_name(func), args, out):
            result = local_apply(func, locals_, target)
    if out is not None:
        return out
    return results_like(first, d0, p0, result)


def results_like(first, d, p0, result):
    """A kernel's result -- a container, a tuple of them (several outputs),
    or None (an in-place kernel that returns nothing) -- as arrays like
    ``first`` (``_derived``: its distribution and rows)."""
    if isinstance(result, tuple):
        return tuple(_derived(first, d, p0, r) for r in result)
    if result is None:
        return None
    return _derived(first, d, p0, result)


def needs_broadcast(args, first) -> bool:
    """Whether elementwise ``args`` need ``broadcast_operands``: a NumPy
    operand, a fixed DistArray of another shape than ``first``, or one of
    ``first``'s shape in another distribution (aligned by a redistribution).
    Decided from agreed distributions: the same on every rank."""
    d = first.distribution
    for a in args:
        if isinstance(a, (np.ndarray, list)):
            return True
        if is_distributed(a) and a.distribution is not d and a.distribution != d:
            if a.distribution.global_shape == d.global_shape or not a.parts.info.ragged:
                return True
    return False


class RedistributionWarning(UserWarning):
    """Operands of one shape were distributed differently, and all but the
    first were redistributed to the first's distribution (an exchange each)."""


def broadcast_operands(args, out=None):
    """Elementwise operands of different shapes, as NumPy broadcasts them,
    made DistArrays of one distribution -- the leading operand's: the
    DistArray of the result's shape (or one whose size-1 undistributed dims
    stretch to it).  A NumPy array (the same on every rank, like a scalar)
    contributes the elements of this rank's block: local, no MPI call; a
    smaller DistArray (``a - a.mean(axis=0)``) is first gathered on every
    rank (collective: its shape is agreed, so every rank does it) -- the
    larger operand never moves.  A DistArray of the result's shape in
    another distribution (``a[1:] + b[:-1]``: two irregular blocks) is
    redistributed to the leading one's -- one exchange, collective, with a
    ``RedistributionWarning`` (on rank 0, once per call site); redistribute
    operands alike beforehand to avoid it.  0-d DistArrays are their one
    value."""
    shape = broadcast_shape_of(args, out)
    lead = _leading(args, shape, out)
    d = lead.distribution
    converted = []
    for a in args:
        if a is lead or (is_distributed(a) and a.distribution == d):
            converted.append(a)
            continue
        if is_distributed(a):
            if a.distribution.global_shape == d.global_shape:
                converted.append(_redistributed(a, d))
                continue
            if a.parts.info.ragged:
                raise ValueError("a ragged operand does not broadcast; give operands the "
                                 "same rows")
            aligned = _aligned(a, d)
            if aligned is not None:            # a.sum(axis=1)[:, None]: stretched in place
                converted.append(aligned)
                continue
            if a.distribution.maps:
                a = np.asarray(a.to_numpy())   # the smaller operand, on every rank
            else:
                # a 0-d array is its value -- as a NumPy scalar, whose dtype
                # counts in the promotion as the array's would (not .item(): a
                # Python scalar is weak)
                converted.append(a.parts.values[()] if a.parts.validity is None
                                 else a.local.value)
                continue
        elif not isinstance(a, (np.ndarray, list)):
            converted.append(a)
            continue
        converted.append(lead.__xdap_wrap__(d, _local_block(np.asarray(a), d), False, True))
    return tuple(converted)


def broadcast_shape_of(args, out=None) -> tuple:
    """The shape elementwise ``args`` broadcast to (NumPy's rule on the
    global shapes), checked: they broadcast, and one DistArray operand has
    that shape or stretches to it along undistributed size-1 dims -- else
    the ValueError every rank raises alike (decided from agreed shapes)."""
    shapes = [a.distribution.global_shape if is_distributed(a) else np.shape(a)
              for a in args if is_distributed(a) or isinstance(a, (np.ndarray, list))]
    if out is not None:
        shapes.append(out.distribution.global_shape)
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with global shapes "
                         f"{' '.join(map(str, shapes))}") from None
    if not any(is_distributed(a) and (a.distribution.global_shape == shape or _stretches(a, shape))
               for a in args):
        raise ValueError(f"no DistArray operand has the broadcast shape {shape} or stretches "
                         "to it along undistributed dims; give one operand the result's shape "
                         "and distribution")
    return shape


def _stretches(a, shape) -> bool:
    return a.ndim == len(shape) and not a.parts.info.ragged and all(
        n == m or (n == 1 and mp.grid_size == 1 and not mp.padded)
        for n, m, mp in zip(a.distribution.global_shape, shape, a.distribution.maps))


def _redistributed(a, d):
    """``a`` moved to ``d`` (same global shape): collective, one exchange."""
    from ..movement.redistribute import move
    if d.comm.rank == 0:
        import warnings
        warnings.warn("operands of one shape are distributed differently: the others are "
                      "redistributed to the first's distribution (one exchange each); "
                      "redistribute them alike first to avoid the copy",
                      RedistributionWarning, stacklevel=4)
    return wrap_like(a, *move(*unwrap(a), d), agreed=True)


def _leading(args, shape, out):
    """The DistArray whose distribution the result takes."""
    for a in args:
        if is_distributed(a) and a.distribution.global_shape == shape:
            return a
    for a in args:            # size-1, undistributed dims stretch locally
        if is_distributed(a) and _stretches(a, shape):
            return _stretched(a, shape)
    raise ValueError(f"no DistArray operand has the broadcast shape {shape} or stretches to "
                     "it along undistributed dims; give one operand the result's shape and "
                     "distribution")


def _aligned(a, d):
    """``a`` stretched along its size-1 undistributed dims to ``d`` -- when
    it then has ``d`` exactly (its other dims distributed as ``d``'s), else
    None.  Decided from agreed distributions: the same on every rank."""
    da = a.distribution
    if da.ndim != d.ndim:
        return None
    stretch = [j for j, (m, n) in enumerate(zip(da.maps, d.maps))
               if m.size == 1 and n.size != 1 and m.grid_size == 1 and not m.padded]
    maps = [d.maps[j] if j in stretch else m for j, m in enumerate(da.maps)]
    if maps != list(d.maps) or any(d.maps[j].grid_size > 1 for j in stretch):
        return None
    s = _stretched(a, d.global_shape)
    return s if s.distribution == d else None


def _stretched(a, shape):
    from ..maps import BlockMap
    from ..distribution import Distribution
    d = a.distribution
    maps = [m if m.size == n else BlockMap(n, 1) for m, n in zip(d.maps, shape)]
    nd = Distribution(maps, d.comm, d.rank_coords)
    values = np.asarray(np.broadcast_to(a.parts.values, nd.local_shape), order="C")
    p = a.parts
    validity = None
    if p.validity is not None:
        from ..bitmaps import pack_validity
        validity = pack_validity(np.broadcast_to(p.valid_mask(), nd.local_shape))
    return a.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values, validity),
                           False, True)


def _local_block(v: np.ndarray, d):
    """This rank's block of a global NumPy operand broadcast to ``d``'s
    shape (its global indices along each dim; ghost cells included)."""
    nd = d.ndim
    v = v.reshape((1,) * (nd - v.ndim) + v.shape)
    index = tuple(np.asarray(d.global_indices(j)) if v.shape[j] != 1 else np.zeros(1, np.int64)
                  for j in range(nd))
    local = np.broadcast_to(v[np.ix_(*index)] if nd else v, d.local_shape)
    # as_container, not xnd.from_buffer: ndtypes' importer cannot read NumPy's
    # PEP 3118 complex formats ('Zf', 'Zd')
    return parts(as_container(np.asarray(local, order="C"))) if local.dtype != object else \
        parts(to_container(local))


def core_signature(func, args):
    """The signature gumath picks for these operands when it has core
    dims (``xdap.kernels.signature``), else None (elementwise: the fast
    path).  A function whose signatures are all elementwise is known from
    its first call (one dict lookup after)."""
    try:
        key = _apply_module().key(func)
    except TypeError:
        return None
    kernels = _CORE_KERNELS.get(key)
    if kernels is None:              # gumath builds .kernels' list anew: ~5 us
        kernels = getattr(func, "kernels", ())
        elementwise = all(parse(k).elementwise for k in kernels)
        kernels = _CORE_KERNELS[key] = () if elementwise else tuple(kernels)
    if not kernels:
        return None
    ragged = any(is_distributed(a) and a.parts.info.ragged for a in args)
    sig = signature_for(kernels, tuple(operand_dtype(a) for a in args), ragged)
    return None if sig is None or sig.elementwise else sig


# {(table, name): the function's signatures, () when all are elementwise}
_CORE_KERNELS: dict = {}


def _apply_core(func, sig, args, out, first):
    """A kernel with core dims on DistArrays (``xdap.kernels.cores``): the
    checks read agreed state only (no communication; a vote in debug
    mode), except for ragged operands whose rows are this rank's data."""
    d0, p0 = unwrap(first)
    name = _kernel_name(func)
    if out is not None and not isinstance(out, tuple):
        out = (out,)
    plan = []                     # what the checks found: the loop and result distributions

    def check(args, out):
        plan.append(_check_core(name, sig, args, out))
    shared = _rows_shared(args, None, p0)
    with (local_call if shared else agreed_call)(d0.comm, name, args, out, check=check):
        results = cores.core_call(name, func, sig, args, *plan[0])
    if results is None:
        return None
    if out is not None:
        _check_core_out(name, results, out)
        for (d, p), o in zip(results, out):
            np.copyto(o.parts.values, p.values)
            if p.validity is not None:
                np.copyto(o.parts.validity, p.validity)
        return out[0] if len(out) == 1 else out
    wrapped = []
    for j, (d, p) in enumerate(results):
        if p.info.ragged and sig.outputs[j] == sig.inputs[0]:
            p.rows = p0.rows_token()      # the operand's rows, by the signature
        wrapped.append(first.__xdap_wrap__(d, p, True))
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


def _check_core(name, sig, args, out):
    """``cores.check_core_operands`` and the checks of ``out=``; returns the
    former's (loop, result distributions)."""
    plan = cores.check_core_operands(name, sig, args)
    if out is None:
        return plan
    if len(out) != len(sig.outputs):
        raise TypeError(f"{name}: out= gives {len(out)} arrays for {len(sig.outputs)} outputs")
    for o in out:
        if not is_distributed(o):
            raise TypeError(f"{name}: out= must be a DistArray, got {type(o).__name__}")
        if not o.parts.values.flags.writeable:
            raise ValueError(f"{name}: out= is read-only")
    return plan


def _check_core_out(name, results, out):
    """out= must be what the kernel returns: the result's distribution and
    type (no conversion narrows silently).  Every rank reaches the same
    verdict: results' distributions and types follow from agreed state."""
    for j, ((d, p), o) in enumerate(zip(results, out)):
        if o.distribution != d or o.parts.info != p.info:
            raise ValueError(f"{name}: out= (output {j}) is {o.parts.info.type_string()} "
                             f"distributed as {o.distribution!r}; the kernel returns "
                             f"{p.info.type_string()} distributed as {d!r}")


def _rows_shared(args, out, p0):
    """True when no operand check can depend on this rank's data: a fixed
    layout, or ragged arrays that share their rows by construction
    (``Parts.rows``).  Operands other than DistArrays and scalars are
    refused by ``check_operands``."""
    if not p0.info.ragged:
        return True
    token = p0.rows_token()
    operands = args if out is None else args + (out,)
    return all(not is_distributed(a) or not a.parts.info.ragged or a.parts.rows is token
               for a in operands)


def _kernel_name(func) -> str:
    try:
        return _apply_module().key(func)[1]
    except TypeError:
        return getattr(func, "__name__", type(func).__name__)


def _signature(a):
    """What must match across ranks about one operand: a DistArray's
    distribution and element type; a scalar's or a NumPy operand's type and
    value (``xdap.contract.describe``)."""
    if is_distributed(a):
        info = a.parts.info
        return (a.distribution.fingerprint(), info.kind.value, info.var_ndim, info.leaf)
    if isinstance(a, xnd):
        return ("xnd", str(a.type), repr(a.value))
    from ..contract import describe
    return describe(a)


_ALONE = contextlib.nullcontext()


class _OnThisRank:
    """``with`` a kernel call whose checks were this rank's alone (they read
    agreed state only): a failure of the kernel itself here -- its data's
    (a hidden argument's division by zero, a user C function's error),
    memory -- is written in the communicator's ledger, so that the next
    vote names it on every rank (``xdap.contract.failed``); this rank
    raises it now.  No message: the others have returned already."""
    __slots__ = ("comm", "name")

    def __init__(self, comm, name):
        self.comm, self.name = comm, name

    def __enter__(self):
        return self

    def __exit__(self, cls, error, tb):
        if isinstance(error, Exception):
            failed(self.comm, self.name, error)
        return False


def agreed_call(comm, name, args, out=None, check=None):
    """``with agreed_call(comm, name, args, out):`` -- the agreement of one
    kernel call on DistArrays whose verdict depends on this rank's data
    (collective): the kernel's name, every operand's distribution and type
    (a scalar's Python type), ``out=``'s and its writeability must be the
    same on every rank, and the operand checks pass on every rank -- else
    every rank raises the same error.  On one rank only the checks run."""
    if comm.size == 1:
        (check or check_operands)(args, out)
        return _ALONE
    return _agreed_call(comm, name, args, out, check)


def local_call(comm, name, args, out=None, check=None):
    """``with local_call(comm, name, args, out):`` -- the check of a kernel
    call whose verdict depends only on agreed state (distributions, types):
    this rank's checks, no communication -- or, in debug mode
    (``xdap.agreement.debug()``), the full agreement, so that ranks calling
    different kernels or passing different operands are caught.  The
    kernel runs inside the ``with``: its own failure on one rank is then
    the vote's (debug mode) or the ledger's (``_OnThisRank``), one error on
    every rank either way -- unless the call is nested in another's work,
    whose own contract reports it."""
    if comm.size > 1 and not nested():
        if debug():
            return _agreed_call(comm, name, args, out, check)
        (check or check_operands)(args, out)
        return _OnThisRank(comm, name)
    (check or check_operands)(args, out)
    return _ALONE


@contextlib.contextmanager
def _agreed_call(comm, name, args, out, check=None):
    with agreement(comm, "kernel") as ag:
        (check or check_operands)(args, out)
        ag.same("the kernel", name)
        ag.same("the operand types", tuple(_signature(a) for a in args), shown=tuple(args))
        ag.same("out=", None if out is None else _signature(out), shown=out)
        yield


@functools.lru_cache(maxsize=256)
def _result_info(info, leaf):
    """``info`` with the leaf dtype ``leaf`` (memoised: called once per result)."""
    return info.with_leaf(leaf)


def _derived(first, d, p0, result):
    """The kernel's result container as an array like ``first``: the same
    distribution and rows (no communication; its layout equals the
    operand's on every rank by construction)."""
    # the result's type is often the operand's (sin of float64): no need to parse it
    same = p0.xnd is not None and result.type == p0.xnd.type
    p = parts_of(result, p0.info if same else _result_info(p0.info, _leaf(result)))
    if p.info.ragged:
        p.rows = p0.rows_token()
    return first.__xdap_wrap__(d, p, True)        # wrap_like, minus a call


def check_operands(args, out):
    """Local part of the collective operand check (raises ValueError/TypeError)."""
    first = None
    for i, a in enumerate(args):
        if is_distributed(a):
            if not a.parts.info.numeric:
                a.parts.info.require_numeric("kernel", f"operand {i}")
            if first is None:
                first = a
                continue
            _same(first, a, f"operand {i}")
        elif not is_scalar(a):
            raise TypeError(f"operand {i} is a {type(a).__name__}: with DistArray operands the "
                            "others must be DistArrays or Python scalars (distribute it with "
                            "xdap.from_global)")
    if out is not None:
        if not is_distributed(out):
            raise TypeError(f"out= must be a DistArray like the operands, got {type(out).__name__}")
        _same(first, out, "out=")
        if not out.parts.values.flags.writeable:
            raise ValueError("out= is read-only")


def _same(a, b, what):
    (da, pa), (db, pb) = unwrap(a), unwrap(b)
    ia, ib = pa.info, pb.info
    if da is not db and da != db:           # fingerprints: cheap once computed
        raise ValueError(f"{what} has another distribution than operand 0: "
                         f"{db!r} vs {da!r} (redistribute first)")
    if ia.layout != ib.layout:
        raise ValueError(f"{what} has another type shape than operand 0: "
                         f"'{ib.describe_layout()}' vs '{ia.describe_layout()}'")
    if not ia.ragged and da.global_shape != db.global_shape:
        raise ValueError(f"{what} has global shape {db.global_shape}, operand 0 {da.global_shape}")


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
    except ValueError:
        return _after_value_error(func, xs, out)
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
    except ValueError:
        return _after_value_error(func, xs, out)


def _after_value_error(func, xs, out):
    """Called while handling the fast path's ValueError: a clear refusal of
    non-numeric operands, the copy route for an N-d strided ``out=``, or
    the error itself."""
    _refuse_non_numeric(xs)   # gumath's own word is "not a primitive type"
    if out is not None and type(out) is xnd and not parts(out).values.flags.c_contiguous:
        return _into_strided(func, xs, out)
    raise


def _into_strided(func, xs, out):
    """``out=`` a strided N-d view (a record field with dims of its own):
    computed into a new container, then copied into the view."""
    result = local_apply(func, xs)
    np.copyto(parts(out).values, parts(result).values)
    return out


def _refuse_non_numeric(xs):
    for i, x in enumerate(xs):
        if not is_numeric(_dtype(x)):
            raise TypeError(f"kernel: operand {i} has element type {_leaf(x)!r}, not a number; "
                            "kernels run on numeric elements only (select a numeric field "
                            "first, e.g. a['x'])") from None


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
            xs[i] = _scalar(a, dtype)
    return xs


class ScalarOutOfRange(ValueError, OverflowError):
    """A Python scalar operand outside the range of the dtype it takes
    beside an array (``uint8_array + -1``): an OverflowError, as NumPy 2
    raises, and a ValueError, as xdap's bad input is."""

    @classmethod
    def beside(cls, what: str, error: OverflowError, dtype, operand="a Python scalar"):
        """The error of ``what`` for NumPy's (or xnd's) OverflowError ``error``
        on an array of ``dtype``."""
        return cls(f"{what}: {error} ({operand} beside a {dtype} array)")


def _scalar(v, dtype):
    """A 0-d container of the Python scalar v next to an array of ``dtype``;
    memoised (kernels only read it) -- building one costs more than a small call.

    >>> _scalar(-1, "uint8")
    Traceback (most recent call last):
    ...
    xdap.kernels.apply.ScalarOutOfRange: the scalar operand -1 is out of range for uint8 (the array's dtype: NumPy 2 refuses it too)
    """
    try:
        if isinstance(v, np.generic):                         # its dtype counts (NEP 50)
            return xnd(v.item(), type=scalar_dtype(v, dtype))
        if type(v) is not int and (type(v) is not float or v == 0.0):
            return xnd(v, type=scalar_dtype(v, dtype))       # keep -0.0 apart from 0.0
        return memo_scalar(type(v), v, dtype)
    except OverflowError:
        raise ScalarOutOfRange(
            f"the scalar operand {v!r} is out of range for {scalar_dtype(v, dtype)} (the "
            "array's dtype: NumPy 2 refuses it too)") from None


@functools.lru_cache(maxsize=512)
def memo_scalar(kind, v, dtype):
    return xnd(v, type=scalar_dtype(v, dtype))


def _contiguous(x):
    """A whole C-contiguous copy of a view the fast path cannot flatten."""
    if x.type.ndim == 0:
        return xnd(x.value, type=str(x.type))
    if str(x.type).startswith("var"):
        # a sliced ragged view: xnd(value, type=...) cannot rebuild one with an
        # empty list (ndtypes dev3), as_container can
        return as_container(x.value, type=type_info(x).type_string())
    p = parts(x)
    return container(Parts(p.info, np.asarray(p.values, order="C"), p.validity, p.offsets))


def _leaf(x):
    """A container's leaf type, e.g. '?float64' -- also of the 0-d scalar
    operands, which ``types.type_info`` rejects (it classifies what can be
    distributed), and without its full parse on this hot path."""
    return str(x.type).rsplit(" * ", 1)[-1]


def _dtype(x):
    return _leaf(x).lstrip("?")


class NoKernelForTypes(TypeError):
    """The library has no kernel for these operand types, nor for any type
    they promote to (the DistArray surface then runs NumPy's loop, where
    NumPy has one)."""


def _promoted(f, func, xs, out, err):
    """Retry with the operands converted as NumPy would: first to their
    smallest common dtype that holds every value exactly (int16 + float32
    -> float32: what gumath's own kernels do), else to NumPy's result type,
    and for integers a function defined on floats only (sin, true
    division) computes in float64 -- as ``np.sin(int64_array)`` does."""
    dtypes = [_dtype(x) for x in xs]
    common = dtypes[0]
    for d in dtypes[1:]:
        common = common_dtype(common, d) if common is not None else None
    for cand in _candidates(dtypes, common):
        if cand == common and all(d == common for d in dtypes):
            continue                     # that is the call that just failed
        try:
            f.select(*([cand] * len(xs)))
        except _apply_module().NoKernel:
            continue
        return f(*[cast(x, cand) if d != cand else x for x, d in zip(xs, dtypes)], out=out)
    name = getattr(f, "name", "kernel")
    raise NoKernelForTypes(f"no kernel for {', '.join(dtypes)} in {name}: {name} is not defined for "
                    f"{'these dtypes' if len(set(dtypes)) > 1 else dtypes[0]} (NumPy refuses "
                    "it too, or xdap's library has no such kernel); convert explicitly with "
                    "a.astype(...)") from None


def _candidates(dtypes, exact):
    """The dtypes to try, in order (see ``_promoted``)."""
    out = [] if exact is None else [exact]
    if any(d in ("bool",) or not is_numeric(d) for d in dtypes):
        return out                         # bool arithmetic stays NumPy's refusal
    try:
        numpy_common = dtype_from_numpy(np.result_type(*[numpy_dtype(d) for d in dtypes]))
    except TypeError:
        return out
    out.append(numpy_common)
    if numpy_dtype(numpy_common).kind in "iu":    # functions of floats: NumPy's float
        out += [exact_float(numpy_common) or "float64", "float64"]
    return list(dict.fromkeys(out))


def _gumath_call(func, xs, out):
    """Non-elementwise kernels: gumath's own dispatch on the whole containers
    -- with the operands converted as NumPy's gufuncs do when no prototype
    takes their dtypes (``signature_for``: the first that every operand
    converts to, exactly first)."""
    try:
        result = func(*xs)
    except TypeError:
        dtypes = tuple(_dtype(x) for x in xs)
        ragged = any(str(x.type).startswith("var") for x in xs)
        sig = signature_for(tuple(getattr(func, "kernels", ())), dtypes, ragged)
        if sig is None or sig.dtypes == dtypes or not all(
                converts(d, k, "safe") for d, k in zip(dtypes, sig.dtypes)):
            name = _kernel_name(func)
            have = sorted({", ".join(parse(k).dtypes) for k in getattr(func, "kernels", ())})
            raise TypeError(f"{name}: no kernel takes {', '.join(dtypes)} (its prototypes take "
                            f"{'; '.join(have)}), nor anything they convert to without loss; "
                            "convert explicitly with astype") from None
        result = func(*[cast(x, k) if d != k else x for x, d, k in zip(xs, dtypes, sig.dtypes)])
    if out is None:
        return result
    res = result if isinstance(result, tuple) else (result,)
    outs = out if isinstance(out, tuple) else (out,)
    for r, o in zip(res, outs):       # gumath has no out=: copy into it
        po, pr = parts(o), parts(r)
        np.copyto(po.values, pr.values.reshape(po.values.shape))
    return out
