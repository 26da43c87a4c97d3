"""Kernels with core dimensions on DistArrays (gufunc semantics): loop dims
distributed and kept, core dims whole on every rank, result core dims
undistributed; a distributed core dim is the same ValueError on every rank.
Every value is checked against NumPy on the global array, on 1-4 ranks,
with empty ranks among them.

The kernels are built once per launch by rank 0 (tests/kernel_examples:
linalg.cfg -- a row sum and a local mat-vec -- and ops.cfg -- dot, cumsum,
outer, scale).
"""
import pathlib

import numpy as np
import pytest

import xdap
from helpers import build_once

EXAMPLES = pathlib.Path(__file__).parent / "kernel_examples"
RANKS = (1, 2, 3, 4)
_MODULES = {}


def built(comm, cfg, name):
    return build_once(comm, _MODULES, name, lambda work: EXAMPLES / cfg)


def linalg(comm):
    return built(comm, "linalg.cfg", "xk_linalg")


def ops(comm):
    return built(comm, "ops.cfg", "xk_testops")


def row_sizes(P, n):
    """Owned rows per rank with empty ranks: the first, a middle, the last."""
    pattern = {1: [n], 2: [0, n], 3: [n - 3, 0, 3], 4: [2, 0, n - 2, 0]}
    return pattern[P]


@pytest.fixture(params=["block", "cyclic", "empty ranks"])
def rows(request, comm):
    """(dist, per-dim options) for the loop dim."""
    if request.param == "block":
        return ("b",), {}
    if request.param == "cyclic":
        return ("c",), {}
    return ("b",), {"sizes": (row_sizes(comm.size, 7),)}


@pytest.mark.mpi(ranks=RANKS)
def test_row_sum_keeps_the_row_distribution(comm, rows):
    dist, kw = rows
    A = np.arange(7 * 5, dtype=float).reshape(7, 5) ** 1.5
    a = xdap.from_global(A, dist=dist, comm=comm, **kw)
    s = linalg(comm).rowsum(a)
    assert s.distribution == a.distribution.leading(1)
    assert s.local_numpy().shape == (a.local_numpy().shape[0],)
    np.testing.assert_allclose(s.to_numpy(), A.sum(axis=1), rtol=1e-14)
    # out=: the result's distribution and type, written in place
    out = xdap.zeros((7,), comm=comm, dist=dist, **kw)
    assert linalg(comm).rowsum(a, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), A.sum(axis=1), rtol=1e-14)


@pytest.mark.mpi(ranks=RANKS)
def test_per_row_transform_and_outer(comm, rows):
    dist, kw = rows
    A = np.sin(np.arange(7 * 4, dtype=float)).reshape(7, 4)
    a = xdap.from_global(A, dist=dist, comm=comm, **kw)
    c = ops(comm).cumsum(a)
    assert c.distribution == a.distribution
    np.testing.assert_allclose(c.to_numpy(), np.cumsum(A, axis=1), rtol=1e-14)
    o = ops(comm).outer(a, a)
    assert o.distribution == a.distribution.with_trailing((4,))
    np.testing.assert_allclose(o.to_numpy(), np.einsum("ij,ik->ijk", A, A), rtol=1e-14)
    d = ops(comm).dot(a, np.arange(4.0))          # a replicated core-only operand
    np.testing.assert_allclose(d.to_numpy(), A @ np.arange(4.0), rtol=1e-14)


@pytest.mark.mpi(ranks=RANKS)
def test_local_matvec_on_row_distributed_stacks(comm, rows):
    """M * N * T, N * T -> M * T: R matrices distributed by R, against one
    replicated vector and against one vector per matrix."""
    dist, kw = rows
    rng = np.random.default_rng(3)
    A = rng.standard_normal((7, 3, 4))
    X = rng.standard_normal((7, 4))
    a = xdap.from_global(A, dist=dist, comm=comm, **kw)
    x = xdap.from_global(X, dist=dist, comm=comm, **kw)
    y = linalg(comm).matvec(a, X[0])
    assert y.distribution == a.distribution.leading(1).with_trailing((3,))
    np.testing.assert_allclose(y.to_numpy(), A @ X[0], rtol=1e-13)
    y = linalg(comm).matvec(a, x)
    np.testing.assert_allclose(y.to_numpy(), np.einsum("rmn,rn->rm", A, X), rtol=1e-13)


