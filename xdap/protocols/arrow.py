"""Apache Arrow interop: local xnd containers <-> ``pyarrow`` arrays, zero-copy.

xnd's layouts were designed to match Arrow's, so most conversions only wrap
buffers:

=========================  ==================================================
xdap type                  Arrow array
=========================  ==================================================
``N * T``                  primitive array of ``T`` (length N)
``N * M * K * T``          ``FixedSizeList<FixedSizeList<T, K>, M>`` (length N)
``var * var * T``          ``List<T>`` (length = rows), int32 offsets
``var * var * var * T``    ``List<List<T>>``
``?T`` leaves              the leaf array's validity bitmap (LSB-first, 1 = valid)
``complex64/128``          extension type ``xdap.complex64/128`` over
                           ``FixedSizeList<float32/64, 2>`` (Arrow has no complex)
``fixed_bytes(size=n)``    ``FixedSizeBinary(n)``
``categorical(...)``       ``Dictionary<int64, ...>``: the int64 codes are the
                           indices, the items the dictionary (NA a null item)
``{x: T, n: 3 * U}``       ``Struct<x: T, n: FixedSizeList<U, 3>>`` -- copies:
                           xnd interleaves the fields, Arrow stores each apart
``(T, U)``                 ``Struct<0: T, 1: U>`` (Awkward's names for a tuple)
``fixed_string(n)``        extension type ``xdap.fixed_string`` over ``String``
                           (copies: Arrow strings are variable length); it
                           carries the ndtypes type, so it comes back as it was
=========================  ==================================================

Zero-copy in both directions for values, offsets and validity, with these
exceptions (each copies only the named part): ``bool`` values (Arrow packs
them into bits, xnd stores a byte each); Arrow offsets that do not start at
0 (a sliced array: O(rows) int32 subtraction); ``LargeList`` int64 offsets
(narrowed to int32); a validity bitmap starting at a bit offset that is not a
multiple of 8; a ``ChunkedArray`` of several chunks (concatenated).

>>> import numpy as np
>>> from xdap.parts import as_container, parts
>>> x = as_container([[1.0, None], [], [2.0]], type="var * var * ?float64")
>>> arr = to_arrow(x)
>>> arr.type, arr.to_pylist()
(ListType(list<item: double>), [[1.0, None], [], [2.0]])
>>> y = from_arrow(arr)
>>> y.value == x.value, np.shares_memory(parts(y).values, parts(x).values)
(True, True)
"""
from __future__ import annotations

import numpy as np

from .. import comm as _comm
from ..arraylike import is_distributed, unwrap
from ..distribution import Distribution
from ..maps import BlockMap
from ..parts import Parts, check_ragged_rows, container, parts
from ..rows import take_block
from ..bitmaps import all_valid, pack_validity, unpack_validity
from ..dtypes import HIDDEN, LEAVES_HELP, categories, fields as record_fields, is_categorical
from ..types import DTYPES, TypeInfo, leaf_numpy_dtype, split_dims, type_info
from ..agreement import agreement
from ..optional import need

pa = need("pyarrow")

__all__ = ["to_arrow", "owned_arrow", "from_arrow", "parts_from_arrow", "stack_arrow",
           "stack_rows", "ComplexType", "FixedStringType", "parts_to_arrow", "leaf_to_arrow", "apply_type"]

_TO_ARROW = {
    "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(),
    "uint64": pa.uint64(), "float16": pa.float16(), "float32": pa.float32(),
    "float64": pa.float64(),
}
_FROM_ARROW = {t: name for name, t in _TO_ARROW.items()}


class ComplexType(pa.ExtensionType):
    """Arrow has no complex numbers: ``xdap.complex64`` / ``xdap.complex128``
    store each value as a ``FixedSizeList<float32/float64, 2>`` (real, imag),
    the memory layout of NumPy's complex dtypes, so the view is zero-copy."""

    def __init__(self, dtype: str):
        if dtype not in ("complex64", "complex128"):
            raise TypeError(f"ComplexType needs complex64 or complex128, got {dtype!r}")
        self.dtype = dtype
        part = pa.float32() if dtype == "complex64" else pa.float64()
        super().__init__(pa.list_(part, 2), f"xdap.{dtype}")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls("complex64" if storage_type.value_type == pa.float32() else "complex128")

    def __reduce__(self):
        return ComplexType, (self.dtype,)

    def __arrow_ext_scalar_class__(self):
        return ComplexScalar


