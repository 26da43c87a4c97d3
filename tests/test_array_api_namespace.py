"""The Array API namespace (a.__array_namespace__()): generic code written
against the standard runs on DistArrays and computes what NumPy computes
on the global array, on 1-4 ranks; array-api-strict runs the same code as
the reference."""
import numpy as np
import pytest

import xdap
import xdap.array_api as xa

RANKS = (1, 2, 3, 4)


def standardise(x):
    """Array-API-generic: columns scaled to mean 0 and standard deviation 1,
    values clipped to 3 sigma, the row norms sorted."""
    xp = x.__array_namespace__()
    z = (x - xp.mean(x, axis=0)) / xp.std(x, axis=0)
    z = xp.clip(z, -3.0, 3.0)
    norms = xp.sqrt(xp.sum(z * z, axis=1))
    return z, xp.sort(norms), xp.argmax(norms), xp.cumulative_sum(xp.abs(norms))


@pytest.mark.mpi(ranks=RANKS)
def test_generic_code_runs_on_distarrays_as_on_the_reference(comm):
    import array_api_strict as strict
    g = np.random.default_rng(7).standard_normal((11, 4)) * [1.0, 10.0, 0.1, 3.0]
    for dist in (("b",), ("c",), ("b", "c")):
        got = standardise(xdap.from_global(g, dist=dist, comm=comm))
        want = standardise(strict.asarray(g))
        for x, w in zip(got, want):
            w = np.asarray(w)
            np.testing.assert_allclose(x.to_numpy() if isinstance(x, xdap.DistArray)
                                       else np.asarray(x), w, rtol=1e-12, atol=1e-12)


