"""Persistent exchanges: bound once (agreed then), started many times with
no agreement -- halo updates, ghost updates by global index and repeated
redistributions, on real ranks, against NumPy on the global array."""
import numpy as np
import pytest

import xdap
from test_local_work import Counting, quiet  # noqa: F401  (the counting fixture)

RANKS = (1, 2, 3, 4)


def _grid(P):
    return tuple(xdap.comm.balanced_grid(P, 2))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("optional", [False, True])
def test_bound_halos_fill_the_ghosts_every_step(quiet, optional):  # noqa: F811
    comm = quiet
    n, m = 11, 9
    g = np.arange(n * m, dtype=np.float64).reshape(n, m)
    data = np.ma.masked_array(g, mask=(g.astype(int) % 7 == 3)) if optional else g
    a = xdap.from_global(data, dist=("b", "b"), grid=_grid(comm.size),
                         padding=((1, 1), (1, 1)), periodic=(True, False), comm=comm)
    h = a.bind_halos()
    Counting.calls.clear()
    rows = np.asarray(a.global_indices(0))
    cols = np.asarray(a.global_indices(1))
    for step in range(3):
        # every rank writes its owned cells; the ghosts are stale until the exchange
        own = a.local_numpy()
        owned = tuple(a.distribution.maps[k].owned_local_slice(a.distribution.coords[k])
                      for k in range(2))
        values = (g + 100 * step)[np.ix_(rows, cols)]
        (own.data if optional else own)[owned] = values[owned]
        h.start()
        h.wait()
        want = g + 100 * step
        # periodic rows: the edge padding of rows wraps around the interior 1 .. n-2
        wrap = np.r_[n - 2, 1:n - 1, 1]
        got = np.asarray(a.local_numpy())
        expect = want[np.ix_(wrap[rows], cols)]
        np.testing.assert_array_equal(got, expect)
        if optional:
            mask = (g.astype(int) % 7 == 3)[np.ix_(wrap[rows], cols)]
            np.testing.assert_array_equal(np.ma.getmaskarray(a.local_numpy()), mask)
    assert Counting.calls == [], Counting.calls      # persistent requests: no agreement
    h.close()


@pytest.mark.mpi(ranks=RANKS)
def test_bound_ghost_update_by_global_index(quiet):  # noqa: F811
    comm = quiet
    P, me = comm.size, comm.rank
    a = xdap.from_global(np.zeros((20, 2)), dist=("c",), comm=comm)
    needed = np.array([(3 * me + 7) % 20, 0, 19, (3 * me + 7) % 20])
    s = xdap.Scatter(a, needed)
    out = np.empty((4, 2))
    ghost = s.bind(a, out)
    Counting.calls.clear()
    for step in range(3):
        a.local_numpy()[:] = (np.asarray(a.global_indices(0)) * 10 + step)[:, None]
        got = ghost()
        assert got is out
        np.testing.assert_array_equal(out[:, 0], needed * 10 + step)
    # one exchange per update, no agreement; blocking, or started and waited for
    assert Counting.calls == ["Alltoallv"] * 3 or (P == 1 and set(Counting.calls) <= {"Alltoallv"})
    Counting.calls.clear()
    ghost.start()
    a.local_numpy()                                   # local work while it travels
    assert ghost.wait() is out
    np.testing.assert_array_equal(out[:, 0], needed * 10 + 2)
    assert Counting.calls == ["Ialltoallv"] or (P == 1 and set(Counting.calls) <= {"Ialltoallv"})
    with pytest.raises(ValueError, match="Scatter.bind: out must be"):
        s.bind(a, np.empty((3, 2)))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("kind", ["fixed", "optional", "ragged"])
def test_bound_redistribution_moves_the_current_values(quiet, kind):  # noqa: F811
    comm = quiet
    if kind == "ragged":
        rows = [[float(i)] * (i % 3 + 1) for i in range(10)]
        a = xdap.from_global(rows, type="var * var * float64", comm=comm)
    else:
        g = np.arange(30.0).reshape(10, 3)
        data = np.ma.masked_array(g, mask=g % 4 == 1) if kind == "optional" else g
        a = xdap.from_global(data, comm=comm)
    r = a.bind_redistribute(dist=("c",))
    first = r.target
    for step in range(1, 3):
        a.parts.values[...] += 1
        b = r()
        if kind == "ragged":
            assert b.to_global().value == [[v + step for v in row] for row in rows]
        else:
            assert b is first                          # the kept target, refilled
            np.testing.assert_array_equal(np.ma.filled(b.to_numpy(), -1),
                                          np.ma.filled(data + step, -1))
        assert b.distribution.maps[0].dist_type == "c"
