"""MPI through mpi4py: communicators, the agreement helper, DistDL partitions.

*Agreement* is how every collective entry point keeps its promise that bad
input gives the same error on every rank and never a hang: each rank checks
its own part of the arguments and names the ones that must match; one small
collective combines every rank's verdict, and then either every rank
proceeds or every rank raises the same error -- the lowest failing rank's,
or one naming the argument that differs and the ranks that passed it.

>>> from mpi4py import MPI
>>> with agreement(MPI.COMM_SELF, "example") as ag:
...     ag.same("axis", 0)          # must be equal on every rank
...     if 0 > 1:
...         raise ValueError("never")
"""
from __future__ import annotations

import functools
import hashlib
import math
import os
import pickle
import struct
from array import array

import numpy as np

from mpi4py import MPI

from . import watch as _watch
from .arraylike import is_distributed

__all__ = ["MPI", "resolve", "agreement", "Agreement", "agree", "balanced_grid", "attached",
           "Partition", "CartesianPartition"]


def resolve(comm):
    """``None`` -> ``MPI.COMM_WORLD``; any mpi4py intracommunicator as is."""
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm must be an mpi4py intracommunicator or None, got {type(comm).__name__}")
    return comm


def comm_of(*objects, default=None):
    """The communicator of the first of ``objects`` that has one (a
    DistArray's, a Distribution's), else ``resolve(default)``: where a
    collective agrees -- including that an argument of the wrong kind, a
    NumPy array on one rank, is one error on every rank.

    >>> comm_of(np.zeros(3), None) is MPI.COMM_WORLD
    True
    """
    for x in objects:
        comm = x.distribution.comm if is_distributed(x) else getattr(x, "comm", None)
        if isinstance(comm, MPI.Intracomm):
            return comm
    return resolve(default)


# --------------------------------------------------------------------------
# agreement
# --------------------------------------------------------------------------

_WORDS = 4                       # a 16-byte digest as four 32-bit words
_BIG = (1 << 63) - 1
_ZEROS = array("q", bytes(8 * (1 + 2 * _WORDS)))


_COLLECTIVE = "the collective"     # the name under which the entry points are compared


def _digest(value) -> bytes:
    return hashlib.blake2b(pickle.dumps(value, protocol=5), digest_size=16).digest()


@functools.lru_cache(maxsize=1024)
def _words(digest: bytes) -> bytes:
    """The allreduce buffer of a digest: [no failure, words, -words] as
    int64 bytes (memoised: a loop agrees on the same arguments again)."""
    words = struct.unpack(f"<{_WORDS}I", digest)
    return array("q", (_BIG,) + words + tuple(-w for w in words)).tobytes()


@functools.lru_cache(maxsize=1024)
def _name_digest(what: str, share: bool) -> bytes:
    """The digest of an agreement without ``same`` values (memoised)."""
    return _digest((what, share, []))


@functools.lru_cache(maxsize=1024)
def _str_digest(what: str, share: bool, items: tuple) -> bytes:
    """The digest of an agreement whose ``same`` values are all strings
    (memoised: a repeated call -- a ghost update -- hashes nothing; exact
    ``str`` only, so equal values of different types never share an entry)."""
    return _digest((what, share, list(items)))


