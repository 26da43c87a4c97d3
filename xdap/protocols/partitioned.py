"""The ``__partitioned__`` protocol (draft spec, seed 004): export and import.

Export (``a.__partitioned__``) describes a DistArray as a grid of
rectangular tiles:

- ``shape``: the global shape; ragged arrays (``var * var * T``) are a 1-d
  array of rows: ``(nrows,)``.
- ``partition_tiling``: tiles per dimension. A block dimension has one tile
  per grid rank (irregular and empty blocks included; padded blocks: the
  OWNED range, communication padding is left out). A cyclic / block-cyclic
  dimension of size n, block size b over g grid ranks has
  ``g * ceil(n / (g * b))`` tiles (at least g) of b elements, the last
  partial ones and trailing ones empty, tile i held by grid rank ``i % g``:
  every rank holds the same number of tiles, all listed in ``locals``.
  Unstructured dimensions cannot be tiled: ValueError (redistribute first).
- ``partitions``: ``{position: {"start", "shape", "data", "location",
  "rank"}}`` for EVERY grid position. ``data`` is None for other ranks'
  tiles; for this rank's tiles it is a zero-copy view of ``a.local``:

  ==================  ======================================================
  local type          ``data``
  ==================  ======================================================
  ``N * M * T``       a NumPy view (strided where the tile is not the whole
                      local block)
  ``N * M * ?T``      a NumPy masked array: ``.data`` is a view of the
                      values, ``.mask`` is computed from the validity bitmap
                      (True = missing; writing to it does not reach xdap)
  ``var * var * T``   a pyarrow ``ListArray`` slice over the rows (values,
                      offsets and validity bitmap shared, see
                      ``xdap.protocols.arrow``)
  ==================  ======================================================

  ``location`` is ``[(ip, pid)]`` of the process holding the tile, per the
  spec: ``ip`` is ``socket.gethostbyname(socket.gethostname())`` (the host
  name itself if that fails), ``pid`` is ``os.getpid()``. ``rank`` (an xdap
  extension, ignored by other consumers) is the holder's rank in ``a.comm``.
- ``locals``: this rank's tile positions (C order).
- ``get``: a picklable ``PartitionGetter``; local data are their own handles,
  so it returns a handle as is and a list of handles as a list.
- ``type`` (extension): the global ndtypes type string.

The first export over a communicator gathers every process's ``(ip, pid)``
(one allgather, cached on the communicator as an MPI attribute): make the
first ``__partitioned__`` access on all ranks. Later exports make no
communication. The whole dict pickles with the standard ``pickle`` (the
data then travel by value).

Import: ``from_partitioned(obj_or_dict, comm=None)``, see its docstring.

>>> import numpy as np, pickle, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(12.0).reshape(4, 3), dist=("c",), block_size=(2,),
...                      comm=MPI.COMM_SELF)
>>> p = a.__partitioned__
>>> p["shape"], p["partition_tiling"], p["locals"]
((4, 3), (2, 1), [(0, 0), (1, 0)])
>>> p["partitions"][(1, 0)]["start"], p["get"](p["partitions"][(1, 0)]["data"]).tolist()
((2, 0), [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]])
>>> b = xdap.from_partitioned(pickle.loads(pickle.dumps(p)), comm=MPI.COMM_SELF)
>>> b.to_global().value == a.to_global().value
True
"""
from __future__ import annotations

import hashlib
import itertools
import math
import os
import socket
from dataclasses import dataclass

import numpy as np

from .. import comm as _comm
from ..containers import Parts, concat_parts, container, pack_validity, parts
from ..maps import BlockMap, CyclicMap, UnstructuredMap, _is_int
from ..types import DTYPES, TypeInfo, dtype_from_numpy, type_info

__all__ = ["export", "from_partitioned", "PartitionGetter", "process_locations",
           "plan_layout", "Layout"]


# ---------------------------------------------------------------------------
# where processes are
# ---------------------------------------------------------------------------

