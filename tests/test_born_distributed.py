"""Data born distributed, on 1, 2, 3, 4 and 8 real ranks: creation without
global data, each rank's own piece (blocks and unstructured indices),
distributed unstructured maps through every engine, owned + ghost entries,
migration by destination, and the errors every rank raises together.
Every value is checked against NumPy on the global array, which only the
test builds."""
import os
import tempfile
import time

import numpy as np
import pyarrow as pa
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import parts
from helpers import kinds

RANKS = (1, 2, 3, 4, 8)


def local_values(a):
    return np.asarray(parts(a.local).values)


def expected(a, g):
    d = a.distribution
    return g[np.ix_(*[d.global_indices(k) for k in range(d.ndim)])]


def shared_dir(comm):
    return comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)


# -- creation without global data --------------------------------------------

@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_arange_is_numpys_bit_for_bit(comm):
    """Each rank computes its own values as NumPy does for the whole array
    (first + i * (second - first), in the dtype): equal bits, blocks and
    cyclic, float32 and float64, ints with negative steps."""
    cases = [((10,), None), ((2, 11, 3), None), ((10, 0, -3), "int8"),
             ((0.1, 7.3, 0.2), None), ((0.5, 7.3, 0.7), "float32"), ((5, -5, -1.5), "float32"),
             ((1e10, 1e10 + 100, 7), None), ((0,), None),
             # empty with an unsigned dtype and a negative start (NumPy itself
             # refuses -2 as uint8; the array has no value: it is empty)
             ((-2, -5), "uint8"), ((3, 0, -1), "uint8")]
    for args, type_ in cases:
        if args == (-2, -5):
            want = np.zeros(0, "uint8")
            for kw in ({}, dict(dist=("c",))):
                got = xdap.arange(*args, type=type_, comm=comm, **kw).to_numpy()
                assert got.dtype == want.dtype and got.size == 0
            continue
        want = np.arange(*args, dtype=type_)
        for kw in ({}, dict(dist=("c",))):
            got = xdap.arange(*args, type=type_, comm=comm, **kw).to_numpy()
            assert got.dtype == want.dtype, (args, type_)
            np.testing.assert_array_equal(got, want, err_msg=f"{args} {type_} {kw}")


