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

__all__ = ["alltoallv", "AlltoallvPattern", "alltoallv_arrays", "scatterv", "gatherv", "allgatherv", "LIMIT"]

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
    ``send_starts``: where each rank's rows start in the send buffer (rows;
    default one after another).

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> pattern = AlltoallvPattern(MPI.COMM_SELF, [2], [2])
    >>> out = np.empty((2, 3))
    >>> float(pattern.run(np.ones((2, 3)), out).sum())
    6.0
    """

    def __init__(self, comm, send_counts, recv_counts, send_starts=None):
        self.comm = comm
        self.send_counts = np.asarray(send_counts, np.int64)
        self.recv_counts = np.asarray(recv_counts, np.int64)
        self.send_starts = _displs(self.send_counts) if send_starts is None else \
            np.asarray(send_starts, np.int64)
        self._by_row = {}

    def run(self, send: np.ndarray, recv: np.ndarray) -> np.ndarray:
        """Send the rows of ``send`` (C-contiguous; ``send_counts[q]`` rows
        to rank ``q``) and receive into ``recv`` (C-contiguous, writable,
        same row size); returns ``recv``."""
        # this runs on every ghost update: no work beyond a dict lookup
        key = (send.itemsize, send.shape[1:])
        counts = self._by_row.get(key)
        if counts is None:
            row = send.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
            sc, rc = self.send_counts * row, self.recv_counts * row
            counts = self._by_row[key] = (row, sc, self.send_starts * row, rc, _displs(rc))
        row, sc, sd, rc, rd = counts
        if not _LARGE_COUNTS:      # rounds, agreed by every rank (see alltoallv)
            item = send.itemsize
            return alltoallv(self.comm, send, sc // item, rc // item, out=recv, send_displs=sd)
        if not (send.flags.c_contiguous and recv.flags.c_contiguous):
            raise ValueError("AlltoallvPattern.run: buffers must be C-contiguous")
        self.comm.Alltoallv([send, (sc, sd), MPI.BYTE], [recv, (rc, rd), MPI.BYTE])
        return recv


def alltoallv_arrays(comm, speer, send, rpeer, rcounts, dtype) -> list:
    """``alltoallv`` of one 1-d array per destination peer (``send[i]`` to
    rank ``speer[i]``); returns the arrays received from ``rpeer`` (in that
    order), ``rcounts[i]`` items each."""
    dtype = np.dtype(dtype)
    sc, rc = np.zeros(comm.size, np.int64), np.zeros(comm.size, np.int64)
    for q, s in zip(speer, send):
        sc[q] = len(s)
    for q, n in zip(rpeer, rcounts):
        rc[q] = n
    flat = np.concatenate([np.ascontiguousarray(s, dtype) for s in send]) if send \
        else np.zeros(0, dtype)
    recv = alltoallv(comm, flat, sc, rc)
    starts = _displs(rc)
    return [recv[starts[q]:starts[q] + n] for q, n in zip(rpeer, rcounts)]


def scatterv(comm, send, counts, count: int, root: int, dtype, *, limit=None) -> np.ndarray:
    """Rank ``r`` receives its ``count`` items of ``send``; ``send`` and
    ``counts`` (the segments in rank order) are significant on ``root`` only."""
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    mine = int(count) * item
    c = d = sb = None
    if comm.rank == root:
        c = np.asarray(counts, np.int64) * item
        d = _displs(c)
        sb = _bytes(np.asarray(send, dtype))
    recv = np.empty(int(count), dtype)
    rb = recv.view(np.uint8)
    rounds = _rounds(comm, c.max(initial=0) if c is not None else mine, limit)
    if rounds is None:
        comm.Scatterv([sb, (c, d), MPI.BYTE] if c is not None else None, [rb, MPI.BYTE],
                      root=root)
        return recv
    lim = LIMIT if limit is None else limit
    for i in range(rounds):
        spec = None
        if c is not None:
            ci, di = _piece(c, d, i, lim)
            spec = [sb, (ci, di), MPI.BYTE]
        comm.Scatterv(spec, [rb[min(mine, i * lim):min(mine, (i + 1) * lim)], MPI.BYTE],
                      root=root)
    return recv


def gatherv(comm, send, counts, root: int, *, limit=None):
    """``root`` receives every rank's ``send`` (``counts[r]`` items from rank
    ``r``; ``counts`` significant on root) in rank order; None elsewhere."""
    send = np.ascontiguousarray(send)
    item = send.itemsize
    c = np.asarray(counts, np.int64) * item if comm.rank == root else None
    recv = np.empty(int(c.sum()) // item, send.dtype) if comm.rank == root else None
    d = _displs(c) if c is not None else None
    rounds = _rounds(comm, send.nbytes, limit)
    rb = recv.view(np.uint8) if recv is not None else None
    if rounds is None:
        comm.Gatherv([_bytes(send), MPI.BYTE],
                     [rb, (c, d), MPI.BYTE] if comm.rank == root else None, root=root)
        return recv
    lim = LIMIT if limit is None else limit
    sb = _bytes(send)
    for i in range(rounds):
        mine = sb[min(len(sb), i * lim):min(len(sb), (i + 1) * lim)]
        spec = None
        if comm.rank == root:
            ci, di = _piece(c, d, i, lim)
            spec = [rb, (ci, di), MPI.BYTE]
        comm.Gatherv([mine, MPI.BYTE], spec, root=root)
    return recv


def allgatherv(comm, send, counts, *, limit=None) -> np.ndarray:
    """Every rank receives every rank's ``send`` (``counts[r]`` items from
    rank ``r``, known on every rank) in rank order."""
    send = np.ascontiguousarray(send)
    item = send.itemsize
    c = np.asarray(counts, np.int64) * item
    recv = np.empty(int(c.sum()) // item, send.dtype)
    d = _displs(c)
    rounds = _rounds(comm, c.max(initial=0), limit)
    if rounds is None:
        comm.Allgatherv([_bytes(send), MPI.BYTE], [recv.view(np.uint8), (c, d), MPI.BYTE])
        return recv
    lim = LIMIT if limit is None else limit
    sb, rb = _bytes(send), recv.view(np.uint8)
    for i in range(rounds):
        ci, di = _piece(c, d, i, lim)
        mine = sb[min(len(sb), i * lim):min(len(sb), (i + 1) * lim)]
        comm.Allgatherv([mine, MPI.BYTE], [rb, (ci, di), MPI.BYTE])
    return recv
