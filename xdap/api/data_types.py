"""Data type functions: ``astype`` (local work on an array) and the
functions of dtypes alone -- ``can_cast``, ``finfo``, ``iinfo``,
``isdtype``, ``result_type`` -- which read no array's data and make no MPI
call on any rank (``pure``: a rank may call them alone).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.arange(3, comm=MPI.COMM_SELF)
>>> str(xdap.astype(a, "float32").type), can_cast(np.int8, np.int16)
('3 * float32', True)
"""
from __future__ import annotations

import builtins
import collections

import numpy as np

from .. import arguments
from ..arraylike import is_distributed
from ..contract import local, pure
from ..parts import Parts

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "FinfoObject"]


@local
def astype(x, dtype, /, *, copy=True, device=None):
    """The array with another numeric element type (NumPy's casting,
    ``unsafe`` as in ``ndarray.astype`` -- the caller asked for it; missing
    values stay missing, and ``"?float64"`` makes an optional array, every
    value present).  ``dtype``: an ndtypes name ('float32') or a NumPy
    dtype.  A copy unless ``copy=False`` and the type is already right.
    No communication.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(3), comm=MPI.COMM_SELF).astype("float32")
    >>> str(a.type), a.to_numpy().tolist()
    ('3 * float32', [0.0, 1.0, 2.0])
    """
    from ..types import DTYPES
    arguments.array("astype", x)
    if device not in (None, "cpu"):
        raise ValueError(f"astype: xdap arrays live on the CPU, not device {device!r}")
    copy = arguments.flag("astype", "copy", copy)
    name = _dtype_name(dtype)
    optional = name.startswith("?")
    name = name.lstrip("?")
    p = x.parts
    if not (p.info.numeric and not p.info.boxed and name in DTYPES):
        raise TypeError(f"astype: converts numbers to numbers; the array holds "
                        f"{p.info.leaf!r} and {name!r} was asked for")
    yield dict(x=x, dtype=("?" if optional else "") + name, copy=copy, device=device)
    info = p.info.with_leaf(("?" if p.info.optional or optional else "") + name)
    if not copy and info == p.info:
        return x
    if p.values.dtype.kind in "fc":      # a float's cast may overflow: NumPy's result, quietly
        with np.errstate(all="ignore"):
            values = p.values.astype(info.numpy_dtype)
    else:
        values = p.values.astype(info.numpy_dtype)
    validity = p.validity.copy() if p.validity is not None else \
        np.full((values.size + 7) // 8, 0xFF, np.uint8) if optional else None
    q = Parts(info, values, validity, p.offsets, rows=p.rows)
    return x.__xdap_wrap__(x.distribution, q, True, fresh=False)


_NAMES: dict = {}        # a dtype as given (hashable) -> its ndtypes name


def _dtype_name(dtype) -> str:
    """``astype``'s ``dtype`` as an ndtypes name ('?float64' optional),
    kept by the value given (a loop's astype looks it up)."""
    try:
        return _NAMES[type(dtype), dtype]
    except (KeyError, TypeError):        # (TypeError: unhashable, not kept)
        pass
    from ..types import DTYPES, dtype_from_numpy
    name = dtype if isinstance(dtype, str) and dtype.lstrip("?") in DTYPES else None
    if name is None:
        if isinstance(dtype, (bool, int, float, complex)) or dtype is None:
            raise TypeError(f"astype: {dtype!r} is not a dtype")
        try:
            name = dtype_from_numpy(np.dtype(dtype))
        except Exception as e:
            raise TypeError(f"astype: {dtype!r} is not a numeric dtype ({e})") from None
    try:
        if len(_NAMES) >= 256:
            _NAMES.clear()
        _NAMES[type(dtype), dtype] = name
    except TypeError:
        pass
    return name


def _dtype_of(name, x):
    if is_distributed(x):
        if x.dtype is None:
            raise TypeError(f"{name}: a {arguments.type_of(x)} array has no NumPy dtype")
        return x.dtype
    if isinstance(x, np.ndarray):
        return x.dtype
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, type):
        raise TypeError(f"{name}: takes a dtype or an array, got {x!r}")
    try:
        return np.dtype(x)
    except Exception:
        raise TypeError(f"{name}: {x!r} is not a dtype") from None


FinfoObject = collections.namedtuple("finfo_object",
                                     "bits eps max min smallest_normal resolution dtype")


@pure
def finfo(type, /):  # noqa: A002 -- the standard's name
    """Machine limits of a floating dtype (or an array's), NumPy's figures
    as the standard wants them: Python floats (``np.finfo`` gives NumPy
    scalars of the dtype)."""
    dt = _dtype_of("finfo", type)
    if dt.kind not in "fc":
        raise ValueError(f"finfo: {dt} is not a floating-point dtype")
    f = np.finfo(dt)
    return FinfoObject(int(f.bits), float(f.eps), float(f.max), float(f.min),
                       float(f.smallest_normal), float(f.resolution), f.dtype)


@pure
def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (or an array's): ``np.iinfo``."""
    dt = _dtype_of("iinfo", type)
    if dt.kind not in "iu":
        raise ValueError(f"iinfo: {dt} is not an integer dtype")
    return np.iinfo(dt)


@pure
def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or an array) casts to ``to`` without loss
    under the standard's promotion rules (NumPy's ``"safe"``): a Python
    bool."""
    return builtins.bool(np.can_cast(_dtype_of("can_cast", from_), _dtype_of("can_cast", to),
                                     casting="safe"))


@pure
def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives (NumPy's ``result_type``;
    Python scalars are weak, as NEP 50 says)."""
    if not arrays_and_dtypes:
        raise ValueError("result_type: needs at least one array or dtype")
    return np.result_type(*[a.dtype if is_distributed(a) else a for a in arrays_and_dtypes])


_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


@pure
def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, one of the standard's kind
    names (``"integral"``, ``"real floating"``, ...) or a tuple of them.

    >>> isdtype(np.float32, ("integral", "real floating"))
    True
    """
    dtype = _dtype_of("isdtype", dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; one of {sorted(_KINDS)}")
        return dtype.kind in _KINDS[kind]
    return dtype == _dtype_of("isdtype", kind)
