"""Plain Zarr arrays in and out (xdap.from_zarr, DistArray.to_zarr) on 1-4
ranks: arrays zarr wrote (v2 and v3, compressed, chunks that do not match
the ranks, 0-d, empty) load equal to zarr's own reading in every layout;
what xdap writes zarr and xarray read back; bad or one-rank-different
arguments are one error on every rank."""
import os
import tempfile

import numpy as np
import pytest
import zarr

import xdap
from helpers import layouts2, same_error

RANKS = (1, 2, 3, 4)
G = np.random.default_rng(2).standard_normal((7, 5))


def shared_dir(comm):
    return comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)


def written_by_zarr(comm):
    d = shared_dir(comm)
    if comm.rank == 0:
        zarr.create_array(os.path.join(d, "v3.zarr"), shape=G.shape, chunks=(3, 2),
                          dtype="f8")[:] = G
        zarr.create_array(os.path.join(d, "v2.zarr"), shape=(9,), chunks=(4,), dtype="i2",
                          zarr_format=2)[:] = np.arange(9) - 4
        zarr.create_array(os.path.join(d, "scalar.zarr"), shape=(), dtype="f4")[()] = 1.5
        zarr.create_array(os.path.join(d, "empty.zarr"), shape=(0, 3), dtype="f8")
        zarr.open_group(os.path.join(d, "group.zarr"), mode="w")
    comm.Barrier()
    return d


@pytest.mark.mpi(ranks=RANKS)
def test_from_zarr_reads_what_zarr_wrote(comm):
    d = written_by_zarr(comm)
    for kw in layouts2(comm.size):
        a = xdap.from_zarr(os.path.join(d, "v3.zarr"), comm=comm, **kw)
        assert np.array_equal(a.to_numpy(), G), kw
        assert a.distribution == xdap.zeros(G.shape, comm=comm, **kw).distribution
    opened = zarr.open_array(os.path.join(d, "v3.zarr"), mode="r")    # an open array
    assert np.array_equal(xdap.from_zarr(opened, comm=comm).to_numpy(), G)
    v2 = xdap.from_zarr(os.path.join(d, "v2.zarr"), comm=comm, dist=("c",))
    assert v2.dtype == np.int16 and v2.to_numpy().tolist() == list(range(-4, 5))
    s = xdap.from_zarr(os.path.join(d, "scalar.zarr"), comm=comm)
    assert s.shape == () and float(s) == 1.5
    assert xdap.from_zarr(os.path.join(d, "empty.zarr"), comm=comm).shape == (0, 3)


@pytest.mark.mpi(ranks=RANKS)
def test_coarse_chunks_are_decoded_once_then_exchanged(comm):
    """One chunk for the whole array: one rank decodes it, the others get
    their rows by one exchange -- equal to the global array either way."""
    d = shared_dir(comm)
    path = os.path.join(d, "coarse.zarr")
    big = np.arange(12 * 3, dtype=np.float32).reshape(12, 3)
    if comm.rank == 0:
        zarr.create_array(path, shape=big.shape, chunks=big.shape, dtype="f4")[:] = big
    comm.Barrier()
    for kw in (dict(), dict(dist=("c",)), dict(dist=("b", "b"))):
        a = xdap.from_zarr(path, comm=comm, **kw)
        assert np.array_equal(a.to_numpy(), big), kw
        assert a.distribution == xdap.zeros(big.shape, comm=comm, **kw).distribution


