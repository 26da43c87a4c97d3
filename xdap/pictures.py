"""Pictures of who owns what: ``xdap.plot(a)`` / ``a.plot()`` with matplotlib.

Every rank calls it (collective); rank 0 draws and gets the Axes, the
others get None. Only what the picture needs reaches rank 0:

- **1-D and 2-D fixed arrays**: a grid of cells colored by owning rank,
  computed on rank 0 from the maps alone (block and cyclic maps need no
  data); an unstructured dimension sends rank 0 the indices it draws.
  Communication padding (halos, ghost cells) is hatched in the color of
  the rank holding the copy. Arrays larger than ``max_cells`` along a
  dimension are drawn at every k-th index (the title says so): the
  pattern stays visible, nothing of size N is gathered.
- **ragged arrays**: one bar per row, its length the row's, colored by the
  owning rank (rows sampled the same way when there are many).
- **unstructured data at points**: pass ``points=`` (this rank's local
  coordinates, one row per local element, 2 or more columns: the first two
  are drawn; NaN rows are skipped, e.g. to draw a slice): points colored by
  owner, copies held for other ranks (ghosts) drawn as hollow circles in
  the holder's color; beyond ``max_cells**2`` points, every k-th.
- **cells as polygons**: pass ``polygons=`` (one polygon per local
  element, ``(n, m, 2)`` vertices, NaN-padded; an all-NaN polygon is not
  drawn -- e.g. the cells a slice plane misses, from
  ``xdap.mesh.geometry.slice_polygons``): filled in the owner's color;
  ``outline=`` (a bool per local element) draws chosen cells with a black
  edge, e.g. the cells on a partition's interface that ghost layers copy.

Headless: a ``matplotlib.figure.Figure`` is made without pyplot, so no
display or backend is needed; ``ax.figure.savefig("x.png")`` writes it.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.zeros((6, 8)), dist=("c", "b"), comm=MPI.COMM_SELF)
>>> ax = xdap.plot(a)
>>> ax.images[0].get_array().shape
(6, 8)
"""
from __future__ import annotations

import numpy as np
from .contract import collective
from .optional import need

__all__ = ["plot", "owner_grid", "plot_store", "MAX_CELLS"]

# Cells drawn along one dimension before the picture samples every k-th index.
MAX_CELLS = 256


def _colors(n: int):
    """One color per rank: tab10 / tab20 while they last, then a hue circle."""
    colormaps = need("matplotlib").colormaps
    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [colormaps["tab20"](i) for i in range(n)]
    return [colormaps["hsv"](i / n) for i in range(n)]


def _axes(ax, shape=(6, 4.5)):
    if ax is not None:
        return ax
    Figure = need("matplotlib.figure").Figure
    return Figure(figsize=shape, layout="constrained").add_subplot()


