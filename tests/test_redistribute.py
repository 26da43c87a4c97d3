"""Redistribution on real ranks: every pair of distribution kinds, 2-d grids
and grid-shape changes, subset communicators, ragged and optional data,
dtypes, plan reuse and collective errors.  Every result is checked against
the global NumPy array: the target's whole buffer (padding and shared copies
included) must equal the global data at its global indices."""
import importlib
import itertools

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import as_container, parts
# the modules, not the functions xdap.movement re-exports under the same names
plan_mod = importlib.import_module("xdap.movement.plan")
red_mod = importlib.import_module("xdap.movement.redistribute")

RANKS = (1, 2, 3, 4)


def unstructured(n, nprocs, seed, overlap=0):
    rng = np.random.default_rng(seed)
    chunks = np.array_split(rng.permutation(n), nprocs)
    if overlap:
        chunks = [np.unique(np.concatenate([c, chunks[(i + 1) % nprocs][:overlap]]))
                  for i, c in enumerate(chunks)]
    return [rng.permutation(c).tolist() for c in chunks]


def kinds_1d(n, nprocs, seed=0):
    sizes = np.random.default_rng(seed).multinomial(n, np.ones(nprocs) / nprocs).tolist()
    return {
        "block": dict(dist=("b",)),
        "irregular": dict(dist=("b",), sizes=(sizes,)),
        "padded": dict(dist=("b",), padding=((2, 2),)),
        "cyclic": dict(dist=("c",)),
        "block-cyclic": dict(dist=("c",), block_size=(3,)),
        "unstructured": dict(dist=("u",), indices=(unstructured(n, nprocs, seed + 1),)),
        "shared": dict(dist=("u",), indices=(unstructured(n, nprocs, seed + 2, 2),)),
    }


