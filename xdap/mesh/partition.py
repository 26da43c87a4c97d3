"""A distributed geometric partitioner: Hilbert keys + a distributed sample
sort. Nothing is gathered: each rank keeps its points, computes their keys,
and the ranks agree on ``P - 1`` splitter keys from a weighted sample
(``O(P * samples)`` numbers on every rank); a point goes to the rank whose
key interval holds its key. Equal parts in count (up to the sampling error
and ties), compact in space.

>>> import numpy as np
>>> from mpi4py import MPI
>>> hilbert_partition(np.random.default_rng(0).random((8, 2)), MPI.COMM_SELF).tolist()
[0, 0, 0, 0, 0, 0, 0, 0]
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .. import comm as _comm
from ..heap import trims_heap
from ..transport import group_order
from .hilbert import hilbert_keys, max_bits
from ..agreement import agreement

__all__ = ["hilbert_partition", "rcb_partition", "SAMPLES"]

# Keys each rank contributes to the splitter choice: the parts' sizes come
# out within about N / (P * SAMPLES) of equal.
SAMPLES = 256


@trims_heap
def hilbert_partition(points, comm=None, parts: int | None = None, *,
                      samples: int = SAMPLES) -> np.ndarray:
    """The part (``0 .. parts-1``, default: one per rank) of each of this
    rank's points (shape ``(n, d)``, d = 1..3; e.g. cell centroids), by
    the Hilbert curve through their common bounding box, cut into ``parts``
    runs of about equal count (collective). Feed the result to
    ``DistArray.migrate``.

    Points with equal keys (closer than the key resolution: ``2**-21`` of the
    box in 3-D, ``2**-32`` in 2-D) always share a part. A rank may hold no points (``(0, d)``).
    Bad input -- NaN or infinite coordinates, dimensions that differ between
    ranks -- raises the same ValueError on every rank.
    """
    comm = _comm.resolve(comm)
    with agreement(comm, "hilbert_partition") as ag:
        pts, parts = _checked(ag, comm, "hilbert_partition", points, parts)
        ag.same("samples", samples)
    parts = int(parts)
    d = pts.shape[1]
    bits = min(max_bits(d), 52)     # a float64 coordinate resolves no more than 52 bits
    box = np.empty((2, d))
    box[0] = pts.min(axis=0) if len(pts) else np.inf
    box[1] = -(pts.max(axis=0)) if len(pts) else np.inf
    comm.Allreduce(MPI.IN_PLACE, box, op=MPI.MIN)
    lo, hi = box[0], -box[1]
    if not np.isfinite(lo).all():                   # no points anywhere
        return np.zeros(0, np.int64)
    span = np.where(hi > lo, hi - lo, 1.0)
    top = float((1 << bits) - 1)
    cells = np.minimum(np.floor((pts - lo) / span * top), top).astype(np.uint64)
    keys = hilbert_keys(cells, bits)
    splitters = _splitters(comm, np.sort(keys), parts, samples)
    return np.searchsorted(splitters, keys, side="right").astype(np.int64)


# Bins of each histogram round of the bisection, and the rounds: each round
# narrows a part's cut to one bin, so three leave ~N / 256**3 points (or a
# run of equal coordinates) to share out exactly by a prefix sum.
BINS, BISECTIONS = 256, 3


@trims_heap
def rcb_partition(points, comm=None, parts: int | None = None) -> np.ndarray:
    """The part (``0 .. parts-1``, default one per rank) of each of this
    rank's points (``(n, d)``, d = 1..3; e.g. cell centroids) by recursive
    coordinate bisection (collective; Zoltan's RCB): the points are cut by
    a plane across the longest side of their bounding box into two sets
    whose counts are in the ratio of the parts each gets (``parts // 2``
    and the rest), and each set again, ``ceil(log2(parts))`` levels, every
    set of a level at once.

    Never gathers: each level costs one ``Allreduce`` of the sets' boxes
    and counts, ``BISECTIONS`` of ``BINS`` counts per set (a histogram
    along the cut axis, narrowed to the bin holding the cut each round) and
    one ``Exscan`` that shares out the points left in the final bin -- so
    the counts are exact, ties included. Planar cuts give compact parts
    with straight boundaries: a better start for ``refine_partition`` than
    the Hilbert curve's, above all for part counts that are no power of
    two. A rank may hold no points; bad input raises the same ValueError
    on every rank.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> rcb_partition(np.arange(8.0)[:, None], MPI.COMM_SELF, parts=3).tolist()
    [0, 0, 1, 1, 1, 2, 2, 2]
    """
    comm = _comm.resolve(comm)
    with agreement(comm, "rcb_partition") as ag:
        pts, parts = _checked(ag, comm, "rcb_partition", points, parts)
    n, d = pts.shape
    x = pts.copy()                          # the points grouped by set, one run per set
    perm = np.arange(n, dtype=np.int64)     # x[i] is points[perm[i]]
    first = np.zeros(1, np.int64)           # each set's first part, and its part count
    count = np.array([parts], np.int64)
    at = np.zeros(n, np.int64)              # the set of each row of x
    while (count > 1).any():
        G = len(count)
        sizes = np.bincount(at, minlength=G)
        box = np.full((2, G, d), np.inf)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        for g in np.flatnonzero(sizes):
            box[0, g] = x[starts[g]:starts[g + 1]].min(axis=0)
            box[1, g] = -x[starts[g]:starts[g + 1]].max(axis=0)
        comm.Allreduce(MPI.IN_PLACE, box, op=MPI.MIN)
        total = sizes.copy()
        comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
        lo, hi = box[0], -box[1]
        extent = np.where(np.isfinite(lo), hi - lo, 0.0)
        axis = np.argmax(extent, axis=1)                      # the longest side of each set
        lower = count // 2                                    # parts the lower half gets
        want = (total * lower) // np.maximum(count, 1)         # and points
        split = count > 1
        v = x[np.arange(n), axis[at]]
        left = _bisect(comm, v, at, split, want, lo[np.arange(G), axis],
                       hi[np.arange(G), axis], G)
        # the new sets: each split set's lower half, then its upper half
        side = (~left & split[at]).astype(np.int64)
        order = group_order(at * 2 + side, 2 * G)
        x, perm = x[order], perm[order]
        halves = np.where(split, 2, 1)
        new_index = np.cumsum(halves) - halves               # each set's first new set
        at = (new_index[at] + side)[order]
        first = np.repeat(first, halves)
        first[new_index[split] + 1] += lower[split]
        count = np.repeat(count, halves)
        count[new_index[split]] = lower[split]
        count[new_index[split] + 1] -= lower[split]
    label = np.empty(n, np.int64)
    label[perm] = first[at]
    return label


def _bisect(comm, v, at, split, want, lo, hi, G) -> np.ndarray:
    """Whether each point goes to the lower half of its set: exactly
    ``want[g]`` of set g's points (summed over the ranks), those of the
    lowest values ``v`` -- by ``BISECTIONS`` histogram rounds narrowing
    each set to the bin holding its cut, then a prefix sum over the ranks
    sharing out the points still in that bin."""
    n = len(v)
    left = np.zeros(n, bool)
    open_ = split[at].copy()                   # still undecided: in its set's current bin
    below = np.zeros(G, np.int64)              # points of each set already sent lower
    width = np.where(split, hi - lo, 0.0)
    for _ in range(BISECTIONS):
        idx = np.flatnonzero(open_)
        g = at[idx]
        scale = np.where(width > 0, BINS / np.where(width > 0, width, 1.0), 0.0)
        b = np.minimum(((v[idx] - lo[g]) * scale[g]).astype(np.int64), BINS - 1)
        b = np.maximum(b, 0)
        hist = np.bincount(g * BINS + b, minlength=G * BINS).reshape(G, BINS)
        comm.Allreduce(MPI.IN_PLACE, hist, op=MPI.SUM)
        cum = below[:, None] + np.cumsum(hist, axis=1)
        # the bin where the cut falls: the first whose running count reaches it
        j = np.minimum((cum < want[:, None]).sum(axis=1), BINS - 1)
        before = np.where(j > 0, cum[np.arange(G), j - 1], below)
        lower = b < j[g]
        left[idx[lower]] = True
        open_[idx[b != j[g]]] = False
        below = np.where(split, before, below)
        lo = lo + j * width / BINS
        width = width / BINS
    # the points still open: each rank's lowest first, by a prefix sum of counts
    idx = np.flatnonzero(open_)
    g = at[idx]
    mine = np.bincount(g, minlength=G)
    before_me = np.zeros(G, np.int64)
    comm.Exscan(mine, before_me, op=MPI.SUM)
    if comm.rank == 0:
        before_me[:] = 0
    take = np.clip(want - below - before_me, 0, mine)
    order = np.lexsort((v[idx], g))
    rank_in = np.arange(len(order)) - np.searchsorted(g[order], g[order], side="left")
    left[idx[order[rank_in < take[g[order]]]]] = True
    return left


def _checked(ag, comm, what, points, parts) -> tuple:
    """Points as float64 ``(n, d)`` (d = 1..3, the same on every rank,
    finite) and ``parts`` (an int >= 1, default one per rank), checked
    inside the caller's agreement ``ag``."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or not 1 <= pts.shape[1] <= 3:
        raise ValueError(f"{what}: points must have shape (n, d) with d in 1..3, "
                         f"got {pts.shape} on rank {comm.rank}")
    ag.same("the points' dimension", pts.shape[1])
    if pts.size and not np.isfinite(pts).all():
        bad = int(np.flatnonzero(~np.isfinite(pts).all(axis=1))[0])
        raise ValueError(f"{what}: point {bad} on rank {comm.rank} has a "
                         f"non-finite coordinate {pts[bad].tolist()}")
    parts = comm.size if parts is None else parts
    if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise TypeError(f"{what}: parts must be an int >= 1, got {parts!r}")
    ag.same("parts", int(parts))
    return pts, int(parts)


def _splitters(comm, sorted_keys, parts: int, samples: int) -> np.ndarray:
    """``parts - 1`` keys cutting all ranks' keys into runs of equal count:
    each rank offers regularly spaced keys of its sorted ones, each standing
    for the keys up to the next; every rank picks the same splitters from the
    same gathered sample (one small allgather)."""
    n = len(sorted_keys)
    take = min(n, samples)
    at = (np.arange(take) * n) // max(take, 1)
    weight = np.diff(np.append(at, n))
    keys = np.concatenate(comm.allgather(sorted_keys[at]))
    weights = np.concatenate(comm.allgather(weight))
    if not len(keys):
        return np.zeros(parts - 1, np.uint64)
    order = np.argsort(keys, kind="stable")
    keys, cum = keys[order], np.cumsum(weights[order])
    cut = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="left")
    return keys[np.minimum(cut + 1, len(keys) - 1)]
