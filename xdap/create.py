"""Creating distributed data: ``(Distribution, Parts)`` pairs.

* born distributed -- no rank ever holds more than its part:
  ``from_local`` (each rank passes its own piece), ``zeros``, ``empty``,
  ``full``, ``arange``, ``from_function`` (each rank makes its part from
  its global indices);
* from a whole array: ``from_global`` (every rank holds it, or one root
  does: a root scatter of buffers).

The surface (``xdap.from_local``, ...) wraps the pairs into DistArrays.

>>> import numpy as np
>>> from mpi4py import MPI
>>> d, p = from_global(np.arange(6.0), dist=("c",), comm=MPI.COMM_SELF)
>>> d.maps[0].dist_type, p.values.tolist()
('c', [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
"""
from __future__ import annotations

import hashlib

import google_crc32c
import numpy as np

from .heap import trims_heap
from . import comm as _comm
from . import arguments
from .agreement import agreement
from .contract import collective, describe, normalized
from .directory import remember, unstructured_map
from .distribution import Distribution, make_distribution
from .maps import BlockMap
from .movement.gather import scatter_from_root
from .parts import Parts, as_container, check_ragged_rows, parts
from .rows import take_block, take_rows
from .types import type_info

__all__ = ["from_global", "from_local", "empty", "zeros", "full", "arange", "linspace", "eye",
           "from_function"]


def _element(name: str, type, dtype):
    """The element type (``"float64"``, ``"?int32"``, ``"var * var * T"``,
    a record ...) named by ``type=`` or NumPy's ``dtype=`` -- a NumPy dtype,
    scalar type or name -- as an ndtypes string, or None."""
    names = [_type_name(name, t) for t in (type, dtype) if t is not None]
    if len(names) == 2 and names[0] != names[1]:
        raise ValueError(f"{name}: type={type!r} and dtype={dtype!r} name different element "
                         "types (give one)")
    return names[0] if names else None


def _type_name(name: str, t) -> str:
    if isinstance(t, str):
        return t.strip()
    if isinstance(t, (bool, int, float, complex)) or t is None:
        raise TypeError(f"{name}: a type is a name such as 'float64' or a NumPy dtype, "
                        f"got {t!r}")
    from .dtypes import dtype_from_numpy
    try:
        return dtype_from_numpy(np.dtype(t))
    except Exception as e:
        raise TypeError(f"{name}: {t!r} is not a type xdap holds ({e})") from None


def _info(name: str, element: str, ndim: int):
    """The TypeInfo of an array of ``ndim`` dims of ``element`` (checked;
    kept by the pair)."""
    info = _INFOS.get((element, ndim))
    if info is None:
        info = _parsed_info(name, element, ndim)
        if len(_INFOS) >= 256:
            _INFOS.clear()
        _INFOS[element, ndim] = info
    return info


_INFOS: dict = {}


def _parsed_info(name: str, element: str, ndim: int):
    ragged = " * " in element and element.lstrip("?").startswith("var")
    text = element if ragged else " * ".join(["1"] * max(ndim, 1) + [element])
    try:
        info = type_info(text)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: {element!r} is not a type xdap holds ({e})") from None
    if info.ragged and ndim != 1:
        raise ValueError(f"{name}: a ragged type is distributed by rows: the shape is "
                         f"(rows,), got {ndim} dims")
    return info


@collective
def from_global(data, dist=None, grid=None, comm=None, *, root=None, type=None, dtype=None,
                **per_dim):
    """``(Distribution, Parts)`` of a whole array (collective); the arguments
    are ``xdap.from_global``'s.  With ``root=None`` every rank's data must
    have one type and shape (agreed); with a root, the root's type and
    shape reach the others by one broadcast."""
    comm = _comm.resolve(comm)
    if root is not None:
        root = arguments.rank("from_global", comm, root)
    element = _element("from_global", type, dtype)
    p = meta = d = None
    if root is None or comm.rank == root:
        if data is None:
            raise ValueError("from_global: data is None on a rank that must provide it"
                             + ("" if root is None else f" (root={root})"))
        p = parts(as_container(data, type=element))
        meta = (p.info, p.shape)
    if root is None:
        d = _global_distribution(meta, dist, grid, comm, per_dim)
    # the options compared as the distribution they make, shown as each rank wrote them
    options = normalized((dist, grid, per_dim) if d is None else d, (dist, grid, per_dim))
    # with a root, only the root's data counts: its type and shape reach the others after
    yield {"root": root, "type": element, "dtype": element, "comm": comm,
           "data": None if root is not None else _whole(p),
           "dist, grid and per_dim": options}
    if root is not None:                 # the root's type and shape, then one verdict
        meta = comm.bcast(meta, root=root)
        with agreement(comm, "from_global"):
            d = _global_distribution(meta, dist, grid, comm, per_dim)
        return d, scatter_from_root(p, meta[0], d, root)
    info = meta[0]
    if info.ragged:
        return d, take_rows(p, d.global_indices(0))
    if d.ndim == 0:             # a 0-d array: every rank holds the element
        return d, Parts(info, p.values.copy(), None if p.validity is None else p.validity.copy())
    return d, take_block(p, np.ix_(*[d.global_indices(k) for k in range(d.ndim)]))


