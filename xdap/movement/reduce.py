"""Reductions of DistArrays: sum, prod, min, max, mean, count, any, all --
over every axis (an xnd scalar on every rank) or chosen axes (a DistArray
over the remaining axes).

* NA-aware: missing values of ``?T`` data are skipped; ``count`` counts the
  valid ones.
* Ragged-aware: ``var * var * T`` reduces over everything (``axis=None``)
  or over the var dimension of each row (``axis=1``) -> a row-distributed
  ``N * T`` DistArray with the rows' distribution.
* Each global cell counts once: communication padding is skipped, an
  index held by several ranks (unstructured, not one-to-one) is taken from
  its lowest holder.

Result types (NumPy's rules for the accumulator): sum/prod -> the dtype
``numpy.sum`` gives (int64 for small ints and bool, uint64 for unsigned);
count -> int64; any/all -> bool; mean -> float64 (complex128 for complex);
min/max -> the input dtype.  Reducing nothing gives the identity (sum 0,
prod 1, count 0, any False, all True); min, max and mean of nothing raise
ValueError for plain data and give NA (``?T`` result) for optional data --
a reduction of optional data with min/max/mean always returns ``?T``, as
do per-row min/max/mean of ragged data (an empty row gives NA).  min/max of
complex data is a TypeError (MPI has no ordering for complex numbers).

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.ma.masked_equal([[1.0, 2.0], [0.0, 4.0]], 0.0), comm=MPI.COMM_SELF)
>>> reduce_parts(d, p, "sum"), reduce_parts(d, p, "count"), reduce_parts(d, p, "mean").value
(xnd(7.0, type='float64'), xnd(3, type='int64'), 2.3333333333333335)
>>> reduce_parts(d, p, "max", axis=1)[1].values.tolist()
[2.0, 4.0]
>>> d, p = from_global([[1, 2], [], [5]], type="var * var * int64", comm=MPI.COMM_SELF)
>>> [reduce_parts(d, p, op, axis=1)[1].valid_mask() for op in ("sum", "min")]
[None, array([ True, False,  True])]
"""
from __future__ import annotations

import functools
import hashlib
import math
import operator

import numpy as np
from xnd import xnd
from .. import arguments
from ..arraylike import is_distributed, unwrap, wrap_like
from ..contract import collective
from ..comm import MPI
from ..distribution import Distribution
from ..maps import DistributedUnstructuredMap, UnstructuredMap
from ..parts import Parts
from ..rows import expand_ranges, leaf_ranges
from ..bitmaps import pack_validity
from ..types import TypeInfo, dtype_from_numpy
from ..agreement import SETTLED, agreed_on, capacity, payloads, records_of
from .collectives import grid_team

__all__ = ["reduce", "reduce_parts", "reduce_agreed", "total", "plain_total", "plain_totaler",
           "plain_dotter", "total_parts", "dot_parts", "combiner",
           "is_total",
           "check_reduction",
           "counted_values",
           "allreduce", "OPS"]

OPS = ("sum", "prod", "min", "max", "mean", "count", "any", "all")

_MPI_OP = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX,
           "any": MPI.LOR, "all": MPI.LAND, "count": MPI.SUM}
_NP_OP = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
          "any": np.logical_or, "all": np.logical_and, "count": np.add}


# --------------------------------------------------------------------------
# per-op local rules (pure numpy)
# --------------------------------------------------------------------------

def _acc_dtype(op, dt):
    if op in ("sum", "prod"):
        return np.add.reduce(np.zeros(1, dt)).dtype
    if op == "mean":
        return np.dtype(np.complex128 if dt.kind == "c" else np.float64)
    if op == "count":
        return np.dtype(np.int64)
    if op in ("any", "all"):
        return np.dtype(bool)
    return dt


def _identity(op, dt):
    if op in ("sum", "mean", "count"):
        return 0
    if op == "prod":
        return 1
    if op in ("any", "all"):
        return op == "all"
    if dt.kind == "f":
        return np.inf if op == "min" else -np.inf
    if dt.kind == "b":
        return op == "min"
    info = np.iinfo(dt)
    return info.max if op == "min" else info.min


