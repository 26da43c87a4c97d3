"""A mesh's cells as node-id lists, and their facets.

Cells come as an ``(n, k)`` integer array (one kind: simplices, or one
``dim``-D kind), as ragged ``(offsets, node_ids)`` NumPy arrays (mixed
kinds), or as a DistArray of either (``N * k * int64``, ``var * var *
int64``). ``cell_list`` checks them (an agreement: a bad piece on one
rank is the same error on every rank), ``facets_of`` lists every cell's
facets as sorted node-id rows, and ``facet_keys`` packs each such row into
one or two 64-bit words -- what the dual graph sorts and matches.

>>> import numpy as np
>>> from mpi4py import MPI
>>> rows, per_cell = facets_of(cell_list(np.array([[0, 1, 2]]), MPI.COMM_SELF, "doc", None),
...                            None)
>>> rows.tolist(), per_cell.tolist()
([[0, 1], [0, 2], [1, 2]], [3])
>>> keys, slots, F = facet_keys(cell_list(np.array([[0, 1, 2]]), MPI.COMM_SELF, "doc", None),
...                             None, bits=2)
>>> [bin(int(k)) for k in keys[:, 0]], slots, F     # (a + 1) << 2 | (b + 1); slots 0 .. m-1
(['0b110', '0b111', '0b1011'], None, 3)
"""
from __future__ import annotations

import itertools

import numpy as np
from ..arraylike import unwrap
from ..agreement import agreement

__all__ = ["FACETS", "CellList", "cell_list", "facets_of", "facet_keys", "key_bits",
           "sort_rows", "unique_inverse", "one_per_cell", "length",
           "local_cells"]

# leaf types a cell's node ids may have
INTEGER_LEAVES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


# The facets of each cell kind, by its number of nodes, in meshio's (VTK's)
# node order: faces of 3-D cells, edges of 2-D ones.
FACETS = {
    3: {4: [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)],                        # tetrahedron
        5: [(0, 1, 2, 3), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)],          # pyramid
        6: [(0, 1, 2), (3, 4, 5), (0, 1, 4, 3), (1, 2, 5, 4), (2, 0, 3, 5)],    # wedge
        8: [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6),
            (3, 0, 4, 7)]},                                                     # hexahedron
    2: {3: [(0, 1), (1, 2), (2, 0)],                                            # triangle
        4: [(0, 1), (1, 2), (2, 3), (3, 0)]},                                   # quadrilateral
}


class CellList:
    """This rank's cells as node-id lists: ``nodes`` flat, cell ``i`` is
    ``nodes[starts[i]:starts[i] + sizes[i]]`` (a view when the cells are
    an ``(n, k)`` array); ``width`` is ``k`` for uniform cells, else None."""

    def __init__(self, nodes, sizes, width=None):
        self.nodes, self.sizes, self.width = nodes, sizes, width
        self.starts = np.zeros(len(sizes), np.int64)
        np.cumsum(sizes[:-1], out=self.starts[1:])

    def __len__(self):
        return len(self.sizes)


def cell_list(cells, comm, what, dim) -> CellList:
    """Checked cells (collective agreement): an ``(n, k)`` integer array, or
    ragged ``(offsets, node_ids)`` (CSR: cell ``i`` is ``node_ids[offsets[i]:
    offsets[i + 1]]``), e.g. mixed element types."""
    with agreement(comm, what) as ag:
        ag.same("dim", dim)
        if dim not in (None, 2, 3):
            raise ValueError(f"{what}: dim must be None (simplices), 2 or 3, got {dim!r}")
        if isinstance(cells, tuple):
            offsets, nodes = (np.asarray(x) for x in cells)
            if offsets.ndim != 1 or len(offsets) < 1 or nodes.ndim != 1 or \
                    (offsets.size and offsets.dtype.kind not in "iu") or \
                    (nodes.size and nodes.dtype.kind not in "iu"):
                raise ValueError(f"{what}: ragged cells must be (offsets, node_ids), two 1-d "
                                 f"integer arrays, on rank {comm.rank}")
            sizes = np.diff(offsets.astype(np.int64))
            if (sizes < 0).any() or offsets[0] != 0 or offsets[-1] != len(nodes):
                raise ValueError(f"{what}: offsets must rise from 0 to len(node_ids) "
                                 f"({len(nodes)}) on rank {comm.rank}")
            ag.same("the cells' kind", "ragged")
            width = None
            nodes = nodes.astype(np.int64, copy=False)
        else:
            arr = np.asarray(cells)
            if arr.ndim != 2 or arr.shape[1] < 2 or (arr.size and arr.dtype.kind not in "iu"):
                raise ValueError(f"{what}: cells must be an (n, k) integer array of node ids "
                                 f"(k >= 2), or ragged (offsets, node_ids); got shape "
                                 f"{arr.shape} dtype {arr.dtype} on rank {comm.rank}")
            ag.same("nodes per cell", arr.shape[1])
            width = arr.shape[1]
            nodes = arr.astype(np.int64, copy=False).reshape(-1)
            sizes = np.full(len(arr), width, np.int64)
        if width is None and dim is None:
            raise ValueError(f"{what}: ragged cells need dim= (2 or 3) to name their kinds")
        if dim is not None:
            unknown = np.setdiff1d(np.unique(sizes), list(FACETS[dim]))
            if len(unknown):
                i = int(np.flatnonzero(sizes == unknown[0])[0])
                raise ValueError(f"{what}: cell {i} on rank {comm.rank} has {int(unknown[0])} "
                                 f"nodes: no {dim}-D cell kind has that many (known: "
                                 f"{sorted(FACETS[dim])})")
        if nodes.size and nodes.min() < 0:
            raise ValueError(f"{what}: negative node id {int(nodes.min())} on rank {comm.rank}")
    return CellList(nodes, sizes, width)


