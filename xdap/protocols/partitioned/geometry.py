"""An incoming ``__partitioned__`` dict's tile grid, validated (pure, no MPI).

>>> g = geometry({"shape": (5,), "partition_tiling": (2,), "partitions": {
...     (0,): {"start": (0,), "shape": (3,)}, (1,): {"start": (3,), "shape": (2,)}}})
>>> g.tiling, [b.tolist() for b in g.bounds]
((2,), [[0, 3, 5]])
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from ...maps import is_int

__all__ = ["geometry", "Geometry", "int_tuple"]


def int_tuple(v, what: str, ndim: int | None = None, allow_none: bool = False) -> tuple:
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        raise TypeError(f"{what} must be a tuple of ints, got {v!r}")
    v = tuple(v)
    for x in v:
        if not (is_int(x) or (allow_none and x is None)):
            raise TypeError(f"{what} must be a tuple of ints, got {v!r}")
    if ndim is not None and len(v) != ndim:
        raise ValueError(f"{what} has {len(v)} entries but the array has {ndim} dimension(s): {v!r}")
    return tuple(None if x is None else int(x) for x in v)


@dataclass
class Geometry:
    """The tile grid one rank's dict describes (pure data)."""
    shape: tuple            # global shape (ragged trailing Nones dropped)
    tiling: tuple
    positions: list         # grid positions (tuples of ints), C order of the tiling
    keys: list              # the dict's key object of each position
    bounds: list            # per tiled dim: tiling[k] + 1 tile boundaries
    digest: str             # fingerprint, compared across ranks

    @property
    def ntiles(self) -> int:
        return len(self.positions)

    def start(self, i: int) -> tuple:
        pos = self.positions[i]
        return tuple(int(b[j]) for b, j in zip(self.bounds, pos))

    def size(self, i: int) -> tuple:
        pos = self.positions[i]
        return tuple(int(b[j + 1] - b[j]) for b, j in zip(self.bounds, pos))


_CPU = ("kdlcpu", "cpu")


def _check_device(dev, where: str):
    if dev is None:
        return
    name = str(dev).lower()
    if not name.startswith(_CPU):
        raise TypeError(f"{where} is on device {dev!r}: xdap imports host (CPU) memory only; "
                        "copy it to the host first")


