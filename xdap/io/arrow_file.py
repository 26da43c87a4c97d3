"""Ragged pieces as Arrow IPC files: ``Parts`` <-> one record batch.

Only the file is this module's business: the conversion between ``Parts``
and pyarrow arrays is ``xdap.protocols.arrow`` (``to_arrow`` /
``parts_from_arrow``), so a piece on disk has exactly the Arrow layout that
``xdap.to_arrow`` hands out in memory. The file has one record batch and
one non-nullable column, ``data``, with one Arrow row per xdap row: a
``var * var * T`` piece is ``list<T>``, ``var * var * var * T`` is
``list<list<T>>``, and so on (int32 offsets). Leaves keep their Arrow
validity bitmap (``?T``); complex leaves are the ``xdap.complex64/128``
extension type, stored as ``fixed_size_list<float32|float64>[2]`` (real,
imaginary). The schema metadata ``xdap.type`` holds the xdap leaf type,
e.g. ``?complex128``.

Writing copies the piece once into an in-memory IPC buffer (so the file's
CRC is computed while writing it); reading is zero-copy over the bytes read
(except bool leaves, unpacked to one byte each).

>>> from xdap.parts import as_container, parts, container
>>> p = parts(as_container([[1 + 2j, None], []], type="var * var * ?complex128"))
>>> buf = to_ipc(p)
>>> q = from_ipc(memoryview(buf), p.info)
>>> container(q).value
[[(1+2j), None], []]
"""
from __future__ import annotations

from ..optional import need
from ..parts import Parts
from ..protocols.arrow import ComplexType, parts_from_arrow, to_arrow
from ..types import TypeInfo

pa = need("pyarrow")

__all__ = ["to_ipc", "from_ipc"]


def to_ipc(p: Parts) -> pa.Buffer:
    """An Arrow IPC file (in memory) holding the rows of a ragged piece."""
    arr = to_arrow(p)
    schema = pa.schema([pa.field("data", arr.type, nullable=False)],
                       metadata={"xdap.type": p.info.leaf})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([arr], schema=schema))
    return sink.getvalue()


def from_ipc(data, info: TypeInfo) -> Parts:
    """The rows of an Arrow IPC file (bytes-like) written by ``to_ipc`` as
    Parts of type ``info`` (zero-copy views of ``data`` where the layouts
    match). ValueError if the file holds something else."""
    reader = pa.ipc.open_file(pa.py_buffer(data))
    if reader.num_record_batches != 1 or reader.schema.names != ["data"]:
        raise ValueError(f"Arrow piece holds {reader.schema} in {reader.num_record_batches} "
                         "batches, expected one batch of one column 'data'")
    arr = reader.get_batch(0).column(0)
    if info.dtype.startswith("complex"):
        arr = _complex_leaves(arr, info.dtype)
    try:
        return parts_from_arrow(arr, info.type_string())
    except TypeError as e:
        raise ValueError(f"Arrow piece: {e}") from None


def _complex_leaves(arr: pa.Array, dtype: str) -> pa.Array:
    """Pieces written before complex leaves carried the extension type hold
    plain ``fixed_size_list<float, 2>`` leaves: rewrap them (zero-copy)."""
    if not pa.types.is_list(arr.type):
        return arr
    inner = arr.values
    if pa.types.is_list(inner.type):
        new = _complex_leaves(inner, dtype)
    elif inner.type.equals(ComplexType(dtype).storage_type):
        new = pa.ExtensionArray.from_storage(ComplexType(dtype), inner)
    else:
        return arr
    if new.type.equals(inner.type):
        return arr
    return pa.Array.from_buffers(pa.list_(new.type), len(arr), arr.buffers()[:2],
                                 offset=arr.offset, children=[new])
