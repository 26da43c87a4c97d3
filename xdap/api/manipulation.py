"""Manipulation functions: shapes and orders -- ``reshape``,
``permute_dims``, ``moveaxis``, ``expand_dims``, ``squeeze``, ``flip``,
``roll``, ``broadcast_to``, ``broadcast_arrays``, ``concat``, ``stack``,
``unstack``, ``tile``, ``repeat``.

``permute_dims``, ``moveaxis`` and ``expand_dims`` are local: no data
moves (the maps and the grid follow the dims).  The others are collective:
what they move depends on their arguments, which are agreed first.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6).reshape(2, 3), comm=MPI.COMM_SELF)
>>> xdap.tile(a, (1, 2)).to_numpy().tolist(), xdap.reshape(a, (3, 2)).shape
([[0, 1, 2, 0, 1, 2], [3, 4, 5, 3, 4, 5]], (3, 2))
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..arraylike import is_distributed
from ..agreement import SETTLED, Held
from ..contract import Repeats, collective, contract_of, local, moves_nothing
from ..distribution import Distribution, make_distribution
from ..movement.redistribute import move_agreed
from ..dtypes import is_integer
from ..maps import BlockMap
from ..parts import Parts
from ..transport import STEP
from ..repeats import Rides, call_lane, named_view, plain, prepared_view, view_lane
from .layouts import (axis_whole, broadcast, reshaped, reshaped_in_place, rows, scalar_array,
                      unit_dim, values_on, wrap)

__all__ = ["reshape", "permute_dims", "moveaxis", "expand_dims", "squeeze", "flip", "roll", "shift",
           "broadcast_to", "broadcast_arrays", "concat", "stack", "unstack", "tile", "repeat",
           "scalar_array", "reshape_method"]


# -- views: no data moves ------------------------------------------------------------
def _permutation(name, ndim, axes) -> tuple:
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        raise TypeError(f"{name}: axes must be a tuple of ints, got {arguments._shown(axes)}")
    out = tuple(arguments.axis(name, ndim, a) for a in axes)
    if sorted(out) != list(range(ndim)):
        raise ValueError(f"{name}: axes {tuple(axes)} are not a permutation of the {ndim} dims")
    return out


def _permuted(x, axes):
    """``x`` with its dims in the order ``axes``: the maps and the grid
    follow; the local block is a transposed view of ``x``'s (O(1), no
    copy), but for missing values -- a bitmap has no strides -- copied."""
    d, p = x.distribution, x.parts
    nd = Distribution([d.maps[a] for a in axes], x.comm,
                      d.rank_coords[:, list(axes)] if axes else None)
    values = np.transpose(p.values, axes)
    validity = None
    if p.validity is not None:
        from ..bitmaps import pack_validity
        values = np.ascontiguousarray(values)
        validity = pack_validity(np.transpose(p.valid_mask(), axes))
    return x.__xdap_wrap__(nd, Parts(p.info.with_shape(values.shape), values, validity),
                           False, True)


def permute_dims(x, /, axes):
    """``_permute_dims``; a repeated call takes its prepared path
    (``xdap.repeats``)."""
    out = view_lane(_PERMUTES, x, ("permute_dims", axes), _permute_lane)
    return _permute_dims(x, axes) if out is None else out


def _permute_lane(x, args):
    """``view_lane``'s ``make`` of ``permute_dims``: ``args`` is
    ``("permute_dims", axes)``."""
    return _permute_view("permute_dims", x, args[1])


def _permute_view(what, x, axes):
    """The prepared view of ``x`` with its dims in the order ``axes``
    (``what``: the call's name; None where the checks fail)."""
    try:
        arguments.fixed(what, x)
        if what == "permute_dims":
            axes = _permutation(what, x.ndim, axes)
    except Exception:
        return None
    d = x.distribution
    nd = Distribution([d.maps[a] for a in axes], x.comm,
                      d.rank_coords[:, list(axes)] if axes else None)
    agreed = {"x": x, "axes": axes} if what == "permute_dims" else {"x": x}
    return prepared_view(what, agreed, nd, x, axes=axes)


def transpose_view(what, x):
    """The transpose of ``x``'s last two dims (``a.T``, ``a.mT``) as a
    repeated call's prepared path, or None (the declared path)."""
    return named_view(_PERMUTES, x, what, _transposed_view)


def _transposed_view(x, what):
    """``named_view``'s ``make`` of ``transpose_view``."""
    if x.ndim < 2 or (what == "T" and x.ndim != 2):
        return None
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return _permute_view(what, x, tuple(axes))


_PERMUTES = Repeats()


@local(name="permute_dims")
def _permute_dims(x, /, axes):
    """``x`` with its dims reordered (the Array API's ``permute_dims``,
    ``np.transpose``): no data moves between ranks -- the maps and the grid
    follow the dims; every rank's block is a transposed view of its own
    (O(1), no copy; data with missing values is copied: its bitmap has
    no strides).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0).reshape(2, 3), comm=MPI.COMM_SELF)
    >>> a.T.to_numpy().tolist()
    [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    """
    arguments.fixed("permute_dims", x)
    axes = _permutation("permute_dims", x.ndim, axes)
    yield dict(x=x, axes=axes)
    return _permuted(x, axes)


@local
def moveaxis(x, source, destination, /):
    """``x`` with the dims ``source`` moved to ``destination`` (NumPy's
    order for the others): ``permute_dims``, so no data moves.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.moveaxis(xdap.zeros((2, 3, 4), comm=MPI.COMM_SELF), 0, -1).shape
    (3, 4, 2)
    """
    arguments.fixed("moveaxis", x)
    src = _axes_list("moveaxis", x.ndim, source, "source")
    dst = _axes_list("moveaxis", x.ndim, destination, "destination")
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         "be as many distinct dims")
    yield dict(x=x, source=src, destination=dst)
    order = [n for n in range(x.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _permuted(x, tuple(order))


permute_dims.__xdap_contract__ = contract_of(_permute_dims)


def _axes_list(name, ndim, value, what) -> tuple:
    items = value if isinstance(value, (tuple, list)) else (value,)
    return tuple(arguments.axis(name, ndim, a, what) for a in items)


@local
def expand_dims(x, /, axis=0):
    """A dim of size 1 inserted at ``axis`` (undistributed; no data moves:
    a view of every rank's block).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.expand_dims(xdap.zeros((2, 3), comm=MPI.COMM_SELF), axis=-1).shape
    (2, 3, 1)
    """
    arguments.fixed("expand_dims", x)
    axis = arguments.axis("expand_dims", x.ndim + 1, axis)
    yield dict(x=x, axis=axis)
    return unit_dim(x, axis)


# -- collective shape functions --------------------------------------------------------
@collective
def squeeze(x, /, axis):
    """``x`` without the size-1 dims ``axis`` (an int or a tuple): local for
    undistributed dims; a distributed size-1 dim moves its one slab over
    the grid first.  Collective (its arguments are agreed)."""
    arguments.fixed("squeeze", x)
    axes = arguments.axes("squeeze", x.ndim, axis)
    shape = x.distribution.global_shape
    if any(shape[a] != 1 for a in axes):
        raise ValueError(f"squeeze: dims {axes} of shape {shape} are not all of size 1")
    local = all(x.distribution.maps[a].whole for a in axes) and x.ndim > len(axes)
    yield (moves_nothing if local else dict)(x=x, axis=axes)
    from .indexing import getitem
    return getitem(x, tuple(0 if j in axes else slice(None) for j in range(x.ndim)))


@collective
def flip(x, /, *, axis=None):
    """The order of the elements reversed along ``axis`` (None: all): a
    block dim reverses its grid positions, no data moves (``a[::-1]``); a
    cyclic or unstructured dim moves to blocks first.  Collective."""
    arguments.fixed("flip", x)
    axes = arguments.axes("flip", x.ndim, axis)
    local = all(x.distribution.maps[a].whole or x.distribution.maps[a].ranges for a in axes)
    yield (moves_nothing if local else dict)(x=x, axis=axes)
    from .indexing import getitem
    key = [slice(None)] * x.ndim
    for a in axes:
        key[a] = slice(None, None, -1)
    return getitem(x, tuple(key))


def _new_shape(old, shape) -> tuple:
    shape = (shape,) if arguments.is_integer_value(shape) else shape
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"reshape: shape must be an int or a tuple of ints, got {shape!r}")
    shape = tuple(arguments.integer("reshape", "shape entry", n) for n in shape)
    size = int(np.prod(old, dtype=np.int64))
    if shape.count(-1) > 1 or any(n < -1 for n in shape):
        raise ValueError(f"reshape: bad shape {shape} (one -1 at most, sizes >= 0)")
    if -1 in shape:
        known = int(np.prod([n for n in shape if n != -1], dtype=object))
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape an array of shape {old} into {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if int(np.prod(shape, dtype=object)) != size:
        raise ValueError(f"reshape: cannot reshape an array of size {size} {old} into {shape}")
    return shape


def reshape(x, /, shape, *, copy=None):
    """``_reshape``; a repeated reshape that is a view takes its prepared
    path (``xdap.repeats``)."""
    out = None if copy is not None else view_lane(_RESHAPES, x, shape,
                                                  _reshape_view)
    return _reshape(x, shape, copy=copy) if out is None else out


def _reshape_view(x, shape):
    """The prepared view of ``x`` reshaped to ``shape``, or None (not a
    view, its own shape, or checks that fail: the declared path)."""
    try:
        shape, copy, view = _reshape_args(x, shape, None)
    except Exception:
        return None
    d = x.distribution
    nd = reshaped_in_place(d, shape) if view and shape != d.global_shape and d.maps else None
    if nd is None:
        return None
    return prepared_view("reshape", {"x": x, "shape": shape, "copy": None}, nd, x)


_RESHAPES = Repeats()


@collective(name="reshape")
def _reshape(x, /, shape, *, copy=None):
    """``x`` with another shape, its elements in the same C order (the Array
    API's ``reshape``, ``np.reshape``; one -1 is inferred).

    - rows in blocks with whole other dims, and a new shape whose rows
      each rank's block holds whole (``(n, 6) -> (n, 2, 3)``; ``10^7 ->
      (10^4, 10^3)`` on 4 ranks): every rank reshapes its block in place
      -- a view in O(1), nothing moves, no MPI call beyond the shape's
      agreement;
    - otherwise the elements, seen as one line in C order (each rank's rows
      are a range of it), are moved to the new shape's row blocks: one
      exchange (a copy; ``copy=False`` refuses);
    - other layouts (cyclic, 2-D grids) are moved to row blocks first.

    Collective: the shape is agreed, whichever path it takes.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
    >>> xdap.reshape(a, (2, -1)).to_numpy().tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    """
    shape, copy, view = _reshape_args(x, shape, copy)
    # a view moves nothing: the shape is written in the ledger, not voted
    yield (moves_nothing if view else dict)(x=x, shape=shape, copy=copy)
    out = reshaped(x, shape)
    return out.copy() if copy and view else out


def _reshape_args(x, shape, copy):
    """The checks of ``reshape``: ``(shape, copy, view)`` -- the new shape,
    ``copy`` (None or a flag) and whether every rank reshapes its own
    block (no MPI call)."""
    arguments.fixed("reshape", x)
    d, p = x.distribution, x.parts
    if p.info.optional:
        raise TypeError("reshape: ?T data is not reshaped yet (fill or drop the missing "
                        "values first)")
    shape = _new_shape(d.global_shape, shape)
    if copy is not None:
        copy = arguments.flag("reshape", "copy", copy)
    view = shape == d.global_shape or reshaped_in_place(d, shape) is not None
    if copy is False and not view:
        raise ValueError(f"reshape: {d.global_shape} -> {shape} moves data, so it copies "
                         "(copy=False)")
    return shape, copy, view


def reshape_method(x, /, *shape, copy=None):
    """``a.reshape(2, 3)`` or ``a.reshape((2, 3))``: ``xdap.reshape``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = None if copy is not None else view_lane(_RESHAPES, x, shape,
                                                  _reshape_view)
    return _reshape_method(x, shape, copy=copy) if out is None else out


@collective(name="reshape")
def _reshape_method(x, /, shape, *, copy=None):
    """``reshape_method``'s declared path."""
    shape, copy, view = _reshape_args(x, shape, copy)
    yield (moves_nothing if view else dict)(x=x, shape=shape, copy=copy)
    return _reshape(x, shape, copy=copy)


reshape.__xdap_contract__ = contract_of(_reshape)
reshape_method.__xdap_contract__ = contract_of(_reshape_method)


# -- broadcasting --------------------------------------------------------------------
def _target_shape(name, x, shape):
    arguments.fixed(name, x)
    shape = arguments.shape(name, shape)
    if x.parts.info.ragged:
        raise TypeError(f"{name}: ragged data does not broadcast")
    try:
        ok = np.broadcast_shapes(x.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name}: the shape {x.shape} cannot be broadcast to {shape}")
    return shape


@collective
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
    shape = _target_shape("broadcast_to", x, shape)
    yield dict(x=x, shape=shape)
    return broadcast(x, shape)


@collective
def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape (``broadcast_to`` each),
    as a list.  Collective."""
    for a in arrays:
        arguments.fixed("broadcast_arrays", a, "every array")
    arguments.same_comm("broadcast_arrays", arrays)
    try:
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise ValueError(f"broadcast_arrays: shapes {[a.shape for a in arrays]} do not "
                         "broadcast") from None
    yield dict(arrays=arrays)
    return [broadcast(a, shape) for a in arrays]


# -- joins ---------------------------------------------------------------------------
def _join_args(name, arrays, axis):
    if is_distributed(arrays) or isinstance(arrays, (str, bytes)) or \
            not hasattr(arrays, "__iter__"):
        raise TypeError(f"{name}: takes a sequence of arrays, got {type(arrays).__name__}")
    arrays = tuple(arrays)
    if not arrays:
        raise ValueError(f"{name}: needs at least one array")
    for a in arrays:
        arguments.numeric(name, a, "every array")
    arguments.same_comm(name, arrays)
    return arrays


@collective
def concat(arrays, /, *, axis=0):
    """The arrays joined along ``axis`` (the Array API's ``concat``,
    ``np.concatenate``; ``axis=None``: flattened first): a new array in
    blocks along its first dim (as ``from_global`` makes them), each input
    moved to its place in it by one redistribution (an input already where
    its part of the result lives moves nothing).  NumPy's result dtype.
    Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(3.0), comm=MPI.COMM_SELF)
    >>> xdap.concat([a, a * 10]).to_numpy().tolist()
    [0.0, 1.0, 2.0, 0.0, 10.0, 20.0]
    """
    arrays = _join_args("concat", arrays, axis)
    if axis is not None:
        if arrays[0].ndim == 0:
            raise ValueError("concat: 0-d arrays cannot be concatenated")
        axis = arguments.axis("concat", arrays[0].ndim, axis)
        shapes = [a.shape for a in arrays]
        if any(len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != shapes[0][:axis] +
               shapes[0][axis + 1:] for s in shapes):
            raise ValueError(f"concat: shapes {shapes} differ outside axis {axis}")
    yield dict(arrays=arrays, axis=axis)
    if axis is None:                    # the standard's: the arrays flattened first
        arrays, axis = [reshape(a, (-1,)) for a in arrays], 0
    return _concat(arrays, axis)


def _concat(arrays, axis):
    """The joined arrays in row blocks: each input (converted to the
    common dtype) moves to the rows of the result its part lives in -- a
    block -> block redistribution, one ``Alltoallw`` (none where it is
    already there): along axis 0 straight into its rows of the result,
    along another axis into a piece that every rank then joins (one
    local copy)."""
    from .data_types import astype
    dtype = np.result_type(*[a.dtype for a in arrays])
    # this rank's conversions and its result's buffer are held: a failure
    # (its memory) rides the first move's verdict, the same error everywhere
    with Held(STEP) as held:
        arrays = [a if a.dtype == dtype else astype(a, dtype) for a in arrays]
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    shape = tuple(shape)
    target = make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=arrays[0].comm)
    bounds = np.asarray(target.maps[0].bounds, np.int64)
    info = arrays[0].parts.info
    values = None
    with held:
        if not held.failed:
            values = np.empty(target.local_shape, info.numpy_dtype)
    row = at = 0                              # axis 0: each input straight into its rows
    pieces = []
    for a in arrays:
        n = a.shape[axis]
        first = np.clip(bounds - at, 0, n) if axis == 0 else bounds
        maps = [BlockMap(a.shape[0], target.maps[0].grid_size, bounds=first)] + \
            [BlockMap(k, 1) for k in a.shape[1:]]
        piece = Distribution(maps, a.comm, target.rank_coords)
        moves = a.distribution != piece            # agreed: the same on every rank
        if moves and held.failed:                   # this rank stops, every rank with it
            move_agreed(a.distribution, a.parts, piece, held=held)
        if axis == 0:
            k = piece.local_shape[0]
            if not held.failed:
                into = Parts(info.with_shape(piece.local_shape), values[row:row + k])
                if not moves:
                    into.values[...] = a.parts.values
                else:
                    move_agreed(a.distribution, a.parts, piece, into, held=held)
            row += k
        elif not held.failed:
            pieces.append(move_agreed(a.distribution, a.parts, piece, held=held)[1].values
                          if moves else a.parts.values)
        at += n
    if held.failed:             # nothing moved after the failure: the next vote names it
        raise held.error
    if axis:
        np.concatenate(pieces, axis=axis, out=values)
    return arrays[0].__xdap_wrap__(target, Parts(info.with_shape(values.shape), values),
                                   False, True)


@collective
def stack(arrays, /, *, axis=0):
    """The arrays (one shape) stacked along a new ``axis``: ``concat`` of
    each with a size-1 dim inserted there.  Collective."""
    arrays = _join_args("stack", arrays, axis)
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"stack: the arrays must have one shape, got "
                         f"{[a.shape for a in arrays]}")
    axis = arguments.axis("stack", arrays[0].ndim + 1, axis)
    yield dict(arrays=arrays, axis=axis)
    return _concat([expand_dims(a, axis=axis) for a in arrays], axis)


@collective
def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of arrays (``x[i]``
    each: along a block dim the slab moves to every rank of the grid's
    other positions; a 1-D ``x`` gives 0-d arrays, one value each read
    from its holder).  Collective."""
    arguments.fixed("unstack", x)
    if x.ndim == 0:
        raise ValueError("unstack: a 0-d array has no axis")
    axis = arguments.axis("unstack", x.ndim, axis)
    yield dict(x=x, axis=axis)
    from .indexing import getitem
    head = (slice(None),) * axis
    return tuple(getitem(x, head + (i,)) for i in range(x.distribution.global_shape[axis]))


def roll(x, /, shift, *, axis=None):
    """``_roll``; a repeated roll along dims in blocks takes its prepared
    path (``xdap.repeats``): the cells that cross ride with the kept
    digest, one message where they fit."""
    out = call_lane(_ROLLS, _roll, (x,), (shift,), {} if axis is None else {"axis": axis},
                    _shift_lane)
    return _roll(x, shift, axis=axis) if out is NotImplemented else out


def _shift_lane(agreed):
    """The work of a repeated roll or shift (``call_lane``'s ``make``)."""
    x, axes, shifts = agreed["x"], agreed["axis"], agreed["shift"]
    from ..movement.shift import shifts_by_blocks
    if axes is None and x.ndim == 1:                  # the flattened array: the line itself
        axes, shifts = (0,), (sum(shifts),)
    if axes is None or len(axes) != 1 or not plain(x) or \
            not shifts_by_blocks(x.distribution, axes[0]):
        return None
    k, axis, fill = shifts[0], axes[0], agreed.get("fill_value")
    from ..movement.shift import assembled, crossing, shift_plan, shifted
    d = x.distribution
    plan = shift_plan(d, axis, k, fill, x.parts.values.dtype.itemsize)
    # the result owns its buffer (fresh): a temporary of it lends it on
    if plan.segments is not None and plan.moves is not None and d.comm.size > 1:
        info = x.parts.info            # what crosses rides in the vote: one message
        return Rides(lambda x: crossing(plan, x.parts.values),
                     lambda x, part, records: x.__xdap_plain__(
                         d, info, assembled(plan, x.parts.values, records, axis, fill), True))
    return lambda vote, x: x.__xdap_wrap__(d, shifted(d, x.parts, axis, k, fill, vote, plan),
                                           True)


_ROLLS = Repeats()


@collective(rides=True, name="roll")
def _roll(x, /, shift, *, axis=None):
    """The elements shifted by ``shift`` along ``axis`` (wrapping around, as
    ``np.roll``; ``axis=None``: of the flattened array; tuples of shifts and
    axes roll one axis after another): local along an undistributed axis;
    along a dim in blocks only the elements that cross a block boundary
    move (``xdap.movement.shift``: one message each way between
    neighbours); other layouts join the two pieces in their new order
    (``concat``: one redistribution).  A copy.  Collective."""
    shifts, axes = _shift_args("roll", x, shift, axis)
    local = axes is not None and all(x.distribution.maps[a].whole for a in axes)
    vote = yield (moves_nothing if local else dict)(x=x, shift=shifts, axis=axes)
    return _shifted(x, shifts, axes, None, vote)


def shift(x, /, shift, *, axis=None, fill_value=0):
    """``_shift_declared``; a repeated shift takes its prepared path."""
    out = call_lane(_SHIFTS, _shift_declared, (x,), (shift,),
                    dict(({} if axis is None else {"axis": axis}), fill_value=fill_value),
                    _shift_lane)
    if out is NotImplemented:
        return _shift_declared(x, shift, axis=axis, fill_value=fill_value)
    return out


_SHIFTS = Repeats()


@collective(rides=True, name="shift")
def _shift_declared(x, /, shift, *, axis=None, fill_value=0):
    """The elements shifted by ``shift`` along ``axis`` as ``roll`` does,
    but the vacated cells hold ``fill_value`` instead of the elements that
    wrap around (xarray's and pandas' ``shift``; ``axis=None``: of the
    flattened array): along a dim in blocks only the elements that cross a
    block boundary move.  A copy.  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(5.0), comm=MPI.COMM_SELF)
    >>> xdap.shift(a, 2, fill_value=-1.0).to_numpy().tolist()
    [-1.0, -1.0, 0.0, 1.0, 2.0]
    """
    shifts, axes = _shift_args("shift", x, shift, axis)
    fill = arguments.value_of("shift", "fill_value", fill_value, x.dtype)
    local = axes is not None and all(x.distribution.maps[a].whole for a in axes)
    vote = yield (moves_nothing if local else dict)(x=x, shift=shifts, axis=axes,
                                                    fill_value=fill)
    return _shifted(x, shifts, axes, fill, vote)


roll.__xdap_contract__ = _roll.__xdap_contract__
shift.__xdap_contract__ = _shift_declared.__xdap_contract__


def _shift_args(name, x, shift, axis):
    """The checks of ``roll``/``shift``: ``(shifts, axes)``, axes None for
    the flattened array."""
    arguments.numeric(name, x)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    shifts = tuple(arguments.integer(name, "shift", k) for k in shifts)
    if axis is None:
        if len(shifts) != 1 and x.ndim != 1:
            raise ValueError(f"{name}: one shift for axis=None")
        return shifts, None
    axes = _axes_list(name, x.ndim, axis, "axis")
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"{name}: {len(shifts)} shifts for {len(axes)} axes")
    return shifts, axes


