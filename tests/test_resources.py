"""No MPI handle, file descriptor or thread grows with use.

Every operation of ``tests/resource_ops.py`` runs 200 times after two
warm-up calls; the next datatype, communicator, group, request and op handle
MPICH would hand out (it reuses freed ones first), the open file descriptors
and the live threads must be what they were.  ``benchmarks/robustness.py``
runs the same with 10^4 iterations.
"""
import pytest

from resource_ops import growth, operations

NAMES = sorted(["sum", "sum over an axis", "optional mean", "ragged row max", "float16 sum",
                "redistribute (datatypes)", "redistribute (packed)", "redistribute u -> b",
                "ragged redistribute", "exchange_halos", "accumulate_halos",
                "Scatter.forward", "Scatter.reverse", "to_global", "to_global(root=0)",
                "kernel", "kernel +", "from_local", "from_global(root=0)", "migrate",
                "from_distarray", "from_partitioned", "save", "load"])


@pytest.mark.mpi(ranks=(2,))
def test_operation_list_is_complete(comm):
    assert sorted(operations(comm)) == NAMES


@pytest.mark.mpi(ranks=(2,))
@pytest.mark.parametrize("name", NAMES)
def test_nothing_grows(comm, name):
    grew = growth(comm, operations(comm)[name], 200 if name not in ("save", "load") else 40)
    assert all(v == 0 for v in grew.values()), grew
