"""DistArray: the surface -- a Distribution plus this rank's Parts.

The engines (``xdap.movement``, ``xdap.protocols``, ``xdap.kernels``,
``xdap.io``, ``xdap.create``) take and return the core pair
``(Distribution, Parts)``; the public functions (``xdap.api``, by the
Array API's categories) take and return arrays.  DistArray is a thin
facade: it wraps a pair, and its methods *are* those functions (each
declares its contract there: ``xdap.contract``).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> a.global_shape, a.grid, str(a.type), a.local.type
((3, 4), (1, 1), '3 * 4 * float64', ndt("3 * 4 * float64"))
>>> a.to_global().value[2]
[8.0, 9.0, 10.0, 11.0]
"""
from __future__ import annotations

import numbers
import sys

import numpy as np
from ndtypes import ndt
from xnd import xnd

from . import arraylike
from . import agreement as _agreement
from .agreement import agreement
from .api import (creation, data_types, elementwise, exchange, indexing, linear_algebra,
                  manipulation, statistical)
from .contract import Contract, collective, contract_of, inside, normalized, state
from .contract import local as local_call   # the class has a property named local
from .directory import prefix_sums
from .distribution import Distribution
from .dtypes import is_integer
from .movement.halo import accumulate_halos, bind_halos, exchange_halos
from .movement.migrate import migrate_array
from .movement.redistribute import bind_redistribute, redistribute
from .parts import Parts, as_container, check_representable, container
from .printing import show
from .parts import parts as parts_of_container
from .rows import expand_ranges, leaf_counts

__all__ = ["DistArray"]


def _operator(name: str, reflected: bool):
    """The arithmetic operator ``name`` (``other <op> self`` when
    ``reflected``), as a DistArray method: local work, its common cases --
    another DistArray of one distribution, a 0-d one, a Python int or float
    -- made whole in C (``xdap._apply``) with the least Python between: a
    loop's operators are its glue.  A temporary -- a result nothing else
    references, ``a * 2`` inside ``a * 2 + 1`` (or the right one of ``+``
    and ``*``) -- lends its buffer when the result has its dtype (NumPy's
    temporary elision).  Anything else, and debug mode, take ``_binary``."""
    commutative = name in ("add", "multiply")

    def op(self, other):
        rs = _refs(self)                 # as _Probe asks: a temporary's counts
        ro = _refs(other)
        if not _agreement._DEBUG:
            if _array_result is None:
                bind_fast_paths()
            kind = type(other)
            if kind is DistArray:
                if bool(self.distribution.maps) is bool(other.distribution.maps):
                    if self._fresh and rs <= (_T_SELF_R if reflected else _T_SELF):
                        into = self
                    elif commutative and other._fresh and ro <= _T_OTHER:
                        into = other
                    else:
                        into = None
                    out = _array_result(_HANDLES[name], other, self, into) if reflected else \
                        _array_result(_HANDLES[name], self, other, into)
                    if out is not None:
                        return out
                else:            # one 0-d operand: of the other's dtype, that dtype's scalar
                    scalar, array = (other, self) if self.distribution.maps else (self, other)
                    if scalar.parts.info.dtype == array.parts.info.dtype and \
                            array.parts.info.numeric:
                        first = other if reflected else self
                        out = _scalar_result(_HANDLES[name], array, scalar, scalar is first)
                        if out is not None:
                            return out
            elif (kind is float or kind is int) and not (name == "power" and kind is int
                                                         and other < 0):
                try:
                    number = memo_scalar(kind, other, self.parts.info.dtype)
                except (ValueError, TypeError, OverflowError):   # e.g. 2**70: the general path
                    number = None
                if number is not None:
                    into = self._fresh and rs <= (_T_SELF_R if reflected else _T_SELF)
                    out = _scalar_result(_HANDLES[name], self, number, reflected, into)
                    if out is not None:
                        return out
        return _binary(rs, self, other, name, reflected, ro if commutative else 0)

    op.__name__ = op.__qualname__ = f"__{'r' if reflected else ''}{_DUNDER[name]}__"
    return elementwise.kernel_call(op)


