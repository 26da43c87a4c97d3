"""Halo exchange: fill the communication padding of padded block
dimensions from the owning neighbours (``exchange_halos``), and the reverse
(``accumulate_halos``: ghost values pushed back into their owners with
combine mode ``"add"`` or ``"replace"``).

Ghost cells, per block dimension of a rank at grid position p:

* communication padding (DAP): the neighbours' cells, filled from them;
* edge padding of a *periodic* dimension (DAP boundary padding, counted in
  ``size``): filled from the opposite end of the interior -- global cell
  ``g < lo`` from ``g + (size - lo - hi)``, ``g >= size - hi`` from
  ``g - (size - lo - hi)`` -- so the result equals
  ``numpy.pad(interior, (lo, hi), mode="wrap")``.  Without ``periodic``
  edge padding is owned data and is left alone.

Every combination of sides is a message, corners included (3**ndim - 1
neighbours at most, as PETSc's DMDA box stencil), so one round of
nonblocking sends and receives completes the exchange.  The plan
(``halo_plan``) is plain data computed from the Distribution alone; the
transport's ``NeighbourExchange`` sends contiguous slabs straight from the
buffer and packs the others (faster than MPI subarray datatypes here).  Its
persistent requests for an array's buffer are kept in the communicator's
plan store, so repeated exchanges of one array cost one Startall and one
Waitall.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(6.0), dist=("b",), padding=((1, 1),), periodic=(True,),
...                    comm=MPI.COMM_SELF)
>>> _ = exchange(d, p); p.values.tolist()        # cells 0 and 5 are ghosts of 4 and 1
[4.0, 1.0, 2.0, 3.0, 4.0, 1.0]
>>> accumulate(d, p, mode="add"); p.values.tolist()   # ghosts added back into 4 and 1
[4.0, 2.0, 2.0, 3.0, 8.0, 1.0]
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .. import plans
from .. import arguments
from ..agreement import agree
from ..arraylike import is_distributed
from ..contract import Repeats, collective
from ..arraylike import unwrap
from ..bitmaps import pack_validity
from ..rows import leaf_counts, leaf_ranges
from ..repeats import Rides, call_lane
from ..transport import NeighbourExchange

__all__ = ["HaloPlan", "halo_plan", "exchange", "accumulate", "exchange_halos",
           "accumulate_halos", "bind_halos", "BoundHalos", "riding_halos", "RidingHalos"]

_TAG_BASE = 0x4A10          # tags TAG_BASE + direction code (< 3**ndim)


@dataclass(frozen=True)
class HaloPlan:
    """What one rank receives, sends and copies in a halo exchange.

    recvs   ((peer, tag, region), ...): ghost regions of this rank's buffer
            and the rank that owns their values
    sends   ((peer, tag, region), ...): regions of this rank's buffer that a
            neighbour needs, with the tag that neighbour expects
    copies  ((ghost_region, source_region), ...): ghosts filled from this
            rank's own cells (periodic wrap on a grid of size 1)
    shape   the local buffer shape

    Regions are tuples of slices into the local buffer.  The reverse
    exchange uses the same plan with the roles of sends and recvs swapped.
    """
    recvs: tuple
    sends: tuple
    copies: tuple
    shape: tuple

    @property
    def ghost_regions(self) -> tuple:
        """Every ghost region of this rank (received or copied)."""
        return tuple(r for _, _, r in self.recvs) + tuple(g for g, _ in self.copies)

    @property
    def empty(self) -> bool:
        return not (self.recvs or self.sends or self.copies)


def _dim_entries(m, p: int) -> dict:
    """Per direction -1/0/+1 along one dimension, for grid position p:
    (recv_lo, recv_hi, source position q, src_lo, src_hi) in local
    positions of p and q.  Pure; raises ValueError when a periodic wrap
    would read ghost cells."""
    n = m.local_size(p)
    P, N = m.grid_size, m.size
    L, H = m.padding[0][0], m.padding[-1][1]
    per = m.periodic and (L or H)
    span = N - L - H                       # the periodic interior's length

    def ghosts(r):
        lo, hi = m.comm_padding(r)
        if per and r == 0:
            lo = L
        if per and r == P - 1:
            hi = H
        return lo, hi

    lo, hi = ghosts(p)
    out = {0: (lo, n - hi, p, lo, n - hi)}
    for d, (rlo, rhi) in ((-1, (0, lo)), (+1, (n - hi, n))):
        if rhi == rlo:
            continue
        start = m.buffer_range(p)[0]                     # only padded blocks have ghosts
        g0, g1 = start + rlo, start + rhi                # global cells of the ghosts
        q = p + d
        if not 0 <= q < P:                                # periodic edge: wrap
            q %= P
            shift = span if d < 0 else -span
            g0, g1 = g0 + shift, g1 + shift
        qstart = m.buffer_range(q)[0]
        qlo, qhi = ghosts(q)
        s0, s1 = g0 - qstart, g1 - qstart
        if span < 0 or s0 < qlo or s1 > m.local_size(q) - qhi:
            raise ValueError(
                f"halo exchange: the ghost cells [{start + rlo}, {start + rhi}) of grid rank {p} "
                f"(block dimension of size {N}, padding {m.padding[p]}"
                f"{', periodic' if m.periodic else ''}) would be filled from cells that grid rank "
                f"{q} does not own as interior; give every rank at least as many interior "
                "cells as the padding is wide")
        out[d] = (rlo, rhi, q, s0, s1)
    return out


def halo_plan(distribution, rank: int | None = None) -> HaloPlan:
    """The halo plan of ``rank`` (default: this rank) -- pure, no MPI.

    >>> from mpi4py import MPI
    >>> from xdap.distribution import make_distribution
    >>> d = make_distribution((8, 8), ("b", "b"), (1, 1), MPI.COMM_SELF, padding=((1, 1), (1, 1)),
    ...                       periodic=(True, False))
    >>> [(g[0], s[0]) for g, s in halo_plan(d).copies]   # rows 0 and 7 from rows 6 and 1
    [(slice(0, 1, None), slice(6, 7, None)), (slice(7, 8, None), slice(1, 2, None))]
    """
    d = distribution
    me = d.comm.rank if rank is None else int(rank)
    coords = d.coords_of(me)
    maps = d.maps
    # Every grid position's entries are checked, not only this rank's: a
    # plan error is then the same on every rank without communicating.
    for m in maps:
        for c in range(m.grid_size):
            _dim_entries(m, c)
    mine = [_dim_entries(m, c) for m, c in zip(maps, coords)]
    recvs, sends, copies = [], [], []
    for code, delta in enumerate(itertools.product((-1, 0, 1), repeat=len(maps))):
        if not any(delta):
            continue
        tag = _TAG_BASE + code
        # receive: my ghosts in direction delta, from the rank at q
        if all(k in e for k, e in zip(delta, mine)):
            ent = [e[k] for k, e in zip(delta, mine)]
            region = tuple(slice(e[0], e[1]) for e in ent)
            src = tuple(slice(e[3], e[4]) for e in ent)
            peer = d.rank_of(tuple(e[2] for e in ent))
            if peer == me:
                copies.append((region, src))
            else:
                recvs.append((peer, tag, region))
        # send: the rank whose direction-delta ghosts I own
        target = []
        for m, c, k in zip(maps, coords, delta):
            t = c - k
            if not 0 <= t < m.grid_size:
                if not m.periodic:
                    break
                t %= m.grid_size
            e = _dim_entries(m, t).get(k)
            if e is None or e[2] != c:
                break
            target.append((t, e))
        else:
            peer = d.rank_of(tuple(t for t, _ in target))
            if peer != me:
                sends.append((peer, tag, tuple(slice(e[3], e[4]) for _, e in target)))
    return HaloPlan(tuple(recvs), tuple(sends), tuple(copies), d.local_shape)


def _plan(d) -> HaloPlan:
    """This rank's plan, cached on the distribution's fingerprint."""
    return plans.pure.get_or_make(plans.Key("halo", (d.fingerprint(), d.comm.size, d.comm.rank)),
                                  lambda: halo_plan(d))


def _plan_for(d, p, what) -> HaloPlan:
    """The plan in the index space of ``p.values``: the rows' plan itself
    for fixed data; for ragged data (padded rows) each region of rows
    becomes the range of their leaves, after checking (collectively) that
    every ghost row has as many leaves as the row it copies."""
    plan = _plan(d)
    if not p.info.ragged:
        return plan
    _check_ghost_rows(d, p, plan, what)
    bounds = _leaf_bounds(p, plan)
    leaves = lambda region: (slice(bounds[region[0].start], bounds[region[0].stop]),)  # noqa: E731
    return HaloPlan(tuple((q, t, leaves(r)) for q, t, r in plan.recvs),
                    tuple((q, t, leaves(r)) for q, t, r in plan.sends),
                    tuple((leaves(g), leaves(s)) for g, s in plan.copies), p.values.shape)


def _leaf_bounds(p, plan) -> dict:
    """{row index: its first leaf} for the row bounds the plan's regions use."""
    rows = sorted({b for _, _, r in plan.recvs + plan.sends for b in (r[0].start, r[0].stop)}
                  | {b for g, s in plan.copies for r in (g, s) for b in (r[0].start, r[0].stop)})
    starts, _ = leaf_ranges(p.offsets, np.minimum(rows, p.nrows - 1))
    total = len(p.values)
    return {r: (total if r >= p.nrows else int(s)) for r, s in zip(rows, starts)}


