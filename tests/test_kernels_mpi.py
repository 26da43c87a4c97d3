"""xdap.kernels on DistArrays, on 1-4 real ranks: results keep the
operands' distribution and equal NumPy references on the global data;
mismatched operands fail on every rank; out= and the operators."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap import kernels as K
from xdap.parts import parts

RANKS = (1, 2, 3, 4)


def global_flat(a):
    p = parts(a.to_global())
    return p.values.ravel(), (None if p.validity is None else p.valid_mask().ravel())


def ragged_lists(values, lengths, mask=None):
    rows, k = [], 0
    for n in lengths:
        rows.append([None if (mask is not None and not mask[k + i]) else values[k + i].item()
                     for i in range(n)])
        k += n
    return rows


DISTS = [dict(dist=("b",)), dict(dist=("c",), block_size=(2,)), dict(dist=("b",), padding=((1, 1),))]


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("dtype", ["int16", "int32", "uint8", "float32", "float64"])
def test_fixed_families(dtype):
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(3)
    x = (rng.integers(1, 50, (9, 4)) if dtype[0] in "iu" else rng.uniform(0.5, 9, (9, 4))).astype(dtype)
    y = (rng.integers(1, 50, (9, 4)) if dtype[0] in "iu" else rng.uniform(0.5, 9, (9, 4))).astype(dtype)
    fdt = {"int16": np.float32, "uint8": np.float32, "int32": np.float64}.get(dtype, x.dtype)
    tol = dict(rtol=2e-6) if fdt == np.float32 else dict(rtol=1e-13)
    for opts in [dict(dist=("b", "n")), dict(dist=("c", "b")), dict(dist=("b", "n"), padding=((1, 1), (0, 0)))]:
        a = xdap.from_global(x, comm=comm, **opts)
        b = xdap.from_global(y, comm=comm, **opts)
        for name, ref in (("sin", np.sin), ("log", np.log), ("sqrt", np.sqrt)):     # unary math
            r = getattr(K, name)(a)
            assert r.distribution == a.distribution and r.global_shape == a.global_shape
            np.testing.assert_allclose(global_flat(r)[0], ref(x.astype(fdt)).ravel(), **tol)
        np.testing.assert_array_equal(global_flat(K.floor(a))[0],                  # rounding
                                      np.floor(x).ravel() if fdt == x.dtype else x.ravel())
        for name, ref in (("add", np.add), ("multiply", np.multiply), ("maximum", np.maximum)):
            got = global_flat(getattr(K, name)(a, b))[0]
            np.testing.assert_allclose(got, ref(x, y).ravel(), **tol)
        for name, ref in (("less", np.less), ("equal", np.equal)):                  # comparisons
            assert global_flat(getattr(K, name)(a, b))[0].tolist() == ref(x, y).ravel().tolist()


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "float64", "complex128"])
@pytest.mark.parametrize("optional", [False, True])
def test_ragged_and_optional(dtype, optional):
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 5, 17)
    n = int(lengths.sum())
    if dtype == "bool":
        v, w = rng.random(n) < 0.5, rng.random(n) < 0.5
    elif dtype == "complex128":
        v = rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)
        w = rng.uniform(-2, 2, n) + 1j * rng.uniform(-2, 2, n)
    else:
        v = rng.integers(0, 9, n).astype(dtype)
        w = rng.integers(1, 9, n).astype(dtype)
    m1 = rng.random(n) < 0.8 if optional else None
    m2 = rng.random(n) < 0.8 if optional else None
    t = f"var * var * {'?' if optional else ''}{dtype}"
    for opts in DISTS:
        a = xdap.from_global(ragged_lists(v, lengths, m1), type=t, comm=comm, **opts)
        b = xdap.from_global(ragged_lists(w, lengths, m2), type=t, comm=comm, **opts)
        valid = None if not optional else (m1 & m2)
        cases = [("equal", np.equal(v, w))]
        if dtype != "bool":
            cases += [("subtract", np.subtract(v, w))]
        cases += [("multiply", np.logical_and(v, w) if dtype == "bool" else np.multiply(v, w))]
        for name, want in cases:
            r = getattr(K, name)(a, b)
            assert r.distribution == a.distribution and str(r.local.type).startswith("var * var")
            got, gvalid = global_flat(r)
            if optional:
                np.testing.assert_array_equal(gvalid, valid)
                np.testing.assert_allclose(got[valid], want[valid], rtol=1e-13)
            else:
                assert gvalid is None
                np.testing.assert_allclose(got, want, rtol=1e-13)
        # unary on ragged/optional: sin (exact-float rule), validity passes through
        if dtype != "bool":
            got, gvalid = global_flat(K.sin(a))
            fdt = {"int8": np.float32, "uint32": np.float64}.get(dtype, v.dtype)
            ok = slice(None) if not optional else m1
            np.testing.assert_allclose(got[ok], np.sin(v.astype(fdt))[ok],
                                       rtol=2e-6 if fdt == np.float32 else 1e-13)
            if optional:
                np.testing.assert_array_equal(gvalid, m1)


@pytest.mark.mpi(ranks=RANKS)
def test_mixed_optional_and_plain_operands():
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 1, 30)
    mask = rng.random(30) < 0.7
    a = xdap.from_global(np.ma.masked_array(x, mask=~mask), comm=comm)      # ?float64
    b = xdap.from_global(x * 2, comm=comm)                                   # float64
    for r in (K.add(a, b), K.add(b, a), a + b, b + a):
        got, valid = global_flat(r)
        np.testing.assert_array_equal(valid, mask)
        np.testing.assert_allclose(got[mask], (3 * x)[mask])


@pytest.mark.mpi(ranks=RANKS)
def test_mismatched_operands_fail_on_every_rank():
    comm = MPI.COMM_WORLD
    x = np.arange(12.0)
    a = xdap.from_global(x, dist=("b",), comm=comm)
    c = xdap.from_global(x, dist=("c",), comm=comm)
    # one shape, another distribution: c is moved to a's (a warning on rank 0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        s = K.add(a, c)
    assert s.distribution == a.distribution
    np.testing.assert_array_equal(s.to_numpy(), 2 * x)
    assert [w.category for w in seen] == ([xdap.RedistributionWarning]    # block != cyclic,
                                          if comm.rank == 0 else [])      # also on one rank
    d = xdap.from_global(np.arange(13.0), dist=("b",), comm=comm)
    with pytest.raises(ValueError, match=r"could not be broadcast together .* \(12,\) \(13,\)"):
        K.add(a, d)
    r1 = xdap.from_global([[1.0]] * 12, type="var * var * float64", comm=comm)
    with pytest.raises(ValueError, match="another type shape"):
        K.add(a, r1)
    # same distribution, different row lengths: only some ranks see it locally
    r2 = xdap.from_global([[1.0]] * 11 + [[1.0, 2.0]], type="var * var * float64", comm=comm)
    with pytest.raises(ValueError, match="list lengths"):
        K.multiply(r1, r2)
    with pytest.raises(TypeError, match="no kernel for bool in negative"):
        K.negative(xdap.from_global(np.arange(12) % 2 == 0, comm=comm))
    with pytest.raises(ValueError, match="could not be broadcast together"):
        K.add(a, np.arange(3.0))


@pytest.mark.mpi(ranks=RANKS)
def test_out_and_operators():
    comm = MPI.COMM_WORLD
    x = np.linspace(0.5, 3, 20)
    a = xdap.from_global(x, comm=comm)
    out = xdap.from_global(np.zeros(20), comm=comm)
    before = parts(out.local).values
    r = K.sin(a, out=out)
    assert r is out and np.shares_memory(parts(out.local).values, before)
    np.testing.assert_allclose(global_flat(out)[0], np.sin(x), rtol=1e-14)
    K.power(a, 2.0, out=out)
    np.testing.assert_allclose(global_flat(out)[0], x ** 2, rtol=1e-14)
    for got, want in ((a + 1, x + 1), (1 - a, 1 - x), (a * a, x * x), (a / 2, x / 2),
                      (2 / a, 2 / x), (a ** 2, x ** 2), (-a, -x), (abs(-a), x),
                      (a < 2, x < 2), (a >= 2, x >= 2), (a == a, x == x), (a != 1, x != 1)):
        np.testing.assert_allclose(global_flat(got)[0], want, rtol=1e-14)
        assert got.distribution == a.distribution
    i = xdap.from_global(np.arange(20, dtype=np.int32), comm=comm)
    assert str((i + 1).type) == "20 * int32" and str((i / 2).type) == "20 * float64"
    assert (a == None) is False                                              # noqa: E711


@pytest.mark.mpi(ranks=RANKS)
def test_apply_any_gufunc_and_gumath_path_on_distarrays():
    import gumath
    comm = MPI.COMM_WORLD
    x = np.linspace(0, 1, 15).reshape(5, 3)
    a = xdap.from_global(x, dist=("b", "n"), comm=comm)
    np.testing.assert_allclose(global_flat(K.apply(gumath.sin, a))[0], np.sin(x).ravel(), rtol=1e-15)
    g = K.gufunc("exp")(a.local)             # gumath's own dispatch on the local part
    np.testing.assert_allclose(parts(g).values, parts(K.exp(a).local).values, rtol=4e-16)
