"""Blocks (``'b'``): contiguous, possibly irregular blocks with optional
boundary / communication padding (DAP 0.10.0 section 1.6); ``'n'`` is a
block over one grid rank.

>>> m = BlockMap(18, 2, padding=(1, 1))          # DAP 0.10.0 example 2.2
>>> m.to_dim_dict(1)["start"], m.to_dim_dict(1)["stop"], m.spec, m.describe()
(8, 18, 'b+pad', 'block padded')
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import (MAP_KINDS, Map, Tiles, as_int64, check_range, common_flag, dap_minor, int_arg,
                   int_tuple, is_bool, is_int, _I64)

__all__ = ["BlockMap"]


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
    >>> m.to_dim_dict(0, version="0.9.0")["stop"]
    9
    """

    dist_type = "b"
    name = "block"

    def __init__(self, size: int, grid_size: int, bounds=None, padding=None,
                 periodic: bool = False):
        size = int_arg("block dimension: size", size, 0)
        P = int_arg("block dimension: grid_size", grid_size, 1)
        # The default (array_split) layout: the first size % P ranks get q + 1.
        q, r = divmod(size, P)
        balanced = tuple(min(p, r) * (q + 1) + max(p - r, 0) * q for p in range(P + 1))
        bounds = list(balanced if bounds is None else bounds)
        if len(bounds) != P + 1:
            raise ValueError(f"block dimension: bounds must have grid_size + 1 = {P + 1} "
                             f"entries, got {len(bounds)}")
        for p, b in enumerate(bounds):
            int_arg(f"block dimension: bounds[{p}]", b)
        bounds = tuple(int(b) for b in bounds)
        if bounds[0] != 0 or bounds[-1] != size:
            raise ValueError(f"block dimension: bounds must run from 0 to size ({size}), "
                             f"got {bounds[0]} .. {bounds[-1]}")
        for p in range(P):
            if bounds[p] > bounds[p + 1]:
                raise ValueError(f"block dimension: bounds must be non-decreasing: owned range "
                                 f"of grid rank {p} is [{bounds[p]}, {bounds[p + 1]})")
        if not is_bool(periodic):
            raise TypeError(f"block dimension: periodic must be a bool, got {periodic!r}")

        self.size, self.grid_size, self.bounds = size, P, bounds
        self._padding = _normalise_padding(padding, P)
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
        self._freeze()

    @property
    def padding(self) -> tuple:
        return self._padding

    @property
    def padded(self) -> bool:
        return any(lo or hi for lo, hi in self._padding)

    @property
    def spec(self) -> str:
        return "b+pad" if self.padded else "n" if self.grid_size == 1 else "b"

    def describe(self) -> str:
        return ("block" if self.grid_size > 1 else "n") + (" padded" if self.padded else "")

    @classmethod
    def from_spec(cls, size: int, grid_size: int, sizes=None, padding=None, periodic=None,
                  where: str = "") -> "BlockMap":
        """A ``'b'`` (or ``'n'``) dimension: ``sizes`` the owned size of each
        grid rank (irregular blocks), ``padding`` one ``(lo, hi)`` for every
        rank or one per grid rank, ``periodic`` a bool.  ``where`` names the
        dimension in messages (``"[1]"``)."""
        bounds = None
        if sizes is not None:
            s = np.asarray(int_tuple(f"sizes{where}", sizes, 0), dtype=np.int64)
            if len(s) != grid_size or s.sum() != size:
                raise ValueError(f"sizes{where} must be {grid_size} non-negative owned sizes "
                                 f"summing to {size}, got {list(sizes)}")
            bounds = np.concatenate([[0], np.cumsum(s)])
        pad = (0, 0) if padding is None else _padding_spec(f"padding{where}", padding, grid_size)
        if periodic is not None and not is_bool(periodic):
            raise TypeError(f"periodic{where} must be a bool, got {periodic!r}")
        return cls(size, grid_size, bounds=bounds, padding=pad, periodic=bool(periodic))

    def _check_padding(self) -> None:
        P, pad = self.grid_size, self._padding
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
        self._check_rank(p)
        lo, hi = self._padding[p]
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

    def global_indices(self, p: int) -> np.ndarray:
        return np.arange(*self.buffer_range(p), dtype=_I64)

    def buffer_indices(self, p: int):
        return range(*self.buffer_range(p))

    def canonical_indices(self, p: int):
        return range(*self.owned_range(p))

    @property
    def has_copies(self) -> bool:
        return any(self.comm_padding(p) != (0, 0) for p in range(self.grid_size))

    @property
    def contiguous(self) -> bool:
        return not self.has_copies

    @property
    def ranges(self) -> bool:
        return True

    # -- translation --------------------------------------------------------
    def owners(self, g):
        g = as_int64(g, "global index")
        check_range(g, self.size, "global index")
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

    def holders(self, g):
        g = as_int64(g, "global index").reshape(-1)
        ranks, local = self.owners(g)
        if not self.has_copies:
            return np.arange(len(g), dtype=_I64), ranks, local
        which, rs, ls = [np.arange(len(g), dtype=_I64)], [ranks], [local]
        starts = np.array([self.buffer_range(p)[0] for p in range(self.grid_size)], _I64)
        stops = np.array([self.buffer_range(p)[1] for p in range(self.grid_size)], _I64)
        for step in (-1, 1):            # ghosts are only ever the neighbours' (padding <= owned)
            q = ranks + step
            ok = (q >= 0) & (q < self.grid_size)
            qq = np.where(ok, q, 0)
            ok &= (starts[qq] <= g) & (g < stops[qq])
            at = np.flatnonzero(ok)
            which.append(at)
            rs.append(q[at])
            ls.append(g[at] - starts[q[at]])
        return tuple(np.concatenate(x) for x in (which, rs, ls))

    def local_from_global(self, p, g):
        start, stop = self.buffer_range(p)
        g = as_int64(g, "global index")
        local = g - start
        if local.size and int(local.view(np.uint64).max()) >= stop - start:
            bad = int(g[(g < start) | (g >= stop)].flat[0])
            raise ValueError(f"global index {bad} is not present on grid rank {p} "
                             f"(its buffer holds [{start}, {stop}))")
        return local

    def _global_from_local(self, p, l):
        return l + self.buffer_range(p)[0]

    def locate(self, need) -> list:
        if not isinstance(need, range):
            return super().locate(need)
        out = []
        for j in range(self.grid_size):
            a, b = self.owned_range(j)
            lo, hi = max(a, need.start), min(b, need.stop)
            if lo < hi:
                out.append((j, slice(lo - need.start, hi - need.start), slice(lo - a, hi - a)))
        return out

    # -- other maps ---------------------------------------------------------
    def without_padding(self) -> "BlockMap":
        return BlockMap(self.size, self.grid_size, bounds=self.bounds) \
            if any(lo or hi for lo, hi in self._padding) else self

    def resized(self, grid_size: int) -> "BlockMap":
        pad = self._padding[0] if len(set(self._padding)) == 1 else (0, 0)
        try:
            return BlockMap(self.size, grid_size, padding=pad, periodic=self.periodic)
        except ValueError:          # the padding does not fit the new blocks
            return BlockMap(self.size, grid_size, periodic=self.periodic)

    # -- wire forms ---------------------------------------------------------
    def to_dim_dict(self, p, version="0.10.0"):
        minor = dap_minor(version)
        self._check_rank(p)
        if minor == 10:
            start, stop = self.buffer_range(p)
        else:
            if self.periodic and (self._padding[0][0] or self._padding[-1][1]):
                raise ValueError(
                    "block dimension: periodic with nonzero edge padding "
                    f"{(self._padding[0][0], self._padding[-1][1])} is unsupported in DAP 0.9.0 "
                    "(it would mean wrap-around communication padding outside size)")
            start, stop = self.owned_range(p)
        d = self._common(p)
        d.update(start=start, stop=stop, padding=self._padding[p])
        if self.periodic:
            d["periodic"] = True
        return d

    @classmethod
    def from_dim_dicts(cls, dicts, lengths, size, minor):
        """DAP block dicts: 0.10.0 counts communication padding inside
        start..stop (stop - start == buffer length), 0.9.0 outside it.

        >>> d = [{'start': 0, 'stop': 9, 'padding': (1, 1)}, {'start': 9, 'stop': 18,
        ...       'padding': (1, 1)}]
        >>> BlockMap.from_dim_dicts(d, [10, 10], 18, 9) == BlockMap(18, 2, padding=(1, 1))
        True
        """
        P = len(dicts)
        periodic = common_flag(dicts, "periodic", "block")
        owned, paddings = [], []
        for p, d in enumerate(dicts):
            pad = _padding_pair(d.get("padding", (0, 0)), p)
            paddings.append(pad)
            comm_lo = pad[0] if p > 0 else 0
            comm_hi = pad[1] if p < P - 1 else 0
            start, stop, n = int(d["start"]), int(d["stop"]), lengths[p]
            if not 0 <= start <= stop <= size:
                raise ValueError(f"block dimension: grid rank {p} needs 0 <= start <= stop <= "
                                 f"size, got start {start}, stop {stop}, size {size}")
            if minor == 10:
                if stop - start != n:
                    raise ValueError(f"block dimension: stop - start of grid rank {p} "
                                     f"({stop} - {start} = {stop - start}) must equal its buffer "
                                     f"length ({n})")
                lo, hi = start + comm_lo, stop - comm_hi
                if lo > hi:
                    raise ValueError(f"block dimension: communication padding {(comm_lo, comm_hi)} "
                                     f"of grid rank {p} exceeds its buffer range [{start}, {stop})")
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
                    raise ValueError(f"block dimension: stop - start plus communication padding "
                                     f"of grid rank {p} ({stop - start + comm_lo + comm_hi}) must "
                                     f"equal its buffer length ({n})")
                lo, hi = start, stop
            owned.append((lo, hi, comm_lo or comm_hi))
        if owned[0][0] != 0:
            raise ValueError(f"block dimension: owned start of grid rank 0 ({owned[0][0]}) must "
                             f"be 0 (blocks cover [0, size))")
        for p in range(P - 1):
            (_, hi, padded), (lo, _, padded_next) = owned[p], owned[p + 1]
            if hi != lo:
                if padded or padded_next:
                    raise ValueError(
                        f"block dimension: owned stop of grid rank {p} ({hi}) must equal owned "
                        f"start of grid rank {p + 1} ({lo}) (adjacent blocks; owned = start..stop "
                        f"without communication padding)")
                raise ValueError(f"block dimension: stop of grid rank {p} ({hi}) must equal "
                                 f"start of grid rank {p + 1} ({lo}) (adjacent blocks)")
        if owned[-1][1] != size:
            raise ValueError(f"block dimension: owned stop of grid rank {P - 1} ({owned[-1][1]}) "
                             f"must equal size ({size}) (blocks cover [0, size))")
        bounds = [0] + [hi for _, hi, _ in owned]
        return BlockMap(size, P, bounds, paddings, bool(periodic))

    def to_json(self):
        return {"dist_type": "b", "size": self.size, "grid_size": self.grid_size,
                "bounds": list(self.bounds), "padding": [list(p) for p in self._padding],
                "periodic": self.periodic}

    @classmethod
    def _from_json(cls, d, arrays):
        return BlockMap(d["size"], d["grid_size"], bounds=d["bounds"],
                        padding=[tuple(p) for p in d["padding"]], periodic=d["periodic"])

    def tiles(self) -> Tiles:
        """One tile per grid rank: its OWNED range (padding left out)."""
        g = self.grid_size
        b = np.asarray(self.bounds, np.int64)
        local = np.array([self.comm_padding(p)[0] for p in range(g)], np.int64)
        return Tiles(b[:-1], np.diff(b), np.arange(g), local)

    def __repr__(self):
        s = f"BlockMap(size={self.size}, grid_size={self.grid_size}, bounds={self.bounds}"
        if any(lo or hi for lo, hi in self._padding):
            s += f", padding={self._padding}"
        if self.periodic:
            s += ", periodic=True"
        return s + ")"



