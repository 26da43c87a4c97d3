"""``save``: every rank writes its piece, rank 0 switches the manifest.

The crash-safety protocol (a killed writer leaves the previous save
readable, never a torn one):

1. rank 0 checks ``path`` (absent, an empty directory, or an xdap save) and
   picks the next generation prefix, e.g. ``g000002``;
2. every rank writes its piece under new names (``g000002.piece<r>...``),
   fsyncs them; rank 0 also writes unstructured index arrays;
3. rank 0 writes the new manifest to a temporary name, fsyncs it, renames it
   over ``manifest.json`` (atomic) and fsyncs the directory -- the switch;
4. rank 0 removes every file of older generations (and leftovers of killed
   writers) in a background thread, and fsyncs the directory.

Until step 3 completes, ``manifest.json`` names the previous generation,
whose files are untouched; after it, the new one, whose files are complete.
"""
from __future__ import annotations

import os
import re
import threading

import numpy as np

from .. import comm as _comm
from ..maps import index_digest
from ..parts import take_block, take_rows
from . import manifest as mf
from .arrow_file import to_ipc
from .files import as_path, crash_point, fsync_dir, write_file
from .npy import npy_header
from .plan import index_tuple, piece_positions

__all__ = ["save", "finish_cleanup", "agreed_path"]

_OURS = re.compile(r"^g(\d{6})\.")
_TMP = re.compile(r"^\.manifest\.g\d{6}\.tmp$")


def save(d, p, path) -> None:
    """Save the array ``(d, p)`` to the directory ``path`` (collective;
    ``DistArray.save`` calls this).

    Writes the global type, the distribution and the owned data of every
    rank in parallel: fixed pieces as ``.npy`` files (their validity
    bitmaps too), ragged pieces as Arrow IPC files, plus ``manifest.json``.
    Crash-safe (see the module docstring); an existing save at ``path`` is
    replaced, anything else there is refused. Fixed pieces are written
    straight from ``a.local`` when the owned part is contiguous; otherwise
    (padding, shared unstructured indices) the piece is copied first.

    >>> import tempfile, os, numpy as np
    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> from xdap.io import load
    >>> path = os.path.join(tempfile.mkdtemp(), "a.xdap")
    >>> save(*from_global(np.arange(6.0), comm=MPI.COMM_SELF), path)
    >>> load(path, comm=MPI.COMM_SELF)[1].values.tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    """
    if not d.maps:
        raise ValueError("save: a 0-d array (one element, held by every rank) is not saved as "
                         "a distributed array; save its value (a.to_global()), or make it a "
                         "1-element array")
    comm = d.comm
    prepared = None
    path = agreed_path(comm, path, "save")
    with _comm.agreement(comm):
        if comm.rank == 0:
            prepared = _prepare(path)
    generation = comm.bcast(prepared, root=0)

    files = {}
    error = None
    try:
        files = _write_piece(d, p, path, generation)
        files.update(_write_maps(d, path, generation))
    except Exception as e:      # MemoryError too: every rank must reach the agreement
        error = ValueError(f"save to {path!r}: writing this rank's piece failed: "
                           f"{type(e).__name__}: {e}")
    try:
        _comm.agree(comm, error)
    except ValueError:
        own = mf.file_name(generation, f"piece{comm.rank}.")
        _remove(path, [n for n in os.listdir(path) if n.startswith(own)])
        raise

    info = p.info
    shape = list(d.global_shape)
    pieces = comm.gather({"rank": comm.rank, "coords": list(d.coords),
                          "shape": files.pop("_shape"), "files": files}, root=0)
    with _comm.agreement(comm):
        if comm.rank == 0:
            body = {
                "format": mf.FORMAT, "version": mf.FORMAT_VERSION, "generation": generation,
                "type": info.global_type(d.global_shape), "kind": info.kind.value,
                "dtype": info.dtype, "optional": info.optional, "var_ndim": info.var_ndim,
                "shape": shape,
                "distribution": {
                    "grid": list(d.grid),
                    "rank_coords": None if d.c_order else d.rank_coords.tolist(),
                    "maps": mf.maps_to_json(d.maps)},
                "maps_files": {},
                "pieces": pieces,
            }
            _switch(path, generation, body)


def agreed_path(comm, path, what: str) -> str:
    """``path`` as a str, the same on every rank (collective; the same error
    everywhere otherwise). The check runs outside the gather, so a bad path
    on one rank cannot leave it in a different collective than the others."""
    with _comm.agreement(comm, share=True) as ag:
        path = as_path(path)
        ag.share(path)
    paths = ag.shared
    if any(q != paths[0] for q in paths):
        raise ValueError(f"{what}: ranks passed different paths: {paths}")
    return path


