"""Broadcast, sum-reduce and all-sum-reduce (the DistDL primitives), each
with its adjoint.

Two faces:

* on local data (a NumPy array or a fixed-type xnd container) with
  partitions from ``xdap.comm`` -- ``broadcast(x, P_send, P_recv)`` with the
  teams of ``P_x.create_broadcast_partition_to(P_y)``, ``sum_reduce(x,
  P_send, P_recv)`` with ``P_x.create_reduction_partition_to(P_y)``,
  ``all_sum_reduce(x, P)`` with ``P.create_allreduction_partition(axes)``.
  A worker outside the teams gets an empty array (shape (0,)): inactive
  workers are a no-op, as in DistDL.
* on a DistArray over grid axes: the teams are the ranks that differ only
  in the coordinates of ``axes`` (any subset of the grid axes, none or
  all); each rank's block is the data. ``broadcast(a, axes)`` copies the
  block of the team's first rank (coordinate 0 on ``axes``) to the team,
  ``sum_reduce(a, axes)`` sums the team's blocks into that rank (the others
  get zeros), ``all_sum_reduce(a, axes)`` gives every member the sum.  The
  result has ``a``'s distribution: a linear operator on per-rank blocks
  (replicated or partial-sum data), exactly the DistDL semantics.

Adjoints (<F x, y> = <x, F* y> summed over all workers): broadcast and
sum-reduce are each other's adjoint with the teams swapped; all-sum-reduce
is self-adjoint.  Every call copies: outputs are new arrays.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.partitions import Partition
>>> P = Partition(MPI.COMM_SELF).create_cartesian_topology_partition((1,))
>>> P_send, P_recv = P.create_broadcast_partition_to(P)
>>> broadcast(np.arange(3.0), P_send, P_recv)
array([0., 1., 2.])
>>> all_sum_reduce(np.ones(2), P.create_allreduction_partition(()))
array([1., 1.])
"""
from __future__ import annotations

import numpy as np
from ..arraylike import is_distributed, unwrap, wrap_like
from ..comm import MPI
from ..partitions import Partition, normalise_axes
from .. import plans
from ..parts import Parts, as_container, parts
from ..agreement import agreement

__all__ = ["broadcast", "broadcast_adjoint", "sum_reduce", "sum_reduce_adjoint",
           "all_sum_reduce", "all_sum_reduce_adjoint"]

# dtypes that travel with a small integer code in the shape/dtype handshake
_CODES = [np.dtype(c) for c in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8",
                                "f2", "f4", "f8", "c8", "c16")]
_MAXDIM = 16


# --------------------------------------------------------------------------
# local data in and out
# --------------------------------------------------------------------------

