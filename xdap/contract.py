"""Every public call's contract, declared once per function: local or
collective, and what it agrees on.

A public function is written as a generator: the code before its one
``yield`` normalizes and checks *every* argument; the ``yield`` hands over
the normalized values, by parameter name; the code after it is the work,
on those values only::

    @collective
    def sort(x, /, *, axis=-1, descending=False, stable=True):
        x = arguments.numeric("sort", x)              # checks: may raise
        axis = arguments.axis("sort", x, axis)
        yield dict(x=x, axis=axis, descending=arguments.flag(descending),
                   stable=arguments.flag(stable))
        ...                                           # the work: agreed values only

``@collective`` runs everything before the ``yield`` inside one agreement
(``xdap.agreement``): an exception there -- a bad key, an axis out of
range, a wrong number of arguments -- is the same error on every rank, and
every yielded value must be equal on every rank (DistArrays compare by
distribution, shape and type, NumPy arrays by their bytes).  So nothing
that can raise runs before the vote, and whatever path the work then takes
(local or collective) is chosen from agreed values.  The yielded mapping
must name every parameter: a new function cannot forget one.  On one rank
the vote costs nothing (no MPI call).

``@local`` is the same shape for work that makes no MPI call -- views,
conversions, elementwise functions: their checks read only state every
rank agreed on already (distributions, types), so every rank reaches the
same verdict alone.  In debug mode (``xdap.agreement.debug()``) a local
call votes exactly as a collective one, so ranks that diverge are caught.

A call made from inside another call's work (``std`` calls ``var``, which
calls ``mean``) trusts its caller's agreement: its checks run, its vote
does not -- one agreement per public call.  Checks that read this rank's
*data* after the vote end in one more verdict
(``with xdap.agreement.agreement(comm, what):``) before data moves.

>>> from mpi4py import MPI
>>> @collective
... def scaled(x, factor=2, comm=None):
...     factor = int(factor)
...     yield dict(x=x, factor=factor, comm=comm)
...     return [v * factor for v in x]
>>> scaled([1, 2], comm=MPI.COMM_SELF), scaled.__xdap_contract__.kind
([2, 4], 'collective')
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import threading

import numpy as np

from . import agreement as _agreement
from .agreement import Described, _memoisable
from . import ledger as _ledger
from .arraylike import is_distributed
from .comm import resolve

__all__ = ["collective", "local", "part", "pure", "state", "adapted", "normalized", "Contract",
           "moves_nothing", "Prepared", "prepare", "memo_key", "Repeats", "Unkeyed", "fast_lane",
           "describe", "nested", "inside", "contract_of", "KINDS"]

KINDS = ("collective", "local", "part", "pure", "state")


class Contract:
    """What a public function declared: its ``kind``, its name, its
    parameters -- every one checked, and agreed where it votes -- and among
    them the ones each rank passes for itself (``own``: its piece, its DAP
    dict, its destinations), checked by the work's own verdict instead.

    Kinds: ``'collective'`` (votes on more than one rank), ``'local'`` (no
    MPI call; votes in debug mode), ``'part'`` (reads this rank's part --
    ``a.local_numpy()``, ``a.to_arrow()``: no MPI call, never a vote, a
    rank may call it alone), ``'pure'`` (a function of its arguments'
    values alone) and ``'state'`` (a read of agreed state, no argument).

    ``ledger``: a local call that writes what it agreed to in the
    communicator's ledger (``xdap.ledger``) -- every one but elementwise
    work (kernels, operators: the hot path of a user's loop, whose scalar
    operands debug mode checks)."""

    __slots__ = ("kind", "name", "params", "own", "ledger")

    def __init__(self, kind: str, name: str, params: tuple, own: tuple = (),
                 ledger: bool = False):
        self.kind, self.name, self.params, self.own = kind, name, params, tuple(own)
        self.ledger = ledger

    def __repr__(self):
        return f"Contract({self.kind!r}, {self.name!r}, params={self.params}, own={self.own})"


class normalized:
    """A yielded value compared in one form and shown in another:
    ``yield dict(dist=normalized(distribution, dist))`` -- ranks compare the
    Distribution the arguments make, an error shows what each rank wrote
    (``('b',)`` on one, ``('c',)`` on another); ``error``: the class of the
    error where it differs (ValueError; a type: TypeError)."""

    __slots__ = ("value", "given", "error")

    def __init__(self, value, given=None, error=ValueError):
        self.value, self.given, self.error = value, value if given is None else given, error


class moves_nothing(dict):
    """The agreed arguments of a call whose work, decided from them, makes
    no MPI call -- a view: ``yield moves_nothing(x=x, key=key)`` where the
    other paths ``yield dict(...)``.  Outside debug mode such a call is not
    voted: it is written in its communicator's ledger (``xdap.ledger``),
    which the next vote carries -- ranks that diverged there raise the same
    error, naming this call, before any data moves.  In debug mode it votes
    as any collective call."""

    __slots__ = ()


class Prepared:
    """A call's agreed values as ranks compare them -- described, digested
    (``describe``), and what an error shows each rank passed -- made once
    (``prepare``) and kept by a repeated call with the same arguments (the
    same arrays, the same key): its vote (``vote``) or its ledger entry
    (``record``) then describes and digests nothing again."""

    __slots__ = ("what", "digest", "same", "shown", "errors", "entry", "number")

    def __init__(self, what, digest, same, shown, errors):
        self.what, self.digest, self.same, self.shown, self.errors = \
            what, digest, same, shown, errors
        # what the ledger keeps of it: (name, description, shown) of each value
        self.entry = tuple((k, d, shown.get(k, d)) for k, d in same.items())
        self.number = _ledger.entry_number(digest)

    def vote(self, comm) -> _agreement.PreparedVote:
        """The call's vote on ``comm``, not yet cast (``Vote.ride``/``cast``)."""
        return _agreement.PreparedVote(self, comm)

    def record(self, comm) -> None:
        """Write the call in ``comm``'s ledger (a call that moves nothing)."""
        _ledger.record(comm, self.what, self.digest, self.entry, self.number)


