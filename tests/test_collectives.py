"""Broadcast, sum-reduce, all-sum-reduce between partitions and along grid
axes of DistArrays: values against references built from every rank's
data, adjoint tests <F x, y> = <x, F* y> with random data, inactive workers."""
import numpy as np
import pytest
from xnd import xnd

import xdap
from xdap.partitions import Partition
from xdap.movement import (all_sum_reduce, all_sum_reduce_adjoint, broadcast, broadcast_adjoint,
                           sum_reduce, sum_reduce_adjoint)

SHAPE = (3, 5)


def _dot(comm, u, v):
    """Global inner product of per-rank arrays (empty on inactive ranks)."""
    return comm.allreduce(float(np.vdot(np.asarray(u).ravel(), np.asarray(v).ravel())))


def _layouts(comm):
    """(label, P_x, P_y): overlapping, disjoint-ish and nested partitions."""
    P = Partition(comm)
    n = comm.size
    half = max(1, n // 2)
    out = [("all->all", P.create_cartesian_topology_partition((n,)),
            P.create_cartesian_topology_partition((n,))),
           ("one->all", P.create_partition_inclusive([n - 1]).create_cartesian_topology_partition((1,)),
            P.create_cartesian_topology_partition((n,)))]
    if n >= 2:
        out.append(("low->high", P.create_partition_inclusive(range(half))
                    .create_cartesian_topology_partition((half,)),
                    P.create_partition_inclusive(range(n - half, n))
                    .create_cartesian_topology_partition((1, half))))
    if n == 4:
        out.append(("1x2->2x2", P.create_partition_inclusive([2, 3])
                    .create_cartesian_topology_partition((1, 2)),
                    P.create_cartesian_topology_partition((2, 2))))
    return out


def _source_of(x_shape, y_shape, iy):
    """The DistDL broadcast rule, written out for the reference: X's shape
    gets leading 1s up to Y's length; along an axis where the shapes agree
    Y's index reads X's same index, where X has 1 it reads index 0."""
    padded = (1,) * (len(y_shape) - len(x_shape)) + tuple(x_shape)
    ix = [i if a == b else 0 for i, a, b in zip(iy, padded, y_shape)]
    return tuple(ix[len(y_shape) - len(x_shape):])


def _apply(comm, rng, X, Y, op, P_send, P_recv):
    """Random data x on X's workers through op: (x, op's result, every
    worker's x, this worker's index in Y or None)."""
    x = rng.standard_normal(SHAPE) if X.active else None
    out = op(x, P_send, P_recv)
    iy = Y.cartesian_index(Y.members.index(comm.rank)) if Y.active else None
    return x, out, comm.allgather(x), iy


@pytest.mark.mpi
def test_broadcast_values_and_adjoint(comm):
    rng = np.random.default_rng(10 + comm.rank)
    for label, X, Y in _layouts(comm):
        P_send, P_recv = X.create_broadcast_partition_to(Y)
        x, y_out, xs, iy = _apply(comm, rng, X, Y, broadcast, P_send, P_recv)
        # reference: the source of each Y worker, from X's gathered data
        if Y.active:
            ix = _source_of(X.shape, Y.shape, iy)
            src = X.members[X.rank_of(ix)]
            np.testing.assert_array_equal(y_out, xs[src], err_msg=label)
        else:
            assert y_out.size == 0
        # adjoint: <B x, y> == <x, B* y>
        y = rng.standard_normal(SHAPE) if Y.active else np.empty(0)
        x_adj = broadcast_adjoint(y if Y.active else None, P_send, P_recv)
        if not X.active:
            assert x_adj.size == 0
        lhs = _dot(comm, y_out if Y.active else np.empty(0), y)
        rhs = _dot(comm, x if X.active else np.empty(0), x_adj if X.active else np.empty(0))
        assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12), (label, lhs, rhs)
        for Q in (P_send, P_recv):
            Q.close()


@pytest.mark.mpi
def test_sum_reduce_values_and_adjoint(comm):
    rng = np.random.default_rng(20 + comm.rank)
    for label, Y, X in _layouts(comm):        # reduce from the bigger X to the smaller Y
        P_send, P_recv = X.create_reduction_partition_to(Y)
        x, out, xs, iy = _apply(comm, rng, X, Y, sum_reduce, P_send, P_recv)
        if Y.active:
            contributors = [m for r, m in enumerate(X.members)
                            if _source_of(Y.shape, X.shape, X.cartesian_index(r)) == iy]
            np.testing.assert_allclose(out, sum(xs[m] for m in contributors), err_msg=label)
        else:
            assert out.size == 0
        y = rng.standard_normal(SHAPE) if Y.active else None
        back = sum_reduce_adjoint(y, P_send, P_recv)
        lhs = _dot(comm, out if Y.active else np.empty(0), y if Y.active else np.empty(0))
        rhs = _dot(comm, x if X.active else np.empty(0), back if X.active else np.empty(0))
        assert np.isclose(lhs, rhs, rtol=1e-12, atol=1e-12), (label, lhs, rhs)


