"""``load``: a saved array back onto any number of ranks, in any distribution.

Rank 0 reads and checks the store's ``xdap`` attribute and the arrays'
metadata against it, and broadcasts them; every rank then reads only the
chunks its buffer needs (Zarr verifies each chunk's CRC-32C as it decodes
it), and the ranks agree on one verdict before anything is returned: a
missing chunk, a checksum mismatch or arrays that contradict the attribute
raise the same ValueError on every rank. Directories of the previous format
(``manifest.json``) are read by ``xdap.io.legacy_reader``.
"""
from __future__ import annotations

import os

import numpy as np

from .. import comm as _comm
from ..distribution import Distribution
from ..heap import trims_heap
from ..maps import (BlockMap, DistributedUnstructuredMap, Map, UnstructuredMap, as_slice,
                    index_digest, unstructured_fingerprint)
from ..movement.redistribute import move
from ..parts import EMPTY_VAR_DIMS, Parts
from ..bitmaps import pack_validity
from ..progress import bar
from . import legacy_reader
from . import store_format as sf
from .chunk_files import chunk_grid, read_chunks
from .store_location import agreed_path, open_regular, read_store_attrs, staging_names
from .targets import default_distribution, requested_distribution
from ..agreement import agree, agreement
from ..optional import need

__all__ = ["load", "read_frame", "read_array", "saved_maps"]

# How often ``load`` starts over when a concurrent save replaced what it read.
_ATTEMPTS = 5


@trims_heap
def load(path, comm=None, dist=None, grid=None, **per_dim) -> tuple:
    """Load a store written by ``DistArray.save``: ``(Distribution, Parts)``
    (collective; ``xdap.load`` wraps it).

    With no ``dist``/``grid``/options on as many ranks as saved it, the
    distribution is the saved one exactly (padding, periodic, block sizes,
    unstructured indices, rank placement); on another rank count, each dim
    keeps its kind ('b' balanced, 'c' with its block size; 'u' becomes 'b'),
    uniform padding and periodic flag. ``dist``, ``grid`` and ``per_dim``
    (as in ``xdap.from_global``) ask for any other distribution. Each rank
    reads only the chunks holding its buffer's global indices (padding
    included), each verified against its CRC-32C, into new memory: a chunk
    that is one contiguous run of the buffer straight into place, others
    through a chunk-sized buffer (``xdap.io.chunk_files``).

    >>> import tempfile, os
    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> from xdap.io import save
    >>> path = os.path.join(tempfile.mkdtemp(), "r.zarr")
    >>> save(*from_global([[1, None], [], [2]], type="var * var * ?int8", comm=MPI.COMM_SELF),
    ...      path)
    >>> d, p = load(path, comm=MPI.COMM_SELF, dist=("c",))
    >>> d.maps[0], p.info.type_string(), p.nrows
    (CyclicMap(size=3, grid_size=1, block_size=1), 'var * var * ?int8', 3)
    """
    comm = _comm.resolve(comm)
    path = agreed_path(comm, path, "load")
    with agreement(comm, "load") as ag:
        ag.same("dist, grid and the per-dimension options", (dist, grid, per_dim))
    for attempt in range(_ATTEMPTS):
        found = None
        with agreement(comm):
            if comm.rank == 0:
                found = read_frame(path)
        found = comm.bcast(found, root=0)
        if found[0] == "legacy":
            return legacy_reader.load_generation(path, found[1], comm, dist, grid, per_dim)
        attrs, arrays = found[1], found[2]
        try:
            return _load(path, attrs, arrays, comm, dist, grid, per_dim)
        except (ValueError, TypeError) as e:      # raised alike on every rank
            # Another process may have saved to ``path`` since the attribute
            # was read, and swapped the store it names away: load the new one.
            replaced = comm.bcast(comm.rank == 0 and
                                  _generation_now(path) not in (None, attrs["generation"]), root=0)
            if not replaced:
                raise
            if attempt == _ATTEMPTS - 1:
                raise ValueError(f"load: {path!r} was saved again {_ATTEMPTS} times while it "
                                 f"was being loaded; last failure: {e}") from e
    raise AssertionError("unreachable")


def _generation_now(path: str):
    try:
        attrs = read_store_attrs(path)
        return attrs.get("generation") if isinstance(attrs, dict) else None
    except (OSError, ValueError):
        return None


