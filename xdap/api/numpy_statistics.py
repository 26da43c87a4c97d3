"""NumPy's statistics beyond the Array API standard -- ``histogram``,
``bincount``, ``cov``, ``corrcoef``, ``quantile``, ``percentile``,
``median`` -- on distributed data, with NumPy's
results on the global array. ``np.histogram(a)`` and the others reach these
through ``DistArray.__array_function__``.

Each result is small (bins, counts, a k x k matrix) and comes back as a
NumPy array on every rank, as a reduction's scalar does. What each moves:

- ``histogram``: NumPy's ``np.histogram`` of each rank's values, then one
  ``Allreduce`` of the counts (plus one of the extremes when the range is
  not given): O(bins) bytes, never the data;
- ``bincount``: one ``Allreduce`` of the extremes, NumPy's ``np.bincount``
  of each rank's values, one ``Allreduce`` of the counts: O(max(x)) bytes;
- ``quantile`` / ``percentile`` / ``median`` over all values: a
  distributed selection (``xdap.movement.select``) -- a few rounds of one
  ``Allreduce`` of 256 counts, then one ``Allgatherv`` of at most 4096
  candidates; no sort, no value moves. All of NumPy's thirteen methods,
  and ``weights=`` (weighted ``inverted_cdf``: the rounds also sum the
  weights). Along an axis: one redistribution that makes it whole, then
  NumPy per rank;
- ``cov`` / ``corrcoef``: one ``Allreduce`` of the k variables' sums and
  one of the k x k products -- when the variables are whole on each rank
  and the observations in blocks; otherwise one redistribution to that
  layout first (the whole array moves once).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([1.0, 2.0, 2.0, 5.0]), comm=MPI.COMM_SELF)
>>> counts, edges = xdap.histogram(a, bins=4)
>>> counts.tolist(), edges.tolist()
([1, 2, 0, 1], [1.0, 2.0, 3.0, 4.0, 5.0])
>>> np.bincount(xdap.astype(a, np.int64)).tolist()            # through __array_function__
[0, 1, 2, 0, 0, 1]
>>> np.cov(xdap.from_global(np.array([[1.0, 2.0, 4.0], [1.0, 0.0, 2.0]]), comm=MPI.COMM_SELF))
array([[2.33333333, 1.        ],
       [1.        , 1.        ]])
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import arguments
from ..agreement import agreed_on
from ..contract import collective
from ..distribution import make_distribution
from ..movement.reduce import allreduce, counted_values
from ..movement.select import extremes, select
from .layouts import values_on

__all__ = ["histogram", "bincount", "cov", "corrcoef", "quantile", "percentile", "median"]


# -- histogram, bincount -------------------------------------------------------------
def _real(name, x, what="x", *, integral=False, ragged=True):
    """``x``: a DistArray of real numbers (integers with ``integral``), no
    missing values; ragged data counts its values."""
    arguments.array(name, x, what)
    info = x.parts.info
    kinds = "iub" if integral else "iuf"
    ok = (info.numeric and not info.optional and not info.boxed and
          (ragged or not info.ragged) and np.dtype(info.numpy_dtype).kind in kinds)
    if not ok:
        need = "integers (or bools)" if integral else "real numbers (integers or floats)"
        raise TypeError(f"{name}: {what} must hold {need} without missing values, not "
                        f"{arguments.type_of(x)}")
    return x


def _weights(name, x, weights):
    """``weights``: None, or a DistArray of real numbers distributed as ``x``."""
    if weights is None:
        return None
    _real(name, weights, "weights")
    if weights.distribution != x.distribution or weights.parts.info.ragged != x.parts.info.ragged:
        raise ValueError(f"{name}: weights must have x's shape and distribution: "
                         f"{arguments.type_of(weights)} against {arguments.type_of(x)}")
    return weights


def _bins(name, bins):
    """('count', n) or ('edges', a float array): NumPy's two kinds of ``bins``
    that need no global pass over the data (a rule's name, 'auto' or 'fd',
    does)."""
    if isinstance(bins, str):
        raise TypeError(f"{name}: bins={bins!r} chooses the bins from all the data; give "
                        "their number or their edges")
    if np.ndim(bins) == 0:
        return "count", arguments.integer(name, "bins", bins, low=1)
    try:
        edges = np.asarray(bins, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: bins must be an int or a 1-D sequence of edges, "
                        f"got {arguments._shown(bins)}") from None
    if edges.ndim != 1 or len(edges) < 2:
        raise ValueError(f"{name}: bins must be an int or 1-D edges (at least two), "
                         f"got shape {edges.shape}")
    if not np.all(np.isfinite(edges)) or np.any(np.diff(edges) < 0):
        raise ValueError(f"{name}: bins must increase monotonically and be finite, "
                         f"got {arguments._shown(bins)}")
    return "edges", edges


def _range(name, value):
    if value is None:
        return None
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise TypeError(f"{name}: range must be None or (min, max), got "
                        f"{arguments._shown(value)}") from None
    lo, hi = arguments.real(name, "range's min", lo), arguments.real(name, "range's max", hi)
    if lo > hi:
        raise ValueError(f"{name}: range's max must be >= its min, got ({lo}, {hi})")
    return lo, hi


@collective
def histogram(a, bins=10, range=None, density=None, weights=None):   # noqa: A002
    """NumPy's ``np.histogram`` of all of ``a``'s values (flattened; ragged
    data's values): ``(counts, edges)``, NumPy arrays on every rank, equal
    to NumPy's on the global array. ``bins``: their number (spread evenly
    over ``range``, or over the data's extremes: one more allreduce) or
    their edges; ``weights``: a DistArray distributed as ``a``;
    ``density``: counts / (total * bin width). Collective: one
    ``Allreduce`` of the counts; no value moves.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(10.0), comm=MPI.COMM_SELF)
    >>> xdap.histogram(a, bins=[0, 5, 10], weights=a)[0].tolist()
    [10.0, 35.0]
    """
    _real("histogram", a, "a")
    kind, spec = _bins("histogram", bins)
    rng = _range("histogram", range)
    density = None if density is None else arguments.flag("histogram", "density", density)
    weights = _weights("histogram", a, weights)
    yield dict(a=a, bins=(kind, spec), range=rng, density=density, weights=weights)
    comm = a.distribution.comm
    v, _ = counted_values(a.distribution, a.parts)
    w = None if weights is None else counted_values(weights.distribution, weights.parts)[0]
    if kind == "count" and rng is None:
        lo, hi = extremes(comm, v)
        n = int(allreduce(comm, np.array([len(v)], np.int64), "sum")[0])
        if n == 0:
            rng = (0.0, 1.0)                       # NumPy's range of no data
        elif not (np.isfinite(lo) and np.isfinite(hi)):
            raise agreed_on(comm, ValueError(
                f"histogram: autodetected range of [{lo}, {hi}] is not finite"))
        else:
            rng = (lo, hi)      # the global extremes, as NumPy takes them from the whole array
    counts, edges = np.histogram(v, bins=spec, range=rng if kind == "count" else None, weights=w)
    counts = allreduce(comm, counts, "sum")
    if density:
        with np.errstate(divide="ignore", invalid="ignore"):
            return counts / np.diff(edges) / counts.sum(), edges
    return counts, edges


@collective
def bincount(x, /, weights=None, minlength=0):
    """NumPy's ``np.bincount`` of a 1-D DistArray of non-negative integers:
    the count (or the sum of ``weights``) of each value 0..max(x), a NumPy
    array on every rank of length ``max(max(x) + 1, minlength)``.
    Collective: one ``Allreduce`` of the largest value, one of the counts
    (with each rank's verdict on negative values); a negative value is one
    ``ValueError`` on every rank. Memory O(max(x)) a
    rank.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.bincount(xdap.from_global(np.array([0, 3, 3]), comm=MPI.COMM_SELF), minlength=6)
    array([1, 0, 0, 2, 0, 0])
    """
    _real("bincount", x, integral=True, ragged=False)
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-D, not {arguments.type_of(x)}")
    weights = _weights("bincount", x, weights)
    minlength = arguments.integer("bincount", "minlength", minlength, low=0)
    yield dict(x=x, weights=weights, minlength=minlength)
    comm = x.distribution.comm
    v, _ = counted_values(x.distribution, x.parts)
    v = v.astype(np.int64, copy=False) if v.dtype.kind == "b" else v
    # one pass for the largest value; a negative one shows in NumPy's bincount
    floor = np.iinfo(v.dtype).min
    hi = allreduce(comm, np.array([v.max() if len(v) else floor], v.dtype), "max")[0]
    if hi >= 2**62:
        raise agreed_on(comm, ValueError(f"bincount: x's largest value {hi} would need "
                                         "that many counts"))
    length = max(int(hi) + 1 if hi > floor else 0, minlength)
    w = None if weights is None else counted_values(weights.distribution, weights.parts)[0]
    try:
        counts = np.bincount(v.astype(np.intp, copy=False), weights=w, minlength=length)
        negative = 0
    except ValueError:                  # "'list' argument must have no negative elements"
        counts, negative = np.zeros(length, np.intp if w is None else np.float64), 1
    # NumPy's dtype, whatever this rank holds (its bincount of no values is intp), and
    # this rank's verdict on negative values in the same Allreduce
    counts = np.append(counts.astype(np.intp if w is None else np.float64, copy=False),
                       negative)
    counts = allreduce(comm, counts, "sum")
    if counts[-1]:
        lo = allreduce(comm, np.array([v.min() if len(v) else 0], v.dtype), "min")[0]
        raise agreed_on(comm, ValueError(f"bincount: x must hold no negative values; its "
                                         f"smallest is {lo}"))
    return counts[:-1]


# -- cov, corrcoef -------------------------------------------------------------------
def _variables(name, m, what, rowvar):
    """``m`` checked: a 1-D or 2-D DistArray of numbers (variables along
    axis 0 when ``rowvar``)."""
    arguments.numeric(name, m, what)
    if m.ndim not in (1, 2):
        raise ValueError(f"{name}: {what} must be 1-D or 2-D, not {arguments.type_of(m)}")
    return m


def _observations(name, m, y, rowvar):
    """The number of observations, checking that ``y`` has as many."""
    def count(a):
        return a.shape[-1] if a.ndim == 1 or rowvar else a.shape[0]
    if y is not None and count(y) != count(m):
        raise ValueError(f"{name}: m and y must have as many observations: "
                         f"{count(m)} and {count(y)}")
    return count(m)


def _cov_args(name, m, what, y, rowvar, dtype):
    """The checks cov and corrcoef share: ``(rowvar, observations, dtype)``."""
    _variables(name, m, what, rowvar)
    rowvar = arguments.flag(name, "rowvar", rowvar)
    if y is not None:
        _variables(name, y, "y", rowvar)
        arguments.same_comm(name, [m, y])
    n = _observations(name, m, y, rowvar)
    dtype = arguments.dtype(name, dtype)
    if dtype is not None and dtype.kind not in "fc":
        raise TypeError(f"{name}: dtype must be a floating or complex dtype, got {dtype}")
    return rowvar, n, dtype


def _obs_weights(name, what, w, n, integral):
    """``fweights``/``aweights``: None or a 1-D DistArray of n real
    numbers (integers for frequencies)."""
    if w is None:
        return None
    _real(name, w, what, integral=integral, ragged=False)
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"{name}: {what} must be 1-D with one weight per observation ({n}), "
                         f"not {arguments.type_of(w)}")
    return w


def _by_observation(a, rowvar, n):
    """This rank's block of ``a`` as (observations, variables): every
    variable, the observations of a block over all ranks -- the layout every
    operand is brought to (one redistribution unless it is so; a view of
    the partition when it is)."""
    comm = a.distribution.comm
    if a.ndim == 1:
        return values_on(a, make_distribution((n,), ("b",), comm=comm))[:, None]
    if rowvar:
        return values_on(a, make_distribution(a.shape, ("n", "b"), comm=comm)).T
    return values_on(a, make_distribution(a.shape, ("b", "n"), comm=comm))


@collective
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """NumPy's ``np.cov``: the covariance matrix of the variables of ``m``
    (rows when ``rowvar``, else columns; a 1-D ``m`` is one variable), and
    of ``y``'s after them -- a NumPy array on every rank, equal to NumPy's
    on the global arrays (to rounding). ``ddof`` (default ``0`` with
    ``bias``, else ``1``), ``fweights`` (integer frequencies) and
    ``aweights`` are 1-D DistArrays over the observations.

    Collective: the observations are summed where they lie -- one
    ``Allreduce`` of the k means, one of the k x k products (two passes, as
    NumPy: stable). Operands whose variables are split over ranks, or
    whose observations are not in plain blocks, are redistributed to that
    layout first (one exchange each).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> x = xdap.from_global(np.array([0.0, 1.0, 2.0]), comm=MPI.COMM_SELF)
    >>> float(xdap.cov(x, bias=True))
    0.6666666666666666
    """
    rowvar, n, dtype = _cov_args("cov", m, "m", y, rowvar, dtype)
    bias = arguments.flag("cov", "bias", bias)
    ddof = None if ddof is None else arguments.integer("cov", "ddof", ddof)
    fweights = _obs_weights("cov", "fweights", fweights, n, True)
    aweights = _obs_weights("cov", "aweights", aweights, n, False)
    arguments.same_comm("cov", [m, y, fweights, aweights])
    yield dict(m=m, y=y, rowvar=rowvar, bias=bias, ddof=ddof, fweights=fweights,
               aweights=aweights, dtype=dtype)
    return _covariance(m, y, rowvar, bias, ddof, fweights, aweights, dtype, n)


def _covariance(m, y, rowvar, bias, ddof, fweights, aweights, dtype, n):
    """NumPy's two-pass covariance, with the observations summed where they
    lie: X is (this rank's observations, variables), C = Xc^T conj(Xc)."""
    comm = m.distribution.comm
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64, *([] if y is None else [y.dtype]))
    x = _by_observation(m, rowvar, n).astype(dtype, copy=False)
    if y is not None:
        x = np.concatenate([x, _by_observation(y, rowvar, n).astype(dtype, copy=False)], axis=1)
    if ddof is None:
        ddof = 0 if bias else 1
    w = aw = None
    for what, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is None:
            continue
        mine = _by_observation(weights, True, n)[:, 0].astype(np.float64)
        if allreduce(comm, np.array([bool(mine.size) and bool(mine.min() < 0)]), "max")[0]:
            raise agreed_on(comm, ValueError(f"cov: {what} cannot be negative"))
        if what == "aweights":
            aw = mine
        w = mine if w is None else w * mine
    # variables in rows when that is how the memory lies (rowvar data), else columns:
    # each product below then reads memory in order
    rows = x.T if x.T.flags.c_contiguous and not x.flags.c_contiguous else None
    with np.errstate(divide="ignore", invalid="ignore"):
        if w is None:
            total = float(n)
            sums = rows.sum(axis=1) if rows is not None else np.ones(len(x), x.dtype) @ x
            avg = allreduce(comm, sums, "sum") / total
        else:
            sums = allreduce(comm, np.concatenate([[w.sum()], w @ x]), "sum")
            total = float(sums[0].real)
            avg = sums[1:] / total
        if w is None:
            fact = total - ddof
        elif ddof == 0:
            fact = total
        elif aweights is None:
            fact = total - ddof
        else:
            fact = total - ddof * float(allreduce(comm, np.array([(w * aw).sum()]), "sum")[0]) \
                / total
        if fact <= 0:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
            fact = 0.0
        if rows is not None:
            xc = rows - avg[:, None]
            xw = xc if w is None else xc * w
            c = xw @ (xc.conj() if np.iscomplexobj(xc) else xc).T
        else:
            xc = x - avg
            xw = xc if w is None else xc * w[:, None]
            c = xw.T @ (xc.conj() if np.iscomplexobj(xc) else xc)
        c = allreduce(comm, c, "sum") / fact
    return c.squeeze()


@collective
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """NumPy's ``np.corrcoef``: the correlation coefficients of ``x``'s
    variables (and ``y``'s), ``cov`` scaled by the standard deviations and
    clipped to [-1, 1] -- a NumPy array on every rank. Collective: as
    ``cov`` (two allreduces).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> x = xdap.from_global(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), comm=MPI.COMM_SELF)
    >>> xdap.corrcoef(x).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    rowvar, n, dtype = _cov_args("corrcoef", x, "x", y, rowvar, dtype)
    yield dict(x=x, y=y, rowvar=rowvar, dtype=dtype)
    c = _covariance(x, y, rowvar, False, None, None, None, dtype, n)
    if c.ndim == 0:
        return c / c
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.sqrt(np.diag(c).real)
        c = c / d[:, None] / d[None, :]
    np.clip(c.real, -1, 1, out=c.real)
    if np.iscomplexobj(c):
        np.clip(c.imag, -1, 1, out=c.imag)
    return c


# -- quantile, percentile, median ----------------------------------------------------
# NumPy's thirteen methods (Hyndman & Fan's nine, and NumPy's four classic ones).
# The continuous ones interpolate between two order statistics at the virtual
# index n*q + alpha + q*(1 - alpha - beta) - 1 (H&F's plotting positions):
CONTINUOUS = {"linear": (1.0, 1.0), "interpolated_inverted_cdf": (0.0, 1.0),
              "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
              "median_unbiased": (1 / 3, 1 / 3), "normal_unbiased": (3 / 8, 3 / 8)}
METHODS = tuple(CONTINUOUS) + ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
                               "lower", "higher", "midpoint", "nearest")


def _quantile_args(name, a, q, axis, out, overwrite_input, method, keepdims, scale,
                   weights=None):
    """The checks of quantile, percentile and median; ``q`` as fractions."""
    _real(name, a, "a")
    weights = _weights(name, a, weights)
    if q is None:
        q = np.float64(0.5)
    else:
        try:
            given = np.asarray(q)
        except Exception:
            given = np.asarray(None)
        if given.dtype.kind not in "iuf" or given.ndim > 1:
            raise TypeError(f"{name}: q must be a real number or a 1-D sequence of them, got "
                            f"{arguments._shown(q)}")
        q = np.true_divide(given.astype(np.float64), scale)    # as NumPy divides percentiles
        if not np.all((q >= 0) & (q <= 1)):
            what = "Percentiles must be in the range [0, 100]" if scale == 100 else \
                "Quantiles must be in the range [0, 1]"
            raise ValueError(f"{name}: {what}, got {arguments._shown(given.tolist())}")
    if out is not None:
        raise TypeError(f"{name}: out= is not supported on a DistArray (the result is new)")
    arguments.flag(name, "overwrite_input", overwrite_input)   # xdap never overwrites
    method = arguments.choice(name, "method", method, METHODS)
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"{name}: Only method 'inverted_cdf' supports weights. Got: {method}.")
    keepdims = arguments.flag(name, "keepdims", keepdims)
    if axis is not None:
        if a.parts.info.ragged:
            raise TypeError(f"{name}: axis= on ragged data; its quantiles are over all values "
                            "(axis=None)")
        axis = arguments.axis(name, a.ndim, axis)
    return q, axis, method, keepdims, weights


def positions(n: int, q, method: str):
    """Where NumPy's ``method`` finds the quantiles ``q`` (fractions, 1-D)
    of ``n`` sorted values: ``(lo, hi, t)`` -- the result is the value of
    order statistic ``lo`` moved ``t`` of the way to order statistic
    ``hi``, as NumPy computes it (``numpy.quantile``'s virtual indexes,
    clipped to the values as NumPy clips them). O(len(q)): no values.

    >>> lo, hi, t = positions(4, np.array([0.5]), "linear")
    >>> lo.tolist(), hi.tolist(), t.tolist()
    ([1], [2], [0.5])
    >>> [positions(4, np.array([0.5]), m)[0].tolist() for m in ("inverted_cdf", "lower")]
    [[1], [1]]
    """
    q = np.asarray(q, np.float64)
    last = n - 1
    if method in CONTINUOUS or method == "averaged_inverted_cdf":
        if method == "averaged_inverted_cdf":
            virtual = n * q - 1
        elif method == "linear":                 # NumPy's own rounding of this one
            virtual = (n - 1) * q
        else:
            alpha, beta = CONTINUOUS[method]
            virtual = n * q + (alpha + q * (1 - alpha - beta)) - 1
        lo = np.floor(virtual)
        t = virtual - lo
        if method == "averaged_inverted_cdf":          # between two: their mean
            t = np.where(t == 0, 0.5, 1.0)
        below, above = virtual < 0, virtual >= last
        lo = np.clip(lo, 0, last).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        lo = np.where(above, last, lo)
        hi = np.where(below, 0, np.where(above, last, hi))
        return lo, hi, np.where(below | above, 0.0, t)
    if method in ("inverted_cdf", "closest_observation"):
        virtual = n * q - (1.0 if method == "inverted_cdf" else 1.5)
        previous = np.floor(virtual)
        exact = virtual - previous == 0
        if method == "closest_observation":         # ties to the even (1-based) statistic
            exact &= previous % 2 == 1
        k = np.clip(np.where(exact, previous, previous + 1), 0, last).astype(np.int64)
        return k, k, np.zeros(len(q))
    virtual = last * q
    if method == "midpoint":
        lo = np.floor(virtual).astype(np.int64)
        return lo, np.ceil(virtual).astype(np.int64), np.where(virtual % 1 == 0, 0.0, 0.5)
    rule = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]
    k = rule(virtual).astype(np.int64)
    return k, k, np.zeros(len(q))


def _order_statistics(comm, v, n, q, method):
    """NumPy's quantiles ``q`` (fractions, 0-d or 1-D) of the ``n`` values
    that ``v`` holds over the ranks: the order statistics each needs, found
    by distributed selection, then NumPy's own arithmetic on just them (so
    interpolation, rounding and dtype are NumPy's)."""
    lo, hi, t = positions(n, np.atleast_1d(q), method)
    ks = np.unique(np.concatenate([lo, hi]))
    found = dict(zip(ks.tolist(), select(comm, v, ks)))
    # NumPy's result of two neighbours: its lerp (and its result dtype) for
    # the interpolating methods, the value itself (its dtype) for the others
    interpolating = method in CONTINUOUS or method in ("midpoint", "averaged_inverted_cdf")
    out = [np.quantile(np.array([found[int(i)], found[int(j)]], v.dtype), ti,
                       method="linear" if interpolating else method)
           for i, j, ti in zip(lo, hi, t)]
    return np.asarray(out) if np.ndim(q) else out[0]


def _check_weights(comm, name, w):
    """NumPy's verdicts on the weights' values, from one Allreduce of flags."""
    bad = np.array([bool(np.any(w < 0)), not np.all(np.isfinite(w))]) if w is not None \
        else np.zeros(2, bool)
    negative, nonfinite = allreduce(comm, bad, "max")
    if negative:
        raise agreed_on(comm, ValueError(f"{name}: Weights must be non-negative."))
    total = float(allreduce(comm, np.array([w.sum(dtype=np.float64)]), "sum")[0])
    if nonfinite or total == 0:
        raise agreed_on(comm, ValueError(f"{name}: Weights included NaN, inf or were all "
                                         "zero."))


def _quantiles(name, a, q, axis, method, keepdims, median=False, weights=None, nan=False):
    comm = a.distribution.comm
    if axis is not None and a.ndim > 1:
        return _quantiles_along(name, a, q, axis, method, keepdims, median, weights, nan)
    v, _ = counted_values(a.distribution, a.parts)
    w = None if weights is None else counted_values(weights.distribution, weights.parts)[0]
    if w is not None:
        _check_weights(comm, name, w)
    nans = bool(allreduce(comm, np.array([v.dtype.kind == "f" and bool(np.isnan(v).any())]),
                          "max")[0])
    n = int(allreduce(comm, np.array([len(v)], np.int64), "sum")[0])
    if n == 0:
        raise agreed_on(comm, ValueError(f"{name}: a holds no values"))
    if nans:                                     # NumPy's answer: NaN for every q
        dt = np.result_type(v.dtype, np.float64)
        result = np.full(np.shape(q), np.nan, dt) if np.ndim(q) else dt.type(np.nan)
    elif median:
        mid = [(n - 1) // 2, n // 2]
        result = np.median(select(comm, v, mid)[:1 if n % 2 else 2])
    elif w is not None:
        result = select(comm, v, np.atleast_1d(q), weights=w)
        result = result if np.ndim(q) else result[0]
    else:
        result = _order_statistics(comm, v, n, q, method)
    if keepdims:
        result = np.reshape(result, np.shape(q) + (1,) * a.ndim)
    return result


def _quantiles_along(name, a, q, axis, method, keepdims, median, weights=None, nan=False):
    """Along one axis of an array of 2 or more dims: that axis made whole
    on every rank (one redistribution; none when it is already), then
    NumPy's quantile of each rank's block -- a DistArray of the other dims
    (after q's), blocks of the first other one.  ``nan``: NumPy's
    ``nanquantile`` / ``nanmedian`` per rank (all-NaN slices: NaN, quietly)."""
    from .layouts import wrap
    comm = a.distribution.comm
    other = [k for k in range(a.ndim) if k != axis]
    dist = ["n"] * a.ndim
    dist[other[0]] = "b"
    whole = make_distribution(a.shape, tuple(dist), comm=comm)
    values = values_on(a, whole)
    shape = tuple(np.shape(q)) + tuple(1 if k == axis else a.shape[k] for k in range(a.ndim)
                                       if keepdims or k != axis)
    first = len(np.shape(q)) + (other[0] if keepdims else 0)
    out_dist = ["n"] * len(shape)
    out_dist[first] = "b"
    out = make_distribution(shape, tuple(out_dist), comm=comm)
    empty = values.shape[other[0]] == 0
    if empty:
        # a rank with no slices: NumPy's nanquantile of an empty block loses
        # its shape (it answers nanmean's), so NumPy answers one slice of
        # zeros and the result keeps none of it -- its dtype is NumPy's
        values = np.zeros(values.shape[:other[0]] + (1,) + values.shape[other[0] + 1:],
                          values.dtype)
    if nan:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            local = np.nanmedian(values, axis=axis, keepdims=keepdims) if median else \
                np.nanquantile(values, q, axis=axis, method=method, keepdims=keepdims)
    elif median:
        local = np.median(values, axis=axis, keepdims=keepdims)
    elif weights is not None:
        w = values_on(weights, whole)
        _check_weights(comm, name, w)
        if empty:
            w = np.ones(values.shape, w.dtype)
        local = np.quantile(values, q, axis=axis, method=method, keepdims=keepdims, weights=w) \
            if values.size else np.quantile(values, q, axis=axis, method=method,
                                            keepdims=keepdims)
    else:
        local = np.quantile(values, q, axis=axis, method=method, keepdims=keepdims)
    if empty:
        local = np.take(local, [], axis=first)
    return wrap(a, out, local)


@collective
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    """NumPy's ``np.quantile``: the ``q``-th quantiles (fractions in [0, 1],
    a number or a 1-D sequence) of all of ``a``'s values -- a NumPy scalar or
    array on every rank, equal to NumPy's on the global array -- or along
    ``axis`` (a DistArray of the other dims, ``q``'s dims first).
    ``method``: any of NumPy's thirteen (``linear``, its default; H&F's
    ``inverted_cdf`` ... ``normal_unbiased``; ``lower``, ``higher``,
    ``midpoint``, ``nearest``), each NumPy's arithmetic to the last bit.
    ``weights`` (a DistArray distributed as ``a``, >= 0): NumPy's weighted
    ``inverted_cdf``, the only method NumPy weighs. NaN in the data gives
    NaN, as NumPy.

    Collective. Over all values nothing moves: a distributed selection
    (``xdap.movement.select``: a few histogram rounds, one ``Allreduce`` of
    256 counts -- and weights -- each, then one small ``Allgatherv``) finds
    just the order statistics the quantiles need. Along an axis: one
    redistribution that makes the axis whole, then NumPy per rank.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.array([7.0, 1.0, 3.0, 5.0]), comm=MPI.COMM_SELF)
    >>> xdap.quantile(a, [0.25, 0.5]).tolist(), float(np.quantile(a, 1.0))
    ([2.5, 4.0], 7.0)
    """
    q, axis, method, keepdims, weights = _quantile_args(
        "quantile", a, q, axis, out, overwrite_input, method, keepdims, 1, weights)
    yield dict(a=a, q=q, axis=axis, out=None, overwrite_input=False, method=method,
               keepdims=keepdims, weights=weights)
    return _quantiles("quantile", a, q, axis, method, keepdims, weights=weights)


@collective
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    """NumPy's ``np.percentile``: ``quantile`` with ``q`` in percent
    ([0, 100]); the same selection, the same result.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> float(xdap.percentile(xdap.from_global(np.arange(101.0), comm=MPI.COMM_SELF), 90))
    90.0
    """
    q, axis, method, keepdims, weights = _quantile_args(
        "percentile", a, q, axis, out, overwrite_input, method, keepdims, 100, weights)
    yield dict(a=a, q=q, axis=axis, out=None, overwrite_input=False, method=method,
               keepdims=keepdims, weights=weights)
    return _quantiles("percentile", a, q, axis, method, keepdims, weights=weights)


@collective
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's ``np.median``: the middle value (the mean of the two middle
    ones for an even count) -- NumPy's arithmetic on the one or two order
    statistics the distributed selection finds; along ``axis`` as
    ``quantile``.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> float(xdap.median(xdap.from_global(np.array([4, 1, 3, 2]), comm=MPI.COMM_SELF)))
    2.5
    """
    _, axis, _, keepdims, _ = _quantile_args("median", a, None, axis, out, overwrite_input,
                                             "linear", keepdims, 1)
    yield dict(a=a, axis=axis, out=None, overwrite_input=False, keepdims=keepdims)
    return _quantiles("median", a, np.float64(0.5), axis, "linear", keepdims, median=True)


# NumPy's functions these implement, for DistArray.__array_function__
NUMPY_FUNCTIONS = {np.histogram: histogram, np.bincount: bincount, np.cov: cov,
                   np.corrcoef: corrcoef, np.quantile: quantile, np.percentile: percentile,
                   np.median: median}
