"""Set functions: the ``unique_*`` family -- a distributed sort of the
values, each rank dropping its repeats (``xdap.movement.sort``).  All
collective.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> v, c = xdap.unique_counts(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
>>> v.to_numpy().tolist(), c.to_numpy().tolist()
([1, 3], [1, 2])
"""
from __future__ import annotations

import collections

import numpy as np

from .. import arguments
from ..contract import collective
from ..parts import Parts
from .layouts import one_copy, scalar_array

__all__ = ["unique_values", "unique_counts", "unique_inverse", "unique_all",
           "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult"]

# The Array API's (and NumPy's) result tuples: fields by name or position.
UniqueAllResult = collections.namedtuple("UniqueAllResult",
                                         "values indices inverse_indices counts")
UniqueCountsResult = collections.namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = collections.namedtuple("UniqueInverseResult", "values inverse_indices")


def _unique(x, counts=False):
    from ..movement.sort import unique_parts
    out = unique_parts(x.distribution, x.parts, counts=counts)
    return tuple(x.__xdap_wrap__(out[0], q, False, True) for q in out[1:])


@collective
def unique_values(x, /):
    """The sorted unique values of ``x`` as a 1-D array (the Array API's
    ``unique_values``; NumPy's ``np.unique``: NaNs count as one).
    Collective: a distributed sort and a few small allgathers; the result
    is an irregular block.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.unique_values(xdap.from_global(np.array([3, 1, 3, 1]), comm=MPI.COMM_SELF)).to_numpy()
    array([1, 3])
    """
    arguments.numeric("unique_values", x)
    yield dict(x=x)
    return _unique(x)[0]


@collective
def unique_counts(x, /):
    """``(values, counts)`` (the Array API's ``unique_counts``): the sorted
    unique values and how often each occurs, the counts distributed as the
    values. ``unique_values``' sample sort, each rank counting its runs and
    adding the counts of a value continued on the ranks after it (one more
    allgather of P numbers)."""
    arguments.numeric("unique_counts", x)
    yield dict(x=x)
    return UniqueCountsResult(*_unique(x, counts=True))


def _inverse(values, x):
    from .searching import searchsorted
    inverse = searchsorted(values, x)
    if not hasattr(type(inverse), "__xdap_wrap__"):
        inverse = scalar_array(x, np.int64(inverse))
    if x.dtype.kind == "c":
        # NaNs count as one, the last value: a complex NaN sorts by its parts
        # (R + nanj before nan + Rj), so searchsorted alone can land past it
        nan = np.isnan(x.parts.values)
        if nan.any():
            inverse.parts.values[nan] = values.shape[0] - 1
    return inverse


@collective
def unique_inverse(x, /):
    """``(values, inverse_indices)`` (the Array API's ``unique_inverse``):
    the sorted unique values, and for each element of ``x`` the index of its
    value among them -- shaped and distributed as ``x`` (a distributed
    ``searchsorted`` of every element: one exchange of queries, one of
    answers).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> v, inv = xdap.unique_inverse(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
    >>> v.to_numpy().tolist(), inv.to_numpy().tolist()
    ([1, 3], [1, 0, 1])
    """
    arguments.numeric("unique_inverse", x)
    yield dict(x=x)
    values = _unique(x)[0]
    return UniqueInverseResult(values, _inverse(values, x))


@collective
def unique_all(x, /):
    """``(values, indices, inverse_indices, counts)`` (the Array API's
    ``unique_all``): the sorted unique values; the index of each one's first
    occurrence in ``x`` flattened in C order; for each element of ``x`` the
    index of its value (shaped and distributed as ``x``); the counts.
    ``indices`` and ``counts`` are distributed as ``values``: the counts
    ``unique_counts``', the first indices each element's flat index sent to
    its value's owner, the smallest kept (one ``Scatter``, reverse "min").

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> v, i, inv, c = xdap.unique_all(xdap.from_global(np.array([3, 1, 3]), comm=MPI.COMM_SELF))
    >>> i.to_numpy().tolist(), inv.to_numpy().tolist(), c.to_numpy().tolist()
    ([1, 0], [1, 0, 1], [1, 2])
    """
    arguments.numeric("unique_all", x)
    yield dict(x=x)
    from ..movement.scatter import Scatter
    x = one_copy(x)                             # copies held twice: each element once
    d = x.distribution
    values, counts = _unique(x, counts=True)
    inverse = _inverse(values, x)
    own = tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))
    where = np.asarray(inverse.parts.values)[own].reshape(-1) if d.maps else \
        np.asarray(inverse.parts.values).reshape(-1)[:int(x.comm.rank == 0)]   # 0-d: once
    # each element's C-order index to its value's owner, the smallest kept
    grids = np.meshgrid(*[np.asarray(m.global_indices(c))[s]
                          for m, c, s in zip(d.maps, d.coords, own)], indexing="ij")
    flat = np.ravel_multi_index(tuple(g.reshape(-1) for g in grids), d.global_shape) \
        if d.maps else np.zeros(len(where), np.int64)
    block = np.full(values.parts.values.shape, np.iinfo(np.int64).max, np.int64)
    first = values.__xdap_wrap__(values.distribution, Parts.of_array(block), False, True)
    Scatter(values, where).reverse(np.asarray(flat, np.int64), into=first, mode="min")
    return UniqueAllResult(values, first, inverse, counts)
