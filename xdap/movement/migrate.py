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
from ..arraylike import is_distributed, unwrap, wrap_like
from ..distribution import Distribution
from ..maps import DistributedUnstructuredMap, index_digest, unstructured_fingerprint
from ..parts import Parts
from ..progress import bar
from ..transport import Route, move

__all__ = ["migrate", "MigrationPlan"]


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
        with agreement(d.comm, "MigrationPlan.apply"):
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


def migrate(d, p: Parts, dest) -> tuple:
    """``((Distribution, Parts), MigrationPlan)`` of the rows of ``(d, p)``
    moved to the ranks ``dest`` names, one per local row along dim 0 (the
    output of a graph partitioner).  Only dim 0 may be distributed; rows
    this rank holds as copies are not sent (their ``dest`` is checked, not
    used).  Collective; copies.  Every rank raises the same error for a bad
    ``dest``: wrong length or dtype, or a rank out of range."""
    d.require_dims("migrate")
    comm = d.comm
    with agreement(comm, "migrate") as ag:
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
        dest = dest.astype(np.int64)
        if dest.size and (dest.min() < 0 or dest.max() >= comm.size):
            bad = int(dest[(dest < 0) | (dest >= comm.size)][0])
            raise ValueError(f"migrate: dest names rank {bad}, out of range [0, {comm.size})")
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
