"""Shared pytest set-up for xdap.

The MPI harness (``@pytest.mark.mpi`` and the ``comm`` fixture) lives in
mpi_harness.py; importing its hooks here keeps it working whatever directory
pytest is started from (``pytest_plugins`` is only honoured in top-level
conftests).
"""
import os
import sys

if os.path.dirname(__file__) not in sys.path:  # --import-mode=importlib adds nothing
    sys.path.insert(0, os.path.dirname(__file__))
from mpi_harness import *  # noqa: E402,F401,F403


def _temporary_files_in_memory():
    """The suite's temporary files (tmp_path, tempfile, the MPI launches',
    which inherit TMPDIR) go to /dev/shm where it is a writable tmpfs with
    room: xdap's writers fsync every file they make (xdap.io.files), and on
    a disk the I/O tests spent half their time there (test_io's round trips:
    20 s on disk, 10 s in /dev/shm, one rank).  The code paths are the same;
    what a crash test checks (a killed writer, an injected fsync failure)
    does not depend on the disk.  A TMPDIR the user set is kept."""
    import shutil
    if "TMPDIR" in os.environ or not os.path.isdir("/dev/shm"):
        return
    try:
        if not os.access("/dev/shm", os.W_OK) or shutil.disk_usage("/dev/shm").free < 2 ** 30:
            return
    except OSError:
        return
    import tempfile
    os.environ["TMPDIR"] = "/dev/shm"
    tempfile.tempdir = None          # gettempdir() reads TMPDIR again


_temporary_files_in_memory()


def _same_draws_on_every_rank():
    """Property tests must draw the same examples on every rank (derandomized).
    Hypothesis (>= 6.131) also mixes into its draws constants it reads from
    the source of every *local* module in ``sys.modules`` -- a set that grows
    as xdap imports modules lazily, not always alike on every rank, and that
    it caches in a directory the ranks share -- so a rank's draws would depend
    on its import history (seen: ranks drawing different shapes in the Array
    API test suite under mpiexec).  No module's constants, then."""
    from hypothesis.internal.conjecture import providers
    providers._get_local_constants = lambda: providers._local_constants    # stays empty


_same_draws_on_every_rank()
