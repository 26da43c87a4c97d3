"""The main job (``make demo``) on 1-4 ranks, small sizes: every stage's check passes."""
import argparse

import numpy as np
import pytest

from xdap import demo


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_demo_all_stages_pass(comm, capsys):
    args = argparse.Namespace(rows=3000, mean_length=4.0, missing=0.2, grid=40, steps=7, mesh=10)
    assert demo.run(args) == 0
    out = capsys.readouterr().out
    if comm.rank == 0:
        assert "all checks passed" in out and "FAIL" not in out
        assert out.count("OK  ") == 12


def test_mesh_areas_cover_the_square():
    xy, cells = demo.triangulated_square(8)
    assert len(xy) == 81 and cells.shape == (128, 3)
    assert abs(demo.triangle_areas(xy, cells).sum() - 1.0) < 1e-12


def mesh_args(out, **kw):
    base = dict(tets=3000, mesh=None, partitioner="refined", out=out, check_limit=200_000,
                trace_memory=False)
    base.update(kw)
    return argparse.Namespace(**base)


@pytest.mark.mpi(ranks=(1, 2, 4))
@pytest.mark.parametrize("partitioner", ["refined", "rcb", "hilbert", "metis"])
def test_mesh_pipeline_checks_pass(comm, capsys, tmp_path_factory, partitioner):
    import os
    from xdap import demo_mesh
    out = comm.bcast(str(tmp_path_factory.mktemp("mesh")) if comm.rank == 0 else None)
    assert demo_mesh.run(mesh_args(out, partitioner=partitioner)) == 0
    text = capsys.readouterr().out
    if comm.rank == 0:
        assert "all checks passed" in text and "FAIL" not in text, text
        assert text.count("OK  ") == 10      # the solve stage's included
        assert open(os.path.join(out, "result.xdmf")).read().startswith("<?xml")
        assert open(os.path.join(out, "partition.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        import zarr
        assert zarr.open_group(os.path.join(out, "result.xdap"), mode="r")["values"].ndim == 1


@pytest.mark.mpi(ranks=(2, 3))
def test_mesh_pipeline_bad_input_raises_on_every_rank(comm, tmp_path_factory):
    import os
    from xdap import demo_mesh
    out = comm.bcast(str(tmp_path_factory.mktemp("mesh")) if comm.rank == 0 else None)
    with pytest.raises(ValueError, match="does not exist"):
        demo_mesh.run(mesh_args(out, mesh=os.path.join(out, "nothing.xdmf")))
    with pytest.raises(ValueError, match="tets must be"):
        demo_mesh.run(mesh_args(out, tets=0))
    assert comm.bcast(sorted(os.listdir(out)) if comm.rank == 0 else None) == []
    # files made elsewhere: unreadable, a dangling node reference, too few cells
    import meshio
    src = comm.bcast(str(tmp_path_factory.mktemp("src")) if comm.rank == 0 else None)
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1.0]])
    if comm.rank == 0:
        with open(os.path.join(src, "garbage.vtu"), "w") as f:
            f.write("<VTKFile>not a mesh")
        meshio.write(os.path.join(src, "hexes.vtu"), meshio.Mesh(
            np.array([[i, j, k] for k in (0, 1) for j in (0, 1) for i in (0, 1)], float),
            [("hexahedron", np.array([[0, 1, 3, 2, 4, 5, 7, 6]]))]))
        meshio.write(os.path.join(src, "dangling.vtu"),
                     meshio.Mesh(pts, [("tetra", np.array([[0, 1, 2, 3], [1, 2, 3, 9]]))]))
        # two tets with one centroid: their Hilbert keys are equal, so one part
        # (the Hilbert partitioner's; bisection splits ties exactly)
        twin = np.concatenate([pts[:4], 2 * pts[:4].mean(axis=0) - pts[:4]])
        meshio.write(os.path.join(src, "twins.vtu"),
                     meshio.Mesh(twin, [("tetra", np.array([[0, 1, 2, 3], [4, 5, 6, 7]]))]))
    comm.Barrier()
    for name, message in [("garbage.vtu", "meshio cannot read"),
                          ("dangling.vtu", "dangling node reference"),
                          ("hexes.vtu", "holds cells other than tetrahedra"),
                          ("twins.vtu", "leaves a rank without cells" if comm.size == 2 else
                           r"2 cells on 3 ranks: rank 0 read none")]:
        with pytest.raises(ValueError, match=message):
            demo_mesh.run(mesh_args(out, mesh=os.path.join(src, name), partitioner="hilbert"))
    assert comm.bcast(sorted(os.listdir(out)) if comm.rank == 0 else None) == []
