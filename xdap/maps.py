"""Dimension maps: how ONE array dimension is laid out over a 1-d process grid.

A map is a *global* description: it knows the part held by every grid rank
``p = 0 .. grid_size-1`` along its dimension (build it from the dimension
dictionaries of all ranks, gathered by the caller).  Pure numpy, no MPI.

Three kinds, after the Distributed Array Protocol (DAP) 0.10.0, section 1.6:

* :class:`BlockMap` (``'b'``): contiguous, possibly irregular blocks with
  optional boundary / communication padding;
* :class:`CyclicMap` (``'c'``): cyclic and block-cyclic;
* :class:`UnstructuredMap` (``'u'``): an explicit list of global indices per
  rank.

Vocabulary used throughout:

* *local position*: index into a rank's buffer along this dimension;
* *owned*: DAP's ``num_owned_indices`` -- communication padding (ghost copies
  of a neighbour's cells) is not owned, boundary padding is.  The owned local
  positions of every map form a contiguous slice of the buffer, see
  :meth:`Map.owned_local_slice`.

>>> m = BlockMap(18, 2, padding=(1, 1))          # DAP 0.10.0 example 2.2
>>> m.dim_dict(1)["start"], m.dim_dict(1)["stop"]
(8, 18)
>>> m.global_indices(1)[:3]
array([ 8,  9, 10])
>>> m.owners([8, 17])
(array([0, 1]), array([8, 9]))
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "Map",
    "BlockMap",
    "CyclicMap",
    "UnstructuredMap",
    "map_from_dim_dicts",
    "num_owned_indices",
]

_I64 = np.dtype(np.int64)
_I64_MAX = np.iinfo(np.int64).max


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def _is_int(v) -> bool:
    # bool is an int subclass in Python, but True is never a valid size/index.
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def _int_arg(name: str, v, minimum: int | None = None) -> int:
    if not _is_int(v):
        raise TypeError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def _dap_minor(version: str) -> int:
    """0.9.x -> 9, 0.10.x -> 10; the only two dialects we speak."""
    parts = str(version).split(".")
    if len(parts) >= 2 and parts[0] == "0" and parts[1] in ("9", "10"):
        return int(parts[1])
    raise ValueError(f"unsupported DAP version {version!r} (supported: 0.9.x, 0.10.x)")


def _as_int64(a, what: str) -> np.ndarray:
    """``a`` as an int64 array, copying only when the dtype differs."""
    a = np.asarray(a)
    if a.dtype == _I64:
        return a
    if a.size == 0:              # np.asarray([]) is float64; harmless
        return a.astype(_I64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and int(a.max()) > _I64_MAX:
        raise ValueError(f"{what} {int(a.max())} out of range")
    return a.astype(_I64)


def _check_range(a: np.ndarray, bound: int, what: str, where: str = "") -> None:
    """Raise unless every element of int64 ``a`` is in [0, bound).

    One reduction pass: viewed as uint64, negative values become huge, so
    ``max < bound`` tests both ends at once.  The slow masked search only
    runs on failure, to name the offending value.
    """
    if a.size and int(a.view(np.uint64).max()) >= bound:
        bad = int(a[(a < 0) | (a >= bound)].flat[0])
        raise ValueError(f"{what} {bad} out of range [0, {bound}){where}")


# --------------------------------------------------------------------------
# the common interface
# --------------------------------------------------------------------------

class Map:
    """Abstract map of one dimension of global size ``size`` over
    ``grid_size`` grid ranks.  Subclasses set ``dist_type``.

    Equality compares the full description; maps are unhashable (they hold
    arrays and are compared by value).
    """

    dist_type: str = "?"
    size: int
    grid_size: int

    __hash__ = None  # type: ignore[assignment]

    # -- per-rank layout ----------------------------------------------------
    def local_size(self, p: int) -> int:
        """Buffer length on grid rank ``p`` along this dimension (incl. padding)."""
        raise NotImplementedError

    def owned_count(self, p: int) -> int:
        """DAP ``num_owned_indices`` of grid rank ``p``."""
        raise NotImplementedError

    def owned_local_slice(self, p: int) -> slice:
        """The local positions grid rank ``p`` owns, as a ``slice`` of its buffer.

        ``buf[m.owned_local_slice(p)]`` is a view of the owned data.  Only
        padded blocks exclude anything (their communication padding); for
        cyclic and unstructured maps it is the whole buffer -- including, for
        an unstructured map with ``one_to_one=False``, indices also held
        elsewhere (DAP counts them on every holder; :meth:`owners` picks the
        lowest holding rank as the canonical copy).
        """
        self._check_rank(p)
        return slice(0, self.local_size(p))

    def canonical_positions(self, p: int):
        """The local positions of grid rank ``p`` whose global index ``p`` is
        the canonical owner of (:meth:`owners`): every global index counts on
        exactly one rank. The owned slice, except for an unstructured map with
        ``one_to_one=False``, where an index held by several ranks counts on
        the lowest one only (an int64 array then).

        >>> UnstructuredMap(3, [[0, 1], [1, 2]]).canonical_positions(1)
        array([1])
        """
        return self.owned_local_slice(p)

    def global_indices(self, p: int) -> np.ndarray:
        """Global index of each local buffer position on grid rank ``p`` (int64)."""
        raise NotImplementedError

    # -- translation --------------------------------------------------------
    def owners(self, g) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised owner lookup: ``(ranks, local)`` for global indices ``g``.

        ``ranks`` is the grid rank that owns each index (never a padding
        copy) and ``local`` its local position there; both int64 and shaped
        like ``g``.  ValueError names the first index outside ``[0, size)``.
        """
        raise NotImplementedError

    def local_from_global(self, p: int, g) -> np.ndarray:
        """Local positions of global indices ``g`` in grid rank ``p``'s buffer.

        Indices held by ``p`` as communication padding map to the padding
        position.  ValueError names an index ``p`` does not hold.
        """
        raise NotImplementedError

    def global_from_local(self, p: int, l) -> np.ndarray:
        """Global indices of local positions ``l`` on grid rank ``p``.

        ValueError names a position outside ``[0, local_size(p))``.
        """
        self._check_rank(p)
        l = _as_int64(l, "local index")
        _check_range(l, self.local_size(p), "local index", f" on grid rank {p}")
        return self._global_from_local(p, l)

    def _global_from_local(self, p: int, l: np.ndarray) -> np.ndarray:
        return self.global_indices(p)[l]

    # -- export -------------------------------------------------------------
    def dim_dict(self, p: int, version: str = "0.10.0") -> dict:
        """The DAP dimension dictionary of grid rank ``p``."""
        raise NotImplementedError

    def _common(self, p: int) -> dict:
        return {"dist_type": self.dist_type, "size": self.size,
                "proc_grid_size": self.grid_size, "proc_grid_rank": p}

    # -- value semantics ----------------------------------------------------
    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def _check_rank(self, p) -> None:
        if not _is_int(p) or not 0 <= p < self.grid_size:
            raise ValueError(f"grid rank {p!r} out of range [0, {self.grid_size})")


