"""NumPy's manipulation functions beyond the Array API standard -- ``pad``
and ``sliding_window_view`` -- on distributed data, with NumPy's results
on the global array.  xarray's ``shift``, ``rolling`` and ``pad`` call them
(``xp.pad``, ``xp.lib.stride_tricks.sliding_window_view``); ``np.pad(a)``
reaches ``pad`` through ``DistArray.__array_function__``.

What moves:

- ``pad`` with a constant along a block or whole dim: nothing -- the first
  and the last grid positions add the new cells to their blocks (the
  blocks' bounds shift), every other rank keeps its block as it is (a copy
  of it: the result is a new array).  Along a cyclic or unstructured dim,
  and the modes that copy cells (``edge``, ``wrap``, ``reflect``,
  ``symmetric``): the pieces are slices of the array, joined by ``concat``
  (one redistribution).
- ``sliding_window_view`` along rows in blocks: each rank's block with the
  ``window - 1`` rows after it (one exchange with the next ranks), then
  NumPy's windows of that, copied (a DistArray's values are contiguous:
  ``window`` times the block's memory).  Along a whole dim: local; along
  any other distributed one, that dim made whole first (one exchange).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
>>> np.pad(a, (1, 2), constant_values=-1).to_numpy().tolist()
[-1.0, 0.0, 1.0, 2.0, 3.0, -1.0, -1.0]
>>> xdap.sliding_window_view(a, 3).to_numpy().tolist()
[[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]
"""
from __future__ import annotations

import types

import numpy as np

from .. import arguments
from ..contract import collective
from ..distribution import Distribution
from ..maps import BlockMap
from ..parts import Parts

__all__ = ["pad", "sliding_window_view", "stride_tricks"]

MODES = ("constant", "edge", "wrap", "reflect", "symmetric", "empty")


def _pairs(name, what, value, ndim, kind):
    """NumPy's ``pad_width`` / ``constant_values`` forms (a number, a pair,
    one pair per dim) as an (ndim, 2) array of ``kind`` ('i': ints >= 0,
    'f': numbers)."""
    try:
        given = np.asarray(value)
        if given.dtype == object or given.dtype.kind not in ("iu" if kind == "i" else "biufc"):
            raise TypeError
        pairs = np.broadcast_to(given, (ndim, 2))
    except (TypeError, ValueError):
        raise (TypeError if kind == "i" else ValueError)(
            f"{name}: {what} must be {'integers' if kind == 'i' else 'numbers'}: one, a pair "
            f"(before, after) or one pair per dim of the {ndim}-d array, got "
            f"{arguments._shown(value)}") from None
    if kind == "i" and (pairs < 0).any():
        raise ValueError(f"{name}: {what} must be >= 0, got {arguments._shown(value)}")
    return pairs.astype(np.int64) if kind == "i" else pairs


def _fits(name, values, dtype):
    """``values`` as ``dtype``, refused where one changes (2.5 or NaN as an
    integer): NumPy would cast it quietly."""
    cast = values.astype(dtype)
    same = cast == values
    if values.dtype.kind in "fc":
        same |= np.isnan(values) & np.isnan(cast)
    if not same.all():
        bad = values[~same].reshape(-1)[0]
        raise ValueError(f"{name}: constant_values {bad!r} does not fit {np.dtype(dtype)} "
                         "data unchanged (convert the array first, as xarray does)")
    return cast


