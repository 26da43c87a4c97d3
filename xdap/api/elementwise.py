"""Elementwise functions: NumPy's ufuncs on DistArrays -- xdap's kernels
(``xdap.kernels``) where the library has one, NumPy's loop on every
rank's values otherwise -- and the Array API's names for them, ``clip``,
``real``, ``imag``, ``conj``.

All local work: each rank computes its own block, and every check reads
state the ranks agreed on when the arrays were made (distributions,
types), so no MPI call is made -- except to align operands of another
distribution or a smaller DistArray (decided from those agreed
distributions; see ``xdap.kernels.apply.broadcast_operands``).  In debug
mode a call votes first.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([7, -7, 8]), comm=MPI.COMM_SELF)
>>> (a // 2).to_numpy(), xdap.clip(a, -1, 7).to_numpy()
(array([ 3, -4,  4]), array([ 7, -1,  7]))
"""
from __future__ import annotations

import numpy as np

from .. import agreement as _agreement
from .. import arguments
from ..agreement import agreement, debug
from ..arraylike import is_distributed
from ..contract import Contract, local, nested
from ..parts import Parts
from ..repeats import plain_values

__all__ = ["array_ufunc", "library_or_numpy", "numpy_ufunc", "clip", "real", "imag",
           "conjugate", "magnitude_squared", "sqrt", "not_equal", "add", "multiply",
           "STANDARD", "standard_function", "fast_path", "kernel_call", "debug_vote"]


def kernel_call(fn):
    """Declare ``fn`` a local call whose checks are a kernel's: it goes to
    ``xdap.kernels.apply``, whose operand checks read agreed state only
    -- the operators' hot path, marked rather than wrapped.  In debug mode
    the operator votes first (``debug_vote``): before it may hand the call
    to the other operand (``NotImplemented``) or to NumPy."""
    fn.__xdap_contract__ = Contract("local", fn.__name__, ("self", "other"))
    return fn


def debug_vote(name: str, self, other) -> bool:
    """In debug mode, outside an agreed call: the vote of the operator
    ``name`` on its operands (every rank passes the same ``other``, or
    every rank raises the same ValueError), and True -- the caller then
    runs ``with inside:``; else False, and nothing happens."""
    if not debug() or nested():
        return False
    from ..contract import describe
    with agreement(self.distribution.comm, name) as ag:
        ag.same("the operands", (describe(self), describe(other)), shown=(self, other))
    return True


# -- NumPy's ufuncs on DistArrays ------------------------------------------------------
_UFUNCS: dict = {}


def _ufuncs() -> dict:
    """{NumPy ufunc: the xdap kernel function} (filled on first use: the
    kernel library is not imported with xdap)."""
    from .. import kernels
    from ..kernels.library import _ufunc_table
    _UFUNCS.update({u: getattr(kernels, name) for u, name in _ufunc_table().items()})
    return _UFUNCS


@local(name="__array_ufunc__", ledger=False)
def array_ufunc(self, ufunc, method, *inputs, out=None, **kwargs):
    """``DistArray.__array_ufunc__``: ``np.sin(a)``, ``np.add(a, 1,
    out=a)``, ``a + np.float32(2)`` -- the library's kernel, else NumPy's
    loop on every rank's values (local work); other methods (``reduce``,
    ...) and keywords are a TypeError naming what to use instead."""
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(f"__array_ufunc__: {ufunc!r} is not a NumPy ufunc")
    plain = method == "__call__" and not kwargs and (out is None or len(out) == 1)
    if method == "__call__" and not kwargs and not plain:
        raise TypeError(f"np.{ufunc.__name__}: one out= array, got {len(out)}")
    if not plain:
        what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        extra = f" with {', '.join(kwargs)}=" if kwargs else ""
        raise TypeError(f"{what}{extra} on a DistArray: xdap runs NumPy's elementwise ufuncs "
                        "(np.sin, np.add, np.less, ...), called plainly, with out= at most; for "
                        "reductions use a.sum(), a.max(), ...; for anything else "
                        "a.local_numpy() on each rank, or a.to_numpy()")
    target = None if out is None else out[0]          # NumPy passes out= as a tuple
    # the operands are the kernel's to check (xdap.kernels.apply: agreed state only)
    yield dict(self=self, ufunc=ufunc.__name__, method=method, inputs=inputs, out=target,
               kwargs=None)
    kernel = (_UFUNCS or _ufuncs()).get(ufunc)
    if kernel is not None:
        return library_or_numpy(kernel, ufunc, inputs, target)
    return numpy_ufunc(ufunc, inputs, target)


