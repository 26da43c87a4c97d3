"""Unstructured (``'u'``): an explicit list of global indices per grid rank.

``UnstructuredMap`` is the *complete* form -- every process knows every
grid rank's indices (O(size) memory) and answers owner lookups itself.
``DistributedUnstructuredMap`` (``xdap.maps.distributed``) is the form a
process knows only its own part of; both answer one interface.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from .base import (MAP_KINDS, Map, Tiles, as_int64, check_range, common_flag, dap_minor,
                   int_arg, is_bool, _I64)
from .block import BlockMap

__all__ = ["UnstructuredMap", "index_digest", "unstructured_fingerprint"]


class UnstructuredMap(Map):
    """Explicit global indices per grid rank (``indices[p]`` in buffer order).

    Indices may be given Python-style negative (``-size <= i < size``); they
    are normalised to ``[0, size)``.  Each rank's indices must be unique, and
    together they must cover ``[0, size)``: exactly once if ``one_to_one``.
    With duplicates, :meth:`owners` reports the lowest grid rank holding the
    index.

    >>> m = UnstructuredMap(5, [[3, 0], [4, 2, 1]], one_to_one=True)
    >>> m.owners([1, 3])
    (array([1, 0]), array([2, 0]))
    >>> m.local_from_global(1, [2, 4])
    array([1, 0])
    >>> UnstructuredMap(3, [[0, 1], [-2, 2]]).owners([1, 2])   # 1 is on both
    (array([0, 1]), array([1, 1]))

    A map built this way is *complete*: every process knows every grid
    rank's indices (O(size) memory).  ``DistributedUnstructuredMap`` is the
    form in which a process knows only the indices of its own grid
    coordinate(s) plus every rank's count; it answers the same interface
    where the others' indices are not needed, and its owner lookups go
    through the distributed directory (``xdap.directory``).
    """

    dist_type = "u"
    name = "unstructured"
    complete = True
    stored_indices = True
    ghosts_by_index = True

    @classmethod
    def resized_from_json(cls, d: dict, grid_size: int) -> "Map":
        """Balanced blocks: a saved unstructured dimension loaded onto
        another number of ranks (its JSON form holds no indices)."""
        return BlockMap(d["size"], grid_size)

    @classmethod
    def from_spec(cls, size: int, grid_size: int, indices=None,
                  where: str = "") -> "UnstructuredMap":
        """A ``'u'`` dimension: ``indices``, one array of global indices per
        grid rank (the map is one-to-one when they hold every index once)."""
        if indices is None:
            raise ValueError(f"dimension{where} is 'u' (unstructured): give indices{where}, "
                             "a list of global index arrays, one per grid rank")
        idx = []
        for q, a in enumerate(indices):
            a = np.asarray(a)
            if a.size and a.dtype.kind not in "iu":
                raise TypeError(f"indices{where}[{q}] must hold integer indices, got dtype "
                                f"{a.dtype}")
            idx.append(a.astype(np.int64).reshape(-1))
        if len(idx) != grid_size:
            raise ValueError(f"indices{where} has {len(idx)} arrays but grid{where} is "
                             f"{grid_size}")
        flat = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        one_to_one = len(flat) == size and len(np.unique(flat)) == size
        return cls(size, idx, one_to_one=one_to_one)

    def __init__(self, size: int, indices, one_to_one: bool = False):
        size = int_arg("unstructured dimension: size", size, 0)
        if not is_bool(one_to_one):
            raise TypeError(f"unstructured dimension: one_to_one must be a bool, "
                            f"got {one_to_one!r}")
        if isinstance(indices, np.ndarray) or len(indices) < 1:
            raise ValueError("unstructured dimension: indices must be a list with one "
                             "index array per grid rank (at least one)")
        self.size, self.grid_size, self.one_to_one = size, len(indices), bool(one_to_one)

        arrays = []
        for p, idx in enumerate(indices):
            a = np.asarray(idx)
            if a.ndim != 1:
                raise ValueError(f"unstructured dimension: indices of grid rank {p} must be "
                                 f"1-d, got shape {a.shape}")
            a = np.array(as_int64(a, f"unstructured dimension: indices of grid rank {p}"),
                         dtype=_I64, copy=True)
            # negative = counted from the end, as Python indexing
            a[a < 0] += size
            check_range(a, size, "unstructured dimension: index",
                         f" (size {size}, Python-style negatives allowed) on grid rank {p}")
            a.flags.writeable = False
            arrays.append(a)
        self.indices = tuple(arrays)

        # Dense inverse tables: owners() becomes two gathers.  Filled from the
        # highest rank down so the lowest holder wins for duplicates; the
        # same pass detects local duplicates (a repeated index in one array
        # leaves a position that does not read back) and coverage gaps.
        rank_of = np.full(size, -1, dtype=_I64)
        local_of = np.zeros(size, dtype=_I64)
        for p in reversed(range(self.grid_size)):
            a = arrays[p]
            pos = np.arange(len(a), dtype=_I64)
            local_of[a] = pos
            back = local_of[a] != pos
            if back.any():
                bad = int(a[np.flatnonzero(back)[0]])
                raise ValueError(f"unstructured dimension: indices of grid rank {p} must be "
                                 f"locally unique, but global index {bad} repeats")
            rank_of[a] = p
        missing = np.flatnonzero(rank_of < 0)
        if missing.size:
            raise ValueError(f"unstructured dimension: coverage: global index {int(missing[0])} "
                             f"is not held by any grid rank")
        total = sum(len(a) for a in arrays)
        if self.one_to_one and total != size:
            counts = np.bincount(np.concatenate(arrays), minlength=size)
            dup = int(np.flatnonzero(counts > 1)[0])
            holders = [p for p, a in enumerate(arrays) if (a == dup).any()]
            raise ValueError(
                f"unstructured dimension: one_to_one is True but the owned counts sum to "
                f"{total}, not size {size}: global index {dup} is held by grid ranks "
                f"{holders[0]} and {holders[1]}")
        for a in (rank_of, local_of):
            a.flags.writeable = False
        self._rank_of, self._local_of = rank_of, local_of
        self._sorted: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # lazily, per rank
        self._freeze()

    @property
    def known(self) -> tuple:
        """The grid ranks whose indices this process holds."""
        return tuple(range(self.grid_size))

    def local_size(self, p):
        self._check_rank(p)
        return len(self.indices[p])

    owned_count = local_size

    @property
    def has_copies(self) -> bool:
        total = sum(len(a) for a in self.indices)
        return not self.one_to_one and total != self.size

    def global_indices(self, p):
        """Read-only int64 view of rank ``p``'s indices (no copy)."""
        self._check_rank(p)
        return self.indices[p]

    def canonical_positions(self, p):
        if self.one_to_one:
            return self.owned_local_slice(p)
        return np.flatnonzero(self.owners(self.global_indices(p))[0] == p)

    def piece_positions(self, ranks, local):
        if self.one_to_one:
            return local
        out = np.empty_like(local)
        for p in range(self.grid_size):
            hit = ranks == p
            if hit.any():
                held = self.canonical_positions(p)
                where = np.full(self.local_size(p), -1, np.int64)
                where[held] = np.arange(len(held))
                out[hit] = where[local[hit]]
        return out

    def owners(self, g):
        g = as_int64(g, "global index")
        check_range(g, self.size, "global index")
        return np.take(self._rank_of, g), np.take(self._local_of, g)

    def local_from_global(self, p, g):
        self._check_rank(p)
        g = as_int64(g, "global index")
        check_range(g, self.size, "global index")
        # Fast path: the owner tables answer every index p owns; only indices
        # p holds as a shared copy (one_to_one False) need the sorted search.
        local = np.take(self._local_of, g)
        miss = np.flatnonzero(np.take(self._rank_of, g) != p)
        if miss.size:
            local[miss] = self._search(p, g[miss])
        return local

    def _search(self, p, g):
        if p not in self._sorted:
            own = self.global_indices(p)
            order = np.argsort(own, kind="stable")
            self._sorted[p] = (own[order], order)
        keys, order = self._sorted[p]
        if keys.size == 0:
            if g.size:
                raise ValueError(f"global index {int(g.flat[0])} is not present on grid rank "
                                 f"{p} (it holds no indices)")
            return np.zeros_like(g)
        pos = np.searchsorted(keys, g)
        np.minimum(pos, keys.size - 1, out=pos)
        hit = keys[pos] == g
        if not hit.all():
            bad = int(g[~hit].flat[0])
            raise ValueError(f"global index {bad} is not present on grid rank {p}")
        return order[pos]

    def _global_from_local(self, p, l):
        return self.global_indices(p)[l]

    def resized(self, grid_size: int) -> BlockMap:
        return BlockMap(self.size, grid_size)

    def to_dim_dict(self, p, version="0.10.0"):
        dap_minor(version)
        self._check_rank(p)
        d = self._common(p)
        d["indices"] = self.global_indices(p)
        d["one_to_one"] = self.one_to_one
        return d

    @classmethod
    def from_dim_dicts(cls, dicts, lengths, size, minor):
        one = common_flag(dicts, "one_to_one", "unstructured")
        arrays = []
        for p, d in enumerate(dicts):
            try:
                a = np.asarray(d["indices"])
            except Exception as exc:  # e.g. a non-buffer object
                raise TypeError(f"unstructured dimension: indices of grid rank {p} must be an "
                                f"integer buffer: {exc}") from None
            if a.ndim != 1:
                raise ValueError(f"unstructured dimension: indices of grid rank {p} must be "
                                 f"1-d, got shape {a.shape}")
            if a.size and a.dtype.kind not in "iu":
                raise TypeError(f"unstructured dimension: indices of grid rank {p} must be "
                                f"integers, got dtype {a.dtype}")
            if len(a) != lengths[p]:
                raise ValueError(f"unstructured dimension: len(indices) of grid rank {p} "
                                 f"({len(a)}) must equal its buffer length ({lengths[p]})")
            arrays.append(a)
        return UnstructuredMap(size, arrays, bool(one))

    def to_json(self):
        counts = [self.local_size(p) for p in range(self.grid_size)]
        return {"dist_type": "u", "size": self.size, "grid_size": self.grid_size,
                "one_to_one": self.one_to_one, "counts": counts}

    def fingerprint(self) -> bytes:
        """The digest of the size, flags, counts and each grid rank's index
        digest (``index_digest``): the same for the complete and the
        distributed form of one layout."""
        fp = self.__dict__.get("_fp")
        if fp is None:
            fp = self.__dict__["_fp"] = unstructured_fingerprint(
                self.size, self.one_to_one, [len(a) for a in self.indices],
                [index_digest(a) for a in self.indices])
        return fp

    def json_arrays(self):
        return {"indices": np.concatenate(self.indices) if self.indices else np.zeros(0, _I64)}

    @classmethod
    def _from_json(cls, d, arrays):
        flat = np.asarray(arrays.get("indices", ()), np.int64)
        counts = np.asarray(d["counts"], np.int64)
        if counts.sum() != len(flat) or len(counts) != d["grid_size"]:
            raise ValueError(f"unstructured dimension: {len(flat)} stored indices, but the "
                             f"counts say {counts.tolist()}")
        return UnstructuredMap(d["size"], list(np.split(flat, np.cumsum(counts)[:-1])),
                               one_to_one=d["one_to_one"])

    def tiles(self) -> Tiles:
        raise ValueError(f"an unstructured dimension ({self!r}) cannot be cut into "
                         "rectangular tiles; redistribute first, e.g. "
                         "a.redistribute(dist=('b',)) (block) or dist=('c',), block_size=(b,)")

    def __repr__(self):
        counts = tuple(self.local_size(p) for p in range(self.grid_size))
        return (f"UnstructuredMap(size={self.size}, grid_size={self.grid_size}, "
                f"counts={counts}, one_to_one={self.one_to_one}"
                + self._repr_tail() + ")")

    def _repr_tail(self) -> str:
        return ""


def index_digest(indices) -> bytes:
    """A 16-byte digest of one grid rank's unstructured indices (hashed in
    place: no copy of an int64 array)."""
    a = np.ascontiguousarray(indices, np.int64)
    return hashlib.blake2b(memoryview(a).cast("B"), digest_size=16).digest()


def unstructured_fingerprint(size, one_to_one, counts, digests) -> bytes:
    """The fingerprint of an unstructured map from its grid ranks' counts and
    index digests (what a distributed map's processes can agree on)."""
    h = hashlib.blake2b(json.dumps({"dist_type": "u", "size": int(size),
                                    "one_to_one": bool(one_to_one),
                                    "counts": [int(c) for c in counts]}).encode(), digest_size=16)
    for d in digests:
        h.update(d)
    return h.digest()


MAP_KINDS["u"] = UnstructuredMap