# --------------------------------------------------------------------------
# block
# --------------------------------------------------------------------------

class BlockMap(Map):
    """Contiguous blocks, regular or irregular, optionally padded.

    ``bounds`` are the ``grid_size + 1`` boundaries of the OWNED ranges
    (default: balanced, the first ``size % grid_size`` ranks get one more,
    as ``numpy.array_split``).  ``padding`` is one ``(lo, hi)`` per grid rank,
    or a single ``(lo, hi)`` for all.  As in DAP 0.10.0, rank 0's ``lo`` and
    the last rank's ``hi`` are BOUNDARY padding: owned cells inside the owned
    range, counted in ``size``.  Every other width is COMMUNICATION padding:
    ghost copies of the neighbour's cells, outside the owned range.  So rank
    ``p``'s buffer is ``[bounds[p] - comm_lo, bounds[p+1] + comm_hi)``.

    ``periodic`` is recorded and exported only: edge padding stays boundary
    padding even when periodic (the halo exchange fills it from the opposite
    end), so every buffer lies inside ``[0, size)``.

    >>> m = BlockMap(18, 2, padding=(1, 1))
    >>> m.bounds, m.comm_padding(0), m.comm_padding(1)
    ((0, 9, 18), (0, 1), (1, 0))
    >>> m.global_indices(0)
    array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> m.owned_local_slice(1), m.owned_count(1)
    (slice(1, 10, None), 9)
    >>> m.dim_dict(0, version="0.9.0")["stop"]
    9
    """

    dist_type = "b"

    def __init__(self, size: int, grid_size: int, bounds=None, padding=None,
                 periodic: bool = False):
        size = _int_arg("block dimension: size", size, 0)
        P = _int_arg("block dimension: grid_size", grid_size, 1)
        # The default (array_split) layout: the first size % P ranks get q + 1.
        q, r = divmod(size, P)
        balanced = tuple(min(p, r) * (q + 1) + max(p - r, 0) * q for p in range(P + 1))
        bounds = list(balanced if bounds is None else bounds)
        if len(bounds) != P + 1:
            raise ValueError(f"block dimension: bounds must have grid_size + 1 = {P + 1} "
                             f"entries, got {len(bounds)}")
        for p, b in enumerate(bounds):
            _int_arg(f"block dimension: bounds[{p}]", b)
        bounds = tuple(int(b) for b in bounds)
        if bounds[0] != 0 or bounds[-1] != size:
            raise ValueError(f"block dimension: bounds must run from 0 to size ({size}), "
                             f"got {bounds[0]} .. {bounds[-1]}")
        for p in range(P):
            if bounds[p] > bounds[p + 1]:
                raise ValueError(f"block dimension: bounds must be non-decreasing: owned range "
                                 f"of grid rank {p} is [{bounds[p]}, {bounds[p + 1]})")
        if not _is_bool(periodic):
            raise TypeError(f"block dimension: periodic must be a bool, got {periodic!r}")

        self.size, self.grid_size, self.bounds = size, P, bounds
        self.padding = _normalise_padding(padding, P)
        self.periodic = bool(periodic)
        self._check_padding()

        # owners() = one searchsorted + one gather-add: the rank is the number
        # of owned stops <= g, the local position g + (comm_lo - owned_start).
        self._stops = np.array(bounds[1:], dtype=_I64)
        self._offset = np.array([self.comm_padding(p)[0] - bounds[p] for p in range(P)],
                                dtype=_I64)
        # The default (array_split) layout has closed-form owners: integer
        # division is ~4x faster than a searchsorted of random queries.
        self._balanced = (q, r) if q and bounds == balanced else None

    def _check_padding(self) -> None:
        P, pad = self.grid_size, self.padding
        owned = [self.owned_count(p) for p in range(P)]
        if P == 1:
            if pad[0][0] + pad[0][1] > owned[0]:
                raise ValueError(f"block dimension: boundary padding {pad[0]} of grid rank 0 "
                                 f"exceeds its owned count ({owned[0]})")
            return
        if pad[0][0] > owned[0]:
            raise ValueError(f"block dimension: left boundary padding of grid rank 0 "
                             f"({pad[0][0]}) exceeds its owned count ({owned[0]})")
        if pad[-1][1] > owned[-1]:
            raise ValueError(f"block dimension: right boundary padding of grid rank {P - 1} "
                             f"({pad[-1][1]}) exceeds its owned count ({owned[-1]})")
        for p in range(P - 1):
            hi, lo = pad[p][1], pad[p + 1][0]
            if hi != lo:
                raise ValueError(
                    f"block dimension: right communication padding of grid rank {p} ({hi}) "
                    f"must equal left communication padding of grid rank {p + 1} ({lo})")
            if hi > owned[p + 1]:
                raise ValueError(
                    f"block dimension: right communication padding of grid rank {p} ({hi}) "
                    f"exceeds the owned count of its neighbour grid rank {p + 1} "
                    f"({owned[p + 1]})")
            if lo > owned[p]:
                raise ValueError(
                    f"block dimension: left communication padding of grid rank {p + 1} ({lo}) "
                    f"exceeds the owned count of its neighbour grid rank {p} ({owned[p]})")

    # -- layout -------------------------------------------------------------
    def comm_padding(self, p: int) -> tuple[int, int]:
        """``(lo, hi)`` communication-padding widths of grid rank ``p``
        (its padding with the boundary parts zeroed)."""
        self._check_rank(p)
        lo, hi = self.padding[p]
        return (lo if p > 0 else 0, hi if p < self.grid_size - 1 else 0)

    def owned_range(self, p: int) -> tuple[int, int]:
        """Global ``[start, stop)`` owned by grid rank ``p``."""
        self._check_rank(p)
        return self.bounds[p], self.bounds[p + 1]

    def buffer_range(self, p: int) -> tuple[int, int]:
        """Global ``[start, stop)`` held in grid rank ``p``'s buffer (0.10.0 start/stop)."""
        lo, hi = self.comm_padding(p)
        return self.bounds[p] - lo, self.bounds[p + 1] + hi

    def local_size(self, p: int) -> int:
        start, stop = self.buffer_range(p)
        return stop - start

    def owned_count(self, p: int) -> int:
        start, stop = self.owned_range(p)
        return stop - start

    def owned_local_slice(self, p: int) -> slice:
        lo = self.comm_padding(p)[0]
        return slice(lo, lo + self.owned_count(p))

    def global_indices(self, p: int) -> np.ndarray:
        return np.arange(*self.buffer_range(p), dtype=_I64)

    # -- translation --------------------------------------------------------
    def owners(self, g):
        g = _as_int64(g, "global index")
        _check_range(g, self.size, "global index")
        if self.grid_size == 1:
            return np.zeros_like(g), g + self._offset[0]
        if self._balanced is not None:
            q, r = self._balanced
            if r == 0:
                ranks = g // q
            else:                                   # the first r ranks hold q + 1
                ranks = g // (q + 1)
                cut = r * (q + 1)
                hi = g >= cut
                ranks[hi] = (g[hi] - cut) // q + r
        else:
            ranks = np.searchsorted(self._stops, g, side="right")
        local = np.take(self._offset, ranks)
        local += g
        return ranks, local

    def local_from_global(self, p, g):
        start, stop = self.buffer_range(p)
        g = _as_int64(g, "global index")
        local = g - start
        if local.size and int(local.view(np.uint64).max()) >= stop - start:
            bad = int(g[(g < start) | (g >= stop)].flat[0])
            raise ValueError(f"global index {bad} is not present on grid rank {p} "
                             f"(its buffer holds [{start}, {stop}))")
        return local

    def _global_from_local(self, p, l):
        return l + self.buffer_range(p)[0]

    # -- export -------------------------------------------------------------
    def dim_dict(self, p, version="0.10.0"):
        minor = _dap_minor(version)
        self._check_rank(p)
        if minor == 10:
            start, stop = self.buffer_range(p)
        else:
            if self.periodic and (self.padding[0][0] or self.padding[-1][1]):
                raise ValueError(
                    "block dimension: periodic with nonzero edge padding "
                    f"{(self.padding[0][0], self.padding[-1][1])} is unsupported in DAP 0.9.0 "
                    "(it would mean wrap-around communication padding outside size)")
            start, stop = self.owned_range(p)
        d = self._common(p)
        d.update(start=start, stop=stop, padding=self.padding[p])
        if self.periodic:
            d["periodic"] = True
        return d

    def _key(self):
        return (self.size, self.grid_size, self.bounds, self.padding, self.periodic)

    def __repr__(self):
        s = f"BlockMap(size={self.size}, grid_size={self.grid_size}, bounds={self.bounds}"
        if any(lo or hi for lo, hi in self.padding):
            s += f", padding={self.padding}"
        if self.periodic:
            s += ", periodic=True"
        return s + ")"


