"""The whole array and one rank: scatter it from a root, gather it to a root
or to every rank -- as buffers (``xdap.exchange``: Scatterv / Gatherv /
Allgatherv of values, validity bitmaps, ragged lengths and global indices),
never pickles.

These are the two places where one rank holds the whole array, because the
user asked for it (``from_global(..., root=)``, ``to_global()``).

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> to_global(*from_global(np.arange(4.0), dist=("c",), comm=MPI.COMM_SELF)).values.tolist()
[0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from .. import exchange
from ..parts import Parts
from ..rows import take_rows
from ..bitmaps import pack_validity, unpack_validity
from ..agreement import agreement

__all__ = ["to_global", "scatter_from_root", "read_element"]


def _ends(p: Parts, rows_per_rank) -> list:
    """For ragged parts whose rows are grouped by rank (``rows_per_rank``
    rows each, in rank order): per level below the rows, the cut points of
    every rank's items (the last level's are the leaves')."""
    ends = [np.concatenate([[0], np.cumsum(rows_per_rank)]).astype(np.int64)]
    for off in p.offsets[1:]:
        ends.append(off.astype(np.int64)[ends[-1]])
    return ends


def _bitmaps(mask, cuts) -> np.ndarray:
    """Every segment ``mask[cuts[i]:cuts[i+1]]`` packed on its own."""
    if len(cuts) < 2:
        return np.zeros(0, np.uint8)
    return np.concatenate([pack_validity(mask[a:b]) for a, b in zip(cuts[:-1], cuts[1:])])


# --------------------------------------------------------------------------
# root -> every rank
# --------------------------------------------------------------------------