def geometry(d: dict) -> Geometry:
    """Validate the shape, tiling and tiles of a ``__partitioned__`` dict (pure).

    The tiles must form the grid ``partition_tiling``: along each dimension
    the tiles of consecutive grid positions are adjacent, start at 0 and end
    at the global size, and every tile's start and shape follow from its
    position (no overlap, no gap). ValueError names the rule and the tiles.

    >>> g = geometry({"shape": (5,), "partition_tiling": (2,), "partitions": {
    ...     (0,): {"start": (0,), "shape": (3,)}, (1,): {"start": (3,), "shape": (2,)}}})
    >>> [b.tolist() for b in g.bounds]
    [[0, 3, 5]]
    >>> geometry({"shape": (5,), "partition_tiling": (2,), "partitions": {
    ...     (0,): {"start": (0,), "shape": (3,)}, (1,): {"start": (2,), "shape": (3,)}}})
    Traceback (most recent call last):
    ...
    ValueError: overlap along dimension 0: partition (0,) covers [0, 3) but partition (1,) starts at 2
    """
    if not isinstance(d, dict):
        raise TypeError(f"a __partitioned__ export must be a dict, got {type(d).__name__}")
    for key in ("shape", "partition_tiling", "partitions"):
        if key not in d:
            raise ValueError(f"__partitioned__ dict is missing the required key {key!r}")
    shape = int_tuple(d["shape"], "'shape'", allow_none=True)
    # ragged producers may say (N, None): only the leading sized dims are tiled
    nd = next((i for i, s in enumerate(shape) if s is None), len(shape))
    if any(s is not None for s in shape[nd:]):
        raise ValueError(f"'shape' {shape!r}: only trailing dimensions may be None (ragged)")
    if nd == 0:
        raise ValueError(f"'shape' {shape!r} has no sized dimension to partition")
    tiling = int_tuple(d["partition_tiling"], "'partition_tiling'", len(shape))
    if any(t < 1 for t in tiling):
        raise ValueError(f"tiling mismatch: 'partition_tiling' {tiling!r} must be >= 1 per dimension")
    if any(t != 1 for t in tiling[nd:]):
        raise ValueError(f"tiling mismatch: 'partition_tiling' {tiling!r} cuts a ragged (None) dimension")
    if any(s < 0 for s in shape[:nd]):
        raise ValueError(f"'shape' {shape!r} must be non-negative")
    parts_ = d["partitions"]
    if not isinstance(parts_, dict):
        raise TypeError(f"'partitions' must be a dict keyed by grid position, got {type(parts_).__name__}")
    count = math.prod(tiling)
    keys = {}
    for key in parts_:
        pos = int_tuple(key, f"partition key {key!r}", len(shape))
        if any(not 0 <= p < t for p, t in zip(pos, tiling)):
            raise ValueError(f"tiling mismatch: partition key {pos!r} lies outside the grid "
                             f"'partition_tiling' {tiling!r}")
        keys[pos] = key
    if len(keys) != count:
        missing = next(p for p in np.ndindex(*tiling) if p not in keys)
        raise ValueError(f"tiling mismatch: 'partition_tiling' {tiling!r} has {count} grid "
                         f"positions but 'partitions' has {len(keys)} (missing {missing!r})")
    positions = list(np.ndindex(*tiling))
    tshape, tiling = shape[:nd], tiling[:nd]
    starts = np.empty((count, nd), np.int64)
    sizes = np.empty((count, nd), np.int64)
    for i, pos in enumerate(positions):
        e = parts_[keys[pos]]
        if not isinstance(e, dict) or "start" not in e or "shape" not in e:
            raise ValueError(f"partition {pos!r} must be a dict with 'start' and 'shape'")
        starts[i] = int_tuple(e["start"], f"'start' of partition {pos!r}", len(shape),
                               allow_none=True)[:nd] if _all_set(e["start"], nd) else _bad(pos, "start", e)
        sizes[i] = int_tuple(e["shape"], f"'shape' of partition {pos!r}", len(shape),
                              allow_none=True)[:nd] if _all_set(e["shape"], nd) else _bad(pos, "shape", e)
        if (sizes[i] < 0).any() or (starts[i] < 0).any():
            raise ValueError(f"partition {pos!r}: start {tuple(starts[i])} and shape "
                             f"{tuple(sizes[i])} must be non-negative")
        _check_device(e.get("device"), f"partition {pos!r}")
        loc = e.get("location")
        if isinstance(loc, (list, tuple)):
            for x in loc:
                if isinstance(x, (list, tuple)) and len(x) > 2:
                    _check_device(x[2], f"partition {pos!r}")
    grid = np.array(positions, np.int64).reshape(count, nd + (len(shape) - nd))[:, :nd]
    bounds = []
    for k in range(nd):
        line = [i for i, pos in enumerate(positions) if all(p == 0 for j, p in enumerate(pos[:nd]) if j != k)]
        b = [0]
        for j, i in enumerate(line):
            s, n = int(starts[i, k]), int(sizes[i, k])
            if s != b[-1]:
                prev = positions[line[j - 1]] if j else None
                if s > b[-1]:
                    where = f"between partition {prev!r} and {positions[i]!r}" if prev else \
                        f"before partition {positions[i]!r}"
                    raise ValueError(f"gap along dimension {k}: elements [{b[-1]}, {s}) are in no "
                                     f"partition ({where})")
                raise ValueError(f"overlap along dimension {k}: partition {prev!r} covers "
                                 f"[{int(starts[line[j - 1], k])}, {b[-1]}) but partition "
                                 f"{positions[i]!r} starts at {s}")
            b.append(s + n)
        if b[-1] != tshape[k]:
            last = positions[line[-1]]
            if b[-1] < tshape[k]:
                raise ValueError(f"gap along dimension {k}: elements [{b[-1]}, {tshape[k]}) are in "
                                 f"no partition (after partition {last!r}; 'shape' is {shape!r})")
            raise ValueError(f"overlap along dimension {k}: partition {last!r} ends at {b[-1]}, past "
                             f"the global size {tshape[k]}")
        bounds.append(np.array(b, np.int64))
    want_start = np.stack([bounds[k][grid[:, k]] for k in range(nd)], axis=1)
    want_size = np.stack([np.diff(bounds[k])[grid[:, k]] for k in range(nd)], axis=1)
    bad = np.flatnonzero((want_start != starts).any(axis=1) | (want_size != sizes).any(axis=1))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"tiling mismatch: partition {positions[i]!r} has start {tuple(starts[i].tolist())} "
                         f"and shape {tuple(sizes[i].tolist())}, but its row/column in the grid "
                         f"'partition_tiling' {tuple(d['partition_tiling'])!r} places it at start "
                         f"{tuple(want_start[i].tolist())} with shape {tuple(want_size[i].tolist())} "
                         "(tiles must form a grid: same boundaries along each axis)")
    h = hashlib.sha1(repr((tshape, tiling)).encode())
    h.update(starts.tobytes())
    h.update(sizes.tobytes())
    return Geometry(tshape, tiling, positions, [keys[p] for p in positions], bounds,
                     h.hexdigest())


def _all_set(v, nd):
    return isinstance(v, (list, tuple)) and all(x is not None for x in tuple(v)[:nd])


def _bad(pos, what, e):
    raise TypeError(f"'{what}' of partition {pos!r} must be a tuple of ints, got {e[what]!r}")