def library_or_numpy(kernel, ufunc, inputs, out=None):
    """The library's kernel; where it has none for these numeric types
    (``log1p`` of complex numbers), NumPy's loop on every rank's values
    (``numpy_ufunc``: local work as well)."""
    try:
        return kernel(*inputs) if out is None else kernel(*inputs, out=out)
    except TypeError as e:
        return numpy_instead(e, ufunc, inputs, out)


def numpy_instead(error, ufunc, inputs, out):
    """NumPy's loop where the kernel library has no kernel for these
    numeric operands; ``error`` itself otherwise."""
    from ..kernels.apply import NoKernelForTypes
    if not isinstance(error, NoKernelForTypes) or not all(
            a.parts.info.numeric and not a.parts.info.boxed for a in inputs if is_distributed(a)):
        raise error
    return numpy_ufunc(ufunc, inputs, out)


def numpy_ufunc(ufunc, inputs, out=None):
    """A NumPy ufunc that xdap's kernel library lacks (``np.isnan``,
    ``np.floor_divide`` -- ``a // b`` --, ``np.remainder``, the bitwise and
    logical ones, ``np.sign``, ...) on every rank's values: local work, no
    MPI call (a vote in debug mode), NumPy's own loops and promotion.
    Operands: DistArrays of one distribution (ragged ones sharing their
    rows: the leaves are one flat array), NumPy arrays and scalars
    (broadcast as NumPy does, see ``a + b``); a result of ``?T`` data is
    valid where every operand is.  ``out=``: one DistArray of the result's
    distribution, written with NumPy's same-kind casting.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.array([7, -7, 8]), comm=MPI.COMM_SELF)
    >>> (a // 2).to_numpy(), (a % 3).to_numpy()
    (array([ 3, -4,  4]), array([1, 2, 2]))
    """
    from ..kernels.apply import broadcast_operands, broadcast_shape_of, needs_broadcast
    name = f"np.{ufunc.__name__}"
    dists = [a for a in inputs if is_distributed(a)]
    first = dists[0]
    if debug() and first.comm.size > 1 and not nested():
        with agreement(first.comm, "ufunc") as ag:       # divergent ranks caught here
            ag.same("the ufunc", name)
            ag.same("the operands", tuple((a.distribution.fingerprint(), a.parts.info.leaf)
                                          if is_distributed(a) else type(a).__name__
                                          for a in inputs))
            _check_ufunc(name, ufunc, dists, out)
            if needs_broadcast(inputs, first):
                broadcast_shape_of(inputs, out)
    else:
        _check_ufunc(name, ufunc, dists, out)
    if needs_broadcast(inputs, first):
        inputs = broadcast_operands(tuple(inputs), out)
        dists = [a for a in inputs if is_distributed(a)]
        first = dists[0]
    d, p0 = first.distribution, first.parts
    for a in dists[1:]:
        if a.distribution != d or a.parts.info.layout != p0.info.layout:
            raise ValueError(f"{name}: the operands are distributed or shaped differently "
                             f"({a.distribution!r} vs {d!r}); redistribute first")
        if p0.info.ragged and a.parts.rows is not p0.rows_token():
            raise ValueError(f"{name}: ragged operands must share their rows (derived from "
                             "one another); use xdap.kernels for rows checked collectively")
    vals = [a.parts.values if is_distributed(a) else a for a in inputs]
    masks = [a.parts.valid_mask() for a in dists if a.parts.validity is not None]
    fixed = _SPECIAL_CASES.get(ufunc)
    quiet = {"all": "ignore"} if masks else {"invalid": "ignore"} if fixed else {}
    with np.errstate(**quiet):          # missing slots hold anything; the special cases
        try:                            # NumPy gets otherwise are fixed below
            result = ufunc(*vals)
        except OverflowError as e:      # a Python int beyond the dtype: NumPy 2's refusal
            from ..kernels.apply import ScalarOutOfRange
            raise ScalarOutOfRange.beside(name, e, p0.info.dtype) from None
        if fixed is not None:
            result = fixed(vals, result)
    validity = None
    if masks:
        from ..bitmaps import pack_validity
        valid = np.logical_and.reduce(masks) if len(masks) > 1 else masks[0]
        validity = pack_validity(valid)
    if out is not None:
        if out.distribution != d or out.parts.values.shape != np.shape(result):
            raise ValueError(f"{name}: out= is distributed or shaped otherwise than the result")
        np.copyto(out.parts.values, result, casting="same_kind")
        if validity is not None and out.parts.validity is not None:
            out.parts.validity[...] = validity
        return out
    from ..dtypes import dtype_from_numpy
    result = np.asarray(result, order="C")     # ascontiguousarray makes a 0-d result 1-d
    leaf = ("?" if validity is not None else "") + dtype_from_numpy(result.dtype)
    if p0.info.ragged:
        info = p0.info.with_leaf(leaf)
        q = Parts(info, result, validity, p0.offsets, rows=p0.rows_token())
    else:
        from ..types import TypeInfo
        q = Parts(TypeInfo.fixed(result.shape, leaf.lstrip("?"), validity is not None), result,
                  validity)
    return first.__xdap_wrap__(d, q, False, True)


