"""Calls that move nothing write a ledger; the next vote carries it; calls
that communicate send their vote in their own first message.

Outside debug mode (the suite runs in it: these tests turn it off) a view
makes no MPI call and a reduction makes exactly one; a view that diverged
between ranks is one error on every rank at the next collective, naming the
view and what each rank passed -- never a hang, never a wrong result.  The
communicator is wrapped so that every MPI call through it is counted.
"""
import numpy as np
import pytest
from mpi4py import MPI

import xdap
import xdap.agreement
import xdap.array_api as xp
import xdap.ledger
from helpers import same_error
from xdap.contract import collective, contract_of


class Counting(MPI.Intracomm):
    """COMM_WORLD, counting every communication method called on it."""
    calls: list = []

    def __getattribute__(self, name):
        if name[:1].isupper() and name not in ("Get_rank", "Get_size", "Get_attr", "Set_attr",
                                                "Compare", "Get_group", "Is_inter",
                                                "Is_intra"):
            Counting.calls.append(name)
        return super().__getattribute__(name)


@pytest.fixture
def quiet(monkeypatch):
    """Debug mode off, a counting COMM_WORLD, an empty ledger."""
    monkeypatch.setattr(xdap.agreement, "_DEBUG", False)
    comm = Counting(MPI.COMM_WORLD)
    xdap.ledger.settle(comm)
    Counting.calls.clear()
    return comm


def arr(comm, n=40):
    return xdap.from_global(np.arange(float(n)), comm=comm)


def odd(comm):
    return comm.rank == comm.size - 1


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_views_make_no_mpi_call_and_the_next_vote_one(quiet):
    comm = quiet
    a, m = arr(comm), xdap.from_global(np.arange(40.0).reshape(20, 2), comm=comm)
    Counting.calls.clear()
    for _ in range(3):              # the first of each takes the declared path, then the prepared one
        v = a[2:30]
        t = m.T
        r = a.reshape(20, 2) if comm.size in (1, 2) else a
        p = xdap.permute_dims(m, (1, 0))
    assert Counting.calls == []
    np.testing.assert_array_equal(v.to_numpy(), np.arange(2.0, 30))
    np.testing.assert_array_equal(t.to_numpy(), np.arange(40.0).reshape(20, 2).T)
    np.testing.assert_array_equal(p.to_numpy(), np.arange(40.0).reshape(20, 2).T)
    assert r.shape in ((20, 2), (40,))
    Counting.calls.clear()
    assert a.sum() == 780.0          # carries the ledger: still one message
    assert Counting.calls == ["Allgather"] * (comm.size > 1)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_reductions_send_one_message(quiet):
    comm = quiet
    rng = np.random.default_rng(3)
    g, h = rng.standard_normal(37), rng.standard_normal(37)
    a, b = xdap.from_global(g, comm=comm), xdap.from_global(h, comm=comm)
    calls = {
        "a.sum()": (lambda: a.sum(), g.sum()),
        "a.max()": (lambda: a.max(), g.max()),
        "a.mean()": (lambda: a.mean(), g.mean()),
        "xp.sum": (lambda: float(xp.sum(a)), g.sum()),
        "xp.vecdot": (lambda: float(xp.vecdot(a, b)), g @ h),
        "xdap.vecdot": (lambda: xdap.vecdot(a, b), g @ h),
        "vector_norm": (lambda: float(xp.linalg.vector_norm(a)), np.linalg.norm(g)),
        "vector_norm inf": (lambda: float(xp.linalg.vector_norm(a, ord=np.inf)),
                            np.abs(g).max()),
    }
    for name, (call, expected) in calls.items():
        for _ in range(3):                   # declared, then prepared: one message each
            Counting.calls.clear()
            got = call()
            assert Counting.calls == ["Allgather"] * (comm.size > 1), (name, Counting.calls)
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=name)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_a_roll_sends_its_boundary_with_its_vote(quiet):
    comm = quiet
    g = np.arange(30.0)
    a = xdap.from_global(g, comm=comm)
    for k in (1, -1, 1, 7):
        Counting.calls.clear()
        got = xp.roll(a, k)
        assert Counting.calls == ["Allgather"] * (comm.size > 1), Counting.calls
        np.testing.assert_array_equal(got.to_numpy(), np.roll(g, k))
    # a boundary too large for the vote's record: the vote, then neighbour messages
    wide = xdap.from_global(np.arange(4000.0).reshape(40, 100), comm=comm)
    Counting.calls.clear()
    got = xp.roll(wide, 1, axis=0)
    assert Counting.calls[:1] == ["Allgather"] * (comm.size > 1)
    np.testing.assert_array_equal(got.to_numpy(), np.roll(np.arange(4000.0).reshape(40, 100),
                                                          1, axis=0))


