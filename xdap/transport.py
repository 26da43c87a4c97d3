"""Moving data between ranks: routes, and the one executor that sends them.

Every engine that moves data (redistribution, migration, gather/scatter by
index, root scatter and gather, halo exchange, loading a store onto other
ranks, the mesh's facet exchange) only *computes a route*; this module
sends it.  Rows of any type are packed and unpacked by ``xdap.packing``.

* :class:`Route` -- which of this rank's rows go to which rank, and what
  arrives: the rows to send (grouped by destination), how many to each
  rank, how many come from each, and the order that puts arrivals where
  they belong.  Plain data; building one makes no MPI call, except where a
  receiver must learn its counts (``Route.with_recv_counts``: one
  ``Alltoall``).
* :func:`move` -- the rows of one or more Parts along a route: ONE
  ``Alltoallv`` of all their buffers (values, validity, ragged lengths)
  when they are a single buffer, else ONE ``Alltoallw`` whose datatypes
  point at every buffer in place (no packing copy); ragged rows first tell
  their receivers how many items follow (one ``Alltoall`` of counts).
* :class:`RowExchange` -- a route bound once for repeated moves of fixed
  rows (a ghost update): counts worked out once, buffers kept, nothing
  allocated per call.
* :class:`BlockExchange` -- N-d blocks of fixed arrays (a redistribution
  plan's tensor-product transfers): one ``Alltoallw`` of subarray
  datatypes, or packed elements; validity in the same call.
* :class:`NeighbourExchange` -- regions of padded blocks to and from a few
  neighbours (halo exchange): persistent point-to-point requests.
* :func:`exchange_counts`, :func:`send_lists` -- small integer traffic of
  route building (counts, index lists).

Bulk data moves as buffers with 64-bit counts, never pickles.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.parts import as_container, container, parts
>>> p = parts(as_container([[1.0], [2.0, None], []], type="var * var * ?float64"))
>>> route = Route(MPI.COMM_SELF, rows=[1, 2, 0], send_counts=[3], recv_counts=[3], order=[2, 0, 1])
>>> container(move(route, p)[0]).value
[[1.0], [2.0, None], []]
"""
from __future__ import annotations

import functools
import itertools
import math
import weakref

import numpy as np

from . import exchange
from .agreement import UNNAMED, Held, agree, settled
from .comm import MPI
from .bitmaps import pack_validity
from .packing import Form, pack, unpack
from .parts import Parts
from .rows import take_rows

__all__ = ["gather_row", "STEP", "BUFFERS", "Route", "move", "RowExchange", "BlockExchange", "NeighbourExchange",
           "exchange_counts", "send_lists", "group_order", "Transfer", "runs", "positions",
           "index_len", "compress", "METHODS"]

_I64 = np.dtype(np.int64)


def group_order(keys: np.ndarray, n: int) -> np.ndarray:
    """A stable order grouping ``keys`` (ints in ``[0, n)``): a counting
    pass per key for a few keys, else a radix sort when they fit 16 bits --
    O(len(keys)), no comparison sort.

    >>> group_order(np.array([2, 0, 2, 1]), 3).tolist()
    [1, 3, 0, 2]
    """
    keys = np.asarray(keys)
    if n <= 8 and len(keys) > 4096:       # a few groups: one vectorised pass each
        small = keys.astype(np.uint8, copy=False)
        out, at = np.empty(len(keys), np.int64), 0
        for k in range(n):
            hit = np.flatnonzero(small == k)
            out[at:at + len(hit)] = hit
            at += len(hit)
        return out
    if n <= 256:                          # NumPy's radix sort: one pass of bytes
        return np.argsort(keys.astype(np.uint8, copy=False), kind="stable")
    if n <= np.iinfo(np.int16).max:
        return np.argsort(keys.astype(np.int16, copy=False), kind="stable")
    return np.argsort(keys, kind="stable")


def _starts(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts), _I64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


# --------------------------------------------------------------------------
# routes
# --------------------------------------------------------------------------

class Route:
    """Where this rank's rows go, and what it receives (plain data).

    comm         the communicator the rows move in
    rows         local row indices to send, in message order (repeats
                 allowed); None: every row, in order
    send_counts  rows for each rank (one entry per rank of ``comm``): rank
                 q gets ``rows[send_starts[q]:send_starts[q] + send_counts[q]]``
    send_starts  where each rank's rows start in ``rows`` (default: one
                 after another in rank order; they may overlap -- every
                 rank may get the same rows)
    recv_counts  rows from each rank (None: learned -- and kept -- when rows
                 first move along the route)
    order        the result's rows as positions in what arrived (arrivals
                 are grouped by source rank, each in its sender's order):
                 ``result = arrived[order]``; None keeps the arrival order
    """

    __slots__ = ("comm", "rows", "send_counts", "send_starts", "recv_counts", "order")

    def __init__(self, comm, rows=None, send_counts=None, recv_counts=None, *,
                 send_starts=None, order=None):
        self.comm = comm
        self.rows = None if rows is None else np.asarray(rows, _I64)
        self.send_counts = np.asarray(send_counts, _I64)
        self.send_starts = _starts(self.send_counts) if send_starts is None else \
            np.asarray(send_starts, _I64)
        self.recv_counts = None if recv_counts is None else np.asarray(recv_counts, _I64)
        self.order = None if order is None else np.asarray(order, _I64)

    @classmethod
    def to_ranks(cls, comm, dest, rows=None) -> "Route":
        """Each row to the rank ``dest[i]`` names (``rows[i]`` when given,
        else row i), grouped by destination in the rows' order -- a counting
        sort; the receivers learn their counts when the rows move.

        >>> from mpi4py import MPI
        >>> Route.to_ranks(MPI.COMM_SELF, np.zeros(3, np.int64)).rows.tolist()
        [0, 1, 2]
        """
        dest = np.asarray(dest, _I64)
        order = group_order(dest, comm.size)
        picked = order if rows is None else np.asarray(rows, _I64)[order]
        return cls(comm, picked, np.bincount(dest, minlength=comm.size))

    @classmethod
    def gather(cls, comm, rows, root=None) -> "Route":
        """This rank's ``rows`` to ``root`` (None: to every rank, the same
        rows -- sent once, read by MPI for each receiver)."""
        rows = np.asarray(rows, _I64)
        counts = np.zeros(comm.size, _I64)
        if root is None:
            counts[:] = len(rows)
            return cls(comm, rows, counts, send_starts=np.zeros(comm.size, _I64))
        counts[root] = len(rows)
        return cls(comm, rows, counts)

    @classmethod
    def nothing(cls, comm) -> "Route":
        """No rows to any rank, the receivers to learn their counts: the
        stand-in route of a rank whose step before a move failed (``move``'s
        ``held``).

        >>> from mpi4py import MPI
        >>> Route.nothing(MPI.COMM_SELF).n_send
        0
        """
        return cls(comm, np.zeros(0, _I64), np.zeros(comm.size, _I64))

    def with_recv_counts(self, held: Held | None = None) -> "Route":
        """This route with ``recv_counts`` learned from the senders
        (collective: one ``Alltoall`` of counts; ``held``: as
        ``exchange_counts`` takes it -- this route a stand-in where it failed)."""
        if self.recv_counts is not None:
            return self
        return Route(self.comm, self.rows, self.send_counts, exchange_counts(
            self.comm, self.send_counts, held), send_starts=self.send_starts, order=self.order)

    def reversed(self) -> "Route":
        """The way back: what arrived (in arrival order, before ``order``)
        returns to its senders, where it arrives in the order of ``rows`` --
        one value per row sent, e.g. contributions to combine at the owners.
        Needs ``recv_counts`` and consecutive sends."""
        if self.recv_counts is None:
            raise ValueError("Route.reversed needs recv_counts (Route.with_recv_counts)")
        return Route(self.comm, None, self.recv_counts, self.send_counts)

    @property
    def n_recv(self) -> int:
        return int(self.recv_counts.sum())

    @property
    def n_send(self) -> int:
        return int(self.send_counts.sum())


