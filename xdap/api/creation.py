"""Creation functions: arrays born distributed (each rank makes only its
part), from a whole array, from every rank's piece -- and arrays shaped
like another (``zeros_like``), triangles (``tril``), coordinate grids.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.arange(6, comm=MPI.COMM_SELF)
>>> xdap.zeros_like(a).to_numpy().tolist(), xdap.eye(2, comm=MPI.COMM_SELF).to_numpy().tolist()
([0, 0, 0, 0, 0, 0], [[1.0, 0.0], [0.0, 1.0]])
"""
from __future__ import annotations

import numpy as np

from .. import arguments, create
from ..arraylike import new
from ..contract import adapted, collective, local
from ..parts import Parts

__all__ = ["from_global", "from_local", "empty", "zeros", "ones", "full", "arange", "linspace",
           "eye", "from_function", "empty_like", "zeros_like", "ones_like", "full_like", "tril",
           "triu", "meshgrid", "copy"]


from_global = adapted(create.from_global, new, """Distribute a whole array (collective).

    data     the global array on every rank (root=None), or on ``root`` only
             (other ranks pass None): an xnd container, a NumPy array (masked
             arrays become ``?T``) or nested lists (give ``type``, e.g.
             ``"var * var * ?float64"``, for ragged data with empty rows)
    type     the global type, or its element alone (``"?float64"``); a NumPy
             array is widened to it (``int32`` -> ``float64``: a copy; a
             cast that could lose data is refused), ``?T`` marks it all
             valid; ``dtype``: the element alone
    dist     per distributed dimension 'b', 'c', 'u' or 'n' (see
             ``make_distribution``); ragged data: one entry, for the rows
    grid     processes per dimension (default: balanced)
    per_dim  block_size, padding, periodic, indices, sizes: one entry per dim

    Each rank keeps only its partition (a copy of its part of ``data``).
    With ``root=None`` every rank's data must have one type and shape.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global([[1.0, None], [], [2.0]], type="var * var * ?float64",
    ...                      comm=MPI.COMM_SELF)
    >>> a.global_shape, a.local.value
    ((3, None), [[1.0, None], [], [2.0]])
    """)

from_local = adapted(create.from_local, new, """A DistArray whose part on each rank is the
    piece that rank passes (collective; no rank sees another's data;
    zero-copy for C-contiguous NumPy pieces). See ``xdap.create.from_local``.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_local(np.arange(3.0), comm=MPI.COMM_SELF)     # blocks in rank order
    >>> b = xdap.from_local([7.0, 8.0], dist="u", indices=[1, 0], comm=MPI.COMM_SELF)
    >>> a.global_shape, b.to_global().value
    ((3,), [8.0, 7.0])
    """)

empty = adapted(create.empty, new, """An uninitialised DistArray (``?T``: all
    missing); see ``xdap.create.empty``.  ``dtype=`` (NumPy's spelling, a
    NumPy dtype or name) may stand for ``type``, here and in ``zeros``,
    ``full``, ``arange``.  Collective (the arguments are agreed).""")

zeros = adapted(create.zeros, new, """A DistArray of zeros, each rank making only its part.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.zeros((2, 3), "int32", comm=MPI.COMM_SELF).to_global().value
    [[0, 0, 0], [0, 0, 0]]
    """)

full = adapted(create.full, new, """A DistArray filled with ``fill_value`` (None:
    missing, ``?T``); a value the type cannot hold unchanged is refused.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.full(3, 7, "int8", comm=MPI.COMM_SELF).to_numpy().tolist()
    [7, 7, 7]
    """)

arange = adapted(create.arange, new, """``numpy.arange`` as a DistArray, each rank
    computing only its part (int64 for integer bounds, else float64,
    unless ``type``/``dtype`` say otherwise).

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.arange(1, 2, 0.25, comm=MPI.COMM_SELF).to_numpy().tolist()
    [1.0, 1.25, 1.5, 1.75]
    """)

linspace = adapted(create.linspace, new, """``numpy.linspace`` as a DistArray,
    each rank computing only its part.""")

eye = adapted(create.eye, new, """Ones on the ``k``-th diagonal, zeros elsewhere
    (each rank computes its block only).""")

from_function = adapted(create.from_function, new, """A DistArray whose element
    ``[i, j, ...]`` is ``f(i, j, ...)``; ``f`` gets each rank's own global
    indices (open grids). See ``xdap.create.from_function``.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.from_function(lambda i: i * i, 4, comm=MPI.COMM_SELF).to_global().value
    [0, 1, 4, 9]
    """)


@collective
def ones(shape, type=None, dist=None, grid=None, comm=None, *, dtype=None, **per_dim):
    """A DistArray of ones (``full(shape, 1, ...)``)."""
    yield dict(shape=shape, type=type, dist=dist, grid=grid, comm=comm, dtype=dtype,
               per_dim=per_dim)
    return full(shape, 1, type, dist, grid, comm, dtype=dtype, **per_dim)


@local
def copy(x):
    """A copy with the same distribution and type (local work: each rank
    copies its part).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.arange(3, comm=MPI.COMM_SELF)
    >>> b = a.copy(); b[0] = 7; a.to_numpy().tolist()
    [0, 1, 2]
    """
    arguments.array("copy", x)
    yield dict(x=x)
    p = x.parts
    if p.info.boxed:
        from xnd import xnd
        from ..parts import container, parts as parts_of_xnd
        q = parts_of_xnd(xnd(container(p).value, type=str(container(p).type)))
    else:
        q = Parts(p.info, p.values.copy(), None if p.validity is None else p.validity.copy(),
                  p.offsets)
    return x.__xdap_wrap__(x.distribution, q, True, fresh=False)