class FixedStringType(pa.ExtensionType):
    """``xdap.fixed_string``: a ``fixed_string(n[, encoding])`` exported as
    Arrow strings (Arrow's are variable length) that remembers its ndtypes
    type, so that ``from_arrow`` restores it -- no ``type=`` needed, nothing
    narrowed to ``string``. Other readers see the storage: strings."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        super().__init__(pa.string(), "xdap.fixed_string")

    def __arrow_ext_serialize__(self) -> bytes:
        return self.dtype.encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        dtype = serialized.decode()
        if not dtype.lstrip("?").startswith("fixed_string("):
            raise TypeError(f"xdap.fixed_string: {dtype!r} is not a fixed_string type")
        return cls(dtype)

    def __reduce__(self):
        return FixedStringType, (self.dtype,)

    def __hash__(self):
        return hash((self.extension_name, self.dtype))


class ComplexScalar(pa.ExtensionScalar):
    """``as_py`` gives a Python complex (or None), so ``to_pylist`` reads naturally."""

    def as_py(self, **kwargs):
        pair = self.value.as_py() if self.value is not None else None
        return None if pair is None else complex(pair[0], pair[1])


for _type in (ComplexType("complex64"), ComplexType("complex128"),
              FixedStringType("fixed_string(1)")):
    try:   # registered so that Arrow IPC files and pickles keep the type
        pa.register_extension_type(_type)
    except pa.ArrowKeyError:          # already registered (module reloaded)
        pass


# -- xdap -> Arrow --------------------------------------------------------------

def to_arrow(x) -> pa.Array:
    """A pyarrow array over a local container, without copying (see the module
    docstring for the layout and the few cases that copy).

    ``x`` is an xnd container, ``Parts`` or a DistArray; for a DistArray the
    rows this rank OWNS are exported (communication padding is left out: a
    zero-copy slice along dim 0; padding along an inner fixed dim copies).

    >>> from xnd import xnd
    >>> to_arrow(xnd([[1, 2], [3, 4]], dtype="int32")).to_pylist()
    [[1, 2], [3, 4]]
    """
    if is_distributed(x):
        return owned_arrow(*unwrap(x))
    p = x if isinstance(x, Parts) else parts(x)
    return parts_to_arrow(p)


def owned_arrow(d, p: Parts) -> pa.Array:
    """The rows of ``(d, p)`` this rank OWNS as a pyarrow array (zero-copy
    but for inner padding; see ``to_arrow``)."""
    d.require_dims("to_arrow")
    own = [d.maps[k].owned_local_slice(d.coords[k]) for k in range(d.ndim)]
    if not p.info.ragged and any(s != slice(0, n) for s, n in zip(own[1:], p.values.shape[1:])):
        # inner padding: the owned block is strided
        return parts_to_arrow(take_block(p, tuple(own)))
    arr = parts_to_arrow(p)
    return arr.slice(own[0].start, own[0].stop - own[0].start)


def parts_to_arrow(p: Parts) -> pa.Array:
    """The Arrow array over ``p``'s buffers (zero-copy; strings keep Arrow's
    own layout; ragged dims become list arrays over the int32 offsets)."""
    if p.info.text:           # Arrow's own layout: int32 offsets + bytes, shared
        t = pa.string() if p.info.dtype == "string" else pa.binary()
        off = np.ascontiguousarray(p.offsets[1], dtype=np.int32)
        return pa.Array.from_buffers(t, len(off) - 1, [None, pa.py_buffer(off),
                                                       pa.py_buffer(np.ascontiguousarray(p.values))])
    flat = p.values.reshape(-1)
    arr = leaf_to_arrow(flat, p.validity, p.info.dtype, p.info.optional)
    if not p.info.ragged:
        for size in reversed(p.values.shape[1:]):
            arr = pa.FixedSizeListArray.from_arrays(arr, int(size))
        return arr
    for off in reversed(p.offsets[1:]):
        off = np.ascontiguousarray(off, dtype=np.int32)
        arr = pa.Array.from_buffers(pa.list_(arr.type), len(off) - 1,
                                    [None, pa.py_buffer(off)], children=[arr])
    return arr


def leaf_to_arrow(values: np.ndarray, validity, dtype: str, optional=None) -> pa.Array:
    """Flat leaves of the ndtypes element ``dtype`` (and their validity
    bitmap, or None) as an Arrow array over the same buffers. ``optional``:
    whether the element type is ``?dtype`` (default: a bitmap is given)."""
    n = len(values)
    vbuf = None if validity is None else pa.py_buffer(np.ascontiguousarray(validity))
    if dtype.startswith("complex"):
        t = ComplexType(dtype)
        pairs = np.ascontiguousarray(values).view(values.real.dtype)
        child = pa.Array.from_buffers(t.storage_type.value_type, 2 * n, [None, pa.py_buffer(pairs)])
        storage = pa.Array.from_buffers(t.storage_type, n, [vbuf], children=[child])
        return pa.ExtensionArray.from_storage(t, storage)
    if dtype == "bool":      # Arrow packs booleans into bits (LSB-first, as validity
        data = pa.py_buffer(pack_validity(values))   # bitmaps): the one copy we cannot avoid
    elif dtype in _TO_ARROW:
        data = pa.py_buffer(np.ascontiguousarray(values))
    else:
        return _element_to_arrow(values, vbuf, dtype,
                                 vbuf is not None if optional is None else optional)
    return pa.Array.from_buffers(_TO_ARROW[dtype], n, [vbuf, data])


def _element_to_arrow(values: np.ndarray, vbuf, dtype: str, optional: bool) -> pa.Array:
    """Records, fixed bytes and strings, categoricals (see the module table)."""
    n = len(values)
    if dtype.startswith("fixed_bytes"):
        return pa.Array.from_buffers(pa.binary(values.dtype.itemsize), n,
                                     [vbuf, pa.py_buffer(np.ascontiguousarray(values))])
    if dtype.startswith("fixed_string"):
        items = values.tolist()
        if values.dtype.kind == "S":          # xnd's one-byte strings: code points < 256
            items = [b.decode("latin-1") for b in items]
        mask = None if vbuf is None else ~unpack_validity(vbuf, n)
        storage = pa.array(items, pa.string(), mask=mask)
        return pa.ExtensionArray.from_storage(
            FixedStringType(("?" if optional else "") + dtype), storage)
    if is_categorical(dtype):
        items = categories(dtype)
        try:
            dictionary = pa.array(items)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise TypeError(f"categorical {dtype!r} has no Arrow dictionary: its items are of "
                            f"different kinds ({e})") from None
        codes = pa.Array.from_buffers(pa.int64(), n,
                                      [vbuf, pa.py_buffer(np.ascontiguousarray(values))])
        return pa.DictionaryArray.from_arrays(codes, dictionary)
    children, names, optional = [], [], set()
    for name, text in record_fields(dtype).items():
        dims, leaf = split_dims(text)
        child = np.ascontiguousarray(values[name]).reshape(-1)
        valid = None
        if leaf.startswith("?"):            # an optional field: its hidden validity byte
            valid = pack_validity(values[HIDDEN + name].astype(bool))
            leaf = leaf[1:]
            optional.add(name if not dtype.startswith("(") else str(len(names)))
        arr = leaf_to_arrow(child, valid, leaf, valid is not None)
        for size in reversed(dims):
            item = pa.field("item", arr.type, nullable=False)
            arr = pa.FixedSizeListArray.from_arrays(arr, type=pa.list_(item, int(size)))
        children.append(arr)
        names.append(name)
    if dtype.startswith("("):       # a tuple: fields "0", "1", ... as Awkward names them
        names = [str(i) for i in range(len(names))]
    t = pa.struct([pa.field(k, c.type, nullable=k in optional)
                   for k, c in zip(names, children)])
    return pa.Array.from_buffers(t, n, [vbuf], children=children)


# -- Arrow -> xdap --------------------------------------------------------------

def from_arrow(arr, type=None):
    """An xnd container over a pyarrow array's buffers (zero-copy where the
    layouts match; see the module docstring).

    ``type`` (optional ndtypes string: the whole type, or only the element,
    e.g. ``'?float64'`` or ``'fixed_string(8)'``) states what to expect: it
    is checked, and resolves the open choices: the item size of Arrow
    strings (which are copied into fixed-size items), ``?T`` for an array
    without a validity bitmap (an all-valid bitmap is made), ``T`` for one
    with a bitmap but no nulls (the bitmap is dropped).

    >>> import pyarrow as pa
    >>> from_arrow(pa.array([[1, None], [2]], pa.list_(pa.int16()))).type
    ndt("var * var * ?int16")
    >>> from_arrow(pa.array([1.5, 2.5]), type="2 * ?float64").value
    [1.5, 2.5]
    """
    return container(parts_from_arrow(arr, type))


def parts_from_arrow(arr, type=None) -> Parts:
    """Like ``from_arrow``, but the flat ``Parts`` (no xnd container made)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = (arr.chunk(0) if arr.num_chunks == 1 else
               pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], arr.type))
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {builtins_type(arr).__name__}")
    n = len(arr)
    fixed, var = [], []
    while True:
        t = arr.type
        if isinstance(t, pa.ExtensionType) or not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t)
                                                    or pa.types.is_large_list(t)):
            break
        if arr.null_count:
            raise TypeError(f"Arrow type {t}: null lists are not supported (xnd has optional "
                            "values, not optional dimensions)")
        if pa.types.is_fixed_size_list(t):
            fixed.append(t.list_size)
        else:
            var.append(_offsets(arr))
        arr = arr.flatten()
        if fixed and var:
            raise TypeError(f"Arrow array mixes fixed-size and variable-size lists ({arr.type}); "
                            "xdap supports 'N * M * T' or 'var * var * T'")
    want = None if type is None else split_dims(str(type).strip())[1]
    if isinstance(arr.type, FixedStringType):     # xdap's own: the type it came with
        if type is None:
            type = want = arr.type.dtype          # '?' too, on a rank without missing items
        arr = arr.storage
    if not fixed and not var and _is_text(arr.type) and not (
            want or "").lstrip("?").startswith(("fixed_string", "fixed_bytes")):
        p = _text_from_arrow(arr)
        return apply_type(p, type) if type is not None else p
    dtype, values, validity = _leaf_from_arrow(arr, want)
    if var:
        info = TypeInfo.of_ragged(len(var) + 1, dtype, validity is not None)
        offsets = (np.array([0, n], np.int32),) + tuple(var)
        p = Parts(info, values, validity, offsets)
    else:
        shape = (n,) + tuple(fixed)
        info = TypeInfo.fixed(shape, dtype, validity is not None)
        p = Parts(info, values.reshape(shape), validity)
    return apply_type(p, type) if type is not None else p


