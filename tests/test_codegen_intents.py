"""Every intent of the .cfg format with xndtools' meaning, built and called
on xnd containers (scalars, 1-D and looped 2-D) and on DistArrays: what the
call returns and what happens to the caller's container.

    input           read: a scalar behind a pointer is a private copy; an
                    array is the caller's own buffer when contiguous (a
                    function that writes its input writes the caller's
                    data, as in xndtools), a copy when strided
    inplace, inout  written in the caller's container (a by-value scalar
                    cannot be: an input then)
    input+output    the caller's value in, the result returned, caller unchanged
    inplace+output  written in the caller's container and returned
"""
import pathlib

import numpy as np
import pytest
from xnd import xnd

import xdap
from helpers import import_module_at
from xdap.codegen import build

EXAMPLES = pathlib.Path(__file__).parent / "kernel_examples"


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return import_module_at(build(EXAMPLES / "intents.cfg", tmp_path_factory.mktemp("i")),
                            "xk_intents")


def value(x):
    return None if x is None else x.value


@pytest.mark.parametrize("name, returned, caller", [
    ("p_input", None, 0), ("p_inplace", None, 10), ("p_inout", None, 10),
    ("p_input_output", 10, 0), ("p_inplace_output", 10, 10), ("p_inout_output", 10, 10),
    ("v_inplace", 20, 0), ("v_input_output", 0, 0),
])
def test_scalar_intents(m, name, returned, caller):
    f = getattr(m, name)
    for start in (xnd(5, type="int64"), xnd([5, 7], type="2 * int64"),
                  xnd([[5], [7]], type="2 * 1 * int64")):
        before = np.array(start.value)
        got = f(start)
        want = None if returned is None else (before + returned).tolist()
        assert value(got) == want, (name, start)
        assert start.value == (before + caller).tolist(), (name, start)


@pytest.mark.parametrize("name, returned, caller", [
    ("arr_input", None, 1), ("arr_inplace", None, 2),
    ("arr_input_output", 2, 1), ("arr_inplace_output", 2, 2),
])
def test_array_intents(m, name, returned, caller):
    f = getattr(m, name)
    base = np.arange(6.0).reshape(2, 3) + 1
    for x in (xnd(base[0].tolist()), xnd(base.tolist()), xnd(base.tolist())[:, ::2]):
        before = np.array(x.value)
        strided = x.type.shape != (3,) and x.type.shape[1] == 2
        # arr_input writes its input: seen by the caller unless it was copied
        seen = 2 if name == "arr_input" and not strided else caller
        got = f(x)
        assert value(got) == (None if returned is None else (before * returned).tolist())
        assert np.array_equal(np.array(x.value), before * seen), (name, x)


@pytest.mark.mpi(ranks=(1, 2))
def test_intents_on_distarrays(comm, m):
    """An inplace kernel writes every rank's part; an input one reads a
    strided part through a copy (xndtools' rule), and a contiguous one --
    a view's rows of one element -- in place: the writes of an input
    argument reach the caller's array, as on a plain container."""
    g = np.arange(24.0).reshape(6, 4) + 1
    a = xdap.from_global(g, comm=comm)
    assert m.arr_input(a[:, ::2]) is None         # rows of 2 with a step: copied in
    np.testing.assert_array_equal(a.to_numpy(), g)
    assert m.arr_input(a[:, 1::4]) is None        # rows of one element: the array's own
    g[:, 1] *= 2
    np.testing.assert_array_equal(a.to_numpy(), g)
    assert m.arr_inplace(a) is None
    np.testing.assert_array_equal(a.to_numpy(), 2 * g)
    r = m.arr_inplace_output(a)
    np.testing.assert_array_equal(r.to_numpy(), 4 * g)
    np.testing.assert_array_equal(a.to_numpy(), 4 * g)
