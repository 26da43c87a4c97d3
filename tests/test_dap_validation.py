"""from_distarray validates collectively: a rule broken on ONE rank makes
EVERY rank raise the same error, naming the rule, the rank and the value --
no hang, no crash.

Each case takes a valid export, breaks it on the last rank only (unless the
rule needs all ranks, e.g. the grid product), and checks that all ranks
raise an error whose message matches.
"""
import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import as_container

RANKS = (2, 3, 4)


def fixed_export(dist=("b", "n"), **opts):
    comm = MPI.COMM_WORLD
    a = xdap.from_global(np.arange(60.0).reshape(12, 5), dist=dist, comm=comm, **opts)
    d = a.__distarray__()
    d["dim_data"] = tuple(dict(x) for x in d["dim_data"])
    return d


def ragged_export(dist=("b",)):
    comm = MPI.COMM_WORLD
    rows = [[float(i)] * (i % 3) + [None] for i in range(10)]
    a = xdap.from_global(as_container(rows, type="var * var * ?float64"), dist=dist, comm=comm)
    d = a.__distarray__()
    d["xnd"] = dict(d["xnd"])
    return d


def on_last_rank(d, change):
    comm = MPI.COMM_WORLD
    if comm.rank == comm.size - 1:
        change(d)
    return d


def expect_error(d, match, exc=(ValueError, TypeError)):
    """Every rank must raise, with the same message."""
    comm = MPI.COMM_WORLD
    with pytest.raises(exc, match=match) as info:
        xdap.from_distarray(d, comm=comm)
    messages = comm.allgather(str(info.value))
    assert len(set(messages)) == 1, messages
    return messages[0]


def set_key(dim, key, value):
    def change(d):
        d["dim_data"][dim][key] = value
    return change


CASES = {
    # keys and types
    "not a dict": (lambda: fixed_export(), lambda d: d.clear() or d.update(x=1), r"missing required key"),
    "missing dim_data": (fixed_export, lambda d: d.pop("dim_data"), r"missing required key.*dim_data"),
    "buffer not a buffer": (fixed_export, lambda d: d.update(buffer=[1, 2]), r"buffer protocol"),
    "dim_data not dicts": (fixed_export, lambda d: d.update(dim_data=(1, 2)), r"tuple of dicts"),
    "unknown dist_type": (fixed_export, set_key(0, "dist_type", "x"), r"dist_type.*'x'"),
    "size not an int": (fixed_export, set_key(0, "size", 12.0), r"size.*12\.0"),
    "size is a bool": (fixed_export, set_key(1, "size", True), r"size.*True"),
    "missing start": (fixed_export, lambda d: d["dim_data"][0].pop("start"), r"start"),
    "bad padding": (fixed_export, set_key(0, "padding", (1,)), r"padding"),
    "unsupported dtype": (fixed_export,
                          lambda d: d.update(buffer=np.zeros(np.asarray(d["buffer"]).shape, "V3")),
                          r"format"),
    # version
    "major version": (fixed_export, lambda d: d.update(__version__="1.0.0"), r"major version 1"),
    "malformed version": (fixed_export, lambda d: d.update(__version__="0.10"), r"major\.minor\.patch"),
    "version not a string": (fixed_export, lambda d: d.update(__version__=0.1), r"string"),
    "mixed versions": (fixed_export, lambda d: d.update(__version__="0.9.0"), r"different DAP versions|0\.9"),
    # buffer vs dim_data
    "buffer ndim": (fixed_export, lambda d: d.update(buffer=np.asarray(d["buffer"]).ravel()),
                    r"dimension\(s\) but dim_data"),
    "buffer shape": (fixed_export, lambda d: d.update(buffer=np.asarray(d["buffer"])[:, :4]),
                     r"stop - start|buffer length|length"),
    # grid
    "grid size differs": (fixed_export, set_key(0, "proc_grid_size", 99), r"proc_grid_size|99"),
    "grid rank out of range": (fixed_export, set_key(0, "proc_grid_rank", 99),
                               r"proc_grid_rank.*99"),
    "coordinate held twice": (fixed_export, set_key(0, "proc_grid_rank", 0),
                              r"held by ranks|proc_grid_rank|grid position"),
    # sizes agree
    "size differs": (fixed_export, set_key(1, "size", 6), r"size"),
    # block adjacency / padding
    "block gap": (fixed_export, lambda d: (d["dim_data"][0].update(start=d["dim_data"][0]["start"] + 1,
                                                                   stop=d["dim_data"][0]["stop"] + 1)),
                  r"adjacen|start|stop|gap"),
    # cyclic
    "cyclic start": (lambda: fixed_export(dist=("c", "n")), set_key(0, "start", 0), r"start"),
    "cyclic owned count": (lambda: fixed_export(dist=("c", "n")),
                           lambda d: d.update(buffer=np.asarray(d["buffer"])[:-1]),
                           r"owned|count|length|buffer"),
    "block_size differs": (lambda: fixed_export(dist=("c", "n"), block_size=(2, None)),
                           set_key(0, "block_size", 3), r"block_size"),
    # ragged extension
    "offsets not int32": (ragged_export, lambda d: d["xnd"].update(
        offsets=tuple(np.asarray(o, np.int64) for o in d["xnd"]["offsets"])), r"int32"),
    "offsets decreasing": (ragged_export, lambda d: d["xnd"].update(
        offsets=(d["xnd"]["offsets"][0], d["xnd"]["offsets"][1][::-1].copy())),
        r"offsets|start at 0|non-decreasing"),
    "missing validity": (ragged_export, lambda d: d["xnd"].update(validity=None), r"validity"),
    "extension dtype mismatch": (ragged_export, lambda d: d["xnd"].update(type="var * var * ?int64"),
                                 r"dtype|float64"),
}


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_violation_on_one_rank_raises_everywhere(case):
    make, change, match = CASES[case]
    d = on_last_rank(make(), change)
    expect_error(d, match)


