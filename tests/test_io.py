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
import subprocess
import sys
import tempfile
import time
import zlib

from xdap.launcher import clean_environment, kill_session, mpiexec_command

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import as_container, parts
from xdap.io.store_location import staging_names
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
        # two ragged rows onto more ranks: the others hold none (the build's ndtypes)
        r = xdap.load(os.path.join(tmp, "r"), comm=comm)
        check_global(r, [[1], [2, 3]])
        assert r.local.value == [[[1], [2, 3]][g] for g in np.asarray(r.global_indices(0))]
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

def chunk_files(path, name):
    """Every chunk file of array ``name`` in the store at ``path``."""
    out = []
    for root, _, files in os.walk(os.path.join(path, name, "c")):
        out += [os.path.join(root, f) for f in files]
    return sorted(out)


def edit_attrs(path, change):
    """Rewrite the store's ``xdap`` attribute with ``change(attrs)`` applied:
    what a buggy program or a hand edit could leave behind."""
    meta_name = os.path.join(path, "zarr.json")
    meta = json.load(open(meta_name))
    change(meta["attributes"]["xdap"])
    json.dump(meta, open(meta_name, "w"))


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("family", ["fixed", "optional", "ragged"])
def test_corrupt_truncated_and_missing_chunks(comm, family):
    n = 40
    if family == "ragged":
        t = ragged_type("float64", 2, True)
        a = xdap.from_global(ragged_data("float64", n, 2, True), type=t, comm=comm)
        array = "offsets0"
    else:
        a = xdap.from_global(fixed_data("int64", (n, 4), family == "optional"), comm=comm)
        array = "validity" if family == "optional" else "values"
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        a.save(path)
        victim = chunk_files(path, array)[-1]
        original = open(victim, "rb").read() if comm.rank == 0 else None
        key = os.path.relpath(victim, os.path.join(path, array, "c")).replace(os.sep, "/")

        def damage(fn):
            comm.Barrier()
            if comm.rank == 0:
                fn()
            comm.Barrier()

        def flip():
            data = bytearray(original)
            data[len(data) // 2] ^= 0x10
            open(victim, "wb").write(bytes(data))
        damage(flip)
        expect_error(comm, lambda: xdap.load(path, comm=comm), repr(array), "CRC-32C")
        damage(lambda: open(victim, "wb").write(original[:len(original) - 5]))
        expect_error(comm, lambda: xdap.load(path, comm=comm), repr(array))
        damage(lambda: os.remove(victim))
        expect_error(comm, lambda: xdap.load(path, comm=comm), f"chunk {key}", repr(array),
                     "missing")
        damage(lambda: open(victim, "wb").write(original))
        check_global(xdap.load(path, comm=comm), reference(a.to_global().value, t)
                     if family == "ragged" else _fixed_ref(a))
        # the group's metadata: a type that contradicts the arrays, and garbage
        meta = os.path.join(path, "zarr.json")
        text = open(meta).read() if comm.rank == 0 else None
        damage(lambda: edit_attrs(path, lambda x: x.update(
            type=x["type"].replace("float64", "float32").replace("int64", "int32"),
            numpy_descr="<f4" if "float" in x["numpy_descr"] else "<i4")))
        expect_error(comm, lambda: xdap.load(path, comm=comm), "contradicts the type")
        damage(lambda: open(meta, "w").write(text[:50]))
        expect_error(comm, lambda: xdap.load(path, comm=comm), "not valid JSON")
        expect_error(comm, lambda: a.save(path), "refusing to overwrite")
        assert comm.bcast(open(meta).read()[:50] == text[:50] if comm.rank == 0 else None)


def _fixed_ref(a):
    p = parts(a.to_global())
    return p.values, p.valid_mask()


def edit_meta(path, name, change):
    """Rewrite the zarr.json of array ``name`` (or of the group: None)."""
    meta_name = os.path.join(path, *( [name] if name else []), "zarr.json")
    meta = json.load(open(meta_name))
    change(meta)
    json.dump(meta, open(meta_name, "w"))


def _damage(path, how, outside):
    """One way a disk, an editor or an attacker could change a store."""
    values = os.path.join(path, "values")
    if how == "big-endian bytes":
        edit_meta(path, "values", lambda m: m["codecs"][0]["configuration"].update(endian="big"))
    elif how == "transpose codec":
        edit_meta(path, "values", lambda m: m["codecs"].insert(
            0, {"name": "transpose", "configuration": {"order": [1, 0]}}))
    elif how == "gzip codec":
        edit_meta(path, "values", lambda m: m["codecs"].insert(
            1, {"name": "gzip", "configuration": {"level": 1}}))
    elif how == "'.' chunk keys":
        edit_meta(path, "values", lambda m: m["chunk_key_encoding"]["configuration"].update(
            separator="."))
    elif how == "v2 chunk keys":
        edit_meta(path, "values", lambda m: m.update(
            chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}}))
    elif how == "chunk shape 0":
        edit_meta(path, "values", lambda m: m["chunk_grid"]["configuration"].update(
            chunk_shape=[0, 3]))
    elif how == "group zarr_format 2":
        edit_meta(path, None, lambda m: m.update(zarr_format=2))
    elif how == "deep JSON":
        n = 50_000
        open(os.path.join(path, "zarr.json"), "w").write(
            '{"zarr_format": 3, "node_type": "group", "attributes": {"xdap": '
            + "[" * n + "]" * n + "}}")
    elif how == "symlinked chunk":
        chunk = chunk_files(path, "values")[0]
        shutil.copy(chunk, outside)                  # the same bytes, outside the store
        os.remove(chunk)
        os.symlink(outside, chunk)
    elif how == "symlinked chunk directory":
        top = os.path.join(values, "c")
        shutil.copytree(top, outside)
        shutil.rmtree(top)
        os.symlink(outside, top)
    elif how == "symlinked metadata":
        meta = os.path.join(path, "zarr.json")
        shutil.copy(meta, outside)
        os.remove(meta)
        os.symlink(outside, meta)
    elif how == "symlinked array":
        shutil.copytree(values, outside)
        shutil.rmtree(values)
        os.symlink(outside, values)
    elif how == "chunks swapped":
        first, second = chunk_files(path, "values")[:2]
        os.rename(first, first + ".tmp")
        os.rename(second, first)
        os.rename(first + ".tmp", second)
    elif how == "checksums missing":
        shutil.rmtree(os.path.join(path, "checksums", "values"))
    elif how == "named pipe chunk":
        chunk = chunk_files(path, "values")[-1]
        os.remove(chunk)
        os.mkfifo(chunk)
    elif how == "2**40 ragged leaves":
        edit_meta(path, "values", lambda m: m.update(shape=[2 ** 40]))