def _normalise_padding(padding, P: int) -> tuple:
    if padding is None:
        return ((0, 0),) * P
    padding = list(padding) if not isinstance(padding, np.ndarray) else padding.tolist()
    if len(padding) == 2 and all(_is_int(x) for x in padding):
        padding = [padding] * P          # one (lo, hi) for every rank
    if len(padding) != P:
        raise ValueError(f"block dimension: padding must be one (lo, hi) or one per grid rank "
                         f"({P}), got {len(padding)} entries")
    return tuple(_padding_pair(pad, p) for p, pad in enumerate(padding))


def _padding_pair(pad, p: int) -> tuple[int, int]:
    if isinstance(pad, np.ndarray):
        pad = pad.tolist()
    if (not isinstance(pad, Sequence) or isinstance(pad, str) or len(pad) != 2
            or not all(_is_int(x) for x in pad)):
        raise TypeError(f"block dimension: padding of grid rank {p} must be a 2-tuple of ints, "
                        f"got {pad!r}")
    if pad[0] < 0 or pad[1] < 0:
        raise ValueError(f"block dimension: padding of grid rank {p} must be non-negative, "
                         f"got {tuple(pad)}")
    return int(pad[0]), int(pad[1])


# --------------------------------------------------------------------------
# cyclic / block-cyclic
# --------------------------------------------------------------------------