@pytest.mark.mpi(ranks=(1, 3))
def test_namespace_functions_match_numpy(comm):
    a = xdap.from_global(np.arange(12.0).reshape(4, 3) - 5, comm=comm)
    xp = a.__array_namespace__()
    assert xp is xa and xp.__array_api_version__ == "2024.12"
    assert a.device == "cpu" and a.to_device("cpu") is a
    g = a.to_numpy()
    for name in ("abs", "sin", "floor", "isnan", "sign", "square", "negative", "positive"):
        np.testing.assert_allclose(getattr(xp, name)(a).to_numpy(),
                                   getattr(np, xdap.api.elementwise.STANDARD[name])(g))
    for name in ("add", "pow", "maximum", "atan2", "floor_divide", "remainder", "less"):
        np.testing.assert_allclose(getattr(xp, name)(a, 2.0).to_numpy(),
                                   getattr(np, xdap.api.elementwise.STANDARD[name])(g, 2.0))
    np.testing.assert_array_equal(xp.zeros_like(a).to_numpy(), np.zeros_like(g))
    np.testing.assert_array_equal(xp.full_like(a, 7, dtype=xp.int32).to_numpy(),
                                  np.full_like(g, 7, dtype=np.int32))
    np.testing.assert_array_equal(xp.ones((3, 2), dtype=xp.float32).to_numpy(),
                                  np.ones((3, 2), np.float32))
    np.testing.assert_allclose(xp.linspace(0.0, 1.0, 7).to_numpy(), np.linspace(0.0, 1.0, 7))
    np.testing.assert_array_equal(xp.arange(2, 11, 3).to_numpy(), np.arange(2, 11, 3))
    np.testing.assert_array_equal(xp.asarray([[1, 2], [3, 4]]).to_numpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(xp.astype(a, xp.int64).to_numpy(), g.astype(np.int64))
    assert float(xp.sum(a)) == g.sum() and bool(xp.any(a > 5)) and not bool(xp.all(a > 5))
    np.testing.assert_array_equal(xp.matrix_transpose(a).to_numpy(), g.T)
    info = xp.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.default_dtypes()["indexing"] == np.int64
    assert hasattr(xp, "tensordot")
    # the extensions: generic code finds them (and their shared products) where it looks
    assert xp.linalg.matmul is xp.matmul and xp.linalg.vecdot is xp.vecdot
    np.testing.assert_allclose(xp.linalg.vector_norm(a).to_numpy(), np.linalg.norm(g))
    np.testing.assert_allclose(xp.fft.fftn(a).to_numpy(), np.fft.fftn(g))
    with pytest.raises(ValueError, match="device"):
        xp.zeros(3, device="gpu")


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_what_the_standard_test_suite_found(comm):
    """Cases a private run of the Array API test suite found: finfo's
    figures are Python floats; a complex operand broadcasts; the variance
    of nothing is NaN; floor_divide with one infinite operand is
    floor(x1 / x2) (the standard's special cases; NumPy gives -1 and nan);
    tensordot takes the NumPy value an element read gives."""
    f = xa.finfo(xa.float32)
    assert all(type(v) is float for v in (f.eps, f.max, f.min, f.smallest_normal, f.resolution))
    assert f.eps == float(np.finfo(np.float32).eps) and f.bits == 32
    z = xdap.from_global(np.array([1 + 2j], dtype=np.complex64), comm=comm)
    np.testing.assert_array_equal(xa.broadcast_to(z, (3, 1)).to_numpy(),
                                  np.full((3, 1), 1 + 2j, np.complex64))
    empty = xdap.from_global(np.zeros((0, 3)), comm=comm)
    assert np.isnan(float(xa.var(xdap.from_global(np.zeros(0), comm=comm))))
    assert np.isnan(float(xa.std(empty)))
    np.testing.assert_array_equal(xa.var(empty, axis=0).to_numpy(), [np.nan] * 3)
    x = xdap.from_global(np.array([-1.0, 1.0, np.inf, -np.inf, 7.0, 0.0]), comm=comm)
    y = xdap.from_global(np.array([np.inf, -np.inf, 2.0, -2.0, 2.0, np.inf]), comm=comm)
    got = (x // y).to_numpy()
    np.testing.assert_array_equal(got, [-0.0, -0.0, np.inf, np.inf, 3.0, 0.0])
    assert np.signbit(got[:2]).all()
    x //= y
    np.testing.assert_array_equal(x.to_numpy(), got)
    a = xdap.from_global(np.arange(4, dtype=np.uint8), comm=comm)
    assert int(xa.tensordot(a[1], a[3], axes=0)) == 3
    # arange's default dtype comes from its arguments, not from building the
    # array first (this one took 5.3 GB on every rank to learn "float64")
    r = xa.arange(707155597.0, step=794438234489254)
    assert r.dtype == np.float64 and r.to_numpy().tolist() == [0.0]
    assert xa.arange(np.int8(3)).dtype == np.int64 and xa.arange(1, 2, 0.25).dtype == np.float64
    # a 0-d boolean mask: NumPy's new axis of length 1 or 0
    for g in (np.zeros(0, bool), np.arange(6.0).reshape(2, 3), np.float32(2.5)):
        arr = xdap.from_global(np.asarray(g), comm=comm)
        for m in (True, False):
            got, want = arr[xa.asarray(m)].to_numpy(), np.asarray(g)[np.asarray(m)]
            assert got.shape == want.shape and np.array_equal(got, want), (g, m)
    # a mask with a zero-length dim selects nothing, whatever the array's dim
    b = xdap.from_global(np.ones((1, 3), np.int16), comm=comm)
    got = b[xdap.from_global(np.zeros(0, bool), comm=comm)]
    assert got.shape == (0, 3) and got.dtype == np.int16
    # any/all are bool also when they reduce nothing; 1-D @ 1-D is a 0-d array
    assert xa.any(xdap.from_global(np.zeros(0, np.uint8), comm=comm), axis=()).dtype == np.bool_
    v = xdap.from_global(np.arange(3.0), comm=comm)
    dot = xa.matmul(v, v)
    assert isinstance(dot, xdap.DistArray) and dot.ndim == 0 and float(dot) == 5.0
    assert bool(xa.all(dot > 0))
    # a 0-d operand's dtype counts in the promotion (NEP 50), a Python scalar's not
    u8 = xdap.from_global(np.array([1, 2, 255], np.uint8), comm=comm)
    for x0, want in ((np.array(300, np.uint16), np.uint16), (np.array(-1, np.int8), np.int16)):
        z0 = xdap.from_global(x0, comm=comm)
        for f in (xa.add, xa.bitwise_or, xa.multiply):
            r = f(z0, u8)
            assert r.dtype == want, (f, x0.dtype)
            np.testing.assert_array_equal(r.to_numpy(), getattr(np, f.__name__)(x0, u8.to_numpy()))
    assert (u8 + 1).dtype == np.uint8
    c = xdap.from_global(np.array([1 + 1j], np.complex64), comm=comm)
    c *= 2j
    assert c.dtype == np.complex64 and c.to_numpy().tolist() == [-2 + 2j]
    m = abs(xdap.from_global(np.array(3 - 4j, np.complex64), comm=comm))   # NumPy's loop
    assert m.dtype == np.float32 and float(m) == 5.0
    inf, nan = np.inf, np.nan
    z = xdap.from_global(np.array([complex(inf, 0), complex(-inf, inf), complex(-inf, nan),
                                   complex(nan, 0), 0.5 + 0.25j]), comm=comm)
    got = xa.expm1(z).to_numpy()
    assert got[0] == complex(inf, 0) and got[1] == -1 and got[2] == -1
    assert np.isnan(got[3].real) and got[3].imag == 0
    np.testing.assert_allclose(got[4], np.expm1(0.5 + 0.25j))
    # complex tanh at +-inf + yj: +-1 + 0j with y's sign (C99 and NumPy: sin(2y)'s),
    # by the library's kernel (complex128) and by NumPy's loop (complex64)
    for dt in (np.complex128, np.complex64):
        w = np.array([complex(inf, 2.0), complex(-inf, -2.0), complex(inf, 0.7), 0.3 + 0.2j], dt)
        got = xa.tanh(xdap.from_global(w, comm=comm)).to_numpy()
        assert got.dtype == dt and got[:3].real.tolist() == [1.0, -1.0, 1.0]
        assert (got[:3].imag == 0).all() and np.signbit(got[:3].imag).tolist() == [False, True, False]
        np.testing.assert_allclose(got[3], np.tanh(w[3]), rtol=1e-6)
    # tensordot over a summed dim of length 0: zeros
    e0 = xdap.from_global(np.zeros((2, 0)), comm=comm)
    np.testing.assert_array_equal(xa.tensordot(e0, np.zeros((0, 3)), axes=1).to_numpy(),
                                  np.zeros((2, 3)))
    # a vector times a matrix or a stack of matrices (zero-size ones too), and
    # complex expm1 at -0 + 0j: +0 + 0j
    rng = np.random.default_rng(1)
    for s1, s2 in (((0,), (0, 0)), ((0,), (0, 0, 0)), ((5,), (5, 3)), ((5,), (4, 2, 5, 3))):
        A, B = rng.random(s1), rng.random(s2)
        got = xa.matmul(xdap.from_global(A, comm=comm), xdap.from_global(B, comm=comm))
        assert isinstance(got, xdap.DistArray) and got.shape == (A @ B).shape
        np.testing.assert_allclose(got.to_numpy(), A @ B)
    e = xa.expm1(xdap.from_global(np.array([complex(-0.0, 0.0), complex(-0.0, -0.0)]),
                                  comm=comm)).to_numpy()
    assert (e == 0).all() and not np.signbit(e.real).any() and np.signbit(e.imag).tolist() == [False, True]
    # stacks of matrices, NumPy's batch broadcasting, batch dims distributed or not
    for s1, s2, kw in (((0, 0), (0, 0, 0), {}), ((6, 4), (3, 4, 2), {}),
                       ((5, 6, 4), (5, 4, 2), dict(dist=("c", "n", "n"))),
                       ((2, 5, 6, 4), (5, 4, 3), dict(dist=("b", "b", "n", "n")))):
        A, B = rng.random(s1), rng.random(s2)
        np.testing.assert_allclose((xdap.from_global(A, comm=comm, **kw) @ B).to_numpy(), A @ B)
    # the result's dtype is NumPy's promotion of both operands' (a uint16 vector
    # @ a uint64 matrix was labelled uint16 over uint64 values)
    u16 = xdap.from_global(np.arange(3, dtype=np.uint16), comm=comm)
    r = xa.matmul(u16, xdap.from_global(np.ones((3, 2), np.uint64), comm=comm))
    assert r.dtype == np.uint64 and r.to_numpy().tolist() == [3, 3]
