"""How xdap's tools start MPI jobs: one launcher setting, either MPI.

The test harness, the tests that start jobs of their own, the benchmarks
and ``make demo`` all launch through ``mpiexec_command``:

- ``XDAP_MPIEXEC`` (a command plus flags, e.g. ``"mpirun --oversubscribe
  --allow-run-as-root"`` for Open MPI as root on a small machine) when set;
- else the ``mpiexec`` next to the running Python (the ``mpich`` wheel's in
  ``.venv/bin``).

A child job must not inherit the launcher state of an enclosing one (its
ranks would talk to the wrong process manager, or Open MPI refuses a
"recursive" mpiexec): ``clean_environment`` drops MPICH's (Hydra, PMI) and
Open MPI's (OMPI, PMIx, PRRTE, OPAL) variables.

>>> mpiexec_command(4, env={})[-2:]
['-n', '4']
>>> sorted(clean_environment({"PMI_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "HOME": "/root"}))
['HOME']
"""
from __future__ import annotations

import os
import shlex
import sys

__all__ = ["mpiexec_command", "clean_environment", "kill_session", "LAUNCHER_PREFIXES"]

LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "HYDI_", "HYDRA_", "MPI_LOCALNRANKS", "MPI_LOCALRANKID",
                     "OMPI_", "OPAL_", "PRTE_", "PRRTE_")


def mpiexec_command(ranks: int, env=None) -> list:
    """``[launcher..., "-n", ranks]``: ``XDAP_MPIEXEC`` or the venv's mpiexec."""
    env = os.environ if env is None else env
    custom = env.get("XDAP_MPIEXEC", "").strip()
    base = shlex.split(custom) if custom else \
        [os.path.join(os.path.dirname(sys.executable), "mpiexec")]
    return base + ["-n", str(int(ranks))]


def clean_environment(env=None, **extra) -> dict:
    """A copy of ``env`` (default: this process's) without any MPI launcher's
    variables, plus ``extra``: the environment for a job of its own."""
    env = os.environ if env is None else env
    out = {k: v for k, v in env.items() if not k.startswith(LAUNCHER_PREFIXES)}
    out.update(extra)
    return out


def kill_session(sid: int, sig: int = 9) -> int:
    """Send ``sig`` (SIGKILL) to every process of session ``sid`` -- a job
    started with ``start_new_session=True`` has ``sid == proc.pid`` -- and
    return how many were signalled. ``os.killpg`` is not enough: Open MPI's
    launcher puts each rank in a process group of its own (MPICH's hydra
    keeps them in its group), so killing the launcher's group leaves the
    ranks running, orphaned. Linux only (reads /proc)."""
    hit = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.getsid(int(name)) == sid:
                os.kill(int(name), sig)
                hit += 1
        except (ProcessLookupError, PermissionError):
            pass
    return hit