def _local(op, v, mask, axes):
    """(partial, count) of values v (mask: valid cells or None) over axes;
    count (valid cells) is None unless the op needs it (mean, min, max)."""
    dt = v.dtype
    acc = _acc_dtype(op, dt)
    where = True if mask is None else mask
    count = None
    if op in ("count", "mean", "min", "max"):
        if mask is None:      # every cell counts: no pass over the data
            count = np.full([n for k, n in enumerate(v.shape) if k not in axes],
                            math.prod(v.shape[k] for k in axes), np.int64)
        else:
            count = np.asarray(np.count_nonzero(mask, axis=axes), np.int64)
    if op == "count":
        return count, None
    if op in ("sum", "mean", "prod"):
        ufunc = np.multiply if op == "prod" else np.add
        part = ufunc.reduce(v, axis=axes, dtype=acc, where=where) if mask is not None \
            else ufunc.reduce(v, axis=axes, dtype=acc)
    elif op in ("min", "max"):
        part = _NP_OP[op].reduce(v, axis=axes, initial=_identity(op, dt), where=where)
    else:                                                   # any / all
        nz = v != 0
        part = _NP_OP[op].reduce(nz, axis=axes, where=where) if mask is not None \
            else _NP_OP[op].reduce(nz, axis=axes)
    return np.asarray(part), count


def allreduce(comm, arr, op: str, vote=None):
    """An MPI all-reduce of a NumPy array with one of ``OPS``'s operations,
    not in place; bools reduce logically (a sum of bools is their OR, as
    NumPy's bool matmul; MPI has no arithmetic on C_BOOL), min/max of
    floats let NaN win, and dtypes MPI does not know (float16) go through
    an allgather of the small partials.  ``vote``: the call's
    (``xdap.agreement.Vote``): a small array rides in its message, every
    rank combining the partials itself in rank order; a large one is sent
    after it."""
    arr = np.asarray(arr, order="C")      # keeps a 0-d value 0-d
    if vote is not None:
        if arr.nbytes <= capacity(comm.size):
            records = vote.ride(comm, arr)
            parts = payloads(records, comm.size, arr.dtype, arr.size)
            return _NP_OP[op].reduce(parts, axis=0).reshape(arr.shape)
        vote.cast()
    if comm.size == 1:
        return arr
    if arr.dtype == bool and op in ("min", "max", "sum", "prod"):   # MPI orders no C_BOOL
        op = {"min": "all", "prod": "all"}.get(op, "any")
    if not _mpi_knows(arr.dtype):
        pieces = comm.allgather(arr)
        return _NP_OP[op].reduce(np.stack(pieces), axis=0)
    out = np.empty_like(arr)
    mpi_op = _nan_op(op) if op in ("min", "max") and arr.dtype.kind == "f" else _MPI_OP[op]
    comm.Allreduce(arr, out, op=mpi_op)
    return out


_NAN_OPS: dict = {}


def _nan_op(op):
    """MPI's MAX/MIN for floats, but NaN wins, as in NumPy's maximum/minimum:
    MPI.MAX keeps ``a > b ? a : b``, so a rank's NaN met another's -inf gives
    an answer that depends on the order -- different ranks got NaN and -inf
    for one 0-d max.  A user op (created once): np.maximum on the buffers."""
    if op not in _NAN_OPS:
        from mpi4py.util.dtlib import to_numpy_dtype
        ufunc = _NP_OP[op]

        def combine(inbuf, inoutbuf, datatype):
            dt = to_numpy_dtype(datatype)
            a, b = np.frombuffer(inbuf, dt), np.frombuffer(inoutbuf, dt)
            ufunc(a, b, out=b)

        _NAN_OPS[op] = MPI.Op.Create(combine, commute=True)
    return _NAN_OPS[op]


_MPI_KNOWS: dict = {}