def _as_array(x):
    """A NumPy view of a NumPy array or of a fixed, non-optional xnd container."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x)
    p = parts(x)
    if p.info.ragged or p.info.optional:
        raise TypeError(f"collectives move fixed, non-optional data; got type '{x.type}'")
    return p.values


def _like(x, out):
    """``out`` as the kind of thing ``x`` is: xnd (zero-copy) for xnd input,
    NumPy otherwise (also when this worker passed no data)."""
    if x is not None and not isinstance(x, np.ndarray) and hasattr(x, "type"):
        return as_container(out)
    return out


def _meta(a):
    """The handshake vector of an array: ok flag (0), ndim, dtype code, shape."""
    if a.ndim > _MAXDIM:
        raise ValueError(f"collectives: at most {_MAXDIM} dimensions, got {a.ndim}")
    if a.dtype not in _CODES:
        raise TypeError(f"collectives: unsupported dtype {a.dtype} (use one of "
                        f"{', '.join(str(c) for c in _CODES)}, native byte order)")
    m = np.zeros(3 + _MAXDIM, np.int64)
    m[1], m[2] = a.ndim, _CODES.index(a.dtype)
    m[3:3 + a.ndim] = a.shape
    return m


def _data(x):
    """(array, handshake vector, error) of a worker's data.  An error is
    not raised here: the worker first tells its team (flag 1 in the
    handshake), so nobody is left waiting in the data movement."""
    try:
        a = _as_array(x)
        return a, _meta(a), None
    except (TypeError, ValueError) as e:
        bad = np.zeros(3 + _MAXDIM, np.int64)
        bad[0] = 1
        return None, bad, e


def _handshake(teams):
    """Agree on (shape, dtype) in every team at once: nonblocking MAX
    all-reduces of (meta, -meta), so a worker in two teams cannot deadlock.
    Workers without data pass None.  Returns per team (shape, dtype), or an
    error message when the team's workers disagree or one of them passed
    unusable data -- every member of that team sees the same verdict, skips
    that team's data movement, and raises only after its other team has
    finished (so nobody is left waiting)."""
    n = 3 + _MAXDIM
    bufs, reqs = [], []
    for comm, meta in teams:
        send = np.full(2 * n, np.iinfo(np.int64).min, np.int64)   # neutral for MAX
        if meta is not None:
            send[:n], send[n:] = meta, -meta
        recv = np.empty_like(send)
        reqs.append(comm.Iallreduce(send, recv, op=MPI.MAX))
        bufs.append(recv)
    MPI.Request.Waitall(reqs)
    out = []
    for recv in bufs:
        hi = recv[:n]
        if hi[0] < 0:                        # only neutral values: nobody had data
            out.append("collectives: no worker of the team holds data")
            continue
        if hi[0] > 0:
            out.append("collectives: a worker of the team passed data that collectives cannot "
                       "move (see its error)")
            continue
        if not np.array_equal(hi, -recv[n:]):    # max(meta) != min(meta)
            out.append("collectives: the workers of a team hold arrays of different shapes or "
                       "dtypes (they must agree)")
            continue
        out.append((tuple(int(s) for s in hi[3:3 + int(hi[1])]), _CODES[int(hi[2])]))
    return out


def _raise_disagreement(agreed, error=None):
    if error is not None:                 # this worker's own data was unusable
        raise error
    for v in agreed:
        if isinstance(v, str):
            raise ValueError(v)


def _sum_op(dtype):
    # NumPy adds booleans with logical or; MPI defines no SUM on C_BOOL
    return MPI.LOR if np.dtype(dtype) == np.bool_ else MPI.SUM


def _empty(like=None):
    return np.empty(0, np.float64 if like is None else like.dtype)


def _same_team(P, Q) -> bool:
    return P is Q or (P.active and Q.active and P.members == Q.members)


# --------------------------------------------------------------------------
# the functional primitives over partitions (and the DistArray dispatch)
# --------------------------------------------------------------------------

def _two_teams(x, P_send, P_recv):
    """The common start of broadcast and sum_reduce: this worker's data (if
    it is active in P_send) and the handshake of its (at most two) teams.
    Returns (same team?, array, per team verdict, per team ok, own error)."""
    same = _same_team(P_send, P_recv)
    a = meta = error = None
    if P_send.active:
        a, meta, error = _data(x)
    teams = [(P_send.comm, meta)] if P_send.active else []
    if P_recv.active and not same:
        teams.append((P_recv.comm, None))
    agreed = _handshake(teams)
    return same, a, agreed, [not isinstance(v, str) for v in agreed], error


def broadcast(x, P_send=None, P_recv=None, *, axes=None):
    """Copy the data of each P_send root to every member of its team.

    x        this worker's data if it is active in P_send (ignored otherwise)
    returns  the received copy where P_recv is active, else an empty array

    ``broadcast(a, axes)`` with a DistArray: see the module docstring.
    """
    if is_distributed(x):
        return grid_broadcast(x, _grid_axes(x, P_send, P_recv, axes, "broadcast"))
    same, a, agreed, ok, error = _two_teams(x, P_send, P_recv)
    reqs, out = [], None
    if P_send.active and ok[0]:
        if same:                          # this worker roots its own receive team
            out = a.copy()
            reqs.append(P_send.comm.Ibcast(out, root=0))
        else:
            reqs.append(P_send.comm.Ibcast(a, root=0))
    if P_recv.active and not same and ok[-1]:
        out = np.empty(*agreed[-1])
        reqs.append(P_recv.comm.Ibcast(out, root=0))
    MPI.Request.Waitall(reqs)
    _raise_disagreement(agreed, error)
    return _like(x, out if out is not None else _empty(a))


def sum_reduce(x, P_send=None, P_recv=None, *, axes=None):
    """Sum the data of each team's members into the team's root.

    x        this worker's data if it is active in P_send (it contributes
             to that team; ignored otherwise)
    returns  the sum where this worker roots P_recv, else an empty array

    ``sum_reduce(a, axes)`` with a DistArray: see the module docstring.
    """
    if is_distributed(x):
        return grid_sum_reduce(x, _grid_axes(x, P_send, P_recv, axes, "sum_reduce"))
    same, a, agreed, ok, error = _two_teams(x, P_send, P_recv)
    reqs, out = [], None
    if P_send.active and ok[0]:
        out = np.empty_like(a) if P_send.rank == 0 else None
        reqs.append(P_send.comm.Ireduce(a, out, op=_sum_op(a.dtype), root=0))
    if P_recv.active and not same and ok[-1]:
        out = np.empty(*agreed[-1])
        # this worker's own data went to another team: it adds zeros here
        reqs.append(P_recv.comm.Ireduce(np.zeros_like(out), out, op=_sum_op(out.dtype), root=0))
    MPI.Request.Waitall(reqs)
    _raise_disagreement(agreed, error)
    return _like(x, out if P_recv.active else _empty(a))


def all_sum_reduce(x, P=None, *, axes=None):
    """Every member of P gets the sum of all members' data (empty array on
    inactive workers).  The members must hold arrays of one shape and
    dtype, else every member raises ValueError.  ``all_sum_reduce(a, axes)``
    with a DistArray: see the module docstring."""
    if is_distributed(x):
        return grid_all_sum_reduce(x, _grid_axes(x, P, None, axes, "all_sum_reduce"))
    if not P.active:
        return _like(x, _empty())
    a, meta, error = _data(x)
    agreed = _handshake([(P.comm, meta)])
    out = None
    if not isinstance(agreed[0], str):
        out = np.empty_like(a)
        P.comm.Allreduce(a, out, op=_sum_op(a.dtype))
    _raise_disagreement(agreed, error)
    return _like(x, out)


def broadcast_adjoint(y, P_send=None, P_recv=None, *, axes=None):
    """Adjoint of ``broadcast(., P_send, P_recv)``: the copies are summed
    back into each P_send root.  DistArray: ``sum_reduce(a, axes)``."""
    if is_distributed(y):
        return grid_sum_reduce(y, _grid_axes(y, P_send, P_recv, axes, "broadcast_adjoint"))
    return sum_reduce(y, P_recv, P_send)


def sum_reduce_adjoint(y, P_send=None, P_recv=None, *, axes=None):
    """Adjoint of ``sum_reduce(., P_send, P_recv)``: each root's data is
    copied back to the members of its team.  DistArray: ``broadcast(a, axes)``."""
    if is_distributed(y):
        return grid_broadcast(y, _grid_axes(y, P_send, P_recv, axes, "sum_reduce_adjoint"))
    return broadcast(y, P_recv, P_send)


def all_sum_reduce_adjoint(y, P=None, *, axes=None):
    """Adjoint of ``all_sum_reduce``: itself."""
    return all_sum_reduce(y, P, axes=axes)


# --------------------------------------------------------------------------
# DistArray face: teams along grid axes
# --------------------------------------------------------------------------

def grid_team(d, axes) -> Partition:
    """The team of ranks that differ from this one only on grid ``axes``,
    ordered by their coordinates on ``axes`` (C order: team rank 0 has
    coordinate 0 on each).  Made once per distribution and axes and kept on
    the communicator (``xdap.plans.on``): creating a communicator costs
    more than a small reduction.  Collective over ``d.comm`` (every rank
    calls it in the same collective operations, so the caches agree)."""
    axes = tuple(sorted(axes))

    def make():
        team = sorted(d.team_ranks(axes), key=lambda r: tuple(d.coords_of(r)[k] for k in axes))
        return Partition._derived(d.comm, team)
    return plans.on(d.comm).get_or_make(plans.Key("grid team", (d.fingerprint(), axes)), make,
                                        release=Partition.close)


class _Refused:
    """A DistArray face called with partitions: the error, raised inside
    the call's agreement so that every rank raises it."""

    def __init__(self, error):
        self.error = error