def prepare(what: str, agreed: dict) -> Prepared:
    """``agreed`` (what a declared call yields) described and digested as
    its vote compares it."""
    same, shown, errors = {}, {}, {}
    for key, value in agreed.items():
        if type(value) is normalized:
            if value.error is not ValueError:
                errors[key] = value.error
            value, given = value.value, value.given
        else:
            given = value
        described = same[key] = describe(value)
        # an array is shown by its description: a kept entry keeps no data alive
        shown[key] = described if is_distributed(given) else given
    items = tuple(same.items())
    if all(_memoisable(d) for _, d in items):
        digest = _agreement._described_digest(what, False, items)
    else:
        try:
            digest = _agreement._digest((what, False, list(items)))
        except Exception:        # a value that does not pickle: compared by its type
            digest = _agreement._digest((what, False, [(k, type(d).__qualname__)
                                                       for k, d in items]))
    return Prepared(what, digest, same, shown, errors)


def _in_call(error: Exception, what: str) -> None:
    """An error an engine's step told without the public call's name (the
    transport's verdict on a rank's buffers: "exchange: ...",
    ``agreement.UNNAMED``), named as the call it leaves: "sort: ..." -- the
    same on every rank."""
    unnamed = _agreement.UNNAMED + ": "
    if error.args and isinstance(error.args[0], str) and error.args[0].startswith(unnamed):
        error.args = (f"{what}: {error.args[0][len(unnamed):]}",) + error.args[1:]


def failed(comm, what: str, error: Exception) -> None:
    """A public collective ``what`` whose work raised ``error`` here: named
    as the call (``_in_call``); where it raised on this rank alone -- after
    its last message (a rank's own last step: its transform, its copy out),
    the others returned -- this rank's ledger says so, and the next vote
    names it on every rank."""
    _in_call(error, what)
    if getattr(error, "xdap_agreed", None) is None and comm.size > 1:
        _record(comm, what, None, error, "its work")