def _sample(n: int, max_cells: int) -> np.ndarray:
    """The indices drawn along a dimension of n: all, or every k-th."""
    step = max(1, -(-n // max_cells))
    return np.arange(0, n, step, dtype=np.int64)


def owner_grid(d, coords) -> np.ndarray:
    """The owning rank of every drawn cell of a fixed array (rank 0's
    picture; pure). ``coords[k]``: the grid coordinate along dim k of each
    index drawn along it.

    >>> from xdap.distribution import Distribution
    >>> from xdap.maps import CyclicMap
    >>> d = Distribution.detached([CyclicMap(6, 2)])
    >>> owner_grid(d, [d.maps[0].owners(np.arange(6))[0]]).tolist()
    [0, 1, 0, 1, 0, 1]
    """
    mesh = np.meshgrid(*coords, indexing="ij")
    at = np.empty(d.grid, np.int64)
    for r in range(d.size):
        at[d.coords_of(r)] = r
    return at[tuple(mesh)]


@collective(own=("ax", "points", "polygons", "outline"))
def plot(a, ax=None, *, points=None, polygons=None, outline=None, max_cells: int = MAX_CELLS,
         title=None):
    """Draw who owns what of DistArray ``a`` (collective; see the module
    docstring). Returns the Axes on rank 0, None elsewhere."""
    if not hasattr(type(a), "__xdap_wrap__"):
        raise TypeError(f"plot: a must be a DistArray, got {type(a).__name__}")
    comm = a.comm
    d, p = a.distribution, a.parts
    if isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 1:
        raise TypeError(f"plot: max_cells must be an int >= 1, got {max_cells!r}")
    n = p.nrows if p.info.ragged else (p.values.shape[0] if p.values.ndim else 0)
    if points is not None and polygons is not None:
        raise ValueError("plot: pass points= or polygons=, not both")
    if polygons is None and outline is not None:
        raise ValueError("plot: outline= goes with polygons=")
    if points is None and not d.maps:
        raise ValueError("plot: a 0-d array has nothing to draw")
    if polygons is not None:
        polygons = np.asarray(polygons, dtype=np.float64)
        if polygons.ndim != 3 or polygons.shape[0] != n or polygons.shape[2] != 2:
            raise ValueError(f"plot: polygons must be (n, m, 2) vertices, one polygon per "
                             f"local element ({n} here), got shape {polygons.shape} on "
                             f"rank {comm.rank}")
        outline = np.zeros(n, bool) if outline is None else np.asarray(outline, bool)
        if outline.shape != (n,):
            raise ValueError(f"plot: outline must be one bool per local element ({n} here), "
                             f"got shape {outline.shape} on rank {comm.rank}")
    if points is not None:
        points = np.asarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[0] != n or points.shape[1] < 2:
            raise ValueError(f"plot: points must be this rank's coordinates, one row of 2 or "
                             f"more per local element ({n} here), got shape {points.shape} "
                             f"on rank {comm.rank}")
    elif polygons is None and not p.info.ragged and len(d.maps) > 2:
        raise ValueError(f"plot: draws 1-D and 2-D arrays, this one is "
                         f"{len(d.maps)}-D (plot a 2-D slice or pass points=)")
    # points, polygons and outline are each rank's own: whether they are given is agreed
    yield {"a": a, "whether points are given": points is not None,
           "whether polygons are given": polygons is not None,
           "whether outline is given": outline is not None, "max_cells": max_cells,
           "title": title}
    if points is not None:
        return _plot_points(a, d, ax, points, title, max_cells)
    if polygons is not None:
        return _plot_polygons(a, d, ax, polygons, outline, title, max_cells)
    if p.info.ragged:
        return _plot_rows(a, d, p, ax, max_cells, title)
    return _plot_grid(a, d, ax, max_cells, title)


# -- fixed arrays ---------------------------------------------------------------------------

def _sample_coords(d, samples) -> list:
    """The grid coordinate owning each sampled index, per dim, on rank 0
    (collective). Block and cyclic maps answer themselves; along a
    distributed unstructured dim each rank sends only the sampled indices
    it holds canonically -- O(samples) on rank 0, never O(size)."""
    comm = d.comm
    coords = []
    for k, (m, s) in enumerate(zip(d.maps, samples)):
        if m.complete:
            coords.append(m.owners(s)[0])
            continue
        c = d.coords[k]
        ids = np.asarray(m.global_indices(c))[m.canonical_positions(c)]
        got = comm.gather((c, ids[np.isin(ids, s)]), root=0)
        at = None
        if comm.rank == 0:
            at = np.zeros(len(s), np.int64)
            for cc, picked in got:
                at[np.searchsorted(s, picked)] = cc
        coords.append(at)
    return coords


def _plot_grid(a, d, ax, max_cells, title):
    samples = [_sample(n, max_cells) for n in d.global_shape]
    coords = _sample_coords(d, samples)
    if d.comm.rank != 0:
        return None
    return _draw_grid(ax, d, coords, samples, str(a.type), title)


def _draw_grid(ax, d, coords, samples, type_str, title):
    """Rank 0: the owners of the sampled cells of distribution ``d``
    (``coords``: see :func:`owner_grid`)."""
    shape = d.global_shape
    owners = owner_grid(d, coords)
    if owners.ndim == 1:
        owners = owners[None, :]
    ax = _axes(ax)
    colors = need("matplotlib.colors")
    BoundaryNorm, ListedColormap = colors.BoundaryNorm, colors.ListedColormap
    colors = _colors(d.size)
    cmap = ListedColormap(colors)
    norm = BoundaryNorm(np.arange(d.size + 1) - 0.5, d.size)
    rows = samples[0] if len(shape) == 2 else np.array([0])
    cols = samples[-1]
    ax.imshow(owners, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto",
              extent=(-0.5, len(cols) - 0.5, len(rows) - 0.5, -0.5))
    _halos(ax, d, samples, colors)
    _ticks(ax, rows, cols, len(shape))
    _legend(ax, colors)
    sampled = any(len(s) < n for s, n in zip(samples, shape))
    ax.set_title(title or f"{type_str}: {_describe(d)}" +
                 ("\n(every " + " x ".join(str(int(s[1] - s[0]) if len(s) > 1 else 1)
                                           for s in samples) + "-th index drawn)"
                  if sampled else ""), fontsize="medium")
    return ax


def _legend(ax, colors):
    Patch = need("matplotlib.patches").Patch
    ax.legend(handles=[Patch(color=c, label=f"rank {r}") for r, c in enumerate(colors)],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)


def _describe(d) -> str:
    return f"({', '.join(m.describe() for m in d.maps)}) on a {' x '.join(map(str, d.grid))} grid"


def _position(samples, g):
    """Where global index g lands among the sampled cells (fractional)."""
    return np.interp(g, samples, np.arange(len(samples))) if len(samples) > 1 else 0.0


def _halos(ax, d, samples, colors):
    """Hatch each rank's communication padding: its buffer beyond its owned range."""
    Rectangle = need("matplotlib.patches").Rectangle
    if not any(m.padded for m in d.maps):
        return
    rows = samples[0] if len(samples) == 2 else np.array([0])     # a 1-d array is one row
    for r in range(d.size):
        c = d.coords_of(r)
        spans = []
        for m, cc, s in zip(d.maps, c, samples):
            if not m.ranges:             # only blocks have padding to hatch
                spans.append(((0, m.size), (0, m.size)))
                continue
            lo, hi = m.owned_range(cc)
            clo, chi = m.comm_padding(cc)
            spans.append(((lo, hi), (lo - clo, hi + chi)))
        if len(spans) == 1:
            spans.insert(0, ((0, 1), (0, 1)))
        (orow, brow), (ocol, bcol) = spans
        for (r0, r1), (c0, c1) in [((brow[0], orow[0]), bcol), ((orow[1], brow[1]), bcol),
                                   (orow, (bcol[0], ocol[0])), (orow, (ocol[1], bcol[1]))]:
            if r1 <= r0 or c1 <= c0:
                continue
            y0 = _position(rows, r0) - 0.5
            y1 = _position(rows, r1 - 1) + 0.5
            x0 = _position(samples[-1], c0) - 0.5
            x1 = _position(samples[-1], c1 - 1) + 0.5
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, hatch="///",
                                   edgecolor=colors[r], linewidth=1.5))


