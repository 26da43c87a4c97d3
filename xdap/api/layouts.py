"""The layouts the public functions need on the way -- an axis made whole,
rows in blocks, every index owned once -- each one redistribution (or
none, when the array is laid out so already), for functions that have
agreed their arguments: the target is computed from agreed values, so
every rank moves alike without another vote.  And the small wrappers that
make a result an array like its operand.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(2, 3), dist=("c",), comm=MPI.COMM_SELF)
>>> rows(a).distribution.row_blocks
True
"""
from __future__ import annotations

import numpy as np

from .. import plans
from ..distribution import Distribution, make_distribution
from ..dtypes import dtype_from_numpy
from ..maps import BlockMap
from ..parts import Parts
from ..types import type_info

__all__ = ["moved", "axis_whole", "axes_whole", "in_blocks", "rows", "one_copy", "owned", "wrap",
           "values_on", "with_axis", "scalar_array", "scalar_maker", "from_every_rank", "info_like",
           "reshaped",
           "filled"]


def moved(x, target: Distribution):
    """``x`` in the distribution ``target`` (itself when it has it)."""
    if x.distribution == target:
        return x
    from ..movement.redistribute import move_agreed
    return x.__xdap_wrap__(*move_agreed(x.distribution, x.parts, target), False, True)


def axis_whole(x, axis: int):
    """``x`` redistributed so that ``axis`` is whole on every rank (block
    on the other dims): one exchange."""
    spec = tuple("n" if j == axis else "b" for j in range(x.ndim))
    return moved(x, make_distribution(x.distribution.global_shape, spec, comm=x.comm))


def axes_whole(x, axes):
    """``x`` with ``axes`` whole on every rank and another dim in blocks (the
    first one as long as the ranks are many; else all the others), nothing
    padded: itself when it is so already, else one exchange. When ``axes``
    are all the dims, the whole array goes to rank 0 (the others hold none
    of it)."""
    d = x.distribution
    if not any(m.padded for m in d.maps) and all(d.maps[a].whole for a in axes):
        return x
    shape = d.global_shape
    if all(j in axes for j in range(x.ndim)):
        sizes = ([shape[0]] + [0] * (x.comm.size - 1),)
        return moved(x, make_distribution(shape, ("b",), comm=x.comm, sizes=sizes))
    # slabs where one other dim can spread over every rank (one dim split:
    # mpi4py-fft's slab layout), else blocks on all the others
    others = [j for j in range(x.ndim) if j not in axes]
    spread = next((j for j in others if shape[j] >= x.comm.size), None)
    split = [spread] if spread is not None else others
    spec = tuple("b" if j in split else "n" for j in range(x.ndim))
    return moved(x, make_distribution(shape, spec, comm=x.comm))


def in_blocks(x):
    """A 1-D ``x`` with its elements in blocks (itself when its map is
    one): one exchange from cyclic or unstructured maps."""
    if x.distribution.maps[0].ranges and not x.distribution.maps[0].shared_owned:
        return x
    return moved(x, make_distribution(x.distribution.global_shape, ("b",), comm=x.comm))


def rows(x):
    """``x`` with its rows in blocks and the other dims whole (each rank a
    range of the global C order): itself when it is so, else redistributed
    (one exchange)."""
    if x.distribution.row_blocks:
        return x
    shape = x.distribution.global_shape
    return moved(x, make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=x.comm))


def one_copy(x):
    """``x`` with every index owned once: an array whose map shares owned
    indices among ranks (a reduction's result is replicated over a team)
    is redistributed to blocks first (one exchange), else ``x`` itself."""
    return rows(x) if any(m.shared_owned for m in x.distribution.maps) else x


def owned(d, p):
    """This rank's owned block of a fixed array (padding left out)."""
    return p.values[tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))]


def wrap(x, d, values):
    """NumPy ``values`` (this rank's block of ``d``) as an array like ``x``."""
    values = np.asarray(values, order="C")
    return x.__xdap_wrap__(d, Parts.of_array(values), False, True)


