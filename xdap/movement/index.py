"""Basic indexing of distributed data: ``a[2:5]``, ``a[1]``, ``a[:, 0]``,
``a[::-1]``, ``a[..., None]`` -- NumPy's rules on the global array.

``basic_index(d, p, key)`` returns the result's ``(Distribution, Parts)``.
What it moves is what the key makes necessary, decided from the key and
the agreed distribution alone (every rank reaches the same plan):

- a slice of a **block** dim (regular, irregular or padded) is an
  irregular block: each rank keeps the selected part of what it owns, the
  new bounds follow from the old ones -- no data moves, no MPI call; a
  negative step reverses the grid positions (the last rank's elements come
  first), still without moving data;
- a slice or an integer on an **undistributed** dim is local too; ``None``
  adds an undistributed dim of size 1;
- the local piece is a NumPy view of the rank's buffer when it is
  contiguous (``a[1000:-1000]`` on a block dim: zero-copy), else a local
  copy (``a[::2]``, ``a[:, 0]`` of a row block);
- a slice of a **cyclic** or **unstructured** dim first redistributes that
  dim to blocks over the same grid (one exchange; the slice is then
  local);
- an integer on a **distributed** dim selects one slab, held by one grid
  position: the slab is redistributed over the whole grid (one exchange of
  the slab alone), then the dim is dropped;
- integers on every dim read one element (``read_element``: a NumPy scalar
  on every rank, as NumPy returns).

Ragged arrays and strings slice along their rows (the distributed dim; a
copy of the selected rows); the key cannot reach inside a row.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> d2, p2 = basic_index(d, p, normalize_key((slice(1, None), -1), d.global_shape))
>>> d2.global_shape, p2.values.tolist()
((2,), [7.0, 11.0])
"""
from __future__ import annotations

import operator

import numpy as np

from .. import plans
from ..distribution import Distribution, make_distribution
from ..maps import BlockMap
from ..parts import Parts
from ..bitmaps import pack_validity
from ..rows import take_rows

__all__ = ["basic_index", "moves_nothing", "select_plan", "normalize_key", "is_basic_key",
           "canonical",
           "selection_shape",
           "check_assignment", "assign", "mask_index", "take_rows_at"]


def is_basic_key(key) -> bool:
    """Whether ``key`` is basic indexing (ints, slices, Ellipsis, None)."""
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice) or _is_int(k) for k in items)


def _is_int(k) -> bool:
    if isinstance(k, (bool, np.bool_)):
        return False
    try:
        operator.index(k)
    except TypeError:
        return False
    return True


