"""``__partitioned__`` import: the collective entry point.
"""
from __future__ import annotations

import numpy as np

from ...heap import trims_heap
from ... import comm as _comm
from ...agreement import agreement
from ...distribution import Distribution
from .export import process_locations
from .geometry import Geometry, geometry
from .layout import assemble, plan_layout
from .tiles import claimed_tiles, element_type, fetch_tiles

__all__ = ["import_partitioned"]


@trims_heap
def import_partitioned(obj, comm=None) -> tuple:
    """Import a ``__partitioned__`` export: ``(Distribution, Parts)``
    (collective; ``xdap.from_partitioned`` wraps it).

    ``obj`` is an object with ``__partitioned__`` (a property, or a method)
    or the dict itself, given on every rank of ``comm`` (default
    ``MPI.COMM_WORLD``). Accepted forms:

    - the draft spec: ``location`` ``[(ip, pid[, device])]``, ``locals``;
    - heat: ``location`` ``[rank]``, extra ``dtype`` / ``device`` keys (the
      ``dtype`` is checked against the data; a non-CPU device is refused);
      a ``get`` that takes single handles;
    - Ray/Dask style: handles in ``data`` resolved through ``get`` (called
      with the list of this rank's handles when it accepts lists, else once
      per handle), with or without ``locals``.

    Data objects may be NumPy arrays (masked arrays -> ``?T``), torch-like
    tensors (``.numpy()``, ``__array__``, buffer protocol), xnd containers,
    pyarrow or awkward arrays (ragged rows).

    Validated on every rank and agreed collectively (every rank raises the
    same ValueError/TypeError): required keys and types; the tiles form the
    grid ``partition_tiling`` and cover ``shape`` without overlap or gap;
    ``locals`` agree with which data are present; each tile's data has the
    tile's shape and a supported dtype, the same on all tiles and ranks and
    equal to a ``dtype`` key; all ranks describe the same tiles; every tile
    is held by some rank.

    Who holds what: ``locals`` if given, else ``location`` (MPI ranks or
    ``(ip, pid)`` of this communicator's processes), else the tiles are
    dealt out in C order. A tile held by several ranks is taken from the
    lowest. The result is block distributed along each dimension where
    each grid coordinate holds one tile, block-cyclic where tiles are
    regular and dealt round robin, unstructured otherwise (see
    ``plan_layout``); ranks holding no tile get empty blocks (1-d grids).

    Zero-copy when a rank holds one C-contiguous tile; several tiles per
    rank (block-cyclic) are copied once into the local buffer.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> d = {"shape": (4,), "partition_tiling": (1,), "partitions": {
    ...      (0,): {"start": (0,), "shape": (4,), "data": np.arange(4.0), "location": [0]}},
    ...      "locals": [(0,)], "get": lambda x: x}
    >>> dist, p = import_partitioned(d, comm=MPI.COMM_SELF)
    >>> dist.global_shape, p.values.tolist()
    ((4,), [0.0, 1.0, 2.0, 3.0])
    """
    comm = _comm.resolve(comm)
    table = process_locations(comm)
    g, tiles = None, {}
    with agreement(comm, share=True) as ag:
        d = obj
        if not isinstance(d, dict) and hasattr(obj, "__partitioned__"):
            d = obj.__partitioned__
            if callable(d) and not isinstance(d, dict):
                d = d()
        g = geometry(d)
        mine = claimed_tiles(d, g, table, comm.size, comm.rank)
        tiles = fetch_tiles(d, g, mine)
        kinds = {element_type(p) for p in tiles.values()}
        ag.share((g.digest, g.shape, g.tiling, np.array(sorted(tiles), np.int64),
                  kinds.pop() if kinds else None))
    summaries = ag.shared
    with agreement(comm):
        (layout, members), element = _agree(summaries, g, comm.size, comm.rank)
        owners = _owners(summaries, g.ntiles)
        kept = {i: p for i, p in tiles.items() if owners[i] == comm.rank}
        local = assemble(layout, members, comm.rank, g.bounds, g.tiling, kept, element)
    return Distribution(layout.maps, comm, rank_coords=layout.rank_coords), local


def _agree(summaries, g: Geometry, nprocs: int, rank: int):
    """Cross-rank checks on the gathered summaries, then the plan (pure)."""
    digest, shape, tiling = summaries[0][:3]
    for r, s in enumerate(summaries):
        if s[:3] != (digest, shape, tiling):
            raise ValueError(f"ranks describe different partitionings: rank 0 has shape {shape} "
                             f"tiling {tiling}, rank {r} has shape {s[1]} tiling {s[2]}"
                             + (" (and different tiles)" if s[1:3] == (shape, tiling) else ""))
    kinds = [(r, s[4]) for r, s in enumerate(summaries) if s[4] is not None]
    for r, k in kinds:
        if k != kinds[0][1]:
            raise TypeError(f"dtype mismatch: rank {kinds[0][0]} holds {kinds[0][1]!r} but rank "
                            f"{r} holds {k!r}")
    owners = _owners(summaries, g.ntiles)
    missing = np.flatnonzero(owners < 0)
    if missing.size:
        raise ValueError(f"partition {g.positions[int(missing[0])]!r} is held by no rank (in no "
                         "rank's 'locals', or its 'data' is missing everywhere)")
    if not kinds[0][1].startswith("fixed ") and len(g.tiling) != 1:
        raise ValueError(f"ragged data are tiled by rows only, but 'partition_tiling' is {g.tiling}")
    return plan_layout(g.bounds, owners, nprocs, rank), kinds[0][1]


def _owners(summaries, ntiles: int) -> np.ndarray:
    """Owner of each tile: the lowest rank holding it (-1: nobody)."""
    owners = np.full(ntiles, -1, np.int64)
    for r in reversed(range(len(summaries))):
        owners[summaries[r][3]] = r
    return owners
