"""The Python Array API namespace of DistArrays (``a.__array_namespace__()``):
code written against the standard (``xp = array_namespace(x)``) runs on
distributed data.

Every function here is one of xdap's (``xdap.api``, by the standard's
categories), under the standard's name and signature; where the standard
wants something else than xdap's NumPy-flavoured function -- a 0-d array
rather than a NumPy scalar for a reduction over everything, ``keepdims``,
``device`` -- a wrapper here says so, under the same contract (an agreed
call stays one agreement: the wrapped call trusts it).

The optional extensions: ``fft`` (``xdap.api.fft``: NumPy's transforms per
rank, slab decompositions where axes are distributed) and ``linalg``
(``xdap.api.linalg``: LAPACK per rank on stacks, TSQR on split tall
matrices, gathered square systems).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
>>> xp = a.__array_namespace__()
>>> xp.sum(xp.abs(a - xp.mean(a, axis=0)), axis=0).to_numpy()
array([4., 4.])
"""
from __future__ import annotations

import builtins as _builtins      # the namespace has the standard's any/all/bool

import numpy as np

from . import arguments as _arg
from .api import (creation as _creation, data_types as _data_types, elementwise as _elementwise,
                  indexing as _indexing, linear_algebra as _linalg, searching as _searching,
                  statistical as _statistical)
from .api.layouts import from_every_rank as _from_every_rank, scalar_array as _scalar_array
from .agreement import SETTLED as _SETTLED
from .arraylike import is_distributed as _is_distributed
from .parts import Parts as _Parts
from .contract import collective as _collective, local as _local, moves_nothing as _moves_nothing
from .contract import inside as _inside, pure as _pure
from .api.layouts import scalar_maker as _scalar_maker
from .repeats import Rides as _Rides, call_lane as _call_lane, plain as _plain, \
    plain_values as _plain_values
from .contract import Repeats as _Repeats
from .movement.reduce import (check_reduction as _check_reduction, is_total as _is_total,
                              total_parts as _total_parts)


__array_api_version__ = "2024.12"

# -- data types: NumPy's ----------------------------------------------------------
bool = np.bool_             # noqa: A001 -- the standard's names
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
e, inf, nan, pi = np.e, np.inf, np.nan, np.pi
newaxis = None

# -- elementwise -------------------------------------------------------------------
for _name in _elementwise.STANDARD:
    globals()[_name] = getattr(_elementwise, _name)
del _name
clip, real, imag = _elementwise.clip, _elementwise.real, _elementwise.imag

# -- data type functions -------------------------------------------------------------
astype = _data_types.astype
can_cast, finfo, iinfo = _data_types.can_cast, _data_types.finfo, _data_types.iinfo
isdtype, result_type = _data_types.isdtype, _data_types.result_type

# -- indexing, manipulation, searching, sets, sorting -------------------------------------
take, take_along_axis = _indexing.take, _indexing.take_along_axis
from .api.manipulation import (broadcast_arrays, broadcast_to, concat, expand_dims,  # noqa: E402
                               flip, moveaxis, permute_dims, repeat, reshape, roll, squeeze,
                               stack, tile, unstack)
from .api.searching import nonzero, searchsorted, where  # noqa: E402
from .api.sets import unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402
from .api.sorting import argsort, sort  # noqa: E402
from .api.statistical import cumulative_prod, cumulative_sum  # noqa: E402
from .api.utility import diff  # noqa: E402
from .api.linear_algebra import matrix_transpose  # noqa: E402
from .api.creation import empty_like, full_like, meshgrid, ones_like, tril, triu, zeros_like  # noqa: E402,E501


# -- creation: the standard's signatures (device=) ------------------------------------
def _device(name, device):
    if device not in (None, "cpu"):
        raise ValueError(f"{name}: xdap arrays live on the CPU, not device {device!r}")


