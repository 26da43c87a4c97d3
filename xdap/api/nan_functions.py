"""NumPy's NaN-skipping functions beyond the Array API standard --
``nansum``, ``nanprod``, ``nanmean``, ``nanvar``, ``nanstd``, ``nanmin``,
``nanmax``, ``nanargmin``, ``nanargmax``, ``nanmedian``, ``nanquantile``,
``nanpercentile``, ``nancumsum``, ``nancumprod`` -- on distributed data,
with NumPy's results on the global array.  ``np.nanmean(a)`` reaches them
through ``DistArray.__array_function__``; xarray finds them in the
namespace (``xp.nanmean``), which is how ``DataArray.mean()`` (``skipna``
is on for floats) runs on a DistArray.

Each is the reduction xdap already has, of the array with its NaNs taken as
missing values (``nan_as_missing``: a validity bitmap beside the same
values, local work, no copy of the data); xdap's reductions skip missing
values.  So each moves what its plain reduction moves -- one ``Allreduce``
for a reduction over a distributed axis, none along a whole one --
``nanmean`` the sum and the count in that one reduction.  Where NumPy
returns something for an all-NaN slice, these do too (``nansum``: 0,
``nanmean``/``nanmax``/...: NaN); ``nanargmax`` of an all-NaN slice is
NumPy's ``ValueError``, on every rank.  Integer data has no NaN: the plain
reduction.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([[1.0, np.nan], [3.0, np.nan]]), comm=MPI.COMM_SELF)
>>> float(np.nanmean(a)), np.nansum(a, axis=0).to_numpy().tolist()
(2.0, [4.0, 0.0])
>>> xdap.nanmax(a, axis=0).to_numpy().tolist()
[3.0, nan]
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..agreement import agreed_on
from ..bitmaps import pack_validity
from ..contract import collective
from ..movement.reduce import allreduce, check_reduction
from ..parts import Parts
from . import statistical

__all__ = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmin", "nanmax",
           "nanargmin", "nanargmax", "nanmedian", "nanquantile", "nanpercentile",
           "nancumsum", "nancumprod", "nan_as_missing"]


def _has_nan(x) -> bool:
    return x.parts.info.numeric and x.dtype.kind in "fc"


def nan_as_missing(x):
    """``x`` with its NaNs missing (``?float64``): the same values, a
    validity bitmap of the non-NaN ones beside them (and beside the missing
    ones ``x`` had).  Local work, no MPI call; ``x`` itself where its dtype
    holds no NaN.  The values are shared, not copied."""
    if not _has_nan(x):
        return x
    p = x.parts
    valid = ~np.isnan(p.values)
    if p.validity is not None:
        valid &= p.valid_mask()
    info = p.info.with_leaf("?" + p.info.leaf.lstrip("?"))
    q = Parts(info, p.values, pack_validity(valid), p.offsets, rows=p.rows)
    return x.__xdap_wrap__(x.distribution, q, True, fresh=False)


def _missing_filled(x, out, value):
    """A reduction's result with its missing values (the all-NaN slices)
    ``value``: a NumPy scalar of the result's dtype, or a DistArray without
    missing values (local work).  ``x``: the array reduced, for a scalar's
    dtype."""
    if out is None:                          # over everything, nothing valid
        return x.dtype.type(value)
    if not hasattr(type(out), "__xdap_wrap__") or out.parts.validity is None:
        return out
    p = out.parts
    values = np.where(p.valid_mask(), p.values, value)
    return out.__xdap_wrap__(out.distribution, Parts.of_array(values), False, True)


def _refused(name, out, numpy_kw):
    given = (["out"] if out is not None else []) + \
        [k for k, v in numpy_kw.items() if v is not np._NoValue and v is not None]
    if given:
        raise TypeError(f"{name}: {', '.join(given)}= not supported on a DistArray (the "
                        "result is a new array)")


def _reduction_args(name, x, axis, dtype, out, keepdims, numpy_kw, op=None):
    arguments.numeric(name, x)
    _refused(name, out, numpy_kw)
    axes = check_reduction(x.parts.info, op or name[3:], axis)
    return axes, arguments.dtype(name, dtype), arguments.flag(name, "keepdims", keepdims)


def _skipping(name, fill):
    """The NaN-skipping version of ``statistical``'s reduction ``name``;
    ``fill``: its value for a slice with nothing but NaN."""
    reduce = getattr(statistical, name)
    takes_dtype = name in ("sum", "prod", "mean")

    def body(a, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
        axes, dt, keepdims = _reduction_args("nan" + name, a, axis, dtype, out, keepdims,
                                             numpy_kw)
        yield dict(a=a, axis=axes, dtype=dt, out=None, keepdims=keepdims, numpy_kw=None)
        extra = dict(dtype=dt) if takes_dtype else {}
        if not _has_nan(a):
            return reduce(a, axis=axes, keepdims=keepdims, **extra)
        result = reduce(nan_as_missing(a), axis=axes, **extra)
        like = a if name != "mean" else np.ones(0, np.result_type(a.dtype, np.float64))
        result = _missing_filled(like, result, fill)
        return statistical.kept_dims(a, result, axes) if keepdims else result

    body.__name__ = body.__qualname__ = "nan" + name
    body.__doc__ = (f"NumPy's ``np.nan{name}``: ``{name}`` over ``axis`` of the values that "
                    f"are not NaN ({fill} for a slice of nothing but NaN).  Collective: "
                    f"``{name}``'s messages.")
    return collective(body)


nansum = _skipping("sum", 0)
nanprod = _skipping("prod", 1)
nanmean = _skipping("mean", np.nan)
nanmin = _skipping("min", np.nan)
nanmax = _skipping("max", np.nan)


def _variance_args(name, a, axis, dtype, out, ddof, keepdims, numpy_kw):
    axes, dt, keepdims = _reduction_args(name, a, axis, dtype, out, keepdims, numpy_kw, "mean")
    return axes, dt, arguments.real(name, "ddof", ddof), keepdims


def _nanvariance(a, axes, dt, ddof, keepdims):
    """The mean of the squared deviations from the NaN-skipping mean, over
    the values that are not NaN, ``ddof`` of their count removed: NaN where
    no more than ``ddof`` are."""
    from .elementwise import magnitude_squared
    from .searching import where
    if dt is not None:
        from .data_types import astype
        a = astype(a, dt)
    missing = nan_as_missing(a)
    total = len(axes) == a.ndim
    m = _missing_filled(np.ones(0, np.result_type(a.dtype, np.float64)),
                        statistical.mean(missing, axis=axes, keepdims=not total), np.nan)
    deviations = nan_as_missing(magnitude_squared(a - m))
    s = _missing_filled(np.ones(0, np.float64), statistical.sum(deviations, axis=axes), 0.0)
    n = statistical.count(missing, axis=axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        if total:
            v = np.float64(s / (n - ddof)) if n - ddof > 0 else np.float64(np.nan)
        else:
            v = where(n - ddof > 0, s / (n - ddof), np.nan)
    return statistical.kept_dims(a, v, axes) if keepdims else v


@collective
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **numpy_kw):
    """NumPy's ``np.nanvar``: the variance over ``axis`` of the values that
    are not NaN (two passes: the mean, then the squared deviations), with
    ``ddof`` degrees of freedom removed; NaN where no more than ``ddof``
    values are.  Collective: three reductions (mean, sum, count).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> float(xdap.nanvar(xdap.from_global(np.array([1.0, np.nan, 3.0]), comm=MPI.COMM_SELF)))
    1.0
    """
    axes, dt, ddof, keepdims = _variance_args("nanvar", a, axis, dtype, out, ddof, keepdims,
                                              numpy_kw)
    yield dict(a=a, axis=axes, dtype=dt, out=None, ddof=ddof, keepdims=keepdims,
               numpy_kw=None)
    return _nanvariance(a, axes, dt, ddof, keepdims)


@collective
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **numpy_kw):
    """NumPy's ``np.nanstd``: the square root of ``nanvar``."""
    axes, dt, ddof, keepdims = _variance_args("nanstd", a, axis, dtype, out, ddof, keepdims,
                                              numpy_kw)
    yield dict(a=a, axis=axes, dtype=dt, out=None, ddof=ddof, keepdims=keepdims,
               numpy_kw=None)
    v = _nanvariance(a, axes, dt, ddof, keepdims)
    if hasattr(type(v), "__xdap_wrap__"):
        from .elementwise import sqrt
        return sqrt(v)
    return np.sqrt(v)


