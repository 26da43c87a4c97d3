"""Every rank's rows of a small matrix on every rank -- the R factors of
TSQR, the panels of the block factorizations: one ``Allgather`` of the
counts, one ``Allgatherv`` of the rows (and one of their indices).

>>> import numpy as np
>>> from mpi4py import MPI
>>> stack, index, first = allgather_rows(MPI.COMM_SELF, np.eye(2), 2, np.array([5, 7]))
>>> stack.tolist(), index.tolist(), first
([[1.0, 0.0], [0.0, 1.0]], [5, 7], 0)
"""
from __future__ import annotations

import numpy as np
from mpi4py.util.dtlib import from_numpy_dtype

from ..agreement import settled
from ..transport import BUFFERS, gather_row

__all__ = ["allgather_rows"]


def allgather_rows(comm, rows, width: int, index=None, held=None):
    """``(stack, index, first)``: every rank's ``rows`` (``k_r x width``;
    a rank with none may pass any empty array) stacked in rank order, the
    ``index`` each rank gave its rows (one int64 a row; None when not
    given), and where this rank's rows start in the stack. Collective; the
    same dtype on every rank.  ``held``: an ``xdap.agreement.Held`` around
    the step that made ``rows`` -- where it failed on any rank, its count
    comes poisoned (``transport.gather_row``) and every rank raises that
    rank's error (no message more where nothing failed)."""
    failed = held is not None and held.failed
    if not failed:
        rows = np.ascontiguousarray(rows).reshape(rows.shape[0], width)
    counts = gather_row(comm, None if failed else [rows.shape[0]], np.int64, 1, held)[:, 0]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
    where = None
    with settled(comm, BUFFERS):           # every rank's receive buffers made: a verdict
        stack = np.empty((int(counts.sum()), width), rows.dtype)
        if index is not None:
            where = np.empty(int(counts.sum()), np.int64)
    comm.Allgatherv(rows, [stack, counts * width, displs * width, from_numpy_dtype(rows.dtype)])
    if index is not None:
        comm.Allgatherv(np.ascontiguousarray(index, np.int64),
                        [where, counts, displs, from_numpy_dtype(np.int64)])
    return stack, where, int(displs[comm.Get_rank()])