def _ufunc_operator(dunder: str, ufunc, declared=None, reflected=False):
    """The operator ``dunder`` as NumPy's ``ufunc`` of the array (and the
    other operand; ``other <op> self`` when ``reflected``): the standard
    function's fast path (``xdap.api.elementwise``) for plain operands,
    else ``declared(self[, other])`` -- by default the ufunc itself, through
    ``__array_ufunc__``."""
    fast = elementwise.fast_path(ufunc)
    if ufunc.nin == 1:
        declared = declared or ufunc

        def op(self):
            if not _agreement._DEBUG:
                out = fast(self)
                if out is not None:
                    return out
            return declared(self)
    else:
        def op(self, other):
            if not _agreement._DEBUG:
                out = fast(other, self) if reflected else fast(self, other)
                if out is not None:
                    return out
            return ufunc(other, self) if reflected else ufunc(self, other)
    op.__name__ = op.__qualname__ = dunder
    return elementwise.kernel_call(op)


_DUNDER = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
           "power": "pow"}


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

    __slots__ = ("distribution", "parts", "_leaf_index", "_fresh", "_labels", "__weakref__")

    def __init__(self, distribution: Distribution, local):
        self._init(*_validated(distribution, local))

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

    @property
    @state
    def labels(self):
        """The name, dims, coordinates and attributes of the variable this
        array was read from (``xdap.labels.Labels``; ``from_xarray``), else
        None. Operations give plain arrays: labels ride along, they do not
        steer (``to_zarr``/``to_hdf5`` write the dims when given none)."""
        return getattr(self, "_labels", None)

    # -- the arraylike protocol (xdap.arraylike) ------------------------------
    def __xdap_wrap__(self, distribution, p, same_rows=False, agreed=False, fresh=True):
        if not same_rows:          # (a ragged result still needs its leaf index)
            return DistArray._agreed((distribution, p)) if agreed else \
                DistArray(distribution, p)
        new = object.__new__(DistArray)       # _trusted, inlined: kernels' hot path
        new.distribution, new.parts, new._leaf_index = distribution, p, self._leaf_index
        new._fresh = fresh
        return new

    @staticmethod
    def __xdap_plain__(distribution, info, values, fresh, dtype=None):
        """A DistArray of plain ``values`` (``xdap.arraylike``): until the
        fast paths are bound (``bind_fast_paths`` replaces this with
        ``xdap._apply.new_array``, which builds the same in C)."""
        bind_fast_paths()
        return DistArray.__xdap_plain__(distribution, info, values, fresh, dtype)

    def __xdap_leaf_index__(self):
        """Where this rank's leaves of ragged data sit in the global leaf
        order: ``(start, total)`` for rows in block order, else ``(int64
        index array, total)``, found once (a distributed prefix sum over
        the rows: collective, decided from the array's agreed state) and
        kept; None for fixed data."""
        if self.parts.info.ragged and self._leaf_index is None:
            self._leaf_index = _ragged_leaf_index(self.distribution, self.parts)
        return self._leaf_index


    # -- state every rank agreed on: reads, no arguments, no MPI call -----------
    @property
    @state
    def local(self):
        """This rank's partition: an xnd container (a view, never a copy)."""
        return container(self.parts)

    @property
    @state
    def info(self):
        """The classified local type (``xdap.types.TypeInfo``)."""
        return self.parts.info

    @property
    @state
    def type(self) -> ndt:
        """The global type: ``N * M * T`` (fixed) or ``var * ... * T`` (ragged)."""
        return ndt(self.parts.info.global_type(self.distribution.global_shape))

    @property
    @state
    def global_shape(self) -> tuple:
        """Global sizes; ragged arrays: (rows, None, ...) for the var dims."""
        shape = self.distribution.global_shape
        if self.parts.info.ragged:
            return shape + (None,) * (self.parts.info.var_ndim - 1)
        return shape

    @property
    @state
    def dim_data(self) -> tuple:
        """This rank's DAP 0.10.0 dimension dictionaries (of the distributed dims)."""
        return self.distribution.dim_data()

    @property
    @state
    def grid(self) -> tuple:
        """Processes per dimension."""
        return self.distribution.grid

    @property
    @state
    def comm(self):
        """The communicator the array lives on."""
        return self.distribution.comm

    @property
    @state
    def ndim(self) -> int:
        """The number of dimensions."""
        return self.parts.info.ndim

    @property
    @state
    def shape(self) -> tuple:
        """The global shape, as NumPy says it (``global_shape``; ragged
        arrays: ``(rows, None, ...)``)."""
        return self.global_shape

    @property
    @state
    def size(self) -> int | None:
        """Global number of elements (None for ragged arrays: the lists vary)."""
        return None if self.parts.info.ragged else int(np.prod(self.global_shape))

    @property
    @state
    def dtype(self) -> np.dtype | None:
        """NumPy's dtype of one element (a structured dtype for records; the
        int64 codes of a categorical), None for ragged arrays and strings,
        which have no NumPy form."""
        return None if self.parts.info.ragged else self.parts.info.numpy_dtype

    @property
    @state
    def device(self) -> str:
        """Always the CPU."""
        return "cpu"

    # -- Python conversions: a 0-d array's one value is on every rank -----------------
    @state
    def __len__(self) -> int:
        """The global size of the first dim (no communication)."""
        if not self.distribution.maps:
            raise TypeError("len() of a 0-d DistArray (use its value: float(a), a.item())")
        return self.distribution.global_shape[0]

    @state
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

    @state
    def __bool__(self) -> bool:
        """``if a:`` -- a 0-d array's truth; any larger array raises, as in
        NumPy (``if (a < 0):`` is ambiguous: say ``(a < 0).any()``)."""
        return self._scalar(bool, "bool")

    @state
    def __float__(self) -> float:
        return self._scalar(float, "float")

    @state
    def __int__(self) -> int:
        return self._scalar(int, "int")

    @state
    def __complex__(self) -> complex:
        return self._scalar(complex, "complex")

    @state
    def __index__(self) -> int:
        if self.distribution.maps or not is_integer(self.parts.info.dtype):
            raise TypeError(f"only 0-d integer arrays are indices, not {self.type}")
        return self._scalar(int, "int")

    @state
    def __repr__(self):
        """One line: the global type, each dim's distribution, the grid and
        this rank's share -- never the data (``a.show()`` prints that); a
        0-d array shows its value, which every rank holds."""
        d = self.distribution
        if not d.maps:
            return f"DistArray({self.local.value!r}, type={self.type})"
        dims = ", ".join(f"'{m.spec}'" for m in d.maps)
        share = "x".join(str(n) for n in d.local_shape)
        what = " rows" if self.parts.info.ragged else ""
        return (f"DistArray({self.type}, dist=({dims}), grid={d.grid}, "
                f"rank {self.comm.rank} of {self.comm.size} holds {share}{what})")

    __str__ = __repr__

    @state
    def __format__(self, spec):
        """A 0-d array formats as its value (``f"{a.sum():.3f}"``)."""
        if not self.distribution.maps and spec:
            return format(self.local.value, spec)
        return format(repr(self), spec)

    # -- the public functions, as methods (xdap.api) -----------------------------------
    global_indices = indexing.global_indices
    __getitem__ = indexing.getitem
    __setitem__ = indexing.setitem
    field = indexing.field
    copy = creation.copy

    @local_call
    def __copy__(self):
        """``copy.copy(a)``: a new array over the same values (local work,
        no copy of the data)."""
        yield dict(self=self)
        return self.__xdap_wrap__(self.distribution, self.parts, True, fresh=False)

    @local_call
    def __deepcopy__(self, memo=None):
        """``copy.deepcopy(a)`` (xarray's deep copies): ``a.copy()`` -- each
        rank copies its part, local work.  ``memo`` (copy's bookkeeping) is
        not read: the array holds no references for it to share."""
        yield dict(self=self, memo=None)
        return creation.copy(self)
    astype = data_types.astype
    local_numpy = exchange.local_numpy
    __array__ = exchange.numpy_array
    to_numpy = exchange.to_numpy
    to_global = exchange.to_global
    __distarray__ = exchange.distarray
    __partitioned__ = property(exchange.partitioned_property)
    partitioned = exchange.partitioned
    to_arrow = exchange.to_arrow
    to_awkward = exchange.to_awkward
    save = exchange.save
    to_hdf5 = exchange.to_hdf5
    to_zarr = exchange.to_zarr
    to_npy = exchange.to_npy
    redistribute = redistribute
    bind_redistribute = bind_redistribute
    migrate = migrate_array
    exchange_halos = exchange_halos
    bind_halos = bind_halos
    accumulate_halos = accumulate_halos
    sum = statistical.sum
    prod = statistical.prod
    min = statistical.min
    max = statistical.max
    mean = statistical.mean
    count = statistical.count
    any = statistical.any
    all = statistical.all
    __matmul__ = linear_algebra.matmul_operator
    mT = property(linear_algebra.matrix_transpose_property)
    T = property(linear_algebra.transpose_property)
    reshape = manipulation.reshape_method
    __dlpack__ = exchange.dlpack
    __dlpack_device__ = exchange.dlpack_device
    to_device = exchange.to_device

    @state
    def __array_namespace__(self, /, *, api_version=None):
        """This array's Array API namespace: ``xdap.array_api``."""
        from . import array_api
        if api_version not in (None, "2023.12", array_api.__array_api_version__):
            raise ValueError(f"xdap implements the Array API "
                             f"{array_api.__array_api_version__}, not {api_version!r}")
        return array_api

    def __iter__(self):
        """Iterate over the first dim: ``a[0], a[1], ...`` (collective: the
        array is agreed when the iteration starts; each step is ``a[i]``)."""
        return (self[i] for i in range(indexing.iteration_length(self)))

    __iter__.__xdap_contract__ = contract_of(indexing.iteration_length)

    show = show

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

    # pictures.plot's (matplotlib is imported when one is drawn)
    plot.__xdap_contract__ = Contract("collective", "plot",
                                      ("a", "ax", "points", "polygons", "outline", "max_cells",
                                       "title"), own=("ax", "points", "polygons", "outline"))

    # -- elementwise operators: NumPy's ufuncs as xdap's kernels (local work) ------------
    # `==` is elementwise, so DistArray keeps identity hashing.
    __hash__ = object.__hash__

    __array_ufunc__ = elementwise.array_ufunc

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's functions that xdap implements on distributed data
        (``np.histogram``, ``np.nanmean``, ``np.pad``, ...:
        ``xdap.api.numpy_functions``) run as xdap's; any other behaves as
        without this hook (``np.sum(a)`` calls ``a.sum``, and a function that
        needs the values as one NumPy array refuses, naming ``to_numpy``)."""
        from .api.numpy_functions import NUMPY_FUNCTIONS
        handler = NUMPY_FUNCTIONS.get(func)
        if handler is None:
            return func._implementation(*args, **kwargs)
        return handler(*args, **kwargs)

    # Operators are local work: the kernel's checks read agreed state only,
    # so no rank communicates (see xdap.kernels).  A temporary -- a kernel
    # result nothing else references, as ``a * 2`` inside ``a * 2 + 1`` --
    # lends its buffer to the next operator when the result has its type
    # (NumPy's temporary elision): the expression allocates once.
    __add__ = _operator("add", False)
    __radd__ = _operator("add", True)
    __sub__ = _operator("subtract", False)
    __rsub__ = _operator("subtract", True)
    __mul__ = _operator("multiply", False)
    __rmul__ = _operator("multiply", True)
    __truediv__ = _operator("divide", False)
    __rtruediv__ = _operator("divide", True)
    __pow__ = _operator("power", False)
    __rpow__ = _operator("power", True)
    __neg__ = _ufunc_operator("__neg__", np.negative, lambda self: _kernel_fn("negative")(self))
    # the library, else NumPy's loop (complex64)
    __abs__ = _ufunc_operator("__abs__", np.absolute)
    @elementwise.kernel_call
    def __eq__(self, other): return _binary(0, self, other, "equal", False)
    @elementwise.kernel_call
    def __ne__(self, other): return _binary(0, self, other, "not_equal", False)
    @elementwise.kernel_call
    def __lt__(self, other): return _binary(0, self, other, "less", False)
    @elementwise.kernel_call
    def __le__(self, other): return _binary(0, self, other, "less_equal", False)
    @elementwise.kernel_call
    def __gt__(self, other): return _binary(0, self, other, "greater", False)
    @elementwise.kernel_call
    def __ge__(self, other): return _binary(0, self, other, "greater_equal", False)

    # operators without a library kernel: NumPy's ufunc on every rank's values
    # (xdap.api.elementwise.numpy_ufunc: local work)
    __floordiv__ = _ufunc_operator("__floordiv__", np.floor_divide)
    __rfloordiv__ = _ufunc_operator("__rfloordiv__", np.floor_divide, reflected=True)
    __mod__ = _ufunc_operator("__mod__", np.remainder)
    __rmod__ = _ufunc_operator("__rmod__", np.remainder, reflected=True)
    __and__ = _ufunc_operator("__and__", np.bitwise_and)
    __rand__ = _ufunc_operator("__rand__", np.bitwise_and, reflected=True)
    __or__ = _ufunc_operator("__or__", np.bitwise_or)
    __ror__ = _ufunc_operator("__ror__", np.bitwise_or, reflected=True)
    __xor__ = _ufunc_operator("__xor__", np.bitwise_xor)
    __rxor__ = _ufunc_operator("__rxor__", np.bitwise_xor, reflected=True)
    __lshift__ = _ufunc_operator("__lshift__", np.left_shift)
    __rshift__ = _ufunc_operator("__rshift__", np.right_shift)
    __invert__ = _ufunc_operator("__invert__", np.invert)
    __pos__ = _ufunc_operator("__pos__", np.positive)

    # In place: the result is written into this array's buffer (nothing is
    # allocated) and ``b = a; a += 1`` updates ``b`` too, as in NumPy.  The
    # result must have this array's element type (``int_array += 0.5`` is
    # a TypeError, NumPy's same-kind rule).
    @elementwise.kernel_call
    def __ifloordiv__(self, other): return np.floor_divide(self, other, out=self)
    @elementwise.kernel_call
    def __imod__(self, other): return np.remainder(self, other, out=self)
    @elementwise.kernel_call
    def __iand__(self, other): return np.bitwise_and(self, other, out=self)
    @elementwise.kernel_call
    def __ior__(self, other): return np.bitwise_or(self, other, out=self)
    @elementwise.kernel_call
    def __ixor__(self, other): return np.bitwise_xor(self, other, out=self)
    @elementwise.kernel_call
    def __iadd__(self, other): return _in_place(self, other, "add")
    @elementwise.kernel_call
    def __isub__(self, other): return _in_place(self, other, "subtract")
    @elementwise.kernel_call
    def __imul__(self, other): return _in_place(self, other, "multiply")
    @elementwise.kernel_call
    def __itruediv__(self, other): return _in_place(self, other, "divide")
    @elementwise.kernel_call
    def __ipow__(self, other): return _in_place(self, other, "power")


arraylike.register(DistArray)


@collective(name="DistArray", own=("local",))
def _validated(distribution, local):
    """The checks of ``DistArray(distribution, local)``: every rank's part
    fits the distribution; the distribution and the element type are
    agreed.  Returns ``(distribution, parts, leaf index)``; the leaf index
    of ragged rows in blocks takes one allgather of leaf counts."""
    if not isinstance(distribution, Distribution):
        raise TypeError(f"DistArray needs an xdap.Distribution, got "
                        f"{type(distribution).__name__}")
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
    element = p.info.leaf if ragged else (p.info.leaf, p.info.kind.value)
    yield {"distribution": distribution,
           "the element type": normalized(element, error=TypeError)}
    leaf_index = None
    if ragged and distribution.is_contiguous_1d:
        comm = distribution.comm
        counts = comm.allgather(len(p.values))
        leaf_index = (sum(counts[:comm.rank]), sum(counts))
    return distribution, p, leaf_index


# the constructor is collective: every rank checks its part, the type is agreed
DistArray.__xdap_contract__ = contract_of(_validated)


_KERNELS: dict = {}


def _kernel_fn(name: str):
    """The library kernel ``name`` (xdap.kernels is imported on first use)."""
    k = _KERNELS.get(name)
    if k is None:
        from . import kernels
        k = _KERNELS[name] = getattr(kernels, name)
    return k


_refs = sys.getrefcount


class _Probe:
    """What ``sys.getrefcount`` says of an operand inside an operator method
    when it is a temporary (measured once: the interpreter decides it) --
    asked as ``_operator``'s methods ask it, first thing."""

    def __add__(self, other):
        rs = _refs(self)
        ro = _refs(other)
        return rs, ro

    __radd__ = __add__


