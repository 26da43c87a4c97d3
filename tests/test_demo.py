"""The main job (``make demo``) on 1-4 ranks, small sizes: every stage's check passes."""
import argparse

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
