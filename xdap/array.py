"""DistArray: a Distribution plus this rank's partition as an xnd container.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> a.global_shape, a.grid, str(a.type), a.local.type
((3, 4), (1, 1), '3 * 4 * float64', ndt("3 * 4 * float64"))
>>> a.to_global().value[2]
[8.0, 9.0, 10.0, 11.0]
"""
from __future__ import annotations

import numpy as np
from ndtypes import ndt

from . import comm as _comm
from .containers import (Parts, as_container, check_ragged_rows, concat_parts, container,
                         expand_ranges, pack_validity, parts, take_rows)
from .distribution import Distribution, make_distribution
from .types import TypeInfo, type_info

__all__ = ["DistArray", "from_global"]


class DistArray:
    """A distributed array: ``distribution`` + ``local`` (xnd) on every rank.

    Fixed types (``N * M * T``) are distributed along every dimension of the
    process grid. Ragged types (``var * var * T``) are distributed by rows
    (the outermost dimension, a 1-d grid); each rank holds whole rows.

    Construct with ``xdap.from_global``, ``xdap.from_distarray`` or
    ``xdap.from_partitioned``; the constructor is collective.
    """

    def __init__(self, distribution: Distribution, local):
        self.distribution = distribution
        self._local = local
        self.info = type_info(local)
        self._parts = parts(local)
        comm = distribution.comm
        with _comm.collective_checks(comm):
            expect = distribution.local_shape
            have = self._parts.values.shape if self.info.kind == "fixed" else (self._parts.nrows,)
            if tuple(have) != tuple(expect):
                raise ValueError(f"local partition has shape {tuple(have)} but the "
                                 f"distribution gives this rank {tuple(expect)}")
            if self.info.kind == "ragged" and distribution.ndim != 1:
                raise ValueError("a ragged array is distributed by rows: its distribution "
                                 f"needs exactly one dimension, got {distribution.ndim}")
        ragged = self.info.kind == "ragged"
        # One allgather carries the element type and, for ragged arrays, this
        # rank's share of the global leaf index.
        share, finish = _ragged_leaf_index(distribution, self._parts) if ragged else (None, None)
        gathered = comm.allgather((self.info.leaf if ragged else (self.info.leaf, self.info.kind),
                                   share))
        infos = [info for info, _ in gathered]
        if len(set(map(str, infos))) != 1:
            raise TypeError(f"ranks disagree on the element type: {infos}")
        self._leaf_index = finish([s for _, s in gathered]) if ragged else None

    # -- the public face ----------------------------------------------------
    @property
    def local(self):
        """This rank's partition: an xnd container (a view, never a copy)."""
        return self._local

    @property
    def type(self) -> ndt:
        """The global type: ``N * M * T`` (fixed) or ``var * ... * T`` (ragged)."""
        if self.info.kind == "fixed":
            return ndt(self.info.with_shape(self.global_shape).type_string())
        return ndt(self.info.type_string())

    @property
    def global_shape(self) -> tuple:
        """Global sizes; ragged arrays: (rows, None, ...) for the var dims."""
        shape = self.distribution.global_shape
        if self.info.kind == "ragged":
            return shape + (None,) * (self.info.var_ndim - 1)
        return shape

    @property
    def dim_data(self) -> tuple:
        """This rank's DAP 0.10.0 dimension dictionaries (of the distributed dims)."""
        return self.distribution.dim_data()

    @property
    def grid(self) -> tuple:
        return self.distribution.grid

    @property
    def comm(self):
        return self.distribution.comm

    @property
    def ndim(self) -> int:
        return self.info.ndim

    def __distarray__(self, version: str = "0.10.0") -> dict:
        """DAP export (0.10.0; "0.9.0" on request): the buffer is a zero-copy
        view of ``local``. No communication.

        See ``xdap.protocols.dap`` for the ragged/optional layout.
        """
        from .protocols.dap import export
        return export(self, version)

    @property
    def __partitioned__(self) -> dict:
        """``__partitioned__`` export (tiles with zero-copy views of ``local``;
        the first export over a communicator is collective, see
        ``xdap.protocols.partitioned``)."""
        from .protocols.partitioned import export
        return export(self)

    def to_arrow(self):
        """This rank's owned part as a pyarrow array (zero-copy; see
        ``xdap.protocols.arrow``)."""
        from .protocols.arrow import to_arrow
        return to_arrow(self)

    def to_awkward(self):
        """This rank's owned part as an awkward Array (zero-copy; see
        ``xdap.protocols.awkward``)."""
        from .protocols.awkward import to_awkward
        return to_awkward(self)

    def save(self, path) -> None:
        """Save to the directory ``path``: type, distribution and data,
        crash-safe and checksummed (collective; see ``xdap.io.save``).
        Read it back with ``xdap.load(path)``, on any number of ranks.

        >>> import os, tempfile, xdap
        >>> from mpi4py import MPI
        >>> r = xdap.from_global([[1.0, None], [], [2.0]], type="var * var * ?float64",
        ...                      comm=MPI.COMM_SELF)
        >>> path = os.path.join(tempfile.mkdtemp(), "r.xdap")
        >>> r.save(path)
        >>> xdap.load(path, comm=MPI.COMM_SELF).local
        xnd([[1.0, None], [], [2.0]], type='var * var * ?float64')
        """
        from .io import save
        save(self, path)

    def redistribute(self, dist=None, grid=None, comm=None, *, method="auto", **per_dim):
        """This array in another distribution, as a new DistArray (collective;
        copies).  ``dist``: a spec per dimension (with ``grid`` and per-dim
        options, as ``from_global``) or an ``xdap.Distribution``; ``comm``: a
        subset of ``self.comm`` (ranks outside pass ``MPI.COMM_NULL`` and get
        None).  See ``xdap.movement.redistribute``."""
        from .movement.redistribute import redistribute
        return redistribute(self, dist, grid, comm, method=method, **per_dim)

    # -- halo exchange and reductions (xdap.movement; collective) -----------
    def exchange_halos(self):
        """Fill the ghost cells of padded block dimensions from their owners,
        corners included, periodic edges wrapped; in place, returns self.
        See ``xdap.movement.halo``."""
        from .movement.halo import exchange_halos
        return exchange_halos(self)

    def accumulate_halos(self, mode="add", clear=False):
        """Reverse halo exchange: owners combine their ghost copies' values
        (mode "add" or "replace"); in place, returns self."""
        from .movement.halo import accumulate_halos
        return accumulate_halos(self, mode, clear)

    def _reduce(self, op, axis):
        from .movement.reduce import reduce
        return reduce(self, op, axis)

    def sum(self, axis=None):
        """Sum over ``axis`` (None: all -> xnd scalar on every rank; else a
        DistArray); NA skipped. See ``xdap.movement.reduce``."""
        return self._reduce("sum", axis)

    def prod(self, axis=None):
        """Product over ``axis``; NA skipped."""
        return self._reduce("prod", axis)

    def min(self, axis=None):
        """Minimum over ``axis``; NA skipped (NA when nothing is valid)."""
        return self._reduce("min", axis)

    def max(self, axis=None):
        """Maximum over ``axis``; NA skipped (NA when nothing is valid)."""
        return self._reduce("max", axis)

    def mean(self, axis=None):
        """Mean over ``axis`` of the valid values (float64)."""
        return self._reduce("mean", axis)

    def count(self, axis=None):
        """Number of valid (non-NA) values over ``axis`` (int64)."""
        return self._reduce("count", axis)

    def any(self, axis=None):
        """Whether any valid value is nonzero, over ``axis``."""
        return self._reduce("any", axis)

    def all(self, axis=None):
        """Whether every valid value is nonzero, over ``axis``."""
        return self._reduce("all", axis)

    def to_global(self):
        """The whole array as an xnd container on every rank (collective; copies).

        Owned values only: communication padding is not read; an index held
        by several ranks (unstructured, not one-to-one) is taken from the
        lowest rank holding it.
        """
        d = self.distribution
        own = [d.owned_positions(k) for k in range(d.ndim)]
        gidx = [d.global_indices(k)[o] for k, o in zip(range(d.ndim), own)]
        if self.info.kind == "fixed":
            values = self._parts.values[np.ix_(*own)]
            mask = self._parts.valid_mask()
            mask = None if mask is None else mask[np.ix_(*own)]
            pieces = self.comm.allgather((gidx, values, mask))
            out = np.zeros(d.global_shape, self.info.numpy_dtype)
            full_mask = np.zeros(d.global_shape, bool) if self.info.optional else None
            for g, v, m in reversed(pieces):      # lowest rank written last: it wins
                out[np.ix_(*g)] = v
                if full_mask is not None:
                    full_mask[np.ix_(*g)] = m
            validity = None if full_mask is None else pack_validity(full_mask)
            return container(Parts(self.info.with_shape(out.shape), out, validity))
        mine = take_rows(self._parts, own[0])
        pieces = self.comm.allgather((gidx[0], mine))
        rows = np.concatenate([g for g, _ in pieces])
        allp = concat_parts([p for _, p in pieces])
        # first occurrence of each global row (lowest rank) in global order
        uniq, first = np.unique(rows, return_index=True)
        return container(take_rows(allp, first[np.argsort(uniq)]))

    # -- elementwise operators: thin delegates to xdap.kernels (collective) --
    # Each returns a new DistArray with this distribution; comparisons give
    # bool. `==` is elementwise, so DistArray keeps identity hashing.
    __hash__ = object.__hash__

    def _kernel(self, name, *args):
        import numbers
        if not all(isinstance(a, (DistArray, numbers.Number)) for a in args):
            return NotImplemented    # e.g. a == None: Python's default, not a kernel call
        from . import kernels
        return getattr(kernels, name)(*args)

    def __add__(self, other): return self._kernel("add", self, other)
    def __radd__(self, other): return self._kernel("add", other, self)
    def __sub__(self, other): return self._kernel("subtract", self, other)
    def __rsub__(self, other): return self._kernel("subtract", other, self)
    def __mul__(self, other): return self._kernel("multiply", self, other)
    def __rmul__(self, other): return self._kernel("multiply", other, self)
    def __truediv__(self, other): return self._kernel("divide", self, other)
    def __rtruediv__(self, other): return self._kernel("divide", other, self)
    def __pow__(self, other): return self._kernel("power", self, other)
    def __rpow__(self, other): return self._kernel("power", other, self)
    def __neg__(self): return self._kernel("negative", self)
    def __abs__(self): return self._kernel("absolute", self)
    def __eq__(self, other): return self._kernel("equal", self, other)
    def __ne__(self, other): return self._kernel("not_equal", self, other)
    def __lt__(self, other): return self._kernel("less", self, other)
    def __le__(self, other): return self._kernel("less_equal", self, other)
    def __gt__(self, other): return self._kernel("greater", self, other)
    def __ge__(self, other): return self._kernel("greater_equal", self, other)

    def __repr__(self):
        return (f"<DistArray type='{self.type}' global_shape={self.global_shape} "
                f"grid={self.grid} rank={self.comm.rank} local_shape={self.distribution.local_shape}>")