def _check_ufunc(name, ufunc, dists, out):
    if ufunc.nout != 1:
        raise TypeError(f"{name} on a DistArray: ufuncs with {ufunc.nout} outputs are not "
                        "supported (call it on a.local_numpy() on each rank)")
    for a in dists + ([out] if out is not None else []):
        if not is_distributed(a):
            raise TypeError(f"{name}: out= must be a DistArray, got {type(a).__name__}")
        if a.parts.info.boxed:
            raise TypeError(f"{name}: {arguments.type_of(a)} data has no NumPy values")
    if out is not None and not out.parts.values.flags.writeable:
        raise ValueError(f"{name}: out= is read-only")


def _floor_divide_infinities(vals, result):
    """The standard's ``floor_divide`` where one operand is infinite and the
    other finite: ``floor(x1 / x2)`` (``-1.0 // inf`` is -0, ``inf // 2.0``
    is inf; NumPy gives -1 and nan there).  Elsewhere NumPy's result."""
    if np.asarray(result).dtype.kind != "f":
        return result
    x, y = (np.asarray(v) for v in vals)
    fix = (np.isinf(x) & np.isfinite(y)) | (np.isfinite(x) & np.isinf(y))
    if not fix.any():
        return result
    return np.where(fix, np.floor(np.true_divide(x, y)), result).astype(np.asarray(result).dtype)


def _expm1_complex_infinities(vals, result):
    """The standard's complex ``expm1`` where a part is infinite or NaN:
    ``exp(z) - 1`` (C99's cexp gives ``-1 + 0j`` for ``-inf + inf j``, where
    NumPy's expm1 gives NaNs); at a zero, a real part of +0.  Elsewhere
    NumPy's result."""
    z = np.asarray(vals[0])
    if z.dtype.kind != "c":
        return result
    odd = ~np.isfinite(z)
    zero = z == 0                  # -0 + 0j: NumPy's expm1 keeps the -0, the standard +0
    if not odd.any() and not zero.any():
        return result
    out = np.where(odd, np.exp(z) - 1, result).astype(np.asarray(result).dtype)
    out.real[zero] = 0.0
    return out