def read_frame(path: str, what: str = "load") -> tuple:
    """Rank 0: ``("zarr", attrs, {name: (shape, chunks, dtype str)})`` or
    ``("legacy", manifest body)``, checked; ValueError otherwise."""
    where = f"xdap store {path!r}"
    if not os.path.exists(path):
        hint = staging_names(path)
        hint = f"; a save to it was interrupted and left {hint[-1]!r} beside it" if hint else ""
        raise ValueError(f"{what}: {path!r} does not exist, so it is not an xdap store{hint}")
    if not os.path.isdir(path):
        raise ValueError(f"{what}: {path!r} is not a directory, so not an xdap store")
    attrs = read_store_attrs(path)
    if attrs is None:
        if os.path.isfile(os.path.join(path, legacy_reader.MANIFEST)):
            return "legacy", legacy_reader.read_manifest(path)
        raise ValueError(f"{what}: {path!r} is not an xdap store (no zarr.json, and no "
                         f"{legacy_reader.MANIFEST} of the previous format)")
    sf.validate(attrs, where)
    if attrs["version"] < sf.FORMAT_VERSION and os.path.lexists(os.path.join(path, sf.CHECKSUMS)):
        # a version-3 store said to be 2 would skip the position tables' check
        raise ValueError(f"{where}: the store says format version {attrs['version']} but holds "
                         f"version-3 content (a {sf.CHECKSUMS!r} group of chunk position "
                         "tables): a store cannot lower its version to skip a check")
    return "zarr", attrs, _check_arrays(path, attrs, where)


def _check_arrays(path, attrs, where) -> dict:
    """Open every array the attribute implies and check its metadata: shape,
    data type, a CRC-32C codec on every chunk."""
    zarr = need("zarr")
    info = sf.info_of(attrs)
    dtype, item = sf.storage(info)
    trailing = () if item is None else (item,)
    u_dims = [k for k, m in enumerate(attrs["distribution"]["maps"])
              if Map.kind_of(m).stored_indices]
    out = {}
    for name in sf.array_names(info, u_dims):
        _check_metadata_file(path, name)
        try:
            z = zarr.open_array(os.path.join(path, name), mode="r", zarr_format=3)
        except Exception as e:          # zarr raises several kinds for a missing node
            raise ValueError(f"{where}: its array {name!r} cannot be opened "
                             f"({type(e).__name__}: {e})") from None
        fixed_like = name in (sf.VALUES, sf.VALIDITY) and not info.ragged
        want_dt = dtype if name == sf.VALUES else np.dtype(bool) if name == sf.VALIDITY \
            else np.dtype(np.int64)
        ndim = len(attrs["shape"]) if fixed_like else 1
        extra = trailing if name == sf.VALUES else (2,) if name.startswith("indices") else ()
        got_dt = np.dtype(z.dtype.to_native_dtype() if hasattr(z.dtype, "to_native_dtype")
                          else z.dtype)
        if got_dt != want_dt or z.ndim != ndim + len(extra) or tuple(z.shape[ndim:]) != extra \
                or (fixed_like and tuple(z.shape[:ndim]) != tuple(attrs["shape"])):
            want = f"global shape {tuple(attrs['shape'])}" if fixed_like else f"{ndim}-d"
            raise ValueError(f"{where}: array {name!r} holds {got_dt} of shape {z.shape}, "
                             f"which contradicts the type {attrs['type']!r} (expected "
                             f"{want_dt}, {want}{' with trailing ' + str(extra) if extra else ''})")
        _check_encoding(z.metadata, got_dt, f"{where}: array {name!r}")
        chunks = tuple(z.metadata.chunk_grid.chunk_shape)
        if chunks[ndim:] != extra:
            raise ValueError(f"{where}: array {name!r} is chunked {chunks} across its trailing "
                             f"dims {extra}; xdap stores keep those whole")
        out[name] = (tuple(z.shape), chunks, got_dt.str)
    if attrs["version"] >= 3:            # each chunk's CRC-32C by position (version 3)
        for name in list(out):
            out[sf.checksums_name(name)] = _check_table(path, name, out[name], where)
    extra = sorted(n for n in os.listdir(path) if n not in out and n != sf.CHECKSUMS and
                   os.path.isfile(os.path.join(path, n, "zarr.json")))
    if extra:
        raise ValueError(f"{where}: unexpected array {extra[0]!r} for the type "
                         f"{attrs['type']!r} (is the type right?)")
    if info.ragged:
        rows = attrs["shape"][0]
        first = sf.offsets_name(0)
        if out[first][0][0] != rows + 1:
            raise ValueError(f"{where}: array {first!r} has {out[first][0][0]} entries for "
                             f"{rows} rows (needs rows + 1)")
    for k in u_dims:
        total = sum(attrs["distribution"]["maps"][k]["counts"])
        if out[sf.indices_name(k)][0][0] != total:
            raise ValueError(f"{where}: array {sf.indices_name(k)!r} has "
                             f"{out[sf.indices_name(k)][0][0]} rows; the map's counts add to "
                             f"{total}")
    return out