def _shifted(x, shifts, axes, fill, vote=SETTLED):
    """``x`` shifted by ``shifts`` along ``axes`` (None: the flattened
    array, NumPy's way: shifted, then reshaped), wrapped (``fill`` None) or
    filled; ``vote``: the call's -- the first shift along a dim in blocks
    may carry it."""
    if axes is None:
        if x.ndim != 1:
            vote.cast()
            flat = reshape(x, (-1,))
            return reshape(_shift(flat, sum(shifts), 0, fill), x.shape)
        return _shift(x, sum(shifts), 0, fill, vote)
    for k, a in zip(shifts, axes):
        x = _shift(x, k, a, fill, vote)
        vote = SETTLED
    return x


def _shift(x, k, axis, fill, vote=SETTLED):
    from ..movement.shift import shifted, shifts_by_blocks
    d, p = x.distribution, x.parts
    if shifts_by_blocks(d, axis) and p.validity is None and not p.info.ragged:
        return x.__xdap_wrap__(d, shifted(d, p, axis, k, fill, vote), True)   # fresh: its own buffer
    vote.cast()
    n = d.global_shape[axis]
    if fill is not None:                      # other layouts: the filled cells, then concat
        from ..create import full
        from .indexing import getitem
        pad_shape = tuple(min(abs(k), n) if j == axis else s for j, s in enumerate(x.shape))
        pad = x.__xdap_wrap__(*full(pad_shape, fill, type=p.info.leaf, comm=x.comm),
                              False, True)
        if abs(k) >= n:
            return pad
        head = (slice(None),) * axis
        kept = getitem(x, head + (slice(0, n - k),)) if k >= 0 else \
            getitem(x, head + (slice(-k, n),))
        return _concat([pad, kept] if k >= 0 else [kept, pad], axis)
    k = k % n if n else 0
    if d.maps[axis].whole:
        return wrap(x, d, np.roll(x.parts.values, k, axis=axis))
    if k == 0:
        return x.copy()
    from .indexing import getitem
    head = (slice(None),) * axis
    return _concat([getitem(x, head + (slice(n - k, n),)),
                    getitem(x, head + (slice(0, n - k),))], axis)


