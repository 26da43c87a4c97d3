"""The checks every public function runs on its arguments, inside its
agreement (``xdap.contract``): each returns the argument normalized -- an
axis as a non-negative ``int``, a shape as a tuple of ``int`` -- or raises
the error NumPy would (``TypeError`` for the wrong kind of value,
``ValueError`` for a bad one, ``AxisError``/``IndexError`` out of range),
with a message that names the function, the argument and the value.

No check narrows silently: a float where an int is expected is a
``TypeError`` (even ``2.0``), NaN and infinities are refused by name, and
integers too large for the index type are a ``ValueError``.

>>> axis("sort", 2, -1), shape("zeros", 3), flag("sort", "stable", True)
(1, (3,), True)
>>> integer("eye", "k", 2.5)
Traceback (most recent call last):
TypeError: eye: k must be an int, got 2.5 (float)
"""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .arraylike import is_distributed

__all__ = ["type_of", "array", "fixed", "numeric", "integer", "rank", "axis", "axes", "flag", "shape", "real",
           "choice", "dtype", "same_comm", "value_of", "INDEX_MAX"]

INDEX_MAX = np.iinfo(np.int64).max      # the largest index or size (NumPy's intp)


def _shown(value, width: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    return text if len(text) <= width else text[:width - 3] + "..."


# -- arrays ----------------------------------------------------------------------
def type_of(x) -> str:
    """A DistArray's global type, as every rank says it in a message (its
    local part's type names this rank's share: ``6 * float64`` here, ``0 *
    float64`` there)."""
    return x.parts.info.global_type(x.distribution.global_shape)


def array(name: str, x, what: str = "x"):
    """``x`` must be a DistArray (anything with the ``xdap.arraylike``
    protocol)."""
    if not is_distributed(x):
        raise TypeError(f"{name}: {what} must be a DistArray, got {type(x).__name__}")
    return x


def fixed(name: str, x, what: str = "x"):
    """``x``: a DistArray of fixed shape (not ragged, not strings or
    records held as boxes)."""
    array(name, x, what)
    info = x.parts.info
    if info.ragged or info.boxed:
        raise TypeError(f"{name}: {what} must be fixed-shape data, not {type_of(x)}")
    return x


def numeric(name: str, x, what: str = "x", optional: bool = False):
    """``x``: a DistArray of fixed numeric data (bool, integers, floats,
    complex), without missing values unless ``optional``."""
    array(name, x, what)
    info = x.parts.info
    if info.ragged or info.boxed or (info.optional and not optional) or not info.numeric:
        raise TypeError(f"{name}: {what} must be fixed numeric data without missing values, "
                        f"not {type_of(x)}")
    return x


def same_comm(name: str, arrays) -> None:
    """The DistArrays among ``arrays`` live on one communicator -- but a
    0-d one, whose one value every rank holds, joins any (as the
    operators take it: ``xp.asarray(0.0)``, made on COMM_WORLD, with an
    array on a sub-communicator; xarray makes such fill values)."""
    distributed = [a for a in arrays if is_distributed(a)]
    if any(a.ndim for a in distributed):
        distributed = [a for a in distributed if a.ndim]
    comms = [a.distribution.comm for a in distributed]
    for c in comms[1:]:
        if c is not comms[0] and c != comms[0]:
            raise ValueError(f"{name}: the arrays live on different communicators")


# -- numbers -----------------------------------------------------------------------
def integer(name: str, what: str, value, *, low: int | None = None,
            high: int | None = None) -> int:
    """An integer argument as a Python ``int``: a Python or NumPy integer
    (or a 0-d integer array), never a bool or a float; ``low``/``high``
    bound it (inclusive)."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (float, complex, np.inexact)):
        raise TypeError(f"{name}: {what} must be an int, got {_shown(value)} "
                        f"({type(value).__name__})")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int, got {_shown(value)} "
                        f"({type(value).__name__})") from None
    except Exception as e:            # e.g. a 0-d array of another kind: its own refusal
        raise TypeError(f"{name}: {what} must be an int ({type(e).__name__}: {e})") from None
    if (low is not None and v < low) or (high is not None and v > high):
        bounds = (f">= {low}" if high is None else f"<= {high}" if low is None
                  else f"in [{low}, {high}]")
        raise ValueError(f"{name}: {what} must be {bounds}, got {v}")
    return v


def rank(name: str, comm, value, what: str = "root") -> int:
    """A rank of ``comm``: an int in ``[0, comm.size)``."""
    r = integer(name, what, value)
    if not 0 <= r < comm.size:
        raise ValueError(f"{name}: {what} must be a rank in [0, {comm.size}), got {r}")
    return r


def real(name: str, what: str, value, *, low: float | None = None) -> float:
    """A real number (int or float, not bool or complex), finite."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {what} must be a real number, got {_shown(value)} "
                        f"({type(value).__name__})")
    try:
        v = float(value)
    except OverflowError:                  # an int beyond any float: not finite either
        raise ValueError(f"{name}: {what} must be finite, got an int of "
                         f"{len(str(abs(int(value))))} digits") from None
    if not math.isfinite(v):
        raise ValueError(f"{name}: {what} must be finite, got {v}")
    if low is not None and v < low:
        raise ValueError(f"{name}: {what} must be >= {low}, got {v}")
    return v


def flag(name: str, what: str, value) -> bool:
    """A yes/no argument: ``bool`` or NumPy's bool (also 0 and 1)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"{name}: {what} must be True or False, got {_shown(value)}")


def choice(name: str, what: str, value, options: tuple):
    """One of ``options`` (compared as strings are: exactly)."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name}: {what} must be one of {', '.join(map(repr, options))}, "
                         f"got {_shown(value)}")
    return value