builtins_type = type


def _offsets(arr) -> np.ndarray:
    off = np.asarray(arr.offsets)               # a view, accounting for a slice offset
    if off[0] != 0:
        off = off - off[0]
    if off.dtype != np.int32:
        if len(off) and off[-1] > np.iinfo(np.int32).max:
            raise ValueError(f"Arrow {arr.type} has {off[-1]} items, more than int32 offsets "
                             "(xnd's) can address")
        off = off.astype(np.int32)
    return off


def _leaf_from_arrow(arr, want=None):
    """(dtype name, flat numpy values, validity bitmap or None) of a leaf
    array; ``want`` is the element type the caller asked for, if any."""
    n, t = len(arr), arr.type
    if isinstance(t, ComplexType):
        storage = arr.storage
        # .values, not .flatten(): flatten drops the slots of null entries
        child = storage.values.slice(2 * storage.offset, 2 * len(storage))
        pairs, _ = _buffer_values(child, np.dtype(t.storage_type.value_type.to_pandas_dtype()))
        return t.dtype, pairs.view(DTYPES[t.dtype][0]), _validity(storage)
    if t in _FROM_ARROW:
        dtype = _FROM_ARROW[t]
        if dtype == "bool":
            values = unpack_validity(arr.buffers()[1], arr.offset + n)[arr.offset:]
        else:
            values, _ = _buffer_values(arr, DTYPES[dtype][0])
        return dtype, values, _validity(arr)
    if isinstance(t, FixedStringType):               # a field of a record, say
        return _strings_from_arrow(arr.storage, want or t.dtype)
    if pa.types.is_fixed_size_binary(t):
        values, _ = _buffer_values(arr, np.dtype(f"S{t.byte_width}"))
        return f"fixed_bytes(size={t.byte_width})", values, _validity(arr)
    if pa.types.is_dictionary(t):
        return _categorical_from_arrow(arr)
    if pa.types.is_struct(t):
        return _record_from_arrow(arr)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return _strings_from_arrow(arr, want)
    raise TypeError(f"Arrow type {t} is not supported: {LEAVES_HELP}; Arrow: numbers, bool, "
                    "xdap.complex64/128, struct, fixed_size_binary, dictionary, and "
                    "string/binary with type='fixed_string(n)'/'fixed_bytes(size=n)'")