@pytest.mark.mpi(ranks=(2, 3))
def test_a_shift_plan_kept_for_one_communicator_moves_on_the_callers():
    """Shift plans are kept by distribution, not communicator: one kept
    while another communicator's array of the same layout is rolled -- on
    one rank only, as a store's eviction may leave it -- must move on the
    caller's communicator (else the ranks wait on different ones)."""
    from helpers import watchdog
    from xdap import plans
    g = np.arange(4000.0).reshape(40, 100)      # its boundary too large to ride
    first, second = MPI.COMM_WORLD.Dup(), MPI.COMM_WORLD.Dup()
    try:
        with watchdog(60):
            xp.roll(xdap.from_global(g, comm=first), 1, axis=0)
            if second.rank == 0:
                plans.pure.clear()
            got = xp.roll(xdap.from_global(g, comm=second), 1, axis=0)
        np.testing.assert_array_equal(got.to_numpy(), np.roll(g, 1, axis=0))
    finally:
        first.Free()
        second.Free()


@pytest.mark.mpi(ranks=(2, 3))
def test_a_view_that_diverged_is_one_error_at_the_next_collective(quiet):
    comm = quiet
    a = arr(comm)

    def run():
        a[2:5] if not odd(comm) else a[2:6]           # no MPI call: the ledger takes it
        a.sum()
    name, message = same_error(comm, run, ValueError)
    assert "a[key]" in message and "slice(2, 5, None)" in message and \
        "slice(2, 6, None)" in message, message
    assert a.sum() == 780.0          # the ledger was settled: the next call works


@pytest.mark.mpi(ranks=(2, 3))
def test_a_local_path_against_a_collective_one_is_one_error(quiet):
    """One rank reads an element (a collective: it votes in the view's call),
    the others take a view (the ledger): they meet at the next vote."""
    comm = quiet
    a = arr(comm)

    def run():
        if odd(comm):
            a[3]                       # raises there, agreed with the others' sum
        else:
            a[2:5]
            a.sum()
    same_error(comm, run, ValueError, match="different xdap calls")
    assert a.sum() == 780.0


@pytest.mark.mpi(ranks=(2, 3))
def test_a_check_that_failed_on_one_rank_is_named_at_the_next_vote(quiet):
    comm = quiet
    m = xdap.from_global(np.arange(40.0).reshape(20, 2), comm=comm)
    failed = []

    def run():
        try:
            xdap.permute_dims(m, (0, 5) if odd(comm) else (1, 0))
        except ValueError as e:      # this rank's own: the others did not see it yet
            failed.append(str(e))
        xdap.array_api.sum(m)
    name, message = same_error(comm, run, ValueError)
    assert "permute_dims" in message and "raised" in message, message
    assert bool(failed) == odd(comm)


@pytest.mark.mpi(ranks=(2,))
def test_past_the_kept_entries_the_error_says_so(quiet):
    comm = quiet
    a = arr(comm)

    def run():
        for k in range(xdap.ledger.KEPT + 5):
            a[1:2] if (k < xdap.ledger.KEPT + 2 or not odd(comm)) else a[1:3]
        a.sum()
    same_error(comm, run, ValueError, match="after the first")


@pytest.mark.mpi(ranks=(2, 3))
def test_debug_mode_votes_on_views(quiet, monkeypatch):
    comm = quiet
    a = arr(comm)
    monkeypatch.setattr(xdap.agreement, "_DEBUG", True)
    Counting.calls.clear()
    a[2:5]
    assert Counting.calls == ["Allgather"]
    same_error(comm, lambda: a[2:5] if not odd(comm) else a[2:6], ValueError,
               match="key must be the same")


@pytest.mark.mpi(ranks=(2, 3))
def test_a_work_that_fails_before_its_message_fails_every_rank(quiet):
    """A riding call's work raises on one rank before it sends its partial:
    the vote is cast with the error there, the others raise it too."""
    comm = quiet

    @collective(rides=True)
    def riding_sum(x):
        vote = yield dict(x=x)
        if odd(comm):
            raise ValueError("this rank's data cannot be summed")
        records = vote.ride(comm, np.array([x.parts.values.sum()]))
        return records

    a = arr(comm)
    same_error(comm, lambda: riding_sum(a), ValueError, match="cannot be summed")
    assert a.sum() == 780.0


