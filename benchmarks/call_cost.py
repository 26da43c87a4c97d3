"""Every call's fixed cost: each public function of the Array API namespace
(``xdap.array_api``, its ``linalg`` and ``fft`` extensions) and the array's
methods and operators, on tiny inputs -- 10 float64 a rank, split over the
ranks -- against the same call written by hand: NumPy on the rank's block
plus the collectives it needs, as buffers.  One run on 1 rank and one on 2.

    .venv/bin/python benchmarks/call_cost.py            # spawns mpiexec -n 1 and -n 2
    .venv/bin/python benchmarks/call_cost.py --docs     # ... and writes docs/call_cost.md

For each call: xdap's time and the hand version's (medians of interleaved
repetitions, the slowest rank's), the difference -- the call's fixed cost
-- and the MPI calls each made, counted on the communicator the arrays live
on (an ``MPI.Intracomm`` subclass that counts its communication methods).
Target (issue 48): the fixed cost at most 5 us plus the messages the hand
version needs, and no message more than it sends.  By hand, a view or an
elementwise function is NumPy on the block (no message); a reduction
NumPy's plus one ``Allreduce``; a roll or a ``diff`` one ``Sendrecv`` of the
boundary; sort, unique, take and the other calls that need the others'
elements, for 10 of them, one ``Allgatherv`` and NumPy on the result.
Then the targets beside the table (``targets``): a roll of 10^5 a rank,
an unbound halo exchange, the views' whole time, and what debug mode costs
a call.  Always exits 0; a row that misses the target says so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _harness  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 10                         # elements a rank
BUDGET_US = 5.0                # the fixed cost a call may add (plus the hand version's messages)


# method names of a communicator that are not communication (as tests/test_local_work.py)
_QUIET = {"Get_rank", "Get_size", "Get_attr", "Set_attr", "Compare", "Get_group",
          "Get_topology", "Is_inter", "Is_intra", "Get_name", "Get_info", "Clone", "Free",
          "Dup", "Split", "Create_cart", "Sub", "Get_cart_rank", "Get_coords"}
_PICKLED = {"allgather", "allreduce", "alltoall", "bcast", "gather", "scatter", "barrier",
            "send", "recv", "isend", "irecv", "sendrecv", "reduce", "exscan", "scan"}


class Counting(MPI.Intracomm):
    """COMM_WORLD, counting every communication method called on it."""
    calls = 0
    on = False

    def __getattribute__(self, name):
        if Counting.on and ((name[:1].isupper() and name not in _QUIET) or name in _PICKLED):
            Counting.calls += 1
        return super().__getattribute__(name)


def cases(comm):
    """[(name, xdap call, hand call)]: every row of the table, the arrays
    built on ``comm`` (each rank N values; 2-D: rows in blocks)."""
    import xdap
    import xdap.array_api as xp
    from xdap.api.elementwise import STANDARD
    rank, P = comm.rank, comm.size
    rng = np.random.default_rng(5 + rank)
    x = rng.random(N) + 0.5                  # in (0.5, 1.5): every function's domain
    y = rng.random(N) + 0.5
    ints, intsb = rng.integers(1, 5, N), rng.integers(1, 5, N)
    bools = rng.random(N) < 0.5
    a, b = xdap.from_local(x.copy(), comm=comm), xdap.from_local(y.copy(), comm=comm)
    ia, ib = xdap.from_local(ints.copy(), comm=comm), xdap.from_local(intsb.copy(), comm=comm)
    ba = xdap.from_local(bools.copy(), comm=comm)
    xm = rng.random((N // 2, 2)) + 0.5       # rows in blocks, 10 values a rank
    m = xdap.from_local(xm.copy(), comm=comm)
    xs = rng.random((N // 2, 2, 2)) + np.eye(2) * 2   # a stack of 2x2 matrices, split by the stack
    st = xdap.from_local(xs.copy(), comm=comm)
    xsym = xs + xs.transpose(0, 2, 1)
    sym = xdap.from_local(xsym.copy(), comm=comm)
    s0, t0 = xp.sum(a), xp.max(a)            # 0-d arrays
    xsort = np.sort(x) + rank * 2.0          # globally sorted in blocks
    sa = xdap.from_local(xsort.copy(), comm=comm)
    counts = np.array(comm.allgather(N))
    left, right = (rank - 1) % P, (rank + 1) % P
    whole = np.empty(N * P)

    def allgatherv(v):
        out = np.empty(int(counts.sum()), v.dtype)
        comm.Allgatherv(v, (out, counts))
        return out

    def allreduce(v, op=MPI.SUM):
        out = np.empty(1, np.asarray(v).dtype)
        comm.Allreduce(np.array([v]), out, op=op)
        return out[0]

    def mine(v):
        lo = int(counts[:rank].sum())
        return v[lo:lo + N]

    def sendrecv_boundary(v):
        got = np.empty(1, v.dtype)
        comm.Sendrecv(v[-1:], dest=right, recvbuf=got, source=left)
        return got

    def exscan(v):
        out = np.zeros(1, np.asarray(v).dtype)
        comm.Exscan(np.array([v]), out)
        return out[0]

    rows = []
    # -- elementwise: NumPy on the block ------------------------------------------------
    for name, npname in sorted(STANDARD.items()):
        f, g = getattr(xp, name), getattr(np, npname)
        if name.startswith("bitwise") or name in ("floor_divide", "remainder") and False:
            args, hargs = (ia, ib), (ints, intsb)
        elif name.startswith("logical"):
            args, hargs = (ba, ba), (bools, bools)
        else:
            args, hargs = (a, b), (x, y)
        arity = 1 if name in ("abs", "acos", "acosh", "asin", "asinh", "atan", "atanh",
                              "bitwise_invert", "ceil", "cos", "cosh", "exp", "expm1", "floor",
                              "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10",
                              "logical_not", "negative", "positive", "reciprocal", "round",
                              "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan",
                              "tanh", "trunc", "conj") else 2
        if name == "acosh":
            args, hargs = (a + 1.0, b), (x + 1.0, y)
        rows.append((f"xp.{name}", (lambda f=f, args=args[:arity]: f(*args)),
                     (lambda g=g, h=hargs[:arity]: g(*h))))
    # -- operators and methods of the array -----------------------------------------------
    rows += [
        ("a + b", lambda: a + b, lambda: x + y),
        ("a * 2.0", lambda: a * 2.0, lambda: x * 2.0),
        ("s0 * a (0-d)", lambda: s0 * a, lambda: x * 2.0),
        ("s0 / t0 (0-d)", lambda: s0 / t0, lambda: np.float64(2.0) / np.float64(3.0)),
        ("a += b", lambda: a.__iadd__(b), lambda: x.__iadd__(y)),
        ("a[2:5]", lambda: a[2:5], lambda: x[2:5]),
        ("a[::-1]", lambda: a[::-1], lambda: x[::-1]),
        ("m.T", lambda: m.T, lambda: xm.T),
        ("m.mT", lambda: m.mT, lambda: xm.T),
        ("a.reshape(-1, 2)", lambda: a.reshape(-1, 2), lambda: x.reshape(-1, 2)),
        ("a.sum()", lambda: a.sum(), lambda: allreduce(x.sum())),
        ("a.max()", lambda: a.max(), lambda: allreduce(x.max(), MPI.MAX)),
        ("a.mean()", lambda: a.mean(), lambda: allreduce(x.sum()) / (N * P)),
        ("a @ b", lambda: a @ b, lambda: allreduce(x @ y)),
        ("a[a > 1]", lambda: a[a > 1.0], lambda: (x[x > 1.0], exscan((x > 1.0).sum()))),
        ("float(s0)", lambda: float(s0), lambda: float(np.float64(1.5))),
        ("a.shape", lambda: a.shape, lambda: x.shape),
    ]
    # -- creation -------------------------------------------------------------------------
    shape = (N * P,)
    rows += [
        ("xp.zeros", lambda: xp.zeros(shape), lambda: np.zeros(N)),
        ("xp.ones", lambda: xp.ones(shape), lambda: np.ones(N)),
        ("xp.empty", lambda: xp.empty(shape), lambda: np.empty(N)),
        ("xp.full", lambda: xp.full(shape, 2.0), lambda: np.full(N, 2.0)),
        ("xp.arange", lambda: xp.arange(N * P), lambda: np.arange(rank * N, rank * N + N)),
        ("xp.linspace", lambda: xp.linspace(0.0, 1.0, N * P),
         lambda: np.linspace(0.0, 1.0, N * P)[rank * N:rank * N + N]),
        ("xp.eye", lambda: xp.eye(N * P, 2), lambda: np.eye(N * P, 2)[rank * N:rank * N + N]),
        ("xp.zeros_like", lambda: xp.zeros_like(a), lambda: np.zeros_like(x)),
        ("xp.ones_like", lambda: xp.ones_like(a), lambda: np.ones_like(x)),
        ("xp.empty_like", lambda: xp.empty_like(a), lambda: np.empty_like(x)),
        ("xp.full_like", lambda: xp.full_like(a, 2.0), lambda: np.full_like(x, 2.0)),
        ("xp.asarray (copy)", lambda: xp.asarray(a, copy=True), lambda: x.copy()),
        ("xp.tril", lambda: xp.tril(m), lambda: np.tril(xm)),
        ("xp.triu", lambda: xp.triu(m), lambda: np.triu(xm)),
        ("xp.meshgrid", lambda: xp.meshgrid(a, b), lambda: np.meshgrid(x, allgatherv(y))),
    ]
    # -- data types, searching, sets, sorting, statistics, manipulation, utility ----------
    rows += [
        ("xp.astype", lambda: xp.astype(a, xp.float32), lambda: x.astype(np.float32)),
        ("xp.clip", lambda: xp.clip(a, 0.7, 1.2), lambda: np.clip(x, 0.7, 1.2)),
        ("xp.real", lambda: xp.real(a), lambda: np.real(x)),
        ("xp.imag", lambda: xp.imag(a + 0j), lambda: np.imag(x + 0j)),
        ("xp.where", lambda: xp.where(ba, a, b), lambda: np.where(bools, x, y)),
        ("xp.result_type", lambda: xp.result_type(a, b), lambda: np.result_type(x, y)),
        ("xp.can_cast", lambda: xp.can_cast(xp.float32, xp.float64),
         lambda: np.can_cast(np.float32, np.float64)),
        ("xp.finfo", lambda: xp.finfo(xp.float64), lambda: np.finfo(np.float64)),
        ("xp.iinfo", lambda: xp.iinfo(xp.int64), lambda: np.iinfo(np.int64)),
        ("xp.isdtype", lambda: xp.isdtype(xp.float64, "real floating"),
         lambda: np.isdtype(np.float64, "real floating")),
        ("xp.sum", lambda: xp.sum(a), lambda: allreduce(x.sum())),
        ("xp.prod", lambda: xp.prod(a), lambda: allreduce(x.prod(), MPI.PROD)),
        ("xp.max", lambda: xp.max(a), lambda: allreduce(x.max(), MPI.MAX)),
        ("xp.min", lambda: xp.min(a), lambda: allreduce(x.min(), MPI.MIN)),
        ("xp.mean", lambda: xp.mean(a), lambda: allreduce(x.sum()) / (N * P)),
        ("xp.var", lambda: xp.var(a), lambda: allreduce(((x - allreduce(x.sum()) / (N * P))
                                                        ** 2).sum()) / (N * P)),
        ("xp.std", lambda: xp.std(a), lambda: np.sqrt(allreduce(
            ((x - allreduce(x.sum()) / (N * P)) ** 2).sum()) / (N * P))),
        ("xp.any", lambda: xp.any(ba), lambda: allreduce(bools.any(), MPI.LOR)),
        ("xp.all", lambda: xp.all(ba), lambda: allreduce(bools.all(), MPI.LAND)),
        ("xp.argmax", lambda: xp.argmax(a), lambda: allreduce(x.max(), MPI.MAX)),
        ("xp.argmin", lambda: xp.argmin(a), lambda: allreduce(x.min(), MPI.MIN)),
        ("xp.count_nonzero", lambda: xp.count_nonzero(ba),
         lambda: allreduce(np.count_nonzero(bools))),
        ("xp.cumulative_sum", lambda: xp.cumulative_sum(a),
         lambda: np.cumsum(x) + exscan(x.sum())),
        ("xp.cumulative_prod", lambda: xp.cumulative_prod(a),
         lambda: np.cumprod(x) * 1.0),
        ("xp.diff", lambda: xp.diff(a), lambda: np.diff(np.concatenate([
            sendrecv_boundary(x), x]))),
        ("xp.nonzero", lambda: xp.nonzero(ba),
         lambda: np.nonzero(bools)[0] + exscan(N)),
        ("xp.searchsorted", lambda: xp.searchsorted(sa, b),
         lambda: np.searchsorted(allgatherv(xsort), y)),
        ("xp.sort", lambda: xp.sort(a), lambda: mine(np.sort(allgatherv(x)))),
        ("xp.argsort", lambda: xp.argsort(a), lambda: mine(np.argsort(allgatherv(x)))),
        ("xp.unique_values", lambda: xp.unique_values(ia), lambda: np.unique(allgatherv(ints))),
        ("xp.unique_counts", lambda: xp.unique_counts(ia),
         lambda: np.unique(allgatherv(ints), return_counts=True)),
        ("xp.unique_inverse", lambda: xp.unique_inverse(ia),
         lambda: np.unique(allgatherv(ints), return_inverse=True)),
        ("xp.unique_all", lambda: xp.unique_all(ia),
         lambda: np.unique(allgatherv(ints), True, True, True)),
        ("xp.take", lambda: xp.take(a, ia), lambda: allgatherv(x)[ints]),
        ("xp.take_along_axis", lambda: xp.take_along_axis(a, ia, axis=0),
         lambda: allgatherv(x)[ints]),
        ("xp.broadcast_to", lambda: xp.broadcast_to(a, (2, N * P)),
         lambda: np.broadcast_to(x, (2, N))),
        ("xp.broadcast_arrays", lambda: xp.broadcast_arrays(a, s0),
         lambda: np.broadcast_arrays(x, np.float64(1.0))),
        ("xp.concat", lambda: xp.concat([a, b]), lambda: mine(np.concatenate(
            [allgatherv(x), allgatherv(y)]))),
        ("xp.stack", lambda: xp.stack([a, b]), lambda: np.stack([x, y])),
        ("xp.unstack", lambda: xp.unstack(m, axis=1), lambda: tuple(xm.T)),
        ("xp.expand_dims", lambda: xp.expand_dims(a, axis=0), lambda: x[None]),
        ("xp.squeeze", lambda: xp.squeeze(xp.expand_dims(a, axis=1), axis=1),
         lambda: x[:, None].squeeze(1)),
        ("xp.flip", lambda: xp.flip(a), lambda: x[::-1]),
        ("xp.moveaxis", lambda: xp.moveaxis(m, 0, 1), lambda: np.moveaxis(xm, 0, 1)),
        ("xp.permute_dims", lambda: xp.permute_dims(m, (1, 0)), lambda: xm.T),
        ("xp.reshape", lambda: xp.reshape(a, (-1, 2)), lambda: x.reshape(-1, 2)),
        ("xp.roll", lambda: xp.roll(a, 1), lambda: np.concatenate([sendrecv_boundary(x),
                                                                    x[:-1]])),
        ("xp.repeat", lambda: xp.repeat(a, 2), lambda: np.repeat(x, 2)),
        ("xp.tile", lambda: xp.tile(a, (2,)), lambda: mine(np.tile(allgatherv(x), 2))),
        ("xp.matmul", lambda: xp.matmul(m, xp.asarray(np.ones(2))), lambda: xm @ np.ones(2)),
        ("xp.tensordot", lambda: xp.tensordot(a, b, axes=1), lambda: allreduce(x @ y)),
        ("xp.vecdot", lambda: xp.vecdot(a, b), lambda: allreduce(x @ y)),
        ("xp.matrix_transpose", lambda: xp.matrix_transpose(m), lambda: xm.T),
    ]
    # -- the extensions: a stack split over the ranks, LAPACK per rank; a line's FFT ------
    la = xp.linalg
    rows += [
        ("linalg.cholesky", lambda: la.cholesky(sym + 4.0 * xp.eye(2)),
         lambda: np.linalg.cholesky(xsym + 4.0 * np.eye(2))),
        ("linalg.det", lambda: la.det(st), lambda: np.linalg.det(xs)),
        ("linalg.inv", lambda: la.inv(st), lambda: np.linalg.inv(xs)),
        ("linalg.solve", lambda: la.solve(st, st), lambda: np.linalg.solve(xs, xs)),
        ("linalg.eigh", lambda: la.eigh(sym), lambda: np.linalg.eigh(xsym)),
        ("linalg.eigvalsh", lambda: la.eigvalsh(sym), lambda: np.linalg.eigvalsh(xsym)),
        ("linalg.qr", lambda: la.qr(st), lambda: np.linalg.qr(xs)),
        ("linalg.svd", lambda: la.svd(st), lambda: np.linalg.svd(xs)),
        ("linalg.svdvals", lambda: la.svdvals(st), lambda: np.linalg.svd(xs, compute_uv=False)),
        ("linalg.slogdet", lambda: la.slogdet(st), lambda: np.linalg.slogdet(xs)),
        ("linalg.pinv", lambda: la.pinv(st), lambda: np.linalg.pinv(xs)),
        ("linalg.matrix_rank", lambda: la.matrix_rank(st), lambda: np.linalg.matrix_rank(xs)),
        ("linalg.matrix_power", lambda: la.matrix_power(st, 3),
         lambda: np.linalg.matrix_power(xs, 3)),
        ("linalg.matrix_norm", lambda: la.matrix_norm(st), lambda: np.linalg.norm(xs, axis=(1, 2))),
        ("linalg.vector_norm", lambda: la.vector_norm(a), lambda: np.sqrt(allreduce(x @ x))),
        ("linalg.diagonal", lambda: la.diagonal(st), lambda: np.diagonal(xs, axis1=1, axis2=2)),
        ("linalg.trace", lambda: la.trace(st), lambda: np.trace(xs, axis1=1, axis2=2)),
        ("linalg.cross", lambda: la.cross(xp.reshape(xp.concat([a, b, a]), (-1, 3)),
                                          xp.reshape(xp.concat([b, a, b]), (-1, 3))),
         lambda: np.cross(xm.reshape(-1, 1)[:3].T, xm.reshape(-1, 1)[:3].T)),
        ("linalg.outer", lambda: la.outer(a, b), lambda: np.outer(x, allgatherv(y))),
        ("fft.fft (axis whole)", lambda: xp.fft.fft(m + 0j), lambda: np.fft.fft(xm + 0j)),
        ("fft.ifft (axis whole)", lambda: xp.fft.ifft(m + 0j), lambda: np.fft.ifft(xm + 0j)),
        ("fft.rfft (axis whole)", lambda: xp.fft.rfft(m), lambda: np.fft.rfft(xm)),
        ("fft.irfft (axis whole)", lambda: xp.fft.irfft(m + 0j), lambda: np.fft.irfft(xm + 0j)),
        ("fft.hfft (axis whole)", lambda: xp.fft.hfft(m + 0j), lambda: np.fft.hfft(xm + 0j)),
        ("fft.ihfft (axis whole)", lambda: xp.fft.ihfft(m), lambda: np.fft.ihfft(xm)),
        ("fft.fftn (a line)", lambda: xp.fft.fftn(a + 0j),
         lambda: mine(np.fft.fftn(allgatherv(x + 0j)))),
        ("fft.ifftn (a line)", lambda: xp.fft.ifftn(a + 0j),
         lambda: mine(np.fft.ifftn(allgatherv(x + 0j)))),
        ("fft.rfftn (a line)", lambda: xp.fft.rfftn(a), lambda: np.fft.rfftn(allgatherv(x))),
        ("fft.irfftn (a line)", lambda: xp.fft.irfftn(a + 0j),
         lambda: np.fft.irfftn(allgatherv(x + 0j))),
        ("fft.fftfreq", lambda: xp.fft.fftfreq(N * P), lambda: mine(np.fft.fftfreq(N * P))),
        ("fft.rfftfreq", lambda: xp.fft.rfftfreq(N * P), lambda: np.fft.rfftfreq(N * P)),
        ("fft.fftshift", lambda: xp.fft.fftshift(a),
         lambda: mine(np.fft.fftshift(allgatherv(x)))),
        ("fft.ifftshift", lambda: xp.fft.ifftshift(a),
         lambda: mine(np.fft.ifftshift(allgatherv(x)))),
    ]
    return rows


def measure(comm, out_path):
    """Time every row on ``comm``'s ranks; rank 0 appends JSON lines."""
    from _harness import bench
    rows = cases(comm)
    P = comm.size
    for name, mine, hand in rows:
        # the calls each side makes (a call that fails is reported, not timed)
        try:
            Counting.calls, Counting.on = 0, True
            mine()
            xcalls = Counting.calls
            Counting.calls = 0
            hand()
            hcalls = Counting.calls
        except Exception as e:          # noqa: BLE001 -- a row that cannot run is reported
            Counting.on = False
            err = comm.allreduce(1)
            if comm.rank == 0:
                with open(out_path, "a") as f:
                    f.write(json.dumps({"name": name, "ranks": P, "error":
                                        f"{type(e).__name__}: {e}"[:160]}) + "\n")
            continue
        finally:
            Counting.on = False
        med, _, _ = bench([mine, hand], budget=0.15, min_reps=20, max_reps=400, block=5)
        if comm.rank == 0:
            with open(out_path, "a") as f:
                f.write(json.dumps({"name": name, "ranks": P, "xdap_us": med[0] * 1e6,
                                    "hand_us": med[1] * 1e6, "xdap_mpi": xcalls,
                                    "hand_mpi": hcalls}) + "\n")