def _record(comm, name, agreed, error=None, stage="its checks") -> None:
    """This rank's ledger entry of a call that moves nothing: ``name`` and
    the digest of its agreed values (as a vote would compare them), or of
    the error its checks (``stage``: or a collective's work) raised here."""
    if error is not None:
        text = f"raised {type(error).__name__}: {error}"
        # a failure of the work is digested by its class alone: ranks that all
        # raised (a message naming each rank's own block) agree at the next
        # vote; a rank that raised alone is named there, with its message
        said = type(error).__name__ if stage == "its work" else text
        _ledger.record(comm, name, _agreement._digest((name, "failed", said)),
                       ((stage, text, text),))
        return
    try:
        key = (name,) + tuple((k, memo_key(v)) for k, v in agreed.items())
    except Unkeyed:
        prepare(name, agreed).record(comm)
        return
    prepared = _RECORDED.get(key)
    if prepared is None:               # described and digested once per arguments
        prepared = _RECORDED.put(key, prepare(name, agreed),
                                 *(v for v in agreed.values() if hasattr(type(v), "__xdap_wrap__")))
    prepared.record(comm)


# -- a repeated call's arguments, by identity ---------------------------------------------
class Unkeyed(Exception):
    """An argument ``memo_key`` does not key (the call takes its declared path)."""


_SIMPLE = (int, bool, str, type(None))


def memo_key(value):
    """A hashable key of ``value`` for a repeated call's memo: equal for
    arguments that give the call the same agreed values -- typed (``1``,
    ``True`` and ``1.0`` differ; floats by their bits), a DistArray by the
    identity of its distribution and type objects (kernel results share
    their operand's; the memo entry holds both, so an id is not reused
    while it lives).  ``Unkeyed`` for anything else.

    >>> memo_key((slice(1, None), 2, None)) == memo_key((slice(1, None), 2, None))
    True
    >>> memo_key(1) == memo_key(True), memo_key(0.0) == memo_key(-0.0)
    (False, False)
    """
    kind = type(value)
    if kind in _SIMPLE:
        return kind, value
    if kind is float:
        return kind, value.hex()
    if kind is slice:
        return kind, memo_key(value.start), memo_key(value.stop), memo_key(value.step)
    if kind is tuple or kind is list:
        return (kind,) + tuple(memo_key(v) for v in value)
    if value is Ellipsis:
        return kind,
    if hasattr(kind, "__xdap_wrap__"):
        return kind, id(value.distribution), id(value.parts.info)
    if isinstance(value, np.dtype):
        return np.dtype, value
    raise Unkeyed


def fast_lane() -> bool:
    """Whether a repeated call may take its prepared path (``Repeats``):
    outside debug mode, where every call votes, and outside another call's
    work, which agreed it."""
    return not _agreement._DEBUG and not getattr(_TLS, "depth", 0)


class Repeats:
    """The memo of one public function's repeated calls: ``memo_key`` of
    its arguments -> what the call prepared (``Prepared``, plans, the
    result's layout), holding the arrays' distributions and types it was
    keyed by.  Bounded: emptied when full."""

    __slots__ = ("_items", "size")

    def __init__(self, size: int = 256):
        self._items, self.size = {}, size

    def get(self, key):
        hit = self._items.get(key)
        return None if hit is None else hit[0]

    def put(self, key, entry, *arrays):
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[key] = (entry, tuple((a.distribution, a.parts.info) for a in arrays))
        return entry


_RECORDED = Repeats(512)       # a local call's agreed values, by memo_key -> its Prepared


def contract_of(obj) -> Contract | None:
    """The contract a function (or property, or class) declared, or None."""
    if isinstance(obj, property):
        obj = obj.fget
    return getattr(obj, "__xdap_contract__", None)


# -- nesting: a call inside another call's work trusts its agreement ------------
_TLS = threading.local()


def nested() -> bool:
    """Whether this thread runs the work of an agreed call now."""
    return getattr(_TLS, "depth", 0) > 0


class _Inside:
    __slots__ = ()

    def __enter__(self):
        _TLS.depth = getattr(_TLS, "depth", 0) + 1

    def __exit__(self, *exc):
        _TLS.depth -= 1
        return False


_INSIDE = _Inside()
# ``with inside:`` -- the work of a call that has voted on its own (a kernel's
# debug-mode vote): the calls made in it trust that agreement
inside = _INSIDE


