"""Geometry of tetrahedra, pure NumPy: volumes, and the polygons where a
plane cuts them (to draw a 2-D slice of a 3-D mesh).

>>> import numpy as np
>>> tet = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], float)
>>> tet_volumes(tet).tolist()
[0.16666666666666666]
>>> slice_polygons(tet, axis=2, at=0.5).round(2).tolist()     # a triangle, NaN-padded
[[[0.0, 0.0], [0.5, 0.0], [0.0, 0.5], [nan, nan]]]
"""
from __future__ import annotations

import itertools

import numpy as np

__all__ = ["tet_volumes", "slice_polygons"]

_EDGES = np.array(list(itertools.combinations(range(4), 2)))     # the six edges of a tet


def tet_volumes(corners) -> np.ndarray:
    """Volumes of tetrahedra given as ``(n, 4, 3)`` corner coordinates."""
    a, b, c, d = (corners[:, i] for i in range(4))
    return np.abs(np.einsum("ij,ij->i", b - a, np.cross(c - a, d - a))) / 6.0


def slice_polygons(corners, axis: int = 1, at: float = 0.5) -> np.ndarray:
    """Where the plane ``x[axis] == at`` cuts each tetrahedron (``(n, 4, 3)``
    corners): ``(n, 4, 2)`` vertices in the plane's other two coordinates,
    in order around the polygon -- a triangle (4th vertex NaN) or a
    quadrilateral; all NaN for a tetrahedron the plane misses. A corner on
    the plane counts as above it."""
    corners = np.asarray(corners, np.float64)
    out = np.full((len(corners), 4, 2), np.nan)
    below = corners[:, :, axis] < at
    cut = np.flatnonzero(below.any(axis=1) & ~below.all(axis=1))
    out[cut] = _cut_polygons(corners[cut], axis, at)    # temporaries only for the cut cells
    return out


def _cut_polygons(corners, axis, at):
    side = corners[:, :, axis] - at
    a, b = corners[:, _EDGES[:, 0]], corners[:, _EDGES[:, 1]]          # (n, 6, 3)
    sa, sb = side[:, _EDGES[:, 0]], side[:, _EDGES[:, 1]]
    cuts = (sa < 0) != (sb < 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(cuts, sa / (sa - sb), np.nan)
    points = a + t[..., None] * (b - a)                                 # NaN off the cut edges
    keep = [k for k in range(3) if k != axis]
    points = points[:, :, keep]                                         # (n, 6, 2)
    # order the 3 or 4 cut points by angle around their centre; NaN sort last
    found = np.isfinite(points[..., :1])
    centre = np.where(found, points, 0).sum(axis=1, keepdims=True) / found.sum(axis=1,
                                                                              keepdims=True)
    angle = np.arctan2(points[..., 1] - centre[..., 1], points[..., 0] - centre[..., 0])
    order = np.argsort(np.where(np.isnan(angle), np.inf, angle), axis=1)[:, :4]
    return np.take_along_axis(points, order[..., None], axis=1)
