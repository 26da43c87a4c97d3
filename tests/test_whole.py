"""The whole array and one rank, as buffers: from_global(root=) scatters,
to_global() and to_global(root=) gather -- for every distribution kind and
type -- and the exchange's v-collectives, including the rounds an MPI
without large counts needs (forced here with a tiny limit)."""
import numpy as np
import pytest

import xdap
from xdap import exchange
from xdap.parts import parts
from helpers import kinds

RANKS = (1, 2, 3, 4)


def fixed_data(rng):
    values = rng.standard_normal((13, 3))
    return np.ma.masked_array(values, mask=rng.random(values.shape) < 0.3)


def ragged_data(rng, n=13):
    """Rows of 1-2 lists of 0-2 values (ndtypes cannot hold a partition whose
    rows have no lists at all: test_rows_without_lists_are_refused_everywhere)."""
    return [[[None if rng.random() < 0.25 else int(v) for v in rng.integers(0, 99, rng.integers(0, 3))]
             for _ in range(rng.integers(1, 3))] for _ in range(n)]


def fixed_expected(g, idx):
    block = g[np.ix_(*idx)]
    return block.data, ~np.ma.getmaskarray(block)


@pytest.mark.mpi(ranks=RANKS)
def test_root_scatter_every_kind_fixed_optional(comm):
    rng = np.random.default_rng(1)
    g = fixed_data(rng)
    for root in sorted({0, comm.size - 1}):
        for label, opts in kinds(13, comm.size, np.random.default_rng(2)):
            a = xdap.from_global(g if comm.rank == root else None, root=root, comm=comm, **opts)
            b = xdap.from_global(g, comm=comm, **opts)         # every rank holds the data
            assert a.distribution == b.distribution, label
            p, q = parts(a.local), parts(b.local)
            d = a.distribution
            want, valid = fixed_expected(g, [d.global_indices(0), np.arange(3)])
            np.testing.assert_array_equal(p.valid_mask(), valid, err_msg=label)
            np.testing.assert_array_equal(p.values[valid], want[valid], err_msg=label)
            np.testing.assert_array_equal(q.values[valid], want[valid], err_msg=label)
            # gathered back: on root only, then on every rank
            got = a.to_global(root=root)
            assert (got is None) == (comm.rank != root)
            if got is not None:
                gp = parts(got)
                np.testing.assert_array_equal(gp.valid_mask(), ~g.mask, err_msg=label)
                np.testing.assert_array_equal(gp.values[~g.mask], g.data[~g.mask])
            everywhere = parts(a.to_global())
            np.testing.assert_array_equal(everywhere.values[~g.mask], g.data[~g.mask])


@pytest.mark.mpi(ranks=RANKS)
def test_root_scatter_of_a_0d_array_gives_every_rank_the_value(comm):
    """A 0-d array from the root: every rank holds its one element (a
    number, a missing or present optional value, a record) -- it was a
    TypeError on the root while the others returned (found by the
    divergence fuzzer)."""
    from xnd import xnd
    for value in (np.array(1 + 2j), np.array(-3, np.int8), xnd(None, type="?float64"),
                  xnd(2.5, type="?float64"), xnd({"a": 1, "b": 2.0}, type="{a: int8, b: float64}")):
        want = value.value if isinstance(value, xnd) else value.item()
        for root in sorted({0, comm.size - 1}):
            a = xdap.from_global(value if comm.rank == root else None, root=root, comm=comm)
            assert a.shape == ()
            assert a.local.value == want
            assert a.to_global().value == want


@pytest.mark.mpi(ranks=RANKS)
def test_root_scatter_ragged_three_levels(comm):
    rng = np.random.default_rng(3)
    rows = ragged_data(rng, 2 * comm.size + 3)
    t = "var * var * var * ?int16"
    for label, opts in kinds(len(rows), comm.size, np.random.default_rng(4)):
        if label == "irregular block":          # may give a rank no rows (refused, tested elsewhere)
            continue
        root = comm.size // 2
        a = xdap.from_global(rows if comm.rank == root else None, root=root, type=t, comm=comm,
                             **opts)
        assert a.local.value == [rows[g] for g in a.distribution.global_indices(0)], label
        assert a.to_global().value == rows, label
        got = a.to_global(root=0)
        assert (got.value == rows) if comm.rank == 0 else got is None, label


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_rows_without_lists(comm):
    rows = [[[1]]] + [[] for _ in range(comm.size)]      # the last ranks' rows hold no lists
    a = xdap.from_global(rows, type="var * var * var * int64", comm=comm)
    assert a.local.value == [rows[g] for g in np.asarray(a.global_indices(0)).tolist()]
    assert a.to_global().value == rows


