"""DistArray: the surface -- a Distribution plus this rank's Parts.

The engines (``xdap.movement``, ``xdap.protocols``, ``xdap.kernels``,
``xdap.io``, ``xdap.create``) take and return the core pair
``(Distribution, Parts)``; this module is the one place that wraps such a
pair into a DistArray, and the public constructors (``from_global``,
``from_distarray``, ...) are thin wrappers around the engines.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> a.global_shape, a.grid, str(a.type), a.local.type
((3, 4), (1, 1), '3 * 4 * float64', ndt("3 * 4 * float64"))
>>> a.to_global().value[2]
[8.0, 9.0, 10.0, 11.0]
"""
from __future__ import annotations

import builtins

import numbers
import sys

import numpy as np
from ndtypes import ndt
from xnd import xnd
from . import create
from .directory import prefix_sums
from .distribution import Distribution
from .dtypes import is_integer
from .parts import Parts, as_container, check_representable, container
from .rows import expand_ranges, leaf_counts
from .parts import parts as parts_of_container
from .agreement import agreement

__all__ = ["DistArray", "from_global", "from_local", "empty", "zeros", "full", "arange",
           "from_function", "from_distarray", "from_partitioned", "from_arrow", "from_awkward",
           "load"]


class DistArray:
    """A distributed array: ``distribution`` + ``parts`` (this rank's data,
    ``local`` as an xnd container) on every rank.

    Fixed types (``N * M * T``) are distributed along every dimension of the
    process grid. Ragged types (``var * var * T``) are distributed by rows
    (the outermost dimension, a 1-d grid); each rank holds whole rows.

    Construct with ``xdap.from_global``, ``xdap.from_distarray`` or
    ``xdap.from_partitioned``; ``DistArray(distribution, local)`` (``local``
    an xnd container or ``Parts``) is collective and checks on every rank
    that the local data fit the distribution and that all ranks hold the
    same element type.
    """

    __slots__ = ("distribution", "parts", "_leaf_index", "_fresh", "__weakref__")

    def __init__(self, distribution: Distribution, local):
        if not isinstance(distribution, Distribution):
            raise TypeError(f"DistArray needs an xdap.Distribution, got "
                            f"{type(distribution).__name__}")
        comm = distribution.comm
        p = ragged = leaves = None
        with agreement(comm, "DistArray", share=True) as ag:
            p = local if isinstance(local, Parts) else parts_of_container(
                local if isinstance(local, xnd) else as_container(local))
            ragged = p.info.ragged
            if tuple(p.shape) != tuple(distribution.local_shape):
                raise ValueError(f"local partition has shape {tuple(p.shape)} but the "
                                 f"distribution gives this rank {tuple(distribution.local_shape)}")
            if ragged and distribution.ndim != 1:
                raise ValueError("a ragged array is distributed by rows: its distribution "
                                 f"needs exactly one dimension, got {distribution.ndim}")
            check_representable(p)
            ag.same("the distribution", distribution.fingerprint())
            # One collective carries the verdicts, the element type and, for
            # ragged arrays in block rows, this rank's number of leaves.
            leaves = len(p.values) if ragged and distribution.is_contiguous_1d else None
            ag.share((p.info.leaf if ragged else (p.info.leaf, p.info.kind.value), leaves))
        infos = [info for info, _ in ag.shared]
        if len(set(map(str, infos))) != 1:
            raise TypeError(f"ranks disagree on the element type: {infos}")
        leaf_index = None
        if leaves is not None:
            counts = [n for _, n in ag.shared]
            leaf_index = (sum(counts[:comm.rank]), sum(counts))
        self._init(distribution, p, leaf_index)

    def _init(self, distribution, p, leaf_index, fresh=False):
        self.distribution = distribution
        self.parts = p
        self._leaf_index = leaf_index
        # a kernel result's buffer is its own (nothing else views it): a
        # temporary of it may lend it to the next operator
        self._fresh = fresh

    @classmethod
    def _trusted(cls, distribution: Distribution, p: Parts, leaf_index=None) -> "DistArray":
        """A DistArray over a pair already agreed on every rank (no
        communication): ``leaf_index`` is the ragged leaf index the array
        shares with the one it was derived from."""
        new = object.__new__(cls)
        new._init(distribution, p, leaf_index)
        return new

    @classmethod
    def _agreed(cls, pair) -> "DistArray | None":
        """The DistArray of an engine's ``(Distribution, Parts)``, which the
        engine agreed on every rank (None stays None: a rank outside a
        target communicator): nothing is checked again.  Fixed data: no
        communication.  Ragged rows: one small collective, for what only
        all ranks together know -- where a block of rows' leaves start in
        the global leaf space (the DAP export's), and whether xnd can hold
        every rank's rows."""
        if pair is None:
            return None
        d, p = pair
        if not p.info.ragged:
            return cls._trusted(d, p)
        block_rows = d.is_contiguous_1d
        with agreement(d.comm, "DistArray", share=True) as ag:
            check_representable(p)
            ag.share(len(p.values) if block_rows else None)
        leaf_index = None
        if block_rows:
            counts = ag.shared
            leaf_index = (sum(counts[:d.comm.rank]), sum(counts))
        return cls._trusted(d, p, leaf_index)

    # -- the arraylike protocol (xdap.arraylike) ------------------------------
    def __xdap_wrap__(self, distribution, p, same_rows=False, agreed=False):
        if not same_rows:          # (a ragged result still needs its leaf index)
            return DistArray._agreed((distribution, p)) if agreed else \
                DistArray(distribution, p)
        new = object.__new__(DistArray)       # _trusted, inlined: kernels' hot path
        new.distribution, new.parts, new._leaf_index = distribution, p, self._leaf_index
        new._fresh = True
        return new

    # -- the public face ----------------------------------------------------
    @property
    def local(self):
        """This rank's partition: an xnd container (a view, never a copy)."""
        return container(self.parts)

    @property
    def info(self):
        """The classified local type (``xdap.types.TypeInfo``)."""
        return self.parts.info

    @property
    def type(self) -> ndt:
        """The global type: ``N * M * T`` (fixed) or ``var * ... * T`` (ragged)."""
        return ndt(self.parts.info.global_type(self.distribution.global_shape))

    @property
    def global_shape(self) -> tuple:
        """Global sizes; ragged arrays: (rows, None, ...) for the var dims."""
        shape = self.distribution.global_shape
        if self.parts.info.ragged:
            return shape + (None,) * (self.parts.info.var_ndim - 1)
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
        return self.parts.info.ndim

    @property
    def shape(self) -> tuple:
        """The global shape, as NumPy says it (``global_shape``; ragged
        arrays: ``(rows, None, ...)``)."""
        return self.global_shape

    @property
    def size(self) -> int | None:
        """Global number of elements (None for ragged arrays: the lists vary)."""
        return None if self.parts.info.ragged else int(np.prod(self.global_shape))

    @property
    def dtype(self) -> np.dtype | None:
        """NumPy's dtype of one element (a structured dtype for records; the
        int64 codes of a categorical), None for ragged arrays and strings,
        which have no NumPy form."""
        return None if self.parts.info.ragged else self.parts.info.numpy_dtype

    # -- Python conversions: a 0-d array's one value is on every rank ---------
    def __len__(self) -> int:
        """The global size of the first dim (no communication)."""
        if not self.distribution.maps:
            raise TypeError("len() of a 0-d DistArray (use its value: float(a), a.item())")
        return self.distribution.global_shape[0]

    def item(self):
        """The value of a 0-d array as a Python scalar (None where missing),
        from this rank's copy: no communication.  Larger arrays: ``a[i, j]``
        reads one element (collective).

        >>> import xdap
        >>> from mpi4py import MPI
        >>> xdap.from_global(2.5, comm=MPI.COMM_SELF).item()
        2.5
        """
        if self.distribution.maps:
            raise ValueError(f"item(): a DistArray of shape {self.shape} is not one value; "
                             "read one element with a[i, j] (collective) or reduce it")
        return self.local.value

    def _scalar(self, convert, what):
        if self.distribution.maps:
            raise TypeError(f"{what}() of a DistArray of shape {self.shape}: only 0-d arrays "
                            f"convert to a Python {what} (reduce first, e.g. a.any(), a.sum())")
        v = self.local.value
        if v is None:
            raise ValueError(f"{what}() of a missing value (NA)")
        return convert(v)

    def __bool__(self) -> bool:
        """``if a:`` -- a 0-d array's truth; any larger array raises, as in
        NumPy (``if (a < 0):`` is ambiguous: say ``(a < 0).any()``)."""
        return self._scalar(bool, "bool")

    def __float__(self) -> float:
        return self._scalar(float, "float")

    def __int__(self) -> int:
        return self._scalar(int, "int")

    def __complex__(self) -> complex:
        return self._scalar(complex, "complex")

    def __index__(self) -> int:
        if self.distribution.maps or not is_integer(self.parts.info.dtype):
            raise TypeError(f"only 0-d integer arrays are indices, not {self.type}")
        return self._scalar(int, "int")

    def global_indices(self, dim: int = 0) -> np.ndarray:
        """The global indices this rank's partition holds along ``dim``, in
        local order (ghost cells and padding included). No communication.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> xdap.from_global(np.zeros(5), dist=("c",), comm=MPI.COMM_SELF).global_indices()
        array([0, 1, 2, 3, 4])
        """
        return np.asarray(self.distribution.global_indices(dim))

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        """``np.sin(a)``, ``np.add(a, 1, out=a)``, ``a + np.float32(2)``:
        NumPy's ufuncs run as xdap's kernels on every rank (collective, the
        same dispatch, promotion and errors as ``xdap.kernels``)."""
        kernel = (_UFUNCS or _ufuncs()).get(ufunc)
        if kernel is not None and method == "__call__" and not kwargs and \
                (out is None or len(out) == 1):   # NumPy passes out= as a tuple
            return _library_or_numpy(kernel, ufunc, inputs, None if out is None else out[0])
        name = None if kernel is None else kernel.__name__
        if kernel is None and method == "__call__" and not kwargs and \
                (out is None or len(out) == 1):
            from .numpy_api import numpy_ufunc
            return numpy_ufunc(ufunc, inputs, None if out is None else out[0])
        if method != "__call__" or name is None or kwargs:
            what = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            extra = f" with {', '.join(kwargs)}=" if kwargs and name else ""
            raise TypeError(f"{what}{extra} on a DistArray: xdap runs NumPy's elementwise ufuncs "
                            "that its kernel library has (np.sin, np.add, np.less, ...; see "
                            "xdap.kernels), called plainly, with out= at most; for anything "
                            "else use a.local_numpy() on each rank, or a.to_numpy()")
        raise TypeError(f"np.{ufunc.__name__}: one out= array, got {len(out)}")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a DistArray is spread over the ranks, so NumPy cannot take it whole: "
                        "a.to_numpy() gathers it (on every rank, or root=), "
                        "a.local_numpy() / a.local are this rank's part")

    def to_numpy(self, root=None):
        """The whole array as a NumPy array, on every rank (or on ``root``
        only, None elsewhere); collective, copies (``to_global``). Optional
        data is a ``numpy.ma.MaskedArray``; ragged arrays have no NumPy form
        (TypeError on every rank: use ``to_global`` or ``to_arrow``).

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> xdap.from_global(np.arange(3.0), dist=("c",), comm=MPI.COMM_SELF).to_numpy()
        array([0., 1., 2.])
        """
        info = self.parts.info
        if info.ragged:
            raise TypeError(f"to_numpy: a ragged array ({info.global_type(self.global_shape)}) "
                            "has no NumPy form; use a.to_global() (xnd) or a.to_arrow()")
        from .movement.gather import to_global
        p = to_global(self.distribution, self.parts, root)
        if p is None:
            return None
        values = np.asarray(p.values)
        if info.optional:
            return np.ma.MaskedArray(values, mask=~p.valid_mask())
        return values

    def copy(self) -> "DistArray":
        """A copy with the same distribution and type (no communication)."""
        from .parts import parts as parts_of_xnd
        p = self.parts
        if p.info.boxed:
            q = parts_of_xnd(xnd(container(p).value, type=str(container(p).type)))
        else:
            q = Parts(p.info, p.values.copy(), None if p.validity is None else p.validity.copy(),
                      p.offsets)
        return DistArray._trusted(self.distribution, q, self._leaf_index)

    def astype(self, dtype) -> "DistArray":
        """The array with another numeric element type (a copy; NumPy's
        casting, ``unsafe`` as in ``ndarray.astype``; missing values stay
        missing, and ``"?float64"`` makes an optional array, every value
        present). ``dtype``: an ndtypes name ('float32') or a NumPy dtype.
        No communication.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(3), comm=MPI.COMM_SELF).astype("float32")
        >>> str(a.type), a.to_numpy().tolist()
        ('3 * float32', [0.0, 1.0, 2.0])
        """
        from .types import DTYPES, dtype_from_numpy
        name = dtype if isinstance(dtype, str) and dtype.lstrip("?") in DTYPES else None
        if name is None:
            try:
                name = dtype_from_numpy(dtype)
            except TypeError as e:
                raise TypeError(f"astype: {e}") from None
        optional = name.startswith("?")
        name = name.lstrip("?")
        p = self.parts
        if not (p.info.numeric and name in DTYPES):
            raise TypeError(f"astype: converts numbers to numbers; the array holds "
                            f"{p.info.leaf!r} and {name!r} was asked for")
        info = p.info.with_leaf(("?" if p.info.optional or optional else "") + name)
        values = p.values.astype(info.numpy_dtype)
        validity = p.validity.copy() if p.validity is not None else \
            np.full((values.size + 7) // 8, 0xFF, np.uint8) if optional else None
        q = Parts(info, values, validity, p.offsets, rows=p.rows)
        return DistArray._trusted(self.distribution, q, self._leaf_index)

    def local_numpy(self) -> np.ndarray:
        """This rank's elements as a NumPy array over the same memory (no
        copy; writing it writes the array): the local shape, with NumPy's
        dtype for the element (a structured dtype for records, ``S``/``U``
        for fixed strings, int64 codes for categoricals, ``complex128`` for
        complex). Optional data is a ``numpy.ma.MaskedArray`` whose data is
        the view (the mask is a copy). Padded blocks include their ghost
        cells. Ragged data has no NumPy form: TypeError on every rank.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(4) * 1j, comm=MPI.COMM_SELF)
        >>> a.local_numpy()
        array([0.+0.j, 0.+1.j, 0.+2.j, 0.+3.j])
        """
        p = self.parts
        if p.info.ragged:
            raise TypeError(f"local_numpy: a ragged array ({p.info.type_string()}) has no NumPy "
                            "form; use a.to_arrow() or a.to_awkward() (zero-copy), or a.local")
        if p.info.optional:
            return np.ma.MaskedArray(p.values, mask=~p.valid_mask())
        return p.values

    def field(self, name: str) -> "DistArray":
        """One field of a record (or tuple: ``'f0'``, ...) element, as a
        DistArray with the same distribution (its own fixed dims, as in
        ``pos: 3 * float64``, become undistributed trailing dims). No
        communication. Zero-copy for fixed, non-optional arrays: kernels
        with ``out=a['x']`` write the records. Fields of ragged or optional
        arrays are read-only copies (see ``xdap.parts.field_parts``).
        ``a['x']`` is the same.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> r = np.zeros(4, np.dtype([("x", "f8"), ("n", "i8")]))
        >>> a = xdap.from_global(r, comm=MPI.COMM_SELF)
        >>> _ = xdap.kernels.add(a["x"], 1.5, out=a["x"])
        >>> a.to_global().value[0]
        {'x': 1.5, 'n': 0}
        """
        from .parts import field_parts
        if not isinstance(name, str):
            raise TypeError(f"a field name is a str, got {type(name).__name__} {name!r}")
        p = field_parts(self.parts, name)
        d = self.distribution
        if not p.info.ragged:
            d = d.with_trailing(p.values.shape[d.ndim:])
        return DistArray._trusted(d, p, self._leaf_index)

    def __getitem__(self, key):
        """``a["x"]``: a record field (``field``); ``a[i, j]``: the element at
        global index (i, j) on every rank (collective: one small exchange
        from its holder; a NumPy scalar, None where missing); basic keys
        (``a[2:5]``, ``a[:, 0]``, ``a[::-1]``, ``a[..., None]``: see
        ``xdap.movement.index``; a slice of a block dim moves nothing);
        ``a[mask]`` with a boolean DistArray or NumPy array of ``a``'s shape:
        the selected elements as a 1-D irregular block (``mask_index``);
        ``a[idx]`` with an integer array (NumPy, list or DistArray): the rows
        at those indices (``xdap.take``).

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
        >>> a[1:-1].to_numpy().tolist(), a[a > 3].to_numpy().tolist()
        ([1.0, 2.0, 3.0, 4.0], [4.0, 5.0])
        """
        if isinstance(key, str):
            return self.field(key)
        key = _zero_d_as_int(key)
        flag = _zero_d_bool(key)
        if flag is not None:            # NumPy: a[True] is a[None], a[False] a[None][:0]
            out = self[None]
            return out if flag else out[:0]
        new = _new_axes_only(key)
        if self.ndim == 0 and new:
            # a 0-d array's value on new axes of size 1: the shape's default
            # distribution, each rank filling its block (every rank holds the value)
            from .numpy_api import broadcast_to
            return broadcast_to(self, (1,) * new)
        from .movement.index import basic_index, is_basic_key, mask_index
        if is_basic_key(key):
            out = basic_index(self.distribution, self.parts, key)
            return self.__xdap_wrap__(*out, agreed=True) if isinstance(out, tuple) else out
        if isinstance(key, DistArray) and key.parts.info.dtype == "bool" and \
                not key.parts.info.ragged and key.shape != self.shape[:key.ndim] and \
                key.size == 0 and key.ndim <= self.ndim and \
                builtins.all(k in (n, 0) for k, n in zip(key.shape, self.shape)):
            # a mask with a zero-length dim selects nothing (the standard's
            # rule; shapes are agreed: no MPI call)
            return zeros((0,) + self.shape[key.ndim:], comm=self.comm,
                         type=self.parts.info.type_string().rsplit(" * ", 1)[-1])
        if isinstance(key, DistArray) and key.parts.info.dtype == "bool" and \
                not key.parts.info.ragged:
            if key.parts.info.optional:
                raise TypeError("a[mask]: the mask has missing values (?bool); fill them first")
            out = mask_index(self.distribution, self.parts, key.distribution,
                             key.parts.values)
            return self.__xdap_wrap__(*out, agreed=True)
        if isinstance(key, np.ndarray) and key.dtype == bool:
            with agreement(self.comm, "a[mask]") as ag:    # a collective: agree first
                ag.same("the mask's shape", key.shape)
                if key.shape != self.shape:
                    raise ValueError(f"a[mask]: the mask has shape {key.shape}, the array "
                                     f"{self.shape}")
            from .kernels.apply import _local_block
            local = _local_block(key, self.distribution).values
            out = mask_index(self.distribution, self.parts, self.distribution, local)
            return self.__xdap_wrap__(*out, agreed=True)
        if _integer_index(key):
            from .numpy_api import take
            return take(self, key, axis=0)
        if isinstance(key, tuple) and any(_integer_index(k) for k in key):
            from .numpy_api import take_points
            return take_points(self, key)
        from .movement.gather import read_element
        return read_element(self.distribution, self.parts, key)

    def __setitem__(self, key, value):
        """``a[key] = value``: basic keys (ints, slices, ``...``, ``None``)
        on fixed, non-optional arrays; ``value`` a scalar, a NumPy array
        (the same on every rank; broadcast as NumPy does) -- local work, no
        MPI call -- or a DistArray of the selection's shape (moved to it
        first: collective).  See ``xdap.movement.index.assign``.  A boolean
        mask of the array's shape with one value: ``assign_where`` (local).

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.zeros(5), comm=MPI.COMM_SELF)
        >>> a[1:4] = 7.0
        >>> a.to_numpy().tolist()
        [0.0, 7.0, 7.0, 7.0, 0.0]
        """
        from .movement.index import assign, is_basic_key
        if isinstance(key, str):
            raise TypeError("a['field'] = v: assign into a['field'][...] instead")
        if (isinstance(key, DistArray) and key.dtype == np.bool_) or \
                (isinstance(key, np.ndarray) and key.dtype == bool):
            from .numpy_api import assign_where
            return assign_where(self, key, value)
        if not is_basic_key(key):
            raise TypeError(f"a[key] = v: basic keys only (ints, slices, ..., None), got "
                            f"{type(key).__name__}")
        assign(self.distribution, self.parts, key, value)

    def __iter__(self):
        """Iterate over the first dim: ``a[0], a[1], ...`` (collective: every
        rank iterates; each step is ``a[i]``)."""
        for i in range(len(self)):
            yield self[i]

    # -- exchange (xdap.protocols, xdap.io) -----------------------------------
    def __distarray__(self, version: str = "0.10.0") -> dict:
        """DAP export (0.10.0; "0.9.0" on request): the buffer is a zero-copy
        view of ``local``.  No communication -- except the first export of
        a ragged array whose rows are not in block order: that one is
        collective, as it finds where each leaf sits in the global leaf
        order (a distributed prefix sum over the rows, O(rows / P)), kept
        for later calls.

        See ``xdap.protocols.dap`` for the ragged/optional layout.
        """
        from .protocols import dap
        if self.parts.info.ragged and self._leaf_index is None:
            self._leaf_index = _ragged_leaf_index(self.distribution, self.parts)
        return dap.export(self.distribution, self.parts, version, leaf_index=self._leaf_index)

    @property
    def __partitioned__(self) -> dict:
        """``__partitioned__`` export (tiles with zero-copy views of ``local``;
        the first export over a communicator is collective, see
        ``xdap.protocols.partitioned``)."""
        from .protocols import partitioned
        return partitioned.export(self.distribution, self.parts)

    def partitioned(self, dialect: str = "spec") -> dict:
        """The ``__partitioned__`` dict, in the spec's form or, with
        ``dialect="heat"``, in the form heat reads: ``ht.from_partition_dict(
        a.partitioned(dialect="heat"))`` (see
        ``xdap.protocols.partitioned.export``; zero-copy).

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
        >>> a.partitioned(dialect="heat")["partitions"][(0,)]["location"]
        [0]
        """
        from .protocols import partitioned
        return partitioned.export(self.distribution, self.parts, dialect)

    def to_arrow(self):
        """This rank's owned part as a pyarrow array (zero-copy; see
        ``xdap.protocols.arrow``)."""
        from .protocols.arrow import owned_arrow
        return owned_arrow(self.distribution, self.parts)

    def to_awkward(self):
        """This rank's owned part as an awkward Array (zero-copy; see
        ``xdap.protocols.awkward``)."""
        from .protocols.awkward import owned_awkward
        return owned_awkward(self.distribution, self.parts)

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
        save(self.distribution, self.parts, path)

    # -- data movement (xdap.movement; collective) ----------------------------
    def redistribute(self, dist=None, grid=None, comm=None, *, method="auto", **per_dim):
        """This array in another distribution, as a new DistArray (collective;
        copies).  ``dist``: a spec per dimension (with ``grid`` and per-dim
        options, as ``from_global``) or an ``xdap.Distribution``; ``comm``: a
        subset of ``self.comm`` (ranks outside pass ``MPI.COMM_NULL`` and get
        None).  See ``xdap.movement.redistribute``."""
        from .movement.redistribute import redistribute
        return redistribute(self, dist, grid, comm, method=method, **per_dim)

    def bind_redistribute(self, dist=None, grid=None, comm=None, *, method="auto", **per_dim):
        """This array's redistribution bound once (collective: the target is
        agreed now): ``r = a.bind_redistribute(dist=("c",))``, then ``r()``
        moves ``a``'s current values into the kept target array and returns
        it -- one exchange, no agreement, nothing allocated for fixed data.
        The arguments are ``redistribute``'s. See
        ``xdap.movement.redistribute.BoundRedistribution``."""
        from .movement.redistribute import bind_redistribute
        return bind_redistribute(self, dist, grid, comm, method=method, **per_dim)

    def migrate(self, dest):
        """Send each row this rank owns to rank ``dest[i]`` (one per local
        row along dim 0: a graph partitioner's output). Returns ``(the
        migrated array, plan)``: an unstructured DistArray in which every row
        keeps its global index, and a ``MigrationPlan`` whose ``apply(b)``
        moves another array of this distribution the same way. Collective;
        copies. See ``xdap.movement.migrate``.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(3.0), comm=MPI.COMM_SELF)
        >>> b, plan = a.migrate(np.zeros(3, np.int64))
        >>> b.to_global().value, plan.apply(a * 2).to_global().value
        ([0.0, 1.0, 2.0], [0.0, 2.0, 4.0])
        """
        from .movement.migrate import migrate
        pair, plan = migrate(self.distribution, self.parts, dest)
        return DistArray._agreed(pair), plan

    def exchange_halos(self):
        """Fill the ghost cells of padded block dimensions from their owners,
        corners included, periodic edges wrapped; in place, returns self.
        See ``xdap.movement.halo``."""
        from .movement.halo import exchange_halos
        return exchange_halos(self)

    def bind_halos(self):
        """The halo exchange of this array bound once (collective: agreed
        now): ``h = a.bind_halos()``, then ``h()`` every time step -- or
        ``h.start()``, work on the interior, ``h.wait()`` -- fills the ghost
        cells with no agreement, through persistent requests. See
        ``xdap.movement.halo.BoundHalos``.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> a = xdap.from_global(np.arange(4.0), padding=((1, 1),), periodic=(True,),
        ...                      comm=MPI.COMM_SELF)
        >>> h = a.bind_halos()
        >>> _ = h(); a.local_numpy().tolist()
        [2.0, 1.0, 2.0, 1.0]
        """
        from .movement.halo import bind_halos
        return bind_halos(self)

    def accumulate_halos(self, mode="add", clear=False):
        """Reverse halo exchange: owners combine their ghost copies' values
        (mode "add" or "replace"); in place, returns self."""
        from .movement.halo import accumulate_halos
        return accumulate_halos(self, mode, clear)

    def _reduce(self, op, axis, dtype=None, out=None, keepdims=False, **numpy_kw):
        """One reduction; ``dtype``/``out``/``keepdims`` are accepted so that
        NumPy's functions (``np.sum(a)``, ``np.mean(a)``) dispatch here;
        only their defaults are implemented (else a clear TypeError)."""
        unknown = {k: v for k, v in numpy_kw.items() if v is not np._NoValue and v is not None}
        if dtype is not None or out is not None or keepdims or unknown:
            given = {"dtype": dtype, "out": out, "keepdims": keepdims or None, **unknown}
            raise TypeError(f"{op}: {', '.join(k for k, v in given.items() if v is not None)} "
                            "not supported on a DistArray (NumPy's defaults only; convert "
                            "with a.astype(...), add a dim with a[..., None])")
        from .movement.reduce import reduce_parts
        result = reduce_parts(self.distribution, self.parts, op, axis)
        # the result's distribution and type follow from agreed arguments
        if isinstance(result, tuple):
            return self.__xdap_wrap__(*result, agreed=True)
        return _numpy_scalar(result)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
        """Sum over ``axis`` (None: all -> a NumPy scalar on every rank, None
        when it is NA; else a DistArray); NA skipped. See
        ``xdap.movement.reduce``. ``np.sum(a)`` calls it."""
        return self._reduce("sum", axis, dtype, out, keepdims, **numpy_kw)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
        """Product over ``axis``; NA skipped."""
        return self._reduce("prod", axis, dtype, out, keepdims, **numpy_kw)

    def min(self, axis=None, out=None, keepdims=False, **numpy_kw):
        """Minimum over ``axis``; NA skipped (NA when nothing is valid)."""
        return self._reduce("min", axis, None, out, keepdims, **numpy_kw)

    def max(self, axis=None, out=None, keepdims=False, **numpy_kw):
        """Maximum over ``axis``; NA skipped (NA when nothing is valid)."""
        return self._reduce("max", axis, None, out, keepdims, **numpy_kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **numpy_kw):
        """Mean over ``axis`` of the valid values (float64)."""
        return self._reduce("mean", axis, dtype, out, keepdims, **numpy_kw)

    def count(self, axis=None):
        """Number of valid (non-NA) values over ``axis`` (int64)."""
        return self._reduce("count", axis)

    def any(self, axis=None, out=None, keepdims=False, **numpy_kw):
        """Whether any valid value is nonzero, over ``axis``."""
        return self._reduce("any", axis, None, out, keepdims, **numpy_kw)

    def all(self, axis=None, out=None, keepdims=False, **numpy_kw):
        """Whether every valid value is nonzero, over ``axis``."""
        return self._reduce("all", axis, None, out, keepdims, **numpy_kw)

    def to_global(self, root=None):
        """The whole array as an xnd container on every rank, or on ``root``
        only (None elsewhere). Collective; copies (buffers, no pickles).

        Owned values only: communication padding is not read; an index held
        by several ranks (unstructured, not one-to-one) is taken from its
        owner.
        """
        from .movement.gather import to_global
        with agreement(self.comm, "to_global") as ag:
            ag.same("root", root)
            if root is not None and not (isinstance(root, int) and not isinstance(root, bool)
                                         and 0 <= root < self.comm.size):
                raise ValueError(f"to_global: root must be a rank in [0, {self.comm.size}), "
                                 f"got {root!r}")
        out = to_global(self.distribution, self.parts, root)
        return None if out is None else container(out)

    # -- elementwise operators: thin delegates to xdap.kernels (collective) --
    # Each returns a new DistArray with this distribution; comparisons give
    # bool. `==` is elementwise, so DistArray keeps identity hashing.
    __hash__ = object.__hash__

    def _kernel(self, name, *args):
        if not all(isinstance(a, (DistArray, numbers.Number)) for a in args):
            return NotImplemented    # e.g. a == None: Python's default, not a kernel call
        return _kernel_fn(name)(*args)

    # Operators are local work: the kernel's checks read agreed state only,
    # so no rank communicates (see xdap.kernels).  A temporary -- a kernel
    # result nothing else references, as ``a * 2`` inside ``a * 2 + 1`` --
    # lends its buffer to the next operator when the result has its type
    # (NumPy's temporary elision): the expression allocates once.
    def __add__(self, other): return _binary(_refs(self), self, other, "add", False)
    def __radd__(self, other): return _binary(_refs(self), self, other, "add", True)
    def __sub__(self, other): return _binary(_refs(self), self, other, "subtract", False)
    def __rsub__(self, other): return _binary(_refs(self), self, other, "subtract", True)
    def __mul__(self, other): return _binary(_refs(self), self, other, "multiply", False)
    def __rmul__(self, other): return _binary(_refs(self), self, other, "multiply", True)
    def __truediv__(self, other): return _binary(_refs(self), self, other, "divide", False)
    def __rtruediv__(self, other): return _binary(_refs(self), self, other, "divide", True)
    def __pow__(self, other): return _binary(_refs(self), self, other, "power", False)
    def __rpow__(self, other): return _binary(_refs(self), self, other, "power", True)
    def __neg__(self): return self._kernel("negative", self)
    def __abs__(self): return np.absolute(self)     # the library, else NumPy's loop (complex64)
    def __eq__(self, other): return _binary(0, self, other, "equal", False)
    def __ne__(self, other): return _binary(0, self, other, "not_equal", False)
    def __lt__(self, other): return _binary(0, self, other, "less", False)
    def __le__(self, other): return _binary(0, self, other, "less_equal", False)
    def __gt__(self, other): return _binary(0, self, other, "greater", False)
    def __ge__(self, other): return _binary(0, self, other, "greater_equal", False)

    # In place: the result is written into this array's buffer (nothing is
    # allocated) and ``b = a; a += 1`` updates ``b`` too, as in NumPy.  The
    # result must have this array's element type (``int_array += 0.5`` is
    # a TypeError, NumPy's same-kind rule).
    def reshape(self, *shape, copy=None) -> "DistArray":
        """``xdap.reshape(a, shape)`` (``a.reshape(2, 3)`` or ``a.reshape((2, 3))``)."""
        from .numpy_api import reshape
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape, copy=copy)

    @property
    def T(self) -> "DistArray":
        """The transpose of a 2-D array (``xdap.permute_dims``: no data
        moves, the maps follow the dims)."""
        from .numpy_api import permute_dims
        if self.ndim != 2:
            raise ValueError(f"a.T needs a 2-D array (use xdap.permute_dims), a has {self.ndim} dims")
        return permute_dims(self, (1, 0))

    @property
    def mT(self) -> "DistArray":
        """The last two dims swapped (``xdap.matrix_transpose``)."""
        from .numpy_api import matrix_transpose
        return matrix_transpose(self)

    def __matmul__(self, other):
        from .numpy_api import matmul
        return matmul(self, other)

    # operators without a library kernel: NumPy's ufunc on every rank's values
    # (xdap.numpy_api.numpy_ufunc: local work)
    def __floordiv__(self, other): return np.floor_divide(self, other)
    def __rfloordiv__(self, other): return np.floor_divide(other, self)
    def __mod__(self, other): return np.remainder(self, other)
    def __rmod__(self, other): return np.remainder(other, self)
    def __and__(self, other): return np.bitwise_and(self, other)
    def __rand__(self, other): return np.bitwise_and(other, self)
    def __or__(self, other): return np.bitwise_or(self, other)
    def __ror__(self, other): return np.bitwise_or(other, self)
    def __xor__(self, other): return np.bitwise_xor(self, other)
    def __rxor__(self, other): return np.bitwise_xor(other, self)
    def __lshift__(self, other): return np.left_shift(self, other)
    def __rshift__(self, other): return np.right_shift(self, other)
    def __invert__(self): return np.invert(self)
    def __pos__(self): return np.positive(self)
    def __ifloordiv__(self, other): return np.floor_divide(self, other, out=self)
    def __imod__(self, other): return np.remainder(self, other, out=self)
    def __iand__(self, other): return np.bitwise_and(self, other, out=self)
    def __ior__(self, other): return np.bitwise_or(self, other, out=self)
    def __ixor__(self, other): return np.bitwise_xor(self, other, out=self)

    def __iadd__(self, other): return _in_place(self, other, "add")
    def __isub__(self, other): return _in_place(self, other, "subtract")
    def __imul__(self, other): return _in_place(self, other, "multiply")
    def __itruediv__(self, other): return _in_place(self, other, "divide")
    def __ipow__(self, other): return _in_place(self, other, "power")

    def __repr__(self):
        """One line: the global type, each dim's distribution, the grid and
        this rank's share -- never the data (``a.show()`` prints that)."""
        d = self.distribution
        dims = ", ".join(_describe_map(m) for m in d.maps) or "replicated"
        share = "x".join(str(n) for n in d.local_shape) or "1"
        what = " rows" if self.parts.info.ragged else ""
        return (f"DistArray({self.type}, dist=({dims}), grid={d.grid}, "
                f"rank {self.comm.rank} of {self.comm.size} holds {share}{what})")

    __str__ = __repr__

    def show(self, file=None, root: int = 0) -> None:
        """Print the array rank by rank (collective): its description, then
        each rank's partition under its rank number, in order.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> xdap.from_global(np.arange(3.0), comm=MPI.COMM_SELF).show()
        DistArray(3 * float64, dist=('n'), grid=(1,))
        [rank 0] 3: [0.0, 1.0, 2.0]
        """
        from .printing import show
        show(self, file=file, root=root)

    def plot(self, ax=None, *, points=None, polygons=None, outline=None, max_cells: int = 256,
             title=None):
        """Draw who owns what (collective; rank 0 draws and gets the
        matplotlib Axes, the others None): cells colored by owning rank,
        halos hatched; ragged rows as bars of their lengths; with
        ``points=`` (this rank's coordinates) unstructured data as points,
        ghosts hollow; with ``polygons=`` mesh cells (e.g. a slice) filled
        in the owner's color, ``outline=`` ones edged. See ``xdap.plot``.

        >>> import numpy as np, xdap
        >>> from mpi4py import MPI
        >>> ax = xdap.from_global(np.zeros(4), comm=MPI.COMM_SELF).plot()
        >>> ax.figure.savefig(__import__("io").BytesIO(), format="png")
        """
        from .pictures import plot
        return plot(self, ax, points=points, polygons=polygons, outline=outline,
                    max_cells=max_cells, title=title)