# -- what ranks compare -----------------------------------------------------------
def describe(value):
    """A value as the ranks compare it: plain, picklable, small.  A
    DistArray is its distribution's fingerprint, shape and type (its data
    is distributed: arrays of one distribution and type but other values
    cannot be told apart); a NumPy array its dtype, shape and a digest of
    its bytes; containers item by item; a callable its qualified name and,
    for a Python function, its code (``_code_of``)."""
    kind = type(value)
    if kind is str or kind is bytes or value is None:
        return value
    # typed leaves come back Described: equal exactly when their pickles are
    if kind is int or kind is bool:            # typed: True and 1 are not one argument
        return Described((kind.__name__, value))
    if kind is float:                          # by its bits: -0.0 is not 0.0, NaN is NaN
        return Described(("float", value.hex()))
    if kind is complex:
        return Described(("complex", value.real.hex(), value.imag.hex()))
    if is_distributed(value):
        return _array_described(value.distribution, value.parts.info)
    if kind is tuple or kind is list:
        items = tuple(describe(v) for v in value)
        out = (kind.__name__,) + items
        return Described(out) if all(_memoisable(v) for v in items) else out
    if isinstance(value, np.ndarray):
        # the given shape: ascontiguousarray makes a 0-d array 1-d, and a 0-d
        # array and a 1-element one were one argument (asarray of nan on one
        # rank, [x] on the others: two shapes of result, no error)
        data = np.ascontiguousarray(value)
        if data.dtype.hasobject:
            return ("ndarray", data.dtype.str, value.shape, repr(data.tolist()))
        return ("ndarray", data.dtype.str, value.shape,
                hashlib.blake2b(data.view(np.uint8).reshape(-1) if data.size else b"",
                                digest_size=16).digest())
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value.str, value.descr if value.fields else None)
    if isinstance(value, slice):
        return ("slice", describe(value.start), describe(value.stop), describe(value.step))
    if isinstance(value, dict):
        return ("dict",) + tuple((describe(k), describe(v)) for k, v in value.items())
    if isinstance(value, (tuple, list)):         # named tuples and other sequences
        return (type(value).__name__,) + tuple(describe(v) for v in value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, type):
        return ("type", value.__module__, value.__qualname__)
    if hasattr(value, "Get_size") and hasattr(value, "Get_rank"):    # a communicator
        return ("comm", value.Get_size())
    if callable(value):
        return ("callable", getattr(value, "__module__", None),
                getattr(value, "__qualname__", type(value).__qualname__), _code_of(value))
    fingerprint = getattr(value, "fingerprint", None)
    if callable(fingerprint):                    # a Distribution, a map
        return (type(value).__name__, fingerprint())
    return value                                  # compared by its pickle


_ARRAYS: dict = {}           # (id(distribution), id(info)) -> (distribution, info, Described)


def _array_described(d, info):
    """A DistArray as ranks compare it -- its distribution's fingerprint,
    shape, type and communicator size -- made once per pair of
    distribution and type objects (a loop passes the same arrays again, and
    kernel results share their operand's): the entry holds both, so their
    ids stay theirs while it lives."""
    key = (id(d), id(info))
    hit = _ARRAYS.get(key)
    if hit is not None:
        return hit[2]
    if len(_ARRAYS) >= 512:
        _ARRAYS.clear()
    described = Described(("DistArray", d.fingerprint(), d.global_shape,
                           info.global_type(d.global_shape), d.comm.size))
    _ARRAYS[key] = (d, info, described)
    return described


def _code_of(fn, depth: int = 0):
    """A Python function's code as ranks compare it: its bytecode, its
    constants and names, its defaults and the values its closure holds --
    two lambdas of one name but other bodies (or other captured values)
    differ.  None for what has no Python code (builtins, ufuncs)."""
    fn = getattr(fn, "__func__", fn)                   # a bound method: its function
    code = getattr(fn, "__code__", None)
    if code is None or depth > 2:
        return None

    def const(c):
        if hasattr(c, "co_code"):                       # a nested function's code
            return (c.co_code, tuple(const(x) for x in c.co_consts), c.co_names)
        return describe(c)

    def held(cell):
        try:
            v = cell.cell_contents
        except ValueError:                              # an empty cell
            return None
        return ("fn", _code_of(v, depth + 1)) if callable(v) and hasattr(v, "__code__") \
            else describe(v)

    return (code.co_code, tuple(const(c) for c in code.co_consts), code.co_names,
            describe(getattr(fn, "__defaults__", None)),
            tuple(held(c) for c in (getattr(fn, "__closure__", None) or ())))


