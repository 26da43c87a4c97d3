"""Debug mode: a collective that some ranks never reach says where.

When user code calls an xdap collective on only some ranks (``to_global()``
under ``if rank == 0:``), the job hangs without a word.  With
``XDAP_DEBUG_HANGS=<seconds>`` (off by default; on in the test suite) every
agreement -- the first step of every xdap collective -- first announces
itself to the other members of its communicator: one small message to
each, on a private duplicate of ``MPI.COMM_WORLD``, carrying the
collective's name, its number on that communicator and the caller's file
and line.  A rank waits there, polling, until every member has announced
the same collective.  If that takes longer than ``<seconds>`` it prints
which collective it waits in, which ranks arrived, and for each rank that
did not where it was last seen (waiting in another xdap collective, or
outside any), then aborts the job.

Costs one message per member per collective: a debugging aid, not for
production runs.  ``import xdap`` must happen on every rank (the private
communicator is made then, collectively).

>>> timeout() >= 0
True
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

__all__ = ["ENV", "LIMIT", "timeout", "start", "checkpoint"]

ENV = "XDAP_DEBUG_HANGS"
_TAG = 31337
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _from_env() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV, "0") or 0))
    except ValueError:
        return 0.0


LIMIT = _from_env()          # read once: the agreement asks on every call


def timeout() -> float:
    """Seconds a rank may wait for the others (0: the debug mode is off),
    from ``XDAP_DEBUG_HANGS`` as it was when xdap was imported."""
    return LIMIT


class _State:
    channel = None                  # the private COMM_WORLD duplicate
    world_rank = 0
    seq: dict = {}                  # communicator key -> collectives announced here
    seen: dict = {}                 # (key, world rank) -> highest number announced there
    last: dict = {}                 # world rank -> (key, number, label, members, when)
    pending: list = []              # our sends not known to be complete


def start() -> None:
    """Make the private channel (collective over COMM_WORLD; called by
    ``import xdap`` when the debug mode is on)."""
    from mpi4py import MPI
    if _State.channel is None and MPI.COMM_WORLD.size > 1:
        _State.channel = MPI.COMM_WORLD.Dup()
        _State.world_rank = MPI.COMM_WORLD.rank


def _members(comm) -> tuple:
    """The world ranks of ``comm``'s members."""
    from mpi4py import MPI
    world = MPI.COMM_WORLD.Get_group()
    group = comm.Get_group()
    try:
        return tuple(int(r) for r in MPI.Group.Translate_ranks(group, list(range(comm.size)),
                                                               world))
    finally:
        group.Free()
        world.Free()


def _caller() -> str:
    """file:line of the first frame outside xdap."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE):
        f = f.f_back
    return "?" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


def _drain() -> None:
    """Receive every announcement that has arrived."""
    from mpi4py import MPI
    ch = _State.channel
    status = MPI.Status()
    while ch.iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
        src = status.Get_source()
        key, number, label, members = ch.recv(source=src, tag=_TAG)
        _State.seen[(key, src)] = max(_State.seen.get((key, src), 0), number)
        _State.last[src] = (key, number, label, members, time.monotonic())
    _State.pending = [r for r in _State.pending if not r.Test()]


def checkpoint(comm, what: str) -> None:
    """Announce this collective to the members of ``comm`` and wait until
    each has announced it too -- or report and abort after ``timeout()``."""
    limit = LIMIT
    if not limit or _State.channel is None or comm.size == 1:
        return
    members = _members(comm)
    key = hashlib.blake2b(repr(members).encode(), digest_size=8).digest()
    number = _State.seq[key] = _State.seq.get(key, 0) + 1
    label = f"{what or 'an xdap collective'} (called at {_caller()})"
    me = _State.world_rank
    for r in members:
        if r != me:
            _State.pending.append(_State.channel.isend((key, number, label, members), dest=r,
                                                       tag=_TAG))
    started = time.monotonic()
    pause = 1e-5
    while True:
        _drain()
        missing = [r for r in members if r != me and _State.seen.get((key, r), 0) < number]
        if not missing:
            return
        if time.monotonic() - started > limit:
            _report(key, number, label, members, missing, limit)
        time.sleep(pause)
        pause = min(2 * pause, 1e-3)


def _report(key, number, label, members, missing, limit) -> None:
    from mpi4py import MPI
    now = time.monotonic()
    lines = [f"xdap debug ({ENV}={limit:g}): rank {_State.world_rank} of MPI_COMM_WORLD has "
             f"waited {limit:g} s in collective #{number} on ranks {list(members)}: {label}",
             f"  arrived: ranks {[r for r in members if r not in missing]}"]
    for r in missing:
        seen = _State.last.get(r)
        if seen is None:
            lines.append(f"  never arrived: rank {r} -- not seen in any xdap collective")
            continue
        k, n, where, others, when = seen
        if k == key:
            lines.append(f"  never arrived: rank {r} -- past collective #{n} on these ranks, not "
                         f"at #{number}; it last announced: {where} ({now - when:.1f} s ago)")
        else:
            lines.append(f"  never arrived: rank {r} -- last announced collective #{n} on ranks "
                         f"{list(others)}: {where} ({now - when:.1f} s ago; probably waiting "
                         "there)")
    lines.append("  aborting the job")
    from .abort import say_and_abort
    say_and_abort(MPI.COMM_WORLD, "\n".join(lines), 4)
