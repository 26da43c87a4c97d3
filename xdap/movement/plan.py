"""Redistribution plans: who sends which elements to whom (pure numpy, no MPI).

A redistribution moves an array from a *source* Distribution to a *target*
Distribution of the same global shape.  The data moves in the source's
communicator (the *parent*); the target may live on a subset of it, with
another grid shape, given by each target rank's parent rank.  Plans read
only the maps and the rank placement, so they are built from ``detached``
Distributions just as well (the one-rank tests do).

Rule of the plan: every element of the global array has exactly ONE source
rank, its canonical owner (``Map.owners``: communication padding is never a
source, an index shared by several ranks of a ``one_to_one=False``
unstructured map comes from the lowest holder).  Every position of every
target buffer receives its element from that owner -- including target
communication padding and every copy of a shared unstructured index, so the
result is complete and consistent without a halo exchange (this is cheap:
the plan is per dimension, padding adds a few rows to a slab).

The plan is computed per dimension (:class:`DimPlan`): for each pair of
source grid coordinate ``p`` and target grid coordinate ``q`` along one
dimension, the positions in ``p``'s buffer that go to the positions in
``q``'s buffer.  A rank pair moves the tensor product of its per-dimension
lists, so block and cyclic layouts stay cheap (O(sum of dimension lengths),
not O(elements)).  A per-dimension list that is an arithmetic progression is
given as a ``slice`` (a rectangular slab when every dimension is a
step-1 slice).

>>> from xdap.distribution import Distribution
>>> from xdap.maps import BlockMap, CyclicMap
>>> src = Distribution.detached((BlockMap(6, 2), BlockMap(4, 1)))   # rows in 2 blocks
>>> dst = Distribution.detached((BlockMap(6, 1), CyclicMap(4, 2)))  # columns cyclic
>>> plan = redistribution_plan(src, dst)
>>> [(t.peer, t.index) for t in plan.sends(1)]
[(0, (slice(0, 3, 1), slice(0, 3, 2))), (1, (slice(0, 3, 1), slice(1, 4, 2)))]
>>> [(t.peer, t.index) for t in plan.recvs(1)]
[(0, (slice(0, 3, 1), slice(0, 2, 1))), (1, (slice(3, 6, 1), slice(0, 2, 1)))]
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import plans
from ..maps import Map
from ..transport import Transfer, compress, index_len, positions as as_positions, runs

__all__ = ["DimPlan", "Transfer", "RedistributionPlan", "redistribution_plan", "plan_ranks",
           "compress", "runs", "as_positions", "index_len"]

_I64 = np.int64


# --------------------------------------------------------------------------
# index lists
# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# the per-dimension plan
# --------------------------------------------------------------------------

class DimPlan:
    """One dimension: for source grid coordinate ``p`` and target grid
    coordinate ``q``, ``pairs[p][q] = (send, recv)`` -- positions in ``p``'s
    buffer and, in the same order, the positions in ``q``'s buffer they go
    to.  Only non-empty pairs are stored; lists are compressed (slices where
    possible).  Order: increasing target position.
    """

    def __init__(self, src: Map, dst: Map):
        if src.size != dst.size:
            raise ValueError(f"dimension sizes differ: source {src.size}, target {dst.size}")
        self.src_grid, self.dst_grid = src.grid_size, dst.grid_size
        self.pairs: list[dict] = [dict() for _ in range(src.grid_size)]
        if src.ranges and dst.ranges and not src.shared_owned:
            self._between_ranges(src, dst)
            return
        for q in range(dst.grid_size):
            g = dst.global_indices(q)
            if g.size == 0:
                continue
            ranks, local = src.owners(g)
            if src.grid_size == 1:
                self.pairs[0][q] = (compress(local), slice(0, g.size, 1))
                continue
            order = np.argsort(ranks, kind="stable")
            counts = np.bincount(ranks, minlength=src.grid_size)
            cuts = np.concatenate([[0], np.cumsum(counts)])
            for p in np.flatnonzero(counts):
                sel = order[cuts[p]:cuts[p + 1]]
                self.pairs[int(p)][q] = (compress(local[sel]), compress(sel.astype(_I64)))

    def _between_ranges(self, src: Map, dst: Map) -> None:
        """Blocks to blocks (padded or not): each target buffer's range
        meets a few owned source ranges -- slices from the bounds alone,
        O(P) a dim instead of a lookup per index (10^7 indices: 0.5 s)."""
        owned = [src.owned_range(p) for p in range(self.src_grid)]
        first = [src.buffer_range(p)[0] for p in range(self.src_grid)]
        starts = np.array([lo for lo, _ in owned], _I64)
        for q in range(self.dst_grid):
            qs, qe = dst.buffer_range(q)
            if qe <= qs:
                continue
            p = max(int(np.searchsorted(starts, qs, side="right")) - 1, 0)
            while p < self.src_grid and owned[p][0] < qe:
                a, b = max(qs, owned[p][0]), min(qe, owned[p][1])
                if a < b:
                    self.pairs[p][q] = (slice(a - first[p], b - first[p], 1),
                                        slice(a - qs, b - qs, 1))
                p += 1

    def send_lists(self, p) -> dict:
        """``{q: positions of p's buffer}`` for every target coordinate q."""
        return {q: s for q, (s, _) in self.pairs[p].items()}

    def recv_lists(self, q) -> dict:
        """``{p: positions of q's buffer}`` for every source coordinate p."""
        return {p: pr[q][1] for p, pr in enumerate(self.pairs) if q in pr}


# --------------------------------------------------------------------------
# the whole plan
# --------------------------------------------------------------------------

class RedistributionPlan:
    """Who sends what to whom, for every rank of the parent communicator.

    ``src`` and ``dst`` are Distributions (attached or ``detached``); the
    source's ranks are the parent communicator's, ``dst_ranks[i]`` is the
    parent rank of the target's rank ``i`` (default: the same numbers -- the
    target may live on a subset of the parent, in any order).

    ``sends(r)`` / ``recvs(r)``: the Transfers of parent rank ``r`` sorted by
    peer (empty when ``r`` is not in the source / target).  Built without
    moving data; reusable for any array of the source distribution and any
    dtype.
    """

    def __init__(self, src, dst, dst_ranks=None, dims=None):
        if src.global_shape != dst.global_shape:
            raise ValueError(f"redistribution needs the same global shape: source "
                             f"{src.global_shape}, target {dst.global_shape}")
        self.src, self.dst = src, dst
        # ``dims`` given: this rank's lists of distributed maps (routes.py);
        # the plan then answers for this rank only.
        self.local_only = dims is not None
        ranks = np.arange(dst.size, dtype=_I64) if dst_ranks is None else \
            np.asarray(dst_ranks, dtype=_I64).reshape(-1)
        if len(ranks) != dst.size or len(np.unique(ranks)) != dst.size or (ranks < 0).any():
            raise ValueError(f"plan: the target's {dst.size} ranks need distinct parent "
                             f"ranks >= 0, got {ranks.tolist()}")
        ranks.flags.writeable = False
        self.dst_ranks = ranks
        self._dst_index = {int(r): i for i, r in enumerate(ranks)}
        self.dims = tuple(dims) if dims is not None else \
            tuple(DimPlan(a, b) for a, b in zip(src.maps, dst.maps))
        self._sends: dict = {}
        self._recvs: dict = {}

    @property
    def nparent(self) -> int:
        """Smallest parent communicator size that holds both distributions."""
        return max(self.src.size, int(self.dst_ranks.max()) + 1)

    def dst_index(self, rank: int) -> int | None:
        """The target rank of a parent rank (None: not in the target)."""
        return self._dst_index.get(int(rank))

    def src_shape(self, rank: int):
        """The source buffer shape of a parent rank (None outside the source)."""
        return self.src.local_shape_of(rank) if rank < self.src.size else None

    def dst_shape(self, rank: int):
        """The target buffer shape of a parent rank (None outside the target)."""
        i = self.dst_index(rank)
        return None if i is None else self.dst.local_shape_of(i)

    def sends(self, rank: int) -> list[Transfer]:
        if rank not in self._sends:
            self._sends[rank] = self._transfers(rank, sending=True)
        return self._sends[rank]

    def recvs(self, rank: int) -> list[Transfer]:
        if rank not in self._recvs:
            self._recvs[rank] = self._transfers(rank, sending=False)
        return self._recvs[rank]

    def _transfers(self, rank: int, sending: bool) -> list[Transfer]:
        if sending:
            if rank >= self.src.size:
                return []
            mine = self.src.coords_of(rank)
        else:
            i = self.dst_index(rank)
            if i is None:
                return []
            mine = self.dst.coords_of(i)
        # per dimension: partner coordinates with a non-empty list
        options = []
        for d, c in zip(self.dims, mine):
            opts = list((d.send_lists(c) if sending else d.recv_lists(c)).items())
            if not opts:
                return []
            options.append(opts)
        out = []
        for combo in itertools.product(*options):
            coords = tuple(c for c, _ in combo)
            peer = int(self.dst_ranks[self.dst.rank_of(coords)]) if sending \
                else self.src.rank_of(coords)
            out.append(Transfer(peer, tuple(ix for _, ix in combo)))
        out.sort(key=lambda t: t.peer)
        return out

    def volume(self) -> int:
        """Elements moved in total (every rank's receives)."""
        return sum(t.size for r in self.dst_ranks for t in self.recvs(int(r)))


def plan_ranks(dst, dst_ranks) -> tuple | None:
    """The target's parent ranks as a cache key: None for the identity."""
    if dst_ranks is None:
        return None
    ranks = tuple(int(r) for r in dst_ranks)
    return None if ranks == tuple(range(dst.size)) else ranks


def redistribution_plan(src, dst, dst_ranks=None, comm=None) -> RedistributionPlan:
    """The plan from ``src`` to ``dst`` (see ``RedistributionPlan``), cached
    under both distributions' fingerprints and the target's parent ranks.

    When every map is complete the plan is pure and kept in the plan cache
    (``xdap.plans.pure``).  When a map is a distributed unstructured map,
    this rank's lists are found collectively over the parent ``comm``
    (``xdap.movement.routes``) and kept on that communicator, whose ranks
    all make the same calls -- so a cache miss, and its collective, happens
    on every rank alike."""
    ranks = plan_ranks(dst, dst_ranks)
    key = plans.Key("redistribute", (src.fingerprint(), dst.fingerprint(), ranks))
    if all(m.complete for m in src.maps + dst.maps):
        return plans.pure.get_or_make(key, lambda: RedistributionPlan(src, dst, ranks))
    if comm is None:
        raise ValueError("a plan with a distributed unstructured map is found collectively: "
                         "pass the parent communicator")
    from .routes import rank_dim_plan
    parents = tuple(range(dst.size)) if ranks is None else ranks

    def make():
        dims = [DimPlan(a, b) if a.complete and b.complete else
                rank_dim_plan(src, dst, parents, k, comm)
                for k, (a, b) in enumerate(zip(src.maps, dst.maps))]
        return RedistributionPlan(src, dst, ranks, dims)
    return plans.on(comm).get_or_make(key, make)
