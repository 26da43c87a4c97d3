"""Arrays other programs wrote: HDF5 (``xdap.from_hdf5`` / ``to_hdf5``) and
plain Zarr (``xdap.from_zarr``) against h5py and zarr by hand, each rank its
rows.

    .venv/bin/python benchmarks/array_files.py [MiB]    # 1 GiB by default; 2 ranks, then 1

1. Read: ``xdap.from_hdf5(path, "u")`` of a float64 dataset (rows x 1024,
   contiguous) against each rank opening the file and reading its rows
   ``[lo, hi)`` with ``ds.read_direct`` into a preallocated array. Target
   (issue 40): <= 1.2x.
2. Write: ``a.to_hdf5(path, "u", mode="w")`` against the same by hand: rank
   0 makes the file and the dataset, then each rank in turn opens it and
   writes its rows (a token passed with ``send``/``recv``: what h5py without
   MPI allows), or collective writes through ``driver="mpio"`` when h5py
   has MPI (both sides the same). Target: <= 1.2x.

3. Zarr read: ``xdap.from_zarr(path)`` of the same data written by zarr
   (v3, zstd, chunks of 1000 rows: they do not match the ranks' rows)
   against each rank's ``zarr.open_array(path)[lo:hi]``. Target (issue
   40): <= 1.2x.

4. Zarr read, coarse chunks: the same data in chunks of half the rows
   (2 chunks: on 4 ranks every rank's rows lie inside one chunk). By hand,
   each rank decodes the whole chunk its rows lie in. xdap's read plan
   (``xdap.io.zarr_arrays.read_sizes``) weighs that against decoding each
   chunk once and one exchange, and finds the slowest rank done sooner
   decoding in parallel, as by hand (on this 2-core machine, one decode of
   a 512 MiB chunk and a send took 2.2x as long). Target: <= 1.2x.

All in one directory under build/, interleaved (benchmarks/_harness.py);
the page cache serves the reads alike. Always exits 0; missed targets print
FAIL.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import h5py
import numpy as np

import xdap

import _harness  # noqa: E402
from _harness import COMM, P, RANK, bench, relaunch, run_main, say, verdict  # noqa: E402

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
COLS = 1024
TARGET = 1.2
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "bench-hdf5")


def rows_of(n):
    lo = n * RANK // P
    return lo, n * (RANK + 1) // P


def hand_read(path, n):
    lo, hi = rows_of(n)
    out = np.empty((hi - lo, COLS))
    with h5py.File(path, "r") as f:
        if hi > lo:
            f["u"].read_direct(out, np.s_[lo:hi])
    COMM.Barrier()
    return out


def hand_write(path, block, n):
    lo, hi = rows_of(n)
    if h5py.get_config().mpi:
        with h5py.File(path, "w", driver="mpio", comm=COMM) as f:
            ds = f.create_dataset("u", (n, COLS), np.float64)
            with ds.collective:
                ds[lo:hi] = block
        return
    if RANK == 0:
        with h5py.File(path, "w") as f:
            f.create_dataset("u", (n, COLS), np.float64)
    COMM.Barrier()
    if RANK:
        COMM.recv(source=RANK - 1, tag=5)
    with h5py.File(path, "r+") as f:
        f["u"][lo:hi] = block
    if RANK + 1 < P:
        COMM.send(None, dest=RANK + 1, tag=5)
    COMM.Barrier()


def hand_zarr(path, n):
    import zarr
    lo, hi = rows_of(n)
    out = zarr.open_array(path, mode="r")[lo:hi]
    COMM.Barrier()
    return out


def main():
    n = MIB * 2**20 // (8 * COLS)
    if RANK == 0:
        os.makedirs(HERE, exist_ok=True)
    COMM.Barrier()
    a = xdap.from_function(lambda i, j: i * 1.0 + j, (n, COLS), comm=COMM)
    block = a.local_numpy()
    mine, theirs = os.path.join(HERE, "xdap.h5"), os.path.join(HERE, "hand.h5")
    a.to_hdf5(mine, "u", mode="w")
    hand_write(theirs, block, n)
    assert np.array_equal(xdap.from_hdf5(mine, "u", comm=COMM).local_numpy(),
                          hand_read(theirs, n))
    write, _, _ = bench([lambda: a.to_hdf5(mine, "u", mode="w"),
                         lambda: hand_write(theirs, block, n)], budget=6.0, min_reps=3, block=1)
    read, _, _ = bench([lambda: xdap.from_hdf5(mine, "u", comm=COMM),
                        lambda: hand_read(theirs, n)], budget=6.0, min_reps=3, block=1)
    zpath = os.path.join(HERE, "z.zarr")
    import zarr
    from zarr.codecs import BloscCodec
    if RANK == 0:
        z = zarr.create_array(zpath, shape=(n, COLS), chunks=(1000, COLS), dtype="f8",
                              compressors=BloscCodec(cname="zstd", clevel=1), overwrite=True)
        for lo in range(0, n, 8192):            # the same values as the HDF5 files'
            hi = min(n, lo + 8192)
            z[lo:hi] = np.arange(lo, hi)[:, None] * 1.0 + np.arange(COLS)
    COMM.Barrier()
    zread, _, _ = bench([lambda: xdap.from_zarr(zpath, comm=COMM),
                         lambda: hand_zarr(zpath, n)], budget=6.0, min_reps=3, block=1)
    assert np.array_equal(xdap.from_zarr(zpath, comm=COMM).local_numpy(), hand_zarr(zpath, n))
    coarse = os.path.join(HERE, "coarse.zarr")
    if RANK == 0:
        z = zarr.create_array(coarse, shape=(n, COLS), chunks=(-(-n // 2), COLS), dtype="f8",
                              compressors=BloscCodec(cname="zstd", clevel=1), overwrite=True)
        for lo in range(0, n, 8192):
            hi = min(n, lo + 8192)
            z[lo:hi] = np.arange(lo, hi)[:, None] * 1.0 + np.arange(COLS)
    COMM.Barrier()
    cread, _, _ = bench([lambda: xdap.from_zarr(coarse, comm=COMM),
                         lambda: hand_zarr(coarse, n)], budget=6.0, min_reps=3, block=1)
    assert np.array_equal(xdap.from_zarr(coarse, comm=COMM).local_numpy(),
                          hand_zarr(coarse, n))
    how = "parallel HDF5" if h5py.get_config().mpi else "rank by rank"
    say(f"\n{P} rank(s), {MIB} MiB float64 ({n} x {COLS}), writes {how} "
        f"(median s, the slowest rank)")
    say(f"{'':6} {'xdap':>8} {'by hand':>8} {'ratio':>6}  target")
    for name, (t_xdap, t_hand) in (("read", read), ("write", write), ("zarr", zread),
                                   ("coarse", cread)):
        ratio = t_xdap / t_hand
        say(f"{name:6} {t_xdap:8.3f} {t_hand:8.3f} {ratio:6.2f}  <= {TARGET} "
            f"{verdict(ratio <= TARGET)}")
    COMM.Barrier()
    if RANK == 0:
        import shutil
        for f in (mine, theirs):
            os.remove(f)
        shutil.rmtree(zpath)
        shutil.rmtree(coarse)


if __name__ == "__main__":
    if relaunch(__file__, 2):
        os.environ[_harness.CHILD_FLAG] = "1"
    run_main(main)
