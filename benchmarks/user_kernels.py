"""Kernels a user writes (.cfg -> xdap kernel build) versus xdap's own
library and NumPy, one run, ratios.

    .venv/bin/python benchmarks/user_kernels.py      # builds into a temp dir, ~1 min

On one rank (COMM_SELF: the work of a kernel call is local to each rank),
on DistArrays, the same memory for every side:
  elementwise  hypot of 10^7 float64 by a generated kernel (ops.cfg's
               ``hyp``) vs xdap.kernels.hypot vs np.hypot: target <= 1.1x
               the built-in
  row sum      ``N * float64 -> float64`` on 1.25 * 10^6 rows of 8
               (linalg.cfg's ``rowsum``) vs ``np.sum(axis=1)``: <= 1.5x
  mat-vec      ``M * N * float64, N * float64 -> M * float64`` on 10^5
               stacked 8 x 8 matrices (and 2,000 of 64 x 64), one vector
               per matrix, vs the faster of ``np.matmul`` and ``np.einsum``:
               <= 1.5x;
               a row-distributed 4096 x 4096 matrix times a replicated
               vector through linalg.cfg's dot kernel (its loop dim is
               the rows; four partial sums, as NumPy's own loops)
               vs ``np.einsum`` (and BLAS's ``g @ v``, reported)
  overhead     one call on 10 float64 DistArray elements, generated vs
               built-in: <= 1.5x
Timing: interleaved repetitions, median (benchmarks/_harness.py).  Always exits 0; a missed target
prints FAIL.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
from mpi4py import MPI

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import _harness                                 # noqa: E402
import xdap                                     # noqa: E402
from helpers import import_module_at            # noqa: E402
from xdap import kernels as K                   # noqa: E402
from xdap.codegen import build                  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "kernel_examples"
SELF = MPI.COMM_SELF


def bench(fns):
    """Median seconds of each fn, interleaved (benchmarks/_harness.py)."""
    return _harness.bench(fns, collective=False)[0]


def per_call(fn):
    """Median seconds of one short call."""
    return _harness.bench([fn], budget=0.3, max_reps=20000, collective=False)[0][0]


def line(what, t, base, target):
    r = t / base
    print(f"  {what:34s} {t*1e3:9.3f} ms  ratio {r:5.2f}  (target <= {target}) "
          f"{'ok' if r <= target else 'FAIL'}", flush=True)


def main():
    work = pathlib.Path(tempfile.mkdtemp(prefix="xdap-bench-kernels-"))
    ops = import_module_at(build(EXAMPLES / "ops.cfg", work / "ops"), "xk_testops")
    lin = import_module_at(build(EXAMPLES / "linalg.cfg", work / "lin"), "xk_linalg")
    rng = np.random.default_rng(0)

    print("elementwise: hypot of 10^7 float64 (DistArrays, one rank)")
    a, b = rng.uniform(0.1, 10, (2, 10_000_000))
    A, B = xdap.from_global(a, comm=SELF), xdap.from_global(b, comm=SELF)
    out = xdap.zeros(a.shape, comm=SELF)
    t_user, t_lib, t_np = bench([lambda: ops.hyp(A, B), lambda: K.hypot(A, B),
                                 lambda: np.hypot(a, b)])
    np.testing.assert_allclose(ops.hyp(A, B).to_numpy(), np.hypot(a, b), rtol=1e-15)
    line("generated / built-in", t_user, t_lib, 1.1)
    print(f"  (generated {t_user*1e3:.1f} ms, built-in {t_lib*1e3:.1f} ms, "
          f"NumPy {t_np*1e3:.1f} ms: generated / NumPy {t_user / t_np:.2f})")
    t_user, t_lib = bench([lambda: ops.hyp(A, B, out=out), lambda: K.hypot(A, B, out=out)])
    line("generated / built-in, out=", t_user, t_lib, 1.1)

    print("row sum: N * float64 -> float64, 1.25e6 rows of 8")
    m = rng.standard_normal((1_250_000, 8))
    M = xdap.from_global(m, comm=SELF)
    t_user, t_np = bench([lambda: lin.rowsum(M), lambda: np.sum(m, axis=1)])
    np.testing.assert_allclose(lin.rowsum(M).to_numpy(), m.sum(axis=1), rtol=0, atol=1e-12)
    line("rowsum / np.sum(axis=1)", t_user, t_np, 1.5)

    for count, n in ((100_000, 8), (2_000, 64)):
        print(f"mat-vec: M * N * float64, N * float64 -> M * float64, {count} stacked "
              f"{n} x {n}")
        s = rng.standard_normal((count, n, n))
        x = rng.standard_normal((count, n))
        S, X = xdap.from_global(s, comm=SELF), xdap.from_global(x, comm=SELF)
        t_user, t_mm, t_es = bench([lambda: lin.matvec(S, X),
                                    lambda: np.matmul(s, x[..., None]),
                                    lambda: np.einsum("rmn,rn->rm", s, x)])
        np.testing.assert_allclose(lin.matvec(S, X).to_numpy(),
                                   np.einsum("rmn,rn->rm", s, x), rtol=1e-12, atol=1e-12)
        line("matvec / best of matmul, einsum", t_user, min(t_mm, t_es), 1.5)
        print(f"  (np.matmul {t_mm*1e3:.1f} ms, np.einsum {t_es*1e3:.1f} ms; the kernel "
              f"{t_user / count * 1e9:.0f} ns a matrix, gumath's call of it included)")

    print("mat-vec of a row-distributed 4096 x 4096 matrix: the dot kernel "
          "(N * float64, N * float64 -> float64) over its rows, x replicated")
    g = rng.standard_normal((4096, 4096))
    v = rng.standard_normal(4096)
    G = xdap.from_global(g, comm=SELF)
    t_user, t_es, t_mv = bench([lambda: lin.dot(G, v), lambda: np.einsum("ij,j->i", g, v),
                                lambda: g @ v])
    np.testing.assert_allclose(lin.dot(G, v).to_numpy(), g @ v, rtol=1e-9, atol=1e-9)
    line("dot rows / np.einsum", t_user, t_es, 1.5)
    print(f"  (np.einsum {t_es*1e3:.1f} ms, g @ v (BLAS) {t_mv*1e3:.1f} ms: "
          f"dot rows / BLAS {t_user / t_mv:.2f})")

    print("overhead: one call on 10 float64 DistArray elements")
    d = xdap.from_global(np.ones(10), comm=SELF)
    t_user, t_lib = per_call(lambda: ops.hyp(d, d)), per_call(lambda: K.hypot(d, d))
    print(f"  generated {t_user*1e6:.2f} us, built-in {t_lib*1e6:.2f} us")
    line("generated / built-in", t_user, t_lib, 1.5)
    r = xdap.from_global(np.ones((10, 8)), comm=SELF)
    t_core = per_call(lambda: lin.rowsum(r))
    print(f"  a core-dim call (rowsum of 10 rows of 8): {t_core*1e6:.2f} us")


if __name__ == "__main__":
    main()
