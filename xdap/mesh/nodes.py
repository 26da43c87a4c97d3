"""Nodes follow their cells: after the cells migrate, each node is owned
by one of the ranks whose cells use it.

``node_field(cells, nnodes)`` is a node field (zeros) whose distribution
gives every node to one of the ranks that use it -- chosen at random among
them with a hash of the node id, so shared nodes split evenly -- and a node
no cell names to the rank of its id range. A rank's ghost layer of such a
field (``ghost_layer``) is then exactly the halo of its cells: the nodes
it shares with other ranks and does not own. With nodes distributed by id
instead (``xdap.zeros(nnodes)``) a rank owns nodes its cells never touch
and nearly every node it uses is a ghost.

The owners are chosen by one rendezvous, as Zoltan's and PETSc's do it:
each rank sends the ids it uses to the ranks of their id ranges (``N/P``
ids each), which choose among the users and answer -- two all-to-alls of
ids, memory O(nodes used / P + P) per rank; no rank learns all ids.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> tris = xdap.from_local(np.array([[0, 1, 2], [1, 2, 3]]), comm=MPI.COMM_SELF)
>>> nodes = node_field(tris, 5)
>>> nodes.shape, nodes.distribution.global_indices(0).tolist()
((5,), [0, 1, 2, 3, 4])
"""
from __future__ import annotations

import numpy as np

from .. import comm as _comm
from ..agreement import agreement
from ..arraylike import is_distributed, unwrap, wrap_like
from ..directory import GOLDEN, remember, unstructured_map
from ..distribution import Distribution
from ..heap import trims_heap
from ..maps import BlockMap, is_int
from ..parts import Parts
from ..transport import Route, move
from .cells import local_cells, unique_inverse
from .files import block_bounds, read_points

__all__ = ["node_field", "node_owners", "node_points"]

def node_owners(comm, nnodes: int, used) -> tuple:
    """The owner rank of each of this rank's ``used`` node ids (sorted
    unique int64) -- one of the ranks using it -- and the ids of
    ``[0, nnodes)`` no rank uses whose id range is this rank's (collective;
    the rendezvous of the module docstring)."""
    P = comm.size
    bounds = block_bounds(nnodes, P)
    home = np.searchsorted(bounds, used, side="right") - 1
    ask = Route.to_ranks(comm, home).with_recv_counts()
    ids = move(ask, Parts.of_array(used))[0].values
    users = np.repeat(np.arange(P, dtype=np.int64), ask.recv_counts)
    order = np.lexsort((users, ids))              # by id, then by user rank
    sorted_ids = ids[order]
    first = np.ones(len(order), bool)
    first[1:] = sorted_ids[1:] != sorted_ids[:-1]
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(order)))
    # a hash of the id picks one user: shared nodes split evenly among their
    # ranks, and every home decides alone (no second round)
    mixed = (sorted_ids[starts].astype(np.uint64) * GOLDEN) >> np.uint64(33)
    chosen = users[order[starts + (mixed % counts.astype(np.uint64)).astype(np.int64)]]
    answer = np.empty(len(ids), np.int64)
    answer[order] = np.repeat(chosen, counts)
    owner = np.empty(len(used), np.int64)
    owner[ask.rows] = move(ask.reversed(), Parts.of_array(answer))[0].values
    lo, hi = bounds[comm.rank], bounds[comm.rank + 1]
    unused = np.ones(hi - lo, bool)
    unused[sorted_ids[starts] - lo] = False
    return owner, lo + np.flatnonzero(unused)


@trims_heap
def node_field(cells, nnodes: int, type: str = "float64"):
    """A node field of ``nnodes`` zeros of ``type`` (a dtype: ``"float64"``,
    ``"int32"``, ...) distributed so that nodes follow ``cells`` -- a
    DistArray of cells (``N * k * int64`` or ``var * var * int64``, rows
    distributed any way; collective). Rank ``r`` owns, in ascending id
    order, nodes its cells use (each shared node goes to one of its users)
    and the unused nodes of its id range. More fields of the same
    distribution: ``xdap.zeros_like(field)``; a field distributed otherwise
    moves here with ``redistribute(field.distribution)``."""
    with agreement(_comm.comm_of(cells), "node_field") as ag:
        if not is_distributed(cells):
            raise TypeError(f"node_field: cells must be a DistArray, got "
                            f"{cells.__class__.__name__}")
        ag.same("nnodes and type", (nnodes, str(type)))
        if not is_int(nnodes) or nnodes < 0:
            raise ValueError(f"node_field: nnodes must be an int >= 0, got {nnodes!r}")
        try:
            dtype = np.dtype(str(type))
        except TypeError:
            dtype = np.dtype(object)
        if dtype.kind not in "biufc":
            raise TypeError(f"node_field: type must be a numeric dtype, got {type!r}")
    d, _ = unwrap(cells)
    comm = d.comm
    local, _ = local_cells(cells, "node_field")
    ids = np.asarray(local[1] if isinstance(local, tuple) else local, np.int64).reshape(-1)
    with agreement(comm, "node_field: cells"):
        if ids.size and (ids.min() < 0 or ids.max() >= nnodes):
            bad = int(ids.min() if ids.min() < 0 else ids.max())
            raise ValueError(f"node_field: a cell on rank {comm.rank} names node {bad}, but "
                             f"there are {nnodes} nodes")
    used = unique_inverse(ids)[0]
    del ids, local
    owner, unused = node_owners(comm, int(nnodes), used)
    owned = np.union1d(used[owner == comm.rank], unused)
    m, directory = unstructured_map(comm, comm.size, comm.rank, owned, size=int(nnodes),
                                    one_to_one=True, what="node_field")
    nd = Distribution([m], comm)
    remember(nd, 0, directory)
    return wrap_like(cells, nd, Parts.of_array(np.zeros(len(owned), dtype)), agreed=True)


@trims_heap
def node_points(block, nodes):
    """The coordinates of the nodes, distributed as ``nodes`` (a node field:
    ``node_field``'s, or any DistArray distributed along dimension 0 over
    the mesh's nodes): an ``(nnodes, dim)`` float64 DistArray whose rows on
    each rank are the nodes it owns (collective; ``read_points``: each rank
    reads its N/P rows of the file, one exchange routes them). The ghosts'
    coordinates then come by the ghost layer: ``layer.update(points)``."""
    d = nodes.distribution
    with agreement(d.comm, "node_points"):
        if d.global_shape[:1] != (block.nnodes,) or any(g != 1 for g in d.grid[1:]):
            raise ValueError(f"node_points: nodes must be distributed along dimension 0 over "
                             f"the mesh's {block.nnodes} nodes, got shape {d.global_shape} on "
                             f"a {d.grid} grid")
    m = d.maps[0]
    owned = np.asarray(m.global_indices(d.coords[0]), np.int64)
    xyz = read_points(block, owned, d.comm)
    pd = Distribution([m, BlockMap(block.dim, 1)], d.comm)
    return wrap_like(nodes, pd, Parts.of_array(np.ascontiguousarray(xyz)), agreed=True)

