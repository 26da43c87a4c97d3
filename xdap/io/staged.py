"""Loading a save with an unstructured dimension: read whole pieces, then
redistribute -- no rank reads, or holds, every index.

A save writes each rank's canonical piece and, per unstructured dimension,
the indices of each grid position (``map<k>`` files, written by the lowest
rank at that position, with a flag per index saying whether it counts
there).  To load, every rank first reads whole pieces -- its own, when the
save was made on as many ranks; else a contiguous run of them, when the
saved grid spreads only the unstructured dimension -- and makes them a
*staging* distribution: the saved layout without its copies, in which a
rank's indices along the unstructured dimension are those of the pieces it
read.  ``xdap.movement.redistribute.move`` then brings the data into the
target distribution (the saved one, copies included, by default).

A saved grid that spreads an unstructured dimension *and* another one is
loaded onto another rank count by reading every index file (O(size) per
rank): ``staged_maps`` returns None and the reader takes its direct path.
"""
from __future__ import annotations

import numpy as np
from ..distribution import Distribution
from ..maps import (DistributedUnstructuredMap, Map, UnstructuredMap, index_digest,
                    unstructured_fingerprint)
from ..agreement import agreement

__all__ = ["unstructured_dims", "read_index_table", "staged_load", "complete_maps"]


def unstructured_dims(body) -> list:
    """The saved unstructured dims whose indices are per grid position (the
    current format); [] for saves without them, or of the first format
    (one file per dimension, read whole by ``complete_maps``)."""
    dims = [k for k, m in enumerate(body["distribution"]["maps"]) if Map.kind_of(m).stored_indices]
    if not dims or body.get("maps_files"):
        return []
    return dims


def _map_records(body, k) -> dict:
    """{grid position: its map<k> record} along unstructured dim k."""
    out = {}
    for piece in body["pieces"]:
        rec = piece["files"].get(f"map{k}")
        if rec is not None:
            out[int(rec["coord"])] = rec
    return out


def read_index_table(path, rec, read_npy) -> np.ndarray:
    """A map<k> file: (n, 2) int64 -- each index and whether it counts there."""
    table = read_npy(path, rec)
    if table.ndim != 2 or table.shape[1] != 2 or table.dtype != np.int64:
        raise ValueError(f"xdap save {path!r}: file {rec['name']!r} is not an index table")
    if index_digest(table[:, 0]).hex() != rec["digest"]:
        raise ValueError(f"xdap save {path!r}: file {rec['name']!r} does not hold the indices "
                         "the manifest's digest names")
    return table


def complete_maps(path, body, read_npy) -> list:
    """The saved maps with every unstructured index read (O(size) per rank):
    for the first format, and for grids ``staged_load`` cannot stage."""
    jsons = body["distribution"]["maps"]
    maps = []
    for k, j in enumerate(jsons):
        if not Map.kind_of(j).stored_indices:
            maps.append(Map.from_json(j))
        elif body.get("maps_files"):
            maps.append(Map.from_json(j, {"indices": read_npy(path, body["maps_files"][str(k)])}))
        else:
            records = _map_records(body, k)
            tables = [read_index_table(path, records[c], read_npy) for c in range(j["grid_size"])]
            maps.append(UnstructuredMap(j["size"], [t[:, 0] for t in tables],
                                        one_to_one=j["one_to_one"]))
    return maps


