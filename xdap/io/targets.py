"""The distribution a load produces when the caller names none, or names one
(pure: no MPI traffic; shared by both store formats' readers).

>>> from mpi4py import MPI
>>> jsons = [{"dist_type": "c", "size": 6, "grid_size": 3, "block_size": 2}]
>>> default_distribution((6,), jsons, MPI.COMM_SELF).maps
(CyclicMap(size=6, grid_size=1, block_size=2),)
"""
from __future__ import annotations

from ..comm import balanced_grid
from ..distribution import Distribution, make_distribution
from ..maps import Map

__all__ = ["default_distribution", "requested_distribution"]


def default_distribution(shape, jsons, comm) -> Distribution:
    """Keep each dim's kind on another rank count: the saved maps resized
    over a balanced grid of the distributed dims ('u' becomes 'b')."""
    # a cyclic dim saved from one rank was still asked to be distributed
    kinds = [Map.kind_of(j) for j in jsons]
    distributed = [k for k, (j, kind) in enumerate(zip(jsons, kinds))
                   if j["grid_size"] > 1 or kind.stays_distributed] or [0]
    grid = [1] * len(jsons)
    for k, g in zip(distributed, balanced_grid(comm.size, len(distributed))):
        grid[k] = g
    return Distribution([kind.resized_from_json(j, g) for j, kind, g in zip(jsons, kinds, grid)],
                        comm)


def requested_distribution(shape, ragged: bool, comm, dist, grid, per_dim) -> Distribution:
    """The distribution ``dist``/``grid``/``per_dim`` ask for (as in
    ``xdap.from_global``); ragged data takes one entry, for its rows."""
    if ragged and dist is not None and len(tuple(dist)) != 1:
        raise ValueError(f"ragged data is distributed by rows: dist needs one entry, got {dist!r}")
    return make_distribution(shape, dist, grid, comm, **per_dim)