def _ticks(ax, rows, cols, ndim):
    def few(idx):
        pos = np.unique(np.linspace(0, len(idx) - 1, min(len(idx), 9)).astype(int))
        return pos, [str(int(idx[i])) for i in pos]
    pos, lab = few(cols)
    ax.set_xticks(pos, lab)
    ax.set_xlabel("dim 1" if ndim == 2 else "dim 0 (global index)")
    if ndim == 2:
        pos, lab = few(rows)
        ax.set_yticks(pos, lab)
        ax.set_ylabel("dim 0")
    else:
        ax.set_yticks([])


# -- ragged arrays --------------------------------------------------------------------------

def _plot_rows(a, d, p, ax, max_cells, title):
    """One bar per (sampled) row: its length, in its owner's color."""
    comm = d.comm
    m, c = d.maps[0], d.coords[0]
    rows = _sample(m.size, max_cells)
    ids = np.asarray(m.global_indices(c))
    canon = np.zeros(len(ids), bool)
    canon[m.canonical_positions(c)] = True
    want = canon & np.isin(ids, rows)
    lengths = np.diff(p.offsets[1])[want]
    got = comm.gather((ids[want], lengths, comm.rank), root=0)
    if comm.rank != 0:
        return None
    rank_of_row = np.zeros(m.size, np.int64)
    length_of_row = np.zeros(m.size, np.int64)
    for g, n, r in got:
        rank_of_row[g], length_of_row[g] = r, n
    return _draw_rows(ax, rows, rank_of_row[rows], length_of_row[rows], d,
                      title or f"{a.type}: {m.size} rows, {_describe(d)}")


def _draw_rows(ax, rows, owners, lengths, d, title):
    """Rank 0: one bar per drawn row, its length, in its owner's color."""
    colors = _colors(d.size)
    ax = _axes(ax, (6, max(2.5, min(9, 0.12 * len(rows)))))
    ax.barh(np.arange(len(rows)), lengths, height=0.8, color=[colors[r] for r in owners])
    ax.invert_yaxis()
    pos = np.unique(np.linspace(0, len(rows) - 1, min(len(rows), 9)).astype(int))
    ax.set_yticks(pos, [str(int(rows[i])) for i in pos])
    n = d.global_shape[0]
    ax.set_ylabel("row" + (f" (every {int(rows[1] - rows[0])}-th)" if len(rows) < n else ""))
    ax.set_xlabel("items in the row")
    _legend(ax, colors)
    ax.set_title(title, fontsize="medium")
    return ax


# -- unstructured data at points ------------------------------------------------------------