@collective
def pad(array, pad_width, mode="constant", **kwargs):
    """NumPy's ``np.pad`` on a DistArray: ``mode`` ``constant`` (with
    ``constant_values``, default 0), ``edge``, ``wrap``, ``reflect``,
    ``symmetric`` (each with widths up to the dim's length -- 1 less for
    ``reflect``) or ``empty`` (zeros here); a new array.  What moves: see
    the module docstring.  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6).reshape(2, 3), comm=MPI.COMM_SELF)
    >>> xdap.pad(a, ((0, 0), (2, 1)), mode="reflect").to_numpy().tolist()
    [[2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4]]
    """
    arguments.numeric("pad", array)
    if array.parts.info.optional:
        raise TypeError(f"pad: {arguments.type_of(array)} data is not padded yet (fill the "
                        "missing values first)")
    mode = arguments.choice("pad", "mode", mode, MODES)
    allowed = {"constant_values"} if mode == "constant" else \
        {"reflect_type"} if mode in ("reflect", "symmetric") else set()
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f"pad: mode {mode!r} takes no {', '.join(unknown)}=")
    if kwargs.get("reflect_type", "even") != "even":
        raise ValueError("pad: only reflect_type='even' (NumPy's default) is supported")
    widths = _pairs("pad", "pad_width", pad_width, array.ndim, "i")
    values = _fits("pad", _pairs("pad", "constant_values", kwargs.get("constant_values", 0),
                                 array.ndim, "f"), array.dtype)
    for ax, (before, after) in enumerate(widths):
        n = array.shape[ax]
        limit = n - 1 if mode == "reflect" else n
        if mode in ("edge", "wrap", "reflect", "symmetric") and max(before, after) > 0 and \
                (n == 0 or max(before, after) > limit):
            raise ValueError(f"pad: mode {mode!r} pads dim {ax} of length {n} by at most "
                             f"{max(limit, 0)} cells on a side here, asked for "
                             f"{int(max(before, after))} (pad in steps)")
    yield dict(array=array, pad_width=widths, mode=mode, kwargs=dict(constant_values=values))
    out = array
    for ax, (before, after) in enumerate(widths):
        if before or after:
            out = _pad_axis(out, ax, int(before), int(after), mode, values[ax])
    return out if out is not array else _copy(array)


def _copy(x):
    p = x.parts
    return x.__xdap_wrap__(x.distribution, Parts(p.info, p.values.copy(), None, p.offsets),
                           False, True)


def _pad_axis(x, ax, before, after, mode, values):
    m = x.distribution.maps[ax]
    if mode in ("constant", "empty") and type(m) is BlockMap and not m.padded:
        return _constant_in_place(x, ax, before, after, (0, 0) if mode == "empty" else values)
    from .indexing import getitem
    from .manipulation import concat, flip, repeat
    n = x.shape[ax]

    def part(start, stop):
        return getitem(x, (slice(None),) * ax + (slice(start, stop),))
    if mode in ("constant", "empty"):
        from .creation import full
        shape = list(x.shape)
        pieces = []
        for width, value in ((before, values[0]), (after, values[1])):
            shape[ax] = width
            pieces.append(full(tuple(shape), value.item() if mode == "constant" else 0,
                               dtype=x.dtype, comm=x.comm))
        left, right = pieces
    elif mode == "edge":
        left, right = repeat(part(0, 1), before, axis=ax), repeat(part(n - 1, n), after, axis=ax)
    elif mode == "wrap":
        left, right = part(n - before, n), part(0, after)
    elif mode == "reflect":
        left, right = flip(part(1, before + 1), axis=ax), flip(part(n - 1 - after, n - 1), axis=ax)
    else:                                                     # symmetric
        left, right = flip(part(0, before), axis=ax), flip(part(n - after, n), axis=ax)
    return concat([left, x, right], axis=ax)


def _constant_in_place(x, ax, before, after, values):
    """Constant padding along a block (or whole) dim: grid position 0
    prepends ``before`` cells to its block, the last one appends ``after``;
    the bounds shift.  Local work."""
    d, p = x.distribution, x.parts
    m, at = d.maps[ax], d.coords[ax]
    local = p.values
    pieces = []
    for width, value, here in ((before, values[0], at == 0),
                               (None, None, True),
                               (after, values[1], at == m.grid_size - 1)):
        if width is None:
            pieces.append(local)
        elif here and width:
            shape = list(local.shape)
            shape[ax] = width
            pieces.append(np.full(shape, value, local.dtype))
    bounds = [0] + [b + before for b in m.bounds[1:-1]] + [m.size + before + after]
    maps = list(d.maps)
    maps[ax] = BlockMap(m.size + before + after, m.grid_size, bounds=bounds)
    values = np.concatenate(pieces, axis=ax) if len(pieces) > 1 else local.copy()
    return x.__xdap_wrap__(Distribution(maps, d.comm, d.rank_coords), Parts.of_array(values),
                           False, True)


