"""The main job (``make demo``: ``mpiexec -n 4 python -m xdap demo``).

One run walks through what xdap is for, each stage checked against a serial
NumPy computation of the same thing on the same data:

1. typed data -- a ragged dataset with missing values (``var * var *
   ?float64``) built on rank 0 and distributed by rows;
2. kernels   -- ``2 * sin(x) + 1`` elementwise on every rank (gumath kernels
   from xdap's generated library; missing stays missing);
3. reductions -- per-row means (NA skipped) and global counts;
4. redistribution -- block rows -> cyclic rows (offsets rebuilt, bitmaps
   carried);
5. exchange  -- the Distributed Array Protocol (a consumer that knows only
   the spec, and ``xdap.from_distarray``, zero-copy), an Arrow view and
   ``__partitioned__``;
6. save/load -- a crash-safe, checksummed Zarr v3 store, loaded back cyclic on all ranks
   and on a sub-communicator of half the ranks;
7. a time-stepping loop -- the heat equation of examples/heat: Jacobi steps
   with a stencil kernel built from the example's own .cfg, halo updates
   bound once (persistent, no agreement per step), a residual reduction;
8. unstructured mesh -- node areas assembled from triangle cells owned by
   other ranks with ``xdap.Scatter`` (reverse ``add``), then a ghost update.

Prints one line per check and exits non-zero if any check fails.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np
from mpi4py import MPI

import xdap
from xdap import kernels
from xdap.parts import Parts, container, parts
from xdap.bitmaps import pack_validity
from xdap.types import type_info


def make_ragged_dataset(nrows: int, mean_len: float, na_fraction: float, seed: int = 7) -> Parts:
    """A reproducible ``var * var * ?float64`` dataset as flat parts."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(rng.poisson(mean_len, nrows), 0)
    values = rng.standard_normal(int(lengths.sum()))
    valid = rng.random(values.size) >= na_fraction
    offsets = (np.array([0, nrows], np.int32),
               np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return Parts(type_info("var * var * ?float64"), values, pack_validity(valid), offsets)


def spec_only_consumer(d: dict, comm) -> np.ndarray:
    """Read a 1-d DAP dict the way a consumer that knows only the spec would:
    place each rank's buffer values at their global positions ('b' start or
    'u' indices) and gather the whole array on every rank."""
    dd = d["dim_data"][0]
    buf = np.asarray(memoryview(d["buffer"]))
    positions = (np.arange(dd["start"], dd["stop"]) if dd["dist_type"] == "b"
                 else np.asarray(dd["indices"]))
    out = np.empty(dd["size"], buf.dtype)
    for pos, vals in comm.allgather((positions, buf)):
        out[pos] = vals
    return out


def triangulated_square(n: int, seed: int = 0):
    """A jittered triangulation of the unit square with shuffled node numbers:
    ``(coords (nodes, 2), cells (cells, 3) int64)``, 2 n^2 triangles."""
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1), indexing="ij")
    xy = np.stack([x.ravel(), y.ravel()], axis=1)
    inside = (xy > 0).all(axis=1) & (xy < 1).all(axis=1)
    xy[inside] += rng.uniform(-0.15, 0.15, (inside.sum(), 2)) / n   # small: no flipped triangle
    node = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = node[:-1, :-1], node[1:, :-1], node[1:, 1:], node[:-1, 1:]
    cells = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                            np.stack([a, c, d], -1).reshape(-1, 3)])
    perm = rng.permutation(len(xy))
    shuffled = np.empty_like(xy)
    shuffled[perm] = xy
    return shuffled, perm[cells]


def triangle_areas(xy: np.ndarray, cells: np.ndarray) -> np.ndarray:
    p, q, r = (xy[cells[:, k]] for k in range(3))
    return 0.5 * np.abs((q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1])
                        - (r[:, 0] - p[:, 0]) * (q[:, 1] - p[:, 1]))


class Report:
    """Collects one verdict per check; a check passes only if it passes on every rank."""

    def __init__(self, comm):
        self.comm, self.ok = comm, True

    def say(self, *a):
        if self.comm.rank == 0:
            print(*a, flush=True)

    def check(self, label: str, good: bool, detail: str = "", t0: float | None = None):
        good = bool(self.comm.allreduce(int(bool(good)), MPI.MIN))
        self.ok &= good
        ms = "" if t0 is None else f"  [{1e3 * (time.perf_counter() - t0):.1f} ms]"
        self.say(f"  {'OK  ' if good else 'FAIL'} {label}{(': ' + detail) if detail else ''}{ms}")


def _same_ragged(x, serial: Parts, values: np.ndarray | None = None) -> bool:
    """Whole-array xnd ``x`` equals ``serial`` (offsets, validity, valid values)."""
    got = parts(x)
    valid = serial.valid_mask()
    want = serial.values if values is None else values
    return (np.array_equal(got.offsets[1], serial.offsets[1])
            and np.array_equal(got.valid_mask(), valid)
            and np.allclose(got.values[valid], want[valid], rtol=1e-12, atol=1e-15))


