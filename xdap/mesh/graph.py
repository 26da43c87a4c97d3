"""The dual graph of a distributed mesh, its edge cut, and METIS.

Two cells are neighbours when they share a facet (a face of a 3-D cell, an
edge of a 2-D one; see ``cells.FACETS``). No rank sees the whole mesh: every rank sends each
facet of its cells -- its sorted node ids -- to the rank a hash of the
facet names (one ``Alltoallv``); there, a facet met twice is an edge of the
dual graph, and each end goes back to the rank holding its cell (a second
``Alltoallv``). Memory per rank is O(local cells + P).

>>> import numpy as np
>>> from mpi4py import MPI
>>> tris = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 4]])      # a strip of three triangles
>>> offsets, neighbours = dual_graph(tris, np.arange(3), MPI.COMM_SELF)
>>> [neighbours[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
[[1], [0, 2], [1]]
>>> edge_cut(tris, np.array([0, 0, 1]), MPI.COMM_SELF)
1
"""
from __future__ import annotations

import numpy as np
from mpi4py import MPI

from .. import comm as _comm
from ..heap import trims_heap
from ..arraylike import is_distributed, unwrap, wrap_like
from ..distribution import Distribution
from ..parts import Parts
from ..transport import Route, group_order, move
from ..types import TypeInfo
from .cells import CellList, cell_list, facets_of, local_cells
from ..agreement import agree, agreement

__all__ = ["dual_graph", "edge_cut", "partition_interface", "metis_partition"]


def _owner(facets, P):
    """The rank that matches a facet's copies: a hash of its node ids."""
    h = np.zeros(len(facets), np.uint64)
    for j in range(facets.shape[1]):
        h = (h ^ facets[:, j].astype(np.uint64)) * np.uint64(0x100000001B3)
    return (h % np.uint64(P)).astype(np.int64)


def _shared_facets(cells: CellList, dim, payload, comm):
    """At each facet's owner rank, the interior facets met there:
    ``(payload rows of one side, of the other, rank of one, rank of the
    other)``. ``payload``: int64 per cell, ``(n,)`` or ``(n, q)``; the
    payload rows come back ``(m, q)``. Raises (on every rank) for a facet
    of more than two cells."""
    P = comm.size
    payload = np.asarray(payload, np.int64)
    payload = payload[:, None] if payload.ndim == 1 else payload      # (n, q), n may be 0
    q = payload.shape[1]
    facets, per = facets_of(cells, dim)
    k = facets.shape[1]
    dest = _owner(facets, P)
    order = group_order(dest, P)
    # the records, built column by column in send order (temporaries of one
    # column, not of the whole table: this is the pipeline's memory peak)
    rec = np.empty((len(facets), k + q), np.int64)
    for j in range(k):
        rec[:, j] = facets[order, j]
    del facets
    for j in range(q):
        rec[:, k + j] = np.repeat(payload[:, j], per)[order]
    # in send order already: the route moves the table as it is (no copy)
    route = Route(comm, None, np.bincount(dest, minlength=P)).with_recv_counts()
    got = move(route, Parts.of_array(rec))[0].values
    del rec
    recv = route.recv_counts
    order = np.lexsort(got[:, :k].T[::-1])
    # equal neighbours in sorted order are the two sides of a facet
    same = np.ones(max(len(got) - 1, 0), bool)
    for j in range(k):
        col = got[order, j]
        same &= col[1:] == col[:-1]
    error = None
    if len(same) > 1 and (same[1:] & same[:-1]).any():
        i = int(order[np.flatnonzero(same[1:] & same[:-1])[0]])
        error = ValueError(f"mesh: facet {got[i, :k].tolist()} is shared by more than two cells "
                           "(a non-manifold mesh, or a cell listed twice)")
    agree(comm, error)
    first = order[np.flatnonzero(same)]
    second = order[np.flatnonzero(same) + 1]
    src = np.repeat(np.arange(P), recv)
    return got[first, k:], got[second, k:], src[first], src[second]