# --------------------------------------------------------------------------
# the executor
# --------------------------------------------------------------------------

# a rank's failure to make its buffers for an exchange (its memory: one rank
# runs out alone), told on every rank; the contract puts the public call's
# name in place of UNNAMED where the error leaves it ("sort: ...")
BUFFERS = f"{UNNAMED}: this rank's buffers"
# ... and an engine's local step between two messages, held (``Held(STEP)``)
STEP = f"{UNNAMED}: this rank's local step"


def exchange_counts(comm, counts, held: Held | None = None) -> np.ndarray:
    """Every rank's ``counts[q]`` for rank q -> the counts this rank gets
    from each rank (collective: one ``Alltoall``).  ``counts`` may be 2-d:
    a row of several counts per rank.  ``held``: the step that made them;
    where it failed on any rank, that rank's counts come poisoned (-1: its
    ``counts`` need only have the shape) and every rank raises its error.

    >>> from mpi4py import MPI
    >>> exchange_counts(MPI.COMM_SELF, [[4, 5]]).tolist()
    [[4, 5]]
    """
    counts = np.ascontiguousarray(counts, _I64)
    if held is not None and held.failed:
        counts = np.full_like(counts, -1)
    out = np.empty_like(counts)
    comm.Alltoall(counts, out)
    if held is not None and out.size and out.min() < 0:
        held.settle(comm)               # one more message, on the failure path only
    return out


def gather_row(comm, row, dtype, n: int, held: Held | None = None) -> np.ndarray:
    """Every rank's ``row`` (``n`` items of ``dtype``, the same on every
    rank: a size, a rank's first and last value) on every rank, as a
    ``(comm.size, n)`` array: one ``Allgather``.  ``held``: the step that
    made the row; where it failed on any rank (then ``row`` may be None
    there), that rank's row comes poisoned and every rank raises its error
    -- no message more where nothing failed.

    >>> from mpi4py import MPI
    >>> gather_row(MPI.COMM_SELF, [3, 4], np.int64, 2).tolist()
    [[3, 4]]
    """
    dtype = np.dtype(dtype)
    record = np.zeros(_ROW_STATUS + n * dtype.itemsize, np.uint8)
    if held is not None and held.failed:
        record[0] = 1
    else:
        record[_ROW_STATUS:] = np.ascontiguousarray(row, dtype).reshape(n).view(np.uint8)
    got = np.empty((comm.size, len(record)), np.uint8)
    comm.Allgather(record, got)
    if got[:, 0].any():                 # one more message, on the failure path only
        (held if held is not None else Held(BUFFERS)).settle(comm)
    return got[:, _ROW_STATUS:].copy().view(dtype)


_ROW_STATUS = 8                  # a gathered row's status bytes (8: its items stay aligned)


def send_lists(comm, lists: dict) -> dict:
    """Send ``lists[q]`` (1-d int64) to rank q; returns ``{source rank: the
    list it sent}`` for every rank that sent this one anything (collective:
    one ``Alltoall`` of lengths, a verdict on the receive buffer, one
    ``Alltoallv``)."""
    counts = np.zeros(comm.size, _I64)
    for q, v in lists.items():
        counts[q] = len(v)
    ranks = sorted(lists)
    flat = np.concatenate([np.asarray(lists[q], _I64) for q in ranks]) if ranks else \
        np.zeros(0, _I64)
    got = exchange_counts(comm, counts)
    with settled(comm, BUFFERS):
        recv = np.empty(int(got.sum()), _I64)
    _alltoallv_items(comm, flat, _starts(counts), counts, recv, _starts(got), got)
    at = _starts(got)
    return {int(r): recv[at[r]:at[r] + got[r]] for r in np.flatnonzero(got)}


def move(route: Route, *parts: Parts, held: Held | None = None, most: int | None = None) -> list:
    """The rows of every Parts in ``parts`` moved along ``route`` (all of
    the same rows, e.g. a mesh's cells and their fields): a list of the
    arrived Parts, in ``route.order`` (collective; copies).

    Fixed rows whose receivers know their counts: one collective for the
    data.  Ragged rows, or receivers that do not know how many rows come:
    one ``Alltoall`` of item counts first.  Before the data moves, one
    verdict (a small ``Allgather``, ``xdap.agreement.agree``) says every
    rank made its buffers: a rank that runs out of memory packing or
    allocating is the same error on every rank, never a rank left waiting
    in the exchange.  ``held``: the engine's step before this move, whose
    failure on this rank rides the move's first message (then ``route``
    and ``parts`` are stand-ins of the same kinds: ``Route.nothing``,
    ``packing.no_rows``).  ``most``: at most this many fixed rows come
    from each rank (a gather of samples): the receive buffers are made
    before the count exchange, which then carries their failure -- no
    verdict.  Every rank must pass Parts of the same forms (agreed by the
    caller)."""
    comm = route.comm
    forms = [Form.of(p) for p in parts]
    dtypes = [dt for f in forms for dt in f.dtypes]
    first = route.send_starts
    last = first + route.send_counts
    held = held if held is not None else Held(BUFFERS)
    # this rank's packing and receive buffers, where its memory can fail
    # alone: held until the move's first message (counts) or its verdict
    packs, send_at, send_n = [], [], []
    if not held.failed:
        with held:
            packs = [pack(p, route.rows) for p in parts]
            # per buffer of every pack: the items each rank gets, and where they start
            for pk in packs:
                for lo, hi in zip(pk.bounds(first), pk.bounds(last)):
                    send_at.append(lo)
                    send_n.append(hi - lo)
    bounded = most is not None and route.recv_counts is None and \
        all(f.sized_by_rows for f in forms)
    if bounded and not held.failed:     # made before the counts: their failure poisons them
        with held:
            room = [np.empty(most * comm.size * f.row_size, dt) for f in forms for dt in f.dtypes]
    if held.failed:                     # nothing to send: every rank stops before the data
        send_n = [np.zeros(comm.size, _I64)] * len(dtypes)
    recv_rows = route.recv_counts
    if recv_rows is None or not all(f.sized_by_rows for f in forms):
        table = np.stack([route.send_counts] + send_n, axis=1) if send_n else \
            route.send_counts[:, None]
        got = exchange_counts(comm, table, held)      # poisoned where this rank failed
        recv_rows, recv_n = got[:, 0], [got[:, 1 + b] for b in range(len(send_n))]
    else:
        recv_n = [recv_rows * f.row_size for f in forms for _ in f.dtypes]
    if bounded:
        if recv_rows.max(initial=0) > most:
            raise AssertionError(f"move: more than most={most} rows from a rank")
        recvs = [r[:int(n.sum())] for r, n in zip(room, recv_n)]
    else:
        if not held.failed:
            with held:
                recvs = [np.empty(int(n.sum()), dt) for n, dt in zip(recv_n, dtypes)]
        agree(comm, held.error)         # the verdict: every rank's buffers are made
    if route.recv_counts is None:       # learned: the route's next move needs no table
        route.recv_counts = recv_rows.copy()
    sends = [b for pk in packs for b in pk.buffers]
    _send_buffers(comm, sends, send_at, send_n, recvs, [_starts(n) for n in recv_n], recv_n)
    nrows = int(recv_rows.sum())
    out, b = [], 0
    for f in forms:
        k = len(f.dtypes)
        arrived = unpack(f, recvs[b:b + k], nrows)
        b += k
        out.append(arrived if route.order is None else take_rows(arrived, route.order))
    return out