def _is_text(t) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _text_from_arrow(arr) -> Parts:
    """An Arrow string/binary array as ``N * string``/``bytes`` parts:
    offsets and bytes shared (int64 offsets narrowed, a sliced array's
    shifted: copies of the offsets only)."""
    t = arr.type
    dtype = "string" if pa.types.is_string(t) or pa.types.is_large_string(t) else "bytes"
    if arr.null_count:
        raise TypeError(f"the Arrow {t} array has nulls: optional {dtype} items are not "
                        "supported; fill them (e.g. with an empty item) or use "
                        "type='?fixed_string(n)'")
    wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    off = np.frombuffer(arr.buffers()[1], np.int64 if wide else np.int32,
                        count=arr.offset + len(arr) + 1)[arr.offset:]
    lo, hi = int(off[0]), int(off[-1])
    if lo:
        off = off - lo
    if off.dtype != np.int32:
        if hi - lo > np.iinfo(np.int32).max:
            raise ValueError(f"Arrow {t} array has {hi - lo} bytes, more than int32 offsets "
                             "(xnd's) can address")
        off = off.astype(np.int32)
    buf = arr.buffers()[2]
    values = np.frombuffer(buf, np.uint8, count=hi)[lo:] if buf is not None else \
        np.zeros(0, np.uint8)
    return Parts(TypeInfo.of_text(dtype), values, None,
                 (np.array([0, len(arr)], np.int32), off))


