"""Rows of any type as flat buffers with one description, and back: the one
place where rows are packed (Tpetra's pack/unpack, Awkward's
``to_buffers``/``from_buffers``).

A selection of rows of a ``Parts`` becomes a few 1-d buffers whose kinds
depend on the type alone -- its :class:`Form`:

========================  ===================================================
the type                  its buffers, in message order
========================  ===================================================
``N * d1 * ... * T``      the values (rows x d1 x ..., flat);
                          ``?T``: one validity byte per value
``var^L * T``             the item lengths of levels 1 .. L-1 (one per item
                          of the level above: level 1 has one per row), the
                          leaves; ``?T``: one validity byte per leaf
``N * string``/``bytes``  the byte lengths of the items, their bytes (utf-8)
========================  ===================================================

Records (optional fields included), tuples, fixed strings and categoricals
are fixed-size leaves: their bytes travel as they are.  Validity travels
with its values, one byte each (the bitmap is unpacked once here and packed
once when the rows arrive).  Nothing here communicates: the transport
(``xdap.transport``) sends the buffers, each rank's share a contiguous run
of every buffer.

>>> from xdap.parts import as_container, container, parts
>>> p = parts(as_container([[1.0, None], [], [2.0]], type="var * var * ?float64"))
>>> packed = pack(p, [2, 0])
>>> [b.tolist() for b in packed.buffers]
[[1, 2], [2.0, 1.0, 0.0], [1, 1, 0]]
>>> packed.bounds([0, 1, 2])          # where rows 0, 1, 2 of the selection start, per buffer
[array([0, 1, 2]), array([0, 1, 3]), array([0, 1, 3])]
>>> container(unpack(packed.form, packed.buffers, 2)).value
[[2.0], [1.0, None]]
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bitmaps import pack_validity
from .parts import Parts
from .rows import take_rows
from .types import TypeInfo

__all__ = ["Form", "Packed", "pack", "unpack", "concat", "no_rows"]

_I64 = np.dtype(np.int64)
_U8 = np.dtype(np.uint8)


@dataclass(frozen=True)
class Form:
    """What the buffers of packed rows are (see the module docstring): the
    type, and for fixed types the shape of one row.  Equal on every rank for
    arrays of one agreed distribution and type, so a receiver knows it
    without being told."""
    info: TypeInfo
    row_shape: tuple = ()

    @classmethod
    def of(cls, p: Parts) -> "Form":
        return cls(p.info, () if p.info.ragged else tuple(p.values.shape[1:]))

    @property
    def levels(self) -> int:
        """Length buffers before the values (L - 1 for ``var^L * T``)."""
        return self.info.var_ndim - 1 if self.info.ragged else 0

    @property
    def row_size(self) -> int:
        """Values per row of a fixed type."""
        return math.prod(self.row_shape)

    @property
    def dtypes(self) -> tuple:
        """The NumPy dtype of each buffer, in message order."""
        return ((_I64,) * self.levels + (self.info.numpy_dtype,)
                + ((_U8,) if self.info.optional else ()))

    @property
    def sized_by_rows(self) -> bool:
        """Whether the row counts alone size every buffer (fixed types):
        a receiver that knows how many rows arrive needs no other count."""
        return not self.info.ragged


@dataclass
class Packed:
    """Packed rows: their form, the buffers (1-d, C-contiguous) and the
    offsets through which row positions map to items of each buffer."""
    form: Form
    buffers: list
    offsets: tuple = ()        # the taken rows' offsets (ragged), levels 1 .. L-1
    nrows: int = 0

    def bounds(self, rows) -> list:
        """For row positions ``rows`` of the selection (ascending; ``nrows``
        allowed), the item position in each buffer where that row starts:
        a segment of rows ``[a, b)`` is ``buffer[bounds[a]:bounds[b]]``."""
        at = np.asarray(rows, _I64)
        f = self.form
        if not f.info.ragged:
            first = at * f.row_size
            return [first] * len(self.buffers)
        out = []
        for off in self.offsets:            # lengths of level k sit at level k-1 items
            out.append(at)
            at = off.astype(_I64, copy=False)[at]
        out.append(at)                      # the leaves
        if f.info.optional:
            out.append(at)
        return out


def pack(p: Parts, rows=None) -> Packed:
    """The rows ``rows`` of ``p`` (local row indices, any order, repeats
    allowed; None: every row, in order) as buffers.  Copies the selected
    rows once (none when ``rows`` is None and ``p`` is contiguous and
    neither ragged nor optional)."""
    form = Form.of(p)
    q = p if rows is None else take_rows(p, np.asarray(rows, _I64))
    buffers = []
    offsets = ()
    if form.info.ragged:
        offsets = tuple(np.asarray(o) for o in q.offsets[1:])
        buffers = [np.diff(o.astype(_I64, copy=False)) for o in offsets]
    buffers.append(np.ascontiguousarray(q.values).reshape(-1))
    if form.info.optional:
        mask = q.valid_mask()
        buffers.append(np.ascontiguousarray(mask).reshape(-1).view(_U8))
    return Packed(form, buffers, offsets, q.nrows)


def unpack(form: Form, buffers, nrows: int) -> Parts:
    """The Parts of ``nrows`` rows that arrived as ``buffers`` (whole rows,
    one after another, in the order of ``form.dtypes``).  Offsets are
    rebuilt from the lengths, the validity bitmap from the bytes; the values
    are used as they are (no copy)."""
    info = form.info
    buffers = list(buffers)
    validity = pack_validity(buffers.pop().view(bool)) if info.optional else None
    values = buffers.pop()
    if not info.ragged:
        shape = (int(nrows),) + form.row_shape
        return Parts(info.with_shape(shape), values.reshape(shape), validity)
    offsets = [np.array([0, nrows], np.int32)]
    for got in buffers:                     # the lengths, level by level
        offsets.append(_offsets(got))
    return Parts(info, values, validity, tuple(offsets))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """int32 offsets of items with the given lengths (ValueError past int32)."""
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    if out[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"{int(out[-1])} items below one level of ragged rows on this rank: "
                         "more than int32 offsets address")
    return out.astype(np.int32)


def concat(form: Form, pieces) -> list:
    """The buffers of several packed selections of one form, one after the
    other (what a rank receives from several peers, joined; copies)."""
    pieces = list(pieces)
    return [np.concatenate([pc[b] for pc in pieces]) if pieces else np.zeros(0, dt)
            for b, dt in enumerate(form.dtypes)]


def no_rows(form: Form) -> Parts:
    """Parts of the form holding no rows: what a rank that sends nothing
    passes to a move (a root scatter's other ranks).

    >>> from xdap.types import type_info
    >>> no_rows(Form(type_info("var * var * ?int8"))).nrows
    0
    """
    info = form.info
    validity = np.zeros(0, _U8) if info.optional else None
    values = np.zeros((0,) + form.row_shape, info.numpy_dtype)
    if not info.ragged:
        return Parts(info.with_shape(values.shape), values, validity)
    offsets = (np.zeros(2, np.int32),) + tuple(np.zeros(1, np.int32)
                                               for _ in range(form.levels))
    return Parts(info, values, validity, offsets)