class CyclicMap(Map):
    """Cyclic (``block_size=1``) and block-cyclic distribution.

    Global ``g`` is in block ``b = g // block_size``, owned by rank
    ``b % grid_size`` at local position
    ``(b // grid_size) * block_size + g % block_size``.  A partial last block
    goes to whichever rank its block number lands on (the spec appendix
    wrongly hands it to rank 0).

    >>> m = CyclicMap(7, 2, block_size=2)
    >>> [m.owned_count(p) for p in range(2)]
    [4, 3]
    >>> m.global_indices(0), m.global_indices(1)
    (array([0, 1, 4, 5]), array([2, 3, 6]))
    >>> m.owners([5, 6])
    (array([0, 1]), array([3, 2]))
    """

    dist_type = "c"

    def __init__(self, size: int, grid_size: int, block_size: int = 1):
        self.size = _int_arg("cyclic dimension: size", size, 0)
        self.grid_size = _int_arg("cyclic dimension: grid_size", grid_size, 1)
        self.block_size = _int_arg("cyclic dimension: block_size", block_size, 1)

    def owned_count(self, p):
        self._check_rank(p)
        bs, P = self.block_size, self.grid_size
        cycles, rest = divmod(self.size, bs * P)
        return cycles * bs + min(max(rest - p * bs, 0), bs)

    local_size = owned_count

    def global_indices(self, p):
        return self._global_from_local(p, np.arange(self.owned_count(p), dtype=_I64))

    def _global_from_local(self, p, l):
        bs, P = self.block_size, self.grid_size
        if bs == 1:
            return l * P + p
        b, off = np.divmod(l, bs)
        b *= bs * P
        b += off
        b += p * bs
        return b

    def owners(self, g):
        g = _as_int64(g, "global index")
        _check_range(g, self.size, "global index")
        bs, P = self.block_size, self.grid_size
        if P == 1:
            return np.zeros_like(g), g.copy()
        if bs == 1:
            local, ranks = np.divmod(g, P)
            return ranks, local
        # divmod twice, reusing the block-number array for the result
        blk, off = np.divmod(g, bs)
        ranks = np.empty_like(blk)
        np.divmod(blk, P, out=(blk, ranks))
        blk *= bs
        blk += off
        return ranks, blk

    def local_from_global(self, p, g):
        self._check_rank(p)
        g = _as_int64(g, "global index")
        ranks, local = self.owners(g)
        wrong = np.flatnonzero(ranks.reshape(-1) != p)
        if wrong.size:
            i = wrong[0]
            raise ValueError(f"global index {int(g.reshape(-1)[i])} is not present on grid rank "
                             f"{p} (it is owned by grid rank {int(ranks.reshape(-1)[i])})")
        return local

    def dim_dict(self, p, version="0.10.0"):
        _dap_minor(version)
        self._check_rank(p)
        d = self._common(p)
        d["start"] = min(p * self.block_size, self.size)
        if self.block_size != 1:
            d["block_size"] = self.block_size
        return d

    def _key(self):
        return (self.size, self.grid_size, self.block_size)

    def __repr__(self):
        return (f"CyclicMap(size={self.size}, grid_size={self.grid_size}, "
                f"block_size={self.block_size})")


# --------------------------------------------------------------------------
# unstructured
# --------------------------------------------------------------------------

