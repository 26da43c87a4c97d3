"""The ledger: what the local calls on a communicator agreed to since its
last vote.

A call that moves nothing -- a view such as ``a[2:5]``, ``a.T``, a
``reshape`` that keeps the memory -- makes no MPI call outside debug mode.
It writes one entry here instead: its name and the digest of its
normalized arguments.  The next vote on the communicator
(``xdap.agreement``) carries the ledger's running digest in its own
message, so ranks whose views diverged disagree there -- before any data
moves -- and the error names the first entry that differs and what each
rank passed.  A vote that succeeds settles the ledger (empties it).

Recording costs a multiply-add on a 128-bit integer; the entry's digest
is memoised by the caller (a loop repeats the same view).  Only the first
``KEPT`` entries since a vote keep what they were called with (for the
error message); the running digest covers them all.

>>> from mpi4py import MPI
>>> record(MPI.COMM_SELF, "view", b"0123456789abcdef", "a[2:5]")
>>> pending(MPI.COMM_SELF) is not None, len(entries(MPI.COMM_SELF))
(True, 1)
>>> settle(MPI.COMM_SELF); pending(MPI.COMM_SELF) is None
True
"""
from __future__ import annotations

__all__ = ["record", "entry_number", "pending", "settle", "entries", "of", "folded", "KEPT"]

KEPT = 256                          # entries kept whole since the last vote
_MASK = (1 << 128) - 1
# odd, so that the state's update is a bijection of the previous state: two
# sequences of entries that differ anywhere give different states unless a
# 128-bit collision happens (the digests are blake2b's)
_MULT = 0x9E3779B97F4A7C15F39CC0605CEDC835


class Ledger:
    """One communicator's ledger: the running digest ``state`` of its
    ``count`` entries since the last vote, the first ``KEPT`` of them
    ``kept`` whole."""
    __slots__ = ("state", "count", "kept")

    def __init__(self):
        self.state = 0
        self.count = 0
        self.kept = []

    def digest(self) -> bytes:
        return self.state.to_bytes(16, "little")

    def clear(self) -> None:
        self.state = self.count = 0
        self.kept = []


_LEDGERS: dict = {}                 # communicator handle -> its ledger


def record(comm, what: str, digest: bytes, shown, number: int = 0) -> None:
    """Write a local call's entry: ``what`` it was, the ``digest`` of its
    normalized arguments (16 bytes, equal on ranks that passed the same),
    and ``shown`` -- what an error says this rank passed (kept as it is;
    ``xdap.agreement`` describes it only when the ranks disagree).
    ``number``: ``entry_number(digest)``, where the caller kept it."""
    key = comm.handle
    ledger = _LEDGERS.get(key)
    if ledger is None:
        ledger = _LEDGERS[key] = Ledger()
    ledger.state = (ledger.state * _MULT + (number or entry_number(digest))) & _MASK
    ledger.count += 1
    if len(ledger.kept) < KEPT:
        ledger.kept.append((what, digest, shown))


def entry_number(digest: bytes) -> int:
    """What an entry of ``digest`` adds to the running digest (never 0)."""
    return int.from_bytes(digest, "little") + 1


def folded(digest: bytes, ledger: Ledger) -> bytes:
    """A vote's ``digest`` with ``ledger``'s running digest folded in (what
    the vote compares when local calls came before it): their XOR, so two
    ranks whose call digests are equal agree exactly when their ledgers do.

    >>> folded(bytes(16), Ledger()) == bytes(16)
    True
    """
    return (int.from_bytes(digest, "little") ^ ledger.state).to_bytes(16, "little")


def of(comm) -> Ledger | None:
    """The communicator's ledger (None: no local call was ever recorded)."""
    return _LEDGERS.get(comm.handle)


def pending(comm) -> bytes | None:
    """The running digest of the entries since the last vote (16 bytes), or
    None when there are none."""
    ledger = _LEDGERS.get(comm.handle)
    if ledger is None or not ledger.count:
        return None
    return ledger.digest()


def settle(comm) -> None:
    """Empty the ledger: a vote agreed on everything in it (or raised the
    same error on every rank about it)."""
    ledger = _LEDGERS.get(comm.handle)
    if ledger is not None and ledger.count:
        ledger.clear()


def entries(comm) -> list:
    """``[(what, digest, shown)]`` of the kept entries since the last vote,
    and a last ``(None, None, n)`` when ``n`` more were made than kept: what
    a vote that disagrees compares."""
    ledger = _LEDGERS.get(comm.handle)
    if ledger is None:
        return []
    out = list(ledger.kept)
    if ledger.count > len(ledger.kept):
        out.append((None, None, ledger.count - len(ledger.kept)))
    return out