def _check_metadata_file(path, node) -> None:
    """The metadata of Zarr node ``node``, before zarr reads it (zarr
    follows links): a regular file inside the store, when it is there."""
    meta = os.path.join(path, node, "zarr.json")
    if os.path.lexists(meta):
        open_regular(meta, store=path).close()


def _check_table(path, name, layout, where) -> tuple:
    """Open array ``name``'s table of chunk checksums and check it: uint32,
    the shape of the array's chunk grid, xdap's encoding."""
    zarr = need("zarr")
    grid = chunk_grid(*layout[:2])
    table = sf.checksums_name(name)
    _check_metadata_file(path, table)
    try:
        z = zarr.open_array(os.path.join(path, table), mode="r", zarr_format=3)
    except Exception as e:
        raise ValueError(f"{where}: the chunk checksums of array {name!r} ({table!r}) cannot "
                         f"be opened ({type(e).__name__}: {e}); a version-3 store has them for "
                         "every array") from None
    got_dt = np.dtype(z.dtype.to_native_dtype() if hasattr(z.dtype, "to_native_dtype")
                      else z.dtype)
    if got_dt != np.dtype(np.uint32) or tuple(z.shape) != grid:
        raise ValueError(f"{where}: {table!r} holds {got_dt} of shape {z.shape}, not uint32 of "
                         f"the chunk grid {grid} of array {name!r}")
    _check_encoding(z.metadata, got_dt, f"{where}: {table!r}")
    return tuple(z.shape), tuple(z.metadata.chunk_grid.chunk_shape), got_dt.str


def _check_encoding(meta, dtype, where: str) -> None:
    """The chunk encoding xdap writes and reads itself, and no other: codecs
    ``bytes`` (little endian; any endianness for one-byte items) then
    ``crc32c``, the default chunk keys ``c/i/j``, chunks of at least one
    item. A store whose arrays zarr wrote otherwise (big-endian bytes, a
    transpose, compression) is refused by name -- read as xdap's layout it
    would be garbage."""
    zc = need("zarr.codecs")
    BytesCodec, Crc32cCodec = zc.BytesCodec, zc.Crc32cCodec
    codecs = list(meta.codecs)
    names = [type(c).__name__ for c in codecs]
    little = len(codecs) == 2 and isinstance(codecs[0], BytesCodec) and (
        dtype.itemsize == 1 or getattr(codecs[0].endian, "value", codecs[0].endian) == "little")
    if not (little and isinstance(codecs[1], Crc32cCodec)):
        raise ValueError(f"{where} has the codecs {names}"
                         f"{' (big endian)' if len(codecs) and isinstance(codecs[0], BytesCodec) and not little else ''};"
                         " xdap reads the codecs it writes: little-endian 'bytes' then 'crc32c' "
                         "(open other Zarr arrays with zarr)")
    enc = meta.chunk_key_encoding
    if type(enc).__name__ != "DefaultChunkKeyEncoding" or getattr(enc, "separator", None) != "/":
        raise ValueError(f"{where} names its chunks with {type(enc).__name__} (separator "
                         f"{getattr(enc, 'separator', None)!r}); xdap stores use the default "
                         "encoding with '/' (c/i/j)")
    chunks = tuple(meta.chunk_grid.chunk_shape)
    if any(int(c) < 1 for c in chunks):
        raise ValueError(f"{where} has the chunk shape {chunks}; every chunk dimension must "
                         "be at least 1")