def _prepare(path: str) -> str:
    """Check the target and return the new generation's prefix (rank 0)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"save: {path!r} exists and is not a directory (an xdap save is a "
                         "directory); refusing to overwrite it")
    numbers = [0]
    if os.path.isdir(path):
        names = os.listdir(path)
        if mf.MANIFEST in names:
            with open(os.path.join(path, mf.MANIFEST), "rb") as f:
                try:
                    body = mf.loads(f.read(), repr(path))
                except ValueError as e:
                    raise ValueError(f"save: refusing to overwrite {path!r}: {e}") from None
            numbers.append(int(body["generation"][1:]))
        strangers = [n for n in names if n != mf.MANIFEST and not _OURS.match(n)
                     and not _TMP.match(n)]
        if strangers:
            raise ValueError(f"save: {path!r} holds files that are not part of an xdap save "
                             f"(e.g. {sorted(strangers)[0]!r}); refusing to overwrite them")
        numbers += [int(m.group(1)) for m in map(_OURS.match, names) if m]
    else:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ValueError(f"save: the parent directory {parent!r} of {path!r} does not exist")
        os.mkdir(path)
        fsync_dir(parent)
    return mf.generation_name(max(numbers) + 1)


def _write_piece(d, p, path: str, generation: str) -> dict:
    """Write this rank's piece; return {role: record} and '_shape'."""
    r = d.comm.rank
    sels = [piece_positions(m, c) for m, c in zip(d.maps, d.coords)]
    name = os.path.join(path, mf.file_name(generation, f"piece{r}"))
    if p.info.ragged:
        rows = sels[0]
        whole = isinstance(rows, slice) and rows == slice(0, p.nrows)
        piece = p if whole else take_rows(p, np.arange(p.nrows)[rows])
        rec = write_file(name + ".arrow", [to_ipc(piece)])
        return {"values": rec, "_shape": [int(piece.nrows)]}
    whole = all(isinstance(s, slice) and s == slice(0, n)
                for s, n in zip(sels, p.values.shape))
    if whole:                       # the piece is the whole buffer: nothing to re-pack
        values = np.ascontiguousarray(p.values)
        bits = None if p.validity is None else \
            np.ascontiguousarray(p.validity[:(values.size + 7) // 8])
    else:
        piece = take_block(p, index_tuple(sels))
        values, bits = piece.values, piece.validity
    header = npy_header(values.dtype, values.shape)
    out = {"values": dict(write_file(name + ".values.npy", [header, values]),
                          header_bytes=len(header)),
           "_shape": list(values.shape)}
    if p.info.optional:
        header = npy_header(bits.dtype, bits.shape)
        out["validity"] = dict(write_file(name + ".validity.npy", [header, bits]),
                               header_bytes=len(header))
    return out


def _write_maps(d, path: str, generation: str) -> dict:
    """The indices of this rank's grid position along each unstructured
    dimension, written by the lowest rank at that position (no rank writes,
    or holds, anyone else's): ``map<k>`` records of an (n, 2) int64 .npy --
    each index and whether it counts here (is canonical) -- with the
    digests the loader rebuilds the map's fingerprint from."""
    out = {}
    for k, m in enumerate(d.maps):
        if m.dist_type != "u":
            continue
        c = d.coords[k]
        if min(r for r in range(d.size) if d.coords_of(r)[k] == c) != d.comm.rank:
            continue
        ids = m.global_indices(c)
        table = np.zeros((len(ids), 2), np.int64)
        table[:, 0] = ids
        table[m.canonical_positions(c), 1] = 1
        header = npy_header(table.dtype, table.shape)
        name = os.path.join(path, mf.file_name(generation, f"piece{d.comm.rank}.map{k}.npy"))
        out[f"map{k}"] = dict(write_file(name, [header, table]), header_bytes=len(header),
                              coord=int(c), digest=index_digest(ids).hex(),
                              canonical_digest=index_digest(ids[table[:, 1] == 1]).hex())
    return out


def _switch(path: str, generation: str, body: dict) -> None:
    """Rank 0: make the new generation current, then drop the old ones."""
    fsync_dir(path)                 # the new data files' names are durable
    crash_point("before-switch")
    tmp = os.path.join(path, f".manifest.{generation}.tmp")
    write_file(tmp, [mf.dumps(body)])
    os.replace(tmp, os.path.join(path, mf.MANIFEST))
    fsync_dir(path)
    crash_point("after-switch")
    keep = {rec["name"] for piece in body["pieces"] for rec in piece["files"].values()}
    keep |= {rec["name"] for rec in body.get("maps_files", {}).values()}
    old = [n for n in os.listdir(path) if (_OURS.match(n) or _TMP.match(n)) and n not in keep]
    # Deleting is housekeeping, not part of the save: on a filesystem
    # mounted with 'discard' (ext4 here) unlinking 1 GiB takes ~1.1 s, more
    # than writing it. A non-daemon thread does it, so the interpreter
    # waits for it at exit; a killed process leaves the files to the next
    # save, which removes every name its manifest does not list.
    t = threading.Thread(target=_remove, args=(path, old, True), name="xdap-save-cleanup")
    t.start()
    _cleanups[:] = [c for c in _cleanups if c.is_alive()] + [t]   # a save loop keeps no dead threads


def finish_cleanup() -> None:
    """Wait until the files of replaced generations are deleted."""
    while _cleanups:
        _cleanups.pop().join()


def _remove(path: str, names, sync: bool = False) -> None:
    for n in names:
        try:
            os.remove(os.path.join(path, n))
        except FileNotFoundError:
            pass
    if sync and names:
        try:
            fsync_dir(path)
        except OSError:         # the directory itself was removed meanwhile
            pass


_cleanups: list = []