def _mpi_knows(dtype) -> bool:
    """Whether MPI has a datatype for this NumPy dtype (not float16):
    asked once per dtype, the probe's datatype freed -- one per call
    leaked a datatype every reduction."""
    if dtype not in _MPI_KNOWS:
        from mpi4py.util.dtlib import from_numpy_dtype
        try:
            t = from_numpy_dtype(dtype)
        except Exception:
            _MPI_KNOWS[dtype] = False
        else:
            if not t.is_predefined:
                t.Free()
            _MPI_KNOWS[dtype] = True
    return _MPI_KNOWS[dtype]


def _finish(op, total, count, optional, nothing_msg):
    """(values, valid mask or None) from the combined partials."""
    if op == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            vals = total / np.where(count == 0, 1, count)
        empty = count == 0
    elif op in ("min", "max"):
        vals = total
        empty = None if count is None else count == 0
    else:
        return total, None
    if optional:
        return vals, ~np.asarray(empty)
    if empty is not None and np.any(empty):
        raise ValueError(nothing_msg)
    return vals, None


# --------------------------------------------------------------------------
# which local cells count
# --------------------------------------------------------------------------

def _select(v, sel):
    if all(isinstance(s, slice) for s in sel):
        return v[tuple(sel)]
    return v[np.ix_(*[np.arange(v.shape[k])[s] if isinstance(s, slice) else s
                      for k, s in enumerate(sel)])]


def counted_values(d: Distribution, p: Parts):
    """This rank's share of all the array's values, each global element on
    exactly one rank -- padding left out, an element several ranks hold
    counted on the lowest, a 0-d array's one value on rank 0 -- as a 1-D
    NumPy array (a view of the partition where the selection is a slice)
    and its validity mask (None for plain data). Fixed data in the local
    block's C order; ragged data its leaves. No MPI call: the building block
    of statistics that reduce counts, not values (``histogram``)."""
    mask = p.valid_mask()
    if p.info.ragged:
        leaves = _row_selection(d, p)
        v = p.values[leaves]
        return v.reshape(-1), None if mask is None else mask[leaves].reshape(-1)
    if p.info.ndim == 0:
        mine = d.comm.Get_rank() == 0
        v = p.values.reshape(-1)[:1 if mine else 0]
        return v, None if mask is None else mask.reshape(-1)[:len(v)]
    sel = [d.maps[k].canonical_positions(d.coords[k]) for k in range(p.info.ndim)]
    v = _select(p.values, sel)
    return v.reshape(-1), None if mask is None else _select(mask, sel).reshape(-1)


def _norm_axis(axis, ndim):
    return arguments.axes("reduce", ndim, axis)


# --------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------

@collective
def reduce(a, op: str, axis=None):
    """Reduce the array ``a`` with ``op`` (one of OPS) over ``axis`` (None =
    all, an int or a tuple).  Collective.  Returns an xnd scalar on every
    rank when every axis is reduced, else an array of ``a``'s kind over the
    remaining axes (its ranks along the reduced grid axes hold the same,
    replicated values)."""
    if not is_distributed(a):
        raise TypeError(f"reduce: a must be a DistArray, got {type(a).__name__}")
    axes = check_reduction(a.parts.info, op, axis)
    yield dict(a=a, op=op, axis=axes)
    out = reduce_agreed(*unwrap(a), op, axes)
    return wrap_like(a, *out, agreed=True) if isinstance(out, tuple) else out


@collective
def reduce_parts(d: Distribution, p: Parts, op: str, axis=None):
    """``reduce`` on the core pair: an xnd scalar, or the result's
    ``(Distribution, Parts)``.  The operation and the axes are agreed first
    (one small collective): a bad or different one on any rank is the same
    error on every rank."""
    axes = check_reduction(p.info, op, axis)
    yield dict(d=d, p=p.info.global_type(d.global_shape), op=op, axis=axes)
    return reduce_agreed(d, p, op, axes)


def reduce_agreed(d: Distribution, p: Parts, op: str, axes: tuple):
    """The reduction itself, on arguments every rank agreed (``axes`` as
    ``check_reduction`` returns them)."""
    if is_total(p.info, axes):
        return _scalar(op, *_total(d, p, op, SETTLED), None)
    if p.info.ragged:
        if axes == (1,) and p.info.var_ndim == 2:
            return d, _ragged_rows(p, op)
        return _ragged_all(d, p, op)
    return _fixed(d, p, op, axes)