def _whole(p: Parts) -> normalized:
    """What ranks compare of a whole array each of them holds: its type,
    shape and a CRC-32C of its buffers (values, validity, offsets) -- a
    value different on one rank is an error, not a mixture of two arrays.
    (CRC-32C runs at memory speed: 6 ms for 80 MB.)"""
    crc = 0
    valid = None if p.validity is None else p.valid_mask().reshape(-1)
    for buf in (*_canonical(p.values.reshape(-1), valid), *p.offsets):
        crc = google_crc32c.extend(crc, np.ascontiguousarray(buf).reshape(-1).view(np.uint8))
    kind = p.info.global_type(p.shape) if not p.info.ragged else p.info.type_string()
    return normalized(("an array", p.info.type_string(), p.shape, crc),
                      f"an array {kind} <crc32c {crc:08x}>")


def _canonical(values: np.ndarray, valid: np.ndarray | None):
    """The buffers that say what ``values`` hold, without what they do not:
    a record's padding, and the bytes under a missing value (a masked
    array's hidden data, a ``?`` field's placeholder) -- zero-copy for
    plain numbers with no missing value."""
    if valid is not None:
        yield valid.view(np.uint8)
        values = _kept(values, valid)
    if values.dtype.names is None:
        yield values
        return
    names = values.dtype.names
    for name in names:
        if name.startswith("?"):                        # a ?field's flag: its own buffer
            yield values[name]
            continue
        field = values[name]
        if "?" + name in names:                         # the value under a missing ?field
            field = _kept(field, values["?" + name] != 0)
        yield from _canonical(field, None)


