"""Distributed selection: the values at given positions of the sorted
global data (order statistics: a median, percentiles) without sorting or
moving the data.

Each rank holds some of the values (any number, none included). Rounds of
histograms narrow each wanted position down to the values of one bin:

1. two ``Allreduce``s of the extremes (``extremes``, which histogram shares);
2. each round, every rank counts its candidates of each wanted position in
   ``BINS`` equal bins between their extremes, one ``Allreduce`` sums the
   counts, and each position keeps the bin that holds it (and the number of
   values below that bin) -- a bin holds ~1/BINS of the candidates, so
   10^7 values a rank take two or three rounds;
3. when at most ``GATHER`` candidates remain (or all are equal), one
   ``Allgatherv`` brings them to every rank, which sorts them and reads the
   answer.

A value's bin comes from one formula every rank applies alike, so the
counts and the candidates agree. Memory: one pass's bin numbers over this
rank's values (8 bytes a value), then ~1/BINS of them; messages O(BINS)
per round. Integers are binned as float64 and answered exactly.

>>> import numpy as np
>>> from mpi4py import MPI
>>> select(MPI.COMM_SELF, np.array([5.0, 1.0, 4.0, 2.0, 3.0]), [0, 2, 4]).tolist()
[1.0, 3.0, 5.0]
"""
from __future__ import annotations

import numpy as np

from mpi4py.util.dtlib import from_numpy_dtype

from ..comm import MPI
from .reduce import allreduce

__all__ = ["select", "extremes", "BINS", "GATHER"]

BINS = 256          # bins a round: one Allreduce of BINS counts a wanted position
GATHER = 4096       # candidates gathered to every rank once this few remain
ROUNDS = 300        # a bound (float64's range is 2**2098: 8 bits a round); then gather


def extremes(comm, v):
    """(min, max) over every rank's ``v``, NumPy scalars of its dtype (exact
    for any integer; a NaN wins, as in NumPy; a rank may hold none): two
    Allreduces."""
    dt = v.dtype
    big, small = (np.inf, -np.inf) if dt.kind == "f" else (np.iinfo(dt).max, np.iinfo(dt).min)
    lo = allreduce(comm, np.array([np.min(v) if len(v) else big], dt), "min")[0]
    hi = allreduce(comm, np.array([np.max(v) if len(v) else small], dt), "max")[0]
    return lo, hi


def _bins(x, lo, hi):
    """The bin (0..BINS-1) of each value of ``x`` between ``lo`` and ``hi``:
    one formula, so every rank bins alike."""
    lo, hi = float(lo), float(hi)
    if hi <= lo:              # integers beyond 2**53 may look equal as floats
        return np.zeros(len(x), np.intp)
    scale = BINS / (hi - lo)
    if not np.isfinite(scale):
        scale = np.finfo(np.float64).max
    b = (x.astype(np.float64, copy=False) - lo) * scale
    np.clip(b, 0, BINS - 1, out=b)
    return b.astype(np.intp)


