"""A rank that dies ends the whole job, under a plain ``mpiexec python``;
a collective that some ranks never reach says where (debug mode).

Each test launches its own small MPI job (``.venv/bin/mpiexec``): one rank
raises (or is killed) while the others wait in a barrier; the job must end
within 5 s of that, with a failing exit status.  Without xdap's hook
(``XDAP_ABORT_ON_ERROR=0``) the same job would wait forever.
"""
import os
import re
import subprocess
import sys
import time

import pytest

from xdap.launcher import clean_environment, mpiexec_command  # noqa: E402
SCRIPT = """
import os, signal, sys, time
import xdap
from mpi4py import MPI
c = MPI.COMM_WORLD
if c.rank == c.size - 1:
    time.sleep(0.3)
    print("dying", time.time(), flush=True)
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("boom on the last rank")
c.Barrier()
"""


def launch(tmp_path, ranks, how, **env):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    run = subprocess.run(mpiexec_command(ranks) + [sys.executable, str(script), how],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, **env))
    ended = time.time()
    died = float(next(line.split()[1] for line in run.stdout.splitlines()
                      if line.startswith("dying")))
    return run, ended - died


@pytest.mark.parametrize("ranks", [2, 4])
def test_uncaught_exception_aborts_the_job(tmp_path, ranks):
    run, seconds = launch(tmp_path, ranks, "raise")
    assert run.returncode != 0
    assert seconds < 5, f"the job took {seconds:.1f} s to end after the exception"
    assert "RuntimeError: boom on the last rank" in run.stderr
    assert f"xdap: uncaught RuntimeError on rank {ranks - 1}: aborting the MPI job" in run.stderr


def test_killed_rank_ends_the_job(tmp_path):
    run, seconds = launch(tmp_path, 3, "kill")
    assert run.returncode != 0
    assert seconds < 5, f"the job took {seconds:.1f} s to end after the kill"


def test_hook_can_be_turned_off():
    code = "import sys, xdap; print(getattr(sys.excepthook, 'xdap_aborts', False))"
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, XDAP_ABORT_ON_ERROR="0"))
    assert (on.stdout.strip(), off.stdout.strip()) == ("True", "False")


STUCK = """
import time
import numpy as np, xdap
from mpi4py import MPI
c = MPI.COMM_WORLD
a = xdap.from_global(np.arange(16.0))
a.sum()
if c.rank == 0:
    a.to_global()                 # rank 0 alone: the others never come
else:
    time.sleep(60)
"""


def test_debug_mode_reports_a_collective_some_ranks_skip(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(STUCK)
    t0 = time.monotonic()
    run = subprocess.run(mpiexec_command(3) + [sys.executable, str(script)], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ, XDAP_DEBUG_HANGS="2"))
    took = time.monotonic() - t0
    report = run.stderr
    assert run.returncode != 0 and took < 30, (run.returncode, took, report)
    here = re.search(r"rank 0 of MPI_COMM_WORLD has waited 2 s in collective #(\d+) on ranks "
                     r"\[0, 1, 2\]: to_global \(called at (.*):9\)", report)
    assert here and here.group(2) == str(script), report
    n = int(here.group(1))
    assert "arrived: ranks [0]" in report
    for r in (1, 2):
        assert f"never arrived: rank {r} -- past collective #{n - 1} on these ranks, not at " \
               f"#{n}; it last announced: sum (called at {script}:7)" in report


AGREED = {
    # every rank raises the same ValueError: in the vote...
    "bad dist": ("a.redistribute(dist=('x',))", "ValueError: unknown dist type 'x'"),
    # ... one rank's argument different (the agreement says which)...
    "shape on one rank": ("xdap.from_global(np.arange(9.0 if c.rank == c.size - 1 else 8.0))",
                          "ValueError: from_global: data must be the same on every rank"),
    "axis on one rank": ("xdap.sort(a.reshape(2, 4), axis=c.rank % 2)",
                         "ValueError: sort: axis must be the same on every rank"),
    # ... in a call made inside another's work (a nested check)...
    # (a collective's: a local call's own check is not agreed until the next vote)
    "nested check": ("xdap.ones((2, -1))", "ValueError: full: shape entries"),
    # ... and after the vote, from values every rank has (an empty reduction)
    "after the vote": ("a[:0].min()", "ValueError: min of an empty selection"),
}
SCRIPT_AGREED = """
import numpy as np, xdap
from mpi4py import MPI
c = MPI.COMM_WORLD
a = xdap.from_global(np.arange(8.0))
{call}
"""


@pytest.mark.parametrize("case", sorted(AGREED))
def test_an_error_every_rank_raised_is_printed_once(tmp_path, case):
    """The agreement's error is raised on every rank; uncaught, it is printed
    by one rank (with its traceback) instead of once per rank, and the job
    still ends with a failing status -- whether the vote raised it, a check
    inside another call's work or the work itself from agreed values."""
    ranks = 3
    call, message = AGREED[case]
    script = tmp_path / "agreed.py"
    script.write_text(SCRIPT_AGREED.format(call=call))
    # the job's own environment: this process's MPI (Open MPI's singleton)
    # has set variables a nested mpiexec would take as its own
    run = subprocess.run(mpiexec_command(ranks) + [sys.executable, str(script)],
                         capture_output=True, text=True, timeout=60, env=clean_environment())
    assert run.returncode != 0
    assert run.stderr.count(message) == 1, run.stderr
    assert run.stderr.count("Traceback (most recent call last)") <= 2     # the error and its cause
    assert f"raised alike on {ranks} ranks, printed once" in run.stderr
