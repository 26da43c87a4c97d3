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

import numpy as np

from .heap import trims_heap
from . import comm as _comm
from .agreement import agreement
from .directory import remember, unstructured_map
from .distribution import Distribution, make_distribution
from .maps import BlockMap, is_int
from .movement.gather import scatter_from_root
from .parts import Parts, as_container, check_ragged_rows, parts
from .rows import take_block, take_rows
from .types import type_info

__all__ = ["from_global", "from_local", "empty", "zeros", "full", "arange", "from_function"]


def from_global(data, dist=None, grid=None, comm=None, *, root=None, type=None, dtype=None,
                **per_dim) -> tuple:
    """``(Distribution, Parts)`` of a whole array (collective); the arguments
    are ``xdap.from_global``'s."""
    comm = _comm.resolve(comm)
    p = None
    # One collective: the verdicts, the arguments that must agree, and the
    # type and shape of the data (from every rank, or from the root).
    with agreement(comm, "from_global", share=True) as ag:
        ag.same("root", root)
        ag.same("dist, grid and the per-dimension options", (dist, grid, per_dim))
        # with a root only its data is read, but every rank names the type
        ag.same("type and dtype", tuple(None if t is None else str(t) for t in (type, dtype)))
        if root is not None and not (isinstance(root, int) and 0 <= root < comm.size):
            raise ValueError(f"root must be a rank in [0, {comm.size}), got {root!r}")
        if root is None or comm.rank == root:
            if data is None:
                raise ValueError("from_global: data is None on a rank that must provide it"
                                 + ("" if root is None else f" (root={root})"))
            p = parts(as_container(data, type=type, dtype=dtype))
            ag.share((p.info, p.shape))
    metas = ag.shared
    if root is None and any(m != metas[0] for m in metas):
        raise ValueError("from_global: ranks passed different global arrays "
                         f"(type/shape per rank: {[(m[0].type_string(), m[1]) for m in metas]})")
    info, shape = metas[0 if root is None else root]
    # The arguments agree, so every rank reaches the same verdict here.
    if dist is not None and info.ragged and len(tuple(dist)) != 1:
        raise ValueError(f"ragged data is distributed by rows: dist needs one entry, got {dist!r}")
    d = make_distribution(shape, dist, grid, comm, **per_dim)
    if info.ragged:
        for r in range(comm.size):
            check_ragged_rows(info, d.local_shape_of(r)[0], r)
    if root is not None:
        return d, scatter_from_root(p, info, d, root)
    if info.ragged:
        return d, take_rows(p, d.global_indices(0))
    if d.ndim == 0:             # a 0-d array: every rank holds the element
        return d, Parts(info, p.values.copy(), None if p.validity is None else p.validity.copy())
    return d, take_block(p, np.ix_(*[d.global_indices(k) for k in range(d.ndim)]))


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
def from_local(local, dist="b", axis=0, comm=None, *, indices=None, size=None, owned=None,
               one_to_one=None, type=None) -> tuple:
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
    p = None
    with agreement(comm, "from_local", share=True) as ag:
        ag.same("dist", dist)
        ag.same("axis", axis)
        if dist not in ("b", "u"):
            raise ValueError(f"from_local: dist must be 'b' (blocks in rank order) or 'u' "
                             f"(each rank's global indices), got {dist!r}")
        if not is_int(axis):
            raise TypeError(f"from_local: axis must be an int, got {axis!r}")
        if (dist == "u") != (indices is not None):
            raise ValueError("from_local: give indices= exactly with dist='u' (this rank's "
                             "global indices along the axis)")
        p = _local_parts(local, type)
        ndim = 1 if p.info.ragged else len(p.shape)
        if not 0 <= axis < ndim:
            raise ValueError(f"from_local: axis {axis} out of range for a {ndim}-d piece")
        if p.info.ragged and axis != 0:
            raise ValueError("from_local: ragged data is distributed by rows: axis must be 0")
        if indices is not None and len(indices) != p.shape[axis]:
            raise ValueError(f"from_local: {len(indices)} indices for {p.shape[axis]} rows "
                             f"along axis {axis}")
        rest = tuple(n for k, n in enumerate(p.shape) if k != axis)
        element = p.info.type_string() if p.info.ragged else p.info.leaf
        ag.share((element, rest, p.shape[axis]))
    shared = ag.shared
    for r, (element, rest, _) in enumerate(shared):
        if element != shared[0][0]:
            raise TypeError(f"from_local: rank {r}'s piece holds {element!r} but rank 0's "
                            f"holds {shared[0][0]!r} (the element types must agree)")
        if rest != shared[0][1]:
            dim = next(k for k, (a, b) in enumerate(zip(rest, shared[0][1])) if a != b) \
                if len(rest) == len(shared[0][1]) else None
            where = "" if dim is None else f" (dimension {dim + (dim >= axis)})"
            raise ValueError(f"from_local: rank {r}'s piece has the other dimensions "
                             f"{rest} but rank 0's has {shared[0][1]}{where}; only axis "
                             f"{axis} may differ")
    rest = shared[0][1]
    lengths = [n for *_, n in shared]
    if dist == "b":
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


def _allocate(shape, d, type, fill):
    """This rank's part of ``d`` of element type ``type``, filled with
    ``fill`` (None: uninitialised; for ``?T`` data: missing)."""
    # a 0-d array's type is its element's, which type_info (made for
    # distributed types) reads with a dim in front
    info = type_info(type if " * " in str(type) else " * ".join(
        [str(n) for n in d.local_shape or (1,)] + [str(type)]))
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


