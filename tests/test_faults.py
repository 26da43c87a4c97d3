"""Fault injection: a failure inside a call's work, on one rank only, is one
error on every rank, no rank waits forever, a later call on the same
communicator works, and a writer that fails leaves what was there.

For every case (a collective of the I/O surface, a redistribution) and
every boundary it reaches -- file reads and decoders (zarr, h5py, NumPy's
``load``/``loadtxt``), writes (``np.save``, zarr's and h5py's writes,
``fsync``, the final rename), a redistribution's allocations (``np.empty``)
-- a clean run
first counts the boundary's calls on each rank; then, for every k up to
that count, the k-th call fails on one rank only (the last; for k = 1 also
rank 0), with the error the library would raise there.  Each run ends
under a watchdog in one outcome on every rank: the same error, naming the
failing rank -- or, where that rank's k-th call never came, success
everywhere.  The injected failure is the real function's failure at its
real call site (the function is wrapped, not mocked: the other calls run
it).  Run at the default and in debug mode, on 2 and 3 ranks.

A user kernel's own check failing on one rank's data (a hidden argument
dividing by zero) raises there at once -- a local call sends nothing -- and
at the next vote on every rank (the ledger carries it).

Besides the injected ones, damaged files: a corrupt Zarr chunk, a ``.npy``
piece cut after its header, a CSV with a bad line in one rank's share.
"""
import contextlib
import os

import numpy as np
import pytest

import xdap
import xdap.agreement
from helpers import watchdog

from test_io import SharedDir

zarr = pytest.importorskip("zarr")
h5py = pytest.importorskip("h5py")


class Faults:
    """The ``k``-th call into any of ``targets`` (``[(owner, name)]``) on
    this rank raises ``error`` (k None: none does; the calls are counted
    either way); ``after``: it raises once the real call returned (a
    collective write that took part, then reported an error on this rank);
    ``counted(name, args, kwargs)``: which calls count (the others run as
    they are)."""

    def __init__(self, targets, error, k=None, after=False, counted=None):
        self.error, self.k, self.after, self.calls = error, k, after, 0
        self.counted = counted          # (name, args, kwargs) -> whether the call counts
        self.reals = [(owner, name, getattr(owner, name)) for owner, name in targets]

    def __enter__(self):
        for owner, name, real in self.reals:
            def wrapped(*args, _real=real, _name=name, **kwargs):
                if self.counted is not None and not self.counted(_name, args, kwargs):
                    return _real(*args, **kwargs)
                self.calls += 1
                if self.calls == self.k and not self.after:
                    raise self.error
                out = _real(*args, **kwargs)
                if self.calls == self.k:
                    raise self.error
                return out
            setattr(owner, name, wrapped)
        return self

    def __exit__(self, *exc):
        for owner, name, real in self.reals:
            setattr(owner, name, real)

# boundary -> (owner, attribute, the error a real failure there raises)
BOUNDARIES = {
    "zarr read": (zarr.Array, "__getitem__", RuntimeError("Zstd decompression error")),
    "zarr write": (zarr.Array, "__setitem__", OSError(28, "No space left on device")),
    "h5py read": (h5py.Dataset, "read_direct", OSError("Can't read data (inflate failed)")),
    "h5py write": (h5py.Dataset, "__setitem__", OSError(28, "No space left on device")),
    "np.load": (np, "load", ValueError("cannot reshape array: the file is truncated")),
    "np.loadtxt": (np, "loadtxt", ValueError("could not convert string to float: 'x'")),
    "np.save": (np, "save", OSError(28, "No space left on device")),
    "fsync": (os, "fsync", OSError(5, "Input/output error")),
    "rename": (os, "rename", OSError(18, "Invalid cross-device link")),
    "replace": (os, "replace", OSError(13, "Permission denied")),
    "allocation": (np, "empty", MemoryError("cannot allocate")),
}
# allocations happen everywhere; injected where they are agreed: a reader's (its
# rows and its move to the target, inside its settled step) and a redistribution's
# (before its vote is cast) -- not yet the transport's in the other calls
ONLY = {"allocation": ("redistribute (cyclic to blocks)", "from_zarr", "from_hdf5", "from_npy",
                       "from_csv")}


