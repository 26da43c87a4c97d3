"""Loading a directory of the previous save format (version 1: ``.npy`` and
Arrow IPC pieces plus ``manifest.json``, described in docs/format.md), so
saves made before the Zarr store still load. xdap no longer writes it.

Rank 0 reads and checks the manifest and broadcasts it; every rank then
reads the saved pieces that hold its buffer's global indices (see
``xdap.io.plan``), verifying each file's length and CRC-32, and the ranks
agree on one verdict before anything is returned: a missing, truncated or
corrupt file raises the same ValueError on every rank.
"""
from __future__ import annotations

import os

import numpy as np
from ..parts import Parts
from ..rows import concat_parts, take_rows
from ..bitmaps import pack_validity, unpack_validity
from ..distribution import Distribution
from ..movement.redistribute import move
from ..types import Kind, TypeInfo
from . import manifest as mf
from . import staged
from .files import map_verified, read_into
from .npy import parse_npy_header
from .plan import index_tuple, read_plan, selection_size
from .targets import default_distribution, requested_distribution
from ..agreement import agree, agreement

__all__ = ["load_generation", "read_manifest", "MANIFEST"]

MANIFEST = mf.MANIFEST


def load_generation(path, body, comm, dist, grid, per_dim) -> tuple:
    """(distribution, local Parts) of the save that manifest ``body``
    describes (collective; errors are raised alike on every rank).
    ``xdap.io.store_reader.load`` calls this for directories with a
    ``manifest.json``."""
    with agreement(comm):
        ragged = Kind(body["kind"]) is Kind.RAGGED
        info = TypeInfo(body["kind"], () if ragged else tuple(body["shape"]),
                        body["var_ndim"], body["dtype"], body["optional"])
        where = {tuple(p["coords"]): p["rank"] for p in body["pieces"]}
        if len(where) != len(body["pieces"]) or sorted(where.values()) != list(range(len(where))):
            raise ValueError(f"xdap save {path!r}: the manifest's pieces do not match its grid")
    if staged.unstructured_dims(body):
        out = staged.staged_load(path, body, info, comm,
                                 lambda pieces, shape, along: _read_whole(path, body, info, pieces,
                                                                          shape, along), _read_npy)
        if out is not None:           # read whole pieces, then redistribute
            stage, local, saved = out
            with agreement(comm):
                d = saved if saved is not None and dist is None and grid is None and \
                    not per_dim else _target(body, None, comm, dist, grid, per_dim)
            return move(stage, local, d)
    with agreement(comm):
        saved = staged.complete_maps(path, body, _read_npy)
        d = _target(body, saved, comm, dist, grid, per_dim)

    local, error = None, None
    try:
        need = [m.buffer_indices(c) for m, c in zip(d.maps, d.coords)]
        plan = read_plan(saved, lambda coords: where[coords], need)
        local = (_read_ragged if info.ragged else _read_fixed)(path, body, info, plan,
                                                               d.local_shape)
    except Exception as e:      # MemoryError too: raised here alone, it left the others waiting
        error = e if isinstance(e, (ValueError, TypeError)) else \
            ValueError(f"xdap save {path!r}: {type(e).__name__}: {e}")
    agree(comm, error)
    return d, local


def read_manifest(path: str) -> dict:
    """The checked manifest body of a format-1 save (rank 0)."""
    name = os.path.join(path, mf.MANIFEST)
    with open(name, "rb") as f:
        return mf.loads(f.read(), f"xdap save {path!r}")


def _read_npy(path: str, rec: dict, into=None) -> np.ndarray:
    """A whole verified 1-d .npy file of the save."""
    header = np.empty(rec["header_bytes"], np.uint8)
    if into is None:
        body = np.empty(rec["bytes"] - rec["header_bytes"], np.uint8)
        read_into(path, rec, [header, body])
        dtype, shape = _check_header(path, rec, header, None, None)
        return body.view(dtype).reshape(shape)
    read_into(path, rec, [header, into])
    _check_header(path, rec, header, into.dtype, into.shape)
    return into


def _check_header(path, rec, header, dtype, shape):
    try:
        got_dtype, got_shape = parse_npy_header(header)
    except ValueError as e:
        raise ValueError(f"xdap save {path!r}: file {rec['name']!r}: {e}") from None
    if dtype is not None and (got_dtype != dtype or got_shape != tuple(shape)):
        raise ValueError(f"xdap save {path!r}: file {rec['name']!r} holds {got_dtype} "
                         f"{got_shape}, the manifest says {np.dtype(dtype)} {tuple(shape)}")
    return got_dtype, got_shape


def _target(body, saved, comm, dist, grid, per_dim) -> Distribution:
    """The distribution to load onto (see ``xdap.io.store_reader.load``);
    ``saved``: the saved maps, when this rank has them whole."""
    shape = tuple(body["shape"])
    if dist is None and grid is None and not per_dim:
        if comm.size == len(body["pieces"]) and saved is not None:
            return Distribution(saved, comm, body["distribution"]["rank_coords"])
        return default_distribution(shape, body["distribution"]["maps"], comm)
    return requested_distribution(shape, Kind(body["kind"]) is Kind.RAGGED, comm, dist, grid,
                                  per_dim)