def _to_holders(comm, rows: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Send int64 ``rows`` (``(m, w)``) to ranks ``to``; returns the rows
    this rank receives (one alltoallv of counts, one of rows)."""
    return move(Route.to_ranks(comm, to), Parts.of_array(rows))[0].values


def _positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of ``wanted`` (all present) is in ``ids``."""
    sorter = np.argsort(ids, kind="stable")
    return sorter[np.searchsorted(ids, wanted, sorter=sorter)]


def _cells_are_distributed(cells, comm, what) -> bool:
    """Whether ``cells`` is a DistArray -- the same answer on every rank
    (agreed, so a NumPy array on one rank is one clear error on all)."""
    with agreement(_comm.comm_of(cells, default=comm), what) as ag:
        ag.same("cells are a DistArray", is_distributed(cells))
    return is_distributed(cells)


@trims_heap
def dual_graph(cells, cell_ids=None, comm=None, *, dim=None):
    """The neighbours of this rank's cells: the cells sharing a facet with
    each (collective).

    With NumPy cells -- ``(n, k)`` node ids of simplices (k = 3 triangles,
    4 tetrahedra), or of one kind of ``dim``-D cell, or ragged ``(offsets,
    node_ids)`` of mixed kinds with ``dim`` (tetrahedra, pyramids, wedges,
    hexahedra; triangles, quadrilaterals; node orders as meshio's) -- and
    their global ``cell_ids``: returns ``(offsets, neighbours)``, cell ``i``
    bordering ``neighbours[offsets[i]:offsets[i + 1]]`` (global ids,
    ascending), the CSR form METIS and ragged arrays share.

    With a DistArray of cells (``N * k * int64``, or ``var * var * int64``
    for mixed kinds; rows distributed, no ghost rows): returns the graph as
    a ``var * var * int64`` DistArray with the cells' row distribution --
    row ``i`` lists cell ``i``'s neighbours.  ndtypes has no ``N * var``,
    so the rows are ragged.
    """
    if _cells_are_distributed(cells, comm, "dual_graph"):
        return _dual_graph_array(cells, dim)
    comm = _comm.resolve(comm)
    cells = cell_list(cells, comm, "dual_graph", dim)
    ids = np.asarray(cell_ids if cell_ids is not None else [], np.int64)
    with agreement(comm, "dual_graph"):
        if ids.shape != (len(cells),):
            raise ValueError(f"dual_graph: cell_ids needs one id per cell ({len(cells)}), got "
                             f"shape {ids.shape} on rank {comm.rank}")
    a, b, ra, rb = _shared_facets(cells, dim, ids, comm)
    a, b = a[:, 0], b[:, 0]
    # each end of every edge goes to the rank holding its cell: (cell, neighbour)
    mine = _to_holders(comm, np.concatenate([np.stack([a, b], 1), np.stack([b, a], 1)]),
                       np.concatenate([ra, rb]))
    at = _positions(ids, mine[:, 0])
    order = np.lexsort((mine[:, 1], at))
    offsets = np.zeros(len(cells) + 1, np.int64)
    np.cumsum(np.bincount(at, minlength=len(cells)), out=offsets[1:])
    return offsets, np.ascontiguousarray(mine[order, 1])


def _dual_graph_array(cells, dim):
    """``dual_graph`` of a DistArray of cells: a ragged DistArray back."""
    d, _ = unwrap(cells)
    mine, ids = local_cells(cells, "dual_graph")
    offsets, nbrs = dual_graph(mine, ids, d.comm, dim=dim)
    if len(nbrs) >= 2 ** 31:
        raise ValueError(f"dual_graph: {len(nbrs):,} neighbour entries on rank {d.comm.rank}, "
                         "more than a ragged array's int32 offsets hold; use more ranks")
    # xnd's ragged layout: the rows of this rank, then each row's neighbours
    rows = Parts(TypeInfo.of_ragged(2, "int64", False), nbrs,
                 offsets=(np.array([0, len(ids)], np.int32), offsets.astype(np.int32)))
    return wrap_like(cells, Distribution((d.maps[0],), d.comm), rows, agreed=True)


@trims_heap
def edge_cut(cells, parts, comm=None, *, dim=None) -> int:
    """The number of dual-graph edges (shared facets) whose two cells lie in
    different parts (collective; the same int on every rank). ``cells`` as
    for ``dual_graph`` (NumPy or a DistArray); ``parts``: one per local cell."""
    if _cells_are_distributed(cells, comm, "edge_cut"):
        comm = cells.distribution.comm
        cells, _ = local_cells(cells, "edge_cut")
    comm = _comm.resolve(comm)
    cells = cell_list(cells, comm, "edge_cut", dim)
    parts = np.asarray(parts, np.int64)
    with agreement(comm, "edge_cut"):
        if parts.shape != (len(cells),):
            raise ValueError(f"edge_cut: parts needs one part per cell ({len(cells)}), got "
                             f"shape {parts.shape} on rank {comm.rank}")
    a, b, _, _ = _shared_facets(cells, dim, parts, comm)
    return int(comm.allreduce(int((a != b).sum()), op=MPI.SUM))


@trims_heap
def partition_interface(cells, cell_ids, parts, comm=None, *, dim=None) -> tuple:
    """``(edge cut, interface)`` of a partition (collective): the number of
    facets between cells of different parts (the same int on every rank),
    and for each of this rank's cells whether it shares a facet with a cell
    of another part -- the cells the partition's ghost layers copy. Costs
    ``edge_cut`` plus one small exchange. ``cells`` as for ``dual_graph``."""
    comm = _comm.resolve(comm)
    cells = cell_list(cells, comm, "partition_interface", dim)
    ids = np.asarray(cell_ids, np.int64)
    parts = np.asarray(parts, np.int64)
    with agreement(comm, "partition_interface"):
        if ids.shape != (len(cells),) or parts.shape != (len(cells),):
            raise ValueError(f"partition_interface: cell_ids and parts need one entry per cell "
                             f"({len(cells)}), got shapes {ids.shape} and {parts.shape} on rank "
                             f"{comm.rank}")
    a, b, ra, rb = _shared_facets(cells, dim, np.stack([ids, parts], 1), comm)
    cut = a[:, 1] != b[:, 1]
    crossing = _to_holders(comm, np.concatenate([a[cut, :1], b[cut, :1]]),
                           np.concatenate([ra[cut], rb[cut]]))
    interface = np.zeros(len(cells), bool)
    interface[_positions(ids, crossing[:, 0])] = True
    return int(comm.allreduce(int(cut.sum()), op=MPI.SUM)), interface


@trims_heap
def metis_partition(offsets, neighbours, cell_ids, comm=None, parts: int | None = None,
                    root: int = 0) -> np.ndarray:
    """The part of each of this rank's cells by METIS (pymetis) on the dual
    graph (collective). The graph alone -- no field data -- is gathered to
    ``root`` (as buffers), partitioned there, and the parts scattered back;
    use it while the graph fits on one rank, ``hilbert_partition`` (and
    ``refine_partition``) beyond.
    ``cell_ids`` must number all cells ``0 .. N-1``."""
    import pymetis
    comm = _comm.resolve(comm)
    parts = comm.size if parts is None else int(parts)
    ids = np.asarray(cell_ids, np.int64)
    n = len(ids)
    # the graph as ragged rows (a cell's neighbours) with the cells' ids
    rows = Parts(TypeInfo.of_ragged(2, "int64"), np.asarray(neighbours, np.int64), None,
                 (np.array([0, n], np.int32), np.asarray(offsets).astype(np.int32)))
    gather = Route.gather(comm, np.arange(n), root).with_recv_counts()
    got_ids, got = move(gather, Parts.of_array(ids), rows)
    all_ids, all_adj = got_ids.values, got.values
    all_deg = np.diff(got.offsets[1].astype(np.int64))
    counts = gather.recv_counts
    result, error = None, None
    if comm.rank == root:
        try:
            N = len(all_ids)
            if not np.array_equal(np.sort(all_ids), np.arange(N)):
                raise ValueError("metis_partition: cell_ids must number the cells 0 .. N-1 "
                                 "once each")
            xadj = np.zeros(N + 1, np.int64)
            deg = np.zeros(N, np.int64)
            deg[all_ids] = all_deg
            np.cumsum(deg, out=xadj[1:])
            # rows into global order: each entry keeps its place within its row
            row_id = np.repeat(all_ids, all_deg)
            adjncy = all_adj[np.argsort(row_id, kind="stable")]
            if parts == 1:
                membership = np.zeros(N, np.int64)
            else:
                graph = pymetis.CSRAdjacency(adj_starts=xadj, adjacent=adjncy)
                membership = np.asarray(pymetis.part_graph(parts, graph).vertex_part, np.int64)
            result = membership[all_ids]
        except Exception as e:
            error = e if isinstance(e, ValueError) else ValueError(f"metis_partition: {e}")
    agree(comm, error)
    back = Route(comm, None, counts, np.eye(comm.size, dtype=np.int64)[root] * n)
    return move(back, Parts.of_array(np.zeros(0, np.int64) if result is None else result))[0].values
