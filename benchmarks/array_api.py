"""NumPy habits on distributed data -- slicing, masks, sort, unique -- versus
the hand-written mpi4py + NumPy equivalent, one run, ratios, on 4 ranks.

    .venv/bin/python benchmarks/array_api.py        # spawns mpiexec -n 4 itself (~1 min)

10^7 float64 in a 1-D block distribution (each rank a quarter):
  a[1000:-1000]   xdap: an irregular block, a view; by hand: the local view
                  from the rank's block bounds
  views           a[::2], reshape to (10^4, 10^3) and its transpose: views
                  of the rank's block in O(1) (NumPy's views for comparison)
  a[a > 0]        (keeps half) xdap: local selection + one allgather of
                  counts; by hand: the same
  sort            xdap.sort vs a hand-written sample sort (np.sort, 64
                  samples a rank, Allgather, searchsorted, Alltoall counts,
                  Alltoallv, np.sort of the runs): target <= 1.5x
  unique          xdap.unique_values vs the hand-written sort followed by
                  np.unique and a neighbour check: target <= 1.5x
  unique_counts   xdap.unique_counts (1000 distinct values) vs the sort,
                  np.unique with counts and the neighbours' counts merged
                  by hand: target <= 1.5x
  cumulative_prod xdap.cumulative_prod vs np.cumprod and an Exscan of the
                  ranks' products: target <= 1.5x
  argsort         xdap.argsort vs xdap.sort: target <= 1.3x (NumPy's own
                  argsort / sort on the rank's values beside it)
  concat          two arrays of N/2 joined, the first call (cold) and
                  repeated, vs one Alltoallv per input straight into the
                  rows of a fresh result (counts from the block bounds):
                  target <= 1.2x
  matmul          a row-distributed 4096 x 4096 matrix @ a vector and @ a
                  4096 x 512 matrix every rank holds (by hand: each rank's
                  rows @ it), and @ a block-distributed vector (by hand:
                  Allgatherv, then rows @ it): target <= 1.5x
Peak memory per rank (tracemalloc: NumPy's allocations) for sort.
Timing: interleaved repetitions, median, max over ranks (benchmarks/_harness.py).  Always exits 0;
a missed target prints FAIL.  On 2 cores, 4 ranks share them: ratios, not
absolute times, are the point.
"""
from __future__ import annotations

import os
import sys
import tracemalloc

import numpy as np
from mpi4py import MPI

import xdap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness                        # noqa: E402
from _harness import say               # noqa: E402

COMM = MPI.COMM_WORLD
N = 10_000_000


def bench(fns):
    """Median seconds of each fn, interleaved, the slowest rank's
    (benchmarks/_harness.py)."""
    return _harness.bench(fns, budget=1.0, max_reps=50)[0]