def _cases(comm, tmp):
    """name -> (call, check after a failure or success: what was there is
    whole); each writes its own files under ``tmp``."""
    g = np.arange(90.0).reshape(30, 3)
    old = np.arange(30.0).reshape(10, 3) - 100
    a = xdap.from_global(g, comm=comm, dist=("c", "n"))
    cases = {}

    z = os.path.join(tmp, "in.zarr")
    if comm.rank == 0:
        zarr.create_array(z, shape=g.shape, chunks=(4, 3), dtype="f8")[:] = g
    h = os.path.join(tmp, "in.h5")
    if comm.rank == 0:
        with h5py.File(h, "w") as f:
            f.create_dataset("u", data=g, chunks=(4, 3), compression="gzip")
    npy = os.path.join(tmp, "in-pieces")
    csv = os.path.join(tmp, "in.csv")
    if comm.rank == 0:
        os.makedirs(npy)
        np.save(os.path.join(npy, "a.npy"), g[:13])
        np.save(os.path.join(npy, "b.npy"), g[13:])
        with open(csv, "w") as f:
            f.write("\n".join(",".join(map(str, row)) for row in g))
    comm.Barrier()

    def same(got):
        np.testing.assert_array_equal(got.to_numpy(), g)

    def read(call):
        """The call, its result kept; the check (after, outside the injection:
        gathering allocates too) compares it with NumPy's."""
        kept = []

        def run():
            kept[:] = [call()]

        def check():
            if kept:
                same(kept.pop())
        return run, check

    cases["from_zarr"] = read(lambda: xdap.from_zarr(z, comm=comm, dist=("c",)))
    cases["from_hdf5"] = read(lambda: xdap.from_hdf5(h, "u", comm=comm))
    cases["from_npy"] = read(lambda: xdap.from_npy(npy, comm=comm, dist=("c",)))
    cases["from_csv"] = read(lambda: xdap.from_csv(csv, comm=comm))
    cases["redistribute (cyclic to blocks)"] = read(lambda: a.redistribute(("b", "n")))

    # writers over something that was there before
    oz, oh, onp = (os.path.join(tmp, n) for n in ("out.zarr", "out.h5", "out-pieces"))
    if comm.rank == 0:
        zarr.create_array(oz, shape=old.shape, chunks=(4, 3), dtype="f8")[:] = old
        with h5py.File(oh, "w") as f:
            f.create_dataset("old", data=old)
        os.makedirs(onp)
        with open(os.path.join(onp, "README"), "w") as f:
            f.write("kept")
    comm.Barrier()

    def zarr_whole():
        got = zarr.open_array(oz, mode="r")[:]
        assert got.shape in (old.shape, g.shape), got.shape
        np.testing.assert_array_equal(got, old if got.shape == old.shape else g)

    ow = os.path.join(tmp, "out-w.h5")
    if comm.rank == 0:
        with h5py.File(ow, "w") as f:
            f.create_dataset("old", data=old)
    comm.Barrier()

    def hdf5_whole(path, new_names):
        def check():
            with h5py.File(path, "r") as f:
                names = set(f.keys())
                for name in names - {"old"}:          # no partial dataset; a new one whole
                    assert any(name.startswith(n) for n in new_names), names
                    assert not name.endswith(".xdap-partial"), names
                    np.testing.assert_array_equal(f[name][()], g)
                if path == ow and "u" in names:      # replaced by mode="w": the new file
                    assert names == {"u"}, names
                else:
                    np.testing.assert_array_equal(f["old"][()], old)
        return check

    def npy_whole():
        names = sorted(os.listdir(onp))
        pieces = [n for n in names if n.endswith(".npy")]
        assert "README" in names
        if pieces:                                   # the write succeeded: all of it
            np.testing.assert_array_equal(np.concatenate([np.load(os.path.join(onp, n))
                                                          for n in pieces]), g)
            for n in pieces:                         # (emptied for the next run)
                comm.Barrier()
                if comm.rank == 0:
                    os.remove(os.path.join(onp, n))
        comm.Barrier()
        assert not os.path.exists(onp + ".xdap-partial")

    appended = iter(range(10 ** 6))
    cases["to_zarr"] = (lambda: a.to_zarr(oz, mode="w"), zarr_whole)
    cases["to_hdf5 mode=w"] = (lambda: a.to_hdf5(ow, "u", mode="w"), hdf5_whole(ow, ["u"]))
    cases["to_hdf5 mode=a"] = (lambda: a.to_hdf5(oh, f"new{next(appended)}", mode="a"),
                               hdf5_whole(oh, ["new"]))
    cases["to_npy"] = (lambda: a.to_npy(onp), npy_whole)
    return cases


