"""A distributed mesh written as XDMF + HDF5: results ParaView, VisIt and
meshio open.

``write_xdmf(path, mesh, points)`` writes one HDF5 file next to ``path``
(``result.xdmf`` -> ``result.h5``) and the XDMF text that describes it:

- the nodes renumbered so that each rank's owned nodes are one run of ids
  (``0 .. nnodes-1`` in rank order: the "continuous" numbering a file
  needs; an exclusive prefix sum of the counts gives each rank its first
  id), their coordinates, and node fields;
- the cells in rank order, their node ids renumbered (one fetch of the new
  ids of the nodes they use, through the nodes' distribution), and cell
  fields;
- ``rank`` (the partition: the rank holding each cell), ``cell_id`` and
  ``node_id`` (each row's global id before renumbering), so nothing about
  the distributed mesh is lost.

Every rank writes its own slab of every dataset: through parallel HDF5
when h5py is built with MPI (``driver="mpio"``, collective writes), else in
turn (rank 0 makes the file and its datasets, then each rank opens it,
writes its rows and passes a token to the next: the bytes are O(N/P) a
rank, the wait O(P) small messages). The XDMF is the subset meshio and
ParaView both read: one ``Uniform`` grid, ``XYZ``/``XY`` geometry, one
topology of one kind (``Tetrahedron``, ``Hexahedron``, ...) or ``Mixed``,
``Scalar``/``Vector``/``Matrix`` attributes centred on cells or nodes.
``read_block`` reads it back in pieces.

>>> import os, tempfile, numpy as np, xdap
>>> from mpi4py import MPI
>>> tris = xdap.from_local(np.array([[0, 1, 2], [1, 3, 2]]), comm=MPI.COMM_SELF)
>>> xy = xdap.from_local(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
...                      comm=MPI.COMM_SELF)
>>> path = write_xdmf(os.path.join(tempfile.mkdtemp(), "two.xdmf"), tris, xy,
...                   cell_fields={"area": xdap.from_local(np.full(2, 0.5), comm=MPI.COMM_SELF)})
>>> import meshio
>>> m = meshio.read(path)
>>> m.cells_dict["triangle"].tolist(), m.cell_data["area"][0].tolist(), m.cell_data["rank"][0]
([[0, 1, 2], [1, 3, 2]], [0.5, 0.5], array([0, 0], dtype=int32))
"""
from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

import numpy as np
from ..agreement import on_rank0
from ..arraylike import is_distributed
from ..contract import collective
from ..distribution import Distribution
from ..heap import trims_heap
from ..io.hdf5 import write_rows
from ..movement.scatter import Scatter
from ..parts import Parts
from .cells import FACETS, local_cells, unique_inverse
from .distributed import MigratedMesh

__all__ = ["write_xdmf", "XDMF_KINDS"]

# XDMF's topology names, and its Mixed codes, by (dimension, nodes per cell)
XDMF_KINDS = {(2, 3): ("Triangle", 4), (2, 4): ("Quadrilateral", 5),
              (3, 4): ("Tetrahedron", 6), (3, 5): ("Pyramid", 7), (3, 6): ("Wedge", 8),
              (3, 8): ("Hexahedron", 9)}
# the dtypes XDMF (and meshio's reader) name: (DataType, Precision)
_XDMF_TYPES = {"int8": ("Int", 1), "int16": ("Int", 2), "int32": ("Int", 4), "int64": ("Int", 8),
               "uint8": ("UInt", 1), "uint16": ("UInt", 2), "uint32": ("UInt", 4),
               "uint64": ("UInt", 8), "float32": ("Float", 4), "float64": ("Float", 8)}
# names write_xdmf adds itself
RESERVED = {"cell": ("rank", "cell_id"), "node": ("node_id",)}


def _integer_leaf(info) -> bool:
    return not info.optional and np.dtype(info.numpy_dtype).kind in "iu"


