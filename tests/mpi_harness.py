"""pytest plugin: run ``@pytest.mark.mpi`` tests under ``mpiexec``.

The ordinary (parent) pytest process never runs an MPI test itself.  For each
rank count N it starts ONE ``mpiexec -n N python -m pytest --xdap-mpi-child``
for all selected MPI tests of the session (a launch costs 0.6 s at -n 1 and
~3 s at -n 8 on 2 cores, so one launch per test would dominate the run).
Each child rank appends its per-test outcome to ``rank-<r>.jsonl`` in a temp
dir; the parent items then report what the ranks wrote.  A launch that hangs
or crashes fails the test it was running and is relaunched for the rest.

Environment:
  XDAP_MPI_TIMEOUT  seconds a launch may go without any test finishing before
                    it is killed as hung (default 120)
  XDAP_MPI_GRACE    seconds a rank whose test failed waits for the other ranks
                    before aborting the launch (default min(10, TIMEOUT/2))
  XDAP_DEBUG        xdap's debug mode for every launch (1) or none (0); unset:
                    debug mode on 3 ranks, the default mode on the others
  XDAP_MPI_TIMES    a file: rank 0 of each launch appends one JSON line per
                    test, [ranks, nodeid, seconds] (pytest's --durations sees
                    only the parent's items, the first of which waits for its
                    whole launch)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_pycollect_makeitem",
           "pytest_runtest_makereport", "pytest_terminal_summary", "comm"]

DEFAULT_RANKS = (1, 2, 3, 4)
TAIL_LINES = 60
# Frames of pytest's own machinery in faulthandler dumps; they would push the
# test's frames out of the output tail.
_STACK_NOISE = ("/_pytest/", "/pluggy/", "<frozen runpy>", "/pytest/__main__.py")
MAX_LAUNCHES = 10   # per rank count; each relaunch follows a hung/crashed test

# Measured on 2 cores with 4-8 oversubscribed ranks: without these, every
# rank's OpenBLAS spins up one busy-waiting thread per core and 20 small
# matmuls + allreduces take 3.4 s at -n 8 instead of 0.09 s.
CHILD_ENV_DEFAULTS = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
# Launcher state of an enclosing mpiexec would make our mpiexec's ranks talk
# to the wrong process manager: xdap.launcher drops MPICH's and Open MPI's.
from xdap.launcher import clean_environment, mpiexec_command  # noqa: E402


def debug_mode_of(ranks: int) -> str:
    """``XDAP_DEBUG`` of a launch of ``ranks`` ranks (``DEBUG_RANKS``)."""
    return "1" if ranks in DEBUG_RANKS else "0"


DEBUG_RANKS = (3,)       # the launches in debug mode; the others in the default mode


def _timeout():
    return float(os.environ.get("XDAP_MPI_TIMEOUT", "120"))


def _grace():
    return float(os.environ.get("XDAP_MPI_GRACE", min(10.0, _timeout() / 2)))


def pytest_addoption(parser):
    group = parser.getgroup("xdap-mpi")
    group.addoption("--mpi-ranks", default=None,
                    help="only run MPI tests with these rank counts, e.g. 1,4")
    group.addoption("--xdap-mpi-child", default=None, metavar="DIR",
                    help="internal: this process is one rank of a launch")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "mpi(ranks=(1, 2, 3, 4)): run the test under mpiexec -n N for each N")
    if config.getoption("xdap_mpi_child", None):
        config.pluginmanager.register(_Child(config), "xdap-mpi-child")
    else:
        config.stash[_launcher_key] = _Launcher(config)


@pytest.fixture
def comm():
    """MPI.COMM_WORLD of the launch the test runs in."""
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _ranks_of(item):
    mark = item.get_closest_marker("mpi")
    ranks = mark.kwargs.get("ranks", mark.args[0] if mark.args else DEFAULT_RANKS)
    return (ranks,) if isinstance(ranks, int) else tuple(ranks)


# ---------------------------------------------------------------- parent side

_launcher_key = pytest.StashKey()


class MPIFailure(Exception):
    pass


class MPIItem(pytest.Item):
    """Stands in for one (test function, N) pair; the test body runs in the child."""

    def __init__(self, *, fn, nranks, **kw):
        super().__init__(**kw)
        self.fn, self.nranks = fn, nranks
        self.child_nodeid = fn.nodeid
        self.own_markers = list(fn.own_markers)
        self.keywords.update(fn.keywords)

    def reportinfo(self):
        path, lineno, _ = self.fn.reportinfo()
        return path, lineno, self.name

    def runtest(self):
        res = self.config.stash[_launcher_key].result(self)
        if res["outcome"] == "failed":
            raise MPIFailure(res["text"])
        if res["outcome"] == "skipped":
            if res.get("wasxfail") is not None:
                pytest.xfail(res["wasxfail"])
            raise pytest.skip.Exception(res["text"], _use_item_location=True)
        # A passing test with an xfail mark is an XPASS, which the parent's own
        # xfail handling reports just as the child did.

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MPIFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """In the parent, stand one MPIItem per rank count in for each mpi test."""
    res = yield
    config = collector.config
    if config.getoption("xdap_mpi_child", None) or not isinstance(res, list):
        return res
    only = config.getoption("mpi_ranks", None)
    only = {int(n) for n in only.split(",")} if only else None
    out = []
    for item in res:
        if not isinstance(item, pytest.Function) or item.get_closest_marker("mpi") is None:
            out.append(item)
            continue
        for n in _ranks_of(item):
            if only is not None and n not in only:
                continue
            name = (item.name[:-1] + f"-{n} ranks]" if item.name.endswith("]")
                    else f"{item.name}[{n} ranks]")
            out.append(MPIItem.from_parent(collector, name=name, fn=item, nranks=n))
    return out


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    # The child already applied xfail; a failure it reports is real (wrong
    # exception, strict XPASS), so undo the parent's xfail reinterpretation.
    if isinstance(item, MPIItem) and call.excinfo and isinstance(call.excinfo.value, MPIFailure):
        rep.outcome = "failed"
        if hasattr(rep, "wasxfail"):
            del rep.wasxfail
    return rep


def pytest_terminal_summary(terminalreporter, config):
    launcher = config.stash.get(_launcher_key, None)
    if launcher is None or not launcher.log:
        return
    verbose = config.option.verbose > 0
    bad = [line for line in launcher.log if not line.endswith("exit 0")]
    if verbose or bad:
        terminalreporter.section("xdap MPI launches")
        for line in (launcher.log if verbose else bad):
            terminalreporter.write_line(line)


class _Launcher:
    def __init__(self, config):
        self.config = config
        self.results = {}   # (nranks, child nodeid) -> combined result
        self.log = []       # one summary line per launch

    def result(self, item):
        key = (item.nranks, item.child_nodeid)
        if key not in self.results:
            self._run_all(item.nranks, item.session.items)
        return self.results[key]

    def _run_all(self, n, items):
        # Everything selected for this N goes into one launch.
        batch = [it for it in items if isinstance(it, MPIItem) and it.nranks == n]
        pending = list(dict.fromkeys(it.child_nodeid for it in batch))
        files = list(dict.fromkeys(str(it.fn.path) for it in batch))
        for attempt in range(1, MAX_LAUNCHES + 1):
            resolved = self._launch(n, pending, files, attempt)
            pending = [nid for nid in pending if (n, nid) not in self.results]
            if not pending or not resolved:
                break
        for nid in pending:
            self.results[(n, nid)] = {
                "outcome": "failed",
                "text": f"no result: not run by the -n {n} launch(es); see the "
                        "xdap MPI launches summary\n" + (self._last_tail or "")}

    _last_tail = ""

    def _launch(self, n, nodeids, files, attempt):
        """Run one mpiexec; record results; return how many tests it resolved."""
        tmp = tempfile.mkdtemp(prefix=f"xdap-mpi-{n}-")
        with open(os.path.join(tmp, "nodeids.json"), "w") as f:
            json.dump(nodeids, f)
        cfg = self.config
        timeout = _timeout()
        cmd = mpiexec_command(n) + [
               sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider",
               "--continue-on-collection-errors", "-o", "addopts=",
               f"--rootdir={cfg.rootpath}", f"--import-mode={cfg.option.importmode}",
               f"--xdap-mpi-child={tmp}"]
        if cfg.inipath:
            cmd += ["-c", str(cfg.inipath)]
        for w in cfg.known_args_namespace.pythonwarnings or ():
            cmd += ["-W", w]
        # A hang makes each rank dump its Python stack into the output tail
        # shortly before the parent kills the launch.
        cmd += ["-o", f"faulthandler_timeout={max(1, int(timeout * 0.75))}"]
        cmd += files
        env = clean_environment()
        for k, v in CHILD_ENV_DEFAULTS.items():
            env.setdefault(k, v)
        # the watchdog: a collective some ranks never reach is reported (which
        # one, who is missing) well before the launch times out.
        env.setdefault("XDAP_DEBUG_HANGS", str(max(1, int(timeout * 0.5))))
        # the mode users run -- local calls make no MPI call, repeated calls
        # take their prepared paths, the ledger rides in the next vote -- on
        # every rank count but 3, which runs in debug mode (every call votes):
        # a test of 1-4 ranks tries both.  XDAP_DEBUG set: that mode for all.
        env.setdefault("XDAP_DEBUG", debug_mode_of(n))
        env["XDAP_MPI_RANKS"] = str(n)   # what the test was declared for
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [os.path.dirname(__file__), env.get("PYTHONPATH")]))

        out_path = os.path.join(tmp, "output.txt")
        t0 = time.monotonic()
        with open(out_path, "wb") as out:
            # Own session so a hang can be killed with every rank and proxy.
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=cfg.invocation_params.dir, start_new_session=True)
            timed_out, last_size, last_change = False, -1, t0
            while proc.poll() is None:
                time.sleep(0.05)
                size = sum(os.path.getsize(os.path.join(tmp, f))
                           for f in os.listdir(tmp) if f.startswith("rank-"))
                now = time.monotonic()
                if size != last_size:
                    last_size, last_change = size, now
                elif now - last_change > timeout:
                    timed_out = True
                    _kill_group(proc)
        elapsed = time.monotonic() - t0
        rc = proc.returncode
        with open(out_path, "rb") as f:
            lines = [line for line in f.read().decode(errors="replace").splitlines()
                     if not any(noise in line for noise in _STACK_NOISE)]
        tail = "\n".join(lines[-TAIL_LINES:])
        self._last_tail = f"---- tail of mpiexec -n {n} output ----\n{tail}"

        started, per_rank, pids = _read_rank_files(tmp, n)
        if timed_out:
            # hydra's proxies run in sessions of their own, out of killpg's
            # reach; normally they take the ranks down with them, but make sure.
            for pid in pids:
                _kill_rank(pid, tmp)
        resolved = 0
        for nid in nodeids:
            recs = {r: per_rank[r][nid] for r in range(n) if nid in per_rank[r]}
            if len(recs) == n:
                self.results[(n, nid)] = _combine(recs, n)
                resolved += 1
            elif nid in started:
                if timed_out:
                    why = (f"no result: timed out after {timeout:g} s without any test "
                           "finishing (deadlock?)")
                else:
                    why = f"no result: mpiexec -n {n} died (exit code {rc}) during this test"
                missing = [r for r in range(n) if r not in recs]
                text = f"{why}\nno result from rank(s) {_ranks(missing)}"
                failed = {r: rec for r, rec in recs.items() if rec["outcome"] == "failed"}
                if failed:
                    text += "\n" + _combine(failed, n)["text"]
                self.results[(n, nid)] = {"outcome": "failed",
                                          "text": text + "\n" + self._last_tail}
                resolved += 1
        status = "timed out" if timed_out else f"exit {rc}"
        self.log.append(f"-n {n} launch {attempt}: {len(nodeids)} tests requested, "
                        f"{resolved} resolved, {elapsed:.1f} s, {status}")
        if rc in (0, 1) and not timed_out:
            _rmtree(tmp)
        return resolved


def _kill_group(proc):
    for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_rank(pid, tmp):
    try:    # only if the pid still is one of this launch's ranks
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if f"--xdap-mpi-child={tmp}".encode() in f.read():
                os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _rmtree(path):
    import shutil
    shutil.rmtree(path, ignore_errors=True)


def _read_rank_files(tmp, n):
    started, per_rank, pids = set(), [{} for _ in range(n)], []
    for r in range(n):
        try:
            with open(os.path.join(tmp, f"rank-{r}.jsonl")) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                rec = json.loads(line)
            except ValueError:      # torn last line of a killed rank
                continue
            if "pid" in rec:
                pids.append(rec["pid"])
            elif "start" in rec:
                started.add(rec["start"])
            else:
                per_rank[r][rec["nodeid"]] = rec
    return started, per_rank, pids


def _ranks(rs):
    return ", ".join(map(str, sorted(rs)))


def _combine(recs, n):
    """One parent outcome from the ranks' records: any failure fails the test."""
    failed = sorted(r for r, rec in recs.items() if rec["outcome"] == "failed")
    if failed:
        first = failed[0]
        text = f"failed on rank(s) {_ranks(failed)} of {n}; traceback of rank {first}:\n"
        text += recs[first]["text"]
        # Tracebacks differ between ranks in object addresses at least, so
        # only mention other ranks whose error location differs.
        last = lambda r: (recs[r]["text"].strip().splitlines() or [""])[-1]
        others = [f"rank {r}: {last(r)}" for r in failed[1:] if last(r) != last(first)]
        if others:
            text += "\nother failing ranks ended differently:\n" + "\n".join(others)
        return {"outcome": "failed", "text": text}
    if all(rec["outcome"] == "skipped" for rec in recs.values()):
        return dict(recs[min(recs)])
    return {"outcome": "passed", "text": ""}


