"""Writing a distributed mesh as XDMF + HDF5 (xdap.mesh.write_xdmf), read
back by meshio on one process and by read_block in pieces, against the
mesh as the file it came from holds it."""
import os

import numpy as np
import pytest

import xdap
from xdap.mesh import (files, ghost_layer, migrate_mesh, node_field, node_points, read_block,
                       write_xdmf)


def shared_path(comm, tmp_path_factory, name):
    return comm.bcast(str(tmp_path_factory.mktemp("xdmf") / name) if comm.rank == 0 else None)


def migrated_box(comm, tmp_path_factory, tets=1500, empty_rank=None):
    """The gmsh box read in pieces, its cells sent to a rank chosen by id
    (rank ``empty_rank`` gets none), nodes following their cells."""
    src = files.generate_box(shared_path(comm, tmp_path_factory, "box.xdmf"), tets, comm)
    block = read_block(src, comm)
    cells = xdap.from_local(block.cells, comm=comm)
    targets = [r for r in range(comm.size) if r != empty_rank] or [0]
    dest = np.asarray(targets)[(block.ids * 7) % len(targets)]
    rho = xdap.from_local(np.ma.masked_invalid(block.cell_data["rho"]), comm=comm)
    mesh = migrate_mesh(cells, dest, {"rho": rho})
    nodes = node_field(mesh.cells, block.nnodes)
    return src, block, mesh, nodes


def serial(path):
    import meshio
    return meshio.read(path)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_meshio_reads_back_the_cells_fields_and_partition(comm, tmp_path_factory):
    src, block, mesh, nodes = migrated_box(comm, tmp_path_factory)
    layer = ghost_layer(nodes, mesh.cells)
    layer.assemble_corners(np.ones(np.shape(layer.local_cells)), into=nodes)   # cells per node
    points = node_points(block, nodes)
    out = shared_path(comm, tmp_path_factory, "result.xdmf")
    assert write_xdmf(out, mesh, points, node_fields={"cells_per_node": nodes,
                                                     "xyz": points}) == out
    ref = serial(src)
    got = serial(out)
    node_id = got.point_data["node_id"]
    cell_id = got.cell_data["cell_id"][0]
    # node ids are 0 .. nnodes-1, a run per rank; node_id maps them back
    assert sorted(node_id.tolist()) == list(range(len(ref.points)))
    np.testing.assert_array_equal(got.points, ref.points[node_id])
    np.testing.assert_array_equal(got.point_data["xyz"], ref.points[node_id])
    tets = ref.cells_dict["tetra"]
    assert sorted(cell_id.tolist()) == list(range(len(tets)))
    np.testing.assert_array_equal(node_id[got.cells_dict["tetra"]], tets[cell_id])
    rho = ref.cell_data["rho"][0][cell_id]
    np.testing.assert_array_equal(got.cell_data["rho"][0], rho)           # NaN where missing
    per_node = np.bincount(tets.ravel(), minlength=len(ref.points))
    np.testing.assert_array_equal(got.point_data["cells_per_node"], per_node[node_id])
    # the partition: each cell's rank is the rank that holds it now
    held = np.concatenate(comm.allgather(np.asarray(mesh.cells.global_indices(0))))
    where = np.repeat(np.arange(comm.size), [len(h) for h in comm.allgather(
        np.asarray(mesh.cells.global_indices(0)))])
    rank_of = np.empty(len(tets), np.int64)
    rank_of[held] = where
    np.testing.assert_array_equal(got.cell_data["rank"][0], rank_of[cell_id])
    # cells are in rank order, each rank's a run
    assert (np.diff(got.cell_data["rank"][0]) >= 0).all()


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_read_block_reads_it_back_in_pieces(comm, tmp_path_factory):
    src, block, mesh, nodes = migrated_box(comm, tmp_path_factory)
    out = write_xdmf(shared_path(comm, tmp_path_factory, "back.xdmf"), mesh,
                     node_points(block, nodes))
    back = read_block(out, comm)
    assert back.geometry is not None                     # read as slices, not whole
    ref = serial(src)
    assert (back.ncells, back.nnodes) == (len(ref.cells_dict["tetra"]), len(ref.points))
    assert sorted(back.cell_data) == ["cell_id", "rank", "rho"]
    lo, hi = files.block_bounds(back.ncells, comm.size)[comm.rank:comm.rank + 2]
    np.testing.assert_array_equal(back.ids, np.arange(lo, hi))
    got = serial(out)
    np.testing.assert_array_equal(back.cells, got.cells_dict["tetra"][lo:hi])
    np.testing.assert_array_equal(back.cell_data["rho"], got.cell_data["rho"][0][lo:hi])
    xyz = files.read_points(back, back.cells.ravel(), comm)
    np.testing.assert_array_equal(xyz, got.points[back.cells.ravel()])


