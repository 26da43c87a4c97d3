"""Migration by destination: send each row where a partitioner says.

``migrate(d, p, dest)`` moves every row this rank owns (copies -- ghost rows,
padding -- stay behind) to rank ``dest[i]`` and returns the rows' new
``(Distribution, Parts)`` -- an unstructured distribution in which every
row keeps its global index, so ``to_global()`` is unchanged -- and the
``MigrationPlan``, which moves any other array of the same distribution
the same way (PETSc's migration star forest, kept for every field of a
mesh).  Rows arrive grouped by source rank, in their source order.

The rows and their global indices travel together along one route
(``xdap.transport``): one ``Alltoall`` of counts, then one exchange of
every buffer (values, validity, ragged lengths, indices).  The new map is
built without a directory: it is one-to-one by construction.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(4.0), comm=MPI.COMM_SELF)
>>> (d2, p2), plan = migrate(d, p, np.zeros(4, np.int64))
>>> d2.maps[0].global_indices(0).tolist(), p2.values.tolist()
([0, 1, 2, 3], [0.0, 1.0, 2.0, 3.0])
"""
from __future__ import annotations

import numpy as np

from ..agreement import agreement
from ..contract import collective
from ..arraylike import is_distributed, unwrap, wrap_like
from ..distribution import Distribution
from ..maps import DistributedUnstructuredMap, index_digest, unstructured_fingerprint
from ..parts import Parts
from ..progress import bar
from ..transport import Route, move

__all__ = ["migrate", "migrate_array", "migrate_agreed", "check_destinations", "MigrationPlan"]


class MigrationPlan:
    """How the rows of one distribution move: replay it with ``apply`` on
    any other array of that distribution (collective)."""

    def __init__(self, source, target, route: Route):
        self.source, self.target = source, target
        self.route = route                 # my rows to send, grouped by destination

    def apply(self, x, p: Parts | None = None):
        """Move another array whose rows are distributed as the source's the
        same way -- any other trailing shape or type: a mesh's connectivity
        ``N * 4 * int64``, a cell field ``N * ?float64`` and coordinates
        ``N * 3 * float64`` all follow one plan. Returns an array of ``x``'s
        kind (a DistArray), or the target's Parts when ``x`` is a
        Distribution and ``p`` its Parts."""
        if is_distributed(x):
            d, q = unwrap(x)
            return wrap_like(x, self.target_for(d), self.apply(d, q), agreed=True)
        d, q = x, p
        with agreement(d.comm, "MigrationPlan.apply") as ag:
            ag.same("the array", (d.fingerprint(), q.info.global_type(d.global_shape)))
            self._check(d)
        return move(self.route, q)[0]

    def _check(self, d) -> None:
        if d is self.source or d == self.source:
            return
        src = self.source
        if d.comm is not src.comm and d.comm != src.comm or not d.maps or \
                d.maps[0] != src.maps[0] or any(g != 1 for g in d.grid[1:]) or \
                d.coords[0] != src.coords[0]:
            raise ValueError("MigrationPlan.apply: the array's rows are not distributed as the "
                             f"plan's source's (dim 0: {d.maps[0] if d.maps else None!r} on a "
                             f"{d.grid} grid, the plan's {src.maps[0]!r} on {src.grid})")

    def target_for(self, d):
        """The target distribution of an array of distribution ``d``: the
        plan's rows, ``d``'s trailing dimensions."""
        if d is self.source or d == self.source:
            return self.target
        return Distribution((self.target.maps[0],) + tuple(d.maps[1:]), self.target.comm)


def check_destinations(d, p: Parts, dest) -> np.ndarray:
    """``dest`` checked for ``(d, p)``: one rank per local row along dim 0,
    integers in range; as int64."""
    d.require_dims("migrate")
    comm = d.comm
    if any(g != 1 for g in d.grid[1:]):
        raise ValueError(f"migrate: rows move whole, so only dimension 0 may be "
                         f"distributed; the grid is {d.grid}")
    dest = np.asarray(dest)
    n = p.shape[0]
    if dest.shape != (n,):
        raise ValueError(f"migrate: dest needs one rank per local row ({n}), got shape "
                         f"{dest.shape}")
    if dest.size and dest.dtype.kind not in "iu":
        raise TypeError(f"migrate: dest must hold integer ranks, got dtype {dest.dtype}")
    if dest.size and dest.dtype.kind == "u" and dest.max() > np.iinfo(np.int64).max:
        raise ValueError(f"migrate: dest names rank {int(dest.max())}, out of range "
                         f"[0, {comm.size})")
    dest = dest.astype(np.int64)
    if dest.size and (dest.min() < 0 or dest.max() >= comm.size):
        bad = int(dest[(dest < 0) | (dest >= comm.size)][0])
        raise ValueError(f"migrate: dest names rank {bad}, out of range [0, {comm.size})")
    return dest


@collective(name="migrate", own=("dest",))
def migrate(d, p: Parts, dest) -> tuple:
    """``((Distribution, Parts), MigrationPlan)`` of the rows of ``(d, p)``
    moved to the ranks ``dest`` names, one per local row along dim 0 (the
    output of a graph partitioner).  Only dim 0 may be distributed; rows
    this rank holds as copies are not sent (their ``dest`` is checked, not
    used).  Collective; copies.  Every rank raises the same error for a bad
    ``dest`` (wrong length or dtype, a rank out of range) or for ranks
    passing arrays of other distributions or types."""
    dest = check_destinations(d, p, dest)
    # dest differs by design (each rank's rows): its checks are in the vote
    yield dict(d=d, p=p.info.global_type(d.global_shape))
    return migrate_agreed(d, p, dest)


@collective(name="migrate", own=("dest",))
def migrate_array(a, dest) -> tuple:
    """``migrate`` of the array ``a``: ``(the migrated array, plan)``."""
    if not is_distributed(a):
        raise TypeError(f"migrate: a must be a DistArray, got {type(a).__name__}")
    d, p = unwrap(a)
    dest = check_destinations(d, p, dest)
    yield dict(a=a)
    pair, plan = migrate_agreed(d, p, dest)
    return wrap_like(a, *pair, agreed=True), plan


def migrate_agreed(d, p: Parts, dest: np.ndarray) -> tuple:
    """``migrate`` of checked, agreed arguments."""
    comm = d.comm
    n = p.shape[0]
    m = d.maps[0]
    own = np.arange(n)[m.canonical_positions(d.coords[0])]
    route = Route.to_ranks(comm, dest[own], rows=own)    # counts learned as the rows move
    with bar(comm, 3, "migrate", "step") as progress:
        ids = Parts.of_array(m.global_indices(d.coords[0]))
        progress.update(1)
        moved_ids, moved = move(route, ids, p)
        progress.update(1)
        ids = moved_ids.values
        with agreement(comm, "migrate", share=True) as ag:
            ag.share((len(ids), index_digest(ids)))
        counts = [c for c, _ in ag.shared]
        fp = unstructured_fingerprint(m.size, True, counts, [g for _, g in ag.shared])
        new = DistributedUnstructuredMap(m.size, counts, {comm.rank: ids}, True, fp)
        target = Distribution((new,) + d.maps[1:], comm)
        progress.update(1)
    return (target, moved), MigrationPlan(d, target, route)
