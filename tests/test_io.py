"""Save / load on real ranks: every distribution kind x every type family,
save on N ranks / load on M, other distributions, corruption, truncation,
validation, and crash safety with writers killed by SIGKILL.

References are computed independently with NumPy from the global data;
``check_local`` compares every position of a loaded buffer (padding
included) with the global data at that position's global index.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

from xdap.launcher import clean_environment, mpiexec_command

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import as_container, parts
from xdap.io.store_writer import finish_cleanup

from helpers import DTYPES, balanced_indices, kinds, sample

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RANKS = (1, 2, 3, 4)


# -- data and references ------------------------------------------------------

def fixed_data(dtype, shape, optional, seed=0):
    """A global numpy array (masked when optional)."""
    rng = np.random.default_rng(seed)
    values = sample(dtype, int(np.prod(shape)), rng).reshape(shape)
    if optional:
        return np.ma.array(values, mask=rng.random(shape) < 0.3)
    return values


def ragged_data(dtype, nrows, var_ndim, optional, seed=0):
    """Nested lists with empty rows, None for missing values."""
    rng = np.random.default_rng(seed)

    def level(depth):
        n = int(rng.integers(0, 4))
        if depth == var_ndim - 1:
            vals = sample(dtype, n, rng).tolist()
            return [None if optional and rng.random() < 0.3 else v for v in vals]
        return [level(depth + 1) for _ in range(n)]
    return [level(1) for _ in range(nrows)]


def ragged_type(dtype, var_ndim, optional):
    return "var * " * var_ndim + ("?" if optional else "") + dtype


def reference(data, type_str=None):
    """The global data as (values, mask or None) numpy arrays (fixed) or an
    xnd value (ragged)."""
    if type_str is not None:
        return as_container(data, type=type_str).value
    if isinstance(data, np.ma.MaskedArray):
        return data.data, ~np.ma.getmaskarray(data)
    return data, None


def check_local(b, ref):
    """Every buffer position of b (padding included) holds the global value."""
    d = b.distribution
    gidx = [d.global_indices(k) for k in range(d.ndim)]
    if b.info.ragged:
        want = [ref[i] for i in gidx[0]]
        assert b.local.value == want
        return
    values, mask = ref
    p = parts(b.local)
    got_mask = p.valid_mask()
    ix = np.ix_(*gidx)
    if mask is None:
        np.testing.assert_array_equal(p.values, values[ix])
        assert got_mask is None
    else:
        np.testing.assert_array_equal(got_mask, mask[ix])
        np.testing.assert_array_equal(p.values[got_mask], values[ix][got_mask])


def check_global(b, ref):
    g = b.to_global()
    if b.info.ragged:
        assert g.value == ref
        return
    values, mask = ref
    p = parts(g)
    if mask is None:
        np.testing.assert_array_equal(p.values, values)
    else:
        np.testing.assert_array_equal(p.valid_mask(), mask)
        np.testing.assert_array_equal(p.values[mask], values[mask])


# -- a directory every rank sees ------------------------------------------------

class SharedDir:
    """A fresh temp dir made by rank 0 of ``comm``, removed on exit."""

    def __init__(self, comm):
        self.comm = comm

    def __enter__(self):
        path = tempfile.mkdtemp(prefix="xdap-io-test-") if self.comm.rank == 0 else None
        self.path = self.comm.bcast(path, root=0)
        return self.path

    def __exit__(self, *exc):
        self.comm.Barrier()
        if self.comm.rank == 0:
            shutil.rmtree(self.path, ignore_errors=True)


def expect_error(comm, fn, *fragments, cls=ValueError):
    """fn() must raise cls on this rank (so on every rank), its message
    containing every fragment."""
    with pytest.raises(cls) as e:
        fn()
    for f in fragments:
        assert f in str(e.value), (f, str(e.value))
    return str(e.value)


# -- round trips ---------------------------------------------------------------

@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("optional", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fixed_roundtrip_every_dtype_every_kind(comm, dtype, optional):
    n = 23
    data = fixed_data(dtype, (n, 3), optional)
    ref = reference(data)
    with SharedDir(comm) as tmp:
        for label, opts in kinds(n, comm.size, np.random.default_rng(1)):
            a = xdap.from_global(data, comm=comm, **opts)
            path = os.path.join(tmp, "a")
            a.save(path)                                  # the second kind overwrites the first
            b = xdap.load(path, comm=comm)
            assert b.distribution == a.distribution, label
            assert str(b.type) == str(a.type)
            check_local(b, ref)
            check_global(b, ref)


@pytest.mark.mpi(ranks=RANKS)
def test_fixed_2d_grids(comm):
    data = fixed_data("float64", (9, 7), True, seed=3)
    ref = reference(data)
    grids = {1: (1, 1), 2: (2, 1), 3: (1, 3), 4: (2, 2)}
    rng = np.random.default_rng(5)
    with SharedDir(comm) as tmp:
        for opts in [dict(dist=("b", "c")), dict(dist=("c", "b"), block_size=(2, None)),
                     dict(dist=("b", "b"), padding=((1, 1), (1, 1)), periodic=(True, False)),
                     dict(dist=("u", "c"), indices=(balanced_indices(9, grids[comm.size][0], rng, 1),
                                                    None), block_size=(None, 2))]:
            a = xdap.from_global(data, comm=comm, grid=grids[comm.size], **opts)
            a.save(os.path.join(tmp, "a"))
            b = xdap.load(os.path.join(tmp, "a"), comm=comm)
            assert b.distribution == a.distribution
            check_local(b, ref)
            check_global(b, ref)


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("var_ndim", [2, 3])
@pytest.mark.parametrize("optional", [False, True])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float64", "complex128"])
def test_ragged_roundtrip_every_kind(comm, dtype, optional, var_ndim):
    n = 17
    t = ragged_type(dtype, var_ndim, optional)
    data = ragged_data(dtype, n, var_ndim, optional, seed=var_ndim)
    ref = reference(data, t)
    with SharedDir(comm) as tmp:
        for label, opts in kinds(n, comm.size, np.random.default_rng(1)):
            a = xdap.from_global(data, type=t, comm=comm, **opts)
            path = os.path.join(tmp, "r")
            a.save(path)
            b = xdap.load(path, comm=comm)
            assert b.distribution == a.distribution, label
            assert str(b.type) == t
            check_local(b, ref)
            check_global(b, ref)


@pytest.mark.mpi(ranks=RANKS)
def test_rank_placement_and_empty_parts_survive(comm):
    """A DAP import with a non-C-order rank placement, and ranks holding nothing."""
    n = 2                                     # fewer rows than ranks on 3-4 ranks
    data = fixed_data("int32", (n, 2), False)
    with SharedDir(comm) as tmp:
        a = xdap.from_global(data, comm=comm)
        a.save(os.path.join(tmp, "a"))
        b = xdap.load(os.path.join(tmp, "a"), comm=comm)
        check_local(b, reference(data))
        two = sub(comm, 2)
        if two is not None:
            xdap.from_global([[1], [2, 3]], type="var * var * int64", comm=two,
                             dist=("c",)).save(os.path.join(tmp, "r"))
            two.Free()
        comm.Barrier()
        # xnd dev3 has no ragged container of zero rows: a clear error, on every rank
        if comm.size > 2:
            expect_error(comm, lambda: xdap.load(os.path.join(tmp, "r"), comm=comm),
                         "zero rows")
        else:
            check_global(xdap.load(os.path.join(tmp, "r"), comm=comm), [[1], [2, 3]])
        if comm.size > 1:
            # reversed placement: rank r sits at grid position size-1-r
            m = xdap.from_global(np.arange(8.0), comm=comm).distribution.maps[0]
            pos = comm.size - 1 - comm.rank
            local = np.arange(8.0)[slice(*m.owned_range(pos))]
            dd = m.to_dim_dict(pos)
            c = xdap.from_distarray({"__version__": "0.10.0", "buffer": local, "dim_data": (dd,)},
                                    comm=comm)
            assert c.distribution.coords == (pos,)
            c.save(os.path.join(tmp, "c"))
            back = xdap.load(os.path.join(tmp, "c"), comm=comm)
            assert back.distribution == c.distribution
            np.testing.assert_array_equal(np.asarray(back.local), local)


# -- save on N ranks, load on M ------------------------------------------------

def sub(comm, k):
    """A communicator of the first k ranks (None on the others); collective."""
    s = comm.Split(0 if comm.rank < k else MPI.UNDEFINED, comm.rank)
    return None if s == MPI.COMM_NULL else s


@pytest.mark.mpi(ranks=RANKS)
def test_save_on_n_load_on_m(comm):
    """Every (save ranks, load ranks) pair up to this launch's size."""
    fixed = fixed_data("complex64", (11, 5), True, seed=7)
    t = ragged_type("float32", 3, True)
    ragged = ragged_data("float32", 13, 3, True, seed=8)
    cases = [(fixed, None, [dict(dist=("b", "c")), dict(dist=("c",), block_size=(2,)),
                            dict(dist=("b",), padding=((1, 1),))]),
             (ragged, t, [dict(dist=("b",)), dict(dist=("c",), block_size=(2,)),
                          dict(dist=("b",), padding=((2, 2),))])]
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "nm")
        for data, type_str, option_list in cases:
            ref = reference(data, type_str)
            for opts in option_list:
                for k in range(1, comm.size + 1):
                    saver = sub(comm, k)
                    if saver is not None:
                        kw = {} if type_str is None else {"type": type_str}
                        a = xdap.from_global(data, comm=saver, **kw, **opts)
                        a.save(path)
                        saver.Free()
                    comm.Barrier()
                    for m in range(1, comm.size + 1):
                        loader = sub(comm, m)
                        if loader is not None:
                            b = xdap.load(path, comm=loader)
                            assert b.comm.size == m
                            check_local(b, ref)
                            check_global(b, ref)
                            if m != k:      # default: dim 0 keeps its kind, even from 1 rank
                                cyclic = opts["dist"][0] == "c"
                                assert type(b.distribution.maps[0]).__name__ == \
                                    ("CyclicMap" if cyclic else "BlockMap")
                                if cyclic:
                                    assert b.distribution.maps[0].block_size == 2
                            loader.Free()
                        comm.Barrier()


