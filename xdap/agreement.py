"""The agreement every collective entry point makes before data moves.

*Agreement* is how every collective keeps its promise that bad input gives
the same error on every rank and never a hang: each rank checks its own
part of the arguments and names the ones that must match; one small
collective combines every rank's verdict, and then either every rank
proceeds or every rank raises the same error -- the lowest failing rank's,
or one naming the argument that differs and the ranks that passed it.

>>> from mpi4py import MPI
>>> with agreement(MPI.COMM_SELF, "example") as ag:
...     ag.same("axis", 0)          # must be equal on every rank
...     if 0 > 1:
...         raise ValueError("never")
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import pickle
import struct
import weakref

import numpy as np

from mpi4py import MPI

from . import _envelope
from . import ledger as _ledger
from . import watch as _watch
from .comm import resolve

__all__ = ["agreement", "Agreement", "Agreed", "Vote", "PreparedVote", "SETTLED", "payloads",
           "records_of", "records_buffer",
           "record_size",
           "capacity", "agree", "settled", "Held", "on_rank0", "agreed_on", "local_check", "debug", "set_debug", "USER_ERRORS"]


_COLLECTIVE = "the collective"     # the name under which the entry points are compared

# The envelope: every vote is ONE Allgather of a record of fixed size from
# each rank -- [digest (16 bytes) | status (int64) | payload] -- whatever
# the call: ranks that entered different collectives, or passed different
# arguments, still meet in the same MPI call, of the same size, and learn
# it.  The payload is what a call would have sent anyway (a reduction's
# partial, a shared count): its vote rides in that message.  An Allgather
# of up to 1 KiB costs what an Allreduce of one double does (measured: 4.3
# us on 2 ranks, with MPICH), and every rank combines the payloads itself,
# in rank order, with any operation.
_HEADER = 24
_OK, _SPILL, _FAILED = 0, 1, 2          # status: agreed / agreed, share too big / failed
_agreed = _envelope.agreed
_seal = _envelope.seal
_NO_DIGEST = bytes(16)


# The errors a bad argument gives, raised alike on every rank with their
# class kept (NumPy's AxisError is a ValueError and an IndexError), and the
# ImportError of an optional dependency that is not installed (xdap.optional:
# it names the pip extra); any other exception inside an agreement is a bug,
# reported as one.
USER_ERRORS = (ValueError, TypeError, IndexError, BufferError, ImportError)
_ERROR_CLASSES = {"AxisError": np.exceptions.AxisError,
                  "LinAlgError": np.linalg.LinAlgError,
                  "IndexError": IndexError, "TypeError": TypeError, "ValueError": ValueError,
                  "BufferError": BufferError, "ImportError": ImportError}


def _verdict(error) -> tuple:
    """(class name, message) of this rank's error, as the others raise it:
    its own class where it is one of ``_ERROR_CLASSES``, else a ValueError
    whose message starts with the error's class (``MemoryError: ...``)."""
    for name, cls in _ERROR_CLASSES.items():
        if isinstance(error, cls):
            return name, str(error)
    return "ValueError", f"{type(error).__name__}: {error}"


