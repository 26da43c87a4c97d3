"""Redistribution: a DistArray in another distribution.

The plan (``xdap.movement.plan``) says which elements go from which rank to
which; this module turns it into what the transport (``xdap.transport``)
moves, in ONE collective on the source array's communicator:

* fixed arrays: the plan's tensor-product transfers as a
  ``BlockExchange`` -- ``method="datatypes"``, one ``Alltoallw`` with
  derived datatypes (a subarray for a rectangular slab, as mpi4py-fft's
  ``Transfer`` does for pencils; nested ``hindexed`` runs otherwise), MPI
  reading and writing the arrays in place; ``method="packed"``, NumPy
  gathering each peer's elements into one buffer; ``method="auto"``
  (default), datatypes when messages are long runs (block-like layouts),
  packed when they are scattered elements (cyclic with small blocks,
  unstructured) -- measured in ``benchmarks/movement.py``, decided from the
  global plan, so every rank makes the same choice.  The validity of ``?T``
  data travels in the same call as its values.
* ragged arrays (``var * var * T``, distributed by rows) and strings: the
  plan's rows as a ``Route``: rows move whole, their lengths, values and
  validity in one exchange after one ``Alltoall`` of counts.

The result is a new array (the source is not modified); every element of
every target buffer is filled, communication padding and shared copies
included.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(12.0).reshape(3, 4), comm=MPI.COMM_SELF)
>>> e, q = move(d, p, dist=("c", "b"))
>>> e.maps[0].dist_type, q.values.tolist() == p.values.tolist()
('c', True)
"""
from __future__ import annotations

import functools

import numpy as np

from .. import arguments, plans
from ..agreement import agreement
from ..arraylike import is_distributed, unwrap, wrap_like
from ..comm import MPI, resolve
from ..contract import collective
from ..distribution import Distribution, make_distribution
from ..parts import EMPTY_VAR_DIMS, Parts
from ..transport import METHODS, BlockExchange, Route, move as move_rows
from .plan import (RedistributionPlan, as_positions, index_len, plan_ranks, redistribution_plan,
                   runs)

__all__ = ["redistribute", "move", "move_agreed", "executor", "bind_redistribute",
           "BoundRedistribution", "METHODS", "to_layout", "prepare_move"]

def _avg_run_bytes(plan: RedistributionPlan, itemsize: int) -> float:
    """Mean length in bytes of the contiguous runs MPI would copy (innermost
    dimension runs times the inner extent), over every message of the plan:
    the same figure on every rank, so every rank picks the same method."""
    total_bytes, total_runs = 0, 0
    for r in range(plan.src.size):
        for t in plan.sends(r):
            # each position of the outer dims starts new runs of the innermost
            n_runs = len(runs(t.index[-1])[0])
            for i in t.index[:-1]:
                n_runs *= index_len(i)
            total_runs += n_runs
            total_bytes += t.size * itemsize
    return total_bytes / max(total_runs, 1)


def _block_exchange(plan: RedistributionPlan, comm) -> BlockExchange:
    r = comm.rank
    # a distributed plan knows this rank's messages only: packed, the same
    # choice on every rank without asking (its maps are unstructured:
    # scattered elements)
    avg = None if plan.local_only else functools.lru_cache(maxsize=8)(
        lambda itemsize: _avg_run_bytes(plan, itemsize))
    return BlockExchange(comm, plan.sends(r), plan.recvs(r), plan.src_shape(r),
                         plan.dst_shape(r), avg_run_bytes=avg, ndim=plan.src.ndim)


def _row_route(plan: RedistributionPlan, comm) -> Route:
    """The plan's rows as a route (ragged data, distributed by rows): the
    source rows for every peer, peer after peer, and the order that puts
    the arrived rows in target buffer order."""
    r, P = comm.rank, comm.size
    sends, recvs = plan.sends(r), plan.recvs(r)
    send_counts, recv_counts = np.zeros(P, np.int64), np.zeros(P, np.int64)
    for t in sends:
        send_counts[t.peer] = t.size
    for t in recvs:
        recv_counts[t.peer] = t.size
    rows = np.concatenate([as_positions(t.index[0]) for t in sends]) if sends else \
        np.zeros(0, np.int64)
    where = np.concatenate([as_positions(t.index[0]) for t in recvs]) if recvs else \
        np.zeros(0, np.int64)
    order = np.empty(len(where), np.int64)
    order[where] = np.arange(len(where))        # every target row arrives exactly once
    return Route(comm, rows, send_counts, recv_counts, order=order)


# --------------------------------------------------------------------------
# the entry points
# --------------------------------------------------------------------------

