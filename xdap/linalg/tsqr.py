"""TSQR: the QR factorization of a tall matrix whose rows are split over
the ranks, moving only the small ``n x n`` factors.

Each rank factors its rows, ``A_r = Q_r R_r`` (LAPACK through NumPy);
one ``Allgatherv`` brings every rank's ``R_r`` (at most ``n x n``) to
every rank, which factors the stack of them, ``[R_0; R_1; ...] = Q' R``
-- the same LAPACK call on the same bytes, so the same ``R`` everywhere;
then ``Q``'s rows on rank r are ``Q_r Q'_r`` (``Q'_r``: the stack's rows
that came from rank r). A one-level reduction: at the ranks a node holds,
the stack (``P n x n``) costs less than the ``log P`` rounds of a binary
tree. Memory: O(m_r n + P n^2) a rank; messages O(P n^2).

>>> import numpy as np
>>> from mpi4py import MPI
>>> a = np.arange(12.0).reshape(4, 3) ** 2
>>> q, r = tsqr(MPI.COMM_SELF, a)
>>> bool(np.allclose(q @ r, a)), r.shape
(True, (3, 3))
"""
from __future__ import annotations

import numpy as np

from ..agreement import Held
from .gather import allgather_rows

__all__ = ["tsqr"]


def tsqr(comm, a, want_q: bool = True):
    """``(Q_rows, R)`` of the matrix whose rows ``a`` (``m_r x n``, any
    ``m_r`` including 0) each rank holds, the total rows ``m >= n``:
    ``Q_rows`` (``m_r x n``, None unless ``want_q``) this rank's rows of
    the reduced ``Q``, ``R`` (``n x n``, upper triangular) the same on
    every rank. Collective."""
    a = np.ascontiguousarray(a)
    m_r, n = a.shape
    q = r = None
    # this rank's factorization may fail alone (LAPACK, memory): its count to
    # the gather comes poisoned, and every rank raises its error there
    with Held("tsqr: this rank's rows") as held:
        if m_r:
            q, r = np.linalg.qr(a) if want_q else (None, np.linalg.qr(a, mode="r"))
        else:
            q, r = np.zeros((0, 0), a.dtype), np.zeros((0, n), a.dtype)
    stack, _, first = allgather_rows(comm, r, n, held=held)
    if want_q:
        q2, big_r = np.linalg.qr(stack)
        rows = q2[first:first + r.shape[0]]
        q_rows = q @ rows if m_r else np.zeros((0, big_r.shape[0]), big_r.dtype)
        return np.ascontiguousarray(q_rows), big_r
    return None, np.linalg.qr(stack, mode="r")
