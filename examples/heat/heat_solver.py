"""The 2-D heat equation, as a user writes it with xdap: Jacobi iterations on
a block-distributed grid with a one-cell halo, a stencil kernel of one's own
(heat.c, built from heat-kernels.cfg), bound halo exchanges and a residual
reduction every few steps.

    .venv/bin/mpiexec -n 4 .venv/bin/python examples/heat/heat_solver.py [N] [STEPS]

The grid is N x N (default 512): the top edge holds sin(pi x), the left edge
x (along y), the others 0 -- fixed (Dirichlet) values; the interior starts at
0.  Each
step every interior cell becomes the mean of its four neighbours.  Every rank
holds a block with a one-cell rim: where the block meets the grid's edge the
rim is the fixed boundary (DAP's boundary padding, owned, never updated),
elsewhere it is ghost cells of the neighbouring blocks.  So the kernel needs
no special case: it updates the inside of the block, the rim is either
fixed or filled by the exchange.
"""
from __future__ import annotations

import pathlib
import sys

import numpy as np
from mpi4py import MPI

import xdap

HERE = pathlib.Path(__file__).resolve().parent


def build_kernel(comm, out_dir=None):
    """The ``heat`` module (its ``jacobi`` kernel): built once by rank 0 into
    ``out_dir`` (default build/examples/heat next to the repository), when
    missing or older than its sources; every rank imports it."""
    out_dir = pathlib.Path(out_dir or HERE.parent.parent / "build" / "examples" / "heat")
    error = None
    if comm.rank == 0:
        try:
            import sysconfig
            target = out_dir / ("heat" + sysconfig.get_config_var("EXT_SUFFIX"))
            sources = [HERE / n for n in ("heat.c", "heat.h", "heat-kernels.cfg")]
            if not target.exists() or target.stat().st_mtime < max(s.stat().st_mtime
                                                                    for s in sources):
                out_dir.mkdir(parents=True, exist_ok=True)
                xdap.codegen.build(HERE / "heat-kernels.cfg", out_dir, extra_cflags=("-O3",))
        except Exception as e:           # one rank's failure is every rank's error
            error = f"{type(e).__name__}: {e}"
    error = comm.bcast(error, root=0)
    if error:
        raise RuntimeError(f"building the heat kernel failed: {error}")
    if str(out_dir) not in sys.path:
        sys.path.insert(0, str(out_dir))
    import heat
    return heat


def initial(i, j, shape):
    """The starting grid at global indices (i, j) of a grid of ``shape``:
    sin(pi x) along the top edge, x along the left edge, 0 elsewhere."""
    ny, nx = shape
    u = np.zeros(np.broadcast_shapes(np.shape(i), np.shape(j)))
    top = np.broadcast_to(i == 0, u.shape)
    left = np.broadcast_to(j == 0, u.shape) & ~top
    u[top] = np.broadcast_to(np.sin(np.pi * np.linspace(0.0, 1.0, nx)[j]), u.shape)[top]
    u[left] = np.broadcast_to(np.linspace(0.0, 1.0, ny)[i], u.shape)[left]
    return u


def solve(shape, steps, comm=None, every=10, jacobi=None):
    """``steps`` Jacobi steps on a grid of ``shape`` (an int: square);
    returns ``(u, residuals)``: the final grid (a DistArray) and the largest
    change of a step, every ``every`` steps (on every rank)."""
    comm = comm or MPI.COMM_WORLD
    shape = (shape, shape) if isinstance(shape, int) else tuple(shape)
    jacobi = jacobi or build_kernel(comm).jacobi
    grid = tuple(xdap.comm.balanced_grid(comm.size, 2))
    u = xdap.from_function(lambda i, j: initial(i, j, shape), shape, dist=("b", "b"),
                           grid=grid, padding=((1, 1), (1, 1)), comm=comm)
    v = u.copy()                         # the next step's grid: the same boundary
    fill_u, fill_v = u.bind_halos(), v.bind_halos()   # agreed once, persistent requests
    fill_u()
    residuals = []
    for step in range(1, steps + 1):
        jacobi(u.local, v.local)         # this rank's block: v's inside from u
        fill_v()                         # v's ghost cells from its neighbours
        if step % every == 0:
            residuals.append(float(abs(v - u).max()))     # owned cells only: collective
        u, v, fill_u, fill_v = v, u, fill_v, fill_u
    return u, residuals


def serial(shape, steps) -> np.ndarray:
    """The same iterations on one process, with NumPy (the reference)."""
    shape = (shape, shape) if isinstance(shape, int) else tuple(shape)
    i, j = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    u = initial(i, j, shape)
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    comm = MPI.COMM_WORLD
    t0 = MPI.Wtime()
    u, residuals = solve(n, steps, comm)
    took = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
    got = u.to_numpy(root=0)
    if comm.rank == 0:
        same = np.array_equal(got, serial(n, steps)) if n <= 1024 else None
        print(f"{steps} steps on {n} x {n}, {comm.size} ranks: {took:.2f} s; "
              f"largest change per step {residuals[0]:.3g} -> {residuals[-1]:.3g}"
              + ("" if same is None else f"; equal to serial NumPy: {same}"))
        if same is False:
            sys.exit(1)
