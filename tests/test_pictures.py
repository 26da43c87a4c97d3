"""Pictures of who owns what (xdap.plot, a.plot, xdap show) on real ranks.

The colors drawn are checked against owners computed here from the
distribution rules themselves (numpy.array_split blocks, i // bs % P for
block-cyclic, the index lists given), not from xdap's maps.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import xdap
from xdap.launcher import clean_environment, mpiexec_command

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def block_owner(n, P):
    """Owner of each index under numpy.array_split's blocks."""
    return np.concatenate([np.full(len(b), p) for p, b in enumerate(np.array_split(np.arange(n), P))])


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_grid_colors_are_the_owners(comm):
    P = comm.size
    grid = {1: (1, 1), 2: (2, 1), 3: (1, 3), 4: (2, 2)}[P]
    a = xdap.from_global(np.zeros((12, 16)), dist=("b", "c"), grid=grid, block_size=(None, 2),
                         comm=comm)
    ax = a.plot()
    if comm.rank:
        assert ax is None
        return
    want = block_owner(12, grid[0])[:, None] * grid[1] + ((np.arange(16) // 2) % grid[1])[None, :]
    np.testing.assert_array_equal(np.asarray(ax.images[0].get_array()), want)
    assert "block-cyclic(2)" in ax.get_title() or grid[1] == 1


@pytest.mark.mpi(ranks=(2, 3))
def test_born_distributed_unstructured_owners(comm):
    """No rank holds the whole index map: rank 0 learns the owners of the
    drawn indices only, and draws them right."""
    n = 1000
    owner = (np.arange(n) * 7) % comm.size                  # the rule, independent of xdap
    mine = np.flatnonzero(owner == comm.rank)[::-1].copy()  # any order
    a = xdap.from_local(np.zeros(len(mine)), dist="u", indices=mine, comm=comm)
    assert not getattr(a.distribution.maps[0], "complete", True)
    ax = a.plot(max_cells=100)
    if comm.rank == 0:
        np.testing.assert_array_equal(np.asarray(ax.images[0].get_array())[0],
                                      owner[np.arange(0, n, 10)])


@pytest.mark.mpi(ranks=(2, 4))
def test_halos_are_hatched_and_big_arrays_sampled(comm):
    P = comm.size
    a = xdap.from_global(np.zeros(40), dist=("b",), padding=((1, 1),), comm=comm)
    ax = a.plot()
    if comm.rank == 0:
        hatched = [p for p in ax.patches if p.get_hatch()]
        assert len(hatched) == 2 * (P - 1)           # every inner block side has a ghost cell
        np.testing.assert_array_equal(np.asarray(ax.images[0].get_array())[0], block_owner(40, P))
    big = xdap.from_global(np.zeros(10 ** 6), dist=("c",), block_size=(1000,), comm=comm)
    ax = big.plot(max_cells=100)
    if comm.rank == 0:
        drawn = np.asarray(ax.images[0].get_array())[0]
        assert drawn.shape == (100,)
        np.testing.assert_array_equal(drawn, (np.arange(0, 10 ** 6, 10 ** 4) // 1000) % P)
        assert "every 10000-th index drawn" in ax.get_title()


@pytest.mark.mpi(ranks=(1, 3))
def test_ragged_rows_are_bars_of_their_lengths(comm):
    rows = [list(range(i % 7)) for i in range(30)]
    r = xdap.from_global(rows, type="var * var * int64", dist=("c",), comm=comm)
    ax = r.plot()
    if comm.rank == 0:
        bars = ax.patches
        assert [round(b.get_width()) for b in bars] == [len(x) for x in rows]
        colors = [tuple(b.get_facecolor()) for b in bars]
        for i in range(30):
            assert colors[i] == colors[i % comm.size]          # cyclic: owner i % P


@pytest.mark.mpi(ranks=(2, 4))
def test_points_with_ghosts(comm):
    n, P = 40, comm.size
    g = np.arange(n)
    owned = [np.flatnonzero(block_owner(n, P) == r) for r in range(P)]
    lists = [np.append(o, (o[-1] + 1) % n) for o in owned]         # one ghost each
    a = xdap.from_global(np.zeros(n), dist=("u",), indices=[lists], comm=comm)
    xy = np.c_[g, g % 5].astype(float)
    ax = a.plot(points=xy[a.global_indices(0)])
    if comm.rank == 0:
        hollow = [c for c in ax.collections if len(c.get_offsets()) and
                  len(c.get_facecolors()) == 0]
        assert sum(len(c.get_offsets()) for c in hollow) == P
        filled = [c for c in ax.collections if len(c.get_facecolors())]
        assert sorted(x for c in filled for x in np.asarray(c.get_offsets())[:, 0]) == list(g)
        assert f"{P} ghost copies" in ax.get_title()
    # NaN points are not drawn, and beyond max_cells**2 points every k-th is
    pts = xy[a.global_indices(0)].copy()
    pts[::2] = np.nan
    ax = a.plot(points=pts, max_cells=3)
    if comm.rank == 0:
        drawn = sum(len(c.get_offsets()) for c in ax.collections)
        finite = (n + P) // 2                     # roughly: half of every rank's points
        assert 0 < drawn <= 9 + P and "-th of" in ax.get_title(), (drawn, finite)


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_mesh_slice_polygons_colored_by_owner(comm):
    # a slice of a tetrahedral cube: each cut cell a polygon in its owner's
    # color, interface cells outlined; owners from numpy.array_split blocks
    from xdap.mesh.geometry import slice_polygons
    from test_mesh_graph import cube_tets
    pts, tets = cube_tets(3)
    owner = block_owner(len(tets), comm.size)
    a = xdap.from_global(tets, comm=comm)
    mine = np.asarray(a.global_indices(0))
    poly = slice_polygons(pts[tets[mine]], axis=1, at=0.4)
    outline = mine % 5 == 0
    ax = a.plot(polygons=poly, outline=outline)
    if comm.rank:
        assert ax is None
        return
    cut = np.isfinite(slice_polygons(pts[tets], axis=1, at=0.4)[:, 0, 0])
    colors = {}
    filled = [c for c in ax.collections if len(c.get_facecolors())]
    edged = [c for c in ax.collections if not len(c.get_facecolors())]
    for c in filled:
        colors[c.get_label()] = len(c.get_paths())
    want = {f"rank {r}": int((cut & (owner == r)).sum()) for r in range(comm.size)}
    assert {k: v for k, v in colors.items() if v} == {k: v for k, v in want.items() if v}
    assert sum(len(c.get_paths()) for c in edged) == int((cut & (np.arange(len(tets)) % 5 == 0))
                                                         .sum())
    assert sum(want.values()) == int(cut.sum()) > 0


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_calls_raise_on_every_rank(comm):
    a = xdap.from_global(np.zeros((2, 2, 2)), comm=comm)
    with pytest.raises(ValueError, match="draws 1-D and 2-D"):
        a.plot()
    b = xdap.from_global(np.zeros(9), comm=comm)
    pts = np.zeros((len(b.local) + (comm.rank == 1), 2))
    with pytest.raises(ValueError, match="points must be this rank's coordinates"):
        b.plot(points=pts)
    with pytest.raises(TypeError, match="max_cells"):
        b.plot(max_cells=0)
    poly = np.zeros((len(b.local) + (comm.rank == comm.size - 1), 3, 2))
    with pytest.raises(ValueError, match=r"polygons must be \(n, m, 2\) vertices.*rank"):
        b.plot(polygons=poly)
    with pytest.raises(ValueError, match="outline= goes with polygons="):
        b.plot(outline=np.zeros(len(b.local), bool))


@pytest.mark.mpi(ranks=(3,))
def test_show_draws_a_saved_store(comm, tmp_path_factory):
    path = comm.bcast(str(tmp_path_factory.mktemp("show")) if comm.rank == 0 else None)
    xdap.from_global(np.zeros((9, 6)), dist=("c", "n"), comm=comm).save(path + "/f")
    rows = [[1] * (i % 4) for i in range(11)]
    xdap.from_global(rows, type="var * var * int64", comm=comm).save(path + "/r")
    n = 12
    lists = [np.arange(r, n, 3) for r in range(3)]
    xdap.from_global(np.zeros(n), dist=("u",), indices=[lists], comm=comm).save(path + "/u")
    comm.Barrier()
    if comm.rank == 0:
        from xdap.pictures import plot_store
        np.testing.assert_array_equal(np.asarray(plot_store(path + "/f").images[0].get_array()),
                                      np.repeat((np.arange(9) % 3)[:, None], 6, axis=1))
        ax = plot_store(path + "/r")
        assert [round(b.get_width()) for b in ax.patches] == [i % 4 for i in range(11)]
        np.testing.assert_array_equal(np.asarray(plot_store(path + "/u").images[0].get_array())[0],
                                      np.arange(n) % 3)
        out = subprocess.run([sys.executable, "-m", "xdap", "show", path + "/f", "-o",
                              path + "/f.png"], capture_output=True, text=True, timeout=120,
                             env=clean_environment())
        assert out.returncode == 0, out.stderr
        assert open(path + "/f.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        bad = subprocess.run([sys.executable, "-m", "xdap", "show", path + "/nothing"],
                             capture_output=True, text=True, timeout=120,
                             env=clean_environment())
        assert bad.returncode == 2 and "not an xdap store" in bad.stderr


def test_docs_pictures_script_draws_every_picture(tmp_path):
    """docs/pictures.py, which draws the pictures docs/pictures.md shows,
    runs on 4 ranks and writes each one."""
    run = subprocess.run(mpiexec_command(4) + [sys.executable, os.path.join(REPO, "docs",
                                                                             "pictures.py"),
                                               str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=clean_environment())
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("block_cyclic.png", "padded.png", "ragged.png", "points.png", "store.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
