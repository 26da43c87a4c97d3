"""The manifest of an xdap save: what it holds, described in JSON (pure, no MPI).

``<path>/manifest.json`` is the only file a save ever replaces (atomically,
``os.replace``); it names the current generation's data files, so whatever
it names is complete. Its content::

    {"xdap_save": {...body...}, "crc32": CRC-32 of the body's canonical JSON}

The body (see docs/exchange.md, "Saving and loading", for every key)::

    format        "xdap-save"
    version       FORMAT_VERSION (1)
    generation    "g000001", "g000002", ...: the prefix of this save's files
    type          the global ndtypes type, e.g. "10 * 3 * ?float64"
    kind, dtype, optional, var_ndim, shape
    distribution  {"grid", "rank_coords" (or null), "maps": [one dict per dim]}
    pieces        one per saving rank: {"rank", "coords", "shape", "files": {role: record}}
    maps_files    {} (the first format: {dim: record} of whole index arrays);
                  unstructured dims' indices are per piece ("map<k>" files)

>>> from xdap.maps import BlockMap, CyclicMap
>>> maps = [BlockMap(10, 2, padding=(1, 1)), CyclicMap(4, 1, 2)]
>>> d = maps_to_json(maps)
>>> maps_from_json(d, {}) == maps
True
"""
from __future__ import annotations

import json
import re
import zlib


from ..maps import MAP_KINDS, Map

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "maps_to_json",
           "maps_from_json", "dumps", "loads", "generation_name", "file_name"]

FORMAT = "xdap-save"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def generation_name(number: int) -> str:
    """The prefix of a generation's files."""
    return f"g{number:06d}"


def file_name(generation: str, what: str) -> str:
    """e.g. file_name("g000001", "piece3.values.npy") -> "g000001.piece3.values.npy"."""
    return f"{generation}.{what}"


def maps_to_json(maps) -> list:
    return [m.to_json() for m in maps]


def maps_from_json(dicts, indices: dict) -> list:
    """Rebuild the maps; ``indices[k]`` is the concatenated int64 index array
    of unstructured dim k (``Map.json_arrays``). The map constructors
    validate everything."""
    maps = []
    for k, d in enumerate(dicts):
        try:
            maps.append(Map.from_json(d, {"indices": indices[k]} if k in indices else None))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"dimension {k}: {e}") from None
    return maps


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def dumps(body: dict) -> bytes:
    """The manifest file's bytes: the body and the CRC-32 of its canonical form."""
    return json.dumps({"xdap_save": body, "crc32": zlib.crc32(_canonical(body))},
                      indent=1, sort_keys=True).encode() + b"\n"


def loads(data: bytes, where: str) -> dict:
    """Parse and check a manifest; ValueError says what is wrong with it."""
    try:
        outer = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{where}: manifest.json is not valid JSON ({e}); corrupt or not "
                         "an xdap save") from None
    if not isinstance(outer, dict) or "xdap_save" not in outer or "crc32" not in outer:
        raise ValueError(f"{where}: manifest.json is not an xdap save manifest "
                         "(no 'xdap_save' body)")
    body = outer["xdap_save"]
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ValueError(f"{where}: not an xdap save (format {body.get('format')!r} "
                         f"instead of {FORMAT!r})" if isinstance(body, dict) else
                         f"{where}: not an xdap save")
    crc = zlib.crc32(_canonical(body))
    if crc != outer["crc32"]:
        raise ValueError(f"{where}: manifest.json is corrupt: CRC-32 {crc:#010x} does not "
                         f"match the stored {outer['crc32']!r}")
    if body.get("version") != FORMAT_VERSION:
        raise ValueError(f"{where}: xdap save format version {body.get('version')!r} is not "
                         f"supported (this xdap reads version {FORMAT_VERSION})")
    validate(body, where)
    return body


# -- the body as untrusted input ----------------------------------------------------------

_GENERATION = re.compile(r"^g\d{6}$")
_KEYS = {"format": str, "version": int, "generation": str, "type": str, "kind": str,
         "dtype": str, "optional": bool, "var_ndim": int, "shape": list, "distribution": dict,
         "maps_files": dict, "pieces": list}


