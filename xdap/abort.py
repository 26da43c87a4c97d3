"""An uncaught exception on one rank ends the whole MPI job.

Under a plain ``mpiexec -n 4 python script.py``, an exception that escapes
on one rank ends that process, and the others wait forever in their next
collective.  ``import xdap`` installs ``sys.excepthook``: after printing the
traceback as usual, it calls ``MPI.COMM_WORLD.Abort(1)`` when the world has
more than one rank -- what ``python -m mpi4py script.py`` does.  Set
``XDAP_ABORT_ON_ERROR=0`` to keep Python's own hook (an interactive
session on one rank never aborts: the world has one rank).

>>> import sys
>>> install() and getattr(sys.excepthook, "xdap_aborts", False)
True
"""
from __future__ import annotations

import os
import sys
import time

__all__ = ["install", "ENV"]

ENV = "XDAP_ABORT_ON_ERROR"
_GRACE = 0.3         # seconds between the last output and the abort


def install() -> bool:
    """Install the hook (once; no-op when ``XDAP_ABORT_ON_ERROR=0``).
    Returns whether it is installed."""
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    if getattr(sys.excepthook, "xdap_aborts", False):
        return True
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        try:
            from mpi4py import MPI
            if MPI.Is_initialized() and not MPI.Is_finalized() and MPI.COMM_WORLD.size > 1:
                sys.stderr.write(f"xdap: uncaught {kind.__name__} on rank {MPI.COMM_WORLD.rank}: "
                                 f"aborting the MPI job ({ENV}=0 leaves the other ranks "
                                 "running)\n")
                sys.stderr.flush()
                # The launcher forwards a rank's output through a pipe; an
                # abort can end the forwarding before the pipe is drained
                # (seen under load: the traceback cut after its first line).
                # A moment's grace lets the traceback reach the user.
                time.sleep(_GRACE)
                MPI.COMM_WORLD.Abort(1)
        except Exception:          # never hide the original error
            pass

    hook.xdap_aborts = True
    sys.excepthook = hook
    return True
