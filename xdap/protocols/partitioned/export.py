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

from ... import plans
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
    for a communicator, then kept on it: ``xdap.plans.on``)."""
    return plans.on(comm).get_or_make(
        plans.Key("process locations"), lambda: [tuple(x) for x in comm.allgather(_this_process())])


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


DIALECTS = ("spec", "heat")


def _check_heat(d, p: Parts) -> None:
    """What heat 1.8's reader needs (see ``export``)."""
    info = p.info
    if info.ragged or info.optional or info.numpy_dtype.fields is not None or \
            info.numpy_dtype.kind not in "biufc" or info.dtype.startswith("categorical"):
        raise ValueError(f"__partitioned__(dialect='heat'): heat holds plain numeric arrays "
                         f"(torch tensors), not {info.global_type(d.global_shape)!r}")
    spread = [k for k, g in enumerate(d.grid) if g > 1]
    if len(spread) > 1:
        raise ValueError(f"__partitioned__(dialect='heat'): heat splits one axis, this array "
                         f"is distributed over dims {spread} (grid {d.grid}); redistribute "
                         "it first, e.g. a.redistribute(dist=('b', 'n'))")
    for k in spread:
        m = d.maps[k]
        if not m.contiguous:
            raise ValueError(f"__partitioned__(dialect='heat'): heat's split axis is in "
                             f"unpadded blocks; dim {k} is {m!r}")
    if not d.c_order:
        raise ValueError("__partitioned__(dialect='heat'): heat wants the partitions in rank "
                         "order along the split axis; this array's ranks sit elsewhere on "
                         "the grid")


def export(d, p: Parts, dialect: str = "spec") -> dict:
    """The ``__partitioned__`` dict of ``(d, p)`` (see the package docstring).
    Zero-copy; collective only on the first export over a communicator.

    ``dialect="heat"``: the form heat (1.8, ``ht.from_partition_dict``)
    reads -- each partition's ``location`` is ``[rank]`` (heat takes
    ``int(location[0])``; the spec's ``[(ip, pid)]`` makes it fail), and
    only what heat can hold is exported: plain numeric fixed data, at most
    one distributed dimension, in unpadded blocks with the ranks in grid
    order. Anything else raises a ValueError naming the rule, on every rank
    alike (it depends only on the distribution and the type, which all
    ranks share). No communication at all.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> h = export(*from_global(np.arange(4.0), comm=MPI.COMM_SELF), dialect="heat")
    >>> h["partitions"][(0,)]["location"], h["locals"]
    ([0], [(0,)])
    """
    d.require_dims("__partitioned__")
    if dialect not in DIALECTS:
        raise ValueError(f"__partitioned__: dialect must be one of {DIALECTS}, got {dialect!r}")
    if dialect == "heat":
        _check_heat(d, p)
    dims = []
    for k, m in enumerate(d.maps):
        try:
            dims.append(m.tiles())
        except ValueError as e:
            raise ValueError(f"dimension {k}: {e}") from None
    tiling = tuple(len(t.start) for t in dims)
    where = list(range(d.comm.size)) if dialect == "heat" else process_locations(d.comm)
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
        if dialect == "heat":
            partitions[pos]["dtype"] = str(view.dtype)
    return {"shape": tuple(d.global_shape), "partition_tiling": tiling,
            "partitions": partitions, "locals": mine, "get": PartitionGetter(),
            "type": p.info.global_type(d.global_shape)}