def _tanh_complex_infinities(vals, result):
    """The standard's complex ``tanh`` at ``+-inf + yj``, ``y`` finite:
    ``+-1 + 0j`` with the sign of ``y`` (NumPy gives the zero the sign of
    ``sin(2y)``, as C99 does).  Elsewhere NumPy's result."""
    z = np.asarray(vals[0])
    if z.dtype.kind != "c":
        return result
    edge = np.isinf(z.real) & np.isfinite(z.imag)
    if not edge.any():
        return result
    out = np.array(result, copy=True)
    out.real[edge] = np.copysign(1.0, z.real[edge])     # parts set apart: -1 + (-0j)
    out.imag[edge] = np.copysign(0.0, z.imag[edge])     # would add the zeros to +0
    return out


# NumPy ufuncs whose results differ from the standard's special cases
_SPECIAL_CASES = {np.floor_divide: _floor_divide_infinities, np.expm1: _expm1_complex_infinities,
                  np.tanh: _tanh_complex_infinities}


# -- the standard's elementwise functions ------------------------------------------------
# the standard's name -> NumPy's ufunc
STANDARD = {
    "abs": "absolute", "acos": "arccos", "acosh": "arccosh", "add": "add", "asin": "arcsin",
    "asinh": "arcsinh", "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh",
    "bitwise_and": "bitwise_and", "bitwise_left_shift": "left_shift",
    "bitwise_invert": "invert", "bitwise_or": "bitwise_or",
    "bitwise_right_shift": "right_shift", "bitwise_xor": "bitwise_xor", "ceil": "ceil",
    "copysign": "copysign", "cos": "cos", "cosh": "cosh", "divide": "divide", "equal": "equal",
    "exp": "exp", "expm1": "expm1", "floor": "floor", "floor_divide": "floor_divide",
    "greater": "greater", "greater_equal": "greater_equal", "hypot": "hypot",
    "isfinite": "isfinite", "isinf": "isinf", "isnan": "isnan", "less": "less",
    "less_equal": "less_equal", "log": "log", "log1p": "log1p", "log2": "log2",
    "log10": "log10", "logaddexp": "logaddexp", "logical_and": "logical_and",
    "logical_not": "logical_not", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "maximum": "maximum", "minimum": "minimum", "multiply": "multiply",
    "negative": "negative", "nextafter": "nextafter", "not_equal": "not_equal",
    "positive": "positive", "pow": "power", "reciprocal": "reciprocal",
    "remainder": "remainder", "round": "rint", "sign": "sign", "signbit": "signbit",
    "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "square": "square", "subtract": "subtract",
    "tan": "tan", "tanh": "tanh", "trunc": "trunc", "conj": "conjugate",
}


def _operand(name, v):
    if is_distributed(v) or isinstance(v, (bool, int, float, complex, np.generic, np.ndarray)):
        return v
    raise TypeError(f"{name}: an operand is a {type(v).__name__}, not an array or a number")


def standard_function(name: str, ufunc):
    """The standard's elementwise function ``name``: ``ufunc`` on DistArrays
    (local work; NumPy's promotion).  Its common cases -- plain fixed
    operands of one distribution, or one and a Python int or float -- are
    made whole without the declared path's layers (``_fast``); debug mode,
    and everything else, take the declared path."""
    if ufunc.nin == 1:
        def f(x, /):
            x = arguments.array(name, _operand(name, x))
            yield dict(x=x)
            return ufunc(x)
    else:
        def f(x1, x2, /):
            _operand(name, x1), _operand(name, x2)
            if not (is_distributed(x1) or is_distributed(x2)):
                raise TypeError(f"{name}: at least one operand must be a DistArray")
            yield dict(x1=x1, x2=x2)
            return ufunc(x1, x2)
    f.__name__ = f.__qualname__ = name
    declared = local(f, ledger=False)
    fast = fast_path(ufunc)

    if ufunc.nin == 1:
        def call(x, /):
            if not _agreement._DEBUG:
                out = fast(x)
                if out is not None:
                    return out
            return declared(x)
    else:
        def call(x1, x2, /):
            if not _agreement._DEBUG:
                out = fast(x1, x2)
                if out is not None:
                    return out
            return declared(x1, x2)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = (f"The Array API's ``{name}``: ``np.{ufunc.__name__}`` on DistArrays "
                    "(local work; NumPy's promotion; a new array).")
    call.__wrapped__ = declared.__wrapped__
    call.__xdap_contract__ = declared.__xdap_contract__
    return call


