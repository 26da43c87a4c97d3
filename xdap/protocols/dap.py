"""The Distributed Array Protocol: export (0.10.0) and import (0.9.0, 0.10.0).

Fixed, non-optional partitions are plain DAP: ``buffer`` is a zero-copy
NumPy view of the local xnd container (native PEP-3118 format, so both
``memoryview`` and NumPy read it) and ``dim_data`` has one dict per dim.

Ragged and optional partitions export a valid DAP dict too, so a consumer
that knows only the spec reads correct values at correct global positions,
plus an ``"xnd"`` entry from which xdap (or an Arrow consumer) rebuilds the
exact typed container without copying values:

- ``?T`` with fixed dims: ``buffer``/``dim_data`` as usual (missing slots
  hold unspecified values); ``xnd = {"type", "validity"}``. Elements whose
  buffer format does not say their ndtypes type -- a categorical (int64
  codes), a tuple (a struct with fields f0, f1, ...), a utf8
  ``fixed_string`` (bytes, ``'5s'``) -- carry ``xnd = {"type", "validity":
  None}`` too.

Records are NumPy's aligned struct formats (``'T{(3)d:pos:l:id:}'``), fixed
bytes ``'8s'``, complex ``'Zd'``: NumPy reads each buffer without copying.
- ragged ``var * ... * T``: the flat leaves of all rows form a 1-d global
  index space. ``buffer`` is this rank's leaves; ``dim_data`` has one dict
  over that space -- a block (``'b'``) when rows are block distributed over
  a 1-d grid without padding, else unstructured (``'u'``, explicit global
  leaf indices). ``xnd = {"type", "validity", "offsets", "dim_data"}``,
  where ``offsets`` are this rank's int32 Arrow offsets (outermost first,
  the first being ``[0, nrows]``) and ``dim_data`` the rows' distribution.

``validity`` is an LSB-first bitmap, 1 = valid (Arrow's), or None.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> dist, p = from_global(np.arange(6.0), comm=MPI.COMM_SELF)
>>> d = export(dist, p)
>>> d["__version__"], d["dim_data"][0]["dist_type"], np.shares_memory(d["buffer"], p.values)
('0.10.0', 'b', True)
>>> dist2, p2 = import_dap(d, comm=MPI.COMM_SELF)
>>> dist2 == dist, np.shares_memory(p2.values, p.values)
(True, True)
"""
from __future__ import annotations

import math

import numpy as np

from ..heap import trims_heap
from .. import _xndbuf
from .. import comm as _comm
from ..agreement import agreement
from ..distribution import Distribution
from ..directory import remember, unstructured_map
from ..maps import MAP_KINDS, index_digest, is_int
from ..maps.base import common_flag
from ..parts import Parts, parts_of
from ..types import TypeInfo, dtype_from_format, numpy_dtype, type_info
from .dap_dims import check_dim_dicts, undistributed

__all__ = ["export", "import_dap", "VERSION"]

VERSION = "0.10.0"
EXTENSION = "xnd"


def export(d: Distribution, p: Parts, version: str = VERSION, leaf_index=None) -> dict:
    """The DAP dict of this rank's partition (no communication, no copy).

    ``version`` "0.10.0" (default) or "0.9.0": the older dialect writes
    undistributed dims as ``'n'`` and padded blocks' start/stop without the
    communication padding.  ``leaf_index`` (ragged data only) is where this
    rank's leaves sit in the global leaf space, ``(start, total)`` or
    ``(indices, total)``, as the DistArray constructor agreed it.
    """
    if version not in ("0.9.0", VERSION):
        raise ValueError(f"can export DAP 0.10.0 or 0.9.0, not {version!r}")
    if not p.info.ragged:
        dim_data = d.dim_data(version)
        if version == "0.9.0":          # 0.9.0 spells an undistributed dimension 'n'
            dim_data = tuple({"dist_type": "n", "size": m.size} if m.spec == "n" else dd
                             for m, dd in zip(d.maps, dim_data))
        out = {"__version__": version, "buffer": p.values, "dim_data": dim_data}
        if p.info.optional or not p.info.numpy_says_it:
            out[EXTENSION] = {"type": p.info.with_shape(p.values.shape).type_string(),
                              "validity": p.validity}
        return out
    if version != VERSION:
        raise ValueError("ragged arrays export DAP 0.10.0 only (0.9.0 has no way to say it)")
    where, total = leaf_index
    common = {"size": total, "proc_grid_size": d.grid[0], "proc_grid_rank": d.coords[0]}
    if isinstance(where, int):
        leaves = {"dist_type": "b", **common, "start": where, "stop": where + len(p.values),
                  "padding": (0, 0)}
    else:
        leaves = {"dist_type": "u", **common, "indices": where,
                  "one_to_one": _rows_one_to_one(d)}
    return {"__version__": VERSION, "buffer": p.values, "dim_data": (leaves,),
            EXTENSION: {"type": p.info.type_string(), "validity": p.validity,
                        "offsets": p.offsets, "dim_data": d.dim_data()}}


