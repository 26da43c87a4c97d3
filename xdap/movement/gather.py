"""The whole array and one rank: scatter it from a root, gather it to a root
or to every rank -- routes for the transport (``xdap.transport``), never
pickles.

These are the two places where one rank holds the whole array, because the
user asked for it (``from_global(..., root=)``, ``to_global()``).  Fixed
arrays move as N-d blocks (each rank's block of the global array: MPI
subarrays in place where the maps are blocks, packed elements otherwise);
ragged rows and strings move as rows with their global row numbers, put in
global order where they arrive.  Validity travels with its values.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> to_global(*from_global(np.arange(4.0), dist=("c",), comm=MPI.COMM_SELF)).values.tolist()
[0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ..packing import Form, no_rows
from ..parts import Parts
from ..rows import take_block, take_rows
from ..transport import BlockExchange, Route, Transfer, compress, move, send_lists

__all__ = ["to_global", "scatter_from_root", "element_parts"]


def _method(d) -> str:
    """Slabs (MPI subarrays, nothing packed) when every dimension is cut in
    ranges; packed elements otherwise -- decided from the maps' kinds, so
    alike on every rank."""
    return "datatypes" if all(m.ranges for m in d.maps) else "packed"


def _index(lists) -> tuple:
    """Per-dimension position lists (ranges, slices or arrays) as slices
    where they are progressions (a range or slice is never materialised;
    a cyclic map's list becomes a strided slice)."""
    out = []
    for a in lists:
        if isinstance(a, (slice, range)):
            out.append(slice(a.start, a.stop, a.step or 1))
        else:
            out.append(compress(np.asarray(a, np.int64)))
    return tuple(out)


# --------------------------------------------------------------------------
# root -> every rank
# --------------------------------------------------------------------------

def scatter_from_root(p: Parts | None, info, d, root: int) -> Parts:
    """This rank's part under ``d`` of the global array ``p`` that ``root``
    holds (None elsewhere; ``info`` is its agreed type). Collective.

    Fixed arrays: the root sends each rank's block straight from ``p``
    (subarrays) when the maps are blocks, else packs them once; ragged rows
    travel as rows."""
    comm, P = d.comm, d.comm.size
    if info.ragged:
        if comm.rank == root:
            rows = [d.global_indices(0, r) for r in range(P)]
            route = Route(comm, np.concatenate(rows), [len(r) for r in rows],
                          np.eye(P, dtype=np.int64)[root] * d.local_shape[0])
        else:
            p = no_rows(Form(info))
            route = Route(comm, None, np.zeros(P, np.int64),
                          np.eye(P, dtype=np.int64)[root] * d.local_shape[0])
        return move(route, p)[0]
    if d.ndim == 0:              # every rank holds the one element: one broadcast of its bytes
        values = p.values.copy() if comm.rank == root else np.empty((), info.numpy_dtype)
        comm.Bcast(values.reshape(1).view(np.uint8), root=root)
        validity = None
        if info.optional:
            validity = p.validity.copy() if comm.rank == root else np.zeros(1, np.uint8)
            comm.Bcast(validity, root=root)
        return Parts(info, values, validity)
    sends = []
    if comm.rank == root:
        sends = [Transfer(r, _index([m.buffer_indices(c) for m, c in zip(d.maps, d.coords_of(r))]))
                 for r in range(P)]
    shape = d.local_shape
    recvs = [Transfer(root, tuple(slice(0, n, 1) for n in shape))]
    ex = BlockExchange(comm, sends, recvs, None if p is None else p.values.shape, shape, flat=False)
    out = ex.run_parts(p, info, _method(d))
    ex.free()
    return out


# --------------------------------------------------------------------------
# every rank -> root (or every rank)
# --------------------------------------------------------------------------

def to_global(d, p: Parts, root: int | None = None) -> Parts | None:
    """The global array's Parts on ``root`` (None elsewhere), or on every
    rank when ``root`` is None (collective; copies).

    Canonical values only: communication padding is not read; an index held
    by several ranks (unstructured, not one-to-one) is taken from its
    canonical owner.
    """
    comm = d.comm
    if d.ndim == 0:            # a 0-d array: every rank already holds the element
        return None if root is not None and comm.rank != root else Parts(
            p.info, p.values.copy(), None if p.validity is None else p.validity.copy())
    if p.info.ragged:
        return _gather_rows(d, p, root)
    P, me = comm.size, comm.rank
    pos = d.canonical_positions()
    mine = _index(pos)
    receivers = range(P) if root is None else [root]
    sends = [Transfer(q, mine) for q in receivers]
    held = _held_indices(d, pos, receivers, root is None or me == root)
    recvs, shape = [], None
    if root is None or me == root:
        shape = d.global_shape
        recvs = [Transfer(r, _index([held[k][r] for k in range(d.ndim)])) for r in range(P)]
    ex = BlockExchange(comm, sends, recvs, p.values.shape, shape, flat=False)
    out = ex.run_parts(p, p.info, _method(d))
    ex.free()
    return out


def _held_indices(d, pos, receivers, receiving: bool) -> list:
    """Per dimension, ``{rank: the global indices of its canonical part}``
    on the receiving ranks (collective): computed from a complete map, sent
    by each rank for a distributed one (whose other ranks' indices nobody
    here knows)."""
    out = []
    for k, m in enumerate(d.maps):
        if m.complete and not receiving:
            out.append({})
        elif m.complete:
            out.append({r: m.canonical_indices(d.coords_of(r)[k]) for r in range(d.size)})
        else:
            mine = np.asarray(d.global_indices(k))[pos[k]]
            out.append(send_lists(d.comm, {q: mine for q in receivers}))
            for r in range(d.size):
                out[-1].setdefault(r, np.zeros(0, np.int64))
    return out


def _gather_rows(d, p: Parts, root) -> Parts | None:
    """Ragged rows and their global row numbers to ``root`` (or everyone),
    put in global row order there."""
    comm = d.comm
    rows = np.arange(p.nrows)[d.maps[0].canonical_positions(d.coords[0])]
    ids = Parts.of_array(np.asarray(d.global_indices(0)))
    got_ids, got = move(Route.gather(comm, rows, root), ids, p)
    if root is not None and comm.rank != root:
        return None
    order = np.empty(got_ids.nrows, np.int64)
    order[got_ids.values] = np.arange(got_ids.nrows)      # every row arrives once
    return take_rows(got, order)


# --------------------------------------------------------------------------
# one element, read by every rank
# --------------------------------------------------------------------------

def element_parts(d, p: Parts, index) -> Parts:
    """The element at the global ``index`` (one non-negative int per
    dimension, checked and agreed by the caller) as 0-d Parts on every rank
    (collective: its canonical holder sends it to every rank -- one small
    exchange; a missing ``?T`` element stays missing): what ``a[i, j]``
    holds, a 0-d array.

    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> d, p = from_global(np.arange(12.0).reshape(3, 4), dist=("c", "b"), comm=MPI.COMM_SELF)
    >>> element_parts(d, p, (2, 1)).values
    array(9.)
    """
    got = _element_row(d, p, index)
    return Parts(p.info.with_shape(()), got.values.reshape(()), got.validity)


def _element_row(d, p: Parts, index) -> Parts:
    """The element at ``index`` as one row on every rank, sent by its
    canonical holder: the lowest rank holding it canonically -- found from
    the maps where they are complete, by one allgather where a map is
    distributed (each rank knows only its own indices)."""
    comm = d.comm
    if all(m.complete for m in d.maps):
        owner = [int(m.owners(np.array([g], np.int64))[0][0]) for m, g in zip(d.maps, index)]
        holder = int(np.flatnonzero((d.rank_coords == owner).all(axis=1))[0]) if d.maps else 0
        where = _canonical_position(d, index) if comm.rank == holder else None
    else:
        where = _canonical_position(d, index)
        holder = [r for r, has in enumerate(comm.allgather(where is not None)) if has][0]
    comm_size = comm.size
    row = no_rows(Form(p.info.with_shape((0,)), ()))
    if where is not None:     # the element as one row, its validity with it
        one = take_block(p, tuple(slice(i, i + 1) for i in where))
        row = Parts(p.info.with_shape((1,)), one.values.reshape(1), one.validity)
    counts = np.full(comm_size, 1 if where is not None else 0, np.int64)
    route = Route(comm, None, counts, np.eye(comm_size, dtype=np.int64)[holder],
                  send_starts=np.zeros(comm_size, np.int64))
    return move(route, row)[0]


def _canonical_position(d, index):
    """This rank's local position of the element, if it holds it canonically."""
    local = []
    for k, (m, c, g) in enumerate(zip(d.maps, d.coords, index)):
        held = np.asarray(d.global_indices(k))
        canon = m.canonical_positions(c)
        positions = np.arange(len(held))[canon]
        hit = positions[held[positions] == g]
        if not hit.size:
            return None
        local.append(int(hit[0]))
    return tuple(local)