def _grid_axes(a, second, third, axes, what):
    """The grid axes of a DistArray call: ``f(a, axes)`` or ``f(a,
    axes=...)``.  Partitions belong to the local-data face: handed one with
    a DistArray, the call refuses (on every rank, in its agreement) rather
    than reading the partition as axes."""
    given = [v for v in (second, third) if v is not None]
    if any(isinstance(v, Partition) for v in given):
        return _Refused(TypeError(f"{what}: a DistArray's teams are its grid axes -- call "
                                  f"{what}(a, axes); Partitions go with local data "
                                  f"({what}(x, P_send, P_recv))"))
    if third is not None or (axes is not None and second is not None):
        return _Refused(TypeError(f"{what}(a, axes): give the grid axes once, got "
                                  f"{second!r}, {third!r} and axes={axes!r}"))
    return second if axes is None else axes


def _blocks(a, axes, what):
    """Validate (collectively); return (values, team partition)."""
    d, p = unwrap(a)
    with agreement(d.comm, what):
        if isinstance(axes, _Refused):
            raise axes.error
        if p.info.ragged or p.info.optional:
            raise TypeError(f"{what}: needs a fixed, non-optional DistArray; got "
                            f"'{p.info.global_type(d.global_shape)}'")
        norm = normalise_axes(axes, d.ndim, what)
        # every rank's local shape follows from the (agreed) distribution
        team = d.team_ranks(norm)
        shapes = [d.local_shape_of(r) for r in team]
        if any(s != d.local_shape for s in shapes):
            raise ValueError(f"{what}: ranks {team} combine their blocks along grid "
                             f"axes {norm} but hold different local shapes "
                             f"{shapes}; they must agree")
    return p.values, grid_team(d, norm)


def _rewrap(a, values):
    d, p = unwrap(a)
    return wrap_like(a, d, Parts(p.info.with_shape(values.shape), values), same_rows=True)


def grid_broadcast(a, axes=None):
    """DistArray face of ``broadcast`` (see the module docstring); copies."""
    v, P = _blocks(a, axes, "broadcast")
    out = v.copy()
    P.comm.Bcast(out, root=0)
    return _rewrap(a, out)


def grid_sum_reduce(a, axes=None):
    """DistArray face of ``sum_reduce``: the team's sum on its first rank,
    zeros elsewhere; copies."""
    v, P = _blocks(a, axes, "sum_reduce")
    out = np.zeros_like(v)
    P.comm.Reduce(v, out if P.rank == 0 else None, op=_sum_op(v.dtype), root=0)
    return _rewrap(a, out)


def grid_all_sum_reduce(a, axes=None):
    """DistArray face of ``all_sum_reduce``: every team member gets the sum."""
    v, P = _blocks(a, axes, "all_sum_reduce")
    out = np.empty_like(v)
    P.comm.Allreduce(v, out, op=_sum_op(v.dtype))
    return _rewrap(a, out)
