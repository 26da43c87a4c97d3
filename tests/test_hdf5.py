"""HDF5 in and out (xdap.from_hdf5, DistArray.to_hdf5) on 1-4 ranks: what
h5py wrote (chunked, compressed, big-endian, compound, 0-d, empty) loads
equal to h5py's own reading in every layout; what xdap writes h5py reads
back equal to the global array (optional data with its validity dataset);
a bad or different path, dataset or mode on one rank is one error on every
rank, with nothing written."""
import os
import tempfile

import h5py
import numpy as np
import pytest

import xdap
from helpers import layouts2, same_error

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(8)
G = rng.standard_normal((7, 5))


def shared_dir(comm):
    return comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)


def written_by_h5py(comm):
    """A file rank 0 writes with h5py alone, as another program would."""
    path = os.path.join(shared_dir(comm), "in.h5")
    if comm.rank == 0:
        with h5py.File(path, "w") as f:
            f.create_dataset("g", data=G, chunks=(3, 2), compression="gzip")
            f.create_dataset("big_endian", data=np.arange(9, dtype=">i4").reshape(9, 1))
            rec = np.zeros(6, dtype=[("x", "<f8"), ("n", "<i2")])
            rec["x"], rec["n"] = np.arange(6) * 0.5, np.arange(6) - 2
            f.create_dataset("/group/records", data=rec)
            f.create_dataset("scalar", data=np.float32(2.5))
            f.create_dataset("empty", data=np.zeros((0, 3)))
            f.create_dataset("strings", data=np.array([b"a", b"b"]))
    comm.Barrier()
    return path


@pytest.mark.mpi(ranks=RANKS)
def test_from_hdf5_reads_what_h5py_wrote(comm):
    path = written_by_h5py(comm)
    for kw in layouts2(comm.size):
        a = xdap.from_hdf5(path, "g", comm=comm, **kw)
        assert np.array_equal(a.to_numpy(), G), kw
        assert a.distribution == xdap.zeros(G.shape, comm=comm, **kw).distribution
    b = xdap.from_hdf5(path, "big_endian", comm=comm, dist=("c",))
    assert b.dtype == np.int32 and b.to_numpy().ravel().tolist() == list(range(9))
    r = xdap.from_hdf5(path, "/group/records", comm=comm)
    got = r.to_global().value
    assert [(v["x"], v["n"]) for v in got] == [(i * 0.5, i - 2) for i in range(6)]
    s = xdap.from_hdf5(path, "scalar", comm=comm)
    assert s.shape == () and float(s) == 2.5 and s.dtype == np.float32
    assert xdap.from_hdf5(path, "empty", comm=comm).to_numpy().shape == (0, 3)


@pytest.mark.mpi(ranks=RANKS)
def test_to_hdf5_writes_what_h5py_reads(comm):
    d = shared_dir(comm)
    for i, kw in enumerate(layouts2(comm.size)):
        path = os.path.join(d, f"out{i}.h5")
        xdap.from_global(G, comm=comm, **kw).to_hdf5(path, "/fields/g")
        xdap.from_global(np.arange(7), comm=comm, dist=("c",)).to_hdf5(path, "n")  # mode "a"
        comm.Barrier()
        with h5py.File(path, "r") as f:
            assert np.array_equal(f["/fields/g"][()], G), kw
            assert f["n"][()].tolist() == list(range(7))
        back = xdap.from_hdf5(path, "/fields/g", comm=comm, **kw)
        assert np.array_equal(back.to_numpy(), G)
    masked = np.ma.masked_less(G, 0.0)
    a = xdap.from_global(masked, comm=comm)
    assert a.parts.info.optional
    path = os.path.join(d, "optional.h5")
    a.to_hdf5(path, "m", mode="w")
    comm.Barrier()
    with h5py.File(path, "r") as f:
        assert f["m"].attrs["xdap_valid"] == "m_valid"
        assert np.array_equal(f["m_valid"][()], ~masked.mask)
        assert np.array_equal(f["m"][()], masked.filled(0.0))
    back = xdap.from_hdf5(path, "m", comm=comm, dist=("b", "c"))
    assert back.to_global().value == a.to_global().value
    xdap.from_global(np.float64(3.5), comm=comm).to_hdf5(path, "zero_d")
    comm.Barrier()
    with h5py.File(path, "r") as f:
        assert f["zero_d"][()] == 3.5


@pytest.mark.mpi(ranks=RANKS)
def test_bad_input_is_one_error_everywhere(comm):
    path = written_by_h5py(comm)
    cases = [(lambda: xdap.from_hdf5(path, "nope", comm=comm), "holds no dataset 'nope'"),
             (lambda: xdap.from_hdf5(path, "group", comm=comm), "is a group"),
             (lambda: xdap.from_hdf5(path, "strings", comm=comm), "does not read"),
             (lambda: xdap.from_hdf5(path + ".missing", "g", comm=comm), "cannot read"),
             (lambda: xdap.from_global(G, comm=comm).to_hdf5(path, "g"), "already holds 'g'"),
             (lambda: xdap.from_global([[1.0], []], type="var * var * float64",
                                       comm=comm).to_hdf5(path, "r"), "fixed-shape"),
             (lambda: xdap.from_global(G, comm=comm).to_hdf5(path, "x", mode="r"), "mode")]
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), seconds=30)
        assert words in message, (words, message)
    with h5py.File(path, "r") as f:            # nothing written by the refused calls
        assert "r" not in f and "x" not in f


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    path = written_by_h5py(comm)
    other = os.path.join(os.path.dirname(path), "other.h5")
    if comm.rank == 0:
        with h5py.File(other, "w") as f:
            f.create_dataset("g", data=G[:6])
    comm.Barrier()
    calls = [lambda: xdap.from_hdf5(_one_rank(comm, path, other), "g", comm=comm),
             lambda: xdap.from_hdf5(path, _one_rank(comm, "g", "big_endian"), comm=comm),
             lambda: xdap.from_hdf5(path, "g", comm=comm, dist=_one_rank(comm, "b", "c")),
             lambda: xdap.from_global(G, comm=comm).to_hdf5(
                 _one_rank(comm, other + "2", other + "3"), "g"),
             lambda: xdap.from_global(G, comm=comm).to_hdf5(other, _one_rank(comm, "u", "v")),
             lambda: xdap.from_global(G, comm=comm).to_hdf5(other, "w",
                                                            mode=_one_rank(comm, "a", "w"))]
    for call in calls:
        same_error(comm, call, (ValueError, TypeError), seconds=30)
    with h5py.File(other, "r") as f:
        assert sorted(f.keys()) == ["g"]


def test_parallel_hdf5_is_on_where_the_site_stack_builds_it():
    """``make test MPI=system`` builds h5py with MPI where the HDF5 of the
    MPI on PATH is installed (tools/site_stack.sh): the HDF5 tests then run
    the collective writer -- checked here, so the path is never lost to a
    silent fallback to the serial wheel."""
    import shutil
    import subprocess
    if os.environ.get("XDAP_MPI") != "system" or not shutil.which("mpicc"):
        pytest.skip("the venv on the MPICH wheel (make test): h5py is the serial wheel")
    openmpi = subprocess.run(["mpicc", "-showme:version"], capture_output=True).returncode == 0
    flavour = "hdf5-openmpi" if openmpi else "hdf5-mpich"
    if subprocess.run(["pkg-config", "--exists", flavour]).returncode:
        pytest.skip(f"no {flavour} on this machine: the site stack keeps the serial h5py")
    assert h5py.get_config().mpi, "h5py is not built with MPI in the MPI=system venv"