def facets_of(cells: CellList, dim):
    """Every cell's facets as sorted node-id rows, in cell order, and the
    number of facets of each cell. Simplices (``dim`` None): every
    ``k - 1`` of a cell's ``k`` nodes. Else the kinds' facets from
    ``FACETS``, padded to the widest with -1 (so a triangle never matches
    a quadrilateral)."""
    if dim is None:
        k = cells.width
        pick = np.array(list(itertools.combinations(range(k), k - 1)))
        rows = cells.nodes.reshape(-1, k)[:, pick]
        rows.sort(axis=2)                                  # in place: no second copy
        return rows.reshape(-1, k - 1), np.full(len(cells), len(pick), np.int64)
    table = FACETS[dim]
    wide = max(len(f) for kind in table.values() for f in kind)
    per = np.array([len(table[s]) if s in table else 0 for s in range(max(table) + 1)])
    counts = per[cells.sizes]
    rows = np.full((int(counts.sum()), wide), -1, np.int64)
    first = np.zeros(len(cells), np.int64)             # each cell's first facet row
    np.cumsum(counts[:-1], out=first[1:])
    for size, facets in table.items():
        which = np.flatnonzero(cells.sizes == size)
        if not len(which):
            continue
        for j, facet in enumerate(facets):
            at = first[which] + j
            for c, corner in enumerate(facet):
                rows[at, wide - len(facet) + c] = cells.nodes[cells.starts[which] + corner]
    rows.sort(axis=1)
    return rows, counts


def key_bits(max_node: int) -> int:
    """Bits a facet key gives each node id: ids are stored plus one, so the
    -1 padding of a narrower facet packs as 0."""
    return max(int(max_node) + 1, 1).bit_length()


def sort_rows(a: np.ndarray) -> np.ndarray:
    """Sort each row of ``a`` (``(n, k)``) in place and return it: a sorting
    network of column-wise min/max for k <= 4 (a few vectorised passes, one
    column of scratch, instead of n tiny sorts), else ``ndarray.sort``."""
    networks = {2: [(0, 1)], 3: [(0, 1), (1, 2), (0, 1)],
                4: [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)]}
    if a.shape[1] not in networks:
        a.sort(axis=1)
        return a
    low = np.empty(len(a), a.dtype)
    for i, j in networks[a.shape[1]]:
        np.minimum(a[:, i], a[:, j], out=low)
        np.maximum(a[:, i], a[:, j], out=a[:, j])
        a[:, i] = low
    return a


def _pack(columns, bits: int, out: np.ndarray) -> np.ndarray:
    """Node-id columns of a sorted facet (uint64, stored plus one: 0 is
    the -1 padding), ``64 // bits`` to a word, into ``out`` (``(m, W)``
    uint64), so that equal rows -- and only they -- have equal words."""
    per_word = 64 // bits
    for w in range(out.shape[1]):
        word = out[:, w]
        group = columns[w * per_word:(w + 1) * per_word]
        word[...] = group[0]
        for c in group[1:]:
            word <<= np.uint64(bits)
            word |= c
    return out


