"""Bulk data between ranks as buffers: the v-collectives xdap moves arrays with.

Every function moves the bytes of contiguous NumPy arrays with ``MPI.BYTE``
and 64-bit counts and displacements -- never pickles.  On an MPI of version
4 or later the large-count routines carry any size in one call; on an
older MPI a transfer whose messages exceed ``LIMIT`` bytes goes in rounds
of at most ``LIMIT`` bytes per message (all ranks agree on the number of
rounds with one small allreduce, taken only there).

Counts are in items of the array's dtype; every rank must pass the counts
it is responsible for, as in MPI.

>>> import numpy as np
>>> from mpi4py import MPI
>>> alltoallv(MPI.COMM_SELF, np.arange(3.0), [3], [3]).tolist()
[0.0, 1.0, 2.0]
"""
from __future__ import annotations

import numpy as np

from .comm import MPI

__all__ = ["alltoallv", "AlltoallvPattern", "LIMIT"]

# The largest message an MPI without large counts (MPI < 4) takes in one go.
LIMIT = (1 << 31) - 1
_LARGE_COUNTS = MPI.Get_version() >= (4, 0)


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _displs(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _rounds(comm, local_max: int, limit: int | None) -> int | None:
    """None: one call does it; else the number of rounds every rank makes."""
    limit = LIMIT if limit is None else limit
    if _LARGE_COUNTS and limit == LIMIT:
        return None
    biggest = comm.allreduce(int(local_max), op=MPI.MAX)
    return None if biggest <= limit else -(-biggest // limit)


def _piece(counts, displs, i, limit):
    """Counts and displacements of round ``i`` of messages cut in ``limit`` bytes."""
    lo = np.minimum(counts, i * limit)
    hi = np.minimum(counts, (i + 1) * limit)
    return hi - lo, displs + lo


def alltoallv(comm, send: np.ndarray, send_counts, recv_counts, *, out=None,
              limit=None, send_displs=None, recv_displs=None) -> np.ndarray:
    """Every rank's ``send`` cut into consecutive segments of
    ``send_counts[q]`` items for rank ``q``; returns what this rank
    receives, ``recv_counts[q]`` items from rank ``q`` in rank order (into
    ``out``, a C-contiguous array of the right size and dtype, if given).
    ``send_displs``/``recv_displs``: where each segment starts, in BYTES
    (default: one after another; send segments may overlap)."""
    send = np.ascontiguousarray(send)
    item = send.itemsize
    sc = np.asarray(send_counts, np.int64) * item
    rc = np.asarray(recv_counts, np.int64) * item
    recv = np.empty(int(rc.sum()) // item, send.dtype) if out is None else out
    sd = _displs(sc) if send_displs is None else np.asarray(send_displs, np.int64)
    rd = _displs(rc) if recv_displs is None else np.asarray(recv_displs, np.int64)
    sb, rb = _bytes(send), recv.reshape(-1).view(np.uint8)
    rounds = _rounds(comm, max(sc.max(initial=0), rc.max(initial=0)), limit)
    if rounds is None:
        comm.Alltoallv([sb, (sc, sd), MPI.BYTE], [rb, (rc, rd), MPI.BYTE])
        return recv
    lim = LIMIT if limit is None else limit
    for i in range(rounds):
        c1, d1 = _piece(sc, sd, i, lim)
        c2, d2 = _piece(rc, rd, i, lim)
        comm.Alltoallv([sb, (c1, d1), MPI.BYTE], [rb, (c2, d2), MPI.BYTE])
    return recv


class AlltoallvPattern:
    """An ``alltoallv`` repeated with the same counts (in rows): the byte
    counts and displacements are worked out once per row size, so a call
    costs the MPI call alone -- what a repeated ghost update needs.
    ``send_starts`` / ``recv_starts``: where each rank's rows start in the
    send / receive buffer (rows; default one after another).

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> pattern = AlltoallvPattern(MPI.COMM_SELF, [2], [2])
    >>> out = np.empty((2, 3))
    >>> float(pattern.run(np.ones((2, 3)), out).sum())
    6.0
    """

    def __init__(self, comm, send_counts, recv_counts, send_starts=None, recv_starts=None):
        self.comm = comm
        self.send_counts = np.asarray(send_counts, np.int64)
        self.recv_counts = np.asarray(recv_counts, np.int64)
        self.send_starts = _displs(self.send_counts) if send_starts is None else \
            np.asarray(send_starts, np.int64)
        self.recv_starts = _displs(self.recv_counts) if recv_starts is None else \
            np.asarray(recv_starts, np.int64)
        self._by_row = {}

    def _counts(self, send: np.ndarray) -> tuple:
        """Byte counts and displacements for rows like ``send``'s, and the
        number of rounds the largest message needs on an MPI without large
        counts (None: one call) -- worked out on the first call for a row
        layout, which every rank makes (the rounds are agreed then, once)."""
        # this runs on every ghost update: no work beyond a dict lookup
        key = (send.itemsize, send.shape[1:])
        counts = self._by_row.get(key)
        if counts is None:
            row = send.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
            sc, rc = self.send_counts * row, self.recv_counts * row
            rounds = _rounds(self.comm, max(sc.max(initial=0), rc.max(initial=0)), None)
            counts = self._by_row[key] = (sc, self.send_starts * row, rc,
                                          self.recv_starts * row, rounds)
        return counts

    def run(self, send: np.ndarray, recv: np.ndarray) -> np.ndarray:
        """Send the rows of ``send`` (C-contiguous; ``send_counts[q]`` rows
        to rank ``q``) and receive into ``recv`` (C-contiguous, writable,
        same row size); returns ``recv``."""
        sc, sd, rc, rd, rounds = self._counts(send)
        if rounds is not None:      # rounds, agreed by every rank (see alltoallv)
            item = send.itemsize
            return alltoallv(self.comm, send, sc // item, rc // item, out=recv, send_displs=sd,
                             recv_displs=rd)
        if not (send.flags.c_contiguous and recv.flags.c_contiguous):
            raise ValueError("AlltoallvPattern.run: buffers must be C-contiguous")
        self.comm.Alltoallv([send, (sc, sd), MPI.BYTE], [recv, (rc, rd), MPI.BYTE])
        return recv

    def start(self, send: np.ndarray, recv: np.ndarray):
        """``run``, started: the nonblocking exchange's request (wait on it
        before reading ``recv`` or writing ``send``).  Messages too large
        for one call of an MPI without large counts go in rounds, now (None
        returned)."""
        sc, sd, rc, rd, rounds = self._counts(send)
        if rounds is not None:
            self.run(send, recv)
            return None
        return self.comm.Ialltoallv([send, (sc, sd), MPI.BYTE], [recv, (rc, rd), MPI.BYTE])