def _check_ghost_rows(d, p, plan, what):
    """Every rank: do my ghost rows hold as many leaves as their owners'?"""
    counts = leaf_counts(p).astype(np.int64)
    got = counts.copy()
    _exchange(plan, d.comm).forward(got)
    error = None
    bad = np.flatnonzero(got != counts)
    if bad.size:
        k = int(bad[0])
        error = ValueError(f"{what}: ghost row {k} on rank {d.comm.rank} holds {counts[k]} "
                           f"values but the row it copies holds {got[k]}: a ragged array's "
                           "ghost rows must keep their owners' row lengths")
    agree(d.comm, error)


def check_halo(d, p, what, mode="add", clear=False):
    """The checks of a halo call on ``(d, p)``: a distributed array whose
    buffers can be written, a layout whose ghosts it updates, a known
    ``mode``; returns ``(mode, clear)`` normalized."""
    d.require_dims(what)
    mode = arguments.choice(what, "mode", mode, ("add", "replace"))
    clear = arguments.flag(what, "clear", clear)
    if not p.values.flags.writeable:
        raise ValueError(f"{what}: the array's local buffer is read-only")
    if p.validity is not None and not np.asarray(p.validity).flags.writeable:
        raise ValueError(f"{what}: the array's validity bitmap is read-only")
    if d.maps[0].ghosts_by_index and (any(g != 1 for g in d.grid[1:]) or p.info.optional
                                       or p.info.ragged):
        raise TypeError(f"{what}: the ghost entries of an unstructured dimension are "
                        "updated for fixed, non-optional data distributed along dimension "
                        f"0 only, got '{p.info.global_type(d.global_shape)}' on the grid "
                        f"{d.grid}")
    return mode, clear