def _normalise_padding(padding, P: int) -> tuple:
    if padding is None:
        return ((0, 0),) * P
    padding = list(padding) if not isinstance(padding, np.ndarray) else padding.tolist()
    if len(padding) == 2 and all(is_int(x) for x in padding):
        padding = [padding] * P          # one (lo, hi) for every rank
    if len(padding) != P:
        raise ValueError(f"block dimension: padding must be one (lo, hi) or one per grid rank "
                         f"({P}), got {len(padding)} entries")
    return tuple(_padding_pair(pad, p) for p, pad in enumerate(padding))


def _padding_pair(pad, p: int) -> tuple[int, int]:
    if isinstance(pad, np.ndarray):
        pad = pad.tolist()
    if (not isinstance(pad, Sequence) or isinstance(pad, str) or len(pad) != 2
            or not all(is_int(x) for x in pad)):
        raise TypeError(f"block dimension: padding of grid rank {p} must be a 2-tuple of ints, "
                        f"got {pad!r}")
    if pad[0] < 0 or pad[1] < 0:
        raise ValueError(f"block dimension: padding of grid rank {p} must be non-negative, "
                         f"got {tuple(pad)}")
    return int(pad[0]), int(pad[1])


MAP_KINDS["b"] = BlockMap


def _padding_spec(name: str, padding, grid_size: int):
    """A ``dist=`` padding option: one ``(lo, hi)`` for every grid rank, or
    one pair per grid rank (as DAP allows and ``BlockMap`` holds)."""
    items = padding.tolist() if isinstance(padding, np.ndarray) else padding
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"{name} must be (lo, hi) or one (lo, hi) per grid rank, "
                        f"got {padding!r}") from None
    if len(items) == 2 and not any(isinstance(v, (list, tuple, np.ndarray)) for v in items):
        return int_tuple(name, items, 0)
    if len(items) != grid_size:
        raise ValueError(f"{name} must be (lo, hi) or one (lo, hi) per grid rank "
                         f"({grid_size}), got {len(items)} entries")
    return [int_tuple(f"{name}[{p}]", pair, 0) for p, pair in enumerate(items)]
