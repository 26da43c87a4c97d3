"""This rank's data: an xnd container and its flat parts, in both directions.

A container of any supported type (see ``xdap.types``) is, in memory, three
flat parts -- the layout Arrow uses:

- ``values``: the leaf data (N-d for fixed types, 1-d over all leaves for
  ragged types);
- ``validity``: an LSB-first bitmap, 1 = valid, for ``?T`` leaves, else None;
- ``offsets``: one int32 array per var dimension, outermost first.

``parts`` and ``container`` convert without copying values (offsets are
copied into the ndtypes type when building a ragged container: 4 bytes a
row). Everything else here -- selecting rows, assembling -- works on parts
with vectorised NumPy.

>>> from xnd import xnd
>>> x = xnd([[1.0, None], [3.0]], dtype="?float64")
>>> p = parts(x)
>>> p.values.tolist(), p.valid_mask().tolist(), [o.tolist() for o in p.offsets]
([1.0, 0.0, 3.0], [True, False, True], [[0, 2], [0, 2, 3]])
>>> container(p).value == x.value
True
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xnd import xnd

from . import _xndbuf
from .arguments import _shown
from .bitmaps import all_valid, pack_validity, unpack_validity
from .dtypes import (HIDDEN, fields as record_fields, leaf_numpy_dtype, records_from_python,
                     records_to_python)
from .types import TypeInfo, dtype_from_numpy, split_dims, type_info

__all__ = ["Parts", "parts", "parts_of", "container", "check_representable", "as_container",
           "field_parts", "numpy_parts", "text_parts", "parts_from_lists"]


@dataclass(eq=False, slots=True)
class Parts:
    """The flat parts of one container (see the module docstring).

    ``Parts`` is what the engines move, reduce and export; ``container(p)``
    is the xnd container over the same memory (made once, then kept).
    ``rows`` identifies the row structure of ragged parts: a kernel result
    shares its operand's ``rows`` (equal offsets on every rank by
    construction), so combining the two needs no collective check.
    """
    info: TypeInfo
    values: np.ndarray
    validity: np.ndarray | None = None
    offsets: tuple = ()
    xnd: object = field(default=None, repr=False)
    rows: object = field(default=None, repr=False)

    @classmethod
    def of_array(cls, values: np.ndarray) -> "Parts":
        """The Parts of a plain NumPy array (fixed, no missing values;
        zero-copy): what engines move beside an array's data, e.g. global
        indices.

        >>> Parts.of_array(np.arange(3)).info.type_string()
        '3 * int64'
        """
        values = np.asarray(values)
        return cls(TypeInfo.fixed(values.shape, dtype_from_numpy(values.dtype)), values)

    @property
    def nrows(self) -> int:
        """Items of the outermost dimension."""
        if self.info.ragged:
            return int(self.offsets[0][-1])
        return self.values.shape[0]

    @property
    def shape(self) -> tuple:
        """The local shape along the distributed dims: the values' shape for
        fixed types, ``(nrows,)`` for ragged ones (rows are distributed)."""
        return (self.nrows,) if self.info.ragged else tuple(self.values.shape)

    def rows_token(self):
        """The ``rows`` identity (made on first use; see the class docstring)."""
        if self.rows is None:
            self.rows = object()
        return self.rows

    def valid_mask(self) -> np.ndarray | None:
        """Validity as a bool array shaped like ``values`` (None if not optional)."""
        if self.validity is None:
            return None
        return unpack_validity(self.validity, self.values.size).reshape(self.values.shape)



def parts(x) -> Parts:
    """Zero-copy flat parts of a whole xnd container.

    Views keep ``x`` alive. A view into a container (an xnd slice) that is
    not whole cannot be exposed without copying; it is copied (via its
    Python value) -- say ``parts(xnd(x.value, type=...))`` to make that
    explicit.
    """
    return parts_of(x, type_info(x, scalar=True))


def parts_of(x, info: TypeInfo) -> Parts:
    """``parts(x)`` when ``x``'s type is already classified as ``info``."""
    if info.boxed:
        p = text_parts(x.value, info) if info.text else python_parts(x.value, info)
        p.xnd = x
        return p
    try:
        values, validity, offsets = _xndbuf.layout(x, info.numpy_dtype)
    except ValueError:
        x = xnd(x.value, type=str(x.type) if info.ragged else info.type_string())
        values, validity, offsets = _xndbuf.layout(x, info.numpy_dtype)
    return Parts(info, values, validity, offsets, xnd=x)