def _array(what, a):
    if not is_distributed(a):
        raise TypeError(f"{what}: a must be a DistArray, got {type(a).__name__}")
    return unwrap(a)


def _ghosts(d, p, what):
    """For an unstructured dim 0 with copies (owned + ghost entries): the
    ghost positions and the Scatter that fetches their owners' values, made
    once per distribution and kept on the communicator (collective)."""
    from .scatter import Scatter
    m = d.maps[0]

    def make():
        ghost = np.ones(m.local_size(d.coords[0]), bool)
        ghost[m.canonical_positions(d.coords[0])] = False
        at = np.flatnonzero(ghost)
        return at, Scatter(d, m.global_indices(d.coords[0])[at])
    return plans.on(d.comm).get_or_make(plans.Key("ghost update", (d.fingerprint(),)), make)


def _exchange(plan: HaloPlan, comm) -> NeighbourExchange:
    return NeighbourExchange(comm, plan.sends, plan.recvs, plan.copies)


def _bound(d, p, plan) -> NeighbourExchange:
    """The exchange bound to this array's buffers (persistent requests),
    kept in the communicator's plan store under the distribution and the
    buffers: repeated exchanges of one array -- or of two alternating ones
    -- cost one Startall and one Waitall."""
    key = plans.Key("halo exchange", (d.fingerprint(), id(p.values)))
    return plans.on(d.comm).get_or_make(key, lambda: _exchange(plan, d.comm),
                                        release=NeighbourExchange.release)


@collective(name="exchange_halos")
def exchange(d, p) -> None:
    """Fill the ghost cells of ``(d, p)`` from their owners, in place
    (collective): the communication padding of padded blocks, and the ghost
    entries of an unstructured dim 0 (indices held by several ranks; the
    owner's value wins).  Optional data: the validity travels with the
    values, in the same messages (as bytes: one copy of the bitmap)."""
    check_halo(d, p, "exchange_halos")
    yield dict(d=d, p=p.info.global_type(d.global_shape))
    exchange_agreed(d, p)