# ----------------------------------------------------------------- child side

class _Child:
    """Plugin active in each rank of a launch."""

    def __init__(self, config):
        from mpi4py import MPI
        self.MPI = MPI
        self.dir = config.getoption("xdap_mpi_child")
        world = MPI.COMM_WORLD
        self.rank = world.rank
        # Our agreement must never match a collective a test left unfinished on
        # COMM_WORLD, so it gets a communicator of its own.
        self.agree_comm = world.Dup()
        with open(os.path.join(self.dir, "nodeids.json")) as f:
            self.wanted = json.load(f)
        self.out = open(os.path.join(self.dir, f"rank-{self.rank}.jsonl"), "a")
        self._write({"pid": os.getpid()})
        self.reports = []

    def _write(self, rec):
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        wanted = set(self.wanted)
        keep = [it for it in items if it.nodeid in wanted]
        config.hook.pytest_deselected(items=[it for it in items if it.nodeid not in wanted])
        items[:] = keep

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._write({"start": item.nodeid})
        self.reports = []
        t0 = time.monotonic()
        result = yield
        rec = self._record(item.nodeid)
        times = os.environ.get("XDAP_MPI_TIMES")
        if times and self.rank == 0:
            with open(times, "a") as f:
                f.write(json.dumps([self.MPI.COMM_WORLD.size, item.nodeid,
                                    round(time.monotonic() - t0, 4)]) + "\n")
        self._write(rec)
        self._agree(rec["outcome"] == "failed")
        return result

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    def _record(self, nodeid):
        rec = {"nodeid": nodeid, "outcome": "passed", "text": "", "wasxfail": None}
        texts = []
        for rep in self.reports:
            if rep.failed:
                rec["outcome"] = "failed"
                head = "" if rep.when == "call" else f"[error in {rep.when}]\n"
                texts.append(head + rep.longreprtext)
                texts += [f"---- {name} ----\n{body}" for name, body in rep.sections]
            elif rep.skipped and rec["outcome"] == "passed":
                rec["outcome"] = "skipped"
                if hasattr(rep, "wasxfail"):
                    rec["wasxfail"] = rep.wasxfail
                elif isinstance(rep.longrepr, tuple):
                    rec["text"] = rep.longrepr[2].removeprefix("Skipped: ")
            if rep.when == "call" and rep.passed and hasattr(rep, "wasxfail"):
                rec["wasxfail"] = rep.wasxfail
        if texts:
            rec["text"] = "\n".join(texts)
        return rec

    def _agree(self, failed):
        """Wait until every rank has finished this test.

        A rank whose test failed may have left the others blocked in a
        collective that will never complete; after a grace period it aborts
        the launch (the parent then fails this test and relaunches the rest).
        Ranks whose test passed wait indefinitely: the parent's timeout is the
        backstop if some rank hangs.
        """
        req = self.agree_comm.Ibarrier()
        deadline = time.monotonic() + _grace() if failed else None
        while not req.Test():
            if deadline is not None and time.monotonic() > deadline:
                sys.stderr.write(f"xdap-mpi: rank {self.rank}: test failed and the other "
                                 "ranks did not finish it; aborting the launch\n")
                sys.stderr.flush()
                self.MPI.COMM_WORLD.Abort(70)
            time.sleep(0.0005)
