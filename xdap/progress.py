"""Progress bars for long collective work: save, load, migrate, the demo.

Rank 0 shows one (tqdm) when its standard output is a terminal and no MPI
launcher started it; every other rank, and rank 0 writing to a file or a
pipe (a batch job's log), gets a bar that does nothing. Under ``mpiexec``
a rank cannot tell whether the user watches a terminal (MPICH gives it a
pipe, Open MPI a pseudo-terminal even for a batch log), so there bars are
off unless asked for. ``XDAP_PROGRESS=0`` turns bars off, ``=1``
forces them on (to stderr, as tqdm writes). A bar counts this rank's
(rank 0's) own share of the work: no communication is spent on it.

>>> from mpi4py import MPI
>>> with bar(MPI.COMM_SELF, 3, "steps") as b:     # not a terminal here: silent
...     b.update(3)
"""
from __future__ import annotations

import os
import sys

__all__ = ["bar", "ENV"]

ENV = "XDAP_PROGRESS"


class _Silent:
    def update(self, n=1) -> None:
        pass

    def set_description(self, text) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# Set in every rank a launcher starts. Under a launcher, a rank's stdout
# says nothing about the user's terminal: MPICH's hydra hands it a pipe,
# Open MPI's a pseudo-terminal of its own even when writing to a file.
_LAUNCHED = ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")


def _wanted(comm) -> bool:
    setting = os.environ.get(ENV, "").strip()
    if setting == "0" or comm.rank != 0:
        return False
    if setting == "1":
        return True
    if any(k in os.environ for k in _LAUNCHED):
        return False                            # under mpiexec: ask with XDAP_PROGRESS=1
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):       # replaced or closed stdout
        return False


def bar(comm, total, what: str, unit: str = "it", scale: bool = False):
    """A context manager with ``update(n)``: a tqdm bar on rank 0 of
    ``comm`` when wanted (see the module docstring), else a silent one.
    ``scale``: show ``unit`` with SI prefixes (bytes)."""
    if not _wanted(comm):
        return _Silent()
    from tqdm import tqdm
    return tqdm(total=total, desc=f"xdap {what}", unit=unit, unit_scale=scale,
                unit_divisor=1024 if scale else 1000, leave=False, dynamic_ncols=True)