_KEYVAL = None


def _this_process() -> tuple:
    host = socket.gethostname()
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        ip = host
    return ip, os.getpid()


def process_locations(comm) -> list:
    """``[(ip, pid)]`` of every rank of ``comm`` (collective on the first call
    for a communicator, then cached on it as an MPI attribute)."""
    global _KEYVAL
    if _KEYVAL is None:
        _KEYVAL = _comm.MPI.Comm.Create_keyval()
    table = comm.Get_attr(_KEYVAL)
    if table is None:
        table = [tuple(x) for x in comm.allgather(_this_process())]
        comm.Set_attr(_KEYVAL, table)
    return table


class PartitionGetter:
    """The ``get`` of xdap's exports: local data are their own handles.

    A module-level class, so the export pickles (a lambda would not).
    Returns a handle as is, and a list (or tuple) of handles as a list.

    >>> PartitionGetter()([1, None])
    [1, None]
    """

    def __call__(self, handles):
        if isinstance(handles, (list, tuple)):
            return list(handles)
        return handles

    def __eq__(self, other):
        return isinstance(other, PartitionGetter)

    __hash__ = object.__hash__

    def __repr__(self):
        return "PartitionGetter()"


# ---------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------

@dataclass
class _DimTiles:
    """The tiles of one dimension, in global order."""
    start: np.ndarray       # global start of each tile
    size: np.ndarray        # elements in each tile
    coord: np.ndarray       # grid coordinate holding it
    local: np.ndarray       # its start in that rank's local buffer


