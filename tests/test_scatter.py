"""Gather/scatter by global index (xdap.Scatter) on real ranks: an
unstructured triangle mesh (node field assembled from cells must equal the
serial NumPy result), small cases for every combine mode and layout, errors."""
import numpy as np
import pytest

import xdap
from xdap.parts import parts
from xdap.demo import triangle_areas, triangulated_square

RANKS = (1, 2, 3, 4)


def mesh(n=45, seed=0):
    """A jittered triangulated unit square with shuffled node numbers."""
    return triangulated_square(n, seed)


def distributed_mesh(comm, shared_nodes=True):
    xy, cells = mesh()
    P = comm.size
    cx = xy[cells].mean(axis=1)[:, 0]
    strip = np.minimum((cx * P).astype(int), P - 1)       # cells by centroid x
    cell_idx = [np.flatnonzero(strip == p) for p in range(P)]
    conn = xdap.from_global(cells.tolist(), type="var * var * int64", dist=("u",),
                            indices=(cell_idx,), comm=comm)
    if shared_nodes:     # every rank holds the nodes its cells touch
        node_idx = [np.unique(cells[ci]) for ci in cell_idx]
    else:                # one owner per node: strips of node x coordinate
        s = np.minimum((xy[:, 0] * P).astype(int), P - 1)
        node_idx = [np.flatnonzero(s == p) for p in range(P)]
    return xy, cells, conn, node_idx


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("shared", [True, False])
def test_mesh_assembly_and_ghost_update(comm, shared):
    xy, cells, conn, node_idx = distributed_mesh(comm, shared)
    nnodes = len(xy)
    assert nnodes > 2000
    # this rank's cells: the connectivity rows it holds (a var * var * int64 partition)
    p = parts(conn.local)
    local_cells = p.values.reshape(-1, 3)
    assert len(local_cells) == p.nrows
    area = triangle_areas(xy, local_cells)
    field = xdap.from_global(np.zeros(nnodes), dist=("u",), indices=(node_idx,), comm=comm)
    assert field.distribution.maps[0].one_to_one is (not shared or comm.size == 1)

    needed = local_cells.ravel()
    s = xdap.Scatter(field, needed)
    s.reverse(np.repeat(area / 3, 3), into=field, mode="add")

    ref = np.bincount(cells.ravel(), weights=np.repeat(triangle_areas(xy, cells) / 3, 3),
                      minlength=nnodes)
    assert abs(ref.sum() - 1.0) < 1e-12            # the square's area
    np.testing.assert_allclose(field.to_global().value, ref, rtol=1e-12)
    # every copy of a shared node was refreshed to the owner's total
    mine = field.distribution.global_indices(0)
    np.testing.assert_allclose(parts(field.local).values, ref[mine], rtol=1e-12)

    # ghost update: a nodal function read at every cell corner, from the owners
    f = xy[:, 0] ** 2 + 3 * xy[:, 1]
    node_f = xdap.from_global(f, dist=("u",), indices=(node_idx,), comm=comm)
    if shared:           # make non-owner copies stale: forward must not read them
        owner = node_f.distribution.maps[0].owners(mine)[0]
        parts(node_f.local).values[owner != comm.rank] = -1.0
    np.testing.assert_array_equal(s.forward(node_f), f[needed])
    # reusable: a second field with the same distribution
    np.testing.assert_allclose(s.forward(field), ref[needed], rtol=1e-12)


def layouts(n, P):
    rng = np.random.default_rng(11)
    perm = rng.permutation(n)
    chunks = np.array_split(perm, P)
    shared = [np.unique(np.concatenate([c, perm[:3]])) for c in chunks]
    return {
        "block": dict(dist=("b",)),
        "block-cyclic": dict(dist=("c",), block_size=(3,)),
        "unstructured": dict(dist=("u",), indices=(chunks,)),
        "shared": dict(dist=("u",), indices=(shared,)),
        "padded": dict(dist=("b",), padding=((1, 1),)),
    }