def _rows_one_to_one(d: Distribution) -> bool:
    """Whether every row (hence every leaf) is held by exactly one rank."""
    return not d.maps[0].has_copies


# -- import ------------------------------------------------------------------

_REQUIRED = {"__version__", "buffer", "dim_data"}


class _Local:
    """One rank's parsed DAP dict: what it says, before comparing with others."""

    def __init__(self, d):
        if not isinstance(d, dict):
            raise TypeError(f"a DAP export must be a dict (or have __distarray__), got {type(d).__name__}")
        missing = _REQUIRED - set(d)
        if missing:
            raise ValueError(f"DAP dict is missing required key(s) {sorted(missing)}")
        self.version = _parse_version(d["__version__"])
        dim_data = d["dim_data"]
        if not isinstance(dim_data, (tuple, list)) or not all(isinstance(x, dict) for x in dim_data):
            raise TypeError(f"'dim_data' must be a tuple of dicts, got {dim_data!r:.100}")
        self.dim_data = [dict(x) for x in dim_data]
        try:
            self.buffer = memoryview(d["buffer"])
        except TypeError:
            raise TypeError(f"'buffer' must support the PEP-3118 buffer protocol, got "
                            f"{type(d['buffer']).__name__}") from None
        if self.buffer.ndim != len(self.dim_data):
            raise ValueError(f"buffer has {self.buffer.ndim} dimension(s) but dim_data has "
                             f"{len(self.dim_data)} dict(s) (they must match)")
        self.ext = d.get(EXTENSION)
        declared = isinstance(self.ext, dict) and isinstance(self.ext.get("type"), str)
        try:
            self.dtype = dtype_from_format(self.buffer.format, self.buffer.itemsize, self.buffer)
        except TypeError:
            if not declared:
                raise
            self.dtype = None          # the declared type says what the bytes are
        for k, dd in enumerate(self.dim_data):
            if "indices" in dd:
                dd["indices"] = _index_array(dd["indices"], k, self.buffer.shape[k])
        self.rows = None
        if self.ext is not None:
            self._parse_extension()

    def _parse_extension(self):
        ext = self.ext
        if not isinstance(ext, dict) or "type" not in ext:
            raise TypeError(f"the '{EXTENSION}' entry must be a dict with a 'type', got {ext!r:.100}")
        self.info = type_info(ext["type"], scalar=self.buffer.ndim == 0)
        if self.info.numpy_dtype.itemsize != self.buffer.itemsize or (
                self.dtype is not None and self.info.numpy_dtype.names is None
                and self.info.numpy_dtype != numpy_dtype(self.dtype)):
            raise TypeError(f"'{EXTENSION}' type {ext['type']!r} has dtype {self.info.dtype} but the "
                            f"buffer holds {self.dtype or self.buffer.format}")
        # records: the declared type, not NumPy's reading of the struct format
        # (NumPy misplaces the fields after a nested struct with trailing padding)
        self.dtype = self.info.dtype
        self.validity = ext.get("validity")
        if self.info.optional and self.validity is None:
            raise ValueError(f"'{EXTENSION}' type {ext['type']!r} is optional but has no validity bitmap")
        if not self.info.ragged:
            if tuple(self.info.shape) != tuple(self.buffer.shape):
                raise ValueError(f"'{EXTENSION}' type {ext['type']!r} does not match the buffer "
                                 f"shape {tuple(self.buffer.shape)}")
            return
        if self.buffer.ndim != 1:
            raise ValueError("a ragged export's buffer must be 1-d (the flat leaves)")
        offsets = ext.get("offsets")
        if not isinstance(offsets, (tuple, list)) or len(offsets) != self.info.var_ndim:
            raise ValueError(f"'{EXTENSION}' offsets must be {self.info.var_ndim} int32 arrays, "
                             f"got {offsets!r:.100}")
        self.offsets = tuple(np.asarray(o) for o in offsets)
        for o in self.offsets:
            if o.dtype != np.int32 or o.ndim != 1 or len(o) < 1:
                raise TypeError(f"'{EXTENSION}' offsets must be 1-d int32 arrays, got {o.dtype} "
                                f"of shape {o.shape}")
        rows = ext.get("dim_data")
        if not isinstance(rows, (tuple, list)) or len(rows) != 1 or not isinstance(rows[0], dict):
            raise ValueError(f"'{EXTENSION}' dim_data must hold one dict (the rows), got {rows!r:.100}")
        self.rows = [dict(rows[0])]
        if "indices" in self.rows[0]:
            self.rows[0]["indices"] = _index_array(self.rows[0]["indices"], 0,
                                                   len(self.offsets[0]) and int(self.offsets[0][-1]))
        self.nrows = int(self.offsets[0][-1])

    def summary(self):
        """What the other ranks need to know to validate the whole picture:
        the dicts, with a rank's unstructured indices replaced by their
        count and digest (no rank ever receives another's indices)."""
        dims = self.rows if self.rows is not None else self.dim_data
        lengths = [self.nrows] if self.rows is not None else list(self.buffer.shape)
        return {"version": self.version, "dims": [_sketch(x) for x in dims], "lengths": lengths,
                "leaves": [_sketch(x) for x in self.dim_data] if self.rows is not None else None,
                "nleaves": self.buffer.shape[0] if self.rows is not None else None,
                "dtype": self.dtype,
                # the element type, not the local shape, must agree across ranks
                "type": None if self.ext is None else
                (self.info.type_string() if self.info.ragged else self.info.leaf)}

    def element(self):
        """A 0-d export's element (None: missing), to compare across ranks."""
        validity = b"" if self.ext is None or self.validity is None else \
            bytes(memoryview(self.validity))[:1]
        if validity and not validity[0] & 1:
            return None
        return np.asarray(self.buffer).tolist()

    def parts(self) -> Parts:
        """The local Parts over the buffer (zero-copy when C-contiguous)."""
        buf = self.buffer
        if not buf.c_contiguous:
            buf = np.ascontiguousarray(np.asarray(buf))     # copies: say so in the docs
        if self.ext is None:
            return Parts(TypeInfo.fixed(buf.shape, self.dtype), np.asarray(buf))
        validity = self.validity
        if validity is not None and memoryview(validity).readonly:
            # xnd writes its bitmap (kernels with out=, halos): a read-only
            # one (bytes) is copied rather than written behind its owner's back
            validity = np.frombuffer(validity, np.uint8).copy()
        if self.info.numpy_dtype.names is not None:
            buf = np.asarray(buf).view(self.info.numpy_dtype)
        if self.info.boxed:        # strings, optional fields: the container is made on demand
            return Parts(self.info, np.asarray(buf), None if validity is None else
                         np.asarray(memoryview(validity)).view(np.uint8),
                         self.offsets if self.info.ragged else ())
        if self.info.ragged:
            x = _xndbuf.from_buffers(self.info.leaf, self.offsets, buf, validity)
        else:
            x = _xndbuf.from_buffers(self.info.type_string(), None, buf, validity)
        return parts_of(x, self.info)