@pytest.mark.mpi(ranks=RANKS)
def test_message_names_the_rank():
    comm = MPI.COMM_WORLD
    d = on_last_rank(fixed_export(), lambda d: d.update(__version__="2.0.0"))
    message = expect_error(d, r"major version 2")
    assert f"rank {comm.size - 1}" in message


@pytest.mark.mpi(ranks=RANKS)
def test_grid_product_must_equal_communicator_size():
    comm = MPI.COMM_WORLD
    d = fixed_export()
    d["dim_data"][0]["proc_grid_size"] = comm.size + 1   # on every rank: consistent but wrong
    expect_error(d, r"product of the proc_grid_sizes")


@pytest.mark.mpi(ranks=RANKS)
def test_unstructured_rules():
    comm = MPI.COMM_WORLD
    n = 3 * comm.size
    own = np.arange(comm.rank * 3, comm.rank * 3 + 3)

    def export(indices, one_to_one=True):
        return {"__version__": "0.10.0", "buffer": np.asarray(indices, dtype=float),
                "dim_data": ({"dist_type": "u", "size": n, "proc_grid_size": comm.size,
                              "proc_grid_rank": comm.rank, "indices": np.asarray(indices),
                              "one_to_one": one_to_one},)}
    last = comm.rank == comm.size - 1
    # valid: a partition
    a = xdap.from_distarray(export(own), comm=comm)
    assert np.asarray(a.to_global()).tolist() == list(range(n))
    # locally not unique
    expect_error(export(np.array([own[0], own[0], own[1]]) if last else own), r"unique")
    # out of range
    expect_error(export(np.array([own[0], own[1], n + 5]) if last else own), r"range|%d" % (n + 5))
    # one_to_one claimed but an index is held twice
    shared = np.concatenate([own, [0]]) if last else own
    expect_error(export(shared), r"one_to_one|exactly one|more than one|twice")
    # shared indices are fine when one_to_one is False
    b = xdap.from_distarray(export(shared, one_to_one=False), comm=comm)
    assert np.asarray(b.to_global()).tolist() == list(range(n))


@pytest.mark.mpi(ranks=RANKS)
def test_padding_width_against_neighbour():
    comm = MPI.COMM_WORLD
    d = fixed_export(padding=((1, 1), None))
    # a communication padding wider than what the neighbour holds / its counterpart
    if comm.rank == comm.size - 1:
        dd = d["dim_data"][0]
        dd["padding"] = (2, dd["padding"][1])
        dd["start"] -= 1
        buf = np.asarray(d["buffer"])
        d["buffer"] = np.concatenate([buf[:1], buf])
    expect_error(d, r"padding")


@pytest.mark.mpi(ranks=RANKS)
def test_any_minor_version_is_read():
    comm = MPI.COMM_WORLD
    d = fixed_export()
    d["__version__"] = "0.11.3"
    a = xdap.from_distarray(d, comm=comm)
    assert np.asarray(a.to_global()).tolist() == np.arange(60.0).reshape(12, 5).tolist()


@pytest.mark.mpi(ranks=RANKS)
def test_from_global_errors_are_collective():
    comm = MPI.COMM_WORLD
    with pytest.raises(ValueError, match="unknown dist type 'q'"):
        xdap.from_global(np.zeros(8), dist=("q",), comm=comm)
    with pytest.raises(ValueError, match="data must be the same on every rank"):
        xdap.from_global(np.zeros(8 + (comm.rank == comm.size - 1)), comm=comm)
    with pytest.raises(ValueError, match="data is None"):
        xdap.from_global(None if comm.rank == 0 else np.zeros(4), root=0, comm=comm)
    with pytest.raises(TypeError, match="cannot distribute type.*variable-length string"):
        xdap.from_global([["ab"]], comm=comm)
