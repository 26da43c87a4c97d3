"""The one plan store: plans kept by the fingerprints of their inputs, in two
explicit scopes, with one eviction rule.

* ``pure`` -- plans that are plain data, computed without MPI from inputs
  every rank already agreed on (a halo plan, a redistribution plan between
  complete maps, a read plan).  Process-wide.  A hit or a miss here decides
  only local work, so ranks may differ in what they keep.
* ``on(comm)`` -- entries that belong to one communicator: plans whose
  making is collective (a directory, this rank's routes through a
  distributed map, reduction teams, the process table of
  ``__partitioned__``) and executors that hold the communicator (derived
  datatypes, persistent requests bound to a buffer).  A miss here is a
  collective, so these are looked up only inside a collective call, which
  every rank of ``comm`` makes in the same order: their stores see the same
  sequence of keys, so they hit and miss alike.  The store is an MPI
  attribute of ``comm``: it is emptied (and its MPI resources released) when
  the communicator is freed.

Keys are typed: a :class:`Key` names the kind of plan and the fingerprints
(and small integers) it was computed from -- never ``id()`` of an object,
never attributes hung on a Distribution.  Both scopes are bounded LRUs of
``XDAP_PLAN_CACHE`` entries each (default 64; ``set_size(n)``); an entry
that holds MPI resources has a ``release`` callback, called when it is
evicted or the store cleared.

Not here, on purpose: memoised pure functions of short strings (dtype
parsing, agreement digests: ``functools.lru_cache``), and the kernel
dispatch cache (``xdap.kernels.apply``), which holds gumath handles, not
plans.

>>> s = Store(2)
>>> s.get_or_make(Key("doc", (1,)), lambda: "a"), s.get_or_make(Key("doc", (1,)), lambda: "b")
('a', 'a')
>>> from mpi4py import MPI
>>> on(MPI.COMM_SELF).get_or_make(Key("doc", ()), lambda: 42)
42
"""
from __future__ import annotations

import atexit
import os
import weakref
from collections import OrderedDict
from typing import NamedTuple

from mpi4py import MPI

__all__ = ["Key", "Store", "pure", "on", "clear", "set_size", "size"]


class Key(NamedTuple):
    """What a plan is and what it was computed from (a named tuple: made
    and hashed at C speed, as repeated halo exchanges look it up).

    kind    the kind of plan, e.g. ``"halo"``, ``"redistribute"``
    inputs  the fingerprints (bytes) and small ints (ranks, sizes) that
            determine it -- equal inputs give the same plan
    """
    kind: str
    inputs: tuple = ()


class Store:
    """A bounded least-recently-used store of plans (not thread-safe: MPI
    ranks are single-threaded callers here)."""

    def __init__(self, maxsize: int):
        self.maxsize = _check_size(maxsize)
        self._items: OrderedDict = OrderedDict()      # key -> (value, release)

    def get_or_make(self, key: Key, make, release=None):
        """The plan kept under ``key``, or ``make()`` kept under it
        (``release(value)`` is called when it leaves the store)."""
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit[0]
        if not isinstance(key, Key):
            raise TypeError(f"plan store keys are xdap.plans.Key, got {type(key).__name__}")
        value = make()
        self._items[key] = (value, release)
        self._trim()
        return value

    def peek(self, key: Key):
        """The plan kept under ``key``, or None -- not marked used: a look
        that changes nothing.  Before a call's vote the ranks may still part
        ways; the stores stay alike on every rank only when what changes
        them (a plan made, one marked used) comes from agreed calls."""
        hit = self._items.get(key)
        return None if hit is None else hit[0]

    def get(self, key: Key):
        """The plan kept under ``key`` (marked recently used), or None."""
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        return hit[0]

    def put(self, key: Key, value, release=None) -> None:
        """Keep ``value`` under ``key``, releasing what was there."""
        old = self._items.pop(key, None)
        if old is not None and old[1] is not None and old[0] is not value:
            old[1](old[0])
        self._items[key] = (value, release)
        self._trim()

    def __contains__(self, key) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def kinds(self) -> dict:
        """{kind: number of entries}: what the store holds."""
        out: dict = {}
        for k in self._items:
            out[k.kind] = out.get(k.kind, 0) + 1
        return out

    def resize(self, maxsize: int) -> None:
        self.maxsize = _check_size(maxsize)
        self._trim()

    def clear(self) -> None:
        while self._items:
            self._evict()

    def _trim(self):
        while len(self._items) > self.maxsize:
            self._evict()

    def _evict(self):
        _, (value, release) = self._items.popitem(last=False)
        if release is not None:
            release(value)


def _check_size(n) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"a plan store size must be an int >= 1, got {n!r}")
    return n


_SIZE = [_check_size(int(os.environ.get("XDAP_PLAN_CACHE", "64")))]

pure = Store(_SIZE[0])
"""Pure plans, process-wide (see the module docstring)."""

_KEYVAL: list = []
_STORES = weakref.WeakSet()   # every communicator store made (freed with its communicator)


def _keyval():
    if not _KEYVAL:
        def delete(comm, keyval, store):
            store.clear()
        _KEYVAL.append(MPI.Comm.Create_keyval(delete_fn=delete))
    return _KEYVAL[0]


def on(comm) -> Store:
    """The store of entries that belong to ``comm`` (see the module
    docstring): made on first use, freed with the communicator.  Local;
    looking it up makes no MPI call."""
    store = comm.Get_attr(_keyval())
    if store is None:
        store = Store(_SIZE[0])
        comm.Set_attr(_keyval(), store)
        _STORES.add(store)
    return store


def clear(comm=None) -> None:
    """Empty the pure store, and ``comm``'s store when given (collective
    on ``comm`` in the sense that every rank must clear it alike)."""
    pure.clear()
    if comm is not None:
        on(comm).clear()


def set_size(n: int) -> None:
    """Keep at most ``n`` plans per scope (and their MPI resources).  Call
    it alike on every rank: communicator stores must evict alike."""
    _SIZE[0] = _check_size(n)
    pure.resize(n)
    for store in list(_STORES):
        store.resize(n)


def size() -> int:
    """The bound of each scope."""
    return _SIZE[0]


@atexit.register
def _release_all() -> None:
    """At exit, before mpi4py finalizes MPI (its exit hook was registered
    first, so it runs after this one): release every entry's MPI resources
    while MPI still takes them back quietly."""
    if MPI.Is_initialized() and not MPI.Is_finalized():
        for store in list(_STORES):
            store.clear()
        pure.clear()