def values_on(y, target):
    """This rank's values of the DistArray ``y`` redistributed to ``target``
    (one exchange; none when ``y`` is already so)."""
    from ..movement.redistribute import to_layout
    return to_layout(y.distribution, y.parts, target)[1].values


def with_axis(d, axis, size):
    """``d`` with ``axis`` whole and of length ``size``."""
    maps = list(d.maps)
    maps[axis] = BlockMap(size, 1)
    return Distribution(maps, d.comm, d.rank_coords)


def info_like(x, v):
    """The TypeInfo of values ``v`` computed from ``x``'s: ``x``'s where the
    dtype is the same, else ``v``'s own (``matmul(uint16, uint64)``)."""
    info = x.parts.info if v.dtype == x.parts.values.dtype else \
        type_info("1 * " + dtype_from_numpy(v.dtype))
    return info.with_shape(v.shape)


def scalar_array(x, value):
    """A 0-d DistArray (its one value on every rank) like ``x``, of the
    value's NumPy dtype (``x``'s for a Python scalar)."""
    dt = value.dtype if isinstance(value, (np.ndarray, np.generic)) else x.parts.values.dtype
    v = np.asarray(value, dt, order="C")         # ascontiguousarray would make it 1-d
    return x.__xdap_wrap__(Distribution((), x.comm), Parts(info_like(x, v), v), False, True)


def scalar_maker(x, dt):
    """``scalar_array`` for a repeated call: ``(x, value) -> 0-d array`` of
    dtype ``dt`` like ``x``, its distribution and type made once."""
    d0 = Distribution((), x.comm)
    info = info_like(x, np.zeros((), dt))
    dt = np.dtype(dt)
    return lambda x, value: x.__xdap_plain__(d0, info, value, True, dt)


def from_every_rank(x, value):
    """``(Distribution, Parts)`` of ``value`` (on every rank) in row blocks."""
    d = make_distribution(value.shape, ("b",) + ("n",) * (value.ndim - 1), comm=x.comm)
    lo, hi = d.maps[0].owned_range(d.coords[0])
    v = np.ascontiguousarray(value[lo:hi])
    return d, Parts(info_like(x, v), v)


def reshaped(x, shape: tuple):
    """``x`` (fixed, not optional) in the checked, agreed ``shape`` of its
    size: itself for its own shape; a view where its rows are in blocks
    and the first dim stays (each rank reshapes its block); else its
    elements, seen as one line in C order, moved to the new shape's row
    blocks (one exchange; other layouts are moved to row blocks first); a
    0-d array or result through the value every rank then holds."""
    d, p = x.distribution, x.parts
    if shape == d.global_shape:
        return x
    if not shape or not d.maps:
        from ..movement.gather import to_global
        value = np.asarray(to_global(d, p).values).reshape(shape)
        return scalar_array(x, value) if not shape else x.__xdap_wrap__(
            *from_every_rank(x, value), False, True)
    nd = reshaped_in_place(d, shape)
    if nd is not None:
        values = p.values.reshape(nd.local_shape)      # a view: the elements stay
        return x.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values), False, True)
    x = rows(x)
    d, p = x.distribution, x.parts
    from ..movement.redistribute import move_agreed
    target = make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=x.comm)
    flat = Parts(p.info.with_shape((p.values.size,)), np.ascontiguousarray(p.values).reshape(-1))
    _, line = move_agreed(_line(d), flat, _line(target))
    values = line.values.reshape(target.local_shape)
    return x.__xdap_wrap__(target, Parts(p.info.with_shape(values.shape), values), False, True)