@_collective
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A DistArray of ``obj``: a DistArray is itself (a copy with
    ``copy=True``, converted for another ``dtype``); anything else is
    ``xdap.from_global`` of it -- the same on every rank (agreed: by its
    bytes), each rank keeping its block (a copy)."""
    _device("asarray", device)
    dt = _arg.dtype("asarray", dtype)
    if copy is not None:
        copy = _arg.flag("asarray", "copy", copy)
    if _is_distributed(obj):        # each rank's own block: no message (the ledger has it)
        yield _moves_nothing(dict(obj=obj, dtype=dt, device=device, copy=copy))
        if dt is not None and dt != obj.dtype:
            return astype(obj, dt)
        return obj.copy() if copy else obj
    if copy is False:
        raise ValueError("asarray: copy=False -- a DistArray of data on every rank is a copy")
    try:
        data = np.asarray(obj, dtype=dt)
    except (TypeError, ValueError, OverflowError) as err:
        raise (TypeError if isinstance(err, TypeError) else ValueError)(
            f"asarray: {err}") from None
    if data.dtype.kind not in "biufc":
        raise TypeError(f"asarray: {data.dtype} data is not numeric")
    yield dict(obj=data, dtype=dt, device=device, copy=copy)
    return _creation.from_global(data)


@_collective
def from_dlpack(x, /, *, device=None, copy=None):
    """A DistArray of a DLPack-exporting array (NumPy's ``from_dlpack``,
    then ``asarray``: the same data on every rank; a copy); a DistArray is
    returned as it is (``copy=True``: a copy)."""
    _device("from_dlpack", device)
    if copy is not None:
        copy = _arg.flag("from_dlpack", "copy", copy)
    if _is_distributed(x):
        yield dict(x=x, device=device, copy=copy)
        return x.copy() if copy else x
    try:
        data = np.from_dlpack(x)
    except Exception as err:
        raise TypeError(f"from_dlpack: {type(err).__name__}: {err}") from None
    if copy is False:
        raise ValueError("from_dlpack: copy=False -- a DistArray of data on every rank is a copy")
    yield dict(x=data, device=device, copy=copy)
    return _creation.from_global(data)


# -- creation: a repeated call makes its block and nothing else -------------------
_MADE: dict = {}      # (function, shape, dtype as given, fill's type) -> what a first call made


def _creation_key(name, shape, dtype, device, fill=None):
    """The memo key of a creation call's arguments -- a shape of Python
    ints, a hashable dtype, no device -- or None (the declared path)."""
    if device is not None or not (type(shape) is int or type(shape) is tuple and _builtins.all(
            type(n) is int for n in shape)):
        return None
    try:
        return (name, shape, dtype, fill)
    except TypeError:
        return None


def _remember(key, out):
    """Keep what a creation call made (its distribution, its block's type
    and class) for the next call with these arguments: plain fixed data."""
    if key is not None and _plain_values(out):
        if len(_MADE) >= 256:
            _MADE.clear()
        _MADE[key] = (out.distribution, out.parts.info, out.parts.values.dtype, type(out))
    return out


def _created(key, make, fill=None):
    """A new array like the one the call with ``key`` made, its block made
    by ``make(shape, dtype)`` (``fill``: ``make``'s value); None where no
    call made one yet."""
    made = _MADE.get(key)
    if made is None:
        return None
    d, info, dt, cls = made
    values = make(info.shape, dt) if fill is None else make(info.shape, fill, dt)
    return cls._trusted(d, _Parts(info, values)), dt


def _filled_fast(name, make):
    """The repeated path of ``name`` (zeros, ones, empty), its block made by
    ``make(shape, dtype)``: ``local``'s ``fast``."""
    def fast(shape, *, dtype=None, device=None):
        made = _created(_creation_key(name, shape, dtype, device), make)
        return made and (made[0], dict(shape=shape, dtype=made[1], device=None))
    return fast


def _full_fast(shape, fill_value, *, dtype=None, device=None):
    kind = type(fill_value)
    if dtype is not None or not (kind is float or kind is _builtins.bool or
                                 kind is int and -2**63 <= fill_value < 2**63):
        return None
    made = _created(_creation_key("full", shape, dtype, device, kind), np.full, fill_value)
    return made and (made[0], dict(shape=shape, fill_value=fill_value, dtype=made[1],
                                   device=None))


@_local(fast=_filled_fast("zeros", np.zeros))
def zeros(shape, *, dtype=None, device=None):
    """Zeros of ``shape`` (float64 unless ``dtype``), each rank its block
    (local work: written in the ledger; a repeated shape and dtype reuse
    the first call's distribution)."""
    _device("zeros", device)
    dt = _arg.dtype("zeros", dtype) or np.dtype(np.float64)
    yield dict(shape=shape, dtype=dt, device=device)
    with _inside:                   # agreed in the ledger: the engine trusts it
        return _remember(_creation_key("zeros", shape, dtype, device),
                         _creation.zeros(shape, dtype=dt))


@_local(fast=_filled_fast("ones", np.ones))
def ones(shape, *, dtype=None, device=None):
    """Ones of ``shape`` (float64 unless ``dtype``), each rank its block
    (local work, as ``zeros``)."""
    _device("ones", device)
    dt = _arg.dtype("ones", dtype) or np.dtype(np.float64)
    yield dict(shape=shape, dtype=dt, device=device)
    with _inside:
        return _remember(_creation_key("ones", shape, dtype, device),
                         _creation.full(shape, 1, dtype=dt))


@_local(fast=_filled_fast("empty", np.zeros))
def empty(shape, *, dtype=None, device=None):
    """An array of ``shape`` (float64 unless ``dtype``); zeros here (local
    work, as ``zeros``)."""
    _device("empty", device)
    dt = _arg.dtype("empty", dtype) or np.dtype(np.float64)
    yield dict(shape=shape, dtype=dt, device=device)
    with _inside:
        return _remember(_creation_key("empty", shape, dtype, device),
                         _creation.zeros(shape, dtype=dt))


@_local(fast=_full_fast)
def full(shape, fill_value, *, dtype=None, device=None):
    """``fill_value`` in ``shape``; the dtype from ``fill_value`` unless
    given (a Python float: float64, bool: bool, int: int64, complex:
    complex128; local work, as ``zeros``)."""
    _device("full", device)
    dt = _arg.dtype("full", dtype)
    if dt is None:
        if isinstance(fill_value, (_builtins.bool, np.bool_)):
            dt = np.dtype(np.bool_)
        elif isinstance(fill_value, (int, float, complex, np.number)):
            dt = np.dtype(type(fill_value)) if isinstance(fill_value, np.number) else \
                np.dtype({int: np.int64, float: np.float64, complex: np.complex128}[
                    type(fill_value)]) if type(fill_value) in (int, float, complex) else \
                np.result_type(fill_value)
        else:
            raise TypeError(f"full: fill_value must be a number, got {fill_value!r}")
    yield dict(shape=shape, fill_value=fill_value, dtype=dt, device=device)
    with _inside:
        out = _creation.full(shape, fill_value, dtype=dt)
    kind = type(fill_value)
    if dtype is None and kind in (float, int, _builtins.bool):
        _remember(_creation_key("full", shape, dtype, device, kind), out)
    return out


@_local
def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """NumPy's ``arange``, each rank computing only its part; the default
    dtype is the standard's (int64 when every argument is an integer, else
    float64), found without building the array."""
    _device("arange", device)
    dt = _arg.dtype("arange", dtype)
    yield dict(start=start, stop=stop, step=step, dtype=dt, device=device)
    with _inside:                   # agreed in the ledger: the engine trusts it
        return _creation.arange(start, stop, step, dtype=dt)


@_local
def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """NumPy's ``linspace``, each rank computing only its part."""
    _device("linspace", device)
    dt = _arg.dtype("linspace", dtype)
    yield dict(start=start, stop=stop, num=num, dtype=dt, device=device,
              endpoint=endpoint)
    with _inside:                   # agreed in the ledger: the engine trusts it
        return _creation.linspace(start, stop, num, dtype=dt, endpoint=endpoint)


@_local
def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the ``k``-th diagonal, zeros elsewhere (the standard's
    ``eye``): each rank computes its block only.

    >>> eye(2, 3, k=1).to_numpy().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    _device("eye", device)
    dt = _arg.dtype("eye", dtype)
    yield dict(n_rows=n_rows, n_cols=n_cols, k=k, dtype=dt, device=device)
    with _inside:                   # agreed in the ledger: the engine trusts it
        return _creation.eye(n_rows, n_cols, k, dtype=dt)


# -- reductions: a 0-d array for a reduction over everything, keepdims ------------------------
def _as_array(x, value):
    """A reduction over everything gives a NumPy scalar; the standard wants
    a 0-d array (its value on every rank)."""
    return value if _is_distributed(value) else _scalar_array(x, value)


def _reduction_args(name, x, axis, keepdims, dtype=None):
    _arg.array(name, x)
    axes = _arg.axes(name, x.ndim, axis)
    _check_reduction(x.parts.info, name if name != "count_nonzero" else "count", axes)
    return axes, _arg.flag(name, "keepdims", keepdims), _arg.dtype(name, dtype)


def _reduced(name, x, axes, keepdims, dt, vote=_SETTLED):
    """``x.<name>(axes)`` as the standard has it: ``dt`` converts first, a
    0-d array for a reduction over everything, ``keepdims`` a view of the
    result, an empty tuple of axes reduces nothing.  ``vote``: the call's
    (a reduction over everything sends it with its partial)."""
    if dt is not None and dt != x.dtype:
        x = astype(x, dt)
    # the result's dtype: the one asked for, NumPy's (sum, prod), or the input's
    # (mean of float32 is float32; xdap's mean computes in float64)
    rt = dt if dt is not None else getattr(np, name)(np.zeros(1, x.dtype)).dtype \
        if name in ("sum", "prod", "mean") else \
        np.dtype(np.bool_) if name in ("any", "all") else None
    if not axes and x.ndim:             # nothing reduced: the values, so typed
        return astype(x, rt or x.dtype)
    out = _as_array(x, _statistical._reduced(name, x, axes, None, False, vote))
    if rt is not None and out.dtype != rt:
        out = astype(out, rt)
    return _statistical.kept_dims(x, out, axes) if keepdims else out


def _reduction(name, with_dtype):
    if with_dtype:
        def f(x, /, *, axis=None, dtype=None, keepdims=False):
            axes, keepdims, dt = _reduction_args(name, x, axis, keepdims, dtype)
            vote = yield dict(x=x, axis=axes, dtype=dt, keepdims=keepdims)
            return _reduced(name, x, axes, keepdims, dt, vote)
    else:
        def f(x, /, *, axis=None, keepdims=False):
            axes, keepdims, _ = _reduction_args(name, x, axis, keepdims)
            vote = yield dict(x=x, axis=axes, keepdims=keepdims)
            return _reduced(name, x, axes, keepdims, None, vote)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"The Array API's ``{name}``: ``a.{name}(axis)`` -- a 0-d array when it "
                 "reduces everything, ``keepdims`` keeps the reduced dims (collective: one "
                 "message, its partial and its vote together).")
    return _total_lane(name, _collective(f, rides=True))


