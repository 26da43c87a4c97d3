"""Shifts along a block dimension: ``roll`` (the elements wrap around) and
``shift`` (the vacated cells take a fill value), moving only what crosses
a block boundary.

Shifting by ``k`` along ``axis`` sends each rank's last ``k`` slabs (or
first ``-k``) to the rank that holds the next block -- one message each
way between neighbours, as a hand-written ``Sendrecv`` of the boundary --
and copies the rest inside the rank.  A shift longer than a block reaches
past the neighbour: the plan takes its pieces from whichever ranks hold
them.  The plan is plain data computed from the distribution, the axis and
the shift on every rank alike (every piece of every rank's result is
listed once, in one order, so its position is the message's tag) and kept;
the transport's ``NeighbourExchange`` sends contiguous slabs straight from
the buffer.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(6.0), comm=MPI.COMM_SELF)
>>> shifted(d, p, 0, 2).values.tolist(), shifted(d, p, 0, -1, fill=-1.0).values.tolist()
([4.0, 5.0, 0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0, 5.0, -1.0])
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import plans
from ..agreement import HEADER, SETTLED, capacity, record_size
from ..distribution import Distribution
from ..parts import Parts
from ..transport import NeighbourExchange

__all__ = ["shifts_by_blocks", "shift_pieces", "shift_plan", "shifted", "crossing", "assembled"]


def shifts_by_blocks(d: Distribution, axis: int) -> bool:
    """Whether ``shifted`` moves ``axis`` of ``d``: a dim in unpadded
    blocks (a whole dim is shifted in place by NumPy, by the caller)."""
    m = d.maps[axis]
    return m.ranges and not m.padded and not m.shared_owned


def shift_pieces(bounds, k: int, wrap: bool) -> list:
    """Every rank's result along the axis, piece by piece: ``(target grid
    position, first target index, source grid position or None for a
    fill, first source index, length)``, indices local to their blocks, in
    one order that every rank computes alike.  ``bounds``: the blocks'
    ``G + 1`` boundaries; ``k``: the shift (a result index ``g`` holds the
    source's ``g - k``, modulo the size when ``wrap``, else a fill where
    that falls outside).

    >>> shift_pieces([0, 3, 6], 1, True)
    [(0, 0, 1, 2, 1), (0, 1, 0, 0, 2), (1, 0, 0, 2, 1), (1, 1, 1, 0, 2)]
    >>> shift_pieces([0, 3, 6], -4, False)
    [(0, 0, 1, 1, 2), (0, 2, None, 0, 1), (1, 0, None, 0, 3)]
    """
    bounds = np.asarray(bounds, np.int64)
    n = int(bounds[-1])
    out = []
    for t in range(len(bounds) - 1):
        lo, hi = int(bounds[t]), int(bounds[t + 1])
        j = lo
        while j < hi:
            src = j - k
            if wrap and n:
                src %= n
                length = min(hi - j, n - src)
            elif src < 0:
                out.append((t, j - lo, None, 0, min(hi - j, -src)))
                j += min(hi - j, -src)
                continue
            elif src >= n:
                out.append((t, j - lo, None, 0, hi - j))
                break
            else:
                length = min(hi - j, n - src)
            # split the source range at the blocks it spans
            while length:
                q = int(np.searchsorted(bounds, src, side="right")) - 1
                part = min(length, int(bounds[q + 1]) - src)
                out.append((t, j - lo, q, src - int(bounds[q]), part))
                j, src, length = j + part, src + part, length - part
    return out


@dataclass(frozen=True)
class _Plan:
    # what crosses a rank, as (sends, recvs) of ``NeighbourExchange`` -- plain
    # data: the store keys plans by the distribution, not its communicator,
    # so the exchange is made on the caller's (None: nothing crosses)
    moves: tuple | None
    copies: tuple                          # (target region, source region) within the rank
    fills: tuple                           # target regions that take the fill value
    sends: tuple                           # the source regions this rank sends, in plan order
    # where the cells that cross fit in a vote's records (else None): this rank's
    # result in order, one piece each -- (0, source region) a copy of its own,
    # (1, byte offset in the records, count, shape) one that arrived, (2, shape) fill
    segments: tuple | None


def _plan(d: Distribution, axis: int, k: int, wrap: bool, itemsize: int) -> _Plan:
    m = d.maps[axis]
    G = m.grid_size
    bounds = [m.owned_range(q)[0] for q in range(G)] + [m.size]
    me = d.coords[axis]
    coords = list(d.coords)
    shape = d.local_shape
    # the bytes of one slab along the axis: the same for every rank of a grid line
    slab = itemsize * math.prod(n for j, n in enumerate(shape) if j != axis)
    record = record_size(d.comm.size)

    def rank(q):
        coords[axis] = q
        return d.rank_of(coords)

    def region(start, length):
        piece = slice(start, start + length)
        return piece if axis == 0 else (slice(None),) * axis + (piece,)

    def piece_shape(length):
        return tuple(length if j == axis else n for j, n in enumerate(shape))

    pieces = shift_pieces(bounds, k, wrap)
    sends, recvs, copies, fills, segments = [], [], [], [], []
    units = [0] * G                 # the slabs each grid position sends, so far
    for tag, (t, at, q, src, length) in enumerate(pieces):
        if t == me:
            if q is None:
                fills.append(region(at, length))
                segments.append((2, piece_shape(length)))
            elif q == me:
                copies.append((region(at, length), region(src, length)))
                segments.append((0, region(src, length)))
            else:
                recvs.append((rank(q), tag, region(at, length)))
                # its place in the sender's payload (the sender's slab is ours)
                segments.append((1, rank(q) * record + HEADER + units[q] * slab,
                                 length * slab // itemsize, piece_shape(length)))
        elif q == me:
            sends.append((rank(t), tag, region(src, length)))
        if q is not None and q != t:
            units[q] += length
    # the largest payload of any rank, the same bound on every rank: what rides
    # in a vote's records when it fits (nothing crosses: no message at all)
    largest = max(units) * _slab_bound(d, axis, itemsize)
    rides = largest <= capacity(d.comm.size)
    return _Plan((tuple(sends), tuple(recvs)) if largest else None, tuple(copies), tuple(fills),
                 tuple(r for _, _, r in sends), tuple(segments) if rides else None)


def _slab_bound(d, axis, itemsize):
    """The largest slab (bytes) of any rank along ``axis``: its other dims'
    largest local sizes."""
    return itemsize * math.prod(max(m.local_size(q) for q in range(m.grid_size))
                                for j, m in enumerate(d.maps) if j != axis)


def shift_plan(d: Distribution, axis: int, k: int, fill, itemsize: int) -> _Plan:
    """The plan of ``shifted`` (kept in the pure plan store; a repeated
    roll keeps it itself)."""
    n = d.maps[axis].size
    wrap = fill is None
    k = k % n if wrap and n else max(-n, min(n, k))
    key = plans.Key("shift", (d.fingerprint(), d.comm.size, d.comm.rank, axis, k, wrap,
                              itemsize))
    return plans.pure.get_or_make(key, lambda: _plan(d, axis, k, wrap, itemsize))


def shifted(d: Distribution, p: Parts, axis: int, k: int, fill=None, vote=SETTLED,
            plan=None) -> Parts:
    """This rank's part of ``(d, p)`` shifted by ``k`` along ``axis`` (a
    dim in unpadded blocks, ``shifts_by_blocks``): wrapped around (``np.roll``)
    when ``fill`` is None, else the vacated cells hold ``fill``.  A new
    buffer (a copy); collective where cells cross ranks (the arguments
    agreed by the caller); fixed data without missing values.  ``vote``:
    the call's (``xdap.agreement.Vote``) -- where the cells that cross fit
    in its records, they ride in it (one message for the call); else it is
    cast first and they move between neighbours.  ``plan``: ``shift_plan``'s,
    where the caller kept it."""
    src = p.values
    if plan is None:
        plan = shift_plan(d, axis, k, fill, src.dtype.itemsize)
    if plan.segments is None:                   # the vote first, then neighbour messages
        out = np.empty_like(src)
        vote.cast()
        if plan.moves is not None:
            NeighbourExchange(d.comm, *plan.moves, ()).move(src, out, plan.copies)
        else:                                   # nothing crosses a rank
            for target, source in plan.copies:
                out[target] = src[source]
        for target in plan.fills:
            out[target] = fill
        return Parts(p.info, out)
    if plan.moves is None:                      # nothing crosses: no message
        return Parts(p.info, assembled(plan, src, None, axis, fill))
    return Parts(p.info, assembled(plan, src, vote.ride(d.comm, crossing(plan, src)), axis,
                                   fill))


def crossing(plan: _Plan, src: np.ndarray):
    """What this rank sends of ``src`` under a ``plan`` whose crossing
    cells ride in a vote (``plan.segments``): one contiguous buffer, the
    plan's slabs in order (empty where this rank sends nothing)."""
    sends = plan.sends
    if len(sends) == 1:
        return np.ascontiguousarray(src[sends[0]])
    return np.concatenate([src[r].reshape(-1) for r in sends]) if sends else src[:0].copy()


def assembled(plan: _Plan, src: np.ndarray, records, axis: int, fill) -> np.ndarray:
    """This rank's shifted block (a new array) from its own ``src`` and
    the cells that arrived in the vote's ``records`` (None where nothing
    crosses), in ``plan.segments``' order: one concatenation."""
    pieces = []
    for segment in plan.segments:
        if segment[0] == 0:
            pieces.append(src[segment[1]])
        elif segment[0] == 1:
            pieces.append(np.frombuffer(records, src.dtype, segment[2],
                                        segment[1]).reshape(segment[3]))
        else:
            pieces.append(np.full(segment[1], fill, src.dtype))
    return np.concatenate(pieces, axis=axis) if len(pieces) > 1 else \
        pieces[0].copy() if pieces else np.empty_like(src)
