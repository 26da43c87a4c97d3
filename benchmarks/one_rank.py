"""Where the distributed algorithm adds nothing: xdap on one rank against
NumPy's own call on the same values, one run, ratios.

    .venv/bin/python benchmarks/one_rank.py        # one process (~30 s)

10^7 values on one rank (``searchsorted``: 10^6 queries into them):

  sort            xdap.sort vs np.sort (values: NumPy's sort, no argsort)
  argsort         xdap.argsort vs np.argsort(kind="stable") (the standard's
                  default is stable)
  sort, axis=1    a (10^5, 100) array sorted along its undistributed axis
  unique_values   vs np.unique (NumPy hashes integers when no counts are
                  asked for)
  unique_counts   vs np.unique(return_counts=True)
  searchsorted    vs np.searchsorted
  cumulative_sum  vs np.cumsum
  arange          int64 and float64, vs np.arange

Target: <= 1.1x each.  Timing: interleaved repetitions, median
(benchmarks/_harness.py).  Always exits 0; a missed target prints FAIL.
"""
from __future__ import annotations

import os
import sys

import numpy as np
from mpi4py import MPI

import xdap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness                        # noqa: E402
from _harness import say               # noqa: E402

N = 10_000_000
TARGET = 1.1


def line(what, mine, numpy_call):
    t_x, t_n = _harness.bench([mine, numpy_call], budget=1.5, max_reps=30)[0]
    r = t_x / t_n
    say(f"  {what:16s} xdap {t_x * 1e3:8.2f} ms   NumPy {t_n * 1e3:8.2f} ms   ratio {r:5.2f}"
        f" (target <= {TARGET}) {'ok' if r <= TARGET else 'FAIL'}")
    key = "".join(ch if ch.isalnum() else "_" for ch in what).strip("_")
    say(f"RESULT one_rank_{key}={r:.2f} (xdap {t_x * 1e3:.2f} ms / NumPy {t_n * 1e3:.2f} ms; "
        f"target <= {TARGET}) {'PASS' if r <= TARGET else 'FAIL'}")


def main():
    comm = MPI.COMM_SELF
    rng = np.random.default_rng(1)
    x = rng.standard_normal(N)
    ints = rng.integers(0, 1000, N)
    a = xdap.from_local(x.copy(), comm=comm)
    ai = xdap.from_local(ints.copy(), comm=comm)
    s = np.sort(x)
    a_sorted = xdap.from_local(s.copy(), comm=comm)
    q = rng.standard_normal(N // 10)
    m = x.reshape(-1, 100)
    am = xdap.from_local(m.copy(), comm=comm)
    # the same values as NumPy's, before timing
    assert np.array_equal(xdap.sort(a).local_numpy(), np.sort(x))
    assert np.array_equal(xdap.argsort(a).local_numpy(), np.argsort(x, kind="stable"))
    assert np.array_equal(xdap.unique_values(ai).local_numpy(), np.unique(ints))
    assert np.array_equal(xdap.searchsorted(a_sorted, q), np.searchsorted(s, q))
    assert np.array_equal(xdap.arange(N, type="float64", comm=comm).local_numpy(),
                          np.arange(N, dtype=np.float64))
    say(f"one rank, {N:.0e} values")
    line("sort", lambda: xdap.sort(a), lambda: np.sort(x))
    line("argsort", lambda: xdap.argsort(a), lambda: np.argsort(x, kind="stable"))
    line("sort, axis=1", lambda: xdap.sort(am, axis=1), lambda: np.sort(m, axis=1))
    line("unique_values", lambda: xdap.unique_values(ai), lambda: np.unique(ints))
    line("unique_counts", lambda: xdap.unique_counts(ai),
         lambda: np.unique(ints, return_counts=True))
    line("searchsorted", lambda: xdap.searchsorted(a_sorted, q), lambda: np.searchsorted(s, q))
    line("cumulative_sum", lambda: xdap.cumulative_sum(a), lambda: np.cumsum(x))
    line("arange int64", lambda: xdap.arange(N, comm=comm), lambda: np.arange(N))
    line("arange float64", lambda: xdap.arange(N, type="float64", comm=comm),
         lambda: np.arange(N, dtype=np.float64))


if __name__ == "__main__":
    _harness.run_main(main)
