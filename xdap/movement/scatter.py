"""Gather and scatter by global index: the unstructured-mesh ghost update.

``Scatter(a, needed)`` is a reusable plan (after PETSc's VecScatter and
Tpetra's Import/Export) between a DistArray distributed along dimension 0
and the global indices this rank ``needed`` (any order, repeats allowed):

* ``forward(a)`` -- gather: the values of ``a[needed]`` on this rank, in
  the order of ``needed`` (a ghost update);
* ``reverse(values, into=a, mode=...)`` -- scatter: push one contribution
  per entry of ``needed`` back to the owners and combine it there.

Who answers for an index: its canonical OWNER, ``Map.owners`` (the lowest
grid rank holding it when an unstructured map is not one-to-one; never a
communication-padding copy).  So ``forward`` always returns the owner's
value, even if this rank holds a (possibly stale) copy of it.

``reverse`` combines at the owner only, in the owner's buffer:

* ``"add"``: owner value + the sum of all contributions,
* ``"min"`` / ``"max"``: the minimum / maximum of the owner value and all
  contributions,
* ``"replace"``: the contribution from the highest rank (and, within that
  rank, the last occurrence in ``needed``) replaces the owner value;
  indices nobody contributed to keep their value.

The values of non-owner copies are not inputs.  With ``refresh=True``
(default) the copies -- shared indices of a ``one_to_one=False`` map and
block communication padding along dimension 0 -- are then overwritten with
the owners' new values, so every copy agrees; ``refresh=False`` leaves them
stale (one collective less).

Planning is collective (one alltoall of counts, one alltoallv of
positions); ``forward`` and ``reverse`` each cost one alltoallv.  Fixed,
non-optional types; dimensions after the first must not be distributed
(they move along, e.g. a node field of shape ``(nodes, 3)``).

>>> import numpy as np
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> d, p = from_global(np.arange(10.0) * 10, dist=("c",), comm=MPI.COMM_SELF)
>>> s = Scatter(d, [7, 2, 7])
>>> s.forward(p)
array([70., 20., 70.])
>>> s.reverse(np.array([1.0, 2.0, 3.0]), into=p, mode="add")
>>> p.values[[2, 7]]
array([22., 74.])
"""
from __future__ import annotations


import numpy as np

from .. import comm as _comm
from ..agreement import Held, agree, agreement
from ..arraylike import is_distributed, unwrap
from ..contract import Contract
from ..directory import owners_of
from ..distribution import Distribution
from ..parts import Parts
from ..transport import STEP, Route, RowExchange, move

__all__ = ["Scatter", "BoundForward", "MODES"]

MODES = ("add", "replace", "min", "max")
_UFUNC = {"add": np.add, "min": np.minimum, "max": np.maximum}


def _check_type(info, what):
    if info.ragged or info.optional:
        raise TypeError(f"{what}: fixed, non-optional types only, got '{info.type_string()}'")


def _last_occurrence(keys: np.ndarray, nkeys: int) -> np.ndarray:
    """For keys in [0, nkeys) (each present), the position of the last
    occurrence of each key."""
    # fancy assignment with repeated keys does not promise which write
    # wins; a maximum over positions does
    last = np.full(nkeys, -1, np.int64)
    np.maximum.at(last, keys, np.arange(len(keys), dtype=np.int64))
    return last