_T_SELF = (_Probe() + 0)[0]          # the count of a temporary left operand
_T_SELF_R = (0 + _Probe())[0]        # ... and of a temporary right operand (reflected)
_HELD = _Probe()
_T_OTHER = (_HELD + _Probe())[1]     # ... and of a temporary other operand, self held
del _HELD
_OPERANDS = (int, float, complex, bool)
_SAME_TYPE: dict = {}               # (kernel, operand types) -> result is the temporary's type


# ``a <op> 2.0`` (a Python int or float; the arithmetic operators -- comparisons
# make another dtype): the result of ``a``'s dtype and layout is made whole in C
# (``xdap._apply.scalar_result``: 1.3 us where the general path takes 3); it
# answers None for anything else, which the general path decides and says.
# Bound on the first call (xdap._apply stays out of import time).
_OPERATOR_KERNELS = ("add", "subtract", "multiply", "divide", "power")
# ``a < b``, ``a == 2.0``: a bool result of the operands' dims, made in C alike
_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

_HANDLES: dict = {}                    # operator name -> the kernel's fast handle
_scalar_result = _array_result = None
_SLOTS: dict = {}                     # (Python type, array dtype) -> (0-d xnd, its NumPy view)


def memo_scalar(kind, value, dtype: str):
    """The scalar operand of ``array <op> value`` as the kernels take it: a
    0-d xnd container of the dtype the value takes next to ``dtype``
    (``scalar_dtype``: it depends on the value's type alone), one kept per
    pair and written in place -- a loop's changing scalars (``alpha * p``)
    make no container each.  A value the dtype cannot hold raises
    (OverflowError, ValueError: the general path says why)."""
    slot = _SLOTS.get((kind, dtype))
    if slot is None:
        from .kernels.operands import scalar_dtype
        from .parts import parts
        container = xnd(kind(0), type=scalar_dtype(kind(0), dtype))
        slot = _SLOTS[kind, dtype] = (container, parts(container).values)
    slot[1][()] = value
    return slot[0]


