"""Exchange cost: ``__partitioned__`` and Arrow export -- do they depend on size? (zero copy)

    .venv/bin/python benchmarks/exchange.py                          # 1 rank, then save/load on 2
    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/exchange.py   # one partition per rank

1. ``__partitioned__`` round trip: a fixed float64 partition of 1 MiB and of
   1 GiB per rank (wrapped without copying via a DAP dict) is exported
   (``a.__partitioned__``) and re-imported (``xdap.from_partitioned``,
   collective).  Target: 1 GiB / 1 MiB time ratio < 2; ``np.shares_memory``
   checks that the exported tile and the imported local are the original
   memory.  The obvious alternative, gathering the partition's values into a
   new array (``np.array(tile)``: what a copying consumer does), is timed
   alongside to show what the ratio would be with one copy.
2. Arrow export of a ragged ``var * var * float64`` partition with 10^5 and
   10^7 values (~10 a row): ``a.to_arrow()``.  Target: time independent of
   size (ratio < 2), and the Arrow values/offsets buffers ARE xdap's memory
   (buffer addresses).  The alternative, ``pa.array(a.local.value)`` (via
   Python lists), is timed on the 10^5 case only (it takes minutes at 10^7).

3. Save and load of 1 GiB on 2 ranks as a Zarr v3 store, against ``dd``
   and against the previous format's files in the same run
   (benchmarks/_exchange_io.py, launched on 2 ranks when this script runs
   as one process).  Targets: at least 50% of dd's write / read bandwidth,
   at most 1.2x the previous format's time.

Medians of interleaved repetitions after a warm-up (see benchmarks/dap.py);
under mpiexec the largest per-rank median.  Always exits 0; missed targets
print FAIL.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np
import pyarrow as pa
from mpi4py import MPI

import xdap
from xdap.parts import parts

import _exchange_io  # noqa: E402
import _harness  # noqa: E402
from _harness import CHILD_FLAG, COMM, MiB, P, RANK, run_main, say, verdict  # noqa: E402,F401
from dap import bench, fixed_dap_dict, us  # noqa: E402

TARGET = 2.0


def fixed_array(nbytes: int):
    n = nbytes // 8
    big = np.empty((n // 1024, 1024), np.float64)
    big.fill(RANK + 0.5)
    a = xdap.from_distarray(fixed_dap_dict(big), comm=COMM)
    p = a.__partitioned__
    (pos,) = p["locals"]
    b = xdap.from_partitioned(p, comm=COMM)
    shared = (np.shares_memory(p["partitions"][pos]["data"], big)
              and np.shares_memory(parts(b.local).values, big))
    return a, big, shared


def ragged_array(nvalues: int, mean_len: int = 10):
    a, _, nrows = _harness.ragged_partition(nvalues, mean_len, seed=3)
    arr = a.to_arrow()
    p = parts(a.local)
    shared = (arr.values.buffers()[1].address == p.values.ctypes.data
              and arr.buffers()[1].address == p.offsets[1].ctypes.data
              and len(arr) == nrows)
    return a, shared


def main():
    t_start = time.perf_counter()
    say(f"xdap {xdap.__version__} exchange benchmark: {P} rank(s); sizes PER RANK; times in us, "
        f"median (min) of interleaved repetitions, max over ranks")

    small, big = fixed_array(MiB), fixed_array(1024 * MiB)
    rt = [lambda a=a: xdap.from_partitioned(a.__partitioned__, comm=COMM) for a, _, _ in (small, big)]
    med, low, reps = bench(rt, collective=True)
    exp_med, _, _ = bench([lambda: small[0].__partitioned__, lambda: big[0].__partitioned__],
                          collective=False)
    say(f"{'__partitioned__ export+import':<34}{'1 MiB':>12}{'1 GiB':>14}")
    say(f"{'  round trip':<34}{us(med[0])}  {us(med[1])}   (min {us(low[0]).strip()} / "
        f"{us(low[1]).strip()}; {reps} reps)")
    say(f"{'  export only':<34}{us(exp_med[0])}  {us(exp_med[1])}")
    # the copying alternative, once each (1 GiB copy is ~0.2-0.5 s)
    copies = []
    for a, _, _ in (small, big):
        tile = a.__partitioned__["partitions"][a.__partitioned__["locals"][0]]["data"]
        t0 = time.perf_counter()
        np.array(tile)
        copies.append(COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    say(f"{'  alternative: copy the tile':<34}{us(copies[0])}  {us(copies[1])}")
    shared = all(COMM.allgather(small[2] and big[2]))
    small = big = None          # 1 GiB freed before the ragged part

    r5, r7 = ragged_array(10 ** 5), ragged_array(10 ** 7)
    amed, alow, areps = bench([r5[0].to_arrow, r7[0].to_arrow], collective=False)
    say(f"{'Arrow export var*var*float64':<34}{'1e5 values':>12}{'1e7 values':>14}")
    say(f"{'  a.to_arrow()':<34}{us(amed[0])}  {us(amed[1])}   (min {us(alow[0]).strip()} / "
        f"{us(alow[1]).strip()}; {areps} reps)")
    t0 = time.perf_counter()
    pa.array(r5[0].local.value)
    alt5 = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    say(f"{'  alternative: pa.array(local.value)':<34}{us(alt5)}  {'(not run)':>14}")
    ashared = all(COMM.allgather(r5[1] and r7[1]))
    say(f"(total {time.perf_counter() - t_start:.1f} s)")
    say()

    ratio = med[1] / med[0]
    say(f"RESULT partitioned_roundtrip_ratio_1GB_over_1MB={ratio:.2f} ({us(med[0]).strip()} us -> "
        f"{us(med[1]).strip()} us; a copy would take {copies[1] * 1e3:.0f} ms; target < {TARGET:g}) "
        f"{verdict(ratio < TARGET)}")
    say(f"RESULT partitioned_zero_copy={shared} (exported tile and imported local share the "
        f"original memory) {verdict(shared)}")
    aratio = amed[1] / amed[0]
    say(f"RESULT arrow_export_ratio_1e7_over_1e5={aratio:.2f} ({us(amed[0]).strip()} us -> "
        f"{us(amed[1]).strip()} us; 100x values; pa.array from Python lists takes "
        f"{alt5 * 1e3:.0f} ms at 1e5; target < {TARGET:g}) {verdict(aratio < TARGET)}")
    say(f"RESULT arrow_zero_copy={ashared} (Arrow values and offsets buffers are xdap's memory) "
        f"{verdict(ashared)}")
    if P == 1 and os.environ.get(CHILD_FLAG) != "1":
        say()
        _exchange_io.main()          # save/load bandwidth: launches mpiexec -n 2 itself
    return 0


if __name__ == "__main__":
    run_main(main)