# -- reading -----------------------------------------------------------------------------

def read_array(path, name, arrays, sels, progress=None) -> np.ndarray:
    """The selection ``sels`` (slices or int arrays, one per leading dim) of
    array ``name``: only the chunks it touches are read, each verified
    (``xdap.io.chunk_files``); a missing chunk is an error, never the fill
    value."""
    shape, chunks, dtype = arrays[name]
    try:
        table = None
        if sf.checksums_name(name) in arrays:        # binds every chunk to its position
            tshape, tchunks, tdtype = arrays[sf.checksums_name(name)]
            table = read_chunks(os.path.join(path, sf.checksums_name(name)), tchunks, tshape,
                                [], np.dtype(tdtype), (), sf.checksums_name(name), store=path) \
                if all(tshape) else None
        return read_chunks(os.path.join(path, name), chunks, shape, sels, np.dtype(dtype),
                           shape[len(sels):], name, progress, store=path, table=table)
    except ValueError as e:
        raise ValueError(f"xdap store {path!r}: {e}") from None


def _leaves(data, info, item) -> np.ndarray:
    """Stored values back as the leaf dtype (a view of the bytes when stored as bytes)."""
    if item is None:
        return data
    return np.ascontiguousarray(data).view(info.numpy_dtype).reshape(data.shape[:-1])


def _load(path, attrs, arrays, comm, dist, grid, per_dim) -> tuple:
    info = sf.info_of(attrs)
    _, item = sf.storage(info)
    local, error, read_as = None, None, None
    with agreement(comm, "load"):
        d = _target(path, attrs, arrays, comm, dist, grid, per_dim)
    try:
        if info.ragged:
            local, read_as = _read_ragged(path, attrs, arrays, info, item, d)
        else:
            need = [as_slice(m.buffer_indices(c)) for m, c in zip(d.maps, d.coords)]
            n = int(np.prod(d.local_shape, dtype=np.int64))
            with bar(d.comm, n * (info.numpy_dtype.itemsize + info.optional), "load", "B",
                     scale=True) as progress:
                values = _leaves(read_array(path, sf.VALUES, arrays, need, progress), info, item)
                validity = None
                if info.optional:
                    validity = pack_validity(read_array(path, sf.VALIDITY, arrays, need, progress))
            # (np.ascontiguousarray would make a 0-d array 1-d)
            local = Parts(info.with_shape(d.local_shape), np.require(values, requirements="C"),
                          validity)
        if _generation_now(path) != attrs["generation"]:
            # a save swapped another store in while this rank read: what it
            # read may mix the two (``load`` starts over)
            raise ValueError(f"xdap store {path!r} was replaced while it was being loaded")
    except Exception as e:      # MemoryError too: raised here alone, it left the others waiting
        error = e if isinstance(e, (ValueError, TypeError)) else \
            ValueError(f"xdap store {path!r}: {type(e).__name__}: {e}")
    agree(comm, error)
    if info.ragged and read_as is not d:    # rows read as blocks, now moved to the target
        return move(read_as, local, d)
    return d, local