def text_parts(items, info: TypeInfo) -> Parts:
    """Parts of variable-length strings (utf-8) or bytes: one row of bytes
    an item, Arrow's layout (a copy: xnd holds a pointer per item).

    >>> from xdap.types import type_info
    >>> p = text_parts(["ab", "", "é"], type_info("3 * string"))
    >>> p.values.tobytes(), p.offsets[1].tolist()
    (b'ab\\xc3\\xa9', [0, 2, 2, 4])
    """
    if info.dtype == "string":
        try:
            items = [s.encode("utf-8") for s in items]
        except AttributeError:
            raise TypeError(f"a {info.global_type((len(items),))} array holds str items, got "
                            f"{next(type(s).__name__ for s in items if not isinstance(s, str))}") \
                from None
    elif not all(isinstance(b, (bytes, bytearray)) for b in items):
        raise TypeError(f"a {info.global_type((len(items),))} array holds bytes items")
    lengths = np.fromiter(map(len, items), np.int64, len(items))
    ends = np.cumsum(lengths)
    if len(ends) and ends[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"{int(ends[-1])} bytes of {info.dtype} items on this rank: more than "
                         "int32 offsets address")
    offsets = (np.array([0, len(items)], np.int32),
               np.concatenate([[0], ends]).astype(np.int32))
    values = np.frombuffer(b"".join(items), np.uint8).copy()
    return Parts(info, values, None, offsets)


def python_parts(value, info: TypeInfo) -> Parts:
    """Parts of records with optional fields from xnd's Python value (a
    copy; see ``TypeInfo.boxed``)."""
    if info.ragged:
        return parts_from_lists(value, info)
    leaves = value
    for _ in range(len(info.shape) - 1):
        leaves = [v for row in leaves for v in row]
    if not info.shape:
        leaves = [value]
    mask = np.array([v is not None for v in leaves], bool)
    dt = info.numpy_dtype
    values = records_from_python([v if v is not None else _zero_record(dt) for v in leaves], dt)
    return Parts(info, values.reshape(info.shape), pack_validity(mask) if info.optional else None)


def _zero_record(dt):
    return np.zeros((), dt).tolist()


def _python_container(p: Parts):
    """The xnd container of records with optional fields (a copy)."""
    items = records_to_python(p.values.reshape(-1), p.info.dtype)
    mask = p.valid_mask()
    if mask is not None:
        items = [v if ok else None for v, ok in zip(items, mask.reshape(-1).tolist())]
    if p.info.ragged:
        for off in reversed(p.offsets[1:]):
            o = off.tolist()
            items = [items[a:b] for a, b in zip(o[:-1], o[1:])]
        # the concrete type, offsets spelled out: xnd's inference would make
        # no rows, or rows without items, a fixed dimension
        dims = " * ".join("var(offsets=[" + ",".join(str(int(v)) for v in off) + "])"
                          for off in p.offsets)
        return xnd(items, type=f"{dims} * {p.info.leaf}")
    shape = p.values.shape
    for n in reversed(shape[1:]):
        items = [items[i:i + n] for i in range(0, len(items), n)]
    if not shape:
        items = items[0]
    return xnd(items, type=p.info.with_shape(shape).type_string())


def _text_container(p: Parts):
    """The xnd ``n * string`` (or bytes) container of text parts (a copy)."""
    data = p.values.tobytes()
    off = p.offsets[1].tolist()
    items = [data[a:b] for a, b in zip(off[:-1], off[1:])]
    if p.info.dtype == "string":
        items = [b.decode("utf-8") for b in items]
    return xnd(items, type=f"{len(items)} * {p.info.dtype}")


def container(p: Parts):
    """The xnd container over the given parts, without copying the values
    (made on the first call, then kept on ``p``).

    Values that are a strided view (a transpose, a slice with steps) of
    data without missing values give a strided container over the same
    memory; other non-contiguous values (optional data: the bitmap has no
    steps) are copied first.
    """
    if p.xnd is None:
        p.xnd = (_text_container(p) if p.info.text else _python_container(p)
                 if p.info.boxed else _make_container(p))
    return p.xnd