def _zero_d_as_int(key):
    """0-d integer DistArrays in a key are the ints they hold (every rank
    holds a 0-d array's value: no MPI call)."""
    def plain(k):
        return k.item() if type(k) is DistArray and not k.distribution.maps and \
            is_integer(k.parts.info.dtype) and k.parts.validity is None else k
    return tuple(plain(k) for k in key) if isinstance(key, tuple) else plain(key)


def _new_axes_only(key) -> int:
    """How many new axes a key of only None and Ellipsis adds (0 for any
    other key)."""
    keys = key if isinstance(key, tuple) else (key,)
    if not keys or not all(k is None or k is Ellipsis for k in keys):
        return 0
    return sum(k is None for k in keys)


def _zero_d_bool(key):
    """The bool of a whole key that is one boolean -- True, np.True_ or a
    0-d bool DistArray (whose value every rank holds: no MPI call) -- else
    None."""
    if isinstance(key, (bool, np.bool_)):
        return bool(key)
    if type(key) is DistArray and not key.distribution.maps and key.parts.info.dtype == "bool" \
            and key.parts.validity is None:
        return bool(key.parts.values[()])
    return None


def _integer_index(key) -> bool:
    """An integer array along the first dim: a NumPy array, a list of ints,
    or a 1-D integer DistArray."""
    if isinstance(key, DistArray):
        return is_integer(key.parts.info.dtype) and not key.parts.info.ragged
    if isinstance(key, list):
        key = np.asarray(key)
    return isinstance(key, np.ndarray) and key.dtype.kind in "iu"