def _plot_points(a, d, ax, points, title, max_cells):
    """Points colored by owner; copies held for other ranks hollow. Points
    with a NaN coordinate are not drawn (pass NaN to draw a slice); at most
    ``max_cells**2`` points in all reach rank 0 (every k-th beyond that)."""
    comm = d.comm
    m, c = d.maps[0], d.coords[0]
    canon = np.zeros(len(points), bool)
    canon[m.canonical_positions(c)] = True
    keep = np.flatnonzero(np.isfinite(points[:, :2]).all(axis=1))
    total = comm.allreduce(len(keep))
    step = max(1, -(-total // (max_cells * max_cells)))
    keep = keep[::step]
    got = comm.gather((points[keep, :2], canon[keep], comm.rank), root=0)
    if comm.rank != 0:
        return None
    colors = _colors(d.size)
    ax = _axes(ax, (6, 5))
    for xy, own, r in got:
        ax.scatter(xy[own, 0], xy[own, 1], s=12, color=colors[r], label=f"rank {r}")
        if (~own).any():
            ax.scatter(xy[~own, 0], xy[~own, 1], s=40, facecolors="none",
                       edgecolors=colors[r], linewidths=1.2)
    ax.set_aspect("equal")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False,
              markerscale=1.5)
    ghosts = sum(int((~own).sum()) for _, own, _ in got)
    ax.set_title((title or f"{a.type}: {m.size} points on {d.size} ranks"
                  + (f", {ghosts} ghost copies (hollow)" if ghosts else ""))
                 + (f"\n(every {step}-th of {total:,} points drawn)" if step > 1 else ""),
                 fontsize="medium")
    return ax


def _plot_polygons(a, d, ax, polygons, outline, title, max_cells):
    """Cells as polygons filled in the owner's color, ``outline`` ones with
    a black edge; rows that are copies for other ranks are not drawn twice.
    At most ``max_cells**2`` polygons in all reach rank 0 (every k-th
    beyond that)."""
    PolyCollection = need("matplotlib.collections").PolyCollection
    comm = d.comm
    m, c = d.maps[0], d.coords[0]
    keep = np.zeros(len(polygons), bool)
    keep[m.canonical_positions(c)] = True
    keep &= np.isfinite(polygons[:, 0]).all(axis=1)
    keep = np.flatnonzero(keep)
    total = comm.allreduce(len(keep))
    step = max(1, -(-total // (max_cells * max_cells)))
    keep = keep[::step]
    got = comm.gather((polygons[keep], outline[keep], comm.rank), root=0)
    if comm.rank != 0:
        return None
    colors = _colors(d.size)
    ax = _axes(ax, (6, 5))
    edges = 0
    for poly, edge, r in got:
        shapes = [q[np.isfinite(q[:, 0])] for q in poly]
        ax.add_collection(PolyCollection(shapes, facecolors=colors[r], edgecolors="none",
                                         label=f"rank {r}"))
        if edge.any():
            ax.add_collection(PolyCollection([s for s, e in zip(shapes, edge) if e],
                                             facecolors="none", edgecolors="black",
                                             linewidths=0.4))
            edges += int(edge.sum())
    ax.autoscale_view()
    ax.set_aspect("equal")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
    ax.set_title((title or f"{a.type}: {total:,} cells drawn on {d.size} ranks"
                  + (f", {edges:,} outlined" if edges else ""))
                 + (f"\n(every {step}-th of {total:,} cells drawn)" if step > 1 else ""),
                 fontsize="medium")
    return ax


# -- a saved store --------------------------------------------------------------------------

def plot_store(path, ax=None, max_cells: int = MAX_CELLS):
    """Draw how the array saved at ``path`` was distributed (one process,
    no MPI traffic): from the store's ``xdap`` attribute, plus the sampled
    rows' offsets of a ragged store and, for an unstructured dim, its whole
    index table (O(size) on this one process: the indices are in no order
    a sample could be read by).

    >>> import tempfile, os, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "a")
    >>> xdap.from_global(np.zeros(10), comm=MPI.COMM_SELF).save(path)
    >>> plot_store(path).images[0].get_array().tolist()
    [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    """
    from .distribution import Distribution
    from .io import store_format as sf
    from .io.store_reader import read_array, read_frame, saved_maps
    found = read_frame(path, "show")
    if found[0] != "zarr":
        raise ValueError(f"show: {path!r} is a store of the previous format; load it with "
                         "xdap.load and save it again to draw it")
    _, attrs, arrays = found
    dist = attrs["distribution"]
    maps = saved_maps(path, attrs, arrays)
    d = Distribution.detached(maps, dist["rank_coords"])
    samples = [_sample(n, max_cells) for n in d.global_shape]
    coords = [m.owners(s)[0] for m, s in zip(d.maps, samples)]
    if attrs["kind"] != "ragged":
        return _draw_grid(ax, d, coords, samples, attrs["type"], None)
    rows = samples[0]
    offsets = sf.offsets_name(0)
    lo, hi = read_array(path, offsets, arrays, [rows]), read_array(path, offsets, arrays, [rows + 1])
    return _draw_rows(ax, rows, owner_grid(d, coords), hi - lo, d,
                      f"{attrs['type']}: {d.global_shape[0]} rows, {_describe(d)}")