class UnstructuredMap(Map):
    """Explicit global indices per grid rank (``indices[p]`` in buffer order).

    Indices may be given Python-style negative (``-size <= i < size``); they
    are normalised to ``[0, size)``.  Each rank's indices must be unique, and
    together they must cover ``[0, size)``: exactly once if ``one_to_one``.
    With duplicates, :meth:`owners` reports the lowest grid rank holding the
    index.

    >>> m = UnstructuredMap(5, [[3, 0], [4, 2, 1]], one_to_one=True)
    >>> m.owners([1, 3])
    (array([1, 0]), array([2, 0]))
    >>> m.local_from_global(1, [2, 4])
    array([1, 0])
    >>> UnstructuredMap(3, [[0, 1], [-2, 2]]).owners([1, 2])   # 1 is on both
    (array([0, 1]), array([1, 1]))
    """

    dist_type = "u"

    def __init__(self, size: int, indices, one_to_one: bool = False):
        size = _int_arg("unstructured dimension: size", size, 0)
        if not _is_bool(one_to_one):
            raise TypeError(f"unstructured dimension: one_to_one must be a bool, "
                            f"got {one_to_one!r}")
        if isinstance(indices, np.ndarray) or len(indices) < 1:
            raise ValueError("unstructured dimension: indices must be a list with one "
                             "index array per grid rank (at least one)")
        self.size, self.grid_size, self.one_to_one = size, len(indices), bool(one_to_one)

        arrays = []
        for p, idx in enumerate(indices):
            a = np.asarray(idx)
            if a.ndim != 1:
                raise ValueError(f"unstructured dimension: indices of grid rank {p} must be "
                                 f"1-d, got shape {a.shape}")
            a = np.array(_as_int64(a, f"unstructured dimension: indices of grid rank {p}"),
                         dtype=_I64, copy=True)
            # negative = counted from the end, as Python indexing
            a[a < 0] += size
            _check_range(a, size, "unstructured dimension: index",
                         f" (size {size}, Python-style negatives allowed) on grid rank {p}")
            a.flags.writeable = False
            arrays.append(a)
        self.indices = tuple(arrays)

        # Dense inverse tables: owners() becomes two gathers.  Filled from the
        # highest rank down so the lowest holder wins for duplicates; the
        # same pass detects local duplicates (a repeated index in one array
        # leaves a position that does not read back) and coverage gaps.
        rank_of = np.full(size, -1, dtype=_I64)
        local_of = np.zeros(size, dtype=_I64)
        for p in reversed(range(self.grid_size)):
            a = arrays[p]
            pos = np.arange(len(a), dtype=_I64)
            local_of[a] = pos
            back = local_of[a] != pos
            if back.any():
                bad = int(a[np.flatnonzero(back)[0]])
                raise ValueError(f"unstructured dimension: indices of grid rank {p} must be "
                                 f"locally unique, but global index {bad} repeats")
            rank_of[a] = p
        missing = np.flatnonzero(rank_of < 0)
        if missing.size:
            raise ValueError(f"unstructured dimension: coverage: global index {int(missing[0])} "
                             f"is not held by any grid rank")
        total = sum(len(a) for a in arrays)
        if self.one_to_one and total != size:
            counts = np.bincount(np.concatenate(arrays), minlength=size)
            dup = int(np.flatnonzero(counts > 1)[0])
            holders = [p for p, a in enumerate(arrays) if (a == dup).any()]
            raise ValueError(
                f"unstructured dimension: one_to_one is True but the owned counts sum to "
                f"{total}, not size {size}: global index {dup} is held by grid ranks "
                f"{holders[0]} and {holders[1]}")
        self._rank_of, self._local_of = rank_of, local_of
        self._sorted: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def local_size(self, p):
        self._check_rank(p)
        return len(self.indices[p])

    owned_count = local_size

    def global_indices(self, p):
        """Read-only int64 view of rank ``p``'s indices (no copy)."""
        self._check_rank(p)
        return self.indices[p]

    def canonical_positions(self, p):
        if self.one_to_one:
            return self.owned_local_slice(p)
        return np.flatnonzero(self.owners(self.global_indices(p))[0] == p)

    def owners(self, g):
        g = _as_int64(g, "global index")
        _check_range(g, self.size, "global index")
        return np.take(self._rank_of, g), np.take(self._local_of, g)

    def local_from_global(self, p, g):
        self._check_rank(p)
        g = _as_int64(g, "global index")
        _check_range(g, self.size, "global index")
        # Fast path: the owner tables answer every index p owns; only indices
        # p holds as a shared copy (one_to_one False) need the sorted search.
        local = np.take(self._local_of, g)
        miss = np.flatnonzero(np.take(self._rank_of, g) != p)
        if miss.size:
            local[miss] = self._search(p, g[miss])
        return local

    def _search(self, p, g):
        if p not in self._sorted:
            order = np.argsort(self.indices[p], kind="stable")
            self._sorted[p] = (self.indices[p][order], order)
        keys, order = self._sorted[p]
        if keys.size == 0:
            if g.size:
                raise ValueError(f"global index {int(g.flat[0])} is not present on grid rank "
                                 f"{p} (it holds no indices)")
            return np.zeros_like(g)
        pos = np.searchsorted(keys, g)
        np.minimum(pos, keys.size - 1, out=pos)
        hit = keys[pos] == g
        if not hit.all():
            bad = int(g[~hit].flat[0])
            raise ValueError(f"global index {bad} is not present on grid rank {p}")
        return order[pos]

    def _global_from_local(self, p, l):
        return self.indices[p][l]

    def dim_dict(self, p, version="0.10.0"):
        _dap_minor(version)
        self._check_rank(p)
        d = self._common(p)
        d["indices"] = self.indices[p]
        d["one_to_one"] = self.one_to_one
        return d

    def _key(self):  # arrays compared in __eq__
        return (self.size, self.grid_size, self.one_to_one)

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key() and all(
            np.array_equal(a, b) for a, b in zip(self.indices, other.indices))

    def __repr__(self):
        counts = tuple(len(a) for a in self.indices)
        return (f"UnstructuredMap(size={self.size}, grid_size={self.grid_size}, "
                f"counts={counts}, one_to_one={self.one_to_one})")


