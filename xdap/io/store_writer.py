"""``save``: a DistArray as a Zarr v3 store, written by every rank in parallel.

The crash-safety protocol (a killed save leaves the previous store, or no
store, never a torn one):

1. rank 0 checks ``path`` (absent, an empty directory, or an xdap store of
   either format) and creates a *staging* directory beside it,
   ``.<name>.xdap-saving-<generation>-<token>``, holding the group and the
   arrays' metadata;
2. every rank writes whole chunks of its own (see ``xdap.io.chunks`` and
   ``xdap.io.segments``) and fsyncs them;
3. once all ranks agree that every chunk is written, rank 0 writes the
   group's ``xdap`` attribute (the metadata that makes it an xdap store),
   fsyncs it, and swaps the staging directory into ``path``: one atomic
   ``renameat2(RENAME_EXCHANGE)`` when ``path`` exists (Linux >= 3.15 on
   ext4, xfs, btrfs, tmpfs), a plain ``rename`` when it does not;
4. rank 0 deletes the replaced store in a background thread.

Until the swap, ``path`` is untouched; after it, ``path`` is complete.
Where the filesystem cannot exchange directories, step 3 is two renames
(the old store aside, the new one in); a save killed between them leaves
the previous store at ``.<name>.xdap-replaced-<generation>-<token>``, and
``load`` names it.
"""
from __future__ import annotations

import os
import secrets
import shutil
import threading
import warnings

import numpy as np
from ..distribution import Distribution
from ..maps import BlockMap, index_digest
from ..movement.redistribute import move
from ..comm import MPI
from ..parts import Parts
from ..transport import Route, move as transport_move
from ..progress import bar
from . import store_format as sf
from .chunk_files import array_layout, chunk_grid, write_chunks
from .chunks import CHUNK_BYTES, chunk_plan, segment_chunk
from .files import crash_point, fsync_dir, swap_directory
from .segments import align_segment, layout
from .store_location import agreed_path, read_store_attrs, staging_names
from ..agreement import agree, agreement
from ..optional import need

__all__ = ["save", "finish_cleanup"]


