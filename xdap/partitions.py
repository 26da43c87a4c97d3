"""DistDL's partitions over mpi4py: teams of workers drawn from a root
communicator -- the backend interface that ``xdap.movement.collectives``
builds broadcast and sum-reduce on (seed 002).

A partition is a team of workers drawn from a ROOT communicator. Its
membership is plain data -- the tuple of root ranks, in partition-rank order
-- known on every worker, members or not.  That makes every factory below
pure planning on every rank; only the members of a new team then call MPI
(Comm.Create_group is collective over the new group only), so a worker
outside a team never blocks on it.  Workers outside are *inactive*:
rank/size/index are None/0/None, and every primitive is a no-op for them.

>>> from mpi4py import MPI
>>> Partition(MPI.COMM_SELF).size
1
"""
from __future__ import annotations

import math

import numpy as np

from mpi4py import MPI

from .comm import resolve
from .contract import Contract

__all__ = ["Partition", "CartesianPartition", "normalise_axes"]


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

    # wraps a communicator, on each rank alone (no MPI call); the methods that
    # derive teams are collective over the root communicator
    __xdap_contract__ = Contract("pure", "Partition", ("comm",))

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

    __xdap_contract__ = Contract("pure", "CartesianPartition", ("comm", "shape", "periodic"))

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
        axes = normalise_axes(axes, len(self._shape), "create_allreduction_partition")
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


def normalise_axes(axes, ndim, what):
    """Grid ``axes`` (None: all; an int; a sequence) as a sorted tuple of
    distinct axes in ``[0, ndim)`` -- ValueError naming ``what`` otherwise."""
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
