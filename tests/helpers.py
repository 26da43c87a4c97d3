"""Test helpers shared by several test modules: the dtype list, sample
values, the 1-d distribution kinds (``from_global`` options) every
round-trip test walks through, and importing a built kernel module.
Plain functions, no pytest fixtures."""
import importlib.util

import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def sample(dtype, n, rng):
    """n random values of dtype over its whole range (integers from min to
    max inclusive, complex with random real and imaginary parts)."""
    if dtype == "bool":
        return rng.random(n) < 0.5
    if dtype.startswith("complex"):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return rng.standard_normal(n).astype(dtype)


def balanced_indices(n, nprocs, rng, overlap=0):
    """Unstructured index lists: a random partition of range(n), each rank
    also holding `overlap` indices of the next rank (one_to_one False)."""
    perm = rng.permutation(n)
    chunks = np.array_split(perm, nprocs)
    if overlap:
        chunks = [np.unique(np.concatenate([c, chunks[(i + 1) % nprocs][:overlap]]))
                  for i, c in enumerate(chunks)]
        chunks = [rng.permutation(c) for c in chunks]
    return [c.tolist() for c in chunks]


def kinds(n, nprocs, rng):
    """(label, from_global options) of every 1-d distribution kind over nprocs ranks."""
    sizes = rng.multinomial(n, np.ones(nprocs) / nprocs).tolist()
    return [
        ("block", dict(dist=("b",))),
        ("irregular block", dict(dist=("b",), sizes=(sizes,))),
        ("padded block", dict(dist=("b",), padding=((2, 2),))),
        ("periodic padded block", dict(dist=("b",), padding=((1, 1),), periodic=(True,))),
        ("cyclic", dict(dist=("c",))),
        ("block-cyclic", dict(dist=("c",), block_size=(3,))),
        ("unstructured", dict(dist=("u",), indices=(balanced_indices(n, nprocs, rng),))),
        ("unstructured shared", dict(dist=("u",), indices=(balanced_indices(n, nprocs, rng, 2),))),
    ]


def import_module_at(path, name):
    """Import the extension module built at ``path`` under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class watchdog:
    """``with watchdog(seconds):`` -- if the block has not finished after
    ``seconds``, print every thread's stack and abort the MPI job (the test
    harness then fails the running test): a hang becomes a failure."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        import threading
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def _fire(self):
        import faulthandler
        import sys
        from mpi4py import MPI
        print(f"watchdog: the block did not finish in {self.seconds:g} s (hang?); "
              f"rank {MPI.COMM_WORLD.rank}'s threads:", file=sys.stderr, flush=True)
        faulthandler.dump_traceback(all_threads=True)
        MPI.COMM_WORLD.Abort(70)

    def __exit__(self, *exc):
        self._timer.cancel()
        return False


def build_once(comm, cache: dict, name: str, make_cfg):
    """Import kernel module ``name``, built once per launch by rank 0 into a
    fresh directory (``make_cfg(work_dir)`` returns the .cfg to build); the
    path is broadcast and a failure is the same error on every rank."""
    import pathlib
    import tempfile

    from xdap.agreement import agree
    from xdap.codegen import build
    if name in cache:
        return cache[name]
    path, error = None, None
    if comm.rank == 0:
        try:
            work = pathlib.Path(tempfile.mkdtemp(prefix="xdap-kernels-"))
            path = str(build(make_cfg(work), work / "mod"))
        except Exception as e:  # noqa: BLE001 -- reported on every rank below
            error = ValueError(f"building {name} failed: {e}")
    agree(comm, error)
    path = comm.bcast(path, root=0)
    mod = cache[name] = import_module_at(path, name)
    return mod


def layouts2(P):
    """The 7 x 5 layouts of the NumPy-function tests on P ranks: block,
    cyclic, a 2-D grid, undistributed rows, and empty ranks."""
    empty = {1: [7], 2: [0, 7], 3: [3, 0, 4], 4: [2, 0, 5, 0]}[P]
    return [dict(dist=("b",)), dict(dist=("c",)), dict(dist=("b", "c")), dict(dist=("n", "b")),
            dict(dist=("b",), sizes=(empty,))]


def layouts1(P):
    """The 1-D (7 items) layouts: block, cyclic, padded, empty ranks."""
    empty = {1: [7], 2: [7, 0], 3: [0, 7, 0], 4: [3, 0, 4, 0]}[P]
    return [dict(dist=("b",)), dict(dist=("c",)), dict(dist=("b",), padding=((1, 1),)),
            dict(dist=("b",), sizes=(empty,))]


def check_global(got, want, what, *, dtype=False, tol=1e-13):
    """``got`` (a DistArray, gathered, or a value) equals NumPy's ``want``:
    shape, values within ``tol`` (1e-5 for float32/complex64 results), and
    with ``dtype`` the dtype too."""
    import xdap
    g = got.to_numpy() if isinstance(got, xdap.DistArray) else got
    assert np.shape(g) == np.shape(want), (what, np.shape(g), np.shape(want))
    if dtype:
        assert np.asarray(g).dtype == np.asarray(want).dtype, (what, np.asarray(g).dtype,
                                                               np.asarray(want).dtype)
    if np.asarray(want).dtype in (np.float32, np.complex64):
        tol = max(tol, 1e-5)
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol, err_msg=str(what))


class debug_mode:
    """``with debug_mode():`` -- the block runs in xdap's debug mode (every
    call votes, local ones too), whatever mode the launch runs in; the mode
    before is restored.  ``debug_mode(False)``: the default mode.  The same
    on every rank (it decides which calls vote)."""

    def __init__(self, on: bool = True):
        self.on = on

    def __enter__(self):
        import xdap.agreement
        self.before = xdap.agreement.set_debug(self.on)
        return self

    def __exit__(self, *exc):
        import xdap.agreement
        xdap.agreement.set_debug(self.before)
        return False


def same_error(comm, call, cls=(ValueError, TypeError, IndexError), match=None,
               seconds: float = 60):
    """``call()`` raises one error of ``cls`` on every rank, the same one
    (under a watchdog: a hang fails); returns ``(class name, message)``.
    ``match``: a regular expression the message must contain.

    Outside debug mode a call that moves nothing (a view, a local call)
    makes no MPI call: a check that failed on one rank, or an argument
    that differs, is written in the ledger and raised by the next vote on
    every rank (``xdap.ledger``) -- so, as the divergence fuzzer does, a
    call that did not raise an agreed error is followed by one vote, and
    its error is the outcome."""
    import xdap.agreement
    with watchdog(seconds):
        error = None
        try:
            call()
        except cls as e:
            error = e
        if not xdap.agreement.debug() and getattr(error, "xdap_agreed", None) is None:
            try:
                xdap.agreement.agree(comm, None)     # the next vote carries the ledger
            except cls as e:
                error = e
        got = None if error is None else (type(error).__name__, str(error))
        seen = comm.allgather(got)
    assert None not in seen, \
        f"ranks {[r for r, g in enumerate(seen) if g is None]} did not raise: {seen}"
    assert len(set(seen)) == 1, f"ranks raised different errors: {seen}"
    if match is not None:
        import re
        assert re.search(match, seen[0][1]), seen[0]
    return seen[0]
