"""__partitioned__ export and from_partitioned import on real ranks.

Reference values come from the global NumPy array each test starts from;
errors must be raised on EVERY rank (the harness fails a test if any rank
fails), usually with the bad input on one rank only.
"""
import os
import pickle
import socket

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import parts
from xdap.maps import BlockMap, CyclicMap, UnstructuredMap
from xdap.protocols.partitioned import PartitionGetter, geometry, plan_layout

RANKS = (1, 2, 3, 4)


def world():
    return MPI.COMM_WORLD


def kinds(n, P):
    rng = np.random.default_rng(5)
    sizes = rng.multinomial(n, np.ones(P) / P).tolist()
    return {
        "block": dict(dist=("b",)),
        "irregular block": dict(dist=("b",), sizes=(sizes,)),
        "padded block": dict(dist=("b",), padding=((1, 1),)),
        "cyclic": dict(dist=("c",)),
        "block-cyclic": dict(dist=("c",), block_size=(3,)),
        "2-d block x block-cyclic": dict(dist=("b", "c"), block_size=(None, 2)),
        "2-d block-cyclic x block": dict(dist=("c", "b"), block_size=(2, None)),
    }


KINDS = list(kinds(10, 1))


def where_ranks(comm):
    host = socket.gethostname()
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        ip = host
    return comm.allgather((ip, os.getpid()))


def make_global(label, n=11, m=5):
    g = np.arange(n * m, dtype=np.float64).reshape(n, m) * 1.5 - 7
    return g


def make_array(label, comm):
    """(global array, DistArray of it in the distribution ``label``)."""
    g = make_global(label)
    opts = kinds(g.shape[0], comm.size)[label]
    if label.startswith("2-d") and comm.size == 3:
        opts = dict(opts, grid=(1, 3) if label.endswith("block-cyclic") else (3, 1))
    return g, xdap.from_global(g, comm=comm, **opts)


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("label", KINDS)
def test_export_contents(label):
    comm = world()
    g, a = make_array(label, comm)
    p = a.__partitioned__
    assert p["shape"] == g.shape and p["type"] == str(a.type)
    tiling = p["partition_tiling"]
    assert set(p["partitions"]) == set(np.ndindex(*tiling))
    table = where_ranks(comm)
    covered = np.zeros(g.shape, np.int64)
    local_values = parts(a.local).values
    for pos, e in p["partitions"].items():
        start, shape = e["start"], e["shape"]
        sl = tuple(slice(s, s + n) for s, n in zip(start, shape))
        covered[sl] += 1
        assert e["location"] == [table[e["rank"]]]
        if e["rank"] == comm.rank:
            assert pos in p["locals"]
            assert np.array_equal(e["data"], g[sl])
            if e["data"].size:
                assert np.shares_memory(e["data"], local_values)
        else:
            assert e["data"] is None and pos not in p["locals"]
    assert (covered == 1).all()                      # tiles cover the owned elements once
    assert sorted(p["locals"]) == p["locals"]
    # one tile per rank for blocks, the same number on every rank for cyclic
    counts = comm.allgather(len(p["locals"]))
    if label in ("block", "irregular block", "padded block"):
        assert counts == [1] * comm.size
    else:
        assert len(set(counts)) == 1
    # get: a handle, a list of handles
    h = [p["partitions"][pos]["data"] for pos in p["locals"]]
    assert p["get"](h[0]) is h[0]
    assert all(x is y for x, y in zip(p["get"](h), h))
    # the standard pickle: the whole dict, get included
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q["get"], PartitionGetter)
    assert q["locals"] == p["locals"] and q["partition_tiling"] == tiling
    for pos in p["locals"]:
        assert np.array_equal(q["partitions"][pos]["data"], p["partitions"][pos]["data"])


def same_layout(d1, d2):
    """Every rank holds the same global indices in the same local order
    (a one-block-per-rank cyclic map IS a block map)."""
    return d1.grid == d2.grid and all(
        np.array_equal(d1.global_indices(k, r), d2.global_indices(k, r))
        for r in range(d1.comm.size) for k in range(d1.ndim))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("label", KINDS)
