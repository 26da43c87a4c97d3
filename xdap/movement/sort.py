"""Sorting distributed data: a sample sort through the one transport.

``sort_parts(d, p, indices=False)`` sorts a 1-D array whose elements are
spread over the ranks (collective):

1. every rank sorts what it owns (``np.sort``; ``lexsort`` on (value,
   global index) when indices are wanted);
2. every rank draws ``SAMPLES`` regular samples of its sorted values, each
   weighted by how many values it stands for; the samples (O(P) per rank,
   one allgather through the transport) give P - 1 splitters that cut the
   weighted distribution in P equal parts -- so ranks with nothing, or with
   much more than others, balance out;
3. each rank cuts its sorted values at the splitters (binary searches) and
   sends every piece to its rank: ONE ``Alltoallv`` (plus the counts);
4. every rank merges the P sorted runs it received (NumPy's timsort finds
   the runs: O(n log P)).

The result is an irregular block (sizes from one allgather of counts): rank
r holds the r-th slice of the sorted array, every slice within a few
percent of N/P.  A value repeated more often than a rank's share (many
zeros, a constant array) would land on one rank if the cut were by value:
when the samples show one, splitters become (value, global index) pairs,
so equal values spread over ranks in index order.  NaN sorts last, as in
NumPy.

Memory per rank O(N/P + P); bulk data moves as buffers.

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.array([3.0, 1.0, 2.0]), comm=MPI.COMM_SELF)
>>> (d2, p2), = [sort_parts(d, p)]
>>> p2.values.tolist()
[1.0, 2.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ..distribution import Distribution, make_distribution
from ..maps import BlockMap
from ..agreement import Held, settled
from ..parts import Parts
from ..transport import STEP, Route, gather_row, move

__all__ = ["sort_parts", "stable_argsort", "unique_parts", "SAMPLES"]

SAMPLES = 64          # per rank: splitters within ~1/SAMPLES of N/P per rank


def stable_argsort(v: np.ndarray) -> np.ndarray:
    """``np.argsort(v, kind="stable")`` of a 1-D array, in a seventh of
    the time for floats without ties: NumPy's (SIMD) quicksort argsort,
    whose order is the stable one where no two values are equal -- checked
    in one pass (equal neighbours once sorted, or two NaNs, which sort last
    and compare unequal: then the stable sort).  Measured on 10^5 random
    float64: 1.5 ms against 7.6.

    >>> stable_argsort(np.array([0.5, 0.1, 0.5, np.nan, 0.2])).tolist()
    [1, 4, 0, 2, 3]
    """
    if v.dtype.kind != "f" or len(v) < 2:        # ints tie often: NumPy's stable (radix) sort
        return np.argsort(v, kind="stable")
    order = np.argsort(v)
    s = v[order]
    if np.isnan(s[-2]) or bool((s[1:] == s[:-1]).any()):
        return np.argsort(v, kind="stable")
    return order


def sort_parts(d: Distribution, p: Parts, indices: bool = False):
    """``(Distribution, Parts)`` of the sorted 1-D array; with ``indices``
    a third item: the Parts of the global indices that sort it (NumPy's
    stable ``argsort``: equal values in index order).  Collective."""
    comm = d.comm
    m = d.maps[0]
    if m.shared_owned:             # an index owned twice would be sorted twice
        from .redistribute import move_agreed
        d, p = move_agreed(d, p, make_distribution(d.global_shape, ("b",), comm=comm))
        m = d.maps[0]
    owned = m.owned_local_slice(d.coords[0])
    own = p.values[owned]
    # unpadded blocks in rank order: global indices grow with the local
    # position and with the rank, so a stable sort by value alone keeps
    # equal values in index order -- here, and when the ranks' sorted runs
    # arrive in rank order (NumPy's stable sort of floats merges runs)
    in_order = m.contiguous and bool(np.array_equal(d.rank_coords[:, 0], np.arange(comm.size)))

    def by_value_and_index():
        gidx = np.asarray(d.global_indices(0))[owned]
        order = stable_argsort(own) if in_order else np.lexsort((gidx, own))
        return own[order], gidx[order]
    # each local step is held; its failure on one rank rides the step's next
    # message (a poisoned count), so no rank waits for one that left
    values = gidx = None
    with Held(STEP) as held:                # 1. what this rank owns, sorted
        values, gidx = by_value_and_index() if indices else (np.sort(own), None)
    all_values, all_weights, all_gidx = _all_samples(comm, values, gidx, own.dtype, held)
    n_total = d.global_shape[0]
    P = comm.size
    with settled(comm, STEP):               # 2. the splitters: the branch below is agreed
        ties = _heavy(all_values, all_weights, n_total / P)
    if ties and not indices:                # equal values must spread: cut by (value, index)
        with held:
            if not held.failed:
                values, gidx = by_value_and_index()
        all_values, all_weights, all_gidx = _all_samples(comm, values, gidx, own.dtype, held)
    with held:                              # 3. cut at the splitters, sent to their ranks
        if not held.failed:
            cuts = _cuts(values, gidx if ties else None, all_values, all_weights, all_gidx, P,
                         ties)
            counts = np.diff(np.concatenate([[0], cuts, [len(values)]]))
            route = Route(comm, None, counts)
            payload = [Parts.of_array(values)] + ([Parts.of_array(gidx)] if indices else [])
    if held.failed:                         # stand-ins of the same kinds: nothing to send
        route, payload = Route.nothing(comm), [Parts.of_array(own[:0])] + \
            ([Parts.of_array(np.zeros(0, np.int64))] if indices else [])
    arrived = move(route, *payload, held=held)
    with held:                              # 4. the P sorted runs merged
        merged = arrived[0].values
        if indices:
            order = np.argsort(merged, kind="stable") if in_order else \
                np.lexsort((arrived[1].values, merged))
            merged, moved_idx = merged[order], arrived[1].values[order]
        else:
            merged = np.sort(merged, kind="stable")      # P sorted runs: timsort merges them
    sizes = gather_row(comm, None if held.failed else [len(merged)], np.int64, 1, held)[:, 0]
    result = Distribution([BlockMap(n_total, P, bounds=np.concatenate([[0], np.cumsum(sizes)]))],
                          comm)
    out = (result, Parts(p.info.with_shape(merged.shape), merged))
    if indices:
        out += (Parts.of_array(moved_idx),)
    return out


def _all_samples(comm, values, gidx, dtype, held):
    """Every rank's samples (``_samples``) on every rank: values, weights,
    global indices (one gather through the transport; O(P) each).  Where
    ``held`` failed here: none from this rank, and every rank raises."""
    with held:
        if not held.failed:
            sample = _samples(values, gidx)
            route = Route.gather(comm, np.arange(len(sample[0])))
    if held.failed:                         # stand-ins of the same kinds: nothing to send
        route, sample = Route.nothing(comm), (np.zeros(0, dtype), np.zeros(0),
                                              np.zeros(0, np.int64))
    got = move(route, *[Parts.of_array(x) for x in sample], held=held, most=SAMPLES)
    return tuple(g.values for g in got)


def _samples(values, gidx):
    """Regular samples of this rank's sorted values, the number of values
    each stands for, and their global indices (zeros when not needed)."""
    n = len(values)
    k = min(n, SAMPLES)
    if k == 0:
        z = np.zeros(0, np.int64)
        return values[:0], np.zeros(0, np.float64), z
    at = ((2 * np.arange(k) + 1) * n) // (2 * k)
    g = gidx[at] if gidx is not None else np.zeros(k, np.int64)
    return values[at], np.full(k, n / k), g


def _heavy(values, weights, share) -> bool:
    """Whether one value stands for half a rank's share or more."""
    if not len(values):
        return False
    _, inverse = np.unique(values, return_inverse=True)
    return bool(np.bincount(inverse.ravel(), weights=weights).max() >= share / 2) and share > 1