def executor(src: Distribution, dst: Distribution, comm, dst_ranks=None, rows: bool = False):
    """What moves data from ``src`` to ``dst`` over the parent communicator
    ``comm`` (``dst_ranks``: the target ranks' numbers in it): the plan's
    ``BlockExchange`` (fixed arrays), or with ``rows`` its ``Route`` (ragged
    rows).  Kept on ``comm`` in the plan store (it holds the communicator and
    its MPI datatypes), with its plan."""
    plan = redistribution_plan(src, dst, dst_ranks, comm)
    key = plans.Key("redistribution route" if rows else "redistribution exchange",
                    (src.fingerprint(), dst.fingerprint(), plan_ranks(dst, dst_ranks)))
    if rows:
        return plans.on(comm).get_or_make(key, lambda: _row_route(plan, comm))
    return plans.on(comm).get_or_make(key, lambda: _block_exchange(plan, comm),
                                      release=BlockExchange.free)


@collective(over="a", name="redistribute", rides=True)
def redistribute(a, dist=None, grid=None, comm=None, *, method: str = "auto", **per_dim):
    """``a`` in another distribution, as a new array of ``a``'s kind
    (collective on ``a.comm``; copies); None on ranks outside ``comm``.
    See ``move`` for the arguments.

    ``a.redistribute(...)`` is this function on a DistArray.
    """
    if not is_distributed(a):
        raise TypeError(f"redistribute: a must be a DistArray, got {type(a).__name__}")
    d, p = unwrap(a)
    agreed, target = _target_args(d, p, dist, grid, comm, method, per_dim)
    vote = yield dict(agreed, a=a)
    out = _prepared_move(vote, d, p, target, method) if target is not None else None
    if out is None:
        vote.cast()
        out = _moving(d, p, target, dist, grid, comm, method, per_dim)(p)
    return None if out is None else wrap_like(a, *out, agreed=True)


def _prepared_move(vote, d, p, target, method):
    """A redistribution whose plan needs no message: ``prepare_move``'s
    local work *before* the vote is cast, so that a rank that fails there
    -- out of memory -- fails in the vote, the same error on every rank (no
    message more); then the exchange.  None where the plan is found
    collectively (the caller casts the vote first)."""
    go = prepare_move(d, p, target, method, copy=True)
    if go is None:
        return None
    vote.cast()
    return go()


def prepare_move(d: Distribution, p: Parts, target: Distribution, method: str = "auto",
                 copy: bool = False):
    """``to_layout``'s local work now -- the target allocated, the
    messages packed, where a rank can fail alone -- and a function that
    moves and returns ``(target, parts)`` (``(d, p)`` themselves where they
    lie as ``target`` already, unless ``copy``); None where the plan needs
    messages of its own (a distributed unstructured map), the data is
    ragged, or this move's exchange is not kept yet (its first call: the
    caller moves after its agreement, as before).  A caller that agrees on its local work (``xdap.agreement.
    settled``, a vote not yet cast) prepares inside it."""
    if d == target and not copy:
        return lambda: (d, p)
    if p.info.ragged or not all(m.complete for m in d.maps + target.maps):
        return None
    # the exchange kept from an earlier, agreed call -- looked at, not made or marked
    # used here: this may run before the vote (or on a rank whose step failed), and a
    # plan store changed on some ranks only would evict differently from the others'
    # (a plan made collectively, evicted on one rank, is made again there alone)
    kept = plans.on(d.comm).peek(plans.Key("redistribution exchange", (
        d.fingerprint(), target.fingerprint(), plan_ranks(target, None))))
    if kept is None:
        return None
    finish = kept.prepare_parts(p, p.info, method)
    return lambda: (target, finish())


@collective(over="d", name="redistribute")
def move(d: Distribution, p: Parts, dist=None, grid=None, comm=None, *, method: str = "auto",
         **per_dim):
    """The data ``(d, p)`` in another distribution: the target's
    ``(Distribution, Parts)``, or None on ranks outside the target
    communicator (collective on ``d.comm``; copies).

    dist      the target: a ``'b'/'c'/'u'/'n'`` spec per dimension (with
              ``grid`` and per-dimension options ``block_size``, ``padding``,
              ``periodic``, ``indices``, ``sizes`` as in ``from_global``), or
              an ``xdap.Distribution`` of the same global shape (then no
              ``grid``/options); ragged arrays: one entry, for the rows
    comm      the target communicator: None = ``d.comm``; any subset of
              ``d.comm`` (e.g. from ``comm.Split``/``comm.Create``).  Ranks
              of ``d.comm`` outside it pass ``MPI.COMM_NULL`` and get
              ``None`` back (an inactive worker: it sends, receives nothing)
    method    "auto", "datatypes" (one Alltoallw, no packing) or "packed"
              (numpy packing + one Alltoallv)

    The source (its distribution and type) and the target are agreed on
    every rank first: one vote, plus one allgather of the members' targets
    when ``comm`` names a subset.  Plans and their MPI datatypes are cached
    on both distributions' fingerprints (``xdap.plans``): a second call
    with the same source and target reuses them.  Invalid targets raise
    the same ValueError/TypeError on every rank.
    """
    agreed, target = _target_args(d, p, dist, grid, comm, method, per_dim)
    yield dict(agreed, d=d, p=p.info.global_type(d.global_shape))
    return _moving(d, p, target, dist, grid, comm, method, per_dim)(p)