def facet_keys(cells: CellList, dim, bits: int):
    """Every facet of every cell as packed words (``(m, W)`` uint64; equal
    exactly for the same facet, see ``_pack``; ``bits`` from ``key_bits``
    of the largest node id on any rank), the slot of each, and ``F``:
    ``cell * F + j`` for facet ``j`` of local cell ``cell``, ``F`` the most
    facets a local cell has (None for simplices: the slots are ``0 .. m-1``).
    Simplices (``dim`` None) sort each cell's nodes once, so its facets --
    the combinations of ``k - 1`` of them -- come out sorted; other kinds
    go through ``facets_of``. Writes each key once: no temporaries the size
    of the facets but the keys themselves."""
    n = len(cells)
    per_word = 64 // bits
    if dim is None:
        k = cells.width
        nodes = cells.nodes.reshape(-1, k).astype(np.uint64)    # the one copy of the cells
        nodes += np.uint64(1)
        sort_rows(nodes)
        keys = np.empty((n, k, -(-(k - 1) // per_word)), np.uint64)
        for j, pick in enumerate(itertools.combinations(range(k), k - 1)):
            _pack([nodes[:, c] for c in pick], bits, keys[:, j])
        return keys.reshape(n * k, keys.shape[2]), None, k
    rows, counts = facets_of(cells, dim)
    F = int(counts.max()) if n else 1
    first = np.zeros(n, np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    cell = np.repeat(np.arange(n, dtype=np.int64), counts)
    slots = cell * F + (np.arange(len(rows), dtype=np.int64) - first[cell])
    rows = (rows + 1).astype(np.uint64)
    keys = np.empty((len(rows), -(-rows.shape[1] // per_word)), np.uint64)
    return _pack([rows[:, c] for c in range(rows.shape[1])], bits, keys), slots, F


def unique_inverse(ids: np.ndarray):
    """``np.unique(ids, return_inverse=True)`` for 1-d int64 ids (of any
    sign): by a bitmap over their range when it is at most 8x their count
    (O(n), memory O(n): a mesh's neighbour ids cluster), else by sorting.

    >>> [a.tolist() for a in unique_inverse(np.array([5, 3, 5, 9]))]
    [[3, 5, 9], [1, 0, 1, 2]]
    >>> [a.tolist() for a in unique_inverse(np.array([-2, 4, -2]))]
    [[-2, 4], [0, 1, 0]]
    """
    if not len(ids):
        return ids.copy(), np.zeros(0, np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo >= 8 * len(ids):
        return np.unique(ids, return_inverse=True)
    present = np.zeros(hi - lo + 1, bool)
    present[ids - lo] = True
    uniq = np.flatnonzero(present)
    rank = np.cumsum(present, dtype=np.int64)
    rank -= 1
    return uniq + lo, rank[ids - lo]


def length(a) -> int:
    """The length of a 1-d array-like, -1 for anything else (refused later,
    in an agreement)."""
    shape = np.shape(a)
    return shape[0] if len(shape) == 1 else -1


def one_per_cell(comm, what, n, **arrays) -> list:
    """Each of ``arrays`` as int64 with one entry per local cell (an
    agreement: a wrong length or a non-integer on one rank is the same
    error on every rank)."""
    out = []
    with agreement(comm, what):
        for name, a in arrays.items():
            a = np.asarray(a)
            if a.shape != (n,) or (a.size and a.dtype.kind not in "iu"):
                one = "id" if name == "cell_ids" else "part" if name == "parts" else "entry"
                raise ValueError(f"{what}: {name} needs one {one} per cell ({n}), integers; "
                                 f"got shape {a.shape} dtype {a.dtype}")
            out.append(a.astype(np.int64, copy=False))
    return out


def local_cells(cells, what: str = "mesh"):
    """This rank's rows of a DistArray of cells as NumPy: an ``(n, k)`` array
    (``N * k * int64``) or ragged ``(offsets, node_ids)`` (``var * var *
    int64``), with their global ids (collective: agreed checks)."""
    d, p = unwrap(cells)
    m = d.maps[0] if d.maps else None
    with agreement(d.comm, what):
        ragged = p.info.ragged
        if m is None or (ragged and len(p.offsets) != 2) or \
                (not ragged and (len(p.shape) != 2 or any(g != 1 for g in d.grid[1:]))) or \
                p.info.optional or p.info.leaf not in INTEGER_LEAVES:
            raise TypeError(f"{what}: cells must be an N * k * int64 or var * var * int64 array "
                            f"distributed by rows, got '{p.info.type_string()}' on a {d.grid} "
                            "grid")
        if m.has_copies:
            raise ValueError(f"{what}: the cells' distribution holds copies of rows (ghosts or "
                             "padding); pass each cell once")
    ids = np.asarray(m.global_indices(d.coords[0]), np.int64)
    if not ragged:
        return np.asarray(p.values), ids
    inner = np.asarray(p.offsets[1], np.int64)
    return (inner - inner[0], np.asarray(p.values)[inner[0]:inner[-1]]), ids
