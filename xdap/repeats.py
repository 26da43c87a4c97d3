"""Repeated calls: the prepared paths of the calls a loop makes again and
again on arrays of one layout -- a view (``a[1:-1]``, ``a.T``, a reshape
that keeps the memory), a reduction over everything (``a.sum()``,
``xp.vecdot``, ``vector_norm``), a roll.

The first call of a kind takes its declared path, and what it needed --
its agreed values described and digested (``xdap.contract.Prepared``), the
result's distribution and type, the NumPy operation on this rank's block --
is kept, keyed by the identity of the arrays' distribution and type objects
and the other arguments' values (``xdap.contract.memo_key``).  A repeated
call then does only that: a view writes its ledger entry and wraps a NumPy
view; a reduction computes its partial and sends it with the kept digest --
one message.  Debug mode, and calls made inside another call's work, take
the declared paths (``xdap.contract.fast_lane``).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
>>> [a[1:4].to_numpy().tolist() for _ in range(2)]      # the second: the prepared path
[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
"""
from __future__ import annotations

from . import agreement as _agreement
from . import ledger as _ledger
from .agreement import SETTLED
from .contract import _TLS, Repeats, Unkeyed, failed, memo_key, moves_nothing, prepare

__all__ = ["PreparedView", "view_lane", "named_view", "prepared_view", "keyed", "agreed_of", "PreparedCall",
           "Rides", "RidingCall", "call_lane", "plain", "plain_values"]


class PreparedView:
    """A repeated view's path: its ledger entry (``prepared``), the
    result's ``distribution`` and type ``info``, and what NumPy does to this
    rank's block: ``index`` it, ``axes`` transpose it, then give it
    ``shape``."""

    __slots__ = ("prepared", "distribution", "info", "index", "axes", "shape", "comm")

    def __init__(self, prepared, distribution, info, index=None, axes=None):
        self.prepared, self.distribution, self.info = prepared, distribution, info
        self.index, self.axes = index, axes
        self.shape = distribution.local_shape
        # one rank: nothing to agree, no ledger entry
        self.comm = distribution.comm if distribution.comm.size > 1 else None

    def __call__(self, x):
        if self.comm is not None:                # the ledger entry (Prepared.record, inlined)
            p = self.prepared
            _ledger.record(self.comm, p.what, p.digest, p.entry, p.number)
        values = x.parts.values
        if self.index is not None:
            values = values[self.index]
        if self.axes is not None:
            values = values.transpose(self.axes)
        if values.shape != self.shape:
            values = values.reshape(self.shape)
        # plain fixed data (``_view_entry``), a view (not fresh)
        return x.__xdap_plain__(self.distribution, self.info, values, False)


def keyed(x, args):
    """The memo key of a call on the array ``x`` with the other ``args``,
    or None (not keyed: the declared path)."""
    if _agreement._DEBUG or getattr(_TLS, "depth", 0) or \
            not hasattr(type(x), "__xdap_wrap__"):                 # fast_lane(), inlined
        return None
    kind = type(args)
    if kind is slice:                # a[2:5], a loop's commonest view: ints as themselves
        start, stop, step = args.start, args.stop, args.step
        if (start is None or type(start) is int) and (stop is None or type(stop) is int) \
                and (step is None or type(step) is int):
            return id(x.distribution), id(x.parts.info), slice, start, stop, step
    elif kind is tuple:              # a shape of ints, as itself (True and 1.0 are not ints)
        for v in args:
            if type(v) is not int:
                break
        else:
            return (id(x.distribution), id(x.parts.info), tuple) + args
    try:
        return id(x.distribution), id(x.parts.info), memo_key(args)
    except Unkeyed:
        return None


def view_lane(memo: Repeats, x, args, make):
    """The repeated view of ``x`` with ``args``: its prepared path from
    ``memo`` (``make(x, args)`` -- a ``PreparedView`` or None, where the
    call is not a plain view -- on the first call), applied; None: the
    caller takes the declared path."""
    key = keyed(x, args)
    if key is None:
        return None
    hit = memo._items.get(key)
    entry = hit[0] if hit is not None else _view_entry(memo, key, x, lambda: make(x, args))
    return entry(x) if entry else None


