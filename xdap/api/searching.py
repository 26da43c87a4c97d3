"""Searching functions: ``argmax``, ``argmin``, ``nonzero``,
``searchsorted``, ``where`` and ``count_nonzero``.

``where`` is elementwise (local work once its operands are aligned); the
others are collective: their arguments are agreed, then each rank looks
at what it owns and a few small collectives combine the answers.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([1, 5, 5, 2]), comm=MPI.COMM_SELF)
>>> int(xdap.argmax(a)), xdap.searchsorted(xdap.sort(a), 4)
(1, np.int64(2))
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from . import elementwise
from ..arraylike import is_distributed
from ..contract import collective, local
from ..distribution import Distribution
from ..parts import Parts
from ..repeats import plain_values
from .layouts import axis_whole, in_blocks, one_copy, owned, rows, scalar_array, wrap

__all__ = ["argmax", "argmin", "nonzero", "searchsorted", "where", "count_nonzero"]


def _arg_args(name, x, axis):
    arguments.numeric(name, x)
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{name} of an empty array")
        return None
    if x.ndim == 0:
        raise np.exceptions.AxisError(f"{name}: a 0-d array has no axis {axis!r}")
    axis = arguments.axis(name, x.ndim, axis)
    if x.shape[axis] == 0:
        raise ValueError(f"{name} along axis {axis} of length 0")
    return axis


@collective
def argmax(x, /, *, axis=None):
    """The index of the largest value (the first, as NumPy; NaN counts as
    largest; integers compared as integers, complex numbers as NumPy
    orders them): over the whole array (``axis=None``) a NumPy int64 on
    every rank, the flat C-order index (each rank's candidate, then one
    allgather of P candidates in their own dtype); along an axis a
    DistArray of the other dims (local along an undistributed axis; a
    distributed one is made whole first).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> int(xdap.argmax(xdap.from_global(np.array([1, 5, 5, 2]), comm=MPI.COMM_SELF)))
    1
    """
    axis = _arg_args("argmax", x, axis)
    yield dict(x=x, axis=axis)
    return _arg_extreme(np.argmax, x, axis)


@collective
def argmin(x, /, *, axis=None):
    """The index of the smallest value (see ``argmax``)."""
    axis = _arg_args("argmin", x, axis)
    yield dict(x=x, axis=axis)
    return _arg_extreme(np.argmin, x, axis)


def _arg_extreme(pick, x, axis):
    d, p = x.distribution, x.parts
    if not d.maps:
        return np.int64(0)
    if axis is not None and x.ndim == 1:    # the whole array's index, as a 0-d array
        return scalar_array(x, _arg_extreme(pick, x, None))
    if axis is not None:
        if not d.maps[axis].whole:
            return _arg_extreme(pick, axis_whole(x, axis), axis)
        maps = [m for j, m in enumerate(d.maps) if j != axis]
        coords = np.delete(d.rank_coords, axis, axis=1)
        nd = Distribution(maps, x.comm, coords if maps else None)
        return wrap(x, nd, pick(p.values, axis=axis).astype(np.int64))
    x = one_copy(x)
    d, p = x.distribution, x.parts
    own = owned(d, p)
    gidx = [np.asarray(m.global_indices(c))[m.owned_local_slice(c)]
            for m, c in zip(d.maps, d.coords)]
    value = np.zeros(1, own.dtype)
    flat, have = 0, 0
    if own.size:
        k = np.unravel_index(pick(own), own.shape)
        flat = np.ravel_multi_index(tuple(g[i] for g, i in zip(gidx, k)), d.global_shape)
        value[0], have = own[k], 1
    # every rank's candidate in its own dtype (as bytes: MPI has no float16),
    # with whether it has one and its flat index
    P = x.comm.size
    values = np.empty(P * value.itemsize, np.uint8)
    x.comm.Allgather(value.view(np.uint8), values)
    values = values.view(own.dtype)
    meta = np.empty((P, 2), np.int64)
    x.comm.Allgather(np.array([have, flat], np.int64), meta)
    held = np.flatnonzero(meta[:, 0] == 1)
    vals, flats = values[held], meta[held, 1]
    best = pick(vals)                       # NaN first (as NumPy); ties below
    tied = vals == vals[best]
    if vals.dtype.kind in "fc":
        tied |= np.isnan(vals) & np.isnan(vals[best])
    return np.int64(flats[tied].min())


@collective
def nonzero(x, /):
    """The global indices of the nonzero elements, one 1-D array per dim, in
    C order (the Array API's ``nonzero``): each an irregular block (one
    allgather of counts).  Rows in C order select in place; other layouts
    move to row blocks first (see ``a[mask]``).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> (i,) = xdap.nonzero(xdap.from_global(np.array([0, 3, 0, 1]), comm=MPI.COMM_SELF))
    >>> i.to_numpy()
    array([1, 3])
    """
    arguments.numeric("nonzero", x)
    if not x.distribution.maps:
        raise ValueError("nonzero: a 0-d array has no indices (use bool(x))")
    yield dict(x=x)
    from ..movement.index import mask_index
    x = rows(x)
    d, p = x.distribution, x.parts
    mask = p.values != 0
    grids = np.meshgrid(*[np.asarray(d.global_indices(j)) for j in range(d.ndim)],
                        indexing="ij")
    out = []
    for g in grids:
        nd, q = mask_index(d, Parts.of_array(np.ascontiguousarray(g, np.int64)), d, mask)
        out.append(x.__xdap_wrap__(nd, q, False, True))
    return tuple(out)


@collective
def count_nonzero(x, /, *, axis=None):
    """How many elements are nonzero over ``axis`` (None: all; an int
    or a tuple): the sum of ``x != 0`` as int64 -- a NumPy int64 on every
    rank for ``axis=None``, else a DistArray.  Collective."""
    arguments.numeric("count_nonzero", x)
    axes = arguments.axes("count_nonzero", x.ndim, axis)
    yield dict(x=x, axis=axes)
    from .data_types import astype
    from .elementwise import not_equal
    from .statistical import sum as total
    flags = astype(not_equal(x, 0), np.int64)
    if not axes:
        return flags
    return total(flags, axis=None if len(axes) == x.ndim else axes)


# -- searchsorted ----------------------------------------------------------------------
@collective
def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where ``x2``'s values would go in the sorted 1-D ``x1`` (the Array
    API's ``searchsorted``, ``np.searchsorted``): global insertion indices.

    ``x1`` sorted in its global order (``xdap.sort``'s result, or any
    sorted array: other layouts are moved to blocks first); with
    ``sorter`` (the indices that sort ``x1``), of ``take(x1, sorter)``.
    Every rank learns each rank's first and last value and count (one
    allgather of P triples); a query lands on the ranks wholly before it
    (counted from those) and at most one rank it falls inside, which
    answers it from its own block (one exchange of queries, one of
    answers).  ``x2``: a NumPy array or scalar, the same on every rank
    (the result: a NumPy array on every rank), or a DistArray (the result
    distributed like it).  Values compare in the common dtype of the two
    -- agreed, the same on every rank.  Memory per rank O(local queries +
    P).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.array([1.0, 2.0, 2.0, 5.0]), comm=MPI.COMM_SELF)
    >>> xdap.searchsorted(a, np.array([2.0, 9.0, 0.0])), xdap.searchsorted(a, 2.0, side="right")
    (array([1, 4, 0]), np.int64(3))
    """
    arguments.numeric("searchsorted", x1, "x1")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, it has {x1.ndim} dims")
    side = arguments.choice("searchsorted", "side", side, ("left", "right"))
    if is_distributed(x2):
        arguments.numeric("searchsorted", x2, "x2")
        arguments.same_comm("searchsorted", (x1, x2))
        query_dtype = x2.dtype
    else:
        x2 = np.asarray(x2)
        if x2.dtype.kind not in "biufc":
            raise TypeError(f"searchsorted: x2 holds {x2.dtype} values, not numbers")
        query_dtype = x2.dtype
    if sorter is not None:
        from .indexing import _take_indices
        sorter = _take_indices("searchsorted: sorter", x1.shape[0], sorter)
        if (sorter.shape[0] if is_distributed(sorter) else len(sorter)) != x1.shape[0]:
            raise ValueError(f"searchsorted: sorter must have the length of x1, "
                             f"{x1.shape[0]}")
    dt = np.result_type(x1.dtype, query_dtype)
    yield dict(x1=x1, x2=x2, side=side, sorter=sorter)
    if sorter is not None:
        from .indexing import _take
        x1 = _take(x1, sorter, 0)
    x1 = in_blocks(one_copy(x1))
    d = x1.distribution
    own = owned(d, x1.parts).astype(dt, copy=False)
    queries = x2.parts.values if is_distributed(x2) else x2
    flat = np.ascontiguousarray(queries, dtype=dt).reshape(-1)
    counts = _searchsorted_global(x1.comm, d, own, flat, side, dt)
    result = counts.reshape(np.shape(queries))
    if is_distributed(x2):
        return x2.__xdap_wrap__(x2.distribution, Parts.of_array(result), False, True)
    return result if result.ndim else np.int64(result)


