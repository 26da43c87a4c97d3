"""Redistribution executor: move a DistArray to another distribution.

The plan (``xdap.movement.plan``) says which elements go from which rank to
which; this module only moves bytes, in ONE collective on the source
array's communicator:

* ``method="datatypes"``: one ``Alltoallw`` with derived datatypes built
  from the plan -- a subarray for a rectangular slab (what mpi4py-fft's
  ``Transfer`` does for pencils), nested ``hindexed`` runs otherwise.  MPI
  reads and writes the arrays in place: no packing by us.  The rank's own
  share is copied by NumPy (faster than MPI's datatype self-copy here).
* ``method="packed"``: NumPy gathers each peer's elements into one buffer,
  one ``Alltoallv``, NumPy scatters them into the result; the rank's own
  share is copied directly, never through MPI.
* ``method="auto"`` (default): datatypes when every message is a few long
  runs (block-like layouts), packed when messages are scattered elements
  (cyclic with small blocks, unstructured) -- measured in
  ``benchmarks/movement.py``.  The choice depends only on the plan, so
  every rank makes the same one.

Optional values: the validity moves as a second exchange of one byte per
element with the same plan (bitmaps are unpacked before and packed after).
Ragged arrays (``var * var * T``, distributed by rows): rows move whole,
always packed: one ``Alltoallv`` per var level for the lengths (the
receiver cannot know them in advance), one for the values, one for the
validity if optional; offsets are rebuilt from the received lengths.

The result is a new array (the source is not modified); every element of
every target buffer is filled, communication padding and shared copies
included.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> e, q = move(d, p, dist=("c", "b"))
>>> e.maps[0].dist_type, q.values.tolist() == p.values.tolist()
('c', True)
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import plans
from ..agreement import agreement
from ..arraylike import unwrap, wrap_like
from ..comm import MPI
from ..distribution import Distribution, make_distribution
from ..exchange import alltoallv, alltoallv_arrays
from ..parts import Parts
from ..rows import take_rows
from ..bitmaps import pack_validity
from .plan import (RedistributionPlan, as_positions, index_len, plan_ranks, redistribution_plan,
                   runs)

__all__ = ["redistribute", "move", "executor", "Redistributor", "METHODS"]

METHODS = ("auto", "datatypes", "packed")

# An element type as an MPI datatype of the same size: we only copy bytes.
_BY_SIZE = {1: MPI.UINT8_T, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T}
# "auto" uses derived datatypes while the average run is at least this many
# bytes (shorter runs: numpy packing wins; see benchmarks/movement.py).
_MIN_RUN_BYTES = 256


def _base_type(itemsize: int):
    t = _BY_SIZE.get(itemsize)
    if t is None:
        t = MPI.BYTE.Create_contiguous(itemsize).Commit()
        _BY_SIZE[itemsize] = t
    return t


# --------------------------------------------------------------------------
# numpy side: take / put a transfer's elements
# --------------------------------------------------------------------------

def _take(values: np.ndarray, index: tuple) -> np.ndarray:
    """The transfer's elements of ``values`` (C order); a view when every
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
        out[np.ix_(*[as_positions(i) for i in index])] = chunk


def _joint_runs(src, dst):
    """Runs along which both position lists advance by one: (src starts,
    dst starts, lengths)."""
    s, d = as_positions(src), as_positions(dst)
    if s.size == 0:
        return s, d, s
    brk = np.flatnonzero((np.diff(s) != 1) | (np.diff(d) != 1)) + 1
    first = np.concatenate([[0], brk])
    lengths = np.diff(np.concatenate([first, [s.size]]))
    return s[first], d[first], lengths


def _slab_copies(src_index, dst_index, max_runs: int = 4096):
    """How to copy the rank's own share ``out[dst_index] = values[src_index]``
    with slices: a list of (source slices, target slices), or None when
    fancy indexing is the better way.  When one dimension is a list of long
    runs (block-cyclic), run-by-run slice copies are far cheaper than fancy
    indexing of the whole block."""
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