def _read_whole(path, body, info, pieces, shape, along) -> Parts:
    """The listed saved pieces read whole and stacked along dim ``along``."""
    plan, at = [], 0
    for j in pieces:
        pshape = tuple(body["pieces"][j]["shape"])
        n = pshape[along]
        bsel = tuple(slice(at, at + n) if k == along else slice(0, m)
                     for k, m in enumerate(pshape))
        plan.append((j, bsel, tuple(slice(0, m) for m in pshape)))
        at += n
    return (_read_ragged if info.ragged else _read_fixed)(path, body, info, plan, shape)


def _is_whole(sels, shape) -> bool:
    return all(isinstance(s, slice) and s.start == 0 and s.stop == n for s, n in zip(sels, shape))


def _map_npy(path: str, rec: dict, dtype, shape) -> np.ndarray:
    """A whole verified .npy piece as a copy-on-write memory map (zero-copy)."""
    data = map_verified(path, rec)
    _check_header(path, rec, data[:rec["header_bytes"]], dtype, shape)
    return data[rec["header_bytes"]:].view(dtype).reshape(shape)


def _read_fixed(path, body, info, plan, local_shape) -> Parts:
    dtype = info.numpy_dtype
    if len(plan) == 1 and _is_whole(plan[0][1], local_shape) \
            and _is_whole(plan[0][2], body["pieces"][plan[0][0]]["shape"]):
        # The buffer is exactly one saved piece (a load onto the saved
        # distribution): map it instead of reading it into new memory.
        piece = body["pieces"][plan[0][0]]
        values = _map_npy(path, piece["files"]["values"], dtype, local_shape)
        validity = None
        if info.optional:
            n = int(np.prod(local_shape))
            validity = _read_npy(path, piece["files"]["validity"],
                                 into=np.empty((n + 7) // 8, np.uint8))
        return Parts(info.with_shape(local_shape), values, validity)
    values = np.empty(local_shape, dtype)
    mask = np.ones(local_shape, bool) if info.optional else None
    for rank, bsel, psel in plan:
        piece = body["pieces"][rank]
        pshape = tuple(piece["shape"])
        if [selection_size(s) for s in bsel] != [selection_size(s) for s in psel]:
            raise ValueError(f"xdap save {path!r}: piece {rank} does not match the saved "
                             "distribution")
        dest = values[index_tuple(bsel)] if all(isinstance(s, slice) for s in bsel) else None
        if _is_whole(psel, pshape) and dest is not None and dest.flags.c_contiguous:
            _read_npy(path, piece["files"]["values"], into=dest)     # straight into place
        else:
            tmp = _read_npy(path, piece["files"]["values"], into=np.empty(pshape, dtype))
            values[index_tuple(bsel)] = tmp[index_tuple(psel)]
        if mask is not None:
            rec = piece["files"]["validity"]
            n = int(np.prod(pshape))
            bits = _read_npy(path, rec, into=np.empty((n + 7) // 8, np.uint8))
            mask[index_tuple(bsel)] = unpack_validity(bits, n).reshape(pshape)[index_tuple(psel)]
    validity = None if mask is None else pack_validity(mask)
    return Parts(info.with_shape(local_shape), values, validity)


def _read_ragged(path, body, info, plan, local_shape) -> Parts:
    from .arrow_file import from_ipc       # pyarrow (25 MiB a rank) only for old ragged stores
    got = []
    for rank, (bsel,), (psel,) in plan:
        piece = body["pieces"][rank]
        rec = piece["files"]["values"]
        data = map_verified(path, rec)
        try:
            pp = from_ipc(data, info)
        except (ValueError, OSError) as e:        # pyarrow's errors derive from these
            raise ValueError(f"xdap save {path!r}: file {rec['name']!r}: {e}") from None
        if pp.nrows != piece["shape"][0]:
            raise ValueError(f"xdap save {path!r}: file {rec['name']!r} holds {pp.nrows} rows, "
                             f"the manifest says {piece['shape'][0]}")
        if not _is_whole((psel,), (pp.nrows,)):
            pp = take_rows(pp, np.arange(pp.nrows)[psel])
        got.append((np.arange(local_shape[0])[bsel], pp))
    if len(got) == 1 and _is_whole((plan[0][1][0],), local_shape):
        return got[0][1]                                   # zero-copy over the file's bytes
    if not got:
        raise ValueError("load: this rank's part of the ragged array would have no rows, and "
                         "xnd 0.2.0.dev3 cannot hold a ragged container of zero rows; load onto "
                         "fewer ranks or a distribution that gives every rank a row")
    positions = np.concatenate([g for g, _ in got])
    allp = concat_parts([pp for _, pp in got])
    order = np.argsort(positions, kind="stable")
    if (order == np.arange(len(order))).all():
        return allp
    return take_rows(allp, order)