@pytest.mark.mpi(ranks=RANKS)
def test_load_with_another_distribution(comm):
    data = fixed_data("float64", (10, 6), True, seed=11)
    ref = reference(data)
    t = ragged_type("int16", 2, True)
    ragged = ragged_data("int16", 15, 2, True, seed=12)
    rng = np.random.default_rng(13)
    with SharedDir(comm) as tmp:
        xdap.from_global(data, comm=comm, dist=("c", "b")).save(os.path.join(tmp, "f"))
        for opts in [dict(dist=("b",)), dict(dist=("n", "c"), block_size=(None, 4)),
                     dict(dist=("b", "b"), padding=((1, 1), (2, 2)), periodic=(True, True)),
                     dict(dist=("u",), indices=(balanced_indices(10, comm.size, rng, 3),))]:
            b = xdap.load(os.path.join(tmp, "f"), comm=comm, **opts)
            want = xdap.from_global(data, comm=comm, **opts).distribution
            assert b.distribution == want
            check_local(b, ref)
        xdap.from_global(ragged, type=t, comm=comm, dist=("c",), block_size=(2,)).save(
            os.path.join(tmp, "r"))
        for opts in [dict(dist=("b",), padding=((1, 1),)),
                     dict(dist=("u",), indices=(balanced_indices(15, comm.size, rng, 2),))]:
            b = xdap.load(os.path.join(tmp, "r"), comm=comm, **opts)
            check_local(b, reference(ragged, t))
            check_global(b, reference(ragged, t))


