"""One rank's mistake is every rank's error: what it costs and how it holds.

    .venv/bin/python benchmarks/robustness.py            # spawns mpiexec -n 2, 3 and 4
    .venv/bin/python benchmarks/robustness.py --quick    # 10x fewer iterations

1. the agreement every collective entry point makes (one allreduce of 9
   int64 after hashing the arguments): its cost per call on 2 and 4 ranks
   against a bare ``Allreduce`` of the same 9 int64 -- target < 20 us on 2
   ranks (one per core; 4 ranks oversubscribe the 2 cores, where the bare
   allreduce alone costs more, so that figure is INFO);
2. resource hygiene: 10^4 calls of each of 24 operations (10^3 for save and
   load) on 2 ranks; growth of the MPI datatype, communicator, group,
   request and op handles, file descriptors and threads -- target 0;
3. the DAP fuzzer of tests/dap_fuzz.py: 10^4 examples with one rank's dim
   dict or buffer mutated, on 2, 3 and 4 ranks, each against the model of
   the spec, under a watchdog -- target 0 hangs, crashes, wrong results,
   different errors per rank, valid exports refused or invalid ones accepted;
4. the API sweep of tests/test_one_rank_differs.py (every collective entry
   point with one rank's argument different or bad) on 2, 3 and 4 ranks --
   target: the same error on every rank, every case.

Always exits 0; missed targets print FAIL.
"""
from __future__ import annotations

import collections
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import _harness  # noqa: E402
from _harness import COMM, P, say, verdict  # noqa: E402

QUICK = "--quick" in sys.argv


def agreement_cost():
    from xdap.agreement import agreement
    buf, out = np.zeros(9, np.int64), np.empty(9, np.int64)

    def bare():
        COMM.Allreduce(buf, out, op=MPI.MIN)

    def agreed():
        with agreement(COMM, "benchmark") as ag:
            ag.same("root", 0)
            ag.same("method", "auto")
    n = 2000 if QUICK else 20000
    best = {}
    for name, f in (("bare", bare), ("agreed", agreed)) * 2:
        COMM.Barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        t = COMM.allreduce((time.perf_counter() - t0) / n, op=MPI.MAX)
        best[name] = min(best.get(name, t), t)
    us = {k: 1e6 * v for k, v in best.items()}
    say(f"1. agreement on {P} ranks: {us['agreed']:.1f} us per call (2 arguments compared); "
        f"bare Allreduce of 9 int64 {us['bare']:.1f} us")
    if P == 2:
        say(f"RESULT agreement_us_2_ranks={us['agreed']:.1f} (bare allreduce {us['bare']:.1f} us; "
            f"target < 20) {verdict(us['agreed'] < 20)}")
    else:
        say(f"RESULT agreement_us_{P}_ranks={us['agreed']:.1f} (bare allreduce {us['bare']:.1f} "
            f"us; {P} ranks on 2 cores) INFO")


def hygiene():
    from resource_ops import growth, operations
    ops = operations(COMM)
    worst = collections.Counter()
    t0 = time.perf_counter()
    for name, op in sorted(ops.items()):
        n = (100 if QUICK else 1000) if name in ("save", "load") else (1000 if QUICK else 10000)
        grew = growth(COMM, op, n)
        for k, v in grew.items():
            worst[k] = max(worst[k], v)
        if any(grew.values()):
            say(f"   {name}: grew {grew}")
    say(f"2. resource hygiene on {P} ranks: {len(ops)} operations x "
        f"{1000 if QUICK else 10000} calls ({100 if QUICK else 1000} for save/load), "
        f"{time.perf_counter() - t0:.0f} s; largest growth {dict(worst)}")
    say(f"RESULT resource_growth={sum(worst.values())} (handles, descriptors, threads added over "
        f"the calls; target 0) {verdict(sum(worst.values()) == 0)}")


def fuzz():
    from hypothesis import HealthCheck, given, settings
    from dap_fuzz import examples, run
    from helpers import watchdog
    n = 1000 if QUICK else 10000
    outcomes = collections.Counter()
    first_bad = []
    t0 = time.perf_counter()

    @settings(derandomize=True, database=None, max_examples=n, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(P))
    def check(ex):
        o = run(COMM, ex, watchdog)
        outcomes[o] += 1
        if o not in ("accepted", "refused") and not first_bad:
            first_bad.append(repr(ex)[:300])
    check()
    bad = sum(v for k, v in outcomes.items() if k not in ("accepted", "refused"))
    say(f"3. DAP fuzzer on {P} ranks: {sum(outcomes.values())} examples in "
        f"{time.perf_counter() - t0:.0f} s: {dict(outcomes)}")
    for b in first_bad:
        say(f"   first failure: {b}")
    say(f"RESULT fuzz_failures_{P}_ranks={bad} ({sum(outcomes.values())} examples: "
        f"{outcomes['accepted']} valid imported as the model says, {outcomes['refused']} "
        f"invalid refused alike on every rank; target 0) {verdict(bad == 0)}")


def sweep():
    import test_one_rank_differs as t
    ok, failed = 0, []
    for name in sorted(t.CASES):
        try:
            t.expect_same_error(COMM, lambda: t.CASES[name](COMM))
            ok += 1
        except AssertionError as e:
            failed.append(f"{name}: {e}"[:200])
    say(f"4. API sweep on {P} ranks: {ok} of {len(t.CASES)} entry-point cases give the same "
        "error on every rank")
    for f in failed:
        say(f"   {f}")
    say(f"RESULT sweep_failures_{P}_ranks={len(failed)} ({len(t.CASES)} cases; target 0) "
        f"{verdict(not failed)}")


def main():
    if MPI.COMM_WORLD.size == 1 and os.environ.get(_harness.CHILD_FLAG) != "1":
        from xdap.launcher import clean_environment, mpiexec_command
        env = clean_environment(**{_harness.CHILD_FLAG: "1"})
        for n in (2, 3, 4):
            r = subprocess.run(mpiexec_command(n) + [sys.executable, os.path.abspath(__file__)]
                               + sys.argv[1:], env=env, timeout=7200)
            if r.returncode:
                print(f"(mpiexec -n {n} exited with {r.returncode})", flush=True)
        return
    if P in (2, 4):
        agreement_cost()
    if P == 2:
        hygiene()
    fuzz()
    sweep()


if __name__ == "__main__":
    _harness.run_main(main)
