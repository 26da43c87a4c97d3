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
import zlib


from ..maps import Map

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
    return body
