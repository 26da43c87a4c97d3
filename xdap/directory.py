"""The distributed directory: who holds global id g, without any rank
knowing all ids.

The record of id ``g`` lives on its *home* rank -- the rank owning g's
block of the id range ``[0, size)`` (a rendezvous, as Tpetra's
``DistributedNoncontiguousDirectory``), or ``hash(g) mod P`` for sparse id
spaces.  Building the directory is one all-to-all of the registered
``(id, holder, position)`` records; a lookup is one all-to-all of queries
and one of answers.  A home keeps only the records of its own ids, as
sorted arrays: memory O(records / P) per rank, bounded by the ids given,
never by a claimed size.

Several holders may register one id (ghost copies): the home then names its
*owner* -- the holder that registered it as owned when holders say so, else
the lowest holder -- and a lookup answers with the owner.

>>> import numpy as np
>>> from mpi4py import MPI
>>> d = Directory.build(MPI.COMM_SELF, 5, np.array([3, 0, 4, 1, 2]), holder=7)
>>> d.lookup(np.array([4, 0]))
(array([7, 7]), array([2, 1]))
"""
from __future__ import annotations

import numpy as np

from . import plans
from .agreement import agreement
from .heap import trims_heap
from .parts import Parts
from .transport import Route, exchange_counts, group_order, move

__all__ = ["Directory", "unstructured_map", "owners_of", "directory_of", "remember",
           "prefix_sums"]

# Fibonacci hashing: ids times 2**64 / golden ratio, the high bits mixed well
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _rank_type(P: int):
    """The smallest integer type of the ranks of a P-rank communicator."""
    return np.uint8 if P <= 256 else np.int16 if P <= 2 ** 15 else np.int32