def _make_container(p: Parts):
    values = np.asarray(p.values, dtype=p.info.numpy_dtype)
    if not values.flags.c_contiguous and values.ndim and not (p.info.optional or p.info.ragged):
        try:                # a view (a transpose, a strided slice): xnd takes its steps
            return _xndbuf.from_strided(p.info.leaf, values)
        except ValueError:
            pass
    if not values.flags.c_contiguous:     # (ascontiguousarray would make a 0-d array 1-d)
        values = values.copy(order="C")
    validity = None
    if p.info.optional:
        validity = np.ascontiguousarray(p.validity if p.validity is not None
                                        else all_valid(values.size), dtype=np.uint8)
    if not p.info.ragged:
        info = p.info.with_shape(values.shape)
        return _xndbuf.from_buffers(info.type_string(), None, values, validity)
    check_ragged_rows(p.info, p.nrows)
    offsets = tuple(np.ascontiguousarray(o, dtype=np.int32) for o in p.offsets)
    return _xndbuf.from_buffers(p.info.leaf, offsets, values, validity)


def check_representable(p: Parts) -> None:
    """Refuse ragged parts that an unpatched ndtypes 0.2.0.dev3 cannot hold
    (``EMPTY_VAR_DIMS`` False): every var dimension needs at least two
    offsets there, so every level above the leaves needs at least one item
    -- a partition without rows, or whose rows hold no lists at all (``[[],
    []]`` as ``var * var * var * T``), does not exist in xnd ("var_dim:
    noffsets < 2"). The build patches ndtypes (tools/patch_stack.py), and
    then every ragged part is representable. The DistArray constructor
    checks this in its agreement, so all ranks raise together.

    >>> from xdap.types import type_info
    >>> check_representable(parts_from_lists([[], []], type_info("var * var * var * int8")))
    """
    if not p.info.ragged or EMPTY_VAR_DIMS:
        return
    check_ragged_rows(p.info, p.nrows)
    for level, off in enumerate(p.offsets[1:-1], start=1):
        if int(off[-1]) == 0:
            raise ValueError(
                f"ragged data {p.info.type_string()}: this rank's {p.nrows} rows hold no lists "
                f"at level {level}, which ndtypes 0.2.0.dev3 cannot represent (every var "
                "dimension needs at least one list); give the rows at least one (possibly "
                "empty) list each, or use fewer ranks")


def _empty_var_dims() -> bool:
    """Whether this ndtypes takes a var dimension with one offset -- an empty
    one: the build patches ndtypes 0.2.0.dev3 for it (tools/patch_stack.py),
    whose own release needs two (a ragged container without rows, or whose
    rows hold no lists, does not exist there)."""
    from ndtypes import ndt
    try:
        ndt("var(offsets=[0,0]) * var(offsets=[0]) * int8")
    except (ValueError, TypeError):
        return False
    return True


EMPTY_VAR_DIMS = _empty_var_dims()


def check_ragged_rows(info: TypeInfo, nrows: int, rank=None) -> None:
    """Refuse a ragged partition without rows where ndtypes cannot represent
    it (an unpatched ndtypes 0.2.0.dev3: ``EMPTY_VAR_DIMS`` False; the build
    patches it, and then every ragged partition may be empty).  Callers that
    distribute rows check this for every rank up front, so all ranks raise
    together.
    """
    if EMPTY_VAR_DIMS:
        return
    if info.ragged and nrows == 0 and not info.text:
        where = "" if rank is None else f" (rank {rank})"
        raise ValueError(
            f"every rank needs at least one row of ragged data {info.type_string()}: a "
            f"partition would be empty{where}, and ndtypes 0.2.0.dev3 cannot represent an "
            "empty nested var dimension; use fewer ranks or give every rank a row")


def as_container(data, type=None, dtype=None):
    """Turn user data into an xnd container.

    Accepts an xnd container (returned as is), a NumPy array (zero-copy when
    C-contiguous; a masked array becomes ``?T``), or nested Python lists
    (``None`` marks a missing value), with an optional explicit ``type`` or
    leaf ``dtype`` string. Lists are typed by xnd's inference, except that
    lists of bools are bool data, as in NumPy (xnd would infer int64).

    >>> as_container([[1, 2], [3]], dtype="int32").type
    ndt("var * var * int32")
    >>> as_container([True, False]).type, as_container([[True, None], [False]]).type
    (ndt("2 * bool"), ndt("var * var * ?bool"))
    >>> as_container([3, 4], type="int8").type          # the element named alone
    ndt("2 * int8")
    """
    if isinstance(data, xnd):
        return data
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        data = np.asarray(data)         # a NumPy scalar: a 0-d array of its dtype
    if type is not None and str(type).strip() in ("string", "bytes"):
        type = f"{len(data)} * {str(type).strip()}"      # the element named alone
    if isinstance(data, np.ndarray):
        wanted = type_info(type, scalar=True) if type is not None else None
        if wanted is not None and (wanted.ragged or wanted.text):
            data = data.tolist()        # masked entries become None, i.e. missing
        else:
            return container(numpy_parts(data, type, dtype))
    try:
        return _from_python(data, type, dtype)
    except OverflowError:
        # xnd's words ("int too big to convert") name neither the value nor the type
        raise ValueError(f"a value of {_shown(data)} does not fit "
                         f"{type or dtype or 'int64, the type of Python ints'}") from None


