"""Redistribution plans, serially: every plan is executed in memory with
NumPy (each rank's buffer cut out of a global array) and must rebuild every
target buffer exactly -- each position written exactly once, only by the
element's canonical owner."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xdap.distribution import Distribution
from xdap.maps import BlockMap, CyclicMap, UnstructuredMap
from xdap.movement.plan import (RedistributionPlan, as_positions, compress,
                                redistribution_plan, runs)


def dim_maps(n, P, rng):
    """One map of every kind for a dimension of size n over P grid ranks."""
    cuts = np.sort(rng.integers(0, n + 1, P - 1))
    bounds = [0, *cuts.tolist(), n]
    perm = rng.permutation(n)
    chunks = np.array_split(perm, P)
    shared = [np.unique(np.concatenate([c, chunks[(i + 1) % P][:2]])) for i, c in enumerate(chunks)]
    out = {
        "block": BlockMap(n, P),
        "irregular": BlockMap(n, P, bounds=bounds),
        "cyclic": CyclicMap(n, P),
        "block-cyclic": CyclicMap(n, P, block_size=3),
        "unstructured": UnstructuredMap(n, [rng.permutation(c) for c in chunks], one_to_one=True),
        "shared": UnstructuredMap(n, [rng.permutation(c) for c in shared], one_to_one=False),
    }
    if n >= 2 * P:
        out["padded"] = BlockMap(n, P, padding=(1, 1))
    return out


def D(maps, coords=None):
    """A distribution without a communicator (what plans are made of)."""
    return Distribution.detached(tuple(maps), coords)


def buffers(d, G, ranks=None):
    """Each rank's buffer cut from the global array (padding/copies
    included), keyed by the rank's number in the parent communicator."""
    out = {}
    for i in range(d.size):
        idx = [m.global_indices(c) for m, c in zip(d.maps, d.coords_of(i))]
        out[i if ranks is None else int(ranks[i])] = G[np.ix_(*idx)]
    return out


def owned_mask(d, i):
    """Elements of rank i's buffer it owns canonically."""
    masks = []
    for m, c in zip(d.maps, d.coords_of(i)):
        g = m.global_indices(c)
        masks.append(m.owners(g)[0] == c)
    return np.ix_(*masks)


def execute(plan, G):
    """Run the plan in memory; assert both sides agree on every message."""
    src, dst = buffers(plan.src, G), {}
    written = {}
    for i, r in enumerate(plan.dst_ranks):
        r = int(r)
        dst[r] = np.full(plan.dst.local_shape_of(i), -1, G.dtype)
        written[r] = np.zeros(plan.dst.local_shape_of(i), np.int64)
    sends = {r: {t.peer: t for t in plan.sends(r)} for r in range(plan.src.size)}
    for r in dst:
        for t in plan.recvs(r):
            s = sends[t.peer].pop(r)            # the matching send must exist
            assert s.shape == t.shape
            chunk = src[t.peer][np.ix_(*[as_positions(i) for i in s.index])]
            # only owned elements are ever sent
            own = np.zeros(plan.src.local_shape_of(t.peer), bool)
            own[owned_mask(plan.src, t.peer)] = True
            assert own[np.ix_(*[as_positions(i) for i in s.index])].all()
            ix = np.ix_(*[as_positions(i) for i in t.index])
            dst[r][ix] = chunk
            written[r][ix] += 1
    assert all(not left for left in sends.values()), "sends nobody receives"
    for r in dst:
        assert (written[r] == 1).all(), f"rank {r}: positions written {written[r]}"
    return dst


def check(plan, G):
    got = execute(plan, G)
    want = buffers(plan.dst, G, plan.dst_ranks)
    for r in want:
        np.testing.assert_array_equal(got[r], want[r])


@pytest.mark.parametrize("n", [0, 1, 7, 13])
@pytest.mark.parametrize("Ps,Pt", [(1, 1), (1, 3), (2, 2), (3, 2), (4, 3)])
def test_every_pair_of_kinds_1d(n, Ps, Pt):
    rng = np.random.default_rng(n * 100 + Ps * 10 + Pt)
    G = np.arange(n) * 10 + 1
    srcs, dsts = dim_maps(n, Ps, rng), dim_maps(n, Pt, rng)
    for (ks, ms), (kt, mt) in itertools.product(srcs.items(), dsts.items()):
        check(RedistributionPlan(D((ms,)), D((mt,))), G)


def test_2d_grid_changes_and_kinds():
    rng = np.random.default_rng(5)
    G = np.arange(9 * 11).reshape(9, 11)
    grids = [(1, 1), (2, 2), (4, 1), (1, 3), (3, 1), (2, 3)]
    for gs, gt in itertools.product(grids, grids):
        ms0, ms1 = dim_maps(9, gs[0], rng), dim_maps(11, gs[1], rng)
        mt0, mt1 = dim_maps(9, gt[0], rng), dim_maps(11, gt[1], rng)
        for ks, kt in [("block", "block"), ("cyclic", "block"), ("padded", "shared"),
                       ("unstructured", "block-cyclic"), ("irregular", "padded")]:
            a = (ms0.get(ks, ms0["block"]), ms1.get(kt, ms1["block"]))
            b = (mt0.get(kt, mt0["block"]), mt1.get(ks, mt1["block"]))
            check(RedistributionPlan(D(a), D(b)), G)