def _field_problem(name, x, rows_map, what) -> str | None:
    """Why a field cannot be written (None when it can): a DistArray whose
    rows are distributed as the mesh's ``rows_map``, of fixed numeric
    type (optional only for floats: a missing value is written NaN)."""
    if not isinstance(name, str) or not name or any(c in name for c in "/<>&\"'"):
        return f"{what} field names must be non-empty strings without / < > & or quotes, " \
               f"got {name!r}"
    if name in RESERVED[what]:
        return f"{what} field {name!r} clashes with the {what} data write_xdmf adds itself"
    if not is_distributed(x):
        return f"{what} field {name!r} must be a DistArray, got {type(x).__name__}"
    d, info = x.distribution, x.parts.info
    if not d.maps or d.maps[0].fingerprint() != rows_map.fingerprint() or \
            any(g != 1 for g in d.grid[1:]):
        return f"{what} field {name!r} must be distributed along its rows as the mesh's " \
               f"{what}s are"
    dtype = str(np.dtype(info.numpy_dtype)) if not info.text and not info.ragged else None
    if dtype == "bool":
        dtype = "uint8"
    if info.ragged or dtype not in _XDMF_TYPES or (info.optional and dtype[0] != "f"):
        return f"{what} field {name!r} has type '{info.type_string()}': XDMF takes fixed " \
               "dims of bool, ints or floats (optional only for floats: missing = NaN)"
    if len(d.global_shape) > 3:
        return f"{what} field {name!r} has {len(d.global_shape)} dims: at most a matrix a row"
    return None


def _cell_kind(cells, cell_dim) -> str | None:
    """Why ``cells`` cannot be written as a topology (None when they can)."""
    if not is_distributed(cells):
        return f"mesh must be a DistArray of cells or a MigratedMesh, got {type(cells).__name__}"
    d, info = cells.distribution, cells.parts.info
    if not d.maps or d.maps[0].has_copies or not _integer_leaf(info) or \
            (info.ragged and info.var_ndim != 2) or \
            (not info.ragged and (len(d.global_shape) != 2 or any(g != 1 for g in d.grid[1:]))):
        return f"cells must be N * k * int64 or var * var * int64 rows, each once, got " \
               f"'{info.type_string()}' on a {d.grid} grid"
    if cell_dim not in (None, 2, 3):
        return f"cell_dim must be None (simplices), 2 or 3, got {cell_dim!r}"
    if info.ragged and cell_dim is None:
        return "ragged cells (mixed kinds) need cell_dim= 2 or 3"
    if not info.ragged:
        k = d.global_shape[1]
        dim = cell_dim if cell_dim is not None else {3: 2, 4: 3}.get(k)
        if (dim, k) not in XDMF_KINDS:
            return f"no {cell_dim or 'simplex'}{'-D' if cell_dim else ''} cell kind has {k} nodes"
    return None