def to_layout(d: Distribution, p: Parts, target: Distribution):
    """``(d, p)`` as they are when they already lie as ``target`` (nothing
    moved, no copy), else moved there (``move_agreed``: one exchange)."""
    return (d, p) if d == target else move_agreed(d, p, target)


def move_agreed(d: Distribution, p: Parts, target: Distribution, out: Parts | None = None,
                held=None):
    """``(d, p)`` moved to ``target`` -- a distribution of ``d``'s shape on
    ``d.comm`` that every rank computed from agreed values (an engine's own
    layout change): no vote, the exchange alone.  ``out``: fixed Parts of
    the target's local layout (C-contiguous) written in place, nothing
    allocated.  ``held`` (an ``xdap.agreement.Held``): the engine's step
    before, whose failure on this rank rides the exchange's verdict (then
    ``p`` and ``out`` are not looked at)."""
    return _moving(d, p, target, None, None, None, "auto", {})(p, out, held=held)


def _target_args(d, p, dist, grid, comm, method, per_dim):
    """The checks of a redistribution: the agreed values, and the target
    (None when ``comm`` names a subset: its members agree on it after)."""
    d.require_dims("redistribute")
    method = arguments.choice("redistribute", "method", method, METHODS)
    if comm is not None:
        if comm != MPI.COMM_NULL:
            resolve(comm)                   # a communicator, or this rank's TypeError
        return dict(dist=None, grid=None, comm="a subset", method=method, per_dim=None), None
    target = _target_distribution(p.info, d.global_shape, dist, grid, d.comm, None, per_dim)
    _check_rows(p.info, target, None)
    return dict(dist=target, grid=None, comm=None, method=method, per_dim=None), target


def _check_rows(info, target, ranks):
    if info.ragged and not EMPTY_VAR_DIMS:
        empty = [r if ranks is None else ranks[r] for r in range(target.size)
                 if target.local_shape_of(r)[0] == 0]
        if empty:     # decided from the agreed target: the same on every rank
            raise ValueError(f"redistribute: the target gives no rows to rank(s) {empty} of "
                             f"a.comm; an unpatched ndtypes 0.2.0.dev3 cannot represent an "
                             f"empty ragged partition (tools/patch_stack.py)")


def _moving(d, p, target, dist, grid, comm, method, per_dim) -> "_Move":
    """The agreed target and its executor: ``target`` itself when every
    rank computed it from agreed values, else (``comm`` a subset) the
    members' targets agreed in one allgather."""
    if target is not None:
        return _Move(executor(d, target, d.comm, None, rows=p.info.ragged), target, True,
                     method)
    A = d.comm
    inside = not comm == MPI.COMM_NULL
    shape = d.global_shape
    # Local checks and every member's target fingerprint travel in ONE
    # collective; the decisions below read only what all ranks received.
    with agreement(A, "redistribute", share=True) as ag:
        if inside:
            target = _target_distribution(p.info, shape, dist, grid, A, comm, per_dim)
            B = target.comm
            if B.size > A.size:
                raise ValueError(f"redistribute: the target communicator ({B.size} ranks) must "
                                 f"be a subset of the array's ({A.size} ranks)")
            parent = MPI.Group.Translate_ranks(B.Get_group(), list(range(B.size)), A.Get_group())
            if any(r == MPI.UNDEFINED or r < 0 for r in parent):
                raise ValueError("redistribute: the target communicator must be a subset of the "
                                 "array's communicator (a rank of it is not in a.comm)")
            ag.share((target.fingerprint(), tuple(int(r) for r in parent)))
    shared = ag.shared
    members = [r for r, f in enumerate(shared) if f is not None]
    if not members:
        raise ag.agreed_error(ValueError("redistribute: no rank is in the target communicator "
                                    "(every rank passed MPI.COMM_NULL)"))
    first = shared[members[0]]
    if any(shared[r] != first for r in members):
        raise ag.agreed_error(ValueError("redistribute: the ranks of the target communicator "
                                    "passed different target distributions (all must pass "
                                    "the same)"))
    if sorted(members) != sorted(first[1]):
        raise ag.agreed_error(ValueError(
            f"redistribute: ranks {sorted(set(first[1]) ^ set(members))} of a.comm disagree "
            "about membership in the target communicator (pass MPI.COMM_NULL exactly on the "
            "ranks outside it)"))
    dst = target
    if len(members) != A.size:          # the ranks outside learn the target's layout
        desc = A.bcast(None if A.rank != members[0] else
                       (target.maps, None if target.c_order else target.rank_coords),
                       root=members[0])
        dst = target if inside else Distribution.detached(*desc)
    try:
        _check_rows(p.info, dst, first[1])
    except ValueError as e:
        raise ag.agreed_error(e) from None
    mover = executor(d, dst, A, first[1], rows=p.info.ragged)
    return _Move(mover, target, inside, method)