class Agreement:
    """One collective entry point's agreement (use ``agreement(...)``).

    Inside the ``with`` block a rank checks its arguments -- raising
    ValueError/TypeError for a bad one -- and calls ``same(name, value)`` for
    each argument that must be equal on every rank (any picklable value;
    large ones cost a hash, not a transfer).  With ``share=True`` every rank
    may also ``share(value)`` something small that all ranks receive as
    ``shared`` (a list in rank order) after the block.

    The block's end is ONE collective: an allreduce of a few integers (or,
    with ``share=True``, one allgather).  Afterwards every rank raises the
    same error if any rank failed (the lowest failing rank's message, ending
    in ``(rank r)``; TypeError if that was a TypeError, else ValueError) or
    if a ``same`` argument differs (a ValueError naming it and the ranks).
    An exception other than ValueError/TypeError is a bug: the other ranks
    are told (so they raise too instead of hanging) and it propagates.
    """

    def __init__(self, comm, what: str = "", share: bool = False):
        self.comm = resolve(comm)
        self.what = what
        self._share = share
        self._same: dict = {}
        self._value = None
        self._meanwhile = None
        self.shared = None

    def same(self, name: str, value) -> None:
        """``value`` must be equal on every rank (one that does not pickle is
        a TypeError of this rank, agreed like any other).  Values are
        hashed together once, at the end of the block."""
        self._same[name] = value

    def share(self, value) -> None:
        """Hand every rank this rank's ``value`` (``share=True`` only)."""
        if not self._share:
            raise RuntimeError("Agreement.share needs agreement(..., share=True)")
        self._value = value

    def meanwhile(self, work) -> None:
        """Run ``work()`` -- purely local, e.g. packing a send buffer --
        while the vote is in flight, if this rank's checks passed: it hides
        the packing behind the vote's latency.  Data still moves between
        ranks only after every rank has agreed.  ``work`` must not fail (the
        other ranks have been told this one is fine)."""
        self._meanwhile = work

    def _prefix(self) -> str:
        return f"{self.what}: " if self.what else ""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is not None and not isinstance(error, (ValueError, TypeError)):
            if isinstance(error, Exception):
                # a bug (or MemoryError): tell the others, then let it propagate
                self.finish(ValueError(f"internal error on rank {self.comm.rank}: "
                                       f"{type(error).__name__}: {error}"))
            return False
        self.finish(error)
        return True      # a ValueError/TypeError of this rank was raised by finish()

    def finish(self, error: BaseException | None = None) -> None:
        """The collective step: combine verdicts and ``same`` digests; raise
        the agreed error on every rank (``error``: this rank's own, or None)."""
        comm = self.comm
        digest = payload = None
        if error is None and comm.size > 1:        # one rank has nobody to compare with
            try:
                digest = self._digest()
                if self._share:     # pickled here: a value that does not is this rank's error
                    payload = pickle.dumps(self._value, protocol=5)
            except Exception as e:
                error = e if isinstance(e, TypeError) else \
                    TypeError(f"{self._prefix()}a value to share does not pickle "
                              f"({type(e).__name__}: {e})")
        if comm.size == 1:
            if error is not None:
                self._raise(0, (isinstance(error, TypeError), str(error)), error)
            self.shared = [self._value] if self._share else None
            if self._meanwhile is not None:
                self._meanwhile()
            return
        if _watch.LIMIT:                     # debug mode: a missing rank is reported
            _watch.checkpoint(comm, self.what)
        # ONE allreduce(MIN) of [failing rank, digest words, -digest words]:
        # min == max of every word <=> every rank hashed the same collective
        # and values.  Always this one first -- also before an allgather of
        # shared values -- so ranks that entered different collectives meet
        # in the same MPI call and learn it.  (array.array, not NumPy: this
        # runs on every call; 2 us less.)
        if error is not None:
            buf = array("q", (comm.rank,) + (_BIG,) * (2 * _WORDS))
        else:
            buf = array("q", _words(digest))
        out = array("q", _ZEROS)
        # the nonblocking call picks MPICH's faster small-message algorithm
        # (measured on 4 ranks: 26 us against 32 for the blocking Allreduce)
        request = comm.Iallreduce(buf, out, op=MPI.MIN)
        if error is None and self._meanwhile is not None:
            self._meanwhile()
        while not request.Test():   # waiting, let a rank sharing this core run (no spin)
            os.sched_yield()
        if out == buf and error is None:     # the common case: all agree, nobody failed
            if self._share:
                self.shared = [pickle.loads(v) for v in comm.allgather(payload)]
            return
        first, *words = out.tolist()
        if first != _BIG:                    # the lowest failing rank tells its error
            verdict = comm.bcast(None if error is None or comm.rank != first else
                                 (isinstance(error, TypeError), str(error)), root=first)
            self._raise(first, verdict, error)
        if words[:_WORDS] != [-w for w in words[_WORDS:]]:
            self._raise_mismatch(comm.allgather(self._digests()))
        if self._share:
            self.shared = [pickle.loads(v) for v in comm.allgather(payload)]

    def _digest(self) -> bytes:
        """One digest of the collective's name and every ``same`` value."""
        if not self._same:
            return _name_digest(self.what, self._share)
        if all(type(v) is str for v in self._same.values()):     # e.g. a dtype name
            return _str_digest(self.what, self._share, tuple(self._same.items()))
        try:
            return _digest((self.what, self._share, list(self._same.items())))
        except Exception as e:
            self._digests()                         # names the value that does not pickle
            raise TypeError(f"{self._prefix()}an argument does not pickle ({e})") from None

    def _digests(self) -> dict:
        """{name: (digest, short repr)} of the collective and the ``same``
        values, in call order."""
        out = {_COLLECTIVE: (_digest((self.what, self._share)), repr(self.what or "?"))}
        for name, value in self._same.items():
            try:
                out[name] = (_digest(value), _short(value))
            except Exception as e:
                raise TypeError(f"{self._prefix()}{name} cannot be compared across ranks (it "
                                f"does not pickle: {type(e).__name__}: {e})") from None
        return out

    def _raise(self, rank, verdict, own):
        is_type_error, message = verdict
        cls = TypeError if is_type_error else ValueError
        raise cls(f"{message} (rank {rank})") from own

    def _raise_mismatch(self, per_rank: list):
        calls = [s[_COLLECTIVE] for s in per_rank]
        differ = [r for r, c in enumerate(calls) if c[0] != calls[0][0]]
        if differ:                  # no prefix: it names a different call on each rank
            r = differ[0]
            raise ValueError(f"ranks called different xdap collectives at the same time: rank 0 "
                             f"{calls[0][1]}, rank {r} {calls[r][1]} (every rank must make the "
                             "same collective calls, in the same order)")
        names = list(per_rank[0])
        for name in names + sorted({n for s in per_rank for n in s} - set(names)):
            values = [s.get(name, (None, "nothing")) for s in per_rank]
            differ = [r for r, v in enumerate(values) if v[0] != values[0][0]]
            if differ:
                r = differ[0]
                raise ValueError(f"{self._prefix()}{name} must be the same on every rank: "
                                 f"rank 0 passed {values[0][1]}, rank {r} {values[r][1]}"
                                 + (f" (ranks {', '.join(map(str, differ))} differ from rank 0)"
                                    if len(differ) > 1 else ""))
        raise ValueError(f"{self._prefix()}the ranks compared different arguments, or in "
                         "another order (a bug in a collective entry point)")