# --------------------------------------------------------------------------
# import from DAP dimension dictionaries
# --------------------------------------------------------------------------

_REQUIRED = {"b": ("start", "stop"), "c": ("start",), "u": ("indices",)}
_COMMON = ("size", "proc_grid_size", "proc_grid_rank")
_NAMES = {"b": "block", "c": "cyclic", "u": "unstructured"}


def map_from_dim_dicts(dicts, buffer_lengths, version: str = "0.10.0") -> Map:
    """Build and validate the map of one dimension from every grid rank's dict.

    ``dicts[p]`` is grid rank ``p``'s dimension dictionary for this dimension
    and ``buffer_lengths[p]`` its local buffer length along it.  ``{}`` is the
    0.10.0 alias for an undistributed block over the whole buffer (accepted
    in 0.9.0 too); 0.9.0's ``'n'`` (undistributed, optional boundary
    ``padding``) becomes a one-rank :class:`BlockMap`.  Every violated rule
    raises ValueError/TypeError naming the rule, the grid rank and the value.

    >>> dicts = [{'dist_type': 'b', 'size': 18, 'proc_grid_size': 2, 'proc_grid_rank': 0,
    ...           'start': 0, 'stop': 9, 'padding': (1, 1)},
    ...          {'dist_type': 'b', 'size': 18, 'proc_grid_size': 2, 'proc_grid_rank': 1,
    ...           'start': 9, 'stop': 18, 'padding': (1, 1)}]
    >>> m = map_from_dim_dicts(dicts, [10, 10], version="0.9.0")
    >>> m == BlockMap(18, 2, padding=(1, 1)), m.dim_dict(1)["start"]
    (True, 8)
    >>> map_from_dim_dicts([{}], [4])
    BlockMap(size=4, grid_size=1, bounds=(0, 4))
    >>> map_from_dim_dicts([{'dist_type': 'c', 'size': 5, 'proc_grid_size': 1,
    ...                      'proc_grid_rank': 0, 'start': 0}], [4])
    Traceback (most recent call last):
    ...
    ValueError: cyclic dimension: buffer length of grid rank 0 (4) must equal its owned count (5)
    """
    minor = _dap_minor(version)
    dicts, lengths = list(dicts), list(buffer_lengths)
    if not dicts:
        raise ValueError("need one dimension dictionary per grid rank, got none")
    if len(lengths) != len(dicts):
        raise ValueError(f"got {len(dicts)} dimension dictionaries but {len(lengths)} "
                         f"buffer lengths")
    for p, n in enumerate(lengths):
        _int_arg(f"buffer length of grid rank {p}", n, 0)
    dicts = [_expand_alias(d, p, int(n), minor, len(dicts)) for p, (d, n)
             in enumerate(zip(dicts, lengths))]

    for p, d in enumerate(dicts):
        if "dist_type" not in d:
            raise ValueError(f"required key 'dist_type' missing in the dict of grid rank {p}")
    kind = dicts[0]["dist_type"]
    if kind not in _REQUIRED:
        raise ValueError(f"dist_type of grid rank 0 ({kind!r}) is unknown "
                         f"(known: 'b', 'c', 'u'" + (", 'n')" if minor == 9 else ")"))
    name = _NAMES[kind]
    for p, d in enumerate(dicts):
        if d.get("dist_type") != kind:
            raise ValueError(f"{name} dimension: dist_type of grid rank {p} "
                             f"({d['dist_type']!r}) differs from grid rank 0 ({kind!r})")
        for key in _COMMON + _REQUIRED[kind]:
            if key not in d:
                raise ValueError(f"{name} dimension: required key {key!r} missing in the "
                                 f"dict of grid rank {p}")
            if key != "indices" and not _is_int(d[key]):
                raise TypeError(f"{name} dimension: {key} of grid rank {p} must be an int, "
                                f"got {d[key]!r} ({type(d[key]).__name__})")
        if d["size"] < 0:
            raise ValueError(f"{name} dimension: size of grid rank {p} ({d['size']}) must be >= 0")
        if d["proc_grid_size"] < 1:
            raise ValueError(f"{name} dimension: proc_grid_size of grid rank {p} "
                             f"({d['proc_grid_size']}) must be >= 1")
        for key in ("size", "proc_grid_size"):
            if d[key] != dicts[0][key]:
                raise ValueError(f"{name} dimension: {key} of grid rank {p} ({d[key]}) "
                                 f"differs from grid rank 0 ({dicts[0][key]})")
        if d["proc_grid_rank"] != p:
            raise ValueError(f"{name} dimension: proc_grid_rank of the dict at grid rank {p} "
                             f"is {d['proc_grid_rank']} (must equal its position {p})")
    if dicts[0]["proc_grid_size"] != len(dicts):
        raise ValueError(f"{name} dimension: proc_grid_size ({dicts[0]['proc_grid_size']}) "
                         f"must equal the number of dicts given ({len(dicts)})")
    size = int(dicts[0]["size"])
    build = {"b": _block_from_dicts, "c": _cyclic_from_dicts, "u": _unstructured_from_dicts}
    return build[kind](dicts, [int(n) for n in lengths], size, minor)