_KERNELS: dict = {}


def _kernel_fn(name: str):
    """The library kernel ``name`` (xdap.kernels is imported on first use)."""
    k = _KERNELS.get(name)
    if k is None:
        from . import kernels
        k = _KERNELS[name] = getattr(kernels, name)
    return k


_refs = sys.getrefcount


def _first(refs, *rest):
    return refs


class _Probe:
    """What ``sys.getrefcount(self)`` says inside an operator method when
    ``self`` is a temporary (measured once: the interpreter decides it) --
    called as the operators call ``_binary``, so the count is the same."""

    def __add__(self, other):
        return _first(_refs(self), self, other)

    def __radd__(self, other):
        return _first(_refs(self), self, other)


_TEMPORARY = _Probe() + 0           # the count of a temporary left operand
_TEMPORARY_R = 0 + _Probe()         # ... and of a temporary right operand
_OPERANDS = (int, float, complex, bool)
_SAME_TYPE: dict = {}               # (kernel, operand types) -> result is the temporary's type


def _binary(refs, self, other, name, reflected):
    """``self <op> other`` (``other <op> self`` when ``reflected``);
    ``refs``: ``self``'s reference count in the operator (0: not asked)."""
    kind = type(other)
    if kind is not DistArray and kind not in _OPERANDS and not isinstance(other, numbers.Number):
        return NotImplemented        # e.g. a == None: Python's default, not a kernel call
    k = _KERNELS.get(name) or _kernel_fn(name)
    args = (other, self) if reflected else (self, other)
    if refs and self._fresh and refs <= (_TEMPORARY_R if reflected else _TEMPORARY):
        key = (name, self.parts.info, other.parts.info if kind is DistArray else kind, reflected)
        same = _SAME_TYPE.get(key)
        if same:                     # the temporary's buffer takes the result
            return k(*args, out=self)
        result = k(*args)
        if same is None:
            _SAME_TYPE[key] = type(result) is DistArray and result.parts.info == self.parts.info
        return result
    try:
        return k(*args)
    except TypeError as e:
        return _numpy_instead(e, getattr(np, name), args, None)