@pytest.mark.mpi
@pytest.mark.parametrize("axes", [None, (), (0,), (1,), (0, 1)])
def test_all_sum_reduce_partition_self_adjoint(comm, axes):
    rng = np.random.default_rng(30 + comm.rank)
    shape = xdap.comm.balanced_grid(comm.size, 2)
    C = Partition(comm).create_cartesian_topology_partition(shape)
    R = C.create_allreduction_partition(axes)
    x = rng.standard_normal(SHAPE)
    out = all_sum_reduce(x, R)
    xs = comm.allgather(x)
    np.testing.assert_allclose(out, sum(xs[m] for m in R.members))
    y = rng.standard_normal(SHAPE)
    assert np.isclose(_dot(comm, out, y), _dot(comm, x, all_sum_reduce_adjoint(y, R)))


@pytest.mark.mpi
def test_inactive_workers_and_xnd_in_out(comm):
    P = Partition(comm)
    Z = P.create_partition_inclusive([0])
    out = all_sum_reduce(xnd([1.0, 2.0]), Z)
    if comm.rank == 0:
        assert out.value == [1.0, 2.0] and isinstance(out, xnd)
    else:
        assert out.value == [] if isinstance(out, xnd) else out.size == 0
    # a worker in neither team: broadcast and sum_reduce are no-ops
    X = P.create_partition_inclusive([0]).create_cartesian_topology_partition((1,))
    S, R = X.create_broadcast_partition_to(X)
    got = broadcast(xnd([[1, 2]], dtype="int64") if comm.rank == 0 else None, S, R)
    if comm.rank == 0:
        assert got.value == [[1, 2]]
    else:
        assert got.size == 0


def _grid_array(comm, rng, grid):
    """Random blocks, each rank's its own (drawn from ``rng``): a
    from_global of one agreed array, then this rank's block replaced."""
    data = np.zeros((2 * 12, 3 * 12))                  # equal blocks on every grid below
    a = xdap.from_global(data, dist=("b", "b"), grid=grid, comm=comm)
    a.local_numpy()[...] = rng.standard_normal(a.local_numpy().shape)
    return a


def _team(a, axes):
    d = a.distribution
    keep = [k for k in range(2) if k not in axes]
    team = [r for r in range(a.comm.size)
            if all(d.coords_of(r)[k] == d.coords[k] for k in keep)]
    return sorted(team, key=lambda r: tuple(d.coords_of(r)[k] for k in axes))


@pytest.mark.mpi
@pytest.mark.parametrize("axes", [(), (0,), (1,), (0, 1)])
def test_distarray_grid_primitives(comm, axes):
    rng = np.random.default_rng(40 + comm.rank)
    grid = xdap.comm.balanced_grid(comm.size, 2)
    a = _grid_array(comm, rng, grid)
    b = _grid_array(comm, np.random.default_rng(50 + comm.rank), grid)
    # every rank's block differs: perturb by rank
    from xdap.parts import parts
    parts(a.local).values[...] += comm.rank
    blocks = comm.allgather(np.asarray(parts(a.local).values).copy())
    team = _team(a, axes)
    s = all_sum_reduce(a, axes)
    np.testing.assert_allclose(parts(s.local).values, sum(blocks[r] for r in team))
    bc = broadcast(a, axes)
    np.testing.assert_array_equal(parts(bc.local).values, blocks[team[0]])
    sr = sum_reduce(a, axes)
    want = sum(blocks[r] for r in team) if comm.rank == team[0] else 0 * blocks[comm.rank]
    np.testing.assert_allclose(parts(sr.local).values, want)
    assert s.distribution == a.distribution
    # adjoints on per-rank blocks
    dot = lambda u, v: _dot(comm, parts(u.local).values, parts(v.local).values)
    assert np.isclose(dot(broadcast(a, axes), b), dot(a, broadcast_adjoint(b, axes)))
    assert np.isclose(dot(sum_reduce(a, axes), b), dot(a, sum_reduce_adjoint(b, axes)))
    assert np.isclose(dot(all_sum_reduce(a, axes), b), dot(a, all_sum_reduce_adjoint(b, axes)))


