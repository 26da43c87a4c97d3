"""Nodes follow their cells (xdap.mesh.node_field): every node owned once,
by a rank whose cells use it; the ghost layer is then exactly the halo --
checked against sets computed from every rank's cells gathered in the test."""
import numpy as np
import pytest

import xdap
from xdap.mesh import (ghost_layer, hilbert_partition, migrate_mesh, node_field, node_points,
                       read_block, cell_centroids)

from test_mesh_graph import cube_tets, mixed_mesh_3d, my_cells
from test_mesh_distributed import tet_volumes


def migrated_tets(comm, n=4, dest=None):
    pts, tets = cube_tets(n)
    mine = my_cells(comm, len(tets), "scattered")
    cells = xdap.from_local(tets[mine], dist="u", indices=mine, size=len(tets), comm=comm)
    if dest is None:
        dest = hilbert_partition(pts[tets[mine]].mean(axis=1), comm)
    return pts, tets, migrate_mesh(cells, dest).cells


def check_nodes_follow_cells(comm, nodes, used, nnodes):
    """Every node owned once; a used node by one of its users; an unused one
    by the rank of its id range. Returns every rank's used sets."""
    owned = np.asarray(nodes.distribution.global_indices(0))
    assert np.all(np.diff(owned) > 0)                                  # ascending
    all_owned = comm.allgather(owned)
    all_used = comm.allgather(used)
    assert sorted(np.concatenate(all_owned).tolist()) == list(range(nnodes))
    users = {}
    for r, u in enumerate(all_used):
        for g in u.tolist():
            users.setdefault(g, set()).add(r)
    bounds = [nnodes * r // comm.size for r in range(comm.size + 1)]
    for g in owned.tolist():
        if g in users:
            assert comm.rank in users[g], (g, users[g])
        else:
            assert bounds[comm.rank] <= g < bounds[comm.rank + 1]
    return all_used, users


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_nodes_follow_cells_and_the_ghosts_are_the_halo(comm):
    pts, tets, cells = migrated_tets(comm)
    nnodes = len(pts) + 3                          # three nodes no cell uses
    nodes = node_field(cells, nnodes)
    assert nodes.shape == (nnodes,) and nodes.dtype == np.float64
    local = np.asarray(cells.local_numpy())
    used = np.unique(local)
    _, users = check_nodes_follow_cells(comm, nodes, used, nnodes)

    layer = ghost_layer(nodes, cells)
    owned = set(np.asarray(nodes.distribution.global_indices(0)).tolist())
    shared = {g for g in used.tolist() if len(users[g]) > 1}
    ghosts = {g for g in used.tolist() if g not in owned}
    assert ghosts <= shared and layer.ghosts == len(ghosts)
    assert set(layer.needed.tolist()) == set(used.tolist())
    # the local numbering: owned first in the field's order, then ghosts by owner rank
    n_own = layer.n_owned
    assert layer.owned.tolist() == [True] * n_own + [False] * layer.ghosts
    order = np.asarray(nodes.distribution.global_indices(0))
    np.testing.assert_array_equal(layer.needed[:n_own], order[np.isin(order, used)])
    np.testing.assert_array_equal(layer.needed[layer.local_cells], local)
    owner_of_ghost = layer.scatter.owner_ranks[np.searchsorted(np.sort(layer.needed),
                                                               layer.needed[n_own:])]
    assert np.all(np.diff(owner_of_ghost) >= 0) and np.all(owner_of_ghost != comm.rank)

    # assembly on the owners and the ghost update, against NumPy on the whole mesh
    vol = tet_volumes(pts[local])
    layer.assemble_corners(np.repeat(vol / 4, 4), into=nodes)
    ref = np.bincount(tets.ravel(), weights=np.repeat(tet_volumes(pts[tets]) / 4, 4),
                      minlength=nnodes)
    np.testing.assert_allclose(nodes.to_numpy(), ref, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(layer.update(nodes), ref[layer.needed], rtol=1e-13, atol=1e-16)
    assert np.isclose(float(nodes.sum()), 1.0)

    # a field distributed by id moves to the nodes' distribution
    by_id = xdap.from_global(np.arange(nnodes, dtype=np.float64) * 2, comm=comm)
    moved = by_id.redistribute(nodes.distribution)
    np.testing.assert_array_equal(moved.local_numpy(),
                                  2.0 * np.asarray(nodes.distribution.global_indices(0)))
    assert np.asarray(xdap.zeros_like(nodes).local_numpy()).shape == (len(owned),)


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("empty", ["first", "middle", "last"])
def test_a_rank_without_cells_owns_only_unused_nodes(comm, empty):
    pts, tets = cube_tets(3)
    lonely = {"first": 0, "middle": comm.size // 2, "last": comm.size - 1}[empty]
    mine = my_cells(comm, len(tets), "blocks")
    cells = xdap.from_local(tets[mine], comm=comm)
    dest = (np.arange(len(mine)) + comm.rank) % comm.size
    dest[dest == lonely] = (lonely + 1) % comm.size
    cells = migrate_mesh(cells, dest).cells
    nodes = node_field(cells, len(pts), "int32")
    assert nodes.dtype == np.int32
    used = np.unique(np.asarray(cells.local_numpy()))
    check_nodes_follow_cells(comm, nodes, used, len(pts))
    if comm.rank == lonely:
        assert len(used) == 0 and len(nodes.distribution.global_indices(0)) == 0
    layer = ghost_layer(nodes, cells)
    layer.assemble_corners(np.ones(layer.local_cells.size, np.int32), into=nodes)
    np.testing.assert_array_equal(nodes.to_numpy(), np.bincount(tets.ravel(),
                                                                minlength=len(pts)))


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_mixed_kinds_ragged_cells(comm):
    cells_all = mixed_mesh_3d(3)
    N = len(cells_all)
    mine = my_cells(comm, N, "scattered")
    cells = xdap.from_local([cells_all[i] for i in mine], dist="u", indices=mine, size=N,
                            type="var * var * int64", comm=comm)
    # rank 0 gets no cells: an empty ragged partition
    dest = (mine * comm.size) // N if comm.size == 1 else 1 + (mine * (comm.size - 1)) // N
    cells = migrate_mesh(cells, dest).cells
    assert comm.size == 1 or comm.rank != 0 or len(cells.local.value) == 0
    nnodes = 4 ** 3
    nodes = node_field(cells, nnodes)
    offsets, ids = _ragged(cells)
    used = np.unique(ids)
    check_nodes_follow_cells(comm, nodes, used, nnodes)
    layer = ghost_layer(nodes, cells)
    np.testing.assert_array_equal(layer.needed[layer.local_cells[1]], ids)
    layer.assemble(np.ones(len(layer.needed)), into=nodes)
    counts = np.zeros(nnodes)
    for u in comm.allgather(used):
        counts[u] += 1
    np.testing.assert_array_equal(nodes.to_numpy(), counts)


def _ragged(cells):
    from xdap.mesh import local_cells
    (offsets, ids), _ = local_cells(cells)
    return offsets, ids


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_input_is_one_error_on_every_rank(comm):
    pts, tets, cells = migrated_tets(comm, 2)
    with pytest.raises(ValueError, match=r"nnodes and type must be the same"):
        node_field(cells, len(pts) + (comm.rank == 1))
    with pytest.raises(ValueError, match=r"names node \d+, but there are 5 nodes"):
        node_field(cells, 5)
    bad_ids = np.array(cells.local_numpy())
    assert bad_ids.size                                  # every rank holds cells here
    if comm.rank == 1:
        bad_ids[0, 0] = -1
    negative = xdap.from_local(bad_ids, comm=comm)
    with pytest.raises(ValueError, match=r"on rank 1 names node -1"):
        node_field(negative, len(pts))
    with pytest.raises(ValueError, match="nnodes must be an int >= 0"):
        node_field(cells, -1)
    with pytest.raises(TypeError, match="must be a numeric dtype"):
        node_field(cells, len(pts), "string")
    with pytest.raises(TypeError, match=r"cells must be a DistArray.*\(rank 1\)"):
        node_field(tets if comm.rank == 1 else cells, len(pts))
    assert node_field(cells, len(pts)).shape == (len(pts),)          # still usable


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_coordinates_follow_the_nodes_from_a_file(comm, tmp_path_factory):
    from test_mesh_files import shared_box, whole
    path = shared_box(comm, tmp_path_factory)
    points, tets, _ = whole(path)
    block = read_block(path, comm)
    cells = xdap.from_local(block.cells, comm=comm)
    mesh = migrate_mesh(cells, hilbert_partition(cell_centroids(block, comm), comm))
    nodes = node_field(mesh.cells, block.nnodes)
    xyz = node_points(block, nodes)
    assert xyz.shape == (len(points), 3) and xyz.distribution.maps[0] == nodes.distribution.maps[0]
    np.testing.assert_array_equal(xyz.local_numpy(),
                                  points[np.asarray(nodes.distribution.global_indices(0))])
    np.testing.assert_array_equal(xyz.to_numpy(), points)
    layer = ghost_layer(nodes, mesh.cells)
    np.testing.assert_array_equal(layer.update(xyz), points[layer.needed])
    with pytest.raises(ValueError, match="over the mesh's"):
        node_points(block, xdap.zeros(block.nnodes + 1, comm=comm))