class Directory:
    """This rank's share of the directory of ids ``[0, size)`` over ``comm``
    (build it with ``Directory.build``, collectively)."""

    def __init__(self, comm, size: int, hashed: bool, keys, holders, positions):
        self.comm, self.size, self.hashed = comm, size, hashed
        self._keys, self._holders, self._positions = keys, holders, positions

    # -- where a record lives --------------------------------------------------
    def home(self, ids: np.ndarray, small: bool = False) -> np.ndarray:
        """The rank holding the records of ``ids`` (int64 array; with
        ``small`` the smallest integer type that holds a rank, computed
        without an int64 temporary: 1 byte an id for up to 256 ranks)."""
        P = self.comm.size
        if self.hashed:
            mixed = (ids.astype(np.uint64) * GOLDEN) >> np.uint64(40)
            return (mixed % np.uint64(P)).astype(_rank_type(P) if small else np.int64)
        block = max(1, -(-self.size // P))
        if not small:
            return np.minimum(ids // block, P - 1)
        out = np.empty(len(ids), _rank_type(P))     # ids < size: ids // block <= P - 1
        np.floor_divide(ids, block, out=out, casting="unsafe")
        return out

    # -- building ----------------------------------------------------------------
    @classmethod
    @trims_heap
    def build(cls, comm, size: int, ids, holder, positions=None, owned=None,
              hashed: bool = False, what: str = "directory") -> "Directory":
        """Register this rank's ``ids`` (held by ``holder`` -- a rank or grid
        coordinate -- at ``positions``, default 0..n-1; ``owned``: which of
        them this holder owns, or None) and check them (collective).

        Checked on every rank, with one verdict: ids in ``[0, size)``;
        coverage (every id of ``[0, size)`` registered); at most one owner
        per id when ``owned`` is given, and exactly one for each id.  The
        checks cost the ids given: a claimed ``size`` larger than the number
        of ids registered is refused before anything is allocated.
        """
        ids = np.asarray(ids, np.int64).reshape(-1)
        n = len(ids)
        positions = None if positions is None else np.asarray(positions, np.int64)
        flags = None if owned is None else np.asarray(owned, bool)
        self = cls(comm, int(size), hashed, None, np.zeros(0, np.int64), np.zeros(0, np.int64))
        with agreement(comm, what, share=True) as ag:
            if n and (int(ids.min()) < 0 or int(ids.max()) >= size):
                bad = int(ids[(ids < 0) | (ids >= size)][0])
                raise ValueError(f"{what}: global index {bad} out of range [0, {size})")
            ag.share((n, int(holder)))
        total = sum(c for c, _ in ag.shared)
        if total < size:
            raise ValueError(f"{what}: coverage: the ranks hold {total} indices in all, so they "
                             f"cannot cover every index of size {size}")
        # the rendezvous: ids and positions (and owner flags) to the ids'
        # homes; a home knows each sender's holder from the agreement.  The
        # rows are grouped by home once and sent as they lie, the ids first
        # and the positions (int32 where they fit: by default the grouping
        # order itself) after: at the peak a rank holds its ids, one grouped
        # copy, the positions and the ids that arrived -- 1.75x its share.
        small = np.int32 if n < 2 ** 31 and (positions is None or not len(positions) or
                                              int(positions.max()) < 2 ** 31) else np.int64
        dest = self.home(ids, small=True)
        route = Route(comm, None, np.bincount(dest, minlength=comm.size)).with_recv_counts()
        order = group_order(dest, comm.size)
        del dest
        grouped = ids[order]
        sent = [Parts.of_array(order.astype(small) if positions is None else
                               positions[order].astype(small))]
        if flags is not None:
            sent.append(Parts.of_array(flags[order].view(np.uint8)))
        del order
        got_ids = move(route, Parts.of_array(grouped))[0].values
        del grouped
        got = move(route, *sent)
        del sent
        got_own = got[1].values.view(bool) if flags is not None else None
        holders = np.array([h for _, h in ag.shared], np.int32 if comm.size < 2 ** 31 else np.int64)
        self._settle(got_ids, holders, route.recv_counts, got[0].values, got_own, what)
        return self

    def _settle(self, ids, holders, per_sender, pos, own, what: str) -> None:
        """Check the records of my ids -- ``per_sender[r]`` of them from rank
        ``r``, held by ``holders[r]`` -- and keep each id's owner: in dense
        arrays over my id range (coverage makes it dense: no sort), or by
        sorted ids for hashed homes."""
        comm = self.comm
        holder = None                             # each record's holder: made when needed
        if self.hashed:
            holder = np.repeat(holders, per_sender)
            order = np.argsort(ids, kind="stable")
            ids, holder, pos = ids[order], holder[order], pos[order]
            own = None if own is None else own[order]
            first = np.ones(len(ids), bool)
            first[1:] = ids[1:] != ids[:-1]
            keys, slot = ids[first], np.cumsum(first) - 1
        else:
            lo, hi = self._my_range()
            ids -= lo                             # the slot of each record, in place
            keys, slot = None, ids
        n_slots = len(keys) if keys is not None else hi - lo
        # which slots are held: one byte a slot (a count per slot only when
        # an id arrived twice -- shared ids -- or owners are to be checked)
        held = np.zeros(n_slots, np.uint8)
        held[slot] = 1
        n_held = int(np.count_nonzero(held))
        error = None
        if own is not None:
            count = np.bincount(slot, minlength=n_slots)
            owners = np.bincount(slot[own], minlength=n_slots)
            if (owners > 1).any():
                error = ValueError(f"{what}: global index "
                                   f"{self._id(keys, np.argmax(owners > 1))} has more than one owner")
            elif ((count > 0) & (owners == 0)).any():
                error = ValueError(f"{what}: global index "
                                   f"{self._id(keys, np.argmax((count > 0) & (owners == 0)))} is "
                                   "held but owned by no rank")
            del count, owners
            win = own
        elif n_held < len(slot):                  # shared ids: the lowest holder owns them
            holder = np.repeat(holders, per_sender) if holder is None else holder
            best = np.full(n_slots, np.iinfo(np.int64).max, np.int64)
            np.minimum.at(best, slot, holder)
            win = holder == best[slot]
        else:
            win = None                            # every record is its id's owner
        with agreement(comm, what, share=True) as ag:
            if error is not None:
                raise error
            ag.share(n_held)
        if sum(ag.shared) != self.size:
            with agreement(comm, what):
                if keys is None and n_held < n_slots:
                    raise ValueError(f"{what}: coverage: global index "
                                     f"{lo + int(np.argmax(held == 0))} is not held by any rank")
            raise ValueError(f"{what}: coverage: only {sum(ag.shared)} of the {self.size} "
                             "indices are held by some rank")
        del held
        small = np.int32 if n_slots == 0 or max(int(holders.max(initial=0)),
                                                int(pos.max(initial=0))) < 2 ** 31 else np.int64
        self._holders = np.empty(n_slots, small)
        self._positions = np.empty(n_slots, small)
        if win is None:                           # each sender's records at once: no holder array
            at = np.concatenate([[0], np.cumsum(per_sender)])
            for r, h in enumerate(holders):
                self._holders[slot[at[r]:at[r + 1]]] = h
            self._positions[slot] = pos
        else:
            holder = np.repeat(holders, per_sender) if holder is None else holder
            self._holders[slot[win]] = holder[win]
            self._positions[slot[win]] = pos[win]
        self._keys = keys

    def _id(self, keys, slot) -> int:
        """The id at a slot of my records."""
        return int(keys[slot]) if keys is not None else self._my_range()[0] + int(slot)

    def _my_range(self):
        if self.hashed:
            return None
        block = max(1, -(-self.size // self.comm.size))
        me = self.comm.rank
        lo = min(self.size, me * block)
        hi = self.size if me == self.comm.size - 1 else min(self.size, lo + block)
        return lo, hi

    # -- asking --------------------------------------------------------------------
    def lookup(self, ids) -> tuple:
        """``(holder, position)`` of the owner of each of ``ids`` (collective;
        every rank may ask for any ids, repeats allowed)."""
        ids = np.asarray(ids, np.int64).reshape(-1)
        comm = self.comm
        route = Route.to_ranks(comm, self.home(ids)).with_recv_counts()
        queries = move(route, Parts.of_array(ids))[0].values
        if self._keys is None:                  # my id range, dense
            at = queries - self._my_range()[0]
            ok = (at >= 0) & (at < len(self._holders))
        else:
            at = np.searchsorted(self._keys, queries)
            ok = (at < len(self._keys)) & (self._keys[np.minimum(at, len(self._keys) - 1)]
                                            == queries) if len(self._keys) else \
                np.zeros(len(queries), bool)
        with agreement(comm, "directory lookup"):
            if not ok.all():
                raise ValueError(f"directory lookup: global index {int(queries[~ok][0])} is "
                                 "held by no rank")
        answer = np.empty((len(at), 2), np.int64)
        answer[:, 0], answer[:, 1] = self._holders[at], self._positions[at]
        back = move(route.reversed(), Parts.of_array(answer))[0].values
        holders = np.empty(len(ids), np.int64)
        positions = np.empty(len(ids), np.int64)
        holders[route.rows], positions[route.rows] = back[:, 0], back[:, 1]
        return holders, positions

    def owner_flags(self, ids, holder) -> np.ndarray:
        """For each of this rank's registered ``ids`` (as in ``build``,
        held by ``holder``): whether ``holder`` is its owner (collective)."""
        owner, _ = self.lookup(ids)
        return owner == holder


# --------------------------------------------------------------------------
# distributed unstructured maps
# --------------------------------------------------------------------------

def unstructured_map(comm, grid_size: int, coord: int, indices, size=None, one_to_one=None,
                     owned=None, what: str = "unstructured dimension"):
    """The distributed ``UnstructuredMap`` of one dimension whose grid rank
    ``coord`` (this rank's coordinate along it) holds ``indices`` -- and its
    ``Directory`` (collective over ``comm``; no rank ever holds all indices).

    size        the dimension's size; None: the largest index + 1
    one_to_one  claim that every index is held once (checked); None: it is
                True exactly when the ranks' counts add up to ``size``
    owned       None (an index held by several grid ranks belongs to the
                lowest), or this rank's bool mask of the indices it owns:
                every index must then have exactly one owner (ghost copies
                are the others)

    Ranks that share a coordinate (a grid with other distributed dims) must
    pass the same indices; the lowest of them registers them.  Checked on
    every rank at once: integers, range, local uniqueness, coverage of
    ``[0, size)``, the one_to_one claim, one owner per index.
    """
    from .maps import DistributedUnstructuredMap, index_digest, is_int, unstructured_fingerprint
    own = None
    with agreement(comm, what, share=True) as ag:
        ag.same("grid size", grid_size)
        ag.same("size", size)
        ag.same("one_to_one", one_to_one)
        ag.same("whether owned is given", owned is None)
        if size is not None and (not is_int(size) or size < 0):
            raise TypeError(f"{what}: size must be an int >= 0, got {size!r}")
        if one_to_one is not None and not isinstance(one_to_one, (bool, np.bool_)):
            raise TypeError(f"{what}: one_to_one must be a bool or None, got {one_to_one!r}")
        a = np.asarray(indices)
        if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
            raise TypeError(f"{what}: indices must be a 1-d array of integers, got dtype "
                            f"{a.dtype} with shape {a.shape}")
        own = a.astype(np.int64)
        if size is not None:
            own[own < 0] += size                    # Python-style negatives
            if own.size and (own.min() < 0 or own.max() >= size):
                bad = int(a[(own < 0) | (own >= size)][0])
                raise ValueError(f"{what}: index {bad} out of range for size {size}")
        elif own.size and own.min() < 0:
            raise ValueError(f"{what}: index {int(own.min())} is negative (give size= to count "
                             "negative indices from the end)")
        ordered = np.sort(own)
        repeats = np.flatnonzero(ordered[1:] == ordered[:-1])
        if repeats.size:
            raise ValueError(f"{what}: indices must be locally unique, but global index "
                             f"{int(ordered[repeats[0]])} repeats")
        del ordered
        if owned is not None:
            owned = np.asarray(owned)
            if owned.dtype != bool or owned.shape != own.shape:
                raise TypeError(f"{what}: owned must be a bool mask like the indices "
                                f"({own.shape}), got {owned.dtype} {owned.shape}")
        ag.share((int(coord), len(own), index_digest(own), int(own.max()) + 1 if own.size else 0))
    shared = ag.shared
    counts, digests = [None] * grid_size, [None] * grid_size
    first = {}
    for r, (c, n, dig, _) in enumerate(shared):
        if counts[c] is None:
            counts[c], digests[c], first[c] = n, dig, r
        elif dig != digests[c]:
            raise ValueError(f"{what}: ranks {first[c]} and {r} share grid position {c} but "
                             "hold different indices (they must be the same along an axis)")
    if any(c is None for c in counts):
        raise ValueError(f"{what}: grid position {counts.index(None)} is held by no rank")
    size = max(m for *_, m in shared) if size is None else int(size)
    total = sum(counts)
    if one_to_one and total != size:
        raise ValueError(f"{what}: one_to_one is True but the ranks hold {total} indices in "
                         f"all, not size {size} (an index is held twice or missing)")
    one = (total == size) if one_to_one is None else bool(one_to_one)
    register = first[int(coord)] == comm.rank
    directory = Directory.build(comm, size, own if register else np.zeros(0, np.int64),
                                holder=int(coord), owned=(owned if register else
                                                          np.zeros(0, bool)) if owned is not None
                                else None, what=what)
    canonical = None
    if not one:
        holder, _ = directory.lookup(own)
        canonical = {int(coord): np.flatnonzero(holder == coord)}
    fp = unstructured_fingerprint(size, one, counts, digests)
    return DistributedUnstructuredMap(size, counts, {int(coord): own}, one, fp, canonical), directory


def directory_of(d, k: int) -> Directory:
    """The directory of the distributed unstructured map along dim ``k`` of
    the Distribution ``d`` (collective on ``d.comm``): kept on the
    communicator (``xdap.plans.on``), rebuilt from every grid
    position's indices if it is not there any more."""
    m = d.maps[k]

    def build():
        coord = d.coords[k]
        first = min(r for r in range(d.size) if d.coords_of(r)[k] == coord)
        ids = m.global_indices(coord) if first == d.comm.rank else np.zeros(0, np.int64)
        owned = None
        if m.has_copies:            # the owners the map was made with, not the lowest holder
            owned = np.zeros(len(ids), bool)
            if len(ids):
                owned[m.canonical_positions(coord)] = True
        return Directory.build(d.comm, m.size, ids, holder=coord, owned=owned)
    return plans.on(d.comm).get_or_make(plans.Key("directory", (m.fingerprint(),)), build)


def owners_of(d, k: int, ids) -> tuple:
    """``(grid rank, local position)`` of the owner of each of ``ids`` along
    dim ``k``: answered by a complete map itself, asked of the directory of
    a distributed one (collective then -- call it where every rank does)."""
    m = d.maps[k]
    return m.owners(ids) if m.complete else directory_of(d, k).lookup(ids)


def remember(d, k: int, directory: Directory) -> None:
    """Keep a freshly built directory for ``directory_of`` (local)."""
    plans.on(d.comm).get_or_make(plans.Key("directory", (d.maps[k].fingerprint(),)),
                                 lambda: directory)


def prefix_sums(comm, size: int, ids, values, queries) -> tuple:
    """Exclusive prefix sums over the global order of ids ``[0, size)``:
    each id ``g`` registered once, by one rank, with ``values[i]`` for
    ``ids[i]``; returns ``(sum of the values of the ids < q for each q in
    queries, the total)`` (collective).  A rendezvous by id range: O(size/P)
    memory per rank, a few all-to-alls.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> prefix_sums(MPI.COMM_SELF, 4, np.array([2, 0, 3, 1]), np.array([5, 1, 7, 2]),
    ...             np.array([3, 0]))
    (array([8, 0]), 15)
    """
    P, me = comm.size, comm.rank
    block = max(1, -(-size // P))

    def route(keys) -> Route:
        """Rows to the homes of ``keys``, the id range ``[h * block, ...)``."""
        return Route.to_ranks(comm, np.minimum(keys // block, P - 1)).with_recv_counts()
    ids = np.asarray(ids, np.int64)
    lo = min(size, me * block)
    hi = size if me == P - 1 else min(size, lo + block)
    got = move(route(ids), Parts.of_array(np.stack([ids, np.asarray(values, np.int64)], 1)))[0]
    mine = np.zeros(hi - lo, np.int64)
    mine[got.values[:, 0] - lo] = got.values[:, 1]
    totals = exchange_counts(comm, np.full(P, mine.sum(), np.int64))
    start = np.concatenate([[0], np.cumsum(mine)[:-1]]) + totals[:me].sum()
    queries = np.asarray(queries, np.int64)
    ask = route(queries)
    q = move(ask, Parts.of_array(queries))[0].values
    out = np.empty(len(queries), np.int64)
    out[ask.rows] = move(ask.reversed(), Parts.of_array(start[q - lo]))[0].values
    return out, int(totals.sum())