# -- like another array: its shape and distribution, each rank its own block ---------
def _filled_like(name, x, fill_value, dtype, device):
    """The checks of the ``*_like`` functions: the result's dtype and its
    fill value converted to it."""
    arguments.fixed(name, x)
    if device not in (None, "cpu"):
        raise ValueError(f"{name}: xdap arrays live on the CPU, not device {device!r}")
    dt = arguments.dtype(name, dtype)
    if dt is None:
        info = x.parts.info
        if not info.numeric:
            raise TypeError(f"{name}: x holds {arguments.type_of(x)}; give a numeric dtype")
        dt = info.numpy_dtype
    fill = None if fill_value is None else arguments.value_of(name, "fill_value", fill_value, dt)
    return dt, fill


def _like(x, dt, fill):
    shape = x.parts.values.shape
    if fill is None:
        values = np.empty(shape, dt)
    elif not fill:
        values = np.zeros(shape, dt)
    else:
        values = np.empty(shape, dt)
        values.fill(fill)
    return x.__xdap_wrap__(x.distribution, Parts(_info_like(x.parts.info, values.dtype), values),
                           True)


def _info_like(info, dt):
    """The TypeInfo of fixed ``info``'s dims with NumPy dtype ``dt`` (kept
    on ``info``: a loop's ``zeros_like`` makes none)."""
    if info.numeric and info.numpy_dtype == dt and not info.optional:
        return info
    return info.with_numpy_leaf(dt)


@local
def empty_like(x, /, *, dtype=None, device=None):
    """An array of ``x``'s shape and distribution, its values unset (local
    work: each rank allocates its block).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.empty_like(xdap.zeros(3, comm=MPI.COMM_SELF), dtype=np.int8).dtype
    dtype('int8')
    """
    dt, _ = _filled_like("empty_like", x, None, dtype, device)
    yield dict(x=x, dtype=dt, device=device)
    return _like(x, dt, None)


@local
def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros of ``x``'s shape and distribution (local work)."""
    dt, fill = _filled_like("zeros_like", x, 0, dtype, device)
    yield dict(x=x, dtype=dt, device=device)
    return _like(x, dt, fill)


@local
def ones_like(x, /, *, dtype=None, device=None):
    """Ones of ``x``'s shape and distribution (local work)."""
    dt, fill = _filled_like("ones_like", x, 1, dtype, device)
    yield dict(x=x, dtype=dt, device=device)
    return _like(x, dt, fill)


@local
def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in ``x``'s shape and distribution (local work); the
    dtype is ``x``'s unless given, and a value it cannot hold unchanged is
    refused."""
    if fill_value is None:
        raise TypeError("full_like: fill_value must be a number, got None")
    dt, fill = _filled_like("full_like", x, fill_value, dtype, device)
    yield dict(x=x, fill_value=fill, dtype=dt, device=device)
    return _like(x, dt, fill)


# -- triangles --------------------------------------------------------------------
def _triangle(name, x, k):
    arguments.numeric(name, x)
    if x.ndim < 2:
        raise ValueError(f"{name}: x must have at least 2 dims, it has {x.ndim}")
    return arguments.integer(name, "k", k)


def _triangle_values(x, k, lower):
    d = x.distribution
    rows = np.asarray(d.global_indices(x.ndim - 2), np.int64)
    cols = np.asarray(d.global_indices(x.ndim - 1), np.int64)
    # a bool mask straight from the outer comparison (no int temporary), as np.tril;
    # k beyond every index keeps or clears all (no overflow: compared as Python ints)
    k = max(-(1 << 62), min(k, 1 << 62))
    keep = np.greater_equal.outer(rows + k, cols) if lower else \
        np.less_equal.outer(rows + k, cols)
    values = np.where(keep, x.parts.values, np.zeros(1, x.parts.values.dtype))
    return x.__xdap_wrap__(d, Parts.of_array(np.ascontiguousarray(values)), False, True)


@local
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
    k = _triangle("tril", x, k)
    yield dict(x=x, k=k)
    return _triangle_values(x, k, True)


@local
def triu(x, /, *, k=0):
    """The upper triangle of the last two dims (the Array API's ``triu``):
    elements below the ``k``-th diagonal zeroed (local work, as ``tril``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.triu(xdap.from_global(np.ones((2, 3)), comm=MPI.COMM_SELF), k=1).to_numpy().tolist()
    [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    k = _triangle("triu", x, k)
    yield dict(x=x, k=k)
    return _triangle_values(x, k, False)


# -- coordinate grids ----------------------------------------------------------------
@collective
def meshgrid(*arrays, indexing="xy"):
    """Coordinate arrays from 1-D arrays (NumPy's ``meshgrid``; ``"xy"``
    swaps the first two dims of the result).  Each result has the default
    distribution of its shape and each rank fills its block from the 1-D
    input gathered (``broadcast_to``: O(input) a rank).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> x, y = xdap.meshgrid(xdap.arange(3, comm=MPI.COMM_SELF), xdap.arange(2, comm=MPI.COMM_SELF))
    >>> x.to_numpy().tolist(), y.shape
    ([[0, 1, 2], [0, 1, 2]], (2, 3))
    """
    from .manipulation import broadcast_to, reshape
    indexing = arguments.choice("meshgrid", "indexing", indexing, ("xy", "ij"))
    for a in arrays:
        arguments.numeric("meshgrid", a, "every array")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: takes 1-D arrays, got shape {a.shape}")
    arguments.same_comm("meshgrid", arrays)
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError("meshgrid: the arrays must have one dtype")
    yield dict(arrays=arrays, indexing=indexing)
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