def _result_dtype(name, dt):
    """The standard's dtype of ``name`` over everything of ``dt`` data."""
    if name in ("sum", "prod", "mean"):
        return getattr(np, name)(np.zeros(1, dt)).dtype
    return np.dtype(np.bool_) if name in ("any", "all") else dt


def _total_lane(name, declared):
    """``declared`` with the prepared path of a repeated reduction over
    everything of plain data (``xdap.repeats``): one message, the 0-d
    result made from kept parts."""
    memo = _Repeats()

    def make(agreed):
        x = agreed["x"]
        if not _plain(x) or not _is_total(x.parts.info, agreed["axis"]) or \
                agreed.get("keepdims") or agreed.get("dtype") is not None or not x.size:
            return None
        partial, combine = _total_parts(x.distribution, x.parts.info, name)
        finish = _scalar_maker(x, _result_dtype(name, x.dtype))
        return _Rides(lambda x: partial(x.parts.values),
                      lambda x, part, records: finish(x, combine(part, records)))

    def call(x, /, **kwargs):
        out = _call_lane(memo, declared, (x,), (), kwargs, make)
        return declared(x, **kwargs) if out is NotImplemented else out

    call.__name__ = call.__qualname__ = name
    call.__doc__ = declared.__doc__
    call.__wrapped__ = declared
    call.__xdap_contract__ = declared.__xdap_contract__
    return call