def test_roundtrip(label):
    comm = world()
    g, a = make_array(label, comm)
    for src in (a, a.__partitioned__, pickle.loads(pickle.dumps(a.__partitioned__))):
        b = xdap.from_partitioned(src, comm=comm)
        assert np.array_equal(np.array(b.to_global().value), g)
        if label != "padded block":                  # padding is not part of the protocol
            assert same_layout(b.distribution, a.distribution), (b.distribution, a.distribution)
        if label in ("block", "irregular block", "cyclic"):
            assert b.distribution == a.distribution
    b = xdap.from_partitioned(a, comm=comm)
    mine = a.__partitioned__["locals"]
    if len(mine) == 1 and parts(b.local).values.size:  # one tile: zero-copy
        assert np.shares_memory(parts(b.local).values, parts(a.local).values)


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "int64", "float32",
                                   "float64", "complex64", "complex128"])
def test_optional_and_ragged_roundtrip(dtype):
    comm = world()
    rng = np.random.default_rng(3)
    vals = (rng.integers(0, 2, 30) if dtype == "bool" else rng.integers(-50, 50, 30)).astype(dtype)
    mask = rng.random(30) < 0.3
    gm = np.ma.MaskedArray(vals.reshape(10, 3), mask=mask.reshape(10, 3))
    for opts in (dict(dist=("b",)), dict(dist=("c",), block_size=(2,))):
        a = xdap.from_global(gm, comm=comm, **opts)
        p = a.__partitioned__
        for pos in p["locals"]:
            e = p["partitions"][pos]
            assert isinstance(e["data"], np.ma.MaskedArray)
            sl = tuple(slice(s, s + n) for s, n in zip(e["start"], e["shape"]))
            assert np.array_equal(np.ma.getmaskarray(e["data"]), mask.reshape(10, 3)[sl])
            assert np.array_equal(e["data"].compressed(), gm[sl].compressed())
            if e["data"].size:
                assert np.shares_memory(np.ma.getdata(e["data"]), parts(a.local).values)
        b = xdap.from_partitioned(p, comm=comm)
        assert str(b.type) == str(a.type) and b.to_global().value == a.to_global().value
    # ragged rows with missing values: pyarrow ListArray tiles
    rows = [[None if m else v.item() for v, m in zip(vals[i:i + i % 4], mask[i:i + i % 4])]
            for i in range(13)]
    t = f"var * var * ?{dtype}"
    for opts in (dict(dist=("b",)), dict(dist=("c",), block_size=(2,))):
        a = xdap.from_global(rows, type=t, comm=comm, **opts)
        p = a.__partitioned__
        assert p["shape"] == (13,)
        for pos in p["locals"]:
            e = p["partitions"][pos]
            assert e["data"].to_pylist() == rows[e["start"][0]:e["start"][0] + e["shape"][0]]
        b = xdap.from_partitioned(pickle.loads(pickle.dumps(p)), comm=comm)
        assert str(b.type) == t and b.to_global().value == rows
        assert same_layout(b.distribution, a.distribution)


@pytest.mark.mpi(ranks=RANKS)
def test_unstructured_refused_on_every_rank():
    comm = world()
    idx = [list(range(r, 12, comm.size)) for r in range(comm.size)]
    a = xdap.from_global(np.arange(12.0), dist=("u",), indices=(idx,), comm=comm)
    with pytest.raises(ValueError, match=r"unstructured.*redistribute"):
        a.__partitioned__


# -- producers other than xdap ---------------------------------------------------

def spec_dict(g, bounds, owner, comm, location="ip", data=lambda x, pos: x, get=None,
              with_locals=True, extra=None):
    """A __partitioned__ dict over the global array g cut at ``bounds`` (per
    dim), tile pos held by rank owner(pos), built as another producer would."""
    table = where_ranks(comm)
    tiling = tuple(len(b) - 1 for b in bounds)
    partitions, mine = {}, []
    for pos in np.ndindex(*tiling):
        start = tuple(int(b[i]) for b, i in zip(bounds, pos))
        shape = tuple(int(b[i + 1] - b[i]) for b, i in zip(bounds, pos))
        r = owner(pos)
        sl = tuple(slice(s, s + n) for s, n in zip(start, shape))
        loc = [r] if location == "rank" else [table[r]] if location == "ip" else [("10.9.9.9", 1)]
        e = {"start": start, "shape": shape, "location": loc,
             "data": data(g[sl].copy(), pos) if r == comm.rank or not with_locals else None}
        e.update(extra or {})
        partitions[pos] = e
        if r == comm.rank:
            mine.append(pos)
    d = {"shape": g.shape, "partition_tiling": tiling, "partitions": partitions,
         "get": get or (lambda x: x)}
    if with_locals:
        d["locals"] = mine
    return d


