"""Global -> local index translation: ``Map.owners(g)`` against plain NumPy.

    .venv/bin/python benchmarks/maps.py

For 10^7 random global indices into a dimension of 10^7 elements over 4 grid
ranks, time ``m.owners(g) -> (ranks, local)`` for every kind of map and the
equivalent hand-written NumPy (what a user would write knowing the layout):

    block, balanced       r = g // q ; local = g - r * q      (q = size // P, exact)
    block, irregular      searchsorted(stops, g) ; g - starts[ranks]
    cyclic (bs 1)         l = g // P ; ranks = g - l * P
    block-cyclic (bs 64)  b = g // 64 ; l = b // P ; ranks = b - l * P ;
                          local = l * 64 + (g - b * 64)
    unstructured          inverse permutation table pos = inv[g], then
                          r = pos // q ; local = pos - r * q -- the indices are a
                          random permutation split in 4 equal parts

(floor-divide + multiply-subtract, because ``np.divmod``/``%`` on int64 are
~3-4x slower than ``//`` by a scalar in NumPy 2.x.)

Both answers are checked equal.  Median of interleaved repetitions after a
warm-up; ratio = xdap / numpy, target <= 3.  ``local_from_global`` of the
unstructured map (indices of rank 0) is
reported too, for information.  Pure NumPy, no MPI.  Always exits 0; missed
targets print FAIL.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from xdap.maps import BlockMap, CyclicMap, UnstructuredMap

N = 10 ** 7          # dimension size
NQ = 10 ** 7         # queries
P = 4
TARGET = 3.0
REPS = 7


def bench_pair(f_xdap, f_numpy, reps=REPS):
    """Median seconds of each, interleaved, after one warm-up call each."""
    f_xdap(), f_numpy()
    tx, tn = [], []
    for _ in range(reps):
        for f, out in ((f_xdap, tx), (f_numpy, tn)):
            t0 = time.perf_counter()
            f()
            out.append(time.perf_counter() - t0)
    return float(np.median(tx)), float(np.median(tn))


def main():
    t_start = time.perf_counter()
    rng = np.random.default_rng(2024)
    g = rng.integers(0, N, NQ, dtype=np.int64)

    cases = []

    # block, balanced ------------------------------------------------------
    assert N % P == 0
    q = N // P
    def np_block():
        ranks = g // q
        return ranks, g - ranks * q
    cases.append(("block balanced P=4", BlockMap(N, P), np_block))

    # block, irregular -----------------------------------------------------
    bounds = np.array([0, N // 10, N // 2 - 123_457, N // 2, N], np.int64)
    stops, starts = bounds[1:], bounds[:-1]

    def np_irregular():
        ranks = np.searchsorted(stops, g, side="right")
        return ranks, g - starts[ranks]
    cases.append(("block irregular P=4", BlockMap(N, P, bounds=bounds.tolist()), np_irregular))

    # cyclic ---------------------------------------------------------------
    def np_cyclic():
        local = g // P
        return g - local * P, local
    cases.append(("cyclic bs=1 P=4", CyclicMap(N, P, 1), np_cyclic))

    def np_block_cyclic():
        blk = g // 64
        lq = blk // P
        ranks = blk - lq * P
        local = lq * 64
        local += g
        local -= blk * 64
        return ranks, local
    cases.append(("block-cyclic bs=64 P=4", CyclicMap(N, P, 64), np_block_cyclic))

    # unstructured ---------------------------------------------------------
    perm = rng.permutation(N).astype(np.int64)
    chunks = np.array_split(perm, P)
    assert all(len(c) == q for c in chunks)
    t0 = time.perf_counter()
    um = UnstructuredMap(N, chunks, one_to_one=True)
    t_build = time.perf_counter() - t0
    inv = np.empty(N, np.int64)
    inv[perm] = np.arange(N, dtype=np.int64)       # position of each global index in perm

    def np_unstructured():
        pos = inv[g]
        ranks = pos // q
        return ranks, pos - ranks * q
    cases.append(("unstructured perm P=4", um, np_unstructured))

    print(f"Map.owners() on {NQ:.0e} random global indices, size {N:.0e}, {P} grid ranks; "
          f"median of {REPS} interleaved runs [ms]")
    print(f"{'map':<26}{'xdap':>9}{'numpy':>9}{'ratio':>8}  equal")
    results = []
    for name, m, f_np in cases:
        rx, lx = m.owners(g)
        rn, ln = f_np()
        equal = bool(np.array_equal(rx, rn) and np.array_equal(lx, ln))
        del rx, lx, rn, ln
        tx, tn = bench_pair(lambda: m.owners(g), f_np)
        results.append((name, tx, tn, equal))
        print(f"{name:<26}{1e3 * tx:9.1f}{1e3 * tn:9.1f}{tx / tn:8.2f}  {equal}")

    # for information: local_from_global of the unstructured map, rank 0
    g0 = chunks[0][rng.integers(0, q, NQ // P)]
    inv0 = inv            # position in perm == local position on rank 0 for rank-0 indices
    lx = um.local_from_global(0, g0)
    eq0 = bool(np.array_equal(lx, inv0[g0]))
    del lx
    tx0, tn0 = bench_pair(lambda: um.local_from_global(0, g0), lambda: inv0[g0], reps=3)
    print(f"{'(info) unstr. l_f_g(0)':<26}{1e3 * tx0:9.1f}{1e3 * tn0:9.1f}{tx0 / tn0:8.2f}  {eq0}"
          f"   ({NQ // P:.1e} indices of rank 0)")
    print(f"(UnstructuredMap construction: {1e3 * t_build:.0f} ms; "
          f"total {time.perf_counter() - t_start:.1f} s)")
    print()

    for name, tx, tn, equal in results:
        key = name.split(" P=")[0].replace(" ", "_").replace("=", "").replace("-", "_")
        ratio = tx / tn
        ok = ratio <= TARGET and equal
        print(f"RESULT owners_ratio_{key}={ratio:.2f} ({1e3 * tx:.1f} ms vs numpy "
              f"{1e3 * tn:.1f} ms; target <= {TARGET:g}{'' if equal else '; RESULTS DIFFER'}) "
              f"{'PASS' if ok else 'FAIL'}")
    print(f"RESULT unstructured_local_from_global_ratio={tx0 / tn0:.2f} ({1e3 * tx0:.1f} ms vs "
          f"inverse table {1e3 * tn0:.1f} ms) INFO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
