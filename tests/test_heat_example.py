"""examples/heat: the time-stepping loop a user writes -- a stencil kernel
built from the example's .cfg, halo updates bound once -- equals the same
iterations in serial NumPy to the bit, on every rank count."""
import os
import sys

import numpy as np
import pytest
from mpi4py import MPI

import xdap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples", "heat"))
import heat_solver  # noqa: E402


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("shape", [(37, 29), (16, 16)])
def test_the_heat_example_equals_serial_numpy(comm, shape):
    u, residuals = heat_solver.solve(shape, 23, comm, every=5)
    got = u.to_numpy()
    ref = heat_solver.serial(shape, 23)
    assert np.array_equal(got, ref)
    # the residual: the largest change of step 20 (every 5 steps)
    change = np.abs(heat_solver.serial(shape, 20) - heat_solver.serial(shape, 19)).max()
    assert len(residuals) == 4 and residuals[-1] == change


def test_from_function_arrays_are_writable():
    """from_function's buffer is the array's own, whatever f returned (a
    full-shape result used to come back as a read-only broadcast view)."""
    comm = MPI.COMM_SELF
    for f in (lambda i: np.zeros(np.shape(i)), lambda i: 1.0, lambda i: i * 2):
        a = xdap.from_function(f, 5, comm=comm)
        assert a.local_numpy().flags.writeable
        a.local_numpy()[0] = 9
        assert a.to_numpy()[0] == 9