def exchange_agreed(d, p) -> None:
    """``exchange`` of an agreed array (no vote)."""
    if d.maps[0].ghosts_by_index:
        at, scatter = _ghosts(d, p, "exchange_halos")
        p.values[at] = scatter.forward(p)
        return
    plan = _plan_for(d, p, "exchange_halos")
    if p.validity is None:
        _bound(d, p, plan).run_bound(p.values)
        return
    _exchange(plan, d.comm).forward_parts(p)


def exchange_halos(a):
    """Fill the ghost cells of the array ``a``'s padded block dimensions
    (and the ghost entries of an unstructured dim 0) from their owners, in
    place (collective: the array -- its distribution, type, writeable
    buffers -- is agreed first); returns ``a``.  A repeated exchange of an
    array of the same layout takes its prepared path (``xdap.repeats``):
    the vote with the kept digest, then the exchange bound to the array's
    buffer (persistent requests, kept per buffer): what ``bind_halos``
    costs, plus the vote."""
    p = getattr(a, "parts", None)
    out = NotImplemented if p is None or not p.values.flags.writeable or \
        p.validity is not None else call_lane(_EXCHANGES, _exchange_halos, (a,), (), {},
                                              _halo_lane)
    return _exchange_halos(a) if out is NotImplemented else out


def _halo_lane(agreed):
    """The work of a repeated ``exchange_halos`` (``call_lane``'s ``make``):
    where every rank's cells to send fit in a vote's records, they ride in
    it (``riding_halos``: one message, as ``bind_halos``' exchange is);
    else the vote, then the exchange bound to the array's buffer."""
    a = agreed["a"]
    d, p = a.distribution, a.parts
    ride = None if d.maps[0].ghosts_by_index or p.info.ragged else \
        riding_halos(d, p.values.dtype)
    if ride is not None:
        return Rides(ride.payload, ride.fill)

    def work(vote, a):
        vote.cast()                 # the messages go to neighbours: the vote first
        exchange_agreed(a.distribution, a.parts)
        return a
    return work


class RidingHalos:
    """A halo exchange whose messages ride in a vote's records: this
    rank's send regions, in its plan's order, are its payload
    (``payload``); ``fill`` copies each ghost region from the records of
    the rank that sent it (at the offset that rank's own plan gives it)
    and does the plan's local copies.  Where the buffer is C-contiguous
    and the records' offsets are whole elements, both are one NumPy call
    over kept flat indices (``flat``: ``(send, ghost, source)``, the last
    in elements of the records, read through ``received``: the vote's
    buffer of this communicator size, which the envelope keeps, and a view
    of it);
    else region by region.  ``payload(a)`` and ``fill(a, part, records)``
    are a ``Rides``' two steps."""

    __slots__ = ("sends", "arrivals", "copies", "dtype", "flat", "received")

    def __init__(self, sends, arrivals, copies, dtype, flat, received):
        self.sends, self.arrivals, self.copies, self.dtype = sends, arrivals, copies, dtype
        self.flat, self.received = flat, received

    def payload(self, a):
        values = a.parts.values
        if self.flat is not None and values.flags.c_contiguous:
            return values.reshape(-1).take(self.flat[0])
        sends = self.sends
        if len(sends) == 1:
            return np.ascontiguousarray(values[sends[0]])
        return np.concatenate([values[r].reshape(-1) for r in sends]) if sends else b""

    def fill(self, a, part, records):
        values = a.parts.values
        if self.flat is not None and values.flags.c_contiguous:
            if len(self.flat[1]):
                received = self.received[1] if records is self.received[0] else \
                    np.frombuffer(records, self.dtype)
                values.reshape(-1)[self.flat[1]] = received.take(self.flat[2])
        else:
            for region, at, count, shape in self.arrivals:
                values[region] = np.frombuffer(records, self.dtype, count, at).reshape(shape)
        for ghost, source in self.copies:
            values[ghost] = values[source]
        return a