_ACC: dict = {}                 # (op, dtype) -> the accumulator's dtype


def plain_total(d, p, op, vote):
    """``total`` of fixed numeric data without missing values whose local
    block this rank counts whole (the common case, kept short: a loop's
    reductions): a NumPy scalar.  One message, carrying ``vote``."""
    return plain_totaler(d, p.info, op)(vote, _Holder(p))


class _Holder:
    """Parts seen as an array's ``parts`` (``plain_totaler``'s ``run``)."""
    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts


def combiner(size: int, dt, op: str):
    """``combine(part, records)``: every rank's partial of dtype ``dt``, in
    a vote's records (``records_of``), combined by ``op`` in rank order --
    the same value on every rank; ``part`` itself where ``records`` is None
    (one rank).  A few float partials are added (or multiplied) as NumPy
    scalars: a fifth of a ufunc reduce's cost."""
    if size == 1:
        return lambda part, records: part
    partials = records_of(size, dt)
    if dt.kind in "fc" and op in ("sum", "prod") and size <= 4:
        binary = operator.add if op == "sum" else operator.mul
        if size == 2:
            return lambda part, records: binary(partials[0], partials[1])

        def combine(part, records):
            out = partials[0]
            for r in range(1, size):
                out = binary(out, partials[r])
            return out
        return combine
    reduce = _NP_OP[op].reduce
    return lambda part, records: reduce(partials)


def total_parts(d: Distribution, info, op: str) -> tuple:
    """``plain_total`` in two steps, made once for data of ``d`` and
    ``info``: ``(partial, combine)`` -- ``partial(values)``, this rank's
    NumPy scalar (the message's payload), and ``combine(part, records)``,
    the total from every rank's (``combiner``; an empty ``mean``, ``min``
    or ``max`` raises there, alike on every rank).  Every decision -- the
    accumulator, the identity -- is taken here."""
    dt = info.numpy_dtype
    acc = _acc_dtype(op, dt)
    n = math.prod(d.global_shape)
    comm = d.comm
    combine = _NP_OP["sum" if op == "mean" else op]
    if op in ("mean", "min", "max") and not n:
        def empty(part, records):
            raise agreed_on(comm, ValueError(
                f"{op} of an empty selection (the reduced axes {tuple(range(d.ndim))} of "
                f"global shape {d.global_shape} hold no values) is undefined; use optional "
                "data to get NA"))
        return (lambda values: acc.type(0)), empty
    if op in ("sum", "mean"):
        local = functools.partial(np.add.reduce, axis=None, dtype=acc)
    elif op == "prod":
        local = functools.partial(np.multiply.reduce, axis=None, dtype=acc)
    elif op == "count":
        local = lambda values: np.int64(values.size)            # noqa: E731
    elif op in ("any", "all"):
        local = lambda values: combine.reduce(values != 0, axis=None)      # noqa: E731
    else:
        local = functools.partial(combine.reduce, axis=None, initial=_identity(op, dt))
    total = combiner(comm.size, acc, "sum" if op == "mean" else op)
    if op == "mean":
        return (lambda values: acc.type(local(values))), \
            (lambda part, records: total(part, records) / n)
    return (lambda values: acc.type(local(values))), total


def plain_totaler(d: Distribution, info, op: str):
    """``plain_total`` for data of ``d`` and ``info``, made once: a
    function ``run(vote, x) -> NumPy scalar`` (``x`` anything with
    ``parts`` of that type: a DistArray, or the Parts' holder) -- this
    rank's partial, carried with ``vote`` in one message, combined
    (``total_parts``)."""
    partial, combine = total_parts(d, info, op)
    comm = d.comm
    alone = comm.size == 1

    def run(vote, x):
        part = partial(x.parts.values)
        if alone:
            vote.cast()
            return combine(part, None)
        return combine(part, vote.ride(comm, part))
    return run