@pytest.mark.mpi(ranks=RANKS)
def test_zeros_full_arange_from_function_every_kind(comm):
    n = 2 * comm.size + 5
    for label, opts in kinds(n, comm.size, np.random.default_rng(1)):
        z = xdap.zeros((n, 3), "int16", comm=comm, **opts)
        assert str(z.type) == f"{n} * 3 * int16" and not local_values(z).any(), label
        f = xdap.full((n, 3), 2.5, "?float32", comm=comm, **opts)
        assert (local_values(f) == 2.5).all() and parts(f.local).valid_mask().all(), label
        missing = xdap.full(n, None, "?int8", comm=comm, **opts)
        assert not parts(missing.local).valid_mask().any(), label
        r = xdap.arange(3, 3 + 2 * n, 2, comm=comm, **opts)
        np.testing.assert_array_equal(local_values(r), expected(r, np.arange(3, 3 + 2 * n, 2)))
        h = xdap.from_function(lambda i, j: 100 * i + j, (n, 3), comm=comm, **opts)
        np.testing.assert_array_equal(local_values(h), expected(h, np.add.outer(100 * np.arange(n),
                                                                                np.arange(3))))
    grid = tuple(xdap.comm.balanced_grid(comm.size, 2))
    c = xdap.from_function(lambda i, j: i - j, (7, 9), "float64", dist=("c", "b"), grid=grid,
                           comm=comm, block_size=(2, None))
    np.testing.assert_array_equal(local_values(c), expected(c, np.subtract.outer(np.arange(7.0),
                                                                                 np.arange(9.0))))
    e = xdap.zeros(comm.size + 1, "var * var * float64", comm=comm)
    assert e.local.value == [[]] * e.distribution.local_shape[0]


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_creation_errors_on_every_rank(comm):
    with pytest.raises(ValueError, match="f raised ZeroDivisionError"):
        xdap.from_function(lambda i: i + (1 // 0 if comm.rank == 1 else 0), 5, comm=comm)
    with pytest.raises(ValueError, match="must be the same on every rank"):
        xdap.zeros(comm.size + comm.rank, comm=comm)
    with pytest.raises(ValueError, match="step must not be 0"):
        xdap.arange(0, 5, 0, comm=comm)
    # finite bounds whose length is not (was an internal OverflowError)
    with pytest.raises(ValueError, match="no finite length"):
        xdap.arange(-1e308, 1e308, 0.5, comm=comm)


# -- each rank's own piece ---------------------------------------------------------

@pytest.mark.mpi(ranks=RANKS)
def test_from_local_blocks_fixed_optional_ragged_arrow(comm):
    rng = np.random.default_rng(comm.rank)
    rows = int(rng.integers(0, 4))
    g_rows = comm.allgather(rows)
    start = sum(g_rows[:comm.rank])
    g = np.arange(sum(g_rows) * 3.0).reshape(-1, 3)
    a = xdap.from_local(g[start:start + rows], comm=comm)
    assert a.global_shape == g.shape
    assert a.distribution.maps[0].bounds == tuple(np.concatenate([[0], np.cumsum(g_rows)]))
    assert np.shares_memory(local_values(a), np.asarray(a.local))
    np.testing.assert_array_equal(parts(a.to_global()).values, g)
    # along axis 1 (columns), masked values
    cols = g.T.copy()
    m = np.ma.masked_array(cols[:, start:start + rows], mask=cols[:, start:start + rows] % 4 == 0)
    b = xdap.from_local(m, axis=1, comm=comm)
    assert b.global_shape == cols.shape and b.grid == (1, comm.size)
    got = parts(b.to_global())
    np.testing.assert_array_equal(got.valid_mask(), cols % 4 != 0)
    # ragged rows, one or more per rank, given as Arrow arrays
    mine = [[float(comm.rank)] * k for k in range(1 + comm.rank % 3)]
    r = xdap.from_local(pa.array(mine, pa.list_(pa.float64())), comm=comm)
    want = [row for q in range(comm.size) for row in [[float(q)] * k for k in range(1 + q % 3)]]
    assert r.to_global().value == want


@pytest.mark.mpi(ranks=(2, 3, 4, 8))
def test_from_local_pieces_that_do_not_fit_fail_everywhere(comm):
    last = comm.rank == comm.size - 1
    with pytest.raises(ValueError, match=r"the pieces' dimensions other than axis must be the "
                                         rf"same on every rank: rank 0 passed \(3,\), rank "
                                         rf"{comm.size - 1} \(4,\)"):
        xdap.from_local(np.zeros((2, 4 if last else 3)), comm=comm)
    with pytest.raises(TypeError, match=r"the pieces' element type must be the same on every "
                                         rf"rank: rank 0 passed 'float64', rank {comm.size - 1} "
                                         "'int32'"):
        xdap.from_local(np.zeros(2, np.int32 if last else np.float64), comm=comm)
    with pytest.raises(ValueError, match="must be the same on every rank"):
        xdap.from_local(np.zeros(2), axis=0, dist="u" if last else "b",
                        indices=[0, 1] if last else None, comm=comm)


# -- unstructured: no rank holds every index ------------------------------------

def permuted(n, comm, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    return np.array_split(perm, comm.size)[comm.rank]


@pytest.mark.mpi(ranks=RANKS)
def test_unstructured_from_local_through_every_engine(comm):
    n = 5 * comm.size + 3
    g = np.arange(n * 2.0).reshape(n, 2)
    mine = permuted(n, comm)
    a = xdap.from_local(g[mine], dist="u", indices=mine, comm=comm)
    m = a.distribution.maps[0]
    assert not m.complete and m.one_to_one and m.known == (comm.rank,)
    np.testing.assert_array_equal(parts(a.to_global()).values, g)
    # redistribution to every kind and back to another distributed map
    for label, opts in kinds(n, comm.size, np.random.default_rng(2)):
        b = a.redistribute(**opts)
        np.testing.assert_array_equal(local_values(b), expected(b, g), err_msg=label)
    other = permuted(n, comm, seed=5)
    t = xdap.from_local(np.zeros((len(other), 2)), dist="u", indices=other, comm=comm)
    np.testing.assert_array_equal(local_values(a.redistribute(dist=t.distribution)), g[other])
    # kernels, reductions, DAP, save/load, Scatter
    np.testing.assert_allclose(local_values(xdap.kernels.sin(a)), np.sin(g[mine]))
    assert float(a.sum()) == g.sum()
    np.testing.assert_array_equal(parts(a.sum(axis=1).to_global()).values, g.sum(axis=1))
    back = xdap.from_distarray(a.__distarray__(), comm=comm)
    assert back.distribution == a.distribution
    path = os.path.join(shared_dir(comm), "u")
    a.save(path)
    loaded = xdap.load(path, comm=comm)
    assert loaded.distribution == a.distribution
    np.testing.assert_array_equal(local_values(loaded), g[mine])
    want = np.array([n - 1, 0, 3 % n])
    got = xdap.Scatter(a, want).forward(a)
    np.testing.assert_array_equal(got, g[want])


@pytest.mark.mpi(ranks=(2, 3, 4, 8))
def test_unstructured_errors_on_every_rank(comm):
    n = 4 * comm.size
    mine = permuted(n, comm)
    last = comm.rank == comm.size - 1
    with pytest.raises(ValueError, match="global index .* repeats"):
        xdap.from_local(np.zeros(len(mine) + 1), dist="u", comm=comm,
                        indices=np.append(mine, mine[0]) if last else np.append(mine, 10 ** 6))
    with pytest.raises(ValueError, match="coverage"):
        xdap.from_local(np.zeros(len(mine) - last), dist="u", indices=mine[last:], size=n,
                        comm=comm)
    # the last rank also lists an index another rank holds
    dup = np.append(mine, np.setdiff1d(np.arange(n), mine)[0]) if last else mine
    with pytest.raises(ValueError, match="one_to_one is True"):
        xdap.from_local(np.zeros(len(dup)), dist="u", indices=dup, one_to_one=True, comm=comm)
    with pytest.raises(ValueError, match="out of range"):
        xdap.from_local(np.zeros(len(mine)), dist="u", indices=mine + (n if last else 0), size=n,
                        comm=comm)
    # a claimed size far beyond the indices given: refused at once, nothing allocated
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="cannot cover"):
        xdap.from_local(np.zeros(3), dist="u", indices=[0, 1, 2], size=2 ** 40, comm=comm)
    assert time.perf_counter() - t0 < 5


# -- owned and ghost entries ----------------------------------------------------------

@pytest.mark.mpi(ranks=RANKS)
def test_owned_plus_ghost_nodes(comm):
    """Each rank lists the nodes it owns and ghost copies of its neighbours'
    first two, as a mesh code does; the ghosts' owners are said explicitly."""
    n = 6 * comm.size
    owned = np.arange(comm.rank * 6, comm.rank * 6 + 6)
    ghosts = np.array([((comm.rank + 1) * 6 + k) % n for k in range(2)]) if comm.size > 1 \
        else np.zeros(0, np.int64)
    ids = np.concatenate([ghosts, owned])                # ghosts first: order is free
    mask = np.concatenate([np.zeros(len(ghosts), bool), np.ones(6, bool)])
    g = np.arange(n) * 10.0
    values = np.where(mask, g[ids], -1.0)                 # ghosts start stale
    a = xdap.from_local(values, dist="u", indices=ids, owned=mask, comm=comm)
    m = a.distribution.maps[0]
    assert m.one_to_one is (comm.size == 1)
    np.testing.assert_array_equal(np.sort(np.arange(len(ids))[m.canonical_positions(comm.rank)]),
                                  np.flatnonzero(mask))
    assert float(a.sum()) == g.sum()                # every node counts once
    np.testing.assert_array_equal(parts(a.to_global()).values, g)
    a.exchange_halos()                                    # ghosts := owners' values
    np.testing.assert_array_equal(local_values(a), g[ids])
    a.accumulate_halos(mode="add", clear=True)            # ghosts added into their owners
    want = g.copy()
    if comm.size > 1:
        for r in range(comm.size):
            for k in range(2):
                want[((r + 1) * 6 + k) % n] += g[((r + 1) * 6 + k) % n]
    np.testing.assert_array_equal(parts(a.to_global()).values, want)
    np.testing.assert_array_equal(local_values(a)[~mask], 0.0)
    if comm.size > 1:                  # every rank claiming its ghosts too: two owners each
        with pytest.raises(ValueError, match="has more than one owner"):
            xdap.from_local(values, dist="u", indices=ids, owned=np.ones(len(ids), bool),
                            comm=comm)


# -- migration ---------------------------------------------------------------------------

@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("t", ["float64", "?int32", "var * var * ?float32", "var * var * var * int8"])
def test_migrate_rows_where_told_and_replay(comm, t):
    n = 3 * comm.size + 4
    rng = np.random.default_rng(11)
    if t.startswith("var"):
        deep = t.count("var") == 3
        data = [[[int(v) for v in rng.integers(0, 9, rng.integers(0, 3))]
                 for _ in range(rng.integers(1, 3))] if deep else
                [None if rng.random() < 0.2 else float(v) for v in rng.integers(0, 9, rng.integers(0, 4))]
                for _ in range(n)]
        a = xdap.from_global(data, type=t, dist=("c",), comm=comm)
    else:
        data = np.ma.masked_array(rng.integers(0, 100, (n, 2)), mask=rng.random((n, 2)) < 0.2)
        a = xdap.from_global(data if t.startswith("?") else data.data.astype(t), comm=comm)
    dest = np.random.default_rng(comm.rank).integers(0, comm.size, a.distribution.local_shape[0])
    dest[0] = comm.rank          # every rank keeps a row (xnd has no empty ragged partition)
    b, plan = a.migrate(dest)
    assert b.to_global().value == a.to_global().value
    mine = b.distribution.maps[0].global_indices(comm.rank)
    sent = comm.allgather([(int(gid), int(r)) for gid, r in
                           zip(a.distribution.global_indices(0), dest)])
    assert sorted(mine.tolist()) == sorted(gid for pairs in sent for gid, r in pairs
                                           if r == comm.rank)
    if t.startswith("var"):
        # the first DAP export of rows out of block order finds each leaf's
        # global position (collectively); reference: leaves before each row
        leaves = [len(parts(xdap.from_global([row], type=t, comm=MPI.COMM_SELF).local).values)
                  for row in data]
        start = np.concatenate([[0], np.cumsum(leaves)])
        d = b.__distarray__()
        want = np.concatenate([np.arange(start[g], start[g + 1]) for g in mine]).astype(np.int64)
        assert d["dim_data"][0]["size"] == start[-1]
        np.testing.assert_array_equal(d["dim_data"][0]["indices"], want)
        assert xdap.from_distarray(b, comm=comm).to_global().value == a.to_global().value
    # the same plan moves another field of the same rows
    if not t.startswith("var"):
        other = a * 2 if t == "float64" else a
        c = plan.apply(other)
        assert c.distribution == b.distribution
        np.testing.assert_array_equal(parts(c.to_global()).values,
                                      parts(other.to_global()).values)


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_migrate_bad_dest_on_every_rank(comm):
    a = xdap.from_global(np.arange(10.0), comm=comm)
    n = a.distribution.local_shape[0]
    last = comm.rank == comm.size - 1
    with pytest.raises(ValueError, match=f"names rank {comm.size}"):
        a.migrate(np.full(n, comm.size if last else 0))
    with pytest.raises(ValueError, match="one rank per local row"):
        a.migrate(np.zeros(n + last, np.int64))
    with pytest.raises(TypeError, match="integer ranks"):
        a.migrate(np.zeros(n, np.float64 if last else np.int64))