def riding_halos(d, dtype) -> RidingHalos | None:
    """The halo exchange of fixed data of ``dtype`` on ``d`` as a vote's
    payload, or None where some rank's cells to send may not fit in one
    (``xdap.agreement.capacity``).  Decided from a bound every rank
    computes alike from ``d`` -- per direction, the widest padding across
    and the largest local block along the other dims -- so every rank
    takes the same path; the offsets of a neighbour's regions come from
    that neighbour's plan (pure)."""
    from ..agreement import HEADER, capacity, record_size, records_buffer
    maps = d.maps
    dtype = np.dtype(dtype)
    widest = [max([w for pad in m.padding for w in pad] or [0]) for m in maps]
    largest = [max(m.local_size(q) for q in range(m.grid_size)) for m in maps]
    bound = 0
    for delta in itertools.product((-1, 0, 1), repeat=len(maps)):
        if any(delta):
            cells = 1
            for k, w, n in zip(delta, widest, largest):
                cells *= n if k == 0 else w
            bound += cells
    size = d.comm.size
    if bound * dtype.itemsize > capacity(size):
        return None
    plan = _plan(d)
    record = record_size(size)
    arrivals = []
    for peer, tag, region in plan.recvs:
        at = peer * record + HEADER
        for _, their_tag, their in halo_plan(d, peer).sends:
            cells = int(np.prod([s.stop - s.start for s in their]))
            if their_tag == tag:
                shape = tuple(r.stop - r.start for r in region)
                arrivals.append((region, at, cells, shape))
                break
            at += cells * dtype.itemsize
    sends = tuple(r for _, _, r in plan.sends)
    flat = received = None
    buffer = records_buffer(size)
    if record % dtype.itemsize == 0 and HEADER % dtype.itemsize == 0 and \
            len(buffer) % dtype.itemsize == 0:
        cells = np.arange(int(np.prod(plan.shape)), dtype=np.intp).reshape(plan.shape)
        pick = lambda regions: np.concatenate(          # noqa: E731
            [cells[r].reshape(-1) for r in regions] + [np.empty(0, np.intp)])
        flat = (pick(sends), pick([r for r, *_ in arrivals]),
                np.concatenate([at // dtype.itemsize + np.arange(count, dtype=np.intp)
                                for _, at, count, _ in arrivals] + [np.empty(0, np.intp)]))
        received = (buffer, np.frombuffer(buffer, dtype))
    return RidingHalos(sends, tuple(arrivals), plan.copies, dtype, flat, received)


_EXCHANGES = Repeats()


@collective(name="exchange_halos")
def _exchange_halos(a):
    """``exchange_halos``'s declared path."""
    d, p = _array("exchange_halos", a)
    check_halo(d, p, "exchange_halos")
    yield dict(a=a)
    exchange_agreed(d, p)
    return a


exchange_halos.__xdap_contract__ = _exchange_halos.__xdap_contract__


class BoundHalos:
    """The halo exchange of one array, bound once: ``bind_halos(a)``
    agrees on the array (its distribution, type, writeability) once and
    builds persistent requests for its buffer; then ``h()`` -- or
    ``h.start()``, local work on the interior, ``h.wait()`` -- fills the
    ghost cells with no agreement: a time step costs one ``Startall`` and
    one ``Waitall`` (an unstructured dimension's ghost entries: one
    exchange).  Between ``start`` and ``wait`` the owned cells next to the
    ghosts may be read but not written, and the ghosts not touched.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> d, p = from_global(np.arange(6.0), dist=("b",), padding=((1, 1),), periodic=(True,),
    ...                    comm=MPI.COMM_SELF)
    >>> h = BoundHalos(d, p)
    >>> _ = h(); p.values.tolist()
    [4.0, 1.0, 2.0, 3.0, 4.0, 1.0]
    """

    def __init__(self, d, p):
        self.parts = p
        self._open = True
        self._started = False
        self._mask = self._scatter = None
        if d.maps[0].ghosts_by_index:
            at, scatter = _ghosts(d, p, "bind_halos")
            self._at = at
            self._scatter = scatter.bind(p)
            return
        plan = _plan_for(d, p, "bind_halos")
        self._ex = _exchange(plan, d.comm)
        if p.validity is None:
            self._ex.bind(p.values)
        else:                    # the validity rides along as bytes, in the same messages
            self._mask = np.empty(p.values.shape, np.uint8)
            self._ex.bind(p.values, self._mask)

    def _state(self, what, started):
        if not self._open:
            raise ValueError(f"BoundHalos.{what}: the exchange was closed (bind the array "
                             "again: a.bind_halos())")
        if self._started != started:
            raise ValueError(f"BoundHalos.{what}: " + (
                "the exchange is already started (wait() first)" if self._started else
                "no exchange was started (start() first)"))

    def start(self) -> None:
        """Start filling the ghost cells (local copies are made now).  A
        second start before ``wait``, or any call after ``close``, is a
        ValueError."""
        self._state("start", False)
        self._started = True
        if self._scatter is not None:
            self._scatter.start()
            return
        if self._mask is not None:
            self._mask[...] = self.parts.valid_mask()
        self._ex.start_bound()

    def wait(self) -> None:
        """Complete the exchange: the ghost cells hold their owners' values."""
        self._state("wait", True)
        self._started = False
        if self._scatter is not None:
            self.parts.values[self._at] = self._scatter.wait()
            return
        self._ex.wait_bound()
        if self._mask is not None:
            self.parts.validity[:] = pack_validity(self._mask.view(bool))

    def __call__(self):
        self.start()
        self.wait()
        return self

    def close(self) -> None:
        """Free the persistent requests now (else: when the object goes);
        closing twice is harmless, using it after is a ValueError."""
        if self._open and self._scatter is None:
            self._ex.release()
        self._open = False

    def __del__(self):
        if getattr(self, "_open", False) and getattr(self, "_scatter", True) is None:
            self._ex.release()


