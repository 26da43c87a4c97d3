"""What a local partition is: classify ndtypes types and map dtypes between
ndtypes, NumPy, PEP-3118 buffer formats and Arrow.

xdap distributes two families of xnd types (the only ones ndtypes 0.2.0.dev3
can describe without pointers):

- **fixed**: ``d0 * d1 * ... * T`` -- an N-d array, distributable along every
  dimension;
- **ragged**: ``var * var [* var ...] * T`` -- lists of lists in Arrow layout
  (one int32 offsets array per var dimension); the outermost dimension's
  items ("rows") are what is distributed.

``T`` is a fixed-size element (``xdap.dtypes``): a number (bool,
int8..uint64, float16..64, complex64/128), a record or tuple of them (with
fixed dims inside), ``fixed_string``, ``fixed_bytes`` or ``categorical``;
optionally ``?T`` (missing values, an LSB-first validity bitmap, 1 = valid,
as in Arrow).

Two more shapes ride on these: ``N * string`` / ``N * bytes`` (xnd holds a
pointer per item) are kept as ragged rows of bytes -- one item a row, utf-8
for strings, ``TypeInfo.text`` -- so every row-moving engine moves them;
and a 0-d array (``type_info(t, scalar=True)``): one element on every rank.

>>> info = type_info("var * var * ?float64")
>>> info.kind, info.ragged, info.var_ndim, info.dtype, info.optional
(<Kind.RAGGED: 'ragged'>, True, 2, 'float64', True)
>>> type_info("3 * 4 * int32").shape, buffer_format("int32")
((3, 4), 'i')
>>> type_info("var * var * {x: float64, n: int32}").dtype
'{x : float64, n : int32}'
"""
from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass

import numpy as np
from ndtypes import ndt

__all__ = ["Kind", "TypeInfo", "type_info", "split_dims", "numpy_dtype", "buffer_format",
           "dtype_from_format", "dtype_from_numpy", "DTYPES", "LEAVES_HELP"]

from .dtypes import (DTYPES, LEAVES_HELP, buffer_format, dtype_from_format,
                     dtype_from_numpy, is_numeric, leaf_format, leaf_numpy_dtype,
                     numpy_dtype, optional_fields)

# a fixed dim: "5"; with steps "fixed(shape=5, step=-1)"; "!5": the first dim of a
# Fortran-order (column-major) view, as ndtypes writes a transpose
_FIXED_DIM = re.compile(r"^!?(\d+)$|^fixed\(shape=(\d+), step=(-?\d+)\)$")