def _before(a, b, or_equal: bool) -> np.ndarray:
    """``a < b`` (``a <= b`` with ``or_equal``) pair by pair in NumPy's
    sort order: NaN after every number, complex numbers by real part, then
    imaginary part, NaNs last (what ``np.sort``/``np.searchsorted`` use)."""
    if a.dtype.kind not in "fc":
        return a <= b if or_equal else a < b
    if a.dtype.kind == "f":                     # NaN after every number
        return (a <= b) | np.isnan(b) if or_equal else (a < b) | (np.isnan(b) & ~np.isnan(a))
    # complex: a stable sort of each pair: the first of the two is the earlier one, ties kept in place
    first = (a, b) if or_equal else (b, a)
    order = np.argsort(np.stack(first, axis=1), axis=1, kind="stable")[:, 0]
    return order == (0 if or_equal else 1)


def _searchsorted_global(comm, d, own, queries, side, dt):
    """Global insertion indices of this rank's ``queries`` in the sorted
    block array ``own`` (see ``searchsorted``); ``dt`` the agreed dtype
    both are in."""
    from ..transport import Route, move
    P = comm.size
    ends = np.zeros((P, 2), dt)
    mine = np.array([own[0], own[-1]] if len(own) else [0, 0], dt)
    got = np.empty(P * mine.nbytes, np.uint8)
    comm.Allgather(mine.view(np.uint8), got)       # as bytes: MPI has no float16
    ends = got.view(dt).reshape(P, 2)
    sizes = np.empty(P, np.int64)
    comm.Allgather(np.array([len(own)], np.int64), sizes)
    order = np.argsort(d.rank_coords[:, 0], kind="stable")       # ranks in grid order
    order = order[sizes[order] > 0]
    firsts, lasts, n = ends[order, 0], ends[order, 1], sizes[order]
    before = np.concatenate([[0], np.cumsum(n)])
    # ranks wholly before a query: last < v ("left") or last <= v ("right")
    k = np.searchsorted(lasts, queries, side=side)
    base = before[k]
    # the one rank a query may fall inside: the next one, if it starts before v
    inside = k < len(order)
    inside[inside] = _before(firsts[k[inside]], queries[inside], side == "right")
    ask = np.flatnonzero(inside)
    dest = order[k[ask]]
    route = Route.to_ranks(comm, dest, ask)
    arrived = move(route, Parts.of_array(np.ascontiguousarray(queries)))[0]
    answers = np.searchsorted(own, arrived.values, side=side).astype(np.int64)
    back = Route(comm, None, route.recv_counts)
    returned = move(back, Parts.of_array(answers))[0].values
    out = base.astype(np.int64)
    out[route.rows] += returned
    return out


