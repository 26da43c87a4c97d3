"""Hilbert keys and the distributed geometric partitioner (xdap.mesh).

Keys are checked against what makes a curve a Hilbert curve, independently
of how they are computed: over a whole 2**b grid they are a permutation of
0 .. 2**(b*d) - 1 starting at the origin, and consecutive keys are face
neighbours (a Z-order or row-major key fails that). Partitions are checked
for equal counts and for being runs of the key order.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from xdap.mesh import hilbert_keys, hilbert_partition, rcb_partition
from xdap.mesh.hilbert import max_bits


@pytest.mark.parametrize("d,bits", [(1, 6), (2, 1), (2, 5), (3, 1), (3, 4)])
def test_hilbert_keys_walk_the_grid_face_to_face(d, bits):
    grid = np.stack(np.meshgrid(*[np.arange(1 << bits)] * d, indexing="ij"), -1).reshape(-1, d)
    keys = hilbert_keys(grid, bits)
    assert sorted(keys.tolist()) == list(range(len(grid)))
    walk = grid[np.argsort(keys)]
    assert (walk[0] == 0).all()
    assert (np.abs(np.diff(walk, axis=0)).sum(axis=1) == 1).all()


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 3), st.data())
def test_hilbert_keys_fit_their_bits(d, data):
    bits = data.draw(st.integers(1, max_bits(d)))
    cells = np.array(data.draw(st.lists(st.lists(st.integers(0, (1 << bits) - 1),
                                                 min_size=d, max_size=d), min_size=1,
                                        max_size=20)), dtype=np.uint64)
    keys = hilbert_keys(cells, bits)
    assert keys.dtype == np.uint64
    assert all(int(k) < (1 << (bits * d)) for k in keys)
    # distinct cells, distinct keys (a bijection)
    assert len(set(map(tuple, cells.tolist()))) == len(set(keys.tolist()))


def test_hilbert_keys_refuse_bad_cells():
    with pytest.raises(ValueError, match="hold 1 to 21 bits"):
        hilbert_keys(np.zeros((1, 3), np.int64), 22)
    with pytest.raises(ValueError, match=r"lie in \[0, 2\*\*2\)"):
        hilbert_keys(np.array([[4, 0]]), 2)


def gathered(comm, pts, dest):
    """Every point's (key, part) on every rank -- test only, small data."""
    from xdap.mesh.hilbert import hilbert_keys as keys_of
    allpts = np.concatenate(comm.allgather(pts))
    alldest = np.concatenate(comm.allgather(dest))
    lo, hi = allpts.min(axis=0), allpts.max(axis=0)
    bits = min(max_bits(allpts.shape[1]), 52)
    top = float((1 << bits) - 1)
    cells = np.minimum(np.floor((allpts - lo) / np.where(hi > lo, hi - lo, 1) * top),
                       top).astype(np.uint64)
    return keys_of(cells, bits), alldest


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("d", [1, 2, 3])
def test_parts_are_equal_runs_of_the_curve(comm, d):
    rng = np.random.default_rng(10 + comm.rank)
    n = 0 if comm.rank == 1 else 700 * (comm.rank + 1)      # uneven, one rank empty
    pts = rng.normal(size=(n, d)) * np.arange(1, d + 1)
    dest = hilbert_partition(pts, comm)
    assert dest.shape == (n,) and ((dest >= 0) & (dest < comm.size)).all()
    keys, alldest = gathered(comm, pts, dest)
    counts = np.bincount(alldest, minlength=comm.size)
    N = len(alldest)
    assert counts.max() - counts.min() <= max(2, N // 50), counts
    order = np.argsort(keys, kind="stable")
    assert (np.diff(alldest[order]) >= 0).all()           # parts are runs of the curve


@pytest.mark.mpi(ranks=(2, 3))
def test_other_part_counts_and_no_points(comm):
    pts = np.random.default_rng(comm.rank).random((300, 2))
    dest = hilbert_partition(pts, comm, parts=7)
    counts = np.bincount(np.concatenate(comm.allgather(dest)), minlength=7)
    assert len(counts) == 7 and counts.max() - counts.min() <= 20, counts
    assert hilbert_partition(np.zeros((0, 3)), comm).shape == (0,)
    same = hilbert_partition(np.ones((5, 2)), comm)         # one point, many times: one part
    assert len(set(np.concatenate(comm.allgather(same)).tolist())) == 1


@pytest.mark.mpi(ranks=(2, 3))
@pytest.mark.parametrize("partitioner", [hilbert_partition, rcb_partition])
def test_bad_points_raise_on_every_rank(comm, partitioner):
    # both partitioners check their points and parts alike (partition._checked)
    for bad in (np.nan, np.inf):
        pts = np.random.default_rng(0).random((10, 3))
        if comm.rank == comm.size - 1:
            pts[4, 1] = bad
        with pytest.raises(ValueError, match=f"point 4 on rank {comm.size - 1} has a non-finite"):
            partitioner(pts, comm)
    with pytest.raises(ValueError, match="dimension"):
        partitioner(np.zeros((3, 2 if comm.rank else 3)), comm)
    with pytest.raises(TypeError, match="parts must be an int"):
        partitioner(np.zeros((3, 2)), comm, parts=0)
    with pytest.raises(ValueError, match="parts must be the same"):
        partitioner(np.zeros((3, 2)), comm, parts=2 + (comm.rank == 1))


def serial_rcb(pts, parts):
    """Recursive coordinate bisection of all points on one process, written
    from its definition: the longest side of the set's box (the lowest axis
    on ties), the lowest ``len * (parts // 2) // parts`` values go down."""
    label = np.zeros(len(pts), np.int64)

    def cut(idx, first, k):
        if k == 1:
            label[idx] = first
            return
        p = pts[idx]
        axis = int(np.argmax(p.max(axis=0) - p.min(axis=0))) if len(idx) else 0
        m = len(idx) * (k // 2) // k
        order = np.argsort(p[:, axis], kind="stable")
        cut(idx[order[:m]], first, k // 2)
        cut(idx[order[m:]], first + k // 2, k - k // 2)
    cut(np.arange(len(pts)), 0, parts)
    return label


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("d", [1, 2, 3])
def test_rcb_is_the_serial_bisection(comm, d):
    # distinct coordinates: the distributed cut is exactly the serial one
    rng = np.random.default_rng(20 + comm.rank)
    n = 0 if comm.rank == 1 else 500 * (comm.rank + 1)       # uneven, one rank empty
    pts = rng.normal(size=(n, d)) * np.arange(1, d + 1)
    everyone = np.concatenate(comm.allgather(pts))
    for parts in (1, 2, 3, 5, 8, comm.size):
        dest = rcb_partition(pts, comm, parts)
        assert dest.dtype == np.int64 and dest.shape == (n,)
        np.testing.assert_array_equal(np.concatenate(comm.allgather(dest)),
                                      serial_rcb(everyone, parts))


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_rcb_counts_are_exact_with_ties(comm):
    # grid points: whole planes share a coordinate; the counts are still the
    # serial bisection's, shared out across ranks by the prefix sum
    g = np.arange(6.0)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    mine = grid[np.random.default_rng(1).permutation(len(grid)) % comm.size == comm.rank]
    everyone = np.concatenate(comm.allgather(mine))
    for parts in (2, 3, 7):
        dest = np.concatenate(comm.allgather(rcb_partition(mine, comm, parts)))
        want = np.bincount(serial_rcb(everyone, parts), minlength=parts)
        np.testing.assert_array_equal(np.bincount(dest, minlength=parts), want)
    same = rcb_partition(np.ones((4, 2)), comm, parts=2)      # one point many times
    counts = np.bincount(np.concatenate(comm.allgather(same)), minlength=2)
    assert counts.tolist() == [2 * comm.size, 2 * comm.size]
    assert rcb_partition(np.zeros((0, 3)), comm).shape == (0,)
