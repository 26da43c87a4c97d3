"""Indexing: ``a[key]``, ``a[key] = v``, ``take``, ``take_along_axis`` and
record fields -- NumPy's rules on the global array.

``a[key]`` and ``a[key] = v`` are collective: the key is normalized (an
index out of range is NumPy's IndexError) and agreed first, so a key that
differs on one rank is one error on every rank, and what moves is decided
from the agreed key and distribution alone:

- basic keys (ints, slices, ``...``, ``None``): a slice of a block dim is a
  view of what each rank holds -- no data moves; a cyclic or unstructured
  dim a key selects from, or an integer on a distributed dim, moves the
  selected slab once (``xdap.movement.index``); integers on every dim read
  one element: a 0-d array on every rank (the standard's), sent by its
  holder;
- a boolean mask (a DistArray, or a NumPy array the same on every rank):
  the selected elements in C order as a 1-D irregular block;
- an integer array (NumPy, list or DistArray) along the first dim:
  ``take``; one per dim: the points they name.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
>>> a[1:-1].to_numpy().tolist(), a[a > 3].to_numpy().tolist(), float(a[2])
([1.0, 2.0, 3.0, 4.0], [4.0, 5.0], 2.0)
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..arraylike import is_distributed, new
from ..contract import (Repeats, collective, contract_of, local, moves_nothing, normalized,
                        part)
from ..distribution import Distribution
from ..dtypes import is_integer
from ..maps import BlockMap
from ..movement import index as _index
from .layouts import broadcast, filled, reshaped, unit_dim
from ..repeats import prepared_view, view_lane

__all__ = ["getitem", "setitem", "take", "take_along_axis", "field", "global_indices",
           "iteration_length"]


# -- keys --------------------------------------------------------------------------
def _zero_d_as_int(key):
    """0-d integer DistArrays in a key are the ints they hold (every rank
    holds a 0-d array's value: no MPI call)."""
    def plain(k):
        return int(k.parts.values[()]) if is_distributed(k) and not k.distribution.maps and \
            is_integer(k.parts.info.dtype) and k.parts.validity is None else k
    return tuple(plain(k) for k in key) if isinstance(key, tuple) else plain(key)


def _zero_d_bool(key):
    """The bool of a whole key that is one boolean -- True, np.True_ or a
    0-d bool DistArray -- else None."""
    if isinstance(key, (bool, np.bool_)):
        return bool(key)
    if is_distributed(key) and not key.distribution.maps and \
            key.parts.info.dtype == "bool" and key.parts.validity is None:
        return bool(key.parts.values[()])
    return None


def _new_axes_only(key) -> int:
    """How many new axes a key of only None and Ellipsis adds (0 for any
    other key)."""
    keys = key if isinstance(key, tuple) else (key,)
    if not keys or not all(k is None or k is Ellipsis for k in keys):
        return 0
    return sum(k is None for k in keys)


def _integer_array(k) -> bool:
    """An integer array: a NumPy array, a list of ints, or a DistArray of
    integers."""
    if is_distributed(k):
        return k.ndim > 0 and is_integer(k.parts.info.dtype) and not k.parts.info.ragged
    if isinstance(k, list):
        try:
            k = np.asarray(k)
        except Exception:
            return False
    return isinstance(k, np.ndarray) and k.ndim > 0 and k.dtype.kind in "iu"


def _bool_mask(k) -> bool:
    if is_distributed(k):
        return k.ndim > 0 and k.parts.info.dtype == "bool" and not k.parts.info.ragged
    return isinstance(k, np.ndarray) and k.ndim > 0 and k.dtype == bool


def _mask_key(x, mask, leading=False):
    """The checks of ``x[mask]``: ``("mask", mask)`` for a mask of
    ``x``'s shape, ``("empty", shape)`` for one with a zero-length dim
    (it selects nothing: the standard's rule); with ``leading``,
    ``("leading", mask)`` for a mask of ``x``'s leading dims."""
    shape = mask.shape
    if x.ndim == 0 or len(shape) > x.ndim or any(
            a != b for a, b in zip(shape, x.shape[:len(shape)]) if a != 0):
        raise IndexError(f"a[mask]: a boolean index of shape {shape} does not match the "
                         f"array's shape {x.shape}")
    if 0 in shape:                         # selects nothing
        return "empty", (0,) + tuple(x.shape[len(shape):])
    if shape != x.shape and leading and x.parts.info.optional:
        raise TypeError(f"a[mask]: a mask of the leading dims of {arguments.type_of(x)} data "
                        "is not supported yet; give a mask of the array's shape")
    if shape != x.shape and not leading:
        raise IndexError(f"a[mask] = v: a boolean index of shape {shape} on the leading dims "
                         f"of an array of shape {x.shape} is not supported; give a mask of "
                         "the array's shape")
    if x.parts.info.ragged or x.parts.info.boxed:
        raise TypeError(f"a[mask]: {arguments.type_of(x)} data takes a slice of its "
                        "rows only")
    if is_distributed(mask):
        if mask.parts.info.optional:
            raise TypeError("a[mask]: the mask has missing values (?bool); fill them first")
        return ("mask" if shape == x.shape else "leading"), mask
    return ("numpy mask" if shape == x.shape else "leading"), np.ascontiguousarray(mask)


def _take_indices(name, n, idx):
    """Integer indices for an axis of length ``n``: a 1-D NumPy int64 array
    (the same on every rank) or a 1-D integer DistArray, each in range
    (negative ones count from the end; a DistArray's part is checked by
    the rank holding it, inside the vote)."""
    if is_distributed(idx):
        info = idx.parts.info
        if idx.ndim != 1 or info.ragged or info.optional or not is_integer(info.dtype):
            raise TypeError(f"{name}: indices must be a 1-D integer array, not "
                            f"{arguments.type_of(idx)}")
        _in_range(name, n, idx.parts.values)
        return idx
    a = np.asarray(idx)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise (IndexError if a.dtype.kind not in "iu" and a.size else TypeError)(
            f"{name}: indices must be a 1-D array of integers, got {a.dtype} of shape "
            f"{a.shape}")
    _in_range(name, n, a)
    return a.astype(np.int64)


def _in_range(name, n, a):
    if a.size and (a.min() < -n or (a.max() >= n if a.dtype.kind == "i" or
                                    a.max() <= np.iinfo(np.int64).max else True)):
        bad = a[(a < -n) | (a >= n)].reshape(-1)[0]
        raise IndexError(f"{name}: index {int(bad)} is out of bounds for an axis of size {n}")


def _key(x, key):
    """The checked key of ``x[key]``: ``(kind, normalized)``."""
    if isinstance(key, str):
        _field_check(x, key)
        return "field", key
    key = _zero_d_as_int(key)
    flag = _zero_d_bool(key)
    if flag is not None:               # NumPy: a[True] is a[None], a[False] a[None][:0]
        return "flag", flag
    new = _new_axes_only(key)
    if x.ndim == 0 and new:
        return "new axes", new
    if _index.is_basic_key(key):
        steps = _index.normalize_key(key, x.distribution.global_shape)
        info = x.parts.info
        if (info.ragged or info.boxed) and any(s[0] != "slice" for s in steps):
            raise IndexError(f"a[{key!r}]: {arguments.type_of(x)} data takes a slice of its "
                             "rows only (no integers, None or indices inside a row)")
        if x.ndim and all(s[0] == "int" for s in steps):
            return "element", tuple(s[2] for s in steps)
        return "basic", steps
    if _bool_mask(key):
        return _mask_key(x, key, leading=True)
    if _integer_array(key):
        arguments.numeric("a[index array]", x)
        if x.ndim == 0:
            raise IndexError("a[index array]: a 0-d array has no axis to index")
        return "take", _take_indices("a[index array]", x.shape[0], key)
    if isinstance(key, tuple) and any(_integer_array(k) for k in key):
        along = _one_array_among_slices(x, key)
        return ("take along", along) if along is not None else ("points", _points(x, key))
    raise IndexError(f"only integers, slices (:), ellipsis (...), None, boolean arrays and "
                     f"integer arrays are valid indices, got {type(key).__name__} "
                     f"{arguments._shown(key)}")


def _one_array_among_slices(x, key):
    """``(axis, indices, steps)`` of a key of slices and ``...`` with one
    1-D integer array (``a[:, idx, ...]``, xarray's outer indexing):
    NumPy's result is ``take`` along that axis of ``x[steps]`` (the key
    with ``:`` for the array).  None for any other key (several arrays,
    ints or None beside an array: ``_points``)."""
    at = [j for j, k in enumerate(key) if _integer_array(k)]
    if len(at) != 1 or not all(isinstance(k, slice) or k is Ellipsis
                               for j, k in enumerate(key) if j != at[0]):
        return None
    idx = key[at[0]]
    if (idx.ndim if is_distributed(idx) else np.ndim(idx)) != 1:
        return None
    arguments.numeric("a[index array]", x)
    steps = _index.normalize_key(key[:at[0]] + (slice(None),) + key[at[0] + 1:],
                                 x.distribution.global_shape)
    # the array's dim: the slices before it, an ellipsis there counting its dims
    axis = at[0] if not any(k is Ellipsis for k in key[:at[0]]) else \
        x.ndim - (len(key) - at[0])
    n = _index.selection_shape(steps)[axis]
    return axis, _take_indices("a[index array]", n, idx), steps


def _points(x, key):
    """The checks of ``x[(i0, i1, ...)]`` with integer arrays: one int or
    integer array per dim, each in range; broadcast together."""
    arguments.numeric("a[index arrays]", x)
    if len(key) != x.ndim:
        raise IndexError(f"a[index arrays]: one int or integer array per dim of the {x.ndim}-d "
                         f"array, got {len(key)}")
    out, shapes = [], []
    for k, n in zip(key, x.shape):
        if _index._is_int(k):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"a[index arrays]: index {i} is out of bounds for a dim of "
                                 f"size {n}")
            out.append(i % n)
            shapes.append(())
        elif is_distributed(k) and _integer_array(k):
            _in_range("a[index arrays]", n, k.parts.values)
            out.append(k)
            shapes.append(k.shape)
        elif not is_distributed(k) and _integer_array(k):
            a = np.asarray(k).astype(np.int64)
            _in_range("a[index arrays]", n, a)
            out.append(np.where(a < 0, a + n, a))
            shapes.append(a.shape)
        else:
            raise IndexError(f"a[index arrays]: one int or integer array per dim, got "
                             f"{type(k).__name__}")
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(f"a[index arrays]: the index arrays' shapes {shapes} do not "
                         "broadcast together") from None
    dists = [k for k in out if is_distributed(k)]
    if dists:                 # DistArray keys broadcast as operators do: checked alike
        from ..kernels.apply import broadcast_shape_of
        broadcast_shape_of([k for k in out if not isinstance(k, int)])
    return tuple(out)


