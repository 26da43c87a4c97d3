"""The Distribution a ``__partitioned__`` tile grid forms, and this rank's
local buffer from its tiles (pure, no MPI).

>>> d, members = plan_layout([np.array([0, 2, 4, 6, 7])], np.array([0, 1, 0, 1]), 2)
>>> d.maps[0], [m.tolist() for m in members[0]]
(CyclicMap(size=7, grid_size=2, block_size=2), [[0, 2], [1, 3]])
"""
from __future__ import annotations

import itertools

import numpy as np

from ...distribution import Distribution
from ...maps import (BlockMap, CyclicMap, DistributedUnstructuredMap, UnstructuredMap,
                     index_digest, unstructured_fingerprint)
from ...parts import Parts
from ...rows import concat_parts
from ...bitmaps import pack_validity
from ...types import TypeInfo, numpy_dtype, type_info

__all__ = ["plan_layout", "assemble"]


def plan_layout(bounds, owners, nprocs: int, rank=None) -> tuple:
    """Choose the distribution for tiles with the given boundaries (per dim)
    and owner rank of each tile (C order of the tile grid). Pure: returns
    ``(Distribution.detached(...), members)``, ``members[k][c]`` being the
    tile indices along dim k that grid coordinate c holds, in local order.

    The owners must factor into a Cartesian process grid: the owner of tile
    ``(i, j, ...)`` is the rank at grid coordinates ``(f0(i), f1(j), ...)``.
    Per dimension the map is then a block (one tile per grid coordinate,
    irregular sizes allowed), a block-cyclic map (regular tiles dealt out
    round robin) or, for any other assignment, an unstructured map (each
    grid coordinate's tiles concatenated in global order) -- complete when
    ``rank`` is None, else distributed: made for ``rank``'s position only,
    so no rank holds every index. Ranks holding no tile get empty blocks
    when the grid is 1-d.

    >>> plan_layout([np.array([0, 3, 5])], np.array([1, 0]), 2)[0].rank_coords.tolist()
    [[1], [0]]
    """
    tiling = tuple(len(b) - 1 for b in bounds)
    nd = len(tiling)
    own = np.asarray(owners, np.int64).reshape(tiling)
    f = []
    for k in range(nd):
        line = own[tuple(slice(None) if j == k else 0 for j in range(nd))]
        _, first, inverse = np.unique(line, return_index=True, return_inverse=True)
        order = np.argsort(np.argsort(first))           # class number by first appearance
        f.append(order[inverse.reshape(-1)])
    grid = [int(fk.max()) + 1 for fk in f]
    coords = np.stack(np.meshgrid(*f, indexing="ij"), axis=-1).reshape(-1, nd)
    table = np.full(grid, -1, np.int64)
    table[tuple(coords.T)] = own.reshape(-1)
    if not (table[tuple(coords.T)] == own.reshape(-1)).all() or \
            len(np.unique(table)) != table.size:
        raise ValueError("the partitions' owners do not form a Cartesian process grid (the "
                         "holder of tile (i, j, ...) must be decided by i, j, ... separately); "
                         "xdap cannot represent this layout without moving data")
    idle = np.setdiff1d(np.arange(nprocs), table.reshape(-1))
    extra = len(idle)
    if extra and any(gk != 1 for gk in grid[1:]):
        raise ValueError(f"{extra} rank(s) hold no partition and the partitions' process grid "
                         f"{tuple(grid)} is not 1-d, so they have no place in it")
    if extra:
        table = np.concatenate([table, idle.reshape((extra,) + (1,) * (nd - 1))], axis=0)
    rank_coords = np.zeros((nprocs, nd), np.int64)
    for c in np.ndindex(*table.shape):
        rank_coords[table[c]] = c
    maps, members = [], []
    for k in range(nd):
        b = np.asarray(bounds[k], np.int64)
        size, g = int(b[-1]), grid[k]
        mem = [np.flatnonzero(f[k] == c) for c in range(g)] + \
              ([np.zeros(0, np.int64)] * extra if k == 0 else [])
        members.append(mem)
        gk = g + (extra if k == 0 else 0)
        if all(len(m) == 1 for m in mem[:g]):            # first-appearance order: identity
            bb = np.concatenate([b, np.full(extra if k == 0 else 0, size)])
            maps.append(BlockMap(size, gk, bounds=bb.tolist()))
            continue
        if not (k == 0 and extra) and _dealt_round_robin(b, f[k], g):
            maps.append(CyclicMap(size, g, int(b[1] - b[0]) if b[1] > b[0] else 1))
        else:
            maps.append(_tiled_map(b, mem, None if rank is None else int(rank_coords[rank, k])))
    return Distribution.detached(maps, rank_coords), members