def _send_buffers(comm, sends, send_at, send_n, recvs, recv_at, recv_n) -> None:
    """Every rank's share of every send buffer to its rank, into the
    receive buffers (items; ``*_at[b][q]``/``*_n[b][q]``: where rank q's
    share of buffer b starts and how long it is): one Alltoallv for one
    buffer, else one Alltoallw of datatypes at the buffers' addresses."""
    if len(sends) == 1:
        _alltoallv_items(comm, sends[0], send_at[0], send_n[0], recvs[0], recv_at[0], recv_n[0])
        return
    stypes = _byte_types(sends, send_at, send_n, comm.size)
    rtypes = _byte_types(recvs, recv_at, recv_n, comm.size)
    try:
        zeros = [0] * comm.size
        comm.Alltoallw([MPI.BOTTOM, (_counts(stypes), zeros), stypes],
                       [MPI.BOTTOM, (_counts(rtypes), zeros), rtypes])
    finally:
        for t in stypes + rtypes:
            if t != MPI.BYTE:
                t.Free()


def _alltoallv_items(comm, send, send_at, send_n, recv, recv_at, recv_n) -> None:
    item = send.dtype.itemsize
    exchange.alltoallv(comm, send, send_n, recv_n, out=recv,
                       send_displs=np.asarray(send_at, _I64) * item,
                       recv_displs=np.asarray(recv_at, _I64) * item)


def _counts(types) -> list:
    """One of each rank's datatype, none where it is the empty MPI.BYTE."""
    return [0 if t == MPI.BYTE else 1 for t in types]


_BLOCK = (1 << 31) - 1           # the largest block length an MPI-3 datatype takes


def _byte_types(buffers, at, n, size) -> list:
    """Per rank q: a datatype of the bytes of every buffer's share for q,
    at absolute addresses (MPI.BYTE with count 0 where there are none)."""
    base = [MPI.Get_address(b) if b.size else 0 for b in buffers]
    items = [b.dtype.itemsize for b in buffers]
    out = []
    for q in range(size):
        lengths, displs = [], []
        for b in range(len(buffers)):
            nbytes = int(n[b][q]) * items[b]
            where = base[b] + int(at[b][q]) * items[b]
            while nbytes > 0:
                step = min(nbytes, _BLOCK)
                lengths.append(step)
                displs.append(where)
                nbytes -= step
                where += step
        if not lengths:
            out.append(MPI.BYTE)
            continue
        t = MPI.BYTE.Create_hindexed(lengths, displs)
        t.Commit()
        out.append(t)
    return out


# --------------------------------------------------------------------------
# repeated moves of fixed rows (ghost updates)
# --------------------------------------------------------------------------