def _view_entry(memo: Repeats, key, x, make):
    """``memo``'s new entry for ``key``: ``make()``'s view where ``x`` holds
    plain fixed data, else False (the declared path)."""
    x_plain = x.parts.validity is None and not x.parts.info.ragged and not x.parts.info.boxed
    return memo.put(key, (make() if x_plain else None) or False, x)


def named_view(memo: Repeats, x, what: str, make):
    """``view_lane`` of a view named by ``what`` alone (``a.T``, ``a.mT``):
    its entry kept under ``what`` itself, found with the least work
    (``make(x, what)`` on the first call)."""
    if _agreement._DEBUG or getattr(_TLS, "depth", 0):     # fast_lane(), inlined
        return None
    try:
        key = (id(x.distribution), id(x.parts.info), what)
    except AttributeError:
        return None
    hit = memo._items.get(key)
    entry = hit[0] if hit is not None else \
        _view_entry(memo, key, x, lambda: make(x, what)) \
        if hasattr(type(x), "__xdap_wrap__") else False
    return entry(x) if entry else None


def prepared_view(what, agreed, distribution, x, index=None, axes=None):
    """The ``PreparedView`` of a call ``what`` whose declared path yields
    ``agreed`` and gives ``distribution`` (this rank's block of ``x``
    indexed, transposed, reshaped)."""
    return PreparedView(prepare(what, agreed), distribution,
                        x.parts.info.with_shape(distribution.local_shape), index, axes)


def agreed_of(declared, *args, **kwargs):
    """What the declared call ``declared`` yields for these arguments --
    its checks run, its work does not -- or None where they raise (the
    declared path then raises it, agreed)."""
    gen = declared.__wrapped__(*args, **kwargs)
    try:
        return next(gen)
    except Exception:
        return None
    finally:
        gen.close()


class PreparedCall:
    """A repeated collective call's path: its vote prepared
    (``Prepared``), and ``work(vote, *args)`` -- the declared call's work,
    which sends the vote with its first message (or casts it first); a
    vote the work left pending is cast after it, as the declared path does.
    On one rank there is nothing to agree: the work gets the settled vote;
    a call whose agreed values said it moves nothing (``moves_nothing``)
    writes its ledger entry instead of voting."""

    __slots__ = ("prepared", "work", "alone", "local", "vote", "comm")

    def __init__(self, prepared, work, comm, local):
        self.prepared, self.work, self.local, self.comm = prepared, work, local, comm
        self.alone = comm.size == 1
        # one vote, armed for each call (calls on a rank are sequential; the
        # calls inside a work take their declared paths)
        self.vote = None if self.alone or local else prepared.vote(comm)

    def __call__(self, *args):
        if self.alone:
            return self.work(SETTLED, *args)
        if self.local:
            self.prepared.record(self.comm)
            return self.work(SETTLED, *args)
        vote = self.vote
        vote.pending = True
        try:
            out = self.work(vote, *args)
        except BaseException as error:
            vote.fail(error)           # the others wait in the vote: the same error there
            if isinstance(error, Exception):      # after the vote: as the declared path tells it
                failed(self.comm, self.prepared.what, error)
            raise
        if vote.pending:
            vote.cast()
        return out


class Rides:
    """What a prepared path's ``make`` returns for a call whose one message
    is its vote: ``payload(*arrays)`` -- this rank's part, bytes-like, of
    one size on every rank that agrees (a reduction's partial, the cells a
    roll sends across) -- and ``result(x, part, records)``, the call's
    result from every rank's records (``xdap.agreement.records_of``),
    ``records`` None on one rank (``part`` is then all there is)."""

    __slots__ = ("payload", "result")

    def __init__(self, payload, result):
        self.payload, self.result = payload, result