def _described(kind, norm):
    if kind == "basic":
        return kind, _index.canonical(norm)
    if kind == "take along":
        return kind, (norm[0], norm[1], _index.canonical(norm[2]))
    return kind, norm


# -- a[key] ------------------------------------------------------------------------
def getitem(x, key):
    """``x[key]`` (see ``_getitem``): a repeated view -- the same key of an
    array of the same distribution and type -- takes its prepared path
    (``xdap.repeats``): the ledger entry and the plan kept from the
    first, a NumPy view of this rank's block, nothing checked again."""
    out = view_lane(_VIEWS, x, key, _view)
    return _getitem(x, key) if out is None else out


def _view(x, key):
    """The prepared view ``x[key]``, or None where it is not one (a key
    that moves data, or fails its checks: the declared path raises it)."""
    try:
        kind, norm = _key(x, key)
    except Exception:
        return None
    d = x.distribution
    if kind != "basic" or not _index.moves_nothing(d, x.parts, norm):
        return None
    maps, coords, local = _index.select_plan(d, norm)
    return prepared_view("a[key]", {"x": x, "key": normalized(_described(kind, norm), key)},
                         Distribution(maps, d.comm, coords), x,
                         index=tuple(k for k in local if k is not None) + (Ellipsis,))


_VIEWS = Repeats()


