"""The xdap store convention on top of Zarr v3 (pure: no MPI, no files).

A store is a Zarr v3 group. Its attribute ``"xdap"`` says what the arrays
in it mean; everything else is plain Zarr that any Zarr v3 reader opens
(docs/format.md is the specification, with examples):

``values``       fixed data: the global array, global shape, one chunk grid;
                 ragged data: the leaf values of all rows, flat (1-d)
``validity``     ``?T`` data: bool, shaped like ``values``, True = valid
``offsets<L>``   ragged data: int64 Arrow-style offsets, one array per var
                 dimension below the rows (``offsets0`` has rows + 1 entries)
``indices<k>``   unstructured dim k: ``(n, 2)`` int64, each grid position's
                 indices one after another, with 1 where the index counts
                 there (its canonical copy)

Leaves NumPy and Zarr v3 both know (bool, ints, floats, complex) are stored
natively. Every other fixed-size leaf (records, fixed strings and bytes) is
stored as its bytes: uint8 with one more, trailing dimension of the item
size, the NumPy ``descr`` in the attributes -- readable everywhere, exact.

>>> from xdap.types import type_info
>>> storage(type_info("3 * 4 * ?float64"))
(dtype('float64'), None)
>>> storage(type_info("3 * {x : int32, y : float64}"))[1]      # aligned, as xnd lays it out
16
>>> sorted(array_names(type_info("var * var * var * ?int8"), []))
['offsets0', 'offsets1', 'validity', 'values']
"""
from __future__ import annotations

import numpy as np

from ..maps import MAP_KINDS, Map
from ..types import TypeInfo, type_info

__all__ = ["FORMAT", "FORMAT_VERSION", "READ_VERSIONS", "CHECKSUMS", "checksums_name",
           "ATTRIBUTE", "VALUES", "VALIDITY", "offsets_name",
           "indices_name", "storage", "array_names", "info_of", "validate", "describe_numpy"]

FORMAT = "xdap-zarr"
FORMAT_VERSION = 3          # version 1 was the npy/Arrow IPC + manifest.json directory
READ_VERSIONS = (2, 3)      # version 2: no chunk position table (checksums/)
CHECKSUMS = "checksums"     # the group of every array's chunk CRC-32C table
ATTRIBUTE = "xdap"
VALUES = "values"
VALIDITY = "validity"


def offsets_name(level: int) -> str:
    """The offsets array of var dimension ``level`` below the rows (0 = row offsets)."""
    return f"offsets{level}"


def indices_name(dim: int) -> str:
    return f"indices{dim}"


def checksums_name(name: str) -> str:
    """The table of array ``name``'s chunk checksums, by chunk position."""
    return f"{CHECKSUMS}/{name}"


def storage(info: TypeInfo) -> tuple:
    """``(dtype stored, item bytes or None)``: a leaf Zarr v3 holds natively
    is stored as itself (None); any other as uint8 with a trailing dimension
    of its item size."""
    dt = info.numpy_dtype
    if dt.fields is None and dt.kind in "biufc" and dt.subdtype is None:
        return dt, None
    return np.dtype(np.uint8), dt.itemsize


def array_names(info: TypeInfo, unstructured_dims) -> list:
    """The arrays a store of this type holds."""
    names = [VALUES] + ([VALIDITY] if info.optional else [])
    if info.ragged:
        names += [offsets_name(level) for level in range(info.var_ndim - 1)]
    return names + [indices_name(k) for k in unstructured_dims]


def info_of(attrs: dict) -> TypeInfo:
    """The TypeInfo of a store with these (validated) attributes: of the
    global type (shape () for ragged data, whose rows are distributed, and
    for a 0-d array: one element, held by every rank)."""
    return type_info(attrs["type"], scalar=not attrs["shape"])


_KEYS = {"format": str, "version": int, "generation": int, "type": str, "kind": str,
         "shape": list, "distribution": dict, "xdap_version": str, "numpy_descr": str}


