"""The dual graph of a distributed simplex mesh, its edge cut, and METIS.

Two cells are neighbours when they share a facet (a face of a tetrahedron,
an edge of a triangle). No rank sees the whole mesh: every rank sends each
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

import itertools

import numpy as np
from mpi4py import MPI

from .. import comm as _comm
from .. import exchange

__all__ = ["dual_graph", "edge_cut", "metis_partition"]


def _check_cells(cells, comm, what):
    with _comm.agreement(comm, what) as ag:
        cells = np.asarray(cells)
        if cells.ndim != 2 or cells.shape[1] < 2 or (cells.size and cells.dtype.kind not in "iu"):
            raise ValueError(f"{what}: cells must be an (n, k) integer array of node ids (k >= 2: "
                             f"simplices), got shape {cells.shape} dtype {cells.dtype} on rank "
                             f"{comm.rank}")
        ag.same("nodes per cell", cells.shape[1])
        if cells.size and cells.min() < 0:
            raise ValueError(f"{what}: negative node id {int(cells.min())} on rank {comm.rank}")
    return cells.astype(np.int64, copy=False)


def _facets(cells):
    """Every cell's facets as sorted node-id rows ``(n * k, k - 1)``, in cell order."""
    n, k = cells.shape
    pick = np.array(list(itertools.combinations(range(k), k - 1)))
    return np.sort(cells[:, pick], axis=2).reshape(n * len(pick), k - 1), len(pick)


def _owner(facets, P):
    """The rank that matches a facet's copies: a hash of its node ids."""
    h = np.zeros(len(facets), np.uint64)
    for j in range(facets.shape[1]):
        h = (h ^ facets[:, j].astype(np.uint64)) * np.uint64(0x100000001B3)
    return (h % np.uint64(P)).astype(np.int64)


def _shared_facets(cells, payload, comm):
    """At each facet's owner rank, the interior facets met there:
    ``(payload of one side, payload of the other, rank of one, rank of the
    other)``. ``payload``: one int64 per cell. Raises (on every rank) for a
    facet of more than two cells."""
    P = comm.size
    facets, per = _facets(cells)
    k = facets.shape[1]
    dest = _owner(facets, P)
    order = np.argsort(dest, kind="stable")
    rec = np.empty((len(facets), k + 1), np.int64)
    rec[:, :k] = facets
    rec[:, k] = np.repeat(payload, per)
    rec = rec[order]
    send = np.bincount(dest, minlength=P).astype(np.int64)
    recv = exchange.alltoallv(comm, send, np.ones(P, np.int64), np.ones(P, np.int64))
    got = exchange.alltoallv(comm, rec.reshape(-1), send * (k + 1), recv * (k + 1)).reshape(-1, k + 1)
    src = np.repeat(np.arange(P), recv)
    order = np.lexsort(got[:, :k].T[::-1])
    got, src = got[order], src[order]
    same = (got[1:, :k] == got[:-1, :k]).all(axis=1) if len(got) > 1 else np.zeros(0, bool)
    error = None
    if len(same) > 1 and (same[1:] & same[:-1]).any():
        i = int(np.flatnonzero(same[1:] & same[:-1])[0])
        error = ValueError(f"mesh: facet {got[i, :k].tolist()} is shared by more than two cells "
                           "(a non-manifold mesh, or a cell listed twice)")
    _comm.agree(comm, error)
    first = np.flatnonzero(same)
    return got[first, k], got[first + 1, k], src[first], src[first + 1]


def dual_graph(cells, cell_ids, comm=None) -> tuple:
    """``(offsets, neighbours)`` of this rank's cells (collective): cell ``i``
    (global id ``cell_ids[i]``) borders the cells ``neighbours[offsets[i]:
    offsets[i + 1]]`` (global ids, ascending) -- the CSR form METIS and
    ragged ``var * var * int64`` arrays share. ``cells``: ``(n, k)`` global
    node ids of simplices (k = 3 triangles, 4 tetrahedra)."""
    comm = _comm.resolve(comm)
    cells = _check_cells(cells, comm, "dual_graph")
    ids = np.asarray(cell_ids, np.int64)
    with _comm.agreement(comm, "dual_graph"):
        if ids.shape != (len(cells),):
            raise ValueError(f"dual_graph: cell_ids needs one id per cell ({len(cells)}), got "
                             f"shape {ids.shape} on rank {comm.rank}")
    a, b, ra, rb = _shared_facets(cells, ids, comm)
    P = comm.size
    # each end of every edge goes to the rank holding its cell: (cell, neighbour)
    ends = np.concatenate([np.stack([a, b], 1), np.stack([b, a], 1)])
    to = np.concatenate([ra, rb])
    order = np.argsort(to, kind="stable")
    send = np.bincount(to, minlength=P).astype(np.int64)
    recv = exchange.alltoallv(comm, send, np.ones(P, np.int64), np.ones(P, np.int64))
    mine = exchange.alltoallv(comm, ends[order].reshape(-1), send * 2, recv * 2).reshape(-1, 2)
    sorter = np.argsort(ids, kind="stable")
    at = sorter[np.searchsorted(ids, mine[:, 0], sorter=sorter)]
    order = np.lexsort((mine[:, 1], at))
    offsets = np.zeros(len(cells) + 1, np.int64)
    np.cumsum(np.bincount(at, minlength=len(cells)), out=offsets[1:])
    return offsets, np.ascontiguousarray(mine[order, 1])


def edge_cut(cells, parts, comm=None) -> int:
    """The number of dual-graph edges (shared facets) whose two cells lie in
    different parts (collective; the same int on every rank)."""
    comm = _comm.resolve(comm)
    cells = _check_cells(cells, comm, "edge_cut")
    a, b, _, _ = _shared_facets(cells, np.asarray(parts, np.int64), comm)
    return int(comm.allreduce(int((a != b).sum()), op=MPI.SUM))


def metis_partition(offsets, neighbours, cell_ids, comm=None, parts: int | None = None,
                    root: int = 0) -> np.ndarray:
    """The part of each of this rank's cells by METIS (pymetis) on the dual
    graph (collective). The graph alone -- no field data -- is gathered to
    ``root`` (as buffers), partitioned there, and the parts scattered back;
    use it while the graph fits on one rank, ``hilbert_partition`` beyond.
    ``cell_ids`` must number all cells ``0 .. N-1``."""
    import pymetis
    comm = _comm.resolve(comm)
    parts = comm.size if parts is None else int(parts)
    ids = np.asarray(cell_ids, np.int64)
    degree = np.diff(np.asarray(offsets, np.int64))
    n = len(ids)
    counts = np.array(comm.allgather(n), np.int64)
    adj_counts = np.array(comm.allgather(len(neighbours)), np.int64)
    all_ids = exchange.gatherv(comm, ids, counts, root)
    all_deg = exchange.gatherv(comm, degree, counts, root)
    all_adj = exchange.gatherv(comm, np.asarray(neighbours, np.int64), adj_counts, root)
    result, error = None, None
    if comm.rank == root:
        try:
            N = int(counts.sum())
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
                _, membership = pymetis.part_graph(parts, xadj=xadj, adjncy=adjncy)
                membership = np.asarray(membership, np.int64)
            result = membership[all_ids]
        except Exception as e:
            error = e if isinstance(e, ValueError) else ValueError(f"metis_partition: {e}")
    _comm.agree(comm, error)
    return exchange.scatterv(comm, result, counts, n, root, np.int64)