def _dealt_round_robin(b: np.ndarray, holder: np.ndarray, g: int) -> bool:
    """Whether the tiles are those of a block-cyclic map: regular tiles of
    the first one's size (trailing ones partial or empty), tile i held by
    grid position i % g -- checked on the tile list alone."""
    if len(b) < 2:
        return False
    bs = int(b[1] - b[0]) or 1
    i = np.arange(len(b) - 1)
    return bool((b[:-1] == np.minimum(i * bs, b[-1])).all() and (holder == i % g).all())


def _tiled_map(b: np.ndarray, members: list, coord) -> UnstructuredMap:
    """An unstructured map whose grid position c holds the tiles
    ``members[c]`` in order.  ``coord`` None: complete (every position's
    indices made); else distributed, made for that position only -- its
    fingerprint from the tile lists, which every rank has (no
    communication, O(tiles))."""
    def indices(m):
        return np.concatenate([np.arange(b[i], b[i + 1]) for i in m]) if len(m) \
            else np.zeros(0, np.int64)
    if coord is None:
        return UnstructuredMap(int(b[-1]), [indices(m) for m in members], one_to_one=True)
    sizes = np.diff(b)
    counts = [int(sizes[m].sum()) for m in members]
    digests = [index_digest(np.concatenate([b[m], b[np.asarray(m, np.int64) + 1]])) for m in members]
    fp = unstructured_fingerprint(int(b[-1]), True, counts, digests)
    return DistributedUnstructuredMap(int(b[-1]), counts, {coord: indices(members[coord])}, True, fp)


def assemble(layout, members, rank: int, bounds, tiling, tiles: dict, element: str) -> Parts:
    """This rank's local Parts from its tiles (pure: no MPI); ``layout`` and
    ``members`` are ``plan_layout``'s.

    One tile that is the whole local block: zero-copy (a C-contiguous tile;
    otherwise one copy). Several tiles: copied once into a new buffer.
    """
    c = layout.coords_of(rank)
    nd = len(tiling)
    mem = [members[k][c[k]] for k in range(nd)]
    want = [int(np.ravel_multi_index(idx, tiling)) for idx in
            (tuple(int(x) for x in t) for t in itertools.product(*mem))]
    missing = [i for i in want if i not in tiles]
    if missing:       # cannot happen when the owners came from the plan
        raise ValueError(f"internal: rank {rank} lacks tiles {missing[:5]}")
    sizes = [np.diff(np.asarray(bounds[k]))[mem[k]] for k in range(nd)]
    local_shape = tuple(int(s.sum()) for s in sizes)
    ragged = not element.startswith("fixed ")
    if len(want) == 1:
        return tiles[want[0]]
    if ragged:
        info = type_info(element)
        if not want:
            return Parts(info, np.zeros(0, info.numpy_dtype),
                         np.zeros(0, np.uint8) if info.optional else None,
                         (np.zeros(2, np.int32),) + (np.zeros(1, np.int32),) * (info.var_ndim - 1))
        return concat_parts([tiles[i] for i in want])
    leaf = element.split(" ", 1)[1]
    optional = leaf.startswith("?")
    dt = numpy_dtype(leaf)
    out = np.empty(local_shape, dt)
    mask = np.ones(local_shape, bool) if optional else None
    offs = [np.concatenate([[0], np.cumsum(s)]) for s in sizes]
    for j, idx in enumerate(itertools.product(*[range(len(m)) for m in mem])):
        p = tiles[want[j]]
        sl = tuple(slice(int(o[i]), int(o[i + 1])) for o, i in zip(offs, idx))
        out[sl] = p.values
        if optional:
            mask[sl] = p.valid_mask()
    info = TypeInfo.fixed(local_shape, leaf.lstrip("?"), optional)
    return Parts(info, out, pack_validity(mask) if optional else None)
