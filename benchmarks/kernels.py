"""xdap.kernels versus the obvious alternatives, one run, ratios.

    .venv/bin/python benchmarks/kernels.py        # 1 rank, then spawns mpiexec -n 4 itself

One rank (COMM_SELF), on the same memory for both sides:
  fixed     10^7 float64 and float32: sin, exp, add, multiply vs NumPy,
            with allocation (target <= 1.2x) and with out= (target <= 1.05x)
  ragged    10^6 rows of mean length 10 (var * var * float64): sin and add
            vs Awkward Array over the same buffers (target: faster)
  optional  10^7 ?float64 with 10% NA: add vs numpy.ma (target: faster);
            xdap ANDs the validity bitmaps, numpy.ma ORs bool masks
  overhead  one call on 10 float64 (xnd container): target < 2 us; the
            DistArray call (collective check = one allgather) is reported
Then the same fixed/ragged workloads on 4 ranks (mpiexec, each rank a
quarter, a DistArray per workload): per-rank time / one-rank time. The
machine has 2 cores: 4 ranks share them, so ~0.5, not 0.25, is the best
"scaling" it can show.

Timing: interleaved blocks of repetitions (see benchmarks/dap.py), median;
under MPI the largest per-rank median. Always exits 0; missed targets print
FAIL.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
from mpi4py import MPI
from xnd import xnd

import xdap
from xdap import kernels as K
from xdap.array import DistArray
from xdap.parts import Parts, as_container, container, parts
from xdap.distribution import Distribution
from xdap.maps import BlockMap
from xdap.types import type_info

CHILD = "--child" in sys.argv
COMM = MPI.COMM_WORLD if CHILD else MPI.COMM_SELF
RANK, P = COMM.rank, COMM.size
N = 10_000_000
ROWS = 1_000_000


def say(*a):
    if RANK == 0:
        print(*a, flush=True)


def bench(fns, reps=7, block=1, collective=False):
    """Median seconds of each fn, repetitions interleaved; MPI: max over ranks."""
    for fn in fns:
        fn()
    times = np.empty((len(fns), reps))
    for k in range(reps):
        for j, fn in enumerate(fns):
            if collective:
                COMM.Barrier()
            t0 = time.perf_counter()
            fn()
            times[j, k] = time.perf_counter() - t0
    med = np.median(times, axis=1)
    return np.max(COMM.allgather(med), axis=0) if collective else med


def verdict(ratio, target, faster=False):
    ok = ratio < target if faster else ratio <= target
    return "ok" if ok else "FAIL"


def fixed_workloads(dtype, n, rng):
    a = rng.uniform(0.1, 10, n).astype(dtype)
    b = rng.uniform(0.1, 10, n).astype(dtype)
    return a, b


def run_fixed():
    rng = np.random.default_rng(0)
    say(f"fixed, {N:.0e} values, ratio = xdap time / numpy time (alloc target <= 1.2, out= <= 1.05)")
    for dtype in ("float64", "float32"):
        a, b = fixed_workloads(dtype, N, rng)
        X, Y = as_container(a), as_container(b)           # zero-copy views of a, b
        o = np.empty_like(a)
        O = as_container(o)
        cases = [("sin", K.sin, np.sin, 1), ("exp", K.exp, np.exp, 1),
                 ("add", K.add, np.add, 2), ("multiply", K.multiply, np.multiply, 2)]
        for name, kf, nf, arity in cases:
            xa = (X, Y)[:arity]
            na = (a, b)[:arity]
            t = bench([lambda: kf(*xa), lambda: nf(*na),
                       lambda: kf(*xa, out=O), lambda: nf(*na, out=o)])
            r1, r2 = t[0] / t[1], t[2] / t[3]
            say(f"  {name:9s}{dtype:8s} alloc {t[0]*1e3:7.2f} ms vs {t[1]*1e3:7.2f} ms  "
                f"ratio {r1:5.2f} {verdict(r1, 1.2)} | out= {t[2]*1e3:7.2f} vs {t[3]*1e3:7.2f} ms "
                f"ratio {r2:5.2f} {verdict(r2, 1.05)}")


def ragged_parts(rows, rng):
    lengths = rng.poisson(10, rows).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    n = int(offsets[-1])
    return offsets, rng.uniform(0, 10, n), rng.uniform(0, 10, n)


def run_ragged():
    import awkward as ak
    rng = np.random.default_rng(1)
    offsets, v, w = ragged_parts(ROWS, rng)
    info = type_info("var * var * float64")
    outer = np.array([0, ROWS], np.int32)
    X = container(Parts(info, v, None, (outer, offsets)))
    Y = container(Parts(info, w, None, (outer, offsets)))
    # Awkward over the same buffers (no copy)
    A = ak.Array(ak.contents.ListOffsetArray(ak.index.Index32(offsets), ak.contents.NumpyArray(v)))
    B = ak.Array(ak.contents.ListOffsetArray(ak.index.Index32(offsets), ak.contents.NumpyArray(w)))
    assert np.shares_memory(parts(X).values, v)
    say(f"ragged, {ROWS:.0e} rows, {len(v):.2e} values (var * var * float64), ratio = xdap / awkward (target < 1)")
    for name, kf, af in (("sin", lambda: K.sin(X), lambda: np.sin(A)),
                         ("add", lambda: K.add(X, Y), lambda: A + B)):
        t = bench([kf, af])
        say(f"  {name:9s} {t[0]*1e3:7.2f} ms vs awkward {t[1]*1e3:7.2f} ms  ratio {t[0]/t[1]:5.2f} "
            f"{verdict(t[0] / t[1], 1.0, faster=True)}")


def run_optional():
    rng = np.random.default_rng(2)
    a = rng.uniform(0, 10, N)
    b = rng.uniform(0, 10, N)
    ma = np.ma.masked_array(a, mask=rng.random(N) < 0.1)
    mb = np.ma.masked_array(b, mask=rng.random(N) < 0.1)
    X, Y = as_container(ma), as_container(mb)            # ?float64 (bitmaps built once)
    say(f"optional, {N:.0e} ?float64, 10% NA: add, ratio = xdap / numpy.ma (target < 1)")
    t = bench([lambda: K.add(X, Y), lambda: ma + mb])
    say(f"  add       {t[0]*1e3:7.2f} ms vs numpy.ma {t[1]*1e3:7.2f} ms  ratio {t[0]/t[1]:5.2f} "
        f"{verdict(t[0] / t[1], 1.0, faster=True)}")


def run_overhead():
    x = xnd([1.0] * 10)
    a = np.ones(10)
    d = xdap.from_global(np.ones(10), comm=MPI.COMM_SELF)
    reps = 20000

    def per_call(fn):
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            best.append((time.perf_counter() - t0) / reps)
        return min(best)
    ts = {"xdap sin": per_call(lambda: K.sin(x)), "numpy sin": per_call(lambda: np.sin(a)),
          "xdap add": per_call(lambda: K.add(x, x)), "numpy add": per_call(lambda: np.add(a, a)),
          "DistArray sin": per_call(lambda: K.sin(d))}
    say("overhead, one call on 10 float64 (target < 2 us for the container call)")
    for k, v in ts.items():
        judged = verdict(v, 2e-6) if k.startswith("xdap") else ""
        say(f"  {k:14s} {v*1e6:6.2f} us {judged}")


def dist_1d(n):
    return Distribution([BlockMap(n, P)], COMM)


def run_distributed():
    """Fixed and ragged workloads on DistArrays, each rank 1/P of the data."""
    rng = np.random.default_rng(3 + RANK)
    d = dist_1d(N)
    m = d.local_shape[0]
    a, b = fixed_workloads("float64", m, rng)
    A = DistArray(d, as_container(a))
    B = DistArray(d, as_container(b))
    rows = ROWS // P + (1 if RANK < ROWS % P else 0)
    offsets, v, w = ragged_parts(rows, rng)
    info = type_info("var * var * float64")
    outer = np.array([0, rows], np.int32)
    rd = dist_1d(ROWS)
    R = DistArray(rd, container(Parts(info, v, None, (outer, offsets))))
    S = DistArray(rd, container(Parts(info, w, None, (outer, offsets))))
    out = {}
    for name, fn in (("fixed sin", lambda: K.sin(A)), ("fixed add", lambda: K.add(A, B)),
                     ("ragged sin", lambda: K.sin(R)), ("ragged add", lambda: K.add(R, S))):
        out[name] = bench([fn], collective=True)[0]
    return out


def main():
    if CHILD:
        res = run_distributed()
        if RANK == 0:
            for k, v in res.items():
                print(f"RESULT {k}={float(v)!r}", flush=True)
        return
    run_fixed()
    run_ragged()
    run_optional()
    run_overhead()
    single = run_distributed()
    say("4 ranks (mpiexec -n 4, each a quarter), per-rank time / 1-rank time "
        "(ideal 0.25; 2 cores here: ~0.5 is the floor)")
    from xdap.launcher import clean_environment, mpiexec_command
    try:
        proc = subprocess.run(mpiexec_command(4) + [sys.executable, os.path.abspath(__file__),
                                                    "--child"], env=clean_environment(),
                              capture_output=True, text=True, timeout=120)
        if proc.returncode:
            say(f"  (mpiexec -n 4 exited with {proc.returncode})")
        multi = {}
        for line in proc.stdout.splitlines():
            if line.startswith("RESULT "):
                k, v = line[7:].split("=")
                multi[k] = float(v)
        if not multi:
            say("  (mpiexec run produced no results)\n" + proc.stdout[-2000:] + proc.stderr[-2000:])
        for k, v in multi.items():
            say(f"  {k:11s} 1 rank {single[k]*1e3:7.2f} ms, 4 ranks {v*1e3:7.2f} ms per rank, "
                f"ratio {v / single[k]:5.2f}")
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"  mpiexec run failed: {e}")


if __name__ == "__main__":
    main()