def validate(attrs, where: str) -> None:
    """Check a store's ``xdap`` attribute as untrusted input: the schema, the
    kind and shape against the type, the maps against the shape and the
    grid. The arrays are checked against it when they are opened
    (``xdap.io.store_reader``). ValueError says what is wrong."""
    def bad(message):
        raise ValueError(f"{where}: the store's 'xdap' attribute is invalid: {message}")

    if not isinstance(attrs, dict):
        bad("not a JSON object")
    if attrs.get("format") != FORMAT:
        bad(f"format {attrs.get('format')!r} is not {FORMAT!r}")
    if attrs.get("version") not in READ_VERSIONS or isinstance(attrs.get("version"), bool):
        raise ValueError(f"{where}: xdap store format version {attrs.get('version')!r} is not "
                         f"supported (this xdap reads versions {list(READ_VERSIONS)}, and "
                         "version 1 directories with a manifest.json)")
    for key, kind in _KEYS.items():
        if key not in attrs:
            bad(f"missing key {key!r}")
        if not isinstance(attrs[key], kind) or (kind is int and isinstance(attrs[key], bool)):
            bad(f"{key!r} must be a {kind.__name__}, got {attrs[key]!r:.60}")
    try:
        info = type_info(attrs["type"], scalar=attrs["shape"] == [])
    except (TypeError, ValueError) as e:
        bad(f"type {attrs['type']!r}: {e}")
    if attrs["kind"] != info.kind.value:
        bad(f"kind {attrs['kind']!r} contradicts the type {attrs['type']!r}")
    shape = attrs["shape"]
    if not _ints(shape, 0):
        bad(f"shape must hold ints >= 0, got {shape!r:.60}")
    if info.ragged and len(shape) != 1:
        bad(f"a ragged store's shape is [rows], got {shape!r}")
    if not info.ragged and list(info.shape) != shape:
        bad(f"shape {shape} contradicts the type {attrs['type']!r}")
    if _descr(info) != attrs["numpy_descr"]:
        bad(f"numpy_descr {attrs['numpy_descr']!r} contradicts the type {attrs['type']!r}")
    dist = attrs["distribution"]
    grid, placement, maps = dist.get("grid"), dist.get("rank_coords", "?"), dist.get("maps")
    if not _ints(grid, 1) or len(grid) != len(shape):
        bad(f"distribution.grid must be {len(shape)} ints >= 1, got {grid!r:.60}")
    nprocs = int(np.prod(grid))
    if placement is not None and (not isinstance(placement, list) or len(placement) != nprocs
                                  or not all(_ints(c, 0) and len(c) == len(grid)
                                             for c in placement)):
        bad(f"distribution.rank_coords must be null or {nprocs} coordinate lists")
    if not isinstance(maps, list) or len(maps) != len(shape) or \
            not all(isinstance(m, dict) for m in maps):
        bad(f"distribution.maps must be {len(shape)} dicts, got {maps!r:.60}")
    for k, m in enumerate(maps):
        if not _ints([m.get("size"), m.get("grid_size")], 0) or m["size"] != shape[k] \
                or m["grid_size"] != grid[k]:
            bad(f"distribution.maps[{k}] has size {m.get('size')!r} on {m.get('grid_size')!r} "
                f"grid positions; the shape and grid say {shape[k]} on {grid[k]}")
        if m.get("dist_type") in MAP_KINDS and Map.kind_of(m).stored_indices:
            digests = m.get("digests")
            if not isinstance(digests, list) or len(digests) != grid[k] or not all(
                    isinstance(x, str) and len(x) == 32 for x in digests + m.get(
                        "canonical_digests", [None])):
                bad(f"distribution.maps[{k}] (unstructured) needs {grid[k]} index digests")


def describe_numpy(info: TypeInfo) -> str:
    """The ``numpy_descr`` attribute: the leaf's NumPy dtype, as a string."""
    return _descr(info)


def _descr(info: TypeInfo) -> str:
    dt = info.numpy_dtype
    return str(dt.descr) if dt.fields is not None else dt.str


def _ints(values, minimum) -> bool:
    return isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in values)
