"""Cyclic and block-cyclic (``'c'``; DAP 0.10.0 section 1.6).

>>> CyclicMap(7, 2, block_size=2).spec, CyclicMap(7, 2).describe()
('c[2]', 'cyclic')
"""
from __future__ import annotations

import numpy as np

from .base import (MAP_KINDS, Map, Tiles, as_int64, check_range, dap_minor, int_arg, is_int,
                   _I64)

__all__ = ["CyclicMap"]


class CyclicMap(Map):
    """Cyclic (``block_size=1``) and block-cyclic distribution.

    Global ``g`` is in block ``b = g // block_size``, owned by rank
    ``b % grid_size`` at local position
    ``(b // grid_size) * block_size + g % block_size``.  A partial last block
    goes to whichever rank its block number lands on (the spec appendix
    wrongly hands it to rank 0).

    >>> m = CyclicMap(7, 2, block_size=2)
    >>> [m.owned_count(p) for p in range(2)]
    [4, 3]
    >>> m.global_indices(0), m.global_indices(1)
    (array([0, 1, 4, 5]), array([2, 3, 6]))
    >>> m.owners([5, 6])
    (array([0, 1]), array([3, 2]))
    """

    dist_type = "c"
    name = "cyclic"
    stays_distributed = True

    def __init__(self, size: int, grid_size: int, block_size: int = 1):
        self.size = int_arg("cyclic dimension: size", size, 0)
        self.grid_size = int_arg("cyclic dimension: grid_size", grid_size, 1)
        self.block_size = int_arg("cyclic dimension: block_size", block_size, 1)
        self._freeze()

    @property
    def spec(self) -> str:
        return f"c[{self.block_size}]" if self.block_size != 1 else "c"

    def describe(self) -> str:
        if self.grid_size == 1:
            return "n"
        return f"block-cyclic({self.block_size})" if self.block_size > 1 else "cyclic"

    @classmethod
    def from_spec(cls, size: int, grid_size: int, block_size=None,
                  where: str = "") -> "CyclicMap":
        """A ``'c'`` dimension: ``block_size`` (default 1: cyclic)."""
        if block_size is None:
            return cls(size, grid_size)
        if not is_int(block_size):
            raise TypeError(f"block_size{where} must hold ints, got {block_size!r} "
                            f"({type(block_size).__name__})")
        if block_size < 1:
            raise ValueError(f"block_size{where} must hold ints >= 1, got {block_size}")
        return cls(size, grid_size, block_size=int(block_size))

    def owned_count(self, p):
        self._check_rank(p)
        bs, P = self.block_size, self.grid_size
        cycles, rest = divmod(self.size, bs * P)
        return cycles * bs + min(max(rest - p * bs, 0), bs)

    local_size = owned_count

    @property
    def has_copies(self) -> bool:
        return False

    def global_indices(self, p):
        return self._global_from_local(p, np.arange(self.owned_count(p), dtype=_I64))

    def _global_from_local(self, p, l):
        bs, P = self.block_size, self.grid_size
        if bs == 1:
            return l * P + p
        b, off = np.divmod(l, bs)
        b *= bs * P
        b += off
        b += p * bs
        return b

    def owners(self, g):
        g = as_int64(g, "global index")
        check_range(g, self.size, "global index")
        bs, P = self.block_size, self.grid_size
        if P == 1:
            return np.zeros_like(g), g.copy()
        if bs == 1:
            local, ranks = np.divmod(g, P)
            return ranks, local
        # divmod twice, reusing the block-number array for the result
        blk, off = np.divmod(g, bs)
        ranks = np.empty_like(blk)
        np.divmod(blk, P, out=(blk, ranks))
        blk *= bs
        blk += off
        return ranks, blk

    def holders(self, g):
        g = as_int64(g, "global index").reshape(-1)
        return (np.arange(len(g), dtype=_I64),) + self.owners(g)

    def local_from_global(self, p, g):
        self._check_rank(p)
        g = as_int64(g, "global index")
        ranks, local = self.owners(g)
        wrong = np.flatnonzero(ranks.reshape(-1) != p)
        if wrong.size:
            i = wrong[0]
            raise ValueError(f"global index {int(g.reshape(-1)[i])} is not present on grid rank "
                             f"{p} (it is owned by grid rank {int(ranks.reshape(-1)[i])})")
        return local

    def resized(self, grid_size: int) -> "CyclicMap":
        return CyclicMap(self.size, grid_size, self.block_size)

    def to_dim_dict(self, p, version="0.10.0"):
        dap_minor(version)
        self._check_rank(p)
        d = self._common(p)
        # proc_grid_rank * block_size even where the rank owns nothing (past
        # size): enthought's reference validator checks exactly that; the
        # import also accepts the clamped spelling (size), spec 1.6.4
        d["start"] = p * self.block_size
        if self.block_size != 1:
            d["block_size"] = self.block_size
        return d

    @classmethod
    def from_dim_dicts(cls, dicts, lengths, size, minor):
        bs = dicts[0].get("block_size", 1)
        for p, d in enumerate(dicts):
            b = d.get("block_size", 1)
            if not is_int(b):
                raise TypeError(f"cyclic dimension: block_size of grid rank {p} must be an int, "
                                f"got {b!r}")
            if b < 1:
                raise ValueError(f"cyclic dimension: block_size of grid rank {p} ({b}) must be "
                                 ">= 1")
            if b != bs:
                raise ValueError(f"cyclic dimension: block_size of grid rank {p} ({b}) differs "
                                 f"from grid rank 0 ({bs})")
        m = CyclicMap(size, len(dicts), int(bs))
        for p, d in enumerate(dicts):
            start, first = d["start"], p * m.block_size
            # a rank that owns nothing may say start == size (spec 1.6.4)
            if start != first and not (first >= size and start == size):
                raise ValueError(f"cyclic dimension: start of grid rank {p} ({start}) must be "
                                 f"grid rank * block_size ({first})"
                                 + (f" or size ({size})" if first >= size else ""))
            if lengths[p] != m.owned_count(p):
                raise ValueError(f"cyclic dimension: buffer length of grid rank {p} "
                                 f"({lengths[p]}) must equal its owned count ({m.owned_count(p)})")
        return m

    def to_json(self):
        return {"dist_type": "c", "size": self.size, "grid_size": self.grid_size,
                "block_size": self.block_size}

    @classmethod
    def _from_json(cls, d, arrays):
        return CyclicMap(d["size"], d["grid_size"], d["block_size"])

    def tiles(self) -> Tiles:
        """Tiles of ``block_size``, dealt round robin: ``g * ceil(n / (g * b))``
        of them (at least g, the trailing ones empty), so that every grid
        rank holds the same number."""
        g, bs, n = self.grid_size, self.block_size, self.size
        count = g * max(1, -(-n // (g * bs)))
        i = np.arange(count, dtype=np.int64)
        start = np.minimum(i * bs, n)
        size = np.minimum(start + bs, n) - start
        return Tiles(start, size, i % g, (i // g) * bs)

    def __repr__(self):
        return (f"CyclicMap(size={self.size}, grid_size={self.grid_size}, "
                f"block_size={self.block_size})")


MAP_KINDS["c"] = CyclicMap