def _short(value, width: int = 60) -> str:
    """A value as an error message shows it: its repr, cut to ``width``."""
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    if isinstance(value, bytes) and len(value) == 16:
        text = f"<digest {value.hex()[:12]}>"
    return text if len(text) <= width else text[:width - 3] + "..."


def agreement(comm, what: str = "", share: bool = False) -> Agreement:
    """The agreement of a collective entry point (see ``Agreement``)."""
    return Agreement(comm, what, share)


def agree(comm, error: BaseException | None) -> None:
    """Combine every rank's verdict (``error`` or None) and raise the same
    error everywhere if any rank failed: ``agreement`` for a step whose
    error was caught by the caller."""
    Agreement(comm).finish(error)


def attached(comm, name: str, maxsize: int = 16):
    """An LRU (``xdap.cache.LRU``) of resources kept on ``comm`` itself (an
    MPI attribute): it lives and dies with the communicator, and is freed
    when the communicator is.  Local; no communication.

    >>> from mpi4py import MPI
    >>> attached(MPI.COMM_SELF, "doc").get_or_make("k", lambda: 42)
    42
    """
    table = comm.Get_attr(_keyval())
    if table is None:
        table = {}
        comm.Set_attr(_keyval(), table)
    lru = table.get(name)
    if lru is None:
        from .cache import LRU
        lru = table[name] = LRU(maxsize)
    return lru


_KEYVAL = []


def _keyval():
    if not _KEYVAL:
        def delete(comm, keyval, table):
            for lru in table.values():
                lru.clear()
        _KEYVAL.append(MPI.Comm.Create_keyval(delete_fn=delete))
    return _KEYVAL[0]


def balanced_grid(nprocs: int, ndims: int) -> tuple:
    """A balanced factorisation of nprocs over ndims axes (MPI_Dims_create).

    >>> balanced_grid(12, 2)
    (4, 3)
    """
    if ndims == 0:
        if nprocs != 1:
            raise ValueError(f"no distributed dimension to spread {nprocs} processes over")
        return ()
    dims = tuple(MPI.Compute_dims(nprocs, ndims))
    assert math.prod(dims) == nprocs
    return dims


# --------------------------------------------------------------------------
# Partitions (the DistDL backend interface over mpi4py)
# --------------------------------------------------------------------------
#
# A partition is a team of workers drawn from a ROOT communicator. Its
# membership is plain data -- the tuple of root ranks, in partition-rank
# order -- known on every worker, members or not.  That makes every factory
# below pure planning on every rank; only the members of a new team then
# call MPI (Comm.Create_group is collective over the new group only), so a
# worker outside a team never blocks on it.  Workers outside are *inactive*:
# rank/size/index are None/0/None, and every primitive is a no-op for them.