class TorchLike:
    """Only .numpy() and a dtype attribute, as a CPU torch tensor offers."""
    def __init__(self, a):
        self._a = a
        self.dtype = f"torch.{a.dtype}"

    def numpy(self):
        return self._a


class ArrayLike:
    """Only __array__."""
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


class SingleGetter:
    """A get that refuses lists (heat passes single handles)."""
    def __call__(self, h):
        if isinstance(h, list):
            raise TypeError("one handle at a time")
        return h


@pytest.mark.mpi(ranks=RANKS)
def test_heat_style():
    comm = world()
    P = comm.size
    g = np.arange(27 * 3 * 2, dtype=np.int32).reshape(27, 3, 2)
    b0 = np.array([0] + [27 * (r + 1) // P for r in range(P)])
    bounds = [b0, np.array([0, 3]), np.array([0, 2])]
    d = spec_dict(g, bounds, lambda pos: pos[0], comm, location="rank", data=lambda x, _: TorchLike(x),
                  get=SingleGetter(), extra={"dtype": "torch.int32", "device": "cpu"})
    a = xdap.from_partitioned(d, comm=comm)
    assert np.array_equal(np.array(a.to_global().value, np.int32), g)
    assert a.distribution.maps[0] == BlockMap(27, P, bounds=b0.tolist())
    # heat's split=None: one tile, on every rank, location [last rank], locals [(0, 0, 0)]
    whole = {"shape": g.shape, "partition_tiling": (1, 1, 1),
             "partitions": {(0, 0, 0): {"start": (0, 0, 0), "shape": g.shape, "data": g,
                                        "location": [P - 1], "dtype": "torch.int32",
                                        "device": "cpu"}},
             "locals": [(0, 0, 0)], "get": lambda x: x}
    a = xdap.from_partitioned(whole, comm=comm)
    assert np.array_equal(np.array(a.to_global().value, np.int32), g)
    if comm.rank == 0:                       # duplicates: taken from the lowest rank, zero-copy
        assert np.shares_memory(parts(a.local).values, g)
    # objects with only __array__ / only the buffer protocol
    for wrap in (ArrayLike, memoryview):
        d = spec_dict(g[:, 0, 0].copy(), [b0], lambda pos: pos[0], comm, location="rank",
                      data=lambda x, _: wrap(x))
        a = xdap.from_partitioned(d, comm=comm)
        assert np.array_equal(np.array(a.to_global().value, np.int32), g[:, 0, 0])


def heat_reads(parted, comm):
    """What heat 1.8's ``ht.from_partition_dict`` does with a dict, step by
    step as its source reads it (heat itself needs torch + torchvision, a
    5 GB install here): SPMD ``locals`` of one partition, ``get`` giving a
    numpy array, at most one axis where local and global shapes differ,
    ``int(location[0])`` of every partition a rank, and heat's own chunking
    of that rank (numpy.array_split's blocks) to decide ``balanced``.
    Returns (local array, split axis, balanced)."""
    assert "locals" in parted and len(parted["locals"]) == 1
    parts_ = parted["partitions"]
    local = parted["get"](parts_[parted["locals"][0]]["data"])
    assert type(local) is np.ndarray                 # torch.from_numpy; a MaskedArray loses its mask
    diff = [g - n for g, n in zip(parted["shape"], local.shape)]
    split = [k for k, x in enumerate(diff) if x]
    assert len(split) <= 1
    split = split[0] if split else None
    balanced = True
    for x in parts_.values():
        r = int(x["location"][0])
        assert 0 <= r < comm.size
        if split is not None:
            blocks = np.array_split(np.arange(parted["shape"][split]), comm.size)
            balanced &= x["start"][split] == (blocks[r][0] if len(blocks[r]) else x["start"][split])
            balanced &= x["shape"][split] == len(blocks[r])
    return local, split, balanced


@pytest.mark.mpi(ranks=RANKS)
def test_heat_dialect_export_is_what_heat_reads():
    comm = world()
    P = comm.size
    g = np.arange(13 * 4, dtype=np.float32).reshape(13, 4)
    a = xdap.from_global(g, dist=("b", "n"), comm=comm)
    h = a.partitioned(dialect="heat")
    local, split, balanced = heat_reads(h, comm)
    lo, hi = a.distribution.maps[0].bounds[comm.rank], a.distribution.maps[0].bounds[comm.rank + 1]
    np.testing.assert_array_equal(local, g[lo:hi])
    assert np.shares_memory(local, parts(a.local).values)          # zero-copy
    assert split == (0 if P > 1 else None) and balanced
    assert [p_["location"] for p_ in h["partitions"].values()] == [[r] for r in range(P)]
    # and back: xdap reads the heat dialect as it reads heat's own exports
    b = xdap.from_partitioned(h, comm=comm)
    np.testing.assert_array_equal(np.asarray(b.to_global()), g)
    # irregular blocks are still heat's to read (balanced False)
    bounds = [0] + [13 * (r + 1) // P - (r < P - 1) * (r % 2) for r in range(P)]
    bounds[-1] = 13
    c = xdap.from_global(g, dist=("b", "n"), comm=comm).redistribute(
        dist=xdap.Distribution([BlockMap(13, P, bounds=bounds), BlockMap(4, 1)], comm))
    local, split, _ = heat_reads(c.partitioned(dialect="heat"), comm)
    np.testing.assert_array_equal(local, g[bounds[comm.rank]:bounds[comm.rank + 1]])


@pytest.mark.mpi(ranks=(2, 4))
def test_heat_dialect_refuses_what_heat_cannot_hold():
    comm = world()
    g = np.arange(24.0).reshape(6, 4)
    cases = [
        (xdap.from_global(g, dist=("c", "n"), comm=comm), "unpadded blocks"),
        (xdap.from_global(g, dist=("b", "n"), padding=((1, 1), None), comm=comm),
         "unpadded blocks"),
        (xdap.from_global(np.ma.array(g, mask=g > 20), dist=("b", "n"), comm=comm),
         "plain numeric"),
        (xdap.from_global([[1], [2, 3], [], [4]], type="var * var * int64", comm=comm),
         "plain numeric"),
    ]
    if comm.size == 4:
        cases.append((xdap.from_global(g, dist=("b", "b"), grid=(2, 2), comm=comm),
                      "heat splits one axis"))
    for arr, rule in cases:
        with pytest.raises(ValueError, match=rule):
            arr.partitioned(dialect="heat")
    with pytest.raises(ValueError, match="dialect must be one of"):
        cases[0][0].partitioned(dialect="dask")


class Ref:
    """A Ray/Dask-style handle: a key into an object store."""
    def __init__(self, key):
        self.key = key


class Store:
    """A picklable get that resolves a handle or a list of handles."""
    def __init__(self, objects):
        self.objects = objects
        self.calls = []

    def __call__(self, h):
        self.calls.append(type(h).__name__)
        if isinstance(h, list):
            return [self.objects[x.key] for x in h]
        return self.objects[h.key]


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("location", ["ip", "elsewhere"])
def test_handles_through_get(location):
    comm = world()
    P = comm.size
    g = np.arange(40.0).reshape(20, 2)
    bounds = [np.arange(0, 21, 2), np.array([0, 2])]              # 10 tiles of 2 rows
    store = Store({pos: g[2 * pos[0]:2 * pos[0] + 2] for pos in np.ndindex(10, 1)})
    owner = lambda pos: pos[0] % P                                  # round robin
    d = spec_dict(g, bounds, owner, comm, location=location, with_locals=False,
                  data=lambda x, pos: Ref(pos), get=store)
    a = xdap.from_partitioned(d, comm=comm)
    assert np.array_equal(np.array(a.to_global().value), g)
    if location == "ip":      # locations decide: round robin -> block-cyclic
        assert a.distribution.maps[0] == CyclicMap(20, P, 2)
    else:                     # nobody named: dealt out in C order, a run per rank
        runs = [i * P // 10 for i in range(10)]
        assert a.distribution.maps[0].global_indices(comm.rank).tolist() == \
            [r for i, own in enumerate(runs) if own == comm.rank for r in (2 * i, 2 * i + 1)]
    if sum(1 for i in range(10) if (owner((i,)) if location == "ip" else i * P // 10) == comm.rank) > 1:
        assert store.calls == ["list"]         # one call with the list of handles
    # with locals and handles: the same
    d = spec_dict(g, bounds, owner, comm, data=lambda x, pos: Ref(pos), get=Store(store.objects))
    a = xdap.from_partitioned(d, comm=comm)
    assert np.array_equal(np.array(a.to_global().value), g)


@pytest.mark.mpi(ranks=RANKS)
def test_irregular_assignment_is_unstructured():
    comm = world()
    P = comm.size
    g = np.arange(9.0)
    bounds = [np.array([0, 1, 4, 5, 9])]                             # irregular, 4 tiles
    owner = lambda pos: [0, 1, 1, 0][pos[0]] % P                      # not block, not cyclic
    a = xdap.from_partitioned(spec_dict(g, bounds, owner, comm), comm=comm)
    assert np.array_equal(np.array(a.to_global().value), g)
    if P > 1:
        assert isinstance(a.distribution.maps[0], UnstructuredMap)


# -- errors, on every rank --------------------------------------------------------

def block_bounds(n, P):
    return [np.array([0] + [n * (r + 1) // P for r in range(P)])]


def bad_on_last_rank(comm, d, edit):
    if comm.rank == comm.size - 1:
        edit(d)
    return d


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("case", ["overlap", "gap", "gap at end", "tiling count", "key outside",
                                  "misaligned", "locals data None", "locals unknown",
                                  "data not in locals", "dtype across ranks", "dtype key",
                                  "different tiles", "no holder", "device", "bad data"])
def test_errors_on_every_rank(case):
    comm = world()
    P = comm.size
    g = np.arange(24.0).reshape(8, 3)
    d = spec_dict(g, block_bounds(8, P) + [np.array([0, 3])], lambda pos: pos[0], comm)
    last = (P - 1, 0)
    first = d["partitions"][(0, 0)]

    def shift(k, by):
        def edit(d):
            e = d["partitions"][k]
            e["start"] = (e["start"][0] + by, 0)
        return edit

    expect = ValueError
    if case == "overlap":
        d["partitions"][(0, 0)]["shape"] = (first["shape"][0] + 1, 3)
        msg = "overlap along dimension 0" if P > 1 else "overlap along dimension 0.*past"
    elif case == "gap":
        d["partitions"][(0, 0)]["start"] = (1, 0)
        msg = "gap along dimension 0: elements \\[0, 1\\)"
    elif case == "gap at end":
        e = d["partitions"][last]
        e["shape"] = (e["shape"][0] - 1, 3)
        msg = "gap along dimension 0.*after partition"
    elif case == "tiling count":
        d["partition_tiling"] = (P + 1, 1)
        msg = "tiling mismatch.*missing"
    elif case == "key outside":
        d["partitions"][(P, 0)] = d["partitions"].pop(last)
        msg = "tiling mismatch: partition key .* outside the grid"
    elif case == "misaligned":
        g2 = np.arange(16.0).reshape(4, 4)
        d = spec_dict(g2, [np.array([0, 2, 4]), np.array([0, 2, 4])],
                      lambda pos: (pos[0] * 2 + pos[1]) % P, comm)
        d["partitions"][(1, 1)]["start"] = (2, 1)
        d["partitions"][(1, 1)]["shape"] = (2, 3)
        msg = "tiling mismatch: partition \\(1, 1\\)"
    elif case == "locals data None":
        bad_on_last_rank(comm, d, lambda d: d["partitions"][last].update(data=None))
        msg = "locals mismatch.*'data' is None"
    elif case == "locals unknown":
        bad_on_last_rank(comm, d, lambda d: d["locals"].append((P + 3, 0)))
        msg = "locals mismatch.*not a position"
    elif case == "data not in locals":
        bad_on_last_rank(comm, d, lambda d: d["locals"].remove(last))
        msg = "locals mismatch.*not in 'locals'"
    elif case == "dtype across ranks":
        bad_on_last_rank(comm, d, lambda d: d["partitions"][last].update(
            data=d["partitions"][last]["data"].astype(np.float32)))
        expect, msg = TypeError, "dtype mismatch"
        if P == 1:
            d["partition_tiling"] = (2, 1)
            d["partitions"] = {(0, 0): dict(first, shape=(4, 3), data=g[:4]),
                               (1, 0): dict(first, start=(4, 0), shape=(4, 3),
                                            data=g[4:].astype(np.float32))}
            d["locals"] = [(0, 0), (1, 0)]
    elif case == "dtype key":
        bad_on_last_rank(comm, d, lambda d: d["partitions"][last].update(dtype="torch.int64"))
        expect, msg = TypeError, "dtype mismatch.*torch.int64"
    elif case == "different tiles":
        if P == 1:
            pytest.skip("needs two ranks to disagree")
        other = spec_dict(g, [np.array([0] + [8 * (r + 1) // P + (r < P - 1) for r in range(P - 1)]
                                       + [8]), np.array([0, 3])], lambda pos: pos[0], comm)
        if comm.rank == P - 1:           # spec_dict is collective: built on every rank
            d = other
        msg = "ranks describe different partitionings"
    elif case == "no holder":
        d["partitions"][last]["data"] = None
        if comm.rank == P - 1:
            d["locals"].remove(last)
        msg = r"partition \(%d, 0\) is held by no rank" % (P - 1)
    elif case == "device":
        bad_on_last_rank(comm, d, lambda d: d["partitions"][last].update(device="cuda:0"))
        expect, msg = TypeError, "device 'cuda:0'"
    elif case == "bad data":
        bad_on_last_rank(comm, d, lambda d: d["partitions"][last].update(data=object()))
        expect, msg = TypeError, "not an array xdap can read"
    with pytest.raises(expect, match=msg):
        xdap.from_partitioned(d, comm=comm)


# -- planning, pure ---------------------------------------------------------------

def test_plan_layout_kinds():
    # block: one tile per rank, permuted owners keep their coordinates
    lay, _ = plan_layout([np.array([0, 2, 2, 7])], np.array([2, 0, 1]), 3)
    assert lay.maps[0] == BlockMap(7, 3, bounds=(0, 2, 2, 7))
    assert lay.rank_coords[:, 0].tolist() == [1, 2, 0]
    # block-cyclic with empty trailing tiles
    lay, _ = plan_layout([np.array([0, 3, 6, 7, 7])], np.array([0, 1, 0, 1]), 2)
    assert lay.maps[0] == CyclicMap(7, 2, 3)
    # idle ranks get empty blocks at the end (1-d)
    lay, _ = plan_layout([np.array([0, 5])], np.array([1]), 3)
    assert lay.maps[0] == BlockMap(5, 3, bounds=(0, 5, 5, 5))
    assert lay.rank_coords[:, 0].tolist() == [1, 0, 2]
    # 2-d: block x cyclic
    own = np.array([[0, 1, 0, 1], [2, 3, 2, 3]])
    lay, _ = plan_layout([np.array([0, 2, 4]), np.array([0, 1, 2, 3, 4])], own.ravel(), 4)
    assert lay.maps[0] == BlockMap(4, 2) and lay.maps[1] == CyclicMap(4, 2, 1)
    # not a Cartesian product of per-dim assignments
    with pytest.raises(ValueError, match="Cartesian process grid"):
        plan_layout([np.array([0, 1, 2]), np.array([0, 1, 2])], np.array([0, 1, 1, 0]), 2)


def test_geometry_reports():
    base = {"shape": (6, 2), "partition_tiling": (2, 1), "partitions": {
        (0, 0): {"start": (0, 0), "shape": (3, 2)}, (1, 0): {"start": (3, 0), "shape": (3, 2)}}}
    assert [b.tolist() for b in geometry(base).bounds] == [[0, 3, 6], [0, 2]]
    with pytest.raises(ValueError, match="missing the required key 'shape'"):
        geometry({k: v for k, v in base.items() if k != "shape"})
    with pytest.raises(TypeError, match="tuple of ints"):
        geometry(dict(base, shape=(6.0, 2)))
    ragged = {"shape": (4, None), "partition_tiling": (2, 1), "partitions": {
        (0, 0): {"start": (0, 0), "shape": (1, None)}, (1, 0): {"start": (1, 0), "shape": (3, None)}}}
    assert geometry(ragged).shape == (4,)