def dim_tiles(m, k: int) -> _DimTiles:
    """How dimension ``k`` with map ``m`` is cut into tiles (pure)."""
    if isinstance(m, BlockMap):
        g = m.grid_size
        b = np.asarray(m.bounds, np.int64)
        local = np.array([m.owned_local_slice(p).start for p in range(g)], np.int64)
        return _DimTiles(b[:-1], np.diff(b), np.arange(g), local)
    if isinstance(m, CyclicMap):
        g, bs, n = m.grid_size, m.block_size, m.size
        count = g * max(1, -(-n // (g * bs)))
        i = np.arange(count, dtype=np.int64)
        start = np.minimum(i * bs, n)
        size = np.minimum(start + bs, n) - start
        return _DimTiles(start, size, i % g, (i // g) * bs)
    raise ValueError(f"dimension {k} is unstructured ({m!r}): __partitioned__ describes "
                     "rectangular tiles only; redistribute first, e.g. "
                     "a.redistribute(dist=('b',)) (block) or dist=('c',), block_size=(b,)")


def export(a) -> dict:
    """The ``__partitioned__`` dict of a DistArray (see the module docstring).
    Zero-copy; collective only on the first export over a communicator."""
    d = a.distribution
    dims = [dim_tiles(m, k) for k, m in enumerate(d.maps)]
    tiling = tuple(len(t.start) for t in dims)
    where = process_locations(d.comm)
    ranks = np.empty(d.grid, np.int64)
    for r in range(d.comm.size):
        ranks[d.coords_of(r)] = r
    me = d.comm.rank
    p = a._parts
    if a.info.kind == "ragged":
        from .arrow import to_arrow
        rows, view = to_arrow(p), None
    else:
        view = p.values
        mask = p.valid_mask()
        if mask is not None:
            view = np.ma.MaskedArray(p.values, mask=~mask, copy=False)
    partitions, mine = {}, []
    for pos in np.ndindex(*tiling):
        r = int(ranks[tuple(int(t.coord[i]) for t, i in zip(dims, pos))])
        start = tuple(int(t.start[i]) for t, i in zip(dims, pos))
        shape = tuple(int(t.size[i]) for t, i in zip(dims, pos))
        data = None
        if r == me:
            mine.append(pos)
            lo = [int(t.local[i]) for t, i in zip(dims, pos)]
            if view is None:
                data = rows.slice(lo[0], shape[0])
            else:
                data = view[tuple(slice(s, s + n) for s, n in zip(lo, shape))]
        partitions[pos] = {"start": start, "shape": shape, "data": data,
                           "location": [where[r]], "rank": r}
    return {"shape": tuple(d.global_shape), "partition_tiling": tiling,
            "partitions": partitions, "locals": mine, "get": PartitionGetter(),
            "type": str(a.type)}


# ---------------------------------------------------------------------------
# import: reading one rank's dict
# ---------------------------------------------------------------------------

def _int_tuple(v, what: str, ndim: int | None = None, allow_none: bool = False) -> tuple:
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        raise TypeError(f"{what} must be a tuple of ints, got {v!r}")
    v = tuple(v)
    for x in v:
        if not (_is_int(x) or (allow_none and x is None)):
            raise TypeError(f"{what} must be a tuple of ints, got {v!r}")
    if ndim is not None and len(v) != ndim:
        raise ValueError(f"{what} has {len(v)} entries but the array has {ndim} dimension(s): {v!r}")
    return tuple(None if x is None else int(x) for x in v)


@dataclass
class _Geometry:
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


def geometry(d: dict) -> _Geometry:
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
    shape = _int_tuple(d["shape"], "'shape'", allow_none=True)
    # ragged producers may say (N, None): only the leading sized dims are tiled
    nd = next((i for i, s in enumerate(shape) if s is None), len(shape))
    if any(s is not None for s in shape[nd:]):
        raise ValueError(f"'shape' {shape!r}: only trailing dimensions may be None (ragged)")
    if nd == 0:
        raise ValueError(f"'shape' {shape!r} has no sized dimension to partition")
    tiling = _int_tuple(d["partition_tiling"], "'partition_tiling'", len(shape))
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
        pos = _int_tuple(key, f"partition key {key!r}", len(shape))
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
        starts[i] = _int_tuple(e["start"], f"'start' of partition {pos!r}", len(shape),
                               allow_none=True)[:nd] if _all_set(e["start"], nd) else _bad(pos, "start", e)
        sizes[i] = _int_tuple(e["shape"], f"'shape' of partition {pos!r}", len(shape),
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
    return _Geometry(tshape, tiling, positions, [keys[p] for p in positions], bounds,
                     h.hexdigest())


def _all_set(v, nd):
    return isinstance(v, (list, tuple)) and all(x is not None for x in tuple(v)[:nd])


def _bad(pos, what, e):
    raise TypeError(f"'{what}' of partition {pos!r} must be a tuple of ints, got {e[what]!r}")


# ---------------------------------------------------------------------------
# import: which tiles this rank takes, and their data
# ---------------------------------------------------------------------------

def _is_array_data(obj) -> bool:
    """In-memory array data (as opposed to a handle such as a Ray ObjectRef)."""
    return obj is not None and (isinstance(obj, np.ndarray) or hasattr(obj, "__array__")
                                or hasattr(obj, "__array_interface__")
                                or type(obj).__module__.split(".")[0] in ("xnd", "pyarrow", "awkward"))


def _owner_from_location(loc, table: dict, nprocs: int):
    """The rank a ``location`` names: an int (heat's ``[rank]``) or an
    ``(ip, pid[, device])`` tuple of a process of the communicator."""
    if not isinstance(loc, (list, tuple)):
        return None
    for x in loc:
        if _is_int(x) and 0 <= int(x) < nprocs:
            return int(x)
        if isinstance(x, (list, tuple)) and len(x) >= 2:
            r = table.get((x[0], x[1]))
            if r is not None:
                return r
    return None


def claimed_tiles(d: dict, g: _Geometry, table: list, nprocs: int, rank: int) -> list:
    """Indices (into ``g.positions``) of the tiles this rank supplies data for.

    With ``locals`` (SPMD producers): exactly those, each of which must have
    data, and no other tile may carry in-memory array data. Without: the
    tiles whose ``location`` names this process (an MPI rank, or the
    ``(ip, pid)`` of a rank of the communicator); if no location names any
    process of the communicator (Ray/Dask-style), the tiles are dealt out in
    C order, a contiguous run per rank.
    """
    index = {pos: i for i, pos in enumerate(g.positions)}
    parts_ = d["partitions"]
    if "locals" in d:
        loc = d["locals"]
        if isinstance(loc, (str, bytes)) or not hasattr(loc, "__iter__"):
            raise TypeError(f"'locals' must be a list of grid positions, got {loc!r}")
        mine = []
        for pos in loc:
            pos = _int_tuple(pos, f"'locals' entry {pos!r}")
            if pos not in index:
                raise ValueError(f"locals mismatch: 'locals' lists {pos!r}, which is not a "
                                 f"position of the grid {g.tiling!r}")
            if index[pos] in mine:
                raise ValueError(f"locals mismatch: 'locals' lists {pos!r} twice")
            if parts_[g.keys[index[pos]]].get("data") is None:
                raise ValueError(f"locals mismatch: 'locals' lists {pos!r} but its 'data' is None")
            mine.append(index[pos])
        listed = set(mine)
        for i, key in enumerate(g.keys):
            if i not in listed and _is_array_data(parts_[key].get("data")):
                raise ValueError(f"locals mismatch: partition {g.positions[i]!r} holds array data "
                                 "on this rank but is not in 'locals'")
        return sorted(mine)
    where = {tuple(t): r for r, t in enumerate(table)}
    owners = [_owner_from_location(parts_[key].get("location"), where, nprocs) for key in g.keys]
    if all(o is None for o in owners):
        n = g.ntiles
        return [i for i in range(n) if i * nprocs // n == rank]
    if any(o is None for o in owners):
        i = owners.index(None)
        raise ValueError(f"the location {parts_[g.keys[i]].get('location')!r} of partition "
                         f"{g.positions[i]!r} names no process of the communicator (no 'locals' "
                         "given, so locations decide who holds what)")
    return [i for i, o in enumerate(owners) if o == rank]


def _resolve(get, handles: list, what: list) -> list:
    """``get`` applied to handles: one call with the list if it answers with
    a list of the same length, else one call per handle (heat passes single
    handles; Ray and Dask accept lists)."""
    if not handles:
        return []
    if len(handles) > 1:
        try:
            out = get(list(handles))
            if isinstance(out, (list, tuple)) and len(out) == len(handles):
                return list(out)
        except Exception:       # a getter that only takes single handles
            pass
    out = []
    for h, pos in zip(handles, what):
        try:
            out.append(get(h))
        except Exception as e:
            raise ValueError(f"'get' failed on the data of partition {pos!r}: "
                             f"{type(e).__name__}: {e}") from None
    return out


def as_parts(obj, pos) -> Parts:
    """One tile's data as flat Parts (zero-copy views where possible).

    Accepts NumPy arrays (masked arrays become ``?T``), xnd containers,
    pyarrow and awkward arrays, and anything NumPy can view: the buffer
    protocol, ``__array_interface__``, ``.numpy()`` (torch tensors on the
    CPU) or ``__array__``.
    """
    mod = type(obj).__module__.split(".")[0]
    if obj is None:
        raise ValueError(f"the data of partition {pos!r} resolved to None")
    if mod == "xnd":
        return parts(obj)
    if mod == "pyarrow":
        from .arrow import parts_from_arrow
        return parts_from_arrow(obj)
    if mod == "awkward":
        from .awkward import parts_from_awkward
        return parts_from_awkward(obj)
    if isinstance(obj, np.ma.MaskedArray):
        values = np.ma.getdata(obj)
        info = _fixed_info(values, pos, optional=True)
        return Parts(info, values, pack_validity(~np.ma.getmaskarray(obj)))
    if not isinstance(obj, np.ndarray):
        if hasattr(obj, "__array_interface__") or _has_buffer(obj):
            obj = np.asarray(obj)
        elif callable(getattr(obj, "numpy", None)):
            obj = np.asarray(obj.numpy())
        elif hasattr(obj, "__array__"):
            obj = np.asarray(obj)
        else:
            raise TypeError(f"the data of partition {pos!r} is a {type(obj).__name__}, which is "
                            "not an array xdap can read (NumPy, buffer protocol, .numpy(), "
                            "__array__, xnd, pyarrow, awkward); give a 'get' that resolves it")
    return Parts(_fixed_info(obj, pos), obj)


def _has_buffer(obj) -> bool:
    try:
        memoryview(obj)
        return True
    except TypeError:
        return False


def _fixed_info(values: np.ndarray, pos, optional: bool = False) -> TypeInfo:
    try:
        name = dtype_from_numpy(values.dtype)
    except TypeError as e:
        raise TypeError(f"partition {pos!r}: {e}") from None
    return TypeInfo("fixed", tuple(values.shape), 0, name, optional)


def _dtype_name(x):
    """A producer's extra 'dtype' key (numpy dtype, 'float32', torch.float32)
    as an ndtypes name, or None when it cannot be read."""
    try:
        return dtype_from_numpy(np.dtype(x))
    except Exception:
        name = str(x).rsplit(".", 1)[-1]
        return name if name in DTYPES else None


def _element_type(p: Parts) -> str:
    return p.info.type_string() if p.info.kind == "ragged" else "fixed " + p.info.leaf


def fetch_tiles(d: dict, g: _Geometry, mine: list) -> dict:
    """{tile index: Parts} of this rank's tiles, resolved through ``get``
    and checked against their tile's shape, the 'dtype' key and each other."""
    get = d.get("get", PartitionGetter())
    if not callable(get):
        raise TypeError(f"'get' must be callable, got {type(get).__name__}")
    entries = [d["partitions"][g.keys[i]] for i in mine]
    objs = _resolve(get, [e.get("data") for e in entries], [g.positions[i] for i in mine])
    out, first = {}, None
    for i, e, obj in zip(mine, entries, objs):
        pos = g.positions[i]
        p = as_parts(obj, pos)
        size = g.size(i)
        if p.info.kind == "fixed":
            if tuple(p.values.shape) != size:
                raise ValueError(f"partition {pos!r}: its data has shape {tuple(p.values.shape)} "
                                 f"but the partition's 'shape' is {size}")
        elif len(size) != 1 or p.nrows != size[0]:
            raise ValueError(f"partition {pos!r}: ragged data with {p.nrows} rows, but the "
                             f"partition's 'shape' is {size} (ragged arrays are tiled by rows only)")
        if "dtype" in e:
            named = _dtype_name(e["dtype"])
            if named is not None and named != p.info.dtype:
                raise TypeError(f"dtype mismatch: partition {pos!r} says 'dtype' {e['dtype']!r} "
                                f"but its data holds {p.info.dtype}")
        kind = _element_type(p)
        if first is None:
            first = (pos, kind)
        elif kind != first[1]:
            raise TypeError(f"dtype mismatch: partition {first[0]!r} holds {first[1]!r} but "
                            f"partition {pos!r} holds {kind!r}")
        out[i] = p
    return out


# ---------------------------------------------------------------------------
# import: the distribution (planning, pure) and the local container
# ---------------------------------------------------------------------------

@dataclass
class Layout:
    """How imported tiles become a Distribution (pure data).

    maps         one map per tiled dimension
    rank_coords  (nprocs, ndim) grid coordinates of each rank
    members      per dim, per grid coordinate: the tile indices along that
                 dim it holds, in local order
    """
    maps: list
    rank_coords: np.ndarray
    members: list


def plan_layout(bounds, owners, nprocs: int) -> Layout:
    """Choose the distribution for tiles with the given boundaries (per dim)
    and owner rank of each tile (C order of the tile grid). Pure.

    The owners must factor into a Cartesian process grid: the owner of tile
    ``(i, j, ...)`` is the rank at grid coordinates ``(f0(i), f1(j), ...)``.
    Per dimension the map is then a block (one tile per grid coordinate,
    irregular sizes allowed), a block-cyclic map (regular tiles dealt out
    round robin) or, for any other assignment, an unstructured map (each
    grid coordinate's tiles concatenated in global order). Ranks holding
    no tile get empty blocks when the grid is 1-d.

    >>> lay = plan_layout([np.array([0, 2, 4, 6, 7])], np.array([0, 1, 0, 1]), 2)
    >>> lay.maps[0]
    CyclicMap(size=7, grid_size=2, block_size=2)
    >>> plan_layout([np.array([0, 3, 5])], np.array([1, 0]), 2).rank_coords.tolist()
    [[1], [0]]
    """
    tiling = tuple(len(b) - 1 for b in bounds)
    nd = len(tiling)
    own = np.asarray(owners, np.int64).reshape(tiling)
    f = []
    for k in range(nd):
        line = own[tuple(slice(None) if j == k else 0 for j in range(nd))]
        _, first, inverse = np.unique(line, return_index=True, return_inverse=True)
        order = np.argsort(np.argsort(first))           # class number by first appearance
        f.append(order[inverse.reshape(-1)])
    grid = [int(fk.max()) + 1 for fk in f]
    coords = np.stack(np.meshgrid(*f, indexing="ij"), axis=-1).reshape(-1, nd)
    table = np.full(grid, -1, np.int64)
    table[tuple(coords.T)] = own.reshape(-1)
    if not (table[tuple(coords.T)] == own.reshape(-1)).all() or \
            len(np.unique(table)) != table.size:
        raise ValueError("the partitions' owners do not form a Cartesian process grid (the "
                         "holder of tile (i, j, ...) must be decided by i, j, ... separately); "
                         "xdap cannot represent this layout without moving data")
    idle = np.setdiff1d(np.arange(nprocs), table.reshape(-1))
    extra = len(idle)
    if extra and any(gk != 1 for gk in grid[1:]):
        raise ValueError(f"{extra} rank(s) hold no partition and the partitions' process grid "
                         f"{tuple(grid)} is not 1-d, so they have no place in it")
    if extra:
        table = np.concatenate([table, idle.reshape((extra,) + (1,) * (nd - 1))], axis=0)
    rank_coords = np.zeros((nprocs, nd), np.int64)
    for c in np.ndindex(*table.shape):
        rank_coords[table[c]] = c
    maps, members = [], []
    for k in range(nd):
        b = np.asarray(bounds[k], np.int64)
        size, g = int(b[-1]), grid[k]
        mem = [np.flatnonzero(f[k] == c) for c in range(g)] + \
              ([np.zeros(0, np.int64)] * extra if k == 0 else [])
        members.append(mem)
        gk = g + (extra if k == 0 else 0)
        if all(len(m) == 1 for m in mem[:g]):            # first-appearance order: identity
            bb = np.concatenate([b, np.full(extra if k == 0 else 0, size)])
            maps.append(BlockMap(size, gk, bounds=bb.tolist()))
            continue
        ranges = [np.concatenate([np.arange(b[i], b[i + 1]) for i in m]) if len(m)
                  else np.zeros(0, np.int64) for m in mem]
        cyc = _cyclic_candidate(b, g) if not (k == 0 and extra) else None
        if cyc is not None and all(np.array_equal(cyc.global_indices(c), ranges[c]) for c in range(g)):
            maps.append(cyc)
        else:
            maps.append(UnstructuredMap(size, ranges, one_to_one=True))
    return Layout(maps, rank_coords, members)


def _cyclic_candidate(b: np.ndarray, g: int):
    sizes = np.diff(b)
    bs = int(sizes[0]) if len(sizes) and sizes[0] > 0 else 1
    return CyclicMap(int(b[-1]), g, bs)


def assemble(layout: Layout, rank: int, bounds, tiling, tiles: dict, element: str):
    """This rank's local container from its tiles (pure: no MPI).

    One tile that is the whole local block: zero-copy (a C-contiguous tile;
    otherwise one copy). Several tiles: copied once into a new buffer.
    """
    c = layout.rank_coords[rank]
    nd = len(tiling)
    mem = [layout.members[k][c[k]] for k in range(nd)]
    want = [int(np.ravel_multi_index(idx, tiling)) for idx in
            (tuple(int(x) for x in t) for t in itertools.product(*mem))]
    missing = [i for i in want if i not in tiles]
    if missing:       # cannot happen when the owners came from the plan
        raise ValueError(f"internal: rank {rank} lacks tiles {missing[:5]}")
    sizes = [np.diff(np.asarray(bounds[k]))[mem[k]] for k in range(nd)]
    local_shape = tuple(int(s.sum()) for s in sizes)
    ragged = not element.startswith("fixed ")
    if len(want) == 1:
        return container(tiles[want[0]])
    if ragged:
        info = type_info(element)
        if not want:
            return container(Parts(info, np.zeros(0, info.numpy_dtype),
                                   np.zeros(0, np.uint8) if info.optional else None,
                                   (np.zeros(2, np.int32),) + (np.zeros(1, np.int32),) * (info.var_ndim - 1)))
        return container(concat_parts([tiles[i] for i in want]))
    leaf = element.split(" ", 1)[1]
    optional = leaf.startswith("?")
    dt = DTYPES[leaf.lstrip("?")][0]
    out = np.empty(local_shape, dt)
    mask = np.ones(local_shape, bool) if optional else None
    offs = [np.concatenate([[0], np.cumsum(s)]) for s in sizes]
    for j, idx in enumerate(itertools.product(*[range(len(m)) for m in mem])):
        p = tiles[want[j]]
        sl = tuple(slice(int(o[i]), int(o[i + 1])) for o, i in zip(offs, idx))
        out[sl] = p.values
        if optional:
            mask[sl] = p.valid_mask()
    info = TypeInfo("fixed", local_shape, 0, leaf.lstrip("?"), optional)
    return container(Parts(info, out, pack_validity(mask) if optional else None))


# ---------------------------------------------------------------------------
# import: the collective entry point
# ---------------------------------------------------------------------------

def from_partitioned(obj, comm=None):
    """Import a ``__partitioned__`` export as a DistArray (collective).

    ``obj`` is an object with ``__partitioned__`` (a property, or a method)
    or the dict itself, given on every rank of ``comm`` (default
    ``MPI.COMM_WORLD``). Accepted forms:

    - the draft spec: ``location`` ``[(ip, pid[, device])]``, ``locals``;
    - heat: ``location`` ``[rank]``, extra ``dtype`` / ``device`` keys (the
      ``dtype`` is checked against the data; a non-CPU device is refused);
      a ``get`` that takes single handles;
    - Ray/Dask style: handles in ``data`` resolved through ``get`` (called
      with the list of this rank's handles when it accepts lists, else once
      per handle), with or without ``locals``.

    Data objects may be NumPy arrays (masked arrays -> ``?T``), torch-like
    tensors (``.numpy()``, ``__array__``, buffer protocol), xnd containers,
    pyarrow or awkward arrays (ragged rows).

    Validated on every rank and agreed collectively (every rank raises the
    same ValueError/TypeError): required keys and types; the tiles form the
    grid ``partition_tiling`` and cover ``shape`` without overlap or gap;
    ``locals`` agree with which data are present; each tile's data has the
    tile's shape and a supported dtype, the same on all tiles and ranks and
    equal to a ``dtype`` key; all ranks describe the same tiles; every tile
    is held by some rank.

    Who holds what: ``locals`` if given, else ``location`` (MPI ranks or
    ``(ip, pid)`` of this communicator's processes), else the tiles are
    dealt out in C order. A tile held by several ranks is taken from the
    lowest. The result is block distributed along each dimension where
    each grid coordinate holds one tile, block-cyclic where tiles are
    regular and dealt round robin, unstructured otherwise (see
    ``plan_layout``); ranks holding no tile get empty blocks (1-d grids).

    Zero-copy when a rank holds one C-contiguous tile; several tiles per
    rank (block-cyclic) are copied once into the local buffer.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> d = {"shape": (4,), "partition_tiling": (1,), "partitions": {
    ...      (0,): {"start": (0,), "shape": (4,), "data": np.arange(4.0), "location": [0]}},
    ...      "locals": [(0,)], "get": lambda x: x}
    >>> xdap.from_partitioned(d, comm=MPI.COMM_SELF).to_global().value
    [0.0, 1.0, 2.0, 3.0]
    """
    from ..array import DistArray
    from ..distribution import Distribution
    comm = _comm.resolve(comm)
    table = process_locations(comm)
    g, tiles = None, {}
    with _comm.collective_checks(comm):
        d = obj
        if not isinstance(d, dict) and hasattr(obj, "__partitioned__"):
            d = obj.__partitioned__
            if callable(d) and not isinstance(d, dict):
                d = d()
        g = geometry(d)
        mine = claimed_tiles(d, g, table, comm.size, comm.rank)
        tiles = fetch_tiles(d, g, mine)
    kinds = {_element_type(p) for p in tiles.values()}
    summary = (g.digest, g.shape, g.tiling, np.array(sorted(tiles), np.int64),
               kinds.pop() if kinds else None)
    summaries = comm.allgather(summary)
    local = layout = None
    with _comm.collective_checks(comm):
        layout, element = _agree(summaries, g, comm.size)
        owners = _owners(summaries, g.ntiles)
        kept = {i: p for i, p in tiles.items() if owners[i] == comm.rank}
        local = assemble(layout, comm.rank, g.bounds, g.tiling, kept, element)
    return DistArray(Distribution(layout.maps, comm, rank_coords=layout.rank_coords), local)


def _agree(summaries, g: _Geometry, nprocs: int):
    """Cross-rank checks on the gathered summaries, then the plan (pure)."""
    digest, shape, tiling = summaries[0][:3]
    for r, s in enumerate(summaries):
        if s[:3] != (digest, shape, tiling):
            raise ValueError(f"ranks describe different partitionings: rank 0 has shape {shape} "
                             f"tiling {tiling}, rank {r} has shape {s[1]} tiling {s[2]}"
                             + (" (and different tiles)" if s[1:3] == (shape, tiling) else ""))
    kinds = [(r, s[4]) for r, s in enumerate(summaries) if s[4] is not None]
    for r, k in kinds:
        if k != kinds[0][1]:
            raise TypeError(f"dtype mismatch: rank {kinds[0][0]} holds {kinds[0][1]!r} but rank "
                            f"{r} holds {k!r}")
    owners = _owners(summaries, g.ntiles)
    missing = np.flatnonzero(owners < 0)
    if missing.size:
        raise ValueError(f"partition {g.positions[int(missing[0])]!r} is held by no rank (in no "
                         "rank's 'locals', or its 'data' is missing everywhere)")
    if not kinds[0][1].startswith("fixed ") and len(g.tiling) != 1:
        raise ValueError(f"ragged data are tiled by rows only, but 'partition_tiling' is {g.tiling}")
    return plan_layout(g.bounds, owners, nprocs), kinds[0][1]


def _owners(summaries, ntiles: int) -> np.ndarray:
    """Owner of each tile: the lowest rank holding it (-1: nobody)."""
    owners = np.full(ntiles, -1, np.int64)
    for r in reversed(range(len(summaries))):
        owners[summaries[r][3]] = r
    return owners