def reshaped_in_place(d, shape: tuple):
    """The distribution of ``shape`` under which every rank keeps its own
    elements, or None: ``d``'s rows are in blocks (each rank's elements one
    range of the C order) and every rank's range is whole rows of the new
    shape -- ``(n, 6) -> (n, 2, 3)`` always, ``10^7 -> (10^4, 10^3)`` on 4
    ranks (blocks of 2.5 * 10^6 = 2,500 rows).  Read from the agreed bounds
    alone: the same answer on every rank, no MPI call.

    >>> from xdap.maps import BlockMap
    >>> d = Distribution.detached([BlockMap(12, 2)])
    >>> reshaped_in_place(d, (4, 3)).maps[0].bounds, reshaped_in_place(d, (3, 4))
    ((0, 2, 4), None)
    """
    if not shape or not d.row_blocks:
        return None
    found = plans.pure.get_or_make(plans.Key("reshape in place", (d.fingerprint(), shape)),
                                   lambda: _whole_rows(d, shape))
    if found is None:
        return None
    maps, coords = found
    return Distribution.detached(maps, coords) if d.comm is None else \
        Distribution(maps, d.comm, coords)


def _whole_rows(d, shape):
    """``reshaped_in_place``'s maps and rank placement (pure: kept)."""
    line = np.asarray(d.maps[0].bounds, np.int64) * int(np.prod(d.global_shape[1:], dtype=np.int64))
    row = int(np.prod(shape[1:], dtype=np.int64))
    if row == 0 or (line % row).any():
        if row == 0 and shape[0] == d.global_shape[0]:   # empty rows: the first dim's blocks
            line, row = np.asarray(d.maps[0].bounds, np.int64), 1
        else:
            return None
    maps = [BlockMap(shape[0], d.maps[0].grid_size, bounds=line // row)] + \
        [BlockMap(n, 1) for n in shape[1:]]
    coords = np.zeros((d.size, len(shape)), np.int64)
    coords[:, 0] = d.rank_coords[:, 0]
    return tuple(maps), coords


def _line(d):
    """A row-block distribution seen as one line of its elements in C order:
    rank r's rows are the range ``bounds * row size``."""
    m = d.maps[0]
    row = int(np.prod(d.global_shape[1:], dtype=np.int64))
    bounds = np.asarray(m.bounds, np.int64) * row
    return Distribution([BlockMap(int(bounds[-1]), m.grid_size, bounds=bounds)], d.comm,
                        d.rank_coords[:, :1])


def filled(x, shape: tuple):
    """A 0-d ``x``'s value (missing stays missing) over ``shape``'s default
    distribution: each rank fills its block (every rank holds the value:
    no MPI call)."""
    from ..create import _allocate
    d = make_distribution(shape, comm=x.comm)
    p = x.parts
    valid = p.validity is None or bool(p.valid_mask().reshape(-1)[0])
    return x.__xdap_wrap__(d, _allocate(d, p.info.with_shape((1,)), p.values[()] if valid
                                        else None), False, True)


def unit_dim(x, axis: int):
    """``x`` with a dim of size 1 inserted at the agreed ``axis``
    (undistributed): a view of every rank's block, no MPI call; a 0-d
    ``x``'s value goes to the one rank of ``(1,)``'s block."""
    if x.ndim == 0:
        return filled(x, (1,))
    d, p = x.distribution, x.parts
    maps = list(d.maps)
    maps.insert(axis, BlockMap(1, 1))
    nd = Distribution(maps, x.comm, np.insert(d.rank_coords, axis, 0, axis=1))
    values = p.values.reshape(nd.local_shape)
    return x.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values, p.validity),
                           False, True)


def broadcast(x, shape: tuple):
    """``x`` broadcast to the agreed ``shape`` (``broadcast_to``'s work):
    size-1 undistributed dims stretched locally where they can be, else a
    template of ``shape``'s default distribution and ``x`` brought to it
    (a smaller ``x`` is gathered on every rank: collective)."""
    from .. import create
    from ..arraylike import new
    from ..kernels.apply import _leading, broadcast_operands
    if x.shape == shape:
        return x
    leaf = x.parts.info.leaf
    if 0 in shape:                      # nothing to fill
        return new(create.zeros(shape, type=leaf.lstrip("?"), comm=x.comm))
    if x.ndim == 0:
        return filled(x, shape)
    try:
        return _leading((x,), shape, None)           # stretched locally
    except ValueError:
        pass
    template = new(create.empty(shape, type=leaf, comm=x.comm))
    return broadcast_operands((template, x))[1]