def serial_combine(ref, allneed, vals, mode):
    ref = ref.copy()
    if mode == "add":
        for x, v in zip(allneed, vals):
            np.add.at(ref, x, v)
    elif mode == "replace":               # highest rank, last occurrence wins
        for x, v in zip(allneed, vals):
            for i, val in zip(x, v):
                ref[i] = val
    else:
        f = np.minimum if mode == "min" else np.maximum
        for x, v in zip(allneed, vals):
            f.at(ref, x, v)
    return ref


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("mode", ["add", "replace", "min", "max"])
def test_modes_every_layout(comm, mode):
    n = 23
    G = np.arange(n) * 10.0 - 50
    for label, opts in layouts(n, comm.size).items():
        a = xdap.from_global(G, comm=comm, **opts)
        need = np.random.default_rng(comm.rank).integers(0, n, 17)   # repeats included
        s = xdap.Scatter(a, need)
        np.testing.assert_array_equal(s.forward(a), G[need])
        allneed = comm.allgather(need)
        vals = [np.sin(np.arange(len(x)) + 10 * r) * 100 for r, x in enumerate(allneed)]
        s.reverse(vals[comm.rank], into=a, mode=mode)
        ref = serial_combine(G, allneed, vals, mode)
        np.testing.assert_allclose(a.to_global().value, ref, err_msg=label)
        np.testing.assert_allclose(parts(a.local).values, ref[a.distribution.global_indices(0)],
                                   err_msg=label)


@pytest.mark.mpi(ranks=RANKS)
def test_refresh_false_leaves_copies(comm):
    n = 12
    idx = [np.unique(np.concatenate([c, [0]])) for c in np.array_split(np.arange(n), comm.size)]
    a = xdap.from_global(np.zeros(n), dist=("u",), indices=(idx,), comm=comm)
    s = xdap.Scatter(a, [0])
    s.reverse(np.ones(1), into=a, mode="add", refresh=False)
    vals = parts(a.local).values
    pos0 = int(np.flatnonzero(a.distribution.global_indices(0) == 0)[0])
    assert vals[pos0] == (comm.size if comm.rank == 0 else 0.0)   # only the owner (rank 0)
    s.refresh(a)
    assert parts(a.local).values[pos0] == comm.size


@pytest.mark.mpi(ranks=RANKS)
def test_trailing_dims_and_empty_needs(comm):
    G = np.arange(30, dtype=np.int64).reshape(10, 3)
    a = xdap.from_global(G, dist=("c",), comm=comm)
    need = np.array([9, 0, 9]) if comm.rank % 2 == 0 else np.zeros(0, np.int64)
    s = xdap.Scatter(a.distribution, need)
    np.testing.assert_array_equal(s.forward(a), G[need])
    s.reverse(np.ones((len(need), 3), np.int64), into=a, mode="add")
    ref = G.copy()
    for r in range(comm.size):
        if r % 2 == 0:
            ref[9] += 2
            ref[0] += 1
    np.testing.assert_array_equal(np.array(a.to_global().value), ref)


