"""The dual graph of a distributed mesh, and METIS on it.

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

The partition's edge cut and interface, from the graph or from the cells
again, are ``cuts``'s.
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
from .cells import (CellList, cell_list, facet_keys, key_bits, local_cells, one_per_cell,
                    sort_rows)
from ..agreement import agree, agreement
from ..optional import need

__all__ = ["dual_graph", "metis_partition"]


def _mix(keys: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each packed key (its words folded by a multiply,
    then a multiply-xorshift finaliser): every bit depends on every word."""
    h = keys[:, 0].copy()
    for w in range(1, keys.shape[1]):
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= keys[:, w]
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    return h


def _owner(keys: np.ndarray, P: int) -> np.ndarray:
    """The rank that matches a facet's copies: its hash modulo P, so the
    matching work spreads evenly over the ranks whatever the numbering."""
    h = _mix(keys)
    h %= np.uint64(P)
    return h.astype(np.int64)


# keys a bucket of the matching sort holds, about: small enough that its
# sort runs in cache
BUCKET = 1 << 14


def _matching_order(words: np.ndarray) -> np.ndarray:
    """An order of the packed keys ``words`` (``(m, W)``) in which equal
    keys are adjacent -- not a sorted order: the keys are first grouped by
    the top byte of their hash (a radix pass, O(m)), then each group sorted
    alone, in cache. Twice as fast as one ``argsort`` of millions of keys."""
    m = len(words)
    bits = min(8, max(0, (m // BUCKET).bit_length() - 1))
    if bits == 0:
        return np.argsort(words[:, 0]) if words.shape[1] == 1 else np.lexsort(words.T[::-1])
    bucket = (_mix(words) >> np.uint64(64 - bits)).astype(np.uint8)
    order = np.argsort(bucket, kind="stable")               # NumPy's radix sort for bytes
    ends = np.cumsum(np.bincount(bucket, minlength=1 << bits))
    del bucket
    # the keys in bucket order, a column each (a gather of whole 2-d rows is slower)
    columns = [words[:, w][order] for w in range(words.shape[1] - 1, -1, -1)]
    start = 0
    for end in ends.tolist():
        inner = np.argsort(columns[0][start:end]) if len(columns) == 1 else \
            np.lexsort([c[start:end] for c in columns])
        order[start:end] = order[start:end][inner]
        start = end
    return order


def _shared_facets(cells: CellList, dim, payload, comm, maxima=()):
    """At each facet's owner rank, the interior facets met there:
    ``(payload rows of one side, of the other, rank of one, rank of the
    other, F, top)``. ``payload``: a function ``(slots, F, top) -> [q
    columns]`` of int64 (the facets' slots are ``cell * F + j``: see
    ``cells.facet_keys``; ``top``: the largest of each of ``maxima`` on any
    rank, reduced with the node ids' in one ``allreduce``); each side comes
    back as its ``q`` columns, one entry per shared facet. Raises (on every rank) for a facet of more than two
    cells.

    One pass: each facet is a packed key of one or two words; the keys go
    to the rank their hash names (one ``Alltoallv`` of ``W + q`` int64 per
    facet; none on one rank) and are put in an order where equal keys are
    adjacent (``_matching_order``), neighbours in it being the two sides
    of an interior facet."""
    P = comm.size
    local_max = np.array([cells.nodes.max() if cells.nodes.size else 0, *maxima], np.int64)
    comm.Allreduce(MPI.IN_PLACE, local_max, op=MPI.MAX)
    bits, top = key_bits(local_max[0]), tuple(int(v) for v in local_max[1:])
    keys, slots, F = facet_keys(cells, dim, bits)
    W = keys.shape[1]
    if P == 1:          # the keys stay; the payload is made for matched facets alone
        words, recv = keys, np.array([len(keys)])
    else:
        dest = _owner(keys, P)
        order = group_order(dest, P)
        # the records in send order, built column by column (temporaries of
        # one column, not of the whole table: this is the stage's memory peak)
        pay = payload(order if slots is None else slots[order], F, top)
        rec = np.empty((len(keys), W + len(pay)), np.int64)
        for j in range(W):
            rec[:, j] = keys[order, j].view(np.int64)
        for j, column in enumerate(pay):
            rec[:, W + j] = column
        del keys, pay, order, slots
        route = Route(comm, None, np.bincount(dest, minlength=P)).with_recv_counts()
        rec = move(route, Parts.of_array(rec))[0].values
        recv = route.recv_counts
        words = rec[:, :W].view(np.uint64)
    order = _matching_order(words)
    # equal neighbours in this order are the two sides of a facet
    same = np.ones(max(len(words) - 1, 0), bool)
    for j in range(W):
        col = words[order, j]
        same &= col[1:] == col[:-1]
        del col
    error = None
    if len(same) > 1 and (same[1:] & same[:-1]).any():
        i = int(order[np.flatnonzero(same[1:] & same[:-1])[0]])
        error = ValueError(f"mesh: facet {_unpack(words[i], bits)} is shared by more than two "
                           "cells (a non-manifold mesh, or a cell listed twice)")
    agree(comm, error)
    pairs = np.flatnonzero(same)
    first, second = order[pairs], order[pairs + 1]
    del order, same, pairs
    if P == 1:
        none = np.zeros(len(first), np.int64)
        if slots is not None:
            first, second = slots[first], slots[second]
        return payload(first, F, top), payload(second, F, top), none, none, F, top
    # column by column: a gather of whole rows of a 2-d array is several times slower
    side = [[rec[at, j] for j in range(W, rec.shape[1])] for at in (first, second)]
    starts = np.cumsum(recv) - recv
    rank = [np.searchsorted(starts, at, side="right") - 1 for at in (first, second)]
    return side[0], side[1], rank[0], rank[1], F, top


def _unpack(words, bits: int) -> list:
    """A packed facet key's node ids (for an error message)."""
    ids = []
    per_word = 64 // bits
    for w in words.tolist():
        got = [(w >> (bits * i)) & ((1 << bits) - 1) for i in range(per_word)][::-1]
        ids += [g - 1 for g in got if g]
    return ids


def _to_holders(comm, rows: np.ndarray, to: np.ndarray) -> np.ndarray:
    """Send int64 ``rows`` (``(m, w)``) to ranks ``to``; returns the rows
    this rank receives (one alltoallv of counts, one of rows; none on one
    rank)."""
    if comm.size == 1:
        return rows
    return move(Route.to_ranks(comm, to), Parts.of_array(rows))[0].values


def _cells_are_distributed(cells, comm, what) -> bool:
    """Whether ``cells`` is a DistArray -- the same answer on every rank
    (agreed, so a NumPy array on one rank is one clear error on all)."""
    with agreement(_comm.comm_of(cells, default=comm), what) as ag:
        ag.same("cells are a DistArray", is_distributed(cells))
    return is_distributed(cells)


# the neighbour table's mark of a facet on the boundary
_NONE = np.iinfo(np.int64).min


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

    Cost: one sort of this rank's share of the facets' packed keys (see
    ``_shared_facets``), two ``Alltoallv`` of int64 rows (the keys with
    the cell id and facet slot -- one word while both fit 63 bits: 2 words
    a tetrahedron facet; then the neighbour ids back, one word each with
    their slots), no sort on the way back: each neighbour lands in its
    facet's slot.
    """
    if _cells_are_distributed(cells, comm, "dual_graph"):
        return _dual_graph_array(cells, dim)
    comm = _comm.resolve(comm)
    cells = cell_list(cells, comm, "dual_graph", dim)
    ids, = one_per_cell(comm, "dual_graph", len(cells),
                         cell_ids=cell_ids if cell_ids is not None else [])
    with agreement(comm, "dual_graph"):
        if len(ids) and ids.min() == _NONE:
            raise ValueError(f"dual_graph: cell id {_NONE} is reserved (it marks a facet "
                             "with no neighbour)")
    # an id and a slot travel as one word when both fit: ids below 2**ibits,
    # slots below 2**sbits (at most 6 facets a cell), agreed with the key bits
    maxima = (int(ids.max()) if len(ids) else 0, -int(ids.min()) if len(ids) else 0,
              6 * len(cells))

    def widths(top):           # None: two words (or one rank, where nothing travels)
        ibits, sbits = max(top[0], 1).bit_length(), max(top[2], 1).bit_length()
        fits = comm.size > 1 and top[1] <= 0 and ibits + sbits <= 63
        return (ibits, sbits) if fits else None

    def payload(slots, F, top):
        if widths(top) is None:
            return [ids[slots // F], slots]
        cell = ids[slots // F]
        cell <<= widths(top)[1]
        cell |= slots
        return [cell]
    a, b, ra, rb, F, top = _shared_facets(cells, dim, payload, comm, maxima)
    packed = widths(top)
    if packed:
        mask = np.int64((1 << packed[1]) - 1)
        (a_id, a_slot), (b_id, b_slot) = ((v[0] >> packed[1], v[0] & mask) for v in (a, b))
    else:
        (a_id, a_slot), (b_id, b_slot) = a, b
    del a, b
    # each side of a facet gets the other's id in its facet's slot; the
    # smallest int64 marks a slot without one (ids may be negative)
    table = np.full(len(cells) * F, _NONE, np.int64)
    if comm.size == 1:
        table[a_slot], table[b_slot] = b_id, a_id
    elif packed:                   # (slot, id) in one word: slot << ibits | id
        back = np.concatenate([(a_slot << packed[0]) | b_id, (b_slot << packed[0]) | a_id])
        del a_id, b_id, a_slot, b_slot
        mine = _to_holders(comm, back[:, None], np.concatenate([ra, rb]))[:, 0]
        del back
        table[mine >> packed[0]] = mine & np.int64((1 << packed[0]) - 1)
        del mine
    else:
        back = np.empty((2 * len(a_id), 2), np.int64)
        back[:len(a_id), 0], back[:len(a_id), 1] = a_slot, b_id
        back[len(a_id):, 0], back[len(a_id):, 1] = b_slot, a_id
        del a_id, b_id, a_slot, b_slot
        mine = _to_holders(comm, back, np.concatenate([ra, rb]))
        del back
        table[mine[:, 0]] = mine[:, 1]
        del mine
    table = sort_rows(table.reshape(len(cells), F))           # no neighbour: first
    found = table != _NONE
    offsets = np.zeros(len(cells) + 1, np.int64)
    np.cumsum(found.sum(axis=1), out=offsets[1:])
    return offsets, table[found]


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
def metis_partition(offsets, neighbours, cell_ids, comm=None, parts: int | None = None,
                    root: int = 0) -> np.ndarray:
    """The part of each of this rank's cells by METIS (pymetis) on the dual
    graph (collective). The graph alone -- no field data -- is gathered to
    ``root`` (as buffers), partitioned there, and the parts scattered back;
    use it while the graph fits on one rank, ``hilbert_partition`` (and
    ``refine_partition``) beyond.
    ``cell_ids`` must number all cells ``0 .. N-1``."""
    pymetis = need("pymetis")
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