def hand_sample_sort(local):
    """The sample sort a good engineer writes with mpi4py and NumPy."""
    comm, P = COMM, COMM.size
    v = np.sort(local)
    k = min(len(v), 64)
    s = v[((2 * np.arange(k) + 1) * len(v)) // (2 * k)] if k else v[:0]
    counts = np.array(comm.allgather(k))
    samples = np.empty(counts.sum())
    comm.Allgatherv(s, (samples, counts))
    samples.sort()
    splitters = samples[(np.arange(1, P) * len(samples)) // P]
    cuts = np.searchsorted(v, splitters, side="right")
    send = np.diff(np.concatenate([[0], cuts, [len(v)]]))
    recv = np.empty(P, np.int64)
    comm.Alltoall(send, recv)
    out = np.empty(recv.sum())
    comm.Alltoallv((v, send), (out, recv))
    return np.sort(out, kind="stable")


def hand_unique(local):
    v = np.unique(hand_sample_sort(local))
    last = COMM.allgather(v[-1] if len(v) else None)
    before = [x for x in last[:COMM.rank] if x is not None]
    if len(v) and before and v[0] == before[-1]:
        v = v[1:]
    return v


def hand_unique_counts(local):
    """By hand: the sample sort, np.unique with counts, and a value split
    between ranks given to the first rank holding it (one allgather of each
    rank's first and last value and their counts)."""
    v, c = np.unique(hand_sample_sort(local), return_counts=True)
    ends = COMM.allgather((v[0], c[0], v[-1]) if len(v) else None)
    me = COMM.rank
    if len(v):
        for q in range(me + 1, COMM.size):          # my last value continued after me
            if ends[q] is None:
                continue
            if ends[q][0] != v[-1]:
                break
            c[-1] += ends[q][1]
            if ends[q][2] != v[-1]:
                break
        earlier = [e for e in ends[:me] if e is not None]
        if earlier and v[0] == earlier[-1][2]:       # my first value belongs before me
            v, c = v[1:], c[1:]
    return v, c


def check_sorted(v):
    """Every rank's slice sorted, the slices in order, nothing lost."""
    ends = COMM.allgather((v[0], v[-1]) if len(v) else None)
    ends = [e for e in ends if e is not None]
    assert np.all(v[1:] >= v[:-1]) and all(a[1] <= b[0] for a, b in zip(ends, ends[1:]))
    assert COMM.allreduce(len(v)) == N


def peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return max(COMM.allgather(top)) / 2**20


def line(what, t_x, t_h, target=None):
    r = t_x / t_h
    judged = "" if target is None else (" ok" if r <= target else " FAIL")
    say(f"  {what:14s} xdap {t_x*1e3:9.3f} ms   by hand {t_h*1e3:9.3f} ms   ratio {r:5.2f}"
        + (f" (target <= {target}){judged}" if target else ""))


def child():
    P, r = COMM.size, COMM.rank
    rng = np.random.default_rng(10 + r)
    d = xdap.make_distribution((N,), ("b",), comm=COMM)
    lo, hi = d.maps[0].owned_range(d.coords[0])
    local = rng.standard_normal(hi - lo)
    a = xdap.from_local(local, comm=COMM)
    say(f"{P} ranks, {N:.0e} float64 in blocks of {N // P}")

    def hand_slice():
        start, stop = max(1000, lo), min(N - 1000, hi)
        return local[max(start - lo, 0):max(stop - lo, 0)]
    line("a[1000:-1000]", *bench([lambda: a[1000:-1000], hand_slice]))
    views_section(a, local, lo)

    def hand_mask():
        sel = local[local > 0]
        COMM.allgather(len(sel))
        return sel
    line("a[a > 0]", *bench([lambda: a[a > 0], hand_mask]))
    t = bench([lambda: xdap.sort(a), lambda: hand_sample_sort(local)])
    line("sort", *t, 1.5)
    check_sorted(xdap.sort(a).local_numpy())
    check_sorted(hand_sample_sort(local))
    m_x, m_h = peak(lambda: xdap.sort(a)), peak(lambda: hand_sample_sort(local))
    say(f"  {'':14s} peak NumPy memory per rank: xdap {m_x:.0f} MiB, by hand {m_h:.0f} MiB "
        f"(the data: {local.nbytes / 2**20:.0f} MiB)")
    argsort_section(a, local)
    concat_section(np.random.default_rng(20 + r))
    matmul_section(np.random.default_rng(7))        # one seed: v and B are every rank's
    ints = xdap.from_local(rng.integers(0, 10**6, hi - lo).astype(np.float64), comm=COMM)
    raw = ints.local_numpy()
    line("unique", *bench([lambda: xdap.unique_values(ints), lambda: hand_unique(raw)]), 1.5)
    few = xdap.from_local(rng.integers(0, 1000, hi - lo).astype(np.float64), comm=COMM)
    raw_few = few.local_numpy()
    v_x, c_x = xdap.unique_counts(few)
    v_h, c_h = hand_unique_counts(raw_few)
    assert np.array_equal(np.concatenate(COMM.allgather(c_x.local_numpy())),
                          np.concatenate(COMM.allgather(c_h)))
    line("unique_counts", *bench([lambda: xdap.unique_counts(few),
                                  lambda: hand_unique_counts(raw_few)]), 1.5)
    near = 1.0 + 1e-9 * local
    b = xdap.from_local(near, comm=COMM)

    def hand_cumprod():
        run = np.cumprod(near)
        before = COMM.exscan(run[-1] if len(run) else 1.0, op=MPI.PROD)
        if COMM.rank:
            run *= before
        return run
    np.testing.assert_allclose(xdap.cumulative_prod(b).local_numpy(), hand_cumprod(), rtol=1e-12)
    line("cumulative_prod", *bench([lambda: xdap.cumulative_prod(b), hand_cumprod]), 1.5)


def views_section(a, local, lo):
    """Views cost a view: ``a[::2]``, ``reshape`` of the 10^7 line into
    (10^4, 10^3) (each rank's block is whole rows) and the transpose of
    that, against NumPy's views of the rank's block -- O(1), no copy; what
    xdap adds is its key's or shape's agreement (``a.T`` agrees nothing)."""
    rows = N // 1000
    m = xdap.reshape(a, (rows, 1000))
    assert np.shares_memory(m.local_numpy(), local) and np.shares_memory(m.T.local_numpy(), local)
    assert np.shares_memory(a[::2].local_numpy(), local)
    block = local.reshape(-1, 1000)
    for what, fx, fh in (("a[::2]", lambda: a[::2], lambda: local[(lo % 2)::2]),
                         ("reshape", lambda: xdap.reshape(a, (rows, 1000)),
                          lambda: local.reshape(-1, 1000)),
                         ("m.T", lambda: m.T, lambda: block.T)):
        t_x, t_h = bench([fx, fh])
        say(f"  {what:14s} xdap {t_x*1e6:9.1f} us   NumPy's view {t_h*1e6:7.2f} us   (a copy of "
            f"the block: {local.nbytes / 2**20:.0f} MiB; the views are O(1))")


def argsort_section(a, local):
    """xdap.argsort against xdap.sort (target <= 1.3x), beside NumPy's own
    np.argsort(kind="stable") / np.sort on the rank's values: the local
    index sort's cost, which a distributed argsort cannot go below."""
    t_arg, t_sort = bench([lambda: xdap.argsort(a), lambda: xdap.sort(a)])
    n_arg, n_sort = bench([lambda: np.argsort(local, kind="stable"), lambda: np.sort(local)])
    say(f"  {'argsort':14s} xdap.argsort {t_arg*1e3:9.3f} ms   xdap.sort {t_sort*1e3:9.3f} ms   "
        f"ratio {t_arg / t_sort:5.2f} (target <= 1.3){' ok' if t_arg <= 1.3 * t_sort else ' FAIL'}"
        f"; NumPy's own argsort / sort on a rank's values {n_arg / n_sort:.2f}")


def hand_concat(parts, total, P):
    """concat by hand, as a good engineer writes it: the result's block
    bounds, then per input ONE Alltoallv straight into its rows of a fresh
    result (counts from the bounds alone: blocks meet blocks)."""
    bounds = np.array([total * r // P for r in range(P + 1)])
    me = COMM.rank
    out = np.empty(bounds[me + 1] - bounds[me])
    at = 0
    for local, lo, n, d_bounds in parts:
        dst = np.clip(bounds - at, 0, n)                     # the input's rows of each rank
        send = np.diff(np.clip(dst, lo, lo + len(local)))
        src = np.asarray(d_bounds)                           # every rank's rows of this input
        mine = dst[me], dst[me + 1]
        recv = np.diff(np.clip(src, *mine))
        start = at + mine[0] - bounds[me]
        COMM.Alltoallv([local, send], [out[start:start + recv.sum()], recv])
        at += n
    return out


def concat_section(rng):
    """concat of two arrays of N/2 float64 in blocks: the first call (cold:
    plans made) and repeated, against ``hand_concat``; target <= 1.2x."""
    import time
    P = COMM.size
    half = N // 2
    xs = [xdap.from_local(rng.standard_normal(half // P + (r < half % P)), comm=COMM)
          for r in (COMM.rank, COMM.rank)]
    parts = [(x.local_numpy(), int(np.asarray(x.distribution.global_indices(0))[0])
              if x.local_numpy().size else 0, half, x.distribution.maps[0].bounds) for x in xs]
    want = hand_concat(parts, 2 * half, P)
    assert np.array_equal(xdap.concat(xs).local_numpy(), want)

    def cold(f):
        """f's first call: no plan kept (cleared before), the median of 7."""
        times = []
        for _ in range(7):
            xdap.plans.clear(COMM)
            COMM.Barrier()
            t0 = time.perf_counter()
            f()
            times.append(COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        return float(np.median(times))
    line("concat, cold", cold(lambda: xdap.concat(xs)),
         cold(lambda: hand_concat(parts, 2 * half, P)),
         1.2)
    line("concat", *bench([lambda: xdap.concat(xs), lambda: hand_concat(parts, 2 * half, P)]),
         1.2)


def matmul_section(rng):
    """A row-distributed 4096 x 4096 matrix times a vector and a 4096 x 512
    matrix every rank holds (no collective needed: each rank multiplies its
    rows), and times a block-distributed vector (gathered: an Allgatherv by
    hand)."""
    n = 4096
    A = xdap.from_function(lambda i, j: np.sin(i * 0.001 + j * 0.002), (n, n), comm=COMM)
    rows = A.local_numpy()
    v = rng.standard_normal(n)
    B = rng.standard_normal((n, 512))
    line("A @ v", *bench([lambda: A @ v, lambda: rows @ v]), 1.5)
    line("A @ B", *bench([lambda: A @ B, lambda: rows @ B]), 1.5)
    vd = xdap.from_global(v, comm=COMM)
    mine = vd.local_numpy()
    counts = np.array(COMM.allgather(len(mine)))

    def hand():
        full = np.empty(n)
        COMM.Allgatherv(mine, (full, counts))
        return rows @ full
    line("A @ v (dist.)", *bench([lambda: A @ vd, hand]), 1.5)
    np.testing.assert_allclose((A @ vd).local_numpy(), hand(), rtol=1e-12)


if __name__ == "__main__":
    # run alone: again under mpiexec on 4 ranks (benchmarks/_harness.py)
    if not _harness.relaunch(__file__, 4):
        _harness.run_main(child)