def _expand_alias(d, p: int, n: int, minor: int, ndicts: int) -> Mapping:
    if not isinstance(d, Mapping):
        raise TypeError(f"dimension dictionary of grid rank {p} must be a dict, got "
                        f"{type(d).__name__}")
    if len(d) == 0:                       # spec 1.6.3: undistributed block
        return {"dist_type": "b", "proc_grid_rank": 0, "proc_grid_size": 1,
                "start": 0, "stop": n, "size": n}
    if d.get("dist_type") != "n":
        return d
    if minor != 9:
        raise ValueError(f"dist_type of grid rank {p} ('n') is only valid in DAP 0.9.0")
    if ndicts != 1:
        raise ValueError(f"undistributed dimension ('n'): grid size is 1, but {ndicts} "
                         f"dicts were given")
    if "size" not in d:
        raise ValueError("undistributed dimension ('n'): required key 'size' missing in the "
                         "dict of grid rank 0")
    if not _is_int(d["size"]):
        raise TypeError(f"undistributed dimension ('n'): size of grid rank 0 must be an int, "
                        f"got {d['size']!r}")
    out = {"dist_type": "b", "proc_grid_rank": 0, "proc_grid_size": 1,
           "start": 0, "stop": d["size"], "size": d["size"]}
    for key in ("padding", "periodic"):
        if key in d:
            out[key] = d[key]
    return out


def _common_flag(dicts, key: str, kind: str) -> bool:
    """An optional bool key (default False) that must agree on every grid rank."""
    first = dicts[0].get(key, False)
    for p, d in enumerate(dicts):
        v = d.get(key, False)
        if not _is_bool(v):
            raise TypeError(f"{kind} dimension: {key} of grid rank {p} must be a bool, got {v!r}")
        if v != first:
            raise ValueError(f"{kind} dimension: {key} of grid rank {p} ({v}) differs "
                             f"from grid rank 0 ({first})")
    return bool(first)


def _block_from_dicts(dicts, lengths, size, minor) -> BlockMap:
    P = len(dicts)
    periodic = _common_flag(dicts, "periodic", "block")
    owned, paddings = [], []
    for p, d in enumerate(dicts):
        pad = _padding_pair(d.get("padding", (0, 0)), p)
        paddings.append(pad)
        comm_lo = pad[0] if p > 0 else 0
        comm_hi = pad[1] if p < P - 1 else 0
        start, stop, n = int(d["start"]), int(d["stop"]), lengths[p]
        if not 0 <= start <= stop <= size:
            raise ValueError(f"block dimension: grid rank {p} needs 0 <= start <= stop <= size, "
                             f"got start {start}, stop {stop}, size {size}")
        if minor == 10:
            if stop - start != n:
                raise ValueError(f"block dimension: stop - start of grid rank {p} "
                                 f"({stop} - {start} = {stop - start}) must equal its buffer "
                                 f"length ({n})")
            lo, hi = start + comm_lo, stop - comm_hi
            if lo > hi:
                raise ValueError(f"block dimension: communication padding {(comm_lo, comm_hi)} of "
                                 f"grid rank {p} exceeds its buffer range [{start}, {stop})")
        else:
            if periodic and ((p == 0 and pad[0]) or (p == P - 1 and pad[1])):
                raise ValueError(
                    f"block dimension: periodic with nonzero edge padding {pad} on grid rank "
                    f"{p} is unsupported in DAP 0.9.0 (wrap-around communication padding "
                    f"outside size)")
            if start - comm_lo < 0 or stop + comm_hi > size:
                raise ValueError(f"block dimension: buffer range of grid rank {p} "
                                 f"[{start - comm_lo}, {stop + comm_hi}) (start/stop plus "
                                 f"communication padding) leaves [0, {size})")
            if stop - start + comm_lo + comm_hi != n:
                raise ValueError(f"block dimension: stop - start plus communication padding of "
                                 f"grid rank {p} ({stop - start + comm_lo + comm_hi}) must "
                                 f"equal its buffer length ({n})")
            lo, hi = start, stop
        owned.append((lo, hi, comm_lo or comm_hi))
    if owned[0][0] != 0:
        raise ValueError(f"block dimension: owned start of grid rank 0 ({owned[0][0]}) must be 0 "
                         f"(blocks cover [0, size))")
    for p in range(P - 1):
        (_, hi, padded), (lo, _, padded_next) = owned[p], owned[p + 1]
        if hi != lo:
            if padded or padded_next:
                raise ValueError(
                    f"block dimension: owned stop of grid rank {p} ({hi}) must equal owned start "
                    f"of grid rank {p + 1} ({lo}) (adjacent blocks; owned = start..stop "
                    f"without communication padding)")
            raise ValueError(f"block dimension: stop of grid rank {p} ({hi}) must equal start "
                             f"of grid rank {p + 1} ({lo}) (adjacent blocks)")
    if owned[-1][1] != size:
        raise ValueError(f"block dimension: owned stop of grid rank {P - 1} ({owned[-1][1]}) must "
                         f"equal size ({size}) (blocks cover [0, size))")
    bounds = [0] + [hi for _, hi, _ in owned]
    return BlockMap(size, P, bounds, paddings, bool(periodic))


