"""More of NumPy's array functions on DistArrays, built from the moves
``xdap.numpy_api`` already has (so each says what it moves by what it
calls): ``moveaxis``, ``unstack``, ``tile``, ``repeat``, ``diff``,
``broadcast_arrays``, ``meshgrid``, ``take_along_axis``, ``vecdot``,
``tensordot``, ``count_nonzero``, ``real``, ``imag``.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6).reshape(2, 3), comm=MPI.COMM_SELF)
>>> xdap.tile(a, (1, 2)).to_numpy().tolist()
[[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]]
>>> xdap.diff(a, axis=1).to_numpy().tolist()
[[1, 1], [1, 1]]
"""
from __future__ import annotations

import numpy as np

from .agreement import agreement
from .arraylike import is_distributed
from .distribution import Distribution
from .dtypes import is_integer
from .maps import BlockMap
from .numpy_api import (_agree, _axis, _axis_whole, _fixed, _from_every_rank, _numeric, _rows,
                        _scalar_array, _wrap, broadcast_to, concat, matmul, permute_dims, reshape,
                        take)

__all__ = ["moveaxis", "unstack", "tile", "repeat", "diff", "broadcast_arrays", "meshgrid",
           "take_along_axis", "vecdot", "tensordot", "count_nonzero", "real", "imag"]


def _axes(name, x, axis) -> tuple:
    return tuple(_axis(name, x, a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))