def save(d, p, path, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Save the array ``(d, p)`` as a Zarr v3 store at ``path`` (collective;
    ``DistArray.save`` calls this).

    Fixed data becomes one Zarr array of the global shape that any Zarr v3
    reader opens; ragged and optional data follow docs/format.md. Every
    chunk carries a CRC-32C (Zarr's ``crc32c`` codec), verified on load.
    Crash-safe (see the module docstring); an existing xdap store at
    ``path`` is replaced, anything else there is refused.

    Copies: none for a chunk that is one contiguous run of a rank's buffer
    (written from it); other chunks (edges, strided parts) go through one
    chunk-sized buffer. An array whose blocks are not chunk-aligned (cyclic, unstructured,
    uneven blocks) is first moved into aligned blocks (one redistribution:
    O(N/P) more memory per rank); ragged data moves at most a chunk per
    rank to a neighbour.

    >>> import tempfile, os, numpy as np, zarr
    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> path = os.path.join(tempfile.mkdtemp(), "a.zarr")
    >>> save(*from_global(np.arange(6.0).reshape(2, 3), comm=MPI.COMM_SELF), path)
    >>> zarr.open_array(path + "/values", mode="r")[:].tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    comm = d.comm
    path = agreed_path(comm, path, "save")
    with agreement(comm, "save") as ag:
        ag.same("chunk_bytes", _positive("chunk_bytes", chunk_bytes))
    info = p.info
    dtype, item = sf.storage(info)
    width = dtype.itemsize * (item or 1)
    layouts, d_write, p_write = _write_layouts(d, p, info, width, chunk_bytes)
    tables = _index_tables(d)
    table_layouts = {}              # {dim: (starts, lengths, total, chunk)}, as for segments
    for k, (t, start) in tables.items():
        starts, lengths, total = layout(comm, len(t) if t is not None else 0, start)
        table_layouts[k] = (starts, lengths, total, segment_chunk(total, comm.size, 16,
                                                                  chunk_bytes))
    # Everything that communicates happens before any file is touched, so a
    # rank whose writing fails cannot leave the others in a collective.
    pieces = _pieces(comm, info, d_write, p_write, layouts, dtype, item)
    for k, (t, _) in tables.items():
        pieces.append(_segment(comm, sf.indices_name(k), np.zeros((0, 2), np.int64)
                               if t is None else t, *table_layouts[k]))
    staged = None
    with agreement(comm):
        if comm.rank == 0:
            staged = _prepare(path)
            _create_arrays(staged[0], info, d.global_shape, layouts, table_layouts, dtype, item)
    staging, generation = comm.bcast(staged, root=0)

    error = None
    written = {}
    try:
        written = _write_pieces(comm, staging, pieces)
    except Exception as e:      # MemoryError too: every rank must reach the agreement
        error = ValueError(f"save to {path!r}: writing this rank's chunks failed: "
                           f"{type(e).__name__}: {e}")
    names = sf.array_names(info, sorted(tables))
    checksums = _gather_checksums(comm, names, written)
    digests = comm.allgather({k: (d.coords[k], index_digest(t[:, 0]).hex(),
                                  index_digest(t[t[:, 1] == 1, 0]).hex())
                              for k, (t, _) in tables.items() if t is not None})
    try:
        agree(comm, error)
    except ValueError:
        if comm.rank == 0:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    with agreement(comm):
        if comm.rank == 0:
            _write_checksums(staging, names, checksums)
            attrs = _attributes(d, info, generation, digests)
            _switch(staging, path, attrs)


def _positive(name, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise TypeError(f"save: {name} must be an int >= 1, got {value!r}")
    return int(value)


# -- what goes where ---------------------------------------------------------------------

def _write_layouts(d, p, info, width, chunk_bytes):
    """Per array, how it is written: ``{name: (chunks, ...)}`` plus the
    distribution and parts the data is written from (moved into aligned
    blocks when it is not already)."""
    comm = d.comm
    if not info.ragged:
        plan = chunk_plan(d.maps, width, chunk_bytes)
        if not plan.aligned:
            target = Distribution([BlockMap(m.size, m.grid_size, bounds=b)
                                   for m, b in zip(d.maps, plan.bounds)], comm)
            d, p = move(d, p, target)
        out = {sf.VALUES: plan.chunks}
        if info.optional:
            out[sf.VALIDITY] = plan.chunks
        return out, d, p
    if not (d.maps[0].contiguous and d.c_order):
        d, p = move(d, p, Distribution([BlockMap(d.global_shape[0], comm.size)], comm))
    out = {}
    # One segment per array: offsets of each var level, then the leaves.
    for level in range(1, info.var_ndim):
        off = p.offsets[level]
        n = len(off) - 1 + (comm.rank == comm.size - 1)
        starts, lengths, total = layout(comm, n)
        out[sf.offsets_name(level - 1)] = (starts, lengths, total,
                                           segment_chunk(total, comm.size, 8, chunk_bytes))
    starts, lengths, total = layout(comm, len(p.values))
    out[sf.VALUES] = (starts, lengths, total, segment_chunk(total, comm.size, width, chunk_bytes))
    if info.optional:
        out[sf.VALIDITY] = (starts, lengths, total, segment_chunk(total, comm.size, 1, chunk_bytes))
    return out, d, p


def _index_tables(d) -> dict:
    """``{dim: (table or None, start)}`` for the unstructured dims: this
    grid position's ``(index, counts here)`` rows, written by the lowest
    rank at the position (None on the others), at its place in the flat
    table of all positions."""
    out = {}
    for k, m in enumerate(d.maps):
        if not m.stored_indices:
            continue
        c = d.coords[k]
        lowest = min(r for r in range(d.size) if d.coords_of(r)[k] == c) == d.comm.rank
        table = None
        if lowest:
            ids = m.global_indices(c)
            table = np.zeros((len(ids), 2), np.int64)
            table[:, 0] = ids
            table[m.canonical_positions(c), 1] = 1
        out[k] = (table, sum(m.local_size(q) for q in range(c)) if lowest else 0)
    return out


# -- rank 0: the store's frame -----------------------------------------------------------

def _prepare(path: str) -> tuple:
    """Check the target, clear leftovers of killed saves, and return the
    staging directory and the new generation (rank 0)."""
    from . import manifest as mf
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError(f"save: {path!r} exists and is not a directory (an xdap store is a "
                         "directory); refusing to overwrite it")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"save: the parent directory {parent!r} of {path!r} does not exist")
    generation = 0
    if os.path.isdir(path):
        names = os.listdir(path)
        try:
            if "zarr.json" in names:
                attrs = read_store_attrs(path)
                generation = attrs.get("generation") if isinstance(attrs, dict) else None
                if not isinstance(generation, int) or attrs.get("format") != sf.FORMAT:
                    raise ValueError(f"{path!r} is not an xdap store (its 'xdap' attribute "
                                     "names no format and generation)")
            elif mf.MANIFEST in names:
                with open(os.path.join(path, mf.MANIFEST), "rb") as f:
                    generation = int(mf.loads(f.read(), repr(path))["generation"][1:])
            elif names:
                raise ValueError(f"{path!r} holds files that are not part of an xdap store "
                                 f"(e.g. {sorted(names)[0]!r})")
        except ValueError as e:
            raise ValueError(f"save: refusing to overwrite {path!r}: {e}") from None
    for name in staging_names(path):          # killed saves' leftovers
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
    generation += 1
    staging = os.path.join(parent, f".{os.path.basename(os.path.abspath(path))}.xdap-saving-"
                                   f"{generation:06d}-{secrets.token_hex(8)}")
    return staging, generation


def _create_array(group, name, shape, chunks, dtype, dims=None, fill=0):
    """An array's metadata with xdap's chunk encoding: little-endian bytes
    then a CRC-32C, nothing else (what ``load`` accepts)."""
    zc = need("zarr.codecs")
    BytesCodec, Crc32cCodec = zc.BytesCodec, zc.Crc32cCodec
    return group.create_array(name, shape=tuple(shape), chunks=tuple(chunks), dtype=dtype,
                              serializer=BytesCodec(), compressors=[Crc32cCodec()], filters=[],
                              fill_value=fill, dimension_names=dims)


def _create_arrays(staging, info, shape, layouts, table_layouts, dtype, item) -> None:
    """The group and every array's metadata, in the staging directory."""
    zarr = need("zarr")
    group = zarr.open_group(staging, mode="w-", zarr_format=3)
    trailing = () if item is None else (item,)
    tail_names = [] if item is None else ["item_byte"]

    def create(name, shp, chunks, dt, dims, fill):
        _create_array(group, name, shp, chunks, dt, dims, fill)

    if not info.ragged:
        dims = [f"dim_{k}" for k in range(len(shape))]
        create(sf.VALUES, tuple(shape) + trailing, layouts[sf.VALUES] + trailing, dtype,
               dims + tail_names, 0)
        if info.optional:
            create(sf.VALIDITY, shape, layouts[sf.VALIDITY], bool, dims, False)
    else:
        for name, (_, _, total, chunk) in layouts.items():
            dt = np.int64 if name.startswith("offsets") else bool if name == sf.VALIDITY \
                else dtype
            extra = trailing if name == sf.VALUES else ()
            create(name, (total,) + extra, (chunk,) + extra, dt,
                   [name + "_index"] + (tail_names if extra else []), 0)
    for k, (_, _, total, chunk) in table_layouts.items():
        create(sf.indices_name(k), (total, 2), (chunk, 2), np.int64,
               [f"indices{k}_index", "index_counts_here"], 0)


def _xdap_version() -> str:
    """The installed xdap's version (from its metadata: the engines do not
    import the package's surface)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("xdap")
    except PackageNotFoundError:
        return "unknown"


def _attributes(d, info, generation, digests) -> dict:
    maps = []
    for k, m in enumerate(d.maps):
        j = m.to_json()
        if m.stored_indices:
            per = {}
            for rank_digests in digests:
                if k in rank_digests:
                    c, full, canonical = rank_digests[k]
                    per[c] = (full, canonical)
            j["digests"] = [per[c][0] for c in range(m.grid_size)]
            j["canonical_digests"] = [per[c][1] for c in range(m.grid_size)]
        maps.append(j)
    return {"format": sf.FORMAT, "version": sf.FORMAT_VERSION, "generation": generation,
            "type": info.global_type(d.global_shape), "kind": info.kind.value,
            "shape": list(d.global_shape), "numpy_descr": sf.describe_numpy(info),
            "xdap_version": _xdap_version(),
            "distribution": {"grid": list(d.grid),
                             "rank_coords": None if d.c_order else d.rank_coords.tolist(),
                             "maps": maps}}


# -- every rank: its chunks --------------------------------------------------------------

def _write_region(staging, name, region, data, progress=None) -> dict:
    """Write whole chunks of array ``name``: ``data`` into ``region``
    (slices), fsynced (see ``xdap.io.chunk_files``); ``{chunk: CRC-32C}``."""
    shape, chunks = array_layout(os.path.join(staging, name))
    written = write_chunks(os.path.join(staging, name), chunks, shape, region, data, 0,
                           progress)
    crash_point("data")
    return written


def _pieces(comm, info, d, p, layouts, dtype, item) -> list:
    """``[(array name, region, data)]``: what this rank writes, whole
    chunks each (collective: ragged segments are re-cut at chunk boundaries)."""
    if not info.ragged:
        if not d.maps and comm.rank != 0:         # a 0-d array: every rank holds it, one writes
            return []
        owned = tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))
        region = tuple(slice(m.bounds[c], m.bounds[c + 1]) for m, c in zip(d.maps, d.coords))
        out = [(sf.VALUES, region, _stored(p.values[owned], dtype, item))]
        if info.optional:
            out.append((sf.VALIDITY, region, p.valid_mask()[owned]))
        return out
    out = []
    for level in range(1, info.var_ndim):
        off = p.offsets[level].astype(np.int64)
        base = comm.exscan(int(off[-1])) or 0
        seg = off if comm.rank == comm.size - 1 else off[:-1]
        out.append(_segment(comm, sf.offsets_name(level - 1), seg + base,
                            *layouts[sf.offsets_name(level - 1)]))
    out.append(_segment(comm, sf.VALUES, _stored(p.values, dtype, item), *layouts[sf.VALUES]))
    if info.optional:
        out.append(_segment(comm, sf.VALIDITY, np.ascontiguousarray(p.valid_mask()),
                            *layouts[sf.VALIDITY]))
    return out


def _stored(values, dtype, item):
    """The values as Zarr stores them: themselves, or their bytes (uint8,
    one more trailing dim) for leaves Zarr has no type for (a view)."""
    if item is None:
        return values
    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.shape + (item,))


def _segment(comm, name, seg, starts, lengths, total, chunk) -> tuple:
    rows, first = align_segment(comm, np.ascontiguousarray(seg), starts, lengths, chunk, total)
    return name, (slice(first, first + len(rows)),), rows


def _write_pieces(comm, staging, pieces) -> dict:
    """Every piece written; ``{array name: {chunk: CRC-32C}}`` of this rank's chunks."""
    written = {}
    with bar(comm, sum(np.asarray(data).nbytes for _, _, data in pieces), "save", "B",
             scale=True) as progress:
        for name, region, data in pieces:
            written.setdefault(name, {}).update(_write_region(staging, name, region, data,
                                                              progress))
    return written


def _gather_checksums(comm, names, written) -> np.ndarray:
    """Every rank's ``(array code, chunk index..., CRC-32C)`` rows on rank 0
    (one gather of buffers: a row per chunk, O(chunks) there -- a few bytes
    per megabytes of data)."""
    width = 2 + max((len(idx) for w in written.values() for idx in w), default=0)
    width = comm.allreduce(width, op=MPI.MAX)
    rows = np.zeros((sum(len(w) for w in written.values()), width), np.int64)
    at = 0
    for name, w in written.items():
        for idx, crc in w.items():
            rows[at, 0], rows[at, 1:1 + len(idx)], rows[at, -1] = names.index(name), idx, crc
            at += 1
    route = Route.gather(comm, np.arange(len(rows)), 0).with_recv_counts()
    return transport_move(route, Parts.of_array(rows))[0].values


def _write_checksums(staging, names, rows) -> None:
    """Rank 0: the table of every array's chunk CRC-32C by position
    (``checksums/<array>``, uint32, the chunk grid's shape), checked to
    cover every chunk once."""
    zarr = need("zarr")
    group = zarr.open_group(staging, mode="r+", zarr_format=3).require_group(sf.CHECKSUMS)
    for code, name in enumerate(names):
        grid = chunk_grid(*array_layout(os.path.join(staging, name)))
        mine = rows[rows[:, 0] == code]
        # flat chunk positions (a 0-d array's grid () has the one position 0)
        at = np.ravel_multi_index(tuple(mine[:, 1 + k] for k in range(len(grid))), grid) \
            if grid else np.zeros(len(mine), np.int64)
        seen = np.bincount(at, minlength=int(np.prod(grid, dtype=np.int64))).reshape(grid)
        if (seen != 1).any():
            raise ValueError(f"save: chunk {np.argwhere(seen != 1)[0].tolist()} of array "
                             f"{name!r} was written {int(seen[seen != 1].flat[0])} times "
                             "(an internal error: every chunk has one writer)")
        table = np.zeros(grid, np.uint32)
        table.flat[at] = mine[:, -1].astype(np.uint32)
        z = _create_array(group, name, grid, tuple(max(1, g) for g in grid), np.uint32)
        if table.size:
            z[...] = table


# -- rank 0: the switch ------------------------------------------------------------------

def _switch(staging: str, path: str, attrs: dict) -> None:
    """Make the staging directory the store at ``path`` (see the module docstring)."""
    zarr = need("zarr")
    group = zarr.open_group(staging, mode="r+", zarr_format=3)
    group.attrs[sf.ATTRIBUTE] = attrs
    # consolidated metadata (every array's zarr.json copied into the
    # group's): xarray and dask open the store in one read, without a warning
    with warnings.catch_warnings():     # "not part of the v3 specification (yet)": known
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(staging, zarr_format=3)
    for root, _, files in os.walk(staging):
        if "zarr.json" in files:
            fd = os.open(os.path.join(root, "zarr.json"), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(root)
    crash_point("before-switch")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.lexists(path):
        old = _exchange(staging, path)
    else:
        os.rename(staging, path)
        old = None
    fsync_dir(parent)
    crash_point("after-switch")
    if old is not None:
        # Deleting is housekeeping, not part of the save (unlinking 1 GiB on
        # this ext4, mounted with 'discard', takes ~1 s): a non-daemon
        # thread does it, so the interpreter waits for it at exit.
        t = threading.Thread(target=shutil.rmtree, args=(old, True), name="xdap-save-cleanup")
        t.start()
        _cleanups[:] = [c for c in _cleanups if c.is_alive()] + [t]


def _exchange(staging: str, path: str) -> str:
    """Swap ``staging`` into ``path``; return where the old store now is."""
    return swap_directory(staging, path, staging.replace(".xdap-saving-", ".xdap-replaced-"))


def finish_cleanup() -> None:
    """Wait until replaced stores are deleted."""
    while _cleanups:
        _cleanups.pop().join()


_cleanups: list = []


