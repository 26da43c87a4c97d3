"""``A X = B`` for a square matrix distributed block-cyclically over a 2-D
process grid, by LU with partial pivoting, never gathering A.

Right-looking, one block column of width ``nb`` a step, rows never moved
(the pivots are a permutation kept beside them):

1. the panel -- the rows not yet pivoted, in this block column -- goes to
   every rank (one ``Allgatherv``), and every rank factors it alike
   (partial pivoting, NumPy row operations): the same pivots, ``L`` and the
   diagonal block of ``U`` everywhere;
2. each grid column gathers the pivot rows of its own columns (one
   ``Allgatherv`` on the column communicator) and solves them into its part
   of ``U``'s block row, kept on the grid row the block row would live on;
3. each rank updates its remaining rows, ``A_R -= L_R U_K`` (one product
   into a corner of its array);
4. the right-hand side (``n x k``, on every rank) follows the forward
   substitution as the panels pass; back substitution at the end, one
   ``Allreduce`` of ``w x k`` a block.

Memory: the local blocks, one panel (n x nb) and this rank's part of U
(O(n^2 / P) in all) a rank. A zero pivot (an exactly singular matrix, as
LAPACK's ``gesv`` finds it) fails every rank alike at the same step.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.distribution import make_distribution
>>> a = np.array([[0.0, 2.0], [1.0, 1.0]])
>>> d = make_distribution((2, 2), ("c", "c"), comm=MPI.COMM_SELF, block_size=(1, 1))
>>> block_lu_solve(MPI.COMM_SELF, a.copy(), d, 1, np.array([[2.0], [3.0]])).ravel().tolist()
[2.0, 1.0]
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .gather import allgather_rows
from .summa import grid_comms

__all__ = ["block_lu_solve"]


def _panel_lu(panel):
    """Partial-pivoting LU of ``panel`` (m x w, m >= w), in place: the
    order of its rows (pivots first) or None for a zero pivot."""
    m, w = panel.shape
    order = np.arange(m)
    for j in range(w):
        p = j + int(np.argmax(np.abs(panel[j:, j])))
        if panel[p, j] == 0:
            return None
        if p != j:
            panel[[j, p]] = panel[[p, j]]
            order[[j, p]] = order[[p, j]]
        panel[j + 1:, j] /= panel[j, j]
        panel[j + 1:, j + 1:] -= np.outer(panel[j + 1:, j], panel[j, j + 1:])
    return order


def block_lu_solve(comm, a, d, nb, b):
    """``X`` with ``A X = B``: ``a`` this rank's local array of the n x n
    matrix in the block-cyclic distribution ``d`` (blocks of ``nb``; it is
    overwritten), ``b`` the whole right-hand side (n x k) on every rank.
    Returns X (n x k) on every rank. Collective."""
    from ..agreement import agreed_on
    n = d.global_shape[0]
    grid = d.grid
    coords = d.coords
    rows = np.asarray(d.global_indices(0), np.int64)
    cols = np.asarray(d.global_indices(1), np.int64)
    dtype = np.result_type(a.dtype, b.dtype)
    a = a.astype(dtype, copy=False)
    y = np.array(b, dtype)
    _, col_comm = grid_comms(comm, grid, coords) if comm.Get_size() > 1 else (comm, comm)
    remaining = np.ones(len(rows), bool)            # my rows not yet pivoted
    steps = []                                      # (k0, k1, pivots, U_KK, my U part)
    for k0 in range(0, n, nb):
        k1 = min(n, k0 + nb)
        w = k1 - k0
        c0, c1 = np.searchsorted(cols, [k0, k1])
        mine = np.nonzero(remaining)[0] if c1 > c0 else np.zeros(0, np.int64)
        panel, where, _ = allgather_rows(comm, a[np.ix_(mine, np.arange(c0, c1))], w,
                                         rows[mine])
        order = np.argsort(where, kind="stable")   # every rank: the same panel, by row
        panel, where = panel[order], where[order]
        perm = _panel_lu(panel)
        if perm is None:
            raise agreed_on(comm, np.linalg.LinAlgError("Singular matrix"))
        where = where[perm]                         # (the panel's rows moved in place)
        pivots, rest = where[:w], where[w:]
        unit_l = np.tril(panel[:w], -1) + np.eye(w, dtype=dtype)
        u_kk = np.triu(panel[:w])
        l_rest = panel[w:]
        # forward substitution, on every rank's copy of the right-hand side
        y_k = np.linalg.solve(unit_l, y[pivots])
        y[rest] -= l_rest @ y_k
        y[pivots] = y_k
        # my grid column's part of U's block row: the pivot rows, my columns past k1
        tail = np.arange(np.searchsorted(cols, k1), len(cols))
        held = np.isin(rows, pivots)
        got, at, _ = allgather_rows(col_comm, a[np.ix_(np.nonzero(held)[0], tail)],
                                    len(tail), rows[held])
        u_part = np.linalg.solve(unit_l, got[_positions(at, pivots)]) if len(tail) else \
            np.zeros((w, 0), dtype)
        remaining &= ~held
        # the trailing update of my remaining rows: one product into a corner
        # of my array (rows already pivoted ride along with zero multipliers:
        # nothing reads them again, and a corner needs no gather and scatter)
        if len(tail) and remaining.any():
            mine = np.nonzero(remaining)[0]
            first = int(mine[0])
            l_local = np.zeros((len(rows) - first, w), dtype)
            l_local[mine - first] = l_rest[_positions(rest, rows[mine])]
            a[first:, tail[0]:] -= l_local @ u_part
        keep = (k0 // nb) % grid[0] == coords[0]
        steps.append((k0, k1, pivots, u_kk, u_part if keep else None, cols[tail]))
    # back substitution: x_K = U_KK^-1 (y_K - U_K,>K x_>K), y_K at step K's pivot rows
    x = np.zeros_like(y)
    for k0, k1, pivots, u_kk, u_part, tail_cols in reversed(steps):
        partial = u_part @ x[tail_cols] if u_part is not None else \
            np.zeros((k1 - k0,) + y.shape[1:], dtype)
        partial = np.ascontiguousarray(partial)
        comm.Allreduce(MPI.IN_PLACE, partial, op=MPI.SUM)
        x[k0:k1] = np.linalg.solve(u_kk, y[pivots] - partial)
    return x


def _positions(keys, wanted):
    """Where each of ``wanted`` sits in ``keys`` (all present)."""
    order = np.argsort(keys, kind="stable")
    return order[np.searchsorted(keys, wanted, sorter=order)]