def _in_place(self, other, name):
    if type(other) is not DistArray and not isinstance(other, (numbers.Number, np.ndarray)):
        return NotImplemented
    _library_or_numpy(_KERNELS.get(name) or _kernel_fn(name), getattr(np, name), (self, other),
                      self)
    return self


def _library_or_numpy(kernel, ufunc, inputs, out=None):
    """The library's kernel; where it has none for these numeric types
    (``log1p`` of complex numbers), NumPy's loop on every rank's values
    (``numpy_ufunc``: local work as well)."""
    try:
        return kernel(*inputs) if out is None else kernel(*inputs, out=out)
    except TypeError as e:
        return _numpy_instead(e, ufunc, inputs, out)


def _numpy_instead(error, ufunc, inputs, out):
    from .kernels.apply import NoKernelForTypes
    if not isinstance(error, NoKernelForTypes) or not all(
            a.parts.info.numeric and not a.parts.info.boxed for a in inputs if type(a) is DistArray):
        raise error
    from .numpy_api import numpy_ufunc
    return numpy_ufunc(ufunc, inputs, out)


_UFUNCS: dict = {}


def _ufuncs() -> dict:
    """{NumPy ufunc: the xdap kernel function} (filled on first use: the
    kernel library is not imported with xdap)."""
    from . import kernels
    from .kernels.library import _ufunc_table
    _UFUNCS.update({u: getattr(kernels, name) for u, name in _ufunc_table().items()})
    return _UFUNCS