def _strings_from_arrow(arr, want):
    """Variable-length strings into fixed-size items of the requested type
    (a copy; an item longer than the type allows is an error, never cut)."""
    t = arr.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if want is None or not want.lstrip("?").startswith(("fixed_string", "fixed_bytes")):
        kind = "fixed_string(n)" if text else "fixed_bytes(size=n)"
        raise TypeError(f"Arrow {t} items below a list level: variable-length items are "
                        "distributed as a 1-d array only ('N * string'); inside lists pass the "
                        f"element type, e.g. type='{kind}' with n at least the longest item")
    dtype = want.lstrip("?")
    dt = leaf_numpy_dtype(dtype)
    items = arr.to_pylist()
    valid = np.array([v is not None for v in items], bool)
    if text and dt.kind == "S":
        try:           # xnd's fixed_string(n) holds one byte per character
            items = [None if v is None else v.encode("latin-1") for v in items]
        except UnicodeEncodeError as e:
            raise ValueError(f"{dtype!r} holds characters below U+0100 only (one byte each), "
                             f"the Arrow array has {e.object[e.start]!r}; use "
                             f"fixed_string(n, 'utf32')") from None
    longest = max((len(v) for v in items if v is not None), default=0)
    limit = dt.itemsize // 4 if dt.kind == "U" else dt.itemsize
    if longest > limit:
        raise ValueError(f"an item of the Arrow {t} array has {longest} "
                         f"{'characters' if dt.kind == 'U' else 'bytes'}, more than the "
                         f"{limit} of {dtype!r} (items are never cut; use a larger size)")
    values = np.array([b"" if v is None and dt.kind == "S" else "" if v is None else v
                       for v in items], dt)
    return dtype, values, None if valid.all() and arr.null_count == 0 else pack_validity(valid)