class Kind(str, enum.Enum):
    """The two families of distributable types. A ``str`` enum, so that the
    saved JSON and the messages read ``"fixed"`` / ``"ragged"``."""
    FIXED = "fixed"
    RAGGED = "ragged"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TypeInfo:
    """The classified shape of a local partition's type.

    kind      Kind.FIXED or Kind.RAGGED
    shape     fixed dims (fixed); () for ragged
    var_ndim  number of var dims (ragged); 0 for fixed
    dtype     the element type without '?', e.g. 'float64', '{x : float64}'
    optional  True for ?T leaves
    ragged    True for ``var * var * T`` (rows of lists), False for fixed dims

    Build with ``TypeInfo.fixed(shape, dtype)`` / ``TypeInfo.of_ragged(var_ndim,
    dtype)`` or ``type_info(t)``.
    """
    kind: Kind
    shape: tuple
    var_ndim: int
    dtype: str
    optional: bool

    def __post_init__(self):
        object.__setattr__(self, "kind", Kind(self.kind))
        # read on every call's hot path: an attribute, not a property
        object.__setattr__(self, "ragged", self.kind is Kind.RAGGED)

    @classmethod
    def fixed(cls, shape, dtype: str, optional: bool = False) -> "TypeInfo":
        return cls(Kind.FIXED, tuple(int(s) for s in shape), 0, dtype, bool(optional))

    @classmethod
    def of_ragged(cls, var_ndim: int, dtype: str, optional: bool = False) -> "TypeInfo":
        return cls(Kind.RAGGED, (), int(var_ndim), dtype, bool(optional))

    @property
    def leaf(self) -> str:
        """The leaf type string, e.g. '?float64'."""
        return ("?" if self.optional else "") + self.dtype

    @functools.cached_property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype over one element's bytes (structured for records;
        uint8 for the bytes of variable-length strings)."""
        return _BYTE if self.text else leaf_numpy_dtype(self.dtype)

    @functools.cached_property
    def format(self) -> str:
        """The element's PEP-3118 format (one NumPy reads, 'Zd' for complex)."""
        return "B" if self.text else leaf_format(self.dtype)

    @functools.cached_property
    def boxed(self) -> bool:
        """True when the xnd container cannot share the values' memory:
        strings (xnd holds pointers) and records with optional fields (xnd
        holds a bitmap per field). Their container is made from the Python
        values (a copy), and read back the same way."""
        return self.text or _has_optional_fields(self.dtype)

    @functools.cached_property
    def text(self) -> bool:
        """True for variable-length ``string``/``bytes`` items: rows of bytes
        (utf-8 for strings), distributed like ragged rows."""
        return self.dtype in VARIABLE

    @functools.cached_property
    def numpy_says_it(self) -> bool:
        """Whether the NumPy dtype alone names this element type (False for
        categoricals, tuples and utf8 fixed strings, which need the type
        string carried next to their bytes)."""
        return _numpy_names(self.dtype)

    @functools.cached_property
    def numeric(self) -> bool:
        """True for numeric elements, the ones kernels and reductions take."""
        return is_numeric(self.dtype)

    def require_numeric(self, operation: str, what: str = "the array") -> None:
        """Refuse a non-numeric element for an arithmetic ``operation``
        (TypeError naming the type and what to do instead)."""
        if self.numeric:
            return
        hint = ("select a numeric field first, e.g. a['x']" if self.dtype.startswith(("{", "("))
                else "convert the elements to numbers first")
        raise TypeError(f"{operation}: {what} has element type {self.leaf!r}, not a number; "
                        f"{operation} runs on numeric elements only ({hint})")

    @property
    def ndim(self) -> int:
        return self.var_ndim if self.ragged else len(self.shape)

    def with_shape(self, shape) -> "TypeInfo":
        """The same dtype with other fixed dims (fixed types only)."""
        return TypeInfo.fixed(shape, self.dtype, self.optional)

    def with_leaf(self, leaf: str) -> "TypeInfo":
        """The same dims with another leaf, e.g. ``'?int64'`` -- made once
        per leaf and kept on this info (a loop's results share one)."""
        kept = self.__dict__.setdefault("_with_leaf", {})
        info = kept.get(leaf)
        if info is None:
            info = kept[leaf] = TypeInfo(self.kind, self.shape, self.var_ndim,
                                         leaf.lstrip("?"), leaf.startswith("?"))
        return info

    def with_numpy_leaf(self, dt: np.dtype) -> "TypeInfo":
        """``with_leaf`` of NumPy dtype ``dt``'s element (kept likewise, by
        the dtype: a kernel's or NumPy's result of these dims)."""
        kept = self.__dict__.setdefault("_with_numpy_leaf", {})
        info = kept.get(dt)
        if info is None:
            info = kept[dt] = self.with_leaf(dtype_from_numpy(dt))
        return info

    @property
    def layout(self) -> tuple:
        """What two arrays must share to be combined elementwise: the kind and
        the fixed shape / number of var dims (not the dtype)."""
        return (self.kind, self.shape, self.var_ndim)

    def describe_layout(self) -> str:
        """The layout with a placeholder leaf, e.g. ``'3 * 4 * T'``, ``'var * var * T'``
        (``'var * T'`` for strings: one item a row)."""
        if self.text:
            return "var * T"
        dims = "var * " * self.var_ndim if self.ragged else "".join(f"{s} * " for s in self.shape)
        return dims + "T"

    def type_string(self) -> str:
        """The ndtypes string of a C-contiguous container of this layout."""
        return self.describe_layout()[:-1] + self.leaf

    def global_type(self, global_shape) -> str:
        """The type of the whole array whose local parts have this type:
        ``N * M * T`` for fixed types, the type itself for ragged ones.

        >>> type_info("2 * 3 * int8").global_type((10, 3))
        '10 * 3 * int8'
        """
        return _global_type(self, tuple(global_shape))

    @classmethod
    def of_text(cls, dtype: str, optional: bool = False) -> "TypeInfo":
        """Variable-length ``string`` or ``bytes`` items (see ``text``)."""
        return cls(Kind.RAGGED, (), 2, dtype, bool(optional))


@functools.lru_cache(maxsize=1024)
def _global_type(info: TypeInfo, global_shape: tuple) -> str:
    # memoised: every collective on an array describes it by this string
    # (4.5 us to build, 0.5 to look up)
    if info.text:
        return f"{global_shape[0]} * {info.leaf}"
    return info.type_string() if info.ragged else info.with_shape(global_shape).type_string()


