"""Creating distributed data: ``(Distribution, Parts)`` pairs from user data.

``from_global`` distributes a whole array that every rank holds, or that
one root rank holds (a root scatter).  The surface (``xdap.from_global``)
wraps the pair into a DistArray.

>>> import numpy as np
>>> from mpi4py import MPI
>>> d, p = from_global(np.arange(6.0), dist=("c",), comm=MPI.COMM_SELF)
>>> d.maps[0].dist_type, p.values.tolist()
('c', [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
"""
from __future__ import annotations

import numpy as np

from . import comm as _comm
from .distribution import make_distribution
from .movement.gather import scatter_from_root
from .parts import Parts, as_container, check_ragged_rows, pack_validity, parts, take_rows

__all__ = ["from_global"]


def from_global(data, dist=None, grid=None, comm=None, *, root=None, type=None, dtype=None,
                **per_dim) -> tuple:
    """``(Distribution, Parts)`` of a whole array (collective); the arguments
    are ``xdap.from_global``'s."""
    comm = _comm.resolve(comm)
    p = None
    # One collective: the verdicts, the arguments that must agree, and the
    # type and shape of the data (from every rank, or from the root).
    with _comm.agreement(comm, "from_global", share=True) as ag:
        ag.same("root", root)
        ag.same("dist, grid and the per-dimension options", (dist, grid, per_dim))
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
    index = np.ix_(*[d.global_indices(k) for k in range(d.ndim)])
    values = np.ascontiguousarray(p.values[index])
    mask = p.valid_mask()
    return d, Parts(info.with_shape(values.shape), values,
                    None if mask is None else pack_validity(mask[index]))
