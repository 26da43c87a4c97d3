"""Data born distributed at scale: memory and time against hand-written mpi4py.

    .venv/bin/python benchmarks/scale.py     # spawns mpiexec -n 4, then -n 2 and -n 4 (weak scaling)

On 4 ranks, 10^7 float64 (a quarter per rank):

1. unstructured import: every rank's DAP dict (its values and its global
   indices, a random permutation's quarter) through ``xdap.from_distarray``.
   Extra resident memory per rank after the import, against the local share
   (values + indices): target <= 2x.  Peak RSS per rank is reported too
   (``/proc/self/clear_refs`` resets the high-water mark first).
2. the first ``'u' -> 'b'`` redistribution (plan + move, caches cleared
   every time) against a hand-written mpi4py version: owners by integer
   division, argsort, one Alltoall of counts, one Alltoallv of indices and
   one of values, placed by index -- target <= 1.5x; repeated (the plan
   cached) against the same with the permutation kept and buffers reused:
   one Alltoallv and the placement -- target <= 1.0x.
3. ``from_global(x, root=0)`` against ``comm.Scatterv`` of the same bytes,
   ``to_global(root=0)`` against ``comm.Gatherv``: target <= 1.5x each.
4. ``migrate`` of 10^6 ragged rows (~10 values each) to random ranks
   against a hand-written Alltoallv of counts, row lengths and values
   (rows packed by destination with NumPy): target <= 1.5x.

Then weak scaling: the unstructured import and the first redistribution
with N and 2N elements on 2 and on 4 ranks, time and memory per rank --
memory per rank follows N/P.

Figures: median (min) of interleaved repetitions after warm-up, each after
a barrier, max over ranks.  Always exits 0; missed targets print FAIL.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402
from _harness import COMM, P, RANK, run_main, say, verdict  # noqa: E402

import xdap  # noqa: E402
from xdap.heap import release_scratch  # noqa: E402

N = 10 ** 7
MiB = 1 << 20


# -- memory ------------------------------------------------------------------------

def rss() -> float:
    """Resident set size now, MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MiB


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                               # reset VmHWM to the current RSS


def peak() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worst(x) -> float:
    return COMM.allreduce(x, op=MPI.MAX)


def clear_caches() -> None:
    """What a first call finds: no plan, no executor, no directory."""
    xdap.plans.clear(COMM)


def bench(fns, budget=2.0):
    med, low, _ = _harness.bench(fns, budget=budget, warmup=1, max_reps=200, block=2)
    return med, low


def ms(t) -> str:
    return f"{1e3 * t:8.1f} ms"


# -- the pieces ------------------------------------------------------------------------

