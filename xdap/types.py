"""What a local partition is: classify ndtypes types and map dtypes between
ndtypes, NumPy, PEP-3118 buffer formats and Arrow.

xdap distributes two families of xnd types (the only ones ndtypes 0.2.0.dev3
can describe without pointers):

- **fixed**: ``d0 * d1 * ... * T`` -- an N-d array, distributable along every
  dimension;
- **ragged**: ``var * var [* var ...] * T`` -- lists of lists in Arrow layout
  (one int32 offsets array per var dimension); the outermost dimension's
  items ("rows") are what is distributed.

``T`` is a numeric scalar (bool, int8..int64, uint8..uint64, float16..64,
complex64/128), optionally ``?T`` (missing values, an LSB-first validity
bitmap, 1 = valid, as in Arrow).

>>> info = type_info("var * var * ?float64")
>>> info.kind, info.ragged, info.var_ndim, info.dtype, info.optional
(<Kind.RAGGED: 'ragged'>, True, 2, 'float64', True)
>>> type_info("3 * 4 * int32").shape, buffer_format("int32")
((3, 4), 'i')
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

import numpy as np
from ndtypes import ndt

__all__ = ["Kind", "TypeInfo", "type_info", "numpy_dtype", "buffer_format",
           "dtype_from_format", "dtype_from_numpy", "DTYPES"]

# ndtypes name -> (numpy dtype, native PEP-3118 format that memoryview and
# numpy both accept). xnd itself exports '=d'-style formats, which
# memoryview.tolist() rejects; we export these instead.
DTYPES = {
    "bool": (np.dtype(np.bool_), "?"),
    "int8": (np.dtype(np.int8), "b"),
    "int16": (np.dtype(np.int16), "h"),
    "int32": (np.dtype(np.int32), "i"),
    "int64": (np.dtype(np.int64), "q"),
    "uint8": (np.dtype(np.uint8), "B"),
    "uint16": (np.dtype(np.uint16), "H"),
    "uint32": (np.dtype(np.uint32), "I"),
    "uint64": (np.dtype(np.uint64), "Q"),
    "float16": (np.dtype(np.float16), "e"),
    "float32": (np.dtype(np.float32), "f"),
    "float64": (np.dtype(np.float64), "d"),
    "complex64": (np.dtype(np.complex64), "Zf"),
    "complex128": (np.dtype(np.complex128), "Zd"),
}
_BY_NUMPY = {dt: name for name, (dt, _) in DTYPES.items()}

_FIXED_DIM = re.compile(r"^(\d+)$|^fixed\(shape=(\d+), step=(-?\d+)\)$")


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
    dtype     scalar name without '?', e.g. 'float64'
    optional  True for ?T leaves

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

    @classmethod
    def fixed(cls, shape, dtype: str, optional: bool = False) -> "TypeInfo":
        return cls(Kind.FIXED, tuple(int(s) for s in shape), 0, dtype, bool(optional))

    @classmethod
    def of_ragged(cls, var_ndim: int, dtype: str, optional: bool = False) -> "TypeInfo":
        return cls(Kind.RAGGED, (), int(var_ndim), dtype, bool(optional))

    @property
    def ragged(self) -> bool:
        """True for ``var * var * T`` (rows of lists), False for fixed dims."""
        return self.kind is Kind.RAGGED

    @property
    def leaf(self) -> str:
        """The leaf type string, e.g. '?float64'."""
        return ("?" if self.optional else "") + self.dtype

    @property
    def numpy_dtype(self) -> np.dtype:
        return DTYPES[self.dtype][0]

    @property
    def format(self) -> str:
        return DTYPES[self.dtype][1]

    @property
    def ndim(self) -> int:
        return self.var_ndim if self.ragged else len(self.shape)

    def with_shape(self, shape) -> "TypeInfo":
        """The same dtype with other fixed dims (fixed types only)."""
        return TypeInfo.fixed(shape, self.dtype, self.optional)

    def with_leaf(self, leaf: str) -> "TypeInfo":
        """The same dims with another leaf, e.g. ``'?int64'``."""
        return TypeInfo(self.kind, self.shape, self.var_ndim, leaf.lstrip("?"),
                        leaf.startswith("?"))

    @property
    def layout(self) -> tuple:
        """What two arrays must share to be combined elementwise: the kind and
        the fixed shape / number of var dims (not the dtype)."""
        return (self.kind, self.shape, self.var_ndim)

    def describe_layout(self) -> str:
        """The layout with a placeholder leaf, e.g. ``'3 * 4 * T'``, ``'var * var * T'``."""
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
        return self.type_string() if self.ragged else self.with_shape(global_shape).type_string()


def type_info(t) -> TypeInfo:
    """Classify an ndtypes type (an ``ndt``, a type string or an xnd container).

    Raises TypeError, naming the type and the rule, for types xdap cannot
    distribute: records, tuples, strings, optional dimensions, abstract
    types, mixed fixed/var dims and zero-dimensional scalars.

    >>> type_info("2 * 3 * ?complex128")
    TypeInfo(kind=<Kind.FIXED: 'fixed'>, shape=(2, 3), var_ndim=0, dtype='complex128', optional=True)
    >>> type_info("{a: int64}")
    Traceback (most recent call last):
    ...
    TypeError: cannot distribute type '{a: int64}': records, tuples and other non-numeric leaves are not supported (leaf must be one of bool, int8..int64, uint8..uint64, float16..float64, complex64, complex128, optionally with '?')
    """
    if hasattr(t, "type") and not isinstance(t, (str, ndt)):
        t = t.type
    text = str(t) if isinstance(t, ndt) else str(t).strip()
    if not isinstance(t, ndt):
        try:
            ndt(text)
        except Exception as e:  # ndtypes raises ValueError/TypeError of its own
            raise TypeError(f"not an ndtypes type: {text!r} ({e})") from None
    parts = [p.strip() for p in text.split(" * ")]
    leaf, dims = parts[-1], parts[:-1]
    optional = leaf.startswith("?")
    dtype = leaf[1:] if optional else leaf
    if dtype not in DTYPES:
        raise TypeError(
            f"cannot distribute type {text!r}: records, tuples and other non-numeric "
            "leaves are not supported (leaf must be one of bool, int8..int64, "
            "uint8..uint64, float16..float64, complex64, complex128, optionally "
            "with '?')")
    if not dims:
        raise TypeError(f"cannot distribute type {text!r}: a scalar has no dimension to distribute")
    if any(d.startswith("?") for d in dims):
        raise TypeError(f"cannot distribute type {text!r}: optional dimensions are not "
                        "supported, only optional values (e.g. 'var * var * ?float64')")
    if all(d == "var" or d.startswith("var(") for d in dims):
        if len(dims) < 2:
            raise TypeError(f"cannot distribute type {text!r}: ragged data needs an outer "
                            "dimension of rows, e.g. 'var * var * float64'")
        return TypeInfo.of_ragged(len(dims), dtype, optional)
    shape = []
    for d in dims:
        m = _FIXED_DIM.match(d)
        if m is None:
            raise TypeError(f"cannot distribute type {text!r}: dimension {d!r} is neither "
                            "fixed nor var (abstract or mixed fixed/var types are not supported)")
        shape.append(int(m.group(1) or m.group(2)))
    return TypeInfo.fixed(shape, dtype, optional)


def numpy_dtype(dtype: str) -> np.dtype:
    """NumPy dtype of an ndtypes scalar name ('?' ignored).

    >>> numpy_dtype("?int16")
    dtype('int16')
    """
    try:
        return DTYPES[dtype.lstrip("?")][0]
    except KeyError:
        raise TypeError(f"unsupported dtype {dtype!r}; supported: {', '.join(DTYPES)}") from None


def buffer_format(dtype: str) -> str:
    """Native PEP-3118 format of an ndtypes scalar name.

    >>> buffer_format("complex128")
    'Zd'
    """
    try:
        return DTYPES[dtype.lstrip("?")][1]
    except KeyError:
        raise TypeError(f"unsupported dtype {dtype!r}; supported: {', '.join(DTYPES)}") from None


def dtype_from_numpy(dt) -> str:
    """ndtypes name of a NumPy dtype (native byte order only).

    >>> dtype_from_numpy(np.float32)
    'float32'
    """
    dt = np.dtype(dt)
    if dt.byteorder not in "=|" and dt.byteorder != np.dtype(dt.type).byteorder:
        raise TypeError(f"non-native byte order in dtype {dt!r}: convert with .astype(dt.newbyteorder('='))")
    name = _BY_NUMPY.get(np.dtype(dt.type))
    if name is None:
        raise TypeError(f"unsupported NumPy dtype {dt!r}; supported: {', '.join(DTYPES)}")
    return name


def dtype_from_format(fmt: str, itemsize: int | None = None) -> str:
    """ndtypes name of a PEP-3118 format string ('=d', '<i', 'Zd', 'l', ...).

    >>> dtype_from_format("=d"), dtype_from_format("l", 8)
    ('float64', 'int64')
    """
    order, code = (fmt[0], fmt[1:]) if fmt[:1] in "@=<>!" else ("@", fmt)
    if order in "<>!" and (order == "<") != (np.little_endian):
        raise TypeError(f"buffer format {fmt!r} is not in native byte order")
    table = _NATIVE if order == "@" else _STANDARD
    if code not in table:
        raise TypeError(f"unsupported buffer format {fmt!r}; supported: "
                        + ", ".join(sorted(_NATIVE)))
    name = table[code]
    if itemsize is not None and DTYPES[name][0].itemsize != itemsize:
        raise TypeError(f"buffer format {fmt!r} means {name}, but the buffer's itemsize is {itemsize}")
    return name


# struct's native ('@') and standard ('=<>!') sizes differ for 'l'/'L'.
_STANDARD = {"?": "bool", "b": "int8", "h": "int16", "i": "int32", "l": "int32",
             "q": "int64", "B": "uint8", "H": "uint16", "I": "uint32", "L": "uint32",
             "Q": "uint64", "e": "float16", "f": "float32", "d": "float64",
             "Zf": "complex64", "Zd": "complex128"}
_NATIVE = dict(_STANDARD, l=dtype_from_numpy(np.dtype("l")), L=dtype_from_numpy(np.dtype("L")),
               n=dtype_from_numpy(np.intp), N=dtype_from_numpy(np.uintp))