sum = _reduction("sum", True)        # noqa: A001
prod = _reduction("prod", True)
max = _reduction("max", False)       # noqa: A001
min = _reduction("min", False)       # noqa: A001
any = _reduction("any", False)       # noqa: A001
all = _reduction("all", False)       # noqa: A001


@_collective(rides=True, name="mean")
def _mean(x, /, *, axis=None, keepdims=False):
    """The mean over ``axis``; NaN where the reduced dims hold no value (the
    standard's rule; ``x.mean`` itself refuses that).  Collective."""
    axes, keepdims, _ = _reduction_args("mean", x, axis, keepdims)
    vote = yield dict(x=x, axis=axes, keepdims=keepdims)
    if not x.ndim or _builtins.all(x.shape[a] for a in axes):
        return _reduced("mean", x, axes, keepdims, None, vote)
    total = _reduced("sum", x, axes, keepdims, None, vote)
    return _elementwise.divide(total, 0.0)


mean = _total_lane("mean", _mean)


def _statistic(name):
    def f(x, /, *, axis=None, correction=0.0, keepdims=False):
        _arg.numeric(name, x)
        axes = _arg.axes(name, x.ndim, axis)
        correction = _arg.real(name, "correction", correction)
        keepdims = _arg.flag(name, "keepdims", keepdims)
        yield dict(x=x, axis=axes, correction=correction, keepdims=keepdims)
        out = _as_array(x, getattr(_statistical, name)(x, axis=axes, correction=correction))
        real = np.empty(0, x.dtype).real.dtype
        if x.dtype.kind in "fc" and out.dtype != real:
            out = astype(out, real)         # float32 stays float32, complex64 gives float32
        return _statistical.kept_dims(x, out, axes) if keepdims else out
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API's ``{name}``: ``xdap.{name}`` with ``keepdims`` (collective)."
    return _collective(f)