@pytest.mark.mpi(ranks=RANKS)
def test_2d_grid_root_scatter_and_gather(comm):
    g = np.arange(7 * 9, dtype=np.int32).reshape(7, 9)
    grid = tuple(xdap.comm.balanced_grid(comm.size, 2))
    for opts in (dict(dist=("b", "c"), grid=grid), dict(dist=("c", "b"), grid=grid,
                                                        block_size=(2, None))):
        a = xdap.from_global(g if comm.rank == 0 else None, root=0, comm=comm, **opts)
        d = a.distribution
        np.testing.assert_array_equal(parts(a.local).values,
                                      g[np.ix_(d.global_indices(0), d.global_indices(1))])
        np.testing.assert_array_equal(parts(a.to_global()).values, g)


@pytest.mark.mpi(ranks=RANKS)
def test_rows_in_blocks_with_a_permuted_second_dim(comm):
    """Rows in rank-order blocks, but the second dim unstructured on one grid
    position with its indices permuted: no rank's part is a C-order slab of
    the global array (found by the DAP fuzzer: the slab fast path took it)."""
    g = np.arange(6.0 * comm.size * 5).reshape(6 * comm.size, 5)
    perm = [3, 0, 4, 1, 2]
    a = xdap.from_global(g, dist=("b", "u"), grid=(comm.size, 1), indices=(None, [perm]),
                         comm=comm)
    np.testing.assert_array_equal(parts(a.local).values, g[a.distribution.global_indices(0)][:, perm])
    assert a.to_global().value == g.tolist()
    got = a.to_global(root=0)
    assert (got.value if comm.rank == 0 else got) == (g.tolist() if comm.rank == 0 else None)
    b = xdap.from_global(g if comm.rank == 0 else None, root=0, dist=("b", "u"),
                         grid=(comm.size, 1), indices=(None, [perm]), comm=comm)
    np.testing.assert_array_equal(parts(b.local).values, parts(a.local).values)


@pytest.mark.mpi(ranks=RANKS)
def test_bad_root_is_refused_everywhere(comm):
    a = xdap.from_global(np.arange(4.0), comm=comm)
    with pytest.raises(ValueError, match="root must be a rank"):
        a.to_global(root=comm.size)
    if comm.size > 1:
        with pytest.raises(ValueError, match="root must be the same on every rank"):
            a.to_global(root=comm.rank)


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("limit", [None, 7, 64])
def test_exchange_collectives_in_rounds(comm, limit):
    """Byte limits below the messages' sizes make the exchange go in rounds
    (an MPI without large counts); the results must not change."""
    P, me = comm.size, comm.rank
    rng = np.random.default_rng(5)
    sizes = rng.integers(0, 40, (P, P))                       # sizes[i, j]: rank i -> rank j
    data = {(i, j): np.arange(sizes[i, j], dtype=np.float64) + 1000 * i + j
            for i in range(P) for j in range(P)}
    send = np.concatenate([data[me, j] for j in range(P)])
    got = exchange.alltoallv(comm, send, sizes[me], sizes[:, me], limit=limit)
    np.testing.assert_array_equal(got, np.concatenate([data[i, me] for i in range(P)]))
    # every rank sends the same bytes to everyone: overlapping send displacements
    mine = np.arange(sizes[me, 0], dtype=np.float64) + 100 * me
    got = exchange.alltoallv(comm, mine, np.full(P, len(mine)), sizes[:, 0], limit=limit,
                             send_displs=np.zeros(P, np.int64))
    np.testing.assert_array_equal(got, np.concatenate(
        [np.arange(sizes[i, 0], dtype=np.float64) + 100 * i for i in range(P)]))
