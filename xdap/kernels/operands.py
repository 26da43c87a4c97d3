"""Operands of a kernel call: what each argument is, whether they fit
together, and which dtype mixed operands are computed in (pure: no MPI).

An operand is a DistArray (its local container is used on each rank), a
plain xnd container, a NumPy array (viewed as a container without copying;
masked arrays become ``?T``) or a Python scalar (broadcast).

Mixed dtypes follow gumath's rule of *exact* conversions only: an operand
is converted only to a type that holds every value of its type exactly
(int32 -> float64 yes, int64 -> float64 no).

>>> common_dtype("int16", "float32"), common_dtype("uint8", "int8")
('float32', 'int16')
>>> common_dtype("int64", "float64") is None
True
"""
from __future__ import annotations

import numbers

import numpy as np
from xnd import xnd

from ..arraylike import is_distributed
from ..parts import Parts, as_container, container, parts
from ..types import dtype_from_numpy, numpy_dtype

__all__ = ["common_dtype", "exact_float", "scalar_dtype", "to_container"]

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
_FLOAT_MANT = {"float32": 24, "float64": 53, "complex64": 24, "complex128": 53}


def _bits(d):
    """(class, value bits needed) of a dtype: 'b', 'i', 'u', 'f', 'c'."""
    if d == "bool":
        return "b", 1
    if d in _INT_BITS:
        return "i", _INT_BITS[d] - 1
    if d in _UINT_BITS:
        return "u", _UINT_BITS[d]
    if d in ("float32", "float64"):
        return "f", _FLOAT_MANT[d]
    if d in ("complex64", "complex128"):
        return "c", _FLOAT_MANT[d]
    return None, None


def exact_float(d: str):
    """The smallest of float32/float64 holding every value of d exactly, or
    None (64-bit integers). Floats map to themselves.

    >>> exact_float("uint16"), exact_float("int32"), exact_float("int64")
    ('float32', 'float64', None)
    """
    cls, bits = _bits(d)
    if cls == "f":
        return d
    if cls in ("b", "i", "u"):
        if bits <= 24:
            return "float32"
        if bits <= 53:
            return "float64"
    return None


def _fits(src: str, dst: str) -> bool:
    """True when every value of src is exactly representable in dst."""
    if src == dst:
        return True
    cs, bs = _bits(src)
    cd, bd = _bits(dst)
    if cs is None or cd is None:
        return False
    if cs == "b":
        return True
    if cd == "b":
        return False
    if cs in ("i", "u") and cd in ("i", "u"):
        if cs == "i" and cd == "u":
            return False
        return bs <= bd
    if cs == "c":
        return cd == "c" and bs <= bd
    if cd in ("f", "c"):
        if cs == "f":
            return bs <= bd
        return bs <= bd       # integer value bits within the mantissa
    return False


# Candidates, smallest first; integers before floats so that mixed integer
# operands stay integers (uint32 with int32 -> int64, as in NumPy).
_ORDER = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float32", "float64", "complex64", "complex128"]


def common_dtype(a: str, b: str):
    """The smallest dtype both a and b convert to exactly, or None.

    >>> common_dtype("uint32", "int32"), common_dtype("float32", "int32")
    ('int64', 'float64')
    >>> common_dtype("uint64", "int8") is None
    True
    """
    if a == b:
        return a
    for d in _ORDER:
        if _fits(a, d) and _fits(b, d):
            return d
    return None


def scalar_dtype(value, other: str):
    """The dtype a Python scalar takes next to an array of dtype ``other``
    (NumPy 2's weak scalars, with exact conversions): an int adopts an
    integer or float array's dtype, a float adopts a float dtype or the
    exact float of an integer dtype, a complex gives complex128.

    >>> scalar_dtype(2, "int16"), scalar_dtype(2.5, "int16"), scalar_dtype(2.5, "float32")
    ('int16', 'float32', 'float32')
    >>> scalar_dtype(np.uint16(2), "uint8"), scalar_dtype(1j, "complex64")
    ('uint16', 'complex64')
    """
    cls, _ = _bits(other)
    if isinstance(value, (bool, np.bool_)):
        return other
    if isinstance(value, np.generic):
        # a NumPy scalar (a 0-d array's value) is no weak Python scalar: its
        # dtype counts, as an array's does (NEP 50, the Array API)
        mine = dtype_from_numpy(value.dtype)
        return common_dtype(mine, other) or dtype_from_numpy(
            np.result_type(value.dtype, numpy_dtype(other)))
    if isinstance(value, numbers.Integral):
        return "int64" if cls == "b" else other
    if isinstance(value, numbers.Real):
        if cls in ("f", "c"):
            return other
        return exact_float(other) or "float64"
    if isinstance(value, numbers.Complex):     # weak too: complex64 stays complex64
        if cls == "c":
            return other
        return "complex64" if other == "float32" else "complex128"
    raise TypeError(f"unsupported scalar operand {value!r} of type {type(value).__name__}")


_BUILTIN_NUMBERS = frozenset((int, float, complex, bool))


def is_scalar(x) -> bool:
    if type(x) in _BUILTIN_NUMBERS:           # the common case, without ABC checks
        return True
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, np.ndarray)


def to_container(x):
    """A plain operand as an xnd container (``xdap.parts.as_container``:
    NumPy arrays zero-copy when C-contiguous; lists of bools are bool data,
    as in NumPy, so ``negative([True, False])`` raises like
    ``negative(np.array([True, False]))``).

    >>> to_container([True, False]).type, to_container([[True, None], [False]]).type
    (ndt("2 * bool"), ndt("var * var * ?bool"))
    """
    from xnd import xnd
    if isinstance(x, xnd):
        return x
    if isinstance(x, (np.ndarray, list, tuple)):
        return as_container(x)
    raise TypeError(f"unsupported operand of type {type(x).__name__}: expected a DistArray, "
                    "an xnd container, a NumPy array or a Python scalar")


def converts(src: str, dst: str, rule: str) -> bool:
    """Whether a kernel taking ``dst`` may be given ``src`` data converted:
    ``"exact"`` when every value of src is exactly a dst value, ``"safe"``
    as NumPy's safe casting (int64 -> float64, as ``np.sin`` of integers)."""
    if src == dst:
        return True
    if rule == "exact":
        return _fits(src, dst)
    try:
        return bool(np.can_cast(numpy_dtype(src), numpy_dtype(dst), "safe"))
    except TypeError:
        return False


def cast(x, dtype: str):
    """The container ``x`` converted to ``dtype`` (a copy; NumPy's
    conversion; missing items stay missing)."""
    if x.type.ndim == 0:
        t = str(x.type)
        return xnd(x.value, type=("?" if t.startswith("?") else "") + dtype)
    p = parts(x)
    info = p.info.with_leaf(("?" if p.info.optional else "") + dtype)
    return container(Parts(info, p.values.astype(info.numpy_dtype), p.validity, p.offsets))


def operand_dtype(a):
    """An operand's element dtype -- a DistArray's, a NumPy array's, a
    container's leaf (without ``?``) -- or None for a scalar."""
    if is_distributed(a):
        return a.parts.info.dtype
    if isinstance(a, np.ndarray):
        return dtype_from_numpy(a.dtype)
    if isinstance(a, xnd):
        return str(a.type).rsplit(" * ", 1)[-1].lstrip("?")
    return None
