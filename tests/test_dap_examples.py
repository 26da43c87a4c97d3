"""Every worked example of DAP 0.10.0 (2.1-2.12) and 0.9.0 (7.1-7.3), on the
number of ranks the example uses: as export (``from_global`` then
``__distarray__`` gives the spec's buffers and dim_data) and as import
(the spec's dicts through ``from_distarray`` give the full array)."""
import numpy as np
import pytest
from mpi4py import MPI

import xdap
from dap_examples import EXAMPLES, expected_for, normalise

BY_RANKS = {}
for _name in EXAMPLES:
    BY_RANKS.setdefault(int(np.prod([len(d) for d in EXAMPLES[_name][3]])), []).append(_name)


def check_export(name):
    comm = MPI.COMM_WORLD
    version, full, opts, _ = EXAMPLES[name]
    a = xdap.from_global(full, comm=comm, **opts)
    d = a.__distarray__(version=version)
    buffer, dim_data = expected_for(name, a.distribution.coords)
    assert d["__version__"] == version
    got = np.asarray(memoryview(d["buffer"]))
    np.testing.assert_array_equal(got, buffer)
    # The spec's examples leave out one_to_one (= False) even where the
    # indices partition the dimension; xdap states it when it holds.
    dim_data = [dict(x, one_to_one=True) if x["dist_type"] == "u" else x for x in dim_data]
    assert [normalise(x) for x in d["dim_data"]] == [normalise(x) for x in dim_data]
    assert np.shares_memory(d["buffer"], np.asarray(a.local)), "export must not copy"


def check_import(name):
    comm = MPI.COMM_WORLD
    version, full, _, dims = EXAMPLES[name]
    grid = tuple(len(d) for d in dims)
    coords = np.unravel_index(comm.rank, grid)
    buffer, dim_data = expected_for(name, coords)
    a = xdap.from_distarray({"__version__": version, "buffer": buffer, "dim_data": dim_data},
                            comm=comm)
    assert a.grid == grid
    assert a.global_shape == full.shape
    np.testing.assert_array_equal(np.asarray(a.to_global()), full)
    assert np.shares_memory(np.asarray(a.local), buffer), "import must not copy"


def _examples_on(n):
    @pytest.mark.mpi(ranks=(n,))
    @pytest.mark.parametrize("name", BY_RANKS[n])
    def test(name):
        check_export(name)
        check_import(name)
    test.__doc__ = f"The spec examples that use {n} ranks, on {n} ranks."
    return test


test_two_rank_examples = _examples_on(2)
test_three_rank_examples = _examples_on(3)
test_four_rank_examples = _examples_on(4)
test_eight_rank_examples = _examples_on(8)


def test_every_example_is_covered():
    assert sorted(sum(BY_RANKS.values(), [])) == sorted(EXAMPLES)
    assert len(EXAMPLES) == 15
