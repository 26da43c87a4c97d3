"""Save / load bandwidth of 1 GiB on 2 ranks: the Zarr v3 store against the
previous format's files and against the disk's own (dd).

    .venv/bin/python benchmarks/_exchange_io.py       # launches 2 ranks itself (XDAP_MPIEXEC)

(run by benchmarks/exchange.py after its one-rank cases)

In ONE 2-rank launch, repeated and interleaved (dd, format 1, store, dd,
...), in a temp dir on the repository's filesystem (``build/``, removed at
the end):

    dd write    ``dd if=/dev/zero of=F bs=16M count=64 conv=fdatasync`` (1 GiB)
    dd read     ``dd if=F of=/dev/null bs=16M`` after dropping F from the page cache
    save        ``a.save(path)`` of a 1 GiB float64 array, 512 MiB per rank, block
                distributed: a Zarr v3 store, 64 MiB chunks with CRC-32C, every
                chunk fsynced, staging directory swapped in (barrier to barrier,
                slowest rank)
    load        ``xdap.load(path)`` onto the same 2 ranks after dropping the
                store from the page cache (every chunk's CRC-32C verified; Zarr
                decodes into new memory)
    format-1    what xdap wrote before the store, by its own file helpers
    save/load   (``xdap.io.files``): each rank one ``.npy`` piece, CRC-32 while
                writing, fsync, rank 0 a manifest; load = the piece mapped
                copy-on-write + CRC-32 pass (zero-copy)
    cleanup     (INFO) deleting the replaced store, which ``save`` leaves to a
                background thread (waited for here, untimed by ``save``)

The page cache is dropped per file with ``posix_fadvise(DONTNEED)`` (after
fsync the pages are clean, so the kernel does drop them; no root needed).
The VM's host may still cache the disk below us; dd's read is measured the
same way, so the ratio is like for like. Targets: save and load at least
50% of dd's write / read bandwidth, and at most 1.2x the format-1 time
(median of the repetitions). Always exits 0; a missed target prints FAIL.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from xdap.launcher import clean_environment, mpiexec_command

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GiB = 1 << 30
REPS = 3
TARGET = 0.5
FORMAT1_TARGET = 1.2


def drop_cache(path: str) -> None:
    """Evict a file (or every file under a directory tree) from the page cache."""
    names = [path] if os.path.isfile(path) else \
        [os.path.join(root, n) for root, _, files in os.walk(path) for n in files]
    for name in names:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def dd(args) -> float:
    t0 = time.perf_counter()
    subprocess.run(["dd", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def child(tmp: str) -> None:
    import numpy as np
    from mpi4py import MPI

    import xdap
    from xdap.array import DistArray
    from xdap.parts import Parts, container
    from xdap.distribution import Distribution
    from xdap.io.files import map_verified, write_file
    from xdap.io.npy import npy_header
    from xdap.io.store_writer import finish_cleanup
    from _harness import timed
    from xdap.maps import BlockMap
    from xdap.types import type_info

    comm = MPI.COMM_WORLD
    rank, P = comm.rank, comm.size
    n = GiB // 8 // P
    mine = np.empty(n, np.float64)
    mine[:] = np.arange(rank * n, (rank + 1) * n, dtype=np.float64)   # touches every page
    d = Distribution([BlockMap(n * P, P)], comm)
    a = DistArray(d, container(Parts(type_info(f"{n} * float64"), mine)))
    path = os.path.join(tmp, "a.xdap")
    old = os.path.join(tmp, "old")
    ddfile = os.path.join(tmp, "dd.bin")

    def old_save():
        """Format 1 as xdap wrote it: a checksummed, fsynced .npy piece per
        rank, then rank 0's manifest (atomically renamed)."""
        header = npy_header(mine.dtype, mine.shape)
        rec = write_file(os.path.join(old, f"piece{rank}.npy"), [header, mine])
        recs = comm.gather(dict(rec, header_bytes=len(header)), root=0)
        if rank == 0:
            tmpname = os.path.join(old, ".manifest.tmp")
            write_file(tmpname, [json.dumps(recs).encode()])
            os.replace(tmpname, os.path.join(old, "manifest.json"))
        return recs

    def old_load(recs):
        rec = recs[rank]
        data = map_verified(old, rec)
        return data[rec["header_bytes"]:].view(np.float64)

    rows = {"dd write": [], "dd read": [], "save": [], "load": [], "format-1 save": [],
            "format-1 load": [], "cleanup": []}
    if rank == 0:
        os.makedirs(old)
    comm.Barrier()
    for rep in range(REPS):
        if rank == 0:
            if os.path.exists(ddfile):
                os.remove(ddfile)
            rows["dd write"].append(dd(["if=/dev/zero", f"of={ddfile}", "bs=16M",
                                        f"count={GiB >> 24}", "conv=fdatasync"]))
            drop_cache(ddfile)
            rows["dd read"].append(dd([f"if={ddfile}", "of=/dev/null", "bs=16M"]))
            os.remove(ddfile)
        t, recs = timed(old_save)
        rows["format-1 save"].append(t)
        recs = comm.bcast(recs, root=0)
        if rank == 0:
            drop_cache(old)
        t, b = timed(lambda: old_load(recs))
        rows["format-1 load"].append(t)
        assert np.array_equal(b, mine), "format-1 data differs"
        del b
        t, _ = timed(lambda: a.save(path))
        rows["save"].append(t)
        t, _ = timed(finish_cleanup)       # deleting the replaced store, in the background
        rows["cleanup"].append(t)
        if rank == 0:
            drop_cache(path)
        t, b = timed(lambda: xdap.load(path, comm=comm))
        rows["load"].append(t)
        ok = np.array_equal(np.asarray(b.local), mine)
        assert comm.allreduce(ok, op=MPI.LAND), "loaded data differs"
        del b
    if rank == 0:
        med = {k: float(np.median(v)) for k, v in rows.items()}
        bw = {k: GiB / v / 1e9 for k, v in med.items()}
        print(f"{'':14s}{'median s':>10s}{'GB/s':>8s}   all runs (s)")
        for k in rows:
            print(f"{k:14s}{med[k]:10.3f}{bw[k]:8.2f}   " + " ".join(f"{x:.3f}" for x in rows[k]))
        for what, ref in (("save", "dd write"), ("load", "dd read")):
            r = bw[what] / bw[ref]
            print(f"RESULT io_{what}_vs_dd={r:.2f} ({what} {bw[what]:.2f} GB/s, {ref} "
                  f"{bw[ref]:.2f} GB/s, 1 GiB on {P} ranks) {'PASS' if r >= TARGET else 'FAIL'}")
        for what in ("save", "load"):
            r = med[what] / med["format-1 " + what]
            print(f"RESULT io_{what}_zarr_vs_format1={r:.2f} (time; Zarr store {med[what]:.3f} s, "
                  f"format-1 pieces {med['format-1 ' + what]:.3f} s) "
                  f"{'PASS' if r <= FORMAT1_TARGET else 'FAIL'}")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"RESULT io_peak_rss_rank0={rss:.0f} MiB (its share of the array: "
              f"{mine.nbytes / 2**20:.0f} MiB; a load holds a second copy) INFO")


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    os.makedirs(os.path.join(REPO, "build"), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="bench-io-", dir=os.path.join(REPO, "build"))
    try:
        env = clean_environment()
        print(f"save/load of 1 GiB float64 on 2 ranks vs dd, {REPS} interleaved repetitions, "
              f"in {os.path.relpath(tmp, REPO)}", flush=True)
        res = subprocess.run(mpiexec_command(2) + [sys.executable, os.path.abspath(__file__),
                              "--child", tmp], env=env, timeout=600)
        if res.returncode:
            print(f"RESULT io_benchmark=crashed (exit {res.returncode}) FAIL")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