def _index_array(obj, k, length):
    try:
        a = np.asarray(memoryview(obj)) if not isinstance(obj, (list, tuple)) else np.asarray(obj)
    except TypeError:
        raise TypeError(f"'indices' of dimension {k} must be a buffer of integers, "
                        f"got {type(obj).__name__}") from None
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"'indices' of dimension {k} must be a 1-d integer buffer, got dtype "
                        f"{a.dtype} with {a.ndim} dims")
    if len(a) != length:
        raise ValueError(f"unstructured dimension {k}: len(indices) ({len(a)}) must equal the "
                         f"buffer length ({length})")
    return a.astype(np.int64, copy=False)


class _Indices:
    """A rank's unstructured indices as the other ranks see them: their
    count and digest (equal dicts compare equal)."""

    def __init__(self, a):
        self.n, self.digest = len(a), index_digest(a)

    def __eq__(self, other):
        return isinstance(other, _Indices) and (self.n, self.digest) == (other.n, other.digest)

    def __repr__(self):
        return f"<{self.n} indices>"


def _sketch(dd: dict) -> dict:
    return {k: _Indices(v) if k == "indices" else v for k, v in dd.items()}


def _parse_version(v):
    if not isinstance(v, str):
        raise TypeError(f"'__version__' must be a string 'major.minor.patch', got {v!r}")
    parts = v.split(".")
    if len(parts) != 3 or not all(x.isdigit() for x in parts):
        raise ValueError(f"'__version__' must look like 'major.minor.patch', got {v!r}")
    major, minor, _ = map(int, parts)
    if major != 0:
        raise ValueError(f"unsupported DAP major version {major} in {v!r}: xdap reads 0.x "
                         "(0.9.0 and 0.10.0 rules)")
    return "0.9.0" if minor <= 9 else "0.10.0"


