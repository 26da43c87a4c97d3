"""MPI through mpi4py: which communicator, and the grid over it.

``resolve`` turns ``comm=None`` into ``MPI.COMM_WORLD``; ``comm_of`` finds
the communicator a collective agrees on; ``balanced_grid`` factors a
communicator over the distributed dimensions.  The agreement every
collective makes is ``xdap.agreement``; DistDL's partitions are
``xdap.partitions``; what is kept on a communicator, ``xdap.plans``.

>>> from mpi4py import MPI
>>> resolve(None) is MPI.COMM_WORLD, balanced_grid(6, 2)
(True, (3, 2))
"""
from __future__ import annotations

import math

from mpi4py import MPI

from .arraylike import is_distributed

__all__ = ["MPI", "resolve", "comm_of", "balanced_grid"]


def resolve(comm):
    """``None`` -> ``MPI.COMM_WORLD``; any mpi4py intracommunicator as is."""
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm must be an mpi4py intracommunicator or None, got {type(comm).__name__}")
    return comm


def comm_of(*objects, default=None):
    """The communicator of the first of ``objects`` that has one (a
    DistArray's, a Distribution's), else ``resolve(default)``: where a
    collective agrees -- including that an argument of the wrong kind, a
    NumPy array on one rank, is one error on every rank.

    >>> import numpy as np
    >>> comm_of(np.zeros(3), None) is MPI.COMM_WORLD
    True
    """
    for x in objects:
        comm = x.distribution.comm if is_distributed(x) else getattr(x, "comm", None)
        if isinstance(comm, MPI.Intracomm):
            return comm
    return resolve(default)


def balanced_grid(nprocs: int, ndims: int) -> tuple:
    """A balanced factorisation of nprocs over ndims axes (MPI_Dims_create).

    >>> balanced_grid(12, 2)
    (4, 3)
    """
    if ndims == 0:
        if nprocs != 1:
            raise ValueError(f"no distributed dimension to spread {nprocs} processes over")
        return ()
    dims = tuple(MPI.Compute_dims(nprocs, ndims))
    assert math.prod(dims) == nprocs
    return dims