# -- where -----------------------------------------------------------------------------
_NUMBERS = (float, int, bool)


def _where_fast(condition, x1, x2):
    """``where``'s common case made whole: a bool DistArray and plain fixed
    DistArrays of its distribution (or an equal one), or Python numbers -- NumPy's ``where``
    on the blocks, and the agreed values; None for anything else (the
    declared path decides)."""
    array = elementwise._SURFACE.get("array")
    if type(condition) is not array or condition.parts.values.dtype != np.bool_ or \
            not plain_values(condition):
        return None
    d = condition.distribution
    values = []
    for x in (x1, x2):
        kind = type(x)
        if kind is array:
            if (x.distribution is not d and x.distribution != d) or not plain_values(x):
                return None
            values.append(x.parts.values)
        elif kind in _NUMBERS:
            values.append(x)
        else:
            return None
    like = x1 if type(x1) is array else x2 if type(x2) is array else condition
    cond = condition.parts.values
    out = np.where(cond, values[0], values[1])
    if out.shape != cond.shape:             # two numbers: the condition's shape already
        return None
    return elementwise.result_like(like, out), dict(condition=condition, x1=x1, x2=x2)


@local(fast=_where_fast)
def where(condition, x1, x2, /):
    """``x1`` where ``condition`` holds, else ``x2``, broadcast as NumPy
    does (DistArrays, NumPy arrays, scalars; see ``a + b``): local work
    once the operands are aligned (an operand of another distribution or a
    smaller DistArray is moved first -- decided from the operands' agreed
    distributions); the result's dtype is NumPy's for ``x1`` and ``x2``.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
    >>> xdap.where(a > 1, a, -1.0).to_numpy()
    array([-1., -1.,  2.,  3.])
    """
    args = (condition, x1, x2)
    first = next((a for a in args if is_distributed(a)), None)
    if first is None:
        raise TypeError("where: at least one operand must be a DistArray")
    for a in args:
        if is_distributed(a):
            arguments.numeric("where", a, "every array operand")
        elif not isinstance(a, (bool, int, float, complex, np.generic, np.ndarray, list)):
            raise TypeError(f"where: an operand is a {type(a).__name__}, not an array or a "
                            "number")
    arguments.same_comm("where", args)
    from ..kernels.apply import broadcast_shape_of
    broadcast_shape_of(args, None)
    yield dict(condition=condition, x1=x1, x2=x2)
    from ..kernels.apply import broadcast_operands, needs_broadcast
    if needs_broadcast(args, first):
        args = broadcast_operands(args)
    dists = [a for a in args if is_distributed(a)]
    d = dists[0].distribution
    vals = [a.parts.values if is_distributed(a) else a for a in args]
    out = np.where(vals[0].astype(bool) if isinstance(vals[0], np.ndarray) else bool(vals[0]),
                   vals[1], vals[2])
    if out.shape != d.local_shape:        # a result written later (a /= b): its own memory
        out = np.broadcast_to(out, d.local_shape).copy()
    return wrap(dists[0], d, out)
