"""DAP dimension dictionaries: the protocol's generic rules (pure, no MPI).

Each map kind owns its wire form (``Map.to_dim_dict`` / ``from_dim_dicts``,
in ``xdap.maps``); what every dimension dictionary must satisfy whatever its
kind -- a dict, the required keys of its ``dist_type``, integer values, one
``size`` and ``proc_grid_size`` across the grid, ``proc_grid_rank`` in
order, the ``{}`` and 0.9.0 ``'n'`` aliases -- is checked here, and so is
the appendix's ``num_owned_indices`` (done right).

>>> m = map_from_dim_dicts([{"dist_type": "c", "size": 7, "proc_grid_size": 2,
...                          "proc_grid_rank": p, "start": 2 * p, "block_size": 2}
...                         for p in range(2)], [4, 3])
>>> m
CyclicMap(size=7, grid_size=2, block_size=2)
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..maps import MAP_KINDS, CyclicMap, Map, dap_minor, is_int

__all__ = ["map_from_dim_dicts", "check_dim_dicts", "num_owned_indices"]


def int_arg(name: str, v, minimum: int | None = None) -> int:
    if not is_int(v):
        raise TypeError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return int(v)


_REQUIRED = {"b": ("start", "stop"), "c": ("start",), "u": ("indices",)}
_COMMON = ("size", "proc_grid_size", "proc_grid_rank")


def map_from_dim_dicts(dicts, buffer_lengths, version: str = "0.10.0") -> Map:
    """Build and validate the map of one dimension from every grid rank's dict.

    ``dicts[p]`` is grid rank ``p``'s dimension dictionary for this dimension
    and ``buffer_lengths[p]`` its local buffer length along it.  ``{}`` is the
    0.10.0 alias for an undistributed block over the whole buffer (accepted
    in 0.9.0 too); 0.9.0's ``'n'`` (undistributed, optional boundary
    ``padding``) becomes a one-rank :class:`BlockMap`.  Every violated rule
    raises ValueError/TypeError naming the rule, the grid rank and the value.

    >>> dicts = [{'dist_type': 'b', 'size': 18, 'proc_grid_size': 2, 'proc_grid_rank': 0,
    ...           'start': 0, 'stop': 9, 'padding': (1, 1)},
    ...          {'dist_type': 'b', 'size': 18, 'proc_grid_size': 2, 'proc_grid_rank': 1,
    ...           'start': 9, 'stop': 18, 'padding': (1, 1)}]
    >>> m = map_from_dim_dicts(dicts, [10, 10], version="0.9.0")
    >>> from xdap.maps import BlockMap
    >>> m == BlockMap(18, 2, padding=(1, 1)), m.to_dim_dict(1)["start"]
    (True, 8)
    >>> map_from_dim_dicts([{}], [4])
    BlockMap(size=4, grid_size=1, bounds=(0, 4))
    >>> map_from_dim_dicts([{'dist_type': 'c', 'size': 5, 'proc_grid_size': 1,
    ...                      'proc_grid_rank': 0, 'start': 0}], [4])
    Traceback (most recent call last):
    ...
    ValueError: cyclic dimension: buffer length of grid rank 0 (4) must equal its owned count (5)
    """
    kind, dicts, lengths, size, minor = check_dim_dicts(dicts, buffer_lengths, version)
    return MAP_KINDS[kind].from_dim_dicts(dicts, lengths, size, minor)


def check_dim_dicts(dicts, buffer_lengths, version: str = "0.10.0") -> tuple:
    """The protocol's generic rules over one dimension's dicts (see
    ``map_from_dim_dicts``): returns ``(dist_type, dicts with the aliases
    expanded, buffer lengths, size, minor version)`` for the kind's own
    ``from_dim_dicts`` -- or, for a distributed unstructured dimension, for
    ``xdap.directory.unstructured_map`` (the ``indices`` values are then
    not looked at here)."""
    minor = dap_minor(version)
    dicts, lengths = list(dicts), list(buffer_lengths)
    if not dicts:
        raise ValueError("need one dimension dictionary per grid rank, got none")
    if len(lengths) != len(dicts):
        raise ValueError(f"got {len(dicts)} dimension dictionaries but {len(lengths)} "
                         f"buffer lengths")
    for p, n in enumerate(lengths):
        int_arg(f"buffer length of grid rank {p}", n, 0)
    dicts = [_expand_alias(d, p, int(n), minor, len(dicts)) for p, (d, n)
             in enumerate(zip(dicts, lengths))]

    for p, d in enumerate(dicts):
        if "dist_type" not in d:
            raise ValueError(f"required key 'dist_type' missing in the dict of grid rank {p}")
    kind = dicts[0]["dist_type"]
    if kind not in _REQUIRED:
        raise ValueError(f"dist_type of grid rank 0 ({kind!r}) is unknown "
                         f"(known: 'b', 'c', 'u'" + (", 'n')" if minor == 9 else ")"))
    name = MAP_KINDS[kind].name
    for p, d in enumerate(dicts):
        if d.get("dist_type") != kind:
            raise ValueError(f"{name} dimension: dist_type of grid rank {p} "
                             f"({d['dist_type']!r}) differs from grid rank 0 ({kind!r})")
        for key in _COMMON + _REQUIRED[kind]:
            if key not in d:
                raise ValueError(f"{name} dimension: required key {key!r} missing in the "
                                 f"dict of grid rank {p}")
            if key != "indices" and not is_int(d[key]):
                raise TypeError(f"{name} dimension: {key} of grid rank {p} must be an int, "
                                f"got {d[key]!r} ({type(d[key]).__name__})")
        if d["size"] < 0:
            raise ValueError(f"{name} dimension: size of grid rank {p} ({d['size']}) must be >= 0")
        if d["proc_grid_size"] < 1:
            raise ValueError(f"{name} dimension: proc_grid_size of grid rank {p} "
                             f"({d['proc_grid_size']}) must be >= 1")
        for key in ("size", "proc_grid_size"):
            if d[key] != dicts[0][key]:
                raise ValueError(f"{name} dimension: {key} of grid rank {p} ({d[key]}) "
                                 f"differs from grid rank 0 ({dicts[0][key]})")
        if d["proc_grid_rank"] != p:
            raise ValueError(f"{name} dimension: proc_grid_rank of the dict at grid rank {p} "
                             f"is {d['proc_grid_rank']} (must equal its position {p})")
    if dicts[0]["proc_grid_size"] != len(dicts):
        raise ValueError(f"{name} dimension: proc_grid_size ({dicts[0]['proc_grid_size']}) "
                         f"must equal the number of dicts given ({len(dicts)})")
    return kind, dicts, [int(n) for n in lengths], int(dicts[0]["size"]), minor


def _expand_alias(d, p: int, n: int, minor: int, ndicts: int) -> Mapping:
    if not isinstance(d, Mapping):
        raise TypeError(f"dimension dictionary of grid rank {p} must be a dict, got "
                        f"{type(d).__name__}")
    if len(d) == 0:                       # spec 1.6.3: undistributed block
        return {"dist_type": "b", "proc_grid_rank": 0, "proc_grid_size": 1,
                "start": 0, "stop": n, "size": n}
    if d.get("dist_type") != "n":
        return d
    if minor != 9:
        raise ValueError(f"dist_type of grid rank {p} ('n') is only valid in DAP 0.9.0")
    if ndicts != 1:
        raise ValueError(f"undistributed dimension ('n'): grid size is 1, but {ndicts} "
                         f"dicts were given")
    if "size" not in d:
        raise ValueError("undistributed dimension ('n'): required key 'size' missing in the "
                         "dict of grid rank 0")
    if not is_int(d["size"]):
        raise TypeError(f"undistributed dimension ('n'): size of grid rank 0 must be an int, "
                        f"got {d['size']!r}")
    out = {"dist_type": "b", "proc_grid_rank": 0, "proc_grid_size": 1,
           "start": 0, "stop": d["size"], "size": d["size"]}
    for key in ("padding", "periodic"):
        if key in d:
            out[key] = d[key]
    return out



def undistributed(d) -> bool:
    """Whether a dimension dict is one of the aliases of an undistributed
    dimension: ``{}`` or 0.9.0's ``'n'`` (checked by ``check_dim_dicts``).

    >>> undistributed({}), undistributed({"dist_type": "n", "size": 3})
    (True, True)
    """
    return not d or d.get("dist_type") == "n"


def num_owned_indices(dim_dict: Mapping, version: str = "0.10.0") -> int:
    """Number of indices owned according to ONE dimension dictionary.

    Block follows the spec appendix (0.10.0: ``stop - start`` minus
    communication padding; 0.9.0: ``stop - start``); cyclic uses the true
    count, unlike the appendix (which gives the partial last block to rank
    0); unstructured is ``len(indices)``; 0.9.0 ``'n'`` is ``size``.

    >>> dd = {'dist_type': 'c', 'size': 7, 'proc_grid_size': 2, 'block_size': 2}
    >>> [num_owned_indices(dict(dd, proc_grid_rank=p, start=2 * p)) for p in range(2)]
    [4, 3]
    >>> num_owned_indices({'dist_type': 'b', 'size': 18, 'proc_grid_size': 2,
    ...                    'proc_grid_rank': 1, 'start': 8, 'stop': 18, 'padding': (1, 1)})
    9
    """
    minor = dap_minor(version)
    if len(dim_dict) == 0:
        raise ValueError("an empty dimension dictionary owns its whole buffer; the count "
                         "is the buffer length, which the dict does not carry")
    kind = dim_dict["dist_type"]
    if kind == "n":
        return int(dim_dict["size"])
    if kind == "b":
        count = dim_dict["stop"] - dim_dict["start"]
        if minor == 9:
            return int(count)
        lo, hi = dim_dict.get("padding", (0, 0))
        p, P = dim_dict["proc_grid_rank"], dim_dict["proc_grid_size"]
        return int(count - (lo if p > 0 else 0) - (hi if p < P - 1 else 0))
    if kind == "c":
        return CyclicMap(dim_dict["size"], dim_dict["proc_grid_size"],
                         dim_dict.get("block_size", 1)).owned_count(dim_dict["proc_grid_rank"])
    if kind == "u":
        return len(np.asarray(dim_dict["indices"]))
    raise ValueError(f"dist_type {kind!r} is unknown (known: 'b', 'c', 'u')")
