"""NumPy's functions on DistArrays: sorting, searching, cumulative sums,
statistics, selection and the matrix product -- each with NumPy's meaning
on the global array, and saying what it moves.

Local work (an undistributed axis, a replicated operand) makes no MPI
call; along a distributed axis a function moves what it must (a sample
sort, one prefix of P totals, a redistribution that makes an axis whole),
and agrees on its arguments first.  Fixed numeric data without missing
values; other types are one clear TypeError.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([3.0, 1.0, 2.0]), comm=MPI.COMM_SELF)
>>> xdap.cumulative_sum(a).to_numpy(), int(xdap.argmax(a))
(array([3., 4., 6.]), 0)
"""
from __future__ import annotations

import collections

import numpy as np

from . import create
from .agreement import agreement, debug
from .arraylike import is_distributed
from .distribution import Distribution
from .maps import BlockMap
from .dtypes import dtype_from_numpy, is_integer
from .parts import Parts
from .types import type_info

__all__ = ["sort", "argsort", "unique_values", "cumulative_sum", "cumulative_prod", "broadcast_to",
           "unique_counts", "unique_inverse", "unique_all", "tril", "triu", "argmax", "argmin",
           "nonzero", "where", "clip", "var", "std", "matmul", "take", "permute_dims",
           "matrix_transpose", "flip", "expand_dims", "squeeze", "concat", "stack", "roll",
           "numpy_ufunc", "reshape", "searchsorted", "take_points", "assign_where"]


# The Array API's (and NumPy's) result tuples: fields by name or position.
UniqueAllResult = collections.namedtuple("UniqueAllResult",
                                         "values indices inverse_indices counts")
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", "values inverse_indices")


def _numeric(name, x):
    if not is_distributed(x):
        raise TypeError(f"{name}: x must be a DistArray, got {type(x).__name__}")
    info = x.parts.info
    if info.ragged or info.boxed or info.optional or not info.numeric:
        raise TypeError(f"{name}: takes fixed numeric data without missing values, not "
                        f"{info.type_string()}")


def _axis(name, x, axis):
    d = x.distribution
    if not d.maps:
        raise ValueError(f"{name}: a 0-d array has no axis")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -d.ndim <= axis < d.ndim:
        raise np.exceptions.AxisError(f"{name}: axis {axis!r} is out of range for a "
                                      f"{d.ndim}-d array")   # a ValueError and an IndexError
    return int(axis) % d.ndim



def _voting(x) -> bool:
    """Debug mode on several ranks: local work votes like a collective, so
    a rank passing other arguments is caught (``xdap.agreement.debug``)."""
    return x.comm.size > 1 and debug()


def _agree(x, name, **args):
    """Where data moves, the same call on every rank first (in debug mode
    always)."""
    with agreement(x.comm, name) as ag:
        for k, v in args.items():
            ag.same(k, v)


def _axis_whole(x, axis):
    """``x`` redistributed so that ``axis`` is whole on every rank (block
    on the other dims): one exchange."""
    spec = tuple("n" if j == axis else "b" for j in range(x.ndim))
    return x.redistribute(dist=spec)


def _rows(x):
    """``x`` with its rows in blocks and the other dims whole (each rank a
    range of the global C order): itself when it is so, else redistributed
    (one exchange)."""
    if x.distribution.row_blocks:
        return x
    return x.redistribute(dist=("b",) + ("n",) * (x.ndim - 1))


def _owned(d, p):
    """This rank's owned block of a fixed array (padding left out)."""
    return p.values[tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))]


def _one_copy(x):
    """``x`` with every index owned once: an array whose map shares owned
    indices among ranks (a reduction's result is replicated over a team)
    is redistributed to blocks first (one exchange), else ``x`` itself."""
    return _rows(x) if any(m.shared_owned for m in x.distribution.maps) else x


def _like(x, made):
    """A ``(Distribution, Parts)`` the creation functions made, as an array
    of ``x``'s kind."""
    return x.__xdap_wrap__(*made, False, True)


def _wrap(x, d, values):
    values = np.asarray(values, order="C")
    return x.__xdap_wrap__(d, Parts.of_array(values), False, True)


def sort(x, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True):
    """The sorted array (the Array API's ``sort``; NumPy's ``np.sort``).

    Along an undistributed axis every rank sorts its own rows: local work,
    no MPI call, the same distribution.  Along the distributed axis of a
    1-D array: a distributed sample sort (``xdap.movement.sort``;
    collective, one exchange of the data), the result an irregular block
    -- rank r holds the r-th slice of the sorted values.  Along a
    distributed axis of an N-d array the array is first redistributed so
    that axis is whole (one exchange).  NaN sorts last; ``descending``
    reverses (a view, no data moved).  Fixed numeric types; ``stable`` is
    always honoured.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.sort(xdap.from_global(np.array([3, 1, 2]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 2, 3])
    """
    return _sorted(x, axis, descending, False)


def argsort(x, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True):
    """The global indices along ``axis`` that sort ``x`` (int64; equal
    values in index order, as NumPy's stable ``argsort``), distributed as
    ``sort(x)`` is.  Collective along a distributed axis (see ``sort``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.argsort(xdap.from_global(np.array([3, 1, 2]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 2, 0])
    """
    return _sorted(x, axis, descending, True)


def unique_values(x, /):
    """The sorted unique values of ``x`` as a 1-D array (the Array API's
    ``unique_values``; NumPy's ``np.unique``: NaNs count as one).
    Collective: a distributed sort and a few small allgathers; the result
    is an irregular block.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.unique_values(xdap.from_global(np.array([3, 1, 3, 1]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 3])
    """
    _numeric("unique_values", x)
    from .movement.sort import unique_parts
    return x.__xdap_wrap__(*unique_parts(x.distribution, x.parts), False, True)


def unique_inverse(x, /):
    """``(values, inverse_indices)`` (the Array API's ``unique_inverse``):
    the sorted unique values, and for each element of ``x`` the index of its
    value among them -- shaped and distributed as ``x`` (a distributed
    ``searchsorted`` of every element: one exchange of queries, one of
    answers).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> v, inv = xdap.unique_inverse(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
    >>> v.to_numpy().tolist(), inv.to_numpy().tolist()
    ([1, 3], [1, 0, 1])
    """
    values = unique_values(x)
    inverse = searchsorted(values, x)
    return UniqueInverseResult(values, inverse if is_distributed(inverse)
                               else _scalar_array(x, np.int64(inverse)))


def unique_counts(x, /):
    """``(values, counts)`` (the Array API's ``unique_counts``): the sorted
    unique values and how often each occurs, the counts distributed as the
    values. ``unique_values``' sample sort, each rank counting its runs and
    adding the counts of a value continued on the ranks after it (one more
    allgather of P numbers).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> v, c = xdap.unique_counts(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
    >>> v.to_numpy().tolist(), c.to_numpy().tolist()
    ([1, 3], [1, 2])
    """
    _numeric("unique_counts", x)
    from .movement.sort import unique_parts
    d, values, counts = unique_parts(x.distribution, x.parts, counts=True)
    return UniqueCountsResult(x.__xdap_wrap__(d, values, False, True),
                              x.__xdap_wrap__(d, counts, False, True))


