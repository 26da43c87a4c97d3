"""Kernels on DistArrays whose operand checks need no communication (fixed
layouts, ragged arrays derived from one another), on 1-4 real ranks:
results equal NumPy references on the global data, errors on every rank."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap import kernels as K
from xdap.parts import parts

RANKS = (1, 2, 3, 4)


@pytest.mark.mpi(ranks=RANKS)
def test_derived_ragged_operands_combine_without_a_collective_check():
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 5, 9)
    flat = rng.uniform(0.1, 2, int(lengths.sum()))
    rows = np.split(flat, np.cumsum(lengths)[:-1])
    x = xdap.from_global([r.tolist() for r in rows], type="var * var * float64", comm=comm)
    s = K.sin(x)
    t = K.multiply(s, x)                       # derived operands: same rows by construction
    u = K.add(t, K.exp(x), out=K.negative(x))
    expect = np.sin(flat) * flat + np.exp(flat)
    got = parts(u.to_global()).values
    np.testing.assert_allclose(got, expect, rtol=1e-14)
    # an independent array with other row lengths on some ranks still fails everywhere
    other = xdap.from_global([r.tolist() for r in rows[1:]] + [[1.0] * 5],
                             type="var * var * float64", comm=comm)
    with pytest.raises(ValueError, match="list lengths"):
        K.add(t, other)
    with pytest.raises(ValueError, match="list lengths"):
        K.add(x, x, out=other)


@pytest.mark.mpi(ranks=RANKS)
def test_fixed_operands_two_distarrays_and_out():
    comm = MPI.COMM_WORLD
    g = np.arange(1.0, 25.0).reshape(6, 4)
    a = xdap.from_global(g, dist=("b", "n"), comm=comm)
    b = xdap.from_global(2 * g, dist=("b", "n"), comm=comm)
    o = xdap.from_global(np.zeros((6, 4)), dist=("b", "n"), comm=comm)
    r = a * b - a
    assert K.divide(r, b, out=o) is o
    np.testing.assert_allclose(parts(o.to_global()).values, (g * 2 * g - g) / (2 * g))
    c = xdap.from_global(g, dist=("c", "n"), comm=comm)
    with warnings.catch_warnings():             # c is moved to a's distribution first
        warnings.simplefilter("ignore", xdap.RedistributionWarning)
        assert K.add(a, c, out=o) is o
    np.testing.assert_allclose(parts(o.to_global()).values, 2 * g)
    with pytest.raises(ValueError, match="another distribution"):   # out= is never moved
        K.add(a, b, out=xdap.zeros((6, 4), dist=("c", "n"), comm=comm))
    i = xdap.from_global(np.zeros((6, 4), np.int64), dist=("b", "n"), comm=comm)
    with pytest.raises(TypeError, match="out= has dtype int64"):
        K.add(a, b, out=i)


@pytest.mark.mpi(ranks=RANKS)
def test_independent_ragged_operands_checked_once_then_remembered():
    comm = MPI.COMM_WORLD
    rows = [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0], [7.0], [8.0, 9.0]]
    x = xdap.from_global(rows, type="var * var * float64", comm=comm)
    y = xdap.from_global(rows, type="var * var * float64", comm=comm)
    z = xdap.from_global([[0.5]] * 5, type="var * var * float64", comm=comm)   # other lengths
    assert x.parts.rows is None and y.parts.rows is None
    first = K.add(x, y)                      # the rows are compared collectively, once ...
    assert x.parts.rows is not None and x.parts.rows is y.parts.rows is first.parts.rows
    # ... and remembered: the same call compares nothing again (it still
    # agrees on the kernel and the operand types, as every kernel call does)
    again = K.add(x, y)
    assert again.parts.rows is x.parts.rows
    for _ in range(2):                       # a mismatch is never remembered
        with pytest.raises(ValueError, match="list lengths"):
            K.add(x, z)
    assert z.parts.rows is not x.parts.rows
    np.testing.assert_array_equal(parts(first.to_global()).values, 2 * np.concatenate(rows))
    np.testing.assert_array_equal(again.parts.values, 2 * x.parts.values)