@collective(name="a[key]")
def _getitem(x, key):
    """``x[key]`` (see the module docstring): a record field for a string
    key, else a DistArray -- a 0-d one for an element.  Collective: the
    key is agreed first -- where the result is a view of every rank's own
    block (slices of block and whole dims, a field), no MPI call is made:
    the key is written in the ledger the next vote carries
    (``xdap.ledger``).  Slices of block dims are views of every rank's
    block (strided where the slice has steps; O(1), no copy): a later
    write to ``x`` shows through them, as in NumPy.  Optional data is
    copied (its bitmap has no strides), as are slices of cyclic or
    unstructured dims (moved to blocks first)."""
    arguments.array("a[key]", x)
    kind, norm = _key(x, key)
    view = kind == "field" or kind == "basic" and _index.moves_nothing(
        x.distribution, x.parts, norm)
    yield (moves_nothing if view else dict)(x=x, key=normalized(_described(kind, norm), key))
    return _selected(x, kind, norm)


getitem.__xdap_contract__ = contract_of(_getitem)


def _selected(x, kind, norm):
    d, p = x.distribution, x.parts
    if kind == "field":
        return field(x, norm)
    if kind == "flag":
        out = _selected(x, *_key(x, None))
        return out if norm else _selected(out, "basic", _index.normalize_key(
            slice(0, 0), out.distribution.global_shape))
    if kind == "new axes":
        # a 0-d array's value on new axes of size 1: the shape's default
        # distribution, each rank filling its block (every rank holds the value)
        return filled(x, (1,) * norm)
    if kind == "basic":
        return x.__xdap_wrap__(*_index.basic_index(d, p, norm), agreed=True)
    if kind == "element":
        from ..movement.gather import element_parts
        return x.__xdap_wrap__(Distribution((), x.comm), element_parts(d, p, norm), False, True)
    if kind == "empty":
        from ..create import zeros
        return new(zeros(norm, type=p.info.leaf.lstrip("?"), comm=x.comm))
    if kind == "mask":
        mask = norm
        if mask.distribution != d:        # aligned: moved to x's distribution
            from ..movement.redistribute import move_agreed
            md, mp = move_agreed(mask.distribution, mask.parts, d)
            mask = mask.__xdap_wrap__(md, mp, False, True)
        return x.__xdap_wrap__(*_index.mask_index(d, p, d, mask.parts.values), agreed=True)
    if kind == "numpy mask":
        from ..kernels.apply import _local_block
        local = _local_block(norm, d).values
        return x.__xdap_wrap__(*_index.mask_index(d, p, d, local), agreed=True)
    if kind == "leading":
        return _leading_mask(x, norm)
    if kind == "take":
        return _take(x, norm, 0)
    if kind == "take along":
        axis, indices, steps = norm
        return _take(_selected(x, "basic", steps), indices, axis)
    return _take_points(x, norm)