def _created(shape, type, fill, dist, grid, comm, per_dim, what):
    comm = _comm.resolve(comm)
    with agreement(comm, what) as ag:
        ag.same("shape, type, fill, dist, grid and the per-dimension options",
                (shape, str(type), fill, dist, grid, per_dim))
        shape = (shape,) if is_int(shape) else tuple(shape)
        if not all(is_int(n) and n >= 0 for n in shape):
            raise TypeError(f"{what}: shape must be ints >= 0, got {shape!r}")
        ragged = " * " in str(type) and type_info(type).ragged
        if ragged and len(shape) != 1:
            raise ValueError(f"{what}: a ragged type is distributed by rows: shape is "
                             f"(rows,), got {shape!r}")
        d = make_distribution(shape, dist, grid, comm, **per_dim)
        p = _allocate(shape, d, type, fill)
    return d, p


def empty(shape, type="float64", dist=None, grid=None, comm=None, **per_dim) -> tuple:
    """``(Distribution, Parts)`` of uninitialised values (``?T``: missing);
    ``type`` is a dtype (``"float64"``, ``"?int32"``) or a ragged type
    (``"var * var * float64"``: empty rows). Collective; no communication
    beyond agreeing on the arguments.

    >>> from mpi4py import MPI
    >>> empty((4, 2), comm=MPI.COMM_SELF)[1].values.shape
    (4, 2)
    """
    return _created(shape, type, None, dist, grid, comm, per_dim, "empty")


def zeros(shape, type="float64", dist=None, grid=None, comm=None, **per_dim) -> tuple:
    """Like ``empty``, filled with 0 (valid, for ``?T``).

    >>> from mpi4py import MPI
    >>> zeros(3, "?int8", comm=MPI.COMM_SELF)[1].values.tolist()
    [0, 0, 0]
    """
    return _created(shape, type, 0, dist, grid, comm, per_dim, "zeros")


def full(shape, fill_value, type="float64", dist=None, grid=None, comm=None, **per_dim) -> tuple:
    """Like ``empty``, filled with ``fill_value`` (None: missing, ``?T`` only).

    >>> from mpi4py import MPI
    >>> full(2, 7, "int16", comm=MPI.COMM_SELF)[1].values.tolist()
    [7, 7]
    """
    if fill_value is None:
        return empty(shape, type, dist, grid, comm, **per_dim)
    return _created(shape, type, fill_value, dist, grid, comm, per_dim, "full")


def from_function(f, shape, type=None, dist=None, grid=None, comm=None, **per_dim) -> tuple:
    """``(Distribution, Parts)`` whose element ``[i, j, ...]`` is
    ``f(i, j, ...)``: each rank calls ``f`` once with the open grids
    (``numpy.ix_``) of its own global indices -- never all of them -- and
    the result must broadcast to its local shape (``type``: its dtype by
    default). Collective; an exception in ``f`` on one rank is an error on
    every rank.

    >>> from mpi4py import MPI
    >>> from_function(lambda i, j: 10 * i + j, (2, 3), comm=MPI.COMM_SELF)[1].values.tolist()
    [[0, 1, 2], [10, 11, 12]]
    """
    comm = _comm.resolve(comm)
    p = None
    with agreement(comm, "from_function") as ag:
        ag.same("shape, type, dist, grid and the per-dimension options",
                (shape, str(type), dist, grid, per_dim))
        shape = (shape,) if is_int(shape) else tuple(shape)
        d = make_distribution(shape, dist, grid, comm, **per_dim)
        grids = np.ix_(*[d.global_indices(k) for k in range(d.ndim)])
        try:
            values = np.asarray(f(*grids))
        except Exception as e:
            raise ValueError(f"from_function: f raised {type_name(e)}: {e}") from None
        if type is not None:
            values = values.astype(type_info(f"1 * {type}").numpy_dtype)
        if values.shape != d.local_shape:
            values = np.broadcast_to(values, d.local_shape)
        if not (values.flags.c_contiguous and values.flags.writeable):
            values = np.array(values, order="C")       # writable, whatever f returned
        p = parts(as_container(values))
    with agreement(comm, "from_function", share=True) as ag:
        ag.share(p.info.leaf)
    if len(set(ag.shared)) != 1:
        raise TypeError(f"from_function: f returned different dtypes on the ranks: {ag.shared}")
    return d, p


def type_name(e) -> str:
    return builtins_type(e).__name__


def arange(start, stop=None, step=1, type="int64", dist=None, grid=None, comm=None,
           **per_dim) -> tuple:
    """``(Distribution, Parts)`` of ``numpy.arange(start, stop, step)``,
    each rank computing only its own part.

    >>> from mpi4py import MPI
    >>> arange(2, 11, 3, comm=MPI.COMM_SELF)[1].values.tolist()
    [2, 5, 8]
    """
    if stop is None:
        start, stop = 0, start
    if not step:
        raise ValueError("arange: step must not be 0")
    if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        n = max(0, -(-(stop - start) // step))
    else:                                        # NumPy's length for float bounds
        n = max(0, int(np.ceil((stop - start) / step)))
    return from_function(lambda i: start + i * step, (n,), type, dist, grid, comm, **per_dim)
