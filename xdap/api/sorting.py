"""Sorting functions: ``sort`` and ``argsort``.

Along an undistributed axis every rank sorts its own rows (no data
moves); along the distributed axis of a 1-D array a distributed sample
sort (``xdap.movement.sort``: one exchange of the data); along a
distributed axis of an N-d array the axis is made whole first (one
exchange).  Both are collective: the axis and the flags are agreed
first, so the path every rank takes is the same.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([3, 1, 2]), comm=MPI.COMM_SELF)
>>> xdap.sort(a).to_numpy().tolist(), xdap.argsort(a, descending=True).to_numpy().tolist()
([1, 2, 3], [0, 2, 1])
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..contract import collective
from ..movement.sort import stable_argsort
from ..parts import Parts

__all__ = ["sort", "argsort"]


def _sort_args(name, x, axis, descending, stable):
    arguments.numeric(name, x)
    if x.ndim == 0:
        raise ValueError(f"{name}: a 0-d array has no axis to sort along")
    return (arguments.axis(name, x.ndim, axis), arguments.flag(name, "descending", descending),
            arguments.flag(name, "stable", stable))


@collective
def sort(x, /, *, axis=-1, descending=False, stable=True):
    """The sorted array (the Array API's ``sort``; NumPy's ``np.sort``).

    Along an undistributed axis: local work, the same distribution.  Along
    the distributed axis of a 1-D array: a distributed sample sort, the
    result an irregular block -- rank r holds the r-th slice of the sorted
    values.  NaN sorts last; ``descending`` reverses (a view, no data
    moved); ``stable`` is always honoured.  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.sort(xdap.from_global(np.array([3, 1, 2]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 2, 3])
    """
    axis, descending, stable = _sort_args("sort", x, axis, descending, stable)
    yield dict(x=x, axis=axis, descending=descending, stable=stable)
    return _sorted(x, axis, descending, False)


@collective
def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The global indices along ``axis`` that sort ``x`` (int64; equal
    values in index order, as NumPy's stable ``argsort``), distributed as
    ``sort(x)`` is.  Collective (see ``sort``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.argsort(xdap.from_global(np.array([3, 1, 2]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 2, 0])
    """
    axis, descending, stable = _sort_args("argsort", x, axis, descending, stable)
    yield dict(x=x, axis=axis, descending=descending, stable=stable)
    return _sorted(x, axis, descending, True)


def _sorted(x, axis, descending, want_indices):
    from .layouts import axis_whole
    d, p = x.distribution, x.parts
    info = p.info
    if d.maps[axis].whole:
        v = p.values            # numeric, no missing values (_sort_args)
        if not want_indices:
            # values alone: NumPy's own sort (equal values are alike, so any
            # kind is stable); descending is its reverse
            out = np.sort(v, axis=axis)
            out = np.ascontiguousarray(np.flip(out, axis) if descending else out)
            return x.__xdap_wrap__(d, Parts(info.with_shape(out.shape), out), False, True)
        if descending:
            n = v.shape[axis]
            idx = n - 1 - np.flip(np.argsort(np.flip(v, axis), axis=axis, kind="stable"), axis)
        elif v.ndim == 1:                 # SIMD quicksort where no two values tie
            idx = stable_argsort(v)
        else:
            idx = np.argsort(v, axis=axis, kind="stable")
        return x.__xdap_wrap__(d, Parts.of_array(np.ascontiguousarray(idx)), False, True)
    if d.ndim > 1:             # make the axis whole, then every rank sorts its rows
        return _sorted(axis_whole(x, axis), axis, descending, want_indices)
    from ..movement.index import basic_index, normalize_key
    from ..movement.sort import sort_parts
    reverse = slice(None, None, -1)
    if descending:             # stable descending: sort the reversed array, reverse back
        d, p = basic_index(d, p, normalize_key(reverse, d.global_shape))
    out = sort_parts(d, p, indices=want_indices)
    rd, rp = out[0], out[-1] if want_indices else out[1]
    if want_indices and descending:
        rp = Parts.of_array(d.global_shape[0] - 1 - rp.values)
    if descending:
        rd, rp = basic_index(rd, rp, normalize_key(reverse, rd.global_shape))
    return x.__xdap_wrap__(rd, rp, False, True)
