"""``__partitioned__`` export: a DistArray's tiles, zero-copy views of its
local data (see the package docstring for the dict).

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> export(*from_global(np.arange(6.0), dist=("c",), block_size=(2,), comm=MPI.COMM_SELF))["partition_tiling"]
(3,)
"""
from __future__ import annotations

import os
import socket

import numpy as np

from ...comm import attached
from ...parts import Parts

__all__ = ["export", "process_locations", "PartitionGetter"]


def _this_process() -> tuple:
    host = socket.gethostname()
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        ip = host
    return ip, os.getpid()


def process_locations(comm) -> list:
    """``[(ip, pid)]`` of every rank of ``comm`` (collective on the first call
    for a communicator, then kept on it: ``xdap.comm.attached``)."""
    return attached(comm, "partitioned").get_or_make(
        "process locations", lambda: [tuple(x) for x in comm.allgather(_this_process())])


class PartitionGetter:
    """The ``get`` of xdap's exports: local data are their own handles.

    A module-level class, so the export pickles (a lambda would not).
    Returns a handle as is, and a list (or tuple) of handles as a list.

    >>> PartitionGetter()([1, None])
    [1, None]
    """

    def __call__(self, handles):
        if isinstance(handles, (list, tuple)):
            return list(handles)
        return handles

    def __eq__(self, other):
        return isinstance(other, PartitionGetter)

    __hash__ = object.__hash__

    def __repr__(self):
        return "PartitionGetter()"


def export(d, p: Parts) -> dict:
    """The ``__partitioned__`` dict of ``(d, p)`` (see the package docstring).
    Zero-copy; collective only on the first export over a communicator."""
    d.require_dims("__partitioned__")
    dims = []
    for k, m in enumerate(d.maps):
        try:
            dims.append(m.tiles())
        except ValueError as e:
            raise ValueError(f"dimension {k}: {e}") from None
    tiling = tuple(len(t.start) for t in dims)
    where = process_locations(d.comm)
    ranks = np.empty(d.grid, np.int64)
    for r in range(d.comm.size):
        ranks[d.coords_of(r)] = r
    me = d.comm.rank
    if p.info.ragged:
        from ..arrow import to_arrow
        rows, view = to_arrow(p), None
    else:
        view = p.values
        mask = p.valid_mask()
        if mask is not None:
            view = np.ma.MaskedArray(p.values, mask=~mask, copy=False)
    partitions, mine = {}, []
    for pos in np.ndindex(*tiling):
        r = int(ranks[tuple(int(t.coord[i]) for t, i in zip(dims, pos))])
        start = tuple(int(t.start[i]) for t, i in zip(dims, pos))
        shape = tuple(int(t.size[i]) for t, i in zip(dims, pos))
        data = None
        if r == me:
            mine.append(pos)
            lo = [int(t.local[i]) for t, i in zip(dims, pos)]
            if view is None:
                data = rows.slice(lo[0], shape[0])
            else:
                data = view[tuple(slice(s, s + n) for s, n in zip(lo, shape))]
        partitions[pos] = {"start": start, "shape": shape, "data": data,
                           "location": [where[r]], "rank": r}
    return {"shape": tuple(d.global_shape), "partition_tiling": tiling,
            "partitions": partitions, "locals": mine, "get": PartitionGetter(),
            "type": p.info.global_type(d.global_shape)}
