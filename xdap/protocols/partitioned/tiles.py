"""Which tiles of a ``__partitioned__`` dict this rank supplies, and their
data as Parts (zero-copy views where possible; no MPI).
"""
from __future__ import annotations

import numpy as np

from ...maps import is_int
from ...parts import Parts, parts
from ...bitmaps import pack_validity
from ...types import DTYPES, TypeInfo, dtype_from_numpy, type_info
from .export import PartitionGetter
from .geometry import Geometry, int_tuple

__all__ = ["claimed_tiles", "fetch_tiles", "as_parts", "element_type"]


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
        if is_int(x) and 0 <= int(x) < nprocs:
            return int(x)
        if isinstance(x, (list, tuple)) and len(x) >= 2:
            r = table.get((x[0], x[1]))
            if r is not None:
                return r
    return None


def claimed_tiles(d: dict, g: Geometry, table: list, nprocs: int, rank: int) -> list:
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
            pos = int_tuple(pos, f"'locals' entry {pos!r}")
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


def _declared_element(text):
    """The element type of the producer's extension key ``type`` (xdap
    writes it), or None: it names what the tiles' bytes hold when NumPy or
    Arrow cannot (a categorical's int64 codes, a fixed_string's bytes)."""
    if not isinstance(text, str):
        return None
    try:
        return type_info(text).leaf
    except TypeError:
        return None


def _as_declared(p: Parts, element) -> Parts:
    """``p`` typed as the declared element when its bytes are that element's."""
    if element is None or p.info.leaf == element:
        return p
    want = p.info.with_leaf(element)
    if want.optional == p.info.optional and want.numpy_dtype == p.info.numpy_dtype:
        return Parts(want, p.values, p.validity, p.offsets)
    return p


def as_parts(obj, pos, element=None) -> Parts:
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
        from ..arrow import parts_from_arrow
        return parts_from_arrow(obj, element)
    if mod == "awkward":
        from ..awkward import parts_from_awkward
        return parts_from_awkward(obj)
    if isinstance(obj, np.ma.MaskedArray):
        values = np.ma.getdata(obj)
        info = _fixed_info(values, pos, optional=True)
        # a record is missing when all its fields are (numpy masks per field)
        mask = obj.recordmask if values.dtype.names else np.ma.getmaskarray(obj)
        return Parts(info, values, pack_validity(~mask))
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
    return TypeInfo.fixed(values.shape, name, optional)


def _dtype_name(x):
    """A producer's extra 'dtype' key (numpy dtype, 'float32', torch.float32)
    as an ndtypes name, or None when it cannot be read."""
    try:
        return dtype_from_numpy(np.dtype(x))
    except Exception:
        name = str(x).rsplit(".", 1)[-1]
        return name if name in DTYPES else None


def element_type(p: Parts) -> str:
    return p.info.type_string() if p.info.ragged else "fixed " + p.info.leaf


def fetch_tiles(d: dict, g: Geometry, mine: list) -> dict:
    """{tile index: Parts} of this rank's tiles, resolved through ``get``
    and checked against their tile's shape, the 'dtype' key and each other."""
    get = d.get("get", PartitionGetter())
    if not callable(get):
        raise TypeError(f"'get' must be callable, got {type(get).__name__}")
    entries = [d["partitions"][g.keys[i]] for i in mine]
    objs = _resolve(get, [e.get("data") for e in entries], [g.positions[i] for i in mine])
    element = _declared_element(d.get("type"))
    out, first = {}, None
    for i, e, obj in zip(mine, entries, objs):
        pos = g.positions[i]
        p = _as_declared(as_parts(obj, pos, element), element)
        size = g.size(i)
        if not p.info.ragged:
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
        kind = element_type(p)
        if first is None:
            first = (pos, kind)
        elif kind != first[1]:
            raise TypeError(f"dtype mismatch: partition {first[0]!r} holds {first[1]!r} but "
                            f"partition {pos!r} holds {kind!r}")
        out[i] = p
    return out