# -- the decorators ---------------------------------------------------------------
def _params(fn) -> tuple:
    return tuple(inspect.signature(fn).parameters)


def _comm_index(fn, over=None):
    """Position of a ``comm`` parameter (if the function has one), and of
    the parameter ``over`` names (see ``_comm_of``)."""
    names = list(inspect.signature(fn).parameters)
    if over is not None and over not in names:
        raise TypeError(f"{fn.__qualname__}: over={over!r} names no parameter")
    return (names.index("comm") if "comm" in names else None,
            None if over is None else (names.index(over), over))


def _comm_of(args, kwargs, at, over=None):
    """The communicator the call agrees over, found the same way on every
    rank from the raw arguments (before any check has run): ``comm=``, else
    the first DistArray (or Distribution) among the arguments (or one level
    into a list or tuple of them), else ``MPI.COMM_WORLD``.  Never raises: a ``comm`` that
    is no communicator is the checks' error, voted on COMM_WORLD.  ``over``
    (position, name) of the argument whose communicator the call agrees
    over, where that is not ``comm=`` (a redistribution's target
    communicator is not the one it agrees over: the source's is)."""
    if at is None and args and not kwargs and over is None and hasattr(type(args[0]),
                                                                       "__xdap_wrap__"):
        return args[0].distribution.comm           # the common case: an array first
    if over is not None:
        pos, name = over
        a = kwargs.get(name) if name in kwargs else args[pos] if len(args) > pos else None
        return _comm_of((a,), {}, None)
    comm = kwargs.get("comm") if "comm" in kwargs else \
        args[at] if at is not None and len(args) > at else None
    if comm is not None:
        try:
            return resolve(comm)
        except Exception:
            return resolve(None)
    for a in (*args, *kwargs.values()):
        if is_distributed(a):
            return a.distribution.comm
        if hasattr(a, "maps") and getattr(a, "comm", None) is not None:    # a Distribution
            return a.comm
        if type(a) in (list, tuple):
            for b in a[:8]:
                if is_distributed(b):
                    return b.distribution.comm
    return resolve(None)


_COMPLETE: set = set()           # (name, keys) already found complete: checked once


def _incomplete(name, params, agreed):
    """Every parameter must be named: a key of its own, or part of one that
    names several (``"dist, grid and per_dim"``: compared together).
    Checked on every call in debug mode (the test suite's), else on a
    function's first call with each number of keys."""
    seen = (name, tuple(agreed)) if _agreement._DEBUG else (name, len(agreed))
    if seen in _COMPLETE:
        return
    named = set()
    for key in agreed:
        named.update(k.strip() for k in key.replace(" and ", ", ").split(","))
    missing = [p for p in params if p not in named]
    if missing:
        raise RuntimeError(f"{name}: its agreement does not name {', '.join(missing)} (every "
                           "argument of a public function is agreed: yield it, or declare it "
                           "own=)")
    _COMPLETE.add(seen)


def _first_yield(gen, name):
    try:
        return next(gen)
    except StopIteration:
        raise RuntimeError(f"{name}: returned before its agreement (the generator must "
                           "yield its agreed arguments once)") from None


def _rest(gen, name, vote=None):
    """The work: the generator resumed with its vote (``vote = yield
    dict(...)``), to its return value.  A vote still pending when the work
    fails is cast with this rank's error (the others wait in it); when the
    work returns, it is cast."""
    try:
        gen.send(vote)
    except StopIteration as done:
        if vote is not None and vote.pending:
            vote.cast()
        return done.value
    except BaseException as error:
        if vote is not None and vote.pending:
            vote.fail(error)
        raise
    raise RuntimeError(f"{name}: yields more than once (one agreement per call; a verdict "
                       "on data after it is `with agreement(comm, ...)`)")


