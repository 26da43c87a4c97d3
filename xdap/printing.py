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
from .arguments import rank
from .contract import collective

__all__ = ["rank_print", "show", "partition_text"]


@collective(name="print", own=("objects", "file"))
def rank_print(*objects, comm=None, sep: str = " ", end: str = "\n", file=None,
               root: int = 0) -> None:
    """Print ``objects`` from every rank of ``comm``, rank by rank, on
    ``root`` (collective: the root and the separators are agreed; the
    objects are each rank's own). Each rank's text is prefixed with
    ``[rank r]``; a text of several lines keeps its lines together."""
    comm = _comm.resolve(comm)
    root = rank("print", comm, root)
    if not isinstance(sep, str) or not isinstance(end, str):
        raise TypeError("print: sep and end must be strings")
    _check_file("print", file)
    text = sep.join(str(o) for o in objects)
    yield dict(comm=comm, sep=sep, end=end, root=root)
    texts = comm.gather(text, root=root)
    if comm.rank == root:
        out = file if file is not None else sys.stdout
        for r, t in enumerate(texts):
            lines = t.split("\n")
            pad = " " * len(f"[rank {r}] ")
            out.write(f"[rank {r}] " + lines[0] + "".join("\n" + pad + x for x in lines[1:])
                      + end)
        out.flush()


@collective(own=("file",))
def show(a, file=None, root: int = 0) -> None:
    """Print the array ``a`` rank by rank (collective): its one-line
    description, then each rank's partition under its rank number."""
    if not hasattr(type(a), "__xdap_wrap__"):
        raise TypeError(f"show: a must be a DistArray, got {type(a).__name__}")
    root = rank("show", a.comm, root)
    _check_file("show", file)
    yield dict(a=a, root=root)
    if a.comm.rank == root:
        out = file if file is not None else sys.stdout
        desc = repr(a)
        out.write((desc[:desc.index(", rank ")] + ")" if ", rank " in desc else desc) + "\n")
    share = "x".join(str(n) for n in a.distribution.local_shape) or "1"
    rank_print(f"{share}: {partition_text(a)}", comm=a.comm, file=file, root=root)


def _check_file(name, file):
    """``file``: None (standard output) or something with ``write``."""
    if file is not None and not callable(getattr(file, "write", None)):
        raise TypeError(f"{name}: file must have a write() method, got {type(file).__name__}")


# NumPy's print options: more than THRESHOLD values are summarised, EDGE items
# of each dim shown at either end
THRESHOLD, EDGE = 1000, 3


def partition_text(a) -> str:
    """This rank's partition as text: whole when small, else abbreviated as
    NumPy abbreviates (``...`` between the first and last ``EDGE`` items of
    each dim; ragged and string data: the first and last rows) -- a
    1000 x 1000 array prints a few lines, not megabytes.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> print(partition_text(xdap.from_global(np.arange(2000.0), comm=MPI.COMM_SELF)))
    [0.000e+00, 1.000e+00, 2.000e+00, ..., 1.997e+03, 1.998e+03, 1.999e+03]
    """
    p = a.parts
    size = p.values.size if not p.info.boxed else p.nrows
    if size <= THRESHOLD and (not p.info.ragged or p.nrows <= THRESHOLD):
        return str(a.local.value)
    if not p.info.ragged and not p.info.boxed:
        import numpy as np
        v = a.local_numpy()
        if p.info.optional:           # NumPy's masked printing: '--' where missing
            with np.printoptions(threshold=THRESHOLD, edgeitems=EDGE):
                return str(v)
        return np.array2string(v, threshold=THRESHOLD, edgeitems=EDGE, separator=", ")
    rows = p.nrows
    head, tail = a.local[0:EDGE].value, a.local[rows - EDGE:rows].value
    return (f"[{', '.join(map(repr, head))}, ..., {', '.join(map(repr, tail))}] "
            f"({rows} rows)")
