"""Redistribution plans: who sends which elements to whom (pure numpy, no MPI).

A redistribution moves an array from a *source* layout to a *target* layout
of the same global shape.  A :class:`Layout` is a Distribution without its
communicator: one map per dimension, the grid coordinates of every rank, and
each rank's number in a common *parent* communicator (the one the data moves
in; the target may live on a subset of it, with another grid shape).

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

>>> from xdap.maps import BlockMap, CyclicMap
>>> src = Layout((BlockMap(6, 2), BlockMap(4, 1)))              # rows in 2 blocks
>>> dst = Layout((BlockMap(6, 1), CyclicMap(4, 2)))             # columns cyclic
>>> plan = redistribution_plan(src, dst)
>>> [(t.peer, t.index) for t in plan.sends(1)]
[(0, (slice(0, 3, 1), slice(0, 3, 2))), (1, (slice(0, 3, 1), slice(1, 4, 2)))]
>>> [(t.peer, t.index) for t in plan.recvs(1)]
[(0, (slice(0, 3, 1), slice(0, 2, 1))), (1, (slice(3, 6, 1), slice(0, 2, 1)))]
"""
from __future__ import annotations

import hashlib
import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..distribution import MapShapes
from ..maps import Map, UnstructuredMap

__all__ = ["Layout", "layout_of", "DimPlan", "Transfer", "RedistributionPlan",
           "redistribution_plan", "compress", "runs", "clear_plan_cache"]

_I64 = np.int64


# --------------------------------------------------------------------------
# index lists
# --------------------------------------------------------------------------

def compress(pos: np.ndarray):
    """An int64 position list as a ``slice`` when it is an increasing
    arithmetic progression (step >= 1), else the array itself.

    >>> compress(np.array([2, 4, 6])), compress(np.array([5]))
    (slice(2, 7, 2), slice(5, 6, 1))
    >>> compress(np.array([0, 1, 3]))
    array([0, 1, 3])
    """
    n = len(pos)
    if n == 0:
        return slice(0, 0, 1)
    first = int(pos[0])
    if n == 1:
        return slice(first, first + 1, 1)
    step = int(pos[1]) - first
    if step >= 1 and int(pos[-1]) == first + step * (n - 1):
        d = np.diff(pos)
        if (d == step).all():
            return slice(first, int(pos[-1]) + 1, step)
    return pos


def as_positions(index) -> np.ndarray:
    """A compressed index (slice or array) back to an int64 array."""
    if isinstance(index, slice):
        return np.arange(index.start, index.stop, index.step, dtype=_I64)
    return np.asarray(index, dtype=_I64)


def index_len(index) -> int:
    if isinstance(index, slice):
        return len(range(index.start, index.stop, index.step))
    return len(index)


def runs(index) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of consecutive positions: ``(starts, lengths)``.

    >>> [a.tolist() for a in runs(np.array([0, 1, 2, 7, 8, 4]))]
    [[0, 7, 4], [3, 2, 1]]
    >>> [a.tolist() for a in runs(slice(1, 9, 4))]
    [[1, 5], [1, 1]]
    """
    if isinstance(index, slice) and index.step == 1:
        n = index.stop - index.start
        if n <= 0:
            return np.zeros(0, _I64), np.zeros(0, _I64)
        return np.array([index.start], _I64), np.array([n], _I64)
    pos = as_positions(index)
    if pos.size == 0:
        return np.zeros(0, _I64), np.zeros(0, _I64)
    breaks = np.flatnonzero(np.diff(pos) != 1) + 1
    starts_at = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts_at, [pos.size]]))
    return pos[starts_at], lengths.astype(_I64)


# --------------------------------------------------------------------------
# layouts
# --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Layout(MapShapes):
    """Where an array lives, without a communicator.

    maps    one Map per dimension; the grid is their grid sizes
    coords  (nranks, ndim) grid coordinates of each rank of the layout's own
            communicator (default: C order over the grid)
    ranks   (nranks,) each rank's number in the parent communicator
            (default: the same numbers, 0..nranks-1)
    """
    maps: tuple
    coords: np.ndarray | None = None
    ranks: np.ndarray | None = None
    _fp: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        maps = tuple(self.maps)
        if not maps or not all(isinstance(m, Map) for m in maps):
            raise TypeError(f"a layout needs one xdap.maps.Map per dimension, got {maps!r}")
        object.__setattr__(self, "maps", maps)
        grid = self.grid
        n = math.prod(grid)
        if self.coords is None:
            coords = np.array(np.unravel_index(np.arange(n), grid), dtype=_I64).T.reshape(n, -1)
        else:
            coords = np.asarray(self.coords, dtype=_I64).reshape(-1, len(maps))
        if len(coords) != n:
            raise ValueError(f"layout: {len(coords)} rank coordinates for a grid of {n} positions")
        ranks = np.arange(n, dtype=_I64) if self.ranks is None else \
            np.asarray(self.ranks, dtype=_I64).reshape(-1)
        if len(ranks) != n:
            raise ValueError(f"layout: {len(ranks)} parent ranks for a grid of {n} positions")
        if len(np.unique(ranks)) != n or (ranks < 0).any():
            raise ValueError(f"layout: parent ranks must be distinct and >= 0, got {ranks.tolist()}")
        at = np.full(grid, -1, dtype=_I64)
        at[tuple(coords.T)] = np.arange(n)
        if (at < 0).any():
            raise ValueError("layout: rank coordinates do not cover the grid once each")
        for a in (coords, ranks, at):
            a.flags.writeable = False
        object.__setattr__(self, "coords", coords)
        object.__setattr__(self, "ranks", ranks)
        object.__setattr__(self, "_at", at)
        object.__setattr__(self, "_index_of", {int(r): i for i, r in enumerate(ranks)})

    @property
    def grid(self) -> tuple:
        return tuple(m.grid_size for m in self.maps)

    def index_of(self, parent_rank: int) -> int | None:
        """Position of a parent rank in this layout (None: not a member)."""
        return self._index_of.get(int(parent_rank))

    def local_shape(self, i: int) -> tuple:
        """Buffer shape of the layout's i-th rank."""
        return tuple(m.local_size(int(c)) for m, c in zip(self.maps, self.coords[i]))

    def fingerprint(self) -> bytes:
        """A digest of everything that defines the layout (cache key)."""
        if not self._fp:
            h = hashlib.sha1()
            for m in self.maps:
                h.update(repr((type(m).__name__, m._key())).encode())
                if isinstance(m, UnstructuredMap):      # its _key leaves the indices out
                    for a in m.indices:
                        h.update(len(a).to_bytes(8, "little"))
                        h.update(np.ascontiguousarray(a).tobytes())
            h.update(self.coords.tobytes())
            h.update(self.ranks.tobytes())
            self._fp.append(h.digest())
        return self._fp[0]