@pytest.mark.mpi(ranks=RANKS)
def test_errors_raise_on_every_rank(comm):
    a = xdap.from_global(np.arange(8.0), comm=comm)
    bad = [5, 8] if comm.rank == comm.size - 1 else [1]
    with pytest.raises(ValueError, match="needed index 8 out of range"):
        xdap.Scatter(a, bad)
    with pytest.raises(ValueError, match="needed must be 1-d"):
        xdap.Scatter(a, [[1]])
    with pytest.raises(TypeError, match="needed must be integers"):
        xdap.Scatter(a, [1.5])
    with pytest.raises(TypeError, match="DistArray or a Distribution"):
        xdap.Scatter("a", [1])
    with pytest.raises(TypeError, match=r"DistArray or a Distribution.*\(rank 0\)"):
        xdap.Scatter(np.arange(8.0) if comm.rank == 0 else a, [1])     # one rank only
    s = xdap.Scatter(a, [1, 2])
    with pytest.raises(ValueError, match="mode must be one of"):
        s.reverse(np.ones(2), into=a, mode="mul")
    with pytest.raises(ValueError, match="values must have shape"):
        s.reverse(np.ones(3) if comm.rank == 0 else np.ones(2), into=a)
    # no silent narrowing: complex into float64, on one rank only
    with pytest.raises(TypeError, match=r"complex128 contributions into a float64 array.*\(rank 0\)"):
        s.reverse(np.ones(2) * (1 + 1j) if comm.rank == 0 else np.ones(2), into=a)
    ints = xdap.from_global(np.arange(8), comm=comm)
    with pytest.raises(TypeError, match="float64 contributions into a int64"):
        xdap.Scatter(ints, [1]).reverse(np.array([0.5]), into=ints)
    other = xdap.from_global(np.arange(8.0), dist=("c",), comm=comm)
    if comm.size > 1:
        with pytest.raises(ValueError, match="rows are distributed otherwise"):
            s.forward(other)
    # trailing dimensions move along: one plan serves (n,) and (n, 3) fields
    wide = xdap.from_global(np.arange(24.0).reshape(8, 3), comm=comm)
    np.testing.assert_array_equal(s.forward(wide), [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    r = xdap.from_global([[1.0]] * 8, type="var * var * float64", comm=comm)
    with pytest.raises(TypeError, match="fixed, non-optional"):
        xdap.Scatter(r, [0])
    if comm.size > 1:
        two = xdap.from_global(np.zeros((4, 4)), dist=("b", "b"), grid=(1, comm.size),
                               comm=comm)
        with pytest.raises(ValueError, match="only dimension 0 may be distributed"):
            xdap.Scatter(two, [0])
    # still usable
    np.testing.assert_array_equal(s.forward(a), [1.0, 2.0])


@pytest.mark.mpi(ranks=(2, 3))
def test_forward_on_equal_array_objects_that_differ_between_ranks(comm):
    # rank 0 passes the plan's own array, the others an equal copy (another
    # Distribution object): every rank must take the same path (it used to
    # be a collective check on some ranks only -- a hang)
    a = xdap.from_global(np.arange(12.0) * 10, dist=("c",), comm=comm)
    s = xdap.Scatter(a, [11, 0, 5])
    b = xdap.from_global(np.arange(12.0) * 10, dist=("c",), comm=comm)
    np.testing.assert_array_equal(s.forward(a if comm.rank == 0 else b), [110.0, 0.0, 50.0])
    s.reverse(np.ones(3), into=a if comm.rank == 0 else b, mode="add")


@pytest.mark.mpi(ranks=RANKS)
def test_forward_into_kept_buffer(comm):
    # a repeated ghost update into one buffer: in needed's order whatever the
    # owners' order, through fields of two dtypes and a trailing dim, and a
    # wrong `out` on one rank is the same error on every rank
    rng = np.random.default_rng(comm.rank)
    G = np.arange(40.0) * 3
    a = xdap.from_global(G, dist=("c",), comm=comm)
    orders = {"ascending distinct": np.arange(comm.rank, 40, 3),
              "shuffled with repeats": rng.integers(0, 40, 25)}
    for what, need in orders.items():
        s = xdap.Scatter(a, need)
        out = np.full(len(need), -1.0)
        for step in range(3):
            a.local_numpy()[...] += step          # new values each update
            G = G + step
            got = s.forward(a, out=out)
            assert got is out, what
            np.testing.assert_array_equal(out, G[need], err_msg=what)
        ints = xdap.from_global(np.arange(40, dtype=np.int32), dist=("c",), comm=comm)
        np.testing.assert_array_equal(s.forward(ints, out=np.empty(len(need), np.int32)),
                                      need.astype(np.int32))
        np.testing.assert_array_equal(s.forward(a), G[need])      # a new array still
    s = xdap.Scatter(a, [3, 1])
    wrong = np.empty(3) if comm.rank == comm.size - 1 else np.empty(2)
    with pytest.raises(ValueError, match=r"out must be a float64 array of shape \(2,\).*rank"):
        s.forward(a, out=wrong)
    with pytest.raises(ValueError, match="out must be"):
        s.forward(a, out=np.empty(2, np.float32))
    with pytest.raises(ValueError, match="C-contiguous and writable"):
        s.forward(a, out=np.empty(4)[::2])
    np.testing.assert_array_equal(s.forward(a, out=np.empty(2)), G[[3, 1]])