@pytest.mark.mpi(ranks=(1, 2))
def test_repeated_calls_equal_the_declared_ones(quiet, monkeypatch):
    """The prepared paths give what the declared paths give (debug mode
    takes the declared ones)."""
    comm = quiet
    rng = np.random.default_rng(9)
    g = rng.standard_normal((12, 3))
    a = xdap.from_global(g, comm=comm)
    v = xdap.from_global(g[:, 0].copy(), comm=comm)
    calls = [lambda: a[1:-1, ::2], lambda: a.T, lambda: xdap.reshape(a, (6, 6)),
             lambda: a.sum(), lambda: xp.max(a), lambda: xp.vecdot(v, v),
             lambda: xp.linalg.vector_norm(v), lambda: xp.roll(v, 2), lambda: xdap.shift(v, -1)]

    def value(x):
        return x.to_numpy() if hasattr(type(x), "__xdap_wrap__") else np.asarray(x)
    fast = [[value(c()) for c in calls] for _ in range(2)][1]
    monkeypatch.setattr(xdap.agreement, "_DEBUG", True)
    declared = [value(c()) for c in calls]
    for f, d in zip(fast, declared):
        np.testing.assert_array_equal(f, d)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_creation_makes_no_mpi_call_and_a_divergent_shape_is_named(quiet):
    """``xp.zeros``/``ones``/``full``/``arange``/``linspace``/``eye`` are
    local work (each rank its block): no MPI call, written in the ledger;
    a repeated call reuses the first one's distribution."""
    comm = quiet
    n = 7 * comm.size + 3
    made = [xp.zeros(n), xp.ones((n, 2), dtype=xp.int32), xp.full(n, 2.5), xp.full(n, 4),
            xp.empty(n), xp.arange(n), xp.linspace(0, 1, n), xp.eye(n)]
    again = xp.zeros(n)
    # declared local: the divergence fuzzer checks that such a call never votes
    assert all(contract_of(f).kind == "local" for f in (xp.zeros, xp.ones, xp.empty, xp.full,
                                                        xp.arange, xp.linspace, xp.eye))
    assert again.distribution is made[0].distribution
    want = [np.zeros(n), np.ones((n, 2), np.int32), np.full(n, 2.5), np.full(n, 4),
            np.zeros(n), np.arange(n), np.linspace(0, 1, n), np.eye(n)]
    for got, expected in zip(made, want):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got.to_numpy(), expected)

    def run():
        xp.zeros(n + 1 if odd(comm) else n)
        xp.sum(again)
    if comm.size > 1:
        name, message = same_error(comm, run, ValueError)
        assert "zeros" in message and "shape" in message, message


@pytest.mark.mpi(ranks=(2, 3))
def test_a_local_call_whose_work_fails_on_one_rank_is_one_error(quiet):
    """The work of a local call raising on one rank only (``arange`` of a
    NaN there) leaves the others going: the ledger says it raised, and the
    next collective is one error naming it, on every rank."""
    comm = quiet
    a = arr(comm)
    failed = []

    def run():
        try:
            xp.arange(float("nan") if odd(comm) else 4.0)
        except ValueError as e:
            failed.append(str(e))
        a.sum()
    name, message = same_error(comm, run, ValueError)
    assert "arange" in message, message
    assert bool(failed) == odd(comm)
    assert a.sum() == 780.0


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_where_fast_path_is_numpys_where(quiet, monkeypatch):
    """``xp.where`` of aligned plain operands (the fast path) gives NumPy's
    values and dtype, as the declared path (debug mode) does; an equal
    distribution of another object and a Python number take it too."""
    comm = quiet
    rng = np.random.default_rng(3)
    g, h = rng.standard_normal(23), rng.standard_normal(23)
    a, b = xdap.from_global(g, comm=comm), xdap.from_global(h, comm=comm)
    b32 = xp.astype(b, xp.float32)
    c = a < b
    cases = [((c, a, b), (g < h, g, h)), ((c, a, 0.0), (g < h, g, 0.0)),
             ((c, 1, b32), (g < h, 1, h.astype(np.float32))), ((c, True, False), (g < h, True, False)),
             ((c, b32, 2.5), (g < h, h.astype(np.float32), 2.5))]
    for args, np_args in cases:
        want = np.where(*np_args)
        got = xp.where(*args)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got.to_numpy(), want)
        monkeypatch.setattr(xdap.agreement, "_DEBUG", True)
        declared = xp.where(*args)
        monkeypatch.setattr(xdap.agreement, "_DEBUG", False)
        assert declared.dtype == got.dtype
        np.testing.assert_array_equal(declared.to_numpy(), want)
