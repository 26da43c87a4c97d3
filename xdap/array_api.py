"""The Python Array API namespace of DistArrays (``a.__array_namespace__()``):
code written against the standard (``xp = array_namespace(x)``) runs on
distributed data.

Every function here is one of xdap's, under the standard's name and
signature: elementwise functions are NumPy's ufuncs on DistArrays
(xdap's kernels where the library has one, NumPy's loop on every rank's
values otherwise: local work), reductions the DistArray's, the rest from
``xdap.numpy_api``.  What each moves is said there.

Not here yet (``AttributeError``, so generic code can test for it): the
``linalg`` and ``fft`` extensions.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
>>> xp = a.__array_namespace__()
>>> xp.sum(xp.abs(a - xp.mean(a, axis=0)), axis=0).to_numpy()
array([4., 4.])
"""
from __future__ import annotations

import builtins      # the namespace has the standard's any/all
import collections

import numpy as np

from . import array as _array
from . import manipulation as _manip
from . import numpy_api as _api
from .parts import Parts

__array_api_version__ = "2024.12"

# -- data types: NumPy's ----------------------------------------------------------
bool = np.bool_             # noqa: A001 -- the standard's names
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float32, float64 = np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
e, inf, nan, pi = np.e, np.inf, np.nan, np.pi
newaxis = None

# -- elementwise: the standard's name -> NumPy's ufunc -------------------------------
_ELEMENTWISE = {
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
    "tan": "tan", "tanh": "tanh", "trunc": "trunc", "real": "real", "imag": "imag",
    "conj": "conjugate",
}


def _elementwise(name: str, ufunc):
    if ufunc.nin == 1:
        def f(x, /):
            return ufunc(x)
    else:
        def f(x1, x2, /):
            return ufunc(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"The Array API's ``{name}``: ``np.{ufunc.__name__}`` on DistArrays "
                 "(local work; NumPy's promotion).")
    return f


for _name, _np_name in _ELEMENTWISE.items():
    _u = getattr(np, _np_name, None)
    if isinstance(_u, np.ufunc):
        globals()[_name] = _elementwise(_name, _u)
del _name, _np_name, _u


def clip(x, /, min=None, max=None):  # noqa: A002
    return _api.clip(x, min, max)


# -- creation ---------------------------------------------------------------------
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A DistArray of ``obj`` (a DistArray: itself, or a copy with ``copy=True``
    or another ``dtype``; anything else: ``xdap.from_global`` of it, the same on
    every rank)."""
    _check_device(device)
    if isinstance(obj, _array.DistArray):
        if dtype is not None and np.dtype(dtype) != obj.dtype:
            return astype(obj, dtype)
        return obj.copy() if copy else obj
    if copy is False:
        raise ValueError("asarray: copy=False -- a DistArray of data on every rank is a copy")
    data = np.asarray(obj, dtype=dtype)
    return _array.from_global(data)


def _check_device(device):
    if device not in (None, "cpu"):
        raise ValueError(f"xdap arrays live on the CPU: device {device!r}")


def zeros(shape, *, dtype=None, device=None):
    _check_device(device)
    return _array.zeros(shape, dtype=dtype or np.float64)


def ones(shape, *, dtype=None, device=None):
    _check_device(device)
    return _array.full(shape, 1, dtype=dtype or np.float64)


def empty(shape, *, dtype=None, device=None):
    _check_device(device)
    return _array.zeros(shape, dtype=dtype or np.float64)


def full(shape, fill_value, *, dtype=None, device=None):
    _check_device(device)
    if dtype is None:
        dtype = np.result_type(fill_value) if not isinstance(fill_value, float) else np.float64
    return _array.full(shape, fill_value, dtype=dtype)


def _filled_like(x, fill_value, dtype, device):
    """``x``'s shape and distribution, every element ``fill_value``: each
    rank fills its own block (no MPI call)."""
    _check_device(device)
    if not isinstance(x, _array.DistArray) or x.parts.info.ragged or x.parts.info.boxed:
        raise TypeError("*_like: x must be a DistArray of fixed shape")
    dt = np.dtype(x.dtype if dtype is None else dtype)
    values = np.full(x.parts.values.shape, fill_value, dt)
    return x.__xdap_wrap__(x.distribution, Parts.of_array(values), False, True)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros of ``x``'s shape and distribution (local work)."""
    return _filled_like(x, 0, dtype, device)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones of ``x``'s shape and distribution (local work)."""
    return _filled_like(x, 1, dtype, device)


