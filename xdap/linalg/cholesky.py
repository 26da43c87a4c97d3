"""The Cholesky factor of a Hermitian positive-definite matrix distributed
block-cyclically over a 2-D process grid (ScaLAPACK's layout), with no
rank ever holding more than its share and a block column.

Right-looking, one block column of width ``nb`` a step: the rank that
holds the diagonal block factors it (LAPACK through NumPy) and broadcasts
it; the ranks of its grid column turn their blocks below it into the
panel (``L_IK = A_IK L_KK^-H``); one ``Allgatherv`` gives every rank the
panel; each rank updates its trailing blocks, ``A_IJ -= L_IK L_JK^H`` --
a contiguous corner of its local array, as block-cyclic rows and columns
keep their order. Memory: the local blocks plus one panel (n x nb) a
rank; messages O(n nb) a step. A block that is not positive definite
fails every rank at the same step (the broadcast carries the verdict).

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.distribution import make_distribution
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> d = make_distribution((2, 2), ("c", "c"), comm=MPI.COMM_SELF, block_size=(1, 1))
>>> np.allclose(block_cholesky(MPI.COMM_SELF, a.copy(), d, 1), np.linalg.cholesky(a))
True
"""
from __future__ import annotations

import numpy as np
from mpi4py.util.dtlib import from_numpy_dtype

from .gather import allgather_rows

__all__ = ["block_cholesky"]


def _owner(d, k0):
    """The rank whose block holds global element (k0, k0)."""
    coords = np.asarray(d.rank_coords)
    p = int(d.maps[0].owners(np.array([k0]))[0][0])
    q = int(d.maps[1].owners(np.array([k0]))[0][0])
    return int(np.nonzero((coords[:, 0] == p) & (coords[:, 1] == q))[0][0])


def block_cholesky(comm, a, d, nb):
    """The lower Cholesky factor, in place of ``a`` -- this rank's local
    array of the n x n matrix in the block-cyclic distribution ``d``
    (blocks of ``nb`` on both dims) -- and returned. Collective."""
    from ..agreement import agreed_on
    n = d.global_shape[0]
    rows = np.asarray(d.global_indices(0), np.int64)
    cols = np.asarray(d.global_indices(1), np.int64)
    mpi_type = from_numpy_dtype(a.dtype)
    for k0 in range(0, n, nb):
        k1 = min(n, k0 + nb)
        w = k1 - k0
        r0, r1 = np.searchsorted(rows, [k0, k1])          # my rows of the block row
        c0, c1 = np.searchsorted(cols, [k0, k1])
        root = _owner(d, k0)
        # the diagonal block, factored by its holder; its verdict rides along
        buf = np.zeros(w * w + 1, a.dtype)
        if comm.Get_rank() == root:
            try:
                buf[:-1] = np.linalg.cholesky(a[r0:r1, c0:c1]).reshape(-1)
                buf[-1] = 1
            except np.linalg.LinAlgError:
                buf[-1] = 0
        comm.Bcast([buf, mpi_type], root=root)
        if buf[-1] == 0:
            raise agreed_on(comm, np.linalg.LinAlgError("Matrix is not positive definite"))
        lkk = buf[:-1].reshape(w, w)
        if c1 > c0 and r1 > r0:
            a[r0:r1, c0:c1] = lkk
        # the panel: my blocks below the diagonal one, in its block column
        mine = np.zeros((0, w), a.dtype)
        if c1 > c0 and r1 < len(rows):
            below = a[r1:, c0:c1]
            mine = np.linalg.solve(lkk, below.conj().T).conj().T if len(below) else below
            a[r1:, c0:c1] = mine
        # every rank gets the whole panel (rows k1..n), by global row
        values, index, _ = allgather_rows(comm, mine, w, rows[r1:] if c1 > c0 else rows[:0])
        panel = np.empty((n - k1, w), a.dtype)
        panel[index - k1] = values
        # the trailing update: my rows and columns past the block, a corner
        tr, tc = np.searchsorted(rows, k1), np.searchsorted(cols, k1)
        if tr < len(rows) and tc < len(cols):
            a[tr:, tc:] -= panel[rows[tr:] - k1] @ panel[cols[tc:] - k1].conj().T
    a[rows[:, None] < cols[None, :]] = 0
    return a
