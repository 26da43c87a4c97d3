"""Tetrahedron volumes and plane slices (xdap.mesh.geometry) on the
structured cube, checked by what must hold: volumes sum to the cube's, and
the slice polygons tile the unit square (shoelace areas sum to 1)."""
import numpy as np
import pytest

from xdap.mesh import geometry

from test_mesh_graph import cube_tets


def shoelace(poly):
    k = int(np.isfinite(poly[:, 0]).sum())
    x, y = poly[:k, 0], poly[:k, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))), k


@pytest.mark.parametrize("axis,at", [(0, 0.3), (1, 0.5), (2, 0.71), (1, 0.25)])   # 0.25, 0.5: nodes on it
def test_slices_tile_the_square(axis, at):
    pts, tets = cube_tets(4)
    assert np.isclose(geometry.tet_volumes(pts[tets]).sum(), 1.0, rtol=1e-12)
    poly = geometry.slice_polygons(pts[tets], axis=axis, at=at)
    assert poly.shape == (len(tets), 4, 2)
    areas, sizes = zip(*(shoelace(p) for p in poly))
    assert set(sizes) <= {0, 3, 4}
    assert np.isclose(sum(areas), 1.0, rtol=1e-12)
    assert np.all(np.isnan(poly[np.array(sizes) == 0]))
    # every cut tet straddles the plane (a corner on it counts as above)
    side = pts[tets][:, :, axis] - at
    straddles = (side < 0).any(axis=1) & (side >= 0).any(axis=1)
    assert ((np.array(sizes) > 0) == straddles).all()


def test_no_tets():
    assert geometry.slice_polygons(np.zeros((0, 4, 3))).shape == (0, 4, 2)