# -- corruption, truncation, validation ----------------------------------------

def piece_name(path, rank=0, suffix=".values.npy"):
    with open(os.path.join(path, "manifest.json")) as f:
        body = json.load(f)["xdap_save"]
    return os.path.join(path, f"{body['generation']}.piece{rank}{suffix}")


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("family", ["fixed", "optional", "ragged"])
def test_corrupt_and_truncated_files(comm, family):
    n = 40
    if family == "ragged":
        t = ragged_type("float64", 2, True)
        a = xdap.from_global(ragged_data("float64", n, 2, True), type=t, comm=comm)
        suffix = ".arrow"
    else:
        a = xdap.from_global(fixed_data("int64", (n, 4), family == "optional"), comm=comm)
        suffix = ".validity.npy" if family == "optional" else ".values.npy"
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        a.save(path)
        victim = piece_name(path, comm.size - 1, suffix)
        original = open(victim, "rb").read() if comm.rank == 0 else None
        base = os.path.basename(victim)

        def damage(fn):
            comm.Barrier()
            if comm.rank == 0:
                fn()
            comm.Barrier()

        def flip():
            data = bytearray(original)
            data[len(data) // 2 + 3] ^= 0x10
            open(victim, "wb").write(bytes(data))
        damage(flip)
        expect_error(comm, lambda: xdap.load(path, comm=comm), base, "corrupt", "CRC-32")
        damage(lambda: open(victim, "wb").write(original[:len(original) - 5]))
        expect_error(comm, lambda: xdap.load(path, comm=comm), base, "truncated")
        damage(lambda: os.remove(victim))
        expect_error(comm, lambda: xdap.load(path, comm=comm), base, "missing")
        damage(lambda: open(victim, "wb").write(original))
        check_global(xdap.load(path, comm=comm), reference(a.to_global().value, t)
                     if family == "ragged" else _fixed_ref(a))
        # the manifest itself: a flipped digit that still parses
        man = os.path.join(path, "manifest.json")
        text = open(man).read() if comm.rank == 0 else None

        def edit_manifest():
            open(man, "w").write(text.replace('"bytes": ', '"bytes": 1', 1))
        damage(edit_manifest)
        expect_error(comm, lambda: xdap.load(path, comm=comm), "manifest.json is corrupt")
        damage(lambda: open(man, "w").write(text[:50]))
        expect_error(comm, lambda: xdap.load(path, comm=comm), "not valid JSON")


def _fixed_ref(a):
    p = parts(a.to_global())
    return p.values, p.valid_mask()


@pytest.mark.mpi(ranks=RANKS)
def test_validation_errors(comm):
    with SharedDir(comm) as tmp:
        expect_error(comm, lambda: xdap.load(os.path.join(tmp, "nothing"), comm=comm),
                     "does not exist")
        expect_error(comm, lambda: xdap.load(tmp, comm=comm), "not an xdap save",
                     "no manifest.json")
        stranger = os.path.join(tmp, "stranger.txt")
        if comm.rank == 0:
            open(stranger, "w").write("mine")
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(stranger, comm=comm), "not a directory")
        a = xdap.from_global(fixed_data("float32", (6, 4), False), comm=comm)
        expect_error(comm, lambda: a.save(stranger), "not a directory", "refusing")
        expect_error(comm, lambda: a.save(tmp), "not part of an xdap save", "stranger.txt")
        expect_error(comm, lambda: a.save(os.path.join(tmp, "no", "such")), "parent directory")
        expect_error(comm, lambda: a.save(os.path.join(tmp, f"r{comm.rank}")),
                     "different paths") if comm.size > 1 else None
        expect_error(comm, lambda: a.save(3.5), "path must be", cls=TypeError)
        path = os.path.join(tmp, "a")
        a.save(path)
        expect_error(comm, lambda: xdap.load(path, comm=comm, dist=("b", "b", "b")),
                     "dist needs one entry per dimension")
        expect_error(comm, lambda: xdap.load(path, comm=comm, dist=("b",), grid=(comm.size + 1,)),
                     "grid")
        expect_error(comm, lambda: xdap.load(path, comm=comm, dist=("q",)), "unknown dist type")
        r = xdap.from_global([[1.0], [], [2.0], [3.0, 4.0]], type="var * var * float64", comm=comm)
        r.save(os.path.join(tmp, "r"))
        expect_error(comm, lambda: xdap.load(os.path.join(tmp, "r"), comm=comm, dist=("b", "b")),
                     "ragged data is distributed by rows")
        # version mismatch: a well-formed manifest of a future format
        man = os.path.join(path, "manifest.json")
        if comm.rank == 0:
            body = json.load(open(man))["xdap_save"]
            body["version"] = 99
            canon = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
            json.dump({"xdap_save": body, "crc32": zlib.crc32(canon)}, open(man, "w"))
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(path, comm=comm), "format version 99")
        expect_error(comm, lambda: a.save(path), "refusing to overwrite", "version 99")


