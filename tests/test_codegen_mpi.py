"""The two tutorial kernels, generated, built and applied to DistArrays on
1-4 ranks; every rank's values checked against NumPy on the global data.

Rank 0 builds each module once per launch into a fresh directory (the path
is broadcast, the verdict agreed), then every rank imports it.
"""
import pathlib
import shutil

import numpy as np
import pytest
from xnd import xnd

import xdap
from helpers import build_once
from xdap.parts import parts
from xdap.kernels import apply

EXAMPLES = pathlib.Path(__file__).parent / "kernel_examples"
_MODULES = {}


def built(comm, name):
    """Import module `name` (square | add_cpu), built once by rank 0."""
    def cfg(work):
        if name != "square":
            return EXAMPLES / "add-kernels.cfg"
        # the tutorial flow: skeleton from the header, then build
        from xdap.codegen import write_skeleton
        for f in ("square.c", "square.h"):
            shutil.copy(EXAMPLES / f, work / f)
        return write_skeleton(work / "square.h")
    return build_once(comm, _MODULES, name, cfg)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("dist", [("b",), ("c",)])
def test_square_on_1d_distarray(comm, dist):
    square = built(comm, "square")
    data = np.linspace(-3.0, 3.0, 23)
    a = xdap.from_global(data, dist=dist, comm=comm)
    got = apply(square.square, a)
    assert got.distribution == a.distribution
    # each rank: its local values are the squares of its own global elements
    idx = a.distribution.global_indices(0, comm.rank)
    assert np.array_equal(np.asarray(parts(got.local).values), data[idx] ** 2)
    assert np.array_equal(np.asarray(got.to_global()), data ** 2)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_square_on_2d_distarray_through_gumath(comm):
    """The gufunc path itself (no fast path) on each rank's local container."""
    square = built(comm, "square")
    data = np.arange(42.0).reshape(6, 7) - 20
    a = xdap.from_global(data, dist=("b", "c"), comm=comm)
    local = square.square(a.local)   # gumath dispatch on this rank's xnd
    assert np.array_equal(np.asarray(local), np.asarray(a.local) ** 2)
    got = apply(square.square, a)
    assert np.array_equal(np.asarray(got.to_global()), data ** 2)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_square_on_ragged_distarray(comm):
    """var * var * float64: the D... kernel set (xndtools' var...)."""
    square = built(comm, "square")
    rng = np.random.default_rng(3)
    rows = [rng.standard_normal(rng.integers(0, 6)).tolist() for _ in range(13)]
    a = xdap.from_global(xnd(rows, dtype="float64"), dist=("c",), comm=comm)
    local = square.square(a.local)   # through gumath's Xnd kernel
    assert str(local.type) == str(a.local.type)
    assert local.value == [[v * v for v in r] for r in a.local.value]
    got = apply(square.square, a)
    assert got.to_global().value == [[v * v for v in r] for r in rows]


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("dist", [("b",), ("c",)])
def test_gpu_tutorial_add_on_distarrays(comm, dist):
    """void add(int n, float *x, float *y, float *r): x(n), y(n) in, r(n) inplace,
    n = len(x) hidden -- on each rank's part of three DistArrays."""
    mod = built(comm, "add_cpu")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1001).astype(np.float32)
    y = rng.standard_normal(1001).astype(np.float32)
    X = xdap.from_global(x, dist=dist, comm=comm)
    Y = xdap.from_global(y, dist=dist, comm=comm)
    R = xdap.from_global(np.zeros(1001, np.float32), dist=dist, comm=comm)
    assert str(R.type).endswith("float32")
    assert mod.add(X.local, Y.local, R.local) is None   # inplace: nothing returned, R written
    idx = R.distribution.global_indices(0, comm.rank)
    assert np.array_equal(np.asarray(parts(R.local).values), x[idx] + y[idx])
    assert np.array_equal(np.asarray(R.to_global()), x + y)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_gpu_tutorial_add_through_apply(comm):
    """The same on DistArrays: N is a core dim (gufunc semantics), so it must
    be whole on every rank -- a distributed one is one clear error on every
    rank; the config says `ellipses = none`, so there are no loop dims to
    distribute and a 2-D operand is refused as gumath would."""
    mod = built(comm, "add_cpu")
    x = np.arange(50, dtype=np.float32)
    X = xdap.from_global(x, dist=("c",), comm=comm)
    R = xdap.from_global(np.zeros(50, np.float32), dist=("c",), comm=comm)
    if comm.size > 1:
        with pytest.raises(ValueError, match="core dimension N of operand 0 .* is distributed"):
            apply(mod.add, X, X, R)
    else:
        assert apply(mod.add, X, X, R) is None
        assert np.array_equal(np.asarray(R.to_global()), 2 * x)
    m = xdap.from_global(x.reshape(10, 5), comm=comm)
    with pytest.raises(ValueError, match="operand 0 has 2 dims; 'N \\* float32.* needs 1"):
        apply(mod.add, m, m, m)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_gpu_tutorial_add_rejects_mismatched_operands(comm):
    mod = built(comm, "add_cpu")
    X = xdap.from_global(np.ones(12, np.float32), comm=comm)
    Z = xdap.from_global(np.ones(12, np.float64), comm=comm)
    with pytest.raises(TypeError, match="could not find kernel"):   # float64 r: no kernel
        mod.add(X.local, X.local, Z.local)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
def test_built_kernels_are_first_class(comm):
    """A built module's function takes DistArrays, NumPy arrays, xnd and
    out= exactly like xdap.kernels.sin: no apply() needed."""
    square = built(comm, "square").square
    assert square.__gufunc__ is not None and "xdap kernel square" in repr(square)
    data = np.linspace(-2.0, 2.0, 17)
    a = xdap.from_global(data, dist=("c",), comm=comm)
    b = square(a)
    assert b.distribution == a.distribution
    np.testing.assert_array_equal(b.to_numpy(), data ** 2)
    np.testing.assert_array_equal(np.asarray(square(np.arange(4.0)).value), np.arange(4.0) ** 2)
    assert square(xnd([3.0])).value == [9.0]
    square(a, out=a)                                   # in place, like xdap.kernels
    np.testing.assert_array_equal(a.to_numpy(), data ** 2)
    i = xdap.from_global(np.arange(5), comm=comm)      # NumPy's promotion: int64 -> float64
    np.testing.assert_array_equal(square(i).to_numpy(), np.arange(5.0) ** 2)
    with pytest.raises(ValueError, match=r"could not be broadcast together .* \(17,\) \(3,\)"):
        xdap.kernels.apply(square, a, np.zeros(3))
    if comm.size > 1:                                  # the operand checks of xdap.kernels
        with pytest.raises(ValueError, match="another distribution"):
            square(a, out=xdap.from_global(data, dist=("b",), comm=comm))
