"""The interface every dimension map implements, and the helpers they share.

A map is a *global* description of ONE array dimension over a 1-d process
grid: it knows the part held by every grid rank ``p = 0 .. grid_size-1``.
Pure NumPy, no MPI.  The kinds -- each in its own module -- are registered
in ``MAP_KINDS`` by their DAP letter.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

__all__ = ["Map", "Tiles", "MAP_KINDS", "NotLocal", "is_int", "dap_minor", "as_slice",
           "int_arg", "is_bool", "as_int64", "check_range", "common_flag", "int_tuple"]

# the kinds, by DAP letter: filled by each kind's module as it is imported
MAP_KINDS: dict = {}

_I64 = np.dtype(np.int64)
_I64_MAX = np.iinfo(np.int64).max


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def is_int(v) -> bool:
    """An integer argument: Python or NumPy int, never a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def int_arg(name: str, v, minimum: int | None = None) -> int:
    if not is_int(v):
        raise TypeError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
    v = int(v)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def int_tuple(name: str, values, minimum: int) -> tuple:
    """``values`` as a tuple of ints: integers only (Python or NumPy, never
    bool, float or Decimal), each >= ``minimum`` -- else the error naming
    ``name`` and the value."""
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of ints, got {values!r}") from None
    for v in values:
        if not is_int(v):
            raise TypeError(f"{name} must hold ints, got {v!r} ({type(v).__name__})")
        if v < minimum:
            raise ValueError(f"{name} must hold ints >= {minimum}, got {v}")
    return tuple(int(v) for v in values)


def dap_minor(version: str) -> int:
    """0.9.x -> 9, 0.10.x -> 10; the only two DAP dialects we speak."""
    parts = str(version).split(".")
    if len(parts) >= 2 and parts[0] == "0" and parts[1] in ("9", "10"):
        return int(parts[1])
    raise ValueError(f"unsupported DAP version {version!r} (supported: 0.9.x, 0.10.x)")


def as_int64(a, what: str) -> np.ndarray:
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


def check_range(a: np.ndarray, bound: int, what: str, where: str = "") -> None:
    """Raise unless every element of int64 ``a`` is in [0, bound).

    One reduction pass: viewed as uint64, negative values become huge, so
    ``max < bound`` tests both ends at once.  The slow masked search only
    runs on failure, to name the offending value.
    """
    if a.size and int(a.view(np.uint64).max()) >= bound:
        bad = int(a[(a < 0) | (a >= bound)].flat[0])
        raise ValueError(f"{what} {bad} out of range [0, {bound}){where}")


def as_slice(a):
    """An ascending run of consecutive ints as a slice; anything else as is."""
    if isinstance(a, slice):
        return a
    if isinstance(a, range) and a.step == 1:    # never materialised: it may be huge
        return slice(a.start, max(a.start, a.stop))
    a = np.asarray(a, np.int64)
    if a.size == 0:
        return slice(0, 0)
    first = int(a[0])
    if int(a[-1]) - first == a.size - 1 and (a.size == 1 or bool((np.diff(a) == 1).all())):
        return slice(first, first + a.size)
    return a


class NotLocal(RuntimeError):
    """An operation needed another process's part of a distributed map (an
    engine bug: engines ask the directory for those)."""


@dataclass(frozen=True)
class Tiles:
    """A dimension cut into rectangular tiles (``__partitioned__``), in
    global order: each tile's global start, size, the grid rank holding it
    and its start in that rank's buffer."""
    start: np.ndarray
    size: np.ndarray
    coord: np.ndarray
    local: np.ndarray



# --------------------------------------------------------------------------
# the common interface
# --------------------------------------------------------------------------