DAMAGE = {
    "big-endian bytes": "(big endian)", "transpose codec": "TransposeCodec",
    "gzip codec": "GzipCodec", "'.' chunk keys": "separator '.'",
    "v2 chunk keys": "V2ChunkKeyEncoding", "chunk shape 0": "chunk shape (0, 3)",
    "group zarr_format 2": "zarr_format is 2", "deep JSON": "nests deeper",
    "symlinked chunk": "symbolic link", "symlinked chunk directory": "outside the store",
    "symlinked metadata": "symbolic link", "symlinked array": "outside the store", "named pipe chunk": "not a regular file",
    "2**40 ragged leaves": "not uint32 of the chunk grid",
    "chunks swapped": "not the chunk saved at that position",
    "checksums missing": "chunk checksums of array 'values'",
}


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_store_is_one_clear_error_and_nothing_outside_is_read(comm, how):
    """Stores xdap wrote, then changed as zarr, a broken disk or an attacker
    could: each is one ValueError on every rank, before anything outside
    the store is read or a claimed size allocated -- never garbage or a hang
    (a named pipe's open would block)."""
    base = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    path = os.path.join(base, "s")
    ragged = how == "2**40 ragged leaves"
    a = xdap.from_global([[1.0], [2.0, 3.0], []] * 3, type="var * var * float64", comm=comm) \
        if ragged else xdap.from_global(np.arange(12.0).reshape(4, 3), comm=comm)
    from xdap.io import save
    save(a.distribution, a.parts, path, chunk_bytes=24)
    if comm.rank == 0:
        _damage(path, how, os.path.join(base, "outside"))
    comm.Barrier()
    try:
        expect_error(comm, lambda: xdap.load(path, comm=comm), DAMAGE[how])
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(base, ignore_errors=True)