def _digest(value) -> bytes:
    """A digest of ``value``'s pickle, taken without pickle's memo: a pickle
    writes an object met twice as a reference to the first, so equal values
    holding one string twice (a cached type string) or two equal strings
    would pickle -- and hash -- differently on two ranks."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True           # no memo: the bytes depend on values alone
    pickler.dump(value)
    return hashlib.blake2b(out.getbuffer(), digest_size=16).digest()


def record_size(size: int) -> int:
    """Bytes of one rank's record on a communicator of ``size`` ranks:
    1 KiB up to 4 ranks, shrinking to 64 from 64 ranks, so the records of
    all ranks stay within 4 KiB.  Measured on 2 ranks (MPICH, shared
    memory): an Allgather of 1 KiB records costs 1.8 us against 1.6 for
    256 bytes, and a row of 100 float64 (a 2-D stencil's boundary at 10^3
    values a rank) then rides in the vote instead of following it."""
    return max(64, min(1024, (4096 // max(size, 1)) // 8 * 8))


def capacity(size: int) -> int:
    """Bytes of payload a vote on ``size`` ranks carries (``ride``)."""
    return record_size(size) - _HEADER


_GEOMETRY: dict = {}         # size -> (record size, the gather buffer): votes never nest


def _raw(payload):
    """The bytes of a payload (anything with the buffer protocol) as a flat
    view; an empty one as ``b""`` (a view with a zero in its shape does
    not cast)."""
    view = memoryview(payload)
    return view.cast("B") if view.nbytes else b""


_pack = struct.Struct("<16sq").pack_into
_pack_length = struct.Struct("<q").pack_into


def _geometry(size: int) -> tuple:
    geometry = _GEOMETRY.get(size)
    if geometry is None:
        length = record_size(size)
        geometry = _GEOMETRY[size] = (length, bytearray(size * length))
    return geometry


def _buffer(size: int) -> bytearray:
    return _geometry(size)[1]


@functools.lru_cache(maxsize=1024)
def _name_digest(what: str, share: bool) -> bytes:
    """The digest of an agreement without ``same`` values (memoised)."""
    return _digest((what, share, []))


class Described(tuple):
    """A value as ranks compare it (``xdap.contract.describe``) whose every
    leaf is typed -- ``("int", 5)``, ``("float", "0x1.4p+2")``, an array's
    fingerprint, shape and type string -- so two are equal exactly when
    their pickles are: agreements of such values (and strings) share one
    digest memo (``_described_digest``), where ``1 == True == 1.0`` of raw
    values would not allow it."""
    __slots__ = ()


def _memoisable(value) -> bool:
    return value is None or type(value) is str or type(value) is Described


@functools.lru_cache(maxsize=1024)
def _described_digest(what: str, share: bool, items: tuple) -> bytes:
    """The digest of an agreement whose ``same`` values are all strings,
    None or ``Described`` (memoised: a repeated call -- a halo exchange of
    one array -- hashes nothing)."""
    return _digest((what, share, list(items)))


class Agreement:
    """One collective entry point's agreement (use ``agreement(...)``).

    Inside the ``with`` block a rank checks its arguments -- raising
    ValueError/TypeError/IndexError for a bad one -- and calls ``same(name, value)`` for
    each argument that must be equal on every rank (any picklable value;
    large ones cost a hash, not a transfer).  With ``share=True`` every rank
    may also ``share(value)`` something small that all ranks receive as
    ``shared`` (a list in rank order) after the block.

    The block's end is ONE collective: an allreduce of a few integers (or,
    with ``share=True``, one allgather).  Afterwards every rank raises the
    same error if any rank failed (the lowest failing rank's message, ending
    in ``(rank r)``, of its class: ValueError, TypeError, IndexError or
    NumPy's AxisError) or
    if a ``same`` argument differs (a ValueError naming it and the ranks).
    An exception other than those is a bug: the other ranks
    are told (so they raise too instead of hanging) and it propagates.
    """

    def __init__(self, comm, what: str = "", share: bool = False):
        self.comm = resolve(comm)
        self.what = what
        self._share = share
        self._same: dict = {}
        self._preset = None         # the digest of adopted values (``adopt``)
        self._plain = True          # every same value a str, None or Described: memoisable
        self._shown: dict = {}
        self._errors: dict = {}
        self._value = None
        self._meanwhile = None
        self.shared = None

    def same(self, name: str, value, shown=None, error=ValueError) -> None:
        """``value`` must be equal on every rank (one that does not pickle is
        a TypeError of this rank, agreed like any other).  Values are
        hashed together once, at the end of the block.  ``shown``: what an
        error says each rank passed, where ``value`` is a description of it
        (``xdap.contract.describe``); ``error``: the class of the error when
        it differs (a type that differs between ranks is a TypeError)."""
        self._same[name] = value
        if self._plain and not (value is None or type(value) is Described or
                                type(value) is str):
            self._plain = False
        if shown is not None:
            self._shown[name] = shown
        if error is not ValueError:
            self._errors[name] = error

    def share(self, value) -> None:
        """Hand every rank this rank's ``value`` (``share=True`` only)."""
        if not self._share:
            raise RuntimeError("Agreement.share needs agreement(..., share=True)")
        self._value = value

    def meanwhile(self, work) -> None:
        """Run ``work()`` -- purely local, e.g. packing a send buffer --
        with the vote, if this rank's checks passed (just before it: every
        rank's vote is the same blocking call, whether its checks passed or
        not).  Data still moves between ranks only after every rank has
        agreed.  A ``work`` that fails (this rank's memory) is this rank's
        verdict: the same error on every rank, named as ``settled`` names it."""
        self._meanwhile = work

    def _prefix(self) -> str:
        return f"{self.what}: " if self.what else ""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is not None and not isinstance(error, USER_ERRORS):
            if isinstance(error, Exception):
                # a bug (or MemoryError): tell the others, then let it propagate
                self.finish(ValueError(f"internal error on rank {self.comm.rank}: "
                                       f"{type(error).__name__}: {error}"))
            return False
        self.finish(error)
        return True      # this rank's error was raised by finish(), agreed

    def finish(self, error: BaseException | None = None, payload=None):
        """The collective step: combine verdicts and ``same`` digests; raise
        the agreed error on every rank (``error``: this rank's own, or None).

        ``payload`` (bytes-like, at most ``capacity(comm.size)`` bytes, the
        same length on every rank that agrees): data the call sends anyway,
        carried in this vote's own message -- a reduction's partial.  Then
        the return value is every rank's record, one ``record_size`` apart
        (a memoryview valid until the next vote; ``payloads`` reads it)."""
        comm = self.comm
        size = comm.size
        if size == 1:                            # one rank has nobody to compare with
            if error is not None:
                self._raise(0, _verdict(error), error)
            self.shared = [self._value] if self._share else None
            if self._meanwhile is not None:
                self._meanwhile()
            if payload is not None:
                data = _raw(payload)
                record = bytearray(_HEADER + len(data))     # one row: no stride to keep
                record[_HEADER:_HEADER + len(data)] = data
                return memoryview(record)
            return None
        digest, status, shared = _NO_DIGEST, _OK, None
        since = _ledger.of(comm)
        if since is not None and not since.count:
            since = None
        if error is None:
            try:
                digest = self._call_digest()
                if since is not None:
                    digest = _ledger.folded(digest, since)
                if self._share:     # pickled here: a value that does not is this rank's error
                    shared = pickle.dumps(self._value, protocol=5)
                    if len(shared) > capacity(size) - 8:
                        status = _SPILL
            except Exception as e:
                error = e if isinstance(e, TypeError) else \
                    TypeError(f"{self._prefix()}a value to share does not pickle "
                              f"({type(e).__name__}: {e})")
        if error is None and self._meanwhile is not None:
            # local packing before the vote (data moves only after it), its
            # failure this rank's verdict. Not hidden behind a nonblocking
            # vote: a rank whose checks failed calls the vote too, and a
            # blocking collective never matches a nonblocking one
            try:
                self._meanwhile()
            except Exception as e:
                error = _named(f"{self.what or UNNAMED}: this rank's packing", e)
        if error is not None:
            digest, status = _NO_DIGEST, _FAILED
        if _watch.LIMIT:                     # debug mode: a missing rank is reported
            _watch.checkpoint(comm, self.what)
        length, buf = _GEOMETRY.get(size) or _geometry(size)
        at = comm.rank * length
        _pack(buf, at, digest, status)
        if status == _OK:
            if payload is not None:
                data = _raw(payload)
                buf[at + _HEADER:at + _HEADER + len(data)] = data
            elif shared is not None:
                _pack_length(buf, at + _HEADER, len(shared))
                buf[at + _HEADER + 8:at + _HEADER + 8 + len(shared)] = shared
        comm.Allgather(MPI.IN_PLACE, [buf, MPI.BYTE])
        if _agreed(buf, size, length, at):      # the common case: all agree, nobody failed
            if since is not None:
                since.clear()
            if self._share:
                self.shared = [pickle.loads(buf[r + _HEADER + 8:r + _HEADER + 8 + struct.unpack_from(
                    "<q", buf, r + _HEADER)[0]]) for r in range(0, size * length, length)]
            return memoryview(buf) if payload is not None else None
        self._disagree(buf, length, error, shared)
        return memoryview(buf) if payload is not None else None

    def _disagree(self, buf, length, error, shared) -> None:
        """The records did not all match this rank's: the lowest failing
        rank's error, or the arguments (or calls) that differ, raised on
        every rank -- or, when every rank agreed but a shared value was too
        big to ride, that value gathered on its own."""
        comm = self.comm
        size = comm.size
        records = [struct.unpack_from("<16sq", buf, r * length) for r in range(size)]
        failed = [r for r, (_, status) in enumerate(records) if status == _FAILED]
        if failed:                           # the lowest failing rank tells its error
            first = failed[0]
            verdict = comm.bcast(None if error is None or comm.rank != first else
                                 _verdict(error), root=first)
            _ledger.settle(comm)
            self._raise(first, verdict, error)
        if len({digest for digest, _ in records}) > 1:
            per_rank = comm.allgather((_ledger_report(comm), self._digests()))
            _ledger.settle(comm)
            self._raise_mismatch(per_rank)
        _ledger.settle(comm)
        if self._share:                      # agreed; some value was too big to ride
            self.shared = [pickle.loads(v) for v in comm.allgather(shared)]

    def adopt(self, prepared) -> "Agreement":
        """Take the agreed values of ``prepared`` (``xdap.contract.Prepared``:
        a repeated call's, described and digested when first made) as this
        agreement's ``same`` values, digest included."""
        self._same, self._shown, self._errors = prepared.same, prepared.shown, prepared.errors
        self._preset = prepared.digest
        return self

    def _call_digest(self) -> bytes:
        if self._preset is not None:
            return self._preset
        if not self._same:
            return _name_digest(self.what, self._share)
        if self._plain:          # typed values: equal exactly when their pickles are
            return _described_digest(self.what, self._share, tuple(self._same.items()))
        try:
            return _digest((self.what, self._share, list(self._same.items())))
        except Exception as e:
            self._digests()                         # names the value that does not pickle
            raise TypeError(f"{self._prefix()}an argument does not pickle ({e})") from None

    def _digests(self) -> dict:
        """{name: (digest, short repr)} of the collective and the ``same``
        values, in call order."""
        out = {_COLLECTIVE: (_digest((self.what, self._share)), repr(self.what or "?"))}
        for name, value in self._same.items():
            try:
                out[name] = (_digest(value), short_repr(self._shown.get(name, value)))
            except Exception as e:
                raise TypeError(f"{self._prefix()}{name} cannot be compared across ranks (it "
                                f"does not pickle: {type(e).__name__}: {e})") from None
        return out

    def _raise(self, rank, verdict, own):
        kind, message = verdict
        raise self.agreed_error(_ERROR_CLASSES[kind](f"{message} (rank {rank})")) from own

    def agreed_error(self, error: BaseException) -> BaseException:
        """Mark an error every rank of this agreement raises alike -- one
        it raises itself, or one its caller raises from values all ranks
        received -- so that an uncaught one is printed once (``xdap.abort``)."""
        error.xdap_agreed = Agreed.of(self.comm)
        return error

    def _raise_mismatch(self, per_rank: list):
        try:
            self._mismatch(per_rank)
        except (ValueError, TypeError) as e:
            raise self.agreed_error(e) from None

    def _mismatch(self, per_rank: list):
        """Raise what differs: first in the ledgers (the local calls made
        since the last vote), then in this call -- every rank raises the
        same text, made from what every rank received."""
        self._ledger_mismatch([ledger for ledger, _ in per_rank])
        per_rank = [call for _, call in per_rank]
        calls = [s[_COLLECTIVE] for s in per_rank]
        differ = [r for r, c in enumerate(calls) if c[0] != calls[0][0]]
        if differ:                  # no prefix: it names a different call on each rank
            r = differ[0]
            raise ValueError(f"ranks called different xdap collectives at the same time: rank 0 "
                             f"{calls[0][1]}, rank {r} {calls[r][1]} (every rank must make the "
                             "same collective calls, in the same order)")
        self._differing(per_rank, self._prefix(), self._errors)
        raise ValueError(f"{self._prefix()}the ranks compared different arguments, or in "
                         "another order (a bug in a collective entry point)")

    @staticmethod
    def _differing(per_rank: list, prefix: str, errors: dict) -> None:
        """Raise naming the first argument whose digest differs between
        ranks (``per_rank``: each rank's {name: (digest, shown)})."""
        names = list(per_rank[0])
        for name in names + sorted({n for s in per_rank for n in s} - set(names)):
            values = [s.get(name, (None, "nothing")) for s in per_rank]
            differ = [r for r, v in enumerate(values) if v[0] != values[0][0]]
            if differ:
                r = differ[0]
                raise errors.get(name, ValueError)(
                    f"{prefix}{name} must be the same on every rank: "
                    f"rank 0 passed {values[0][1]}, rank {r} {values[r][1]}"
                    + (f" (ranks {', '.join(map(str, differ))} differ from rank 0)"
                       if len(differ) > 1 else ""))

    def _ledger_mismatch(self, ledgers: list) -> None:
        """Raise naming the first local call (``xdap.ledger``) that differs
        between ranks, if one does (the same text on every rank: this
        call, which may differ too, is not part of it).  ``ledgers``: each
        rank's ``_ledger_report``."""
        states = [state for state, _ in ledgers]
        ledgers = [entries for _, entries in ledgers]
        if all(state == states[0] for state in states):
            return                               # the ledgers agree: the call differs
        for i in range(max(len(entries) for entries in ledgers)):
            entries = [e[i] if i < len(e) else None for e in ledgers]
            keys = [None if e is None else e[:2] for e in entries]
            differ = [r for r, k in enumerate(keys) if k != keys[0]]
            if not differ:
                continue
            r = differ[0]
            first, other = entries[0], entries[r]
            where = f"local call {i + 1} since the last collective"
            if first is not None and first[0] is None or other is not None and other[0] is None:
                break                            # past the kept entries
            worked = [q for q, e in enumerate(entries) if e is not None and "its work" in e[2]]
            if worked:                           # a collective's last step failed there alone
                q = worked[0]
                raise ValueError(f"{entries[q][0]} failed on rank {q} after its last message: "
                                 f"{entries[q][2]['its work'][1]}")
            if first is None or other is None or first[0] != other[0]:
                said = lambda e: "a collective call" if e is None else \
                    f"{e[0]} (a local call)"        # noqa: E731
                raise ValueError(f"ranks made different xdap calls: rank 0 {said(first)}, rank "
                                 f"{r} {said(other)}, as {where} (every rank must make the "
                                 f"same calls, in the same order)")
            failed = [q for q, e in enumerate(entries) if "its checks" in e[2]]
            if failed:                           # the call's checks raised on some rank
                q = failed[0]
                raise ValueError(f"{first[0]} ({where}) failed on rank {q}: "
                                 f"{entries[q][2]['its checks'][1]}"
                                 + (f" (ranks {', '.join(map(str, failed))} failed)"
                                    if len(failed) > 1 else ""))
            self._differing([e[2] for e in entries], f"{first[0]} ({where}): ", {})
            raise ValueError(f"{first[0]} ({where}): the ranks passed different arguments")
        raise ValueError(f"the ranks' local calls differ after the first {_ledger.KEPT} since "
                         "their last collective (the ledger keeps the first ones whole)")


def _ledger_report(comm) -> tuple:
    """This rank's ledger as the ranks compare it when a vote disagrees:
    ``(running digest or None, [(what, digest, {name: (digest, shown)})])``."""
    out = []
    for what, digest, items in _ledger.entries(comm):
        if what is None:                         # entries made past the kept ones
            out.append((None, None, items))
            continue
        out.append((what, digest, {name: (_digest(described),
                                          short_repr(value, 240 if name == "its checks" else 60))
                                   for name, described, value in items}))
    return _ledger.pending(comm), out


class Agreed:
    """What an agreed error carries (``error.xdap_agreed``): on how many
    ranks it was raised alike, whether they are all of ``MPI.COMM_WORLD``,
    and whether this rank is the one that prints it (rank 0 of the
    agreement's communicator)."""

    __slots__ = ("size", "whole_world", "printer")

    def __init__(self, size: int, whole_world: bool, printer: bool):
        self.size, self.whole_world, self.printer = size, whole_world, printer

    @classmethod
    def of(cls, comm) -> "Agreed":
        world = MPI.COMM_WORLD
        whole = comm.size == world.size and \
            MPI.Comm.Compare(comm, world) in (MPI.IDENT, MPI.CONGRUENT)
        return cls(comm.size, whole, comm.rank == 0)


def short_repr(value, width: int = 60) -> str:
    """A value as an error message shows it: its repr, cut to ``width``."""
    if type(value) is tuple and any(hasattr(type(v), "__xdap_wrap__") for v in value):
        # operands: each as below (an array's repr would communicate)
        return "(" + ", ".join(short_repr(v, 120) for v in value) + ")"
    try:
        if type(value) is Described and value and value[0] == "DistArray":   # its description
            text = f"an array {value[3]} <{value[1].hex()[:8]}>"
            width = max(width, 120)
        elif hasattr(type(value), "__xdap_wrap__"):      # a DistArray: what ranks compare
            d = value.distribution
            text = (f"an array {value.parts.info.global_type(d.global_shape)}, "
                    f"dist ({', '.join(m.spec for m in d.maps)}) over {d.grid}")
            width = max(width, 120)
        elif hasattr(value, "maps") and hasattr(value, "fingerprint"):     # a Distribution
            text = (f"dist ({', '.join(m.spec for m in value.maps)}) over {value.grid} of "
                    f"shape {value.global_shape} <{value.fingerprint().hex()[:8]}>")
            width = max(width, 120)
        else:
            text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    if isinstance(value, bytes) and len(value) == 16:
        text = f"<digest {value.hex()[:12]}>"
    return text if len(text) <= width else text[:width - 3] + "..."


class Vote:
    """A collective call's vote, cast with the first message its work
    sends (``xdap.contract.collective(rides=True)``): a reduction's
    partial rides in the vote's own record (``ride``), so the call costs
    one message, as the hand-written one does.  Until it is cast, the work
    may compute (locally) but not communicate: ``cast()`` first, where it
    sends something else.  A vote that is not pending -- the call is
    nested in another's work, whose vote agreed it -- sends the payload in
    the same layout without comparing anything."""

    __slots__ = ("agreement", "pending", "comm")

    def __init__(self, agreement, comm=None):
        self.agreement = agreement
        self.pending = agreement is not None
        self.comm = agreement.comm if agreement is not None else comm

    def cast(self) -> None:
        """The vote on its own (the work sends something else next)."""
        if self.pending:
            self.pending = False
            self.agreement.finish()

    def fail(self, error: BaseException) -> None:
        """This rank's work failed before the vote was cast: the others,
        waiting in it, raise too (the agreed error is raised here)."""
        if self.pending:
            self.pending = False
            if isinstance(error, USER_ERRORS):
                self.agreement.finish(error)
            elif isinstance(error, Exception):
                self.agreement.finish(ValueError(f"internal error on rank {self.comm.rank}: "
                                                 f"{type(error).__name__}: {error}"))

    def ride(self, comm, payload) -> memoryview:
        """Every rank's ``payload`` (bytes-like, the same length on every
        rank, at most ``capacity(comm.size)``), in one message that also
        carries the vote when it is pending: the records, one
        ``record_size(comm.size)`` apart, each payload at ``HEADER``
        (``payloads`` reads them).  Valid until the next vote."""
        if self.pending:
            self.pending = False
            return self.agreement.finish(None, payload)
        size = comm.size
        data = _raw(payload)
        if size == 1:
            record = bytearray(_HEADER + len(data))     # one row: no stride to keep
            record[_HEADER:_HEADER + len(data)] = data
            return memoryview(record)
        length, buf = _GEOMETRY.get(size) or _geometry(size)
        at = comm.rank * length
        buf[at + _HEADER:at + _HEADER + len(data)] = data
        comm.Allgather(MPI.IN_PLACE, [buf, MPI.BYTE])
        return memoryview(buf)


SETTLED = Vote(None)                  # a nested call's: its caller's vote agreed it

_PLACES: dict = {}                    # id(comm) -> (weak comm, its place in the envelope)


def _place(comm) -> tuple:
    """``(size, rank, record size, buffer, offset, MPI buffer spec, handle)``
    of ``comm`` in the envelope, found once (a loop's votes look it up)."""
    hit = _PLACES.get(id(comm))
    if hit is not None and hit[0]() is comm:
        return hit[1]
    size, rank = comm.size, comm.rank
    length, buf = _geometry(size)
    place = (size, rank, length, buf, rank * length, [buf, MPI.BYTE], comm.handle)
    if len(_PLACES) > 64:
        _PLACES.clear()
    _PLACES[id(comm)] = (weakref.ref(comm), place)
    return place


class PreparedVote:
    """The vote of a repeated call (``xdap.contract.Prepared``: its digest
    kept): its record sealed and gathered without an ``Agreement`` -- one
    is made only where the ranks disagree, to say how.  ``Vote``'s
    interface; one is kept with its call's prepared path and armed again
    (``pending = True``) for each call."""

    __slots__ = ("prepared", "comm", "pending", "place")

    def __init__(self, prepared, comm):
        self.prepared, self.comm, self.pending = prepared, comm, True
        self.place = _place(comm)

    def _agreement(self):
        return Agreement(self.comm, self.prepared.what).adopt(self.prepared)

    def ride(self, comm, payload):
        if not self.pending:
            return SETTLED.ride(comm, payload)
        self.pending = False
        size, _, length, buf, at, spec, handle = self.place
        if size == 1:
            return SETTLED.ride(comm, payload)
        since = _ledger._LEDGERS.get(handle)
        if since is not None and since.count:
            digest = _ledger.folded(self.prepared.digest, since)
        else:
            digest, since = self.prepared.digest, None
        if _watch.LIMIT:
            _watch.checkpoint(comm, self.prepared.what)
        _seal(buf, at, digest, payload)
        comm.Allgather(MPI.IN_PLACE, spec)
        if _agreed(buf, size, length, at):
            if since is not None:
                since.clear()
            return buf
        self._agreement()._disagree(buf, length, None, None)
        return buf

    def cast(self) -> None:
        if self.pending:
            self.ride(self.comm, b"")

    def fail(self, error: BaseException) -> None:
        if self.pending:
            self.pending = False
            Vote(self._agreement()).fail(error)


HEADER = _HEADER


def records_buffer(size: int) -> bytearray:
    """The buffer every vote on ``size`` ranks gathers its records into
    (one a size, kept: a view made once reads each vote's records; votes
    never nest)."""
    return _geometry(size)[1]


def records_of(size: int, dtype):
    """A NumPy view of the first ``dtype`` value of every rank's payload in
    the envelope's buffer of ``size`` ranks: after a vote that carried them
    (``ride``; nested calls' exchanges too), it reads the values that
    arrived -- made once, read each time.  ``size`` > 1."""
    length, buf = _geometry(size)
    return np.ndarray((size,), dtype, buf, _HEADER, (length,))


def payloads(records, size: int, dtype, count: int, offset: int = 0):
    """The ``count`` values of ``dtype`` every rank's record carries
    (``offset`` bytes into its payload), as a ``(size, count)`` NumPy array
    (a copy), rank order.

    >>> from mpi4py import MPI
    >>> import numpy as np
    >>> records = SETTLED.ride(MPI.COMM_SELF, np.array([1.5, 2.5]))
    >>> payloads(records, 1, np.float64, 2).tolist()
    [[1.5, 2.5]]
    """
    dtype = np.dtype(dtype)
    return np.ndarray((size, count), dtype, buffer=records, offset=_HEADER + offset,
                      strides=(record_size(size), dtype.itemsize)).copy()


def agreement(comm, what: str = "", share: bool = False) -> Agreement:
    """The agreement of a collective entry point (see ``Agreement``)."""
    return Agreement(comm, what, share)


def agreed_on(comm, error: BaseException) -> BaseException:
    """``error``, marked as raised alike on every rank of ``comm`` (printed
    once): for an error the work raises from values every rank holds --
    the global count of a reduction -- after its vote."""
    error.xdap_agreed = Agreed.of(resolve(comm))
    return error


def agree(comm, error: BaseException | None) -> None:
    """Combine every rank's verdict (``error`` or None) and raise the same
    error everywhere if any rank failed: ``agreement`` for a step whose
    error was caught by the caller."""
    Agreement(comm).finish(error)


def on_rank0(comm, work, failure: str) -> None:
    """``work()`` on rank 0 alone -- metadata, a look at or a rename in the
    file system the ranks share -- its outcome every rank's (one message):
    a ValueError as it is, any other failure a ValueError that starts with
    ``failure``.

    >>> from mpi4py import MPI
    >>> on_rank0(MPI.COMM_SELF, lambda: None, "nothing to fail")
    """
    error = None
    if comm.rank == 0:
        try:
            work()
        except ValueError as e:
            error = e
        except Exception as e:
            error = ValueError(f"{failure}: {type(e).__name__}: {e}")
    agree(comm, error)


# what an engine's step names its errors by where it does not know the public
# call (the transport's buffers, a packing with the vote): the contract puts
# the call's name in its place where the error leaves it ("sort: ...")
UNNAMED = "exchange"


@contextlib.contextmanager
def settled(comm, what: str):
    """The local work of a call's work phase -- reading and decoding a
    rank's rows of a file, writing its piece -- ended in one outcome on
    every rank: where the block raises on any rank, every rank raises the
    same error after it (one message, ``agree``), naming the lowest failing
    rank and its error; nobody is left waiting in the call's next
    collective.  An error of xdap's own (a ValueError or TypeError whose
    message starts with the call's name) is told as it is; any other as
    ``"<what>: <its class>: <its message>"`` -- a ValueError, or the
    TypeError it was: zarr's decode error, h5py's OSError, NumPy's
    complaint about a truncated file, a MemoryError.  Use it where a
    failure of the outside world can strike one rank (files, allocations,
    user code), before the next message the call sends.

    >>> from mpi4py import MPI
    >>> try:
    ...     with settled(MPI.COMM_SELF, "from_npy: cannot read 'a.npy'"):
    ...         raise OSError("truncated")
    ... except ValueError as e:
    ...     print(e)
    from_npy: cannot read 'a.npy': OSError: truncated (rank 0)
    """
    with Held(what) as held:
        yield
    agree(comm, held.error)


def _named(what: str, e: Exception) -> Exception:
    """``e`` as the error every rank raises: xdap's own clear error (a
    ValueError or TypeError naming its call) as it is, the outside world's
    as ``"<what>: <its class>: <its message>"``."""
    if isinstance(e, (ValueError, TypeError)) and str(e).startswith(what.split(":")[0] + ":"):
        return e
    kind = type(e) if type(e) in (ValueError, TypeError) else ValueError
    named = kind(f"{what}: {type(e).__name__}: {e}")
    named.__cause__ = e
    return named


class Held:
    """A local step's failure, held until the next message the call sends
    anyway: ``with Held(what) as held:`` catches it (named as ``settled``
    names it), the message carries ``held.failed`` (a poisoned count:
    ``xdap.linalg.gather.allgather_rows``), and where any rank's was
    poisoned every rank calls ``held.settle(comm)``:
    one more message, on the failure path only, and the same error
    everywhere, naming the lowest failing rank.  What ``settled`` does in
    one message of its own, at no message more where nothing fails.

    >>> from mpi4py import MPI
    >>> with Held("tsqr: this rank's rows") as held:
    ...     raise MemoryError("out of memory")
    >>> held.failed
    True
    >>> try:
    ...     held.settle(MPI.COMM_SELF)
    ... except ValueError as e:
    ...     print(e)
    tsqr: this rank's rows: MemoryError: out of memory (rank 0)
    """

    __slots__ = ("what", "error")

    def __init__(self, what: str):
        self.what, self.error = what, None

    def __enter__(self) -> "Held":
        return self

    def __exit__(self, kind, error, tb) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        self.error = _named(self.what, error)
        return True

    @property
    def failed(self) -> bool:
        return self.error is not None

    def settle(self, comm) -> None:
        """Some rank's message was poisoned: every rank raises the same
        error (this rank's, or the failing rank's)."""
        agree(comm, self.error)
        raise AssertionError("a poisoned message with no failure behind it")  # pragma: no cover


# --------------------------------------------------------------------------
# local operations
# --------------------------------------------------------------------------

def debug() -> bool:
    """Whether xdap runs in debug mode: ``XDAP_DEBUG=1``, or
    ``XDAP_DEBUG_HANGS`` set where ``XDAP_DEBUG`` is not (``XDAP_DEBUG=0``
    keeps the default mode under the watchdog).  Then local operations
    vote like collectives (``local_check``), so ranks that diverge -- a
    different kernel, or another operand, on one rank -- are caught where
    they diverge, as PETSc's debug builds check collective calls."""
    return _DEBUG


# XDAP_DEBUG, where it is set, decides; else the watchdog (XDAP_DEBUG_HANGS) implies it
_DEBUG = os.environ["XDAP_DEBUG"] not in ("", "0") if "XDAP_DEBUG" in os.environ else \
    bool(_watch.LIMIT)


def set_debug(on: bool) -> bool:
    """Turn debug mode on or off in this process from now on (the same on
    every rank: it decides which calls vote); returns what it was.  For
    tests that try local calls both ways."""
    global _DEBUG
    before, _DEBUG = _DEBUG, bool(on)
    return before


class _Local:
    """The check of a local operation outside debug mode: this rank's
    checks only -- their errors propagate as they are -- and no MPI call."""

    def same(self, name, value) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        return False


_LOCAL = _Local()


def local_check(comm, what: str = ""):
    """``with local_check(comm, "what") as ag:`` -- the check of an
    operation whose work is local (elementwise kernels, conversions,
    views).  Its verdict depends only on state every rank already agreed
    on (distributions and types were agreed when the arrays were made), so
    every rank reaches the same verdict alone: no MPI call.  In debug mode
    (``debug()``) it is a full ``agreement``: a rank that diverges raises
    the same error on every rank instead of computing something else.

    >>> from mpi4py import MPI
    >>> with local_check(MPI.COMM_SELF, "doc") as ag:
    ...     ag.same("axis", 0)
    """
    return agreement(comm, what) if _DEBUG else _LOCAL