def unique_all(x, /):
    """``(values, indices, inverse_indices, counts)`` (the Array API's
    ``unique_all``): the sorted unique values; the index of each one's first
    occurrence in ``x`` flattened in C order; for each element of ``x`` the
    index of its value (shaped and distributed as ``x``); the counts.
    ``indices`` and ``counts`` are distributed as ``values``: the counts
    ``unique_counts``', the first indices each element's flat index sent to
    its value's owner, the smallest kept (one ``Scatter``, reverse "min").

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> v, i, inv, c = xdap.unique_all(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
    >>> i.to_numpy().tolist(), inv.to_numpy().tolist(), c.to_numpy().tolist()
    ([1, 0], [1, 0, 1], [1, 2])
    """
    return _unique_all(x)


def _unique_all(x):
    from .movement.scatter import Scatter
    x = _one_copy(x)                             # copies held twice: each element once
    d = x.distribution
    values, counts = unique_counts(x)
    inverse = searchsorted(values, x)
    own = tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))
    where = np.asarray(inverse.parts.values)[own].reshape(-1) if d.maps else \
        np.asarray(inverse.parts.values).reshape(-1)[:int(x.comm.rank == 0)]   # 0-d: once
    # each element's C-order index to its value's owner, the smallest kept
    grids = np.meshgrid(*[np.asarray(m.global_indices(c))[s]
                          for m, c, s in zip(d.maps, d.coords, own)], indexing="ij")
    flat = np.ravel_multi_index(tuple(g.reshape(-1) for g in grids), d.global_shape) \
        if d.maps else np.zeros(len(where), np.int64)
    block = np.full(values.parts.values.shape, np.iinfo(np.int64).max, np.int64)
    first = values.__xdap_wrap__(values.distribution, Parts.of_array(block), False, True)
    Scatter(values, where).reverse(np.asarray(flat, np.int64), into=first, mode="min")
    return UniqueAllResult(values, first, inverse, counts)


def _sorted(x, axis, descending, want_indices):
    name = "argsort" if want_indices else "sort"
    _numeric(name, x)
    d, p = x.distribution, x.parts
    info = p.info
    if not d.maps:
        raise ValueError(f"{name}: a 0-d array has no axis to sort along")
    if not -d.ndim <= axis < d.ndim or isinstance(axis, bool):
        raise ValueError(f"{name}: axis {axis!r} is out of range for a {d.ndim}-d array")
    axis %= d.ndim
    m = d.maps[axis]
    local = m.whole
    if not local or _voting(x):
        with agreement(d.comm, name) as ag:            # data moves: the same call everywhere
            ag.same("axis", axis)
            ag.same("descending", bool(descending))
    if local:
        v = p.values
        if descending:
            n = v.shape[axis]
            idx = n - 1 - np.flip(np.argsort(np.flip(v, axis), axis=axis, kind="stable"), axis)
        else:
            idx = np.argsort(v, axis=axis, kind="stable")
        out = idx if want_indices else np.take_along_axis(v, idx, axis)
        out = np.ascontiguousarray(out)
        return x.__xdap_wrap__(d, Parts.of_array(out) if want_indices else
                               Parts(info.with_shape(out.shape), out), False, True)
    if d.ndim > 1:             # make the axis whole, then every rank sorts its rows
        return _sorted(_axis_whole(x, axis), axis, descending, want_indices)
    from .movement.sort import sort_parts
    from .movement.index import basic_index
    reverse = slice(None, None, -1)
    if descending:             # stable descending: sort the reversed array, reverse back
        d, p = basic_index(d, p, reverse)
    out = sort_parts(d, p, indices=want_indices)
    rd, rp = out[0], out[-1] if want_indices else out[1]
    if want_indices and descending:
        rp = Parts.of_array(d.global_shape[0] - 1 - rp.values)
    if descending:
        rd, rp = basic_index(rd, rp, reverse)
    return x.__xdap_wrap__(rd, rp, False, True)




# -- cumulative sums ---------------------------------------------------------
def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The cumulative sum along ``axis`` (the Array API's
    ``cumulative_sum``; ``np.cumsum``; ``axis`` may be None for a 1-D
    array).  Along an undistributed axis: local work, the same
    distribution.  Along the distributed axis of a 1-D array: every rank
    sums what it owns and adds the totals of the grid positions before it
    (one allgather of P numbers); the result has the owned blocks
    (padding and copies left out).  Along a distributed axis of an N-d
    array the axis is made whole first (one exchange).  ``dtype`` as
    NumPy's; ``include_initial``: a leading 0 (the standard's).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.cumulative_sum(xdap.from_global(np.arange(4), comm=MPI.COMM_SELF)).to_numpy()
    array([0, 1, 3, 6])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum", np.add)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The cumulative product along ``axis`` (the Array API's
    ``cumulative_prod``; ``np.cumprod``): as ``cumulative_sum``, each rank's
    products scaled by the product of the totals before it.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.cumulative_prod(xdap.from_global(np.arange(1, 5), comm=MPI.COMM_SELF)).to_numpy()
    array([ 1,  2,  6, 24])
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod", np.multiply)