# -- shape and order ---------------------------------------------------------------
def moveaxis(x, source, destination, /):
    """``x`` with the dims ``source`` moved to ``destination`` (NumPy's
    order for the others): ``permute_dims``, so no data moves.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> moveaxis(xdap.zeros((2, 3, 4), comm=MPI.COMM_SELF), 0, -1).shape
    (3, 4, 2)
    """
    _fixed("moveaxis", x)
    src, dst = _axes("moveaxis", x, source), _axes("moveaxis", x, destination)
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         "be as many distinct dims")
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of arrays (``x[i]``
    each: along a block dim the slab moves to every rank of the grid's
    other positions; a 1-D ``x`` gives 0-d arrays, one value each read
    from its holder).  Collective."""
    _fixed("unstack", x)
    axis = _axis("unstack", x, axis)
    head = (slice(None),) * axis
    out = []
    for i in range(x.distribution.global_shape[axis]):
        part = x[head + (i,)]
        out.append(part if is_distributed(part) else _scalar_array(x, part))
    return tuple(out)


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions[k]`` times along each dim k (NumPy's
    ``tile``; fewer repetitions than dims repeat the last dims): one
    ``concat`` per repeated dim -- a redistribution of each copy to its
    place in the result (a copy)."""
    _numeric("tile", x)
    reps = (repetitions,) if isinstance(repetitions, (int, np.integer)) else tuple(repetitions)
    if not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) and r >= 0
               for r in reps):
        raise ValueError(f"tile: repetitions must be ints >= 0, got {repetitions!r}")
    if len(reps) > x.ndim:
        x = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r == 0:
            x = x[(slice(None),) * axis + (slice(0, 0),)]
        elif r > 1:
            x = concat([x] * int(r), axis=axis)
    return x if any(r != 1 for r in reps) else x.copy()


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times along ``axis`` (None: of the
    flattened array), NumPy's ``repeat``; ``repeats`` an int or a 1-D array
    of one count per element along ``axis`` (NumPy's, the same on every
    rank, or a DistArray).  Along the first dim of an array in row blocks
    nothing moves: each rank repeats its own rows and the result is an
    irregular block (its sizes from one allgather); other distributed dims
    are made whole first (one exchange).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> repeat(xdap.from_global(np.array([1, 2]), comm=MPI.COMM_SELF), 2).to_numpy().tolist()
    [1, 1, 2, 2]
    """
    _numeric("repeat", x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = _axis("repeat", x, axis)
    n = x.distribution.global_shape[axis]
    if is_distributed(repeats) and repeats.ndim == 1 and repeats.shape[0] == 1 != n:
        repeats = repeats.to_numpy()            # one count for every element
    if is_distributed(repeats):
        if repeats.ndim != 1 or not is_integer(repeats.parts.info.dtype) or \
                repeats.parts.info.optional:
            raise TypeError(f"repeat: repeats must be a 1-D integer array, not {repeats.type}")
        if repeats.shape[0] != n:
            raise ValueError(f"repeat: {repeats.shape[0]} repeats for {n} elements along "
                             f"axis {axis}")
    else:
        counts = np.asarray(repeats)
        if counts.ndim > 1 or (counts.size and counts.dtype.kind not in "iu") or \
                (counts.ndim == 1 and counts.shape[0] not in (1, n)):
            raise ValueError(f"repeat: repeats must be an int or {n} ints, got {repeats!r}")
        if counts.size and counts.min() < 0:
            raise ValueError(f"repeat: repeats must be >= 0, got {repeats!r}")
        if x.comm.size > 1:
            _agree(x, "repeat", repeats=counts.tolist(), axis=axis)
        if counts.ndim == 1 and counts.shape[0] == 1:
            counts = counts[0]
        if counts.ndim == 0 or x.distribution.maps[axis].whole:
            repeats = counts
    d = x.distribution
    if d.maps[axis].whole:
        mine = repeats.to_numpy() if is_distributed(repeats) else repeats
        values = np.repeat(x.parts.values, mine, axis=axis)
        maps = list(d.maps)
        maps[axis] = BlockMap(values.shape[axis], 1)
        return _wrap(x, Distribution(maps, x.comm, d.rank_coords), values)
    if axis != 0:
        return repeat(_axis_whole(x, axis), repeats, axis=axis)
    x = _rows(x)
    d = x.distribution
    lo, hi = d.maps[0].owned_range(d.coords[0])
    if is_distributed(repeats):
        mine = _values_on(repeats, d.leading(1)).astype(np.int64)
    else:
        mine = repeats if np.ndim(repeats) == 0 else np.asarray(repeats)[lo:hi]
    values = np.repeat(x.parts.values, mine, axis=0)
    sizes = np.empty(x.comm.size, np.int64)
    x.comm.Allgather(np.array([len(values)], np.int64), sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes[d.rank_coords[:, 0].argsort()])])
    maps = [BlockMap(int(bounds[-1]), d.maps[0].grid_size, bounds=bounds)] + list(d.maps[1:])
    return _wrap(x, Distribution(maps, x.comm, d.rank_coords), values)


def _on(y, target):
    """The DistArray ``y`` redistributed to ``target`` (itself when it is)."""
    if y.distribution == target:
        return y
    from .movement.redistribute import move
    return y.__xdap_wrap__(*move(y.distribution, y.parts, target), False, True)


def _values_on(y, target):
    """This rank's values of the DistArray ``y`` redistributed to ``target``
    (one exchange; none when ``y`` is already so)."""
    if y.distribution == target:
        return y.parts.values
    from .movement.redistribute import move
    return move(y.distribution, y.parts, target)[1].values


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th differences along ``axis`` (NumPy's ``diff``), with
    ``prepend``/``append`` joined first (``concat``).  Local along an
    undistributed axis; along a distributed one ``x[1:] - x[:-1]`` with the
    first slice moved onto the second's distribution (along a block dim,
    one slab per rank: one exchange per order).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> diff(xdap.from_global(np.array([1, 4, 9]), comm=MPI.COMM_SELF)).to_numpy().tolist()
    [3, 5]
    """
    _numeric("diff", x)
    axis = _axis("diff", x, axis)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff: n must be an int >= 0, got {n!r}")
    if prepend is not None or append is not None:
        ends = [x if e is None else _distributed_like(x, e, axis) for e in (prepend, append)]
        parts = ([ends[0]] if prepend is not None else []) + [x] + \
            ([ends[1]] if append is not None else [])
        x = concat(parts, axis=axis)
    if n == 0:
        return x
    d = x.distribution
    if not d.maps[axis].whole:
        # x[1:] - x[:-1], the first moved onto the second's blocks: along a
        # block dim each rank receives only the slab after its own
        head = (slice(None),) * axis
        for _ in range(int(n)):
            lo = x[head + (slice(None, -1),)]
            hi = _on(x[head + (slice(1, None),)], lo.distribution)
            x = hi - lo
        return x
    values = np.diff(x.parts.values, n=int(n), axis=axis)
    maps = list(d.maps)
    maps[axis] = BlockMap(values.shape[axis], 1)
    return _wrap(x, Distribution(maps, x.comm, d.rank_coords), values)