@trims_heap
def import_dap(obj, comm=None) -> tuple:
    """Import a DAP 0.9.0 / 0.10.0 export: ``(Distribution, Parts)``
    (collective; zero-copy where the buffer is C-contiguous, a copy
    otherwise -- and a read-only validity bitmap, e.g. ``bytes``, is
    copied, as xnd writes its bitmaps; ``xdap.from_distarray`` wraps it).

    ``obj`` is an object with ``__distarray__()`` or the dict itself, on every
    rank of ``comm`` (default ``MPI.COMM_WORLD``). Every rule of the protocol
    is checked across ranks; a violation on any rank raises the same
    ValueError/TypeError on every rank, naming the rule, rank and value.
    """
    comm = _comm.resolve(comm)
    with agreement(comm, share=True) as ag:
        d = obj.__distarray__() if hasattr(obj, "__distarray__") else obj
        local = _Local(d)
        if not local.dim_data:
            # a 0-d array is one element that every rank holds: the same one
            ag.same("the element of a 0-d array (empty dim_data)", local.element())
        ag.share(local.summary())
    with agreement(comm):
        maps, coords, leaves = _distribution(ag.shared, comm)
        p = local.parts()
    # Unstructured dims become distributed maps, checked through the
    # directory (collective; after the agreement, so every rank is here).
    dims = local.rows if local.rows is not None else local.dim_data
    directories = {}
    for k, m in enumerate(maps):
        if isinstance(m, tuple):
            maps[k], directories[k] = _distributed(comm, coords, k, dims[k]["indices"], *m,
                                                   f"dimension {k}")
    if leaves is not None:        # a ragged export's leaf indices: checked, not kept
        _distributed(comm, coords, 0, local.dim_data[0]["indices"], *leaves,
                     "ragged export, leaf dimension")
    dist = Distribution(maps, comm, rank_coords=coords)
    for k, directory in directories.items():
        remember(dist, k, directory)
    return dist, p


def _distributed(comm, coords, k, indices, size, one, what):
    return unstructured_map(comm, int(coords[:, k].max()) + 1, int(coords[comm.rank, k]), indices,
                            size, one_to_one=True if one else None, what=what)


def _distribution(summaries, comm) -> tuple:
    """Validate the gathered dicts of all ranks: ``(maps, rank coordinates,
    leaves)``, where an unstructured dimension's map is ``(size,
    one_to_one)`` to be built collectively (as the leaves of a ragged
    export with unstructured leaves are)."""
    first = summaries[0]
    for r, s in enumerate(summaries):
        if s["version"] != first["version"]:
            raise ValueError(f"ranks export different DAP versions: rank 0 {first['version']}, "
                             f"rank {r} {s['version']}")
        if len(s["dims"]) != len(first["dims"]):
            raise ValueError(f"ranks export different numbers of dimensions: rank 0 "
                             f"{len(first['dims'])}, rank {r} {len(s['dims'])}")
        if s["dtype"] != first["dtype"] or s["type"] != first["type"]:
            raise TypeError(f"ranks export different element types: rank 0 "
                            f"{first['type'] or first['dtype']}, rank {r} {s['type'] or s['dtype']}")
    version = first["version"]
    coords, grid = _grid(summaries, comm.size, version)
    maps = [_dim_map(summaries, coords, grid, k, version) for k in range(len(grid))]
    leaves = _check_leaves(summaries, coords) if first["leaves"] is not None else None
    return maps, coords, leaves