def _outcome(comm, call, faults=contextlib.nullcontext(), flush=False):
    """``("ok", None)`` or ``(class, message)`` of ``call()`` on this rank
    (``faults`` on around it alone), under a watchdog, and every rank's.
    ``flush``: the outcome is read after the next collective too (a vote:
    it carries the ledger, where a rank whose last step failed after the
    call's last message wrote so)."""
    with watchdog(60):
        try:
            with faults:
                call()
            got = ("ok", None)
        except (ValueError, TypeError, MemoryError, OSError) as e:   # LinAlgError: a ValueError
            got = (type(e).__name__, str(e))
        if flush:
            try:
                xdap.agreement.agree(comm, None)
            except ValueError as e:
                if got == ("ok", None):
                    got = (type(e).__name__, str(e))
        seen = comm.allgather(got)
    return got, seen


def _inject(comm, case, call, check, boundary, counts):
    owner, name, error = BOUNDARIES[boundary]
    if boundary in ONLY and case not in ONLY[boundary]:
        return
    after = False
    if boundary == "h5py write" and h5py.get_config().mpi:
        # parallel HDF5 writes in one collective H5Dwrite a dataset (every rank's
        # selection made and agreed before it); a write fails where HDF5 reports
        # it, on a rank that took part: the injected error follows the real write
        from xdap.io import hdf5 as writer
        owner, name, after = writer, "write_selection", True
    with Faults([(owner, name)], error) as probe:    # a clean run: how many calls
        got, seen = _outcome(comm, call)
    assert all(s == ("ok", None) for s in seen), (case, boundary, seen)
    if check:
        check()
    reached = comm.allgather(probe.calls)
    runs = 0
    for k in range(1, max(reached) + 1):
        for failing in sorted({comm.size - 1} | ({0} if k == 1 else set())):
            fault = Faults([(owner, name)], error, k if comm.rank == failing else None, after)
            with fault:
                got, seen = _outcome(comm, call)
            runs += 1
            assert len(set(seen)) == 1, (case, boundary, k, failing, seen)   # one outcome
            if reached[failing] >= k:                  # the failure happened: one error
                assert got[0] != "ok", (case, boundary, k, failing, seen)
                assert f"rank {failing}" in got[1], (case, boundary, k, failing, got)
            if check:
                check()
            # a later call on the communicator works: nothing left in flight
            b = xdap.from_global(np.arange(12.0), comm=comm, dist=("c",))
            assert float(b.sum()) == 66.0
    counts[(case, boundary)] = (max(reached), runs)


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
def test_a_failure_on_one_rank_is_one_error_everywhere(comm, monkeypatch, debug):
    monkeypatch.setattr(xdap.agreement, "_DEBUG", debug)
    counts = {}
    with SharedDir(comm) as tmp:
        for case, (call, check) in _cases(comm, tmp).items():
            for boundary in BOUNDARIES:
                _inject(comm, case, call, check, boundary, counts)
    reached = {k: v for k, v in counts.items() if v[0]}
    assert len({case for case, _ in reached}) == 9, sorted(reached)     # every case reached a boundary
    if comm.rank == 0:
        print(f"\nfault injection ({comm.size} ranks, {'debug' if debug else 'default'}): "
              f"{len(reached)} (case, boundary) pairs, {sum(r for _, r in reached.values())} "
              "runs: " + "; ".join(f"{c} / {b}: {n} calls" for (c, b), (n, _) in
                                   sorted(reached.items())))


# -- damaged files ------------------------------------------------------------------