def _distributed_like(x, e, axis):
    """``prepend``/``append`` of ``diff``: a DistArray as it is; a scalar or
    NumPy array (the same on every rank) broadcast to ``x``'s shape with
    its own size along ``axis``."""
    if is_distributed(e):
        return e
    e = np.asarray(e)
    shape = list(x.shape)
    shape[axis] = 1 if e.ndim == 0 else e.shape[axis]
    e = np.broadcast_to(e, shape)
    return x.__xdap_wrap__(*_from_every_rank(x, np.asarray(e, order="C")), False, True)


# -- broadcasting ------------------------------------------------------------------
def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape (``broadcast_to`` each),
    as a list."""
    for a in arrays:
        _fixed("broadcast_arrays", a)
    try:
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise ValueError(f"broadcast_arrays: shapes {[a.shape for a in arrays]} do not "
                         "broadcast") from None
    return [broadcast_to(a, shape) for a in arrays]


def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-D arrays (NumPy's ``meshgrid``; ``"xy"``
    swaps the first two dims of the result).  Each result has the default
    distribution of its shape and each rank fills its block from the 1-D
    input gathered (``broadcast_to``: O(input) a rank)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        _numeric("meshgrid", a)
        if a.ndim != 1:
            raise ValueError(f"meshgrid: takes 1-D arrays, got shape {a.shape}")
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError("meshgrid: the arrays must have one dtype")
    sizes = [a.shape[0] for a in arrays]
    pos = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) > 1:
        pos[0], pos[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for a, k in zip(arrays, pos):
        shape = [1] * len(arrays)
        shape[k] = a.shape[0]
        out.append(broadcast_to(reshape(a, tuple(shape)), tuple(sizes)))
    return out


# -- indexing ----------------------------------------------------------------------
def take_along_axis(x, indices, /, *, axis=-1):
    """The elements of ``x`` at ``indices`` along ``axis`` (NumPy's
    ``take_along_axis``): ``indices`` a DistArray of ``x``'s shape but for
    ``axis``.  1-D: ``take`` (a ``Scatter`` from the owners).  N-d: both
    are made whole along ``axis`` (one exchange each, where needed), then
    every rank takes locally.  An index out of range is one ValueError on
    every rank."""
    _numeric("take_along_axis", x)
    axis = _axis("take_along_axis", x, axis)
    if not is_distributed(indices) or not is_integer(indices.parts.info.dtype) or \
            indices.parts.info.optional or indices.parts.info.ragged:
        raise TypeError("take_along_axis: indices must be an integer DistArray")
    if indices.ndim != x.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape,
                                                                           indices.shape))
                                     if j != axis):
        raise ValueError(f"take_along_axis: indices of shape {indices.shape} for an array "
                         f"of shape {x.shape} along axis {axis}")
    if x.ndim == 1:
        return take(x, indices)
    if not x.distribution.maps[axis].whole:
        x = _axis_whole(x, axis)
    idx = _values_on(indices, _with_axis(x.distribution, axis, indices.shape[axis]))
    n = x.shape[axis]
    idx = idx.astype(np.int64)
    with agreement(x.comm, "take_along_axis"):
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise ValueError(f"take_along_axis: index {int(idx[(idx < -n) | (idx >= n)][0])} "
                             f"is out of bounds for axis {axis} of size {n}")
    values = np.take_along_axis(x.parts.values, np.where(idx < 0, idx + n, idx), axis=axis)
    return _wrap(x, _with_axis(x.distribution, axis, indices.shape[axis]), values)


def _with_axis(d, axis, size):
    maps = list(d.maps)
    maps[axis] = BlockMap(size, 1)
    return Distribution(maps, d.comm, d.rank_coords)


# -- products ----------------------------------------------------------------------
def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along ``axis`` (the Array API's
    ``vecdot``: ``sum(conj(x1) * x2, axis)``, broadcast as operators are).
    Collective where ``axis`` is distributed (the sum's reduction)."""
    _numeric("vecdot", x1)
    if is_distributed(x2):
        _numeric("vecdot", x2)
    n1 = x1.shape[axis] if -x1.ndim <= axis < x1.ndim else None
    n2 = np.shape(x2)[axis] if -np.ndim(x2) <= axis < np.ndim(x2) else None
    if axis >= 0 or n1 is None or n2 is None or n1 != n2:
        raise ValueError(f"vecdot: axis {axis} must be a negative dim of both operands, of "
                         f"one size (shapes {x1.shape} and {np.shape(x2)})")
    if np.dtype(x1.dtype).kind == "c":
        x1 = np.conjugate(x1)
    products = x1 * x2
    total = products.sum(axis=axis)               # sum widens small ints; vecdot does not
    if is_distributed(total):
        return total if total.dtype == products.dtype else total.astype(products.parts.info.leaf)
    return total.astype(products.dtype)


