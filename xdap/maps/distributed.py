"""The distributed unstructured map: each process knows its own part only.

An unstructured dimension whose indices no rank holds whole (data born
distributed: ``from_local(..., dist="u")``, a migration's result, a DAP
import of unstructured pieces).  A process knows the indices of its own
grid coordinate(s), and every grid rank's count; what does not need the
others' indices works as for the complete ``UnstructuredMap`` (local sizes,
its own indices and their canonical positions, DAP dicts, the
fingerprint), and what does -- owner lookups, other ranks' indices --
raises ``NotLocal``: the engines ask the distributed directory
(``xdap.directory``) instead.

>>> from xdap.maps import UnstructuredMap
>>> whole = UnstructuredMap(5, [[3, 0], [4, 2, 1]], one_to_one=True)
>>> m = DistributedUnstructuredMap(5, [2, 3], {1: [4, 2, 1]}, True, whole.fingerprint())
>>> m.complete, m.local_size(0), m.global_indices(1).tolist(), m == whole
(False, 2, [4, 2, 1], True)
"""
from __future__ import annotations

import numpy as np

from .base import NotLocal, as_int64, check_range, _I64
from .unstructured import UnstructuredMap

__all__ = ["DistributedUnstructuredMap"]


class DistributedUnstructuredMap(UnstructuredMap):
    """The distributed form (see the module docstring), trusted: its maker
    validated it (``xdap.directory``), or derived it from a validated map.

    size         the dimension's size
    counts       every grid rank's number of indices
    known        ``{p: indices}`` of the grid ranks this process holds
    one_to_one   whether no index is held twice
    fingerprint  the same on every process (``unstructured_fingerprint``)
    canonical    ``{p: positions}`` whose indices count on ``p`` (only
                 needed when ``one_to_one`` is False)

    The index arrays are taken, not copied, and made read-only: pass
    arrays nobody else writes to.
    """

    complete = False

    def __init__(self, size, counts, known, one_to_one, fingerprint: bytes, canonical=None):
        self.size, self.grid_size, self.one_to_one = int(size), len(counts), bool(one_to_one)
        self.counts = tuple(int(c) for c in counts)
        arrays = {}
        for p, idx in known.items():
            a = np.asarray(idx, dtype=_I64)      # taken as given: callers pass their own
            a.flags.writeable = False
            arrays[int(p)] = a
        self._known = arrays
        self._canonical = {} if canonical is None else \
            {int(p): np.asarray(c, np.int64) for p, c in canonical.items()}
        self.__dict__["_fp"] = bytes(fingerprint)
        self._sorted = {}
        self._freeze()

    @property
    def known(self) -> tuple:
        return tuple(self._known)

    def local_size(self, p):
        self._check_rank(p)
        return self.counts[p]

    owned_count = local_size

    @property
    def has_copies(self) -> bool:
        return not self.one_to_one and sum(self.counts) != self.size

    def global_indices(self, p):
        self._check_rank(p)
        if p not in self._known:
            raise NotLocal(f"grid rank {p}'s indices of this distributed unstructured map are "
                           "not held by this process (ask the directory: xdap.directory)")
        return self._known[p]

    def canonical_positions(self, p):
        if self.one_to_one:
            return self.owned_local_slice(p)
        if p not in self._canonical:
            raise NotLocal(f"grid rank {p}'s canonical positions are not held here")
        return self._canonical[p]

    def owners(self, g):
        check_range(as_int64(g, "global index"), self.size, "global index")
        raise NotLocal("owners of a distributed unstructured map: ask its directory "
                       "(xdap.directory)")

    def local_from_global(self, p, g):
        self._check_rank(p)
        g = as_int64(g, "global index")
        check_range(g, self.size, "global index")
        return self._search(p, g)

    def json_arrays(self):
        raise NotLocal("a distributed unstructured map's indices are spread over the ranks: "
                       "each writes its own")

    def _repr_tail(self) -> str:
        return ", distributed"