class Partition:
    """An unstructured team of workers (DistDL ``Partition``).

    ``Partition(comm)`` wraps a communicator: every rank of ``comm`` is an
    active member; ``comm`` is the *root* of every partition derived from
    it and is never freed by xdap.  Derived partitions own the communicators
    they create: release them with ``close()`` (or use the partition as a
    context manager); a partition that is garbage collected frees its
    communicator too, unless MPI is already finalized.

    size     number of workers in the team (known to inactive workers too)
    rank     this worker's rank in the team (None when inactive)
    active   whether this worker is a member
    shape    ``(size,)``: a team is a 1-d Cartesian topology
    index    ``rank``
    members  the root-communicator ranks of the team, in team-rank order
             (the same on every worker, members or not)

    >>> from mpi4py import MPI
    >>> P = Partition(MPI.COMM_SELF)
    >>> P.size, P.rank, P.active, P.shape, P.index
    (1, 0, True, (1,), 0)
    >>> with P.create_partition_inclusive([]) as Q:   # nobody: inactive everywhere
    ...     Q.active, Q.size, Q.rank, Q.allgather_data(5)
    (False, 0, None, [])
    """

    def __init__(self, comm=None):
        comm = resolve(comm)
        self._setup(comm, tuple(range(comm.size)), comm, owned=False)

    # -- construction -------------------------------------------------------
    def _setup(self, root, members, comm, owned):
        self._root = root
        self.members = tuple(int(m) for m in members)
        self._comm = comm if comm is not None else MPI.COMM_NULL
        self._owned = owned and self._comm != MPI.COMM_NULL
        self.active = self._comm != MPI.COMM_NULL
        self.size = len(self.members)
        self.rank = self._comm.Get_rank() if self.active else None
        self._finalizer = None
        if self._owned:
            import weakref
            self._finalizer = weakref.finalize(self, _free_comm, self._comm)

    @classmethod
    def _derived(cls, root, members, tag=0, **extra):
        """A partition of the given root ranks; only members call MPI."""
        members = tuple(int(m) for m in members)
        comm = None
        if root.rank in members:
            group = root.Get_group()
            sub = group.Incl(list(members))
            group.Free()
            comm = root.Create_group(sub, tag)
            sub.Free()
        self = cls.__new__(cls)
        self._setup(root, members, comm, owned=True)
        self._init_extra(**extra)
        return self

    def _init_extra(self):
        pass

    def close(self):
        """Free the communicator this partition created (local; idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._comm = MPI.COMM_NULL
        self.active = False
        self.rank = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- DistDL attributes ----------------------------------------------------
    @property
    def shape(self) -> tuple:
        return (self.size,)

    @property
    def index(self):
        return self.rank

    @property
    def comm(self):
        """The team's communicator (``MPI.COMM_NULL`` when inactive)."""
        return self._comm

    @property
    def root(self):
        """The root communicator the team was drawn from."""
        return self._root

    def __eq__(self, other):
        """Strict equality: the same root, the same team in the same order."""
        if not isinstance(other, Partition):
            return NotImplemented
        return (type(self) is type(other) and self.members == other.members
                and self.shape == other.shape and _same_comm(self._root, other._root))

    __hash__ = None

    def __repr__(self):
        return (f"<{type(self).__name__} shape={self.shape} members={self.members} "
                f"active={self.active}>")

    def _check_same_root(self, other, what):
        if not isinstance(other, Partition):
            raise TypeError(f"{what}: expected a Partition, got {type(other).__name__}")
        if not _same_comm(self._root, other._root):
            raise ValueError(f"{what}: the two partitions come from different root "
                             "communicators (derive both from one Partition)")

    # -- factories (pure planning on every worker, MPI among members) ---------
    def create_partition_inclusive(self, ranks) -> "Partition":
        """The sub-team of the given team ranks, in that order.

        Collective over the new team's members only; every worker may call
        it (non-members get an inactive partition).
        """
        ranks = [int(r) for r in ranks]
        for r in ranks:
            if not 0 <= r < self.size:
                raise ValueError(f"create_partition_inclusive: rank {r} is not in this "
                                 f"partition of size {self.size}")
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"create_partition_inclusive: repeated ranks in {ranks}")
        return Partition._derived(self._root, [self.members[r] for r in ranks])

    def create_partition_union(self, other: "Partition") -> "Partition":
        """This team followed by the workers of ``other`` not already in it."""
        self._check_same_root(other, "create_partition_union")
        mine = set(self.members)
        return Partition._derived(self._root, self.members + tuple(
            m for m in other.members if m not in mine))

    def create_cartesian_topology_partition(self, shape, periodic=None) -> "CartesianPartition":
        """The same team arranged on a Cartesian grid ``shape`` (C order:
        team rank r sits at ``numpy.unravel_index(r, shape)``)."""
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != self.size or any(s < 1 for s in shape):
            raise ValueError(f"create_cartesian_topology_partition: grid {shape} has "
                             f"{math.prod(shape)} positions but the partition has {self.size} workers")
        return CartesianPartition._derived(self._root, self.members, shape=shape,
                                           periodic=periodic)

    def create_allreduction_partition(self, axes=None) -> "Partition":
        """The team of workers that all-sum-reduce together: here (1-d) the
        whole team when axis 0 is reduced (``axes`` None, 0 or (0,)), else
        this worker alone."""
        return _cartesian(self).create_allreduction_partition(axes)

    def create_broadcast_partition_to(self, P_y: "Partition"):
        """(P_send, P_recv) for a broadcast from this partition to ``P_y``
        following the DistDL broadcast rules (see ``CartesianPartition``)."""
        return _cartesian(self).create_broadcast_partition_to(_cartesian(P_y))

    def create_reduction_partition_to(self, P_y: "Partition"):
        """(P_send, P_recv) for a sum-reduction from this partition to ``P_y``."""
        return _cartesian(self).create_reduction_partition_to(_cartesian(P_y))

    # -- communication within the team (pickled Python objects) --------------
    def broadcast_data(self, data, root: int = 0, P_data: "Partition | None" = None):
        """Share ``data`` from one worker with the whole team; returns it on
        every member, None on inactive workers.

        root    the team rank that holds ``data``; or, with ``P_data`` (a
                partition whose first member belongs to this team), that
                first member is the source -- for data only a sub-team knows.
        """
        if not self.active:
            return None
        if P_data is not None:
            if not P_data.members or P_data.members[0] not in self.members:
                raise ValueError("broadcast_data: P_data's first worker is not in this partition")
            root = self.members.index(P_data.members[0])
        return self._comm.bcast(data if self.rank == root else None, root=root)

    def allgather_data(self, data) -> list:
        """Every member's ``data``, in team-rank order; [] on inactive workers."""
        if not self.active:
            return []
        return self._comm.allgather(data)