def type_info(t, scalar: bool = False) -> TypeInfo:
    """Classify an ndtypes type (an ``ndt``, a type string or an xnd container).

    Raises TypeError, naming the type, the rule and the nearest spelling that
    works, for types xdap cannot distribute: variable-length strings,
    optional dimensions, abstract types, fixed dims below var dims and --
    unless ``scalar`` (a 0-d array's element, replicated on every rank) --
    a single element.

    >>> type_info("2 * 3 * ?complex128")
    TypeInfo(kind=<Kind.FIXED: 'fixed'>, shape=(2, 3), var_ndim=0, dtype='complex128', optional=True)
    >>> type_info("var * var * 3 * float64")
    Traceback (most recent call last):
    ...
    TypeError: cannot distribute type 'var * var * 3 * float64': ndtypes has no fixed dimension below a var one; put the fixed part in the element, 'var * var * {v: 3 * float64}', or make it var, 'var * var * var * float64'
    """
    if hasattr(t, "type") and not isinstance(t, (str, ndt)):
        t = t.type
    if isinstance(t, ndt):
        text = str(t)
    else:
        text = str(t).strip()
        bad = _misspelled(text)
        if bad:
            raise TypeError(f"cannot distribute type {text!r}: {bad}")
        try:
            text = str(ndt(text))
        except Exception as e:  # ndtypes raises ValueError/TypeError of its own
            raise TypeError(f"not an ndtypes type: {text!r} ({e})") from None
    dims, leaf = split_dims(text)
    optional = leaf.startswith("?")
    dtype = leaf[1:] if optional else leaf
    if dtype in VARIABLE:
        return _text_info(text, dims, dtype, optional)
    if dtype not in DTYPES:
        try:
            leaf_numpy_dtype(dtype)
        except TypeError as e:
            raise TypeError(f"cannot distribute type {text!r}: {e}") from None
    if not dims and scalar:
        return TypeInfo.fixed((), dtype, optional)
    if not dims:
        raise TypeError(f"cannot distribute type {text!r}: a single element has no dimension "
                        f"to distribute; give the array's type, e.g. 'N * {leaf}' or "
                        f"'var * var * {leaf}'")
    if any(d.startswith("?") for d in dims):
        raise TypeError(f"cannot distribute type {text!r}: optional dimensions are not "
                        "supported, only optional values (e.g. 'var * var * ?float64')")
    is_var = [d == "var" or d.startswith("var(") for d in dims]
    if all(is_var):
        if len(dims) < 2:
            raise TypeError(f"cannot distribute type {text!r}: ragged data needs an outer "
                            f"dimension of rows, e.g. 'var * var * {leaf}'")
        return TypeInfo.of_ragged(len(dims), dtype, optional)
    shape = []
    for d in dims:
        m = _FIXED_DIM.match(d)
        if m is None:
            raise TypeError(f"cannot distribute type {text!r}: dimension {d!r} is neither "
                            "fixed nor var (abstract types are not supported)")
        shape.append(int(m.group(1) or m.group(2)))
    return TypeInfo.fixed(shape, dtype, optional)


VARIABLE = ("string", "bytes")
_BYTE = np.dtype(np.uint8)


def _text_info(text, dims, dtype, optional) -> TypeInfo:
    """``N * string`` / ``var * string`` (and bytes): one item per row."""
    if len(dims) != 1 or dims[0].startswith("?"):
        raise TypeError(f"cannot distribute type {text!r}: variable-length {dtype} arrays have "
                        f"one dimension, 'N * {dtype}' (more: a record of fixed_string(n), or "
                        f"ragged rows 'var * var * fixed_string(n)')")
    if optional:
        raise TypeError(f"cannot distribute type {text!r}: optional {dtype} items are not "
                        f"supported; use an empty {dtype} or 'N * ?fixed_string(n)'")
    return TypeInfo.of_text(dtype)


@functools.lru_cache(maxsize=256)
def _has_optional_fields(dtype: str) -> bool:
    return dtype.startswith(("{", "(")) and optional_fields(leaf_numpy_dtype(dtype))


@functools.lru_cache(maxsize=256)
def _numpy_names(dtype: str) -> bool:
    try:
        dt = leaf_numpy_dtype(dtype)
        # NumPy must also read its own struct format back as the same dtype
        # (it does not for nested structs with trailing padding)
        return dtype_from_numpy(dt) == dtype and \
            np.asarray(memoryview(np.empty(0, dt))).dtype == dt
    except TypeError:
        return False


def _misspelled(text: str):
    """Why a spelling ndtypes itself rejects with a parser message is wrong,
    and what to write instead (None if it is not one of those)."""
    dims, leaf = split_dims(text)
    is_var = [d.lstrip("?") == "var" for d in dims]
    if not any(is_var) or all(is_var) or any(d.startswith("?") for d in dims):
        return None
    if not is_var[0]:
        return ("ndtypes has no fixed dimension above a var one (every var dimension "
                f"needs its own offsets); spell it '{'var * ' * len(dims)}{leaf}' "
                "(rows of lists)")
    fixed = " * ".join(d for d, v in zip(dims, is_var) if not v)
    return ("ndtypes has no fixed dimension below a var one; put the fixed part in the "
            f"element, '{'var * ' * sum(is_var)}{{v: {fixed} * {leaf}}}', or make it var, "
            f"'{'var * ' * len(dims)}{leaf}'")


def split_dims(text: str):
    """An ndtypes type string's outer dimensions and its element, split at
    the ``*`` outside brackets (records and tuples hold dims of their own).

    >>> split_dims("2 * var * {pos : 3 * float64}")
    (['2', 'var'], '{pos : 3 * float64}')
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == "*" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts, text[start:].strip()
