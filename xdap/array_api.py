"""The Python Array API namespace of DistArrays (``a.__array_namespace__()``):
code written against the standard (``xp = array_namespace(x)``) runs on
distributed data.

Every function here is one of xdap's, under the standard's name and
signature: elementwise functions are NumPy's ufuncs on DistArrays
(xdap's kernels where the library has one, NumPy's loop on every rank's
values otherwise: local work), reductions the DistArray's, the rest from
``xdap.numpy_api``.  What each moves is said there.

Not here yet (``AttributeError``, so generic code can test for it):
``broadcast_arrays``, ``meshgrid``, ``tile``, ``repeat``, ``moveaxis``,
``tensordot``, ``vecdot``, ``from_dlpack``, ``diff``, ``count_nonzero``, ``take_along_axis``, the ``linalg`` and
``fft`` extensions.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
>>> xp = a.__array_namespace__()
>>> xp.sum(xp.abs(a - xp.mean(a, axis=0)), axis=0).to_numpy()
array([4., 4.])
"""
from __future__ import annotations

import numpy as np

from . import array as _array
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
    _check_device(device)
    if dtype is None:
        dtype = np.arange(start, stop, step).dtype if stop is not None else \
            np.arange(start).dtype
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


# -- conversion, reductions, the rest -----------------------------------------------
def astype(x, dtype, /, *, copy=True, device=None):
    _check_device(device)
    return x.astype(dtype)


def _reduction(name):
    def f(x, /, *, axis=None, keepdims=False, **kw):
        if keepdims:
            raise TypeError(f"{name}: keepdims=True is not supported on DistArrays")
        return getattr(x, name)(axis=axis, **kw)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API's ``{name}``: ``x.{name}(axis)`` (collective)."
    return f


sum = _reduction("sum")          # noqa: A001
prod = _reduction("prod")
max = _reduction("max")          # noqa: A001
min = _reduction("min")          # noqa: A001
mean = _reduction("mean")
any = _reduction("any")          # noqa: A001
all = _reduction("all")          # noqa: A001

from .numpy_api import (argmax, argmin, argsort, broadcast_to, concat,  # noqa: E402,F401
                        cumulative_prod,
                        cumulative_sum, expand_dims, flip, matmul, matrix_transpose, nonzero, permute_dims, roll, sort,
                        reshape, searchsorted, squeeze, stack, std, take, tril, triu,
                        unique_all, unique_counts, unique_inverse, unique_values, var, where)


class _Info:
    """``__array_namespace_info__()``: one device, the CPU."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True}

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


_array.DistArray.__array_namespace__ = _array_namespace
_array.DistArray.device = property(lambda self: "cpu", doc="Always the CPU.")
_array.DistArray.to_device = _to_device
