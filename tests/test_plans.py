"""The plan store (xdap.plans): typed keys, one eviction rule, two scopes."""
import pytest
from mpi4py import MPI

from xdap import plans


def test_keys_are_typed_and_eviction_releases():
    released = []
    s = plans.Store(2)
    with pytest.raises(TypeError, match="xdap.plans.Key"):
        s.get_or_make(("halo", b"x"), lambda: 1)
    for i in range(3):
        s.get_or_make(plans.Key("k", (i,)), lambda i=i: i, release=released.append)
    assert released == [0] and plans.Key("k", (0,)) not in s and len(s) == 2
    assert s.kinds() == {"k": 2}
    s.put(plans.Key("k", (1,)), 10, release=released.append)     # replaces, releasing 1
    assert released == [0, 1] and s.get(plans.Key("k", (1,))) == 10
    s.clear()
    assert sorted(released) == [0, 1, 2, 10]


def test_a_communicator_store_is_freed_with_its_communicator():
    released = []
    comm = MPI.COMM_SELF.Dup()
    plans.on(comm).get_or_make(plans.Key("doc", ()), lambda: "x", release=released.append)
    assert plans.on(comm) is plans.on(comm) and plans.on(comm) is not plans.on(MPI.COMM_SELF)
    comm.Free()
    assert released == ["x"]


def test_set_size_bounds_both_scopes():
    old = plans.size()
    comm = MPI.COMM_SELF.Dup()
    try:
        for i in range(5):
            plans.on(comm).get_or_make(plans.Key("n", (i,)), lambda: i)
        plans.set_size(2)
        assert len(plans.on(comm)) == 2 and plans.pure.maxsize == 2
        with pytest.raises(ValueError, match="int >= 1"):
            plans.set_size(0)
    finally:
        plans.set_size(old)
        comm.Free()