def test_subset_and_reordered_ranks():
    """Target on parent ranks (3, 0) with a non-C-order grid; source on 4 ranks."""
    G = np.arange(8 * 6).reshape(8, 6)
    src = D((BlockMap(8, 2), CyclicMap(6, 2)), coords=[[1, 1], [0, 0], [1, 0], [0, 1]])
    dst = D((BlockMap(8, 1), BlockMap(6, 2, padding=(1, 1))))
    plan = RedistributionPlan(src, dst, dst_ranks=[3, 0])
    check(plan, G)
    assert plan.recvs(1) == [] and plan.recvs(2) == []
    assert plan.nparent == 4


def test_block_transpose_is_rectangular():
    src = D((BlockMap(64, 4), BlockMap(32, 1)))
    dst = D((BlockMap(64, 1), BlockMap(32, 4)))
    plan = RedistributionPlan(src, dst)
    for r in range(4):
        assert len(plan.sends(r)) == 4 and all(t.rectangular for t in plan.sends(r))
        assert all(t.rectangular for t in plan.recvs(r))
        assert sum(t.size for t in plan.sends(r)) == 16 * 32
    assert plan.volume() == 64 * 32
    # identical layouts: every rank keeps its own block
    same = RedistributionPlan(src, src)
    assert all([t.peer for t in same.sends(r)] == [r] for r in range(4))


def test_cache_keys_on_both_distributions():
    a = D((BlockMap(10, 2),))
    b = D((CyclicMap(10, 2),))
    p1 = redistribution_plan(a, b)
    assert redistribution_plan(D((BlockMap(10, 2),)), D((CyclicMap(10, 2),))) is p1
    assert redistribution_plan(b, a) is not p1
    assert redistribution_plan(a, D((CyclicMap(10, 2, block_size=2),))) is not p1
    assert redistribution_plan(a, b, dst_ranks=[1, 0]) is not p1
    u1 = D((UnstructuredMap(10, [range(5), range(5, 10)]),))
    u2 = D((UnstructuredMap(10, [range(0, 10, 2), range(1, 10, 2)]),))
    assert redistribution_plan(a, u1) is not redistribution_plan(a, u2)


def test_errors():
    with pytest.raises(ValueError, match="same global shape"):
        RedistributionPlan(D((BlockMap(5, 1),)), D((BlockMap(6, 1),)))
    with pytest.raises(ValueError, match="distinct grid coordinates"):
        D((BlockMap(5, 2),), coords=[[0], [0]])
    with pytest.raises(ValueError, match="distinct parent ranks"):
        RedistributionPlan(D((BlockMap(5, 2),)), D((BlockMap(5, 2),)), dst_ranks=[1, 1])
    with pytest.raises(TypeError, match="one xdap.maps.Map per dimension"):
        D(("b",))


def test_compress_and_runs():
    assert compress(np.array([], np.int64)) == slice(0, 0, 1)
    assert compress(np.array([3, 3])) is not None and isinstance(compress(np.array([3, 3])),
                                                                  np.ndarray)
    assert compress(np.arange(5, 20, 5)) == slice(5, 16, 5)
    s, n = runs(np.array([4, 5, 6, 1, 2, 9]))
    assert s.tolist() == [4, 1, 9] and n.tolist() == [3, 2, 1]
    assert [x.tolist() for x in runs(slice(0, 0, 1))] == [[], []]


@st.composite
def dim_map(draw, n):
    P = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["b", "bi", "bp", "c", "u", "us"]))
    if kind == "b":
        return BlockMap(n, P)
    if kind == "bi":
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=P - 1, max_size=P - 1)))
        return BlockMap(n, P, bounds=[0, *cuts, n])
    if kind == "bp":
        if n < 2 * P:
            return BlockMap(n, P)
        w = draw(st.integers(0, min(2, (n // P) // 2)))
        return BlockMap(n, P, padding=(w, w))
    if kind == "c":
        return CyclicMap(n, P, block_size=draw(st.integers(1, 4)))
    owner = draw(st.lists(st.integers(0, P - 1), min_size=n, max_size=n))
    idx = [[g for g in range(n) if owner[g] == p] for p in range(P)]
    if kind == "us":
        extra = draw(st.lists(st.tuples(st.integers(0, P - 1), st.integers(0, max(n - 1, 0))),
                              max_size=4)) if n else []
        for p, g in extra:
            if g not in idx[p]:
                idx[p].append(g)
        return UnstructuredMap(n, idx, one_to_one=False)
    return UnstructuredMap(n, idx, one_to_one=True)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_random_layouts(data):
    ndim = data.draw(st.integers(1, 3))
    shape = [data.draw(st.integers(0, 7)) for _ in range(ndim)]
    src = [data.draw(dim_map(n)) for n in shape]
    dst = [data.draw(dim_map(n)) for n in shape]
    G = np.arange(int(np.prod(shape))).reshape(shape)
    nsrc, ndst = int(np.prod([m.grid_size for m in src])), int(np.prod([m.grid_size for m in dst]))
    parent = max(nsrc, ndst) + data.draw(st.integers(0, 2))
    ranks = data.draw(st.permutations(range(parent)))[:ndst]
    check(RedistributionPlan(D(src), D(dst), dst_ranks=ranks), G)
