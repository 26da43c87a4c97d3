"""Statistical functions: reductions (``sum``, ``prod``, ``min``, ``max``,
``mean``, ``count``, ``any``, ``all`` -- the DistArray methods, NumPy's
flavour: a NumPy scalar on every rank for a reduction over everything),
``var``, ``std`` and the cumulative sums and products.  All collective:
they agree on the axes and then reduce (``xdap.movement.reduce``: one
allreduce over the ranks that share the kept indices).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0).reshape(2, 3), comm=MPI.COMM_SELF)
>>> a.sum(), a.max(axis=0).to_numpy().tolist(), float(xdap.var(a))
(np.float64(15.0), [3.0, 4.0, 5.0], 2.9166666666666665)
"""
from __future__ import annotations

import functools

import numpy as np

from .. import arguments
from ..contract import collective
from ..distribution import Distribution
from ..maps import BlockMap
from ..agreement import SETTLED
from ..contract import Repeats
from ..movement.reduce import check_reduction, is_total, reduce_agreed, total, total_parts
from ..repeats import Rides, call_lane, plain
from ..parts import Parts

__all__ = ["sum", "prod", "min", "max", "mean", "count", "any", "all", "var", "std",
           "cumulative_sum", "cumulative_prod", "numpy_scalar", "kept_dims"]


def numpy_scalar(x):
    """An xnd scalar as NumPy's scalar of its dtype (``float(a.sum())``,
    ``a.sum() + 1`` work as with NumPy); None for a missing value."""
    v = x.value
    if v is None:
        return None
    from ..types import numpy_dtype
    return numpy_dtype(str(x.type).lstrip("?")).type(v)


def _check(name, x, axis, dtype, out, keepdims, numpy_kw):
    """The checks of a reduction method: the reduced axes, and the dtype to
    convert to first (NumPy's keywords: ``out=`` and others than their
    defaults are refused by name)."""
    arguments.array(name, x)
    unknown = [k for k, v in numpy_kw.items() if v is not np._NoValue and v is not None]
    if out is not None or unknown:
        given = (["out"] if out is not None else []) + unknown
        raise TypeError(f"{name}: {', '.join(given)}= not supported on a DistArray (the "
                        "result is a new array; convert with a.astype(...))")
    keepdims = arguments.flag(name, "keepdims", keepdims)
    dt = arguments.dtype(name, dtype)
    axes = check_reduction(x.parts.info, name, axis)
    if dt is not None:
        if x.parts.info.ragged or x.parts.info.boxed:
            raise TypeError(f"{name}: dtype= converts fixed numeric data, not "
                            f"{arguments.type_of(x)}")
        check_reduction(x.parts.info.with_leaf(("?" if x.parts.info.optional else "") +
                                               _name(dt)), name, axes)
    return axes, dt, keepdims


def _name(dt) -> str:
    from ..dtypes import dtype_from_numpy
    return dtype_from_numpy(dt)


def _reduced(name, x, axes, dt, keepdims, vote=SETTLED):
    """The reduction of agreed arguments: a NumPy scalar (over everything)
    or a DistArray of the kept dims; ``keepdims``: the reduced dims back,
    each of size 1.  ``vote``: the call's (``xdap.agreement.Vote``) -- a
    reduction over everything sends it with its partial, one message."""
    if dt is not None and dt != x.parts.info.numpy_dtype:
        from .data_types import astype
        x = astype(x, dt)                  # local: the vote may still ride
    if is_total(x.parts.info, axes):
        out = total(x.distribution, x.parts, name, vote)
    else:
        vote.cast()
        out = x.__xdap_wrap__(*reduce_agreed(x.distribution, x.parts, name, axes),
                              agreed=True)
    return kept_dims(x, out, axes) if keepdims else out


def kept_dims(x, out, axes):
    """``out`` (a reduction of ``x`` over ``axes``) with those dims back,
    each of size 1: a view of the result's values, no MPI call (a value
    every rank holds becomes an array every rank holds)."""
    if not axes:
        return out
    from .indexing import getitem
    from .manipulation import reshape, scalar_array
    if not hasattr(type(out), "__xdap_wrap__") or out.ndim == 0:
        value = out if hasattr(type(out), "__xdap_wrap__") else scalar_array(x, out)
        return reshape(value, (1,) * x.ndim)
    return getitem(out, tuple(None if j in axes else slice(None) for j in range(x.ndim)))