class CartesianPartition(Partition):
    """A team on a Cartesian grid (DistDL ``CartesianPartition``), C order.

    shape     workers per grid axis
    index     this worker's grid coordinates (None when inactive)
    periodic  per axis, whether ``neighbor_ranks`` wraps by default

    >>> from mpi4py import MPI
    >>> P = Partition(MPI.COMM_SELF).create_cartesian_topology_partition((1, 1))
    >>> P.shape, P.index, P.cartesian_index(0), P.neighbor_ranks(periodic=(True, False))
    ((1, 1), (0, 0), (0, 0), ((0, 0), (None, None)))
    >>> P.close()
    """

    def __init__(self, comm=None, shape=None, periodic=None):
        comm = resolve(comm)
        self._setup(comm, tuple(range(comm.size)), comm, owned=False)
        self._init_extra(shape=(comm.size,) if shape is None else tuple(shape), periodic=periodic)
        if math.prod(self._shape) != self.size:
            raise ValueError(f"CartesianPartition: grid {self._shape} has "
                             f"{math.prod(self._shape)} positions but the communicator has "
                             f"{self.size} ranks")

    def _init_extra(self, shape=(), periodic=None):
        self._shape = tuple(int(s) for s in shape)
        self.periodic = _periodic_flags(periodic, len(self._shape), "periodic")

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def index(self):
        return self.cartesian_index(self.rank) if self.active else None

    def cartesian_index(self, rank: int) -> tuple:
        """Grid coordinates of a team rank."""
        if not 0 <= int(rank) < self.size:
            raise ValueError(f"cartesian_index: rank {rank} not in [0, {self.size})")
        return tuple(int(c) for c in np.unravel_index(int(rank), self._shape))

    def rank_of(self, index) -> int:
        """The team rank at grid coordinates ``index``."""
        index = tuple(int(i) for i in index)
        if len(index) != len(self._shape) or any(not 0 <= i < s for i, s in zip(index, self._shape)):
            raise ValueError(f"rank_of: index {index} outside the grid {self._shape}")
        r = 0
        for i, s in zip(index, self._shape):
            r = r * s + i
        return r

    def neighbor_ranks(self, index=None, periodic=None) -> tuple:
        """((lo, hi), ...) per grid axis: the team ranks of the neighbours of
        ``index`` one step down and up that axis; None where there is none.
        ``index`` is grid coordinates, or a team rank (an int, as DistDL's
        ``neighbor_ranks(rank)``); default this worker (``()`` when
        inactive).  ``periodic`` (per axis, default the partition's) wraps
        around the edges."""
        if index is None:
            if not self.active:
                return ()
            index = self.index
        elif isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            index = self.cartesian_index(index)
        index = tuple(int(i) for i in index)
        if len(index) != len(self._shape) or any(not 0 <= i < s for i, s in zip(index, self._shape)):
            raise ValueError(f"neighbor_ranks: index {index} outside the grid {self._shape}")
        periodic = self.periodic if periodic is None else _periodic_flags(
            periodic, len(self._shape), "neighbor_ranks: periodic")
        out = []
        for axis, (i, s) in enumerate(zip(index, self._shape)):
            pair = []
            for j in (i - 1, i + 1):
                if not 0 <= j < s:
                    if not periodic[axis]:
                        pair.append(None)
                        continue
                    j %= s
                pair.append(self.rank_of(index[:axis] + (j,) + tuple(index[axis + 1:])))
            out.append(tuple(pair))
        return tuple(out)

    def create_allreduction_partition(self, axes=None) -> "CartesianPartition":
        """The workers that share this worker's coordinates on the axes NOT
        in ``axes`` (default: all axes are reduced), arranged on the reduced
        axes' grid.  ``axes=()`` gives each worker alone (identity)."""
        axes = _norm_axes(axes, len(self._shape), "create_allreduction_partition")
        keep = [a for a in range(len(self._shape)) if a not in axes]
        sub_shape = tuple(self._shape[a] for a in axes)
        if not self.active:
            return CartesianPartition._derived(self._root, (), shape=sub_shape)
        me = self.index
        team = [m for r, m in enumerate(self.members)
                if all(self.cartesian_index(r)[a] == me[a] for a in keep)]
        return CartesianPartition._derived(self._root, team, shape=sub_shape,
                                           periodic=tuple(self.periodic[a] for a in axes))

    def create_cartesian_subtopology_partition(self, remain_dims) -> "CartesianPartition":
        """The workers that share this worker's coordinates on the axes
        where ``remain_dims`` (one bool per axis) is False, on the grid of
        the remaining axes -- MPI_Cart_sub.  The same teams as
        ``create_allreduction_partition`` of the remaining axes."""
        remain = tuple(bool(r) for r in remain_dims)
        if len(remain) != len(self._shape):
            raise ValueError(f"create_cartesian_subtopology_partition: remain_dims needs "
                             f"{len(self._shape)} entries, got {tuple(remain_dims)}")
        return self.create_allreduction_partition(tuple(a for a, r in enumerate(remain) if r))

    # -- broadcast / reduction partitions (the DistDL broadcast rules) --------
    def _source_index(self, P_y, iy):
        """The index in self (P_x) that P_y's index iy receives from."""
        nx = len(self._shape)
        ny = len(P_y.shape)
        sx = (1,) * (ny - nx) + self._shape
        ix = tuple(i if a == b else 0 for i, a, b in zip(iy, sx, P_y.shape))
        return ix[ny - nx:]

    def _check_broadcastable(self, P_y, what):
        self._check_same_root(P_y, what)
        nx, ny = len(self._shape), len(P_y.shape)
        sx = (1,) * (ny - nx) + self._shape
        if nx > ny or any(a != b and a != 1 for a, b in zip(sx, P_y.shape)):
            raise ValueError(f"{what}: partition shape {self._shape} does not broadcast to "
                             f"{P_y.shape} (each axis must match or be 1; leading 1s are added)")

    def _teams(self, P_y):
        """For each P_x worker (by root rank) the team: itself first, then
        the P_y workers that receive from it (pure, the same everywhere)."""
        teams = {}
        for r, m in enumerate(self.members):
            teams[m] = [m]
        for r, m in enumerate(P_y.members):
            src = self.members[self.rank_of(self._source_index(P_y, P_y.cartesian_index(r)))]
            if m != src:
                teams[src].append(m)
        return teams

    def _broadcast_teams(self, P_y):
        """(the team this worker roots, the team it receives in) of the
        broadcast from this partition to P_y; inactive partitions where it
        has no such role.  The teams are created in increasing order of
        their root's rank -- the same global order everywhere, so the
        member-collective Create_group calls cannot deadlock."""
        teams = self._teams(P_y)
        me = self._root.rank
        as_root = me if me in self.members else None
        as_member = None
        if me in P_y.members:
            iy = P_y.cartesian_index(P_y.members.index(me))
            as_member = self.members[self.rank_of(self._source_index(P_y, iy))]
        made = {k: Partition._derived(self._root, teams[k], tag=k)
                for k in sorted({k for k in (as_root, as_member) if k is not None})}
        inactive = Partition._derived(self._root, ())
        return made.get(as_root, inactive), made.get(as_member, inactive)

    def create_broadcast_partition_to(self, P_y: "CartesianPartition"):
        """(P_send, P_recv) for a broadcast from this partition (P_x) to P_y.

        Each P_x worker roots one team: itself (team rank 0), then the P_y
        workers whose data it provides -- P_y index i reads P_x index
        (i_a if shapes agree on axis a, else 0), with leading 1s added to
        P_x's shape.  P_send is the team this worker roots (P_x members),
        P_recv the team it receives in (P_y members; it may root it).
        Collective over the workers of P_x and P_y; others get inactive
        partitions.
        """
        self._check_broadcastable(P_y, "create_broadcast_partition_to")
        return self._broadcast_teams(P_y)

    def create_reduction_partition_to(self, P_y: "CartesianPartition"):
        """(P_send, P_recv) for a sum-reduction from this partition (P_x) to
        P_y: the broadcast teams of P_y -> P_x, roles swapped.  P_send is the
        team this worker contributes to (P_x members), P_recv the team it
        roots and receives the sum in (P_y members)."""
        P_y._check_broadcastable(self, "create_reduction_partition_to")
        P_recv, P_send = P_y._broadcast_teams(self)
        return P_send, P_recv