def _read_ragged(path, attrs, arrays, info, item, d):
    """``(Parts, the distribution they were read in)``: this rank's rows of
    ``d`` directly when every rank's rows are one run; else balanced blocks,
    which the caller moves into ``d``."""
    if not d.maps[0].contiguous:    # the same decision on every rank: the map's kind
        d = Distribution([BlockMap(attrs["shape"][0], d.comm.size)], d.comm)
    rows = as_slice(d.maps[0].buffer_indices(d.coords[0]))
    if rows.stop <= rows.start and not EMPTY_VAR_DIMS:
        raise ValueError("load: this rank's part of the ragged array would have no rows, and "
                         "xnd 0.2.0.dev3 cannot hold a ragged container of zero rows; load onto "
                         "fewer ranks or a distribution that gives every rank a row")
    offsets = [np.array([0, rows.stop - rows.start], np.int32)]
    lo, hi = rows.start, rows.stop
    for level in range(info.var_ndim - 1):
        name = sf.offsets_name(level)
        off = read_array(path, name, arrays, [slice(lo, hi + 1)])
        limit = arrays[sf.offsets_name(level + 1)][0][0] - 1 if level + 2 < info.var_ndim \
            else arrays[sf.VALUES][0][0]
        if len(off) and (off[0] < 0 or off[-1] > limit or (np.diff(off) < 0).any()):
            raise ValueError(f"xdap store {path!r}: array {name!r} is not a run of "
                             f"non-decreasing offsets within [0, {limit}]")
        if hi == arrays[name][0][0] - 1 and len(off) and off[-1] != limit:
            # the rank holding the last item: the next array must end where it ends
            raise ValueError(f"xdap store {path!r}: array {name!r} ends at {int(off[-1])}, "
                             f"but the next array declares {limit} items (a length that "
                             "contradicts the offsets)")
        if off[-1] - off[0] > np.iinfo(np.int32).max:
            raise ValueError(f"load: {off[-1] - off[0]} items on this rank: more than xnd's "
                             "int32 offsets address; load onto more ranks")
        offsets.append((off - off[0]).astype(np.int32))
        lo, hi = int(off[0]), int(off[-1])
    values = _leaves(read_array(path, sf.VALUES, arrays, [slice(lo, hi)]), info, item)
    validity = None
    if info.optional:
        validity = pack_validity(read_array(path, sf.VALIDITY, arrays, [slice(lo, hi)]))
    return Parts(info, np.ascontiguousarray(values), validity, tuple(offsets)), d


# -- the distribution to load onto -------------------------------------------------------

def _target(path, attrs, arrays, comm, dist, grid, per_dim) -> Distribution:
    shape = tuple(attrs["shape"])
    if not shape:                                 # a 0-d array: every rank holds it
        return requested_distribution(shape, False, comm, dist, grid, per_dim)
    jsons = attrs["distribution"]["maps"]
    saved_size = int(np.prod(attrs["distribution"]["grid"]))
    if dist is None and grid is None and not per_dim:
        if comm.size == saved_size:
            return _saved(path, attrs, arrays, comm)
        return default_distribution(shape, jsons, comm)
    return requested_distribution(shape, attrs["kind"] == "ragged", comm, dist, grid, per_dim)


def _saved(path, attrs, arrays, comm) -> Distribution:
    """The saved distribution on as many ranks: unstructured dims read only
    this rank's grid position's indices."""
    dist = attrs["distribution"]
    placement = dist["rank_coords"]
    coords = placement[comm.rank] if placement is not None else \
        list(np.unravel_index(comm.rank, dist["grid"]))
    return Distribution(saved_maps(path, attrs, arrays, coords), comm, placement)


def saved_maps(path, attrs, arrays, coords=None) -> list:
    """The maps of a store (``read_frame``'s attribute and arrays).  With
    ``coords`` -- this rank's grid coordinates -- an unstructured dimension
    reads only its own position's index table, verified against the
    attribute's digest (a distributed map: O(size / P)).  Without, every
    position's canonical indices (complete maps: O(size) -- what a picture
    of the whole store needs, ``xdap show``)."""
    maps = []
    for k, j in enumerate(attrs["distribution"]["maps"]):
        if not Map.kind_of(j).stored_indices:
            maps.append(Map.from_json(j))
            continue
        counts = j["counts"]
        if coords is None:
            table = read_array(path, sf.indices_name(k), arrays, [slice(0, sum(counts))])
            ends = np.cumsum(counts)
            maps.append(UnstructuredMap(j["size"], [table[e - n:e][table[e - n:e, 1] == 1, 0]
                                                    for e, n in zip(ends, counts)],
                                        one_to_one=True))
            continue
        c = int(coords[k])
        start = sum(counts[:c])
        table = read_array(path, sf.indices_name(k), arrays, [slice(start, start + counts[c])])
        ids = np.ascontiguousarray(table[:, 0])
        if index_digest(ids).hex() != j["digests"][c]:
            raise ValueError(f"xdap store {path!r}: array {sf.indices_name(k)!r} does not hold "
                             f"the indices of grid position {c} that the attribute's digest "
                             "names")
        fp = unstructured_fingerprint(j["size"], j["one_to_one"], counts,
                                      [bytes.fromhex(x) for x in j["digests"]])
        maps.append(DistributedUnstructuredMap(j["size"], counts, {c: ids}, j["one_to_one"], fp,
                                               {c: np.flatnonzero(table[:, 1] == 1)}))
    return maps