# -- the fast paths of the standard's functions ---------------------------------------
# bound on the first call (xdap._apply and the kernel library stay out of import time)
_BOUND: dict = {}
_SURFACE: dict = {}      # named by xdap.array, the layer above, as it is imported (``serve``)


def serve(array, memo_scalar, bind) -> None:
    """Name the DistArray class, its scalar memo and the binder of its C
    fast paths (``xdap.array`` calls this as it is imported: this layer
    never imports the surface)."""
    _SURFACE.update(array=array, scalar=memo_scalar, bind=bind)


def _bind():
    from ..kernels.apply import _apply_module
    _SURFACE["bind"]()
    _apply = _apply_module()
    _BOUND.update(array=_SURFACE["array"], scalar=_SURFACE["scalar"],
                  unary=_apply.unary_result, binary=_apply.array_result,
                  with_scalar=_apply.scalar_result)
    return _BOUND


def fast_path(ufunc):
    """``fast(*operands)``: ``ufunc`` of plain fixed DistArrays of one
    distribution (or one and a Python int or float) made whole -- the
    library's kernel in C (``xdap._apply``) where the library has one for
    these dtypes and its result is of the operand's dtype or bool; NumPy's
    loop on the values where the library has none for the function -- or
    None: the declared path decides (its promotion, its errors)."""
    handle = None
    power = ufunc is np.power

    def kernel():
        nonlocal handle
        if handle is None:
            from ..kernels.apply import fast
            from ..kernels.library import _ufunc_table, gufunc
            name = _ufunc_table().get(ufunc)
            handle = False if name is None else fast(gufunc(name))
        return handle

    if ufunc.nin == 1:
        def fast1(x):
            bound = _BOUND or _bind()
            if type(x) is not bound["array"]:
                return None
            h = handle if handle is not None else kernel()
            if h:
                return bound["unary"](h, x)
            return _numpy_result(ufunc, x, (x.parts.values,))
        return fast1

    def fast2(x1, x2):
        bound = _BOUND or _bind()
        array = bound["array"]
        k1, k2 = type(x1), type(x2)
        h = handle if handle is not None else kernel()
        if k1 is array and k2 is array:
            if h:
                return bound["binary"](h, x1, x2, None)
            if x1.distribution is not x2.distribution and x1.distribution != x2.distribution:
                return None
            return _numpy_result(ufunc, x1, (x1.parts.values, x2.parts.values), x2)
        if k1 is array and (k2 is float or k2 is int):
            x, number, reflected = x1, x2, False
        elif k2 is array and (k1 is float or k1 is int):
            x, number, reflected = x2, x1, True
        else:
            return None
        if power and k2 is int and x2 < 0:        # NumPy's rule for integers: the declared path's
            return None
        if h:
            try:
                scalar = bound["scalar"](type(number), number, x.parts.info.dtype)
            except (ValueError, TypeError, OverflowError):
                return None
            return bound["with_scalar"](h, x, scalar, reflected)
        values = x.parts.values
        return _numpy_result(ufunc, x, (number, values) if reflected else (values, number))
    return fast2


def _numpy_result(ufunc, x, values, other=None):
    """NumPy's ``ufunc`` of ``values`` -- ``x``'s (and ``other``'s, of one
    distribution) -- as a DistArray like ``x``, where the operands are plain
    fixed data with no special case; None otherwise, or where NumPy refuses
    (the declared path then says why)."""
    if not plain_values(x) or (other is not None and not plain_values(other)):
        return None
    fixed = _SPECIAL_CASES.get(ufunc)
    try:
        if fixed is None:
            result = ufunc(*values)
        else:                       # as the declared path: NumPy's, then the standard's cases
            with np.errstate(invalid="ignore"):
                result = fixed(values, ufunc(*values))
    except TypeError:
        return None
    except OverflowError as e:      # a Python int beyond the dtype: NumPy 2's refusal
        from ..kernels.apply import ScalarOutOfRange
        raise ScalarOutOfRange.beside(ufunc.__name__, e, x.parts.info.dtype) from None
    return result_like(x, result)