def _grid_rank_and_size(dd, k, r, version):
    if undistributed(dd):
        return 0, 1
    for key in ("proc_grid_size", "proc_grid_rank"):
        if key not in dd:
            raise ValueError(f"dimension {k} on rank {r}: missing required key {key!r}")
        if not is_int(dd[key]):
            raise TypeError(f"dimension {k} on rank {r}: {key!r} must be an int, got {dd[key]!r}")
    size, rank = int(dd["proc_grid_size"]), int(dd["proc_grid_rank"])
    if size < 1:
        raise ValueError(f"dimension {k} on rank {r}: proc_grid_size must be >= 1, got {size}")
    if not 0 <= rank < size:
        raise ValueError(f"dimension {k} on rank {r}: proc_grid_rank must be in [0, {size}), got {rank}")
    return rank, size


def _grid(summaries, nprocs, version):
    ndim = len(summaries[0]["dims"])
    coords = np.zeros((nprocs, ndim), np.int64)
    grid = []
    for k in range(ndim):
        sizes = set()
        for r, s in enumerate(summaries):
            coords[r, k], g = _grid_rank_and_size(s["dims"][k], k, r, version)
            sizes.add(g)
        if len(sizes) != 1:
            raise ValueError(f"dimension {k}: ranks disagree on proc_grid_size ({sorted(sizes)})")
        grid.append(sizes.pop())
    if math.prod(grid) != nprocs and ndim:     # (0-d: the element on every rank)
        raise ValueError(f"the product of the proc_grid_sizes {tuple(grid)} is {math.prod(grid)}, "
                         f"but the communicator has {nprocs} processes (they must be equal)")
    seen = {}
    for r, c in enumerate(map(tuple, coords) if ndim else ()):
        if c in seen:
            raise ValueError(f"grid coordinate {c} is held by ranks {seen[c]} and {r} "
                             "(each coordinate must be held by exactly one rank)")
        seen[c] = r
    return coords, tuple(grid)


def _dim_map(summaries, coords, grid, k, version):
    """One dimension's map from the dicts of the ranks at each grid position."""
    dicts, lengths = [None] * grid[k], [None] * grid[k]
    for r, s in enumerate(summaries):
        p = coords[r, k]
        dd, n = s["dims"][k], s["lengths"][k]
        if dicts[p] is None:
            dicts[p], lengths[p] = dd, n
        elif not _same_dict(dicts[p], dd) or lengths[p] != n:
            raise ValueError(f"dimension {k}: ranks at grid position {p} disagree "
                             f"({_show(dicts[p])} with length {lengths[p]} vs {_show(dd)} "
                             f"with length {n} on rank {r}); dim_data must be identical along an axis")
    return _checked(dicts, lengths, version, f"dimension {k}")


def _checked(dicts, lengths, version, what):
    """The map of one dimension's dicts, or ``(size, one_to_one)`` of an
    unstructured one (whose indices the ranks keep to themselves)."""
    try:
        kind, dicts, lengths, size, minor = check_dim_dicts(dicts, lengths, version)
        if kind == "u":
            return size, common_flag(dicts, "one_to_one", "unstructured")
        return MAP_KINDS[kind].from_dim_dicts(dicts, lengths, size, minor)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{what}: {e}") from None


def _check_leaves(summaries, coords):
    """A ragged export's leaf dim must agree with its rows."""
    total = {s["leaves"][0].get("size") for s in summaries}
    if len(total) != 1:
        raise ValueError(f"ragged export: ranks disagree on the number of leaves {sorted(total)}")
    order = np.argsort(coords[:, 0], kind="stable")      # grid-rank order of the rows' 1-d grid
    lengths = [summaries[r]["nleaves"] for r in order]
    dicts = [summaries[r]["leaves"][0] for r in order]
    out = _checked(dicts, lengths, summaries[0]["version"], "ragged export, leaf dimension")
    return out if isinstance(out, tuple) else None


def _same_dict(a, b):
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        elif key == "padding":
            if not isinstance(x, (tuple, list)) or not isinstance(y, (tuple, list)) or \
                    len(x) != len(y) or not all(_same_value(u, v) for u, v in zip(x, y)):
                return False
        elif not _same_value(x, y):
            return False
    return True


def _same_value(x, y) -> bool:
    """Equal AND of the same kind: the dicts sharing a grid position are
    checked as one, so ``5`` next to ``5.0``, ``True`` or ``Decimal(5)`` on
    another rank must not pass as equal (only the first would be checked)."""
    if is_int(x) and is_int(y):
        return int(x) == int(y)
    return type(x) is type(y) and x == y


def _show(dd):
    return "{" + ", ".join(f"{k!r}: {v.tolist() if isinstance(v, np.ndarray) else v!r}"
                           for k, v in sorted(dd.items())) + "}"