var = _statistic("var")
std = _statistic("std")


def _arg_function(name):
    def f(x, /, *, axis=None, keepdims=False):
        _arg.numeric(name, x)
        axes = _arg.axes(name, x.ndim, axis) if x.ndim or axis is not None else ()
        keepdims = _arg.flag(name, "keepdims", keepdims)
        yield dict(x=x, axis=axis if axis is None else axes, keepdims=keepdims)
        out = _as_array(x, getattr(_searching, name)(x, axis=axis))
        return _statistical.kept_dims(x, out, axes) if keepdims else out
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API's ``{name}``: ``xdap.{name}`` as an array, with ``keepdims``."
    return _collective(f)


argmax = _arg_function("argmax")
argmin = _arg_function("argmin")


@_collective
def count_nonzero(x, /, *, axis=None, keepdims=False):
    """How many elements are nonzero (``xdap.count_nonzero``), as an array."""
    axes, keepdims, _ = _reduction_args("count_nonzero", x, axis, keepdims)
    _arg.numeric("count_nonzero", x)
    yield dict(x=x, axis=axes, keepdims=keepdims)
    out = _as_array(x, _searching.count_nonzero(x, axis=axes))
    return _statistical.kept_dims(x, out, axes) if keepdims else out


# -- linear algebra ------------------------------------------------------------------
@_collective
def matmul(x1, x2, /):
    """``xdap.matmul``; the dot product of two 1-D arrays is a 0-d array and a
    1-D array times a matrix a DistArray, as the standard says
    (``xdap.matmul`` gives NumPy's scalar and array)."""
    _arg.array("matmul", x1, "x1")
    yield dict(x1=x1, x2=x2)
    out = _linalg.matmul(x1, x2)
    if _is_distributed(out):
        return out
    if np.ndim(out):            # a vector @ a matrix: the same NumPy result on every rank
        return x1.__xdap_wrap__(*_from_every_rank(x1, np.asarray(out)), False, True)
    return _scalar_array(x1, out)


@_collective
def tensordot(x1, x2, /, *, axes=2):
    """``xdap.tensordot``; a 0-d array where it sums everything."""
    _arg.array("tensordot", x1, "x1")
    yield dict(x1=x1, x2=x2, axes=axes)
    return _as_array(x1, _linalg.tensordot(x1, x2, axes=axes))