@collective
def tile(x, repetitions, /):
    """``x`` repeated ``repetitions[k]`` times along each dim k (NumPy's
    ``tile``; fewer repetitions than dims repeat the last dims): one
    ``concat`` per repeated dim -- a redistribution of each copy to its
    place in the result (a copy).  Collective."""
    arguments.numeric("tile", x)
    reps = repetitions if isinstance(repetitions, (tuple, list)) else (repetitions,)
    reps = tuple(arguments.integer("tile", "repetitions", r, low=0) for r in reps)
    full = (1,) * (x.ndim - len(reps)) + reps
    arguments.shape("tile", tuple(n * r for n, r in zip((1,) * (len(full) - x.ndim) + x.shape,
                                                         full)))
    yield dict(x=x, repetitions=reps)
    from .indexing import getitem
    if len(reps) > x.ndim:
        x = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    for axis, r in enumerate(full):
        if r == 0:
            x = getitem(x, (slice(None),) * axis + (slice(0, 0),))
        elif r > 1:
            x = _concat([x] * int(r), axis)
    return x if any(r != 1 for r in full) else x.copy()


@collective
def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times along ``axis`` (None: of the
    flattened array), NumPy's ``repeat``; ``repeats`` an int or a 1-D array
    of one count per element along ``axis`` (NumPy's, the same on every
    rank, or a DistArray).  Along the first dim of an array in row blocks
    nothing moves: each rank repeats its own rows and the result is an
    irregular block (its sizes from one allgather); other distributed dims
    are made whole first (one exchange).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.repeat(xdap.from_global(np.array([1, 2]), comm=MPI.COMM_SELF), 2).to_numpy().tolist()
    [1, 1, 2, 2]
    """
    arguments.numeric("repeat", x)
    if axis is not None:
        axis = arguments.axis("repeat", x.ndim, axis)
    n = x.size if axis is None else x.shape[axis]
    if is_distributed(repeats):
        info = repeats.parts.info
        if repeats.ndim != 1 or not is_integer(info.dtype) or info.optional:
            raise TypeError(f"repeat: repeats must be a 1-D integer array, not {repeats.type}")
        if repeats.shape[0] not in (1, n):
            raise ValueError(f"repeat: {repeats.shape[0]} repeats for {n} elements")
        mine = repeats.parts.values
        if mine.size and mine.min() < 0:
            raise ValueError("repeat: repeats must be >= 0")
        counts = repeats
    else:
        counts = np.asarray(repeats)
        if counts.ndim > 1 or (counts.size and counts.dtype.kind not in "iu") or \
                (counts.ndim == 0 and counts.dtype.kind not in "iu") or \
                (counts.ndim == 1 and counts.shape[0] not in (1, n)):
            raise ValueError(f"repeat: repeats must be an int or {n} ints, got "
                             f"{arguments._shown(repeats)}")
        if counts.size and counts.min() < 0:
            raise ValueError(f"repeat: repeats must be >= 0, got {arguments._shown(repeats)}")
        counts = counts.astype(np.int64)
        total = int(counts.sum(dtype=object)) * (n if counts.ndim == 0 or
                                                 counts.shape[0] == 1 else 1) \
            if counts.ndim == 0 or counts.shape[0] == 1 else int(counts.sum(dtype=object))
        if total > arguments.INDEX_MAX:
            raise ValueError(f"repeat: {total} elements are more than an index can count")
    yield dict(x=x, repeats=counts, axis=axis)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return _repeat(x, counts, axis)


def _repeat(x, repeats, axis):
    from .exchange import to_numpy
    if is_distributed(repeats) and repeats.shape[0] == 1 != x.shape[axis]:
        repeats = to_numpy(repeats)             # one count for every element
    if not is_distributed(repeats) and repeats.ndim == 1 and repeats.shape[0] == 1:
        repeats = repeats[0]
    d = x.distribution
    if d.maps[axis].whole:
        mine = to_numpy(repeats) if is_distributed(repeats) else repeats
        values = np.repeat(x.parts.values, mine, axis=axis)
        maps = list(d.maps)
        maps[axis] = BlockMap(values.shape[axis], 1)
        return wrap(x, Distribution(maps, x.comm, d.rank_coords), values)
    if axis != 0:
        return _repeat(axis_whole(x, axis), repeats, axis)
    x = rows(x)
    d = x.distribution
    lo, hi = d.maps[0].owned_range(d.coords[0])
    if is_distributed(repeats):
        mine = values_on(repeats, d.leading(1)).astype(np.int64)
    else:
        mine = repeats if np.ndim(repeats) == 0 else np.asarray(repeats)[lo:hi]
    values = np.repeat(x.parts.values, mine, axis=0)
    sizes = np.empty(x.comm.size, np.int64)
    x.comm.Allgather(np.array([len(values)], np.int64), sizes)
    bounds = np.concatenate([[0], np.cumsum(sizes[d.rank_coords[:, 0].argsort()])])
    maps = [BlockMap(int(bounds[-1]), d.maps[0].grid_size, bounds=bounds)] + list(d.maps[1:])
    return wrap(x, Distribution(maps, x.comm, d.rank_coords), values)

