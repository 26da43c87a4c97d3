"""A distributed mesh's cells moved with all their fields by one plan, and
the ghost layer of the nodes they use.

``migrate_mesh(cells, dest, fields)`` sends every cell to the part a
partitioner chose (``hilbert_partition``, ``metis_partition``) and every
cell field with it, by one reusable ``MigrationPlan`` (PETSc's migration
star forest): connectivity ``N * 4 * int64`` (or ragged ``var * var *
int64`` for mixed kinds), fields of any type (``N * ?float64``, ``N * 3 *
float64``).

``ghost_layer(nodes, cells)`` is the node side: the nodes this rank's
cells use (``needed``, ascending), the cells renumbered into positions of
``needed`` (PETSc's local numbering), and an ``xdap.Scatter`` between the
distributed node field and ``needed``: ``update`` gathers the owners'
values (a ghost update, into a kept buffer), ``assemble`` adds per-node or
per-corner contributions into the owners (finite-element assembly).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> tris = xdap.from_local(np.array([[0, 1, 2], [1, 2, 3]]), comm=MPI.COMM_SELF)
>>> mesh = migrate_mesh(tris, np.zeros(2, np.int64), {"id": xdap.from_local(np.arange(2.0),
...                     comm=MPI.COMM_SELF)})
>>> nodes = xdap.zeros(4, comm=MPI.COMM_SELF)
>>> layer = ghost_layer(nodes, mesh.cells)
>>> layer.assemble_corners(np.ones((2, 3)), into=nodes)   # cells per node
>>> layer.update(nodes).tolist(), layer.ghosts
([1.0, 2.0, 2.0, 1.0], 0)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import comm as _comm
from ..heap import trims_heap
from ..arraylike import is_distributed, unwrap, wrap_like
from ..distribution import Distribution
from ..movement.migrate import MigrationPlan, migrate
from ..directory import owners_of
from ..movement.scatter import Scatter
from .cells import local_cells, unique_inverse
from ..agreement import agreement

__all__ = ["migrate_mesh", "MigratedMesh", "ghost_layer", "GhostLayer"]


@dataclass
class MigratedMesh:
    """The result of ``migrate_mesh``: the moved cells, every field moved
    with them, and the plan (``plan.apply(x)`` moves any other field)."""
    cells: object
    fields: dict = field(default_factory=dict)
    plan: MigrationPlan | None = None


@trims_heap
def migrate_mesh(cells, dest, fields: dict | None = None) -> MigratedMesh:
    """Send this rank's cell ``i`` (and row ``i`` of every field) to rank
    ``dest[i]`` (collective). ``cells`` and the fields: DistArrays whose
    rows are distributed alike (a field distributed otherwise is one
    ValueError on every rank). Cells keep their global ids, so
    ``to_global()`` is unchanged; rows arrive grouped by source rank.
    Copies the rows (they move)."""
    fields = dict(fields or {})
    with agreement(_comm.comm_of(cells, *fields.values()), "migrate_mesh") as ag:
        if not is_distributed(cells):
            raise TypeError(f"migrate_mesh: cells must be a DistArray, got "
                            f"{type(cells).__name__}")
        ag.same("fields", sorted(fields))
        d, p = unwrap(cells)
        for name, f in fields.items():      # checked before anything moves
            if not is_distributed(f):
                raise TypeError(f"migrate_mesh: field {name!r} must be a DistArray, got "
                                f"{type(f).__name__}")
            fd = f.distribution
            if not fd.maps or fd.maps[0] != d.maps[0] or any(g != 1 for g in fd.grid[1:]):
                raise ValueError(f"migrate_mesh: the rows of field {name!r} are not distributed "
                                 f"as the cells' ({fd.maps[0] if fd.maps else None!r}, cells "
                                 f"{d.maps[0]!r})")
    (d2, p2), plan = migrate(d, p, dest)
    moved = wrap_like(cells, d2, p2, agreed=True)
    return MigratedMesh(moved, {name: plan.apply(f) for name, f in fields.items()}, plan)


class GhostLayer:
    """The nodes this rank's cells use and the plan keeping them current
    (see the module docstring; build it with ``ghost_layer``).

    needed       global ids of the nodes the local cells use, numbered
                 locally: the ``n_owned`` this rank owns first (in the node
                 field's local order), then the ``ghosts`` by owner rank
                 (ascending ids within each)
    local_cells  the cells as positions in ``needed``: an ``(n, k)`` array,
                 or ragged ``(offsets, positions)``
    owned        bool per entry of ``needed``: this rank owns it (the first
                 ``n_owned``)
    ghosts       how many of ``needed`` another rank owns
    scatter      the ``xdap.Scatter`` between the node field and ``needed``
    """

    def __init__(self, nodes, cells):
        comm = _comm.comm_of(nodes, cells)
        with agreement(comm, "ghost_layer") as ag:
            if not (is_distributed(nodes) or isinstance(nodes, Distribution)):
                raise TypeError(f"ghost_layer: nodes must be a DistArray or a Distribution, got "
                                f"{type(nodes).__name__}")
            ag.same("cells are a DistArray", is_distributed(cells))
        if is_distributed(cells):
            cells, _ = local_cells(cells, "ghost_layer")
        with agreement(comm, "ghost_layer: cells"):
            ragged = isinstance(cells, tuple)
            ids = np.asarray(cells[1] if ragged else cells)
            if (not ragged and ids.ndim != 2) or (ids.size and ids.dtype.kind not in "iu"):
                raise ValueError(f"ghost_layer: cells must be an (n, k) integer array, ragged "
                                 f"(offsets, node_ids) or a DistArray of cells; got "
                                 f"{ids.dtype} {ids.shape} on rank {comm.rank}")
        used, positions = unique_inverse(ids.reshape(-1).astype(np.int64, copy=False))
        d = nodes if isinstance(nodes, Distribution) else nodes.distribution
        with agreement(comm, "ghost_layer: nodes"):
            d.require_dims("ghost_layer")
            if any(g != 1 for g in d.grid[1:]):
                raise ValueError(f"ghost_layer: only dimension 0 of the nodes may be "
                                 f"distributed, the grid is {d.grid}")
            n = d.global_shape[0]
            if used.size and (used[0] < 0 or used[-1] >= n):
                raise ValueError(f"ghost_layer: a cell on rank {comm.rank} names node "
                                 f"{int(used[0] if used[0] < 0 else used[-1])}, out of range "
                                 f"for the node field's [0, {n})")
        grank, at = owners_of(d, 0, used)
        owner = d.ranks_along(0)[grank]
        # owned first, in the field's local order; then the ghosts by owner
        # rank: the local numbering PETSc's and Tpetra's ghosted vectors use
        mine = owner == comm.rank
        order = np.lexsort((used, np.where(mine, at, 0), owner, ~mine))
        self.needed = used[order]
        renumber = np.empty(len(order), np.int64)
        renumber[order] = np.arange(len(order))
        positions = renumber[positions]
        self.local_cells = (cells[0], positions) if ragged else positions.reshape(ids.shape)
        self.scatter = Scatter(nodes, self.needed, owners=(grank, at))   # agreed: one type
        self.n_owned = int(mine.sum())
        self.owned = np.arange(len(order)) < self.n_owned
        self.ghosts = int(len(self.needed) - self.n_owned)

    def update(self, nodes, out: np.ndarray | None = None) -> np.ndarray:
        """The owners' values of the node field at ``needed`` (collective; into
        ``out``, kept by the caller, when given: nothing is allocated)."""
        return self.scatter.forward(nodes, out=out)

    def bind(self, nodes, out: np.ndarray | None = None):
        """The ghost update of ``nodes`` into ``out`` bound once (collective:
        the arguments are agreed now): each call of the returned object --
        or ``start()``, local work, ``wait()`` -- moves the owners' current
        values into ``out`` with no agreement, one exchange of the ghosts
        and a local copy of the owned values, allocating nothing
        (``Scatter.bind``). For the time-stepping loop."""
        return self.scatter.bind(nodes, out)

    def assemble(self, values, into, mode: str = "add") -> None:
        """Combine one contribution per entry of ``needed`` into the owners'
        values of ``into`` (collective; ``Scatter.reverse``)."""
        self.scatter.reverse(values, into=into, mode=mode)

    def assemble_corners(self, values, into) -> None:
        """Add per-corner contributions -- shaped like ``local_cells`` (or its
        flat positions) -- into the owners (collective): summed per node on
        this rank first, then one exchange."""
        positions = self.local_cells[1] if isinstance(self.local_cells, tuple) \
            else self.local_cells.reshape(-1)
        with agreement(self.scatter.comm, "GhostLayer.assemble_corners") as ag:
            values = np.asarray(values)
            # every rank's dtype agreed: the sums per node and the exchange use it
            ag.same("the values' dtype", values.dtype.str)
            if values.dtype.kind not in "biuf":
                raise TypeError(f"GhostLayer.assemble_corners: values must be real numbers, "
                                f"got {values.dtype} on rank {self.scatter.comm.rank}")
            values = values.reshape(-1)
            if values.shape != positions.shape:
                raise ValueError(f"GhostLayer.assemble_corners: one value per cell corner "
                                 f"({len(positions)}), got {values.size} on rank "
                                 f"{self.scatter.comm.rank}")
        per_node = np.bincount(positions, weights=values, minlength=len(self.needed))
        if values.dtype.kind in "biu":           # integer counts stay integers
            per_node = per_node.astype(np.int64)
        self.assemble(per_node, into, mode="add")


@trims_heap
def ghost_layer(nodes, cells) -> GhostLayer:
    """The ghost layer of a node field (a DistArray, or its Distribution,
    distributed along dimension 0) for this rank's ``cells`` (collective;
    see ``GhostLayer``)."""
    return GhostLayer(nodes, cells)