def _plan_costs(n, rows, sizes, plain):
    """Brute force, row by row: (rows decoded in all, the slowest rank's
    rows decoded + sent + received) of reading ``sizes`` rows a rank when
    the result lies as ``plain``."""
    def blocks(counts):
        b = np.cumsum([0] + list(counts))
        return [set(range(b[r], b[r + 1])) for r in range(len(counts))]
    def chunks_of(rs):
        return {i for j in rs for i in range(j // rows * rows, min(n, j // rows * rows + rows))}
    read, want = blocks(sizes), blocks(plain)
    decoded = [len(chunks_of(rs)) for rs in read]
    busy = [decoded[r] + len(read[r] - want[r]) + len(want[r] - read[r])
            for r in range(len(sizes))]
    return sum(decoded), max(busy)


@pytest.mark.parametrize("n,rows,P", [(1000, 10, 3), (12, 12, 4), (12, 5, 4), (1000, 500, 4),
                                      (7, 3, 2), (100, 1, 4), (64, 16, 4), (10, 100, 3),
                                      (999, 250, 4), (800, 300, 4), (5000, 1200, 4)])
def test_the_read_plan_is_the_cheaper_one(n, rows, P):
    from xdap.io.zarr_arrays import chunk_aligned_sizes, read_sizes
    plain = [len(b) for b in np.array_split(np.arange(n), P)]
    aligned = chunk_aligned_sizes(n, rows, P)
    chosen = read_sizes(plain, rows, True)
    total_plain, slowest_plain = _plan_costs(n, rows, plain, plain)
    total_aligned, slowest_aligned = _plan_costs(n, rows, aligned, plain)
    # whole chunks exactly when they decode less in all and finish sooner
    assert (chosen == aligned) == (total_aligned < total_plain and
                                   slowest_aligned < slowest_plain), (chosen, plain, aligned)
    assert chosen in (None, aligned)
    assert read_sizes(plain, rows, False) == aligned     # moving anyway: whole chunks


@pytest.mark.mpi(ranks=RANKS)
def test_to_zarr_writes_what_zarr_and_xarray_read(comm):
    import xarray
    d = shared_dir(comm)
    for i, kw in enumerate(layouts2(comm.size)):
        path = os.path.join(d, f"out{i}.zarr")
        xdap.from_global(G, comm=comm, **kw).to_zarr(path, chunks=(2, 5))
        comm.Barrier()
        z = zarr.open_array(path, mode="r")
        assert np.array_equal(z[:], G) and z.chunks == (2, 5), kw
        assert np.array_equal(xdap.from_zarr(path, comm=comm, **kw).to_numpy(), G)
    path = os.path.join(d, "default.zarr")
    n = np.arange(1000, dtype=np.int32)
    xdap.from_global(n, comm=comm, dist=("c",)).to_zarr(path)
    comm.Barrier()
    assert np.array_equal(zarr.open_array(path, mode="r")[:], n)
    xdap.from_global(np.float64(2.5), comm=comm).to_zarr(os.path.join(d, "s.zarr"))
    xdap.from_global(G[:0], comm=comm).to_zarr(os.path.join(d, "e.zarr"))
    comm.Barrier()
    assert zarr.open_array(os.path.join(d, "s.zarr"), mode="r")[()] == 2.5
    assert zarr.open_array(os.path.join(d, "e.zarr"), mode="r").shape == (0, 5)
    if comm.rank == 0:                  # xarray reads it as a variable of a dataset
        g = zarr.open_group(os.path.join(d, "ds.zarr"), mode="w")
        g.attrs["title"] = "xdap"
    comm.Barrier()
    xdap.from_global(G, comm=comm).to_zarr(os.path.join(d, "ds.zarr", "g"), dims=("y", "x"))
    xdap.from_global(n, comm=comm).to_zarr(os.path.join(d, "ds.zarr", "n"))
    comm.Barrier()
    ds = xarray.open_zarr(os.path.join(d, "ds.zarr"), consolidated=False)
    assert np.array_equal(ds["g"].values, G) and ds["g"].dims == ("y", "x")
    assert np.array_equal(ds["n"].values, n) and ds["n"].dims == ("dim_0",)


@pytest.mark.mpi(ranks=RANKS)
def test_bad_input_is_one_error_everywhere(comm):
    d = written_by_zarr(comm)
    exists = os.path.join(d, "v3.zarr")
    cases = [(lambda: xdap.from_zarr(os.path.join(d, "nope.zarr"), comm=comm), "no Zarr array"),
             (lambda: xdap.from_zarr(os.path.join(d, "group.zarr"), comm=comm), "a Zarr group"),
             (lambda: xdap.from_global(G, comm=comm).to_zarr(exists), "exists"),
             (lambda: xdap.from_global(G, comm=comm).to_zarr(exists + "2", chunks=(2,)),
              "chunks must be 2 sizes"),
             (lambda: xdap.from_global(np.ma.masked_less(G, 0), comm=comm).to_zarr(
                 exists + "3", chunks=(2, 5)), "xdap's own layout")]
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), seconds=30)
        assert words in message, (words, message)
    assert np.array_equal(zarr.open_array(exists, mode="r")[:], G)    # untouched
    assert not os.path.exists(exists + "2") and not os.path.exists(exists + "3")


@pytest.mark.mpi(ranks=RANKS)
def test_ragged_optional_and_typed_data_take_xdaps_own_layout(comm):
    """No plain Zarr array keeps them: to_zarr writes xdap's layout (a group
    of values, offsets and validity arrays), from_zarr reads it back equal,
    in another layout too."""
    d = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    masked = np.ma.masked_less(G, 0.0)
    cases = [(xdap.from_global(masked, comm=comm, dist=("c", "n")), {}),
             (xdap.from_global([[1.0, None], [], [2.0, 3.0, None]],
                               type="var * var * ?float64", comm=comm), {}),
             (xdap.from_global(np.array(["ab", "c", "", "def"]), comm=comm), dict(dist=("c",)))]
    for i, (a, kw) in enumerate(cases):
        path = os.path.join(d, f"typed{i}.zarr")
        a.to_zarr(path)
        comm.Barrier()
        assert isinstance(zarr.open(path, mode="r"), zarr.Group)
        back = xdap.from_zarr(path, comm=comm, **kw)
        assert back.to_global().value == a.to_global().value, i
        assert str(back.local.type).split("* ")[-1] == str(a.local.type).split("* ")[-1]
        same_error(comm, lambda: a.to_zarr(path), ValueError, match="exists")
        a.to_zarr(path, mode="w")                        # replaced
    comm.Barrier()
    assert xdap.from_zarr(os.path.join(d, "typed0.zarr"), comm=comm).to_global().value == \
        cases[0][0].to_global().value


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    d = written_by_zarr(comm)
    calls = [lambda: xdap.from_zarr(os.path.join(d, _one_rank(comm, "v3.zarr", "v2.zarr")),
                                    comm=comm),
             lambda: xdap.from_zarr(os.path.join(d, "v3.zarr"), comm=comm,
                                    dist=_one_rank(comm, "b", "c")),
             lambda: xdap.from_global(G, comm=comm).to_zarr(
                 os.path.join(d, _one_rank(comm, "a.zarr", "b.zarr"))),
             lambda: xdap.from_global(G, comm=comm).to_zarr(
                 os.path.join(d, "c.zarr"), chunks=_one_rank(comm, (2, 5), (3, 5))),
             lambda: xdap.from_global(G, comm=comm).to_zarr(
                 os.path.join(d, "v3.zarr"), mode=_one_rank(comm, "w-", "w"))]
    for call in calls:
        same_error(comm, call, (ValueError, TypeError), seconds=30)
    for name in ("a.zarr", "b.zarr", "c.zarr"):
        assert not os.path.exists(os.path.join(d, name))
    assert np.array_equal(zarr.open_array(os.path.join(d, "v3.zarr"), mode="r")[:], G)