@pytest.mark.mpi(ranks=(2, 3))
def test_damaged_files_are_one_clear_error(comm):
    """A corrupt Zarr chunk that only the last rank reads, a ``.npy`` piece
    cut after its header (the last rank's rows), a CSV whose last rank's
    share holds a bad line: one ValueError on every rank, naming the file
    and the failing rank -- these used to hang the other ranks."""
    from helpers import same_error
    g = np.arange(120.0).reshape(40, 3)
    last = comm.size - 1
    with SharedDir(comm) as tmp:
        z, npy, csv = (os.path.join(tmp, n) for n in ("c.zarr", "pieces", "t.csv"))
        if comm.rank == 0:
            zarr.create_array(z, shape=g.shape, chunks=(4, 3), dtype="f8",
                              compressors=zarr.codecs.ZstdCodec())[:] = g
            chunk = os.path.join(z, "c", "9", "0")          # rows 36..39: the last rank's
            with open(chunk, "r+b") as f:
                f.seek(4)
                f.write(b"\xff" * 16)
            os.makedirs(npy)
            np.save(os.path.join(npy, "a.npy"), g[:20])
            np.save(os.path.join(npy, "b.npy"), g[20:])
            path = os.path.join(npy, "b.npy")
            with open(path, "r+b") as f:
                f.truncate(os.path.getsize(path) - 100)    # cut inside the last rows
            lines = [",".join(map(str, row)) for row in g]
            lines[-2] = "1.0,oops,3.0"
            with open(csv, "w") as f:
                f.write("\n".join(lines))
        comm.Barrier()
        # the lowest failing rank is named: for the .npy piece, the first whose rows
        # reach into it (rank 1 of 2 or 3: its mapping of the whole piece fails)
        for call, where, failing in ((lambda: xdap.from_zarr(z, comm=comm), z, last),
                                     (lambda: xdap.from_npy(npy, comm=comm), npy, 1),
                                     (lambda: xdap.from_csv(csv, comm=comm), csv, last)):
            cls, message = same_error(comm, call, cls=ValueError)
            assert where in message and message.endswith(f"(rank {failing})"), message
        b = xdap.from_global(np.arange(12.0), comm=comm)          # a later call works
        assert float(b.sum()) == 66.0


@pytest.mark.mpi(ranks=(2, 3))
def test_a_call_refused_at_its_vote_leaves_the_plan_stores_alike(comm):
    """A redistribution prepares before its vote is cast; where one rank's
    target is refused there, the others must not have made or touched a
    plan meanwhile: the stores on ``comm`` would then evict differently, and
    a plan made collectively (``process_locations``, unstructured routes)
    would be made again on some ranks alone -- a hang later (seen once in the
    divergence fuzzer's from_partitioned, after a divergent redistribute)."""
    from helpers import same_error
    from xdap import plans
    a = xdap.from_global(np.arange(24.0), comm=comm, dist=("c",))
    a.redistribute(("b",))                         # kept: the prepared path is taken
    b = xdap.from_global(np.arange(24.0), comm=comm)
    b.redistribute(("c",))

    def keys():
        return [repr(k) for k in plans.on(comm)._items]
    before = keys()
    for target in (("b",), ("c",)):
        same_error(comm, lambda: a.redistribute(target if comm.rank == 0 else ("q",)))
        same_error(comm, lambda: b.redistribute(target if comm.rank else ("q",)))
    # every rank's store as it was (the stores of a long test process may already
    # differ between ranks: what this asks is that the refused calls changed none)
    unchanged = comm.allgather(keys() == before)
    assert all(unchanged), f"the refused calls changed the store of ranks " \
        f"{[r for r, u in enumerate(unchanged) if not u]}"


# -- LAPACK and FFT inside the linalg and fft extensions --------------------------

LAPACK = [(np.linalg, n) for n in ("solve", "qr", "cholesky", "eigh", "eigvalsh", "svd", "inv",
                                   "det", "slogdet", "lstsq", "pinv", "matrix_rank")]
FFTS = [(np.fft, n) for n in ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn",
                              "hfft", "ihfft")]
NUMERIC_BOUNDARIES = {
    "LAPACK": (LAPACK, np.linalg.LinAlgError("Singular matrix")),
    "FFT": (FFTS, MemoryError("cannot allocate the transform's output")),
}