def _from_python(data, type, dtype):
    """``as_container`` of Python values (lists, scalars)."""
    if type is not None and isinstance(data, list) and " * " not in str(type) and \
            dtype is None and str(type).strip() not in ("string", "bytes"):
        type, dtype = None, str(type)       # a list with its element named alone: NumPy's dtype=
    if type is not None:
        info = type_info(type, scalar=True)
        if info.text:
            return container(text_parts(data, info))
        if info.ragged:
            return container(parts_from_lists(data, info))
        return xnd(data, type=info.type_string())
    if dtype is None and isinstance(data, list):
        dtype = _bool_leaf_dtype(data)
    if dtype is not None:
        if not isinstance(data, (list, tuple)):
            return xnd(data, type=str(dtype))       # a scalar: a 0-d container
        return xnd(data, dtype=str(dtype))
    return xnd(data)


def numpy_parts(data: np.ndarray, type=None, dtype=None) -> Parts:
    """Parts of a NumPy array (a masked array: ``?T``), typed as ``type``
    (its dimensions must be the array's; a bare leaf such as ``"?float64"``
    names the element alone) or as the leaf ``dtype``.

    Zero-copy for a C-contiguous array already of the requested leaf. A
    safe widening (``int32`` -> ``float64``) copies; a narrowing cast is
    refused, as it could lose data. Asking for ``?T`` marks every value
    valid; a non-optional type for a masked array with masked values is
    refused.

    >>> p = numpy_parts(np.arange(4, dtype=np.int32).reshape(2, 2), type="2 * 2 * ?float64")
    >>> p.info.type_string(), p.values.dtype.name, p.valid_mask().all()
    ('2 * 2 * ?float64', 'float64', np.True_)
    """
    masked = isinstance(data, np.ma.MaskedArray)
    mask = np.ma.getmaskarray(data) if masked else None
    values = data.filled(np.zeros((), data.dtype)) if masked else data
    if type is None and dtype is None:
        leaf = ("?" if masked else "") + dtype_from_numpy(values.dtype)
    else:
        wanted = type_info(type if type is not None else dtype, scalar=True)
        if type is not None and wanted.shape not in ((), tuple(values.shape)):
            raise ValueError(f"type {type!r} has the dimensions {wanted.shape} but the "
                             f"NumPy array has the shape {tuple(values.shape)}")
        target = np.dtype(wanted.numpy_dtype)
        if values.dtype != target:
            if not np.can_cast(values.dtype, target, "safe"):
                raise TypeError(f"type {wanted.leaf!r} for a NumPy array of {values.dtype}: "
                                f"only safe casts are made (this one could lose data); "
                                f"cast it first with .astype({str(target)!r})")
            values = values.astype(target)
        if masked and not wanted.optional and mask.any():
            raise ValueError(f"a masked array with {int(mask.sum())} masked values needs an "
                             f"optional type ('?{wanted.dtype}'), got {wanted.leaf!r}")
        leaf = wanted.leaf
    info = type_info(" * ".join([str(s) for s in values.shape] + [leaf]), scalar=True)
    # (np.ascontiguousarray would make a 0-d array 1-d)
    values = np.require(values, requirements="C") if masked else values
    if not info.optional:
        return Parts(info, values)
    return Parts(info, values, all_valid(values.size) if mask is None else pack_validity(~mask))


def _bool_leaf_dtype(data: list):
    """'bool' or '?bool' when every leaf of the nested list ``data`` is a
    bool (None: missing), else None (xnd's inference applies)."""
    stack, seen, missing = [data], False, False
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif v is None:
            missing = True
        elif isinstance(v, (bool, np.bool_)):
            seen = True
        else:
            return None
    if not seen:
        return None
    return "?bool" if missing else "bool"


