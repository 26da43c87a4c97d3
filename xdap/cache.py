"""The one cache policy: bounded LRU caches keyed by fingerprints.

Plans (redistribution, halo, read plans, ...) are pure data computed from
Distributions, so they are cached on the distributions' ``fingerprint()``s
-- never on ``id()`` of an object, never on attributes hung on a
Distribution.  ``plans`` is the one process-wide cache; its size is
``XDAP_PLAN_CACHE`` (default 64 entries) or ``set_size(n)``.  An entry that
holds MPI resources (derived datatypes) gets a ``release`` callback, called
when the entry is evicted or the cache cleared.

Resources that belong to one communicator (sub-communicators for
reductions, persistent requests) are kept in an ``LRU`` attached to that
communicator (``xdap.comm.attached``), so they die with it.

>>> c = LRU(2)
>>> c.get_or_make("a", lambda: 1), c.get_or_make("b", lambda: 2), c.get_or_make("a", lambda: 9)
(1, 2, 1)
>>> c.get_or_make("c", lambda: 3); "b" in c          # "b" was least recently used
3
False
"""
from __future__ import annotations

import os
from collections import OrderedDict

__all__ = ["LRU", "plans", "set_size"]


class LRU:
    """A bounded least-recently-used mapping (not thread-safe; MPI ranks are
    single-threaded callers here)."""

    def __init__(self, maxsize: int):
        self.maxsize = _check_size(maxsize)
        self._items: OrderedDict = OrderedDict()      # key -> (value, release)

    def get_or_make(self, key, make, release=None):
        """The value cached under ``key``, or ``make()`` stored under it
        (``release(value)`` is called when it leaves the cache)."""
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit[0]
        value = make()
        self._items[key] = (value, release)
        self._trim()
        return value

    def __contains__(self, key) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

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
        raise ValueError(f"a cache size must be an int >= 1, got {n!r}")
    return n


plans = LRU(int(os.environ.get("XDAP_PLAN_CACHE", "64")))


def set_size(n: int) -> None:
    """Keep at most ``n`` plans (and their MPI datatypes) per process."""
    plans.resize(n)