def layout_of(distribution, parent_ranks=None) -> Layout:
    """The Layout of an ``xdap.Distribution`` (ranks renumbered into a parent
    communicator by ``parent_ranks[i]`` for the distribution's rank ``i``)."""
    return Layout(distribution.maps, distribution.rank_coords, parent_ranks)


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

    def targets_of(self, p: int) -> list:
        return list(self.pairs[p].keys())


# --------------------------------------------------------------------------
# the whole plan
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Transfer:
    """One message: ``peer`` is the partner's parent rank; ``index`` one
    compressed position list (slice or int64 array) per dimension, in the
    local buffer of the rank the transfer belongs to (the sender's buffer for
    a send, the receiver's for a receive).  The elements are the tensor
    product of the lists, in C order -- the same order on both sides."""
    peer: int
    index: tuple

    @property
    def shape(self) -> tuple:
        return tuple(index_len(i) for i in self.index)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def rectangular(self) -> bool:
        """Every dimension a step-1 slice: a slab (one MPI subarray)."""
        return all(isinstance(i, slice) and i.step == 1 for i in self.index)


class RedistributionPlan:
    """Who sends what to whom, for every rank of the parent communicator.

    ``sends(r)`` / ``recvs(r)``: the Transfers of parent rank ``r`` sorted by
    peer (empty when ``r`` is not in the source / target layout).  Built
    without moving data; reusable for any array of the source layout and
    any dtype.
    """

    def __init__(self, src: Layout, dst: Layout):
        if src.global_shape != dst.global_shape:
            raise ValueError(f"redistribution needs the same global shape: source "
                             f"{src.global_shape}, target {dst.global_shape}")
        self.src, self.dst = src, dst
        self.dims = tuple(DimPlan(a, b) for a, b in zip(src.maps, dst.maps))
        self._sends: dict = {}
        self._recvs: dict = {}

    @property
    def nparent(self) -> int:
        """Smallest parent communicator size that holds both layouts."""
        return int(max(self.src.ranks.max(), self.dst.ranks.max())) + 1

    def sends(self, rank: int) -> list[Transfer]:
        if rank not in self._sends:
            self._sends[rank] = self._transfers(rank, sending=True)
        return self._sends[rank]

    def recvs(self, rank: int) -> list[Transfer]:
        if rank not in self._recvs:
            self._recvs[rank] = self._transfers(rank, sending=False)
        return self._recvs[rank]

    def _transfers(self, rank: int, sending: bool) -> list[Transfer]:
        me_layout, other = (self.src, self.dst) if sending else (self.dst, self.src)
        i = me_layout.index_of(rank)
        if i is None:
            return []
        mine = me_layout.coords[i]
        # per dimension: partner coordinates with a non-empty list
        options = []
        for d, c in zip(self.dims, mine):
            c = int(c)
            if sending:
                opts = [(q, s) for q, (s, _) in d.pairs[c].items()]
            else:
                opts = [(p, pr[c][1]) for p, pr in enumerate(d.pairs) if c in pr]
            if not opts:
                return []
            options.append(opts)
        out = []
        for combo in itertools.product(*options):
            coords = tuple(c for c, _ in combo)
            peer = int(other.ranks[other._at[coords]])
            out.append(Transfer(peer, tuple(ix for _, ix in combo)))
        out.sort(key=lambda t: t.peer)
        return out

    def volume(self) -> int:
        """Elements moved in total (every rank's receives)."""
        return sum(t.size for r in self.dst.ranks for t in self.recvs(int(r)))


# --------------------------------------------------------------------------
# the cache
# --------------------------------------------------------------------------

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 32


def redistribution_plan(src: Layout, dst: Layout) -> RedistributionPlan:
    """The plan from ``src`` to ``dst``, cached on both layouts' fingerprints
    (the last 32 plans are kept; a hit returns the same object)."""
    key = (src.fingerprint(), dst.fingerprint())
    plan = _CACHE.get(key)
    if plan is None:
        plan = RedistributionPlan(src, dst)
        _CACHE[key] = plan
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return plan


def clear_plan_cache() -> None:
    _CACHE.clear()