def _vote(fn, name, params, at, args, kwargs, defer=False):
    """Run ``fn``'s checks inside one agreement; returns the generator,
    paused at its yield, with the agreed values compared on every rank --
    or, with ``defer``, the generator and its ``Vote``, not yet cast (the
    work casts it, or sends it with its first message)."""
    comm = _comm_of(args, kwargs, *at)
    ag = _agreement.Agreement(comm, name)
    try:
        gen = fn(*args, **kwargs)           # a wrong call signature raises here: voted
        agreed = _first_yield(gen, name)
        _incomplete(name, params, agreed)
        if type(agreed) is moves_nothing and not _agreement._DEBUG:
            if comm.size > 1:                   # a view: written in the ledger, not voted
                _record(comm, name, agreed)
            return gen, _agreement.SETTLED
        if comm.size > 1:
            same = ag.same
            for key, value in agreed.items():
                if type(value) is normalized:
                    same(key, describe(value.value), shown=value.given, error=value.error)
                else:
                    same(key, describe(value), shown=value)
    except BaseException as error:
        ag.__exit__(type(error), error, None)     # the same error on every rank
        raise
    if defer:
        return gen, _agreement.Vote(ag)
    ag.finish()
    return gen, _agreement.SETTLED


def _trusted(fn, name, args, kwargs):
    """The checks alone (a local call outside debug mode)."""
    gen = fn(*args, **kwargs)
    _first_yield(gen, name)
    return gen


def _within(fn, name, at, args, kwargs):
    """The checks of a call made inside an agreed call's work: its caller
    agreed the inputs, so an error here is the same on every rank -- it is
    marked so (printed once), without a vote."""
    try:
        return _trusted(fn, name, args, kwargs)
    except _agreement.USER_ERRORS as e:
        e.xdap_agreed = _agreement.Agreed.of(_comm_of(args, kwargs, *at))
        e.xdap_nested = True             # agreed as its caller's inputs were (a local call's:
        raise                            # in the ledger, not yet compared)


def collective(fn=None, *, name: str | None = None, over: str | None = None, own: tuple = (),
               rides: bool = False):
    """Declare ``fn`` (a generator function, see the module docstring) a
    collective call: its checks and every argument are agreed by one vote.
    ``name``: how errors and the hang watchdog name it (the function's);
    ``over``: the parameter whose communicator the vote is on (default:
    ``comm=``, else the first array argument); ``own``: the parameters
    each rank passes for itself (its piece, its DAP dict), not compared --
    the work checks them across ranks in a verdict of its own.
    ``rides``: the vote is not cast before the work: the generator gets it
    (``vote = yield dict(...)``, an ``xdap.agreement.Vote``) and sends it
    with its first message (``vote.ride``: a reduction's partial), or casts
    it (``vote.cast()``) before it communicates otherwise."""
    if fn is None:
        return functools.partial(collective, name=name, over=over, own=own, rides=rides)
    if not inspect.isgeneratorfunction(fn):
        raise TypeError(f"@collective: {fn.__qualname__} must be a generator function "
                        "(checks, then `yield dict(...)` of the agreed arguments, then work)")
    what = name or fn.__name__
    params = tuple(p for p in _params(fn) if p not in own)
    at = _comm_index(fn, over)
    settled = _agreement.SETTLED

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if getattr(_TLS, "depth", 0):
            gen, vote = _within(fn, what, at, args, kwargs), settled
        else:
            gen, vote = _vote(fn, what, params, at, args, kwargs, rides)
        _TLS.depth = getattr(_TLS, "depth", 0) + 1
        try:
            return _rest(gen, what, vote)
        except Exception as error:
            if _TLS.depth == 1:
                failed(_comm_of(args, kwargs, *at), what, error)
            raise
        finally:
            _TLS.depth -= 1

    call.__xdap_contract__ = Contract("collective", what, _params(fn), own)
    return call


