"""Chunk grids a save can write in parallel without two ranks touching one
chunk (pure: no MPI, no files).

Zarr v3's regular chunk grid cuts every dimension at multiples of one chunk
length. A rank may only write whole chunks -- never a part of a chunk
another rank also writes (read-modify-write races lose data; zarr-python
issue #3682 is the sharded form of it). So the save writes from a
*chunk-aligned* block distribution: along each dim, every grid position's
owned range starts at a multiple of the chunk length. An array already laid
out that way (blocks of equal length but a shorter last one: every balanced
block distribution of a length the grid divides) is written straight from
its buffers; any other layout is moved into one first.

>>> from xdap.maps import BlockMap, CyclicMap
>>> plan = chunk_plan([BlockMap(12, 3), BlockMap(10, 1)], itemsize=8, limit=1 << 20)
>>> plan.chunks, plan.aligned
((4, 10), True)
>>> plan = chunk_plan([BlockMap(10, 3)], itemsize=8, limit=1 << 20)   # 4, 3, 3: not aligned
>>> plan.chunks, plan.bounds, plan.aligned
((4,), ((0, 4, 8, 10),), False)
>>> chunk_plan([CyclicMap(10, 2)], 8, 1 << 20).bounds
((0, 5, 10),)
>>> chunk_plan([BlockMap(1 << 20, 1)], itemsize=8, limit=1 << 20).chunks   # split to the limit
(131072,)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..maps import BlockMap

__all__ = ["CHUNK_BYTES", "ChunkPlan", "chunk_plan", "segment_chunk", "chunk_ranges"]

# Big enough that per-chunk costs (a file, a checksum, a task) vanish, small
# enough that dask and xarray users get chunks they can hold (their default
# "auto" chunk is 128 MiB).
CHUNK_BYTES = 64 << 20


@dataclass(frozen=True)
class ChunkPlan:
    """``chunks``: the chunk shape; ``bounds[k]``: the owned range of each
    grid position along dim k in the aligned distribution; ``aligned``:
    whether the array's own distribution already is that one."""
    chunks: tuple
    bounds: tuple
    aligned: bool


def chunk_plan(maps, itemsize: int, limit: int = CHUNK_BYTES) -> ChunkPlan:
    """The chunk grid and aligned blocks for an array distributed by ``maps``
    whose elements take ``itemsize`` bytes (see the module docstring)."""
    chunks, bounds, aligned = [], [], True
    for m in maps:
        own = _aligned_block(m)
        if own is None:
            aligned = False
            step = max(1, -(-m.size // m.grid_size))
            own = (step, tuple(min(p * step, m.size) for p in range(m.grid_size + 1)))
        chunks.append(own[0])
        bounds.append(own[1])
    return ChunkPlan(_split(chunks, itemsize, limit), tuple(bounds), aligned)


def _aligned_block(m):
    """``(block length, bounds)`` when a block map's owned ranges already are
    aligned blocks (all equal, the last one no longer); else None."""
    if not isinstance(m, BlockMap):
        return None
    sizes = [b - a for a, b in zip(m.bounds, m.bounds[1:])]
    first = max(sizes[0], 1)
    if all(s == first for s in sizes[:-1]) and sizes[-1] <= first and \
            all(b == min(p * first, m.size) for p, b in enumerate(m.bounds)):
        return first, tuple(m.bounds)
    return None


def _split(chunks, itemsize, limit) -> tuple:
    """Cut the blocks into chunks of at most ``limit`` bytes where a divisor
    of a block's length allows it (so chunk boundaries stay block
    boundaries); a block no divisor cuts well stays a bigger chunk."""
    out = list(chunks)
    for k in range(len(out)):
        total = itemsize
        for n in out:
            total *= n
        if total <= limit:
            break
        other = total // out[k]
        best = max((q for q in _divisors(out[k]) if q <= max(1, limit // other)), default=1)
        if best * other * 8 >= limit:       # not a chunk far below the limit
            out[k] = best
    return tuple(out)


def _divisors(n: int):
    small = [q for q in range(1, int(n ** 0.5) + 1) if n % q == 0]
    return small + [n // q for q in small]


def segment_chunk(total: int, nranks: int, itemsize: int, limit: int = CHUNK_BYTES) -> int:
    """The chunk length of a flat 1-d array written from rank-ordered
    segments (ragged values, offsets, index tables): about one chunk per
    rank, at most ``limit`` bytes.

    >>> segment_chunk(1000, 4, 8), segment_chunk(0, 4, 8), segment_chunk(10**9, 2, 8)
    (250, 1, 8388608)
    """
    return max(1, min(limit // max(itemsize, 1), -(-total // max(nranks, 1))))


def chunk_ranges(sel, chunk: int):
    """The chunk numbers along one dim that a selection (slice or int array)
    touches: a ``range`` or a sorted int array.

    >>> chunk_ranges(slice(3, 9), 4), chunk_ranges(slice(3, 3), 4)
    (range(0, 3), range(0, 0))
    """
    if isinstance(sel, slice):
        if sel.stop <= sel.start:
            return range(0)
        return range(sel.start // chunk, (sel.stop - 1) // chunk + 1)
    return np.unique(np.asarray(sel) // chunk)