def scatter_from_root(p: Parts | None, info, d, root: int) -> Parts:
    """This rank's part under ``d`` of the global array ``p`` that ``root``
    holds (None elsewhere; ``info`` is its agreed type). Collective.

    The root sends each rank's part straight from ``p`` when the parts are
    consecutive slabs in rank order (block rows, no padding), else packs them
    once; ragged rows travel as lengths per level, values and validity."""
    if info.ragged:
        return _scatter_rows(p, info, d, root)
    comm, P = d.comm, d.comm.size
    counts = [int(np.prod(d.local_shape_of(r))) for r in range(P)]
    n = counts[comm.rank]
    send = bits = None
    if comm.rank == root:
        if _slabs_in_rank_order(d):
            send = p.values                                             # no copy
        else:
            blocks = [p.values[np.ix_(*[d.global_indices(k, r) for k in range(d.ndim)])]
                      for r in range(P)]
            send = np.concatenate([b.reshape(-1) for b in blocks])
        if info.optional:
            # the parts' validity, each packed on its own (bits do not align)
            if _slabs_in_rank_order(d):
                flat = p.valid_mask().reshape(-1)
            else:
                mask = p.valid_mask()
                flat = np.concatenate([mask[np.ix_(*[d.global_indices(k, r)
                                                     for k in range(d.ndim)])].reshape(-1)
                                       for r in range(P)])
            bits = _bitmaps(flat, np.concatenate([[0], np.cumsum(counts)]))
    values = exchange.scatterv(comm, send, counts, n, root, info.numpy_dtype)
    values = values.reshape(d.local_shape)
    validity = None
    if info.optional:
        validity = exchange.scatterv(comm, bits, [(c + 7) // 8 for c in counts], (n + 7) // 8,
                                     root, np.uint8)
    return Parts(info.with_shape(values.shape), values, validity)


def _slabs_in_rank_order(d) -> bool:
    """Whether rank r's part is the r-th consecutive slab of the C-order
    global array: unpadded blocks along dim 0, nothing else distributed."""
    # the other dims whole and in order (an unstructured map over one grid
    # position may still permute them)
    return d.is_contiguous_1d and all(m.contiguous for m in d.maps[1:])


def _scatter_rows(p, info, d, root) -> Parts:
    comm, P, L = d.comm, d.comm.size, info.var_ndim
    items = None                                   # root: (L, P) items per level per rank
    if comm.rank == root:
        rows = [d.global_indices(0, r) for r in range(P)]
        p = take_rows(p, np.concatenate(rows))     # grouped by rank
        ends = _ends(p, [len(r) for r in rows])
        items = np.stack([np.diff(e) for e in ends])
    # every rank learns its own items per level (below the rows it knows)
    own = exchange.scatterv(comm, None if items is None else items[1:].T.copy(),
                            [L - 1] * P, L - 1, root, np.int64)
    own = [d.local_shape[0]] + own.tolist()
    offsets = [np.array([0, own[0]], np.int32)]
    for level in range(1, L):
        lengths = exchange.scatterv(
            comm, None if items is None else np.diff(p.offsets[level].astype(np.int64)),
            None if items is None else items[level - 1], own[level - 1], root, np.int64)
        offsets.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    leaves = own[L - 1]
    values = exchange.scatterv(comm, None if items is None else p.values,
                               None if items is None else items[L - 1], leaves, root,
                               info.numpy_dtype)
    validity = None
    if info.optional:
        bits = None if items is None else _bitmaps(
            p.valid_mask(), np.concatenate([[0], np.cumsum(items[L - 1])]))
        validity = exchange.scatterv(comm, bits, None if items is None else
                                     (items[L - 1] + 7) // 8, (leaves + 7) // 8, root, np.uint8)
    return Parts(info, values, validity, tuple(offsets))


# --------------------------------------------------------------------------
# every rank -> root (or every rank)
# --------------------------------------------------------------------------

def to_global(d, p: Parts, root: int | None = None) -> Parts | None:
    """The global array's Parts on ``root`` (None elsewhere), or on every
    rank when ``root`` is None (collective; copies).

    Canonical values only: communication padding is not read; an index held
    by several ranks (unstructured, not one-to-one) is taken from its
    canonical owner.  Every rank sends its canonical part and its global
    indices; nothing is pickled.
    """
    comm = d.comm
    if d.ndim == 0:            # a 0-d array: every rank already holds the element
        return None if root is not None and comm.rank != root else Parts(
            p.info, p.values.copy(), None if p.validity is None else p.validity.copy())
    if not p.info.ragged and _slabs_in_rank_order(d):
        return _gather_slabs(d, p, root)
    pos = d.canonical_positions()
    gidx = [d.global_indices(k)[s] for k, s in enumerate(pos)]
    if p.info.ragged:
        mine = take_rows(p, np.arange(p.nrows)[pos[0]])
        ends = _ends(mine, [mine.nrows])
        header = [mine.nrows] + [int(e[-1]) for e in ends[1:]]
        mask = mine.valid_mask()
        sends = [gidx[0]] + [np.diff(o.astype(np.int64)) for o in mine.offsets[1:]]
        sends += [mine.values] + ([pack_validity(mask)] if mask is not None else [])
    else:
        index = tuple(pos) if all(isinstance(s, slice) for s in pos) else np.ix_(
            *[np.arange(n)[s] for s, n in zip(pos, p.values.shape)])
        block = np.ascontiguousarray(p.values[index])
        header = [len(g) for g in gidx]
        mask = p.valid_mask()
        sends = list(gidx) + [block] + ([pack_validity(mask[index])] if mask is not None else [])
    # one fixed-size header per rank says how long everything else is
    headers = exchange.allgatherv(comm, np.array(header, np.int64), [len(header)] * comm.size)
    headers = headers.reshape(comm.size, len(header))
    got = [_collect(comm, s, c, root) for s, c in zip(sends, _counts(p.info, headers))]
    if root is not None and comm.rank != root:
        return None
    return (_assemble_rows if p.info.ragged else _assemble_block)(d, p.info, headers, got)


def _gather_slabs(d, p, root):
    """Block rows in rank order: every rank's part lands where it belongs in
    the C-order global array, which is the receive buffer (no indices, no
    second copy)."""
    comm, info = d.comm, p.info
    counts = [int(np.prod(d.local_shape_of(r))) for r in range(comm.size)]
    values = _collect(comm, p.values, counts, root)
    validity = None
    if info.optional:
        bits = _collect(comm, p.validity[:(counts[comm.rank] + 7) // 8],
                        [(c + 7) // 8 for c in counts], root)
        if bits is not None:
            parts_bits = _split(bits, [(c + 7) // 8 for c in counts])
            validity = pack_validity(np.concatenate(
                [unpack_validity(b, c) for b, c in zip(parts_bits, counts)]))
    if values is None:
        return None
    values = values.reshape(d.global_shape)
    return Parts(info.with_shape(values.shape), values, validity)


def _counts(info, headers):
    """Items per rank of each buffer ``to_global`` sends, from the headers."""
    if info.ragged:
        rows, deeper = headers[:, 0], headers[:, 1:]
        items = [rows] + [deeper[:, j] for j in range(deeper.shape[1])]
        out = [rows] + items[:-1] + [items[-1]]         # indices, lengths per level, values
    else:
        out = [headers[:, k] for k in range(headers.shape[1])]
        out.append(np.prod(headers, axis=1))           # values
        items = [out[-1]]
    if info.optional:
        out.append((items[-1] + 7) // 8)
    return out


def _collect(comm, send, counts, root):
    if root is None:
        return exchange.allgatherv(comm, send, counts)
    return exchange.gatherv(comm, send, counts, root)


def _split(flat, counts):
    cuts = np.concatenate([[0], np.cumsum(counts)])
    return [flat[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def _assemble_block(d, info, headers, got) -> Parts:
    ndim = d.ndim
    idx = [_split(got[k], headers[:, k]) for k in range(ndim)]
    vals = _split(got[ndim], np.prod(headers, axis=1))
    out = np.empty(d.global_shape, info.numpy_dtype)
    full = np.empty(d.global_shape, bool) if info.optional else None
    bits = _split(got[ndim + 1], (np.prod(headers, axis=1) + 7) // 8) if info.optional else None
    for r in range(len(headers)):
        shape = tuple(headers[r])
        where = np.ix_(*[idx[k][r] for k in range(ndim)])
        out[where] = vals[r].reshape(shape)
        if full is not None:
            full[where] = unpack_validity(bits[r], int(np.prod(shape))).reshape(shape)
    return Parts(info.with_shape(out.shape), out, None if full is None else pack_validity(full))


def _assemble_rows(d, info, headers, got) -> Parts:
    L = info.var_ndim
    rows = got[0]
    offsets = [np.array([0, len(rows)], np.int32)]
    for level in range(1, L):
        offsets.append(np.concatenate([[0], np.cumsum(got[level])]).astype(np.int32))
    leaves = headers[:, L - 1] if L > 1 else headers[:, 0]
    validity = None
    if info.optional:
        bits = _split(got[L + 1], (leaves + 7) // 8)
        validity = pack_validity(np.concatenate(
            [unpack_validity(b, int(n)) for b, n in zip(bits, leaves)]) if len(bits) else
            np.zeros(0, bool))
    allp = Parts(info, got[L], validity, tuple(offsets))
    return take_rows(allp, np.argsort(rows, kind="stable"))    # global row order


# --------------------------------------------------------------------------
# one element, read by every rank
# --------------------------------------------------------------------------

def read_element(d, p: Parts, index) -> object:
    """The element at the global ``index`` (one int per dimension), on every
    rank (collective): its canonical holder sends its bytes with one
    ``Bcast``. A NumPy scalar (a ``np.void`` record for records), or None
    where the element is missing. Every rank raises the same error for an
    index that is bad or differs between ranks.

    >>> from mpi4py import MPI
    >>> from xdap.create import from_global
    >>> d, p = from_global(np.arange(12.0).reshape(3, 4), dist=("c", "b"), comm=MPI.COMM_SELF)
    >>> read_element(d, p, (2, 1))
    np.float64(9.0)
    """
    comm = d.comm
    where = None
    with agreement(comm, "element read", share=True) as ag:
        if p.info.ragged:
            raise TypeError(f"a[i]: a ragged array ({p.info.type_string()}) has rows of "
                            "different lengths; read rows with a.to_global() or xdap.Scatter")
        index = _element_index(index, d.global_shape)
        ag.same("the index", index)
        where = _canonical_position(d, index)
        ag.share(where is not None)
    holder = [r for r, has in enumerate(ag.shared) if has][0]
    buf = np.zeros(p.values.dtype.itemsize + 1, np.uint8)
    if where is not None:
        buf[:-1] = np.frombuffer(np.ascontiguousarray(p.values[where]).tobytes(), np.uint8)
        mask = p.valid_mask()
        buf[-1] = 1 if mask is None else int(mask[where])
    comm.Bcast(buf, root=holder)
    if not buf[-1]:
        return None
    # (the named NumPy type: xnd's 'q' buffers read as longlong, not int64)
    dtype = p.info.numpy_dtype if p.info.numeric else p.values.dtype
    return np.frombuffer(buf[:-1].tobytes(), dtype)[0]


def _element_index(index, shape) -> tuple:
    key = index if isinstance(index, tuple) else (index,)
    if len(key) != len(shape):
        raise ValueError(f"a[{index!r}]: the array has {len(shape)} dimension(s), so an "
                         f"element needs {len(shape)} integer(s)")
    out = []
    for k, (i, n) in enumerate(zip(key, shape)):
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"a[{index!r}]: index {k} is {type(i).__name__} {i!r}; an element "
                            "read takes integers (slices and arrays: a.to_numpy()[...] or "
                            "xdap.Scatter)")
        i = int(i)
        if not -n <= i < n:
            raise ValueError(f"a[{index!r}]: index {i} is out of bounds for dimension {k} "
                             f"of size {n}")
        out.append(i + n if i < 0 else i)
    return tuple(out)


def _canonical_position(d, index):
    """This rank's local position of the element, if it holds it canonically."""
    local = []
    for k, (m, c, g) in enumerate(zip(d.maps, d.coords, index)):
        held = np.asarray(d.global_indices(k))
        canon = m.canonical_positions(c)
        positions = np.arange(len(held))[canon]
        hit = positions[held[positions] == g]
        if not hit.size:
            return None
        local.append(int(hit[0]))
    return tuple(local)
