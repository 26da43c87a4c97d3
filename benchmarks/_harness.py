"""What every benchmark script shares: the communicator, printing on rank 0,
interleaved timing, verdicts, and relaunching itself under mpiexec.

Not a benchmark itself (``make bench`` skips files starting with ``_``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback

import numpy as np
from mpi4py import MPI

# Run directly: one process on COMM_SELF; under mpiexec: all ranks.
COMM = MPI.COMM_WORLD if MPI.COMM_WORLD.size > 1 else MPI.COMM_SELF
RANK, P = COMM.rank, COMM.size
MiB = 1 << 20
CHILD_FLAG = "XDAP_BENCH_CHILD"


def say(*a, **k):
    if RANK == 0:
        print(*a, **k, flush=True)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def bench(fns, budget: float = 0.6, warmup: int = 3, min_reps: int = 10,
          max_reps: int = 2000, block: int = 5, collective: bool = True,
          rewarm: bool = False):
    """Median and min seconds of each of ``fns``, timed INTERLEAVED in blocks
    of ``block`` calls (f0, f1, ..., f0 again, ...) so that slow drifts and
    scheduler noise (4 ranks on 2 cores) hit every case alike.

    ``collective``: a barrier before each call (required when the calls
    communicate).  ``rewarm``: one untimed call before each block, to refill
    caches after the other cases.  Returns ``(medians, minima, reps)``; under
    MPI the largest per-rank figure, so every rank reports the same.
    """
    for fn in fns:
        for _ in range(warmup):
            if collective:
                COMM.Barrier()
            fn()
    t0 = time.perf_counter()                 # a probe sizes the run ...
    for fn in fns:
        if collective:
            COMM.Barrier()
        fn()
    probe = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    reps = int(min(max_reps, max(min_reps, budget / max(probe, 1e-7))))
    reps = COMM.bcast(-(-reps // block) * block, root=0)   # ... and every rank agrees on it
    times = np.empty((len(fns), reps))
    for i in range(0, reps, block):
        for j, fn in enumerate(fns):
            if rewarm:
                fn()
            for k in range(i, i + block):
                if collective:
                    COMM.Barrier()
                t0 = time.perf_counter()
                fn()
                times[j, k] = time.perf_counter() - t0
    med = np.max(COMM.allgather(np.median(times, axis=1)), axis=0)
    low = np.max(COMM.allgather(times.min(axis=1)), axis=0)
    return med, low, reps


def timed(fn, comm=None):
    """``(seconds, fn())`` of one collective call, barrier to barrier, the
    slowest rank's time (the same on every rank)."""
    comm = COMM if comm is None else comm
    comm.Barrier()
    t0 = time.perf_counter()
    out = fn()
    comm.Barrier()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out


def ragged_partition(nvalues: int, mean_len: int = 10, seed: int = 7):
    """A ``var * var * float64`` DistArray with one partition of exactly
    ``nvalues`` leaves per rank (rows of mean length ``mean_len``, block rows),
    wrapped without copying. Returns ``(array, values, nrows)``."""
    from xdap.array import DistArray
    from xdap.parts import Parts, container
    from xdap.distribution import Distribution
    from xdap.maps import BlockMap
    from xdap.types import type_info
    nrows = nvalues // mean_len
    rng = np.random.default_rng(seed + RANK)
    lengths = np.full(nrows, mean_len, np.int64)
    k = nrows // 2                  # ragged, but exactly nvalues leaves
    delta = rng.integers(0, mean_len + 1, k)
    lengths[:k] -= delta
    lengths[k:2 * k] += delta
    values = rng.standard_normal(nvalues)
    offsets = (np.array([0, nrows], np.int32),
               np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    local = container(Parts(type_info("var * var * float64"), values, None, offsets))
    return DistArray(Distribution([BlockMap(nrows * P, P)], COMM), local), values, nrows


def relaunch(script: str, ranks: int, timeout: float = 600, env=None) -> bool:
    """When ``script`` runs as a single process, run it again under
    ``mpiexec -n ranks`` (the venv's) and return True; return False inside
    that launch (or when already started under mpiexec); ``env``: variables
    the launch sets.  A benchmark reports,
    it never fails its caller, so the launch's exit status is only printed."""
    if MPI.COMM_WORLD.size > 1 or os.environ.get(CHILD_FLAG) == "1":
        return False
    from xdap.launcher import clean_environment, mpiexec_command
    env = clean_environment(**{CHILD_FLAG: "1"}, **(env or {}))
    r = subprocess.run(mpiexec_command(ranks) + [sys.executable, os.path.abspath(script)]
                       + sys.argv[1:],
                       env=env, timeout=timeout)
    if r.returncode:
        print(f"(mpiexec -n {ranks} {os.path.basename(script)} exited with {r.returncode})")
    return True


def run_main(main) -> None:
    """Run ``main()``; on an exception print it and abort every rank (a
    benchmark must not leave the other ranks waiting in a collective)."""
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.stdout.flush()
        if P > 1:
            COMM.Abort(1)
        sys.exit(1)
    sys.exit(0)