# -- sliding windows ------------------------------------------------------------------
def _window_args(x, window_shape, axis):
    arguments.numeric("sliding_window_view", x)
    if x.parts.info.optional:
        raise TypeError(f"sliding_window_view: {arguments.type_of(x)} data is not windowed "
                        "yet")
    windows = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    windows = tuple(arguments.integer("sliding_window_view", "window_shape", w)
                    for w in windows)
    if axis is None:
        if len(windows) != x.ndim:
            raise ValueError(f"sliding_window_view: window_shape {windows} needs one entry "
                             f"per dim of the {x.ndim}-d array (or axis=)")
        axes = tuple(range(x.ndim))
    else:
        given = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(arguments.axis("sliding_window_view", x.ndim, a) for a in given)
        if len(axes) != len(windows):
            raise ValueError(f"sliding_window_view: {len(windows)} window sizes for "
                             f"{len(axes)} axes")
    shape = list(x.shape)
    for a, w in zip(axes, windows):
        if not 0 <= w <= shape[a]:                     # NumPy's rule
            raise ValueError(f"sliding_window_view: window_shape {w} is larger than dim "
                             f"{a} ({shape[a]})" if w > 0 else
                             "sliding_window_view: window_shape cannot be negative")
        shape[a] -= w - 1
    return windows, axes


@collective
def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """NumPy's ``np.lib.stride_tricks.sliding_window_view``: the windows of
    ``window_shape`` along ``axis`` (all dims when None), the window dims
    last -- a copy here, not a view (what moves: see the module
    docstring).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(5), comm=MPI.COMM_SELF)
    >>> xdap.sliding_window_view(a, 2).to_numpy().tolist()
    [[0, 1], [1, 2], [2, 3], [3, 4]]
    """
    windows, axes = _window_args(x, window_shape, axis)
    arguments.flag("sliding_window_view", "subok", subok)
    if arguments.flag("sliding_window_view", "writeable", writeable):
        raise ValueError("sliding_window_view: the windows are a copy here; writeable=True "
                         "would not write through to the array")
    yield dict(x=x, window_shape=windows, axis=axes, subok=False, writeable=False)
    return _windows(x, windows, axes)


def _windows(x, windows, axes):
    from .layouts import axis_whole
    d = x.distribution
    for a in axes:
        m = d.maps[a]
        # rows in blocks, the rest whole: the next rank's first rows; else the axis whole
        rows = a == 0 and type(m) is BlockMap and not m.padded and not m.shared_owned and \
            all(mk.whole for mk in d.maps[1:])
        if not m.whole and not rows:
            return _windows(axis_whole(x, a), windows, axes)
    d, p = x.distribution, x.parts
    local = p.values
    maps = list(d.maps)
    for a, w in zip(axes, windows):
        m = d.maps[a]
        if m.whole:
            maps[a] = BlockMap(m.size - w + 1, 1)
            continue
        local, maps[a] = _with_next_cells(x, w - 1), _window_map(m, w)
    nd = Distribution(maps, d.comm, d.rank_coords).with_trailing(windows)
    if any(local.shape[a] < w for a, w in zip(axes, windows)):   # too few rows for a window
        values = np.empty(nd.local_shape_of(x.comm.rank), local.dtype)
    else:
        values = np.ascontiguousarray(np.lib.stride_tricks.sliding_window_view(
            local, windows, axis=axes))
    return x.__xdap_wrap__(nd, Parts.of_array(values), False, True)


def _window_map(m, w):
    """The block map of the windows' starts: grid position p starts the
    windows at its owned cells whose window ends inside the dim."""
    n = m.size - w + 1
    return BlockMap(n, m.grid_size, bounds=[min(b, n) for b in m.bounds[:-1]] + [n])


def _with_next_cells(x, k):
    """This rank's block of rows with the ``k`` rows after it (from the
    ranks after it -- as many as it takes; an empty block takes none): one
    exchange of those rows (``take_rows_at``)."""
    from ..movement.index import take_rows_at
    d, p = x.distribution, x.parts
    m, at = d.maps[0], d.coords[0]
    start, stop = m.bounds[at], m.bounds[at + 1]
    last = min(stop + k, m.size) if stop > start else stop
    extra = take_rows_at(d, p, np.arange(stop, last, dtype=np.int64)).values
    return np.concatenate([p.values, extra.reshape((-1,) + p.values.shape[1:])], axis=0)


stride_tricks = types.SimpleNamespace(sliding_window_view=sliding_window_view)
lib = types.SimpleNamespace(stride_tricks=stride_tricks)
