"""MPI through mpi4py: the only module that imports it.

For now this holds the collective building blocks every entry point uses:
resolving a communicator and *collective validation* -- each rank checks its
part, the verdicts are combined in one allgather, and either every rank
proceeds or every rank raises the same error.

>>> from mpi4py import MPI
>>> with collective_checks(MPI.COMM_SELF):
...     pass                       # no error on any rank: proceed
"""
from __future__ import annotations

import contextlib
import math

from mpi4py import MPI

__all__ = ["MPI", "resolve", "agree", "collective_checks",
           "balanced_grid"]


def resolve(comm):
    """``None`` -> ``MPI.COMM_WORLD``; any mpi4py intracommunicator as is."""
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm must be an mpi4py intracommunicator or None, got {type(comm).__name__}")
    return comm


def agree(comm, error: BaseException | None) -> None:
    """Combine every rank's verdict; raise the same error everywhere if any failed.

    Every rank raises the lowest failing rank's error: a TypeError if that
    was a TypeError, else a ValueError, with the same message on all ranks,
    ending in the rank it came from.
    """
    verdict = None
    if error is not None:
        verdict = (type(error).__name__, isinstance(error, TypeError), str(error))
    verdicts = comm.allgather(verdict)
    for rank, v in enumerate(verdicts):
        if v is not None:
            _, is_type_error, message = v
            cls = TypeError if is_type_error else ValueError
            raise cls(f"{message} (rank {rank})") from error


@contextlib.contextmanager
def collective_checks(comm):
    """Run a block of local checks; afterwards all ranks agree (see ``agree``).

    Only ValueError and TypeError count as verdicts; anything else is a bug
    and propagates (after telling the other ranks, so they do not hang).
    """
    error = None
    try:
        yield
    except (ValueError, TypeError) as e:
        error = e
    except BaseException as e:
        agree(comm, ValueError(f"internal error on rank {comm.rank}: {type(e).__name__}: {e}"))
        raise
    agree(comm, error)


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