def bind_fast_paths():
    """Name DistArray, Parts and the TypeInfo of a result of another dtype
    to ``xdap._apply``, and keep the operators' kernel handles (on the
    first operator or elementwise function)."""
    global _scalar_result, _array_result
    if _array_result is not None:
        return
    from .kernels.apply import _apply_module, fast
    from .kernels.library import gufunc
    _apply = _apply_module()
    _apply.register_array(DistArray, Parts, _result_info)
    DistArray.__xdap_plain__ = staticmethod(_apply.new_array)
    _HANDLES.update((n, fast(gufunc(n))) for n in _OPERATOR_KERNELS + _COMPARISONS)
    _scalar_result = _apply.scalar_result
    _array_result = _apply.array_result


elementwise.serve(DistArray, memo_scalar, bind_fast_paths)


def _result_info(info, dtype):
    """The TypeInfo of a kernel's result of NumPy ``dtype`` (a comparison's
    bool) over an operand of ``info``: its dims, that leaf."""
    return info.with_numpy_leaf(dtype)


def _binary(refs, self, other, name, reflected, other_refs=0):
    """``self <op> other`` (``other <op> self`` when ``reflected``);
    ``refs``: ``self``'s reference count in the operator (0: not asked);
    ``other_refs``: ``other``'s, for a commutative operator (0: not asked)."""
    if _agreement._DEBUG and elementwise.debug_vote(name, self, other):
        with inside:                 # debug mode: the operands agreed first
            return _binary(0, self, other, name, reflected)
    kind = type(other)
    if name == "power" and not reflected and kind is int and other < 0 and \
            self.parts.info.numeric and is_integer(self.parts.info.dtype):
        # NumPy's rule (the kernel would truncate 1 / x to 0): agreed state and the argument
        raise ValueError("Integers to negative integer powers are not allowed.")
    if kind is int or kind is float:
        if _scalar_result is None:
            bind_fast_paths()
        handle = _HANDLES.get(name)
        if handle is not None:
            try:
                number = memo_scalar(kind, other, self.parts.info.dtype)
            except (ValueError, TypeError, OverflowError):   # e.g. 2**70: the general path
                number = None
            # a temporary of the result's dtype takes it in its own buffer (the C
            # side checks the dtype): NumPy's temporary elision
            into = refs and self._fresh and refs <= (_T_SELF_R if reflected else _T_SELF)
            result = None if number is None else \
                _scalar_result(handle, self, number, reflected, into)
            if result is not None:
                return result
    if kind is DistArray and (name in _OPERATOR_KERNELS or name in _COMPARISONS):
        if _scalar_result is None:
            bind_fast_paths()
        result = _arrays_fast(refs, self, other, name, reflected, other_refs)
        if result is not None:
            return result
    if kind is not DistArray and kind not in _OPERANDS and not isinstance(other, numbers.Number):
        return NotImplemented        # e.g. a == None: Python's default, not a kernel call
    k = _KERNELS.get(name) or _kernel_fn(name)
    args = (other, self) if reflected else (self, other)
    if refs and self._fresh and refs <= (_T_SELF_R if reflected else _T_SELF):
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
        return elementwise.numpy_instead(e, getattr(np, name), args, None)


