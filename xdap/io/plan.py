"""Planning a save and a load: which indices go into which piece, and which
pieces a rank must read (pure NumPy, no MPI, no files).

A save writes one *piece* per rank: along every dimension, the indices the
rank *canonically owns* -- its owned range for a block map (communication
padding left out), everything for cyclic and one-to-one unstructured maps,
and for a shared unstructured index only the lowest grid rank holding it.
So every global index is in exactly one piece, and a piece is the dense
block ``local[ix_(positions_0, positions_1, ...)]`` in local order.

A load asks, per dimension, where each global index of the new buffer sits:
in which saved grid position's piece, and at which position there. The
result per saved piece is a pair of selections (slices where contiguous).

>>> from xdap.maps import BlockMap, CyclicMap
>>> dim_plan(BlockMap(10, 2), range(3, 8))           # rows 3..7 from two blocks
[(0, slice(0, 2, None), slice(3, 5, None)), (1, slice(2, 5, None), slice(0, 3, None))]
>>> dim_plan(CyclicMap(6, 2), range(0, 3))
[(0, array([0, 2]), slice(0, 2, None)), (1, slice(1, 2, None), slice(0, 1, None))]
"""
from __future__ import annotations

import itertools

import numpy as np

from ..maps import BlockMap, Map, UnstructuredMap

__all__ = ["piece_positions", "piece_indices", "needed_indices", "dim_plan", "read_plan",
           "as_slice", "index_tuple", "selection_size"]


def piece_positions(m: Map, p: int):
    """Local positions of grid rank ``p``'s buffer that go into its piece
    (a slice, or an int64 array for shared unstructured indices)."""
    return as_slice(m.canonical_positions(p))


def piece_indices(m: Map, p: int) -> np.ndarray:
    """Global indices of grid rank ``p``'s piece along this dimension, in piece order."""
    return m.global_indices(p)[piece_positions(m, p)]


def needed_indices(m: Map, p: int):
    """Global indices of grid rank ``p``'s whole buffer (padding included):
    a ``range`` for block maps, else an int64 array."""
    if isinstance(m, BlockMap):
        return range(*m.buffer_range(p))
    return m.global_indices(p)


def as_slice(a):
    """An ascending run of consecutive ints as a slice; anything else as is."""
    if isinstance(a, slice):
        return a
    a = np.asarray(a, np.int64)
    if a.size == 0:
        return slice(0, 0)
    first = int(a[0])
    if int(a[-1]) - first == a.size - 1 and (a.size == 1 or bool((np.diff(a) == 1).all())):
        return slice(first, first + a.size)
    return a


def _piece_position(m: Map, ranks: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Position inside the piece of grid rank ``ranks`` of a buffer position."""
    if isinstance(m, BlockMap):
        lo = np.array([m.comm_padding(p)[0] for p in range(m.grid_size)], np.int64)
        return local - lo[ranks]
    if isinstance(m, UnstructuredMap) and not m.one_to_one:
        out = np.empty_like(local)
        for p in range(m.grid_size):
            hit = ranks == p
            if hit.any():
                held = np.arange(m.local_size(p))[piece_positions(m, p)]
                where = np.full(m.local_size(p), -1, np.int64)
                where[held] = np.arange(len(held))
                out[hit] = where[local[hit]]
        return out
    return local


def dim_plan(saved: Map, need) -> list:
    """For the global indices ``need`` (a range or an int array) of a new
    buffer: ``[(saved grid rank j, buffer selection, piece-j selection)]``
    for every j whose piece holds some of them. Selections are slices when
    contiguous, else int64 arrays; together they cover the whole buffer."""
    if isinstance(saved, BlockMap) and isinstance(need, range):
        out = []
        for j in range(saved.grid_size):
            a, b = saved.owned_range(j)
            lo, hi = max(a, need.start), min(b, need.stop)
            if lo < hi:
                out.append((j, slice(lo - need.start, hi - need.start), slice(lo - a, hi - a)))
        return out
    g = np.arange(need.start, need.stop, dtype=np.int64) if isinstance(need, range) \
        else np.asarray(need, np.int64)
    ranks, local = saved.owners(g)
    ppos = _piece_position(saved, ranks, local)
    out = []
    for j in np.unique(ranks):
        sel = np.flatnonzero(ranks == j)
        out.append((int(j), as_slice(sel), as_slice(ppos[sel])))
    return out


def read_plan(saved_maps, rank_of, need) -> list:
    """Pieces to read for a buffer whose dim-k global indices are ``need[k]``:
    ``[(saved rank, buffer selections per dim, piece selections per dim)]``.
    ``rank_of(coords)`` gives the saved rank at saved grid coordinates."""
    per_dim = [dim_plan(m, n) for m, n in zip(saved_maps, need)]
    out = []
    for combo in itertools.product(*per_dim):
        coords = tuple(j for j, _, _ in combo)
        out.append((rank_of(coords), tuple(b for _, b, _ in combo),
                    tuple(s for _, _, s in combo)))
    return out


def index_tuple(sels) -> tuple:
    """An index for ``arr[...]`` selecting the outer product of per-dim
    selections: plain slices (a view) when all are slices, else ``np.ix_``."""
    if all(isinstance(s, slice) for s in sels):
        return tuple(sels)
    return np.ix_(*[np.arange(s.start, s.stop, dtype=np.int64) if isinstance(s, slice) else s
                    for s in sels])


def selection_size(s) -> int:
    return s.stop - s.start if isinstance(s, slice) else len(s)