@pytest.mark.mpi(ranks=(2,))
def test_files_are_plain_numpy_and_arrow(comm):
    """Another tool rebuilds the global array from the manifest and the
    pieces with numpy.load / pyarrow alone, following docs/exchange.md."""
    import pyarrow as pa
    data = fixed_data("complex128", (7, 3), True, seed=4)
    t = ragged_type("bool", 2, True)
    ragged = ragged_data("bool", 9, 2, True, seed=5)
    with SharedDir(comm) as tmp:
        xdap.from_global(data, comm=comm, dist=("c",)).save(os.path.join(tmp, "f"))
        xdap.from_global(ragged, type=t, comm=comm, dist=("c",)).save(os.path.join(tmp, "r"))
        if comm.rank == 0:
            body = json.load(open(os.path.join(tmp, "f", "manifest.json")))["xdap_save"]
            assert body["type"] == "7 * 3 * ?complex128"
            values = np.zeros((7, 3), complex)
            valid = np.zeros((7, 3), bool)
            m = body["distribution"]["maps"][0]
            for piece in body["pieces"]:
                p = piece["coords"][0]
                rows = np.arange(7)[np.arange(7) % m["grid_size"] == p]       # cyclic rule
                v = np.load(os.path.join(tmp, "f", piece["files"]["values"]["name"]),
                            mmap_mode="r")
                bits = np.load(os.path.join(tmp, "f", piece["files"]["validity"]["name"]))
                values[rows] = v
                valid[rows] = np.unpackbits(bits, count=v.size, bitorder="little").reshape(v.shape)
            np.testing.assert_array_equal(valid, ~data.mask)
            np.testing.assert_array_equal(values[valid], data.data[valid])
            body = json.load(open(os.path.join(tmp, "r", "manifest.json")))["xdap_save"]
            rows = [None] * 9
            for piece in body["pieces"]:
                table = pa.ipc.open_file(os.path.join(tmp, "r", piece["files"]["values"]["name"]))
                got = table.read_all().column("data").to_pylist()
                for i, g in enumerate(range(piece["coords"][0], 9, 2)):
                    rows[g] = got[i]
            assert rows == ragged


