"""Partitions over real ranks: membership, Cartesian topology, neighbours,
the DistDL broadcast/reduction teams, data sharing, inactive workers."""
import gc

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.partitions import CartesianPartition, Partition


@pytest.mark.mpi
def test_world_partition(comm):
    P = Partition(comm)
    assert (P.size, P.rank, P.active, P.shape, P.index) == (comm.size, comm.rank, True,
                                                            (comm.size,), comm.rank)
    assert P.members == tuple(range(comm.size))
    assert P.allgather_data(comm.rank * 10) == [10 * r for r in range(comm.size)]
    assert P.broadcast_data({"k": comm.rank} if comm.rank == comm.size - 1 else None,
                            root=comm.size - 1) == {"k": comm.size - 1}
    assert P == Partition(comm) and xdap.Partition is Partition


@pytest.mark.mpi
def test_inclusive_subset_order_and_inactive(comm):
    P = Partition(comm)
    ranks = list(range(comm.size))[::-2]          # every other rank, reversed
    with P.create_partition_inclusive(ranks) as Q:
        assert Q.members == tuple(ranks) and Q.size == len(ranks)
        if comm.rank in ranks:
            assert Q.active and Q.rank == ranks.index(comm.rank)
            assert Q.comm.size == len(ranks)
            assert Q.allgather_data(comm.rank) == ranks
            assert Q.broadcast_data("hi" if Q.rank == 0 else None) == "hi"
        else:
            assert not Q.active and Q.rank is None and Q.index is None
            assert Q.allgather_data(1) == [] and Q.broadcast_data(1) is None
    assert not Q.active and Q.comm == MPI.COMM_NULL        # closed
    with pytest.raises(ValueError, match="not in this partition"):
        P.create_partition_inclusive([comm.size])
    with pytest.raises(ValueError, match="repeated"):
        P.create_partition_inclusive([0, 0])


@pytest.mark.mpi
def test_union_and_broadcast_from_subpartition(comm):
    P = Partition(comm)
    n = comm.size
    A = P.create_partition_inclusive([n - 1])
    B = P.create_partition_inclusive(range(n))
    U = A.create_partition_union(B)
    assert U.members == (n - 1,) + tuple(range(n - 1))
    assert U.active and U.rank == U.members.index(comm.rank)
    # data known only on sub-partition A reaches all of U
    got = U.broadcast_data("from A" if A.active else None, P_data=A)
    assert got == "from A"
    assert (A != B) == (n > 1) and U == A.create_partition_union(B)
    for X in (A, B, U):
        X.close()


@pytest.mark.mpi
def test_cartesian_index_and_neighbours(comm):
    n = comm.size
    shape = xdap.comm.balanced_grid(n, 2)
    C = Partition(comm).create_cartesian_topology_partition(shape, periodic=(True, False))
    assert C.shape == shape
    idx = tuple(int(i) for i in np.unravel_index(comm.rank, shape))
    assert C.index == idx and C.cartesian_index(comm.rank) == idx
    assert C.rank_of(idx) == comm.rank
    nb = C.neighbor_ranks()
    for axis in range(2):
        for k, step in enumerate((-1, 1)):
            j = idx[axis] + step
            if axis == 0:
                j %= shape[0]
            elif not 0 <= j < shape[1]:
                assert nb[axis][k] is None
                continue
            other = list(idx)
            other[axis] = j
            assert nb[axis][k] == int(np.ravel_multi_index(other, shape))
    # periodic on request overrides the default
    nb2 = C.neighbor_ranks(periodic=(False, True))
    if shape[0] == 1:
        assert nb2[0] == (None, None)
    assert nb2[1][0] is not None and nb2[1][1] is not None
    with pytest.raises(ValueError, match="positions"):
        Partition(comm).create_cartesian_topology_partition((n + 1,))
    C.close()


@pytest.mark.mpi
@pytest.mark.parametrize("axes", [None, (), (0,), (1,), (0, 1)])
def test_allreduction_partition(comm, axes):
    shape = xdap.comm.balanced_grid(comm.size, 2)
    C = CartesianPartition(comm, shape)
    with C.create_allreduction_partition(axes) as R:
        red = (0, 1) if axes is None else axes
        me = np.unravel_index(comm.rank, shape)
        expect = [r for r in range(comm.size)
                  if all(np.unravel_index(r, shape)[k] == me[k] for k in range(2) if k not in red)]
        assert sorted(R.members) == expect and R.active
        assert R.shape == tuple(shape[k] for k in red)
        assert sum(R.allgather_data(1)) == len(expect)