# -- the other targets, and what debug mode costs ---------------------------------
VIEW_US = 3.0                  # a view (a[2:5], a.T, a reshape that keeps the memory): its whole time
LARGE = 100_000                # elements a rank of the large roll
DEBUG_CALLS = ("a + b", "xp.sin", "a.sum()", "xp.vecdot", "xp.roll", "a[2:5]", "m.T",
               "xp.reshape", "xp.zeros")


def targets(comm, out_path):
    """The targets beside the table, on ``comm``'s ranks (rank 0 appends
    JSON lines): ``xp.roll`` of 10^5 a rank against ``np.roll`` plus the
    boundary ``Sendrecv`` (<= 1.3x); an unbound ``exchange_halos()``
    against its bound plan (<= 1.3x); and every ``DEBUG_CALLS`` row in
    debug mode against the default (reported)."""
    import xdap
    import xdap.array_api as xp
    from xdap.agreement import set_debug
    from _harness import bench
    P, rank = comm.size, comm.rank
    left, right = (rank - 1) % P, (rank + 1) % P
    big = np.random.default_rng(3 + rank).random(LARGE)
    a = xdap.from_local(big.copy(), comm=comm)

    def hand_roll():
        lo = np.empty(1)
        comm.Sendrecv(big[-1:], dest=right, recvbuf=lo, source=left)
        out = np.roll(big, 1)
        out[0] = lo[0]
        return out
    assert np.array_equal(xp.roll(a, 1).local_numpy(), hand_roll())
    med, _, _ = bench([lambda: xp.roll(a, 1), hand_roll], budget=0.5, min_reps=20, block=5)
    rows = [{"target": f"xp.roll(a, 1), {LARGE} float64 a rank", "ranks": P,
             "xdap_us": med[0] * 1e6, "hand_us": med[1] * 1e6, "limit": 1.3,
             "against": "np.roll + the boundary Sendrecv"}]
    h = xdap.from_global(np.arange(1000.0 * P), dist="b", padding=((1, 1),), comm=comm)
    bound = h.bind_halos()
    med, _, _ = bench([h.exchange_halos, bound], budget=0.3, min_reps=20, block=5)
    rows.append({"target": "h.exchange_halos(), 1000 float64 a rank, padding 1", "ranks": P,
                 "xdap_us": med[0] * 1e6, "hand_us": med[1] * 1e6, "limit": 1.3,
                 "against": "h.bind_halos()'s bound exchange"})
    table = {name: (mine, hand) for name, mine, hand in cases(comm)}
    for name in DEBUG_CALLS:
        mine = table[name][0]
        default, _, _ = bench([mine], budget=0.1, min_reps=20, max_reps=400, block=5)
        before = set_debug(True)
        try:
            debug, _, _ = bench([mine], budget=0.1, min_reps=20, max_reps=400, block=5)
        finally:
            set_debug(before)
        rows.append({"debug": name, "ranks": P, "default_us": default[0] * 1e6,
                     "debug_us": debug[0] * 1e6})
    if rank == 0:
        with open(out_path, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


def targets_table(rows) -> str:
    """The Markdown tables of ``targets``' rows (and the views' whole times,
    from the main rows)."""
    out = ["| target | ranks | xdap (us) | against (us) | ratio | limit | |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "target" in r:
            ratio = r["xdap_us"] / r["hand_us"]
            out.append(f"| `{r['target']}` against {r['against']} | {r['ranks']} | "
                       f"{r['xdap_us']:.1f} | {r['hand_us']:.1f} | {ratio:.2f} | "
                       f"<= {r['limit']} | {'' if ratio <= r['limit'] else 'over'} |")
    for r in rows:
        if r.get("name") in ("a[2:5]", "m.T", "m.mT", "a.reshape(-1, 2)", "xp.reshape") and \
                "error" not in r:
            ok = r["xdap_us"] <= VIEW_US and r["xdap_mpi"] == 0
            out.append(f"| `{r['name']}` (a view) | {r['ranks']} | {r['xdap_us']:.1f} | -- | -- | "
                       f"<= {VIEW_US} us, {r['xdap_mpi']} MPI calls | {'' if ok else 'over'} |")
    out += ["", "| call in debug mode | ranks | default (us) | debug (us) | debug / default |",
            "|---|---|---|---|---|"]
    for r in rows:
        if "debug" in r:
            out.append(f"| `{r['debug']}` | {r['ranks']} | {r['default_us']:.1f} | "
                       f"{r['debug_us']:.1f} | {r['debug_us'] / r['default_us']:.1f} |")
    return "\n".join(out)


def target_misses(rows) -> list:
    """The targets' rows that miss their limit."""
    miss = [f"{r['target']} on {r['ranks']}" for r in rows
            if "target" in r and r["xdap_us"] / r["hand_us"] > r["limit"]]
    return miss + [f"{r['name']} on {r['ranks']}" for r in rows
                   if r.get("name") in ("a[2:5]", "m.T", "m.mT", "a.reshape(-1, 2)", "xp.reshape")
                   and "error" not in r and (r["xdap_us"] > VIEW_US or r["xdap_mpi"])]


def verdict(row) -> str:
    if "error" in row:
        return "ERROR"
    extra = row["xdap_us"] - row["hand_us"]
    messages = row["xdap_mpi"] - row["hand_mpi"]
    return "PASS" if extra <= BUDGET_US and messages <= 0 else "FAIL"


def table(rows) -> str:
    """The Markdown table of both runs, a row a call."""
    by = {}
    for r in rows:
        by.setdefault(r["name"], {})[r["ranks"]] = r
    out = ["| call | 1 rank: xdap / hand (us) | fixed cost (us) | 2 ranks: xdap / hand (us) "
           "| fixed cost (us) | MPI calls: xdap / hand (2 ranks) | |",
           "|---|---|---|---|---|---|---|"]
    for name, runs in by.items():
        cells = []
        for P in (1, 2):
            r = runs.get(P)
            if r is None or "error" in r:
                cells += ["--", r["error"] if r else "--"]
            else:
                cells += [f"{r['xdap_us']:.1f} / {r['hand_us']:.1f}",
                          f"{r['xdap_us'] - r['hand_us']:.1f}"]
        r2 = runs.get(2, {})
        msgs = f"{r2.get('xdap_mpi', '--')} / {r2.get('hand_mpi', '--')}"
        ok = all(verdict(r) == "PASS" for r in runs.values())
        out.append(f"| `{name}` | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {msgs} | "
                   f"{'' if ok else 'over'} |")
    return "\n".join(out)


def main():
    if MPI.COMM_WORLD.size > 1 or os.environ.get(_harness.CHILD_FLAG) == "1":
        measure(Counting(MPI.COMM_WORLD), os.environ["XDAP_CALL_COST_OUT"])
        targets(MPI.COMM_WORLD, os.environ["XDAP_CALL_COST_OUT"])
        return
    from xdap.launcher import clean_environment, mpiexec_command
    path = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
    for P in (1, 2):
        env = clean_environment(**{_harness.CHILD_FLAG: "1", "XDAP_CALL_COST_OUT": path,
                                   "OPENBLAS_NUM_THREADS": "1"})
        r = subprocess.run(mpiexec_command(P) + [sys.executable, os.path.abspath(__file__)],
                           env=env, timeout=1800)
        if r.returncode:
            print(f"(mpiexec -n {P} call_cost.py exited with {r.returncode})")
    every = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
    rows = [r for r in every if "name" in r]
    text = table(rows)
    print(text)
    beside = targets_table(every)
    print(beside)
    misses = target_misses(every)
    print(f"RESULT call_cost_targets={len(misses)} (the roll at {LARGE} a rank, unbound halos, "
          f"views; missed: {', '.join(misses) or 'none'}) " + ("PASS" if not misses else "FAIL"))
    done = [r for r in rows if "error" not in r]
    over = sorted({r["name"] for r in done if verdict(r) == "FAIL"})
    extra = [r["xdap_us"] - r["hand_us"] for r in done]
    print(f"RESULT call_cost_rows={len({r['name'] for r in rows})} (calls timed on 1 and 2 "
          f"ranks; {len(over)} over budget; median fixed cost "
          f"{np.median(extra) if extra else float('nan'):.1f} us) "
          + ("PASS" if not over else "FAIL"))
    if over:
        print("over the budget (fixed cost > 5 us or a message more than by hand): "
              + ", ".join(over))
    if "--docs" in sys.argv:
        with open(os.path.join(ROOT, "docs", "call_cost.md"), "w") as f:
            f.write(DOC_HEAD + text + "\n" + TARGETS_HEAD + beside + "\n")


DOC_HEAD = """# What a call costs

`benchmarks/call_cost.py` times every public function of `xdap.array_api`
(with its `linalg` and `fft` extensions) and the array's operators and methods on tiny
inputs -- 10 float64 a rank, split over the ranks -- against the same call written by
hand: NumPy on the rank's block plus the collectives it needs, as buffers (a
reduction: one `Allreduce`; a roll or `diff`: one `Sendrecv`; sort, unique, take and
the others that need the other ranks' elements: one `Allgatherv` of 10 values a rank
and NumPy).  The fixed cost is the difference.  MPI calls are counted on the
communicator the arrays live on.  Target (issue 48): a fixed cost of at most 5 us
plus the messages the hand version needs, and no message more than it sends; rows
marked *over* miss it.  Figures from one run on the 2-core development machine (2
ranks share its cores; the medians of interleaved repetitions, the slower rank's):
regenerate with `.venv/bin/python benchmarks/call_cost.py --docs`.

"""

TARGETS_HEAD = """
## The other targets, and debug mode

Beside the table, issue 48 asks for a roll of 10^5 float64 a rank within 1.3x
of `np.roll` plus the boundary's `Sendrecv`, an unbound `exchange_halos()`
within 1.3x of the bound plan's exchange, and views (`a[2:5]`, `a.T`, a
reshape that keeps the memory) within 3 us and with no MPI call.  Debug mode
(`XDAP_DEBUG=1`, `xdap.agreement.set_debug`) takes every call's declared
path and votes on every call, local ones included (one Allgather each on
more than one rank); the second table says what that costs.

"""


if __name__ == "__main__":
    main()