def normalize_key(key, shape) -> list:
    """The key as one entry per result step: ``('int', dim, i)``,
    ``('slice', dim, range)`` or ``('new',)``; IndexError as NumPy's."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consuming = sum(1 for k in items if k is not None and k is not Ellipsis)
    if consuming > len(shape):
        raise IndexError(f"too many indices for a DistArray of {len(shape)} dims: "
                         f"{consuming} were given")
    if any(k is Ellipsis for k in items):
        at = next(j for j, k in enumerate(items) if k is Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(shape) - consuming)
    else:
        items += [slice(None)] * (len(shape) - consuming)
    out, dim = [], 0
    for k in items:
        if k is None:
            out.append(("new",))
            continue
        n = shape[dim]
        if isinstance(k, slice):
            out.append(("slice", dim, range(*k.indices(n))))
        else:
            i = operator.index(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dim {dim} of size {n}")
            out.append(("int", dim, i % n))
        dim += 1
    return out



def basic_index(d: Distribution, p: Parts, steps):
    """``a[key]`` for a basic key already normalized (``normalize_key``)
    and agreed on every rank: ``(Distribution, Parts)`` of the result (see
    the module docstring for what moves; every decision reads the agreed
    distribution and key, so every rank makes the same one).  A key of
    integers on every dim is an element read: see ``gather.element_parts``."""
    if p.info.ragged or p.info.boxed:
        if any(s[0] != "slice" for s in steps):
            raise IndexError(f"{p.info.global_type(d.global_shape)} data takes a slice of its rows only (no "
                             "integers, None or indices inside a row)")
    # 1. dims that must move first: cyclic/unstructured dims a key selects from become blocks
    moved = [s[1] for s in steps if s[0] != "new" and not d.maps[s[1]].whole
             and not d.maps[s[1]].ranges
             and not (s[0] == "slice" and len(s[2]) == d.maps[s[1]].size and s[2].step == 1)]
    if moved:
        d, p = _to_blocks(d, p, moved)
    # 2. integers on distributed dims: slice them to one slab now, drop after
    drops = [s[1] for s in steps if s[0] == "int" and not d.maps[s[1]].whole]
    steps = [("slice", s[1], range(s[2], s[2] + 1)) if s[0] == "int" and s[1] in drops else s
             for s in steps]
    d, p = _local_select(d, p, steps)
    if drops:
        d, p = _drop_distributed(d, p, [_position(steps, j) for j in drops])
    return d, p


def moves_nothing(d: Distribution, p: Parts, steps) -> bool:
    """Whether ``basic_index(d, p, steps)`` is local work -- every rank's
    result a view (or copy) of its own block, no MPI call: no dim a key
    selects from must move to blocks, no integer on a distributed dim, not
    a key of integers only (an element read).  Decided from the agreed
    distribution and the key alone."""
    if all(s[0] == "int" for s in steps) and steps:
        return False
    for s in steps:
        if s[0] == "new":
            continue
        m = d.maps[s[1]]
        if m.whole:
            continue
        if s[0] == "int":
            return False
        if not m.ranges and not (len(s[2]) == m.size and s[2].step == 1):
            return False
    return True


def canonical(steps) -> tuple:
    """Normalized steps in plain Python values, as ranks compare them."""
    return tuple(("slice", s[1], s[2].start, s[2].stop, s[2].step) if s[0] == "slice" else s
                 for s in steps)


def _position(steps, dim) -> int:
    """Where source dim ``dim`` sits in the result (after new axes and
    integer-dropped dims)."""
    pos = 0
    for s in steps:
        if s[0] == "new":
            pos += 1
        elif s[0] == "int":
            continue
        elif s[1] == dim:
            return pos
        else:
            pos += 1
    raise AssertionError(dim)


def _to_blocks(d, p, dims):
    """Redistribute ``dims`` to regular blocks over their grid sizes (the
    other dims, and every rank's grid position, unchanged)."""
    from .redistribute import move_agreed
    maps = [BlockMap(m.size, m.grid_size) if j in dims else m for j, m in enumerate(d.maps)]
    return move_agreed(d, p, Distribution(maps, d.comm, d.rank_coords))


def _drop_distributed(d, p, dims):
    """Drop size-1 dims that are distributed: the one slab moves over the
    whole grid (block on the first remaining dim that is not size 1... or
    the default factorisation), then the dims, now undistributed, go."""
    keep = [j for j in range(d.ndim) if j not in dims]
    if not keep:        # a 0-d result (a[0, ...]): every rank holds the element
        from .gather import element_parts
        return Distribution([], d.comm, None), element_parts(d, p, (0,) * d.ndim)
    spec = tuple("n" if j in dims else "b" for j in range(d.ndim))
    target = make_distribution(d.global_shape, spec, comm=d.comm)
    from .redistribute import move_agreed
    d, p = move_agreed(d, p, target)
    return _squeeze(d, p, dims)


def _squeeze(d, p, dims):
    maps = [m for j, m in enumerate(d.maps) if j not in dims]
    coords = np.delete(d.rank_coords, dims, axis=1)
    nd = Distribution(maps, d.comm, coords if maps else None)
    values = p.values.reshape(nd.local_shape) if maps else p.values.reshape(())
    return nd, Parts(p.info.with_shape(values.shape), values, p.validity)


def select_plan(d, steps):
    """``(maps, placement, local key)`` of the zero-move part: the result's
    maps and this rank's local key, a pure plan of the agreed distribution
    and the key (kept: ``a[1:-1]`` in a loop is a dict hit)."""
    key = plans.Key("slice", (d.fingerprint(), d.coords, tuple(
        (s[0], s[1], s[2].start, s[2].stop, s[2].step) if s[0] == "slice" else s
        for s in steps)))
    return plans.pure.get_or_make(key, lambda: _select_plan(d, steps))


def _local_select(d, p, steps):
    """The zero-move part: every slice is of a block or whole dim."""
    maps, coords, local = select_plan(d, steps)
    nd = Distribution(maps, d.comm, coords)
    return nd, _select_parts(p, nd, maps, local)


def _select_plan(d, steps):
    coords = d.rank_coords
    me = d.coords
    maps, cols, local = [], [], []
    for s in steps:
        if s[0] == "new":
            maps.append(BlockMap(1, 1))
            cols.append(np.zeros(len(coords), np.int64))
            local.append(None)
            continue
        kind, j, sel = s
        m = d.maps[j]
        if kind == "int":                       # an undistributed dim: drop it
            local.append(sel)
            continue
        new_map, position, here = _slice_block(m, sel, me[j])
        maps.append(new_map)
        cols.append(position(coords[:, j]))
        local.append(here)
    placement = np.stack(cols, axis=1) if maps else None
    if placement is not None and np.array_equal(placement,
                                                Distribution.detached(maps).rank_coords):
        placement = None                    # C order: no placement to check each time
    return tuple(maps), placement, tuple(local)


def _select_parts(p, nd, maps, local):
    if p.info.ragged or p.info.boxed:
        rows = np.arange(p.nrows)[local[0]]
        return take_rows(p, rows)
    index = tuple(k for k in local if k is not None)       # new axes: by the reshape
    values = p.values[index + (Ellipsis,)]   # the trailing ... keeps a 0-d result an array (a view)
    # new axes: NumPy's None in the same places
    values = values.reshape(nd.local_shape) if values.ndim != len(maps) else values
    validity = None
    if p.validity is not None:
        validity = pack_validity(p.valid_mask()[index].reshape(values.shape))
        # a bitmap has no strides: optional values are copied with it
        values = np.ascontiguousarray(values)
    # else a strided slice stays a view (O(1)); what needs contiguous memory
    # copies (the transport, kernels over N-d views)
    return Parts(p.info.with_shape(values.shape), values, validity)


def _slice_block(m, sel: range, g: int):
    """A slice ``sel`` of block (or whole) map ``m`` seen from grid
    position ``g``: (the new map, grid position -> new grid position,
    the local slice of ``g``'s buffer)."""
    G = m.grid_size
    if len(sel) == m.size and sel.step == 1:    # ':' keeps the map, whatever its kind
        return m, lambda c: c, slice(None)
    if G == 1 and not m.padded:
        here = slice(sel.start, sel.stop if sel.stop >= 0 else None, sel.step)
        return BlockMap(len(sel), 1), lambda c: c, here if len(sel) else slice(0, 0)
    counts, firsts = np.zeros(G, np.int64), np.zeros(G, np.int64)
    for q in range(G):
        lo, hi = m.owned_range(q)
        part = _clip(sel, lo, hi)
        counts[q] = len(part)
        firsts[q] = part[0] if len(part) else -1
    forward = sel.step > 0
    order = counts if forward else counts[::-1]
    bounds = np.concatenate([[0], np.cumsum(order)])
    new = BlockMap(len(sel), G, bounds=bounds)
    if forward:
        def position(c):
            return c
    else:
        def position(c):
            return G - 1 - c
    lo = m.owned_range(g)[0]
    base = m.owned_local_slice(g).start          # padded blocks: owned data's offset
    part = _clip(sel, lo, m.owned_range(g)[1])
    if not len(part):
        here = slice(0, 0)
    else:
        start = part[0] - lo + base
        stop = part[-1] - lo + base + (1 if forward else -1)
        here = slice(start, stop if stop >= 0 else None, sel.step)
    return new, position, here


def _clip(sel: range, lo: int, hi: int) -> range:
    """The elements of ``sel`` in ``[lo, hi)``, in ``sel``'s order."""
    if sel.step > 0:
        first = sel.start if sel.start >= lo else sel.start + -(-(lo - sel.start) // sel.step) * sel.step
        return range(first, min(sel.stop, hi), sel.step) if first < hi else range(0)
    # descending: from the largest element < hi down to >= lo
    top = hi - 1
    first = sel.start if sel.start <= top else sel.start - -(-(sel.start - top) // -sel.step) * -sel.step
    stop = max(sel.stop, lo - 1)
    return range(first, stop, sel.step) if first >= lo and first > sel.stop else range(0)


def selection_shape(steps) -> tuple:
    """The shape ``a[key]`` has (new axes included, integer dims dropped)."""
    return tuple(1 if s[0] == "new" else len(s[2]) for s in steps if s[0] != "int")


def check_assignment(d: Distribution, p: Parts, steps, value):
    """The checks of ``a[key] = value`` for normalized ``steps``, the same
    on every rank whatever it holds of the selection (NumPy refuses a bad
    value for an empty selection too): returns ``(kind, value)`` -- kind
    ``"scalar"`` (a NumPy scalar of the array's dtype), ``"numpy"`` (an
    array of the selection's shape and the array's dtype) or ``"array"``
    (a DistArray of the selection's shape, or 0-d).  Conversions follow
    NumPy's same-kind rule, and a scalar that would change is refused
    (``int8_array[0] = 300``, ``int_array[0] = 2.5``)."""
    from .. import arguments
    if p.info.ragged or p.info.boxed or p.validity is not None:
        raise TypeError(f"a[...] = v: {p.info.global_type(d.global_shape)} data is not assigned by index "
                        "(fixed, non-optional types only; build a new array instead)")
    if not p.values.flags.writeable:
        raise ValueError("a[...] = v: the array is read-only")
    dt = p.values.dtype
    shape = selection_shape(steps)
    if hasattr(type(value), "__xdap_wrap__"):
        info = value.parts.info
        if info.ragged or info.boxed or not info.numeric:
            raise TypeError(f"a[...] = b: b is {info.global_type(value.distribution.global_shape)} data; the values assigned "
                            "by index are fixed numbers")
        if info.optional:
            raise TypeError("a[...] = b: b has missing values (?T); fill them first")
        _same_kind(info.numpy_dtype, dt)
        selected = tuple(len(s[2]) for s in steps if s[0] == "slice")
        if value.ndim and tuple(value.distribution.global_shape) != selected:
            raise ValueError(f"a[...] = b: b has shape {value.distribution.global_shape}, the "
                             f"selection {shape} (a DistArray value must have the selection's "
                             "shape, or be 0-d)")
        if value.ndim == 0:
            return "scalar", arguments.value_of("a[...] = b", "b", value, dt)
        return "array", value
    if isinstance(value, (np.ndarray, list, tuple)):
        v = np.asarray(value)
        if v.ndim == 0 and v.dtype.kind in "biufc":
            return "scalar", arguments.value_of("a[...] = v", "v", v[()], dt)
        return "numpy", numpy_value("a[...] = v", v, dt, shape)
    return "scalar", arguments.value_of("a[...] = v", "v", value, dt)


def numpy_value(what: str, value, dt, shape):
    """A NumPy ``value`` (the same on every rank) for a selection of
    ``shape`` in an array of dtype ``dt``: numbers, converted under NumPy's
    same-kind rule, broadcast to ``shape`` (a read-only view of one
    converted copy; no copy where ``value`` has ``dt`` already)."""
    v = np.asarray(value)
    if v.dtype.kind not in "biufc":
        raise TypeError(f"{what}: v holds {v.dtype} values, not numbers")
    _same_kind(v.dtype, dt)
    try:
        return np.broadcast_to(v.astype(dt, copy=False), shape)
    except ValueError:
        raise ValueError(f"{what}: v of shape {v.shape} does not broadcast to the "
                         f"selection's shape {shape}") from None


def _same_kind(src, dst):
    if not np.can_cast(src, dst, casting="same_kind"):
        raise TypeError(f"a[...] = v: cannot assign {src} values to a {dst} array without "
                        "changing them (NumPy's same-kind rule; convert with astype first)")


def assign(d: Distribution, p: Parts, steps, kind: str, value) -> None:
    """``a[key] = value`` in place, for normalized ``steps`` and a value
    ``check_assignment`` returned, agreed on every rank: every rank writes
    the selected elements it holds (owned and ghost copies alike).

    A scalar or a NumPy value is local work (no MPI call); a DistArray
    value is moved to the selection's distribution first (collective;
    nothing moves when it already has it, as ``a[1:-1] = b[1:-1]`` for two
    arrays of one block distribution) -- or, where the selection has no
    distribution of its own (an integer on a distributed dim, a cyclic
    dim: ``a[i, :] = b``), copied whole to every rank (collective; O(size
    of b) a rank).  Which happens is decided from the agreed
    distributions and key.
    """
    consumed = [s for s in steps if s[0] != "new"]
    shape = tuple(len(s[2]) for s in steps if s[0] == "slice")
    if kind == "array" and not _moves_to(d, steps):
        # the selection has no distribution b can move to: b's values on every rank
        from .gather import to_global
        value = np.asarray(to_global(value.distribution, value.parts, None).values)
        kind = "numpy"
    local = None
    if kind == "array":
        local = _distributed_value(d, steps, value)
    positions, picks = [], []
    for k, j, sel in consumed:
        g = np.asarray(d.global_indices(j))
        if k == "int":
            positions.append(np.flatnonzero(g == sel))
            picks.append(None)
            continue
        if not len(sel):
            return
        off = g - sel.start
        inside = (off % sel.step == 0) & (off // sel.step >= 0) & (off // sel.step < len(sel))
        positions.append(np.flatnonzero(inside))
        picks.append(off[inside] // sel.step)
    if any(len(q) == 0 for q in positions):
        return
    where = np.ix_(*positions)
    if kind == "numpy":
        v = np.reshape(value, shape)
        local = v[np.ix_(*[q for q in picks if q is not None])] if shape else v
    elif kind == "scalar":
        local = value
    if np.ndim(local):           # integer dims are length-1 dims of `where`
        local = np.reshape(local, tuple(len(q) for q in positions))
    p.values[where] = local


def _moves_to(d, steps) -> bool:
    """Whether a DistArray value can move to the selection's own
    distribution: every selected dim a block or whole, no integer on a
    distributed dim.  Decided from the agreed distribution."""
    return not any(s[0] != "new" and not d.maps[s[1]].whole and
                   (not d.maps[s[1]].ranges or s[0] == "int") for s in steps)


def _distributed_value(d, steps, value):
    """A DistArray value as this rank's block of the selection, its
    elements in ascending global order along every dim (the order of this
    rank's buffer): moved to the selection's distribution (collective), a
    dim selected with a negative step reversed back."""
    sel_steps = [s for s in steps if s[0] == "slice"]
    coords = d.rank_coords
    maps, cols = [], []
    for _, j, sel in sel_steps:
        m, position, _ = _slice_block(d.maps[j], sel, d.coords[j])
        maps.append(m)
        cols.append(position(coords[:, j]))
    target = Distribution(maps, d.comm, np.stack(cols, axis=1) if maps else None)
    from .redistribute import move_agreed
    vd, vp = value.distribution, value.parts
    if vd != target:
        vd, vp = move_agreed(vd, vp, target)
    local = vp.values
    backwards = tuple(k for k, (_, _, sel) in enumerate(sel_steps) if sel.step < 0)
    return np.flip(local, backwards) if backwards else local


def mask_index(d: Distribution, p: Parts, mask_d: Distribution, mask: np.ndarray):
    """``a[mask]`` for a boolean ``mask`` of ``a``'s shape: the selected
    elements in global C order, as a 1-D irregular block (collective: one
    allgather of counts -- the sizes' prefix sum).  Each rank selects from
    what it holds, so nothing moves when its rows are a block of the global
    C order (a 1-D block, or blocks of rows with whole other dims); other
    layouts are first redistributed to row blocks (one exchange).  ``mask``
    is this rank's block of it under ``mask_d`` (a DistArray's), which must
    equal ``d``.
    """
    if mask_d != d:
        raise ValueError(f"a[mask]: the mask is distributed otherwise than the array "
                         f"({mask_d!r} vs {d!r}); redistribute it first")
    if p.info.ragged or p.info.boxed:
        raise TypeError(f"a[mask]: {p.info.global_type(d.global_shape)} data takes a slice of its rows only")
    comm = d.comm
    if not d.row_blocks and d.ndim:
        from .redistribute import move_agreed
        target = make_distribution(d.global_shape, ("b",) + ("n",) * (d.ndim - 1), comm=comm)
        (d, p), (_, mp) = move_agreed(d, p, target), move_agreed(mask_d, Parts.of_array(mask),
                                                                  target)
        mask = mp.values
    values = p.values[mask]
    validity = None if p.validity is None else pack_validity(p.valid_mask()[mask])
    P = comm.size
    sizes = np.empty(P, np.int64)
    comm.Allgather(np.array([len(values)], np.int64), sizes)
    nd = Distribution([BlockMap(int(sizes.sum()), P,
                                bounds=np.concatenate([[0], np.cumsum(sizes)]))], comm)
    return nd, Parts(p.info.with_shape(values.shape), np.ascontiguousarray(values), validity)


def take_rows_at(d: Distribution, p: Parts, needed: np.ndarray) -> Parts:
    """The rows of ``(d, p)`` at the global indices ``needed`` along dim 0
    (negative ones counted from the end), in that order: this rank's part of
    an integer-array index (``a[idx]``).  Collective: a ``Scatter`` plan
    (its agreement refuses an index out of range on any rank, on every
    rank) and one exchange; the other dims move along (a distributed one
    is made whole first).  Fixed, non-optional types."""
    from .scatter import Scatter
    if any(g != 1 for g in d.grid[1:]):
        from .redistribute import move_agreed
        d, p = move_agreed(d, p, make_distribution(d.global_shape,
                                                   ("b",) + ("n",) * (d.ndim - 1), comm=d.comm))
    needed = np.asarray(needed)
    if needed.dtype.kind in "iu" and needed.size:
        needed = np.where(needed < 0, needed + d.global_shape[0], needed)
    values = Scatter(d, needed).forward(p)
    return Parts(p.info.with_shape(values.shape), values)