def _cumulative(x, axis, dtype, include_initial, name, op):
    _numeric(name, x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis is required for a {x.ndim}-d array")
        axis = 0
    axis = _axis(name, x, axis)
    d, p = x.distribution, x.parts
    m = d.maps[axis]
    local = m.whole
    if not local or _voting(x):
        _agree(x, name, axis=axis, dtype=None if dtype is None else str(dtype),
               include_initial=bool(include_initial))
    if local:
        values = op.accumulate(p.values, axis=axis, dtype=_acc_dtype(p.values, dtype))
        if include_initial:          # the identity first: the axis one longer, still local
            first = list(values.shape)
            first[axis] = 1
            values = np.concatenate([np.full(first, op.identity, values.dtype), values], axis)
            d = Distribution([BlockMap(m.size + 1, 1) if k == axis else mk
                              for k, mk in enumerate(d.maps)], x.comm, d.rank_coords)
        return _wrap(x, d, values)
    if d.ndim > 1:
        return _cumulative(_axis_whole(x, axis), axis, dtype, include_initial, name, op)
    if m.dist_type != "b":
        from .distribution import make_distribution
        x = x.redistribute(dist=make_distribution(d.global_shape, ("b",), comm=x.comm))
        d, p, m = x.distribution, x.parts, x.distribution.maps[0]
    own = _owned(d, p)
    running = op.accumulate(own, dtype=_acc_dtype(own, dtype))
    identity = op.identity
    totals = np.empty(x.comm.size, running.dtype)
    x.comm.Allgather(np.array([running[-1] if len(running) else identity], running.dtype),
                     totals)
    position = d.rank_coords[:, 0]
    before = op.reduce(totals[position < d.coords[0]], dtype=running.dtype)
    op(running, before, out=running)
    m = m.without_padding()
    if include_initial:              # the identity first: grid position 0's block one longer
        if d.coords[0] == 0:
            running = np.concatenate([np.full(1, identity, running.dtype), running])
        bounds = np.concatenate([[0], np.asarray(m.bounds[1:], np.int64) + 1])
        m = BlockMap(m.size + 1, m.grid_size, bounds=bounds.tolist())
    return _wrap(x, Distribution([m], x.comm, d.rank_coords), running)


def _acc_dtype(values, dtype):
    """NumPy's accumulation dtype: the requested one, else cumsum's (small
    integers and bools accumulate in the platform integer)."""
    if dtype is not None:
        return dtype
    return np.cumsum(np.zeros(0, values.dtype)).dtype


# -- shapes ----------------------------------------------------------------------
def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape`` as NumPy broadcasts (the Array API's
    ``broadcast_to``; collective: ``shape`` is agreed). Copies (xnd holds
    contiguous memory, not NumPy's zero-stride views). Size-1 dims that are
    not distributed stretch locally, keeping ``x``'s distribution (no data
    moved); otherwise the result takes ``shape``'s default distribution and
    each rank fills its block from ``x`` gathered (O(x.size) per rank: ``x``
    is the smaller array). A 0-d ``x`` fills the result with its value.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> b = xdap.broadcast_to(xdap.from_global(np.arange(3), comm=MPI.COMM_SELF), (2, 3))
    >>> b.to_numpy().tolist()
    [[0, 1, 2], [0, 1, 2]]
    """
    from .kernels.apply import _leading, broadcast_operands
    with agreement(x.comm, "broadcast_to") as ag:
        if not is_distributed(x):
            raise TypeError(f"broadcast_to: x must be a DistArray, got {type(x).__name__}")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        ag.same("shape", shape)
        if not all(isinstance(n, (int, np.integer)) and n >= 0 for n in shape):
            raise TypeError(f"broadcast_to: shape must be ints >= 0, got {shape!r}")
        shape = tuple(int(n) for n in shape)
        if x.parts.info.ragged:
            raise TypeError("broadcast_to: ragged data does not broadcast")
        try:
            ok = np.broadcast_shapes(x.shape, shape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"broadcast_to: the shape {x.shape} cannot be broadcast to {shape}")
    if x.shape == shape:
        return x
    if 0 in shape:                      # nothing to fill
        return _like(x, create.zeros(shape, type=x.parts.info.leaf, comm=x.comm))
    if x.ndim == 0:
        return _like(x, create.full(shape, x.item(), type=x.parts.info.leaf, comm=x.comm))
    try:
        return _leading((x,), shape, None)           # stretched locally
    except ValueError:
        pass
    template = _like(x, create.empty(shape, type=x.parts.info.leaf, comm=x.comm))
    return broadcast_operands((template, x))[1]


# -- matrices ----------------------------------------------------------------------
def tril(x, /, *, k=0):
    """The lower triangle of the last two dims (the Array API's ``tril``):
    elements above the ``k``-th diagonal zeroed. Local work, no MPI call:
    each rank knows the global row and column of its elements from the
    agreed distribution; the result is distributed as ``x`` (a copy).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.tril(xdap.from_global(np.ones((3, 3)), comm=MPI.COMM_SELF)).to_numpy().tolist()
    [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    return _triangle(x, k, "tril")


def triu(x, /, *, k=0):
    """The upper triangle of the last two dims (the Array API's ``triu``):
    elements below the ``k``-th diagonal zeroed (local work, as ``tril``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.triu(xdap.from_global(np.ones((2, 3)), comm=MPI.COMM_SELF), k=1).to_numpy().tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    return _triangle(x, k, "triu")


def _triangle(x, k, name):
    _numeric(name, x)
    if x.ndim < 2:
        raise ValueError(f"{name}: x must have at least 2 dims, it has {x.ndim}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{name}: k must be an int, got {k!r}")
    if _voting(x):
        _agree(x, name, k=int(k))
    d = x.distribution
    rows = np.asarray(d.global_indices(x.ndim - 2), np.int64)
    cols = np.asarray(d.global_indices(x.ndim - 1), np.int64)
    # a bool mask straight from the outer comparison (no int temporary), as np.tril
    keep = np.greater_equal.outer(rows + k, cols) if name == "tril" else \
        np.less_equal.outer(rows + k, cols)
    return _wrap(x, d, np.where(keep, x.parts.values, np.zeros(1, x.parts.values.dtype)))


# -- searching -----------------------------------------------------------------
def argmax(x, /, *, axis=None):
    """The index of the largest value (the first, as NumPy; NaN counts as
    largest): over the whole array (``axis=None``) a NumPy int64 on every
    rank, the flat C-order index (each rank's candidate, then one
    allgather of P pairs); along an axis a DistArray of the other dims
    (local along an undistributed axis; a distributed one is made whole
    first).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> int(xdap.argmax(xdap.from_global(np.array([1, 5, 5, 2]), comm=MPI.COMM_SELF)))
    1
    """
    return _arg_extreme("argmax", x, axis)


def argmin(x, /, *, axis=None):
    """The index of the smallest value (see ``argmax``)."""
    return _arg_extreme("argmin", x, axis)


def _arg_extreme(name, x, axis):
    _numeric(name, x)
    d, p = x.distribution, x.parts
    if not d.maps:
        if axis is not None:
            raise ValueError(f"{name}: a 0-d array has no axis {axis!r}")
        return np.int64(0)
    pick = np.argmax if name == "argmax" else np.argmin
    if axis is not None:
        axis = _axis(name, x, axis)
        if not d.maps[axis].whole or _voting(x):
            _agree(x, name, axis=axis)
        if not d.maps[axis].whole:
            return _arg_extreme(name, _axis_whole(x, axis), axis)
        maps = [m for j, m in enumerate(d.maps) if j != axis]
        coords = np.delete(d.rank_coords, axis, axis=1)
        nd = Distribution(maps, x.comm, coords if maps else None)
        return _wrap(x, nd, pick(p.values, axis=axis).astype(np.int64))
    _agree(x, name, axis=None)
    x = _one_copy(x)
    d, p = x.distribution, x.parts
    own = _owned(d, p)
    gidx = [np.asarray(m.global_indices(c))[m.owned_local_slice(c)]
            for m, c in zip(d.maps, d.coords)]
    if own.size:
        k = np.unravel_index(pick(own), own.shape)
        flat = np.ravel_multi_index(tuple(g[i] for g, i in zip(gidx, k)), d.global_shape)
        cand = np.array([own[k], 0.0], dtype=np.result_type(own.dtype, np.float64)) \
            if own.dtype.kind != "c" else np.array([own[k], 0], complex)
        have = 1
    else:
        flat, have = 0, 0
        cand = np.zeros(2, np.result_type(own.dtype, np.float64) if own.dtype.kind != "c" else complex)
    values = np.empty((x.comm.size, 2), cand.dtype)
    x.comm.Allgather(cand, values)
    meta = np.empty((x.comm.size, 2), np.int64)
    x.comm.Allgather(np.array([have, flat], np.int64), meta)
    rows = np.flatnonzero(meta[:, 0] == 1)
    if not len(rows):
        raise ValueError(f"{name} of an empty array")
    vals, flats = values[rows, 0], meta[rows, 1]
    best = pick(vals)                       # NaN first (as NumPy); ties below
    tied = (vals == vals[best]) | (np.isnan(vals) & np.isnan(vals[best])) \
        if vals.dtype.kind in "fc" else vals == vals[best]
    return np.int64(flats[tied].min())


def nonzero(x, /) -> tuple:
    """The global indices of the nonzero elements, one 1-D array per dim, in
    C order (the Array API's ``nonzero``): each an irregular block (one
    allgather of counts).  Rows in C order select in place; other layouts
    move to row blocks first (see ``a[mask]``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> (i,) = xdap.nonzero(xdap.from_global(np.array([0, 3, 0, 1]), comm=MPI.COMM_SELF))
    >>> i.to_numpy()
    array([1, 3])
    """
    _numeric("nonzero", x)
    if not x.distribution.maps:
        raise ValueError("nonzero: a 0-d array has no indices (use bool(x))")
    from .movement.index import mask_index
    _agree(x, "nonzero")
    x = _rows(x)
    d, p = x.distribution, x.parts
    mask = p.values != 0
    grids = np.meshgrid(*[np.asarray(d.global_indices(j)) for j in range(d.ndim)],
                        indexing="ij")
    out = []
    for g in grids:
        nd, q = mask_index(d, Parts.of_array(np.ascontiguousarray(g, np.int64)), d, mask)
        out.append(x.__xdap_wrap__(nd, q, False, True))
    return tuple(out)


def take(x, indices, /, *, axis=0):
    """The elements at ``indices`` along ``axis`` (the Array API's ``take``;
    ``a[idx]`` for axis 0).  ``indices``: a 1-D NumPy array or list of ints,
    the same on every rank (the result is a block over them: each rank
    fetches its block), or a 1-D integer DistArray (the result has its
    distribution: each rank fetches what its part names).  Negative
    indices count from the end.  Along the distributed first axis:
    collective -- a ``Scatter`` plan asks the owners (one exchange of
    positions, one of values); along an undistributed axis: local work.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(5.0) * 10, comm=MPI.COMM_SELF)
    >>> a[[4, 0, -1]].to_numpy()
    array([40.,  0., 40.])
    """
    from .movement.index import take_rows_at
    _numeric("take", x)
    axis = _axis("take", x, axis)
    d, p = x.distribution, x.parts
    if is_distributed(indices):
        info = indices.parts.info
        if indices.ndim != 1 or info.ragged or info.optional or not is_integer(info.dtype):
            raise TypeError(f"take: indices must be a 1-D integer DistArray, not {info.type_string()}")
        if axis != 0 or x.ndim == 0:
            # along another axis every rank needs every index: gathered (O(len) a rank)
            return take(x, indices.to_numpy(), axis=axis)
        rows = take_rows_at(d, p, indices.parts.values)
        nd = indices.distribution.with_trailing(d.global_shape[1:])
        return x.__xdap_wrap__(nd, rows, False, True)
    idx = np.asarray(indices)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise TypeError(f"take: indices must be a 1-D array of integers, got {idx.dtype} "
                        f"of shape {idx.shape}")
    idx = idx.astype(np.int64)
    if d.maps[axis].whole:
        n = d.global_shape[axis]
        if idx.size and (idx.min() < -n or idx.max() >= n):
            raise IndexError(f"take: index {int(idx[(idx < -n) | (idx >= n)][0])} is out of "
                             f"bounds for axis {axis} of size {n}")
        from .maps import BlockMap
        maps = list(d.maps)
        maps[axis] = BlockMap(len(idx), 1)
        nd = Distribution(maps, x.comm, d.rank_coords)
        return _wrap(x, nd, np.take(p.values, idx, axis=axis))
    if axis != 0:
        return take(_axis_whole(x, axis), idx, axis=axis)
    from .distribution import make_distribution
    shape = (len(idx),) + d.global_shape[1:]
    nd = make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=x.comm)
    lo, hi = nd.maps[0].owned_range(nd.coords[0])
    return x.__xdap_wrap__(nd, take_rows_at(d, p, idx[lo:hi]), False, True)


def take_points(x, key):
    """``x[(i0, i1, ...)]`` with one int or integer array per dim (the
    Array API's integer-array indexing): the elements at the points the
    keys give, broadcast together -- an array of their broadcast shape.
    Each point's flat C-order position is computed where its keys live
    (NumPy keys on every rank; DistArray keys elementwise, local), then
    ``take`` reads them from the flattened ``x``: one ``Scatter``, and one
    exchange to flatten ``x`` unless its rows are in blocks.  An index out
    of range along any dim is one ValueError on every rank.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(12).reshape(3, 4), comm=MPI.COMM_SELF)
    >>> a[[2, 0], 1].to_numpy().tolist()
    [9, 1]
    """
    _numeric("a[index arrays]", x)
    if len(key) != x.ndim or not all(
            isinstance(k, (int, np.integer)) and not isinstance(k, bool) or
            (is_distributed(k) and is_integer(k.parts.info.dtype) and not k.parts.info.ragged
             and not k.parts.info.optional) or
            (not is_distributed(k) and np.asarray(k).dtype.kind in "iu") for k in key):
        raise IndexError(f"a[index arrays]: one int or integer array per dim of the {x.ndim}-d "
                         f"array, got {key!r}")
    shape = x.distribution.global_shape
    stride = int(np.prod(shape, dtype=np.int64))
    flat = 0
    bad = False
    with agreement(x.comm, "a[index arrays]") as ag:
        ag.same("the NumPy keys", [None if is_distributed(k) else np.asarray(k).tolist()
                                   for k in key])
        for k, n in zip(key, shape):
            stride //= n
            mine = k.parts.values if is_distributed(k) else np.asarray(k)
            bad = bad or bool(np.any((mine < -n) | (mine >= n)))
            if is_distributed(k):
                k = where(k < 0, k + n, k).astype("int64")
            else:
                k = np.where(np.asarray(k) < 0, np.asarray(k) + n, k).astype(np.int64)
            flat = flat + k * stride
        if bad:
            raise ValueError(f"a[index arrays]: an index is out of range for the shape {shape}")
    if is_distributed(flat):
        points = reshape(flat, (-1,))
        out_shape = flat.shape
    else:
        points, out_shape = np.asarray(flat).reshape(-1), np.shape(flat)
    return reshape(take(reshape(x, (-1,)), points), out_shape)


def assign_where(x, mask, value):
    """``x[mask] = value``: one value (a scalar or a 0-d array) written
    where the boolean ``mask`` (a DistArray of ``x``'s distribution, or a
    NumPy array of its shape, the same on every rank) is true.  Local work,
    no MPI call."""
    _numeric("a[mask] = v", x)
    if is_distributed(value):
        if value.ndim:
            raise TypeError("a[mask] = v: v must be one value (a scalar or a 0-d array)")
        value = value.item()
    elif np.ndim(value):
        raise TypeError("a[mask] = v: v must be one value (a scalar or a 0-d array)")
    if is_distributed(mask):
        if mask.distribution != x.distribution:
            raise ValueError("a[mask] = v: the mask is distributed otherwise than the array; "
                             "redistribute it first")
        local = mask.parts.values
    else:
        if mask.shape != x.shape:
            raise ValueError(f"a[mask] = v: the mask has shape {mask.shape}, the array {x.shape}")
        from .kernels.apply import _local_block
        local = _local_block(mask, x.distribution).values
    x.parts.values[local] = value


# -- elementwise selection -------------------------------------------------------
def where(condition, x1, x2, /):
    """``x1`` where ``condition`` holds, else ``x2``, broadcast as NumPy
    does (DistArrays, NumPy arrays, scalars; see ``a + b``): local work
    once the operands are aligned (no MPI call unless a smaller DistArray
    must be gathered); the result's dtype is NumPy's for ``x1`` and
    ``x2``.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
    >>> xdap.where(a > 1, a, -1.0).to_numpy()
    array([-1., -1.,  2.,  3.])
    """
    from .kernels.apply import broadcast_operands, needs_broadcast
    args = (condition, x1, x2)
    first = next((a for a in args if is_distributed(a)), None)
    if first is None:
        raise TypeError("where: at least one operand must be a DistArray")
    for a in args:
        if is_distributed(a):
            _numeric("where", a)
    if needs_broadcast(args, first):
        args = broadcast_operands(args)
    dists = [a for a in args if is_distributed(a)]
    d = dists[0].distribution
    vals = [a.parts.values if is_distributed(a) else a for a in args]
    out = np.where(vals[0].astype(bool) if isinstance(vals[0], np.ndarray) else bool(vals[0]),
                   vals[1], vals[2])
    return _wrap(dists[0], d, np.broadcast_to(out, d.local_shape))


def clip(x, /, min=None, max=None):  # noqa: A002 -- the standard's names
    """``x`` with every value below ``min`` raised to it and above ``max``
    lowered to it (NumPy's ``clip``; bounds may be scalars, NumPy arrays or
    DistArrays, broadcast): local work through the maximum/minimum kernels.
    """
    _numeric("clip", x)
    from . import kernels
    out = x if min is None else kernels.maximum(x, min)
    out = out if max is None else kernels.minimum(out, max)
    return out.copy() if out is x else out


# -- statistics --------------------------------------------------------------------
def var(x, /, *, axis=None, correction=0.0):
    """The variance over ``axis`` (None: all; an int or a tuple) with
    ``correction`` degrees of freedom removed (NumPy's ``ddof``): the mean
    of the squared deviations from the mean (two passes: mean, then
    deviations -- stabler than the sum of squares).  A NumPy float on every
    rank when every axis is reduced, else a DistArray of the other dims.
    Collective (its reductions)."""
    _numeric("var", x)
    axes = tuple(range(x.ndim)) if axis is None else tuple(sorted(
        {_axis("var", x, a) for a in (axis if isinstance(axis, tuple) else (axis,))}))
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if n == 0 and axes:                     # the variance of nothing: NaN, as NumPy
        if len(axes) == x.ndim:
            return np.float64(np.nan)
        return x.sum(axis=axes if len(axes) > 1 else axes[0]) * np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        if not axes and x.ndim:             # nothing reduced: every deviation is 0
            zeros = np.zeros(x.parts.values.shape, np.result_type(x.dtype, np.float16))
            return _wrap(x, x.distribution, zeros / np.float64(1 - correction))
        if len(axes) == x.ndim:
            dev = x - x.mean()
            s = (dev * dev).sum()
            return np.float64(s / (n - correction)) if n - correction > 0 else np.float64(np.nan)
        mean = x.mean(axis=axes if len(axes) > 1 else axes[0])
        dev = x - mean[tuple(None if j in axes else slice(None) for j in range(x.ndim))]
        return (dev * dev).sum(axis=axes if len(axes) > 1 else axes[0]) / (n - correction)


def std(x, /, *, axis=None, correction=0.0):
    """The standard deviation: the square root of ``var``."""
    v = var(x, axis=axis, correction=correction)
    if is_distributed(v):
        from . import kernels
        return kernels.sqrt(v)
    return np.sqrt(v)


# -- the matrix product ----------------------------------------------------------
def matmul(x1, x2, /):
    """``x1 @ x2`` for the layouts a user meets first:

    - a matrix whose rows are distributed (its last dim whole) times a
      vector or matrix every rank holds (a NumPy array): each rank
      multiplies its rows, no MPI call; the result keeps the rows'
      distribution (and a trailing undistributed dim for a matrix);
    - the same with a DistArray for ``x2``: ``x2`` is gathered on every rank
      first (collective; O(size of x2) a rank);
    - a matrix whose last dim is distributed is redistributed to row blocks
      first (one exchange);
    - two 1-D DistArrays of one distribution: their dot product, a NumPy
      scalar on every rank (local products, one allreduce);
    - a 1-D DistArray times a NumPy matrix or stack of matrices
      (``(..., n, p)``): a NumPy array of shape ``(..., p)`` on every rank
      (local products, one allreduce);
    - stacks of matrices (``(..., m, n) @ (..., n, p)``, NumPy's batch
      broadcasting) with a NumPy (or gathered) right operand: each rank
      multiplies its own matrices, no MPI call.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
    >>> (a @ np.ones(2)).to_numpy()
    array([1., 5., 9.])
    """
    if not is_distributed(x1):
        raise TypeError("matmul: the left operand must be a DistArray (a NumPy array @ a "
                        "DistArray is not supported: use xdap.matmul on the transpose)")
    _numeric("matmul", x1)
    d = x1.distribution
    if d.ndim == 0 or (not is_distributed(x2) and np.ndim(x2) == 0):
        raise ValueError("matmul: 0-d operands are not allowed (use *)")
    if is_distributed(x2):
        _numeric("matmul", x2)
        if d.ndim == 1 and x2.ndim == 1:
            return _dot(x1, x2)
        x2 = x2.to_numpy()                 # the replicated operand, on every rank
    x2 = np.asarray(x2)
    n = d.global_shape[-1]
    k = x2.shape[-2] if x2.ndim > 1 else x2.shape[0]       # the dim x2 sums over
    if k != n:
        raise ValueError(f"matmul: shapes {d.global_shape} and {x2.shape} do not match "
                         f"(dim {n} vs {k})")
    if d.ndim == 1:      # a vector times a replicated vector, matrix or stack of matrices
        _agree(x1, "matmul", shape=x2.shape)
        x1 = _one_copy(x1)
        d = x1.distribution
        own = _owned(d, x1.parts)
        idx = np.asarray(d.maps[0].global_indices(d.coords[0]))[d.maps[0].owned_local_slice(
            d.coords[0])]
        partial = own @ (x2[..., idx, :] if x2.ndim > 1 else x2[idx])
        total = np.empty_like(np.asarray(partial))
        from mpi4py import MPI
        x1.comm.Allreduce(np.ascontiguousarray(partial), total, op=MPI.SUM)
        return total[()] if total.ndim == 0 else total
    if not d.maps[-1].whole:
        _agree(x1, "matmul", shape=x2.shape)
        x1 = _rows(x1)
        d = x1.distribution
    if x2.ndim > 2:
        return _stacked(x1, x2)
    out = x1.parts.values @ x2
    nd = d.leading(d.ndim - 1)
    if x2.ndim == 2:
        nd = nd.with_trailing((x2.shape[1],))
    return _wrap(x1, nd, out)


def _stacked(x1, x2):
    """Stacks of matrices, NumPy's batch broadcasting: ``x1`` (..., m, n)
    with its last dim whole, ``x2`` a NumPy stack (..., n, p) the same on
    every rank.  Each rank multiplies its matrices by ``x2``'s matrices of
    the same batch indices (no MPI call); batch dims only ``x2`` has lead
    the result, whole.  The result keeps ``x1``'s distribution."""
    d = x1.distribution
    batch1 = d.global_shape[:-2]
    try:
        batch = np.broadcast_shapes(batch1, x2.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: the stacks {d.global_shape} and {x2.shape} do not "
                         "broadcast") from None
    extra = len(batch) - len(batch1)
    if batch[extra:] != batch1:
        raise ValueError(f"matmul: the left operand's stack {d.global_shape} would be "
                         f"stretched to {batch} (give the larger stack on the left)")
    right = np.broadcast_to(x2, batch + x2.shape[-2:])
    for j in range(len(batch1)):         # x2's matrices at this rank's batch indices
        right = np.take(right, np.asarray(d.global_indices(j)), axis=extra + j)
    out = np.matmul(x1.parts.values, right)
    maps = tuple(BlockMap(b, 1) for b in batch[:extra]) + d.maps[:-1] + \
        (BlockMap(x2.shape[-1], 1),)
    coords = d.rank_coords
    coords = np.hstack([np.zeros((len(coords), extra), np.int64), coords[:, :-1],
                        np.zeros((len(coords), 1), np.int64)])
    return _wrap(x1, Distribution(maps, d.comm, coords), out)


def _dot(x1, x2):
    if x1.distribution != x2.distribution:
        raise ValueError("matmul: two 1-D DistArrays must share a distribution "
                         "(redistribute one)")
    _agree(x1, "matmul")
    if any(m.shared_owned for m in x1.distribution.maps):
        x1, x2 = _one_copy(x1), _one_copy(x2)
    d = x1.distribution
    own = _owned(d, x1.parts) @ _owned(d, x2.parts)
    total = np.empty_like(np.asarray(own))
    from mpi4py import MPI
    x1.comm.Allreduce(np.ascontiguousarray(own), total, op=MPI.SUM)
    return total[()]


# -- shape and order ---------------------------------------------------------------
def _fixed(name, x):
    if not is_distributed(x):
        raise TypeError(f"{name}: x must be a DistArray, got {type(x).__name__}")
    info = x.parts.info
    if info.ragged or info.boxed:
        raise TypeError(f"{name}: takes fixed-shape data, not {info.type_string()}")


def permute_dims(x, /, axes):
    """``x`` with its dims reordered (the Array API's ``permute_dims``,
    ``np.transpose``): no data moves -- the maps and the grid follow the
    dims, every rank transposes its own block (a local copy).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0).reshape(2, 3), comm=MPI.COMM_SELF)
    >>> a.T.to_numpy().tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    _fixed("permute_dims", x)
    d, p = x.distribution, x.parts
    axes = tuple(int(a) % d.ndim if d.ndim else int(a) for a in axes)
    if sorted(axes) != list(range(d.ndim)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of the "
                         f"{d.ndim} dims")
    nd = Distribution([d.maps[a] for a in axes], x.comm,
                      d.rank_coords[:, list(axes)] if axes else None)
    values = np.asarray(np.transpose(p.values, axes), order="C")
    validity = None
    if p.validity is not None:
        from .bitmaps import pack_validity
        validity = pack_validity(np.transpose(p.valid_mask(), axes))
    return x.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values, validity),
                           False, True)


def matrix_transpose(x, /):
    """The last two dims swapped (``x.mT``; ``x.T`` for 2-D): see
    ``permute_dims``."""
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dims, x has {x.ndim}")
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return permute_dims(x, axes)


def flip(x, /, *, axis=None):
    """The order of the elements reversed along ``axis`` (None: all): a
    block dim reverses its grid positions, no data moves (``a[::-1]``)."""
    _fixed("flip", x)
    axes = range(x.ndim) if axis is None else \
        [_axis("flip", x, a) for a in (axis if isinstance(axis, tuple) else (axis,))]
    key = [slice(None)] * x.ndim
    for a in axes:
        key[a] = slice(None, None, -1)
    return x[tuple(key)]


def expand_dims(x, /, axis=0):
    """A dim of size 1 inserted at ``axis`` (undistributed; no data moves)."""
    _fixed("expand_dims", x)
    n = x.ndim + 1
    if isinstance(axis, bool) or not -n <= axis < n:
        raise np.exceptions.AxisError(f"expand_dims: axis {axis!r} is out of range for {n} dims")
    axis %= n
    return x[(slice(None),) * axis + (None,)]


def squeeze(x, /, axis):
    """``x`` without the size-1 dims ``axis`` (an int or a tuple): local for
    undistributed dims; a distributed size-1 dim moves its one slab over
    the grid first."""
    _fixed("squeeze", x)
    axes = sorted({_axis("squeeze", x, a) for a in (axis if isinstance(axis, tuple) else (axis,))})
    shape = x.distribution.global_shape
    if any(shape[a] != 1 for a in axes):
        raise ValueError(f"squeeze: dims {axes} of shape {shape} are not all of size 1")
    key = tuple(0 if j in axes else slice(None) for j in range(x.ndim))
    out = x[key]
    return out if is_distributed(out) else _scalar_array(x, out)


def _scalar_array(x, value):
    """A 0-d DistArray (its one value on every rank) like ``x``, of the
    value's NumPy dtype (``x``'s for a Python scalar)."""
    dt = value.dtype if isinstance(value, (np.ndarray, np.generic)) else x.parts.values.dtype
    v = np.asarray(value, dt, order="C")         # ascontiguousarray would make it 1-d
    return x.__xdap_wrap__(Distribution((), x.comm), Parts(_info_like(x, v), v), False, True)


def _info_like(x, v):
    """The TypeInfo of values ``v`` computed from ``x``'s: ``x``'s where the
    dtype is the same, else ``v``'s own (``matmul(uint16, uint64)``)."""
    info = x.parts.info if v.dtype == x.parts.values.dtype else \
        type_info("1 * " + dtype_from_numpy(v.dtype))
    return info.with_shape(v.shape)


def concat(arrays, /, *, axis=0):
    """The arrays joined along ``axis`` (the Array API's ``concat``,
    ``np.concatenate``): a new array in blocks along its first dim (as
    ``from_global`` makes them), each input moved to its place in it by
    one redistribution (an input already where its part of the result
    lives moves nothing).  NumPy's result dtype.  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(3.0), comm=MPI.COMM_SELF)
    >>> xdap.concat([a, a * 10]).to_numpy().tolist()
    [0.0, 1.0, 2.0, 0.0, 10.0, 20.0]
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concat: needs at least one array")
    for a in arrays:
        _numeric("concat", a)
    if axis is None:                    # the standard's: the arrays flattened first
        arrays, axis = [reshape(a, (-1,)) for a in arrays], 0
    first = arrays[0]
    nd = first.ndim
    if nd == 0:
        raise ValueError("concat: 0-d arrays cannot be concatenated")
    axis = _axis("concat", first, axis)
    shapes = [a.distribution.global_shape for a in arrays]
    if any(len(s) != nd or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]
           for s in shapes):
        raise ValueError(f"concat: shapes {shapes} differ outside axis {axis}")
    if any(a.comm is not first.comm and a.comm != first.comm for a in arrays):
        raise ValueError("concat: the arrays live on different communicators")
    dtype = np.result_type(*[a.dtype for a in arrays])
    shape = list(shapes[0])
    shape[axis] = sum(s[axis] for s in shapes)
    from .create import empty
    out = first.__xdap_wrap__(*empty(tuple(shape), dtype_from_numpy(dtype), None, None,
                                     first.comm), False, True)
    at = 0
    for a, s in zip(arrays, shapes):
        key = (slice(None),) * axis + (slice(at, at + s[axis]),)
        out[key] = a if a.dtype == dtype else a.astype(dtype_from_numpy(dtype))
        at += s[axis]
    return out


def stack(arrays, /, *, axis=0):
    """The arrays (one shape) stacked along a new ``axis``: ``concat`` of
    each with a size-1 dim inserted there."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack: needs at least one array")
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def roll(x, /, shift, *, axis=None):
    """The elements shifted by ``shift`` along ``axis`` (wrapping around, as
    ``np.roll``; ``axis=None``: of the flattened array; tuples of shifts and
    axes roll one axis after another): local along an
    undistributed axis; along a distributed one the two pieces are joined
    in their new order (``concat``: one redistribution)."""
    _numeric("roll", x)
    if axis is None:                    # NumPy's: the flattened array rolled, then reshaped
        return reshape(roll(reshape(x, (-1,)), int(np.sum(shift)), axis=0), x.shape) \
            if x.ndim != 1 else roll(x, shift, axis=0)
    if isinstance(shift, tuple) or isinstance(axis, tuple):
        axes = axis if isinstance(axis, tuple) else (axis,)
        shifts = shift if isinstance(shift, tuple) else (shift,) * len(axes)
        if len(shifts) != len(axes):
            raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
        for k, a in zip(shifts, axes):
            x = roll(x, k, axis=a)
        return x
    axis = _axis("roll", x, axis)
    n = x.distribution.global_shape[axis]
    k = int(shift) % n if n else 0
    if x.distribution.maps[axis].whole:
        return _wrap(x, x.distribution, np.roll(x.parts.values, k, axis=axis))
    if k == 0:
        return x.copy()
    head = (slice(None),) * axis
    return concat([x[head + (slice(n - k, n),)], x[head + (slice(0, n - k),)]], axis=axis)


# -- any other NumPy ufunc -------------------------------------------------------
def numpy_ufunc(ufunc, inputs, out=None):
    """A NumPy ufunc that xdap's kernel library lacks (``np.isnan``,
    ``np.floor_divide`` -- ``a // b`` --, ``np.remainder``, the bitwise and
    logical ones, ``np.sign``, ...) on every rank's values: local work, no
    MPI call (a vote in debug mode), NumPy's own loops and promotion.
    Operands: DistArrays of one distribution (ragged ones sharing their
    rows: the leaves are one flat array), NumPy arrays and scalars
    (broadcast as NumPy does, see ``a + b``); a result of ``?T`` data is
    valid where every operand is.  ``out=``: one DistArray of the result's
    distribution, written with NumPy's same-kind casting.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.array([7, -7, 8]), comm=MPI.COMM_SELF)
    >>> (a // 2).to_numpy(), (a % 3).to_numpy()
    (array([ 3, -4,  4]), array([1, 2, 2]))
    """
    from .kernels.apply import broadcast_operands, needs_broadcast
    name = f"np.{ufunc.__name__}"
    dists = [a for a in inputs if is_distributed(a)]
    first = dists[0]
    if ufunc.nout != 1:
        raise TypeError(f"{name} on a DistArray: ufuncs with {ufunc.nout} outputs are not "
                        "supported (call it on a.local_numpy() on each rank)")
    for a in dists + ([out] if out is not None else []):
        if not is_distributed(a):
            raise TypeError(f"{name}: out= must be a DistArray, got {type(a).__name__}")
        if a.parts.info.boxed:
            raise TypeError(f"{name}: {a.parts.info.type_string()} data has no NumPy values")
    if needs_broadcast(inputs, first):
        inputs = broadcast_operands(tuple(inputs), out)
        dists = [a for a in inputs if is_distributed(a)]
        first = dists[0]
    d, p0 = first.distribution, first.parts
    if _voting(first):
        with agreement(first.comm, "ufunc") as ag:
            ag.same("the ufunc", name)
            ag.same("the operands", tuple((a.distribution.fingerprint(), a.parts.info.leaf)
                                          if is_distributed(a) else type(a).__name__
                                          for a in inputs))
    for a in dists[1:]:
        if a.distribution != d or a.parts.info.layout != p0.info.layout:
            raise ValueError(f"{name}: the operands are distributed or shaped differently "
                             f"({a.distribution!r} vs {d!r}); redistribute first")
        if p0.info.ragged and a.parts.rows is not p0.rows_token():
            raise ValueError(f"{name}: ragged operands must share their rows (derived from "
                             "one another); use xdap.kernels for rows checked collectively")
    vals = [a.parts.values if is_distributed(a) else a for a in inputs]
    masks = [a.parts.valid_mask() for a in dists if a.parts.validity is not None]
    fixed = _SPECIAL_CASES.get(ufunc)
    quiet = {"all": "ignore"} if masks else {"invalid": "ignore"} if fixed else {}
    with np.errstate(**quiet):          # missing slots hold anything; the special cases
        result = ufunc(*vals)           # NumPy gets otherwise are fixed below
        if fixed is not None:
            result = fixed(vals, result)
    validity = None
    if masks:
        from .bitmaps import pack_validity
        valid = np.logical_and.reduce(masks) if len(masks) > 1 else masks[0]
        validity = pack_validity(valid)
    if out is not None:
        if out.distribution != d or out.parts.values.shape != np.shape(result):
            raise ValueError(f"{name}: out= is distributed or shaped otherwise than the result")
        np.copyto(out.parts.values, result, casting="same_kind")
        if validity is not None and out.parts.validity is not None:
            out.parts.validity[...] = validity
        return out
    from .dtypes import dtype_from_numpy
    result = np.asarray(result, order="C")     # ascontiguousarray makes a 0-d result 1-d
    leaf = ("?" if validity is not None else "") + dtype_from_numpy(result.dtype)
    if p0.info.ragged:
        info = p0.info.with_leaf(leaf)
        q = Parts(info, result, validity, p0.offsets, rows=p0.rows_token())
    else:
        from .types import TypeInfo
        q = Parts(TypeInfo.fixed(result.shape, leaf.lstrip("?"), validity is not None), result,
                  validity)
    return first.__xdap_wrap__(d, q, False, True)


def _floor_divide_infinities(vals, result):
    """The standard's ``floor_divide`` where one operand is infinite and the
    other finite: ``floor(x1 / x2)`` (``-1.0 // inf`` is -0, ``inf // 2.0``
    is inf; NumPy gives -1 and nan there).  Elsewhere NumPy's result."""
    if np.asarray(result).dtype.kind != "f":
        return result
    x, y = (np.asarray(v) for v in vals)
    fix = (np.isinf(x) & np.isfinite(y)) | (np.isfinite(x) & np.isinf(y))
    if not fix.any():
        return result
    return np.where(fix, np.floor(np.true_divide(x, y)), result).astype(np.asarray(result).dtype)


def _expm1_complex_infinities(vals, result):
    """The standard's complex ``expm1`` where a part is infinite or NaN:
    ``exp(z) - 1`` (C99's cexp gives ``-1 + 0j`` for ``-inf + inf j``, where
    NumPy's expm1 gives NaNs); at a zero, a real part of +0.  Elsewhere
    NumPy's result."""
    z = np.asarray(vals[0])
    if z.dtype.kind != "c":
        return result
    odd = ~np.isfinite(z)
    zero = z == 0                  # -0 + 0j: NumPy's expm1 keeps the -0, the standard +0
    if not odd.any() and not zero.any():
        return result
    out = np.where(odd, np.exp(z) - 1, result).astype(np.asarray(result).dtype)
    out.real[zero] = 0.0
    return out


def _tanh_complex_infinities(vals, result):
    """The standard's complex ``tanh`` at ``+-inf + yj``, ``y`` finite:
    ``+-1 + 0j`` with the sign of ``y`` (NumPy gives the zero the sign of
    ``sin(2y)``, as C99 does).  Elsewhere NumPy's result."""
    z = np.asarray(vals[0])
    if z.dtype.kind != "c":
        return result
    edge = np.isinf(z.real) & np.isfinite(z.imag)
    if not edge.any():
        return result
    out = np.array(result, copy=True)
    out.real[edge] = np.copysign(1.0, z.real[edge])     # parts set apart: -1 + (-0j)
    out.imag[edge] = np.copysign(0.0, z.imag[edge])     # would add the zeros to +0
    return out


# NumPy ufuncs whose results differ from the standard's special cases
_SPECIAL_CASES = {np.floor_divide: _floor_divide_infinities, np.expm1: _expm1_complex_infinities,
                  np.tanh: _tanh_complex_infinities}


def reshape(x, /, shape, *, copy=None):
    """``x`` with another shape, its elements in the same C order (the Array
    API's ``reshape``, ``np.reshape``; one -1 is inferred).

    - rows in blocks with whole other dims, and a new shape that keeps the
      first dim (``(n, 6) -> (n, 2, 3)``): every rank reshapes its block in
      place -- a view, no MPI call;
    - otherwise the elements, seen as one line in C order (each rank's rows
      are a range of it), are moved to the new shape's row blocks: one
      exchange (a copy; ``copy=False`` refuses);
    - other layouts (cyclic, 2-D grids) are moved to row blocks first.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
    >>> xdap.reshape(a, (2, -1)).to_numpy().tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    _fixed("reshape", x)
    d, p = x.distribution, x.parts
    shape = _new_shape(d.global_shape, shape)
    if p.info.optional:
        raise TypeError("reshape: ?T data is not reshaped yet (fill or drop the missing "
                        "values first)")
    if shape == d.global_shape:
        return x.copy() if copy else x
    if not shape or not d.maps:
        if copy is False:
            raise ValueError("reshape: a 0-d array or result needs a copy (copy=False)")
        value = np.asarray(x.to_numpy()).reshape(shape)
        return _scalar_array(x, value) if not shape else x.__xdap_wrap__(
            *_from_every_rank(x, value), False, True)
    if d.row_blocks and shape[0] == d.global_shape[0]:
        from .maps import BlockMap
        maps = [d.maps[0]] + [BlockMap(n, 1) for n in shape[1:]]
        coords = np.zeros((x.comm.size, len(shape)), np.int64)
        coords[:, 0] = d.rank_coords[:, 0]
        nd = Distribution(maps, x.comm, coords)
        values = p.values.reshape(nd.local_shape)      # a view: the rows stay
        return x.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values), False, True)
    if copy is False:
        raise ValueError(f"reshape: {d.global_shape} -> {shape} moves data, so it copies "
                         "(copy=False)")
    _agree(x, "reshape", shape=shape)
    x = _rows(x)
    d, p = x.distribution, x.parts
    from .distribution import make_distribution
    from .movement.redistribute import move
    target = make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=x.comm)
    src_line = _line(d)
    dst_line = _line(target)
    flat = Parts(p.info.with_shape((p.values.size,)), np.ascontiguousarray(p.values).reshape(-1))
    _, moved = move(src_line, flat, dst_line)
    values = moved.values.reshape(target.local_shape)
    return x.__xdap_wrap__(target, Parts(p.info.with_shape(values.shape), values), False, True)


def _line(d):
    """A row-block distribution seen as one line of its elements in C order:
    rank r's rows are the range ``bounds * row size``."""
    from .maps import BlockMap
    m = d.maps[0]
    row = int(np.prod(d.global_shape[1:], dtype=np.int64))
    bounds = np.asarray(m.bounds, np.int64) * row
    return Distribution([BlockMap(int(bounds[-1]), m.grid_size, bounds=bounds)], d.comm,
                        d.rank_coords[:, :1])


def _new_shape(old, shape) -> tuple:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    size = int(np.prod(old, dtype=np.int64))
    if shape.count(-1) > 1 or any(n < -1 for n in shape):
        raise ValueError(f"reshape: bad shape {shape} (one -1 at most, sizes >= 0)")
    if -1 in shape:
        known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape {old} into {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError(f"reshape: cannot reshape an array of size {size} {old} into {shape}")
    return shape


def _from_every_rank(x, value):
    """``(Distribution, Parts)`` of ``value`` (on every rank) in row blocks."""
    from .distribution import make_distribution
    d = make_distribution(value.shape, ("b",) + ("n",) * (value.ndim - 1), comm=x.comm)
    lo, hi = d.maps[0].owned_range(d.coords[0])
    v = np.ascontiguousarray(value[lo:hi])
    return d, Parts(_info_like(x, v), v)


def searchsorted(x1, x2, /, *, side="left"):
    """Where ``x2``'s values would go in the sorted 1-D ``x1`` (the Array
    API's ``searchsorted``, ``np.searchsorted``): global insertion indices.

    ``x1`` sorted in its global order (``xdap.sort``'s result, or any
    sorted array: other layouts are moved to blocks first).  Every rank
    learns each rank's first and last value and count (one allgather of P
    triples); a query lands on the ranks wholly before it (counted from
    those) and at most one rank it falls inside, which answers it from its
    own block (one exchange of queries, one of answers).  ``x2``: a NumPy
    array or scalar, the same on every rank (the result: a NumPy array on
    every rank), or a DistArray (the result distributed like it).
    Memory per rank O(local queries + P).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.array([1.0, 2.0, 2.0, 5.0]), comm=MPI.COMM_SELF)
    >>> xdap.searchsorted(a, np.array([2.0, 9.0, 0.0])), xdap.searchsorted(a, 2.0, side="right")
    (array([1, 4, 0]), np.int64(3))
    """
    _numeric("searchsorted", x1)
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, it has {x1.ndim} dims")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    distributed = is_distributed(x2)
    if distributed:
        _numeric("searchsorted", x2)
    _agree(x1, "searchsorted", side=side, distributed=distributed)
    x1 = _one_copy(x1)
    if x1.distribution.maps[0].dist_type != "b":
        x1 = x1.redistribute(dist=("b",))
    d = x1.distribution
    own = _owned(d, x1.parts)
    queries = x2.parts.values if distributed else np.asarray(x2)
    flat = np.ascontiguousarray(queries).reshape(-1)
    counts = _searchsorted_global(x1.comm, d, own, flat, side)
    result = counts.reshape(np.shape(queries))
    if distributed:
        return x2.__xdap_wrap__(x2.distribution, Parts.of_array(result), False, True)
    return result if result.ndim else np.int64(result)


def _searchsorted_global(comm, d, own, queries, side):
    """Global insertion indices of this rank's ``queries`` in the sorted
    block array ``own`` (see ``searchsorted``)."""
    from .transport import Route, move
    P = comm.size
    dt = np.result_type(own.dtype, queries.dtype) if queries.size else own.dtype
    ends = np.zeros((P, 2), dt)
    comm.Allgather(np.array([own[0], own[-1]] if len(own) else [0, 0], dt), ends)
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
    a, b = firsts[k[inside]], queries[inside]
    if side == "left":                       # NumPy's order: NaN after every number
        inside[inside] = (a < b) | (np.isnan(b) & ~np.isnan(a)) if dt.kind in "fc" else a < b
    else:
        inside[inside] = (a <= b) | np.isnan(b) if dt.kind in "fc" else a <= b
    ask = np.flatnonzero(inside)
    dest = order[k[ask]]
    route = Route.to_ranks(comm, dest, ask)
    got = move(route, Parts.of_array(np.ascontiguousarray(queries)))[0]
    answers = np.searchsorted(own, got.values, side=side).astype(np.int64)
    back = Route(comm, None, route.recv_counts)
    returned = move(back, Parts.of_array(answers))[0].values
    out = base.astype(np.int64)
    out[route.rows] += returned
    return out