@pytest.mark.mpi(ranks=(4,))
def test_broadcast_teams_follow_distdl_rules(comm):
    P = Partition(comm)
    X = P.create_partition_inclusive([0, 1]).create_cartesian_topology_partition((1, 2))
    Y = P.create_cartesian_topology_partition((2, 2))
    P_send, P_recv = X.create_broadcast_partition_to(Y)
    # y index (i, j) reads x index (0, j): teams {0: [0, 2], 1: [1, 3]}
    teams = {0: (0, 2), 1: (1, 3)}
    assert P_send.active == (comm.rank in (0, 1))
    if P_send.active:
        assert P_send.members == teams[comm.rank] and P_send.rank == 0
    assert P_recv.members == teams[comm.rank % 2] and P_recv.active
    # reduction from Y to X: the same teams, roles swapped
    R_send, R_recv = Y.create_reduction_partition_to(X)
    assert R_send.members == teams[comm.rank % 2]
    assert R_recv.active == (comm.rank in (0, 1))
    # disjoint partitions, shapes padded with a leading 1
    X2 = P.create_partition_inclusive([2, 3]).create_cartesian_topology_partition((2,))
    Y2 = P.create_partition_inclusive([0, 1]).create_cartesian_topology_partition((1, 2))
    S, R = X2.create_broadcast_partition_to(Y2)
    assert (S.members if S.active else None) == {2: (2, 0), 3: (3, 1)}.get(comm.rank)
    assert (R.members if R.active else None) == {0: (2, 0), 1: (3, 1)}.get(comm.rank)
    with pytest.raises(ValueError, match="does not broadcast"):
        Y.create_broadcast_partition_to(X2)


@pytest.mark.mpi
def test_close_and_garbage_collection_free_communicators(comm):
    P = Partition(comm)
    # 50 would exhaust nothing, but must not leak or hang; a collection every
    # tenth (not every one: a full collection of the suite's heap is ~0.3 s)
    for i in range(50):
        Q = P.create_partition_inclusive(range(comm.size))
        assert Q.allgather_data(1) == [1] * comm.size
        del Q
        if i % 10 == 9:
            gc.collect()
    Q = P.create_partition_inclusive([0])
    Q.close()
    Q.close()                                 # idempotent
    assert not Q.active
    assert Partition(comm).active             # wrapping never frees the user's comm


@pytest.mark.mpi
def test_distdl_neighbor_ranks_by_rank_and_cartesian_subtopology(comm):
    # DistDL calls neighbor_ranks(rank); it used to fail on an int
    shape = xdap.comm.balanced_grid(comm.size, 2)
    C = Partition(comm).create_cartesian_topology_partition(shape, periodic=(False, True))
    for r in range(comm.size):
        assert C.neighbor_ranks(r) == C.neighbor_ranks(C.cartesian_index(r))
    with pytest.raises(ValueError, match="not in"):
        C.neighbor_ranks(comm.size)
    with pytest.raises(ValueError, match="outside the grid"):
        C.neighbor_ranks((0,) * 3)
    # independent reference: MPI's own Cartesian communicator
    cart = comm.Create_cart(list(shape), periods=[False, True], reorder=False)
    for axis in range(2):
        lo, hi = cart.Shift(axis, 1)
        assert C.neighbor_ranks(comm.rank)[axis] == tuple(
            None if x == xdap.comm.MPI.PROC_NULL else x for x in (lo, hi))
    for remain in [(True, False), (False, True), (True, True), (False, False)]:
        sub = cart.Sub(list(remain))
        want = sub.group.Translate_ranks(
            list(range(sub.size)), comm.group)
        with C.create_cartesian_subtopology_partition(remain) as S:
            assert list(S.members) == list(want) and S.rank == sub.rank
            assert S.shape == tuple(s for s, k in zip(shape, remain) if k)
        sub.Free()
    cart.Free()
    C.close()


@pytest.mark.mpi
def test_periodic_given_as_one_bool_means_every_axis(comm):
    # MPI's Create_cart reads periods=True as "every axis"; a bare bool
    # used to fail with "'bool' object is not iterable"
    shape = xdap.comm.balanced_grid(comm.size, 2)
    cart = comm.Create_cart(list(shape), periods=[True, True], reorder=False)
    want = tuple(tuple(None if x == MPI.PROC_NULL else x for x in cart.Shift(axis, 1))
                 for axis in range(2))
    cart.Free()
    with Partition(comm).create_cartesian_topology_partition(shape, periodic=True) as C:
        assert C.periodic == (True, True)
        assert C.neighbor_ranks() == want
    with Partition(comm).create_cartesian_topology_partition(shape) as C:
        assert C.neighbor_ranks(periodic=True) == want
        assert C.neighbor_ranks(periodic=False) == C.neighbor_ranks()
        with pytest.raises(TypeError, match="one bool per grid axis"):
            C.neighbor_ranks(periodic=3)
        with pytest.raises(ValueError, match="one entry per grid axis"):
            C.neighbor_ranks(periodic=(True,))
