"""PETSc's side of ``benchmarks/peers.py``: the same work in PETSc's own
idiom, timed in a process of its own -- Debian's ``python3`` with its
``python3-petsc4py`` (PETSc 3.18, built for Debian's NumPy 1.24, which
cannot share xdap's process).  Not a benchmark itself (``make bench`` skips
files starting with ``_``); ``peers.py`` launches it under the same
``mpiexec`` right after xdap's side, and reads the JSON lines it writes.

    mpiexec -n P python3 benchmarks/_peers_petsc.py OUT.jsonl SIZES.json

Each row: ``{"work", "impl": "petsc", "ranks", "seconds", "check"}`` --
the median of interleaved repetitions, the slowest rank's; ``check`` a value
both sides compute from the same inputs (made from global indices), so the
table can say they did the same work.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import COMM, P, RANK, bench  # noqa: E402

import petsc4py  # noqa: E402
petsc4py.init([])
from petsc4py import PETSc  # noqa: E402

C = 0.4                      # the diffusion number of benchmarks/solvers.py's operator


def field(i, j):
    """The inputs both sides use: a smooth field of the global indices."""
    return np.sin(0.1 * i + 0.37 * j)


def redistribute(n):
    """Rows in blocks -> columns in blocks of an n x n array: a VecScatter
    from the row-block Vec to a column-block Vec (each rank pulls its
    columns), made once, run many times."""
    rows = [n // P + (r < n % P) for r in range(P)]
    cols = rows                                     # the same balanced split of n
    r0 = sum(rows[:RANK])
    c0 = sum(cols[:RANK])
    x = PETSc.Vec().createMPI((rows[RANK] * n, n * n), comm=COMM)
    y = PETSc.Vec().createMPI((n * cols[RANK], n * n), comm=COMM)
    i, j = np.meshgrid(np.arange(r0, r0 + rows[RANK]), np.arange(n), indexing="ij")
    x.getArray()[:] = field(i, j).ravel()
    # y's entries in its order: (row i, column j) for every i and my columns j
    ii, jj = np.meshgrid(np.arange(n), np.arange(c0, c0 + cols[RANK]), indexing="ij")
    source = PETSc.IS().createGeneral((ii * n + jj).ravel().astype(PETSc.IntType), comm=COMM)
    target = PETSc.IS().createStride(n * cols[RANK], first=y.getOwnershipRange()[0], step=1,
                                     comm=COMM)
    scatter = PETSc.Scatter().create(x, source, y, target)

    def run():
        scatter.scatter(x, y, addv=PETSc.InsertMode.INSERT_VALUES,
                        mode=PETSc.ScatterMode.FORWARD)
    run()
    check = COMM.allreduce(float(np.dot(y.getArray(), np.arange(y.getLocalSize()) % 7)))
    return run, check


def halo(n):
    """The ghost cells of an n x n grid, 1 cell, the 5-point stencil's star:
    ``DMDA.globalToLocal`` into the ghosted local vector."""
    da = PETSc.DMDA().create(dim=2, sizes=(n, n), stencil_width=1,
                             stencil_type=PETSc.DMDA.StencilType.STAR, comm=COMM)
    g, loc = da.createGlobalVec(), da.createLocalVec()
    (xs, xe), (ys, ye) = da.getRanges()
    i, j = np.meshgrid(np.arange(xs, xe), np.arange(ys, ye), indexing="ij")
    da.getVecArray(g)[:] = field(i, j)

    def run():
        da.globalToLocal(g, loc)
    run()
    return run, COMM.allreduce(float(loc.getArray().sum()))


def cg(rows, cols, iters):
    """CG on the periodic 2-D operator of benchmarks/solvers.py, ``(1 + 4c) u
    - c (its four neighbours)``, ``rows`` x ``cols`` a rank in row blocks:
    KSPCG on the DMDA's AIJ matrix, no preconditioner, the natural norm
    (CG's own (r, r): two reductions an iteration, as the namespace's), a
    fixed number of iterations.  Returns (run, check): the solution's norm
    after ``iters``."""
    # DMDA stores x fastest: x is the columns, y the rows, the rows split over
    # the ranks -- each rank's block is its rows, contiguous, as the namespace's
    bx = PETSc.DM.BoundaryType.PERIODIC
    da = PETSc.DMDA().create(dim=2, sizes=(cols, rows * P), proc_sizes=(1, P),
                             boundary_type=(bx, bx), stencil_width=1,
                             stencil_type=PETSc.DMDA.StencilType.STAR, comm=COMM)
    A = da.createMatrix()
    (xs, xe), (ys, ye) = da.getRanges()
    row = PETSc.Mat.Stencil()
    col = PETSc.Mat.Stencil()
    for j in range(ys, ye):
        for i in range(xs, xe):
            row.index = (i, j)
            for (di, dj), v in (((0, 0), 1 + 4 * C), ((-1, 0), -C), ((1, 0), -C),
                                ((0, -1), -C), ((0, 1), -C)):
                col.index = (i + di, j + dj)          # past an edge: the periodic ghost
                A.setValueStencil(row, col, v, addv=PETSc.InsertMode.ADD_VALUES)
    A.assemble()
    b, x = da.createGlobalVec(), da.createGlobalVec()
    i, j = np.meshgrid(np.arange(xs, xe), np.arange(ys, ye), indexing="ij")
    da.getVecArray(b)[:] = field(j, i)                # (row, column)
    ksp = PETSc.KSP().create(comm=COMM)
    ksp.setOperators(A)
    ksp.setType("cg")
    ksp.getPC().setType("none")
    ksp.setNormType(PETSc.KSP.NormType.NATURAL)
    ksp.setTolerances(rtol=0.0, atol=0.0, max_it=iters)
    ksp.setInitialGuessNonzero(False)
    ksp.setUp()

    def run():
        x.set(0.0)
        ksp.solve(b, x)
    run()
    # every iteration ran (no early stop: rtol = atol = 0, KSP_DIVERGED_ITS)
    assert ksp.getIterationNumber() == iters, (ksp.getIterationNumber(), ksp.getConvergedReason())
    return run, float(x.norm())


def reductions(n):
    """``sum``, ``dot`` and ``norm`` of a Vec of n values a rank."""
    x = PETSc.Vec().createMPI((n, n * P), comm=COMM)
    y = x.duplicate()
    lo, hi = x.getOwnershipRange()
    x.getArray()[:] = field(np.arange(lo, hi), 0)
    y.getArray()[:] = field(np.arange(lo, hi), 1)
    def norm():
        x.stateIncrease()            # a Vec caches its norm until it changes: as a loop's does
        return x.norm()
    return {"sum": (x.sum, float(x.sum())), "dot": (lambda: x.dot(y), float(x.dot(y))),
            "norm": (norm, float(norm()))}


def main():
    out = sys.argv[1]
    with open(sys.argv[2]) as f:
        sizes = json.load(f)
    rows = []

    def timed(work, run, check, seconds=1.0):
        med, _, _ = bench([run], budget=seconds, min_reps=5, block=1)
        rows.append({"work": work, "impl": "petsc", "ranks": P, "seconds": float(med[0]),
                     "check": check})

    run, check = redistribute(sizes["redistribute"])
    timed("redistribute", run, check)
    run, check = halo(sizes["halo"])
    timed("halo", run, check)
    for key, (rows_, cols, iters) in sizes["cg"].items():
        run, check = cg(rows_, cols, iters)
        med, _, _ = bench([run], budget=1.0, min_reps=5, block=1)
        rows.append({"work": key, "impl": "petsc", "ranks": P, "seconds": float(med[0]) / iters,
                     "check": check})
    for name, (run, check) in reductions(sizes["reductions"]).items():
        timed(name, run, check, 0.5)
    if RANK == 0:
        with open(out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps({"versions": {"petsc": ".".join(map(str, PETSc.Sys.getVersion())),
                                             "petsc4py": petsc4py.__version__,
                                             "python (petsc)": sys.version.split()[0],
                                             "numpy (petsc)": np.__version__}}) + "\n")


if __name__ == "__main__":
    main()
    MPI.COMM_WORLD.Barrier()