@trims_heap
@collective(name="write_xdmf")
def write_xdmf(path, mesh, points, *, cell_fields=None, node_fields=None, cell_dim=None,
               partition: bool = True) -> str:
    """Write the distributed mesh as ``path`` (``.xdmf``) + its ``.h5``
    (collective; see the module docstring); returns ``path``.

    mesh         a DistArray of cells (``N * k * int64``; ``var * var *
                 int64`` for mixed kinds, with ``cell_dim``), rows
                 distributed any way, or a ``MigratedMesh`` (its fields are
                 the cell fields unless ``cell_fields`` is given)
    points       the node coordinates, ``(nnodes, dim)`` float, dim 2 or 3,
                 distributed along the rows (``node_points`` gives them),
                 each node on one rank
    cell_fields  {name: DistArray distributed as the cells}
    node_fields  {name: DistArray distributed as ``points``}
    cell_dim     None: simplices (3 nodes triangles, 4 tetrahedra); 2 or 3:
                 the kinds of that dimension (``read_block``'s ``cell_dim``)
    partition    also write ``rank``, the rank holding each cell

    Copies: each rank's slab is written from its own rows; the renumbered
    cells are one new array. A bad argument on any rank -- a field
    distributed otherwise, a name twice, another path -- is one ValueError
    or TypeError on every rank before anything is written; a failed write
    (a full disk) is one ValueError on every rank.
    """
    path = os.fspath(path)
    if not path.endswith(".xdmf"):
        raise ValueError(f"write_xdmf: path must end in .xdmf, got {path!r}")
    if isinstance(mesh, MigratedMesh):
        cells = mesh.cells
        cell_fields = dict(mesh.fields) if cell_fields is None else cell_fields
    else:
        cells = mesh
    cell_fields = dict(cell_fields or {})
    node_fields = dict(node_fields or {})
    problem = _cell_kind(cells, cell_dim)
    if problem:
        raise TypeError(f"write_xdmf: {problem}")
    if not is_distributed(points):
        raise TypeError(f"write_xdmf: points must be a DistArray, got {type(points).__name__}")
    pd, pinfo = points.distribution, points.parts.info
    if len(pd.global_shape) != 2 or not 2 <= pd.global_shape[1] <= 3 or pinfo.optional or \
            np.dtype(pinfo.numpy_dtype).kind != "f" or any(g != 1 for g in pd.grid[1:]) or \
            pd.maps[0].has_copies:
        raise ValueError(f"write_xdmf: points must be (nnodes, 2 or 3) floats distributed along "
                         f"the rows, each node once, got '{pinfo.type_string()}' shape "
                         f"{pd.global_shape} on a {pd.grid} grid")
    for what, fields, rows in (("cell", cell_fields, cells.distribution.maps[0]),
                               ("node", node_fields, pd.maps[0])):
        for name, x in fields.items():
            problem = _field_problem(name, x, rows, what)
            if problem:
                raise ValueError(f"write_xdmf: {problem}")
    partition = bool(partition)
    yield dict(path=path, mesh=cells, points=points, cell_fields=cell_fields,
               node_fields=node_fields, cell_dim=cell_dim, partition=partition)
    return _write(path, cells, points, cell_fields, node_fields, cell_dim, partition)


def _firsts(comm, counts) -> tuple:
    """For each of this rank's ``counts`` (rows of the datasets it writes),
    its first row in rank order and the total (one ``Allgather`` of P rows
    of counts)."""
    mine = np.asarray(counts, np.int64)
    every = np.empty((comm.size, len(mine)), np.int64)
    comm.Allgather(mine, every)
    return every[:comm.rank].sum(axis=0).tolist(), every.sum(axis=0).tolist()


def _renumbered_nodes(points, node_ids, first):
    """The new ids (``first + local row`` on the owning rank) of the nodes
    ``node_ids`` names: one fetch through the nodes' distribution."""
    d = points.distribution
    rows = Distribution([d.maps[0]], d.comm)
    n_owned = d.local_shape[0]
    uniq, at = unique_inverse(np.asarray(node_ids, np.int64).reshape(-1))
    fetch = Scatter(rows, uniq)
    new = fetch.bind(Parts.of_array(np.arange(first, first + n_owned, dtype=np.int64)),
                     out=np.empty(len(uniq), np.int64))()
    return new[at]


def _topology(local, cell_dim, node_first, points):
    """``(kind, rows)`` of this rank's cells (``local_cells``'s) renumbered:
    ``rows`` is ``(n, k)`` for one kind, else XDMF's Mixed flat list (code,
    nodes, code, ...)."""
    if not isinstance(local, tuple):
        k = local.shape[1]
        dim = cell_dim if cell_dim is not None else {3: 2, 4: 3}[k]
        new = _renumbered_nodes(points, local, node_first).reshape(-1, k)
        return XDMF_KINDS[(dim, k)][0], new
    offsets, flat = local
    sizes = np.diff(offsets)
    new = _renumbered_nodes(points, flat, node_first)
    codes = np.zeros(max(FACETS[cell_dim]) + 1, np.int64)
    for (dim, k), (_, code) in XDMF_KINDS.items():
        if dim == cell_dim:
            codes[k] = code
    out = np.empty(len(sizes) + len(flat), np.int64)
    head = offsets[:-1] + np.arange(len(sizes))           # where each cell's code goes
    out[head] = codes[sizes]
    body = np.ones(len(out), bool)
    body[head] = False
    out[body] = new
    return "Mixed", out