def local(fn=None, *, name: str | None = None, ledger: bool = True, fast=None):
    """Declare ``fn`` (a generator function) a local call: no MPI call; its
    checks read agreed state only, so each rank's verdict is everyone's.
    Its agreed values are written in the communicator's ledger
    (``xdap.ledger``), which the next vote carries: a rank that passed
    another axis, or raised, is named there, on every rank (``ledger=False``:
    elementwise work, the hot path, writes none).  In debug mode, on more
    than one rank, it votes as a collective call.  ``fast``: the common
    case made whole without the generator's layers -- ``fast(*args,
    **kwargs)`` gives ``(result, agreed)``, a DistArray and the values the
    generator would yield for these arguments (written in the ledger), or
    None: the declared path decides."""
    if fn is None:
        return functools.partial(local, name=name, ledger=ledger, fast=fast)
    if not inspect.isgeneratorfunction(fn):
        raise TypeError(f"@local: {fn.__qualname__} must be a generator function "
                        "(checks, then `yield dict(...)` of the checked arguments, then work)")
    what = name or fn.__name__
    params = _params(fn)
    at = _comm_index(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if fast is not None and not _agreement._DEBUG:
            done = fast(*args, **kwargs)
            if done is not None:
                out, agreed = done
                if ledger and not getattr(_TLS, "depth", 0):
                    comm = out.distribution.comm
                    if comm.size > 1:
                        _record(comm, what, agreed)
                return out
        if getattr(_TLS, "depth", 0):
            return _rest(_trusted(fn, what, args, kwargs), what)
        if _agreement._DEBUG:
            gen, _ = _vote(fn, what, params, at, args, kwargs)
            with _INSIDE:
                return _rest(gen, what)
        gen = fn(*args, **kwargs)
        if not ledger:
            _first_yield(gen, what)
            try:
                return _rest(gen, what)
            except Exception as error:
                # the work's own failure here (memory, a kernel's data; its
                # checks read agreed state): the next vote names it on every
                # rank, as a ledger call's is
                failed(_comm_of(args, kwargs, *at), what, error)
                raise
        comm = _comm_of(args, kwargs, *at)
        if comm.size == 1:
            _first_yield(gen, what)
            return _rest(gen, what)
        try:
            agreed = _first_yield(gen, what)
        except _agreement.USER_ERRORS as error:
            _record(comm, what, None, error)        # a later vote names it, on every rank
            raise
        _record(comm, what, agreed)
        try:
            return _rest(gen, what)
        except Exception as error:
            # raised by the work here, not by a vote inside it: the ledger's
            # values are not compared yet, so neither is this error -- this
            # rank's entry says it raised, and the next vote names it
            if getattr(error, "xdap_agreed", None) is None or \
                    getattr(error, "xdap_nested", False):
                error.xdap_agreed = None
                _record(comm, what, None, error)
            raise

    call.__xdap_contract__ = Contract("local", what, params, ledger=ledger)
    return call


def adapted(fn, convert, doc: str | None = None):
    """``fn`` (a declared call) with its result passed through ``convert``
    -- an engine's ``(Distribution, Parts)`` made a DistArray -- under the
    same contract: the surface's constructors are engines' calls."""
    contract = contract_of(fn)
    if contract is None:
        raise TypeError(f"adapted: {fn.__qualname__} declares no contract")

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return convert(fn(*args, **kwargs))

    if doc is not None:
        call.__doc__ = doc
    call.__xdap_contract__ = contract
    return call


def part(fn=None, *, name: str | None = None):
    """Declare ``fn`` (a generator function) a read of this rank's own part
    (``a.local_numpy()``, ``a.to_arrow()``, ``a.global_indices()``): its
    checks run, it never votes -- not even in debug mode: a rank may call
    it alone (``if rank == 0: print(a.local_numpy())``)."""
    if fn is None:
        return functools.partial(part, name=name)
    if not inspect.isgeneratorfunction(fn):
        raise TypeError(f"@part: {fn.__qualname__} must be a generator function")
    what = name or fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return _rest(_trusted(fn, what, args, kwargs), what)

    call.__xdap_contract__ = Contract("part", what, _params(fn))
    return call


def pure(fn):
    """Declare ``fn`` a function of its arguments' values alone: it reads
    no array's data and never communicates, so a rank may call it alone
    (``finfo``, ``result_type``, ``make_distribution``) -- marked, not
    wrapped."""
    fn.__xdap_contract__ = Contract("pure", fn.__name__, ())
    return fn


def state(fn):
    """Declare a property getter a read of agreed state (no argument, no
    MPI call: ``a.shape``, ``a.dtype``): marked, not wrapped."""
    fn.__xdap_contract__ = Contract("state", fn.__name__, ())
    return fn