# -- crash safety: writers killed by SIGKILL ------------------------------------

WRITER = r"""
import sys
sys.path.insert(0, {here!r})
from mpi4py import MPI
import xdap, test_io
path, seed, loops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(loops):
    s = seed + (i % 2)
    xdap.from_global(test_io.crash_data(s), comm=MPI.COMM_WORLD, dist=("b", "c")).save(path)
"""


def crash_data(seed):
    return fixed_data("float64", (64, 2048), True, seed=seed)    # 1 MiB of values


def child_env(**extra):
    return clean_environment(**extra)


def start_writer(path, seed, ranks, loops=1, **env):
    cmd = mpiexec_command(ranks) + [sys.executable, "-c",
           WRITER.format(here=HERE), path, str(seed), str(loops)]
    return subprocess.Popen(cmd, env=child_env(**env), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def assert_holds(path, seed):
    b = xdap.load(path, comm=MPI.COMM_SELF)
    check_global(b, reference(crash_data(seed)))


@pytest.mark.parametrize("point", ["data", "before-switch", "after-switch"])
def test_killed_writer_leaves_a_whole_save(point):
    """SIGKILL a 2-rank writer paused at a crash point: the previous save
    loads exactly (or, after the switch, the new one), and the next save
    cleans up the leftovers."""
    tmp = tempfile.mkdtemp(prefix="xdap-io-crash-")
    try:
        path = os.path.join(tmp, "a")
        xdap.from_global(crash_data(1), comm=MPI.COMM_SELF).save(path)
        flag = os.path.join(tmp, "flag")
        proc = start_writer(path, 2, 2, XDAP_IO_CRASH_AT=point, XDAP_IO_CRASH_FLAG=flag)
        deadline = time.time() + 60
        while not os.path.exists(flag):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.time() < deadline, "writer never reached the crash point"
            time.sleep(0.05)
        time.sleep(0.2)                       # let the other rank get there too
        kill(proc)
        assert_holds(path, 2 if point == "after-switch" else 1)
        names = os.listdir(path)
        if point != "after-switch":           # the killed writer did leave new files behind
            assert any(n.startswith("g000002.piece") for n in names), names
        xdap.from_global(crash_data(3), comm=MPI.COMM_SELF).save(path)
        finish_cleanup()
        assert_holds(path, 3)
        after = os.listdir(path)
        assert len(after) < len(names) or point != "data"       # leftovers removed
        gens = {n.split(".")[0] for n in after if n != "manifest.json"}
        assert len(gens) == 1, after
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_writer_killed_at_random_times():
    """Kill a writer that saves two datasets in turn at random moments: every
    time, what loads is exactly one of them."""
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="xdap-io-crash-")
    try:
        path = os.path.join(tmp, "a")
        xdap.from_global(crash_data(10), comm=MPI.COMM_SELF).save(path)
        seen = set()
        for _ in range(4):
            proc = start_writer(path, 10, 2, loops=1000)
            time.sleep(1.0 + 2.0 * rng.random())
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            kill(proc)
            b = xdap.load(path, comm=MPI.COMM_SELF)
            values = parts(b.to_global()).values
            for s in (10, 11):
                ref = reference(crash_data(s))
                if np.array_equal(parts(b.to_global()).valid_mask(), ref[1]):
                    check_global(b, ref)
                    seen.add(s)
                    break
            else:
                raise AssertionError(f"loaded data is neither save: {values[:2, :4]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.mpi(ranks=RANKS)
def test_same_distribution_load_maps_the_piece_copy_on_write(comm):
    """Loaded onto the saved distribution, a fixed buffer is the piece file
    mapped copy-on-write: writable, and writing never reaches the file."""
    data = fixed_data("float64", (12, 5), False, seed=21)
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(data, comm=comm, dist=("b",)).save(path)
        b = xdap.load(path, comm=comm)
        values = parts(b.local).values
        assert values.flags.writeable
        if os.path.exists("/proc/self/maps"):        # the piece file is mapped here
            mine = os.path.basename(piece_name(path, comm.rank))
            assert mine in open("/proc/self/maps").read()
        values[...] = -1.0                       # copy-on-write: the file keeps the data
        comm.Barrier()
        c = xdap.load(path, comm=comm)
        check_local(c, reference(data))
        assert (np.asarray(parts(b.local).values) == -1.0).all()


def test_complex_ragged_piece_of_plain_pairs_loads():
    """Ragged complex pieces hold the ``xdap.complex128`` extension type;
    a piece of plain ``fixed_size_list<double>[2]`` (real, imag) leaves --
    what other Arrow writers produce, and xdap wrote before -- loads too."""
    import pyarrow as pa
    t = ragged_type("complex128", 3, True)
    data = ragged_data("complex128", 6, 3, True, seed=31)
    tmp = tempfile.mkdtemp(prefix="xdap-io-test-")
    try:
        path = os.path.join(tmp, "r")
        xdap.from_global(data, type=t, comm=MPI.COMM_SELF).save(path)
        victim = piece_name(path, 0, ".arrow")
        field = pa.ipc.open_file(victim).schema.field("data")
        assert field.type.value_type.value_type.extension_name == "xdap.complex128"

        def pairs(x):
            return [pairs(y) for y in x] if isinstance(x, list) else \
                None if x is None else [x.real, x.imag]
        plain = pa.array(pairs(data), pa.list_(pa.list_(pa.list_(pa.float64(), 2))))
        schema = pa.schema([pa.field("data", plain.type, nullable=False)])
        with pa.ipc.new_file(victim, schema) as w:
            w.write_batch(pa.record_batch([plain], schema=schema))
        raw = open(victim, "rb").read()
        man = os.path.join(path, "manifest.json")
        body = json.load(open(man))["xdap_save"]
        body["pieces"][0]["files"]["values"].update(bytes=len(raw), crc32=zlib.crc32(raw))
        canon = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        json.dump({"xdap_save": body, "crc32": zlib.crc32(canon)}, open(man, "w"))
        check_global(xdap.load(path, comm=MPI.COMM_SELF), reference(data, t))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.mpi(ranks=RANKS)
def test_bad_path_on_one_rank_raises_everywhere(comm):
    """A path rejected on one rank only (a TypeError there) raises on every
    rank; it used to leave the others in the path gather (a hang)."""
    a = xdap.from_global(np.arange(8.0), comm=comm)
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        bad = path if comm.rank < comm.size - 1 else 3.5
        expect_error(comm, lambda: a.save(bad), "path must be", cls=TypeError)
        a.save(path)
        expect_error(comm, lambda: xdap.load(bad, comm=comm), "path must be", cls=TypeError)
        if comm.size > 1:
            other = path if comm.rank else os.path.join(tmp, "b")
            expect_error(comm, lambda: xdap.load(other, comm=comm), "different paths")


@pytest.mark.mpi(ranks=RANKS)
def test_load_while_another_process_saves(comm, monkeypatch):
    """Another process saves to the path between this load's reading of the
    manifest and of the pieces, and deletes the files the manifest named:
    the load starts over and returns the new save (it used to fail with
    'file ... is missing')."""
    import xdap.io.reader as reader
    old, new = fixed_data("float64", (10, 3), True, seed=41), fixed_data("float64", (10, 3), True, seed=42)
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(old, comm=comm, dist=("c",)).save(path)
        read_manifest, calls = reader._read_manifest, []

        def read_then_replace(p):
            body = read_manifest(p)
            if not calls:                     # the concurrent save (a separate job)
                xdap.from_global(new, comm=MPI.COMM_SELF).save(path)
                finish_cleanup()              # the generation just read is gone now
            calls.append(p)
            return body
        monkeypatch.setattr(reader, "_read_manifest", read_then_replace)
        b = xdap.load(path, comm=comm, dist=("b",))
        check_local(b, reference(new))
        assert len(calls) == (2 if comm.rank == 0 else 0)


@pytest.mark.mpi(ranks=RANKS)
def test_out_of_memory_on_one_rank_raises_everywhere(comm, monkeypatch):
    """The last rank fails to allocate while reading or writing its piece:
    every rank raises ValueError naming the MemoryError and that rank. It used
    to escape on that rank alone and leave the others waiting in the
    agreement. The failure is injected into that rank's piece reader/writer
    (capping the address space instead made MPI's own allocations fail at
    random places)."""
    from xdap.io import reader, writer

    def out_of_memory(*args, **kwargs):
        raise MemoryError("cannot allocate 64 MiB")

    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        data = np.arange(64 * 40.0).reshape(64, 40)
        a = xdap.from_global(data, comm=comm, dist=("b", "b"), grid=(1, comm.size),
                             padding=((0, 0), (1, 1)))
        a.save(path)
        if comm.rank == comm.size - 1:
            monkeypatch.setattr(reader, "_read_fixed", out_of_memory)
            monkeypatch.setattr(writer, "_write_piece", out_of_memory)
        msg = expect_error(comm, lambda: xdap.load(path, comm=comm, dist=("c",)),
                           f"(rank {comm.size - 1})")
        assert "MemoryError" in msg and "cannot allocate" in msg, msg
        msg = expect_error(comm, lambda: a.save(path), "MemoryError", f"(rank {comm.size - 1})")
        monkeypatch.undo()
        check_global(xdap.load(path, comm=comm), reference(data))   # the first save is intact


def test_save_loop_keeps_no_finished_cleanup_threads():
    """Each save hands its deletions to a thread; a checkpoint loop of many
    saves used to keep every finished thread object forever."""
    import xdap.io.writer as writer
    tmp = tempfile.mkdtemp(prefix="xdap-io-test-")
    try:
        path = os.path.join(tmp, "a")
        a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
        for _ in range(12):
            a.save(path)
            for t in list(writer._cleanups):
                t.join()                      # done, but still listed
        assert len(writer._cleanups) <= 1, len(writer._cleanups)
        finish_cleanup()
        assert sorted(os.listdir(path))[:-1] == [piece_name(path)[len(path) + 1:]]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.mpi(ranks=(2, 3))
def test_load_with_a_different_dist_on_one_rank_is_refused_everywhere(comm):
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(np.arange(12.0), comm=comm).save(path)
        dist = ("c",) if comm.rank == comm.size - 1 else ("b",)
        expect_error(comm, lambda: xdap.load(path, comm=comm, dist=dist),
                     "must be the same on every rank")


def _crafted(path, change):
    """Rewrite the manifest at ``path`` with ``change(body)`` applied and a
    valid CRC: what a buggy program or a hand edit could leave behind."""
    man = os.path.join(path, "manifest.json")
    body = json.load(open(man))["xdap_save"]
    change(body)
    canon = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    json.dump({"xdap_save": body, "crc32": zlib.crc32(canon)}, open(man, "w"))


def _swap_pieces(b):
    b["pieces"][0], b["pieces"][-1] = b["pieces"][-1], b["pieces"][0]


def _swap_coords(b):
    b["pieces"][0]["coords"], b["pieces"][-1]["coords"] = \
        b["pieces"][-1]["coords"], b["pieces"][0]["coords"]


CRAFTED = {
    "pieces reversed": (_swap_pieces, "not rank 0's piece"),
    "coords swapped": (_swap_coords, "sits at grid position"),
    "optional false on optional data": (lambda b: b.update(optional=False),
                                        "optional False contradicts the type"),
    "type without the ?": (lambda b: b.update(type=b["type"].replace("?", "")),
                           "optional True contradicts the type"),
    "a path with ..": (lambda b: b["pieces"][0]["files"]["values"].update(
        name="../../etc/passwd"), "names file '../../etc/passwd'"),
    "an absolute path": (lambda b: b["pieces"][0]["files"]["values"].update(
        name="/etc/passwd"), "names file '/etc/passwd'"),
    "missing key": (lambda b: b.pop("shape"), "missing key 'shape'"),
    "generation with a slash": (lambda b: b.update(generation="g00000/"),
                                "is not of the form"),
    "validity record missing": (lambda b: b["pieces"][0]["files"].pop("validity"),
                                "lacks its 'validity' file"),
    "shape against the type": (lambda b: b.update(shape=[b["shape"][0] + 1]),
                               "contradicts the type"),
    "one piece too few": (lambda b: b["pieces"].pop(), "pieces for a grid of"),
    "size as a float": (lambda b: b["distribution"]["maps"][0].update(
        size=float(b["shape"][0])), "distribution.maps[0] has size"),
    "bytes as a bool": (lambda b: b["pieces"][0]["files"]["values"].update(bytes=True),
                        "must be an int >= 0"),
}


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_manifest_is_refused_on_every_rank(comm, case):
    change, message = CRAFTED[case]
    if case in ("pieces reversed", "coords swapped") and comm.size == 1:
        pytest.skip("one piece has nothing to swap with")
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(fixed_data("float64", (12,), True), comm=comm).save(path)
        if comm.rank == 0:
            _crafted(path, change)
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(path, comm=comm), "the manifest is invalid",
                     message)