@pytest.mark.mpi(ranks=RANKS)
def test_validation_errors(comm):
    with SharedDir(comm) as tmp:
        expect_error(comm, lambda: xdap.load(os.path.join(tmp, "nothing"), comm=comm),
                     "does not exist")
        expect_error(comm, lambda: xdap.load(tmp, comm=comm), "not an xdap store",
                     "no zarr.json")
        stranger = os.path.join(tmp, "stranger.txt")
        if comm.rank == 0:
            open(stranger, "w").write("mine")
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(stranger, comm=comm), "not a directory")
        a = xdap.from_global(fixed_data("float32", (6, 4), False), comm=comm)
        expect_error(comm, lambda: a.save(stranger), "not a directory", "refusing")
        expect_error(comm, lambda: a.save(tmp), "not part of an xdap store", "stranger.txt")
        assert os.path.exists(stranger)
        expect_error(comm, lambda: a.save(os.path.join(tmp, "no", "such")), "parent directory")
        expect_error(comm, lambda: a.save(os.path.join(tmp, f"r{comm.rank}")),
                     "path must be the same on every rank") if comm.size > 1 else None
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
        # a plain Zarr group that xdap did not write is neither loaded nor overwritten
        plain = os.path.join(tmp, "plain")
        if comm.rank == 0:
            import zarr
            zarr.open_group(plain, mode="w", zarr_format=3).create_array(
                "x", shape=(3,), dtype="f8")
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(plain, comm=comm), "not an xdap store")
        expect_error(comm, lambda: a.save(plain), "refusing to overwrite", "not an xdap store")
        # a store of a future format version
        if comm.rank == 0:
            edit_attrs(path, lambda x: x.update(version=99))
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(path, comm=comm), "format version 99")


CRAFTED = {
    "kind against the type": (lambda x: x.update(kind="ragged"), "contradicts the type"),
    "shape against the type": (lambda x: x.update(shape=[x["shape"][0] + 1]),
                               "contradicts the type"),
    "missing key": (lambda x: x.pop("shape"), "missing key 'shape'"),
    "size as a float": (lambda x: x["distribution"]["maps"][0].update(
        size=float(x["shape"][0])), "distribution.maps[0] has size"),
    "grid of another length": (lambda x: x["distribution"].update(grid=[1, 1]),
                               "distribution.grid must be 1 ints"),
    "type without the ?": (lambda x: x.update(type=x["type"].replace("?", "")),
                           "unexpected array 'validity'"),
    "generation as a string": (lambda x: x.update(generation="7"), "'generation' must be a int"),
    "an unknown format": (lambda x: x.update(format="other"), "is not 'xdap-zarr'"),
}


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_attributes_are_refused_on_every_rank(comm, case):
    change, message = CRAFTED[case]
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(fixed_data("float64", (12,), True), comm=comm).save(path)
        if comm.rank == 0:
            edit_attrs(path, change)
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(path, comm=comm), message)


# -- the store as other tools see it ---------------------------------------------

READER = r"""
import json, sys
import numpy as np
try:
    import xdap
    sys.exit("xdap is importable here: the test proves nothing")
except ImportError:
    pass
import warnings
import zarr, xarray, dask.array
root = sys.argv[1]
f = zarr.open_group(root + "/f", mode="r")
with warnings.catch_warnings():
    warnings.simplefilter("error")      # consolidated metadata: xarray opens it as is, quietly
    f_xarray = xarray.open_zarr(root + "/f")["values"].values.tolist()
out = {"f_type": f.attrs["xdap"]["type"],
       "f_zarr": f["values"][:].tolist(),
       "f_xarray": f_xarray,
       "f_dask": dask.array.from_zarr(root + "/f", component="values").compute().tolist(),
       "f_chunks": list(f["values"].chunks)}
o = zarr.open_group(root + "/o", mode="r")
values = np.ma.array(o["values"][:], mask=~o["validity"][:])
out["o"] = [[None if v is np.ma.masked else float(v) for v in row] for row in values]
r = zarr.open_group(root + "/r", mode="r")        # docs/format.md: ragged data
off0, off1 = r["offsets0"][:], r["offsets1"][:]
vals, valid = r["values"][:], r["validity"][:]
leaf = [int(v) if ok else None for v, ok in zip(vals, valid)]
inner = [leaf[a:b] for a, b in zip(off1[:-1], off1[1:])]
out["r"] = [inner[a:b] for a, b in zip(off0[:-1], off0[1:])]
out["r_type"] = r.attrs["xdap"]["type"]
s = zarr.open_group(root + "/s", mode="r")
raw, off = s["values"][:].tobytes(), s["offsets0"][:]
out["s"] = [raw[a:b].decode() for a, b in zip(off[:-1], off[1:])]
print(json.dumps(out))
"""


