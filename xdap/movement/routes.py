"""Per-dimension routes when a map is distributed: this rank's lists only,
found with one exchange (collective).

A redistribution plan is a tensor product of per-dimension lists (see
``xdap.movement.plan``): along dimension k, which positions of source grid
position p go to which positions of target grid position q.  When both maps
are complete (block, cyclic, or unstructured maps every process knows) the
lists are pure functions of the maps (``plan.DimPlan``).  When a map is a
*distributed* unstructured map, no process knows every grid position's
indices; this rank then learns only the lists of its own positions:

* target distributed, source complete: each target position computes the
  source owners of the indices it needs (``Map.owners``) and tells them
  which of their positions it wants -- Tpetra's Import;
* source distributed, target complete: each source position computes the
  target holders of the indices it owns (``Map.holders``) and tells them
  where the values will land;
* both distributed: the target asks the source map's directory
  (``xdap.directory``) for the owners first.

Messages go from one representative of a grid position (the lowest rank at
it) to every rank at the other grid position, as one alltoallv of int64
positions.  A list's order is the one its maker computed it in (not always
increasing): both sides read the same list, which is all the tensor product
of the lists needs.
"""
from __future__ import annotations

import numpy as np

from ..directory import directory_of
from ..heap import trims_heap
from ..transport import group_order, send_lists

__all__ = ["RankDimPlan", "rank_dim_plan"]


class RankDimPlan:
    """This rank's per-dimension lists: ``sends[q]`` (positions of my source
    buffer for target position q) and ``recvs[p]`` (positions of my target
    buffer coming from source position p)."""

    def __init__(self, src_coord, dst_coord, sends: dict, recvs: dict):
        self.src_coord, self.dst_coord = src_coord, dst_coord
        self.sends, self.recvs = sends, recvs

    def send_lists(self, p) -> dict:
        assert p == self.src_coord, "a distributed plan knows this rank's lists only"
        return self.sends

    def recv_lists(self, q) -> dict:
        assert q == self.dst_coord, "a distributed plan knows this rank's lists only"
        return self.recvs


def _grouping(keys, n):
    """``(order, cuts)``: a stable order grouping ``keys`` (ints in
    ``[0, n)``) and where each key's run starts and ends in it -- one
    counting sort, shared by every list grouped by these keys."""
    order = group_order(keys, n)
    cuts = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=cuts[1:])
    return order, cuts


def _split(values, grouping) -> dict:
    """{key: values with that key, in their order} (see ``_grouping``)."""
    order, cuts = grouping
    values = values[order] if values is not None else order
    return {int(k): values[cuts[k]:cuts[k + 1]] for k in np.flatnonzero(np.diff(cuts))}


def _groups(keys, values, n):
    """{key: values with that key, in their order} for keys in ``[0, n)``."""
    return _split(values, _grouping(keys, n))


@trims_heap
def rank_dim_plan(src, dst, dst_ranks, k: int, comm) -> RankDimPlan:
    """This rank's lists along dim ``k`` from ``src`` to ``dst`` (target
    rank i is parent rank ``dst_ranks[i]``) over the parent ``comm``
    (collective; every rank of ``comm`` calls it)."""
    S, T = src.maps[k], dst.maps[k]
    me = comm.rank
    src_at = np.array([src.coords_of(r)[k] for r in range(src.size)], np.int64)
    dst_at = np.full(comm.size, -1, np.int64)          # parent rank -> target position
    for i, r in enumerate(dst_ranks):
        dst_at[r] = dst.coords_of(i)[k]
    p, q = int(src_at[me]), (int(dst_at[me]) if dst_at[me] >= 0 else None)
    src_rep = {int(c): int(np.flatnonzero(src_at == c)[0]) for c in np.unique(src_at)}
    dst_rep = {int(c): int(np.flatnonzero(dst_at == c)[0]) for c in np.unique(dst_at[dst_at >= 0])}

    if S.complete and not T.complete:          # Import: targets ask complete sources
        return _import(S.owners, T, p, q, src_at, dst_rep, comm)
    if not S.complete and T.complete:          # sources tell complete targets
        return _export(S, T, p, q, dst_at, src_rep, comm)
    directory = directory_of(src, k)           # both distributed: ask the directory

    def owners(g):
        return directory.lookup(g)
    if q is None:                              # the lookup is collective: ask for nothing
        directory.lookup(np.zeros(0, np.int64))
        return _import(None, T, p, None, src_at, dst_rep, comm)
    return _import(owners, T, p, q, src_at, dst_rep, comm)


def _import(owners, T, p, q, src_at, dst_rep, comm) -> RankDimPlan:
    """Targets compute their sources (``owners``) and tell them (see module)."""
    recvs, tell = {}, {}
    if q is not None:
        need = T.global_indices(q)
        ranks, local = owners(need)
        grouping = _grouping(ranks, len(src_at))           # one sort for both lists
        recvs = _split(None, grouping)         # the positions themselves: the order
        if dst_rep[q] == comm.rank:            # the representative tells the sources
            tell = _split(local, grouping)
    sends = _notify(comm, {c: v for c, v in tell.items()}, src_at)
    # what arrived came from target representatives: key it by their position
    return RankDimPlan(p, q, {_position_of(r, dst_rep): v for r, v in sends.items()}, recvs)


def _export(S, T, p, q, dst_at, src_rep, comm) -> RankDimPlan:
    """Sources compute the targets holding their indices and tell them."""
    canon, n = S.canonical_positions(p), S.local_size(p)
    whole = isinstance(canon, slice) and (canon.start, canon.stop) == (0, n) and \
        canon.step in (None, 1)
    pos = None if whole else np.arange(n, dtype=np.int64)[canon]    # None: every position
    ids = S.global_indices(p) if whole else S.global_indices(p)[pos]
    # Grouped by target position in the source's order: both sides read
    # the same list, so the order only has to agree, not to ascend -- and
    # one counting sort groups both lists.
    which, ranks, local = T.holders(ids)
    if pos is not None or len(which) != n or not np.array_equal(which, np.arange(n)):
        pos = (np.arange(n, dtype=np.int64) if pos is None else pos)[which]
    grouping = _grouping(ranks, T.grid_size)
    sends = _split(pos, grouping)
    tell = _split(local, grouping) if src_rep[p] == comm.rank else {}
    recvs = _notify(comm, tell, dst_at)
    return RankDimPlan(p, q, sends, {_position_of(r, src_rep): v for r, v in recvs.items()})


def _notify(comm, lists: dict, at: np.ndarray) -> dict:
    """Send ``lists[c]`` (int64) to every rank whose position in ``at`` is
    c; returns ``{sender rank: list}`` of what this rank received."""
    return send_lists(comm, {int(r): v for c, v in lists.items() for r in np.flatnonzero(at == c)})


def _position_of(rank: int, reps: dict) -> int:
    return next(c for c, r in reps.items() if r == rank)