def _categorical_from_arrow(arr):
    items = [None if v is None else v for v in arr.dictionary.to_pylist()]
    spelled = ", ".join("NA" if v is None else repr(v) for v in items)
    dtype = f"categorical({spelled})"
    try:
        dtype = type_info(f"1 * {dtype}").dtype
    except TypeError as e:
        raise TypeError(f"the Arrow dictionary {arr.type} cannot be a categorical: {e}") from None
    indices = arr.indices
    codes = np.asarray(indices.fill_null(0) if indices.null_count else indices)
    return dtype, codes.astype(np.int64, copy=False), _validity(indices)


def _record_from_arrow(arr):
    """A struct array's fields interleaved into records (a copy)."""
    names, spelled, columns = [], [], []
    for i, f in enumerate(arr.type):
        child = arr.field(i)
        dims = []
        while pa.types.is_fixed_size_list(child.type):
            if child.null_count:
                raise TypeError(f"struct field {f.name!r}: null lists are not supported")
            dims.append(child.type.list_size)
            child = child.flatten()
        dtype, values, validity = _leaf_from_arrow(child)
        valid = None
        if validity is not None and dims and not unpack_validity(validity, len(values)).all():
            raise TypeError(f"struct field {f.name!r} has nulls inside its fixed-size lists: "
                            "optional items inside a fixed dimension of a record are not "
                            "supported; fill them")
        if f.nullable and not dims:          # an optional field (Arrow says so in its type)
            valid = (unpack_validity(validity, len(values)) if validity is not None
                     else np.ones(len(values), bool))
            dtype = "?" + dtype
        names.append(f.name)
        spelled.append(" * ".join([str(d) for d in dims] + [dtype]))
        columns.append((values.reshape((len(arr),) + tuple(dims)), valid))
    if names == [str(i) for i in range(len(names))]:       # a tuple (see _element_to_arrow)
        text = "(" + ", ".join(spelled) + ")"
    else:
        text = "{" + ", ".join(f"{k} : {v}" for k, v in zip(names, spelled)) + "}"
    dtype = type_info(f"1 * {text}").dtype
    out = np.zeros(len(arr), leaf_numpy_dtype(dtype))
    for k, (col, valid) in zip(out.dtype.names, columns):
        out[k] = col
        if valid is not None:
            out[HIDDEN + k] = valid
    return dtype, out, _validity(arr)


def _buffer_values(arr, dt: np.dtype):
    buf = arr.buffers()[1]
    values = np.frombuffer(buf, dt, count=arr.offset + len(arr))[arr.offset:]
    return values, buf