def _numpy_scalar(x):
    """An xnd scalar as NumPy's scalar of its dtype (``float(a.sum())``,
    ``a.sum() + 1`` work as with NumPy); None for a missing value."""
    v = x.value
    if v is None:
        return None
    from .types import numpy_dtype
    return numpy_dtype(str(x.type).lstrip("?")).type(v)


def _describe_map(m) -> str:
    """'b', 'c', 'c[4]' (block-cyclic), 'u', 'b+pad', 'n' -- a map in a few letters."""
    return f"'{m.spec}'"


def _ragged_leaf_index(d: Distribution, p: Parts):
    """Where this rank's leaves sit in the global flat leaf space of ragged
    data whose rows are not in block order: ``(int64 index array, total)``,
    by a prefix sum over the global row order that no rank holds whole
    (``xdap.directory.prefix_sums``: collective, O(rows / P)).  Arrays in
    block rows get ``(start, total)`` from their constructor instead."""
    counts = leaf_counts(p)
    rows = d.global_indices(0)
    canonical = np.arange(p.nrows)[d.maps[0].canonical_positions(d.coords[0])]
    first, total = prefix_sums(d.comm, d.global_shape[0], rows[canonical], counts[canonical], rows)
    return expand_ranges(first, counts), total


# --------------------------------------------------------------------------
# the public constructors: engines' pairs, wrapped
# --------------------------------------------------------------------------

