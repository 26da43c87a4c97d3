"""SUMMA: the product of two matrices distributed in blocks over one 2-D
process grid, without gathering either.

``C = A @ B`` with A (m x k), B (k x n) and C (m x n) in blocks over a
``pr x pc`` grid: rank (i, j) holds rows block i and columns block j of
each. The inner dim k is cut at the union of A's column bounds and B's row
bounds into panels; for each panel, the grid column that holds it of A
broadcasts its rows of the panel along each grid row, the grid row that
holds it of B broadcasts its columns along each grid column, and every
rank adds the product of the two pieces it got into its block of C (one
``Bcast`` on the row and one on the column communicator a panel; the
communicators are made once and kept with the grid; every buffer is made
before the first panel, under one verdict). Memory: the three blocks, two
panels and one product a rank -- O(mk + kn + mn) / P.

>>> import numpy as np
>>> from mpi4py import MPI
>>> a, b = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
>>> summa(MPI.COMM_SELF, (1, 1), (0, 0), a, b, (0, 3), (0, 3)).tolist()
[[3.0, 3.0], [12.0, 12.0]]
"""
from __future__ import annotations

import numpy as np

from .. import plans
from ..agreement import settled
from ..transport import BUFFERS

__all__ = ["summa", "grid_comms"]


def grid_comms(comm, grid, coords):
    """``(row, column)`` communicators of this rank at ``coords`` of the
    process ``grid`` (ranks of a grid row ordered by grid column, and the
    reverse), made once per communicator and grid and kept in its plan store."""
    key = plans.Key("summa grid", (tuple(int(g) for g in grid),
                                   tuple(int(c) for c in coords)))

    def make():
        row = comm.Split(color=int(coords[0]), key=int(coords[1]))
        col = comm.Split(color=int(coords[1]), key=int(coords[0]))
        return row, col

    return plans.on(comm).get_or_make(key, make, release=lambda rc: [c.Free() for c in rc])


def summa(comm, grid, coords, a, b, a_col_bounds, b_row_bounds):
    """This rank's block of ``A @ B``: ``a`` its block of A (its rows, its
    grid column's columns), ``b`` its block of B; ``a_col_bounds`` (pc + 1)
    and ``b_row_bounds`` (pr + 1) where A's column blocks and B's row
    blocks start. Collective over ``comm``."""
    pr, pc = grid
    i, j = coords
    row, col = grid_comms(comm, grid, coords) if pr * pc > 1 else (comm, comm)
    dtype = np.result_type(a.dtype, b.dtype)
    cuts = np.union1d(np.asarray(a_col_bounds), np.asarray(b_row_bounds))
    widest = int(np.diff(cuts).max(initial=0))
    m, n = a.shape[0], b.shape[1]
    # every buffer made before the first panel moves, under one verdict (a
    # rank out of memory is the same error everywhere, never a rank missing
    # from a broadcast): C, one panel of each side (contiguous, for Bcast),
    # and the product of two panels
    with settled(comm, BUFFERS):
        c = np.zeros((m, n), dtype)
        room_a, room_b = np.empty(m * widest, dtype), np.empty(widest * n, dtype)
        product = np.empty((m, n), dtype)
    for k0, k1 in zip(cuts[:-1], cuts[1:]):
        if k1 == k0:
            continue
        w = int(k1 - k0)
        owner_c = int(np.searchsorted(a_col_bounds, k0, side="right") - 1)   # A's grid column
        owner_r = int(np.searchsorted(b_row_bounds, k0, side="right") - 1)   # B's grid row
        panel_a, panel_b = room_a[:m * w].reshape(m, w), room_b[:w * n].reshape(w, n)
        if j == owner_c:
            lo = k0 - a_col_bounds[owner_c]
            panel_a[...] = a[:, lo:lo + w]
        if i == owner_r:
            lo = k0 - b_row_bounds[owner_r]
            panel_b[...] = b[lo:lo + w]
        if pc > 1:
            row.Bcast(panel_a, root=owner_c)
        if pr > 1:
            col.Bcast(panel_b, root=owner_r)
        c += np.matmul(panel_a, panel_b, out=product)
    return c
