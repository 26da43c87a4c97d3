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

__all__ = ["install", "say_and_abort", "ENV"]

ENV = "XDAP_ABORT_ON_ERROR"
_GRACE = 0.3         # seconds between the last output and the abort
_FALLBACK = 10.0     # seconds a quiet rank waits for the printing rank's abort


def install() -> bool:
    """Install the hook (once; no-op when ``XDAP_ABORT_ON_ERROR=0``).
    Returns whether it is installed."""
    if os.environ.get(ENV, "1").strip() == "0":
        return False
    if getattr(sys.excepthook, "xdap_aborts", False):
        return True
    previous = sys.excepthook

    def hook(kind, value, tb):
        agreed = getattr(value, "xdap_agreed", None)
        try:
            from mpi4py import MPI
            running = MPI.Is_initialized() and not MPI.Is_finalized() and \
                MPI.COMM_WORLD.size > 1
        except Exception:
            running = False
        if not running:
            previous(kind, value, tb)
            return
        try:
            world = MPI.COMM_WORLD
            if agreed is not None and agreed.size > 1:
                # every rank of the agreement raised this very error: one of
                # them prints it, the others stay quiet (and wait a little
                # longer, so the printing rank's output gets through)
                if agreed.printer:
                    where = _origin(value.__cause__)
                    value.__cause__, value.__suppress_context__ = None, True
                    previous(kind, value, tb)
                    say_and_abort(world, f"xdap: the ranks agreed on this {kind.__name__} "
                                         f"(raised alike on {agreed.size} ranks, printed once"
                                         f"{where}): ending the MPI job")
                # the others wait for the printing rank's abort to end them
                # (some launchers lose its output when several ranks abort),
                # and abort themselves only if it never comes
                time.sleep(_FALLBACK)
                world.Abort(1)
                return
            previous(kind, value, tb)
            say_and_abort(world, f"xdap: uncaught {kind.__name__} on rank {world.rank}: aborting "
                                 f"the MPI job ({ENV}=0 leaves the other ranks running)")
        except Exception:          # never hide the original error
            pass

    hook.xdap_aborts = True
    sys.excepthook = hook
    return True


def say_and_abort(world, text: str, code: int = 1) -> None:
    """Write ``text`` to standard error and end the whole job (the abort
    hook's last words, the hang watchdog's report).  The launcher forwards
    a rank's output through a pipe; an abort can end the forwarding before
    the pipe is drained (seen under load: a traceback cut after its first
    line, a report lost), so a moment's grace lets it reach the user."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    time.sleep(_GRACE)
    world.Abort(code)


def _origin(cause) -> str:
    """Where the check that failed raised, on this rank (``''`` when it
    failed on another rank, or was not an exception of its own)."""
    tb = getattr(cause, "__traceback__", None)
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"; the check that failed: {code.co_filename}:{tb.tb_lineno} in {code.co_name}"