def _kept(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """A copy of ``values`` (one item per entry of ``valid``) with zeros
    where ``valid`` is False."""
    out = np.zeros_like(values)
    out[valid] = values[valid]
    return out


def _global_distribution(meta, dist, grid, comm, per_dim):
    """The distribution of a global array of ``meta`` = (type, shape)."""
    info, shape = meta
    if dist is not None and info.ragged and (isinstance(dist, str) or len(tuple(dist)) != 1):
        raise ValueError(f"ragged data is distributed by rows: dist needs one entry, got {dist!r}")
    d = make_distribution(shape, dist, grid, comm, **per_dim)
    if info.ragged:
        for r in range(comm.size):
            check_ragged_rows(info, d.local_shape_of(r)[0], r)
    return d


# --------------------------------------------------------------------------
# born distributed
# --------------------------------------------------------------------------

def _local_parts(local, type=None) -> Parts:
    """A rank's piece as Parts: an xnd container, a NumPy array (masked:
    ``?T``), nested lists or a pyarrow/awkward array (zero-copy where the
    layouts allow)."""
    mod = builtins_type(local).__module__.split(".")[0]
    if mod == "pyarrow":
        from .protocols.arrow import parts_from_arrow
        return parts_from_arrow(local, type)
    if mod == "awkward":
        from .protocols.awkward import parts_from_awkward
        return parts_from_awkward(local, type)
    return parts(as_container(local, type=type))


builtins_type = type


@trims_heap
@collective(own=("local", "indices", "owned"))
def from_local(local, dist="b", axis=0, comm=None, *, indices=None, size=None, owned=None,
               one_to_one=None, type=None):
    """``(Distribution, Parts)`` whose part on each rank is the piece that
    rank passes (collective; no rank sees another's data; zero-copy for
    C-contiguous NumPy pieces).

    local       this rank's piece: NumPy array (masked: ``?T``), xnd
                container, nested lists (with ``type`` for ragged data) or a
                pyarrow / awkward array
    dist        "b": the pieces are consecutive blocks along ``axis`` in rank
                order (their lengths may differ; one allgather of lengths);
                "u": rank r's piece holds the global indices ``indices``
                along ``axis`` (any order; no rank learns the others')
    axis        the distributed dimension (0 for ragged data: rows)
    indices     "u": this rank's global indices, one per row along ``axis``
    size        "u": the dimension's size (default: largest index + 1)
    owned       "u": this rank's bool mask of the indices it owns; the
                others are ghost copies of another rank's (default: an index
                held by several ranks belongs to the lowest)
    one_to_one  "u": claim that no index is held twice (checked)

    The pieces' other dimensions and element types must agree; a mismatch
    is one clear error on every rank, naming the rank and the dimension.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> d, p = from_local(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
    >>> d.global_shape, d.maps[0]
    ((3, 2), BlockMap(size=3, grid_size=1, bounds=(0, 3)))
    """
    comm = _comm.resolve(comm)
    if dist not in ("b", "u"):
        raise ValueError(f"from_local: dist must be 'b' (blocks in rank order) or 'u' "
                         f"(each rank's global indices), got {dist!r}")
    axis = arguments.integer("from_local", "axis", axis, low=0)
    if (dist == "u") != (indices is not None):
        raise ValueError("from_local: give indices= exactly with dist='u' (this rank's "
                         "global indices along the axis)")
    if type is not None:
        type = _type_name("from_local", type)
    p = _local_parts(local, type)
    ndim = 1 if p.info.ragged else len(p.shape)
    if not axis < ndim:
        raise ValueError(f"from_local: axis {axis} out of range for a {ndim}-d piece")
    if p.info.ragged and axis != 0:
        raise ValueError("from_local: ragged data is distributed by rows: axis must be 0")
    if indices is not None and len(indices) != p.shape[axis]:
        raise ValueError(f"from_local: {len(indices)} indices for {p.shape[axis]} rows "
                         f"along axis {axis}")
    rest = tuple(n for k, n in enumerate(p.shape) if k != axis)
    # what must agree about the pieces (their lengths along axis differ by design);
    # indices, owned and one_to_one are checked across ranks by the directory
    yield {"dist": dist, "axis": axis, "comm": comm, "type": type, "size": size,
           "the pieces' element type": normalized(p.info.type_string() if p.info.ragged else
                                                  p.info.leaf, error=TypeError),
           "the pieces' dimensions other than axis": rest,
           "whether indices are given": indices is None, "whether owned is given": owned is None,
           "one_to_one": one_to_one}
    if dist == "b":
        lengths = comm.allgather(int(p.shape[axis]))
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        along = BlockMap(int(bounds[-1]), comm.size, bounds=bounds.tolist())
        directory = None
    else:
        along, directory = unstructured_map(comm, comm.size, comm.rank, indices, size=size,
                                            one_to_one=one_to_one, owned=owned,
                                            what="from_local")
    maps = [BlockMap(int(n), 1) for n in rest]
    maps.insert(axis, along)
    d = Distribution(maps, comm)
    if directory is not None:
        remember(d, axis, directory)
    return d, p


def _allocate(d, info, fill):
    """This rank's part of ``d`` with elements of ``info``, filled with
    ``fill`` (None: uninitialised; for ``?T`` data: missing; a value
    already converted to the element type)."""
    if info.ragged:
        nrows = d.local_shape[0]
        offsets = (np.array([0, nrows], np.int32),) + tuple(
            np.zeros(nrows + 1 if level == 1 else 1, np.int32) for level in range(1, info.var_ndim))
        return Parts(info, np.zeros(0, info.numpy_dtype),
                     np.zeros(0, np.uint8) if info.optional else None, offsets)
    info = info.with_shape(d.local_shape)
    values = np.empty(info.shape, info.numpy_dtype)
    valid = fill is not None
    if valid:
        values[...] = fill
    validity = None
    if info.optional:
        validity = np.full((values.size + 7) // 8, 0xFF if valid else 0, np.uint8)
    return Parts(info, values, validity)


def _target(name, shape, type, dtype, dist, grid, comm, per_dim, default="float64"):
    """The checked distribution and element type of a new array."""
    comm = _comm.resolve(comm)
    shape = arguments.shape(name, shape)
    element = _element(name, type, dtype) or default
    info = _info(name, element, len(shape))
    return make_distribution(shape, dist, grid, comm, **per_dim), info


def _fill(name, info, fill_value):
    """``fill_value`` converted to the element type, refused where that
    would change it (None: missing, ``?T`` only)."""
    if fill_value is None:
        if not info.optional:
            raise ValueError(f"{name}: fill_value None means missing, which only optional "
                             f"data holds (type '?{info.leaf}')")
        return None
    if info.numeric and not info.boxed and not info.ragged:
        return arguments.value_of(name, "fill_value", fill_value, info.numpy_dtype)
    probe = np.empty(1, info.numpy_dtype)
    try:
        probe[0] = fill_value
    except Exception as e:
        raise TypeError(f"{name}: fill_value {fill_value!r} is no {info.leaf} ({e})") from None
    return probe[0]


def _created(name, shape, type, dtype, fill_value, dist, grid, comm, per_dim):
    """The checks and the agreed values of empty, zeros and full."""
    d, info = _target(name, shape, type, dtype, dist, grid, comm, per_dim)
    return d, info, dict(shape=d.global_shape, type=info.type_string(), dtype=None, dist=d,
                         grid=d.grid, comm=d.comm.size, per_dim=None)


@collective
def empty(shape, type=None, dist=None, grid=None, comm=None, *, dtype=None, **per_dim):
    """``(Distribution, Parts)`` of uninitialised values (``?T``: missing);
    ``type`` is a dtype (``"float64"``, ``"?int32"``) or a ragged type
    (``"var * var * float64"``: empty rows); ``dtype=`` (NumPy's spelling)
    may stand for it. Collective; no communication beyond agreeing on the
    arguments.

    >>> from mpi4py import MPI
    >>> empty((4, 2), comm=MPI.COMM_SELF)[1].values.shape
    (4, 2)
    """
    d, info, agreed = _created("empty", shape, type, dtype, None, dist, grid, comm, per_dim)
    yield agreed
    return d, _allocate(d, info, None)


@collective
def zeros(shape, type=None, dist=None, grid=None, comm=None, *, dtype=None, **per_dim):
    """Like ``empty``, filled with 0 (valid, for ``?T``).

    >>> from mpi4py import MPI
    >>> zeros(3, "?int8", comm=MPI.COMM_SELF)[1].values.tolist()
    [0, 0, 0]
    """
    d, info, agreed = _created("zeros", shape, type, dtype, 0, dist, grid, comm, per_dim)
    yield agreed
    return d, _allocate(d, info, 0)


@collective
def full(shape, fill_value, type=None, dist=None, grid=None, comm=None, *, dtype=None,
         **per_dim):
    """Like ``empty``, filled with ``fill_value`` (None: missing, ``?T``
    only); a value the element type cannot hold unchanged (300 as int8,
    2.5 as int64) is refused.

    >>> from mpi4py import MPI
    >>> full(2, 7, "int16", comm=MPI.COMM_SELF)[1].values.tolist()
    [7, 7]
    """
    d, info, agreed = _created("full", shape, type, dtype, fill_value, dist, grid, comm, per_dim)
    fill = _fill("full", info, fill_value)
    yield dict(agreed, fill_value=fill)
    return d, _allocate(d, info, fill)


@collective
def from_function(f, shape, type=None, dist=None, grid=None, comm=None, **per_dim):
    """``(Distribution, Parts)`` whose element ``[i, j, ...]`` is
    ``f(i, j, ...)``: each rank calls ``f`` once with the open grids
    (``numpy.ix_``) of its own global indices -- never all of them -- and
    the result must broadcast to its local shape (``type``: its dtype by
    default; a conversion that would change a value is refused).
    Collective; an exception in ``f`` on one rank is an error on every
    rank, and so are results of different dtypes.

    >>> from mpi4py import MPI
    >>> from_function(lambda i, j: 10 * i + j, (2, 3), comm=MPI.COMM_SELF)[1].values.tolist()
    [[0, 1, 2], [10, 11, 12]]
    """
    comm = _comm.resolve(comm)
    if not callable(f):
        raise TypeError(f"from_function: f must be callable, got {type_name(f)}")
    shape = arguments.shape("from_function", shape)
    element = None if type is None else _type_name("from_function", type)
    d = make_distribution(shape, dist, grid, comm, **per_dim)
    grids = np.ix_(*[d.global_indices(k) for k in range(d.ndim)])
    try:
        values = np.asarray(f(*grids))
    except Exception as e:
        raise ValueError(f"from_function: f raised {type_name(e)}: {e}") from None
    if values.dtype.kind not in "biufc":
        raise TypeError(f"from_function: f returned {values.dtype} values, not numbers")
    if element is not None:
        values = _converted("from_function", values, _info("from_function", element, 1))
    try:
        values = np.broadcast_to(values, d.local_shape)
    except ValueError:
        raise ValueError(f"from_function: f returned shape {values.shape}, which does not "
                         f"broadcast to this rank's block {d.local_shape}") from None
    if not (values.flags.c_contiguous and values.flags.writeable):
        values = np.array(values, order="C")       # writable, whatever f returned
    p = parts(as_container(values))
    # f is compared by its name and code (xdap.contract.describe), and the
    # element type it returned on this rank
    code = describe(f)
    shown = (f"{getattr(f, '__qualname__', type_name(f))} <code "
             f"{hashlib.blake2b(repr(code).encode(), digest_size=3).hexdigest()}> returning "
             f"{p.info.leaf}")
    yield dict(f=normalized((code, p.info.leaf), shown),
               shape=shape, type=element, dist=d, grid=d.grid, comm=comm.size, per_dim=None)
    return d, p


def _converted(name, values, info):
    """``values`` as ``info``'s element type: a copy, refused where a value
    would change (NaN into an integer, 2.5 into int64, 300 into int8)."""
    out = values.astype(info.numpy_dtype)
    with np.errstate(all="ignore"):
        back = out.astype(values.dtype)
        same = (back == values) | (np.isnan(back) & np.isnan(values)) \
            if values.dtype.kind in "fc" else back == values
    if values.dtype.kind in "fc" and info.numpy_dtype.kind in "fc":
        same = np.isfinite(out) | ~np.isfinite(values)        # rounding is no change
    if not np.all(same):
        bad = values[~np.broadcast_to(same, values.shape)].reshape(-1)[0]
        raise ValueError(f"{name}: the value {bad!r} does not fit {info.leaf} without "
                         "changing (convert it explicitly)")
    return out


def type_name(e) -> str:
    return builtins_type(e).__name__


@collective
def arange(start, stop=None, step=1, type=None, dist=None, grid=None, comm=None, *,
           dtype=None, **per_dim):
    """``(Distribution, Parts)`` of ``numpy.arange(start, stop, step)``,
    each rank computing only its own part.  The element type: ``type``
    (or ``dtype``), else int64 when every bound is an integer and float64
    otherwise (the standard's rule, found without building the array).

    >>> from mpi4py import MPI
    >>> arange(2, 11, 3, comm=MPI.COMM_SELF)[1].values.tolist()
    [2, 5, 8]
    """
    comm = _comm.resolve(comm)
    if stop is None:
        start, stop = 0, start
    bounds = [arguments.real("arange", what, v) if not arguments.is_integer_value(v) else int(v)
              for what, v in (("start", start), ("stop", stop), ("step", step))]
    start, stop, step = bounds
    if step == 0:
        raise ValueError("arange: step must not be 0")
    integral = all(isinstance(v, int) for v in bounds)
    if integral:
        n = max(0, -(-(stop - start) // step))
    else:                                        # NumPy's length for float bounds
        length = np.ceil((stop - start) / step)
        if not np.isfinite(length):
            raise ValueError(f"arange: the bounds {start}, {stop}, {step} give no finite "
                             "length")
        n = max(0, int(length))
    if n > arguments.INDEX_MAX:
        raise ValueError(f"arange: {n} elements are more than an index can count")
    element = _element("arange", type, dtype) or ("int64" if integral else "float64")
    info = _info("arange", element, 1)
    if info.ragged or info.optional or not info.numeric:
        raise TypeError(f"arange: makes numbers, not {element}")
    if n and info.numpy_dtype.kind in "biu":     # every value must fit, unchanged
        for v in (start, start + (n - 1) * step):
            arguments.value_of("arange", "a value", v, info.numpy_dtype)
        if not integral:
            raise ValueError(f"arange: {element} values from float bounds {start}, {stop}, "
                             f"{step} would be truncated (give integer bounds)")
    d = make_distribution((n,), dist, grid, comm, **per_dim)
    yield dict(start=start, stop=stop, step=step, type=element, dtype=None, dist=d,
               grid=d.grid, comm=comm.size, per_dim=None)
    dt = info.numpy_dtype
    i = d.maps[0].buffer_indices(d.coords[0])
    if n == 0:                         # (NumPy's arange(-2, -5, dtype=uint8) refuses -2)
        values = np.zeros(0, dt)
    elif isinstance(i, range) and (dt.kind == "f" or dt.kind == "i" and integral):
        # a block: this rank's values in one pass, no index array
        if len(i) == n:                # the whole array here: NumPy's own
            values = np.arange(start, stop, step, dtype=dt)
        elif integral:
            values = np.arange(start + i.start * step, start + i.stop * step, step,
                               dtype=np.int64)[:len(i)].astype(dt, copy=False)
        else:                          # NumPy's values: first + i * (second - first), in dt
            first, second = dt.type(start), dt.type(start + step)
            values = np.arange(i.start, i.stop, dtype=dt)
            values *= second - first
            values += first
    else:
        i = np.asarray(i)
        if integral:
            values = (start + i * step).astype(dt)
        else:
            first, second = dt.type(start), dt.type(start + step)
            values = first + i.astype(dt) * (second - first)
    return d, Parts(info.with_shape(values.shape), np.ascontiguousarray(values))


@collective
def linspace(start, stop, num, type=None, dist=None, grid=None, comm=None, *, dtype=None,
             endpoint=True, **per_dim):
    """``(Distribution, Parts)`` of ``numpy.linspace(start, stop, num)``,
    each rank computing only its part (float64 unless ``type``/``dtype``
    say otherwise; complex bounds give complex128).

    >>> from mpi4py import MPI
    >>> linspace(0, 1, 5, comm=MPI.COMM_SELF)[1].values.tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    comm = _comm.resolve(comm)
    for what, v in (("start", start), ("stop", stop)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, complex, np.number)):
            raise TypeError(f"linspace: {what} must be a number, got {v!r}")
        if not np.isfinite(v):
            raise ValueError(f"linspace: {what} must be finite, got {v!r}")
    num = arguments.integer("linspace", "num", num, low=0, high=arguments.INDEX_MAX)
    endpoint = arguments.flag("linspace", "endpoint", endpoint)
    cplx = any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop))
    element = _element("linspace", type, dtype) or ("complex128" if cplx else "float64")
    info = _info("linspace", element, 1)
    if info.numpy_dtype.kind not in "fc":
        raise TypeError(f"linspace: makes floating-point numbers, not {element}")
    if cplx and info.numpy_dtype.kind != "c":
        raise TypeError(f"linspace: complex bounds need a complex type, not {element}")
    d = make_distribution((num,), dist, grid, comm, **per_dim)
    yield dict(start=start, stop=stop, num=num, type=element, dtype=None, dist=d, grid=d.grid,
               comm=comm.size, endpoint=endpoint, per_dim=None)
    i = np.asarray(d.global_indices(0))
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    values = start + i * step
    if endpoint and num > 1:
        values = np.where(i == num - 1, stop, values)
    values = np.ascontiguousarray(values, dtype=info.numpy_dtype)
    return d, Parts(info.with_shape(values.shape), values)


@collective
def eye(n_rows, n_cols=None, k=0, type=None, dist=None, grid=None, comm=None, *, dtype=None,
        **per_dim):
    """``(Distribution, Parts)`` of ones on the ``k``-th diagonal, zeros
    elsewhere; each rank computes its block only.

    >>> from mpi4py import MPI
    >>> eye(2, 3, k=1, comm=MPI.COMM_SELF)[1].values.tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    comm = _comm.resolve(comm)
    n_rows = arguments.integer("eye", "n_rows", n_rows, low=0)
    n_cols = n_rows if n_cols is None else arguments.integer("eye", "n_cols", n_cols, low=0)
    k = arguments.integer("eye", "k", k)
    arguments.shape("eye", (n_rows, n_cols))
    element = _element("eye", type, dtype) or "float64"
    info = _info("eye", element, 2)
    if info.ragged or info.optional or not info.numeric:
        raise TypeError(f"eye: makes numbers, not {element}")
    d = make_distribution((n_rows, n_cols), dist, grid, comm, **per_dim)
    yield dict(n_rows=n_rows, n_cols=n_cols, k=k, type=element, dtype=None, dist=d,
               grid=d.grid, comm=comm.size, per_dim=None)
    i, j = np.ix_(np.asarray(d.global_indices(0)), np.asarray(d.global_indices(1)))
    values = np.ascontiguousarray((j - i == k).astype(info.numpy_dtype))
    return d, Parts(info.with_shape(values.shape), values)