class Scatter:
    """A reusable gather/scatter plan (collective to build; see the module
    docstring).

    a_or_distribution  a DistArray or an ``xdap.Distribution`` (only its
                       dimension 0 may be distributed)
    needed             the global indices (along dimension 0) this rank
                       needs, 1-d integers, any order, repeats allowed

    owners             optional: ``(grid rank, local position)`` of the owner
                       of each distinct needed index in ascending order, as
                       ``xdap.directory.owners_of`` gives them -- a caller
                       that asked already saves the directory a lookup

    ``owner_ranks``: the rank answering for each distinct needed index, in
    ascending index order (a ghost is one another rank owns).
    """

    # collective: the array is agreed; needed (and owners) are each rank's own
    __xdap_contract__ = Contract("collective", "Scatter", ("a_or_distribution", "needed", "owners"),
                                 own=("needed", "owners"))

    def __init__(self, a_or_distribution, needed, owners: tuple | None = None):
        d, info = a_or_distribution, None
        if is_distributed(a_or_distribution):
            d, p = unwrap(a_or_distribution)
            info = p.info
        # a wrong kind on one rank is agreed on COMM_WORLD, where the others are
        comm = _comm.comm_of(d)
        with agreement(comm, "Scatter") as ag:
            if not isinstance(d, Distribution):
                raise TypeError(f"Scatter needs a DistArray or a Distribution, got "
                                f"{type(a_or_distribution).__name__}")
            d.require_dims("Scatter")
            ag.same("the array", (d.fingerprint(), d.global_shape,
                                  None if info is None else info.global_type(d.global_shape)))
            if any(g != 1 for g in d.grid[1:]):
                raise ValueError(f"Scatter: only dimension 0 may be distributed, the grid is "
                                 f"{d.grid}")
            if info is not None:
                _check_type(info, "Scatter")
            needed = np.asarray(needed)
            if needed.ndim != 1:
                raise ValueError(f"Scatter: needed must be 1-d, got shape {needed.shape}")
            if needed.size and needed.dtype.kind not in "iu":
                raise TypeError(f"Scatter: needed must be integers, got dtype {needed.dtype}")
            needed = needed.astype(np.int64)
            n = d.global_shape[0]
            if needed.size and (needed.min() < 0 or needed.max() >= n):
                bad = int(needed[(needed < 0) | (needed >= n)][0])
                raise ValueError(f"Scatter: needed index {bad} out of range [0, {n})")
        self.distribution, self.comm = d, comm
        self.n_needed = len(needed)
        # this rank's steps are held: a failure (its memory) rides the next
        # message, poisoned, and is the same error on every rank
        with Held(STEP) as held:
            # one request per distinct index; `inverse` restores needed's order
            uniq, self._inverse = np.unique(needed, return_inverse=True)
        self._n_uniq = 0 if held.failed else len(uniq)
        # the owners: computed for a complete map, asked of the directory of a
        # distributed one (one all-to-all of queries, one of answers)
        if owners is None and not d.maps[0].complete:
            agree(comm, held.error)                # the directory's messages come next
        ask, local = Route.nothing(comm), np.zeros(0, np.int64)
        with held:
            if not held.failed:
                grank, local = owners_of(d, 0, uniq) if owners is None else owners
                owner = d.ranks_along(0)[grank]
                self.owner_ranks = owner   # the rank answering for each distinct needed index
                # the requests travel to the owners: which of their positions we want
                ask = Route.to_ranks(comm, owner)
        ask = ask.with_recv_counts(held)
        self._send_local = move(ask, Parts.of_array(np.asarray(local, np.int64)))[0].values
        self._row_shape = tuple(d.local_shape[1:])
        self._copies = None            # the refresh plan, built on first use
        # needed distinct, ascending and owners in rank order (a ghost layer
        # of block-numbered nodes): values arrive in needed's order, no
        # permutation afterwards; else one take puts the arrivals in order
        ramp = np.arange(self._n_uniq)
        in_order = (self.n_needed == self._n_uniq and np.array_equal(ask.rows, ramp)
                    and np.array_equal(self._inverse, ramp))
        arrival = None
        if not in_order:
            arrival = np.empty(self._n_uniq, np.int64)
            arrival[ask.rows] = ramp
            arrival = arrival[self._inverse]
        # the answers come back the same way (forward), the contributions go
        # out along the requests (reverse)
        self._answer = RowExchange(Route(comm, self._send_local, ask.recv_counts,
                                         ask.send_counts, order=arrival))
        self._contribute = Route(comm, ask.rows, ask.send_counts, ask.recv_counts)

    def _check_array(self, a, what: str, ag=None) -> np.ndarray:
        """The local values of ``a`` (a writable view): a DistArray whose rows
        are distributed as the plan's (any trailing dimensions: a node field
        and the nodes' coordinates share a plan), or this rank's Parts.  Call it inside the
        call's agreement ``ag``, which also compares the element type across
        ranks (one rank passing another array is an error on all)."""
        rows = self.distribution.local_shape[0]
        if isinstance(a, Parts):
            p = a
            if not p.shape or p.shape[0] != rows:
                raise ValueError(f"Scatter.{what}: the Parts have shape {p.shape}, the plan's "
                                 f"distribution gives this rank {rows} rows")
        elif is_distributed(a):
            d, p = unwrap(a)
            if d is not self.distribution and not (d == self.distribution) and not (
                    d.ndim >= 1 and d.maps[0] == self.distribution.maps[0] and
                    d.grid[0] == self.distribution.grid[0] and
                    all(g == 1 for g in d.grid[1:])):
                raise ValueError(f"Scatter.{what}: the array's rows are distributed otherwise "
                                 f"than the plan's (its dimension 0 must have the plan's map; "
                                 f"the dimensions after it move along)")
        else:
            raise TypeError(f"Scatter.{what}: expected a DistArray (or Parts), got "
                            f"{type(a).__name__}")
        _check_type(p.info, f"Scatter.{what}")
        if not p.values.flags.writeable and what != "forward":
            raise ValueError(f"Scatter.{what}: the array is read-only")
        if ag is not None:
            ag.same("the array's element type", p.info.leaf)
        return p.values

    # -- gather -------------------------------------------------------------
    def forward(self, a, out: np.ndarray | None = None) -> np.ndarray:
        """The owners' values of ``a`` at ``needed``, in that order: an array
        of shape ``(len(needed),) + a.shape[1:]`` (collective).  A new array,
        or ``out`` (C-contiguous, writable, that shape and ``a``'s dtype)
        filled in place: a repeated ghost update into a kept buffer then
        allocates nothing -- the send buffer is kept by the plan and packed
        while the ranks agree."""
        with agreement(self.comm, "Scatter.forward") as ag:
            values = self._check_array(a, "forward", ag)
            shape = (self.n_needed,) + values.shape[1:]
            if out is not None:
                if not isinstance(out, np.ndarray) or out.shape != shape or \
                        out.dtype != values.dtype:
                    raise ValueError(f"Scatter.forward: out must be a {values.dtype} array of "
                                     f"shape {shape}, got "
                                     + (f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray)
                                        else type(out).__name__))
                if not (out.flags.c_contiguous and out.flags.writeable):
                    raise ValueError("Scatter.forward: out must be C-contiguous and writable")
            made = [out]

            def prepare():                  # with the vote: its failure rides it
                self._answer.pack(values)
                if out is None:
                    made[0] = np.empty(shape, values.dtype)
            ag.meanwhile(prepare)
        return self._answer.send(made[0])

    def bind(self, a, out: np.ndarray | None = None) -> "BoundForward":
        """``forward`` of ``a`` into ``out`` bound once (collective: the
        arguments are agreed now, as ``forward`` agrees them every call):
        the returned object's call -- or ``start()`` then ``wait()``, with
        local work between -- moves the owners' current values into ``out``
        with no agreement, one exchange and nothing allocated.

        >>> import numpy as np
        >>> from mpi4py import MPI
        >>> from xdap.create import from_global
        >>> d, p = from_global(np.arange(5.0) * 10, comm=MPI.COMM_SELF)
        >>> ghost = Scatter(d, [4, 1]).bind(p)
        >>> ghost().tolist()
        [40.0, 10.0]
        """
        return BoundForward(self, a, out)

    # -- scatter ------------------------------------------------------------
    def reverse(self, values, into, mode: str = "add", refresh: bool = True) -> None:
        """Push ``values`` (one per entry of ``needed``, shape
        ``(len(needed),) + into.shape[1:]``) to the owners and combine them
        into ``into`` in place (collective; see the module docstring for the
        modes and ``refresh``)."""
        with agreement(self.comm, "Scatter.reverse") as ag:
            buf = self._check_array(into, "reverse", ag)
            ag.same("mode", mode)
            ag.same("refresh", bool(refresh))
            if mode not in MODES:
                raise ValueError(f"Scatter.reverse: mode must be one of {MODES}, got {mode!r}")
            if mode != "replace" and buf.dtype.names is not None or (
                    mode != "replace" and buf.dtype.kind in "SU"):
                raise TypeError(f"Scatter.reverse: mode {mode!r} combines numbers; the array's "
                                f"elements are {buf.dtype} (use mode='replace', or a numeric "
                                "field, a['x'])")
            values = np.asarray(values)
            want = (self.n_needed,) + buf.shape[1:]
            if values.shape != want:
                raise ValueError(f"Scatter.reverse: values must have shape {want} (one per "
                                 f"needed index), got {values.shape}")
            if values.size and buf.dtype.names is None and \
                    not np.can_cast(values.dtype, buf.dtype, "same_kind"):
                raise TypeError(f"Scatter.reverse: {values.dtype} contributions into a "
                                f"{buf.dtype} array would lose data (no silent narrowing); "
                                f"cast them first if that is meant")
        values = values.astype(buf.dtype, copy=False)
        # combine this rank's repeats first: one contribution per distinct index
        if mode == "replace":
            acc = values[_last_occurrence(self._inverse, self._n_uniq)]
        elif mode == "add":
            acc = np.zeros((self._n_uniq,) + buf.shape[1:], buf.dtype)
            np.add.at(acc, self._inverse, values)
        else:
            # start from any contribution of each index, then fold in all
            acc = values[_last_occurrence(self._inverse, self._n_uniq)]
            _UFUNC[mode].at(acc, self._inverse, values)
        got = move(self._contribute, Parts.of_array(acc))[0].values
        # arrivals are in requester-rank order: for "replace" the last one wins
        if mode == "replace":
            if len(self._send_local):
                uniq, inv = np.unique(self._send_local, return_inverse=True)
                buf[uniq] = got[_last_occurrence(inv, len(uniq))]
        else:
            _UFUNC[mode].at(buf, self._send_local, got)
        if refresh:
            self.refresh(into)

    def refresh(self, a) -> None:
        """Overwrite every non-owner copy in ``a`` (shared unstructured
        indices, block communication padding along dimension 0) with the
        owner's value (collective; no-op when the map has no copies)."""
        m = self.distribution.maps[0]
        if not m.has_copies:
            return
        if self._copies is None:
            d = self.distribution
            p = d.coords[0]
            copy = np.ones(m.local_size(p), bool)
            copy[m.canonical_positions(p)] = False
            mine = np.flatnonzero(copy)
            self._copies = (mine, Scatter(d, m.global_indices(p)[mine]))
        mine, plan = self._copies
        got = plan.forward(a)             # agreed there: the plan's distribution, one type
        with agreement(self.comm, "Scatter.refresh") as ag:
            values = self._check_array(a, "refresh", ag)
        values[mine] = got


