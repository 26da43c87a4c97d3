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

import functools
import hashlib
import io
import os
import pickle
import struct
from array import array

from mpi4py import MPI

from . import watch as _watch
from .comm import resolve

__all__ = ["agreement", "Agreement", "Agreed", "agree", "agreed_on", "local_check", "debug",
           "set_debug",
           "USER_ERRORS"]


_WORDS = 4                       # a 16-byte digest as four 32-bit words
_BIG = (1 << 63) - 1
_ZEROS = array("q", bytes(8 * (1 + 2 * _WORDS)))


_COLLECTIVE = "the collective"     # the name under which the entry points are compared

# The errors a bad argument gives, raised alike on every rank with their
# class kept (NumPy's AxisError is a ValueError and an IndexError), and the
# ImportError of an optional dependency that is not installed (xdap.optional:
# it names the pip extra); any other exception inside an agreement is a bug,
# reported as one.
USER_ERRORS = (ValueError, TypeError, IndexError, BufferError, ImportError)
_ERROR_CLASSES = {"AxisError": __import__("numpy").exceptions.AxisError,
                  "LinAlgError": __import__("numpy").linalg.LinAlgError,
                  "IndexError": IndexError, "TypeError": TypeError, "ValueError": ValueError,
                  "BufferError": BufferError, "ImportError": ImportError}


def _verdict(error) -> tuple:
    """(class name, message) of this rank's error, as the others raise it:
    its own class where it is one of ``_ERROR_CLASSES``, else the nearest."""
    for name, cls in _ERROR_CLASSES.items():
        if isinstance(error, cls):
            return name, str(error)
    return "ValueError", str(error)


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


@functools.lru_cache(maxsize=1024)
def _words(digest: bytes) -> bytes:
    """The allreduce buffer of a digest: [no failure, words, -words] as
    int64 bytes (memoised: a loop agrees on the same arguments again)."""
    words = struct.unpack(f"<{_WORDS}I", digest)
    return array("q", (_BIG,) + words + tuple(-w for w in words)).tobytes()


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


@functools.lru_cache(maxsize=1024)
def _str_digest(what: str, share: bool, items: tuple) -> bytes:
    """The digest of an agreement whose ``same`` values are all strings
    (memoised: a repeated call -- a ghost update -- hashes nothing; exact
    ``str`` only, so equal values of different types never share an entry)."""
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
        while the vote is in flight, if this rank's checks passed: it hides
        the packing behind the vote's latency.  Data still moves between
        ranks only after every rank has agreed.  ``work`` must not fail (the
        other ranks have been told this one is fine)."""
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

    def finish(self, error: BaseException | None = None) -> None:
        """The collective step: combine verdicts and ``same`` digests; raise
        the agreed error on every rank (``error``: this rank's own, or None)."""
        comm = self.comm
        digest = payload = None
        if error is None and comm.size > 1:        # one rank has nobody to compare with
            try:
                digest = self._digest()
                if self._share:     # pickled here: a value that does not is this rank's error
                    payload = pickle.dumps(self._value, protocol=5)
            except Exception as e:
                error = e if isinstance(e, TypeError) else \
                    TypeError(f"{self._prefix()}a value to share does not pickle "
                              f"({type(e).__name__}: {e})")
        if comm.size == 1:
            if error is not None:
                self._raise(0, _verdict(error), error)
            self.shared = [self._value] if self._share else None
            if self._meanwhile is not None:
                self._meanwhile()
            return
        if _watch.LIMIT:                     # debug mode: a missing rank is reported
            _watch.checkpoint(comm, self.what)
        # ONE allreduce(MIN) of [failing rank, digest words, -digest words]:
        # min == max of every word <=> every rank hashed the same collective
        # and values.  Always this one first -- also before an allgather of
        # shared values -- so ranks that entered different collectives meet
        # in the same MPI call and learn it.  (array.array, not NumPy: this
        # runs on every call; 2 us less.)
        if error is not None:
            buf = array("q", (comm.rank,) + (_BIG,) * (2 * _WORDS))
        else:
            buf = array("q", _words(digest))
        out = array("q", _ZEROS)
        # the nonblocking call picks MPICH's faster small-message algorithm
        # (measured on 4 ranks: 26 us against 32 for the blocking Allreduce)
        request = comm.Iallreduce(buf, out, op=MPI.MIN)
        if error is None and self._meanwhile is not None:
            self._meanwhile()
        while not request.Test():   # waiting, let a rank sharing this core run (no spin)
            os.sched_yield()
        if out == buf and error is None:     # the common case: all agree, nobody failed
            if self._share:
                self.shared = [pickle.loads(v) for v in comm.allgather(payload)]
            return
        first, *words = out.tolist()
        if first != _BIG:                    # the lowest failing rank tells its error
            verdict = comm.bcast(None if error is None or comm.rank != first else
                                 _verdict(error), root=first)
            self._raise(first, verdict, error)
        if words[:_WORDS] != [-w for w in words[_WORDS:]]:
            self._raise_mismatch(comm.allgather(self._digests()))
        if self._share:
            self.shared = [pickle.loads(v) for v in comm.allgather(payload)]

    def _digest(self) -> bytes:
        """One digest of the collective's name and every ``same`` value."""
        if not self._same:
            return _name_digest(self.what, self._share)
        if all(type(v) is str for v in self._same.values()):     # e.g. a dtype name
            return _str_digest(self.what, self._share, tuple(self._same.items()))
        if all(_memoisable(v) for v in self._same.values()):
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
        calls = [s[_COLLECTIVE] for s in per_rank]
        differ = [r for r, c in enumerate(calls) if c[0] != calls[0][0]]
        if differ:                  # no prefix: it names a different call on each rank
            r = differ[0]
            raise ValueError(f"ranks called different xdap collectives at the same time: rank 0 "
                             f"{calls[0][1]}, rank {r} {calls[r][1]} (every rank must make the "
                             "same collective calls, in the same order)")
        names = list(per_rank[0])
        for name in names + sorted({n for s in per_rank for n in s} - set(names)):
            values = [s.get(name, (None, "nothing")) for s in per_rank]
            differ = [r for r, v in enumerate(values) if v[0] != values[0][0]]
            if differ:
                r = differ[0]
                raise self._errors.get(name, ValueError)(
                    f"{self._prefix()}{name} must be the same on every rank: "
                                 f"rank 0 passed {values[0][1]}, rank {r} {values[r][1]}"
                                 + (f" (ranks {', '.join(map(str, differ))} differ from rank 0)"
                                    if len(differ) > 1 else ""))
        raise ValueError(f"{self._prefix()}the ranks compared different arguments, or in "
                         "another order (a bug in a collective entry point)")


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
        if hasattr(type(value), "__xdap_wrap__"):      # a DistArray: what ranks compare
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


# --------------------------------------------------------------------------
# local operations
# --------------------------------------------------------------------------

def debug() -> bool:
    """Whether xdap runs in debug mode: ``XDAP_DEBUG=1``, or
    ``XDAP_DEBUG_HANGS`` set (as ``make test`` does).  Then local operations
    vote like collectives (``local_check``), so ranks that diverge -- a
    different kernel, or another operand, on one rank -- are caught where
    they diverge, as PETSc's debug builds check collective calls."""
    return _DEBUG


_DEBUG = os.environ.get("XDAP_DEBUG", "0") not in ("", "0") or bool(_watch.LIMIT)


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