class _Move:
    """One agreed redistribution of the arrays of one distribution: the
    transport's executor and what the caller gets back."""

    def __init__(self, mover, target, inside, method):
        self.mover, self.target, self.inside, self.method = mover, target, inside, method

    def __call__(self, p: Parts, out: Parts | None = None, kept: bool = False, held=None):
        if p.info.ragged:
            moved, = move_rows(self.mover, p, held=held)
        else:
            moved = self.mover.run_parts(p, p.info, self.method, out=out, kept=kept, held=held)
        return (self.target, moved) if self.inside else None


class BoundRedistribution:
    """A redistribution of one array bound once (``bind_redistribute``):
    the target and its plan are agreed now; ``r()`` then moves the array's
    current values into the kept target array -- one exchange, no
    agreement, nothing allocated for fixed data -- and returns it (None on
    ranks outside a target communicator)."""

    def __init__(self, a, move, pair):
        self._source = a
        self._move = move
        self.target = None if pair is None else wrap_like(a, *pair, agreed=True)

    def __call__(self):
        p = self._source.parts
        if self.target is None:
            self._move(p, kept=True)
            return None
        out = None if p.info.ragged else self.target.parts
        pair = self._move(p, out, kept=True)
        if p.info.ragged:         # rows: new offsets every time, a new array
            self.target = wrap_like(self._source, *pair, agreed=True)
        return self.target


@collective(over="a")
def bind_redistribute(a, dist=None, grid=None, comm=None, *, method: str = "auto", **per_dim):
    """``a``'s redistribution bound once (collective: the target is agreed
    and the first move made now; see ``BoundRedistribution``).  The
    arguments are ``redistribute``'s.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> from xdap import from_global
    >>> a = from_global(np.arange(4.0), comm=MPI.COMM_SELF)
    >>> r = bind_redistribute(a, dist=("c",))
    >>> a.local_numpy()[:] = 7.0
    >>> r().to_numpy().tolist()
    [7.0, 7.0, 7.0, 7.0]
    """
    if not is_distributed(a):
        raise TypeError(f"bind_redistribute: a must be a DistArray, got {type(a).__name__}")
    d, p = unwrap(a)
    agreed, target = _target_args(d, p, dist, grid, comm, method, per_dim)
    yield dict(agreed, a=a)
    mover = _moving(d, p, target, dist, grid, comm, method, per_dim)
    return BoundRedistribution(a, mover, mover(p))


def _target_distribution(info, shape, dist, grid, source_comm, comm, per_dim) -> Distribution:
    if isinstance(dist, Distribution):
        if grid is not None or per_dim:
            raise ValueError("redistribute: give either a Distribution or dist/grid/options, "
                             f"not both (got grid={grid!r}, options {sorted(per_dim)})")
        if comm is not None and dist.comm.Compare(comm) not in (MPI.IDENT, MPI.CONGRUENT):
            raise ValueError("redistribute: comm differs from the target Distribution's comm")
        if dist.global_shape != shape:
            raise ValueError(f"redistribute: the target distribution's global shape "
                             f"{dist.global_shape} differs from the array's {shape}")
        target = dist
    else:
        if info.ragged and dist is not None and len(tuple(dist)) != 1:
            raise ValueError(f"redistribute: a ragged array is distributed by rows: dist needs "
                             f"one entry, got {dist!r}")
        unknown = set(per_dim) - {"block_size", "padding", "periodic", "indices", "sizes"}
        if unknown:
            raise TypeError(f"redistribute: unknown option(s) {sorted(unknown)} (known: "
                            "block_size, padding, periodic, indices, sizes)")
        target = make_distribution(shape, dist, grid, source_comm if comm is None else comm,
                                   **per_dim)
    if info.ragged and target.ndim != 1:
        raise ValueError(f"redistribute: a ragged array needs a 1-d target distribution, "
                         f"got {target.ndim} dimensions")
    return target