def dot_parts(d: Distribution, dt) -> tuple:
    """The dot product of two plain 1-D arrays of ``d`` (``plain_totaler``'s
    conditions) and dtype ``dt`` (integer, float or complex: the first
    conjugated) in two steps (``total_parts``): ``(partial, combine)`` --
    ``partial(v1, v2)`` each rank's BLAS dot, ``np.dot`` or ``np.vdot``
    (a NumPy scalar of ``dt``: theirs for two arrays of one numeric
    dtype), ``combine(part, records)`` the sum of every rank's."""
    return (np.vdot if dt.kind == "c" else np.dot), combiner(d.comm.size, dt, "sum")


def plain_dotter(d: Distribution, dt):
    """``dot_parts`` as one function, made once: ``(vote, v1, v2) ->
    NumPy scalar`` -- each rank's BLAS dot, one message carrying
    ``vote``."""
    partial, combine = dot_parts(d, dt)
    comm = d.comm
    alone = comm.size == 1

    def run(vote, v1, v2):
        part = partial(v1, v2)
        if alone:
            vote.cast()
            return part
        return combine(part, vote.ride(comm, part))
    return run


def _plain_total(d, p, op, vote):
    """``plain_total``'s (values, valid)."""
    return np.asarray(plain_total(d, p, op, vote)), None


def _total(d, p, op, vote):
    """``total``'s (values, valid): ``_finish``'s form."""
    if p.validity is None and not p.info.ragged and d.maps and d.counted()[1]:
        return _plain_total(d, p, op, vote)
    v, mask = counted_values(d, p)
    part, count = _local(op, v, mask, (0,))
    counted = count is not None and (mask is not None or p.info.ragged)
    payload = part.tobytes() + (count.tobytes() if counted else b"")
    comm = d.comm
    size = comm.size
    records = vote.ride(comm, payload)
    parts = payloads(records, size, part.dtype, 1)[:, 0]
    result = _NP_OP["sum" if op == "mean" else op].reduce(parts)
    if count is not None:
        count = payloads(records, size, np.int64, 1, part.dtype.itemsize)[:, 0].sum() \
            if counted else np.int64(math.prod(d.global_shape))
    what = (f"{op} of a ragged array without any value is undefined; use optional data to "
            "get NA") if p.info.ragged else \
        (f"{op} of an empty selection (the reduced axes {tuple(range(d.ndim))} of global shape "
         f"{d.global_shape} hold no values) is undefined; use optional data to get NA")
    try:
        vals, valid = _finish(op, result, count, p.info.optional, what)
    except ValueError as e:             # decided from global counts: alike on every rank
        raise agreed_on(comm, e) from None
    return np.asarray(vals), valid


def total(d: Distribution, p: Parts, op: str, vote=SETTLED):
    """``op`` over every element of ``(d, p)``, as a NumPy scalar on every
    rank (None: NA) -- one message, the hand-written one's: each rank's
    partial (and its count of valid values, for optional and ragged data)
    rides in the record of ``vote`` (``xdap.agreement.Vote``: the call's
    own vote when it is pending, else a plain exchange), and every rank
    combines the partials itself, in rank order.  ``d``, ``p`` and ``op``
    agreed (``check_reduction``), fixed or ragged numeric data."""
    vals, valid = _total(d, p, op, vote)
    return None if valid is not None and not bool(valid) else vals[()]


def is_total(info, axes) -> bool:
    """Whether ``axes`` (checked) are every axis of data of ``info``."""
    return len(axes) == (info.var_ndim if info.ragged else info.ndim)


def check_reduction(info, op, axis) -> tuple:
    """The reduced axes of ``op`` over ``axis`` on data of ``info``, or
    the error: an unknown operation, an axis out of range or repeated, an
    element type without that arithmetic."""
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"reduce: unknown operation {op!r}; use one of {', '.join(OPS)}")
    if info.text:
        raise TypeError(f"reduce {op}: {info.dtype} items have no arithmetic (the number of "
                        "items is a.global_shape[0])")
    if op != "count":
        info.require_numeric(f"reduce {op}")
    if info.ragged:
        axes = _norm_axis(axis, info.var_ndim)
        if axes != tuple(range(info.var_ndim)) and not (info.var_ndim == 2 and axes == (1,)):
            raise ValueError(f"reduce: a ragged array '{info.type_string()}' reduces over "
                             "everything (axis=None) or, for var * var * T, over each row "
                             f"(axis=1); got axis={axis!r}")
    else:
        axes = _norm_axis(axis, info.ndim)
    if op in ("min", "max") and info.numpy_dtype.kind == "c":
        raise TypeError(f"reduce: {op} is not defined for complex data ({info.dtype})")
    return axes