def _ragged_leaf_index(d: Distribution, p: Parts):
    """Where this rank's leaves sit in the global flat leaf space, in two
    local steps around the caller's allgather: returns ``(share, finish)``;
    ``finish(shares)``, given every rank's ``share`` in rank order, returns
    (start, total) when every rank's leaves form one contiguous range in rank
    order (block rows, no padding), else (int64 index array, total).
    """
    if d.is_contiguous_1d:
        rank = d.comm.rank
        return len(p.values), lambda counts: (sum(counts[:rank]), sum(counts))
    counts = p.leaf_counts()
    own = d.owned_positions(0)
    rows = d.global_indices(0)

    def finish(shares):
        global_counts = np.zeros(d.global_shape[0], np.int64)
        for r, c in shares:
            global_counts[r] = c
        goff = np.concatenate([[0], np.cumsum(global_counts)])
        return expand_ranges(goff[rows], counts), int(goff[-1])
    return (rows[own], counts[own]), finish


def from_global(data, dist=None, grid=None, comm=None, *, root=None, type=None, dtype=None,
                **per_dim) -> DistArray:
    """Distribute a whole array (collective).

    data     the global array on every rank (root=None), or on ``root`` only
             (other ranks pass None): an xnd container, a NumPy array (masked
             arrays become ``?T``) or nested lists (give ``type``, e.g.
             ``"var * var * ?float64"``, for ragged data with empty rows)
    dist     per distributed dimension 'b', 'c', 'u' or 'n' (see
             ``make_distribution``); ragged data: one entry, for the rows
    grid     processes per dimension (default: balanced)
    per_dim  block_size, padding, periodic, indices, sizes: one entry per dim

    Each rank keeps only its partition (a copy of its part of ``data``).

    >>> import xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global([[1.0, None], [], [2.0]], type="var * var * ?float64",
    ...                      comm=MPI.COMM_SELF)
    >>> a.global_shape, a.local.value
    ((3, None), [[1.0, None], [], [2.0]])
    """
    comm = _comm.resolve(comm)
    p = None
    with _comm.collective_checks(comm):
        if root is not None and not (isinstance(root, int) and 0 <= root < comm.size):
            raise ValueError(f"root must be a rank in [0, {comm.size}), got {root!r}")
        if root is None or comm.rank == root:
            if data is None:
                raise ValueError("from_global: data is None on a rank that must provide it"
                                 + ("" if root is None else f" (root={root})"))
            p = parts(as_container(data, type=type, dtype=dtype))
    meta = None if p is None else (p.info, p.values.shape if p.info.kind == "fixed" else (p.nrows,))
    if root is None:
        metas = comm.allgather(meta)
        if any(m != metas[0] for m in metas):
            raise ValueError("from_global: ranks passed different global arrays "
                             f"(type/shape per rank: {[(str(m[0].type_string()), m[1]) for m in metas]})")
    else:
        meta = comm.bcast(meta, root=root)
    info, shape = meta
    _comm.same_everywhere(comm, "from_global: dist, grid and the per-dimension options",
                          (dist, grid, per_dim))
    with _comm.collective_checks(comm):
        if dist is not None and info.kind == "ragged" and len(tuple(dist)) != 1:
            raise ValueError(f"ragged data is distributed by rows: dist needs one entry, got {dist!r}")
        d = make_distribution(shape, dist, grid, comm, **per_dim)
        if info.kind == "ragged":
            for r in range(comm.size):
                check_ragged_rows(info, d.local_shape_of(r)[0], r)
    if root is None:
        [mine] = _select(p, d, [comm.rank])
    else:
        mine = comm.scatter(_select(p, d, range(comm.size))
                            if comm.rank == root else None, root=root)
    return DistArray(d, container(mine))


def _select(p: Parts, d: Distribution, ranks) -> list:
    """The parts of the global array that each of ``ranks`` holds (copies)."""
    if p.info.kind == "ragged":
        return [take_rows(p, d.global_indices(0, r)) for r in ranks]
    mask = p.valid_mask()           # unpacked once, not once per rank
    out = []
    for r in ranks:
        index = np.ix_(*[d.global_indices(k, r) for k in range(d.ndim)])
        values = np.ascontiguousarray(p.values[index])
        validity = None if mask is None else pack_validity(mask[index])
        out.append(Parts(p.info.with_shape(values.shape), values, validity))
    return out
