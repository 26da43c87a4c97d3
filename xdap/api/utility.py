"""Utility functions: ``diff`` (``all`` and ``any`` are the reductions of
``xdap.api.statistical``, under the standard's flavour in
``xdap.array_api``).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> xdap.diff(xdap.from_global(np.array([1, 4, 9]), comm=MPI.COMM_SELF)).to_numpy().tolist()
[3, 5]
"""
from __future__ import annotations

import numpy as np

from .. import arguments
from ..arraylike import is_distributed
from ..contract import collective
from ..distribution import Distribution
from ..maps import BlockMap
from .layouts import from_every_rank, moved, wrap

__all__ = ["diff"]


@collective
def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th differences along ``axis`` (NumPy's ``diff``), with
    ``prepend``/``append`` joined first (``concat``).  Local along an
    undistributed axis; along a distributed one ``x[1:] - x[:-1]`` with the
    first slice moved onto the second's distribution (along a block dim,
    one slab per rank: one exchange per order).  Collective.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.diff(xdap.from_global(np.array([1, 4, 9]), comm=MPI.COMM_SELF)).to_numpy().tolist()
    [3, 5]
    """
    arguments.numeric("diff", x)
    if x.ndim == 0:
        raise ValueError("diff: a 0-d array has no axis")
    axis = arguments.axis("diff", x.ndim, axis)
    n = arguments.integer("diff", "n", n, low=0)
    ends = []
    for what, e in (("prepend", prepend), ("append", append)):
        if e is None:
            ends.append(None)
            continue
        if is_distributed(e):
            arguments.numeric("diff", e, what)
            arguments.same_comm("diff", (x, e))
            ok = e.ndim == x.ndim and all(a == b for j, (a, b) in enumerate(zip(e.shape, x.shape))
                                          if j != axis)
            if not ok:
                raise ValueError(f"diff: {what} of shape {e.shape} does not join x of shape "
                                 f"{x.shape} along axis {axis}")
            ends.append(e)
        else:
            v = np.asarray(e)
            if v.dtype.kind not in "biufc":
                raise TypeError(f"diff: {what} holds {v.dtype} values, not numbers")
            shape = list(x.shape)
            shape[axis] = 1 if v.ndim == 0 else v.shape[axis] if v.ndim == x.ndim else -1
            try:
                v = np.broadcast_to(v, shape)
            except ValueError:
                raise ValueError(f"diff: {what} of shape {v.shape} does not join x of shape "
                                 f"{x.shape} along axis {axis}") from None
            ends.append(np.ascontiguousarray(v))
    yield dict(x=x, axis=axis, n=n, prepend=ends[0], append=ends[1])
    if ends[0] is not None or ends[1] is not None:
        from .manipulation import _concat
        parts = [e if is_distributed(e) or e is None else
                 x.__xdap_wrap__(*from_every_rank(x, e), False, True) for e in ends]
        x = _concat([a for a in (parts[0], x, parts[1]) if a is not None], axis)
    if n == 0:
        return x
    d = x.distribution
    if not d.maps[axis].whole:
        # x[1:] - x[:-1], the first moved onto the second's blocks: along a
        # block dim each rank receives only the slab after its own
        from .elementwise import subtract
        from .indexing import getitem
        head = (slice(None),) * axis
        for _ in range(n):
            lo = getitem(x, head + (slice(None, -1),))
            hi = moved(getitem(x, head + (slice(1, None),)), lo.distribution)
            x = subtract(hi, lo)
        return x
    values = np.diff(x.parts.values, n=n, axis=axis)
    maps = list(d.maps)
    maps[axis] = BlockMap(values.shape[axis], 1)
    return wrap(x, Distribution(maps, x.comm, d.rank_coords), values)