def _scalar(op, vals, valid, dt):
    name = dtype_from_numpy(vals.dtype)
    if valid is None:
        return xnd(vals.item() if vals.ndim == 0 else vals.reshape(()).item(), type=name)
    return xnd(vals.item() if bool(valid) else None, type="?" + name)


def _fixed(d, p, op, axes):
    ndim = p.info.ndim
    sel = [d.maps[k].canonical_positions(d.coords[k]) if k in axes
           else d.maps[k].owned_local_slice(d.coords[k]) for k in range(ndim)]
    v = _select(p.values, sel)
    mask = p.valid_mask()
    mask = None if mask is None else _select(mask, sel)
    part, count = _local(op, v, mask, axes)
    # the ranks that differ only on the reduced axes' grid coordinates
    if ndim == 0:                 # a 0-d array: every rank holds the one element
        team = MPI.COMM_SELF
    elif len(axes) == ndim or all(d.grid[k] == 1 for k in range(ndim) if k not in axes):
        team = d.comm
    elif all(d.grid[k] == 1 for k in axes):
        team = MPI.COMM_SELF
    else:
        team = grid_team(d, axes).comm
    mpi_op = "sum" if op == "mean" else op
    total = allreduce(team, part, mpi_op)
    if count is not None:
        if mask is None:    # every cell counts (a type-level fact): no second collective
            count = np.full(np.shape(count), math.prod(d.global_shape[k] for k in axes),
                            np.int64)
        else:
            count = allreduce(team, count, "sum")
    what = f"{op} of an empty selection (the reduced axes {axes} of global shape " \
           f"{d.global_shape} hold no values) is undefined; use optional data to get NA"
    try:
        vals, valid = _finish(op, total, count, p.info.optional, what)
    except ValueError as e:             # decided from global counts: alike on every rank
        raise agreed_on(d.comm, e) from None
    if len(axes) == ndim:
        return _scalar(op, np.asarray(vals), valid, None)
    return _reduced(d, axes, vals, valid)


