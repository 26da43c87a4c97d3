"""Reading a mesh in pieces (xdap.mesh.files), against meshio reading the
whole file on one process."""
import os

import numpy as np
import pytest

from xdap.mesh import files


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    return str(tmp_path_factory.mktemp("mesh") / "box.xdmf")


def shared_box(comm, tmp_path_factory, tets=2000):
    path = comm.bcast(str(tmp_path_factory.mktemp("mesh") / "box.xdmf") if comm.rank == 0
                      else None)
    return files.generate_box(path, tets, comm)


def whole(path):
    import meshio
    m = meshio.read(path)
    return m.points, m.cells_dict["tetra"], m.cell_data["rho"][0]


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_blocks_cover_the_mesh_once_and_match_meshio(comm, tmp_path_factory):
    path = shared_box(comm, tmp_path_factory)
    points, cells, rho = whole(path)
    for p in (path, None):
        if p is None:                                # the same mesh as a format read whole
            p = comm.bcast(path[:-5] + ".vtu" if comm.rank == 0 else None)
            if comm.rank == 0:
                import meshio
                meshio.write(p, meshio.read(path))
            comm.Barrier()
        b = files.read_block(p, comm)
        assert b.ncells == len(cells) and b.nnodes == len(points)
        np.testing.assert_array_equal(b.cells, cells[b.ids])
        np.testing.assert_array_equal(b.cell_data["rho"], rho[b.ids])     # NaN where missing
        everyone = np.concatenate(comm.allgather(b.ids))
        assert sorted(everyone.tolist()) == list(range(len(cells)))
        np.testing.assert_array_equal(files.read_points(b, b.cells.ravel(), comm),
                                      points[b.cells.ravel()])
    assert 1500 <= len(cells) <= 3000, len(cells)                 # about the tets asked for
    assert len(points) > 300
    assert 0 < np.isnan(rho).sum() < 0.2 * len(rho)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_points_any_order_each_rank_reads_only_its_block_of_rows(comm, tmp_path_factory,
                                                                  monkeypatch):
    # ids in any order, repeated, or none; whatever a rank asks for, it reads
    # one contiguous slice of about N/P node rows (the reads are recorded on
    # their way into h5py, which still does them)
    import h5py
    path = shared_box(comm, tmp_path_factory)
    points, _, _ = whole(path)
    b = files.read_block(path, comm)
    reads = []
    real = h5py.Dataset.__getitem__

    def recorded(self, key):
        got = real(self, key)
        reads.append(got.shape[0])
        return got
    monkeypatch.setattr(h5py.Dataset, "__getitem__", recorded)
    rng = np.random.default_rng(comm.rank)
    N, P = len(points), comm.size
    for ids in (rng.integers(0, N, 500), np.arange(N)[::-1], np.array([N - 1, 0, 0]),
                np.zeros(0, np.int64)):
        reads.clear()
        np.testing.assert_array_equal(files.read_points(b, ids, comm), points[ids].reshape(-1, 3))
        assert reads == [N * (comm.rank + 1) // P - N * comm.rank // P]


@pytest.mark.mpi(ranks=(2, 3))
def test_a_node_out_of_range_is_one_error_on_every_rank(comm, tmp_path_factory):
    path = shared_box(comm, tmp_path_factory)
    b = files.read_block(path, comm)
    ids = np.array([b.nnodes if comm.rank == 1 else 0])
    with pytest.raises(ValueError, match=f"node {b.nnodes} out of range"):
        files.read_points(b, ids, comm)


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_mesh_files_raise_on_every_rank(comm, tmp_path_factory):
    d = comm.bcast(str(tmp_path_factory.mktemp("bad")) if comm.rank == 0 else None)
    with pytest.raises(ValueError, match="does not exist"):
        files.read_block(os.path.join(d, "nothing.xdmf"), comm)
    junk = os.path.join(d, "junk.vtu")
    if comm.rank == 0:
        open(junk, "w").write("not a mesh")
    comm.Barrier()
    with pytest.raises(ValueError, match="meshio cannot read"):
        files.read_block(junk, comm)
    # a cell naming a node that does not exist, in the last rank's block
    path = shared_box(comm, tmp_path_factory, 300)
    if comm.rank == 0:
        import h5py
        with h5py.File(path[:-5] + ".h5", "r+") as f:
            topo = [k for k in f if f[k].ndim == 2 and f[k].shape[1] == 4 and
                    f[k].dtype.kind == "i"][0]
            f[topo][-1, 2] = 10 ** 6
    comm.Barrier()
    with pytest.raises(ValueError, match="dangling node reference"):
        files.read_block(path, comm)
    with pytest.raises(ValueError, match="tets must be an int"):
        files.generate_box(os.path.join(d, "z.xdmf"), 0, comm)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("ext", [".vtu", ".xdmf"])
def test_mixed_kinds_read_whole_as_ragged_cells(comm, tmp_path_factory, ext):
    # hexahedra and wedges: meshio writes them as separate blocks (XDMF: a
    # Mixed topology, which is read whole); each rank gets ragged cells
    import meshio
    from test_mesh_graph import mixed_mesh_3d, sharing_reference
    from xdap.mesh import dual_graph
    n = 3
    cells = mixed_mesh_3d(n)
    g = np.arange(n + 1) / n
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    hexes = np.array([c for c in cells if len(c) == 8])
    wedges = np.array([c for c in cells if len(c) == 6])
    order = [c for c in cells if len(c) == 8] + [c for c in cells if len(c) == 6]   # meshio's
    rho = np.arange(len(order), dtype=np.float64)
    path = comm.bcast(str(tmp_path_factory.mktemp("mixed") / f"m{ext}") if comm.rank == 0
                      else None)
    if comm.rank == 0:
        meshio.write(path, meshio.Mesh(pts, [("hexahedron", hexes), ("wedge", wedges)],
                                       cell_data={"rho": [rho[:len(hexes)], rho[len(hexes):]]}))
    comm.Barrier()
    b = files.read_block(path, comm)
    assert b.cell_dim == 3 and b.ncells == len(order)
    offsets, nodes = b.cells
    got = [nodes[offsets[i]:offsets[i + 1]].tolist() for i in range(len(b.ids))]
    assert got == [order[i] for i in b.ids]
    np.testing.assert_array_equal(b.cell_data["rho"], rho[b.ids])
    ref_centroids = np.array([pts[order[i]].mean(axis=0) for i in b.ids]).reshape(-1, 3)
    np.testing.assert_allclose(files.cell_centroids(b, comm), ref_centroids, rtol=1e-12)
    ref = sharing_reference(order, 3)
    off, nbrs = dual_graph(b.cells, b.ids, comm, dim=b.cell_dim)
    for i, c in enumerate(b.ids):
        assert nbrs[off[i]:off[i + 1]].tolist() == ref[c]


@pytest.mark.mpi(ranks=(1, 2))
def test_generate_box_makes_its_directory(comm, tmp_path_factory):
    base = comm.bcast(str(tmp_path_factory.mktemp("nested")) if comm.rank == 0 else None)
    path = files.generate_box(os.path.join(base, "a", "b", "box.xdmf"), 300, comm)
    assert os.path.exists(path) and os.path.exists(path[:-5] + ".h5")
    blocker = os.path.join(base, "file")
    if comm.rank == 0:
        open(blocker, "w").close()
    comm.Barrier()
    with pytest.raises(ValueError, match="cannot make the directory"):
        files.generate_box(os.path.join(blocker, "box.xdmf"), 300, comm)

