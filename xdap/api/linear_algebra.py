"""Linear algebra in the main namespace: ``matmul``, ``tensordot``,
``vecdot`` and ``matrix_transpose``.

``matrix_transpose`` is local (no data moves); the products are
collective: their operands and axes are agreed, then each rank multiplies
what it holds and one reduction (or none) combines the products.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
>>> (a @ np.ones(2)).to_numpy().tolist(), float(xdap.vecdot(a[:, 0], a[:, 1]))
([1.0, 5.0, 9.0], 26.0)
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..arraylike import is_distributed
from ..contract import Repeats, collective, local
from ..distribution import Distribution
from ..maps import BlockMap
from ..agreement import SETTLED
from ..movement.reduce import allreduce, dot_parts, plain_dotter
from ..repeats import Rides, call_lane, plain
from .layouts import moved, one_copy, owned, rows, wrap

__all__ = ["matmul", "tensordot", "vecdot", "matrix_transpose", "transpose"]


@local
def matrix_transpose(x, /):
    """The last two dims swapped (``x.mT``; ``x.T`` for 2-D): see
    ``permute_dims`` (no data moves)."""
    arguments.fixed("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dims, x has {x.ndim}")
    yield dict(x=x)
    from .manipulation import _permuted
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return _permuted(x, tuple(axes))


@local(name="T")
def transpose(x, /):
    """The transpose of a 2-D array (``a.T``; ``xdap.permute_dims`` for
    more dims): no data moves, the maps follow the dims."""
    arguments.fixed("T", x)
    if x.ndim != 2:
        raise ValueError(f"a.T needs a 2-D array (use xdap.permute_dims), a has {x.ndim} dims")
    yield dict(x=x)
    from .manipulation import _permuted
    return _permuted(x, (1, 0))


def matrix_transpose_property(x):
    """``x.mT``: ``matrix_transpose``; a repeated one takes its prepared
    path (``xdap.repeats``)."""
    out = (_transpose_view or _bind_transpose_view())("matrix_transpose", x)
    return matrix_transpose(x) if out is None else out


def transpose_property(x):
    """``x.T``: ``transpose``; a repeated one takes its prepared path."""
    out = (_transpose_view or _bind_transpose_view())("T", x)
    return transpose(x) if out is None else out


_transpose_view = None


def _bind_transpose_view():
    # manipulation imports this module: bound on the first use, not per call
    global _transpose_view
    from .manipulation import transpose_view
    _transpose_view = transpose_view
    return transpose_view


matrix_transpose_property.__xdap_contract__ = matrix_transpose.__xdap_contract__
transpose_property.__xdap_contract__ = transpose.__xdap_contract__


def _operands(name, x1, x2):
    """``x1`` (a numeric DistArray) and ``x2`` (one on the same
    communicator, or anything NumPy makes a numeric array of), checked."""
    arguments.numeric(name, x1, "x1")
    if is_distributed(x2):
        arguments.numeric(name, x2, "x2")
        arguments.same_comm(name, (x1, x2))
        return x2
    v = np.asarray(x2)
    if v.dtype.kind not in "biufc":
        raise TypeError(f"{name}: x2 holds {v.dtype} values, not numbers")
    return v


@collective
def matmul(x1, x2, /):
    """``x1 @ x2`` for the layouts a user meets first:

    - a matrix whose rows are distributed (its last dim whole) times a
      vector or matrix every rank holds (a NumPy array): each rank
      multiplies its rows, no MPI call; the result keeps the rows'
      distribution (and a trailing undistributed dim for a matrix);
    - two 2-D DistArrays, ``x2`` larger than a rank's share of ``x1``: SUMMA
      (``xdap.linalg.summa``) -- both in blocks over one 2-D grid (moved
      there once if they are not), panels broadcast along grid rows and
      columns, neither gathered; the product in blocks over that grid;
    - the same with a smaller (or 1-D) DistArray for ``x2``: ``x2`` is
      gathered on every rank first (O(size of x2) a rank);
    - a matrix whose last dim is distributed is redistributed to row blocks
      first (one exchange);
    - two 1-D DistArrays: their dot product, a NumPy scalar on every rank
      (the second moved to the first's distribution if it differs; local
      products, one allreduce);
    - a 1-D DistArray times a NumPy matrix or stack of matrices
      (``(..., n, p)``): a NumPy array of shape ``(..., p)`` on every rank
      (local products, one allreduce);
    - stacks of matrices (``(..., m, n) @ (..., n, p)``, NumPy's batch
      broadcasting) with a NumPy (or gathered) right operand: each rank
      multiplies its own matrices.

    Collective: the operands (a NumPy ``x2`` by its bytes) are agreed.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0).reshape(3, 2), comm=MPI.COMM_SELF)
    >>> (a @ np.ones(2)).to_numpy()
    array([1., 5., 9.])
    """
    if not is_distributed(x1):
        raise TypeError("matmul: the left operand must be a DistArray (a NumPy array @ a "
                        "DistArray is not supported: use xdap.matmul on the transpose)")
    x2 = _operands("matmul", x1, x2)
    shape2 = x2.shape
    if x1.ndim == 0 or len(shape2) == 0:
        raise ValueError("matmul: 0-d operands are not allowed (use *)")
    n = x1.shape[-1]
    k = shape2[-2] if len(shape2) > 1 else shape2[0]        # the dim x2 sums over
    if k != n:
        raise ValueError(f"matmul: shapes {x1.shape} and {shape2} do not match "
                         f"(dim {n} vs {k})")
    if x1.ndim > 2 or len(shape2) > 2:
        _batch(x1.shape, shape2)
    yield dict(x1=x1, x2=x2)
    return _matmul(_stretched_left(x1, x2), x2)


def _batch(shape1, shape2):
    """The broadcast batch dims of a stacked product (NumPy's rule), checked."""
    batch1 = shape1[:-2] if len(shape1) > 1 else ()
    batch2 = shape2[:-2] if len(shape2) > 1 else ()
    try:
        return np.broadcast_shapes(batch1, batch2)
    except ValueError:
        raise ValueError(f"matmul: the stacks {shape1} and {shape2} do not broadcast") from None


def _stretched_left(x1, x2):
    """``x1`` with its own batch dims broadcast against ``x2``'s (a stack
    ``(1, m, n)`` against ``(4, n, p)`` becomes ``(4, m, n)``; ``broadcast_to``'s
    engine: size-1 dims that are not distributed stretch locally, else a copy
    in the default layout), so that the product keeps NumPy's shape; batch
    dims only ``x2`` has stay leading (``_stacked``)."""
    batch1 = x1.shape[:-2]
    if len(x1.shape) < 3:
        return x1
    batch = _batch(x1.shape, x2.shape)
    own = batch[len(batch) - len(batch1):]
    if own == batch1:
        return x1
    from .layouts import broadcast
    return broadcast(x1, own + x1.shape[-2:])


def _matmul(x1, x2):
    d = x1.distribution
    if is_distributed(x2):
        if d.ndim == 1 and x2.ndim == 1:
            return _dot(x1, x2)
        if d.ndim == 2 and x2.ndim == 2 and x1.comm.size > 1 and \
                x2.size > x1.size // x1.comm.size:
            return _summa(x1, x2)
        from .exchange import to_numpy
        x2 = to_numpy(x2)                # the replicated operand, on every rank
    if d.ndim == 1:      # a vector times a replicated vector, matrix or stack of matrices
        x1 = one_copy(x1)
        d = x1.distribution
        own = owned(d, x1.parts)
        idx = np.asarray(d.maps[0].global_indices(d.coords[0]))[d.maps[0].owned_local_slice(
            d.coords[0])]
        partial = own @ (x2[..., idx, :] if x2.ndim > 1 else x2[idx])
        total = allreduce(x1.comm, np.asarray(partial), "sum")
        return total[()] if total.ndim == 0 else total
    if not d.maps[-1].whole:
        x1 = rows(x1)
        d = x1.distribution
    if x2.ndim > 2:
        return _stacked(x1, x2)
    out = x1.parts.values @ x2
    nd = d.leading(d.ndim - 1)
    if x2.ndim == 2:
        nd = nd.with_trailing((x2.shape[1],))
    return wrap(x1, nd, out)


def _summa(x1, x2):
    """Two 2-D DistArrays by SUMMA (``xdap.linalg.summa``): both moved to
    blocks over one balanced 2-D grid (nothing moves when they lie so),
    then panels broadcast along grid rows and columns; the product in
    blocks over that grid."""
    from ..comm import balanced_grid
    from ..distribution import make_distribution
    from ..linalg import summa
    comm = x1.comm
    grid = balanced_grid(comm.size, 2)
    da = make_distribution(x1.shape, ("b", "b"), grid=grid, comm=comm)
    db = make_distribution(x2.shape, ("b", "b"), grid=grid, comm=comm)
    a, b = moved(x1, da), moved(x2, db)
    c = summa(comm, grid, da.coords, np.asarray(a.parts.values), np.asarray(b.parts.values),
              da.maps[1].bounds, db.maps[0].bounds)
    dc = make_distribution((x1.shape[0], x2.shape[1]), ("b", "b"), grid=grid, comm=comm)
    return wrap(a, dc, c)


def _stacked(x1, x2):
    """Stacks of matrices, NumPy's batch broadcasting: ``x1`` (..., m, n)
    with its last dim whole, ``x2`` a NumPy stack (..., n, p) the same on
    every rank.  Each rank multiplies its matrices by ``x2``'s matrices of
    the same batch indices (no MPI call); batch dims only ``x2`` has lead
    the result, whole.  The result keeps ``x1``'s distribution."""
    d = x1.distribution
    batch1 = d.global_shape[:-2]
    batch = _batch(d.global_shape, x2.shape)
    extra = len(batch) - len(batch1)
    right = np.broadcast_to(x2, batch + x2.shape[-2:])
    for j in range(len(batch1)):         # x2's matrices at this rank's batch indices
        right = np.take(right, np.asarray(d.global_indices(j)), axis=extra + j)
    out = np.matmul(x1.parts.values, right)
    maps = tuple(BlockMap(b, 1) for b in batch[:extra]) + d.maps[:-1] + \
        (BlockMap(x2.shape[-1], 1),)
    coords = d.rank_coords
    coords = np.hstack([np.zeros((len(coords), extra), np.int64), coords[:, :-1],
                        np.zeros((len(coords), 1), np.int64)])
    return wrap(x1, Distribution(maps, d.comm, coords), out)


def _dot(x1, x2):
    x1 = one_copy(x1)
    x2 = moved(x2, x1.distribution)
    d = x1.distribution
    own = owned(d, x1.parts) @ owned(d, x2.parts)
    return allreduce(x1.comm, np.asarray(own), "sum")[()]


# -- tensordot ---------------------------------------------------------------------------
def _tensordot_axes(x1_ndim, x2_ndim, shape1, shape2, axes):
    if arguments.is_integer_value(axes):
        axes = int(axes)
        if not 0 <= axes <= min(x1_ndim, x2_ndim):
            raise ValueError(f"tensordot: axes={axes} for arrays of {x1_ndim} and {x2_ndim} "
                             "dims")
        a1, a2 = tuple(range(x1_ndim - axes, x1_ndim)), tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        a1, a2 = (tuple(arguments.axis("tensordot", n, a, "axes entry")
                        for a in (ax if isinstance(ax, (tuple, list)) else (ax,)))
                  for ax, n in zip(axes, (x1_ndim, x2_ndim)))
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of axis sequences, got "
                        f"{arguments._shown(axes)}")
    if len(a1) != len(a2) or len(set(a1)) != len(a1) or len(set(a2)) != len(a2) or \
            any(shape1[i] != shape2[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensordot: axes {arguments._shown(axes)} do not pair distinct dims "
                         f"of one size (shapes {shape1} and {shape2})")
    return a1, a2


@collective
def tensordot(x1, x2, /, *, axes=2):
    """The sum of products over ``axes`` (the Array API's ``tensordot``):
    ``x1``'s summed dims moved last and ``x2``'s first, both made 2-D
    (``reshape``), one ``matmul`` (``x2`` gathered on every rank: it is
    the smaller operand in the layouts this serves), the result reshaped
    to ``x1``'s free dims then ``x2``'s.  Collective."""
    x2 = _operands("tensordot", x1, x2)
    shape2 = x2.shape
    a1, a2 = _tensordot_axes(x1.ndim, len(shape2), x1.shape, shape2, axes)
    yield dict(x1=x1, x2=x2, axes=(a1, a2))
    from .exchange import to_numpy
    from .manipulation import _permuted, reshape
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(len(shape2)) if j not in a2]
    k = int(np.prod([x1.shape[i] for i in a1], dtype=np.int64))
    m = int(np.prod([x1.shape[i] for i in free1], dtype=np.int64))
    left = reshape(_permuted(x1, tuple(free1) + a1), (m, k))
    right = to_numpy(x2) if is_distributed(x2) else x2
    n = int(np.prod([shape2[j] for j in free2], dtype=np.int64))
    right = np.transpose(right, a2 + tuple(free2)).reshape(k, n)    # not -1: k may be 0
    out = _matmul(left, right)
    return reshape(out, tuple(x1.shape[i] for i in free1) + tuple(shape2[j] for j in free2))