@pytest.mark.mpi(ranks=RANKS)
def test_inplace_core_kernel_writes_the_rows(comm, rows):
    """scale(a, x): x(n) inplace, a per row (a loop-dim operand) or a scalar."""
    dist, kw = rows
    X = np.arange(7 * 3, dtype=float).reshape(7, 3)
    x = xdap.from_global(X, dist=dist, comm=comm, **kw)
    f = xdap.from_global(np.arange(7.0), dist=dist, comm=comm, **kw)
    assert ops(comm).scale(f, x) is None
    np.testing.assert_array_equal(x.to_numpy(), X * np.arange(7.0)[:, None])
    ops(comm).scale(0.5, x)
    np.testing.assert_array_equal(x.to_numpy(), 0.5 * X * np.arange(7.0)[:, None])


RAGGED = [[1.0, 2.0, 3.0], [4.0], [], [5.0, 6.0], [7.0, 8.0, 9.0, 10.0], [11.0]]


@pytest.mark.mpi(ranks=RANKS)
def test_ragged_rows(comm):
    """var * var * float64: the var family; a row sum is a fixed array of rows."""
    r = xdap.from_global(RAGGED, type="var * var * float64", comm=comm)
    s = linalg(comm).rowsum(r)
    assert s.parts.info.type_string().endswith("* float64") and not s.parts.info.ragged
    assert s.distribution == r.distribution
    np.testing.assert_allclose(s.to_numpy(), [sum(row) for row in RAGGED])
    d = ops(comm).dot(r, r)
    np.testing.assert_allclose(d.to_numpy(), [float(np.dot(row, row)) for row in RAGGED])
    c = ops(comm).cumsum(r)
    assert c.parts.rows is r.parts.rows             # the same rows, by the signature
    assert c.to_global().value == [np.cumsum(row).tolist() for row in RAGGED]
    back = xdap.kernels.add(c, r)                   # shared rows: no agreement needed
    assert back.to_global().value == [(np.cumsum(row) + row).tolist() for row in RAGGED]


@pytest.mark.mpi(ranks=RANKS)
def test_distributed_core_dims_are_refused_on_every_rank(comm):
    P = comm.size
    A = np.arange(24.0).reshape(4, 6)
    cols = xdap.from_global(A, dist=("n", "b"), comm=comm)
    vec = xdap.from_global(np.arange(6.0), comm=comm)
    if P == 1:          # nothing is distributed on one rank: gufunc semantics
        np.testing.assert_allclose(linalg(comm).rowsum(cols).to_numpy(), A.sum(axis=1))
        s = linalg(comm).rowsum(vec)
        assert s.ndim == 0 and float(s.to_global().value) == 15.0
        return
    with pytest.raises(ValueError, match=r"core dimension N of operand 0 \(its dim 1\) is "
                                         r"distributed .*redistribute it first"):
        linalg(comm).rowsum(cols)
    with pytest.raises(ValueError, match="the kernel consumes every dim of it"):
        linalg(comm).rowsum(vec)
    # the redistribution the message names makes it work
    rows = cols.redistribute(dist=("b", "n"))
    np.testing.assert_allclose(linalg(comm).rowsum(rows).to_numpy(), A.sum(axis=1))


@pytest.mark.mpi(ranks=(1, 3))
def test_bad_operands(comm):
    A = np.ones((5, 4))
    a = xdap.from_global(A, comm=comm)
    with pytest.raises(TypeError, match="may hold the kernel's core dims only"):
        ops(comm).dot(a, np.ones((5, 4)))
    with pytest.raises(ValueError, match="core dimension N of operand 1 has size 3, another"):
        ops(comm).dot(a, np.ones(3))
    other = xdap.from_global(A, dist=("c",), comm=comm)
    if comm.size > 1:
        with pytest.raises(ValueError, match="loop dimensions are distributed otherwise"):
            ops(comm).dot(a, other)
    with pytest.raises(ValueError, match="out= .* the kernel returns"):
        linalg(comm).rowsum(a, out=xdap.zeros((5, 4), comm=comm))
    with pytest.raises(TypeError, match="is a scalar where"):
        linalg(comm).matvec(xdap.from_global(np.ones((5, 2, 4)), comm=comm), 1.0)