def _cyclic_from_dicts(dicts, lengths, size, minor) -> CyclicMap:
    bs = dicts[0].get("block_size", 1)
    for p, d in enumerate(dicts):
        b = d.get("block_size", 1)
        if not _is_int(b):
            raise TypeError(f"cyclic dimension: block_size of grid rank {p} must be an int, "
                            f"got {b!r}")
        if b < 1:
            raise ValueError(f"cyclic dimension: block_size of grid rank {p} ({b}) must be >= 1")
        if b != bs:
            raise ValueError(f"cyclic dimension: block_size of grid rank {p} ({b}) differs from "
                             f"grid rank 0 ({bs})")
    m = CyclicMap(size, len(dicts), int(bs))
    for p, d in enumerate(dicts):
        start, first = d["start"], p * m.block_size
        # a rank that owns nothing may say start == size (spec 1.6.4)
        if start != first and not (first >= size and start == size):
            raise ValueError(f"cyclic dimension: start of grid rank {p} ({start}) must be "
                             f"grid rank * block_size ({first})"
                             + (f" or size ({size})" if first >= size else ""))
        if lengths[p] != m.owned_count(p):
            raise ValueError(f"cyclic dimension: buffer length of grid rank {p} ({lengths[p]}) "
                             f"must equal its owned count ({m.owned_count(p)})")
    return m


def _unstructured_from_dicts(dicts, lengths, size, minor) -> UnstructuredMap:
    one = _common_flag(dicts, "one_to_one", "unstructured")
    arrays = []
    for p, d in enumerate(dicts):
        try:
            a = np.asarray(d["indices"])
        except Exception as exc:  # e.g. a non-buffer object
            raise TypeError(f"unstructured dimension: indices of grid rank {p} must be an "
                            f"integer buffer: {exc}") from None
        if a.ndim != 1:
            raise ValueError(f"unstructured dimension: indices of grid rank {p} must be 1-d, "
                             f"got shape {a.shape}")
        if a.size and a.dtype.kind not in "iu":
            raise TypeError(f"unstructured dimension: indices of grid rank {p} must be "
                            f"integers, got dtype {a.dtype}")
        if len(a) != lengths[p]:
            raise ValueError(f"unstructured dimension: len(indices) of grid rank {p} "
                             f"({len(a)}) must equal its buffer length ({lengths[p]})")
        arrays.append(a)
    return UnstructuredMap(size, arrays, bool(one))


# --------------------------------------------------------------------------
# num_owned_indices, done right
# --------------------------------------------------------------------------

def num_owned_indices(dim_dict: Mapping, version: str = "0.10.0") -> int:
    """Number of indices owned according to ONE dimension dictionary.

    Block follows the spec appendix (0.10.0: ``stop - start`` minus
    communication padding; 0.9.0: ``stop - start``); cyclic uses the true
    count, unlike the appendix (which gives the partial last block to rank
    0); unstructured is ``len(indices)``; 0.9.0 ``'n'`` is ``size``.

    >>> dd = {'dist_type': 'c', 'size': 7, 'proc_grid_size': 2, 'block_size': 2}
    >>> [num_owned_indices(dict(dd, proc_grid_rank=p, start=2 * p)) for p in range(2)]
    [4, 3]
    >>> num_owned_indices({'dist_type': 'b', 'size': 18, 'proc_grid_size': 2,
    ...                    'proc_grid_rank': 1, 'start': 8, 'stop': 18, 'padding': (1, 1)})
    9
    """
    minor = _dap_minor(version)
    if len(dim_dict) == 0:
        raise ValueError("an empty dimension dictionary owns its whole buffer; the count "
                         "is the buffer length, which the dict does not carry")
    kind = dim_dict["dist_type"]
    if kind == "n":
        return int(dim_dict["size"])
    if kind == "b":
        count = dim_dict["stop"] - dim_dict["start"]
        if minor == 9:
            return int(count)
        lo, hi = dim_dict.get("padding", (0, 0))
        p, P = dim_dict["proc_grid_rank"], dim_dict["proc_grid_size"]
        return int(count - (lo if p > 0 else 0) - (hi if p < P - 1 else 0))
    if kind == "c":
        return CyclicMap(dim_dict["size"], dim_dict["proc_grid_size"],
                         dim_dict.get("block_size", 1)).owned_count(dim_dict["proc_grid_rank"])
    if kind == "u":
        return len(np.asarray(dim_dict["indices"]))
    raise ValueError(f"dist_type {kind!r} is unknown (known: 'b', 'c', 'u')")