class BoundForward:
    """A ``Scatter.forward`` bound to one array and one output (see
    ``Scatter.bind``): ``bound()`` moves the values at once (a blocking
    exchange); ``start()`` then ``wait()`` overlaps it with local work --
    between them the array may be read but not written, and ``out`` not
    touched."""

    def __init__(self, scatter: Scatter, a, out):
        with agreement(scatter.comm, "Scatter.bind") as ag:
            values = scatter._check_array(a, "bind", ag)
            shape = (scatter.n_needed,) + values.shape[1:]
            if out is not None and (not isinstance(out, np.ndarray) or out.shape != shape or
                                    out.dtype != values.dtype or not out.flags.c_contiguous or
                                    not out.flags.writeable):
                raise ValueError(f"Scatter.bind: out must be a writable C-contiguous "
                                 f"{values.dtype} array of shape {shape}")
        self.values = values
        self.out = np.empty(shape, values.dtype) if out is None else out
        self._answer = scatter._answer
        self._answer.prepare(values)       # anything collective happens now, not per call

    def start(self) -> None:
        """Pack the values the others need and start the exchange."""
        self._answer.pack(self.values)
        self._answer.start(self.out)

    def wait(self) -> np.ndarray:
        """Complete the exchange; returns ``out``, the owners' values."""
        return self._answer.finish()

    def __call__(self) -> np.ndarray:
        # blocking: MPI's nonblocking all-to-all runs a schedule, slower
        # when there is no local work to overlap
        self._answer.pack(self.values)
        return self._answer.send(self.out)