def _replicated(m0, R, c, lin):
    """``m0`` with each grid position held by R ranks (grid position
    ``c * R + lin`` holds position c's indices): an unstructured map, not
    one-to-one, whose canonical copies are the ``lin == 0`` ones.  From a
    distributed ``m0`` the result is distributed too (its fingerprint
    derived from m0's, no communication)."""
    if m0.complete:
        return UnstructuredMap(m0.size, [m0.global_indices(q // R)
                                         for q in range(m0.grid_size * R)], one_to_one=False)
    fp = hashlib.blake2b(m0.fingerprint() + R.to_bytes(8, "little"), digest_size=16).digest()
    canonical = np.arange(m0.local_size(c))[m0.canonical_positions(c)] if lin == 0 else \
        np.zeros(0, np.int64)
    return DistributedUnstructuredMap(m0.size, [m0.local_size(q // R) for q in range(m0.grid_size * R)],
                                   {c * R + lin: m0.global_indices(c)}, False, fp,
                                   {c * R + lin: canonical})


def _reduced(d, axes, vals, valid):
    """The reduced partial of every rank as ``(Distribution, Parts)`` over
    the kept dims: the kept maps without communication padding; when the
    reduced grid axes hold R > 1 ranks, the first kept dimension becomes an
    unstructured map over grid * R positions in which the R ranks of a team
    hold the same indices (replicated, one_to_one False)."""
    keep = [k for k in range(d.ndim) if k not in axes]
    maps = [d.maps[k].without_padding() for k in keep]
    R = math.prod(d.grid[k] for k in axes)
    coords = d.rank_coords
    table = coords[:, keep]
    if R > 1:
        red = coords[:, list(axes)]
        lin = np.ravel_multi_index(red.T, [d.grid[k] for k in axes])
        table = table.copy()
        table[:, 0] = table[:, 0] * R + lin
        maps[0] = _replicated(maps[0], R, d.coords[keep[0]], int(lin[d.comm.rank]))
    vals = np.ascontiguousarray(vals)
    info = TypeInfo.fixed(vals.shape, dtype_from_numpy(vals.dtype), valid is not None)
    return (Distribution(maps, d.comm, rank_coords=table),
            Parts(info, vals, None if valid is None else pack_validity(valid)))


# --------------------------------------------------------------------------
# ragged
# --------------------------------------------------------------------------

def _row_selection(d, p):
    """Leaves of the rows this rank counts: a slice or an index array."""
    rows = d.maps[0].canonical_positions(d.coords[0])
    if isinstance(rows, slice):
        ends = leaf_ranges(p.offsets, np.array([rows.start, rows.stop - 1], np.int64)) \
            if rows.stop > rows.start else None
        if ends is None:
            return slice(0, 0)
        return slice(int(ends[0][0]), int(ends[1][1]))
    start, stop = leaf_ranges(p.offsets, rows)
    return expand_ranges(start, stop - start)


def _ragged_all(d, p, op):
    leaves = _row_selection(d, p)
    v = p.values[leaves]
    mask = p.valid_mask()
    mask = None if mask is None else mask[leaves]
    part, count = _local(op, v, mask, (0,))
    total = allreduce(d.comm, part, "sum" if op == "mean" else op)
    count = None if count is None else allreduce(d.comm, count, "sum")
    try:
        vals, valid = _finish(op, total, count, p.info.optional,
                              f"{op} of a ragged array without any value is undefined; "
                              "use optional data to get NA")
    except ValueError as e:             # decided from global counts: alike on every rank
        raise agreed_on(d.comm, e) from None
    return _scalar(op, np.asarray(vals), valid, None)


def _ragged_rows(p, op):
    """Per-row reduction of var * var * T (no communication): the rows' Parts."""
    n = p.nrows
    start, stop = leaf_ranges(p.offsets, np.arange(n))
    lengths = stop - start
    v, mask = p.values, p.valid_mask()
    dt = v.dtype
    acc = _acc_dtype(op, dt)
    if op in ("any", "all"):
        v = v != 0
    ident = _identity(op, dt)
    filled = v if mask is None else np.where(mask, v, np.asarray(ident).astype(v.dtype))
    counts = lengths if mask is None else _segment(np.add, mask.astype(np.int64), start, lengths, 0)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "min": np.minimum,
             "max": np.maximum, "any": np.logical_or, "all": np.logical_and}.get(op)
    if op == "count":
        vals, valid = np.asarray(counts, np.int64), None
    else:
        red = _segment(ufunc, filled.astype(acc if op in ("sum", "prod", "mean") else filled.dtype,
                                            copy=False), start, lengths, ident)
        if op == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                vals = red / np.where(counts == 0, 1, counts)
            valid = counts > 0
        elif op in ("min", "max"):
            vals, valid = red, counts > 0
        else:
            vals, valid = red, None
    vals = np.ascontiguousarray(vals)
    info = TypeInfo.fixed((n,), dtype_from_numpy(vals.dtype), valid is not None)
    return Parts(info, vals, None if valid is None else pack_validity(valid))


def _segment(ufunc, v, start, lengths, ident):
    """ufunc over each [start, start + length) of v; identity for empty ones."""
    out = np.full(len(start), ident, dtype=v.dtype)
    nz = lengths > 0
    if nz.any():
        # reduceat over the non-empty rows only: consecutive non-empty rows
        # are adjacent in v (empty rows hold no leaves between them)
        idx = start[nz]
        res = ufunc.reduceat(v[:int(start[nz][-1] + lengths[nz][-1])], idx)
        out[nz] = res
    return out