def result_like(x, result):
    """NumPy ``result`` (this rank's block of ``x``'s distribution, plain
    fixed data) as a DistArray like ``x``: ``x``'s type with the result's
    dtype (``TypeInfo.with_numpy_leaf``: made once per pair)."""
    result = np.asarray(result, order="C")      # (a transposed view's result is not)
    return x.__xdap_wrap__(x.distribution,
                           Parts(x.parts.info.with_numpy_leaf(result.dtype), result), True)


for _name, _np_name in STANDARD.items():
    globals()[_name] = standard_function(_name, getattr(np, _np_name))
del _name, _np_name

conjugate = globals()["conj"]


@local(ledger=False)
def real(x, /):
    """The real part of every element (a copy; local work)."""
    arguments.numeric("real", x)
    yield dict(x=x)
    from .layouts import wrap
    return wrap(x, x.distribution, np.real(x.parts.values))


@local(ledger=False)
def imag(x, /):
    """The imaginary part of every element (a copy; zeros for real data;
    local work)."""
    arguments.numeric("imag", x)
    yield dict(x=x)
    from .layouts import wrap
    return wrap(x, x.distribution, np.imag(x.parts.values))


@local(ledger=False)
def magnitude_squared(x, /):
    """``|x|**2`` of every element: ``x * x`` for real data, ``re**2 +
    im**2`` (real) for complex -- the squared deviation a variance sums
    (local work)."""
    arguments.numeric("magnitude_squared", x)
    yield dict(x=x)
    from .layouts import wrap
    v = x.parts.values
    out = v.real * v.real + v.imag * v.imag if v.dtype.kind == "c" else v * v
    return wrap(x, x.distribution, out)


@local(ledger=False)
def clip(x, /, min=None, max=None):  # noqa: A002 -- the standard's names
    """``x`` with every value below ``min`` raised to it and above ``max``
    lowered to it -- NumPy 2's ``clip`` on every rank's block (bounds
    beyond the dtype's range clip nothing: ``clip(uint8_array, -5, 300)``
    stays uint8); the bounds may be scalars, NumPy arrays or DistArrays,
    broadcast as operands are.  Local work (moving a bound of another
    distribution first, as operators do)."""
    arguments.numeric("clip", x)
    for what, b in (("min", min), ("max", max)):
        if b is not None:
            _operand("clip", b)
            if is_distributed(b):
                arguments.numeric("clip", b, what)
            elif np.asarray(b).dtype.kind not in "biuf":
                raise TypeError(f"clip: {what} must be a real number or array, got "
                                f"{arguments._shown(b)}")
    if x.dtype.kind == "c":
        raise TypeError("clip: complex numbers have no order")
    args = [x] + [b for b in (min, max) if b is not None and np.ndim(b) != 0 or
                  is_distributed(b)]
    from ..kernels.apply import broadcast_shape_of
    if broadcast_shape_of(args) != x.shape:
        raise ValueError(f"clip: the bounds would broadcast x of shape {x.shape} to a larger "
                         "shape")
    yield dict(x=x, min=min, max=max)
    from ..kernels.apply import broadcast_operands, needs_broadcast
    ops = (x, min, max)
    if needs_broadcast([o for o in ops if o is not None], x):
        aligned = list(broadcast_operands(tuple(o for o in ops if o is not None)))
        ops = tuple(aligned.pop(0) if o is not None else None for o in ops)
    x2, lo, hi = (o.parts.values if is_distributed(o) else o for o in ops)
    from .layouts import wrap
    if lo is None and hi is None:
        return wrap(x, x.distribution, x2.copy())
    try:
        return wrap(x, x.distribution, np.clip(x2, lo, hi))
    except OverflowError as e:      # a bound that clips everything to a value x cannot hold
        from ..kernels.apply import ScalarOutOfRange
        raise ScalarOutOfRange.beside("clip", e, x.dtype, "a bound") from None