def _numeric_cases(comm):
    """name -> (boundary, call): the extensions' calls on split matrices
    (TSQR, the gathered and the stacked paths) and split transforms (slabs,
    the six-step line, a local axis)."""
    import xdap.array_api as xp
    rng = np.random.default_rng(7)
    tall = rng.standard_normal((37, 5))
    sq = rng.standard_normal((6, 6)) + 6 * np.eye(6)
    spd = sq @ sq.T
    c = rng.standard_normal((16, 12))

    def A(g, dist=None):
        return xdap.from_global(g, comm=comm, dist=dist)
    la, fft = xp.linalg, xp.fft
    return {
        "qr (TSQR)": ("LAPACK", lambda: la.qr(A(tall))),
        "svd": ("LAPACK", lambda: la.svd(A(tall))),
        "svdvals": ("LAPACK", lambda: la.svdvals(A(tall))),
        "pinv": ("LAPACK", lambda: la.pinv(A(tall))),
        "matrix_rank": ("LAPACK", lambda: la.matrix_rank(A(tall))),
        "matrix_norm ord=2": ("LAPACK", lambda: la.matrix_norm(A(tall), ord=2)),
        "cholesky": ("LAPACK", lambda: la.cholesky(A(spd))),
        "solve": ("LAPACK", lambda: la.solve(A(sq), A(tall[:6].copy()))),
        "inv": ("LAPACK", lambda: la.inv(A(sq))),
        "det of a stack": ("LAPACK", lambda: la.det(A(np.stack([sq] * 5)))),
        "eigh": ("LAPACK", lambda: la.eigh(A(spd))),
        "fft along the split axis": ("FFT", lambda: fft.fft(A(c), axis=0)),
        "fft along a whole axis": ("FFT", lambda: fft.fft(A(c), axis=1)),
        "fft of a split line (six-step)": ("FFT", lambda: fft.fft(A(c.ravel() + 0j))),
        "fftn (slabs)": ("FFT", lambda: fft.fftn(A(c))),
        "rfftn": ("FFT", lambda: fft.rfftn(A(c))),
        "irfft": ("FFT", lambda: fft.irfft(A(c + 0j), axis=0)),
    }


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
def test_a_lapack_or_fft_failure_on_one_rank_is_one_error_everywhere(comm, monkeypatch, debug):
    """Every call into LAPACK (NumPy's linalg) or an FFT that the extensions
    make on one rank, failed in turn on the last rank (and at k = 1 on rank
    0): one error on every rank -- LinAlgError stays LinAlgError -- naming
    the failing rank, no hang, and a later call works."""
    monkeypatch.setattr(xdap.agreement, "_DEBUG", debug)
    runs = {}
    for case, (boundary, call) in _numeric_cases(comm).items():
        targets, error = NUMERIC_BOUNDARIES[boundary]
        probe = Faults(targets, error)
        got, seen = _outcome(comm, call, probe, flush=True)
        assert all(s == ("ok", None) for s in seen), (case, seen)
        reached = comm.allgather(probe.calls)
        assert max(reached) > 0, (case, reached)          # the case reaches its boundary
        n = 0
        for k in range(1, max(reached) + 1):
            for failing in sorted({comm.size - 1} | ({0} if k == 1 else set())):
                faults = Faults(targets, error, k if comm.rank == failing else None)
                got, seen = _outcome(comm, call, faults, flush=True)
                n += 1
                assert len(set(seen)) == 1, (case, k, failing, seen)
                if reached[failing] >= k:
                    assert got[0] != "ok" and f"rank {failing}" in got[1], (case, k, failing,
                                                                            got)
                    if boundary == "LAPACK" and got[0] != "ValueError":
                        assert got[0] == "LinAlgError", (case, got)
                b = xdap.from_global(np.arange(12.0), comm=comm, dist=("c",))
                assert float(b.sum()) == 66.0
        runs[case] = (max(reached), n)
    if comm.rank == 0:
        print(f"\nLAPACK/FFT fault injection ({comm.size} ranks, "
              f"{'debug' if debug else 'default'}): {len(runs)} calls, "
              f"{sum(n for _, n in runs.values())} runs: " +
              "; ".join(f"{c}: {k} calls" for c, (k, _) in runs.items()))


