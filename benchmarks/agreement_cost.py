"""The agreement's cost on the hot path: four small calls, timed on this
code and on the code of an earlier revision, in one run, with the hand
version beside them.

    .venv/bin/python benchmarks/agreement_cost.py [REV]   # spawns mpiexec -n 1, 2 and 4

``REV`` (default ``d02117b``: the surface before every public function
declared its contract) is checked out once into ``build/agreement-before``
(a git worktree; its C extensions built with this venv).  Each round
launches the same measurement under ``mpiexec -n P`` twice -- this tree,
then that one -- and the figure is the median over the rounds, so slow
drift hits both alike.  The calls, on float64 data of 10^3 values per
rank (``a + 1``: 10):

- ``a[2:5]``: a slice of a block array -- the key agreed (one small
  allreduce on P > 1), no data moved; by hand, ``x[2:5]`` of the rank's
  NumPy array (no MPI call: the figure says what agreeing the key costs);
- ``a + 1``: local work -- no MPI call; by hand, NumPy's ``x + 1``;
- ``a.sum()``: ``np.sum`` + one ``Allreduce`` by hand;
- ``xdap.sort(a)``: by hand, for data this small, one ``Allgatherv`` +
  ``np.sort`` + each rank's slice.

Target: the agreement adds at most 10% to the earlier revision's time of
each call (``after / before <= 1.1``; ``a[2:5]`` is INFO: it made no MPI
call before, and a key that differs on one rank went unseen).  Figures:
the median of interleaved blocks, the slowest rank's.  Always exits 0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402
from _harness import COMM, say  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE = os.path.join(ROOT, "build", "agreement-before")
DEFAULT_REV = "d02117b"
ROUNDS = 3
N = 1000
CASES = ("a[2:5]", "a + 1", "a.sum()", "xdap.sort(a)")


def measure() -> dict:
    """{case: (xdap seconds, hand seconds)} on every rank of this launch."""
    import xdap
    rng = np.random.default_rng(7 + COMM.rank)
    x = rng.standard_normal(N)
    a = xdap.from_local(x, comm=COMM)
    small = np.ones(10)
    b = xdap.from_local(small, comm=COMM)
    counts = np.array(COMM.allgather(N))

    def hand_sum():
        out = np.empty(1)
        COMM.Allreduce(np.array([x.sum()]), out)
        return out[0]

    def hand_sort():
        everything = np.empty(counts.sum())
        COMM.Allgatherv(x, (everything, counts))
        everything.sort()
        start = counts[:COMM.rank].sum()
        return everything[start:start + N]

    np.testing.assert_allclose(float(a.sum()), hand_sum(), rtol=1e-12)
    # xdap's sample sort leaves irregular blocks; the hand version keeps N per rank
    np.testing.assert_array_equal(xdap.sort(a).to_numpy(), np.sort(np.concatenate(
        COMM.allgather(x))))
    out = {}
    for case, mine, hand, collective in (
            ("a[2:5]", lambda: a[2:5], lambda: x[2:5], True),
            ("a + 1", lambda: b + 1, lambda: small + 1, False),
            ("a.sum()", lambda: a.sum(), hand_sum, True),
            ("xdap.sort(a)", lambda: xdap.sort(a), hand_sort, True)):
        med, _, _ = _harness.bench([mine, hand], budget=1.0, collective=collective,
                                   max_reps=20000)
        out[case] = (float(med[0]), float(med[1]))
    return out


def checkout(rev: str) -> str:
    """``build/agreement-before`` at ``rev`` with its extensions built."""
    if not os.path.isdir(BEFORE):
        # `make clean` removes build/: forget a worktree that is gone first
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=True)
        subprocess.run(["git", "worktree", "add", "--detach", BEFORE, rev], cwd=ROOT,
                       check=True, capture_output=True)
    else:
        subprocess.run(["git", "checkout", "-q", "--detach", rev], cwd=BEFORE, check=True)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=BEFORE,
                   check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BEFORE, check=True,
                          capture_output=True, text=True).stdout.strip()


def launch(ranks: int, tree: str) -> dict:
    """One measurement under ``mpiexec -n ranks`` on the code in ``tree``."""
    from xdap.launcher import clean_environment, mpiexec_command
    env = clean_environment(**{_harness.CHILD_FLAG: "1", "PYTHONPATH": tree,
                               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    r = subprocess.run(mpiexec_command(ranks) + [sys.executable, os.path.abspath(__file__),
                                                 "--measure"],
                       env=env, cwd=tree, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode or not lines:
        raise RuntimeError(f"mpiexec -n {ranks} on {tree} failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(lines[-1])


def main(rev: str):
    short = checkout(rev)
    print(f"the agreement's cost: this tree against {short} (build/agreement-before), "
          f"{N} float64 per rank, the median of {ROUNDS} rounds", flush=True)
    for ranks in (1, 2, 4):
        runs = {"after": [], "before": []}
        for _ in range(ROUNDS):
            runs["after"].append(launch(ranks, ROOT))
            runs["before"].append(launch(ranks, BEFORE))
        print(f"\n  P = {ranks}: {'call':14s} {'before':>10s} {'after':>10s} {'ratio':>6s} "
              f"{'by hand':>10s} {'after/hand':>10s}")
        for case in CASES:
            before = float(np.median([r[case][0] for r in runs["before"]]))
            after = float(np.median([r[case][0] for r in runs["after"]]))
            hand = float(np.median([r[case][1] for r in runs["after"]]))
            print(f"  {'':8s}{case:14s} {1e6 * before:8.1f}us {1e6 * after:8.1f}us "
                  f"{after / before:6.2f} {1e6 * hand:8.1f}us {after / hand:10.1f}")
            key = "".join(ch if ch.isalnum() else "_" for ch in case).strip("_")
            judged = case != "a[2:5]"
            ok = after <= 1.1 * before
            print(f"RESULT agreement_{key}_{ranks}_ranks={after / before:.2f} (after / before "
                  f"{short}: {1e6 * after:.1f} us / {1e6 * before:.1f} us; by hand "
                  f"{1e6 * hand:.1f} us; target <= 1.1) "
                  + ("INFO" if not judged else "PASS" if ok else "FAIL"), flush=True)


if __name__ == "__main__":
    if "--measure" in sys.argv:
        result = measure()
        if COMM.rank == 0:
            print(json.dumps(result), flush=True)
    elif MPI.COMM_WORLD.size > 1:
        say("run agreement_cost.py as one process: it launches mpiexec itself")
    else:
        try:
            main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_REV)
        except Exception as e:          # a benchmark reports, it never fails its caller
            print(f"agreement_cost: {type(e).__name__}: {e}")
