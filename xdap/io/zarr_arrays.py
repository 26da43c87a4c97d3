"""Plain Zarr arrays -- what zarr-python, xarray or dask wrote, v2 or v3, any
codecs and chunks -- in and out, rows by rank. (xdap's own lossless store,
with types, distributions and checksums, is ``xdap.io.save``/``load``; a
plain array is the exchange form.)

- ``describe(target, what)``: shape and dtype of a path's array or of an
  open ``zarr.Array``, as untrusted input: every failure one ValueError;
- ``read_rows(target, start, stop)``: rows ``start:stop`` of axis 0 --
  zarr reads and decodes only the chunks that overlap them (a chunk that
  straddles two ranks' rows is decoded by both);
- ``chunk_aligned_sizes(n, rows, P)``: each rank's rows when every rank
  owns whole chunks of ``rows`` rows (balanced in chunks), so ranks write
  disjoint chunks at once, with no lock and no read-modify-write;
- ``create(path, shape, dtype, chunks, dims)``: the array's metadata,
  replacing whatever is at ``path`` (rank 0, before the ranks write).
"""
from __future__ import annotations

import numpy as np

from ..optional import need

__all__ = ["describe", "read_rows", "chunk_aligned_sizes", "create", "CHUNK_BYTES"]

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