def stage_ragged(rep: Report, comm, args):
    serial = make_ragged_dataset(args.rows, args.mean_length, args.missing)
    valid = serial.valid_mask()
    rep.say(f"\n[1] typed ragged data: {args.rows} rows x ~{args.mean_length:g} values, "
            f"{100 * args.missing:.0f}% missing -> {serial.values.size} values, "
            f"'var * var * ?float64'")
    t0 = time.perf_counter()
    a = xdap.from_global(container(serial) if comm.rank == 0 else None, dist=("b",),
                         root=0, comm=comm)
    rows = comm.gather(a.distribution.local_shape[0], root=0)
    rep.check("distributed by block rows from rank 0", _same_ragged(a.to_global(), serial),
              f"rows per rank {rows}", t0)

    rep.say("\n[2] kernels (generated gumath library, per rank, NA in -> NA out)")
    t0 = time.perf_counter()
    y = kernels.sin(a) * 2.0 + 1.0
    dt = time.perf_counter() - t0
    expect = 2.0 * np.sin(serial.values) + 1.0
    rep.check("y = 2 * sin(a) + 1", _same_ragged(y.to_global(), serial, expect),
              f"{str(y.type)!r}, {1e3 * dt:.1f} ms for {serial.values.size} values")

    rep.say("\n[3] reductions (NA skipped)")
    t0 = time.perf_counter()
    means = a.mean(axis=1)
    count, total = a.count(), a.sum()
    row_of = np.repeat(np.arange(args.rows), np.diff(serial.offsets[1]))
    n_valid = np.bincount(row_of[valid], minlength=args.rows)
    sums = np.bincount(row_of[valid], weights=serial.values[valid], minlength=args.rows)
    m = parts(means.to_global())
    has = n_valid > 0
    good = (np.array_equal(m.valid_mask(), has)
            and np.allclose(m.values[has], sums[has] / n_valid[has], rtol=1e-12)
            and count == int(valid.sum())
            and np.isclose(total, serial.values[valid].sum(), rtol=1e-9))
    rep.check("per-row mean, count, sum", good,
              f"{str(means.type)!r} rows; count {count}, sum {total:.6g}", t0)

    rep.say("\n[4] redistribution")
    t0 = time.perf_counter()
    c = a.redistribute(dist=("c",))
    rows = comm.gather(c.distribution.local_shape[0], root=0)
    rep.check("block rows -> cyclic rows", _same_ragged(c.to_global(), serial),
              f"rows per rank {rows}", t0)
    return serial, a, c, means


def stage_exchange(rep: Report, comm, serial: Parts, a, c, means):
    rep.say("\n[5] exchange: DAP, Arrow, __partitioned__")
    valid = serial.valid_mask()
    for label, arr in (("block", a), ("cyclic", c)):
        t0 = time.perf_counter()
        d = arr.__distarray__()
        flat = spec_only_consumer(d, comm)
        b = xdap.from_distarray(d, comm=comm)
        shared = np.shares_memory(np.asarray(memoryview(d["buffer"])), parts(b.local).values)
        good = (np.array_equal(flat[valid], serial.values[valid]) and shared
                and _same_ragged(b.to_global(), serial))
        rep.check(f"DAP 0.10.0 {label}: spec-only read + from_distarray", good,
                  f"leaf dim '{d['dim_data'][0]['dist_type']}', buffer shared: {shared}", t0)
    t0 = time.perf_counter()
    arrow = a.to_arrow()
    leaf = np.frombuffer(arrow.values.buffers()[1], np.float64)[arrow.values.offset:]
    shared = np.shares_memory(leaf, parts(a.local).values)
    rep.check("Arrow view of the local partition", shared and len(arrow) == a.distribution.local_shape[0],
              f"{arrow.type}, {len(arrow)} rows, values shared: {shared}", t0)
    t0 = time.perf_counter()
    p = means.__partitioned__
    back = xdap.from_partitioned(p, comm=comm)
    same = parts(back.to_global()).values.tobytes() == parts(means.to_global()).values.tobytes()
    rep.check("__partitioned__ of the row means, re-imported", same,
              f"tiling {p['partition_tiling']}, local tiles {len(p['locals'])}", t0)


