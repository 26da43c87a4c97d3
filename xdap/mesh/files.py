"""Meshes on disk, read in pieces: each rank reads its block of cells and
only the nodes they use.

An XDMF + HDF5 mesh (what meshio writes) is read in parallel without any
rank seeing the whole: the XDMF names the HDF5 datasets of the topology,
the geometry and the cell data, and h5py reads slices of them -- rank ``r``
its block of cells and its block of node rows, which one exchange routes to
the ranks whose cells name them. Any other
format meshio reads (``.msh``, ``.vtu``, ...) can only be read whole: rank
0 reads it and scatters each rank's block with ``Scatterv`` (buffers, never
pickles). ``generate_box`` makes a test mesh with gmsh.

>>> import tempfile, os
>>> from mpi4py import MPI
>>> path = generate_box(os.path.join(tempfile.mkdtemp(), "box.xdmf"), 500, MPI.COMM_SELF)
>>> block = read_block(path, MPI.COMM_SELF)
>>> block.cells.shape[1], block.cells.shape[0] == block.ncells, sorted(block.cell_data)
(4, True, ['rho'])
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from .. import comm as _comm
from ..heap import trims_heap
from ..agreement import agreement
from ..packing import Form, no_rows
from ..parts import Parts
from ..transport import Route, move
from ..types import TypeInfo
from .cells import unique_inverse
from ..optional import need

__all__ = ["generate_box", "read_block", "read_points", "cell_centroids", "MeshBlock", "KINDS"]

# The cell kinds read, by dimension (meshio's names; node orders as meshio's)
KINDS = {3: ("tetra", "pyramid", "wedge", "hexahedron"), 2: ("triangle", "quad")}


@dataclass
class MeshBlock:
    """This rank's block of a mesh file: global cell ids ``ids``, their
    node ids ``cells``, cell data (NaN in a float field is a missing
    value), and the whole mesh's counts.

    ``cells`` is an ``(n, k)`` array for a mesh of simplices of one kind
    (tetrahedra or triangles; ``cell_dim`` None), else ragged ``(offsets,
    node_ids)`` of the mesh's ``cell_dim``-D kinds (hexahedra, wedges,
    pyramids and tetrahedra; quadrilaterals and triangles) -- either way
    what ``dual_graph(block.cells, block.ids, comm, dim=block.cell_dim)``
    takes."""
    ids: np.ndarray
    cells: object
    cell_data: dict = field(default_factory=dict)
    ncells: int = 0
    nnodes: int = 0
    path: str = ""
    geometry: tuple | None = None        # (h5 file, dataset) when nodes are read in slices
    points: np.ndarray | None = None     # every node, when the format is read whole (rank 0)
    dim: int = 3                         # coordinates per node
    cell_dim: int | None = None          # None: simplices, (n, k); 2 or 3: ragged kinds


def generate_box(path, tets: int, comm=None, missing: float = 0.05, seed: int = 0) -> str:
    """Mesh the unit cube with gmsh into about ``tets`` tetrahedra and write
    it with meshio as XDMF + HDF5 at ``path`` (rank 0; collective: every rank
    returns once the file is complete). One cell field, ``rho``, with a
    fraction ``missing`` of its values NaN (missing). Reuses an existing
    file of the same request (the mesh is a cache, not a result).  The
    directory ``path`` names is made when it does not exist."""
    comm = _comm.resolve(comm)
    path = os.fspath(path)
    with agreement(comm, "generate_box") as ag:
        if isinstance(tets, bool) or not isinstance(tets, (int, np.integer)) or tets < 1:
            raise ValueError(f"generate_box: tets must be an int >= 1, got {tets!r}")
        ag.same("path and tets", (path, int(tets)))
        if comm.rank == 0:
            parent = os.path.dirname(os.path.abspath(path))
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as e:
                raise ValueError(f"generate_box: cannot make the directory {parent!r} for "
                                 f"{path!r}: {e.strerror}") from None
            stamp = path + ".request"
            want = f"{int(tets)} {missing} {seed}"
            if not (os.path.exists(path) and os.path.exists(stamp) and
                    open(stamp).read() == want):
                _write_box(path, int(tets), missing, seed)
                with open(stamp, "w") as f:
                    f.write(want)
    return path


def _write_box(path, tets, missing, seed):
    gmsh = need("gmsh")
    meshio = need("meshio")
    gmsh.initialize()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("box")
        gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
        gmsh.model.occ.synchronize()
        # measured: a size h gives about 4.7 / h**3 tetrahedra in the unit cube
        gmsh.option.setNumber("Mesh.MeshSizeMax", (4.7 / tets) ** (1 / 3))
        gmsh.model.mesh.generate(3)
        tags, coords, _ = gmsh.model.mesh.getNodes()
        types, _, nodes = gmsh.model.mesh.getElements(3)
    finally:
        gmsh.finalize()
    order = np.argsort(tags)
    cells = np.searchsorted(tags[order], nodes[list(types).index(4)]).reshape(-1, 4)
    rng = np.random.default_rng(seed)
    rho = rng.random(len(cells)) + 1.0
    rho[rng.random(len(cells)) < missing] = np.nan
    tmp = path + ".writing.xdmf"
    meshio.write(tmp, meshio.Mesh(coords.reshape(-1, 3)[order], [("tetra", cells.astype(np.int64))],
                                  cell_data={"rho": [rho]}))
    # meshio names the HDF5 file after the XDMF: move both into place
    os.replace(os.path.splitext(tmp)[0] + ".h5", os.path.splitext(path)[0] + ".h5")
    text = open(tmp).read().replace(os.path.basename(os.path.splitext(tmp)[0]) + ".h5",
                                    os.path.basename(os.path.splitext(path)[0]) + ".h5")
    with open(path, "w") as f:
        f.write(text)
    os.remove(tmp)


def _xdmf(path):
    """(topology (h5, dataset, shape), geometry (...), {name: cell data (...)})."""
    root = ET.parse(path).getroot()
    grid = root.find(".//Grid")
    if grid is None:
        raise ValueError("no Grid in the XDMF file")

    def item(node, what):
        di = node.find("DataItem") if node is not None else None
        if di is None or di.get("Format") != "HDF" or ":" not in (di.text or ""):
            raise ValueError(f"its {what} is not an HDF5 DataItem (only HDF5-backed XDMF is "
                             "read in pieces)")
        h5, name = di.text.strip().split(":", 1)
        return (os.path.join(os.path.dirname(os.path.abspath(path)), h5), name,
                tuple(int(x) for x in di.get("Dimensions").split()))
    topo = grid.find("Topology")
    if topo is None or topo.get("TopologyType", "").lower() not in ("tetrahedron", "triangle"):
        raise ValueError(f"topology {None if topo is None else topo.get('TopologyType')!r} is "
                         "not one of tetrahedra or triangles")
    data = {a.get("Name"): item(a, f"attribute {a.get('Name')!r}")
            for a in grid.findall("Attribute") if a.get("Center") == "Cell"}
    return item(topo, "topology"), item(grid.find("Geometry"), "geometry"), data


@trims_heap
def read_block(path, comm=None) -> MeshBlock:
    """This rank's block of the cells of the mesh file ``path`` (collective;
    see the module docstring). A file that does not exist or that meshio
    cannot read, and cells naming nodes that do not exist, raise the same
    ValueError on every rank."""
    comm = _comm.resolve(comm)
    path = os.fspath(path)
    kind = None
    with agreement(comm, "read mesh", share=True) as ag:
        ag.same("path", path)
        if comm.rank == 0:
            if not os.path.isfile(path):
                raise ValueError(f"mesh file {path!r} does not exist")
            kind = "xdmf" if path.endswith(".xdmf") else "whole"
            if kind == "xdmf":
                try:
                    _xdmf(path)
                except (ET.ParseError, ValueError, TypeError, AttributeError):
                    kind = "whole"       # mixed kinds, XML data, ...: meshio reads it whole
    kind = comm.bcast(kind, root=0)
    return (_read_xdmf_block if kind == "xdmf" else _read_whole_block)(path, comm)


def block_bounds(n: int, P: int) -> np.ndarray:
    """Where each of ``P`` ranks' block of ``n`` rows starts (and the end):
    rank ``r`` reads rows ``bounds[r]:bounds[r + 1]`` of a file."""
    return np.array([n * r // P for r in range(P + 1)], np.int64)


def _block(n, comm):
    bounds = block_bounds(n, comm.size)
    return int(bounds[comm.rank]), int(bounds[comm.rank + 1])


def _read_xdmf_block(path, comm) -> MeshBlock:
    h5py = need("h5py")
    (th5, tname, tshape), (gh5, gname, gshape), data = _xdmf(path)
    lo, hi = _block(tshape[0], comm)
    with agreement(comm, "read mesh"):
        with h5py.File(th5, "r") as f:
            cells = np.asarray(f[tname][lo:hi], np.int64)
        fields = {}
        for name, (h5, ds, _) in data.items():
            with h5py.File(h5, "r") as f:
                fields[name] = np.asarray(f[ds][lo:hi])
        if cells.size and (cells.min() < 0 or cells.max() >= gshape[0]):
            bad = int(cells[(cells < 0) | (cells >= gshape[0])][0])
            raise ValueError(f"mesh file {path!r}: a cell names node {bad}, but the mesh has "
                             f"{gshape[0]} nodes (a dangling node reference)")
    return MeshBlock(np.arange(lo, hi, dtype=np.int64), cells, fields, tshape[0], gshape[0],
                     path, (gh5, gname), None, gshape[1] if len(gshape) > 1 else 1)


def _read_whole_block(path, comm) -> MeshBlock:
    """Rank 0 reads the file whole with meshio; each rank gets its block (Scatterv)."""
    meta, cells_all, points, fields_all = None, None, None, {}
    with agreement(comm, "read mesh"):
        if comm.rank == 0:
            meshio = need("meshio")
            try:
                mesh = meshio.read(path)
            except (Exception, SystemExit) as e:   # meshio raises many kinds, or exits (!)
                raise ValueError(f"meshio cannot read mesh file {path!r}: "
                                 f"{type(e).__name__}: {e}") from None
            top = 3 if any(b.type in KINDS[3] for b in mesh.cells) else 2
            which = [i for i, b in enumerate(mesh.cells) if b.type in KINDS[top]]
            if not which:
                raise ValueError(f"mesh file {path!r} holds no cells of a kind xdap knows "
                                 f"({', '.join(KINDS[3] + KINDS[2])})")
            kinds = {mesh.cells[i].type for i in which}
            sizes_all = np.concatenate([np.full(len(mesh.cells[i].data),
                                                mesh.cells[i].data.shape[1]) for i in which])
            cells_all = np.concatenate([mesh.cells[i].data.reshape(-1)
                                        for i in which]).astype(np.int64)
            points = np.asarray(mesh.points, np.float64)
            if cells_all.size and (cells_all.min() < 0 or cells_all.max() >= len(points)):
                raise ValueError(f"mesh file {path!r}: a cell names node "
                                 f"{int(cells_all.max())}, but the mesh has {len(points)} nodes "
                                 "(a dangling node reference)")
            for name, per_block in mesh.cell_data.items():
                fields_all[name] = np.concatenate([np.asarray(per_block[i], np.float64)
                                                   for i in which])
            simplices = len(kinds) == 1 and kinds <= {"tetra", "triangle"}
            meta = (len(sizes_all), None if simplices else top, int(sizes_all[0]), len(points),
                    sorted(fields_all), points.shape[1])
    ncells, cell_dim, k, nnodes, names, dim = comm.bcast(meta, root=0)
    counts = np.diff(block_bounds(ncells, comm.size))
    lo, hi = _block(ncells, comm)
    # rank 0 sends each rank its block of cells (ragged node lists) and fields
    ragged = Form(TypeInfo.of_ragged(2, "int64"))
    if comm.rank == 0:
        offsets = np.zeros(len(sizes_all) + 1, np.int64)
        np.cumsum(sizes_all, out=offsets[1:])
        sent = [Parts(ragged.info, cells_all, None,
                      (np.array([0, ncells], np.int32), offsets.astype(np.int32)))]
        sent += [Parts.of_array(fields_all[name]) for name in names]
    else:
        sent = [no_rows(ragged)] + [no_rows(Form(TypeInfo.fixed((0,), "float64")))
                                    for _ in names]
        counts = np.zeros(comm.size, np.int64)
    got = move(Route(comm, None, counts, np.eye(comm.size, dtype=np.int64)[0] * (hi - lo)), *sent)
    sizes = np.diff(got[0].offsets[1].astype(np.int64))
    flat = got[0].values
    fields = {name: g.values for name, g in zip(names, got[1:])}
    if cell_dim is None:
        cells = flat.reshape(-1, k)
    else:
        cells = (np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), flat)
    return MeshBlock(np.arange(lo, hi, dtype=np.int64), cells, fields, ncells, nnodes, path,
                     None, points, dim, cell_dim)


@trims_heap
def read_points(block: MeshBlock, node_ids, comm=None) -> np.ndarray:
    """The coordinates of nodes ``node_ids`` (any order, repeats allowed;
    collective). Each rank reads only its own block of about N/P node rows
    -- one contiguous HDF5 slice for a file read in pieces, rank 0's table
    for a file read whole -- and the rows travel to the ranks that asked for
    them by one exchange of ids and one of rows: the I/O per rank is O(N/P)
    whatever the file's numbering (a block of cells uses nodes spread over
    the whole file). Reading HDF5 rows raises the same ValueError on every
    rank when it fails on one."""
    comm = _comm.resolve(comm)
    ids = np.asarray(node_ids, np.int64).reshape(-1)
    uniq, back = unique_inverse(ids)
    with agreement(comm, "read_points"):
        if uniq.size and (uniq[0] < 0 or uniq[-1] >= block.nnodes):
            bad = int(uniq[0] if uniq[0] < 0 else uniq[-1])
            raise ValueError(f"read_points: node {bad} out of range [0, {block.nnodes}) on rank "
                             f"{comm.rank}")
        if block.geometry is not None:          # every rank reads its block of rows
            bounds = block_bounds(block.nnodes, comm.size)
            lo, hi = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
            h5py = need("h5py")
            h5, ds = block.geometry
            try:
                with h5py.File(h5, "r") as f:
                    table = f[ds]
                    rows = table.shape[0] if table.ndim else 0
                    if rows < block.nnodes:     # a short table: a slice would be cut short
                        raise ValueError(f"the point table has {rows} rows for "
                                         f"{block.nnodes} nodes")
                    mine = np.asarray(table[lo:hi], np.float64).reshape(hi - lo, -1)
            except (OSError, KeyError, ValueError, TypeError) as e:
                raise ValueError(f"read_points: cannot read node rows {lo}..{hi} of "
                                 f"{h5}:{ds}: {e}") from None
            if mine.shape[1] != block.dim:
                raise ValueError(f"read_points: {h5}:{ds} holds {mine.shape[1]} coordinates a "
                                 f"node, the mesh has {block.dim}")
            home = np.searchsorted(bounds, uniq, side="right") - 1
        else:                                   # rank 0 holds the table read whole
            lo, mine = 0, block.points if comm.rank == 0 else None
            if mine is not None and (np.ndim(mine) != 2 or len(mine) < block.nnodes or
                                     np.shape(mine)[1] != block.dim):
                raise ValueError(f"read_points: the point table has shape {np.shape(mine)} "
                                 f"for {block.nnodes} nodes of {block.dim} coordinates")
            home = np.zeros(len(uniq), np.int64)
    ask = Route.to_ranks(comm, home).with_recv_counts()
    wanted = move(ask, Parts.of_array(uniq))[0].values
    rows = mine[wanted - lo] if mine is not None else np.zeros((0, block.dim))
    got = move(ask.reversed(), Parts.of_array(np.ascontiguousarray(rows, np.float64)))[0].values
    out = np.empty((len(uniq), block.dim))
    out[ask.rows] = got.reshape(-1, block.dim)
    return out[back]


@trims_heap
def cell_centroids(block: MeshBlock, comm=None) -> np.ndarray:
    """The centroids ``(n, dim)`` of this rank's block of cells -- what a
    geometric partitioner needs (collective when the file is read whole).
    Each node is read once; no ``(n, k, dim)`` corner array is made."""
    if isinstance(block.cells, tuple):             # ragged: mixed kinds
        offsets, nodes = block.cells
        uniq, at = unique_inverse(np.asarray(nodes, np.int64))
        xyz = read_points(block, uniq, comm)
        sizes = np.diff(offsets)
        owner = np.repeat(np.arange(len(sizes)), sizes)
        return np.stack([np.bincount(owner, weights=xyz[at, c], minlength=len(sizes))
                         for c in range(xyz.shape[1])], axis=1) / np.maximum(sizes, 1)[:, None]
    uniq, at = unique_inverse(np.asarray(block.cells, np.int64).reshape(-1))
    xyz = read_points(block, uniq, comm)
    at = at.reshape(block.cells.shape)
    total = np.zeros((len(at), xyz.shape[1]))
    for corner in range(at.shape[1]):
        total += xyz[at[:, corner]]
    return total / max(at.shape[1], 1)
