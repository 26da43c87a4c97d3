"""Migrating a mesh with its fields by one plan, and its ghost layer
(xdap.mesh.migrate_mesh / ghost_layer), against NumPy on the whole mesh."""
import numpy as np
import pytest

import xdap
from xdap.mesh import ghost_layer, hilbert_partition, migrate_mesh

from test_mesh_graph import cube_tets, mixed_mesh_3d, my_cells


def tet_volumes(xyz):
    a, b, c, d = (xyz[:, i] for i in range(4))
    return np.abs(np.einsum("ij,ij->i", b - a, np.cross(c - a, d - a))) / 6.0


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_tets_and_fields_follow_one_plan_then_assemble(comm):
    pts, tets = cube_tets(4)
    N = len(tets)
    rho = np.linspace(1.0, 2.0, N)
    missing = np.arange(N) % 7 == 3
    mine = my_cells(comm, N, "scattered")
    cells = xdap.from_local(tets[mine], dist="u", indices=mine, size=N, comm=comm)
    field = xdap.from_local(np.ma.array(rho[mine], mask=missing[mine]), dist="u", indices=mine,
                            size=N, comm=comm)
    corners = xdap.from_local(pts[tets[mine]], dist="u", indices=mine, size=N, comm=comm)
    dest = hilbert_partition(pts[tets[mine]].mean(axis=1), comm)
    mesh = migrate_mesh(cells, dest, {"rho": field, "corners": corners})
    # every cell went where dest said, once, with its fields
    gids = np.asarray(mesh.cells.distribution.global_indices(0))
    sent = np.zeros(N, np.int64)
    sent[np.concatenate(comm.allgather(mine))] = np.concatenate(comm.allgather(dest))
    assert (sent[gids] == comm.rank).all()
    assert sorted(np.concatenate(comm.allgather(gids)).tolist()) == list(range(N))
    np.testing.assert_array_equal(mesh.cells.local_numpy(), tets[gids])
    r = mesh.fields["rho"].local_numpy()
    np.testing.assert_array_equal(np.ma.getmaskarray(r), missing[gids])
    np.testing.assert_array_equal(np.ma.filled(r, -1.0), np.where(missing, -1.0, rho)[gids])
    np.testing.assert_array_equal(mesh.fields["corners"].local_numpy(), pts[tets[gids]])
    assert str(mesh.fields["rho"].type).endswith("?float64")
    # the plan moves one more field afterwards
    again = mesh.plan.apply(xdap.from_local(mine.astype(np.float64), dist="u", indices=mine,
                                            size=N, comm=comm))
    np.testing.assert_array_equal(again.local_numpy(), gids)

    # ghost layer: node volumes assembled on the owners, ghosts updated
    nodes = xdap.zeros(len(pts), comm=comm)                 # block-distributed node field
    layer = ghost_layer(nodes, mesh.cells)
    local = np.asarray(mesh.cells.local_numpy())
    np.testing.assert_array_equal(layer.needed[layer.local_cells], local)
    vol = tet_volumes(pts[local])
    layer.assemble_corners(np.repeat(vol / 4, 4).reshape(-1, 4), into=nodes)
    ref = np.bincount(tets.ravel(), weights=np.repeat(tet_volumes(pts[tets]) / 4, 4),
                      minlength=len(pts))
    np.testing.assert_allclose(nodes.to_numpy(), ref, rtol=1e-13, atol=1e-16)
    out = np.empty(len(layer.needed))
    assert layer.update(nodes, out=out) is out
    np.testing.assert_allclose(out, ref[layer.needed], rtol=1e-13, atol=1e-16)
    lo, hi = (int(x) for x in np.asarray(nodes.distribution.maps[0].bounds)[[comm.rank,
                                                                              comm.rank + 1]])
    assert layer.ghosts == int(((layer.needed < lo) | (layer.needed >= hi)).sum())
    assert np.isclose(nodes.sum(), 1.0, rtol=1e-12)         # the unit cube


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_mixed_kinds_ragged_cells(comm):
    cells = mixed_mesh_3d(3)
    N = len(cells)
    nnodes = 4 ** 3
    mine = my_cells(comm, N, "blocks")
    a = xdap.from_local([cells[c] for c in mine], type="var * var * int64", dist="u",
                        indices=mine, size=N, comm=comm)
    dest = (mine * comm.size) // N              # blocks -> the reverse rank order
    dest = comm.size - 1 - dest
    mesh = migrate_mesh(a, dest)
    gids = np.asarray(mesh.cells.distribution.global_indices(0))
    assert mesh.cells.to_global().value == cells
    nodes = xdap.zeros(nnodes, comm=comm)
    layer = ghost_layer(nodes, mesh.cells)
    offsets, positions = layer.local_cells
    for i, c in enumerate(gids):
        assert layer.needed[positions[offsets[i]:offsets[i + 1]]].tolist() == cells[c]
    layer.assemble_corners(np.ones(len(positions)), into=nodes)      # cells per node
    ref = np.bincount([v for c in cells for v in c], minlength=nnodes)
    np.testing.assert_array_equal(nodes.to_numpy(), ref)


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_input_raises_on_every_rank(comm):
    _, tets = cube_tets(2)
    mine = my_cells(comm, len(tets), "blocks")
    cells = xdap.from_local(tets[mine], comm=comm)
    # a wrong kind of argument on one rank only: the same error on every rank
    with pytest.raises(TypeError, match=r"cells must be a DistArray.*\(rank 1\)"):
        migrate_mesh(tets[mine] if comm.rank == 1 else cells, np.full(len(mine), comm.rank))
    with pytest.raises(TypeError, match=r"nodes must be a DistArray or a Distribution"):
        ghost_layer(np.zeros(27) if comm.rank == 0 else xdap.zeros(27, comm=comm), cells)
    with pytest.raises(ValueError, match="cells are a DistArray must be the same"):
        ghost_layer(xdap.zeros(27, comm=comm), tets[mine] if comm.rank == 0 else cells)
    other = xdap.from_local(np.zeros(len(mine) + (comm.rank == 0)), comm=comm)
    with pytest.raises(ValueError, match="rows of field 'x' are not distributed as the cells'"):
        migrate_mesh(cells, np.full(len(mine), comm.rank), {"x": other})
    nodes = xdap.zeros(27, comm=comm)
    layer = ghost_layer(nodes, cells)
    n = len(layer.local_cells.reshape(-1)) - (comm.rank == 1)
    with pytest.raises(ValueError, match=r"one value per cell corner.*\(rank 1\)"):
        layer.assemble_corners(np.ones(n), into=nodes)
    with pytest.raises(ValueError, match="out of range"):
        ghost_layer(xdap.zeros(5, comm=comm), cells)
    # still usable afterwards
    layer.assemble_corners(np.ones(len(layer.local_cells.reshape(-1))), into=nodes)
    assert nodes.sum() == tets.size