class RidingCall:
    """A repeated call of ``Rides``: this rank's payload, then one
    Allgather of it with the kept digest (``PreparedVote.ride``), then the
    result -- the hand-written version's one message, in one frame.  A
    payload that raises on one rank is the vote's failure, the same error
    on every rank."""

    __slots__ = ("payload", "result", "vote", "comm", "what")

    def __init__(self, prepared, rides: Rides, comm):
        self.payload, self.result, self.comm = rides.payload, rides.result, comm
        self.what = prepared.what
        self.vote = None if comm.size == 1 else prepared.vote(comm)

    def __call__(self, *arrays):
        vote = self.vote
        if vote is None:                       # one rank: nothing to agree, no message
            return self.result(arrays[0], self.payload(*arrays), None)
        vote.pending = True
        try:
            part = self.payload(*arrays)
        except BaseException as error:
            vote.fail(error)                   # the others wait in the vote: the same error
            raise
        records = vote.ride(self.comm, part)
        try:
            return self.result(arrays[0], part, records)
        except Exception as error:      # after the one message: the next vote names it
            failed(self.comm, self.what, error)
            raise


def call_lane(memo: Repeats, declared, arrays: tuple, args: tuple, kwargs: dict, make):
    """A repeated collective call ``declared(*arrays, *args, **kwargs)``:
    its prepared path from ``memo`` -- on the first call, ``make(agreed)``
    with what the declared call yields gives its work (``work(vote,
    *arrays)``, or ``Rides`` where its one message is the vote), or None
    where these arguments do not take the path -- run; ``NotImplemented``:
    the caller takes the declared path."""
    if _agreement._DEBUG or getattr(_TLS, "depth", 0):     # fast_lane(), inlined
        return NotImplemented
    x = arrays[0]
    try:                 # the arrays by the identity of their layouts (a loop's are kept)
        if len(arrays) == 1:
            key = (id(x.distribution), id(x.parts.info))
        elif len(arrays) == 2:
            y = arrays[1]
            key = (id(x.distribution), id(x.parts.info), id(y.distribution), id(y.parts.info))
        else:
            key = tuple(i for a in arrays for i in (id(a.distribution), id(a.parts.info)))
        if args or kwargs:
            more = []
            for v in args:
                kind = type(v)
                more.append(v if kind in _PLAIN else (int, v) if kind is int else memo_key(v))
            for k, v in kwargs.items():
                kind = type(v)
                more.append(k)
                more.append(v if kind in _PLAIN else (int, v) if kind is int else memo_key(v))
            key += tuple(more)
    except (Unkeyed, AttributeError):
        return NotImplemented
    hit = memo._items.get(key)
    entry = hit[0] if hit is not None else _call_entry(memo, key, declared, arrays, args,
                                                        kwargs, make)
    return entry(*arrays) if entry else NotImplemented


def _call_entry(memo: Repeats, key, declared, arrays, args, kwargs, make):
    """``memo``'s new entry for ``key``: the prepared path of ``declared``
    on these arguments (``call_lane``), or False (the declared path)."""
    agreed = agreed_of(declared, *arrays, *args, **kwargs)
    try:
        work = None if agreed is None else make(agreed)
        prepared = None if work is None else prepare(declared.__xdap_contract__.name, agreed)
    except Exception:
        # this rank could not prepare (out of memory, say) before any vote: the
        # declared path runs this call, and its vote carries the failure; nothing
        # is kept, so the next call tries again
        return False
    comm = arrays[0].distribution.comm
    if work is None:
        entry = False
    else:
        local = type(agreed) is moves_nothing
        if type(work) is Rides:
            assert not local, "a call that moves nothing has no message to ride"
            entry = RidingCall(prepared, work, comm)
        else:
            entry = PreparedCall(prepared, work, comm, local)
    return memo.put(key, entry, *(a for a in arrays if hasattr(type(a), "__xdap_wrap__")))


_PLAIN = (type(None), bool, str)      # keys as themselves: no other value equals them


def plain_values(x) -> bool:
    """Whether DistArray ``x`` holds plain fixed numbers: no validity
    bitmap, no var dims, no boxed elements (NumPy's loops on its values
    are its elementwise work: the fast paths' operands)."""
    p = x.parts
    info = p.info
    return p.validity is None and not info.ragged and not info.boxed and info.numeric


def plain(x) -> bool:
    """``plain_values``, of at least one dim, whose every local element
    this rank counts (no padding, no copy another rank counts): what the
    short paths of reductions take."""
    return plain_values(x) and bool(x.distribution.maps) and x.distribution.counted()[1]