class RowExchange:
    """A route bound for repeated moves of fixed, non-optional rows (a ghost
    update): the byte counts are worked out once per row layout, the send
    buffer is kept, and the rows may be packed while the caller's agreement
    is in flight (``pack``), so a call costs the MPI call alone.  Other
    forms go through :func:`move`.

    What a rank sends itself never enters MPI: one local take puts those
    rows in place.  When every other rank's rows land as one run of the
    result (a ghost layer numbered owned first, then ghosts by owner), MPI
    writes them straight into the result: nothing is copied twice.

    >>> from mpi4py import MPI
    >>> ex = RowExchange(Route(MPI.COMM_SELF, [2, 0], [2], [2]))
    >>> ex.pack(np.array([10.0, 11.0, 12.0]))
    >>> ex.send().tolist()
    [12.0, 10.0]
    """

    def __init__(self, route: Route):
        if route.recv_counts is None:
            route = route.with_recv_counts()
        self.route = route
        me = route.comm.rank
        sc, rc, ss = route.send_counts, route.recv_counts, route.send_starts
        arrived = _starts(rc)                       # where each source's rows arrive
        n_recv = int(rc.sum())
        order = route.order
        self.n_out = n_recv if order is None else len(order)
        # each arrival's place in the result (order may repeat or drop
        # arrivals: then they go through a receive buffer and one take)
        place = None
        if order is None:
            place = np.arange(n_recv, dtype=_I64)
        elif len(order) == n_recv and np.array_equal(
                np.bincount(order, minlength=n_recv), np.ones(n_recv, _I64)):
            place = np.empty(n_recv, _I64)
            place[order] = np.arange(n_recv, dtype=_I64)
        self._by_place = place is not None
        self._layouts: dict = {}
        self._send = self._values = self._pending = None
        if not self._by_place:
            self._pattern = exchange.AlltoallvPattern(route.comm, sc, rc, ss)
            self._rows = route.rows
            return
        # the rows I send myself: a local take into their places
        k = int(sc[me])
        lo = int(ss[me])
        self._own_src = np.arange(lo, lo + k, dtype=_I64) if route.rows is None else \
            np.asarray(route.rows[lo:lo + k], _I64)
        own = place[arrived[me]:arrived[me] + k]
        self._own_dst = slice(int(own[0]), int(own[0]) + k) \
            if k and np.array_equal(own, np.arange(own[0], own[0] + k)) else own
        # the rows for the others, packed one after another
        sc_r, rc_r = sc.copy(), rc.copy()
        sc_r[me] = rc_r[me] = 0
        pick = [np.arange(ss[q], ss[q] + sc[q], dtype=_I64) for q in range(len(sc))
                if q != me and sc[q]]
        at = np.concatenate(pick) if pick else np.zeros(0, _I64)
        self._rows = at if route.rows is None else np.asarray(route.rows, _I64)[at]
        # their arrivals: straight into the result when each source's rows
        # form one run of it, else into a receive buffer, then placed
        runs = all(np.array_equal(place[arrived[q]:arrived[q] + rc[q]],
                                  np.arange(place[arrived[q]], place[arrived[q]] + rc[q]))
                   for q in range(len(rc)) if q != me and rc[q])
        recv_starts = None
        self._remote_place = None
        if runs:                                    # each source's run starts at its place
            recv_starts = np.zeros(len(rc), _I64)
            senders = rc_r > 0
            recv_starts[senders] = place[arrived[senders]]
        else:
            keep = np.ones(n_recv, bool)
            keep[arrived[me]:arrived[me] + k] = False
            self._remote_place = place[keep]
        self._pattern = exchange.AlltoallvPattern(route.comm, sc_r, rc_r, _starts(sc_r),
                                                  recv_starts)

    def _buffers(self, values: np.ndarray):
        key = (values.dtype, values.shape[1:])
        bufs = self._layouts.get(key)
        if bufs is None:
            n_recv = int(self._pattern.recv_counts.sum())
            direct = self._by_place and self._remote_place is None
            bufs = self._layouts[key] = (
                np.empty((len(self._rows) if self._by_place else self.route.n_send,)
                         + values.shape[1:], values.dtype),
                None if direct else np.empty((n_recv,) + values.shape[1:], values.dtype))
        return bufs

    def prepare(self, values: np.ndarray) -> None:
        """Work out the counts for rows like ``values``' (collective where
        an MPI without large counts must agree on rounds): a bound exchange
        calls it once, so that its repeated calls only exchange."""
        sends, _ = self._buffers(values)
        self._pattern._counts(sends)

    def pack(self, values: np.ndarray) -> None:
        """Take the rows to send from ``values`` into the kept buffer (local)."""
        sends, _ = self._buffers(values)
        if self._rows is None:
            sends[...] = values
        else:
            np.take(values, self._rows, axis=0, out=sends, mode="clip")
        self._send = sends
        self._values = values

    def _out(self, out, sends):
        return np.empty((self.n_out,) + sends.shape[1:], sends.dtype) if out is None else out

    def _own(self, out) -> None:
        """My own rows into their places (local)."""
        if isinstance(self._own_dst, slice):
            np.take(self._values, self._own_src, axis=0, out=out[self._own_dst], mode="clip")
        elif len(self._own_src):
            out[self._own_dst] = self._values[self._own_src]

    def send(self, out: np.ndarray | None = None) -> np.ndarray:
        """Send what ``pack`` took; the arrived rows in ``route.order`` (into
        ``out`` -- C-contiguous, the right shape and dtype -- when given)."""
        sends = self._send
        _, recv = self._buffers(sends)
        out = self._out(out, sends)
        if not self._by_place:
            self._pattern.run(sends, recv)
            return np.take(recv, self.route.order, axis=0, out=out, mode="clip")
        self._own(out)
        if recv is None:
            self._pattern.run(sends, out)
        else:
            self._pattern.run(sends, recv)
            out[self._remote_place] = recv
        return out

    def start(self, out: np.ndarray) -> None:
        """``send``, started (nonblocking): what ``pack`` took is on its way
        into ``out``; ``finish()`` completes it.  ``out`` must stay
        untouched until then."""
        sends = self._send
        _, recv = self._buffers(sends)
        target = out if self._by_place and recv is None else recv
        self._pending = (self._pattern.start(sends, target), out, recv)
        if self._by_place:
            self._own(out)                  # while the others' rows travel

    def finish(self) -> np.ndarray:
        """Complete what ``start`` began; returns ``out``."""
        request, out, recv = self._pending
        self._pending = None
        if request is not None:
            request.Wait()
        if not self._by_place:
            np.take(recv, self.route.order, axis=0, out=out, mode="clip")
        elif recv is not None:
            out[self._remote_place] = recv
        return out


# --------------------------------------------------------------------------
# N-d blocks of fixed arrays (redistribution)
# --------------------------------------------------------------------------

class Transfer:
    """One message of a block exchange: ``peer`` is the partner rank;
    ``index`` one position list per dimension (a slice or an int64 array)
    in the local buffer of the rank the transfer belongs to.  The elements
    are the tensor product of the lists in C order -- the same order on
    both sides."""

    __slots__ = ("peer", "index")

    def __init__(self, peer: int, index: tuple):
        self.peer, self.index = int(peer), tuple(index)

    @property
    def shape(self) -> tuple:
        return tuple(index_len(i) for i in self.index)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def rectangular(self) -> bool:
        """Every dimension a step-1 slice: a slab (one MPI subarray)."""
        return all(isinstance(i, slice) and i.step in (None, 1) for i in self.index)

    def __eq__(self, other):
        return isinstance(other, Transfer) and (self.peer, _key(self.index)) == \
            (other.peer, _key(other.index))

    def __repr__(self):
        return f"Transfer(peer={self.peer}, index={self.index!r})"


def _key(index):
    return tuple((i.start, i.stop, i.step) if isinstance(i, slice) else tuple(i.tolist())
                 for i in index)


def compress(pos: np.ndarray):
    """An int64 position list as a ``slice`` when it is an increasing
    arithmetic progression (step >= 1), else the array itself.

    >>> compress(np.array([2, 4, 6])), compress(np.array([5]))
    (slice(2, 7, 2), slice(5, 6, 1))
    >>> compress(np.array([0, 1, 3]))
    array([0, 1, 3])
    """
    n = len(pos)
    if n == 0:
        return slice(0, 0, 1)
    first = int(pos[0])
    if n == 1:
        return slice(first, first + 1, 1)
    step = int(pos[1]) - first
    if step >= 1 and int(pos[-1]) == first + step * (n - 1):
        d = np.diff(pos)
        if (d == step).all():
            return slice(first, int(pos[-1]) + 1, step)
    return pos


def index_len(index) -> int:
    """How many positions a slice or position list holds."""
    if isinstance(index, slice):
        return len(range(index.start, index.stop, index.step or 1))
    return len(index)


def positions(index) -> np.ndarray:
    """A slice or position list as an int64 array."""
    if isinstance(index, slice):
        return np.arange(index.start, index.stop, index.step or 1, dtype=_I64)
    return np.asarray(index, dtype=_I64)


