"""Ragged pieces as Arrow IPC files: ``Parts`` <-> one record batch.

The file has one column, ``data``, with one Arrow row per xdap row: a
``var * var * T`` piece is ``list<T>``, ``var * var * var * T`` is
``list<list<T>>``, and so on (int32 offsets, exactly xdap's ``offsets[1:]``).
Leaves keep their Arrow validity bitmap (``?T``). Leaf types are Arrow's
own (``bool`` bit-packed, ``float16`` as ``halffloat``) except complex
numbers, which Arrow lacks: ``complex64``/``complex128`` are
``fixed_size_list<float32|float64>[2]`` (real, imaginary), the nullable
level being the pair. The schema metadata ``xdap.type`` holds the xdap leaf
type, e.g. ``?complex128``.

Writing copies the piece once into an in-memory IPC buffer (so the file's
CRC is computed while writing it); reading is zero-copy over the bytes read
(except bool leaves, unpacked to one byte each, and validity bitmaps).

>>> from xdap.containers import as_container, parts, container
>>> p = parts(as_container([[1 + 2j, None], []], type="var * var * ?complex128"))
>>> buf = to_ipc(p)
>>> q = from_ipc(memoryview(buf), p.info)
>>> container(q).value
[[(1+2j), None], []]
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..containers import Parts, pack_validity, unpack_validity
from ..types import TypeInfo

__all__ = ["to_ipc", "from_ipc", "arrow_leaf_type"]

_PRIMITIVE = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(), "uint64": pa.uint64(),
    "float16": pa.float16(), "float32": pa.float32(), "float64": pa.float64(),
    "bool": pa.bool_(),
}
_COMPLEX = {"complex64": pa.float32(), "complex128": pa.float64()}


def arrow_leaf_type(dtype: str) -> pa.DataType:
    if dtype in _COMPLEX:
        return pa.list_(_COMPLEX[dtype], 2)
    return _PRIMITIVE[dtype]


def _leaf_array(p: Parts) -> pa.Array:
    n = len(p.values)
    validity = None
    if p.info.optional and p.validity is not None:
        validity = pa.py_buffer(np.ascontiguousarray(p.validity[:(n + 7) // 8]))
    values = np.ascontiguousarray(p.values)
    if p.info.dtype in _COMPLEX:
        child = pa.Array.from_buffers(_COMPLEX[p.info.dtype], 2 * n,
                                      [None, pa.py_buffer(values)])
        return pa.Array.from_buffers(arrow_leaf_type(p.info.dtype), n, [validity],
                                     children=[child])
    if p.info.dtype == "bool":
        values = pack_validity(values)          # Arrow booleans are bit-packed too
    return pa.Array.from_buffers(_PRIMITIVE[p.info.dtype], n, [validity, pa.py_buffer(values)])


def to_ipc(p: Parts) -> pa.Buffer:
    """An Arrow IPC file (in memory) holding the rows of a ragged piece."""
    arr = _leaf_array(p)
    for off in reversed(p.offsets[1:]):
        off = np.ascontiguousarray(off, np.int32)
        arr = pa.Array.from_buffers(pa.list_(arr.type), len(off) - 1, [None, pa.py_buffer(off)],
                                    children=[arr])
    schema = pa.schema([pa.field("data", arr.type, nullable=False)],
                       metadata={"xdap.type": p.info.leaf})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([arr], schema=schema))
    return sink.getvalue()


def _np(buf, dtype, count: int, offset: int = 0) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.frombuffer(buf, dtype=dtype, count=count, offset=offset * dtype.itemsize)


def from_ipc(data, info: TypeInfo) -> Parts:
    """The rows of an Arrow IPC file (bytes-like) written by ``to_ipc`` as
    Parts of type ``info`` (zero-copy views of ``data`` where the layouts
    match). ValueError if the file holds something else."""
    reader = pa.ipc.open_file(pa.py_buffer(data))
    expect = arrow_leaf_type(info.dtype)
    for _ in range(info.var_ndim - 1):
        expect = pa.list_(expect)
    if reader.num_record_batches != 1 or reader.schema.names != ["data"] \
            or not reader.schema.field("data").type.equals(expect):
        raise ValueError(f"Arrow piece holds {reader.schema} in {reader.num_record_batches} "
                         f"batches, expected one batch of 'data: {expect}'")
    arr = reader.get_batch(0).column(0)
    nrows = len(arr)
    offsets = [np.array([0, nrows], np.int32)]
    for _ in range(info.var_ndim - 1):
        offsets.append(_np(arr.buffers()[1], np.int32, len(arr) + 1, arr.offset))
        arr = arr.values
    n, bufs = len(arr), arr.buffers()
    if arr.offset:
        raise ValueError("Arrow piece: leaf array has a nonzero offset (not written by xdap)")
    validity = None
    if info.optional:
        validity = np.full((n + 7) // 8, 0xFF, np.uint8) if bufs[0] is None \
            else _np(bufs[0], np.uint8, (n + 7) // 8)
    elif arr.null_count:
        raise ValueError(f"Arrow piece has {arr.null_count} nulls but type {info.leaf} is not optional")
    if info.dtype in _COMPLEX:
        values = _np(bufs[2], info.numpy_dtype, n)
    elif info.dtype == "bool":
        values = unpack_validity(bufs[1], n).copy()
    else:
        values = _np(bufs[1], info.numpy_dtype, n)
    return Parts(info, values, validity, tuple(offsets))