def parts_from_lists(data, info: TypeInfo) -> Parts:
    """Parts of a ragged container from nested Python lists (None = missing).

    Unlike xnd's type inference this accepts empty rows.

    >>> from xdap.types import type_info
    >>> p = parts_from_lists([[1, None], []], type_info("var * var * ?int64"))
    >>> container(p).value
    [[1, None], []]
    """
    level = [data]
    offsets = []
    for depth in range(info.var_ndim):
        lengths = []
        nxt = []
        for item in level:
            if not isinstance(item, (list, tuple)):
                raise TypeError(f"expected a list at depth {depth} for type "
                                f"{info.type_string()!r}, got {item!r}")
            lengths.append(len(item))
            nxt.extend(item)
        offsets.append(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int32))
        level = nxt
    mask = np.array([v is not None for v in level], dtype=bool)
    if not info.optional and not mask.all():
        raise ValueError(f"missing value (None) in data of non-optional type {info.type_string()!r}")
    if info.numeric:
        values = np.array([0 if v is None else v for v in level], dtype=info.numpy_dtype)
    else:  # records, strings, categories: xnd reads the Python values
        values = _leaf_values(level, info)
    return Parts(info, values, pack_validity(mask) if info.optional else None, tuple(offsets))


def _leaf_values(level: list, info: TypeInfo) -> np.ndarray:
    """The leaves of a non-numeric type as a NumPy array, read by xnd (which
    knows how records, strings and categories are spelled in Python)."""
    if info.boxed:
        dt = info.numpy_dtype
        return records_from_python([v if v is not None else _zero_record(dt) for v in level], dt)
    x = xnd(level, type=f"{len(level)} * {info.leaf}")
    values, _, _ = _xndbuf.layout(x, info.numpy_dtype)
    return np.array(values)


def field_parts(p: Parts, name: str) -> Parts:
    """The parts of one field of a record (or tuple) element: the field's
    type, with its own fixed dims (``pos: 3 * float64``) appended to the
    element's dims.

    Zero-copy for fixed, non-optional parts whose record size is a multiple
    of the field's item size (the container is a strided view: writing it,
    with a kernel's ``out=`` too, writes the records). Otherwise -- ragged or
    optional parts, or strides ndtypes cannot express -- the field is copied
    into a read-only array, so that writing it fails loudly instead of
    writing a copy.

    >>> import numpy as np
    >>> r = np.zeros(3, np.dtype([("x", "f8"), ("n", "i8")]))
    >>> f = field_parts(parts(as_container(r)), "n")
    >>> str(container(f).type), np.shares_memory(f.values, r)
    ('3 * int64', True)
    """
    fields = record_fields(p.info.dtype)
    if name not in fields:
        raise KeyError(f"element type {p.info.dtype!r} has no field {name!r}; its fields: "
                       f"{', '.join(fields)}")
    dims, spelled = split_dims(fields[name])
    sub = tuple(int(d) for d in dims)
    leaf = spelled.lstrip("?")
    values = p.values[name]
    item = leaf_numpy_dtype(leaf).itemsize
    steps = [s // item for s in values.strides]
    field_mask = None
    if spelled.startswith("?"):         # an optional field: its hidden validity byte
        field_mask = p.values[HIDDEN + name].astype(bool)
    viewable = (not p.info.ragged and not p.info.optional and field_mask is None
                and not TypeInfo.fixed((), leaf).boxed and values.size > 0
                and all(s % item == 0 and s >= 0 for s in values.strides))
    if viewable:
        shape = values.shape
        text = " * ".join([f"fixed(shape={n}, step={k})" for n, k in zip(shape, steps)] + [leaf])
        raw = p.values.reshape(-1).view(np.uint8) if p.values.flags.c_contiguous else None
        if raw is not None:
            start = p.values.dtype.fields[name][1]
            return parts_of(_xndbuf.from_buffers(text, None, raw[start:], None),
                            TypeInfo.fixed(shape, leaf))
    values = np.ascontiguousarray(values)
    values.flags.writeable = False
    optional = p.info.optional or field_mask is not None
    validity = p.validity
    if field_mask is not None:
        mask = field_mask & p.valid_mask() if p.info.optional else field_mask
        validity = pack_validity(mask)
    if p.info.ragged:
        if sub:
            raise TypeError(f"field {name!r} of ragged elements is '{fields[name]}': a ragged "
                            "array's elements cannot have dimensions of their own; select it "
                            "from a fixed array, or make it a record")
        info = TypeInfo.of_ragged(p.info.var_ndim, leaf, optional)
        return Parts(info, values, validity, p.offsets)
    if p.info.optional and sub:  # one bit per element becomes one per field item
        mask = np.repeat(p.valid_mask().reshape(-1), int(np.prod(sub)))
        validity = pack_validity(mask)
    return Parts(TypeInfo.fixed(values.shape, leaf, optional), values, validity)