@collective(rides=True, name="sum")
def _sum(x, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):  # noqa: A001
    """Sum over ``axis`` (None: all -> a NumPy scalar on every rank, None
    when it is NA; an int or a tuple -> a DistArray); NA skipped; ``dtype``
    converts first.  Collective.  ``np.sum(a)`` calls it."""
    axes, dt, keepdims = _check("sum", x, axis, dtype, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, dtype=dt, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("sum", x, axes, dt, keepdims, vote)


@collective(rides=True, name="prod")
def _prod(x, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
    """Product over ``axis``; NA skipped (see ``sum``)."""
    axes, dt, keepdims = _check("prod", x, axis, dtype, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, dtype=dt, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("prod", x, axes, dt, keepdims, vote)


@collective(rides=True, name="min")
def _min(x, axis=None, out=None, keepdims=False, **numpy_kw):  # noqa: A001
    """Minimum over ``axis``; NA skipped (NA when nothing is valid); NaN
    wins, as in NumPy."""
    axes, _, keepdims = _check("min", x, axis, None, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("min", x, axes, None, keepdims, vote)


@collective(rides=True, name="max")
def _max(x, axis=None, out=None, keepdims=False, **numpy_kw):  # noqa: A001
    """Maximum over ``axis``; NA skipped (NA when nothing is valid); NaN
    wins, as in NumPy."""
    axes, _, keepdims = _check("max", x, axis, None, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("max", x, axes, None, keepdims, vote)


@collective(rides=True, name="mean")
def _mean(x, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
    """Mean over ``axis`` of the valid values (float64; complex128 for
    complex data)."""
    axes, dt, keepdims = _check("mean", x, axis, dtype, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, dtype=dt, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("mean", x, axes, dt, keepdims, vote)


@collective(rides=True, name="count")
def _count(x, axis=None):
    """Number of valid (non-NA) values over ``axis`` (int64)."""
    axes, _, _ = _check("count", x, axis, None, None, False, {})
    vote = yield dict(x=x, axis=axes)
    return _reduced("count", x, axes, None, False, vote)


@collective(rides=True, name="any")
def _any(x, axis=None, out=None, keepdims=False, **numpy_kw):  # noqa: A001
    """Whether any valid value is nonzero, over ``axis``."""
    axes, _, keepdims = _check("any", x, axis, None, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("any", x, axes, None, keepdims, vote)


@collective(rides=True, name="all")
def _all(x, axis=None, out=None, keepdims=False, **numpy_kw):  # noqa: A001
    """Whether every valid value is nonzero, over ``axis``."""
    axes, _, keepdims = _check("all", x, axis, None, out, keepdims, numpy_kw)
    vote = yield dict(x=x, axis=axes, out=None, keepdims=keepdims, numpy_kw=None)
    return _reduced("all", x, axes, None, keepdims, vote)


def _lane(op, declared):
    """``declared`` (a reduction's declared call) with the prepared path of
    a repeated reduction over everything of plain data
    (``xdap.repeats``): the kept digest rides with the partial, one
    message, nothing checked or described again."""
    memo = Repeats()

    def make(agreed):
        x = agreed["x"]
        if not plain(x) or not is_total(x.parts.info, agreed["axis"]) or \
                agreed.get("keepdims") or agreed.get("dtype") is not None:
            return None
        partial, combine = total_parts(x.distribution, x.parts.info, op)
        return Rides(lambda x: partial(x.parts.values), lambda x, part, records: combine(part, records))

    @functools.wraps(declared)
    def call(x, *args, **kwargs):
        out = call_lane(memo, declared, (x,), args, kwargs, make)
        return declared(x, *args, **kwargs) if out is NotImplemented else out

    call.__xdap_contract__ = declared.__xdap_contract__
    return call


sum = _lane("sum", _sum)              # noqa: A001
prod = _lane("prod", _prod)
min = _lane("min", _min)              # noqa: A001
max = _lane("max", _max)              # noqa: A001
mean = _lane("mean", _mean)
count = _lane("count", _count)
any = _lane("any", _any)              # noqa: A001
all = _lane("all", _all)              # noqa: A001


# -- variance ----------------------------------------------------------------------
def _variance_args(name, x, axis, correction):
    arguments.numeric(name, x)
    axes = arguments.axes(name, x.ndim, axis)
    return axes, arguments.real(name, "correction", correction)


@collective
def var(x, /, *, axis=None, correction=0.0):
    """The variance over ``axis`` (None: all; an int or a tuple) with
    ``correction`` degrees of freedom removed (NumPy's ``ddof``): the mean
    of the squared magnitudes ``|x - mean|**2`` of the deviations (two
    passes: mean, then deviations -- stabler than the sum of squares; real
    for complex data, as NumPy's).  A NumPy float on every rank when every
    axis is reduced, else a DistArray of the other dims; NaN where fewer
    than ``correction`` values remain.  Collective (its reductions).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> float(xdap.var(xdap.from_global(np.array([1j, -1j]), comm=MPI.COMM_SELF)))
    1.0
    """
    axes, correction = _variance_args("var", x, axis, correction)
    yield dict(x=x, axis=axes, correction=correction)
    return _variance(x, axes, correction)


def _variance(x, axes, correction):
    from .elementwise import magnitude_squared
    from .indexing import getitem
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    over = axes if len(axes) > 1 else axes[0] if axes else ()
    real = np.empty(0, x.dtype).real.dtype if x.dtype.kind == "c" else np.dtype(np.float64)
    if n == 0 and axes:                     # the variance of nothing: NaN, as NumPy
        if len(axes) == x.ndim:
            return real.type(np.nan)
        return _filled(x, axes, np.nan, real)
    with np.errstate(divide="ignore", invalid="ignore"):
        if not axes and x.ndim:             # nothing reduced: every deviation is 0
            zeros = np.zeros(x.parts.values.shape, real)
            return x.__xdap_wrap__(x.distribution, Parts.of_array(zeros / np.float64(
                1 - correction)), False, True)
        denominator = n - correction
        if len(axes) == x.ndim:
            dev = x - mean(x)
            s = sum(magnitude_squared(dev))
            return np.float64(s / denominator) if denominator > 0 else np.float64(np.nan)
        m = mean(x, axis=over)
        dev = x - getitem(m, tuple(None if j in axes else slice(None) for j in range(x.ndim)))
        s = sum(magnitude_squared(dev), axis=over)
        return s / denominator if denominator > 0 else s * np.nan


def _filled(x, axes, value, dt):
    """An array of the kept dims of ``x`` (as a reduction over ``axes``
    distributes them), every value ``value``."""
    out = sum(x, axis=axes if len(axes) > 1 else axes[0])
    values = np.full(out.parts.values.shape, value, dt)
    return out.__xdap_wrap__(out.distribution, Parts.of_array(values), False, True)


@collective
def std(x, /, *, axis=None, correction=0.0):
    """The standard deviation: the square root of ``var``."""
    axes, correction = _variance_args("std", x, axis, correction)
    yield dict(x=x, axis=axes, correction=correction)
    v = _variance(x, axes, correction)
    if hasattr(type(v), "__xdap_wrap__"):
        from .elementwise import sqrt
        return sqrt(v)
    return np.sqrt(v)


# -- cumulative sums ---------------------------------------------------------------
def _cumulative_args(name, x, axis, dtype, include_initial):
    arguments.numeric(name, x)
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dimension")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis is required for a {x.ndim}-d array")
        axis = 0
    axis = arguments.axis(name, x.ndim, axis)
    dt = arguments.dtype(name, dtype)
    return axis, dt, arguments.flag(name, "include_initial", include_initial)


@collective
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
    Collective (its arguments are agreed whichever path it takes).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.cumulative_sum(xdap.from_global(np.arange(4), comm=MPI.COMM_SELF)).to_numpy()
    array([0, 1, 3, 6])
    """
    axis, dt, include_initial = _cumulative_args("cumulative_sum", x, axis, dtype,
                                                 include_initial)
    yield dict(x=x, axis=axis, dtype=dt, include_initial=include_initial)
    return _cumulative(x, axis, dt, include_initial, np.add)


@collective
def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The cumulative product along ``axis`` (the Array API's
    ``cumulative_prod``; ``np.cumprod``): as ``cumulative_sum``, each rank's
    products scaled by the product of the totals before it.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.cumulative_prod(xdap.from_global(np.arange(1, 5), comm=MPI.COMM_SELF)).to_numpy()
    array([ 1,  2,  6, 24])
    """
    axis, dt, include_initial = _cumulative_args("cumulative_prod", x, axis, dtype,
                                                 include_initial)
    yield dict(x=x, axis=axis, dtype=dt, include_initial=include_initial)
    return _cumulative(x, axis, dt, include_initial, np.multiply)


def _wrap(x, d, values):
    values = np.asarray(values, order="C")
    return x.__xdap_wrap__(d, Parts.of_array(values), False, True)


def _cumulative(x, axis, dtype, include_initial, op):
    from .layouts import axis_whole, in_blocks
    d, p = x.distribution, x.parts
    m = d.maps[axis]
    if m.whole:
        values = op.accumulate(p.values, axis=axis, dtype=_acc_dtype(p.values, dtype))
        if include_initial:          # the identity first: the axis one longer, still local
            first = list(values.shape)
            first[axis] = 1
            values = np.concatenate([np.full(first, op.identity, values.dtype), values], axis)
            d = Distribution([BlockMap(m.size + 1, 1) if k == axis else mk
                              for k, mk in enumerate(d.maps)], x.comm, d.rank_coords)
        return _wrap(x, d, values)
    if d.ndim > 1:
        return _cumulative(axis_whole(x, axis), axis, dtype, include_initial, op)
    x = in_blocks(x)                 # cyclic, unstructured: to blocks (one exchange)
    d, p, m = x.distribution, x.parts, x.distribution.maps[0]
    own = p.values[m.owned_local_slice(d.coords[0])]
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