# -- axes and shapes ---------------------------------------------------------------
def axis(name: str, ndim: int, value, what: str = "axis") -> int:
    """An axis of an ``ndim``-d array, as a non-negative ``int``; out of
    range is NumPy's ``AxisError`` (a ValueError and an IndexError)."""
    a = integer(name, what, value)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(f"{name}: {what} {a} is out of bounds for an array of "
                                      f"{ndim} dimension{'s' if ndim != 1 else ''}")
    return a % ndim


def axes(name: str, ndim: int, value, what: str = "axis") -> tuple:
    """``None`` (every axis), one axis or a tuple of distinct axes, as a
    sorted tuple."""
    if value is None:
        return tuple(range(ndim))
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    out = tuple(axis(name, ndim, a, what) for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated {what} in {_shown(value)}")
    return tuple(sorted(out))


def shape(name: str, value, what: str = "shape") -> tuple:
    """A shape: an int or a sequence of ints >= 0, each and their product
    an index NumPy can hold (``(2**70, 0)`` is refused, as NumPy does)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name}: {what} must be an int or a tuple of ints, got "
                        f"{_shown(value)}")
    try:
        items = (integer(name, what, value),)
    except TypeError:
        try:
            items = tuple(value)
        except TypeError:
            raise TypeError(f"{name}: {what} must be an int or a tuple of ints, got "
                            f"{_shown(value)} ({type(value).__name__})") from None
        items = tuple(integer(name, f"{what} entry", n) for n in items)
    if any(n < 0 for n in items):
        raise ValueError(f"{name}: {what} entries must be >= 0, got {items}")
    if any(n > INDEX_MAX for n in items):
        raise ValueError(f"{name}: {what} {items} has a dimension larger than an index can "
                         f"count ({INDEX_MAX})")
    if math.prod(items) > INDEX_MAX:
        raise ValueError(f"{name}: {what} {items} has more elements than an index can count "
                         f"({INDEX_MAX})")
    return items


# -- element types -------------------------------------------------------------------
_STANDARD = {np.dtype(n) for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "float16", "float32", "float64",
                                   "complex64", "complex128")}


def dtype(name: str, value, what: str = "dtype"):
    """A numeric NumPy dtype (a dtype, a scalar type such as ``np.int8`` or
    its name); ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, type):
        raise TypeError(f"{name}: {what} must be a dtype, got {_shown(value)}")
    try:
        dt = np.dtype(value)
    except Exception:
        raise TypeError(f"{name}: {what} {_shown(value)} is not a data type") from None
    if dt not in _STANDARD:
        raise TypeError(f"{name}: {what} {dt} is not one of the numeric dtypes xdap computes "
                        "with (bool, int8..int64, uint8..uint64, float16..float64, complex64, "
                        "complex128)")
    return dt


def value_of(name: str, what: str, value, dt: np.dtype):
    """A scalar ``value`` as a NumPy scalar of ``dt``, refused where the
    conversion would change it: an int out of ``dt``'s range, a fraction
    into an integer type, a complex with an imaginary part into a real
    one, NaN or an infinity into an integer, a finite number that
    overflows.  (NumPy truncates ``np.full(3, 2.5, dtype=int)``; xdap
    narrows nothing silently.)  Floats round to ``dt``'s precision."""
    kind = type(value)
    if kind is int or kind is float or kind is bool:     # a Python number: kept by its bits
        key = (name, what, kind, value.hex() if kind is float else value, dt)
        got = _VALUES.get(key)
        if got is None:
            got = _value_of(name, what, value, dt)
            if len(_VALUES) >= 256:
                _VALUES.clear()
            _VALUES[key] = got
        return got
    return _value_of(name, what, value, dt)


_VALUES: dict = {}     # (name, what, Python type, value, dtype) -> value_of's answer


def _value_of(name, what, value, dt):
    """``value_of``, made."""
    if is_distributed(value):
        if value.ndim != 0 or value.parts.info.optional or not value.parts.info.numeric:
            raise TypeError(f"{name}: {what} must be one number, got an array of shape "
                            f"{value.shape}")
        value = value.parts.values[()]
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
        raise TypeError(f"{name}: {what} must be a number, got {_shown(value)} "
                        f"({type(value).__name__})")
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            out = np.asarray(value).astype(dt) if not isinstance(value, int) or \
                isinstance(value, bool) else np.array(value, dtype=dt)
    except (OverflowError, ValueError):
        raise ValueError(f"{name}: {what} {_shown(value)} is out of range for {dt}") from None
    got = out[()]
    src = np.asarray(value)
    if dt.kind in "biu":
        ok = src.dtype.kind in "biu" or (
            np.isfinite(src) and np.imag(src) == 0 and np.real(src) == np.real(src).round()
            and np.real(src) == got)
        if src.dtype.kind in "biu" and int(src) != int(got):
            ok = False
    elif dt.kind == "f":
        ok = np.imag(src) == 0 and (np.isfinite(got) or not np.isfinite(np.real(src)))
    else:
        ok = bool(np.isfinite(got)) or not bool(np.isfinite(src))
    if not bool(ok):
        raise ValueError(f"{name}: {what} {_shown(value)} does not fit {dt} without changing "
                         "(convert it explicitly, e.g. with astype)")
    return got


def is_integer_value(value) -> bool:
    """A Python or NumPy integer (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
