"""xdap side by side with the libraries users would pick instead, on the
same data in one run: mpi4py-fft on FFTW (FFTs, pencil transposes), PETSc
(scatters, halos, CG, vector reductions), heat (distributed NumPy), and
h5py with MPI by hand (parallel HDF5).

    make peers                                    # builds the peers, then runs this on 1, 2, 4 ranks
    .venv-system/bin/python benchmarks/peers.py [--ranks 1,2,4] [--quick] [--docs]

xdap runs in the venv on the MPI on PATH (``make env MPI=system``: Open
MPI, h5py built with MPI, mpi4py-fft built against FFTW -- the site stack,
``tools/site_stack.sh``), with mpi4py-fft and the hand-written h5py in the
same process.  PETSc runs in a process of its own, right after, under the
same ``mpiexec``: Debian's ``python3`` with ``python3-petsc4py``
(``benchmarks/_peers_petsc.py``); heat in its own venv
(``tools/peers_env.sh``, ``benchmarks/_peers_heat.py``).  Each side's
inputs are made from global indices, so the table can check that both did
the same work (``check``: a value both compute).  A peer that is not
installed is a row that says absent -- never skipped in silence.

Each figure is the median of interleaved repetitions, the slowest rank's;
the table gives xdap / peer.  ``--docs`` writes docs/peers.md: the table,
the versions, and for each row where xdap is slower, why.  Oversubscribed
ranks (more than the cores) make the absolute times meaningless; the
ratios of one run still compare like with like.  Always exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# the work, at the sizes and quicker ones (--quick)
SIZES = {
    "full": {"fft": 256, "redistribute": 4096, "halo": 2048, "reductions": 1_000_000,
             "cg": {"cg 10^3": [10, 100, 40], "cg 10^5": [100, 1000, 10]},
             "heat": 1_000_000, "hdf5": 1 << 27},
    "quick": {"fft": 64, "redistribute": 1024, "halo": 512, "reductions": 100_000,
              "cg": {"cg 10^3": [10, 100, 40], "cg 10^5": [100, 1000, 10]},
              "heat": 100_000, "hdf5": 1 << 22},
}

# (work, peer, target xdap / peer, what) -- the table's rows, in order
ROWS = [
    ("fftn slab", "mpi4py-fft", 1.0, "fftn + ifftn of N^3 complex128 in slabs"),
    ("fftn slab", "mpi4py-fft estimate", None,
     "the same against FFTW's quickest plans (FFTW_ESTIMATE)"),
    ("fftn pencil", "mpi4py-fft", 1.0, "fftn + ifftn of N^3 complex128 in pencils"),
    ("redistribute", "mpi4py-fft", 1.0,
     "rows in blocks -> columns in blocks, N^2 float64, a plan bound once"),
    ("redistribute", "petsc", 1.0,
     "rows in blocks -> columns in blocks, N^2 float64, a plan bound once"),
    ("redistribute new", "mpi4py-fft", None,
     "the same by a.redistribute (a new array each call)"),
    ("halo", "petsc", 1.0, "ghost cells of an N^2 grid, 1 cell (DMDA globalToLocal)"),
    ("cg 10^3", "petsc", None, "CG a step, 2-D 5-point, 10^3 unknowns a rank (KSPCG)"),
    ("cg 10^5", "petsc", 1.5, "CG a step, 2-D 5-point, 10^5 unknowns a rank (KSPCG)"),
    ("sum", "petsc", 1.1, "sum of n float64 a rank (Vec)"),
    ("dot", "petsc", 1.1, "dot of n float64 a rank (Vec)"),
    ("norm", "petsc", 1.1, "2-norm of n float64 a rank (Vec)"),
    ("sort", "heat", 1.0, "sort of n float64 a rank"),
    ("unique", "heat", 1.0, "unique of n int64 a rank (1000 values)"),
    ("a.T", "heat", 1.0, "transpose of a (1000 P, 1000) float64 in row blocks"),
    ("reshape", "heat", 1.0, "(1000 P, 1000) -> (2000 P, 500), row blocks"),
    ("concat", "heat", 1.0, "two n-a-rank float64 arrays, end to end"),
    ("argsort", "heat", 1.0, "argsort of n float64 a rank"),
    ("percentile", "heat", 1.0, "the 90th percentile of n float64 a rank"),
    ("to_hdf5", "h5py", 1.1, "write B float64 collectively (parallel HDF5), fsync'ed"),
    ("from_hdf5", "h5py", 1.1, "read them back, each rank its rows"),
]

# why xdap is slower where it is, and what would close it: what the runs
# showed, each looked into (docs/peers.md)
NOTES = {
    "fftn (slab, pencil)": (
        "two causes, measured apart. (1) Local transforms: xdap calls NumPy's pocketfft, "
        "mpi4py-fft FFTW (planned once; FFTW_ESTIMATE's plans are as fast here, so the "
        "planner is not the difference): pocketfft is 2-3x FFTW on the same complex "
        "N^3 slab on one core. (2) Fresh memory: each xdap call allocates its stages' "
        "outputs, mpi4py-fft writes into arrays it keeps; on this VM first touches of "
        "fresh huge pages stall (one stage 0.1 s with NUMPY_MADVISE_HUGEPAGE=0, up to "
        "1.1 s with it) and the oversubscribed 4-rank column shows it most. To close: a "
        "bound transform (as bind_redistribute) that keeps its stage buffers, and FFTW "
        "(pyfftw) for the local transforms where it is installed."),
    "redistribute": (
        "against PETSc on one rank only (1.27; 0.75 and 0.55 from 2 ranks): there the move "
        "is a local transpose of the whole N^2 float64, NumPy's strided copy, where "
        "PETSc's sequential VecScatter copies through its index arrays; not yet measured "
        "apart. To close: a cache-blocked local transpose for the one-rank case."),
    "redistribute new": (
        "a.redistribute makes a new array each call (allocation and first touch of "
        "N^2/P float64); the peers' idiom, a plan bound once into a kept output, is "
        "xdap's bind_redistribute -- the `redistribute` rows, at the peers' speed."),
    "cg 10^3": (
        "the namespace's CG runs a Python call per vector operation (about 8 a step, "
        "~2-6 us each: benchmarks/call_cost.py) where KSPCG's whole step is one C loop; "
        "the hand-written mpi4py CG pays the same (benchmarks/solvers.py: xdap within "
        "1.2-1.4x of it at 10^3, 1.0-1.1x at 10^5). At 10^5 a rank the work dominates and "
        "xdap is at PETSc's speed."),
    "dot, norm": (
        "the same BLAS call (NumPy's OpenBLAS against PETSc's: 15.8 vs 14.9 us at 10^5 "
        "alone) and one Allreduce; what is left is xdap's vote riding in the Allreduce "
        "(1 KiB up to 4 ranks, against PETSc's 8 B): on the oversubscribed 4-rank "
        "column the larger message waits on a descheduled rank."),
    "unique": (
        "on one rank xdap calls np.unique (a sort of the whole block); heat's "
        "torch.unique on a CPU hashes. From 2 ranks xdap's distributed path is faster."),
    "to_hdf5": (
        "xdap writes a partial file and renames it into place when every rank wrote "
        "(a writer that fails leaves what was there: docs/exchange.md) -- one more "
        "file create, rename and directory entry than h5py's write over the old file. "
        "Both writers are timed to the disk (fsync) so the page cache's writeback of "
        "the previous repeat does not land on the next."),
}


def field(i, j):
    """The inputs every side uses (as ``_peers_petsc.field``)."""
    return np.sin(0.1 * i + 0.37 * j)


# --------------------------------------------------------------------------
# xdap's side (and the peers that share its process)
# --------------------------------------------------------------------------
def xdap_side(out, sizes):
    from mpi4py import MPI
    from _harness import COMM, P, RANK, bench
    import xdap
    import xdap.array_api as xp
    rows = []

    def put(work, impl, seconds, check=None):
        row = {"work": work, "impl": impl, "ranks": P, "seconds": float(seconds),
               "check": check}
        rows.append(row)
        if RANK == 0:                     # as it comes: a later failure keeps what ran
            with open(out, "a") as f:
                f.write(json.dumps(row) + "\n")

    def total(v):
        return COMM.allreduce(float(v))

    # -- FFTs: slabs and pencils, forward and back --------------------------
    n = sizes["fft"]
    try:
        from mpi4py_fft import PFFT, newDistArray
    except ImportError:
        PFFT = None
    for layout, dist in (("slab", ("b",)), ("pencil", ("b", "b"))):
        a = xdap.from_function(lambda i, j, k: np.sin(i * 0.1 + j * 0.03) + 1j * np.cos(k * 0.07),
                               (n, n, n), type="complex128", dist=dist, comm=COMM)

        def mine():        # back where it started, as mpi4py-fft's backward lands
            return xp.fft.ifftn(xp.fft.fftn(a, layout="transposed"), layout="transposed")
        back = mine()
        check = total(np.vdot(back.local_numpy(), back.local_numpy()).real)
        fns = [mine]
        if PFFT is not None:
            fft = PFFT(COMM, (n, n, n), axes=(0, 1, 2), dtype=np.complex128,
                       slab=layout == "slab", backend="fftw")
            u = newDistArray(fft, False)
            i, j, k = np.ix_(*[np.arange(sl.start, sl.stop) for sl in fft.local_slice(False)])
            u[...] = np.sin(i * 0.1 + j * 0.03) + 1j * np.cos(k * 0.07)
            u_hat = newDistArray(fft, True)
            v = newDistArray(fft, False)

            def theirs():
                fft.forward(u, u_hat)
                fft.backward(u_hat, v)
            theirs()
            their_check = total(np.vdot(v, v).real)
            fns.append(theirs)
            if layout == "slab":            # the planner's part: FFTW's quickest plans
                quick = PFFT(COMM, (n, n, n), axes=(0, 1, 2), dtype=np.complex128, slab=True,
                             backend="fftw", planner_effort="FFTW_ESTIMATE")
                q_hat = newDistArray(quick, True)

                def estimated():
                    quick.forward(u, q_hat)
                    quick.backward(q_hat, v)
                fns.append(estimated)
        med, _, _ = bench(fns, budget=3.0, min_reps=3, max_reps=50, block=1)
        put(f"fftn {layout}", "xdap", med[0], check)
        if PFFT is not None:
            put(f"fftn {layout}", "mpi4py-fft", med[1], their_check)
            if layout == "slab":
                put("fftn slab", "mpi4py-fft estimate", med[2], their_check)

    # -- redistribution: rows in blocks -> columns in blocks -----------------
    n = sizes["redistribute"]
    a = xdap.from_function(lambda i, j: field(i, j), (n, n), type="float64", dist=("b", "n"),
                           comm=COMM)
    # the peers' idiom is a plan made once, moving into an output it keeps
    # (mpi4py-fft's Transfer, PETSc's VecScatter): xdap's is bind_redistribute
    bound = a.bind_redistribute(dist=("n", "b"))
    loc = bound().local_numpy()
    check = total(np.dot(loc.ravel(), np.arange(loc.size) % 7))
    fns = [bound, lambda: a.redistribute(dist=("n", "b"))]
    try:
        from mpi4py_fft.pencil import Pencil, Subcomm
        p0 = Pencil(Subcomm(COMM, [0, 1]), (n, n), axis=1)
        p1 = p0.pencil(0)
        transfer = p0.transfer(p1, np.float64)
        x0, x1 = np.empty(p0.subshape), np.empty(p1.subshape)
        x0[...] = a.local_numpy()
        fns.append(lambda: transfer.forward(x0, x1))
        fns[-1]()
        their_check = total(np.dot(x1.ravel(), np.arange(x1.size) % 7))
    except ImportError:
        transfer = None
    med, _, _ = bench(fns, budget=2.0, min_reps=5, block=1)
    put("redistribute", "xdap", med[0], check)
    put("redistribute new", "xdap", med[1], check)
    if transfer is not None:
        put("redistribute", "mpi4py-fft", med[2], their_check)
        put("redistribute new", "mpi4py-fft", med[2], their_check)

    # -- halos of a 2-D grid ----------------------------------------------------
    n = sizes["halo"]
    g = xdap.from_function(lambda i, j: field(i, j), (n, n), type="float64", dist=("b", "b"),
                           padding=((1, 1), (1, 1)), comm=COMM)
    med, _, _ = bench([g.exchange_halos], budget=1.0, min_reps=10, block=5)
    put("halo", "xdap", med[0])

    # -- CG on the 2-D 5-point operator (benchmarks/solvers.py's) ---------------
    import solvers
    for key, (r, c, iters) in sizes["cg"].items():
        lo = RANK * r
        b = xdap.from_local(field(*np.meshgrid(np.arange(lo, lo + r), np.arange(c),
                                               indexing="ij")), comm=COMM)

        def run():
            return solvers.cg(solvers.apply_xp, solvers.dot_xp,
                              lambda u: xp.asarray(u, copy=True), b, b * 0.0, iters)
        x, _ = run()
        med, _, _ = bench([run], budget=1.0, min_reps=5, block=1)
        put(key, "xdap", med[0] / iters, float(xp.linalg.vector_norm(x)))

    # -- reductions of n values a rank -------------------------------------
    n = sizes["reductions"]
    lo = RANK * n
    v = xdap.from_local(field(np.arange(lo, lo + n), 0), comm=COMM)
    w = xdap.from_local(field(np.arange(lo, lo + n), 1), comm=COMM)
    for name, fn in (("sum", lambda: xp.sum(v)), ("dot", lambda: xp.vecdot(v, w)),
                     ("norm", lambda: xp.linalg.vector_norm(v))):
        med, _, _ = bench([fn], budget=0.5, min_reps=10, block=5)
        put(name, "xdap", med[0], float(fn()))

    # -- the heat rows' xdap side -------------------------------------------
    n = sizes["heat"]
    rng = np.random.default_rng(11 + RANK)
    s = xdap.from_local(rng.random(n), comm=COMM)
    t = xdap.from_local(rng.random(n), comm=COMM)
    ints = xdap.from_local(rng.integers(0, 1000, n), comm=COMM)
    m = xdap.from_local(rng.random((1000, 1000)), comm=COMM)
    for name, fn in (("sort", lambda: xp.sort(s)), ("unique", lambda: xp.unique_values(ints)),
                     ("a.T", lambda: m.T), ("reshape", lambda: xp.reshape(m, (2000 * P, 500))),
                     ("concat", lambda: xp.concat([s, t])), ("argsort", lambda: xp.argsort(s)),
                     ("percentile", lambda: xdap.percentile(s, 90))):
        got = fn()
        check = float(xp.sum(got)) if name == "unique" else float(got) \
            if name == "percentile" else None
        med, _, _ = bench([fn], budget=1.0, min_reps=5, block=1)
        put(name, "xdap", med[0], check)

    # -- parallel HDF5: xdap's writer and reader, and h5py with MPI by hand ------
    import h5py
    count = sizes["hdf5"]
    per = count // P
    h = xdap.from_local(field(np.arange(RANK * per, (RANK + 1) * per), 2), comm=COMM)
    tmp = COMM.bcast(tempfile.mkdtemp(prefix="xdap-peers-", dir=ROOT + "/build")
                     if RANK == 0 else None)
    mine, theirs = os.path.join(tmp, "xdap.h5"), os.path.join(tmp, "hand.h5")
    local = h.local_numpy()

    def durable(path):
        # both writers end on the disk: without it the time is the page
        # cache's writeback of the previous repeat, which varied 3x run to run
        if RANK == 0:
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        COMM.Barrier()

    def write_mine():
        h.to_hdf5(mine, "x", mode="w")
        durable(mine)

    def write_theirs():
        with h5py.File(theirs, "w", driver="mpio", comm=COMM) as f:
            ds = f.create_dataset("x", (per * P,), np.float64)
            with ds.collective:
                ds[RANK * per:(RANK + 1) * per] = local
        durable(theirs)

    def read_mine():
        return xdap.from_hdf5(mine, "x", comm=COMM)

    def read_theirs():
        with h5py.File(theirs, "r", driver="mpio", comm=COMM) as f:
            ds = f["x"]
            with ds.collective:
                return ds[RANK * per:(RANK + 1) * per]
    if h5py.get_config().mpi:
        write_mine(), write_theirs()
        med, _, _ = bench([write_mine, write_theirs], budget=4.0, min_reps=3, max_reps=20,
                          block=1)
        put("to_hdf5", "xdap", med[0], total(local.sum()))
        put("to_hdf5", "h5py", med[1], total(local.sum()))
        same = np.array_equal(read_mine().local_numpy(), read_theirs())
        med, _, _ = bench([read_mine, read_theirs], budget=4.0, min_reps=3, max_reps=20,
                          block=1)
        put("from_hdf5", "xdap", med[0], total(read_mine().local_numpy().sum()))
        put("from_hdf5", "h5py", med[1], total(read_theirs().sum()) if same else None)
    COMM.Barrier()
    if RANK == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        versions = {"xdap": xdap.__version__, "numpy": np.__version__,
                    "mpi": MPI.Get_library_version().splitlines()[0].strip(),
                    "h5py": f"{h5py.__version__} (HDF5 {h5py.version.hdf5_version}, "
                            f"MPI {'yes' if h5py.get_config().mpi else 'no'})",
                    "python": sys.version.split()[0]}
        try:
            import mpi4py_fft
            versions["mpi4py-fft"] = f"{mpi4py_fft.__version__} (FFTW backend)"
        except ImportError:
            pass
        with open(out, "a") as f:
            f.write(json.dumps({"versions": versions}) + "\n")


# --------------------------------------------------------------------------
# the parent: launch the sides back to back, then the table
# --------------------------------------------------------------------------
PETSC_PYTHON = "/usr/bin/python3"
WHERE = {"petsc": "Debian's python3-petsc4py on /usr/bin/python3",
         "heat": ".venv-heat, made by tools/peers_env.sh"}
HEAT_VENV = os.path.join(ROOT, ".venv-heat")


def _has(python, module) -> bool:
    return os.path.exists(python) and subprocess.run(
        [python, "-c", f"import {module}"], capture_output=True).returncode == 0


def launch(ranks, python, script, args, env=None) -> int:
    from xdap.launcher import clean_environment, mpiexec_command
    env = clean_environment(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **(env or {}))
    r = subprocess.run(mpiexec_command(ranks) + [python, script] + args, env=env,
                       timeout=3600)
    if r.returncode:
        print(f"(mpiexec -n {ranks} {os.path.basename(script)} exited with {r.returncode})")
    return r.returncode


def table(rows, ranks, absent=()) -> tuple:
    """(Markdown table, verdict lines); ``absent``: the peers not installed
    (a missing figure of another is a side that failed: its output says why)."""
    by = {}
    for r in rows:
        if "work" in r:
            by[(r["work"], r["impl"], r["ranks"])] = r
    out = ["| work | peer | " + " | ".join(f"{p} rank{'s' * (p > 1)}: xdap / peer" for p in ranks)
           + " | target |", "|---|---|" + "---|" * len(ranks) + "---|"]
    verdicts = []
    for work, peer, target, what in ROWS:
        cells = []
        for p in ranks:
            mine, theirs = by.get((work, "xdap", p)), by.get((work, peer, p))
            if theirs is None:
                cells.append(f"{peer}: absent" if peer in absent else f"{peer}: --")
                continue
            if mine is None:
                cells.append("xdap: --")
                continue
            ratio = mine["seconds"] / theirs["seconds"]
            same = ""
            if mine.get("check") is not None and theirs.get("check") is not None:
                ok = np.isclose(mine["check"], theirs["check"], rtol=1e-6, atol=1e-9)
                same = "" if ok else " (results differ)"
            cells.append(f"**{ratio:.2f}** ({_t(mine['seconds'])} / {_t(theirs['seconds'])})"
                         + same)
            judged = target is not None
            verdicts.append(f"RESULT peers_{work.replace(' ', '_').replace('^', '')}_{peer}_"
                            f"{p}_ranks={ratio:.2f} (xdap / {peer}; target "
                            f"{'<= ' + str(target) if judged else 'report'}) "
                            + ("INFO" if not judged else "PASS" if ratio <= target and not same
                               else "FAIL"))
        out.append(f"| {what} (`{work}`) | {peer} | " + " | ".join(cells) +
                   f" | {'<= ' + str(target) if target else 'report'} |")
    return "\n".join(out), verdicts


def _t(seconds) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else \
        f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("--rows", help="the table (and docs) from a run's rows (build/peers-rows.jsonl), "
                                   "measuring nothing")
    ap.add_argument("--side", choices=("xdap",), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = SIZES["quick" if args.quick else "full"]
    if args.side == "xdap":
        xdap_side(args.out, sizes)
        return
    ranks = [int(r) for r in args.ranks.split(",")]
    if args.rows:
        rows = [json.loads(line) for line in open(args.rows)]
        report(rows, sorted({r["ranks"] for r in rows if "ranks" in r}), args,
               [w for w in ("petsc", "heat") if not any(r.get("impl") == w for r in rows)])
        return
    if os.path.exists(os.path.join(os.path.dirname(sys.executable), "mpiexec")) and \
            not os.environ.get("XDAP_MPIEXEC", "").strip():
        # the venv on the MPICH wheel (make bench): PETSc and heat run on the MPI
        # on PATH, and mpi4py-fft and parallel HDF5 live in the venv built on it
        print("peers.py runs the peers on the MPI on PATH, in .venv-system: `make peers` "
              "(skipped in this venv, whose MPI is the mpich wheel's)")
        return
    if not os.environ.get("XDAP_MPIEXEC", "").strip():
        # the venv on the MPI on PATH: its launcher, with the flags this machine needs
        os.environ["XDAP_MPIEXEC"] = subprocess.run(
            ["bash", os.path.join(ROOT, "tools", "system_mpiexec.sh")], capture_output=True,
            text=True).stdout.strip()
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="xdap-peers-")
    out = os.path.join(work, "rows.jsonl")
    sizes_file = os.path.join(work, "sizes.json")
    with open(sizes_file, "w") as f:
        json.dump(sizes, f)
    petsc = _has(PETSC_PYTHON, "petsc4py")
    heat_python = os.path.join(HEAT_VENV, "bin", "python")
    heat = _has(heat_python, "heat")
    absent = [name for name, have in (("petsc", petsc), ("heat", heat)) if not have]
    for p in ranks:
        launch(p, sys.executable, os.path.abspath(__file__),
               ["--side", "xdap", "--out", out] + (["--quick"] if args.quick else []))
        if petsc:
            launch(p, PETSC_PYTHON, os.path.join(HERE, "_peers_petsc.py"), [out, sizes_file])
        if heat:
            launch(p, heat_python, os.path.join(HERE, "_peers_heat.py"), [out, sizes_file])
    rows = [json.loads(line) for line in open(out)] if os.path.exists(out) else []
    with open(os.path.join(ROOT, "build", "peers-rows.jsonl"), "w") as f:   # --rows reads it
        f.writelines(json.dumps(r) + "\n" for r in rows)
    report(rows, ranks, args, absent + [
        name for name, module in (("mpi4py-fft", "mpi4py_fft"), ("mpi4py-fft estimate", "mpi4py_fft"),
                                  ("h5py", "h5py"))
        if not _has(sys.executable, module)])


def report(rows, ranks, args, absent):
    """Print the table and its verdicts; ``--docs``: docs/peers.md too."""
    text, verdicts = table(rows, ranks, absent)
    versions = {}
    for r in rows:
        versions.update(r.get("versions", {}))
    print(text)
    for line in verdicts:
        print(line)
    for name in absent:
        print(f"absent: {name} ({WHERE.get(name, 'not installed')}) -- its rows say so")
    if args.docs:
        write_docs(text, versions, ranks, absent, args.quick)


def write_docs(text, versions, ranks, absent, quick):
    sizes = SIZES["quick" if quick else "full"]
    lines = [DOC_HEAD.format(ranks=", ".join(map(str, ranks)), **{
        "fft": sizes["fft"], "redistribute": sizes["redistribute"], "halo": sizes["halo"],
        "reductions": sizes["reductions"], "heat": sizes["heat"],
        "hdf5": f"{sizes['hdf5'] * 8 / 2 ** 30:.2g} GiB"}), text, "",
             "Versions (this run):", ""]
    lines += [f"- {k}: {v}" for k, v in sorted(versions.items())]
    lines += [f"- absent: {name} ({WHERE.get(name, 'not installed')})" for name in absent]
    if NOTES:
        lines += ["", "## Where xdap is slower, and what would close it", ""]
        lines += [f"- **{k}**: {v}" for k, v in NOTES.items()]
    with open(os.path.join(ROOT, "docs", "peers.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


DOC_HEAD = """# xdap and its peers, side by side

`benchmarks/peers.py` (`make peers`) runs the same work with xdap and with
the library a user would pick instead, on the same data, in one run:
mpi4py-fft on FFTW, PETSc, heat, and h5py with MPI by hand.  xdap, mpi4py-fft
and h5py share one process (the venv on the MPI on PATH, `make env
MPI=system`); PETSc (Debian's `python3-petsc4py`) and heat (`.venv-heat`)
run in processes of their own, launched right after under the same
`mpiexec`.  Each cell is xdap / peer (the medians of interleaved
repetitions, the slowest rank's), below 1 where xdap is faster; a cell says
so where the two results differ.  Ranks {ranks} on the 2-core development
machine: 4 ranks oversubscribe it (ratios compare like with like; absolute
times and scaling do not).

Sizes: FFTs of {fft}^3, redistribution of {redistribute}^2, halos of a
{halo}^2 grid, reductions of {reductions} values a rank, heat's rows {heat}
values a rank, HDF5 {hdf5}.

"""


if __name__ == "__main__":
    main()