def _arrays_fast(refs, self, other, name, reflected, other_refs=0):
    """``self <op> other`` of two DistArrays made whole in C
    (``xdap._apply.array_result``): one distribution (or two 0-d arrays),
    fixed data without missing values, the result of one operand's dtype
    -- a temporary's buffer takes it; a 0-d array (its value on every rank)
    of the other's dtype acts as a scalar.  None: the general path decides."""
    a, b = (other, self) if reflected else (self, other)
    if bool(a.distribution.maps) is bool(b.distribution.maps):
        into = None
        if refs and self._fresh and refs <= (_T_SELF_R if reflected else _T_SELF):
            into = self
        elif other_refs and other._fresh and other_refs <= _T_OTHER:
            into = other             # a + (2 * b): commutative, the product's buffer
        return _array_result(_HANDLES[name], a, b, into)
    # one 0-d operand: its value is every rank's; of the other's dtype it is that
    # dtype's scalar (what the standard's promotion gives), so the scalar path serves
    scalar, array = (a, b) if not a.distribution.maps else (b, a)
    if scalar.parts.info.dtype != array.parts.info.dtype or not array.parts.info.numeric:
        return None
    return _scalar_result(_HANDLES[name], array, scalar, scalar is a)


def _in_place(self, other, name):
    if _agreement._DEBUG and elementwise.debug_vote(name, self, other):
        with inside:                 # debug mode: the operands agreed first
            return _in_place(self, other, name)
    kind = type(other)
    if kind is DistArray and self.distribution.maps and other.distribution.maps:
        if _array_result is None:
            bind_fast_paths()
        # one distribution, this array's dtype: made in C into this array's buffer
        if _array_result(_HANDLES[name], self, other, self) is not None:
            return self
    elif kind is float or kind is int:
        if _scalar_result is None:
            bind_fast_paths()
        try:
            number = memo_scalar(kind, other, self.parts.info.dtype)
        except (ValueError, TypeError, OverflowError):
            number = None
        # of this array's dtype: made in C into its buffer (else the general path says why)
        if number is not None and \
                _scalar_result(_HANDLES[name], self, number, False, True) is not None:
            return self
    if type(other) is not DistArray and not isinstance(other, (numbers.Number, np.ndarray)):
        return NotImplemented
    elementwise.library_or_numpy(_KERNELS.get(name) or _kernel_fn(name), getattr(np, name),
                                 (self, other), self)
    return self


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