# -- nanargmin, nanargmax ---------------------------------------------------------------
def _arg_args(name, a, axis, out, keepdims):
    from .searching import _arg_args as checked
    _refused(name, out, {})
    if keepdims not in (False, np._NoValue):
        raise TypeError(f"{name}: keepdims= not supported on a DistArray")
    return checked(name, a, axis)


def _nanarg(name, plain, a, axis, fill):
    """``plain`` (argmax, argmin) of ``a`` with its NaNs ``fill`` (never
    chosen over a number), after one reduction that finds whether some
    slice is nothing but NaN: NumPy's ValueError then, on every rank."""
    if not _has_nan(a):
        return plain(a, axis=axis)
    from .elementwise import isnan
    from .searching import where
    nan = isnan(a)
    every = statistical.all(nan, axis=axis)
    if bool(statistical.any(every) if hasattr(type(every), "__xdap_wrap__") else every):
        raise agreed_on(a.comm, ValueError(f"{name}: All-NaN slice encountered"))
    return plain(where(nan, fill, a), axis=axis)


@collective
def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``np.nanargmax``: the index of the largest value that is not
    NaN (``argmax``'s, of the array with NaN below every number); a
    ``ValueError`` on every rank where a slice holds nothing but NaN.
    Collective: ``argmax``'s messages and one reduction for the check."""
    axis = _arg_args("nanargmax", a, axis, out, keepdims)
    yield dict(a=a, axis=axis, out=None, keepdims=False)
    from .searching import argmax
    return _nanarg("nanargmax", argmax, a, axis, -np.inf)


@collective
def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """NumPy's ``np.nanargmin`` (see ``nanargmax``)."""
    axis = _arg_args("nanargmin", a, axis, out, keepdims)
    yield dict(a=a, axis=axis, out=None, keepdims=False)
    from .searching import argmin
    return _nanarg("nanargmin", argmin, a, axis, np.inf)


# -- nanmedian, nanquantile, nanpercentile -----------------------------------------------
def _quantile_kw(name, out, overwrite_input, keepdims):
    _refused(name, out, {})
    return arguments.flag(name, "overwrite_input", overwrite_input), \
        arguments.flag(name, "keepdims", keepdims)


@collective
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """NumPy's ``np.nanquantile``: ``quantile`` of the values that are not
    NaN (over everything: the distributed selection of ``quantile`` over
    each rank's non-NaN values; along an axis: the axis made whole, then
    NumPy's ``nanquantile`` per rank).  NaN for a slice of nothing but NaN.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> float(xdap.nanquantile(xdap.from_global(np.array([4.0, np.nan, 2.0]),
    ...                                         comm=MPI.COMM_SELF), 0.5))
    3.0
    """
    from .numpy_statistics import _quantile_args
    axis = _every_axis(a, axis)
    q, axis, method, keepdims, weights = _quantile_args(
        "nanquantile", a, q, axis, out, overwrite_input, method, keepdims, 1, weights)
    yield dict(a=a, q=q, axis=axis, out=None, overwrite_input=False, method=method,
               keepdims=keepdims, weights=weights)
    return _nanquantiles("nanquantile", a, q, axis, method, keepdims, weights)


@collective
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """NumPy's ``np.nanpercentile``: ``nanquantile`` of ``q / 100``."""
    from .numpy_statistics import _quantile_args
    axis = _every_axis(a, axis)
    q, axis, method, keepdims, weights = _quantile_args(
        "nanpercentile", a, q, axis, out, overwrite_input, method, keepdims, 100, weights)
    yield dict(a=a, q=q, axis=axis, out=None, overwrite_input=False, method=method,
               keepdims=keepdims, weights=weights)
    return _nanquantiles("nanpercentile", a, q, axis, method, keepdims, weights)


@collective
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.nanmedian``: ``median`` of the values that are not NaN."""
    from .numpy_statistics import _quantile_args
    axis = _every_axis(a, axis)
    _, axis, _, keepdims, _ = _quantile_args("nanmedian", a, None, axis, out, overwrite_input,
                                             "linear", keepdims, 1)
    yield dict(a=a, axis=axis, out=None, overwrite_input=False, keepdims=keepdims)
    return _nanquantiles("nanmedian", a, np.float64(0.5), axis, "linear", keepdims, None,
                         median=True)


def _every_axis(a, axis):
    """``axis``, None where it is a tuple of every axis, its one axis where
    it is a tuple of one (NumPy's quantiles take those)."""
    if isinstance(axis, tuple) and len(axis) == 1:
        return axis[0]
    if isinstance(axis, tuple) and len(axis) == getattr(a, "ndim", -1) and \
            sorted(k % max(a.ndim, 1) if isinstance(k, int) else k for k in axis) == \
            list(range(a.ndim)):
        return None
    return axis


def _nanquantiles(name, a, q, axis, method, keepdims, weights, median=False):
    from .numpy_statistics import _quantiles
    if axis is not None and a.ndim > 1:
        return _quantiles(name, a, q, axis, method, keepdims, median, weights, nan=True)
    if not _has_nan(a):
        return _quantiles(name, a, q, axis, method, keepdims, median, weights)
    from .elementwise import isnan
    from .indexing import getitem
    keep = ~isnan(a)
    if int(statistical.sum(keep)) == 0:           # NumPy: NaN (and a warning)
        dt = np.result_type(a.dtype, np.float64)
        result = np.full(np.shape(q), np.nan, dt) if np.ndim(q) else dt.type(np.nan)
        return np.reshape(result, np.shape(q) + (1,) * a.ndim) if keepdims else result
    values = getitem(a, keep)
    w = None if weights is None else getitem(weights, keep)
    result = _quantiles(name, values, q, None, method, False, median, w)
    return np.reshape(result, np.shape(q) + (1,) * a.ndim) if keepdims else result


# -- nancumsum, nancumprod ----------------------------------------------------------------
def _cumulative_args(name, a, axis, dtype, out):
    _refused(name, out, {})
    arguments.numeric(name, a)
    if axis is None:
        axis = 0 if a.ndim == 1 else None
    if axis is not None:
        axis = arguments.axis(name, a.ndim, axis)
    return axis, arguments.dtype(name, dtype)


def _cumulative(op, a, axis, dt, identity):
    from .manipulation import reshape
    if _has_nan(a):
        from .elementwise import isnan
        from .searching import where
        a = where(isnan(a), identity, a)
    if axis is None:                                  # NumPy: of the flattened array
        a, axis = reshape(a, (-1,)), 0
    return op(a, axis=axis, dtype=dt)


@collective
def nancumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.nancumsum``: the cumulative sum with NaN taken as 0
    (``cumulative_sum``'s messages; ``axis=None``: of the flattened array,
    one reshape first)."""
    axis, dt = _cumulative_args("nancumsum", a, axis, dtype, out)
    yield dict(a=a, axis=axis, dtype=dt, out=None)
    return _cumulative(statistical.cumulative_sum, a, axis, dt, 0)


@collective
def nancumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.nancumprod``: the cumulative product with NaN taken as 1."""
    axis, dt = _cumulative_args("nancumprod", a, axis, dtype, out)
    yield dict(a=a, axis=axis, dtype=dt, out=None)
    return _cumulative(statistical.cumulative_prod, a, axis, dt, 1)


@collective
def cumsum(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.cumsum`` (``axis=None``: of the flattened array):
    ``cumulative_sum``."""
    axis, dt = _cumulative_args("cumsum", a, axis, dtype, out)
    yield dict(a=a, axis=axis, dtype=dt, out=None)
    from .manipulation import reshape
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return statistical.cumulative_sum(a, axis=axis, dtype=dt)


@collective
def cumprod(a, axis=None, dtype=None, out=None):
    """NumPy's ``np.cumprod``: ``cumulative_prod`` (see ``cumsum``)."""
    axis, dt = _cumulative_args("cumprod", a, axis, dtype, out)
    yield dict(a=a, axis=axis, dtype=dt, out=None)
    from .manipulation import reshape
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    return statistical.cumulative_prod(a, axis=axis, dtype=dt)


# NumPy's functions these implement, for DistArray.__array_function__
NUMPY_FUNCTIONS = {np.nansum: nansum, np.nanprod: nanprod, np.nanmean: nanmean,
                   np.nanvar: nanvar, np.nanstd: nanstd, np.nanmin: nanmin, np.nanmax: nanmax,
                   np.nanargmin: nanargmin, np.nanargmax: nanargmax, np.nanmedian: nanmedian,
                   np.nanquantile: nanquantile, np.nanpercentile: nanpercentile,
                   np.nancumsum: nancumsum, np.nancumprod: nancumprod, np.cumsum: cumsum,
                   np.cumprod: cumprod}