@pytest.mark.mpi
def test_distarray_grid_errors_on_every_rank(comm):
    a = xdap.from_global(np.ma.masked_equal(np.arange(8.0), 3.0), comm=comm)
    with pytest.raises(TypeError, match="non-optional"):
        all_sum_reduce(a, (0,))
    if comm.size in (3,):
        b = xdap.from_global(np.arange(7.0), comm=comm)   # blocks 3, 2, 2
        with pytest.raises(ValueError, match="different local shapes"):
            all_sum_reduce(b, (0,))
    c = xdap.from_global(np.arange(8.0), comm=comm)
    with pytest.raises(ValueError, match="out of range"):
        all_sum_reduce(c, (3,))


@pytest.mark.mpi
def test_team_disagreement_raises_without_hanging(comm):
    P = Partition(comm)
    X = P.create_cartesian_topology_partition((comm.size,))
    Y = P.create_partition_inclusive([0]).create_cartesian_topology_partition((1,))
    S, R = X.create_reduction_partition_to(Y)
    x = np.ones(comm.rank + 1)                # different shapes on every rank
    if comm.size == 1:
        np.testing.assert_array_equal(sum_reduce(x, S, R), x)
        return
    with pytest.raises(ValueError, match="different shapes"):
        sum_reduce(x, S, R)
    # the teams still work afterwards
    np.testing.assert_allclose(all_sum_reduce(np.ones(2), X.create_allreduction_partition()),
                               [comm.size] * 2)


@pytest.mark.mpi
def test_unusable_data_on_one_worker_raises_on_every_worker(comm):
    # the worker with bad data used to raise before the team's handshake,
    # leaving the others waiting in it (a hang)
    P = Partition(comm)
    X = P.create_cartesian_topology_partition((comm.size,))
    Y = P.create_partition_inclusive([0]).create_cartesian_topology_partition((1,))
    last = comm.rank == comm.size - 1
    S, R = X.create_reduction_partition_to(Y)
    # the worker with unusable data raises its own TypeError; every other
    # worker of its team learns of it in the handshake and raises ValueError
    def fails(own, message):
        if own:
            return pytest.raises(TypeError, match=message)
        return pytest.raises(ValueError, match="a worker of the team passed data that "
                                               "collectives cannot move")
    x = xnd([1.0, None]) if last else np.ones(2)        # optional data cannot be summed
    with fails(last, "fixed, non-optional data"):
        sum_reduce(x, S, R)
    S, R = Y.create_broadcast_partition_to(X)
    with fails(comm.rank == 0, "unsupported dtype"):
        broadcast(np.zeros(2, "M8[s]"), S, R)
    with fails(last, "unsupported dtype"):
        all_sum_reduce(np.zeros(2, "M8[s]") if last else np.ones(2), X)
    # all_sum_reduce used to reach MPI with different shapes (truncation abort)
    if comm.size > 1:
        with pytest.raises(ValueError, match="different shapes"):
            all_sum_reduce(np.ones(2 + comm.rank), X)
    # the teams still work afterwards
    np.testing.assert_allclose(all_sum_reduce(np.ones(2), X), [comm.size] * 2)


@pytest.mark.mpi
def test_bool_data_sums_with_logical_or(comm):
    # MPI has no SUM for C_BOOL; NumPy adds booleans with logical or
    P = Partition(comm)
    X = P.create_cartesian_topology_partition((comm.size,))
    Y = P.create_partition_inclusive([0]).create_cartesian_topology_partition((1,))
    x = np.array([comm.rank == 0, False, True])
    want = np.logical_or.reduce(comm.allgather(x))
    np.testing.assert_array_equal(all_sum_reduce(x, X), want)
    S, R = X.create_reduction_partition_to(Y)
    out = sum_reduce(x, S, R)
    if comm.rank == 0:
        np.testing.assert_array_equal(out, want)
    a = xdap.from_global(np.zeros((2, 2 * comm.size), bool), dist=("n", "b"), comm=comm)
    from xdap.parts import parts
    parts(a.local).values[0, 0] = comm.rank == comm.size - 1
    s = all_sum_reduce(a, (0, 1) if len(a.grid) == 2 else None)
    assert parts(s.local).values[0, 0] and not parts(s.local).values[1].any()


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_a_distarray_with_partitions_is_refused_on_every_rank(comm):
    """The DistArray face takes grid axes; a Partition handed to it (the
    local-data face's argument) is one TypeError on every rank, never read
    as axes."""
    from xdap.movement import all_sum_reduce, broadcast, sum_reduce
    a = xdap.zeros((4, 4), dist=("b", "b"), comm=comm)
    P = Partition(comm)
    for call in (lambda: broadcast(a, P), lambda: sum_reduce(a, P, P),
                 lambda: all_sum_reduce(a, P), lambda: broadcast(a, (0,), axes=(1,))):
        with pytest.raises(TypeError, match="grid axes"):
            call()
    assert np.array_equal(broadcast(a, (0,)).to_numpy(), np.zeros((4, 4)))