def stage_save_load(rep: Report, comm, serial: Parts, a):
    rep.say("\n[6] save / load (a Zarr v3 store: staged, swapped in atomically, CRC-32C per chunk)")
    where = comm.bcast(tempfile.mkdtemp(prefix="xdap-demo-") if comm.rank == 0 else None)
    path = os.path.join(where, "dataset.xdap")
    try:
        t0 = time.perf_counter()
        a.save(path)
        b = xdap.load(path, comm=comm, dist=("c",))
        rep.check(f"saved on {comm.size} ranks, loaded cyclic", _same_ragged(b.to_global(), serial),
                  f"{sum(f.stat().st_size for f in os.scandir(path) if f.is_file()) >> 20} MiB"
                  if comm.rank == 0 and os.path.isdir(path) else "", t0)
        t0 = time.perf_counter()
        half = comm.Split(comm.rank < max(comm.size // 2, 1), comm.rank)
        h = xdap.load(path, comm=half)
        rep.check(f"loaded on {half.size} ranks (a sub-communicator)",
                  _same_ragged(h.to_global(), serial), "", t0)
        half.Free()
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(where, ignore_errors=True)


def stage_heat(rep: Report, comm, n: int, steps: int):
    rep.say(f"\n[7] a time-stepping loop: {steps} Jacobi steps of the heat equation, {n} x {n}")
    t0 = time.perf_counter()
    solver = _heat_example()
    if solver is None:
        rep.check("the heat example (examples/heat) is next to the package", False,
                  "run the demo from a source checkout", t0)
        return
    # the example as a user writes it: its own stencil kernel (built from its
    # .cfg once, cached in build/examples/heat), halo updates bound once, the
    # largest change every 10 steps
    u, residuals = solver.solve(n, steps, comm, every=max(1, min(10, steps)))
    got = u.to_numpy(root=0)
    same = comm.bcast(bool(np.array_equal(got, solver.serial(n, steps))) if comm.rank == 0
                      else None, root=0)
    rep.check("distributed Jacobi (user kernel, bound halos) == serial NumPy, bit for bit", same,
              f"grid {u.grid}, largest change {residuals[0]:.2g} -> {residuals[-1]:.2g}", t0)


def _heat_example():
    """examples/heat/heat_solver.py of the source checkout, or None."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples",
                        "heat", "heat_solver.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("heat_solver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stage_mesh(rep: Report, comm, n: int):
    xy, cells = triangulated_square(n)
    P, rank = comm.size, comm.rank
    rep.say(f"\n[8] unstructured mesh: {len(xy)} nodes, {len(cells)} triangles, "
            "cells split by centroid strip")
    t0 = time.perf_counter()
    strip = np.minimum((xy[cells].mean(axis=1)[:, 0] * P).astype(int), P - 1)
    my_cells = np.flatnonzero(strip == rank)
    node_strip = np.minimum((xy[:, 0] * P).astype(int), P - 1)
    nodes = xdap.from_global(np.zeros(len(xy)), dist=("u",),
                             indices=([np.flatnonzero(node_strip == p) for p in range(P)],),
                             comm=comm)
    needed = cells[my_cells].ravel()                   # nodes my cells touch, many not mine
    plan = xdap.Scatter(nodes, needed)
    share = np.repeat(triangle_areas(xy, cells[my_cells]) / 3, 3)
    plan.reverse(share, into=nodes, mode="add")        # assemble: contributions to owners
    ghosts = plan.forward(nodes)                       # ghost update: owners' values
    ref = np.bincount(cells.ravel(), weights=np.repeat(triangle_areas(xy, cells) / 3, 3),
                      minlength=len(xy))
    good = (np.allclose(np.asarray(nodes.to_global()), ref, rtol=1e-12)
            and np.allclose(ghosts, ref[needed], rtol=1e-12)
            and np.isclose(ref.sum(), 1.0))
    rep.check("node areas assembled across ranks == serial", good,
              f"{len(my_cells)} cells here, {len(np.unique(needed))} nodes needed", t0)


def run(args) -> int:
    comm = MPI.COMM_WORLD
    rep = Report(comm)
    rep.say(f"xdap {xdap.__version__} demo on {comm.size} MPI rank(s)")
    t0 = time.perf_counter()
    from .progress import bar                 # rank 0, on a terminal only
    with bar(comm, 5, "demo", "stage") as progress:
        serial, a, c, means = stage_ragged(rep, comm, args)
        progress.update(1)
        stage_exchange(rep, comm, serial, a, c, means)
        progress.update(1)
        stage_save_load(rep, comm, serial, a)
        progress.update(1)
        stage_heat(rep, comm, args.grid, args.steps)
        progress.update(1)
        stage_mesh(rep, comm, args.mesh)
        progress.update(1)
    rep.say(f"\nresult: {'all checks passed' if rep.ok else 'FAILED'} "
            f"({time.perf_counter() - t0:.1f} s)")
    return 0 if rep.ok else 1


def add_arguments(parser) -> None:
    parser.add_argument("--rows", type=int, default=200_000, help="rows of the ragged dataset")
    parser.add_argument("--mean-length", type=float, default=10.0, help="mean values per row")
    parser.add_argument("--missing", type=float, default=0.1, help="fraction of missing values")
    parser.add_argument("--grid", type=int, default=512, help="heat equation grid size")
    parser.add_argument("--steps", type=int, default=50, help="Jacobi steps")
    parser.add_argument("--mesh", type=int, default=60, help="mesh cells per side")
