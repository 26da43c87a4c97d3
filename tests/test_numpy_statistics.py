"""NumPy's statistics beyond the standard (xdap/api/numpy_statistics.py):
histogram, bincount, cov and corrcoef against NumPy on the global array, on
1-4 ranks, over block (uneven, padded, empty ranks), cyclic and 2-D
layouts, ragged data, reached directly and through np.* (__array_function__);
and a bad or different argument on one rank: the same error on every rank."""
import numpy as np
import pytest

import xdap
from xdap.api.numpy_statistics import METHODS
from helpers import layouts1, layouts2, same_error

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(11)
G = rng.standard_normal((7, 5))
V = rng.standard_normal(7) * 3
I = rng.integers(0, 9, 7)


def same(got, want, what, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype.kind == want.dtype.kind, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(what))


@pytest.mark.mpi(ranks=RANKS)
def test_histogram_matches_numpy(comm):
    cases = [dict(), dict(bins=3), dict(bins=[-3.0, -1.0, 0.0, 0.5, 4.0]),
             dict(bins=4, range=(-1.0, 1.0)), dict(bins=5, density=True),
             dict(bins=[-2.0, 0.0, 2.0], density=True)]
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for case in cases:
            for got, want in zip(xdap.histogram(a, **case), np.histogram(G, **case)):
                same(got, want, (kw, case))
            for got, want in zip(np.histogram(a, **case), np.histogram(G, **case)):
                same(got, want, ("np.histogram", kw, case))
        w = xdap.from_global(G * G, comm=comm, **kw)
        for got, want in zip(xdap.histogram(a, bins=4, weights=w),
                             np.histogram(G, 4, weights=G * G)):
            same(got, want, ("weights", kw))
    for kw in layouts1(comm.size):         # padding and empty ranks: each value counted once
        v = xdap.from_global(V, comm=comm, **kw)
        for got, want in zip(xdap.histogram(v, bins=6), np.histogram(V, bins=6)):
            same(got, want, ("1-D", kw))
        i = xdap.from_global(I, comm=comm, **kw)
        for got, want in zip(xdap.histogram(i, bins=4), np.histogram(I, bins=4)):
            same(got, want, ("integers", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_histogram_edge_cases_match_numpy(comm):
    rows = [[1.0, 2.0], [], [2.0, 2.0, 7.5], [0.5]] * 2
    r = xdap.from_global(rows, type="var * var * float64", comm=comm)
    flat = np.concatenate([np.asarray(row) for row in rows])
    for got, want in zip(xdap.histogram(r, bins=3), np.histogram(flat, bins=3)):
        same(got, want, "ragged")
    one = xdap.from_global(np.full(5, 2.5), comm=comm)          # all equal: NumPy's +-0.5
    for got, want in zip(xdap.histogram(one, bins=2), np.histogram(np.full(5, 2.5), bins=2)):
        same(got, want, "constant")
    empty = xdap.from_global(np.zeros(0), comm=comm)
    for got, want in zip(xdap.histogram(empty, bins=3), np.histogram(np.zeros(0), bins=3)):
        same(got, want, "empty")
    scalar = xdap.from_global(np.array(4.0), comm=comm)          # 0-d: one value, not P
    for got, want in zip(xdap.histogram(scalar, bins=2), np.histogram(np.array(4.0), bins=2)):
        same(got, want, "0-d")
    nan = np.array([1.0, np.nan, 3.0, 0.0, 2.0])
    x = xdap.from_global(nan, comm=comm)
    for got, want in zip(xdap.histogram(x, bins=2, range=(0, 4)),
                         np.histogram(nan, bins=2, range=(0, 4))):
        same(got, want, "NaN outside a given range")
    with pytest.raises(ValueError, match="not finite") as e:     # where NumPy raises too
        np.histogram(nan, bins=2)
    message = same_error(comm, lambda: xdap.histogram(x, bins=2), (ValueError,))[1]
    assert "autodetected range of [nan, nan] is not finite" in message, (message, e.value)


@pytest.mark.mpi(ranks=RANKS)
def test_bincount_matches_numpy(comm):
    w = rng.random(7)
    for kw in layouts1(comm.size):
        i = xdap.from_global(I, comm=comm, **kw)
        same(xdap.bincount(i), np.bincount(I), ("plain", kw))
        same(np.bincount(i, minlength=12), np.bincount(I, minlength=12), ("minlength", kw))
        same(xdap.bincount(i, weights=xdap.from_global(w, comm=comm, **kw)),
             np.bincount(I, weights=w), ("weights", kw))
        b = xdap.from_global(I > 4, comm=comm, **kw)
        same(xdap.bincount(b), np.bincount(I > 4), ("bools", kw))
    same(xdap.bincount(xdap.from_global(np.zeros(0, np.int64), comm=comm), minlength=3),
         np.bincount(np.zeros(0, np.int64), minlength=3), "empty")
    negative = xdap.from_global(np.array([3, 0, -2, 5, 1]), comm=comm)
    message = same_error(comm, lambda: xdap.bincount(negative), (ValueError,))[1]
    assert "no negative values; its smallest is -2" in message


@pytest.mark.mpi(ranks=RANKS)
def test_cov_and_corrcoef_match_numpy(comm):
    H = rng.standard_normal((7, 3))
    f = rng.integers(0, 4, 7)
    aw = rng.random(7)
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        same(xdap.cov(a), np.cov(G), ("rows", kw))
        same(np.cov(a, rowvar=False), np.cov(G, rowvar=False), ("columns", kw))
        same(xdap.cov(a, bias=True), np.cov(G, bias=True), ("bias", kw))
        same(xdap.cov(a, ddof=3), np.cov(G, ddof=3), ("ddof", kw))
        same(np.corrcoef(a), np.corrcoef(G), ("corrcoef", kw))
        same(xdap.corrcoef(a, rowvar=False), np.corrcoef(G, rowvar=False), ("corrcoef T", kw))
        h = xdap.from_global(H, comm=comm, dist=("c",))
        same(xdap.cov(a, h, rowvar=False), np.cov(G, H, rowvar=False), ("y", kw))
        same(xdap.corrcoef(a, h, rowvar=False), np.corrcoef(G, H, rowvar=False), ("y", kw))
        fw = xdap.from_global(f, comm=comm, dist=("c",))
        awd = xdap.from_global(aw, comm=comm)
        same(xdap.cov(a, rowvar=False, fweights=fw, aweights=awd),
             np.cov(G, rowvar=False, fweights=f, aweights=aw), ("weights", kw))
        same(xdap.cov(a, rowvar=False, aweights=awd, ddof=0),
             np.cov(G, rowvar=False, aweights=aw, ddof=0), ("aweights", kw))
    for kw in layouts1(comm.size):
        v = xdap.from_global(V, comm=comm, **kw)
        same(xdap.cov(v), np.cov(V), ("1-D", kw))
        z = V + 1j * V[::-1]
        same(xdap.cov(xdap.from_global(z, comm=comm, **kw)), np.cov(z), ("complex", kw))
        same(xdap.corrcoef(v, xdap.from_global(V[::-1], comm=comm)),
             np.corrcoef(V, V[::-1]), ("corrcoef of two", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_array_function_leaves_other_numpy_functions_as_they_were(comm):
    a = xdap.from_global(G, comm=comm)
    assert np.isclose(np.sum(a), G.sum()) and np.isclose(np.mean(a), G.mean())
    with pytest.raises(TypeError, match="to_numpy"):
        np.concatenate([a, a])


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


# each: (comm) -> the call with the last rank's argument off
CASES = {
    "histogram bins": lambda c: xdap.histogram(xdap.from_global(G, comm=c),
                                               bins=_one_rank(c, 10, 11)),
    "histogram bins edges": lambda c: xdap.histogram(
        xdap.from_global(G, comm=c), bins=_one_rank(c, [0.0, 1.0], [0.0, 2.0])),
    "histogram bins 'auto'": lambda c: xdap.histogram(xdap.from_global(G, comm=c),
                                                      bins=_one_rank(c, 10, "auto")),
    "histogram range": lambda c: xdap.histogram(xdap.from_global(G, comm=c),
                                                range=_one_rank(c, (0, 1), (0, 2))),
    "histogram range reversed": lambda c: xdap.histogram(xdap.from_global(G, comm=c),
                                                         range=_one_rank(c, (0, 1), (1, 0))),
    "histogram density": lambda c: xdap.histogram(xdap.from_global(G, comm=c),
                                                  density=_one_rank(c, True, False)),
    "histogram weights layout": lambda c: xdap.histogram(
        xdap.from_global(G, comm=c),
        weights=xdap.from_global(G, comm=c, dist=_one_rank(c, ("b",), ("c",)))),
    "bincount minlength": lambda c: xdap.bincount(xdap.from_global(I, comm=c),
                                                  minlength=_one_rank(c, 3, -1)),
    "bincount float": lambda c: xdap.bincount(
        xdap.from_global(_one_rank(c, I, I * 1.0), comm=c)),
    "cov rowvar": lambda c: xdap.cov(xdap.from_global(G, comm=c),
                                     rowvar=_one_rank(c, True, False)),
    "cov ddof": lambda c: xdap.cov(xdap.from_global(G, comm=c), ddof=_one_rank(c, 1, 2.0)),
    "cov fweights": lambda c: xdap.cov(
        xdap.from_global(G, comm=c), rowvar=False,
        fweights=xdap.from_global(_one_rank(c, I, I * 1.0), comm=c)),
    "corrcoef y": lambda c: xdap.corrcoef(
        xdap.from_global(G, comm=c),
        xdap.from_global(_one_rank(c, G, G[:, :4]), comm=c)),
}



@pytest.mark.mpi(ranks=RANKS)
def test_quantiles_match_numpy(comm):
    """Over all values (a distributed selection: nothing moves), on every
    layout, each method, NumPy's values and dtypes; along an axis too."""
    qs = [0.0, 0.1, 0.5, 0.77, 1.0]
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        for method in METHODS:                      # all thirteen of NumPy's
            same(xdap.quantile(a, qs, method=method), np.quantile(G, qs, method=method),
                 (kw, method))
            same(np.percentile(a, 37.5, method=method), np.percentile(G, 37.5, method=method),
                 (kw, method, "percentile"))
        same(np.median(a), np.median(G), ("median", kw))
        same(xdap.quantile(a, [0.2, 0.9], keepdims=True),
             np.quantile(G, [0.2, 0.9], keepdims=True), ("keepdims", kw))
        for axis in (0, 1, -1):
            same(xdap.quantile(a, [0.3, 0.6], axis=axis).to_numpy(),
                 np.quantile(G, [0.3, 0.6], axis=axis), ("axis", kw, axis))
            same(np.median(a, axis=axis, keepdims=True).to_numpy(),
                 np.median(G, axis=axis, keepdims=True), ("median axis", kw, axis))
    for kw in layouts1(comm.size):
        i = xdap.from_global(I, comm=comm, **kw)
        for method in ("linear", "lower", "nearest", "inverted_cdf", "hazen",
                       "closest_observation", "averaged_inverted_cdf"):
            same(xdap.quantile(i, qs, method=method), np.quantile(I, qs, method=method),
                 ("integers", kw, method))
        same(xdap.median(i), np.median(I), ("median of integers", kw))
        same(xdap.median(xdap.from_global(V[:6], comm=comm, dist=kw["dist"])),
             np.median(V[:6]), ("median of an even count", kw))


@pytest.mark.mpi(ranks=RANKS)
def test_quantiles_of_big_skewed_and_repeated_data(comm):
    """Past the gathering threshold: several histogram rounds, heavy ties,
    huge integers (beyond float64's 2**53), NaN, ragged data, one value."""
    from xdap.movement.select import GATHER
    gen = np.random.default_rng(4)
    big = np.concatenate([gen.lognormal(0, 3, 3 * GATHER), np.full(2 * GATHER, 7.0),
                          gen.standard_normal(GATHER)])
    gen.shuffle(big)
    b = xdap.from_global(big, comm=comm, dist=("c",))
    qs = [0.0, 0.01, 0.3, 0.5, 0.55, 0.999, 1.0]
    same(xdap.quantile(b, qs), np.quantile(big, qs), "skewed, tied")
    huge = 2 ** 60 + gen.integers(0, 50, 3 * GATHER)
    h = xdap.from_global(huge, comm=comm)
    same(xdap.quantile(h, qs, method="lower"), np.quantile(huge, qs, method="lower"), "2**60")
    nan = xdap.from_global(np.array([1.0, np.nan, 2.0]), comm=comm)
    same(xdap.percentile(nan, [10, 90]), np.percentile([1.0, np.nan, 2.0], [10, 90]), "NaN")
    rows = [[3.0, 1.0], [], [2.0], [9.0, 4.0, 4.0]] * 3
    r = xdap.from_global(rows, type="var * var * float64", comm=comm)
    flat = np.concatenate([np.asarray(x) for x in rows])
    same(xdap.median(r), np.median(flat), "ragged")
    same(xdap.quantile(xdap.from_global(np.array(5.0), comm=comm), 0.3),
         np.quantile(np.array(5.0), 0.3), "0-d")
    message = same_error(comm, lambda: xdap.median(xdap.from_global(np.zeros(0), comm=comm)),
                         (ValueError,))[1]
    assert "holds no values" in message


@pytest.mark.mpi(ranks=RANKS)
def test_weighted_quantiles_match_numpy(comm):
    """NumPy's weighted inverted_cdf: integer and real weights, leading and
    trailing zero weights, past the gathering threshold, along an axis; bad
    weights are NumPy's errors on every rank."""
    from xdap.movement.select import GATHER
    gen = np.random.default_rng(9)
    qs = [0.0, 0.05, 0.5, 0.61, 1.0]
    for kw in layouts2(comm.size):
        a = xdap.from_global(G, comm=comm, **kw)
        W = gen.integers(0, 3, G.shape).astype(np.float64)
        W[0, 0] += 1
        w = xdap.from_global(W, comm=comm, **kw)
        same(xdap.quantile(a, qs, method="inverted_cdf", weights=w),
             np.quantile(G, qs, method="inverted_cdf", weights=W), ("weighted", kw))
        same(np.percentile(a, 40, method="inverted_cdf", weights=w),
             np.percentile(G, 40, method="inverted_cdf", weights=W), ("weighted %", kw))
        W1 = W + 1.0
        same(xdap.quantile(a, [0.25, 0.8], axis=1, method="inverted_cdf",
                           weights=xdap.from_global(W1, comm=comm, **kw)).to_numpy(),
             np.quantile(G, [0.25, 0.8], axis=1, method="inverted_cdf", weights=W1),
             ("weighted axis", kw))
    big = gen.standard_normal(3 * GATHER)
    wb = gen.random(3 * GATHER)
    wb[np.argsort(big)[:100]] = 0.0              # the smallest values weigh nothing
    same(xdap.quantile(xdap.from_global(big, comm=comm, dist=("c",)), qs,
                       method="inverted_cdf",
                       weights=xdap.from_global(wb, comm=comm, dist=("c",))),
         np.quantile(big, qs, method="inverted_cdf", weights=wb), "weighted, many rounds")
    a = xdap.from_global(G, comm=comm)
    for W, words in ((-np.ones(G.shape), "non-negative"), (np.zeros(G.shape), "all zero")):
        message = same_error(comm, lambda: xdap.quantile(
            a, 0.5, method="inverted_cdf", weights=xdap.from_global(W, comm=comm)))[1]
        assert words in message, message
    message = same_error(comm, lambda: xdap.quantile(a, 0.5, weights=a))[1]
    assert "Only method 'inverted_cdf' supports weights" in message


CASES.update({
    "quantile weights": lambda c: xdap.quantile(
        xdap.from_global(G, comm=c), 0.5, method="inverted_cdf",
        weights=xdap.from_global(np.ones(G.shape), comm=c, dist=_one_rank(c, "b", "c"))),
    "quantile q": lambda c: xdap.quantile(xdap.from_global(G, comm=c),
                                          _one_rank(c, 0.5, 0.6)),
    "quantile q out of range": lambda c: xdap.quantile(xdap.from_global(G, comm=c),
                                                       _one_rank(c, 0.5, 1.5)),
    "percentile method": lambda c: xdap.percentile(xdap.from_global(G, comm=c), 50,
                                                   method=_one_rank(c, "linear", "lower")),
    "percentile method unknown": lambda c: xdap.percentile(
        xdap.from_global(G, comm=c), 50, method=_one_rank(c, "linear", "hazel")),
    "median axis": lambda c: xdap.median(xdap.from_global(G, comm=c), axis=_one_rank(c, 0, 1)),
    "median out": lambda c: xdap.median(xdap.from_global(G, comm=c),
                                        out=_one_rank(c, None, np.zeros(5))),
})


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("case", sorted(CASES))
def test_one_rank_different_is_one_error_everywhere(comm, case):
    same_error(comm, lambda: CASES[case](comm), (ValueError, TypeError), seconds=30)