def reference_indices(spec, shape, rank, nprocs):
    """The global indices along each dim that ``rank`` holds under ``spec``
    (from_global's options), written out from the definitions -- NumPy's
    array_split blocks, DAP padding, block-cyclic dealing, MPI_Dims_create
    grids -- independently of xdap's maps."""
    ndim = len(shape)
    dist = tuple(spec.get("dist", ("b",))) + ("n",) * (ndim - len(spec.get("dist", ("b",))))

    def opt(name):
        v = spec.get(name)
        return (tuple(v) + (None,) * ndim)[:ndim] if v is not None else (None,) * ndim
    block_size, padding, sizes, indices = (opt(k) for k in ("block_size", "padding", "sizes",
                                                             "indices"))
    grid = spec.get("grid")
    if grid is None:
        fixed = {k: len(indices[k]) for k in range(ndim) if dist[k] == "u"}
        free = [k for k in range(ndim) if dist[k] not in ("n", "u")]
        left = nprocs // int(np.prod(list(fixed.values()) or [1]))
        grid = [fixed.get(k, 1) for k in range(ndim)]
        for k, g in zip(free, MPI.Compute_dims(left, len(free)) if free else ()):
            grid[k] = g
    grid = tuple(grid) + (1,) * (ndim - len(grid))
    coords = np.unravel_index(rank, grid)
    out = []
    for k, (n, kind, g, c) in enumerate(zip(shape, dist, grid, coords)):
        if kind in ("b", "n"):
            counts = sizes[k] if sizes[k] is not None else [len(x) for x in np.array_split(range(n), g)]
            start = int(np.sum(counts[:c]))
            stop = start + counts[c]
            lo, hi = padding[k] or (0, 0)
            out.append(np.arange(start - (lo if c > 0 else 0), stop + (hi if c < g - 1 else 0)))
        elif kind == "c":
            bs = block_size[k] or 1
            out.append(np.array([i for i in range(n) if (i // bs) % g == c], np.int64))
        else:
            out.append(np.asarray(indices[k][c], np.int64))
    return out


def expected_local(b, G, spec):
    idx = reference_indices(spec, G.shape, b.comm.rank, b.comm.size)
    return G[np.ix_(*idx)]


def check(b, G, spec):
    np.testing.assert_array_equal(np.asarray(parts(b.local).values), expected_local(b, G, spec))
    assert b.to_global().value == G.tolist()


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("method", ["auto", "datatypes", "packed"])
def test_every_pair_of_kinds_1d(comm, method):
    n = 29
    G = np.arange(n, dtype=np.float64) * 1.5
    kinds = kinds_1d(n, comm.size)
    for (ks, src), (kt, dst) in itertools.product(kinds.items(), kinds.items()):
        a = xdap.from_global(G, comm=comm, **src)
        b = a.redistribute(method=method, **dst)
        check(b, G, dst)
        np.testing.assert_array_equal(a.to_global().value, G)       # source untouched


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("method", ["datatypes", "packed"])
def test_2d_grids_and_grid_changes(comm, method):
    P = comm.size
    G = np.arange(13 * 10, dtype=np.int64).reshape(13, 10)
    grids = sorted({(P, 1), (1, P), tuple(xdap.comm.balanced_grid(P, 2))})
    specs = []
    for g in grids:
        specs += [dict(dist=("b", "b"), grid=g),
                  dict(dist=("c", "b"), grid=g, block_size=(2, None)),
                  dict(dist=("b", "c"), grid=g, padding=((1, 1) if g[0] > 1 else None, None)),
                  dict(dist=("u", "b"), grid=g, indices=(unstructured(13, g[0], 7, 1), None))]
    for src, dst in itertools.product(specs, specs):
        a = xdap.from_global(G, comm=comm, **src)
        b = a.redistribute(method=method, **dst)
        assert b.grid == dst["grid"]
        check(b, G, dst)


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_subset_communicator(comm):
    """Target on ranks 1.. of comm (reversed order); rank 0 gets None."""
    G = np.arange(11 * 6, dtype=np.float32).reshape(11, 6)
    a = xdap.from_global(G, dist=("b", "c"), grid=(1, comm.size), comm=comm)
    inside = comm.rank > 0
    for _ in range(2):      # the second round reuses the cached plans with a new sub-communicator
        sub = comm.Split(0 if inside else MPI.UNDEFINED, key=-comm.rank)
        target = sub if inside else MPI.COMM_NULL
        b = a.redistribute(dist=("c", "n"), comm=target)
        if inside:
            assert b.comm.size == comm.size - 1
            check(b, G, dict(dist=("c", "n")))
            b2 = b.redistribute(dist=("b",))             # and back within the subset
            check(b2, G, dict(dist=("b",)))
            del b, b2
            sub.Free()
        else:
            assert b is None


@pytest.mark.mpi(ranks=RANKS)
def test_target_distribution_object(comm):
    G = np.arange(24.0).reshape(4, 6)
    a = xdap.from_global(G, dist=("b", "b"), comm=comm)
    d = xdap.make_distribution((4, 6), ("n", "c"), grid=(1, comm.size), comm=comm)
    b = a.redistribute(dist=d)
    assert b.distribution == d
    check(b, G, dict(dist=("n", "c"), grid=(1, comm.size)))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("leaf", ["float64", "?int32"])
def test_ragged(comm, leaf):
    rng = np.random.default_rng(3)
    rows = []
    for i in range(17):
        row = [None if (leaf.startswith("?") and rng.random() < 0.3) else int(v)
               for v in rng.integers(0, 100, rng.integers(0, 5))]
        rows.append(row)
    typ = f"var * var * {leaf}"
    kinds = {k: v for k, v in kinds_1d(17, comm.size, 4).items()}
    for (ks, src), (kt, dst) in itertools.product(kinds.items(), kinds.items()):
        a = xdap.from_global(rows, type=typ, comm=comm, **src)
        b = a.redistribute(**dst)
        assert b.to_global().value == rows, (ks, kt)
        [mine] = reference_indices(dst, (17,), comm.rank, comm.size)
        assert b.local.value == [rows[g] for g in mine], (ks, kt)


@pytest.mark.mpi(ranks=RANKS)
def test_ragged_three_levels(comm):
    rows = [[[1, 2], []], [], [[3]], [[4, 5, 6], [7], []], [[8]]] * 3
    a = xdap.from_global(rows, type="var * var * var * int64", dist=("c",), comm=comm)
    spec = dict(dist=("b",), padding=((1, 1),) if comm.size <= 3 else None)
    b = a.redistribute(**spec)
    assert b.to_global().value == rows
    [mine] = reference_indices(spec, (len(rows),), comm.rank, comm.size)
    assert b.local.value == [rows[g] for g in mine]


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("method", ["datatypes", "packed"])
def test_optional_fixed(comm, method):
    rng = np.random.default_rng(9)
    data = np.ma.masked_array(rng.standard_normal((9, 7)), mask=rng.random((9, 7)) < 0.3)
    a = xdap.from_global(data, dist=("b", "c"), comm=comm)
    spec = dict(dist=("c", "b"), grid=(comm.size, 1))
    b = a.redistribute(method=method, **spec)
    want = [[None if m else float(v) for v, m in zip(rv, rm)]
            for rv, rm in zip(data.data, data.mask)]
    assert b.to_global().value == want
    rows, cols = reference_indices(spec, data.shape, comm.rank, comm.size)
    assert b.local.value == [[want[r][c] for c in cols] for r in rows]


DTYPES = ["bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "complex64",
          "complex128"]


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes(comm, dtype):
    rng = np.random.default_rng(2)
    raw = rng.standard_normal((10, 5)) * 50
    G = (raw > 0) if dtype == "bool" else (raw + 1j * raw if dtype.startswith("complex")
                                            else np.abs(raw)).astype(dtype)
    a = xdap.from_global(as_container(G), dist=("c", "b"), block_size=(2, None), comm=comm)
    spec = dict(dist=("b", "b"), grid=(1, comm.size))
    for method in ("datatypes", "packed"):
        b = a.redistribute(method=method, **spec)
        np.testing.assert_array_equal(np.asarray(parts(b.local).values),
                                      expected_local(b, G, spec))


@pytest.mark.mpi(ranks=RANKS)
def test_plan_reuse(comm):
    G = np.arange(40.0).reshape(8, 5)
    a = xdap.from_global(G, dist=("b",), comm=comm)
    a2 = xdap.from_global(G * 2, dist=("b",), comm=comm)
    b = a.redistribute(dist=("c",))
    ex = red_mod.executor(a.distribution, b.distribution, comm)
    plan = plan_mod.redistribution_plan(a.distribution, b.distribution)
    assert ex.sends == plan.sends(comm.rank) and ex.recvs == plan.recvs(comm.rank)
    n_cached = len(xdap.plans.pure)
    b2 = a2.redistribute(dist=("c",))
    assert len(xdap.plans.pure) == n_cached                     # nothing new was built
    assert red_mod.executor(a.distribution, b2.distribution, comm) is ex
    check(b, G, dict(dist=("c",)))
    check(b2, G * 2, dict(dist=("c",)))
    # the exchange is reusable on its own, for any dtype
    out, _ = ex.run(np.ascontiguousarray(parts(a.local).values).astype(np.int32), np.int32)
    np.testing.assert_array_equal(out, expected_local(b, G, dict(dist=("c",))).astype(np.int32))


@pytest.mark.mpi(ranks=RANKS)
def test_errors_raise_on_every_rank(comm):
    G = np.arange(12.0).reshape(3, 4)
    a = xdap.from_global(G, comm=comm)
    with pytest.raises(ValueError, match="method must be one of"):
        a.redistribute(dist=("c",), method="fast")
    with pytest.raises(ValueError, match="unknown dist type 'x'"):
        a.redistribute(dist=("x",))
    with pytest.raises(ValueError, match="positions but the communicator"):
        a.redistribute(dist=("b", "b"), grid=(comm.size + 1, 1))
    with pytest.raises(TypeError, match="unknown option"):
        a.redistribute(dist=("b",), blocksize=(2,))
    other = xdap.make_distribution((4, 3), ("b",), comm=comm)
    with pytest.raises(ValueError, match="global shape"):
        a.redistribute(dist=other)
    with pytest.raises(ValueError, match="either a Distribution"):
        a.redistribute(dist=a.distribution, grid=(comm.size, 1))
    if comm.size > 1:
        # one rank asks for something else: every rank raises
        bs = 2 if comm.rank == comm.size - 1 else 1
        with pytest.raises(ValueError, match="dist must be the same on every rank"):
            a.redistribute(dist=("c",), block_size=(bs,))
        # membership disagreement: rank 0 claims to be outside, yet is in the target comm
        with pytest.raises(ValueError, match="disagree about membership in the target"):
            a.redistribute(dist=("c",), comm=MPI.COMM_NULL if comm.rank == 0 else comm)
    r = xdap.from_global([[1.0], [2.0, 3.0]] * 4, type="var * var * float64", comm=comm)
    with pytest.raises(ValueError, match="ragged array is distributed by rows"):
        r.redistribute(dist=("b", "b"))
    # every row to rank 0: the other ranks' ragged partitions are empty
    one = r.redistribute(dist=("u",), indices=([list(range(8))] + [[]] * (comm.size - 1),))
    assert one.local.value == ([[1.0], [2.0, 3.0]] * 4 if comm.rank == 0 else [])
    assert one.to_global().value == [[1.0], [2.0, 3.0]] * 4
    with pytest.raises(ValueError, match="no rank is in the target"):
        a.redistribute(dist=("c",), comm=MPI.COMM_NULL)
    # still usable after the errors
    check(a.redistribute(dist=("c",)), G, dict(dist=("c",)))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("method", ["datatypes", "packed"])
def test_block_cyclic_runs(comm, method):
    """Long runs (block_size 8): the own share is copied run by run."""
    G = np.arange(16 * 64, dtype=np.float64).reshape(16, 64)
    a = xdap.from_global(G, dist=("b", "n"), comm=comm)
    specs = [dict(dist=("n", "c"), grid=(1, comm.size), block_size=(None, 8)),
             dict(dist=("c", "n"), block_size=(4, None)), dict(dist=("b", "n"))]
    x = a
    for spec in specs:
        x = x.redistribute(method=method, **spec)
        check(x, G, spec)
