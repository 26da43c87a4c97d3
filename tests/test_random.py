"""xdap.random on 1-4 ranks: a draw is the same for a seed on any rank count
and in any distribution (uneven blocks, empty ranks, cyclic, 2-D grids,
padding, 0-d), equal to a model of it built on NumPy's own Philox stream;
and a different argument on one rank is one error on every rank."""
import numpy as np
import pytest
from mpi4py import MPI

import xdap
import xdap.random as xr
from helpers import same_error

RANKS = (1, 2, 3, 4)


def layouts(P, n=11):
    empty = {1: [n], 2: [0, n], 3: [4, 0, n - 4], 4: [n, 0, 0, 0]}[P]
    return [dict(), dict(dist=("c",)), dict(dist=("c", "b")), dict(dist=("b",), sizes=(empty,)),
            dict(dist=("b",), padding=((1, 1),))]


def stream(seed, count):
    """The model: NumPy's Philox for this seed, from its start."""
    return xr.bit_generator(seed).random_raw(count)


def unit(raw):
    return (raw >> np.uint64(11)) * 2.0 ** -53


@pytest.mark.mpi(ranks=RANKS)
def test_random_is_numpys_stream_in_every_layout(comm):
    shape = (11, 3)
    want = np.random.Generator(xr.bit_generator(5)).random(shape)
    assert np.array_equal(want, unit(stream(5, 33)).reshape(shape))   # the model's premise
    for kw in layouts(comm.size):
        a = xr.random(shape, seed=5, comm=comm, **kw)
        assert a.dtype == np.float64
        assert np.array_equal(a.to_numpy(), want), kw
        if kw:
            assert a.distribution == xdap.zeros(shape, comm=comm, **kw).distribution, kw
    assert not np.array_equal(xr.random(shape, seed=6, comm=comm).to_numpy(), want)
    assert xr.random((), seed=5, comm=comm).to_numpy() == want.reshape(-1)[0]   # 0-d
    assert xr.random((0, 4), seed=5, comm=comm).to_numpy().shape == (0, 4)


@pytest.mark.mpi(ranks=RANKS)
def test_normal_and_integers_follow_the_model(comm):
    n = 2001                                   # odd: the last pair of positions too
    u = unit(stream(9, n + 1))
    r, t = np.sqrt(-2.0 * np.log1p(-u[0::2])), 2.0 * np.pi * u[1::2]
    z = np.empty(n + 1)
    z[0::2], z[1::2] = r * np.cos(t), r * np.sin(t)      # a pair of positions, two elements
    z = z[:n]
    for kw in layouts(comm.size, n)[:2] + layouts(comm.size, n)[3:]:
        x = xr.normal((n,), seed=9, loc=1.5, scale=2.0, comm=comm, **kw)
        np.testing.assert_array_equal(x.to_numpy(), 1.5 + 2.0 * z)
        k = xr.integers(-3, 4, (n,), seed=9, comm=comm, **kw)
        want = np.minimum(np.floor(u[:n] * 7).astype(np.int64), 6) - 3
        np.testing.assert_array_equal(k.to_numpy(), want)
    big = xr.normal((400, 250), seed=1, comm=comm, dist=("b", "c")).to_numpy()
    assert abs(big.mean()) < 0.01 and abs(big.std() - 1) < 0.01      # 10^5 draws
    k = xr.integers(10, shape=(10**5,), seed=2, comm=comm).to_numpy()
    counts = np.bincount(k, minlength=10)
    assert k.min() == 0 and k.max() == 9 and counts.min() > 9500 and counts.max() < 10500


@pytest.mark.mpi(ranks=RANKS)
def test_permutation_is_one_and_the_same_on_any_rank_count(comm):
    p = xr.permutation(23, seed=4, comm=comm).to_numpy()
    alone = xr.permutation(23, seed=4, comm=MPI.COMM_SELF).to_numpy()   # one rank's draw
    assert sorted(p.tolist()) == list(range(23))
    assert np.array_equal(p, alone)
    assert np.array_equal(p, np.argsort(stream(4, 23), kind="stable"))
    assert xr.permutation(0, seed=4, comm=comm).to_numpy().shape == (0,)


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


CASES = {
    "random seed": lambda c: xr.random((5,), seed=_one_rank(c, 1, 2), comm=c),
    "random seed negative": lambda c: xr.random((5,), seed=_one_rank(c, 1, -1), comm=c),
    "random shape": lambda c: xr.random(_one_rank(c, (5,), (6,)), seed=1, comm=c),
    "random dist": lambda c: xr.random((5,), seed=1, dist=_one_rank(c, ("b",), ("c",)), comm=c),
    "normal scale": lambda c: xr.normal((5,), seed=1, scale=_one_rank(c, 1.0, -1.0), comm=c),
    "integers high": lambda c: xr.integers(0, _one_rank(c, 5, 6), (4,), seed=1, comm=c),
    "integers empty range": lambda c: xr.integers(3, _one_rank(c, 5, 3), (4,), seed=1, comm=c),
    "permutation n": lambda c: xr.permutation(_one_rank(c, 5, 6), seed=1, comm=c),
}


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_rank_different_is_one_error_everywhere(comm, case):
    same_error(comm, lambda: CASES[case](comm), (ValueError, TypeError), seconds=30)