def _values(x) -> np.ndarray:
    """A field's local rows as plain NumPy: missing values NaN, bool as uint8."""
    v = x.local_numpy()
    if np.ma.isMaskedArray(v):
        v = np.ma.filled(v.astype(np.result_type(v.dtype, np.float32)), np.nan)
    v = np.asarray(v)
    return v.astype(np.uint8) if v.dtype == bool else v


def _write(path, cells, points, cell_fields, node_fields, cell_dim, partition) -> str:
    comm = cells.distribution.comm
    local, _ = local_cells(cells, "write_xdmf")
    mixed = isinstance(local, tuple)
    n_cells = len(local[0]) - 1 if mixed else len(local)
    # a Mixed topology is one flat list: a code and the nodes of each cell
    (node_first, cell_first, topo_first), (nnodes, ncells, topo_len) = _firsts(comm, [
        points.distribution.local_shape[0], n_cells,
        n_cells + len(local[1]) if mixed else n_cells])
    kind, topo = _topology(local, cell_dim, node_first, points)
    # every dataset: (name, global shape, dtype, this rank's rows, its first row)
    cell_ids = np.asarray(cells.distribution.maps[0].global_indices(
        cells.distribution.coords[0]), np.int64)
    node_ids = np.asarray(points.distribution.maps[0].global_indices(
        points.distribution.coords[0]), np.int64)
    sets = [("geometry", np.asarray(points.local_numpy(), np.float64), node_first, nnodes),
            ("topology", topo, topo_first, topo_len),
            ("cell/cell_id", cell_ids, cell_first, ncells),
            ("node/node_id", node_ids, node_first, nnodes)]
    if partition:
        sets.append(("cell/rank", np.full(n_cells, comm.rank, np.int32), cell_first, ncells))
    sets += [(f"cell/{k}", _values(v), cell_first, ncells) for k, v in cell_fields.items()]
    sets += [(f"node/{k}", _values(v), node_first, nnodes) for k, v in node_fields.items()]
    h5 = os.path.splitext(path)[0] + ".h5"
    write_rows(comm, h5, [(name, rows, first, total, {}) for name, rows, first, total in sets],
               "write_xdmf")
    on_rank0(comm, lambda: _write_text(path, os.path.basename(h5), sets, kind, ncells,
                                       points.shape[1]), f"write_xdmf: cannot write {path!r}")
    return path


def _item(h5name, name, shape, dtype) -> str:
    kind, precision = _XDMF_TYPES[str(np.dtype(dtype))]
    return (f'<DataItem DataType="{kind}" Precision="{precision}" '
            f'Dimensions="{" ".join(str(s) for s in shape)}" Format="HDF">'
            f'{h5name}:/{name}</DataItem>')


def _write_text(path, h5name, sets, kind, ncells, dim) -> None:
    """Rank 0's XDMF: the datasets' names, shapes and types (written to a
    temporary name first, so a reader never sees half a file)."""
    shape = {name: ((total,) + rows.shape[1:], rows.dtype) for name, rows, _, total in sets}
    lines = ['<?xml version="1.0"?>', '<Xdmf Version="3.0">', '<Domain>',
             '<Grid Name="mesh" GridType="Uniform">',
             f'<Geometry GeometryType="{"XY" if dim == 2 else "XYZ"}">',
             _item(h5name, "geometry", *shape["geometry"]), '</Geometry>']
    tshape, tdtype = shape["topology"]
    extra = '' if kind == "Mixed" else f' NodesPerElement="{tshape[1]}"'
    lines += [f'<Topology TopologyType="{kind}" NumberOfElements="{ncells}"{extra}>',
              _item(h5name, "topology", tshape, tdtype), '</Topology>']
    for name, (s, dtype) in shape.items():
        center, _, field = name.partition("/")
        if center not in ("cell", "node"):
            continue
        rank = "Scalar" if len(s) == 1 else "Vector" if s[1:] == (3,) else "Matrix"
        lines += [f'<Attribute Name={quoteattr(field)} AttributeType="{rank}" '
                  f'Center="{"Cell" if center == "cell" else "Node"}">',
                  _item(h5name, name, s, dtype), '</Attribute>']
    lines += ['</Grid>', '</Domain>', '</Xdmf>', '']
    tmp = path + ".writing"
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
    os.replace(tmp, path)