def from_global(data, dist=None, grid=None, comm=None, *, root=None, type=None, dtype=None,
                **per_dim) -> DistArray:
    """Distribute a whole array (collective).

    data     the global array on every rank (root=None), or on ``root`` only
             (other ranks pass None): an xnd container, a NumPy array (masked
             arrays become ``?T``) or nested lists (give ``type``, e.g.
             ``"var * var * ?float64"``, for ragged data with empty rows)
    type     the global type, or its element alone (``"?float64"``); a NumPy
             array is widened to it (``int32`` -> ``float64``: a copy; a
             cast that could lose data is refused), ``?T`` marks it all
             valid; ``dtype``: the element alone
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
    return DistArray._agreed(create.from_global(data, dist, grid, comm, root=root, type=type,
                                                dtype=dtype, **per_dim))


def from_local(local, dist="b", axis=0, comm=None, *, indices=None, size=None, owned=None,
               one_to_one=None, type=None) -> DistArray:
    """A DistArray whose part on each rank is the piece that rank passes
    (collective; no rank sees another's data). See ``xdap.create.from_local``.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_local(np.arange(3.0), comm=MPI.COMM_SELF)     # blocks in rank order
    >>> b = xdap.from_local([7.0, 8.0], dist="u", indices=[1, 0], comm=MPI.COMM_SELF)
    >>> a.global_shape, b.to_global().value
    ((3,), [8.0, 7.0])
    """
    return DistArray._agreed(create.from_local(local, dist, axis, comm, indices=indices,
                                               size=size, owned=owned, one_to_one=one_to_one,
                                               type=type))


def _shape(shape) -> tuple:
    """NumPy's shapes: an int is one dim."""
    return (shape,) if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool) \
        else shape


