"""Plain Zarr arrays -- what zarr-python, xarray or dask wrote, v2 or v3, any
codecs and chunks -- in and out, rows by rank. (xdap's own lossless store,
with types, distributions and checksums, is ``xdap.io.save``/``load``; a
plain array is the exchange form.)

- ``describe(target, what)``: shape and dtype of a path's array or of an
  open ``zarr.Array``, as untrusted input: every failure one ValueError;
- ``read_rows(target, start, stop)``: rows ``start:stop`` of axis 0 --
  zarr reads and decodes only the chunks that overlap them;
- ``chunk_aligned_sizes(n, rows, P)``: each rank's rows when every rank
  owns whole chunks of ``rows`` rows (balanced in chunks), so ranks write
  disjoint chunks at once, with no lock and no read-modify-write, and read
  each chunk once;
- ``read_sizes(plain, chunk_rows, target_is_plain)``: which of the two read
  plans is done sooner (own rows, straddling chunks decoded twice; or
  whole chunks and one exchange);
- ``create(path, shape, dtype, chunks, dims)``: the array's metadata,
  replacing whatever is at ``path`` (rank 0, before the ranks write).
"""
from __future__ import annotations

import numpy as np

from ..optional import need

__all__ = ["describe", "read_rows", "chunk_aligned_sizes", "read_sizes", "create",
           "CHUNK_BYTES"]

CHUNK_BYTES = 16 << 20        # default chunk: about 16 MiB of whole rows


def _open(target, what):
    zarr = need("zarr")
    if isinstance(target, zarr.Array):
        return target
    try:
        node = zarr.open(store=target, mode="r")
    except (FileNotFoundError, OSError, ValueError, KeyError) as e:
        raise ValueError(f"{what}: no Zarr array at {target!r} ({type(e).__name__}: {e})") \
            from None
    except Exception as e:          # zarr's own metadata errors: untrusted input
        raise ValueError(f"{what}: cannot read {target!r} as Zarr ({type(e).__name__}: {e})") \
            from None
    if not isinstance(node, zarr.Array):
        if "xdap" in node.attrs:
            return None                 # xdap's own layout: its reader's (xdap.io.load)
        raise ValueError(f"{what}: {target!r} is a Zarr group, not an array (a group's "
                         f"arrays: {sorted(node.array_keys())[:10]})")
    return node


def describe(target, what: str):
    """``(array, shape, dtype)``: the opened array, its shape and its NumPy
    dtype (numbers and bools only); ``(None, None, None)`` for an xdap
    store (a group in xdap's own layout, which ``xdap.io.load`` reads)."""
    array = _open(target, what)
    if array is None:
        return None, None, None
    dtype = np.dtype(array.dtype)
    if dtype.kind not in "biufc":
        raise ValueError(f"{what}: the Zarr array holds {dtype}; xdap reads numbers and bools")
    return array, tuple(int(s) for s in array.shape), dtype.newbyteorder("=")


def read_rows(array, start: int, stop: int, dtype) -> np.ndarray:
    """Rows ``start:stop`` (all of a 0-d array), C-contiguous, ``dtype``."""
    if not array.shape:
        return np.asarray(array[()], dtype)
    return np.ascontiguousarray(array[start:stop], dtype)


def chunk_aligned_sizes(n: int, rows: int, P: int) -> list:
    """Each of ``P`` ranks' rows of ``n`` when each owns whole chunks of
    ``rows`` rows (the last chunk may be short), balanced in chunks.

    >>> chunk_aligned_sizes(10, 3, 2), chunk_aligned_sizes(2, 3, 3)
    ([6, 4], [0, 0, 2])
    """
    chunks = -(-n // rows) if n else 0
    bounds = [min(n, rows * (chunks * r // P)) for r in range(P + 1)]
    return [bounds[r + 1] - bounds[r] for r in range(P)]


def read_sizes(plain, chunk_rows: int, target_is_plain: bool):
    """How many rows of axis 0 each rank reads, given ``plain`` -- each
    rank's rows in the plain balanced blocks: None for those blocks (each
    rank its own rows: a chunk that straddles ranks is decoded by each of
    them), or whole chunks (``chunk_aligned_sizes``: each chunk decoded
    once, then one exchange to the target), whichever the slowest rank
    finishes sooner -- counting a row sent or received as dear as a row
    decoded (measured: a 512 MiB zstd chunk decoded by two ranks at once
    beats one decode and a send) -- and only when it also decodes fewer
    rows in all. A target other than the plain blocks takes one exchange
    anyway, so it always reads whole chunks.

    >>> read_sizes([3, 3, 3, 3], 5, True)     # rank 1 decodes 10 rows; whole chunks: 5 + 4
    [0, 5, 5, 2]
    >>> read_sizes([3, 3, 3, 3], 12, True) is None   # each decodes the chunk: as fast as one
    True
    """
    n, P, rows = sum(plain), len(plain), max(1, int(chunk_rows))
    if not n or P == 1:
        return None
    aligned = chunk_aligned_sizes(n, rows, P)
    if not target_is_plain:
        return aligned
    plain_bounds, aligned_bounds = np.cumsum([0] + list(plain)), np.cumsum([0] + aligned)

    def overlap(a, b, c, d):
        return max(0, min(b, d) - max(a, c))

    decoded, busy = [], []     # plain: rows decoded a rank; whole chunks: decoded + moved
    for r in range(P):
        lo, hi = int(plain_bounds[r]), int(plain_bounds[r + 1])
        decoded.append(min(n, -(-hi // rows) * rows) - (lo // rows) * rows if hi > lo else 0)
        alo, ahi = int(aligned_bounds[r]), int(aligned_bounds[r + 1])
        kept = overlap(lo, hi, alo, ahi)
        busy.append((ahi - alo) + (ahi - alo - kept) + (hi - lo - kept))
    if sum(decoded) > n and max(busy) < max(decoded):
        return aligned
    return None


def default_chunks(shape, dtype) -> tuple:
    """About ``CHUNK_BYTES`` of whole rows a chunk."""
    if not shape:
        return ()
    row = int(np.prod(shape[1:], dtype=np.int64)) * np.dtype(dtype).itemsize
    rows = max(1, min(shape[0], CHUNK_BYTES // max(row, 1)))
    return (rows,) + tuple(max(1, s) for s in shape[1:])


def create(path: str, shape, dtype, chunks, dims):
    """The array's metadata at ``path`` (Zarr v3, zarr's default codecs,
    ``dims`` as its dimension names: what xarray reads a variable's dims from)."""
    zarr = need("zarr")
    zarr.create_array(store=path, shape=shape, chunks=chunks if shape else "auto", dtype=dtype,
                      fill_value=np.zeros((), dtype)[()], overwrite=True, zarr_format=3,
                      dimension_names=dims)