def _validity(arr):
    buf = arr.buffers()[0]
    if buf is None:
        return None
    n, off = len(arr), arr.offset
    if off % 8 == 0:                            # byte aligned: a view
        return np.frombuffer(buf, np.uint8, count=(off + n + 7) // 8)[off // 8:]
    mask = unpack_validity(buf, off + n)[off:]
    return pack_validity(mask)


def _element_only(type):
    """The element type when ``type`` names only an element ('?float64',
    'fixed_string(8)'), else None (a whole type, or invalid: type_info says)."""
    dims, leaf = split_dims(str(type).strip())
    if dims:
        return None
    if leaf.lstrip("?") in ("string", "bytes"):
        return leaf
    leaf_numpy_dtype(leaf)          # TypeError naming the rule for a bad element
    return leaf


def _requested(type, have: TypeInfo) -> TypeInfo:
    """What ``type`` asks for, its dims taken from the array when it names
    only the element."""
    leaf = _element_only(type)
    if leaf is None:
        return type_info(type)
    want = have.with_leaf(leaf)
    if (not have.ragged and want.dtype.startswith("complex")
            and have.dtype in ("float32", "float64") and have.shape[-1:] == (2,)):
        want = want.with_shape(have.shape[:-1])         # (real, imag) pairs
    return want


def apply_type(p: Parts, type) -> Parts:
    """``p`` read as the ndtypes ``type`` a caller asked for (complex from
    float pairs, optional, a categorical's codes ...), or the TypeError
    naming why it cannot be."""
    want, have = _requested(type, p.info), p.info
    if (not want.ragged and not have.ragged and want.dtype.startswith("complex")
            and have.dtype == ("float32" if want.dtype == "complex64" else "float64")
            and have.shape == want.shape + (2,) and p.validity is None):
        # plain (real, imag) pairs, e.g. from a producer that knows no complex type
        values = np.ascontiguousarray(p.values).view(DTYPES[want.dtype][0])[..., 0]
        p = Parts(TypeInfo.fixed(want.shape, want.dtype), values)
        have = p.info
    if (want.kind, want.var_ndim, want.dtype) != (have.kind, have.var_ndim, have.dtype) or (
            not want.ragged and want.shape != have.shape):
        raise TypeError(f"the Arrow array holds {have.type_string()!r}, not the requested "
                        f"{str(type)!r}")
    if want.optional == have.optional:
        return p
    info = have.with_leaf(("?" if want.optional else "") + have.dtype)
    if want.optional:                        # no bitmap: everything is valid
        return Parts(info, p.values, all_valid(p.values.size), p.offsets)
    if not p.valid_mask().all():
        raise ValueError(f"the Arrow array has nulls but the requested type {str(type)!r} "
                         "is not optional")
    return Parts(info, p.values, None, p.offsets)


# -- a DistArray from per-rank Arrow arrays ------------------------------------------

def stack_arrow(arr, comm=None, type=None) -> tuple:
    """``(Distribution, Parts)`` whose rows are every rank's Arrow array,
    stacked in rank order (collective; ``xdap.from_arrow`` wraps it).

    Each rank passes its own array (any length, 0 included; ragged too,
    where the build's patched ndtypes represents an empty ``var * var * T``
    -- else all ranks raise the same ValueError); the rows are block distributed over a 1-d grid with the
    ranks' lengths as irregular block sizes. The local data wrap the Arrow
    buffers (zero-copy as in ``from_arrow``). All ranks must agree on the
    element type (and on the inner dims of fixed types); a mismatch raises
    the same TypeError on every rank.

    >>> import pyarrow as pa
    >>> from mpi4py import MPI
    >>> d, p = stack_arrow(pa.array([[1.0], [2.0, 3.0]]), comm=MPI.COMM_SELF)
    >>> d.global_shape, container(p).value
    ((2,), [[1.0], [2.0, 3.0]])
    """
    comm = _comm.resolve(comm)
    p = None
    with agreement(comm):
        p = parts_from_arrow(arr, type)
    return stack_rows(p, comm)


def stack_rows(p: Parts, comm) -> tuple:
    """``(Distribution, Parts)`` of every rank's rows ``p``, in rank order
    (collective). Shared by the Arrow and Awkward importers."""
    info = p.info
    kind = info.type_string() if info.ragged else ("fixed", info.leaf, info.shape[1:])
    with agreement(comm, share=True) as ag:
        # checked here, so every rank raises together (container() would
        # refuse an empty ragged partition on its own rank only)
        check_ragged_rows(info, p.nrows)
        ag.share((p.nrows, kind))
    metas = ag.shared
    for r, (_, k) in enumerate(metas):
        if k != metas[0][1]:
            show = [m[1] if isinstance(m[1], str) else
                    " * ".join(["N"] + [str(s) for s in m[1][2]] + [m[1][1]]) for m in metas]
            raise TypeError(f"ranks hold different element types (type per rank: {show}); "
                            "every rank's array must have the same type")
    bounds = np.concatenate([[0], np.cumsum([m[0] for m in metas])])
    maps = [BlockMap(int(bounds[-1]), comm.size, bounds=bounds.tolist())]
    if not info.ragged:
        maps += [BlockMap(int(s), 1) for s in info.shape[1:]]
    return Distribution(maps, comm), p