def empty_like(x, /, *, dtype=None, device=None):
    """An array of ``x``'s shape and distribution (zeros: local work)."""
    return _filled_like(x, 0, dtype, device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in ``x``'s shape and distribution (local work)."""
    return _filled_like(x, fill_value, dtype, device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """NumPy's ``arange``, each rank computing only its part.  The default
    dtype is the standard's: int64 when every argument is an integer, else
    float64 -- found from the arguments, without building the array."""
    _check_device(device)
    if dtype is None:
        floats = builtins.any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
        dtype = np.float64 if floats else np.int64
    return _array.arange(start, stop, step, dtype=dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """NumPy's ``linspace``, each rank computing only its part."""
    _check_device(device)
    dtype = np.dtype(dtype or np.float64)
    step = (stop - start) / ((num - 1) if endpoint else num) if num > 1 else 0.0
    last = num - 1

    def value(i):
        v = start + i * step
        return np.where(i == last, stop, v) if endpoint and num > 1 else v
    return _array.from_function(lambda i: value(i).astype(dtype), (num,),
                                _array._element(None, dtype))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the ``k``-th diagonal, zeros elsewhere (the standard's
    ``eye``): each rank computes its block only (``from_function``).

    >>> eye(2, 3, k=1).to_numpy().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    _check_device(device)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"eye: k must be an int, got {k!r}")
    dtype = np.dtype(dtype or np.float64)
    n_cols = n_rows if n_cols is None else n_cols
    return _array.from_function(lambda i, j: (j - i == k).astype(dtype), (n_rows, n_cols),
                                _array._element(None, dtype))


# -- data type functions: NumPy's, on dtypes or arrays (no MPI call) ----------------
def _dtype_of(x):
    return x.dtype if isinstance(x, (_array.DistArray, np.ndarray)) else np.dtype(x)


FinfoObject = collections.namedtuple("finfo_object",
                                     "bits eps max min smallest_normal resolution dtype")


def finfo(type, /):  # noqa: A002 -- the standard's name
    """Machine limits of a floating dtype (or an array's), NumPy's figures
    as the standard wants them: Python floats (``np.finfo`` gives NumPy
    scalars of the dtype)."""
    f = np.finfo(_dtype_of(type))
    return FinfoObject(int(f.bits), float(f.eps), float(f.max), float(f.min),
                       float(f.smallest_normal), float(f.resolution), f.dtype)


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (or an array's): ``np.iinfo``."""
    return np.iinfo(_dtype_of(type))


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or an array) casts to ``to`` without loss
    under the standard's promotion rules (NumPy's ``"safe"``)."""
    return bool(np.can_cast(_dtype_of(from_), np.dtype(to), casting="safe"))


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives (NumPy's ``result_type``;
    Python scalars are weak, as NEP 50 says)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: needs at least one array or dtype")
    return np.result_type(*[a.dtype if isinstance(a, _array.DistArray) else a
                            for a in arrays_and_dtypes])


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind
    names (``"integral"``, ``"real floating"``, ...) or a tuple of them.

    >>> isdtype(float32, ("integral", "real floating"))
    True
    """
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {sorted(_KINDS)}")
        return dtype.kind in _KINDS[kind]
    return dtype == np.dtype(kind)


# -- conversion, reductions, the rest -----------------------------------------------
def astype(x, dtype, /, *, copy=True, device=None):
    _check_device(device)
    return x.astype(dtype)


def _as_array(x, value):
    """A reduction over everything gives a NumPy scalar; the standard wants
    a 0-d array (its value on every rank)."""
    return value if isinstance(value, _array.DistArray) else _api._scalar_array(x, value)


def _reduced_axes(x, axis):
    if axis is None:
        return tuple(range(x.ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted({_api._axis("reduction", x, a) for a in axes}))


def _kept(out, ndim, axes):
    """``keepdims=True``: the reduced dims back, each of size 1 (a view of
    the result's values; no MPI call)."""
    if not axes:
        return out
    if out.ndim == 0:
        return _api.reshape(out, (1,) * ndim)
    return out[tuple(None if j in axes else slice(None) for j in range(ndim))]


def _reduce(name, x, axis, keepdims, dtype=None):
    """``x.<name>(axis)`` as the standard has it: ``dtype`` converts first, a
    0-d array for a reduction over everything, ``keepdims`` a view of the
    result, an empty tuple of axes reduces nothing."""
    if not isinstance(x, _array.DistArray):
        x = asarray(x)                  # a NumPy value (what an element read gives)
    if dtype is not None and np.dtype(dtype) != x.dtype:
        x = astype(x, dtype)
    axes = _reduced_axes(x, axis)
    # the result's dtype: the one asked for, NumPy's (sum, prod), or the input's
    # (mean of float32 is float32; xdap's mean computes in float64)
    dt = np.dtype(dtype) if dtype is not None else getattr(np, name)(
        np.zeros(1, x.dtype)).dtype if name in ("sum", "prod", "mean") else \
        np.dtype(bool) if name in ("any", "all") else None
    if not axes and x.ndim:             # nothing reduced: the values, so typed
        return astype(x, dt or x.dtype)
    out = _as_array(x, getattr(x, name)(axis=None if len(axes) == x.ndim else axes))
    if dt is not None and out.dtype != dt:
        out = astype(out, dt)
    return _kept(out, x.ndim, axes) if keepdims else out


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001 -- the standard's names
    """The sum over ``axis`` (collective; see ``DistArray.sum``)."""
    return _reduce("sum", x, axis, keepdims, dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """The product over ``axis`` (collective)."""
    return _reduce("prod", x, axis, keepdims, dtype)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """The largest value over ``axis`` (collective)."""
    return _reduce("max", x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """The smallest value over ``axis`` (collective)."""
    return _reduce("min", x, axis, keepdims)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """Whether any value over ``axis`` is true (collective)."""
    return _reduce("any", x, axis, keepdims)


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """Whether every value over ``axis`` is true (collective)."""
    return _reduce("all", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    """The mean over ``axis``: ``x.mean(axis)``; NaN where the reduced dims
    hold no value (the standard's rule; ``x.mean`` itself refuses that)."""
    axes = _reduced_axes(x, axis)
    if not x.ndim or builtins.all(x.shape[a] for a in axes):
        return _reduce("mean", x, axis, keepdims)
    return divide(sum(x, axis=axis, keepdims=keepdims), 0.0)


def _statistic(name):
    def f(x, /, *, axis=None, correction=0.0, keepdims=False):
        axes = _reduced_axes(x, axis)
        out = _as_array(x, getattr(_api, name)(x, axis=axis, correction=correction))
        if x.dtype.kind in "fc" and out.dtype != np.empty(0, x.dtype).real.dtype:
            out = astype(out, np.empty(0, x.dtype).real.dtype)   # float32 stays float32
        return _kept(out, x.ndim, axes) if keepdims else out
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API's ``{name}``: ``xdap.{name}`` with ``keepdims``."
    return f


var = _statistic("var")
std = _statistic("std")


def _searching(name):
    def f(x, /, *, axis=None, keepdims=False):
        out = _as_array(x, getattr(_api, name)(x, axis=axis))
        return _kept(out, x.ndim, _reduced_axes(x, axis)) if keepdims else out
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API's ``{name}``: ``xdap.{name}`` as an array, with ``keepdims``."
    return f


argmax = _searching("argmax")
argmin = _searching("argmin")


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """How many elements are nonzero (``xdap.count_nonzero``), as an array."""
    out = _as_array(x, _manip.count_nonzero(x, axis=axis))
    return _kept(out, x.ndim, _reduced_axes(x, axis)) if keepdims else out


def vecdot(x1, x2, /, *, axis=-1):
    """``xdap.vecdot``, a 0-d array where it sums everything."""
    return _as_array(x1, _manip.vecdot(x1, x2, axis=axis))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """``xdap.searchsorted``; with ``sorter`` (the indices that sort ``x1``),
    of ``take(x1, sorter)``."""
    if sorter is not None:
        x1 = take(x1, sorter)
    return _api.searchsorted(x1, x2, side=side)


def from_dlpack(x, /, *, device=None, copy=None):
    """A DistArray of a DLPack-exporting array (NumPy's ``from_dlpack``,
    then ``asarray``: the same data on every rank; a copy); a DistArray is
    returned as it is (``copy=True``: a copy)."""
    _check_device(device)
    if isinstance(x, _array.DistArray):          # one of ours: itself, or a copy
        return x.copy() if copy else x
    return asarray(np.from_dlpack(x), copy=copy)


from .numpy_api import (argsort, broadcast_to, concat, cumulative_prod,  # noqa: E402,F401
                        cumulative_sum, expand_dims, flip, matrix_transpose, nonzero,
                        permute_dims, roll, sort, reshape, squeeze, stack, take,
                        tril, triu, unique_all, unique_counts, unique_inverse, unique_values,
                        where)
from .manipulation import (broadcast_arrays, diff, imag, meshgrid, moveaxis,  # noqa: E402,F401
                           real, repeat, take_along_axis, tile, unstack)
from . import manipulation as _manipulation  # noqa: E402


def matmul(x1, x2, /):
    """``xdap.matmul``; the dot product of two 1-D arrays is a 0-d array and a
    1-D array times a matrix a DistArray, as the standard says
    (``xdap.matmul`` gives NumPy's scalar and array)."""
    out = _api.matmul(x1, x2)
    if isinstance(out, _array.DistArray):
        return out
    if np.ndim(out):            # a vector @ a matrix: the same NumPy result on every rank
        return x1.__xdap_wrap__(*_api._from_every_rank(x1, np.asarray(out)), False, True)
    return _api._scalar_array(x1, out)


def tensordot(x1, x2, /, *, axes=2):
    """``xdap.tensordot``; a NumPy value for ``x1`` -- the element ``a[i]``
    reads -- becomes an array every rank holds (``asarray``)."""
    if not hasattr(type(x1), "__xdap_wrap__"):
        x1 = asarray(x1)
    return _manipulation.tensordot(x1, x2, axes=axes)


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
        return {n: np.dtype(n) for n in names}


def __array_namespace_info__():
    return _Info()


# The namespace registers itself on the class it serves (array.py does not
# import it: no import circle), with the standard's device attributes.
def _array_namespace(self, /, *, api_version=None):
    """This array's Array API namespace: ``xdap.array_api``."""
    if api_version not in (None, "2023.12", __array_api_version__):
        raise ValueError(f"xdap implements the Array API {__array_api_version__}, not "
                         f"{api_version!r}")
    import sys
    return sys.modules[__name__]


def _to_device(self, device, /, *, stream=None):
    _check_device(device)
    return self


def _dlpack(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of an array every rank holds whole (0-d, replicated,
    or on one rank): its values, zero-copy.  A distributed array's data is
    on many ranks -- one rank's part is ``a.local_numpy()``.  Decided from
    the distribution alone (no MPI call)."""
    if not builtins.all(m.whole for m in self.distribution.maps) or \
            self.parts.info.ragged or self.parts.info.optional or self.parts.info.boxed:
        raise BufferError(f"__dlpack__: {self!r} is distributed (or not plain fixed data); "
                          "export each rank's part, a.local_numpy(), or a.to_numpy()")
    kw = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kw["copy"] = copy
    return self.parts.values.__dlpack__(stream=stream, dl_device=dl_device, **kw)


def _dlpack_device(self, /):
    return (1, 0)                       # kDLCPU, device 0


_array.DistArray.__array_namespace__ = _array_namespace
_array.DistArray.__dlpack__ = _dlpack
_array.DistArray.__dlpack_device__ = _dlpack_device
_array.DistArray.device = property(lambda self: "cpu", doc="Always the CPU.")
_array.DistArray.to_device = _to_device
