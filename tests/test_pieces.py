"""The simple files (xdap.from_npy / DistArray.to_npy, xdap.from_csv) on
1-4 ranks against NumPy reading the same files whole: uneven pieces, empty
pieces and ranks, headers, lines split anywhere; bad or one-rank-different
arguments are one error on every rank."""
import os
import tempfile

import numpy as np
import pytest

import xdap
from helpers import layouts2, same_error

RANKS = (1, 2, 3, 4)
G = np.random.default_rng(6).standard_normal((7, 5))


def shared_dir(comm):
    return comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)


@pytest.mark.mpi(ranks=RANKS)
def test_npy_pieces_in_and_out(comm):
    d = shared_dir(comm)
    cuts = [0, 3, 3, 4, 7]                       # an empty piece among them
    if comm.rank == 0:
        os.makedirs(os.path.join(d, "in"))
        for k in range(4):
            np.save(os.path.join(d, "in", f"p{k}.npy"), G[cuts[k]:cuts[k + 1]])
    comm.Barrier()
    for i, kw in enumerate(layouts2(comm.size)):
        a = xdap.from_npy(os.path.join(d, "in"), comm=comm, **kw)
        assert np.array_equal(a.to_numpy(), G), kw
        out = os.path.join(d, f"out{i}")
        a.to_npy(out)
        comm.Barrier()
        names = sorted(os.listdir(out))
        assert names == [f"part-{r:05d}.npy" for r in range(comm.size)]
        whole = np.concatenate([np.load(os.path.join(out, n)) for n in names])
        assert np.array_equal(whole, G)
    files = [os.path.join(d, "in", f"p{k}.npy") for k in (3, 0)]      # a list, its order
    assert np.array_equal(xdap.from_npy(files, comm=comm).to_numpy(),
                          np.concatenate([G[4:], G[:3]]))


@pytest.mark.mpi(ranks=RANKS)
def test_csv_rows_in_blocks(comm):
    d = shared_dir(comm)
    path = os.path.join(d, "t.csv")
    data = np.round(np.random.default_rng(1).standard_normal((23, 3)), 3)
    if comm.rank == 0:
        with open(path, "w") as f:
            f.write("# x;y;z\n# units\n")
            f.write("\n".join(";".join(str(v) for v in row) for row in data) + "\n")
    comm.Barrier()
    a = xdap.from_csv(path, sep=";", header_lines=2, comm=comm)
    assert np.array_equal(a.to_numpy(), np.loadtxt(path, delimiter=";", skiprows=2))
    ints = xdap.from_csv(path, sep=";", header_lines=2, dtype=np.float32, comm=comm)
    assert ints.dtype == np.float32
    tiny = os.path.join(d, "tiny.csv")
    if comm.rank == 0:
        with open(tiny, "w") as f:
            f.write("1,2")                        # one line, no newline: most ranks get none
    comm.Barrier()
    assert xdap.from_csv(tiny, comm=comm).to_numpy().tolist() == [[1.0, 2.0]]


@pytest.mark.mpi(ranks=RANKS)
def test_bad_files_are_one_error_everywhere(comm):
    d = shared_dir(comm)
    if comm.rank == 0:
        os.makedirs(os.path.join(d, "bad"))
        np.save(os.path.join(d, "bad", "a.npy"), np.zeros((2, 3)))
        np.save(os.path.join(d, "bad", "b.npy"), np.zeros((2, 4)))
        with open(os.path.join(d, "ragged.csv"), "w") as f:
            f.write("\n".join(["1,2", "3,4", "5", "6,7", "8,9", "1,1"]) + "\n")
        with open(os.path.join(d, "words.csv"), "w") as f:
            f.write("1,2\nx,y\n")
        os.makedirs(os.path.join(d, "full"))
        np.save(os.path.join(d, "full", "part-00000.npy"), np.zeros(2))
    comm.Barrier()
    cases = [(lambda: xdap.from_npy(os.path.join(d, "bad"), comm=comm), "must agree"),
             (lambda: xdap.from_npy(os.path.join(d, "none"), comm=comm), "not a directory"),
             (lambda: xdap.from_csv(os.path.join(d, "ragged.csv"), comm=comm), "column"),
             (lambda: xdap.from_csv(os.path.join(d, "words.csv"), comm=comm), "cannot parse"),
             (lambda: xdap.from_global(G, comm=comm).to_npy(os.path.join(d, "full")),
              "already holds"),
             # a list of pieces: empty (was an internal AttributeError), or not paths
             (lambda: xdap.from_npy([], comm=comm), "list of .npy pieces is empty"),
             (lambda: xdap.from_npy([os.path.join(d, "bad", "a.npy"), 3], comm=comm),
              "each piece must be a str")]
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), seconds=30)
        assert words in message, (words, message)


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    d = shared_dir(comm)
    if comm.rank == 0:
        for name, n in (("a", 4), ("b", 5)):
            os.makedirs(os.path.join(d, name))
            np.save(os.path.join(d, name, "p.npy"), np.arange(n))
        with open(os.path.join(d, "t.csv"), "w") as f:
            f.write("1,2\n3,4\n")
    comm.Barrier()
    calls = [lambda: xdap.from_npy(os.path.join(d, _one_rank(comm, "a", "b")), comm=comm),
             lambda: xdap.from_csv(os.path.join(d, "t.csv"), sep=_one_rank(comm, ",", ";"),
                                   comm=comm),
             lambda: xdap.from_csv(os.path.join(d, "t.csv"),
                                   header_lines=_one_rank(comm, 0, 1), comm=comm),
             lambda: xdap.from_global(G, comm=comm).to_npy(
                 os.path.join(d, _one_rank(comm, "o1", "o2")))]
    for call in calls:
        same_error(comm, call, (ValueError, TypeError), seconds=30)
    assert not os.path.exists(os.path.join(d, "o1")) and not os.path.exists(os.path.join(d, "o2"))