@pytest.mark.mpi(ranks=RANKS)
def test_operands_convert_as_numpy_gufuncs_do(comm, rows):
    """A prototype for float64 only takes float32 and integer data converted
    (NumPy's gufunc rule: the first loop every operand converts to, exactly
    first) -- DistArrays, NumPy operands beside them and plain NumPy."""
    dist, kw = rows
    for dtype in (np.float32, np.int32, np.int64, np.uint16):
        A = (np.arange(7 * 5) % 11).astype(dtype).reshape(7, 5)
        a = xdap.from_global(A, dist=dist, comm=comm, **kw)
        s = linalg(comm).rowsum(a)
        assert s.dtype == np.float64 and s.distribution == a.distribution.leading(1)
        np.testing.assert_allclose(s.to_numpy(), A.astype(np.float64).sum(axis=1))
        y = linalg(comm).matvec(xdap.from_global(A.reshape(7, 1, 5), dist=dist, comm=comm, **kw),
                                np.arange(5, dtype=np.float32))
        np.testing.assert_allclose(y.to_numpy()[:, 0], A.astype(np.float64) @ np.arange(5.0))
        np.testing.assert_allclose(linalg(comm).rowsum(A).value, A.astype(np.float64).sum(axis=1))
    # nothing converts complex to float64 without loss: one clear error, every rank
    with pytest.raises(TypeError, match=r"rowsum: no kernel takes complex128 \(its prototypes take "
                                        r"float64\)"):
        linalg(comm).rowsum(np.ones((2, 3), dtype=np.complex128))
    z = xdap.from_global(np.ones((7, 3), dtype=np.complex128), dist=dist, comm=comm, **kw)
    with pytest.raises(TypeError, match=r"rowsum: no kernel takes complex128 for operand 0"):
        linalg(comm).rowsum(z)


def test_stacks_of_calls_are_looped_in_c(tmp_path):
    """A stack of calls (one leading dim) runs through the batched kernel
    sets -- contiguous stacks through the fast path, strided ones and
    stacks of a column-major argument through one call per item -- with
    the values of the per-item calls; kernels without hidden scalars too."""
    import importlib.util
    from xnd import xnd
    from xdap.codegen import build
    (tmp_path / "st.h").write_text("double sum3(const double *x);\n"
                                   "void axpy3(double *y, const double *x);\n")
    (tmp_path / "st.c").write_text(
        '#include "st.h"\n'
        "double sum3(const double *x) { return x[0] + x[1] + x[2]; }\n"
        "void axpy3(double *y, const double *x) { for (int i = 0; i < 3; i++) y[i] += 2 * x[i]; }\n")
    (tmp_path / "st.cfg").write_text("[MODULE xk_stacks]\nincludes = st.h\nsources = st.c\n"
                                     "[KERNEL sum3]\nprototypes = double sum3(const double *x);\n"
                                     "input = x(3)\n"
                                     "[KERNEL axpy3]\nprototypes = void axpy3(double *y, const double *x);\n"
                                     "inplace = y(3)\ninput = x(3)\n")
    path = build(tmp_path / "st.cfg", tmp_path)
    spec = importlib.util.spec_from_file_location("xk_stacks", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert any("XdapBatch" in k for k in m.sum3.kernels)
    X = np.arange(30.0).reshape(10, 3)
    for x in (xnd.from_buffer(X), xnd(X.tolist())[::2], xnd(X.tolist())[:, ::-1]):
        want = np.array(x.value).sum(axis=1)
        np.testing.assert_array_equal(np.array(m.sum3(x).value), want)
    Y = np.ones((10, 3))
    y = xnd.from_buffer(Y.copy())
    m.axpy3(y, xnd.from_buffer(X))                       # both stacked
    np.testing.assert_array_equal(np.array(y.value), Y + 2 * X)
    y = xnd(Y.tolist())[::3]                              # strided stack, one x for all
    m.axpy3(y, xnd([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(np.array(y.value), Y[::3] + 2 * np.array([1.0, 2.0, 3.0]))
