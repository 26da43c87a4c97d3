"""Ragged data with ranks that hold no rows -- on the first, a middle or the
last rank -- through every door: constructors, migration, redistribution,
kernels, reductions, stores and every protocol. Values are checked against
the Python lists they came from. (ndtypes 0.2.0.dev3 cannot represent an
empty nested var dimension; the build patches it: tools/patch_stack.py.)"""
import math

import numpy as np
import pytest

import xdap
from xdap.parts import EMPTY_VAR_DIMS
from xdap.types import type_info

TYPES = {
    "var * var * float64": lambda g: [float(g) + 0.5 * j for j in range(g % 3)],
    "var * var * ?int32": lambda g: [None if (g + j) % 4 == 1 else g * 10 + j
                                     for j in range(g % 4)],
    "var * var * var * int16": lambda g: [[g] * (k % 2) for k in range(g % 3)],
}


def rows_of(type_, ids):
    return [TYPES[type_](int(g)) for g in ids]


def lonely_rank(comm, where):
    return {"first": 0, "middle": comm.size // 2, "last": comm.size - 1}[where]


def leaves(value):
    if isinstance(value, list):
        for v in value:
            yield from leaves(v)
    elif value is not None:
        yield value


pytestmark = pytest.mark.skipif(not EMPTY_VAR_DIMS, reason="an unpatched ndtypes")


@pytest.mark.mpi(ranks=(2, 3, 4))
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("type_", list(TYPES))
def test_a_rank_without_rows_goes_through_every_door(comm, where, type_, tmp_path_factory):
    P, me = comm.size, comm.rank
    lonely = lonely_rank(comm, where)
    # from_local: the lonely rank passes no rows
    counts = [0 if r == lonely else r + 2 for r in range(P)]
    start = sum(counts[:me])
    ids = np.arange(start, start + counts[me])
    want = rows_of(type_, range(sum(counts)))
    a = xdap.from_local(rows_of(type_, ids), type=type_, comm=comm)
    assert a.shape[0] == len(want) and str(a.type).endswith(type_.split(" * ", 1)[1])
    assert a.local.value == rows_of(type_, ids) and len(a.local.value) == counts[me]
    assert a.to_global().value == want

    # migrate: every row of the lonely rank's neighbour goes elsewhere, the
    # lonely rank receives the first two rows of every rank
    dest = np.full(len(ids), (me + 1) % P)
    dest[:2] = lonely
    if me == (lonely + 1) % P:
        dest[2:] = (me + 1) % P if P > 2 else lonely
    m, _ = a.migrate(dest)
    got = sorted(zip(np.asarray(m.global_indices(0)).tolist(), m.local.value))
    every = comm.allgather(list(zip(ids.tolist(), dest.tolist())))
    assert got == sorted((g, want[g]) for pairs in every for g, d in pairs if d == me)
    assert m.to_global().value == want

    # an array whose every row leaves a rank, and one more rank-less move
    gone, _ = a.migrate(np.full(len(ids), lonely))
    assert len(gone.local.value) == (len(want) if me == lonely else 0)
    assert gone.to_global().value == want

    # redistribute: fewer rows than ranks, cyclic -- some ranks get none
    few = xdap.from_global(want[:P - 1], type=type_, comm=comm)
    assert len(few.local.value) == (1 if me < P - 1 else 0)
    cyc = few.redistribute(dist=("c",))
    assert cyc.to_global().value == want[:P - 1]
    assert cyc.local.value == [want[g] for g in np.asarray(cyc.global_indices(0)).tolist()]
    back = gone.redistribute(dist=("b",))
    assert back.to_global().value == want

    # root scatter with fewer rows than ranks
    scattered = xdap.from_global(want[:P - 1] if me == 0 else None, root=0, type=type_,
                                 comm=comm)
    assert scattered.to_global().value == want[:P - 1]

    # kernels (local work on no rows) and reductions (no rows add nothing)
    if type_.endswith("float64"):
        s = 2.0 * gone
        assert s.to_global().value == [[2 * v for v in row] for row in want]
        assert math.isclose(float(gone.sum()), sum(leaves(want)))
    elif type_.endswith("?int32"):
        plus = gone + gone
        assert plus.to_global().value == [[None if v is None else 2 * v for v in row]
                                          for row in want]
        assert int(gone.count()) == sum(1 for _ in leaves(want))
        assert int(gone.sum()) == sum(leaves(want))

    # the store, on every rank count
    store = comm.bcast(str(tmp_path_factory.mktemp("empty") / "a.xdap") if me == 0 else None)
    gone.save(store)
    assert xdap.load(store, comm=comm).to_global().value == want

    # protocols: DAP, __partitioned__, Arrow, Awkward -- each a round trip
    assert xdap.from_distarray(gone.__distarray__(), comm=comm).to_global().value == want
    # (__partitioned__ tiles blocks: the rows of few, the last rank without any)
    assert xdap.from_partitioned(few.__partitioned__, comm=comm).to_global().value == \
        want[:P - 1]
    arrow = gone.to_arrow()
    assert len(arrow) == len(gone.local.value)
    assert xdap.from_arrow(arrow, comm=comm).to_global().value == want
    ak = gone.to_awkward()
    assert len(ak) == len(gone.local.value)
    assert xdap.from_awkward(ak, comm=comm).to_global().value == want


@pytest.mark.mpi(ranks=(2, 3))
def test_rows_without_lists_on_some_ranks(comm):
    # rows that hold no lists at the inner level: empty var dimensions
    rows = [[[1]]] + [[] for _ in range(comm.size)]
    a = xdap.from_global(rows, type="var * var * var * int64", comm=comm)
    assert a.to_global().value == rows
    assert (a + a).to_global().value == [[[2]]] + [[] for _ in range(comm.size)]
    assert int(a.sum()) == 1


def test_the_patch_is_what_the_build_applies():
    # the patched ndtypes takes one offset as an empty var dimension; the
    # containers it makes behave as empty ones in ndtypes, xnd and gumath
    from ndtypes import ndt
    from xdap.parts import Parts, container
    t = ndt("var(offsets=[0,0]) * var(offsets=[0]) * float64")
    assert t.datasize == 0 and str(t) == "var * var * float64"
    info = type_info("var * var * float64")
    empty = container(Parts(info, np.zeros(0), None,
                            (np.array([0, 0], np.int32), np.array([0], np.int32))))
    assert empty.value == [] and len(empty) == 0 and empty.type == t
    assert xdap.kernels.library.sin(empty).value == []