def run_without_xdap(script, *args):
    """Run ``script`` with this venv's packages but without xdap: no site
    processing (xdap is an editable install, found through a .pth file), the
    site-packages directory put on the path by hand, from a directory that
    is not the repository."""
    import sysconfig
    site = sysconfig.get_paths()["purelib"]
    code = f"import sys; sys.path.append({site!r}); " \
           f"exec(compile({script!r}, 'reader', 'exec'))"
    out = subprocess.run([sys.executable, "-S", "-c", code, *args], capture_output=True,
                         text=True, cwd=tempfile.gettempdir(), timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.mpi(ranks=(2, 3))
def test_store_opens_in_zarr_xarray_and_dask_without_xdap(comm):
    """What a user with zarr, xarray or dask on a laptop -- and no xdap --
    reads from stores saved on several ranks, following docs/format.md."""
    g = np.arange(77.0).reshape(11, 7)
    masked = [[None if v % 5 == 1 else v for v in row] for row in g.tolist()]
    rows = [[[None if (i + j + k) % 4 == 0 else i * 100 + j * 10 + k for k in range(j)]
             for j in range(i % 4)] for i in range(13)]
    words = ["", "ab", "süß", "x" * 9, "ragged"] * 3
    with SharedDir(comm) as tmp:
        xdap.from_global(g, dist=("c", "b"), block_size=(2, None), comm=comm).save(tmp + "/f")
        xdap.from_global(masked, type="11 * 7 * ?float64", dist=("b", "n"),
                         comm=comm).save(tmp + "/o")
        xdap.from_global(rows, type="var * var * var * ?int64", dist=("c",),
                         comm=comm).save(tmp + "/r")
        xdap.from_global(words, type=f"{len(words)} * string", comm=comm).save(tmp + "/s")
        got = run_without_xdap(READER, tmp) if comm.rank == 0 else None
        got = comm.bcast(got)
    assert got["f_type"] == "11 * 7 * float64"
    for key in ("f_zarr", "f_xarray", "f_dask"):
        np.testing.assert_array_equal(np.array(got[key]), g)
    assert got["o"] == masked
    assert got["r"] == rows and got["r_type"] == "var * var * var * ?int64"
    assert got["s"] == words


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_chunks_zarr_python_writes_load(comm):
    """xdap writes and reads chunk files itself (xdap.io.chunk_files); the
    store's data rewritten by zarr-python's own codec pipeline -- values,
    validity, a record array's bytes, edge chunks -- loads exactly."""
    import zarr
    rng = np.random.default_rng(8)
    fixed = rng.random((13, 6))
    valid = rng.random((13, 6)) > 0.3
    rec = np.zeros(9, np.dtype([("x", "<i4"), ("y", "<f8")], align=True))
    with SharedDir(comm) as tmp:
        xdap.from_global(np.ma.array(np.zeros((13, 6)), mask=np.eye(13, 6, dtype=bool)),
                         dist=("b", "c"), comm=comm).save(tmp + "/f")
        xdap.from_global(np.zeros(9, rec.dtype), comm=comm).save(tmp + "/r")
        if comm.rank == 0:
            zarr.open_array(tmp + "/f/values", mode="r+")[:] = fixed
            zarr.open_array(tmp + "/f/validity", mode="r+")[:] = valid
            rec["x"], rec["y"] = np.arange(9), np.arange(9) / 4
            z = zarr.open_array(tmp + "/r/values", mode="r+")
            z[:] = np.frombuffer(rec.tobytes(), np.uint8).reshape(9, z.shape[1])
        comm.Barrier()
        # chunks rewritten by another writer no longer match the store's
        # position table: refused until the table is brought up to date
        with pytest.raises(ValueError, match="not the chunk saved at that position"):
            xdap.load(tmp + "/f", comm=comm)
        if comm.rank == 0:
            for store in ("/f", "/r"):
                refresh_checksums(tmp + store)
        comm.Barrier()
        for dist in (None, ("c", "b")):
            b = xdap.load(tmp + "/f", comm=comm, **({} if dist is None else {"dist": dist}))
            check_local(b, (fixed, valid))
        r = xdap.load(tmp + "/r", comm=comm)
        assert r.to_global().value == [{"x": int(i), "y": i / 4} for i in range(9)]


@pytest.mark.mpi(ranks=(1, 2))
def test_a_version_2_store_without_checksums_loads(comm):
    """Stores written before the chunk position tables (format version 2)
    still load: their chunks are verified by their own CRC-32C only."""
    g = np.arange(24.0).reshape(6, 4)
    with SharedDir(comm) as tmp:
        xdap.from_global(g, comm=comm).save(tmp + "/v")
        if comm.rank == 0:
            shutil.rmtree(tmp + "/v/checksums")
            edit_attrs(tmp + "/v", lambda a: a.update(version=2))
        comm.Barrier()
        np.testing.assert_array_equal(xdap.load(tmp + "/v", comm=comm).to_numpy(), g)


@pytest.mark.mpi(ranks=(1, 2))
def test_a_version_3_store_cannot_say_version_2_to_skip_its_checks(comm):
    """The position tables make a swapped chunk an error; a store edited to
    say version 2 (which has none) while keeping them is refused, on every
    rank -- it would otherwise load the swapped chunk silently."""
    g = np.arange(24.0).reshape(6, 4)
    with SharedDir(comm) as tmp:
        xdap.from_global(g, comm=comm).save(tmp + "/v")
        if comm.rank == 0:
            edit_attrs(tmp + "/v", lambda a: a.update(version=2))
        comm.Barrier()
        expect_error(comm, lambda: xdap.load(tmp + "/v", comm=comm),
                     "says format version 2 but holds version-3 content")


def refresh_checksums(path):
    """What a tool that edits an xdap store's chunks must do: record each
    chunk's CRC-32C (its file's last four bytes) in ``checksums/<array>``."""
    import zarr
    for name in os.listdir(os.path.join(path, "checksums")):
        table = os.path.join(path, "checksums", name)
        if not os.path.isdir(table):
            continue
        t = zarr.open_array(table, mode="r+")
        values = np.zeros(t.shape, np.uint32)
        for idx in np.ndindex(*t.shape):
            with open(os.path.join(path, name, "c", *map(str, idx)), "rb") as f:
                values[idx] = np.frombuffer(f.read()[-4:], "<u4")[0]
        t[...] = values


@pytest.mark.mpi(ranks=RANKS)
def test_every_rank_writes_whole_chunks_of_its_own(comm):
    """Chunk boundaries are block boundaries of the aligned distribution, so
    no chunk is written by two ranks: for a balanced block array the chunk
    grid is the saved blocks (written in place, no redistribution)."""
    import zarr
    n = 8 * comm.size
    with SharedDir(comm) as tmp:
        xdap.from_global(np.arange(n * 3.0).reshape(n, 3), comm=comm).save(tmp + "/a")
        z = zarr.open_array(tmp + "/a/values", mode="r")
        assert z.chunks == (8, 3)
        assert len(chunk_files(tmp + "/a", "values")) == comm.size
        from xdap.io.store_writer import save
        xdap_a = xdap.from_global(np.arange(4000.0), comm=comm)
        save(xdap_a.distribution, xdap_a.parts, tmp + "/b", chunk_bytes=800)   # 100 a chunk
        z = zarr.open_array(tmp + "/b/values", mode="r")
        np.testing.assert_array_equal(z[:], np.arange(4000.0))
        step = -(-4000 // comm.size)         # the aligned blocks' length
        assert z.chunks[0] <= 100 and step % z.chunks[0] == 0, (z.chunks, step)
        check_global(xdap.load(tmp + "/b", comm=comm), (np.arange(4000.0), None))
        # the unstructured index table is chunked by chunk_bytes too (it was not: 3 ranks failed)
        u = xdap.from_global(np.arange(5000.0), dist=("u",), comm=comm,
                             indices=([np.arange(r, 5000, comm.size) for r in range(comm.size)],))
        save(u.distribution, u.parts, tmp + "/u", chunk_bytes=800)
        assert zarr.open_array(tmp + "/u/indices0", mode="r").chunks == (50, 2)
        back = xdap.load(tmp + "/u", comm=comm)
        assert back.distribution == u.distribution
        check_global(back, (np.arange(5000.0), None))


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_format_1_directories_still_load(comm):
    """Directories the previous format wrote (tests/data/format1, made by
    xdap's last format-1 writer on 2 ranks) load on any rank count."""
    base = os.path.join(HERE, "data", "format1")
    g = np.arange(30.0).reshape(6, 5)
    b = xdap.load(os.path.join(base, "fixed_optional"), comm=comm)
    assert b.to_global().value == [[None if v % 7 == 3 else v for v in row] for row in g.tolist()]
    r = xdap.load(os.path.join(base, "ragged"), comm=comm, dist=("c",))
    assert r.to_global().value == [[None if (i + j) % 3 == 0 else i * 10 + j for j in range(i)]
                                   for i in range(7)]
    u = xdap.load(os.path.join(base, "unstructured"), comm=comm)
    np.testing.assert_array_equal(np.asarray(u.to_global()), np.arange(8.0) * 1.5)
    with SharedDir(comm) as tmp:                   # saving over one replaces it with a store
        if comm.rank == 0:
            shutil.copytree(os.path.join(base, "unstructured"), tmp + "/u")
        comm.Barrier()
        xdap.from_global(np.arange(3.0), comm=comm).save(tmp + "/u")
        assert sorted(os.listdir(tmp + "/u"))[-1] == "zarr.json"
        np.testing.assert_array_equal(np.asarray(xdap.load(tmp + "/u", comm=comm).to_global()),
                                      np.arange(3.0))


LEGACY_CRAFTED = {
    "pieces reversed": (lambda b: b["pieces"].reverse(), "not rank 0's piece"),
    "a path with ..": (lambda b: b["pieces"][0]["files"]["values"].update(
        name="../../etc/passwd"), "names file '../../etc/passwd'"),
    "validity record missing": (lambda b: b["pieces"][0]["files"].pop("validity"),
                                "lacks its 'validity' file"),
    "optional false on optional data": (lambda b: b.update(optional=False),
                                        "optional False contradicts the type"),
}


@pytest.mark.mpi(ranks=(1, 2))
@pytest.mark.parametrize("case", sorted(LEGACY_CRAFTED) + ["flipped byte", "bad crc"])
def test_format_1_damage_is_refused_on_every_rank(comm, case):
    """The format-1 reader still treats a directory as untrusted input."""
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        if comm.rank == 0:
            shutil.copytree(os.path.join(HERE, "data", "format1", "fixed_optional"), path)
            man = os.path.join(path, "manifest.json")
            body = json.load(open(man))["xdap_save"]
            if case == "flipped byte":
                victim = os.path.join(path, body["pieces"][1]["files"]["values"]["name"])
                data = bytearray(open(victim, "rb").read())
                data[-3] ^= 1
                open(victim, "wb").write(bytes(data))
            else:
                if case in LEGACY_CRAFTED:
                    LEGACY_CRAFTED[case][0](body)
                canon = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
                crc = zlib.crc32(canon) + (case == "bad crc")
                json.dump({"xdap_save": body, "crc32": crc}, open(man, "w"))
        comm.Barrier()
        message = {"flipped byte": "is corrupt", "bad crc": "manifest.json is corrupt"}.get(
            case) or LEGACY_CRAFTED[case][1]
        expect_error(comm, lambda: xdap.load(path, comm=comm), message)


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
    kill_session(proc.pid)              # the launcher and every rank, under any MPI
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
        left = staging_names(path)
        if point != "after-switch":           # the killed writer did leave its staging behind
            assert len(left) == 1 and "xdap-saving-000002" in left[0], left
        xdap.from_global(crash_data(3), comm=MPI.COMM_SELF).save(path)
        finish_cleanup()
        assert_holds(path, 3)
        assert staging_names(path) == []      # leftovers removed by the next save
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
def test_loaded_buffers_are_the_callers_own(comm):
    """A loaded buffer is new memory: writable, and writing to it changes
    neither the store nor another load of it."""
    data = fixed_data("float64", (12, 5), False, seed=21)
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(data, comm=comm, dist=("b",)).save(path)
        b = xdap.load(path, comm=comm)
        values = parts(b.local).values
        assert values.flags.writeable
        values[...] = -1.0
        comm.Barrier()
        c = xdap.load(path, comm=comm)
        check_local(c, reference(data))
        assert (np.asarray(parts(b.local).values) == -1.0).all()


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
            expect_error(comm, lambda: xdap.load(other, comm=comm), "path must be the same on every rank")


@pytest.mark.mpi(ranks=RANKS)
def test_load_while_another_process_saves(comm, monkeypatch):
    """Another process saves to the path between this load's reading of the
    manifest and of the pieces, and deletes the files the manifest named:
    the load starts over and returns the new save (it used to fail with
    'file ... is missing')."""
    import xdap.io.store_reader as reader
    old, new = fixed_data("float64", (10, 3), True, seed=41), fixed_data("float64", (10, 3), True, seed=42)
    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        xdap.from_global(old, comm=comm, dist=("c",)).save(path)
        read_frame, calls = reader.read_frame, []

        def read_then_replace(p, what="load"):
            body = read_frame(p, what)
            if not calls:                     # the concurrent save (a separate job)
                xdap.from_global(new, comm=MPI.COMM_SELF).save(path)
                finish_cleanup()              # the generation just read is gone now
            calls.append(p)
            return body
        monkeypatch.setattr(reader, "read_frame", read_then_replace)
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
    from xdap.io import store_reader as reader, store_writer as writer

    def out_of_memory(*args, **kwargs):
        raise MemoryError("cannot allocate 64 MiB")

    with SharedDir(comm) as tmp:
        path = os.path.join(tmp, "a")
        data = np.arange(64 * 40.0).reshape(64, 40)
        a = xdap.from_global(data, comm=comm, dist=("b", "b"), grid=(1, comm.size),
                             padding=((0, 0), (1, 1)))
        a.save(path)
        if comm.rank == comm.size - 1:
            monkeypatch.setattr(reader, "read_array", out_of_memory)
            monkeypatch.setattr(writer, "_write_pieces", out_of_memory)
        msg = expect_error(comm, lambda: xdap.load(path, comm=comm, dist=("c",)),
                           f"(rank {comm.size - 1})")
        assert "MemoryError" in msg and "cannot allocate" in msg, msg
        msg = expect_error(comm, lambda: a.save(path), "MemoryError", f"(rank {comm.size - 1})")
        monkeypatch.undo()
        check_global(xdap.load(path, comm=comm), reference(data))   # the first save is intact


def test_save_loop_keeps_no_finished_cleanup_threads():
    """Each save hands its deletions to a thread; a checkpoint loop of many
    saves used to keep every finished thread object forever."""
    import xdap.io.store_writer as writer
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
        assert staging_names(path) == [] and os.listdir(tmp) == ["a"]
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


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_zero_d_arrays_save_and_load(comm):
    """A 0-d array (one element, every rank holds it) saves as a Zarr array
    of shape () and loads back on any rank count; zarr reads the value."""
    rec = np.zeros((), np.dtype([("x", "f8"), ("n", "i4")], align=True))
    rec["x"], rec["n"] = 2.5, 7
    cases = [np.float64(3.25), np.int8(-4), np.complex128(1 - 2j), np.bool_(True), rec,
             np.ma.masked_array(2.0, mask=True), np.ma.masked_array(4.5, mask=False)]
    with SharedDir(comm) as tmp:
        for i, v in enumerate(cases):
            a = xdap.from_global(v, comm=comm)
            path = os.path.join(tmp, f"z{i}")
            a.save(path)
            want = a.to_global().value
            b = xdap.load(path, comm=comm)
            assert b.shape == () and str(b.type) == str(a.type)
            assert b.to_global().value == want
            if comm.size > 1:                                 # onto fewer ranks
                half = sub(comm, 1)
                if half is not None:
                    assert xdap.load(path, comm=half).to_global().value == want
                    half.Free()
            if comm.rank == 0:
                import zarr
                got = zarr.open_array(os.path.join(path, "values"), mode="r")[()]
                if isinstance(v, np.ma.MaskedArray):     # ?float64: values and validity
                    valid = zarr.open_array(os.path.join(path, "validity"), mode="r")[()]
                    assert bool(valid) == (not v.mask) and (not valid or got == v.data)
                elif v is rec:                  # records are stored as their bytes
                    got = np.frombuffer(got.tobytes(), rec.dtype)[0]
                    assert (float(got["x"]), int(got["n"])) == (2.5, 7)
                else:
                    assert got.tolist() == v.tolist(), (i, got)
            comm.Barrier()