def _saved_map(j, k, body, coord, table, canonical_only: bool):
    """Saved dim k at grid position ``coord`` as this process sees it: the
    kind's map, or a distributed unstructured map of that position (its
    indices from ``table``; only the canonical ones if ``canonical_only``)."""
    m = None if Map.kind_of(j).stored_indices else Map.from_json(j)
    if m is not None:
        return m.without_padding() if canonical_only else m
    records = _map_records(body, k)
    grid = j["grid_size"]
    if canonical_only:
        counts = [_piece_extent(body, k, c) for c in range(grid)]
        digests = [bytes.fromhex(records[c]["canonical_digest"]) for c in range(grid)]
        ids = table[table[:, 1] == 1, 0]
        return DistributedUnstructuredMap(j["size"], counts, {coord: ids}, True,
                                       unstructured_fingerprint(j["size"], True, counts, digests))
    digests = [bytes.fromhex(records[c]["digest"]) for c in range(grid)]
    return DistributedUnstructuredMap(
        j["size"], j["counts"], {coord: table[:, 0]}, j["one_to_one"],
        unstructured_fingerprint(j["size"], j["one_to_one"], j["counts"], digests),
        {coord: np.flatnonzero(table[:, 1] == 1)})


def _piece_extent(body, k, coord) -> int:
    """The canonical length along dim k of the pieces at grid position coord."""
    for piece in body["pieces"]:
        if piece["coords"][k] == coord:
            return int(piece["shape"][k])
    raise ValueError(f"the manifest has no piece at grid position {coord} of dim {k}")


def staged_load(path, body, info, comm, read_pieces, read_npy):
    """``(staging Distribution, its local Parts, the saved Distribution or
    None)``: whole pieces read and laid out (see the module docstring);
    None when the saved grid cannot be staged on ``comm``'s rank count.

    ``read_pieces(pieces, shape, along)`` reads the listed pieces whole,
    stacked along dim ``along``, into this rank's Parts."""
    jsons = body["distribution"]["maps"]
    pieces = body["pieces"]
    u_dims = unstructured_dims(body)
    n = len(pieces)
    spread = [k for k, j in enumerate(jsons) if j["grid_size"] > 1]
    if comm.size != n and (spread != u_dims[:1] or len(u_dims) != 1):
        return None
    if info.ragged and comm.size > n:       # a rank without pieces: no rows, which xnd
        return None                         # cannot hold -- read the target's rows directly
    # every rank's reading is one verdict: a missing or corrupt file stops all
    with agreement(comm, "load", share=True) as ag:
        if comm.size == n:                  # every rank its own piece, as saved
            me = comm.rank
            coords = pieces[me]["coords"]
            tables = {k: read_index_table(path, _map_records(body, k)[coords[k]], read_npy)
                      for k in u_dims}
            staging = [_saved_map(j, k, body, coords[k], tables.get(k), True)
                       for k, j in enumerate(jsons)]
            saved = [_saved_map(j, k, body, coords[k], tables.get(k), False)
                     for k, j in enumerate(jsons)]
            local = read_pieces([me], tuple(pieces[me]["shape"]), 0)
        else:                               # a run of pieces along the one spread dim
            k = u_dims[0]
            lo, hi = comm.rank * n // comm.size, (comm.rank + 1) * n // comm.size
            mine = sorted(range(lo, hi), key=lambda j: pieces[j]["coords"][k])
            records = _map_records(body, k)
            tables = [read_index_table(path, records[pieces[j]["coords"][k]], read_npy)
                      for j in mine]
            ids = np.concatenate([t[t[:, 1] == 1, 0] for t in tables]) if tables \
                else np.zeros(0, np.int64)
            shape = tuple(len(ids) if kk == k else j["size"] for kk, j in enumerate(jsons))
            local = read_pieces(mine, shape, k)
            ag.share(index_digest(ids))
    if comm.size == n:
        placement = body["distribution"]["rank_coords"]
        return (Distribution(staging, comm, placement), local,
                Distribution(saved, comm, placement))
    size = jsons[k]["size"]
    counts = [sum(int(pieces[j]["shape"][k]) for j in range(r * n // comm.size,
                                                              (r + 1) * n // comm.size))
              for r in range(comm.size)]
    fp = unstructured_fingerprint(size, True, counts, ag.shared)
    maps = [Map.from_json(j) if kk != k else
            DistributedUnstructuredMap(size, counts, {comm.rank: ids}, True, fp)
            for kk, j in enumerate(jsons)]
    return Distribution(maps, comm), local, None