def validate(body: dict, where: str) -> None:
    """Check a manifest body as untrusted input (its CRC only says it was
    not damaged, not that a program wrote it): the schema; the flags
    against the type string; the maps against the shape and the grid;
    one piece per rank, in rank order, at its own grid position; and every
    file name a plain name of this generation -- nothing outside the store
    is ever opened.  A ValueError says what is wrong."""
    def bad(message):
        raise ValueError(f"{where}: the manifest is invalid: {message}")

    for key, kind in _KEYS.items():
        if key not in body:
            bad(f"missing key {key!r}")
        if not isinstance(body[key], kind) or (kind is int and isinstance(body[key], bool)):
            bad(f"{key!r} must be a {kind.__name__}, got {body[key]!r:.60}")
    gen = body["generation"]
    if not _GENERATION.match(gen):
        bad(f"generation {gen!r} is not of the form g000001")
    _check_type(body, bad)
    dist = body["distribution"]
    ndim = 1 if body["kind"] == "ragged" else len(body["shape"])
    grid, coords_of, maps = dist.get("grid"), dist.get("rank_coords", "?"), dist.get("maps")
    if not _ints(grid, 1) or len(grid) != ndim:
        bad(f"distribution.grid must be {ndim} ints >= 1, got {grid!r:.60}")
    if not isinstance(maps, list) or len(maps) != ndim or not all(isinstance(m, dict)
                                                                  for m in maps):
        bad(f"distribution.maps must be {ndim} dicts, got {maps!r:.60}")
    for k, m in enumerate(maps):
        if not _ints([m.get("size"), m.get("grid_size")], 0) or m["size"] != body["shape"][k] \
                or m["grid_size"] != grid[k]:
            bad(f"distribution.maps[{k}] has size {m.get('size')!r} on {m.get('grid_size')!r} "
                f"grid positions; the shape and grid say {body['shape'][k]} on {grid[k]}")
    pieces = body["pieces"]
    nprocs = 1
    for g in grid:
        nprocs *= g
    if len(pieces) != nprocs:
        bad(f"{len(pieces)} pieces for a grid of {nprocs} positions")
    if coords_of is not None and (not isinstance(coords_of, list) or len(coords_of) != nprocs):
        bad(f"distribution.rank_coords must be null or {nprocs} coordinate lists")
    seen = set()
    for r, piece in enumerate(pieces):
        if not isinstance(piece, dict) or piece.get("rank") != r:
            bad(f"pieces[{r}] is not rank {r}'s piece (pieces are in rank order)")
        c = piece.get("coords")
        want = _c_order(r, grid) if coords_of is None else coords_of[r]
        if not _ints(c, 0) or c != want or any(x >= g for x, g in zip(c, grid)):
            bad(f"pieces[{r}] sits at grid position {c!r}, the distribution says {want!r}")
        if tuple(c) in seen:
            bad(f"grid position {c} holds two pieces")
        seen.add(tuple(c))
        if not _ints(piece.get("shape"), 0) or len(piece["shape"]) != ndim:
            bad(f"pieces[{r}].shape must be {ndim} ints >= 0, got {piece.get('shape')!r:.60}")
        _check_files(piece.get("files"), body, r, bad)
    for k, rec in body["maps_files"].items():          # the first format's index files
        _check_record(rec, f"{gen}.map{k}.indices.npy", f"maps_files[{k!r}]", bad)


def _check_type(body, bad):
    from ..types import Kind, type_info
    try:
        info = type_info(body["type"])
    except (TypeError, ValueError) as e:
        bad(f"type {body['type']!r}: {e}")
    if body["kind"] not in (Kind.FIXED.value, Kind.RAGGED.value):
        bad(f"kind {body['kind']!r} is neither 'fixed' nor 'ragged'")
    says = {"kind": info.kind.value, "dtype": info.dtype, "optional": info.optional,
            "var_ndim": info.var_ndim}
    for key, value in says.items():
        if body[key] != value:
            bad(f"{key} {body[key]!r} contradicts the type {body['type']!r} ({value!r})")
    shape = body["shape"]
    if not _ints(shape, 0):
        bad(f"shape must hold ints >= 0, got {shape!r:.60}")
    if info.ragged:
        if len(shape) != 1:
            bad(f"a ragged save's shape is [rows], got {shape!r}")
    elif list(info.shape) != shape:
        bad(f"shape {shape} contradicts the type {body['type']!r}")


def _check_files(files, body, r, bad):
    """A piece's file records: the roles its type needs, each named as the
    writer names it."""
    gen = body["generation"]
    if not isinstance(files, dict):
        bad(f"pieces[{r}].files must be a dict")
    ragged = body["kind"] == "ragged"
    roles = {"values": f"{gen}.piece{r}." + ("arrow" if ragged else "values.npy")}
    if body["optional"] and not ragged:
        roles["validity"] = f"{gen}.piece{r}.validity.npy"
    for k, m in enumerate(body["distribution"]["maps"]):
        if f"map{k}" in files and m.get("dist_type") in MAP_KINDS and \
                Map.kind_of(m).stored_indices:
            roles[f"map{k}"] = f"{gen}.piece{r}.map{k}.npy"
    extra = set(files) - set(roles)
    if extra:
        bad(f"pieces[{r}].files has unexpected role(s) {sorted(extra)} for type "
            f"{body['type']!r}")
    for role, name in roles.items():
        if role not in files:
            bad(f"pieces[{r}].files lacks its {role!r} file (type {body['type']!r})")
        _check_record(files[role], name, f"pieces[{r}].files[{role!r}]", bad)


def _check_record(rec, name, what, bad):
    if not isinstance(rec, dict):
        bad(f"{what} must be a file record")
    if rec.get("name") != name:
        bad(f"{what} names file {rec.get('name')!r}, expected {name!r} (a plain name in the "
            "save's directory)")
    for key in ("bytes", "crc32") + (("header_bytes",) if name.endswith(".npy") else ()):
        if not _ints([rec.get(key)], 0):
            bad(f"{what}[{key!r}] must be an int >= 0, got {rec.get(key)!r}")


def _ints(values, minimum) -> bool:
    return isinstance(values, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= minimum for v in values)


def _c_order(rank, grid) -> list:
    out = []
    for g in reversed(grid):
        out.append(rank % g)
        rank //= g
    return out[::-1]