def _element(type, dtype):
    """The element type from ``type`` or NumPy's ``dtype=`` (a NumPy dtype,
    scalar type or name)."""
    t = type if dtype is None else dtype
    if isinstance(t, str) or t is None:
        return t
    from .dtypes import dtype_from_numpy
    try:
        return dtype_from_numpy(np.dtype(t))
    except TypeError:
        return t                       # let the creation say what is wrong with it


def empty(shape, type="float64", dist=None, grid=None, comm=None, *, dtype=None,
          **per_dim) -> DistArray:
    """An uninitialised DistArray (``?T``: all missing); see ``xdap.create``.
    ``dtype=`` (NumPy's spelling, a NumPy dtype or name) may stand for
    ``type``, here and in ``zeros``, ``full``, ``arange``."""
    return DistArray._agreed(create.empty(_shape(shape), _element(type, dtype), dist, grid,
                                          comm, **per_dim))


def zeros(shape, type="float64", dist=None, grid=None, comm=None, *, dtype=None,
          **per_dim) -> DistArray:
    """A DistArray of zeros, each rank making only its part.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.zeros((2, 3), "int32", comm=MPI.COMM_SELF).to_global().value
    [[0, 0, 0], [0, 0, 0]]
    """
    return DistArray._agreed(create.zeros(_shape(shape), _element(type, dtype), dist, grid,
                                          comm, **per_dim))


