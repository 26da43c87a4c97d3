"""The distributed partition refinement (xdap.mesh.refine_partition): edge
cuts and part sizes computed in the test from the serial dual graph of the
whole mesh (a dict of facets, not the library's graph)."""
import numpy as np
import pytest

from xdap.mesh import dual_graph, hilbert_partition, refine_partition

from test_mesh_graph import cube_tets, my_cells, reference_graph


def serial_cut(graph, part):
    return sum(part[a] != part[b] for a, ns in graph.items() for b in ns if a < b)


def whole(comm, mine, local_parts, N):
    part = np.full(N, -1)
    part[np.concatenate(comm.allgather(mine))] = np.concatenate(comm.allgather(local_parts))
    return part


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("how", ["blocks", "scattered"])
def test_refinement_lowers_the_cut_and_keeps_the_balance(comm, how):
    pts, tets = cube_tets(6)
    N, P = len(tets), comm.size
    graph = reference_graph(tets)
    mine = my_cells(comm, N, how)
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    noise = np.random.default_rng(5).random(N) < 0.1        # the same on every rank
    for parts, noisy in ((P, False), (3, False), (P, True), (3, True)):
        start = hilbert_partition(pts[tets[mine]].mean(axis=1), comm, parts)
        if noisy:      # jagged boundaries: a tenth of the cells moved to a part beside
            start = np.where(noise[mine], (start + 1) % parts, start)
        refined = refine_partition(offsets, nbrs, mine, start, comm, parts=parts)
        assert refined.dtype == np.int64 and refined.shape == start.shape
        before, after = whole(comm, mine, start, N), whole(comm, mine, refined, N)
        assert after.min() >= 0 and after.max() < parts
        # every part within the bound (or no larger than it was)
        bound = np.maximum(np.floor(1.03 * N / parts), np.bincount(before, minlength=parts))
        assert (np.bincount(after, minlength=parts) <= bound).all()
        cut0, cut1 = serial_cut(graph, before), serial_cut(graph, after)
        assert cut1 < cut0 if noisy and parts > 1 else cut1 <= cut0, (cut0, cut1)
        # the same everywhere: each rank's answer is the global one
        assert comm.allgather(int(cut1)) == [int(cut1)] * P
        # no rounds: the partition unchanged
        np.testing.assert_array_equal(
            refine_partition(offsets, nbrs, mine, start, comm, parts=parts, rounds=0), start)


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("empty", ["first", "last"])
def test_a_rank_without_cells(comm, empty):
    pts, tets = cube_tets(4)
    N = len(tets)
    lonely = 0 if empty == "first" else comm.size - 1
    ranks = [r for r in range(comm.size) if r != lonely]
    mine = np.array_split(np.arange(N), len(ranks))[ranks.index(comm.rank)] \
        if comm.rank != lonely else np.zeros(0, np.int64)
    offsets, nbrs = dual_graph(tets[mine].reshape(-1, 4), mine, comm)
    start = hilbert_partition(pts[tets[mine]].mean(axis=1).reshape(-1, 3), comm)
    refined = refine_partition(offsets, nbrs, mine, start, comm)
    assert len(refined) == len(mine)
    graph = reference_graph(tets)
    assert serial_cut(graph, whole(comm, mine, refined, N)) <= \
        serial_cut(graph, whole(comm, mine, start, N))


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_input_is_one_error_on_every_rank(comm):
    pts, tets = cube_tets(2)
    mine = my_cells(comm, len(tets), "blocks")
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    start = np.full(len(mine), comm.rank)
    bad = start.copy()
    if comm.rank == 1:
        bad[0] = comm.size
    with pytest.raises(ValueError, match=rf"part {comm.size} out of range.*\(rank 1\)"):
        refine_partition(offsets, nbrs, mine, bad, comm)
    with pytest.raises(ValueError, match="rounds must be the same on every rank: rank 0 passed 3, rank 1 4"):
        refine_partition(offsets, nbrs, mine, start, comm, rounds=3 + comm.rank)
    with pytest.raises(ValueError, match=r"imbalance must be >= 1.0, got 0.5"):
        refine_partition(offsets, nbrs, mine, start, comm, imbalance=0.5)
    with pytest.raises(ValueError, match=r"imbalance must be finite, got an int of 401 digits"):
        refine_partition(offsets, nbrs, mine, start, comm, imbalance=10 ** 400)   # not OverflowError
    # a huge finite imbalance is no limit at all: the same result as a generous one
    np.testing.assert_array_equal(refine_partition(offsets, nbrs, mine, start, comm, imbalance=1e308),
                                  refine_partition(offsets, nbrs, mine, start, comm,
                                                   imbalance=float(comm.size)))
    with pytest.raises(ValueError, match="one part per cell"):
        refine_partition(offsets, nbrs, mine, start[:-1] if comm.rank == 0 else start, comm)
    twice = mine.copy()
    if comm.rank == 1:
        twice[0] = 0                         # rank 0 holds cell 0 too
    with pytest.raises(ValueError, match="cell_ids"):
        refine_partition(offsets, nbrs, twice, start, comm)
    assert len(refine_partition(offsets, nbrs, mine, start, comm)) == len(mine)   # still usable