def my_indices(n, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    return np.array_split(perm, P)[RANK].copy()      # not a view: perm is freed


def dap_dict(values, indices, n):
    return {"__version__": "0.10.0", "buffer": values,
            "dim_data": ({"dist_type": "u", "size": n, "proc_grid_size": P,
                          "proc_grid_rank": RANK, "indices": indices},)}


def unstructured_import(n):
    """(import seconds, local share MiB, extra MiB after, peak extra MiB, array)."""
    idx = my_indices(n)
    values = idx.astype(np.float64) * 0.5
    share = (values.nbytes + idx.nbytes) / MiB
    d = dap_dict(values, idx, n)
    clear_caches()
    settle()
    before = rss()
    reset_peak()
    t0 = time.perf_counter()
    a = xdap.from_distarray(d, comm=COMM)
    took = time.perf_counter() - t0
    after, top = rss(), peak()
    return worst(took), share, worst(after - before), worst(top - before), a


class HandWritten:
    """'u' -> balanced blocks in mpi4py: owners by division, one Alltoall of
    counts, Alltoallv of indices and values, placed by index."""

    def __init__(self, idx, n):
        self.idx, self.n = idx, n
        q, r = divmod(n, P)
        self.cut = r * (q + 1)
        self.q, self.r = q, r
        self.lo = min(RANK, r) * (q + 1) + max(RANK - r, 0) * q
        self.local = q + (RANK < r)
        self.plan = None

    def owner(self, g):
        return np.where(g < self.cut, g // (self.q + 1), (g - self.cut) // max(self.q, 1) + self.r)

    def first(self, values):
        owner = self.owner(self.idx)
        order = np.argsort(owner, kind="stable")
        sc = np.bincount(owner, minlength=P).astype(np.int64)
        rc = np.empty(P, np.int64)
        COMM.Alltoall(sc, rc)
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        ids = np.empty(int(rc.sum()), np.int64)
        COMM.Alltoallv([self.idx[order], (sc, sd), MPI.INT64_T], [ids, (rc, rd), MPI.INT64_T])
        got = np.empty(int(rc.sum()))
        COMM.Alltoallv([values[order], (sc, sd), MPI.DOUBLE], [got, (rc, rd), MPI.DOUBLE])
        out = np.empty(self.local)
        out[ids - self.lo] = got
        self.plan = (order, sc, sd, rc, rd, ids - self.lo, np.empty(len(values)), got)
        return out

    def repeat(self, values):
        order, sc, sd, rc, rd, where, send, got = self.plan
        np.take(values, order, out=send)
        COMM.Alltoallv([send, (sc, sd), MPI.DOUBLE], [got, (rc, rd), MPI.DOUBLE])
        out = np.empty(self.local)
        out[where] = got
        return out


# -- sections ---------------------------------------------------------------------------

def section_import_and_redistribute(results):
    took, share, extra, top, a = unstructured_import(N)
    say(f"1. unstructured import of {N:.0e} float64 on {P} ranks (per rank, worst rank)")
    say(f"   local share (values + indices) {share:7.1f} MiB; import {ms(took)}")
    say(f"   extra resident after the import {extra:7.1f} MiB ({extra / share:.2f}x the share); "
        f"peak extra {top:7.1f} MiB ({top / share:.2f}x)")
    results.append(f"RESULT u_import_extra_memory={extra / share:.2f} (extra resident {extra:.1f} "
                   f"MiB per rank after from_distarray, local share {share:.1f} MiB; peak extra "
                   f"{top:.1f} MiB = {top / share:.2f}x; target <= 2) {verdict(extra <= 2 * share)}")

    idx = np.asarray(a.distribution.maps[0].global_indices(RANK))
    values = np.asarray(a.parts.values)
    hand = HandWritten(idx, N)
    b = a.redistribute(dist=("b",))
    assert np.array_equal(np.asarray(b.parts.values), hand.first(values))
    assert np.array_equal(hand.first(values), hand.repeat(values))

    def xdap_first():
        clear_caches()
        a.redistribute(dist=("b",))
    med, low = bench([xdap_first, lambda: hand.first(values)])
    rep_med, rep_low = bench([lambda: a.redistribute(dist=("b",)), lambda: hand.repeat(values)])
    say("2. 'u' -> 'b' redistribution (plan + move), worst rank")
    say(f"   first    xdap {ms(med[0])} ({ms(low[0]).strip()})   mpi4py {ms(med[1])} "
        f"({ms(low[1]).strip()})   ratio {med[0] / med[1]:.2f}")
    say(f"   repeated xdap {ms(rep_med[0])} ({ms(rep_low[0]).strip()})   mpi4py {ms(rep_med[1])} "
        f"({ms(rep_low[1]).strip()})   ratio {rep_med[0] / rep_med[1]:.2f}")
    results.append(f"RESULT u_to_b_first_vs_mpi4py={med[0] / med[1]:.2f} (xdap {ms(med[0]).strip()} "
                   f"/ hand-written Alltoallv {ms(med[1]).strip()}; target <= 1.5) "
                   f"{verdict(med[0] <= 1.5 * med[1])}")
    results.append(f"RESULT u_to_b_repeated_vs_mpi4py={rep_med[0] / rep_med[1]:.2f} (xdap "
                   f"{ms(rep_med[0]).strip()} / hand-written, permutation kept "
                   f"{ms(rep_med[1]).strip()}; target <= 1.0) {verdict(rep_med[0] <= rep_med[1])}")


def section_root(results):
    g = np.arange(N, dtype=np.float64) if RANK == 0 else None
    counts = np.array([len(c) for c in np.array_split(np.arange(N), P)], np.int64)
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
    mine = np.empty(counts[RANK])

    def scatterv():
        out = np.empty(counts[RANK])
        COMM.Scatterv([g, (counts, displs), MPI.DOUBLE] if RANK == 0 else None, out, root=0)
        return out
    a = xdap.from_global(g, root=0, comm=COMM)
    assert np.array_equal(np.asarray(a.parts.values), scatterv())
    med, low = bench([lambda: xdap.from_global(g, root=0, comm=COMM), scatterv])

    def gatherv():
        out = np.empty(N) if RANK == 0 else None
        COMM.Gatherv(mine, [out, (counts, displs), MPI.DOUBLE] if RANK == 0 else None, root=0)
        return out
    mine[...] = np.asarray(a.parts.values)
    got = a.to_global(root=0)
    if RANK == 0:
        assert np.array_equal(np.asarray(xdap.parts.parts(got).values), gatherv())
    else:
        gatherv()
    gmed, glow = bench([lambda: a.to_global(root=0), gatherv])
    say(f"3. whole arrays and the root, {N:.0e} float64, worst rank")
    say(f"   from_global(root=0) {ms(med[0])} ({ms(low[0]).strip()})   Scatterv {ms(med[1])} "
        f"({ms(low[1]).strip()})   ratio {med[0] / med[1]:.2f}")
    say(f"   to_global(root=0)   {ms(gmed[0])} ({ms(glow[0]).strip()})   Gatherv  {ms(gmed[1])} "
        f"({ms(glow[1]).strip()})   ratio {gmed[0] / gmed[1]:.2f}")
    results.append(f"RESULT from_global_root_vs_scatterv={med[0] / med[1]:.2f} "
                   f"({ms(med[0]).strip()} / {ms(med[1]).strip()}; target <= 1.5) "
                   f"{verdict(med[0] <= 1.5 * med[1])}")
    results.append(f"RESULT to_global_root_vs_gatherv={gmed[0] / gmed[1]:.2f} "
                   f"({ms(gmed[0]).strip()} / {ms(gmed[1]).strip()}; target <= 1.5) "
                   f"{verdict(gmed[0] <= 1.5 * gmed[1])}")


def section_migrate(results):
    rows = 10 ** 6 // P
    a, values, _ = _harness.ragged_partition(rows * 10, 10, seed=3)
    lengths = np.diff(a.parts.offsets[1]).astype(np.int64)
    dest = np.random.default_rng(RANK).integers(0, P, a.parts.nrows)
    dest[0] = RANK

    def hand():
        order = np.argsort(dest, kind="stable")
        rc = np.bincount(dest, minlength=P).astype(np.int64)
        sc_rows, rr = rc, np.empty(P, np.int64)
        COMM.Alltoall(sc_rows, rr)
        lens = lengths[order]
        starts = a.parts.offsets[1][:-1].astype(np.int64)[order]
        leaf_sc = np.bincount(dest, weights=lengths, minlength=P).astype(np.int64)
        leaf_rc = np.empty(P, np.int64)
        COMM.Alltoall(leaf_sc, leaf_rc)
        packed = values[xdap.rows.expand_ranges(starts, lens)]
        d = lambda c: np.concatenate([[0], np.cumsum(c)[:-1]])     # noqa: E731
        got_lens = np.empty(int(rr.sum()), np.int64)
        COMM.Alltoallv([lens, (sc_rows, d(sc_rows)), MPI.INT64_T],
                       [got_lens, (rr, d(rr)), MPI.INT64_T])
        got = np.empty(int(leaf_rc.sum()))
        COMM.Alltoallv([packed, (leaf_sc, d(leaf_sc)), MPI.DOUBLE],
                       [got, (leaf_rc, d(leaf_rc)), MPI.DOUBLE])
        return np.concatenate([[0], np.cumsum(got_lens)]), got

    b, _ = a.migrate(dest)
    offsets, got = hand()
    assert np.array_equal(np.asarray(b.parts.values), got)
    assert np.array_equal(b.parts.offsets[1], offsets)
    med, low = bench([lambda: a.migrate(dest), hand])
    say(f"4. migrate {rows * P:.0e} ragged rows (~10 values each) to random ranks, worst rank")
    say(f"   xdap {ms(med[0])} ({ms(low[0]).strip()})   hand-written Alltoallv {ms(med[1])} "
        f"({ms(low[1]).strip()})   ratio {med[0] / med[1]:.2f}")
    results.append(f"RESULT migrate_ragged_vs_alltoallv={med[0] / med[1]:.2f} "
                   f"({ms(med[0]).strip()} / {ms(med[1]).strip()}; target <= 1.5) "
                   f"{verdict(med[0] <= 1.5 * med[1])}")


def weak():
    """N and 2N on this launch's rank count: time and memory per rank."""
    for n in (N // 2, N):
        settle()
        took, share, extra, top, a = unstructured_import(n)
        clear_caches()
        settle()
        reset_peak()
        before = rss()
        t0 = time.perf_counter()
        b = a.redistribute(dist=("b",))
        first = worst(time.perf_counter() - t0)
        move_top = worst(peak() - before)
        say(f"   P={P}  N={n:.0e}  share {share:6.1f} MiB/rank  import {ms(took)}  "
            f"+{extra:6.1f} MiB after (peak +{top:6.1f})  first u->b {ms(first)} "
            f"(peak +{move_top:6.1f} MiB)")
        del a, b
        clear_caches()


def settle() -> None:
    """Start a measurement from a clean heap: garbage collected, freed
    pages handed back, every rank there."""
    gc.collect()
    release_scratch()
    COMM.Barrier()


def main():
    if "--weak" in sys.argv:
        weak()
        return
    if MPI.COMM_WORLD.size == 1 and os.environ.get(_harness.CHILD_FLAG) != "1":
        from xdap.launcher import clean_environment, mpiexec_command
        env = clean_environment(**{_harness.CHILD_FLAG: "1"})
        script = os.path.abspath(__file__)
        r = subprocess.run(mpiexec_command(4) + [sys.executable, script], env=env, timeout=1800)
        if r.returncode:
            print(f"(mpiexec -n 4 exited with {r.returncode})", flush=True)
        print("5. weak scaling: the import and the first 'u' -> 'b', N and 2N on 2 and 4 ranks "
              "(worst rank)", flush=True)
        for ranks in (2, 4):
            r = subprocess.run(mpiexec_command(ranks) + [sys.executable, script, "--weak"],
                               env=env, timeout=1800)
            if r.returncode:
                print(f"(mpiexec -n {ranks} exited with {r.returncode})", flush=True)
        return
    t0 = time.perf_counter()
    results = []
    section_import_and_redistribute(results)
    section_root(results)
    section_migrate(results)
    say(f"(total {time.perf_counter() - t0:.1f} s)")
    say()
    for line in results:
        say(line)


if __name__ == "__main__":
    run_main(main)
