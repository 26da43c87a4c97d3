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
>>> read_plan([BlockMap(10, 2)], lambda c: c[0], [range(3, 8)])   # rows 3..7 from two blocks
[(0, (slice(0, 2, None),), (slice(3, 5, None),)), (1, (slice(2, 5, None),), (slice(0, 3, None),))]
>>> CyclicMap(6, 2).locate(range(0, 3))
[(0, array([0, 2]), slice(0, 2, None)), (1, slice(1, 2, None), slice(0, 1, None))]
"""
from __future__ import annotations

import itertools

import numpy as np

from ..maps import Map, as_slice

__all__ = ["piece_positions", "read_plan", "as_slice", "index_tuple",
           "selection_size"]


def piece_positions(m: Map, p: int):
    """Local positions of grid rank ``p``'s buffer that go into its piece
    (a slice, or an int64 array for shared unstructured indices)."""
    return as_slice(m.canonical_positions(p))


def read_plan(saved_maps, rank_of, need) -> list:
    """Pieces to read for a buffer whose dim-k global indices are ``need[k]``
    (``Map.buffer_indices``):
    ``[(saved rank, buffer selections per dim, piece selections per dim)]``.
    ``rank_of(coords)`` gives the saved rank at saved grid coordinates."""
    per_dim = [m.locate(n) for m, n in zip(saved_maps, need)]
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
