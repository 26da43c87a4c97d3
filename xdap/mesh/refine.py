"""Refining a partition in parallel across its boundaries, never gathering.

``refine_partition`` takes a partition of the dual graph -- typically the
Hilbert one, compact but with jagged boundaries -- and moves boundary cells
to the neighbouring part where more of their neighbours are, under a
balance constraint: distributed label propagation, the refinement ParMETIS
and KaHIP run on each level. Each round:

1. every rank learns its cells' neighbours' current parts (one exchange,
   through a ``Scatter`` planned once);
2. a boundary cell's gain for part ``q`` is its neighbours in ``q`` minus
   its neighbours in its own part; it proposes its best part when the gain
   is positive, or zero and ``q`` is smaller than its own part (a move
   that costs nothing and evens the sizes: without these, greedy
   propagation stalls on plateaus -- KaHIP's label propagation breaks such
   ties too). To keep two neighbours from trading places in the same
   round, even rounds move cells only to higher-numbered parts, odd rounds
   only to lower ones;
3. the ranks sum their part sizes, their proposals per target part and the
   gain of the moves they last took (one ``Allreduce`` of 2P + 1 numbers);
   where a part would grow past ``imbalance * N / parts`` each rank takes
   its share of the room, best gains first.

Rounds run until two in a row gained nothing (or ``rounds``): on the
966,885-tet box from recursive bisection that is 4 rounds for 2 parts, 18
for 4, 25 for 8, 33 for 16.

Memory O(local cells + local edges + P) per rank; nothing is gathered.

>>> import numpy as np
>>> from mpi4py import MPI
>>> offsets = np.array([0, 1, 3, 5, 6])     # a path 0 - 1 - 2 - 3, cut three times
>>> nbrs = np.array([1, 0, 2, 1, 3, 2])
>>> refine_partition(offsets, nbrs, np.arange(4), np.array([0, 1, 0, 1]), MPI.COMM_SELF,
...                  parts=2, imbalance=1.5).tolist()                    # cut once
[0, 1, 1, 1]
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .. import arguments
from .. import comm as _comm
from ..agreement import agreed_on
from ..contract import collective
from ..heap import trims_heap
from .cuts import neighbour_fetch

__all__ = ["refine_partition", "ROUNDS"]

# Rounds of label propagation at most (each: one exchange of neighbour parts
# and one Allreduce of 2P + 1 numbers), a cap against oscillation: on the
# 966,885-tet box the rounds stop gaining after 4 (2 parts) to 33 (16 parts),
# and the cut after 24 rounds is within 0.1% of the final one.
ROUNDS = 64


def _ints(what, a) -> np.ndarray:
    """An integer array argument as int64, refused if it holds anything
    else (a float would be truncated)."""
    a = np.asarray(a)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"refine_partition: {what} must hold integers, got {a.dtype}")
    if a.size and a.dtype.kind == "u" and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"refine_partition: {what} holds {int(a.max())}, beyond int64")
    return a.astype(np.int64)


@trims_heap
@collective(own=("offsets", "neighbours", "cell_ids", "parts_of"))
def refine_partition(offsets, neighbours, cell_ids, parts_of, comm=None, *,
                     parts: int | None = None, imbalance: float = 1.03,
                     rounds: int = ROUNDS) -> np.ndarray:
    """A refined part for each of this rank's cells (collective; see the
    module docstring). The graph as ``dual_graph`` gives it: this rank's
    cells ``cell_ids`` (global ids, each cell on one rank) and their
    neighbours ``neighbours[offsets[i]:offsets[i + 1]]``; ``parts_of``: the
    current part of each (``0 .. parts - 1``, default one per rank). The
    result moves no cell that would push a part past ``imbalance`` times the
    mean part size (a part already above it only shrinks), and never raises
    the edge cut: every move is a positive gain, up to the moves of a
    neighbour in the same round."""
    comm = _comm.resolve(comm)
    offsets = _ints("offsets", offsets)
    nbrs = _ints("neighbours", neighbours)
    ids = _ints("cell_ids", cell_ids)
    label = _ints("parts_of", parts_of).copy()          # a copy: refined in place
    n = len(ids)
    parts = comm.size if parts is None else \
        arguments.integer("refine_partition", "parts", parts, low=1, high=arguments.INDEX_MAX)
    imbalance = arguments.real("refine_partition", "imbalance", imbalance, low=1.0)
    rounds = arguments.integer("refine_partition", "rounds", rounds, low=0)
    if offsets.shape != (n + 1,) or label.shape != (n,) or (n and (
            offsets[0] != 0 or offsets[-1] != len(nbrs) or (np.diff(offsets) < 0).any())):
        raise ValueError(f"refine_partition: need offsets rising from 0 to "
                         f"len(neighbours) with one entry per cell + 1, and one part per "
                         f"cell ({n} cells on rank {comm.rank})")
    if n and (label.min() < 0 or label.max() >= parts):
        raise ValueError(f"refine_partition: part {int(label[(label < 0) | (label >= parts)][0])}"
                         f" out of range [0, {parts}) on rank {comm.rank}")
    # the graph is each rank's own: its checks are in the vote, its values not compared
    yield dict(comm=comm, parts=parts, imbalance=imbalance, rounds=rounds)
    parts = int(parts)
    # the plan fetching the neighbours' parts is made once, reading label in
    # place (neighbour_fetch checks the ids and the neighbours)
    bind, cells = neighbour_fetch(nbrs, ids, comm, "refine_partition")
    if parts > max(cells, 1):       # decided from the agreed cell count: alike everywhere
        raise agreed_on(comm, ValueError(
            f"refine_partition: parts={parts} for {cells} cells (at most one part a cell)"))
    if parts == 1:                  # one part: no boundary to move
        return label
    fetch = bind(label)
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    # (no part holds more than every cell: a huge imbalance means no limit, not an overflow)
    room_for = int(np.floor(min(imbalance, float(parts)) * cells / parts))
    sizes = np.bincount(label, minlength=parts)
    comm.Allreduce(MPI.IN_PLACE, sizes, op=MPI.SUM)
    quiet, gained = 0, 0
    for r in range(rounds):
        nl = fetch()                                   # each edge's far part
        cell, to, gain = _propose(label, src, nl, parts, r % 2 == 0, sizes)
        proposed = np.bincount(to, minlength=parts)
        both = np.concatenate([np.bincount(label, minlength=parts), proposed, [gained]])
        comm.Allreduce(MPI.IN_PLACE, both, op=MPI.SUM)
        sizes, total = both[:parts], both[parts:2 * parts]
        # the last round's moves gained nothing (or none was proposed), twice: done
        quiet = quiet + 1 if (r and both[-1] == 0) or not total.any() else 0
        if quiet == 2:
            break
        room = np.maximum(room_for - sizes, 0)
        # my share of each part's room, best gains first
        mine = np.where(total <= room, proposed,
                        (room * proposed) // np.maximum(total, 1))
        order = np.lexsort((-gain, to))
        rank_in = np.arange(len(order)) - np.searchsorted(to[order], to[order], side="left")
        take = order[rank_in < mine[to[order]]]
        label[cell[take]] = to[take]
        gained = int(gain[take].sum())
    return label


def _propose(label, src, far, parts, upward, sizes):
    """The moves this rank's cells propose: ``(cell, target part, gain)`` of
    every cell with a positive gain, or a zero gain into a part smaller
    than its own (``sizes``: the parts' sizes at the round's start), to its
    best part in the round's direction."""
    own = label[src]
    cross = far != own
    if not cross.any():
        return (np.zeros(0, np.int64),) * 3
    edge_of_boundary = np.zeros(len(label), bool)
    edge_of_boundary[src[cross]] = True
    e = edge_of_boundary[src]
    s, f = src[e], far[e]
    key, count = np.unique(s * parts + f, return_counts=True)
    cell, part = key // parts, key % parts
    home = part == label[cell]
    in_own = np.zeros(len(label), np.int64)
    in_own[cell[home]] = count[home]
    ok = ~home & ((part > label[cell]) if upward else (part < label[cell]))
    cell, part, count = cell[ok], part[ok], count[ok]
    gain = count - in_own[cell]
    good = (gain > 0) | ((gain == 0) & (sizes[part] < sizes[label[cell]] - 1))
    cell, part, gain = cell[good], part[good], gain[good]
    # the best part of each cell: highest gain (lowest part on ties)
    order = np.lexsort((part, -gain, cell))
    first = np.ones(len(order), bool)
    first[1:] = cell[order][1:] != cell[order][:-1]
    best = order[first]
    return cell[best], part[best], gain[best]