def _cuts(values, gidx, s_values, s_weights, s_gidx, P, ties):
    """Where this rank's sorted values split among the P ranks: P - 1
    positions, the same splitters on every rank."""
    if P == 1:
        return np.zeros(0, np.int64)
    order = np.lexsort((s_gidx, s_values)) if ties else np.argsort(s_values, kind="stable")
    cum = np.cumsum(s_weights[order])
    total = cum[-1] if len(cum) else 0.0
    targets = total * np.arange(1, P) / P
    pick = np.minimum(np.searchsorted(cum, targets, side="left"), max(len(order) - 1, 0))
    if not len(order):
        return np.zeros(P - 1, np.int64)
    split_v = s_values[order][pick]
    if not ties:
        return np.searchsorted(values, split_v, side="right")
    split_g = s_gidx[order][pick]
    lo = np.searchsorted(values, split_v, side="left")
    hi = np.searchsorted(values, split_v, side="right")
    return np.array([a + np.searchsorted(gidx[a:b], g, side="right")
                     for a, b, g in zip(lo, hi, split_g)], np.int64)


def _runs(v: np.ndarray):
    """The distinct values of the sorted ``v`` and how often each occurs,
    NaNs as one value (NumPy's ``unique``), in one pass: no second sort."""
    if not v.size:
        return v[:0].copy(), np.zeros(0, np.int64)
    starts = np.empty(v.size, bool)
    starts[0] = True
    np.not_equal(v[1:], v[:-1], out=starts[1:])
    if v.dtype.kind in "fc":                         # NaN != NaN: one run all the same
        nan = np.isnan(v)
        starts[1:] &= ~(nan[1:] & nan[:-1])
    at = np.flatnonzero(starts)
    return v[at], np.diff(np.append(at, v.size)).astype(np.int64)