class Map:
    """Abstract map of one dimension of global size ``size`` over
    ``grid_size`` grid ranks.  Subclasses set ``dist_type`` and ``name``.

    Immutable; ``==`` compares the full description and ``hash`` its
    fingerprint.
    """

    dist_type: str = "?"
    name: str = "?"
    size: int
    grid_size: int
    periodic: bool = False
    complete = True          # every process knows every grid rank's part
    stored_indices = False   # the store keeps an index table for it (io.store_format)
    # ghost copies are entries found by their global index (unstructured:
    # indices held by several ranks), not padding next to an owned block
    ghosts_by_index = False

    # -- what it is, in words -------------------------------------------------
    @property
    def spec(self) -> str:
        """The map in a few letters, as ``dist=`` spells it: ``'b'``,
        ``'c'``, ``'c[4]'`` (block-cyclic), ``'u'``, ``'b+pad'``; ``'n'`` for
        an undistributed dimension."""
        return self.dist_type

    def describe(self) -> str:
        """The map in words, for pictures and messages: ``'block'``,
        ``'block-cyclic(4)'``, ``'unstructured'``, ``'n'`` ...; ``' padded'``
        appended for padded blocks."""
        return self.name if self.grid_size > 1 else "n"

    @property
    def padded(self) -> bool:
        """Whether any grid rank's buffer has padding (blocks only)."""
        return False

    @classmethod
    def kind_of(cls, spec) -> type:
        """The map class of a dist letter (``'b'``, ``'c'``, ``'u'``; ``'n'``
        is a block over one rank) or of a map's JSON form.

        >>> Map.kind_of("c").__name__, Map.kind_of({"dist_type": "u"}).__name__
        ('CyclicMap', 'UnstructuredMap')
        """
        letter = spec.get("dist_type") if isinstance(spec, dict) else spec
        if letter == "n":
            letter = "b"
        kind = MAP_KINDS.get(letter) if isinstance(letter, str) else None
        if kind is None:
            raise ValueError(f"unknown dist type {letter!r}: use 'b' (block), 'c' (cyclic), "
                             "'u' (unstructured) or 'n' (not distributed)")
        return kind

    # -- per-rank layout ----------------------------------------------------
    def local_size(self, p: int) -> int:
        """Buffer length on grid rank ``p`` along this dimension (incl. padding)."""
        raise NotImplementedError

    def owned_count(self, p: int) -> int:
        """DAP ``num_owned_indices`` of grid rank ``p``."""
        raise NotImplementedError

    def comm_padding(self, p: int) -> tuple[int, int]:
        """``(lo, hi)`` communication-padding widths of grid rank ``p``: the
        ghost cells at either end of its buffer (none but for padded blocks)."""
        self._check_rank(p)
        return (0, 0)

    @property
    def padding(self) -> tuple:
        """``(lo, hi)`` padding of every grid rank (boundary and communication)."""
        return ((0, 0),) * self.grid_size

    def owned_local_slice(self, p: int) -> slice:
        """The local positions grid rank ``p`` owns, as a ``slice`` of its buffer.

        ``buf[m.owned_local_slice(p)]`` is a view of the owned data.  Only
        padded blocks exclude anything (their communication padding); for
        cyclic and unstructured maps it is the whole buffer -- including, for
        an unstructured map with ``one_to_one=False``, indices also held
        elsewhere (DAP counts them on every holder; :meth:`owners` picks the
        lowest holding rank as the canonical copy).
        """
        lo = self.comm_padding(p)[0]
        return slice(lo, lo + self.owned_count(p))

    def canonical_positions(self, p: int):
        """The local positions of grid rank ``p`` whose global index ``p`` is
        the canonical owner of (:meth:`owners`): every global index counts on
        exactly one rank. The owned slice, except for an unstructured map with
        ``one_to_one=False``, where an index held by several ranks counts on
        the lowest one only (an int64 array then).

        >>> from xdap.maps import UnstructuredMap
        >>> UnstructuredMap(3, [[0, 1], [1, 2]]).canonical_positions(1)
        array([1])
        """
        return self.owned_local_slice(p)

    def piece_positions(self, ranks: np.ndarray, local: np.ndarray) -> np.ndarray:
        """For buffer positions ``local`` of the canonical copies held by grid
        ranks ``ranks`` (as :meth:`owners` returns them): their position in
        that rank's canonical piece, ``buf[canonical_positions(p)]``."""
        lo = np.array([self.comm_padding(p)[0] for p in range(self.grid_size)], np.int64)
        return local - lo[ranks]

    def global_indices(self, p: int) -> np.ndarray:
        """Global index of each local buffer position on grid rank ``p`` (int64)."""
        raise NotImplementedError

    def buffer_indices(self, p: int):
        """Global indices of grid rank ``p``'s whole buffer: a ``range`` when
        they are consecutive, else an int64 array (:meth:`global_indices`)."""
        return self.global_indices(p)

    def canonical_indices(self, p: int):
        """Global indices of grid rank ``p``'s canonical piece (its
        :meth:`canonical_positions`), in buffer order: a ``range`` when
        they are consecutive (blocks), else an int64 array."""
        return np.asarray(self.global_indices(p))[self.canonical_positions(p)]

    @property
    def has_copies(self) -> bool:
        """Whether some global index sits in more than one buffer (ghost
        padding, or indices shared by several unstructured ranks)."""
        return any(self.local_size(p) != self.owned_count(p) for p in range(self.grid_size))

    @property
    def whole(self) -> bool:
        """Whether every rank holds this dim whole and in global order (one
        grid position, no padding, not permuted): what a kernel's core dim,
        a local slice or a local sort needs."""
        return self.grid_size == 1 and not self.padded and self.dist_type in ("b", "c")

    @property
    def shared_owned(self) -> bool:
        """Whether an index is *owned* by several ranks (an unstructured map
        that is not one-to-one): copies that ``owned_local_slice`` does not
        leave out, unlike ghost padding."""
        return self.has_copies and not self.padded

    @property
    def contiguous(self) -> bool:
        """Whether each grid rank's buffer is one range of global indices, in
        grid-rank order, without copies (unpadded blocks)."""
        return False

    @property
    def ranges(self) -> bool:
        """Whether every grid rank's buffer (and its owned part) is one range
        of global indices: blocks, padded or not.  Moving such parts is
        moving slabs (MPI subarrays, no packing)."""
        return False

    # -- translation --------------------------------------------------------
    def owners(self, g) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised owner lookup: ``(ranks, local)`` for global indices ``g``.

        ``ranks`` is the grid rank that owns each index (never a padding
        copy) and ``local`` its local position there; both int64 and shaped
        like ``g``.  ValueError names the first index outside ``[0, size)``.
        """
        raise NotImplementedError

    def holders(self, g) -> tuple:
        """Every buffer position holding the global indices ``g`` (owners and
        copies): ``(which, ranks, local)`` -- entry ``i`` says that ``g[which[i]]``
        sits at position ``local[i]`` of grid rank ``ranks[i]``."""
        g = as_int64(g, "global index").reshape(-1)
        which, ranks, local = [], [], []
        for p in range(self.grid_size):
            mine = self.global_indices(p)
            hit = np.isin(g, mine)
            if hit.any():
                at = np.flatnonzero(hit)
                which.append(at)
                ranks.append(np.full(len(at), p, np.int64))
                local.append(self.local_from_global(p, g[at]))
        if not which:
            return (np.zeros(0, np.int64),) * 3
        return tuple(np.concatenate(x) for x in (which, ranks, local))

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
        l = as_int64(l, "local index")
        check_range(l, self.local_size(p), "local index", f" on grid rank {p}")
        return self._global_from_local(p, l)

    def _global_from_local(self, p: int, l: np.ndarray) -> np.ndarray:
        return self.global_indices(p)[l]

    def locate(self, need) -> list:
        """Where the global indices ``need`` (a range or an int array) sit:
        ``[(grid rank j, selection of need, selection of j's canonical piece)]``
        for every j whose piece holds some of them; selections are slices when
        contiguous, else int64 arrays, and together cover ``need``."""
        g = np.arange(need.start, need.stop, dtype=np.int64) if isinstance(need, range) \
            else np.asarray(need, np.int64)
        ranks, local = self.owners(g)
        ppos = self.piece_positions(ranks, local)
        out = []
        for j in np.unique(ranks):
            sel = np.flatnonzero(ranks == j)
            out.append((int(j), as_slice(sel), as_slice(ppos[sel])))
        return out

    # -- other maps of the same kind ----------------------------------------
    def without_padding(self) -> "Map":
        """This map with its communication padding dropped (the owned parts)."""
        return self

    def resized(self, grid_size: int) -> "Map":
        """The same kind of map over ``grid_size`` grid ranks: blocks stay
        balanced blocks (with their padding while it fits, and periodic
        flag), cyclic keeps its block size; unstructured becomes block."""
        raise NotImplementedError

    # -- wire forms ---------------------------------------------------------
    def to_dim_dict(self, p: int, version: str = "0.10.0") -> dict:
        """The DAP dimension dictionary of grid rank ``p``."""
        raise NotImplementedError

    @classmethod
    def from_dim_dicts(cls, dicts, lengths, size: int, minor: int) -> "Map":
        """The map described by every grid rank's DAP dict of this kind
        (``dicts[p]``, checked for the protocol's generic rules by
        ``xdap.protocols.dap_dims``) and buffer length ``lengths[p]``;
        ValueError/TypeError names the kind's rule, the grid rank and value."""
        raise NotImplementedError

    def to_json(self) -> dict:
        """The map as JSON (save manifests); the arrays of
        :meth:`json_arrays` are stored beside it."""
        raise NotImplementedError

    def json_arrays(self) -> dict:
        """Arrays that :meth:`to_json` leaves out (unstructured indices)."""
        return {}

    @staticmethod
    def from_json(d: dict, arrays: dict | None = None) -> "Map":
        """The map of a :meth:`to_json` dict (and its :meth:`json_arrays`);
        the constructors validate everything.

        >>> Map.from_json({"dist_type": "c", "size": 5, "grid_size": 2, "block_size": 2})
        CyclicMap(size=5, grid_size=2, block_size=2)
        """
        if not isinstance(d, dict) or d.get("dist_type") not in MAP_KINDS:
            raise ValueError(f"not a dimension map: {d!r:.100} (dist_type must be one of "
                             f"{', '.join(MAP_KINDS)})")
        return MAP_KINDS[d["dist_type"]]._from_json(d, arrays or {})

    @classmethod
    def resized_from_json(cls, d: dict, grid_size: int) -> "Map":
        """The map of a saved JSON form, resized over ``grid_size`` grid
        ranks (a load onto another number of ranks)."""
        return Map.from_json(d).resized(grid_size)

    # whether a map of this kind over ONE grid rank is still a distribution
    # choice that a load onto more ranks spreads (cyclic order), rather than
    # an undistributed dimension
    stays_distributed = False

    @classmethod
    def from_spec(cls, size: int, grid_size: int, option) -> "Map":
        """The map a ``dist=`` letter of this kind names, with its one
        per-dimension option (``make_distribution``)."""
        raise NotImplementedError

    def tiles(self) -> Tiles:
        """How this dimension is cut into rectangular tiles for
        ``__partitioned__`` (ValueError for unstructured maps)."""
        raise NotImplementedError

    def fingerprint(self) -> bytes:
        """A 16-byte digest of everything that defines the map (cache keys;
        the same on every process for equal maps)."""
        fp = self.__dict__.get("_fp")
        if fp is None:
            h = hashlib.blake2b(json.dumps(self.to_json(), sort_keys=True).encode(), digest_size=16)
            for key, a in sorted(self.json_arrays().items()):
                h.update(key.encode())
                h.update(np.ascontiguousarray(a, np.int64).tobytes())
            fp = self.__dict__["_fp"] = h.digest()
        return fp

    # -- value semantics ----------------------------------------------------
    def __eq__(self, other):
        # the kind, not the class: a distributed unstructured map equals the
        # complete one of the same layout
        if not isinstance(other, Map) or other.dist_type != self.dist_type:
            return NotImplemented
        return self is other or self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)

    def _freeze(self):
        object.__setattr__(self, "_frozen", True)

    def _common(self, p: int) -> dict:
        return {"dist_type": self.dist_type, "size": self.size,
                "proc_grid_size": self.grid_size, "proc_grid_rank": p}

    def _check_rank(self, p) -> None:
        if not is_int(p) or not 0 <= p < self.grid_size:
            raise ValueError(f"grid rank {p!r} out of range [0, {self.grid_size})")



def common_flag(dicts, key: str, kind: str) -> bool:
    """An optional bool key (default False) that must agree on every grid rank."""
    first = dicts[0].get(key, False)
    for p, d in enumerate(dicts):
        v = d.get(key, False)
        if not is_bool(v):
            raise TypeError(f"{kind} dimension: {key} of grid rank {p} must be a bool, got {v!r}")
        if v != first:
            raise ValueError(f"{kind} dimension: {key} of grid rank {p} ({v}) differs "
                             f"from grid rank 0 ({first})")
    return bool(first)