def vecdot(x1, x2, /, *, axis=-1):
    """``xdap.vecdot``, a 0-d array where it sums everything (one message
    for two 1-D arrays of one distribution: the dots and the vote; a
    repeated one takes its prepared path, ``xdap.repeats``)."""
    out = _call_lane(_DOTS, _vecdot, (x1, x2), (), {} if axis == -1 else {"axis": axis},
                     _DOT_LANE)
    return _vecdot(x1, x2, axis=axis) if out is NotImplemented else out


_DOTS = _Repeats()
_DOT_LANE = _linalg.dot_lane(_scalar_maker)


@_collective(rides=True, name="vecdot")
def _vecdot(x1, x2, /, *, axis=-1):
    """``vecdot``'s declared path."""
    _arg.array("vecdot", x1, "x1")
    x2, axis = _linalg.vecdot_args(x1, x2, axis)
    vote = yield dict(x1=x1, x2=x2, axis=axis)
    return _as_array(x1, _linalg.vecdot_agreed(x1, x2, axis, vote))


vecdot.__xdap_contract__ = _vecdot.__xdap_contract__


# -- the namespace's info and the array attributes it adds -------------------------------
class _Info:
    """``__array_namespace_info__()``: one device, the CPU."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self):
        return "cpu"

    def devices(self):
        return ["cpu"]

    def default_dtypes(self, *, device=None):
        return {"real floating": np.dtype(np.float64), "complex floating":
                np.dtype(np.complex128), "integral": np.dtype(np.int64),
                "indexing": np.dtype(np.int64)}

    def dtypes(self, *, device=None, kind=None):
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        out = {n: np.dtype(n) for n in names}
        if kind is None:
            return out
        return {n: t for n, t in out.items() if isdtype(t, kind)}


@_pure
def __array_namespace_info__():
    return _Info()


__all__ = [
     "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float32", "float64", "complex64", "complex128", "e", "inf", "nan", "pi", "newaxis",
     "__array_api_version__", "__array_namespace_info__",
     "clip", "real", "imag", "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
     "take", "take_along_axis", "broadcast_arrays", "broadcast_to", "concat", "expand_dims",
     "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack",
     "tile", "unstack", "nonzero", "searchsorted", "where", "unique_all", "unique_counts",
     "unique_inverse", "unique_values", "argsort", "sort", "cumulative_prod",
     "cumulative_sum", "diff", "matrix_transpose", "empty_like", "full_like", "meshgrid",
     "ones_like", "tril", "triu", "zeros_like", "asarray", "from_dlpack", "zeros", "ones",
     "empty", "full", "arange", "linspace", "eye", "sum", "prod", "max", "min", "any", "all",
     "mean", "var", "std", "argmax", "argmin", "count_nonzero", "matmul", "tensordot",
     "vecdot"]
__all__ += list(_elementwise.STANDARD)

# -- the optional extensions ------------------------------------------------------------
from .api import fft, linalg  # noqa: E402
# the extension's products are the main namespace's (the standard lists them in both)
linalg.matmul, linalg.tensordot, linalg.vecdot = matmul, tensordot, vecdot
linalg.matrix_transpose = matrix_transpose
__all__ += ["fft", "linalg"]

# -- beyond the standard: what xarray looks up in an array's namespace ------------------
# xarray's reductions with skipna (on for floats) call ``xp.nanmean`` and the
# others, its cumulative ones ``xp.cumsum``, its quantile ``xp.transpose``,
# shift and rolling ``xp.pad`` and ``xp.lib.stride_tricks.sliding_window_view``,
# xr.dot and weighted ``xp.einsum``:
# NumPy's names, on distributed data (xdap.api.nan_functions).  Not in
# __all__, which stays the standard's.
from .api.nan_functions import (cumprod, cumsum, nanargmax, nanargmin, nancumprod,  # noqa: E402
                                nancumsum, nanmax, nanmean, nanmedian, nanmin, nanpercentile,
                                nanprod, nanquantile, nanstd, nansum, nanvar)
from .api.numpy_manipulation import lib, pad  # noqa: E402
from .api.einsum import einsum  # noqa: E402
transpose = permute_dims