def select(comm, values, ks, weights=None):
    """The values at the 0-based positions ``ks`` of all ranks' ``values``
    sorted (a NumPy array of ``values``' dtype, in the order of ``ks``), on
    every rank. ``values``: this rank's, 1-D, real, no NaN; ``ks``: the same
    on every rank, each in ``[0, total)``. Collective.

    With ``weights`` (this rank's, one a value, >= 0, not all 0), ``ks`` are
    fractions ``q`` in [0, 1] and each answer is the first sorted value
    whose cumulative weight reaches ``q`` of the total, and is above 0
    (NumPy's weighted ``inverted_cdf``): the same rounds, summing weights
    as well as counts.

    >>> select(MPI.COMM_SELF, np.array([3.0, 1.0, 2.0]), [0.5, 1.0],
    ...        weights=np.array([0.0, 1.0, 3.0])).tolist()
    [2.0, 2.0]
    """
    values = np.asarray(values).reshape(-1)
    weighted = weights is not None
    if weighted:
        weights = np.asarray(weights, np.float64).reshape(-1)
        total = float(allreduce(comm, np.array([weights.sum()]), "sum")[0])
        ks = [float(k) for k in ks]
    else:
        ks = [int(k) for k in ks]
    lo, hi = extremes(comm, values)
    # the positions still to find, by their candidates:
    # (lo, hi, below: the count or weight under them, this rank's, their weights, positions)
    groups = [(lo, hi, 0, values, weights, sorted(set(ks)))]
    answers = {}
    for round_ in range(ROUNDS + 1):
        sizes = np.array([len(g[3]) for g in groups], np.int64)
        comm.Allreduce(MPI.IN_PLACE, sizes, op=MPI.SUM)
        left = []
        for (g_lo, g_hi, below, cand, w, wanted), size in zip(groups, sizes):
            if g_lo == g_hi:                          # every candidate is this value
                answers.update((k, g_lo) for k in wanted)
            elif size <= GATHER or round_ == ROUNDS:
                if not weighted:
                    everyone = np.sort(_allgather(comm, cand))
                    answers.update((k, everyone[k - below]) for k in wanted)
                    continue
                everyone, their = _allgather(comm, cand), _allgather(comm, w)
                order = np.argsort(everyone, kind="stable")
                cdf = (below + np.cumsum(their[order])) / total
                cdf[cdf == 0] = -1            # leading zero weights never reach q = 0
                at = np.minimum(np.searchsorted(cdf, wanted, side="left"), len(cdf) - 1)
                answers.update((k, everyone[order[i]]) for k, i in zip(wanted, at))
            else:
                left.append((g_lo, g_hi, below, cand, w, wanted))
        if not left:
            break
        bins = [_bins(g[3], g[0], g[1]) for g in left]
        counts = np.concatenate([np.bincount(b, minlength=BINS) for b in bins])
        if weighted:                  # the weights of the bins, after their counts
            counts = np.concatenate([counts.astype(np.float64)] +
                                    [np.bincount(b, g[4], minlength=BINS)
                                     for b, g in zip(bins, left)])
        comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
        groups = []
        for j, (_, _, below, cand, w, wanted) in enumerate(left):
            c = counts[j * BINS:(j + 1) * BINS]
            by_bin: dict = {}
            if weighted:              # the first bin with values whose cdf reaches q
                mass = counts[(len(left) + j) * BINS:(len(left) + j + 1) * BINS]
                ends = below + np.cumsum(mass)
                cdf = np.where((c > 0) & (ends > 0), ends / total, -1.0)
                top = int(np.nonzero(c > 0)[0][-1])
                for k in wanted:
                    reach = np.nonzero(cdf >= k)[0]
                    by_bin.setdefault(int(reach[0]) if len(reach) else top, []).append(k)
            else:
                ends = below + np.cumsum(c)
                mass = c
                for k in wanted:
                    by_bin.setdefault(int(np.searchsorted(ends, k, side="right")),
                                      []).append(k)
            for b, in_bin in sorted(by_bin.items()):
                keep = bins[j] == b
                mine = cand[keep]
                b_lo, b_hi = extremes(comm, mine)    # the bin's values, not its edges
                groups.append((b_lo, b_hi, ends[b] - mass[b], mine,
                               w[keep] if weighted else None, in_bin))
    return np.array([answers[k] for k in ks], values.dtype)


def _allgather(comm, cand):
    """Every rank's ``cand`` on every rank (one Allgatherv of buffers)."""
    cand = np.ascontiguousarray(cand)
    counts = np.empty(comm.Get_size(), np.int64)
    comm.Allgather(np.array([len(cand)], np.int64), counts)
    out = np.empty(int(counts.sum()), cand.dtype)
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
    comm.Allgatherv(cand, [out, counts, displs, from_numpy_dtype(cand.dtype)])
    return out