def tensordot(x1, x2, /, *, axes=2):
    """The sum of products over ``axes`` (the Array API's ``tensordot``):
    ``x1``'s summed dims moved last and ``x2``'s first, both made 2-D
    (``reshape``), one ``matmul`` (``x2`` gathered on every rank: it is
    the smaller operand in the layouts this serves), the result reshaped
    to ``x1``'s free dims then ``x2``'s."""
    _numeric("tensordot", x1)
    if is_distributed(x2):
        _numeric("tensordot", x2)
    nd2 = x2.ndim if is_distributed(x2) else np.ndim(x2)
    shape2 = x2.shape if is_distributed(x2) else np.shape(x2)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if not 0 <= axes <= min(x1.ndim, nd2):
            raise ValueError(f"tensordot: axes={axes} for arrays of {x1.ndim} and {nd2} dims")
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        a1, a2 = (tuple(int(a) % n for a in (ax if isinstance(ax, (tuple, list)) else (ax,)))
                  for ax, n in zip(axes, (x1.ndim or 1, nd2 or 1)))
    if len(a1) != len(a2) or any(x1.shape[i] != shape2[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensordot: axes {axes!r} do not pair dims of one size "
                         f"(shapes {x1.shape} and {shape2})")
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(nd2) if j not in a2]
    k = int(np.prod([x1.shape[i] for i in a1], dtype=np.int64))
    m = int(np.prod([x1.shape[i] for i in free1], dtype=np.int64))
    left = reshape(permute_dims(x1, tuple(free1) + a1), (m, k))
    right = x2.to_numpy() if is_distributed(x2) else np.asarray(x2)
    n = int(np.prod([shape2[j] for j in free2], dtype=np.int64))
    right = np.transpose(right, a2 + tuple(free2)).reshape(k, n)    # not -1: k may be 0
    out = matmul(left, right)
    return reshape(out, tuple(x1.shape[i] for i in free1) + tuple(shape2[j] for j in free2))


# -- values --------------------------------------------------------------------------
def count_nonzero(x, /, *, axis=None):
    """How many elements are nonzero over ``axis`` (None: all; an int
    or a tuple): the sum of ``x != 0`` as int64 -- a NumPy int64 on every
    rank for ``axis=None``, else a DistArray.  Collective."""
    _numeric("count_nonzero", x)
    return (x != 0).astype("int64").sum(axis=axis)


def real(x, /):
    """The real part of every element (a copy; local work)."""
    _numeric("real", x)
    return _wrap(x, x.distribution, np.real(x.parts.values))


def imag(x, /):
    """The imaginary part of every element (a copy; zeros for real data;
    local work)."""
    _numeric("imag", x)
    return _wrap(x, x.distribution, np.imag(x.parts.values))