def full(shape, fill_value, type="float64", dist=None, grid=None, comm=None, *, dtype=None,
         **per_dim) -> DistArray:
    """A DistArray filled with ``fill_value`` (None: missing, ``?T``)."""
    return DistArray._agreed(create.full(_shape(shape), fill_value, _element(type, dtype), dist,
                                         grid, comm, **per_dim))


def arange(start, stop=None, step=1, type="int64", dist=None, grid=None, comm=None, *,
           dtype=None, **per_dim) -> DistArray:
    """``numpy.arange`` as a DistArray, each rank computing only its part."""
    return DistArray._agreed(create.arange(start, stop, step, _element(type, dtype), dist,
                                           grid, comm, **per_dim))


def from_function(f, shape, type=None, dist=None, grid=None, comm=None, **per_dim) -> DistArray:
    """A DistArray whose element ``[i, j, ...]`` is ``f(i, j, ...)``; ``f``
    gets each rank's own global indices (open grids). See ``xdap.create``.

    >>> import xdap
    >>> from mpi4py import MPI
    >>> xdap.from_function(lambda i: i * i, 4, comm=MPI.COMM_SELF).to_global().value
    [0, 1, 4, 9]
    """
    return DistArray._agreed(create.from_function(f, shape, type, dist, grid, comm,
                                                  **per_dim))


def from_distarray(obj, comm=None) -> DistArray:
    """Import a DAP 0.9.0 / 0.10.0 export (collective; zero-copy where the
    buffer is C-contiguous, a copy otherwise); see ``xdap.protocols.dap``.

    ``obj`` is an object with ``__distarray__()`` or the dict itself, on every
    rank of ``comm`` (default ``MPI.COMM_WORLD``). Every rule of the protocol
    is checked across ranks; a violation on any rank raises the same
    ValueError/TypeError on every rank, naming the rule, rank and value.
    """
    from .protocols import dap
    return DistArray._agreed(dap.import_dap(obj, comm))


def from_partitioned(obj, comm=None) -> DistArray:
    """Import a ``__partitioned__`` export (collective); see
    ``xdap.protocols.partitioned.import_partitioned`` for the accepted forms.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> d = {"shape": (4,), "partition_tiling": (1,), "partitions": {
    ...      (0,): {"start": (0,), "shape": (4,), "data": np.arange(4.0), "location": [0]}},
    ...      "locals": [(0,)], "get": lambda x: x}
    >>> xdap.from_partitioned(d, comm=MPI.COMM_SELF).to_global().value
    [0.0, 1.0, 2.0, 3.0]
    """
    from .protocols import partitioned
    return DistArray._agreed(partitioned.import_partitioned(obj, comm))


def from_arrow(arr, comm=None, type=None) -> DistArray:
    """A DistArray whose rows are every rank's Arrow array, stacked in rank
    order (collective; zero-copy); see ``xdap.protocols.arrow.stack_arrow``.

    >>> import pyarrow as pa, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_arrow(pa.array([[1.0], [2.0, 3.0]]), comm=MPI.COMM_SELF)
    >>> a.global_shape, a.to_global().value
    ((2, None), [[1.0], [2.0, 3.0]])
    """
    from .protocols import arrow
    return DistArray._agreed(arrow.stack_arrow(arr, comm, type))


def from_awkward(arr, comm=None, type=None) -> DistArray:
    """A DistArray of every rank's awkward array, rows stacked in rank order
    (collective; zero-copy); see ``xdap.protocols.awkward.stack_awkward``."""
    from .protocols import awkward
    return DistArray._agreed(awkward.stack_awkward(arr, comm, type))


def load(path, comm=None, dist=None, grid=None, **per_dim) -> DistArray:
    """Load a save written by ``DistArray.save`` (collective); see
    ``xdap.io.load``.

    >>> import tempfile, os, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.xdap")
    >>> a.save(path)
    >>> xdap.load(path, comm=MPI.COMM_SELF).to_global().value
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    """
    from . import io
    return DistArray._agreed(io.load(path, comm, dist, grid, **per_dim))