def unique_parts(d: Distribution, p: Parts, counts: bool = False):
    """``(Distribution, Parts)`` of the sorted unique values of any fixed
    numeric array (all of its elements, whatever its shape; NaNs count as
    one value, as NumPy's ``unique``) -- with ``counts``, a third item: the
    Parts of each value's count, distributed alike.  Collective: every
    rank's owned elements form one 1-D irregular block (one allgather of
    sizes), a sample sort orders them, each rank drops its repeats and a
    value its left neighbour already ends with, and adds the counts of that
    value on the ranks after it (one allgather of a record a rank: its first
    and last value and first count), and one more allgather of sizes gives
    the result's blocks."""
    comm = d.comm
    P = comm.size
    own = p.values[tuple(m.owned_local_slice(c) for m, c in zip(d.maps, d.coords))] \
        if d.maps else p.values[None][:int(comm.rank == 0)]     # a 0-d array's one element
    if any(m.shared_owned for m in d.maps):
        from .redistribute import move_agreed
        d, p = move_agreed(d, p, make_distribution(d.global_shape, ("b",), comm=comm))
        own = p.values
    flat = np.ascontiguousarray(own).reshape(-1)
    if P == 1:                  # nothing to exchange: NumPy's own unique (hashing, if no counts)
        got = np.unique(flat, return_counts=counts, equal_nan=True)
        mine = got[0] if counts else got
        values = Parts(p.info.with_shape(mine.shape), mine)
        result = Distribution([BlockMap(len(mine), 1)], comm)
        return (result, values, Parts.of_array(got[1].astype(np.int64, copy=False))) \
            if counts else (result, values)
    sizes = gather_row(comm, [flat.size], np.int64, 1)[:, 0]
    line = Distribution([BlockMap(int(sizes.sum()), P, bounds=np.concatenate([[0], np.cumsum(sizes)]))],
                        comm)
    sd, sp = sort_parts(line, Parts(p.info.with_shape(flat.shape), flat))
    dt = sp.values.dtype
    # each rank's count of distinct values, its first value's count, its
    # first and last value: one record a rank, in one allgather
    record = np.dtype([("has", np.int64), ("first_count", np.int64), ("ends", dt, (2,))])
    mine = cnt = row = None
    with Held(STEP) as held:
        mine, cnt = _runs(sp.values)
        row = np.zeros(1, record)
        row["has"] = len(mine)
        if len(mine):
            row["first_count"], row["ends"] = cnt[0], (mine[0], mine[-1])
    got = gather_row(comm, row, record, 1, held)[:, 0]
    has, first_count, ends = got["has"], got["first_count"], got["ends"]

    def same(a, b):                                 # NaN == NaN here
        return a == b or (a != a and b != b)
    with held:
        if len(mine):
            cnt = cnt.astype(np.int64)
            for q in range(comm.rank + 1, P):       # my last value, continued after me
                if not has[q]:
                    continue
                if not same(ends[q, 0], mine[-1]):
                    break
                cnt[-1] += first_count[q]
                if has[q] > 1:
                    break
            before = [q for q in range(comm.rank) if has[q]]
            if before and same(mine[0], ends[before[-1], 1]):    # counted where it starts
                mine, cnt = mine[1:], cnt[1:]
    sizes = gather_row(comm, None if held.failed else [len(mine)], np.int64, 1, held)[:, 0]
    result = Distribution([BlockMap(int(sizes.sum()), P,
                                    bounds=np.concatenate([[0], np.cumsum(sizes)]))], comm)
    values = Parts(p.info.with_shape(mine.shape), mine)
    if counts:
        return result, values, Parts.of_array(np.ascontiguousarray(cnt, np.int64))
    return result, values
