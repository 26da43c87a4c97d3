"""Printing from every rank, in rank order: ``xdap.print`` and ``a.show()``.

A plain ``print`` on 4 ranks interleaves the lines as the ranks happen to
run. ``xdap.print(...)`` is collective: every rank formats its own line,
rank 0 receives them (one ``gather`` of short strings -- text for people,
not data) and prints them under their rank numbers, in order.

>>> from mpi4py import MPI
>>> rank_print("partition", 3, comm=MPI.COMM_SELF)
[rank 0] partition 3
"""
from __future__ import annotations

import sys

from . import comm as _comm

__all__ = ["rank_print", "show"]


def rank_print(*objects, comm=None, sep: str = " ", end: str = "\n", file=None,
               root: int = 0) -> None:
    """Print ``objects`` from every rank of ``comm``, rank by rank, on
    ``root`` (collective). Each rank's text is prefixed with ``[rank r]``;
    a text of several lines keeps its lines together."""
    comm = _comm.resolve(comm)
    text = sep.join(str(o) for o in objects)
    texts = comm.gather(text, root=root)
    if comm.rank == root:
        out = file if file is not None else sys.stdout
        for r, t in enumerate(texts):
            lines = t.split("\n")
            pad = " " * len(f"[rank {r}] ")
            out.write(f"[rank {r}] " + lines[0] + "".join("\n" + pad + x for x in lines[1:])
                      + end)
        out.flush()


def show(a, file=None, root: int = 0) -> None:
    """Print the array ``a`` rank by rank (collective): its one-line
    description, then each rank's partition under its rank number."""
    if a.comm.rank == root:
        out = file if file is not None else sys.stdout
        desc = repr(a)
        out.write(desc[:desc.index(", rank ")] + ")\n")
    share = "x".join(str(n) for n in a.distribution.local_shape) or "1"
    rank_print(f"{share}: {a.local.value}", comm=a.comm, file=file, root=root)