@pytest.mark.mpi(ranks=(2, 3))
def test_a_repeated_call_that_cannot_prepare_on_one_rank_is_one_error(comm):
    """A reduction's prepared path (``xdap.repeats``) is made on each rank
    before any vote; an allocation failing there on one rank used to leave
    it raising alone while the others waited in the vote.  Now that rank
    takes the declared path, whose vote carries any failure of its own: one
    outcome on every rank, the sum or one error naming the rank."""
    import xdap.array_api as xp
    g = np.arange(40.0) + 1j
    failing = comm.size - 1
    clean = Faults([(np, "zeros"), (np, "empty")], None)
    fresh = xdap.from_global(g, comm=comm, dist=("c",))
    with clean:                                       # how many a first call makes
        xp.sum(fresh)
    assert max(comm.allgather(clean.calls)) > 0       # the preparation allocates: injected
    for k in range(1, max(comm.allgather(clean.calls)) + 1):
        a = xdap.from_global(g, comm=comm, dist=("c",))       # a new layout: prepared anew
        faults = Faults([(np, "zeros"), (np, "empty")], MemoryError("cannot allocate"),
                        k if comm.rank == failing else None)
        kept = []
        got, seen = _outcome(comm, lambda: kept.append(xp.sum(a)), faults, flush=True)
        assert len(set(seen)) == 1, (k, seen)
        # the failed preparation is not retried in the call: the declared path
        # may then succeed (its own allocations are later ones) -- the sum,
        # everywhere -- or fail at the k-th: one error naming the rank
        if got[0] == "ok":
            assert complex(kept[0]) == g.sum()
        else:
            assert got[0] == "ValueError" and f"rank {failing}" in got[1], (k, got)
    assert complex(xp.sum(xdap.from_global(g, comm=comm, dist=("c",)))) == g.sum()


# -- memory, between two messages of the movement engines -----------------------------

ALLOCATIONS = [(np, n) for n in ("empty", "zeros", "empty_like", "zeros_like", "concatenate")]
DATA_SIZED = 512          # bytes: a block, a message, a sample set -- not an O(P) record


def _nbytes(name, args, kwargs) -> int:
    """The bytes an allocation asks for."""
    try:
        if name in ("empty", "zeros"):
            shape = args[0] if args else kwargs.get("shape")
            dtype = args[1] if len(args) > 1 else kwargs.get("dtype", float)
            return int(np.prod(shape)) * np.dtype(dtype).itemsize
        if name.endswith("_like"):
            like = np.asarray(args[0])
            dtype = np.dtype(kwargs.get("dtype") or (args[1] if len(args) > 1 else like.dtype))
            shape = kwargs.get("shape", like.shape)
            return int(np.prod(shape)) * dtype.itemsize
        return sum(np.asarray(a).nbytes for a in args[0])          # concatenate
    except Exception:
        return 0


def _data_sized(name, args, kwargs) -> bool:
    return _nbytes(name, args, kwargs) >= DATA_SIZED


