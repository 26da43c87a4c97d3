"""The whole array on every rank (``to_global``): an allgather of every
rank's canonical part, assembled at its global positions.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> to_global(*from_global(np.arange(4.0), dist=("c",), comm=MPI.COMM_SELF)).values.tolist()
[0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ..parts import Parts, concat_parts, pack_validity, take_rows

__all__ = ["to_global"]


def to_global(d, p: Parts) -> Parts:
    """The global array's Parts on every rank (collective; copies).

    Owned values only: communication padding is not read; an index held by
    several ranks (unstructured, not one-to-one) is taken from the lowest
    rank holding it.
    """
    own = [d.owned_positions(k) for k in range(d.ndim)]
    gidx = [d.global_indices(k)[o] for k, o in zip(range(d.ndim), own)]
    if not p.info.ragged:
        values = p.values[np.ix_(*own)]
        mask = p.valid_mask()
        mask = None if mask is None else mask[np.ix_(*own)]
        pieces = d.comm.allgather((gidx, values, mask))
        out = np.zeros(d.global_shape, p.info.numpy_dtype)
        full_mask = np.zeros(d.global_shape, bool) if p.info.optional else None
        for g, v, m in reversed(pieces):      # lowest rank written last: it wins
            out[np.ix_(*g)] = v
            if full_mask is not None:
                full_mask[np.ix_(*g)] = m
        validity = None if full_mask is None else pack_validity(full_mask)
        return Parts(p.info.with_shape(out.shape), out, validity)
    mine = take_rows(p, own[0])
    pieces = d.comm.allgather((gidx[0], mine))
    rows = np.concatenate([g for g, _ in pieces])
    allp = concat_parts([q for _, q in pieces])
    # first occurrence of each global row (lowest rank) in global order
    uniq, first = np.unique(rows, return_index=True)
    return take_rows(allp, first[np.argsort(uniq)])
