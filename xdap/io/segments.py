"""Flat arrays written from one segment per rank: re-cut at chunk boundaries.

Ragged values, their offsets and unstructured index tables are saved as
flat arrays in which every rank holds one contiguous *segment*. Segments
end wherever the data does, chunk boundaries do not; so before writing,
each segment's head (the rows before its first chunk boundary) moves to the
rank holding the chunk that head belongs to. A rank sends and receives less
than one chunk, and to ranks whose segments border its own; the bulk stays
where it is, uncopied when nothing moves. One route of the transport does
it (skipped when all segments are aligned already -- every rank decides
that alike from the same allgathered lengths).
"""
from __future__ import annotations

import numpy as np

from ..parts import Parts
from ..transport import Route, move

__all__ = ["layout", "align_segment"]


def layout(comm, n: int, start=None) -> tuple:
    """``(starts, lengths, total)`` of every rank's segment (collective: one
    small allgather). ``start``: this rank's global start; None means the
    segments follow each other in rank order."""
    pairs = np.array(comm.allgather((int(n), -1 if start is None else int(start))), np.int64)
    lengths = pairs[:, 0]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if start is None else pairs[:, 1]
    return starts, lengths, int(lengths.sum())


def _aligned(starts, lengths, chunk, total):
    """Each rank's aligned range: from the first chunk boundary in its
    segment to the first one after it (empty segments: nothing)."""
    ends = starts + lengths
    lo = np.minimum(-(-starts // chunk) * chunk, total)
    hi = np.minimum(-(-ends // chunk) * chunk, total)
    empty = lengths == 0
    lo[empty], hi[empty] = 0, 0
    return lo, hi


def align_segment(comm, local: np.ndarray, starts, lengths, chunk: int, total: int) -> tuple:
    """``(rows, first)``: this rank's rows ``[first, first + len(rows))`` of
    the flat array, starting at a chunk boundary and ending at one (or at the
    array's end), so the rank writes whole chunks only (collective).

    ``local``: this rank's segment (rows along axis 0, any trailing shape,
    C-contiguous); ``starts``, ``lengths``, ``total`` from :func:`layout`.
    Zero-copy when the segment already is aligned.
    """
    me = comm.rank
    lo, hi = _aligned(starts, lengths, chunk, total)
    ends = starts + lengths
    # rows of rank q's segment that fall into rank r's aligned range: [max, min)
    if np.array_equal(lo, np.where(lengths == 0, 0, starts)) and \
            np.array_equal(hi, np.where(lengths == 0, 0, ends)):
        return local, int(starts[me])       # every segment aligned: nothing moves anywhere
    send_lo = np.maximum(starts[me], lo)
    send_hi = np.minimum(ends[me], hi)
    recv_lo = np.maximum(starts, lo[me])
    recv_hi = np.minimum(ends, hi[me])
    send_n = np.maximum(send_hi - send_lo, 0)
    recv_n = np.maximum(recv_hi - recv_lo, 0)
    # arrivals come by source rank; each source's rows land at recv_lo[q]
    at = np.concatenate([np.arange(a, a + n) for a, n in zip(recv_lo - lo[me], recv_n) if n]) \
        if recv_n.any() else np.zeros(0, np.int64)
    order = None
    if not np.array_equal(at, np.arange(len(at))):
        order = np.empty(len(at), np.int64)
        order[at] = np.arange(len(at))
    route = Route(comm, None, send_n, recv_n, send_starts=np.where(send_n > 0, send_lo - starts[me], 0),
                  order=order)
    out = move(route, Parts.of_array(np.ascontiguousarray(local)))[0].values
    return out, int(lo[me])