@pytest.mark.mpi(ranks=(2, 3))
def test_a_rank_without_cells_or_nodes(comm, tmp_path_factory):
    src, block, mesh, nodes = migrated_box(comm, tmp_path_factory, empty_rank=0)
    assert len(mesh.cells.local_numpy()) == 0 if comm.rank == 0 else True
    out = write_xdmf(shared_path(comm, tmp_path_factory, "empty.xdmf"), mesh,
                     node_points(block, nodes), partition=True)
    got = serial(out)
    ref = serial(src)
    assert 0 not in set(got.cell_data["rank"][0].tolist())
    cell_id, node_id = got.cell_data["cell_id"][0], got.point_data["node_id"]
    np.testing.assert_array_equal(node_id[got.cells_dict["tetra"]],
                                  ref.cells_dict["tetra"][cell_id])


def mixed_cells():
    """Hexahedra and wedges of a 2 x 2 x 2 grid (test_mesh_graph's), and
    the grid's points."""
    from test_mesh_graph import mixed_mesh_3d
    n = 2
    g = np.arange(n + 1, dtype=float)
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    return mixed_mesh_3d(n), pts


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_mixed_kinds_and_typed_fields(comm, tmp_path_factory):
    cells, pts = mixed_cells()
    mine = np.array_split(np.arange(len(cells)), comm.size)[comm.rank]
    a = xdap.from_local([cells[c] for c in mine], type="var * var * int64", dist="u",
                        indices=mine, size=len(cells), comm=comm)
    nodes = node_field(a, len(pts))
    owned = np.asarray(nodes.global_indices(0))
    xyz = xdap.from_local(pts[owned], dist="u", indices=owned, size=len(pts), comm=comm)
    mask = mine % 3 == 0
    fields = {"level": xdap.from_local(mine.astype(np.int16), dist="u", indices=mine,
                                       size=len(cells), comm=comm),
              "flag": xdap.from_local(mine % 2 == 0, dist="u", indices=mine, size=len(cells),
                                      comm=comm),
              "opt": xdap.from_local(np.ma.array(mine * 0.5, mask=mask), dist="u", indices=mine,
                                     size=len(cells), comm=comm)}
    out = write_xdmf(shared_path(comm, tmp_path_factory, "mixed.xdmf"), a, xyz,
                     cell_fields=fields, cell_dim=3)
    got = serial(out)
    node_id = got.point_data["node_id"]
    np.testing.assert_array_equal(got.points, pts[node_id])
    read = [node_id[c].tolist() for block in got.cells for c in block.data]
    cell_id = np.concatenate(got.cell_data["cell_id"])
    assert read == [cells[c] for c in cell_id]
    assert {b.type for b in got.cells} == {"hexahedron", "wedge"}
    level = np.concatenate(got.cell_data["level"])
    assert level.dtype == np.int16 and level.tolist() == cell_id.tolist()
    assert np.concatenate(got.cell_data["flag"]).tolist() == (cell_id % 2 == 0).tolist()
    opt = np.concatenate(got.cell_data["opt"])
    np.testing.assert_array_equal(np.isnan(opt), cell_id % 3 == 0)
    np.testing.assert_array_equal(opt[~np.isnan(opt)], (cell_id * 0.5)[cell_id % 3 != 0])


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_arguments_are_one_error_on_every_rank(comm, tmp_path_factory):
    src, block, mesh, nodes = migrated_box(comm, tmp_path_factory, tets=600)
    points = node_points(block, nodes)
    base = shared_path(comm, tmp_path_factory, "bad.xdmf")
    one = comm.rank == comm.size - 1
    cases = [
        (dict(path=base + ".x" if one else base), ValueError, "must end in .xdmf"),
        (dict(path=base.replace("bad", "other") if one else base), ValueError, "path"),
        (dict(node_fields={"node_id": nodes} if one else {}), ValueError, "clashes"),
        (dict(cell_fields={"n": nodes} if one else {}), ValueError,
         "distributed along its rows as the mesh's cells"),
        (dict(cell_fields={} if one else None), ValueError, "cell_fields"),
        (dict(points=nodes if one else points), ValueError, "points must be"),
        (dict(cell_dim=2 if one else None), (ValueError, TypeError), "cell_dim"),
        (dict(cell_fields={"cells": mesh.cells} if one else None), ValueError, "cell_fields"),
    ]
    for change, error, match in cases:
        args = dict(path=base, points=points, cell_fields=None, node_fields=None, cell_dim=None)
        args.update(change)
        with pytest.raises(error, match=match):
            write_xdmf(args["path"], mesh, args["points"], cell_fields=args["cell_fields"],
                       node_fields=args["node_fields"], cell_dim=args["cell_dim"])
    assert not os.path.exists(base)                                  # nothing was written
    # the ranks are still in step: a good call works
    assert write_xdmf(base, mesh, points) == base