@collective
def bind_halos(a) -> BoundHalos:
    """The halo exchange of ``a`` bound once (collective: the array is
    agreed now; see ``BoundHalos``).  ``a.bind_halos()`` is the same."""
    d, p = _array("bind_halos", a)
    check_halo(d, p, "bind_halos")
    yield dict(a=a)
    return BoundHalos(d, p)


def _add(bufs, region, got):
    bufs[0][region] += got[0]


def _replace(bufs, region, got):
    for b, t in zip(bufs, got):
        b[region] = t


def _add_valid(bufs, region, got):
    """Values added where the ghost was valid (its value is zeroed where
    not), validity or-ed."""
    bufs[0][region] += got[0]
    np.bitwise_or(bufs[1][region], got[1], out=bufs[1][region])


@collective
def accumulate_halos(a, mode: str = "add", clear: bool = False):
    """``accumulate`` on the array ``a`` (in place, collective: the array
    and the options are agreed first); returns ``a``."""
    d, p = _array("accumulate_halos", a)
    mode, clear = check_halo(d, p, "accumulate_halos", mode, clear)
    yield dict(a=a, mode=mode, clear=clear)
    accumulate_agreed(d, p, mode, clear)
    return a


@collective(name="accumulate_halos")
def accumulate(d, p, mode: str = "add", clear: bool = False) -> None:
    """The reverse exchange, in place (collective).

    mode    "add": each owner adds the values its ghost copies hold;
            "replace": each owner takes the ghost copy's value (where
            several ghosts copy one cell -- corners, narrow grids -- the last
            in direction order wins)
    clear   set the ghost cells to zero afterwards: with mode "add" this is
            the exact adjoint of ``exchange``

    Optional data: an NA ghost contributes nothing ("add") or makes its
    owner NA ("replace"); a valid ghost makes an NA owner valid.
    """
    mode, clear = check_halo(d, p, "accumulate_halos", mode, clear)
    yield dict(d=d, p=p.info.global_type(d.global_shape), mode=mode, clear=clear)
    accumulate_agreed(d, p, mode, clear)


def accumulate_agreed(d, p, mode: str, clear: bool) -> None:
    """``accumulate`` of agreed arguments (no vote)."""
    if d.maps[0].ghosts_by_index:            # ghost entries of an unstructured dim
        at, scatter = _ghosts(d, p, "accumulate_halos")
        scatter.reverse(p.values[at], into=p, mode=mode, refresh=False)
        if clear:
            p.values[at] = 0
        return
    plan = _plan_for(d, p, "accumulate_halos")
    ex = _exchange(plan, d.comm)
    if p.validity is None:
        ex.reverse((p.values,), _add if mode == "add" else _replace)
    else:
        mask = p.valid_mask()
        vals = p.values
        m8 = mask.view(np.uint8).copy()
        if mode == "add":
            saved = vals.copy()
            vals[~mask] = 0                      # NA contributes nothing
            ex.reverse((vals, m8), _add_valid)
            keep = ~m8.view(bool)                # still NA: restore the hidden values
            vals[keep] = saved[keep]
        else:
            ex.reverse((vals, m8), _replace)
        p.validity[:] = pack_validity(m8.view(bool))
    if clear:
        for region in plan.ghost_regions:
            p.values[region] = 0