def vecdot(x1, x2, /, *, axis=-1):
    """``_vecdot``; a repeated dot product of two plain 1-D arrays takes its
    prepared path (``xdap.repeats``): the BLAS dot and the kept digest
    in one message."""
    out = call_lane(_DOTS, _vecdot, (x1, x2), (), {} if axis == -1 else {"axis": axis},
                    _DOT_LANE)
    return _vecdot(x1, x2, axis=axis) if out is NotImplemented else out


def dot_lane(finisher):
    """The ``make`` of a repeated ``vecdot``'s prepared path
    (``xdap.repeats.call_lane``): ``finisher(x1, dtype)`` -- None:
    the NumPy scalar itself -- gives the function that makes the result of
    the NumPy scalar."""
    def make(agreed):
        x1, x2 = agreed["x1"], agreed["x2"]
        if not plain_dot(x1, x2):
            return None
        dt = x1.parts.info.numpy_dtype
        dot, combine = dot_parts(x1.distribution, dt)
        payload = lambda x1, x2: dot(x1.parts.values, x2.parts.values)     # noqa: E731
        if finisher is None:
            return Rides(payload, lambda x, part, records: combine(part, records))
        finish = finisher(x1, dt)
        return Rides(payload, lambda x, part, records: finish(x, combine(part, records)))
    return make