# --------------------------------------------------------------------------
# MPI datatypes from transfers
# --------------------------------------------------------------------------

def _datatype(base, shape: tuple, itemsize: int, index: tuple):
    """A committed datatype selecting the transfer's elements of a
    C-contiguous buffer of ``shape`` (displacement 0)."""
    if all(isinstance(i, slice) and i.step == 1 for i in index):
        return base.Create_subarray(list(shape), [i.stop - i.start for i in index],
                                    [i.start for i in index]).Commit()
    strides = [itemsize * int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
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


def _avg_run_bytes(plan: RedistributionPlan, itemsize: int) -> float:
    """Mean length in bytes of the contiguous runs MPI would copy (innermost
    dimension runs times the inner extent), over every message of the plan."""
    total_bytes, total_runs = 0, 0
    for r in range(plan.src.size):
        for t in plan.sends(r):
            # each position of the outer dims starts new runs of the innermost
            n_runs = len(runs(t.index[-1])[0])
            for i in t.index[:-1]:
                n_runs *= index_len(i)
            total_runs += n_runs
            total_bytes += t.size * itemsize
    return total_bytes / max(total_runs, 1)


# --------------------------------------------------------------------------
# the executor
# --------------------------------------------------------------------------

def _concat_flat(transfers, shape) -> np.ndarray:
    """The linear positions of several transfers' elements, one after the other."""
    if not transfers:
        return np.zeros(0, np.intp)
    return np.concatenate([_flat_positions(t.index, shape) for t in transfers])


def _flat_positions(index: tuple, shape: tuple) -> np.ndarray:
    """The C-order linear positions, in a buffer of ``shape``, of a
    transfer's elements (the tensor product of its per-dimension lists)."""
    flat = np.zeros(1, np.intp)
    for i, n in zip(index, shape):
        flat = (flat[:, None] * n + as_positions(i)[None, :]).reshape(-1)
    return flat


def _split(a: np.ndarray, bounds: np.ndarray) -> list:
    """``a`` cut at ``bounds`` (first 0, last len): views, one per piece."""
    return [a[int(lo):int(hi)] for lo, hi in zip(bounds[:-1], bounds[1:])]


class _Packing:
    """The packed path of one executor, worked out once: the messages to
    and from the other ranks and their counts.  When any message is
    scattered elements, also one linear gather index over the source
    buffer and one over the received buffer (the inverse of where the
    received elements go: every target position receives exactly one), so a
    call is two ``np.take`` and one ``Alltoallv``.  The two message buffers
    are kept for the next call (freed with the plan)."""

    def __init__(self, sends, recvs, src_shape, dst_shape, me: int, size: int):
        scattered = any(not t.rectangular for t in sends + recvs)
        # scattered: our own share rides along in the two gathers (MPI
        # copies it with a memcpy); slabs: NumPy copies it directly
        self.with_own = scattered
        self.sends = [t for t in sends if scattered or t.peer != me]
        self.recvs = [t for t in recvs if scattered or t.peer != me]
        self.send_counts = np.zeros(size, np.int64)
        self.recv_counts = np.zeros(size, np.int64)
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
        self._bytes = [np.zeros(0, np.uint8), np.zeros(0, np.uint8)]

    def buffer(self, which: int, dtype) -> np.ndarray:
        """The send (0) or receive (1) message buffer, as ``dtype`` items."""
        n = self.send_at[-1] if which == 0 else self.recv_at[-1]
        if self._bytes[which].nbytes < n * dtype.itemsize:
            self._bytes[which] = np.empty(n * dtype.itemsize, np.uint8)
        return self._bytes[which][:n * dtype.itemsize].view(dtype)


class Redistributor:
    """Executes one plan on the parent communicator ``comm`` (this rank's
    share).  Reusable; derived datatypes are built once per element size and
    kept until the executor is dropped."""

    def __init__(self, plan: RedistributionPlan, comm):
        self.plan, self.comm = plan, comm
        if comm.size < plan.nparent:
            raise ValueError(f"the plan needs a communicator of at least {plan.nparent} ranks, "
                             f"got {comm.size}")
        r = comm.rank
        self.sends, self.recvs = plan.sends(r), plan.recvs(r)
        self.src_shape, self.dst_shape = plan.src_shape(r), plan.dst_shape(r)
        self._types: dict = {}
        self._auto: dict = {}
        self._packed = None
        self._own = None
        self._rows = None

    # -- method choice (identical on every rank: it reads the global plan) --
    def choose(self, method: str, itemsize: int) -> str:
        if method != "auto":
            return method
        if itemsize not in self._auto:
            # a distributed plan knows this rank's messages only: packed,
            # the same choice on every rank without asking (its maps are
            # unstructured: scattered elements)
            big = not self.plan.local_only and \
                _avg_run_bytes(self.plan, itemsize) >= _MIN_RUN_BYTES
            self._auto[itemsize] = "datatypes" if big else "packed"
        return self._auto[itemsize]

    # -- fixed-size arrays --------------------------------------------------
    def run(self, values: np.ndarray | None, dtype, method: str = "auto") -> np.ndarray | None:
        """Move ``values`` (this rank's source buffer, C-contiguous; None
        outside the source layout) and return this rank's target buffer
        (None outside the target layout).  Copies into a new array."""
        dtype = np.dtype(dtype)
        out = None if self.dst_shape is None else np.empty(self.dst_shape, dtype)
        if values is None:
            values = np.empty(0, dtype)
        if self.choose(method, dtype.itemsize) == "datatypes":
            self._alltoallw(values, out, dtype)
        else:
            self._alltoallv(values, out, dtype)
        return out

    def _alltoallw(self, values, out, dtype):
        size = self.comm.size
        key = dtype.itemsize
        if key not in self._types:
            base = _base_type(key)
            stypes, rtypes = [base] * size, [base] * size
            me = self.comm.rank
            for t in self.sends:
                if t.peer != me:
                    stypes[t.peer] = _datatype(base, self.src_shape, key, t.index)
            for t in self.recvs:
                if t.peer != me:
                    rtypes[t.peer] = _datatype(base, self.dst_shape, key, t.index)
            # our own share is copied by numpy (measured faster than MPI's
            # datatype self-copy: 33 vs 48 ms for 2048 x 4096 float64)
            scounts = [0] * size
            rcounts = [0] * size
            for t in self.sends:
                scounts[t.peer] = int(t.peer != me)
            for t in self.recvs:
                rcounts[t.peer] = int(t.peer != me)
            self._types[key] = (stypes, rtypes, scounts, rcounts)
        stypes, rtypes, scounts, rcounts = self._types[key]
        zeros = [0] * size
        recvbuf = out if out is not None else np.empty(0, dtype)
        self.comm.Alltoallw([values, (scounts, zeros), stypes],
                            [recvbuf, (rcounts, zeros), rtypes])
        self._copy_own(values, out)

    def _copy_own(self, values, out):
        """Our own share, copied by NumPy (the copy worked out once)."""
        if self._own is None:
            me = self.comm.rank
            own = [t for t in self.sends if t.peer == me]
            mine = [t for t in self.recvs if t.peer == me]
            self._own = () if not own else \
                (own[0].index, mine[0].index, _slab_copies(own[0].index, mine[0].index))
        if self._own:
            src, dst, slabs = self._own
            if slabs is None:
                _put(out, dst, _take(values, src))
            for a, b in slabs or ():
                out[b] = values[a]

    def _alltoallv(self, values, out, dtype):
        pk = self._packing()
        if not pk.with_own:
            self._copy_own(values, out)
        send = pk.buffer(0, dtype)
        recv = pk.buffer(1, dtype)
        # the indices are ours and in range: mode="clip" skips NumPy's checks
        if pk.send_flat is not None:        # scattered elements: one gather ...
            np.take(values.reshape(-1), pk.send_flat, out=send, mode="clip")
        else:                               # slabs: one copy each, into the message buffer
            for t, at in zip(pk.sends, pk.send_at):
                send[at:at + t.size].reshape(t.shape)[...] = _take(values, t.index)
        alltoallv(self.comm, send, pk.send_counts, pk.recv_counts, out=recv)
        if out is None:
            return
        if pk.recv_gather is not None:      # ... one exchange, one gather into place
            np.take(recv, pk.recv_gather, out=out.reshape(-1), mode="clip")
        elif pk.recv_flat is not None:
            out.reshape(-1)[pk.recv_flat] = recv
        else:
            for t, at in zip(pk.recvs, pk.recv_at):
                _put(out, t.index, recv[at:at + t.size])

    def _packing(self) -> "_Packing":
        if self._packed is None:
            self._packed = _Packing(self.sends, self.recvs, self.src_shape, self.dst_shape,
                                    self.comm.rank, self.comm.size)
        return self._packed

    # -- ragged arrays (rows) -----------------------------------------------
    def run_rows(self, p: Parts | None, info) -> Parts | None:
        """Move whole rows of a ragged container (parts ``p``; None outside
        the source layout); returns the target rows' Parts or None.

        The rows for every peer are taken in one pass (peer after peer), so
        each peer's part of every level is a contiguous slice; the arrived
        rows are put in buffer order by one more take."""
        comm = self.comm
        nlev = info.var_ndim
        send_pos, send_rows, order = self._row_positions()
        speer = [t.peer for t in self.sends]
        rpeer = [t.peer for t in self.recvs]
        taken = take_rows(p, send_pos) if self.sends else None
        bounds = np.concatenate([[0], np.cumsum(send_rows)]).astype(np.int64)
        # items per receiving peer at the current level, starting with rows
        rcount = {q: t.size for q, t in zip(rpeer, self.recvs)}
        lengths_in = []
        for level in range(1, nlev):
            off = taken.offsets[level].astype(np.int64) if taken is not None else None
            send = [] if off is None else _split(np.diff(off), bounds)
            got = alltoallv_arrays(comm, speer, send, rpeer, [rcount[q] for q in rpeer], np.int64)
            lengths_in.append(got)
            rcount = {q: int(g.sum()) for q, g in zip(rpeer, got)}
            if off is not None:
                bounds = off[bounds]
        vals = alltoallv_arrays(comm, speer, [] if taken is None else _split(taken.values, bounds),
                                rpeer, [rcount[q] for q in rpeer], info.numpy_dtype)
        masks = None
        if info.optional:
            masks = alltoallv_arrays(comm, speer, [] if taken is None else
                                     _split(taken.valid_mask().view(np.uint8), bounds),
                                     rpeer, [rcount[q] for q in rpeer], np.uint8)
        if self.dst_shape is None:
            return None
        nrows = sum(t.size for t in self.recvs)
        offsets = [np.array([0, nrows], np.int32)]
        for got in lengths_in:
            flat = np.concatenate(got) if got else np.zeros(0, np.int64)
            offsets.append(np.concatenate([[0], np.cumsum(flat)]).astype(np.int32))
        values = np.concatenate(vals) if vals else np.zeros(0, info.numpy_dtype)
        validity = None
        if masks is not None:
            m = np.concatenate(masks) if masks else np.zeros(0, np.uint8)
            validity = pack_validity(m.view(bool))
        arrived = Parts(info, values, validity, tuple(offsets))
        # arrived rows are in (peer, target position) order; put them in buffer order
        return take_rows(arrived, order)

    def _row_positions(self):
        """(the source rows for all peers, peer after peer; rows per peer;
        the order that puts arrived rows in buffer order) -- kept: a
        repeated move of rows reuses them."""
        if self._rows is None:
            pos = [as_positions(t.index[0]) for t in self.sends]
            where = [as_positions(t.index[0]) for t in self.recvs]
            self._rows = (np.concatenate(pos) if pos else np.zeros(0, np.int64),
                          [len(x) for x in pos],
                          np.argsort(np.concatenate(where), kind="stable") if where
                          else np.zeros(0, np.int64))
        return self._rows

    def free(self) -> None:
        """Release the derived datatypes (the plan cache calls this when it
        drops the executor)."""
        self._packed = None
        if MPI.Is_finalized():
            self._types.clear()
            return
        for stypes, rtypes, _, _ in self._types.values():
            for t in stypes + rtypes:
                if t not in _BY_SIZE.values():
                    t.Free()
        self._types.clear()


# --------------------------------------------------------------------------
# the entry points
# --------------------------------------------------------------------------

def executor(src: Distribution, dst: Distribution, comm, dst_ranks=None) -> Redistributor:
    """The executor moving data from ``src`` to ``dst`` over the parent
    communicator ``comm`` (``dst_ranks``: the target ranks' numbers in it),
    kept with its plan (and its MPI datatypes) in the plan cache."""
    plan = redistribution_plan(src, dst, dst_ranks, comm)
    # an executor holds the communicator and its derived datatypes: it is
    # kept on that communicator, freed with it (or when evicted)
    key = plans.Key("redistribution executor",
                    (src.fingerprint(), dst.fingerprint(), plan_ranks(dst, dst_ranks)))
    return plans.on(comm).get_or_make(key, lambda: Redistributor(plan, comm),
                                      release=Redistributor.free)


def redistribute(a, dist=None, grid=None, comm=None, *, method: str = "auto", **per_dim):
    """``a`` in another distribution, as a new array of ``a``'s kind
    (collective on ``a.comm``; copies); None on ranks outside ``comm``.
    See ``move`` for the arguments.

    ``a.redistribute(...)`` is this function on a DistArray.
    """
    out = move(*unwrap(a), dist, grid, comm, method=method, **per_dim)
    return None if out is None else wrap_like(a, *out, agreed=True)


def move(d: Distribution, p: Parts, dist=None, grid=None, comm=None, *, method: str = "auto",
         **per_dim):
    """The data ``(d, p)`` in another distribution: the target's
    ``(Distribution, Parts)``, or None on ranks outside the target
    communicator (collective on ``d.comm``; copies).

    dist      the target: a ``'b'/'c'/'u'/'n'`` spec per dimension (with
              ``grid`` and per-dimension options ``block_size``, ``padding``,
              ``periodic``, ``indices``, ``sizes`` as in ``from_global``), or
              an ``xdap.Distribution`` of the same global shape (then no
              ``grid``/options); ragged arrays: one entry, for the rows
    comm      the target communicator: None = ``d.comm``; any subset of
              ``d.comm`` (e.g. from ``comm.Split``/``comm.Create``).  Ranks
              of ``d.comm`` outside it pass ``MPI.COMM_NULL`` and get
              ``None`` back (an inactive worker: it sends, receives nothing)
    method    "auto", "datatypes" (one Alltoallw, no packing) or "packed"
              (numpy packing + one Alltoallv)

    Plans and their MPI datatypes are cached on both distributions'
    fingerprints (``xdap.plans``): a second call with the same source and
    target reuses them.  Invalid targets raise the same ValueError/TypeError
    on every rank.
    """
    d.require_dims("redistribute")
    A = d.comm
    inside = not (comm is not None and comm == MPI.COMM_NULL)
    target = None
    shape = d.global_shape
    # Local checks and every member's target fingerprint travel in ONE
    # collective; the decisions below read only what all ranks received.
    with agreement(A, "redistribute", share=True) as ag:
        ag.same("method", method)
        if method not in METHODS:
            raise ValueError(f"redistribute: method must be one of {METHODS}, got {method!r}")
        if inside:
            target = _target_distribution(p.info, shape, dist, grid, A, comm, per_dim)
            B = target.comm
            if B.size > A.size:
                raise ValueError(f"redistribute: the target communicator ({B.size} ranks) must "
                                 f"be a subset of the array's ({A.size} ranks)")
            parent = MPI.Group.Translate_ranks(B.Get_group(), list(range(B.size)), A.Get_group())
            if any(r == MPI.UNDEFINED or r < 0 for r in parent):
                raise ValueError("redistribute: the target communicator must be a subset of the "
                                 "array's communicator (a rank of it is not in a.comm)")
            ag.share((target.fingerprint(), tuple(int(r) for r in parent)))
    shared = ag.shared
    members = [r for r, f in enumerate(shared) if f is not None]
    if not members:
        raise ValueError("redistribute: no rank is in the target communicator "
                         "(every rank passed MPI.COMM_NULL)")
    first = shared[members[0]]
    if any(shared[r] != first for r in members):
        raise ValueError("redistribute: the ranks of the target communicator passed "
                         "different target distributions (all must pass the same)")
    if sorted(members) != sorted(first[1]):
        raise ValueError(f"redistribute: ranks {sorted(set(first[1]) ^ set(members))} of "
                         f"a.comm disagree about membership in the target communicator "
                         f"(pass MPI.COMM_NULL exactly on the ranks outside it)")
    dst = target
    if len(members) != A.size:          # the ranks outside learn the target's layout
        desc = A.bcast(None if A.rank != members[0] else
                       (target.maps, None if target.c_order else target.rank_coords),
                       root=members[0])
        dst = target if inside else Distribution.detached(*desc)
    if p.info.ragged:
        empty = [first[1][i] for i in range(dst.size) if dst.local_shape_of(i)[0] == 0]
        if empty:     # decided from the agreed target: the same on every rank
            raise ValueError(f"redistribute: the target gives no rows to rank(s) {empty} of "
                             f"a.comm; xnd 0.2.0.dev3 cannot represent an empty ragged "
                             f"partition (every target rank needs at least one row)")
    ex = executor(d, dst, A, first[1])
    info = p.info
    if info.ragged:
        out = ex.run_rows(p, info)
        return (target, out) if inside else None
    out = ex.run(np.ascontiguousarray(p.values), info.numpy_dtype, method)
    validity = None
    if info.optional:
        got = ex.run(np.ascontiguousarray(p.valid_mask()).view(np.uint8), np.uint8, method)
        validity = None if got is None else pack_validity(got.view(bool))
    if not inside:
        return None
    return target, Parts(info.with_shape(out.shape), out, validity)


def _target_distribution(info, shape, dist, grid, source_comm, comm, per_dim) -> Distribution:
    if isinstance(dist, Distribution):
        if grid is not None or per_dim:
            raise ValueError("redistribute: give either a Distribution or dist/grid/options, "
                             f"not both (got grid={grid!r}, options {sorted(per_dim)})")
        if comm is not None and dist.comm.Compare(comm) not in (MPI.IDENT, MPI.CONGRUENT):
            raise ValueError("redistribute: comm differs from the target Distribution's comm")
        if dist.global_shape != shape:
            raise ValueError(f"redistribute: the target distribution's global shape "
                             f"{dist.global_shape} differs from the array's {shape}")
        target = dist
    else:
        if info.ragged and dist is not None and len(tuple(dist)) != 1:
            raise ValueError(f"redistribute: a ragged array is distributed by rows: dist needs "
                             f"one entry, got {dist!r}")
        unknown = set(per_dim) - {"block_size", "padding", "periodic", "indices", "sizes"}
        if unknown:
            raise TypeError(f"redistribute: unknown option(s) {sorted(unknown)} (known: "
                            "block_size, padding, periodic, indices, sizes)")
        target = make_distribution(shape, dist, grid, source_comm if comm is None else comm,
                                   **per_dim)
    if info.ragged and target.ndim != 1:
        raise ValueError(f"redistribute: a ragged array needs a 1-d target distribution, "
                         f"got {target.ndim} dimensions")
    return target