def _movement_cases(comm):
    """name -> (call, NumPy's result): the engines that move data between
    messages of their own -- sample sort, unique, scans, joins, takes,
    masks, redistributions, SUMMA, order statistics, a roll."""
    import xdap.array_api as xp
    rng = np.random.default_rng(3)
    g = rng.standard_normal((371, 5))
    col, ints = g[:, 0].copy(), np.round(g[:, 0] * 3)
    keys = rng.integers(0, len(g), 100)
    # NumPy's inputs made here: only xdap's allocations are failed
    gt, ordered, other, positive = g.T.copy(), np.sort(col), g[:, 1].copy(), col > 0

    def A(x, dist=None):
        return xdap.from_global(x, comm=comm, dist=dist)
    return {
        "sort": (lambda: xp.sort(A(col)), np.sort(col)),
        "argsort (cyclic)": (lambda: xp.argsort(A(col, ("c",))), np.argsort(col, kind="stable")),
        "sort of ties": (lambda: xp.sort(A(ints)), np.sort(ints)),
        "unique_values": (lambda: xp.unique_values(A(ints)), np.unique(ints)),
        "unique_counts": (lambda: xp.unique_counts(A(ints)).counts,
                          np.unique(ints, return_counts=True)[1]),
        "unique_all": (lambda: xp.unique_all(A(ints)).inverse_indices,
                       np.unique(ints, return_inverse=True)[1]),
        "cumulative_sum": (lambda: xp.cumulative_sum(A(g), axis=0), np.cumsum(g, axis=0)),
        "concat axis 0": (lambda: xp.concat([A(g), A(g, ("c", "n"))]), np.concatenate([g, g])),
        "concat axis 1": (lambda: xp.concat([A(g), A(g, ("c", "n"))], axis=1),
                          np.concatenate([g, g], axis=1)),
        "take": (lambda: xp.take(A(g), A(keys), axis=0), g[keys]),
        "searchsorted": (lambda: xp.searchsorted(A(ordered), A(other)),
                         np.searchsorted(ordered, other)),
        "mask": (lambda: A(g)[A(g) > 0], g[g > 0]),
        "nonzero": (lambda: xp.nonzero(A(positive))[0], np.nonzero(positive)[0]),
        "redistribute": (lambda: A(g).redistribute(("c", "n")), g),
        "matmul (SUMMA)": (lambda: xp.matmul(A(gt, ("n", "b")), A(g)), gt @ g),
        "median": (lambda: xdap.median(A(g), axis=0), np.median(g, axis=0)),
        "roll": (lambda: xp.roll(A(g), 3, axis=0), np.roll(g, 3, axis=0)),
    }


def _outcomes(comm, call, faults):
    """(this call's outcome, the next vote's) on every rank, under a watchdog:
    a failure after the call's last message on one rank raises there, and
    at the next vote -- which carries the ledger -- on every rank."""
    def one(step):
        try:
            step()
            return ("ok", None)
        except (ValueError, TypeError, MemoryError, IndexError) as e:
            return (type(e).__name__, str(e))
    with watchdog(60):
        with faults:
            got = one(call)
        after = one(lambda: xdap.agreement.agree(comm, None))
        return comm.allgather((got, after))


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
def test_memory_failing_on_one_rank_inside_a_movement_is_one_error(comm, monkeypatch, debug):
    """Every data-sized allocation (``np.empty``/``zeros``/``*_like``/
    ``concatenate`` of 512 bytes or more) that a movement engine makes on
    the last rank, failed in turn with a MemoryError: one outcome on every
    rank -- the same error naming the rank, from the call or (a failure
    after its last message) from the next vote -- or, where a rank's step
    recovers (a prepared path falls back), NumPy's result everywhere.  No
    hang, and a later call works.  These hung before the transport's
    verdicts and the engines' held steps."""
    monkeypatch.setattr(xdap.agreement, "_DEBUG", debug)
    failing = comm.size - 1
    runs = {}
    for case, (call, expected) in _movement_cases(comm).items():
        kept = []

        def run():
            kept[:] = [call()]
        probe = Faults(ALLOCATIONS, None, counted=_data_sized)
        seen = _outcomes(comm, run, probe)
        assert all(s == (("ok", None), ("ok", None)) for s in seen), (case, seen)
        np.testing.assert_allclose(kept.pop().to_numpy(), expected)
        reached = max(comm.allgather(probe.calls))
        runs[case] = reached         # 0: its allocations are NumPy's C code's, not injected
        for k in range(1, reached + 1):
            faults = Faults(ALLOCATIONS, MemoryError("cannot allocate"),
                            k if comm.rank == failing else None, counted=_data_sized)
            seen = _outcomes(comm, run, faults)
            fired = comm.allreduce(int(comm.rank == failing and faults.calls >= k))
            calls, nexts = [c for c, _ in seen], [n for _, n in seen]
            if calls == [("ok", None)] * comm.size and nexts == calls:
                assert not fired or kept, (case, k)     # not reached, or recovered:
                np.testing.assert_allclose(kept.pop().to_numpy(), expected)
            elif len(set(calls)) == 1:                  # one error, from the call
                assert f"rank {failing}" in calls[0][1], (case, k, calls)
            else:                                       # after its last message: the next vote
                assert calls[failing][0] != "ok", (case, k, seen)
                assert len(set(nexts)) == 1 and f"rank {failing}" in nexts[0][1], (case, k, seen)
            b = xdap.from_global(np.arange(12.0), comm=comm, dist=("c",))
            assert float(b.sum()) == 66.0                # nothing left in flight
    assert sum(1 for k in runs.values() if k) >= 14, runs
    if comm.rank == 0:
        print(f"\nallocation fault injection ({comm.size} ranks, "
              f"{'debug' if debug else 'default'}): {len(runs)} calls, "
              f"{sum(runs.values())} runs: " + "; ".join(f"{c}: {k}" for c, k in runs.items()))