def _cartesian(P):
    if isinstance(P, CartesianPartition):
        return P
    if not isinstance(P, Partition):
        raise TypeError(f"expected a Partition, got {type(P).__name__}")
    # A plain team seen as a 1-d grid: same members, no new communicator.
    C = CartesianPartition.__new__(CartesianPartition)
    C._setup(P._root, P.members, P._comm, owned=False)
    C._init_extra(shape=(P.size,))
    return C


def _periodic_flags(periodic, ndim: int, what: str) -> tuple:
    """Per-axis periodic flags: None (none periodic), one bool for every
    axis (as MPI's ``Create_cart(periods=True)`` reads it), or one entry
    per axis."""
    if periodic is None:
        return (False,) * ndim
    if isinstance(periodic, (bool, np.bool_)):
        return (bool(periodic),) * ndim
    try:
        flags = tuple(bool(p) for p in periodic)
    except TypeError:
        raise TypeError(f"{what} must be a bool or one bool per grid axis ({ndim}), "
                        f"got {periodic!r}") from None
    if len(flags) != ndim:
        raise ValueError(f"{what} needs one entry per grid axis ({ndim}), got {flags}")
    return flags


def _norm_axes(axes, ndim, what):
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    out = []
    for a in axes:
        if not isinstance(a, int) or not -ndim <= a < ndim:
            raise ValueError(f"{what}: axis {a!r} out of range for a {ndim}-d grid")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: repeated axis in {tuple(axes)}")
    return tuple(sorted(out))


def _same_comm(a, b) -> bool:
    if a is b:
        return True
    if a == MPI.COMM_NULL or b == MPI.COMM_NULL:
        return False
    return MPI.Comm.Compare(a, b) == MPI.IDENT


def _free_comm(comm):
    # Called by close() or at garbage collection; MPI_Comm_free is local in
    # practice (it only drops a reference), so ranks collecting at different
    # times do not deadlock.  After MPI_Finalize there is nothing to free.
    if comm != MPI.COMM_NULL and MPI.Is_initialized() and not MPI.Is_finalized():
        comm.Free()