_DOTS = Repeats()
_DOT_LANE = dot_lane(None)


def matmul_operator(x1, x2):
    """``x1 @ x2``: ``matmul``; a repeated product of two plain 1-D real
    arrays of one distribution takes the dot product's prepared path
    (``xdap.repeats``) under matmul's own vote: each rank's BLAS dot and
    the digest in one message."""
    out = call_lane(_MATMULS, matmul, (x1, x2), (), {}, _matmul_lane)
    return matmul(x1, x2) if out is NotImplemented else out


def _matmul_lane(agreed):
    x1, x2 = agreed["x1"], agreed["x2"]
    if not is_distributed(x2) or x1.parts.info.numpy_dtype.kind == "c":
        return None              # (complex: vecdot conjugates, matmul does not)
    return _DOT_LANE(agreed)


_MATMULS = Repeats()
matmul_operator.__xdap_contract__ = matmul.__xdap_contract__


@collective(rides=True, name="vecdot")
def _vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along ``axis`` (the Array API's
    ``vecdot``: ``sum(conj(x1) * x2, axis)``, broadcast as operators are).
    A NumPy scalar on every rank where it sums everything, else a
    DistArray.  Collective: for two 1-D arrays of one distribution, one
    message -- each rank's BLAS dot, carried with the call's vote."""
    x2, axis = vecdot_args(x1, x2, axis)
    vote = yield dict(x1=x1, x2=x2, axis=axis)
    return vecdot_agreed(x1, x2, axis, vote)


vecdot.__xdap_contract__ = _vecdot.__xdap_contract__


def vecdot_args(x1, x2, axis):
    """The checks of ``vecdot``: ``(x2, axis)`` normalized."""
    x2 = _operands("vecdot", x1, x2)
    axis = arguments.integer("vecdot", "axis", axis)
    shape2 = x2.shape if is_distributed(x2) else np.shape(x2)
    n1 = x1.shape[axis] if -x1.ndim <= axis < x1.ndim else None
    n2 = shape2[axis] if -len(shape2) <= axis < len(shape2) else None
    if axis >= 0 or n1 is None or n2 is None or n1 != n2:
        raise ValueError(f"vecdot: axis {axis} must be a negative dim of both operands, of "
                         f"one size (shapes {x1.shape} and {shape2})")
    if not (is_distributed(x2) and x2.distribution is x1.distribution):
        from ..kernels.apply import broadcast_shape_of
        broadcast_shape_of((x1, x2))       # (the same distribution: the same shape)
    return x2, axis


def plain_dot(x1, x2):
    """Whether ``vecdot(x1, x2)`` is one dot product of two plain 1-D
    arrays of one distribution and dtype (each rank's BLAS dot, one
    message)."""
    return type(x2) is type(x1) and x1.ndim == 1 and plain(x1) and plain(x2) and \
        x2.distribution == x1.distribution and x1.parts.info.dtype == x2.parts.info.dtype \
        and x1.parts.info.numpy_dtype.kind in "iufc"


def vecdot_agreed(x1, x2, axis, vote=SETTLED):
    """``vecdot`` of checked, agreed operands; ``vote``: the call's."""
    if plain_dot(x1, x2):
        return plain_dotter(x1.distribution, x1.parts.info.numpy_dtype)(
            vote, x1.parts.values, x2.parts.values)
    vote.cast()
    from .data_types import astype
    from .elementwise import conjugate, multiply
    from .statistical import sum as total
    if x1.dtype.kind == "c":
        x1 = conjugate(x1)
    products = multiply(x1, x2)
    out = total(products, axis=axis)           # sum widens small ints; vecdot does not
    if is_distributed(out):
        return out if out.dtype == products.dtype else astype(out, products.dtype)
    return out.astype(products.dtype)