# -- user kernels: a C function's own check failing on one rank's data ---------------

_KERNELS = {}


def _checked_kernels(comm):
    """The .cfg module of tests/test_codegen_checked.py, built once per launch:
    ``ratio(x, k)`` hides ``q = 100 % k`` (elementwise), ``head_sum(x(n), k)``
    hides ``m = len(x) / k`` (a core dimension): a zero ``k`` is a
    ValueError before the C function runs -- on the rank that holds it."""
    import test_codegen_checked as checked
    from helpers import build_once

    def cfg(work):
        (work / "checked.h").write_text(checked.HEADER)
        (work / "checked.c").write_text(checked.SOURCE)
        (work / "checked.cfg").write_text(checked.CONFIG)
        return work / "checked.cfg"
    return build_once(comm, _KERNELS, "xk_checked", cfg)


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("debug", [False, True], ids=["default", "debug"])
def test_a_user_kernel_failing_on_one_rank_is_one_error(comm, monkeypatch, debug):
    """A user kernel whose own check fails on the elements of one rank only
    (each rank in turn; blocks and cyclic rows), elementwise and with a core
    dimension: that rank raises the kernel's ValueError at once -- the
    others returned, the call sends no message -- and the next vote raises
    one ValueError on every rank naming the rank and the kernel (the
    ledger carries it; in debug mode too).  A later call works, and with
    no zero the results are NumPy's."""
    monkeypatch.setattr(xdap.agreement, "_DEBUG", debug)
    m = _checked_kernels(comm)
    n = 4 * comm.size + 1
    g = np.arange(2.0 * n).reshape(n, 2)
    k = np.arange(n) % 3 + 1
    calls = {
        "ratio": (lambda a, ka: m.ratio(a[:, 0], ka), lambda kk: g[:, 0] * (100 % kk)),
        "head_sum": (lambda a, ka: m.head_sum(a, ka),
                     lambda kk: np.array([r[:2 // q].sum() for r, q in zip(g, kk)])),
    }
    for dist in (("b", "n"), ("c", "n")):
        a = xdap.from_global(g, comm=comm, dist=dist)
        for name, (call, expected) in calls.items():
            kept = []
            seen = _outcomes(comm, lambda: kept.append(
                call(a, xdap.from_global(k, comm=comm, dist=dist[:1]))), contextlib.nullcontext())
            assert seen == [(("ok", None), ("ok", None))] * comm.size, (name, seen)
            np.testing.assert_allclose(kept.pop().to_numpy(), expected(k))
            for failing in range(comm.size):
                bad = k.copy()
                bad[a.distribution.global_indices(0, rank=failing)[-1]] = 0  # its last row
                ka = xdap.from_global(bad, comm=comm, dist=dist[:1])
                seen = _outcomes(comm, lambda: call(a, ka), contextlib.nullcontext())
                calls_, nexts = [c for c, _ in seen], [x for _, x in seen]
                for r, (cls, text) in enumerate(calls_):
                    if r == failing:
                        assert cls == "ValueError" and name in text, (name, failing, seen)
                    else:
                        assert cls == "ok", (name, failing, r, seen)
                assert len(set(nexts)) == 1, (name, failing, nexts)
                cls, text = nexts[0]
                assert cls == "ValueError" and f"rank {failing}" in text and name in text, \
                    (name, failing, nexts)
                b = xdap.from_global(np.arange(12.0), comm=comm, dist=("c",))
                assert float(b.sum()) == 66.0                # nothing left in flight
