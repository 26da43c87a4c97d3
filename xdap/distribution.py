"""A Distribution: a Cartesian process grid plus one map per dimension,
bound to a communicator.

The grid assigns ranks to coordinates in C order (the DAP and MPI_Cart_create
convention: the last coordinate varies fastest), unless an imported DAP
array says otherwise, in which case the explicit rank -> coordinates table
is kept.

A Distribution is immutable and hashable; ``fingerprint()`` is a digest of
its maps and rank placement (not of the communicator), the same on every
process, so plans can be cached on it.

>>> from mpi4py import MPI
>>> d = make_distribution((10, 6), ("b", "c"), comm=MPI.COMM_SELF)
>>> d.grid, d.local_shape, d.global_indices(1).tolist()
((1, 1), (10, 6), [0, 1, 2, 3, 4, 5])
>>> d == make_distribution((10, 6), ("b", "c"), comm=MPI.COMM_SELF), len(d.fingerprint())
(True, 16)
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from . import comm as _comm
from .contract import Contract, pure
from .maps import BlockMap, Map
from .maps.base import int_tuple

__all__ = ["Distribution", "make_distribution", "row_block_layout", "DIST_TYPES"]

DIST_TYPES = ("b", "c", "u", "n")


class Distribution:
    """Grid + maps + communicator. Immutable; compare with ``==``.

    maps         one Map per dimension (grid size 1 for undistributed ones)
    comm         the mpi4py communicator (its size == product of the grid)
    rank_coords  optional (size, ndim) int array: grid coordinates of each
                 rank when they are not the C-order default

    ``Distribution.detached(maps, rank_coords)`` is the same description
    without a communicator (``comm`` and ``coords`` None): what the pure
    planners and their one-rank tests work on.
    """

    # built from its arguments alone, on each rank: no MPI call
    __xdap_contract__ = Contract("pure", "Distribution", ("maps", "comm", "rank_coords"))

    __slots__ = ("maps", "comm", "grid", "coords", "_placement", "_fp", "_at", "global_shape",
                 "_counted", "_local_shape")

    def __init__(self, maps, comm=None, rank_coords=None):
        comm = _comm.resolve(comm)
        self._setup(maps, comm, rank_coords)

    @classmethod
    def detached(cls, maps, rank_coords=None) -> "Distribution":
        """A Distribution without a communicator (a pure description).

        >>> d = Distribution.detached([BlockMap(6, 2)])
        >>> d.size, d.local_shape_of(1), d.comm is None
        (2, (3,), True)
        """
        self = object.__new__(cls)
        self._setup(maps, None, rank_coords)
        return self

    def _setup(self, maps, comm, rank_coords):
        maps = tuple(maps)
        if not all(isinstance(m, Map) for m in maps):
            raise TypeError(f"a Distribution needs one xdap.maps.Map per dimension, got {maps!r}")
        grid = tuple(m.grid_size for m in maps)
        n = math.prod(grid)
        # no maps: a 0-d array, its one element replicated on every rank
        if comm is not None and n != comm.size and maps:
            raise ValueError(f"process grid {grid} has {n} positions "
                             f"but the communicator has {comm.size} ranks "
                             "(product of the grid sizes must equal the number of processes)")
        placement = None
        if rank_coords is not None:
            placement = np.asarray(rank_coords, dtype=np.int64).reshape(n, -1)
            if np.array_equal(placement, _c_order(grid, n)):
                placement = None
            else:
                at = np.full(grid, -1, np.int64)
                if placement.shape[1] == len(grid) and ((placement >= 0) & (placement < grid)).all():
                    at[tuple(placement.T)] = np.arange(n)
                if (at < 0).any():
                    raise ValueError("rank_coords must give every rank distinct grid "
                                     f"coordinates inside the grid {grid}")
                placement.flags.writeable = False
        set_ = object.__setattr__
        set_(self, "maps", maps)
        # read by every call's checks: kept, not rebuilt (maps do not change)
        set_(self, "global_shape", tuple(m.size for m in maps))
        set_(self, "comm", comm)
        set_(self, "grid", grid)
        set_(self, "_placement", placement)
        set_(self, "_fp", None)
        set_(self, "_at", None)
        set_(self, "_counted", None)
        set_(self, "_local_shape", None)
        set_(self, "coords", None if comm is None else self.coords_of(comm.rank))

    def __setattr__(self, name, value):
        raise AttributeError("a Distribution is immutable")

    # immutable, and holding its communicator: a copy is itself (copy.deepcopy of
    # an array -- xarray's deep copies -- shares the distribution, as NumPy the dtype)
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def require_dims(self, operation: str) -> None:
        """Refuse an operation that needs a dimension on a 0-d array (one
        element that every rank holds): ValueError, alike on every rank."""
        if not self.maps:
            raise ValueError(f"{operation}: a 0-d array (one element, held by every rank) has "
                             "no dimension to move along; use its value (a.local, "
                             "a.local_numpy(), a.to_global())")

    def with_trailing(self, shape) -> "Distribution":
        """This distribution with undistributed dims of the given sizes
        appended (the fixed dims inside a record field, ``pos: 3 * float64``):
        the same ranks at the same grid positions.

        >>> d = Distribution.detached([BlockMap(6, 2)]).with_trailing((3,))
        >>> d.global_shape, d.grid, d.local_shape_of(1)
        ((6, 3), (2, 1), (3, 3))
        """
        shape = tuple(shape)
        if not shape:
            return self
        maps = self.maps + tuple(BlockMap(int(n), 1) for n in shape)
        coords = None
        if self._placement is not None:
            coords = np.hstack([self._placement, np.zeros((len(self._placement), len(shape)),
                                                          np.int64)])
        if self.comm is None:
            return Distribution.detached(maps, coords)
        new = object.__new__(Distribution)
        new._setup(maps, self.comm, coords)
        return new

    def leading(self, n: int) -> "Distribution":
        """The distribution of the first ``n`` dims alone -- the loop dims of
        a kernel whose core dims (the rest) are whole on every rank: the
        same ranks at the same grid positions.

        >>> d = Distribution.detached([BlockMap(6, 2), BlockMap(3, 1)])
        >>> d.leading(1) == Distribution.detached([BlockMap(6, 2)])
        True
        """
        if n == self.ndim:
            return self
        if any(m.grid_size != 1 for m in self.maps[n:]):
            raise ValueError(f"dims {n}.. of {self!r} are distributed: they cannot be dropped")
        coords = None if self._placement is None or n == 0 else self._placement[:, :n]
        if self.comm is None:
            return Distribution.detached(self.maps[:n], coords)
        new = object.__new__(Distribution)
        new._setup(self.maps[:n], self.comm, coords)
        return new

    @property
    def row_blocks(self) -> bool:
        """Whether dim 0 is in unpadded blocks and every other dim whole: each
        rank's elements are then one range of the global C order.

        >>> Distribution.detached([BlockMap(6, 2), BlockMap(3, 1)]).row_blocks
        True
        """
        return bool(self.maps) and self.maps[0].ranges and not self.maps[0].padded and \
            not self.maps[0].shared_owned and all(m.whole for m in self.maps[1:])

    # -- grid ---------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.maps)

    @property
    def size(self) -> int:
        """Number of ranks (the communicator's size)."""
        return math.prod(self.grid)

    def coords_of(self, rank: int) -> tuple:
        """Grid coordinates of a rank."""
        if self._placement is not None:
            return tuple(int(c) for c in self._placement[rank])
        return tuple(int(c) for c in np.unravel_index(rank, self.grid)) if self.grid else ()

    @property
    def rank_coords(self) -> np.ndarray:
        """Grid coordinates of every rank: a read-only int64 array
        ``(nranks, ndim)``, row ``r`` = ``coords_of(r)`` (C order unless the
        distribution was given another placement).

        >>> from mpi4py import MPI
        >>> make_distribution((4, 6), ("b", "b"), (1, 1), MPI.COMM_SELF).rank_coords.tolist()
        [[0, 0]]
        """
        if self._placement is not None:
            return self._placement
        return _c_order(self.grid, self.size)

    @property
    def c_order(self) -> bool:
        """Whether ranks sit on the grid in C order (no explicit placement)."""
        return self._placement is None

    def rank_of(self, coords) -> int:
        """The rank at given grid coordinates."""
        if self._placement is None:
            return int(np.ravel_multi_index(tuple(coords), self.grid)) if self.grid else 0
        if self._at is None:
            at = np.empty(self.grid, np.int64)
            at[tuple(self._placement.T)] = np.arange(self.size)
            object.__setattr__(self, "_at", at)
        return int(self._at[tuple(coords)])

    def ranks_along(self, dim: int) -> np.ndarray:
        """The rank at each grid position along ``dim``, the other
        coordinates 0 -- where ``dim`` alone is distributed, the rank that
        holds each of its grid positions (an owner lookup's answer as ranks).

        >>> from mpi4py import MPI
        >>> make_distribution((4, 3), ("b", "n"), comm=MPI.COMM_SELF).ranks_along(0).tolist()
        [0]
        """
        corner = [0] * self.ndim
        out = np.empty(self.grid[dim], np.int64)
        for q in range(self.grid[dim]):
            corner[dim] = q
            out[q] = self.rank_of(corner)
        return out

    # -- shapes and indices ---------------------------------------------------
    def local_shape_of(self, rank: int) -> tuple:
        c = self.coords_of(rank)
        return tuple(m.local_size(p) for m, p in zip(self.maps, c))

    @property
    def local_shape(self) -> tuple:
        """This rank's block shape (found once: every call's checks read it)."""
        shape = self._local_shape
        if shape is None:
            shape = tuple(m.local_size(p) for m, p in zip(self.maps, self.coords))
            object.__setattr__(self, "_local_shape", shape)
        return shape

    def global_indices(self, dim: int, rank: int | None = None) -> np.ndarray:
        """Global index of each local position along dim, on rank (default: this one)."""
        c = self.coords if rank is None else self.coords_of(rank)
        return self.maps[dim].global_indices(c[dim])

    def owned_positions(self, dim: int, rank: int | None = None) -> np.ndarray:
        """Local positions along dim that the rank owns (not communication padding)."""
        c = self.coords if rank is None else self.coords_of(rank)
        m = self.maps[dim]
        return np.arange(m.local_size(c[dim]))[m.owned_local_slice(c[dim])]

    def canonical_positions(self, rank: int | None = None) -> list:
        """Per dim, the local positions whose global index counts on the rank
        (``Map.canonical_positions``): every global element counts once."""
        c = self.coords if rank is None else self.coords_of(rank)
        return [m.canonical_positions(p) for m, p in zip(self.maps, c)]

    def counted(self) -> tuple:
        """``(selection, whole)``: this rank's ``canonical_positions`` per
        dim, and whether they are its whole local block (no padding, no
        copy another rank counts) -- what a reduction counts, found once.

        >>> from mpi4py import MPI
        >>> make_distribution((4,), ("b",), comm=MPI.COMM_SELF).counted()[1]
        True
        """
        if self._counted is None:
            sel = tuple(m.canonical_positions(c) for m, c in zip(self.maps, self.coords))
            whole = all(isinstance(s, slice) and s.indices(m.local_size(c)) ==
                        (0, m.local_size(c), 1) for s, m, c in zip(sel, self.maps, self.coords))
            object.__setattr__(self, "_counted", (sel, whole))
        return self._counted

    def dim_data(self, version: str = "0.10.0", rank: int | None = None) -> tuple:
        """DAP dimension dictionaries of a rank (default: this one)."""
        c = self.coords if rank is None else self.coords_of(rank)
        return tuple(m.to_dim_dict(p, version=version) for m, p in zip(self.maps, c))

    @property
    def is_contiguous_1d(self) -> bool:
        """True when each rank's owned indices along dim 0 are one range in
        rank order, no other dim is distributed, and there is no padding --
        the case where a flattened ragged array stays block distributed."""
        return bool(self.maps) and (self.maps[0].contiguous and all(g == 1 for g in self.grid[1:])
                and self._placement is None)

    def team_ranks(self, axes) -> list:
        """The ranks that differ from this one only on grid ``axes`` (this
        rank included), in rank order -- pure.

        >>> from mpi4py import MPI
        >>> make_distribution((4, 4), ("b", "b"), (1, 1), MPI.COMM_SELF).team_ranks((0,))
        [0]
        """
        keep = [k for k in range(self.ndim) if k not in axes]
        table = self.rank_coords[:, keep]
        return np.flatnonzero((table == np.asarray(self.coords, np.int64)[keep]).all(axis=1)).tolist()

    # -- identity -------------------------------------------------------------
    def fingerprint(self) -> bytes:
        """A 16-byte digest of the maps and the rank placement (not of the
        communicator): equal on every process for equal distributions."""
        if self._fp is None:
            h = hashlib.blake2b(digest_size=16)
            for m in self.maps:
                h.update(m.fingerprint())
            if self._placement is not None:
                h.update(self._placement.tobytes())
            object.__setattr__(self, "_fp", h.digest())
        return self._fp

    def __eq__(self, other):
        if not isinstance(other, Distribution):
            return NotImplemented
        return self is other or self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        maps = ", ".join(repr(m) for m in self.maps)
        return f"Distribution(grid={self.grid}, maps=({maps}))"


def _c_order(grid: tuple, n: int) -> np.ndarray:
    if not grid:
        return np.zeros((n, 0), np.int64)
    return np.array(np.unravel_index(np.arange(n), grid), np.int64).T.reshape(n, -1)


def _per_dim(name, value, ndim):
    """Normalise a per-dimension option to a tuple of length ndim."""
    if value is None:
        return (None,) * ndim
    if not isinstance(value, (list, tuple)) or len(value) != ndim:
        raise ValueError(f"{name} must be a sequence with one entry per dimension "
                         f"({ndim}), got {value!r}")
    return tuple(value)


def row_block_layout(global_shape, comm, sizes=None) -> tuple:
    """The plain blocks of rows of ``global_shape`` over ``comm`` -- the
    layout files are read and written in, each rank one range of rows
    (``sizes``: each rank's count, default balanced) -- and this rank's
    rows ``(start, stop)`` (a 0-d array: ``(0, 0)``, every rank holding
    the one element)."""
    d = make_distribution(global_shape, ("b",) if len(global_shape) else None, comm=comm,
                          sizes=None if sizes is None or not len(global_shape) else (sizes,))
    if not len(global_shape):
        return d, 0, 0
    bounds, c = d.maps[0].bounds, d.coords[0]
    return d, int(bounds[c]), int(bounds[c + 1])


_MADE: dict = {}      # (id of comm, shape, dist, grid) -> (comm, the Distribution made)


def _plain(value):
    """``value`` as a memo key where it is None, an int, a str or a tuple
    of them (a shape, a dist, a grid), else the key's absence (None)."""
    kind = type(value)
    if value is None or kind is int or kind is str:
        return kind, value
    if kind is tuple and all(type(v) is int or type(v) is str for v in value):
        return (kind,) + tuple((type(v), v) for v in value)
    return None


@pure
def make_distribution(global_shape, dist=None, grid=None, comm=None, *, block_size=None,
                      padding=None, periodic=None, indices=None, sizes=None) -> Distribution:
    """``_make_distribution``; the common calls -- a shape, a dist and a
    grid of plain values, no per-dim options -- give the one Distribution
    made for them on this communicator (kept: ``xp.zeros(n)`` in a loop
    builds none, and arrays made alike share it, as operands of one
    distribution)."""
    if block_size is None and padding is None and periodic is None and indices is None and \
            sizes is None:
        comm = _comm.resolve(comm)
        key = (id(comm), _plain(global_shape), _plain(dist), _plain(grid))
        if None not in key[1:]:
            kept = _MADE.get(key)
            if kept is not None and kept[0] is comm:
                return kept[1]
            made = _make_distribution(global_shape, dist, grid, comm)
            if len(_MADE) >= 256:
                _MADE.clear()
            _MADE[key] = (comm, made)          # holds the comm: its id is not reused
            return made
    return _make_distribution(global_shape, dist, grid, comm, block_size=block_size,
                              padding=padding, periodic=periodic, indices=indices, sizes=sizes)


def _make_distribution(global_shape, dist=None, grid=None, comm=None, *, block_size=None,
                       padding=None, periodic=None, indices=None, sizes=None) -> Distribution:
    """Build a Distribution from user options (validated, the same on every rank).

    dist        one of 'b' (block), 'c' (cyclic / block-cyclic), 'u'
                (unstructured), 'n' (not distributed) per dimension; dims
                past the end of dist are 'n'; default: block on dim 0
    grid        processes per dimension; default: a balanced factorisation of
                the communicator over the distributed dims ('n' dims get 1)
    block_size  per dim: block size of a 'c' dim (1 = cyclic)
    padding     per dim: (lo, hi) padding of a 'b' dim on every rank; the
                outer edges are boundary padding, the rest halo cells
    periodic    per dim: bool, for 'b' dims
    indices     per dim: for a 'u' dim, a list of index arrays, one per grid rank
    sizes       per dim: for a 'b' dim, owned sizes per grid rank (irregular)
    """
    comm = _comm.resolve(comm)
    global_shape = int_tuple("the global shape", global_shape, 0)
    ndim = len(global_shape)
    if ndim == 0:
        if dist not in (None, (), "") or grid not in (None, ()) or any(
                v not in (None, ()) for v in (block_size, padding, periodic, indices, sizes)):
            raise ValueError("a 0-d array (one element, held by every rank) has no dimension "
                             f"to distribute: give no dist, grid or per-dim options (dist={dist!r})")
        return Distribution((), comm)
    if dist is None:
        dist = ("b",) + ("n",) * (ndim - 1)
    if isinstance(dist, str):
        dist = tuple(dist)
    dist = tuple(dist)
    if len(dist) > ndim or (len(dist) == 0 and ndim > 0):
        raise ValueError(f"dist needs one entry per dimension ({ndim}), got {dist!r}")
    # Trailing dims not named in dist are not distributed, as are their
    # per-dim options and grid entries.
    pad = ndim - len(dist)
    dist = dist + ("n",) * pad
    if grid is not None:
        grid = tuple(grid) + (1,) * pad if len(tuple(grid)) == ndim - pad else tuple(grid)
    block_size, padding, periodic, indices, sizes = (
        tuple(v) + (None,) * pad if isinstance(v, (list, tuple)) and len(v) == ndim - pad else v
        for v in (block_size, padding, periodic, indices, sizes))
    for d in dist:
        Map.kind_of(d)                      # ValueError for an unknown letter
    block_size, padding, periodic, indices, sizes = (
        _per_dim(n, v, ndim) for n, v in (("block_size", block_size), ("padding", padding),
                                          ("periodic", periodic), ("indices", indices),
                                          ("sizes", sizes)))
    distributed = [i for i, d in enumerate(dist) if d != "n"]
    if grid is None:
        # 'u' dims given as per-grid-rank index lists fix their own grid size.
        grid = [1] * ndim
        fixed = {i: len(indices[i]) for i in distributed if dist[i] == "u" and indices[i] is not None}
        for i, g in fixed.items():
            grid[i] = g
        used = math.prod(fixed.values())
        if comm.size % used:
            raise ValueError(f"the 'u' dimensions' index lists fix {used} grid positions, "
                             f"which does not divide the {comm.size} ranks")
        free = [i for i in distributed if i not in fixed]
        for i, g in zip(free, _comm.balanced_grid(comm.size // used, len(free))):
            grid[i] = g
    grid = int_tuple("grid", grid, 1)
    if len(grid) != ndim:
        raise ValueError(f"grid needs one entry per dimension ({ndim}), got {grid!r}")
    for i, (d, g) in enumerate(zip(dist, grid)):
        if d == "n" and g != 1:
            raise ValueError(f"dimension {i} is 'n' (not distributed) but grid[{i}] = {g}; it must be 1")
        if g < 1:
            raise ValueError(f"grid[{i}] must be >= 1, got {g}")
    if math.prod(grid) != comm.size:
        raise ValueError(f"grid {grid} has {math.prod(grid)} positions but the communicator "
                         f"has {comm.size} ranks")
    maps = []
    for i, (n, d, g) in enumerate(zip(global_shape, dist, grid)):
        options = {"b": dict(sizes=sizes[i], padding=padding[i], periodic=periodic[i]),
                   "c": dict(block_size=block_size[i]), "u": dict(indices=indices[i])}
        kind = Map.kind_of(d)
        maps.append(kind.from_spec(n, g, **options[kind.dist_type], where=f"[{i}]"))
    return Distribution(maps, comm)