def runs(index) -> tuple:
    """Maximal runs of consecutive positions: ``(starts, lengths)``.

    >>> [a.tolist() for a in runs(np.array([0, 1, 2, 7, 8, 4]))]
    [[0, 7, 4], [3, 2, 1]]
    """
    if isinstance(index, slice) and index.step in (None, 1):
        n = index.stop - index.start
        if n <= 0:
            return np.zeros(0, _I64), np.zeros(0, _I64)
        return np.array([index.start], _I64), np.array([n], _I64)
    pos = positions(index)
    if pos.size == 0:
        return np.zeros(0, _I64), np.zeros(0, _I64)
    breaks = np.flatnonzero(np.diff(pos) != 1) + 1
    starts_at = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts_at, [pos.size]]))
    return pos[starts_at], lengths.astype(_I64)


# An element type as an MPI datatype of the same size: only bytes are copied.
_BY_SIZE = {1: MPI.UINT8_T, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
# "auto" uses derived datatypes while the average run is at least this many
# bytes (shorter runs: NumPy packing wins; see benchmarks/movement.py).
MIN_RUN_BYTES = 256
# ... and while the arrays have fewer dims than this: a subarray of 3+ dims
# split in an inner dim (a slab FFT's transpose) is a nest of strides that
# MPICH's datatype engine copies 2-4x slower than NumPy packs it (256^3
# complex128 on 4 ranks: 0.141 s against 0.037 s; a 2-D transpose: even)
NESTED_DIMS = 3
METHODS = ("auto", "datatypes", "packed")


def _base_type(itemsize: int):
    t = _BY_SIZE.get(itemsize)
    if t is None:
        t = MPI.BYTE.Create_contiguous(itemsize).Commit()
        _BY_SIZE[itemsize] = t
    return t


def _datatype(base, shape: tuple, itemsize: int, index: tuple):
    """A committed datatype selecting a transfer's elements of a
    C-contiguous buffer of ``shape`` (displacement 0)."""
    if all(isinstance(i, slice) and i.step in (None, 1) for i in index):
        return base.Create_subarray(list(shape), [i.stop - i.start for i in index],
                                    [i.start for i in index]).Commit()
    strides = [itemsize * math.prod(shape[k + 1:]) for k in range(len(shape))]
    t, temps = base, []
    for k in reversed(range(len(shape))):
        starts, lengths = runs(index[k])
        if k != len(shape) - 1:           # one step along dim k = one inner row
            t = t.Create_resized(0, strides[k])
            temps.append(t)
        t = t.Create_hindexed(lengths.tolist(), (starts * strides[k]).tolist())
        temps.append(t)
    t.Commit()
    for x in temps[:-1]:
        x.Free()
    return t


def _take(values: np.ndarray, index: tuple) -> np.ndarray:
    """A transfer's elements of ``values`` (C order): a view when every
    dimension is a slice, else a copy."""
    v = values[tuple(i if isinstance(i, slice) else slice(None) for i in index)]
    for k, i in enumerate(index):
        if not isinstance(i, slice):
            v = np.take(v, i, axis=k)
    return v


def _put(out: np.ndarray, index: tuple, chunk: np.ndarray) -> None:
    chunk = chunk.reshape(tuple(index_len(i) for i in index))
    if all(isinstance(i, slice) for i in index):
        out[index] = chunk
    else:
        out[np.ix_(*[positions(i) for i in index])] = chunk


def _joint_runs(src, dst):
    """Runs along which both position lists advance by one."""
    s, d = positions(src), positions(dst)
    if s.size == 0:
        return s, d, s
    brk = np.flatnonzero((np.diff(s) != 1) | (np.diff(d) != 1)) + 1
    first = np.concatenate([[0], brk])
    lengths = np.diff(np.concatenate([first, [s.size]]))
    return s[first], d[first], lengths


def _slab_copies(src_index, dst_index, max_runs: int = 4096):
    """How to copy the rank's own share ``out[dst_index] = values[src_index]``
    with slices: a list of (source slices, target slices), or None when
    fancy indexing is the better way (run-by-run slice copies are far
    cheaper than fancy indexing of a block-cyclic block)."""
    arrays = [k for k, i in enumerate(src_index) if not isinstance(i, slice)] + \
        [k for k, i in enumerate(dst_index) if not isinstance(i, slice)]
    if not arrays:
        return [(src_index, dst_index)]
    if len(set(arrays)) == 1:
        k = arrays[0]
        ss, ds, ls = _joint_runs(src_index[k], dst_index[k])
        if len(ls) <= max_runs and len(ls) * 4 <= ls.sum():
            src_sl, dst_sl, out = list(src_index), list(dst_index), []
            for a, b, n in zip(ss.tolist(), ds.tolist(), ls.tolist()):
                src_sl[k], dst_sl[k] = slice(a, a + n), slice(b, b + n)
                out.append((tuple(src_sl), tuple(dst_sl)))
            return out
    return None


def _flat_positions(index: tuple, shape: tuple) -> np.ndarray:
    """The C-order linear positions, in a buffer of ``shape``, of a
    transfer's elements (the tensor product of its per-dimension lists)."""
    if len(index) == 1:                  # 1-d: the list itself (no copy)
        return positions(index[0])
    flat = np.zeros(1, np.intp)
    for i, n in zip(index, shape):
        flat = (flat[:, None] * n + positions(i)[None, :]).reshape(-1)
    return flat


def _concat_flat(transfers, shape) -> np.ndarray:
    if not transfers:
        return np.zeros(0, np.intp)
    return np.concatenate([_flat_positions(t.index, shape) for t in transfers])


class _Packing:
    """The packed path of one block exchange, worked out once: the
    messages to and from the other ranks and their counts.  When any
    message is scattered elements, also one linear gather index over the
    source buffer and one over the received buffer (the inverse of where
    the received elements go: every target position receives exactly one),
    so a call is two ``np.take`` and one exchange."""

    def __init__(self, sends, recvs, src_shape, dst_shape, me: int, size: int, flat=True):
        # flat=False: never a linear index (one-shot exchanges -- a root
        # scatter -- copy transfer by transfer, strided slices as views)
        scattered = flat and any(not t.rectangular for t in sends + recvs)
        # scattered: our own share rides along in the two gathers; slabs:
        # NumPy copies it directly
        self.with_own = scattered
        self.sends = [t for t in sends if scattered or t.peer != me]
        self.recvs = [t for t in recvs if scattered or t.peer != me]
        self.send_counts = np.zeros(size, _I64)
        self.recv_counts = np.zeros(size, _I64)
        for t in self.sends:
            self.send_counts[t.peer] = t.size
        for t in self.recvs:
            self.recv_counts[t.peer] = t.size
        self.send_at = list(itertools.accumulate((t.size for t in self.sends), initial=0))
        self.recv_at = list(itertools.accumulate((t.size for t in self.recvs), initial=0))
        self.send_flat = self.recv_flat = self.recv_gather = None
        if scattered:
            self.send_flat = _concat_flat(self.sends, src_shape)
            where = _concat_flat(self.recvs, dst_shape)
            n_out = 0 if dst_shape is None else math.prod(dst_shape)
            if len(where) == n_out:             # a permutation of the target: invert it
                self.recv_gather = np.empty(n_out, np.intp)
                self.recv_gather[where] = np.arange(n_out)
            else:
                self.recv_flat = where
        self._bytes: dict = {}

    def buffer(self, which: str, dtype) -> np.ndarray:
        """The kept send or receive message buffer, as ``dtype`` items."""
        n = self.send_at[-1] if which == "send" else self.recv_at[-1]
        have = self._bytes.get(which)
        if have is None or have.nbytes < n * dtype.itemsize:
            have = self._bytes[which] = np.empty(n * dtype.itemsize, np.uint8)
        return have[:n * dtype.itemsize].view(dtype)


class BlockExchange:
    """Moves N-d blocks of fixed arrays: this rank's ``sends`` (Transfers
    into its source buffer of ``src_shape``) and ``recvs`` (into its target
    buffer of ``dst_shape``; None: this rank holds no target) over ``comm``.
    Reusable; derived datatypes are built once per element size and kept
    until ``free``.

    ``method="datatypes"``: one ``Alltoallw`` with derived datatypes -- a
    subarray for a rectangular slab (what mpi4py-fft's ``Transfer`` does
    for pencils), nested ``hindexed`` runs otherwise; MPI reads and writes
    the arrays in place, the rank's own share is copied by NumPy.
    ``"packed"``: NumPy gathers each peer's elements into one buffer, one
    exchange, NumPy puts them in place.  ``"auto"``: datatypes when messages
    are long runs, packed when they are scattered elements -- decided from
    ``avg_run_bytes`` (the same on every rank when the caller passes a
    global figure).  The validity of ``?T`` data (a byte mask) travels in
    the same call as its values."""

    def __init__(self, comm, sends, recvs, src_shape, dst_shape, avg_run_bytes=None,
                 flat=True, ndim=None):
        self.comm = comm
        # the arrays' dims, the same on every rank (a rank outside the source
        # or the target has one shape only): part of "auto"'s choice
        self.ndim = ndim if ndim is not None else \
            len(src_shape if src_shape is not None else dst_shape or ())
        self.flat = flat
        # empty messages are not messages (and some MPIs refuse an empty subarray)
        self.sends = [t for t in sends if t.size]
        self.recvs = [t for t in recvs if t.size]
        self.src_shape, self.dst_shape = src_shape, dst_shape
        self.avg_run_bytes = avg_run_bytes
        self._types: dict = {}
        self._packed = None
        self._own = None
        self._moved: set = set()            # element sizes whose buffers are made

    def choose(self, method: str, itemsize: int) -> str:
        if method != "auto":
            return method
        if self.avg_run_bytes is None:
            return "packed"
        if self.ndim >= NESTED_DIMS:
            return "packed"
        return "datatypes" if self.avg_run_bytes(itemsize) >= MIN_RUN_BYTES else "packed"

    def run(self, values: np.ndarray | None, dtype, method: str = "auto", mask=None, out=None):
        """Move ``values`` (this rank's source buffer, C-contiguous; None
        outside the source) and ``mask`` (its validity bytes, or None);
        returns ``(target values, target mask)`` (None outside the target).
        Copies into new arrays -- the values into ``out`` when given.
        ``prepare``'s buffers are made under a verdict (``_made``)."""
        return self._made(lambda: self.prepare(values, dtype, method, mask, out),
                          np.dtype(dtype), mask is not None, False)()

    def prepare(self, values: np.ndarray | None, dtype, method: str = "auto", mask=None,
                out=None):
        """``run`` in two steps: this rank's local work now -- the target
        arrays allocated, the messages packed: where a rank can fail alone
        (memory) -- and a function that does the exchange and returns
        ``run``'s result.  A caller whose vote is still to be cast prepares
        first: a failure here then travels in the vote (no message more)."""
        dtype = np.dtype(dtype)
        shape = self.dst_shape
        if out is None and shape is not None:
            out = np.empty(shape, dtype)
        out_mask = None if shape is None or mask is None else np.empty(shape, np.uint8)
        if values is None:
            values = np.empty(0, dtype)
            mask = None if mask is None else np.empty(0, np.uint8)
        pairs = [(values, out)] + ([] if mask is None and out_mask is None else
                                   [(mask if mask is not None else np.empty(0, np.uint8),
                                     out_mask)])
        if self.choose(method, dtype.itemsize) == "datatypes":
            exchange = functools.partial(self._alltoallw, pairs)
        else:
            exchange = self._packed_exchange(pairs)

        def go():
            exchange()
            return out, out_mask
        return go

    def run_parts(self, p: Parts | None, info, method: str = "auto",
                  out: Parts | None = None, kept: bool = False,
                  held: Held | None = None) -> Parts | None:
        """``run`` on this rank's source Parts (None outside the source;
        ``info``: the agreed type), validity included: the target's Parts
        (None outside the target) -- written into ``out`` (Parts of the
        target's layout, C-contiguous values) when given.  ``kept``: every
        rank of the target passes its kept ``out`` (a bound redistribution,
        the same on every rank): then a move of fixed values that made its
        buffers once makes none, and needs no verdict.  ``held``: the
        caller's step before it, whose failure rides the verdict (then
        ``p`` and ``out`` are not looked at)."""
        return self._made(lambda: self.prepare_parts(p, info, method, out),
                          info.numpy_dtype, info.optional, kept, held)()

    def _made(self, prepare, dtype, mask: bool, kept: bool, held: Held | None = None):
        """``prepare()``, its buffers made where a rank can run out of memory
        alone: a verdict (one small message) before the exchange, so that
        a rank's failure (or ``held``'s, the caller's step before) is the
        same error everywhere -- unless nothing is made and nothing held
        (decided from agreed values only: ``kept``, validity, an element
        size moved before)."""
        makes = held is not None or not kept or mask or dtype.itemsize not in self._moved
        self._moved.add(dtype.itemsize)
        if not makes:
            return prepare()
        held = held if held is not None else Held(BUFFERS)
        go = None
        if not held.failed:
            with held:
                go = prepare()
        agree(self.comm, held.error)
        return go

    def prepare_parts(self, p: Parts | None, info, method: str = "auto",
                      out: Parts | None = None):
        """``run_parts`` in ``prepare``'s two steps."""
        values = mask = None
        if p is not None:
            values = np.ascontiguousarray(p.values)
            if info.optional:
                mask = np.ascontiguousarray(p.valid_mask()).view(np.uint8)
        elif info.optional:
            mask = np.zeros(0, np.uint8)
        go = self.prepare(values, info.numpy_dtype, method, mask=mask,
                          out=None if out is None else out.values)

        def finish():
            got_values, got = go()
            if got_values is None:
                return None
            validity = None if got is None else pack_validity(got.view(bool))
            if out is not None:
                if validity is not None:
                    out.validity[:] = validity
                return out
            return Parts(info.with_shape(got_values.shape), got_values, validity)
        return finish

    # -- datatypes ----------------------------------------------------------
    def _types_for(self, itemsize):
        if itemsize not in self._types:
            size, me = self.comm.size, self.comm.rank
            base = _base_type(itemsize)
            stypes, rtypes = [base] * size, [base] * size
            for t in self.sends:
                if t.peer != me:
                    stypes[t.peer] = _datatype(base, self.src_shape, itemsize, t.index)
            for t in self.recvs:
                if t.peer != me:
                    rtypes[t.peer] = _datatype(base, self.dst_shape, itemsize, t.index)
            # our own share is copied by NumPy (measured faster than MPI's
            # datatype self-copy: 33 vs 48 ms for 2048 x 4096 float64)
            scounts, rcounts = [0] * size, [0] * size
            for t in self.sends:
                scounts[t.peer] = int(t.peer != me)
            for t in self.recvs:
                rcounts[t.peer] = int(t.peer != me)
            self._types[itemsize] = (stypes, rtypes, scounts, rcounts)
        return self._types[itemsize]

    def _alltoallw(self, pairs):
        size = self.comm.size
        zeros = [0] * size
        if len(pairs) == 1:
            (values, out), = pairs
            stypes, rtypes, scounts, rcounts = self._types_for(values.dtype.itemsize)
            recvbuf = out if out is not None else np.empty(0, values.dtype)
            self.comm.Alltoallw([values, (scounts, zeros), stypes],
                                [recvbuf, (rcounts, zeros), rtypes])
        else:                     # values and validity: one struct per peer, in place
            tables = [self._types_for(v.dtype.itemsize) for v, _ in pairs]
            scounts, rcounts = tables[0][2], tables[0][3]
            stypes = _structs([(v, t[0]) for (v, _), t in zip(pairs, tables)], scounts)
            rtypes = _structs([(o if o is not None else np.empty(0, v.dtype), t[1])
                               for (v, o), t in zip(pairs, tables)], rcounts)
            try:
                self.comm.Alltoallw([MPI.BOTTOM, (scounts, zeros), stypes],
                                    [MPI.BOTTOM, (rcounts, zeros), rtypes])
            finally:
                for t in stypes + rtypes:
                    if t != MPI.BYTE:
                        t.Free()
        for values, out in pairs:
            self._copy_own(values, out)

    def _copy_own(self, values, out):
        """Our own share, copied by NumPy (the copy worked out once)."""
        if self._own is None:
            me = self.comm.rank
            own = [t for t in self.sends if t.peer == me]
            mine = [t for t in self.recvs if t.peer == me]
            self._own = () if not own else \
                (own[0].index, mine[0].index, _slab_copies(own[0].index, mine[0].index))
        if self._own and out is not None:
            src, dst, slabs = self._own
            if slabs is None:
                _put(out, dst, _take(values, src))
            for a, b in slabs or ():
                out[b] = values[a]

    # -- packed -------------------------------------------------------------
    def _packing(self) -> _Packing:
        if self._packed is None:
            self._packed = _Packing(self.sends, self.recvs, self.src_shape, self.dst_shape,
                                    self.comm.rank, self.comm.size, self.flat)
        return self._packed

    def _packed_exchange(self, pairs):
        """The packed exchange of ``pairs`` in ``prepare``'s steps: the
        messages packed now; returns the exchange and the unpacking."""
        pk = self._packing()
        sends, recvs = [], []
        for k, (values, out) in enumerate(pairs):
            if not pk.with_own:
                self._copy_own(values, out)
            dtype = values.dtype
            send = pk.buffer("send", dtype) if k == 0 else np.empty(pk.send_at[-1], dtype)
            recv = pk.buffer("recv", dtype) if k == 0 else np.empty(pk.recv_at[-1], dtype)
            # the indices are ours and in range: mode="clip" skips NumPy's checks
            if pk.send_flat is not None:        # scattered elements: one gather ...
                np.take(values.reshape(-1), pk.send_flat, out=send, mode="clip")
            else:                               # slabs: one copy each, into the message
                for t, at in zip(pk.sends, pk.send_at):
                    send[at:at + t.size].reshape(t.shape)[...] = _take(values, t.index)
            sends.append(send)
            recvs.append(recv)

        def exchange():
            n = len(pairs)
            _send_buffers(self.comm, sends, [_starts(pk.send_counts)] * n,
                          [pk.send_counts] * n, recvs, [_starts(pk.recv_counts)] * n,
                          [pk.recv_counts] * n)
            for (_, out), recv in zip(pairs, recvs):
                if out is None:
                    continue
                if pk.recv_gather is not None:      # ... one exchange, one gather into place
                    np.take(recv, pk.recv_gather, out=out.reshape(-1), mode="clip")
                elif pk.recv_flat is not None:
                    out.reshape(-1)[pk.recv_flat] = recv
                else:
                    for t, at in zip(pk.recvs, pk.recv_at):
                        _put(out, t.index, recv[at:at + t.size])
        return exchange

    def free(self) -> None:
        """Release the derived datatypes (the plan store calls this when it
        drops the exchange)."""
        self._packed = None
        if MPI.Is_finalized():
            self._types.clear()
            return
        for stypes, rtypes, _, _ in self._types.values():
            for t in stypes + rtypes:
                if t not in _BY_SIZE.values():
                    t.Free()
        self._types.clear()


def _structs(arrays_types, counts) -> list:
    """Per peer: one struct of each array's datatype at the array's address
    (MPI.BYTE where the peer gets nothing)."""
    out = []
    for q, c in enumerate(counts):
        if not c:
            out.append(MPI.BYTE)
            continue
        blocks = [(MPI.Get_address(a) if a.size else 0, types[q]) for a, types in arrays_types]
        t = MPI.Datatype.Create_struct([1] * len(blocks), [w for w, _ in blocks],
                                       [t for _, t in blocks])
        t.Commit()
        out.append(t)
    return out


# --------------------------------------------------------------------------
# neighbours (halo exchange)
# --------------------------------------------------------------------------

class _Messages:
    """The buffers of one exchange direction on one local buffer: a region
    that is contiguous in the buffer goes straight from / into it (a view);
    any other region travels through a packed copy.  (Measured on MPICH 4:
    NumPy packing beats subarray datatypes ~5x for the column slabs of a
    2-d halo.)"""

    def __init__(self, buf, outgoing, incoming):
        self.out = [(peer, tag, *self._slot(buf, region)) for peer, tag, region in outgoing]
        self.inc = [(peer, tag, *self._slot(buf, region)) for peer, tag, region in incoming]

    @staticmethod
    def _slot(buf, region):
        view = buf[region]
        if view.flags.c_contiguous:
            return view, None
        return np.empty(view.shape, buf.dtype), region

    def requests(self, comm, persistent, tag_shift=0):
        recv = comm.Recv_init if persistent else comm.Irecv
        send = comm.Send_init if persistent else comm.Isend
        # as bytes: records and fixed strings have no MPI datatype of their own
        return ([recv([b, MPI.BYTE], source=peer, tag=tag + tag_shift)
                 for peer, tag, b, _ in self.inc]
                + [send([b, MPI.BYTE], dest=peer, tag=tag + tag_shift)
                   for peer, tag, b, _ in self.out])

    def pack(self, buf):
        for _, _, b, region in self.out:
            if region is not None:
                np.copyto(b, buf[region])

    def unpack(self, buf):
        for _, _, b, region in self.inc:
            if region is not None:
                buf[region] = b


class NeighbourExchange:
    """Regions of local buffers to and from a few neighbours: ``sends``
    and ``recvs`` are ``(peer, tag, region)`` (a region: a tuple of slices
    into the buffer), ``copies`` ``(target region, source region)`` pairs
    inside this rank's own buffer.  ``forward`` fills the received regions
    from the peers' sent ones; ``reverse`` sends the received regions back
    and combines them into the sent ones.  Several buffers of one layout
    (values and their validity bytes) move in one round of messages.  Bound
    to buffers with ``bind``, the forward messages are persistent requests
    -- one ``Startall`` and one ``Waitall`` a call -- held while the
    buffers live (weakly: binding keeps no array alive)."""

    _SHIFT = 1 << 12            # tags of the second buffer: distinct from the first's

    def __init__(self, comm, sends, recvs, copies):
        self.comm = comm
        self.sends, self.recvs, self.copies = tuple(sends), tuple(recvs), tuple(copies)
        self._bound = None                      # (weak buffers, messages, requests)

    def _is_bound(self, bufs) -> bool:
        return self._bound is not None and len(self._bound[0]) == len(bufs) and \
            all(r() is b for r, b in zip(self._bound[0], bufs))

    def bind(self, *bufs) -> None:
        """Keep persistent requests for these buffers (released on rebind,
        by ``release``, or with the exchange)."""
        if self._is_bound(bufs):
            return
        self.release()
        msgs = [_Messages(b, self.sends, self.recvs) for b in bufs]
        reqs = [r for k, m in enumerate(msgs)
                for r in m.requests(self.comm, True, k * self._SHIFT)]
        self._bound = (tuple(weakref.ref(b) for b in bufs), msgs, reqs)

    def release(self) -> None:
        if self._bound is not None:
            _free_requests(self._bound[2])
            self._bound = None

    def run_bound(self, buf) -> None:
        """``forward`` of one buffer through persistent requests, bound to
        it first if they are not yet (the repeated halo exchange)."""
        if self._bound is None or self._bound[0][0]() is not buf or len(self._bound[0]) != 1:
            self.bind(buf)
        self.start_bound()
        self.wait_bound()

    def start_bound(self) -> None:
        """Start the bound forward exchange: pack what leaves, start the
        persistent requests, make the copies within the rank.  The sent
        regions must not be written until ``wait_bound``."""
        refs, msgs, reqs = self._bound
        for m, r in zip(msgs, refs):
            m.pack(r())
        MPI.Prequest.Startall(reqs)
        for r in refs:
            b = r()
            for ghost, src in self.copies:
                b[ghost] = b[src]

    def wait_bound(self) -> None:
        """Complete the bound forward exchange: the received regions hold
        the peers' values."""
        refs, msgs, reqs = self._bound
        MPI.Request.Waitall(reqs)
        for m, r in zip(msgs, refs):
            m.unpack(r())

    def forward(self, *bufs) -> None:
        """Received regions := the peers' sent ones; copies within the rank."""
        if self._is_bound(bufs):
            _, msgs, reqs = self._bound
            for m, b in zip(msgs, bufs):
                m.pack(b)
            MPI.Prequest.Startall(reqs)
        else:
            msgs = [_Messages(b, self.sends, self.recvs) for b in bufs]
            for m, b in zip(msgs, bufs):
                m.pack(b)
            reqs = [r for k, m in enumerate(msgs)
                    for r in m.requests(self.comm, False, k * self._SHIFT)]
        for b in bufs:
            for ghost, src in self.copies:
                b[ghost] = b[src]
        MPI.Request.Waitall(reqs)
        for m, b in zip(msgs, bufs):
            m.unpack(b)

    def move(self, src, dst, copies=()) -> None:
        """The sent regions of ``src`` to the peers, the received ones into
        ``dst`` -- another buffer -- and ``dst[target] = src[source]`` for
        each of ``copies`` meanwhile (a shift: ``xdap.movement.shift``)."""
        out = _Messages(src, self.sends, ())
        into = _Messages(dst, (), self.recvs)
        out.pack(src)
        reqs = into.requests(self.comm, False) + out.requests(self.comm, False)
        for target, source in copies:
            dst[target] = src[source]
        MPI.Request.Waitall(reqs)
        into.unpack(dst)

    def forward_parts(self, p: Parts) -> None:
        """``forward`` of a fixed Parts in place, validity in the same
        messages (as bytes: the bitmap is unpacked once and packed once)."""
        if p.validity is None:
            self.forward(p.values)
            return
        mask = p.valid_mask().view(np.uint8).copy()
        self.forward(p.values, mask)
        p.validity[:] = pack_validity(mask.view(bool))

    def reverse(self, bufs, combine) -> None:
        """Owners combine what their neighbours hold in the received
        regions: the forward messages backwards, into separate buffers;
        ``combine(buffers, region, arrived)`` is called in plan order (so the
        last direction wins where several regions map to one cell)."""
        tmp = [[np.empty([s.stop - s.start for s in r], b.dtype) for _, _, r in self.sends]
               for b in bufs]
        reqs = []
        for k, b in enumerate(bufs):
            shift = k * self._SHIFT
            reqs += [self.comm.Irecv([t, MPI.BYTE], source=peer, tag=tag + shift)
                     for (peer, tag, _), t in zip(self.sends, tmp[k])]
            reqs += [self.comm.Isend([np.ascontiguousarray(b[r]), MPI.BYTE], dest=peer,
                                     tag=tag + shift) for peer, tag, r in self.recvs]
        own = [(src, [b[ghost].copy() for b in bufs]) for ghost, src in self.copies]
        MPI.Request.Waitall(reqs)
        for i, (_, _, region) in enumerate(self.sends):
            combine(bufs, region, [t[i] for t in tmp])
        for region, got in own:
            combine(bufs, region, got)


def _free_requests(reqs):
    if MPI.Is_initialized() and not MPI.Is_finalized():
        for r in reqs:
            r.Free()