def _leading_mask(x, mask):
    """``x[mask]`` for an agreed mask of ``x``'s leading dims: the mask
    stretched over the trailing dims, the selection in C order (one 1-D
    irregular block), reshaped to (selected, *trailing) -- a copy that
    moves the selected rows twice at most."""
    trailing = x.shape[mask.ndim:]
    n = int(np.prod(trailing))
    if is_distributed(mask):
        full = mask
        for _ in trailing:
            full = unit_dim(full, full.ndim)
        full = broadcast(full, x.shape)
    else:
        full = np.broadcast_to(mask.reshape(mask.shape + (1,) * len(trailing)), x.shape)
    if n == 0:                                  # nothing to select but the count of rows
        from ..create import zeros
        from ..movement.reduce import reduce_agreed
        count = int(np.count_nonzero(mask)) if not is_distributed(mask) else int(reduce_agreed(
            mask.distribution, mask.parts, "sum", tuple(range(mask.ndim))).value)
        return new(zeros((count,) + trailing, type=x.parts.info.leaf.lstrip("?"),
                         comm=x.comm))
    flat = _selected(x, *_mask_key(x, full))
    return reshaped(flat, (flat.shape[0] // n,) + trailing)


# -- a[key] = v ----------------------------------------------------------------------
@collective(name="a[key] = v")
def setitem(x, key, value):
    """``x[key] = value`` in place: basic keys (ints, slices, ``...``,
    ``None``) with a scalar, a NumPy array (the same on every rank,
    broadcast as NumPy does) or a DistArray of the selection's shape; a
    boolean mask of the array's shape or of its leading dims with one
    value, or (a NumPy mask) with a NumPy array of the selection's shape
    (broadcast as NumPy does).  Collective: the key
    and the value are checked and agreed on every rank -- whatever it holds
    of the selection -- before anything is written.  A scalar or NumPy
    value is then local work; a DistArray value moves to the selection
    first.  Values convert under NumPy's same-kind rule, and a scalar the
    array's dtype cannot hold unchanged is refused.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.zeros(5), comm=MPI.COMM_SELF)
    >>> a[1:4] = 7.0
    >>> a.to_numpy().tolist()
    [0.0, 7.0, 7.0, 7.0, 0.0]
    """
    arguments.array("a[key] = v", x)
    if isinstance(key, str):
        raise TypeError("a['field'] = v: assign into a['field'][...] instead")
    key = _zero_d_as_int(key)
    flag = _zero_d_bool(key)
    if flag is not None:        # NumPy: a[True] = v is a[None][...] = v; a[False] writes nothing
        key = Ellipsis
        if not is_distributed(value) and np.ndim(value) == x.ndim + 1 and \
                np.shape(value)[0] in (0, 1):
            value = np.asarray(value).reshape(np.shape(value)[1:]) if np.shape(value)[0] \
                else np.zeros(np.shape(value)[1:], np.asarray(value).dtype)
    if _bool_mask(key):
        arguments.numeric("a[mask] = v", x)
        if not x.parts.values.flags.writeable:
            raise ValueError("a[mask] = v: the array is read-only")
        # a NumPy mask (the same on every rank) may cover the leading dims only
        kind, mask = _mask_key(x, key, leading=not is_distributed(key))
        if is_distributed(value) and value.ndim:
            raise TypeError("a[mask] = v: v must be one value (a scalar or a 0-d array), or a "
                            "NumPy array of the selection's shape; a DistArray v is not "
                            "supported (write v.to_numpy(), or use xp.where)")
        if np.ndim(value):
            v = _selection_values(x, kind, mask, value)
        else:
            v = arguments.value_of("a[mask] = v", "v", value, x.parts.values.dtype)
        yield dict(x=x, key=(kind, mask), value=v)
        if kind != "empty":
            _assign_where(x, kind, mask, v)
        return None
    if not _index.is_basic_key(key):
        raise TypeError(f"a[key] = v: basic keys (ints, slices, ..., None) and boolean masks "
                        f"only, got {type(key).__name__}")
    d, p = x.distribution, x.parts
    steps = _index.normalize_key(key, d.global_shape)
    kind, v = _index.check_assignment(d, p, steps, value)
    yield dict(x=x, key=_index.canonical(steps), flag=flag, value=(kind, v))
    if flag is not False:
        _index.assign(d, p, steps, kind, v)
    return None


def _selection_values(x, kind, mask, value):
    """The values of ``x[mask] = value`` where ``value`` is an array: it
    must broadcast to the selection's shape, ``(selected,) + x.shape[k:]``
    for a mask of ``x``'s first k dims (NumPy's rule), under the same-kind
    rule; a NumPy mask only (each rank finds where its selected elements
    fall in the selection's order from the mask itself)."""
    if kind not in ("numpy mask", "leading", "empty"):
        raise TypeError("a[mask] = v: an array v takes a NumPy mask (the same on every rank); "
                        "with a DistArray mask v must be one value (a scalar or a 0-d array)")
    # "empty": _mask_key gives the selection's shape itself
    shape = mask if kind == "empty" else \
        (int(np.count_nonzero(mask)),) + tuple(x.shape[mask.ndim:])
    return _index.numpy_value("a[mask] = v", value, x.parts.values.dtype, shape)


def _assign_where(x, kind, mask, value):
    """``x[mask] = value`` of agreed arguments: local work (a DistArray
    mask distributed otherwise is moved to ``x``'s distribution first).
    A NumPy mask (of ``x``'s shape or of its leading dims) and an array
    ``value`` of the selection's shape: each rank's selected elements take
    their places in the selection's C order, found from the mask's running
    count at the global indices the rank holds -- any layout."""
    d = x.distribution
    if kind in ("numpy mask", "leading") and (np.ndim(value) or kind == "leading"):
        lead = mask.ndim
        at = [np.asarray(d.global_indices(k)) for k in range(d.ndim)]
        local = mask[np.ix_(*at[:lead])]
        if np.ndim(value):
            order = (np.cumsum(mask, axis=None) - 1).reshape(mask.shape)[np.ix_(*at[:lead])]
            value = value[np.ix_(order[local], *at[lead:])]
        x.parts.values[local] = value
        return
    if kind == "mask":
        if mask.distribution != d:
            from ..movement.redistribute import move_agreed
            local = move_agreed(mask.distribution, mask.parts, d)[1].values
        else:
            local = mask.parts.values
    else:
        from ..kernels.apply import _local_block
        local = _local_block(mask, d).values
    x.parts.values[local] = value


# -- take ---------------------------------------------------------------------------
@collective
def take(x, indices, /, *, axis=0):
    """The elements at ``indices`` along ``axis`` (the Array API's ``take``;
    ``a[idx]`` for axis 0).  ``indices``: a 1-D NumPy array or list of ints,
    the same on every rank (the result is a block over them: each rank
    fetches its block), or a 1-D integer DistArray (the result has its
    distribution: each rank fetches what its part names).  Negative
    indices count from the end; one out of range is an IndexError on
    every rank.  Along the distributed first axis: a ``Scatter`` plan asks
    the owners (one exchange of positions, one of values); along an
    undistributed axis: local work.  Collective (agreed arguments).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(5.0) * 10, comm=MPI.COMM_SELF)
    >>> a[[4, 0, -1]].to_numpy()
    array([40.,  0., 40.])
    """
    arguments.numeric("take", x)
    if x.ndim == 0:
        raise ValueError("take: a 0-d array has no axis")
    axis = arguments.axis("take", x.ndim, axis)
    indices = _take_indices("take", x.shape[axis], indices)
    yield dict(x=x, indices=indices, axis=axis)
    return _take(x, indices, axis)


def _take(x, indices, axis):
    from .layouts import axis_whole, wrap
    from ..movement.index import take_rows_at
    d, p = x.distribution, x.parts
    n = d.global_shape[axis]
    if is_distributed(indices):
        if axis != 0:
            # along another axis every rank needs every index: gathered (O(len) a rank)
            from .exchange import to_numpy
            return _take(x, to_numpy(indices).astype(np.int64), axis)
        idx = indices.parts.values.astype(np.int64)
        rows = take_rows_at(d, p, np.where(idx < 0, idx + n, idx))
        nd = indices.distribution.with_trailing(d.global_shape[1:])
        return x.__xdap_wrap__(nd, rows, False, True)
    idx = np.where(indices < 0, indices + n, indices)
    if d.maps[axis].whole:
        maps = list(d.maps)
        maps[axis] = BlockMap(len(idx), 1)
        nd = Distribution(maps, x.comm, d.rank_coords)
        return wrap(x, nd, np.take(p.values, idx, axis=axis))
    if axis != 0:
        return _take(axis_whole(x, axis), indices, axis)
    from ..distribution import make_distribution
    shape = (len(idx),) + d.global_shape[1:]
    nd = make_distribution(shape, ("b",) + ("n",) * (len(shape) - 1), comm=x.comm)
    lo, hi = nd.maps[0].owned_range(nd.coords[0])
    return x.__xdap_wrap__(nd, take_rows_at(d, p, idx[lo:hi]), False, True)


def _take_points(x, key):
    """``x[(i0, i1, ...)]`` of agreed, checked keys (in range; NumPy ones
    already counted from the end): each point's flat C-order position
    computed where its keys live -- on every rank for NumPy keys,
    elementwise for DistArray keys (local, broadcast as operators are) --
    then ``take`` from the flattened ``x``: one ``Scatter``, and one
    exchange to flatten ``x`` unless its rows are in blocks."""
    from .elementwise import add, multiply, remainder
    shape = x.distribution.global_shape
    strides = [int(np.prod(shape[j + 1:], dtype=np.int64)) for j in range(len(shape))]
    flat = 0
    for k, n, stride in zip(key, shape, strides):
        if is_distributed(k):
            term = multiply(remainder(k, n), stride)          # negatives from the end
            flat = add(term, flat) if not is_distributed(flat) else add(flat, term)
        else:
            flat = np.asarray(k, np.int64) * stride + flat if not is_distributed(flat) else \
                add(flat, np.asarray(k, np.int64) * stride)
    flat_x = reshaped(x, (int(np.prod(shape, dtype=np.int64)),))
    if is_distributed(flat):
        from .data_types import astype
        points = astype(flat, np.int64) if flat.dtype != np.int64 else flat
        line = reshaped(points, (points.size,))
        return reshaped(_take(flat_x, line, 0), points.shape)
    points = np.asarray(flat, np.int64)
    return reshaped(_take(flat_x, points.reshape(-1), 0), points.shape)


@collective
def take_along_axis(x, indices, /, *, axis=-1):
    """The elements of ``x`` at ``indices`` along ``axis`` (NumPy's
    ``take_along_axis``): ``indices`` an integer DistArray of ``x``'s shape
    but for ``axis``.  1-D: ``take`` (a ``Scatter`` from the owners).  N-d:
    both are made whole along ``axis`` (one exchange each, where needed),
    then every rank takes locally.  An index out of range is one
    IndexError on every rank (each rank checks its part, in the vote)."""
    arguments.numeric("take_along_axis", x)
    if x.ndim == 0:
        raise ValueError("take_along_axis: a 0-d array has no axis")
    axis = arguments.axis("take_along_axis", x.ndim, axis)
    if not is_distributed(indices) or not is_integer(indices.parts.info.dtype) or \
            indices.parts.info.optional or indices.parts.info.ragged:
        raise TypeError("take_along_axis: indices must be an integer DistArray")
    if indices.ndim != x.ndim or any(a != b for j, (a, b) in enumerate(zip(x.shape,
                                                                           indices.shape))
                                     if j != axis):
        raise ValueError(f"take_along_axis: indices of shape {indices.shape} for an array "
                         f"of shape {x.shape} along axis {axis}")
    _in_range("take_along_axis", x.shape[axis], indices.parts.values)
    yield dict(x=x, indices=indices, axis=axis)
    from .layouts import axis_whole, values_on, with_axis, wrap
    if x.ndim == 1:
        return _take(x, indices, 0)
    if not x.distribution.maps[axis].whole:
        x = axis_whole(x, axis)
    idx = values_on(indices, with_axis(x.distribution, axis, indices.shape[axis]))
    n = x.shape[axis]
    idx = idx.astype(np.int64)
    values = np.take_along_axis(x.parts.values, np.where(idx < 0, idx + n, idx), axis=axis)
    return wrap(x, with_axis(x.distribution, axis, indices.shape[axis]), values)


# -- record fields -------------------------------------------------------------------
def _field_check(x, name):
    from ..dtypes import fields as record_fields
    if not isinstance(name, str):
        raise TypeError(f"a field name is a str, got {type(name).__name__} {name!r}")
    try:
        fields = record_fields(x.parts.info.dtype)
    except Exception:
        fields = {}
    if name not in fields:
        raise ValueError(f"a[{name!r}]: the element type {x.parts.info.dtype!r} has no field "
                         f"{name!r}" + (f"; its fields: {', '.join(fields)}" if fields else ""))


@local
def field(x, name: str):
    """One field of a record (or tuple: ``'f0'``, ...) element, as a
    DistArray with the same distribution (its own fixed dims, as in
    ``pos: 3 * float64``, become undistributed trailing dims). No
    communication. Zero-copy for fixed, non-optional arrays: kernels
    with ``out=a['x']`` write the records. Fields of ragged or optional
    arrays are read-only copies (see ``xdap.parts.field_parts``).
    ``a['x']`` is the same.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> r = np.zeros(4, np.dtype([("x", "f8"), ("n", "i8")]))
    >>> a = xdap.from_global(r, comm=MPI.COMM_SELF)
    >>> _ = xdap.kernels.add(a["x"], 1.5, out=a["x"])
    >>> a.to_global().value[0]
    {'x': 1.5, 'n': 0}
    """
    arguments.array("field", x)
    _field_check(x, name)
    yield dict(x=x, name=name)
    from ..parts import field_parts
    p = field_parts(x.parts, name)
    d = x.distribution
    if not p.info.ragged:
        d = d.with_trailing(p.values.shape[d.ndim:])
    # a ragged field keeps the rows (and leaf index) of its records
    return x.__xdap_wrap__(d, p, True, fresh=False) if p.info.ragged else \
        x.__xdap_wrap__(d, p, False, True)


@part
def global_indices(x, dim: int = 0) -> np.ndarray:
    """The global indices this rank's partition holds along ``dim``, in
    local order (ghost cells and padding included). No communication.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.from_global(np.zeros(5), dist=("c",), comm=MPI.COMM_SELF).global_indices()
    array([0, 1, 2, 3, 4])
    """
    arguments.array("global_indices", x)
    dim = arguments.axis("global_indices", x.distribution.ndim, dim, "dim")
    yield dict(x=x, dim=dim)
    return np.asarray(x.distribution.global_indices(dim))


@collective(name="__iter__")
def iteration_length(x):
    """How many steps ``iter(x)`` takes -- the first dim's size -- with
    ``x`` agreed (an iteration is collective: each step is ``x[i]``); a
    0-d array does not iterate (TypeError, as NumPy's)."""
    arguments.array("__iter__", x)
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d DistArray (use its value: float(a), a.item())")
    yield dict(x=x)
    return x.distribution.global_shape[0]
