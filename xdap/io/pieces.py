"""The simple files heat reads and writes: a directory of ``.npy`` pieces
(one array cut along axis 0 into files, read in name order) and CSV rows.

- ``npy_layout(paths, what)``: every piece's rows, and the common dtype and
  trailing shape, from the headers alone (untrusted: one ValueError);
- ``npy_rows(paths, rows, start, stop, dtype, tail)``: rows ``start:stop``
  of the pieces joined -- each piece memory-mapped, only the overlapping
  rows copied out;
- ``csv_rows(path, rank, size, header_lines, sep, dtype)``: this rank's
  share of the file's lines -- the bytes ``[size*r/P, size*(r+1)/P)``, moved
  to line boundaries (a line belongs to the rank where it starts) -- parsed
  by NumPy. Only those bytes are read.
"""
from __future__ import annotations

import os
import shutil

import numpy as np

from .files import fsync_dir
from .npy import parse_npy_header

__all__ = ["npy_pieces", "npy_layout", "npy_rows", "csv_rows", "write_piece",
           "commit_pieces", "PARTIAL"]

PARTIAL = ".xdap-partial"    # the directory beside the target where a write's pieces wait


def npy_pieces(path, what: str) -> list:
    """The ``.npy`` files of a directory in name order (or the list given)."""
    if isinstance(path, (list, tuple)):
        if not path:
            raise ValueError(f"{what}: the list of .npy pieces is empty")
        for p in path:
            if not isinstance(p, (str, os.PathLike)):
                raise TypeError(f"{what}: each piece must be a str or os.PathLike, got "
                                f"{type(p).__name__}")
        return [os.fspath(p) for p in path]
    if not os.path.isdir(path):
        raise ValueError(f"{what}: {path!r} is not a directory of .npy pieces")
    names = sorted(n for n in os.listdir(path) if n.endswith(".npy"))
    if not names:
        raise ValueError(f"{what}: {path!r} holds no .npy files")
    return [os.path.join(path, n) for n in names]


def npy_layout(paths, what: str):
    """``(rows of each piece, dtype, trailing shape)`` read from the headers."""
    rows, dtype, tail = [], None, None
    for p in paths:
        try:
            with open(p, "rb") as f:
                head = f.read(4096)
            dt, shape = parse_npy_header(head)
        except (OSError, ValueError) as e:
            raise ValueError(f"{what}: {p!r} is not a readable C-order .npy file ({e})") from None
        if not shape:
            raise ValueError(f"{what}: {p!r} holds a 0-d array; pieces are cut along axis 0")
        if dtype is None:
            dtype, tail = dt, shape[1:]
        elif dt != dtype or shape[1:] != tail:
            raise ValueError(f"{what}: {p!r} holds {dt} {shape}, but the first piece "
                             f"{dtype} (n,) + {tail}: pieces must agree but for their rows")
        rows.append(int(shape[0]))
    if dtype.kind not in "biufc":
        raise ValueError(f"{what}: the pieces hold {dtype}; xdap reads numbers and bools")
    return rows, dtype, tuple(tail)


def npy_rows(paths, rows, start: int, stop: int, dtype, tail) -> np.ndarray:
    """Rows ``start:stop`` of the pieces joined along axis 0."""
    out = np.empty((stop - start,) + tuple(tail), dtype.newbyteorder("="))
    first = 0
    for p, n in zip(paths, rows):
        lo, hi = max(start, first), min(stop, first + n)
        if lo < hi:
            piece = np.load(p, mmap_mode="r")
            out[lo - start:hi - start] = piece[lo - first:hi - first]
            del piece
        first += n
    return out


def csv_rows(path: str, rank: int, size: int, header_lines: int, sep: str, dtype):
    """This rank's lines of a CSV file as a 2-D array (no lines: shape
    ``(0, 0)``; the caller agrees on the column count)."""
    with open(path, "rb") as f:
        for _ in range(header_lines):
            f.readline()
        begin = f.tell()
        end_of_file = f.seek(0, os.SEEK_END)
        body = end_of_file - begin
        lo = begin + body * rank // size
        hi = begin + body * (rank + 1) // size

        def line_start(offset):
            """The first line that starts at or after ``offset``."""
            if offset <= begin:
                return begin
            f.seek(offset - 1)
            if f.read(1) == b"\n":
                return offset
            f.readline()
            return f.tell()
        a, b = line_start(lo), line_start(hi)
        f.seek(a)
        text = f.read(b - a)
    if not text.strip():
        return np.empty((0, 0), dtype)
    return np.loadtxt(text.decode().splitlines(), delimiter=sep, dtype=dtype, ndmin=2)


# -- writing pieces that lose nothing -----------------------------------------------
# ``to_npy`` writes every rank's piece into a staging directory beside the
# target and moves them in only when every rank has written its own: a
# failure on any rank leaves the target as it was.

def write_piece(path: str, values: np.ndarray) -> None:
    """One rank's piece as a ``.npy`` file, on disk when this returns
    (fsync'ed: it is renamed into place next, and a rename of unsynced
    data can survive a crash as an empty file)."""
    with open(path, "wb") as f:
        np.save(f, values)
        f.flush()
        os.fsync(f.fileno())


def commit_pieces(staging: str, path: str) -> None:
    """The pieces of ``staging`` into ``path`` (rank 0, once every rank has
    written): the whole directory renamed where ``path`` is not there yet;
    else each piece moved in, in name order -- a move that fails puts back
    those already moved, so ``path`` never holds part of the pieces."""
    if not os.path.exists(path):
        os.rename(staging, path)
        fsync_dir(os.path.dirname(os.path.abspath(path)))
        return
    moved = []
    try:
        for name in sorted(os.listdir(staging)):
            os.rename(os.path.join(staging, name), os.path.join(path, name))
            moved.append(name)
    except BaseException:
        for name in moved:
            os.rename(os.path.join(path, name), os.path.join(staging, name))
        raise
    fsync_dir(path)
    os.rmdir(staging)
