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
from .hilbert import hilbert_keys, max_bits
from ..agreement import agreement

__all__ = ["hilbert_partition", "SAMPLES"]

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
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or not 1 <= pts.shape[1] <= 3:
            raise ValueError(f"hilbert_partition: points must have shape (n, d) with d in 1..3, "
                             f"got {pts.shape} on rank {comm.rank}")
        ag.same("the points' dimension", pts.shape[1])
        if pts.size and not np.isfinite(pts).all():
            bad = int(np.flatnonzero(~np.isfinite(pts).all(axis=1))[0])
            raise ValueError(f"hilbert_partition: point {bad} on rank {comm.rank} has a "
                             f"non-finite coordinate {pts[bad].tolist()}")
        parts = comm.size if parts is None else parts
        if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
            raise TypeError(f"hilbert_partition: parts must be an int >= 1, got {parts!r}")
        ag.same("parts", int(parts))
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
