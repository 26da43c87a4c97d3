"""Properties on every layout, where the standard's suite is thin (issue 52):
item assignment with every key kind, reshape and permute_dims views, and
take / take_along_axis with keys in another distribution -- each checked
against NumPy on the global array.

The layouts: blocks, blocks with an empty rank, cyclic (block 1), block-
cyclic with a partial last block, a 2-D grid with the trailing dim split
(uneven), and rows undistributed.  hypothesis draws derandomized (the same
examples on every rank: the calls are collective); a draw is one global
NumPy array, one layout, one operation.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xdap
import xdap.array_api as xp
from mpi4py import MPI

RANKS = (1, 2, 3, 4)
SETTINGS = settings(derandomize=True, database=None, max_examples=40, deadline=None,
                    suppress_health_check=list(HealthCheck))


def layouts(P, shape):
    """The layouts of an array of ``shape`` on ``P`` ranks, by name:
    ``from_global``'s arguments."""
    rows = shape[0]
    out = {"blocks": dict(dist=("b",) + ("n",) * (len(shape) - 1)),
           "cyclic": dict(dist=("c",) + ("n",) * (len(shape) - 1)),
           "block-cyclic": dict(dist=("c",) + ("n",) * (len(shape) - 1),
                                block_size=(next((b for b in range(2, rows) if rows % b), 2),)
                                + (None,) * (len(shape) - 1))}
    empty = [0] * P
    empty[-1] = rows                                  # every rank but the last holds nothing
    out["one rank holds all"] = dict(dist=("b",) + ("n",) * (len(shape) - 1),
                                     sizes=(empty,) + (None,) * (len(shape) - 1))
    if len(shape) >= 2:
        grid = (2, P // 2) if P == 4 else (1, P)
        cols = shape[1]
        sizes = [cols // grid[1]] * grid[1]
        sizes[0] += cols - sum(sizes)                 # uneven: the first takes the rest
        out["2-D grid"] = dict(dist=("b", "b") + ("n",) * (len(shape) - 2),
                               grid=grid + (1,) * (len(shape) - 2),
                               sizes=(None, sizes) + (None,) * (len(shape) - 2))
        out["rows whole"] = dict(dist=("n", "b") + ("n",) * (len(shape) - 2))
    return out


shapes = st.tuples(st.integers(1, 9), st.integers(1, 6))


def _array(comm, g, layout):
    return xdap.from_global(g, comm=comm, **layouts(comm.size, g.shape)[layout])


def _layout_of(data, comm, shape):
    return data.draw(st.sampled_from(sorted(layouts(comm.size, shape))), label="layout")


def _index(n):
    return st.integers(-n, n - 1)


def _slice(n):
    ends = st.none() | st.integers(-n - 1, n + 1)
    return st.builds(slice, ends, ends, st.none() | st.sampled_from([1, 2, 3, -1, -2]))


def _key(data, shape):
    """A key of every kind the standard's ``__setitem__`` takes (and
    NumPy's integer arrays), for an array of ``shape``."""
    r, c = shape
    kind = data.draw(st.sampled_from(["int", "slice", "int, slice", "slice, slice", "...",
                                      "..., int", "mask", "row mask", "rows", "rows, slice"]),
                     label="key kind")
    if kind == "int":
        return data.draw(_index(r))
    if kind == "slice":
        return data.draw(_slice(r))
    if kind == "int, slice":
        return data.draw(_index(r)), data.draw(_slice(c))
    if kind == "slice, slice":
        return data.draw(_slice(r)), data.draw(_slice(c))
    if kind == "...":
        return Ellipsis
    if kind == "..., int":
        return Ellipsis, data.draw(_index(c))
    if kind == "mask":
        return np.array(data.draw(st.lists(st.booleans(), min_size=r * c, max_size=r * c))
                        ).reshape(r, c)
    if kind == "row mask":
        return np.array(data.draw(st.lists(st.booleans(), min_size=r, max_size=r)))
    rows = np.array(data.draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=4,
                                       unique=True)))
    return rows if kind == "rows" else (rows, data.draw(_slice(c)))


@pytest.mark.mpi(ranks=RANKS)
def test_setitem_with_every_key_on_every_layout(comm):
    """``a[key] = value`` -- a scalar, a NumPy array of the selection's
    shape, or a DistArray of another layout -- equals NumPy's, and the
    array keeps its layout; where xdap refuses (an integer-array key, which
    the standard's ``__setitem__`` does not take; a DistArray value with a
    mask) it is one TypeError on every rank and the array is unchanged."""
    @SETTINGS
    @given(st.data())
    def check(data):
        shape = data.draw(shapes, label="shape")
        g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        a = _array(comm, g, _layout_of(data, comm, shape))
        key = _key(data, shape)
        want = g.copy()
        target = want[key]
        value_kind = data.draw(st.sampled_from(["scalar", "numpy", "distarray"]), label="value")
        if value_kind == "scalar" or np.ndim(target) == 0:
            value = -1.5
        else:
            value = -np.arange(target.size, dtype=np.float64).reshape(target.shape) - 1
        want[key] = value
        if value_kind == "distarray" and np.ndim(value) >= 1 and np.size(value) >= 1:
            value = _array(comm, np.asarray(value), data.draw(
                st.sampled_from(sorted(layouts(comm.size, np.shape(value)))), label="value layout"))
        before = a.distribution
        rows = isinstance(key, np.ndarray) and key.dtype.kind == "i" or \
            isinstance(key, tuple) and isinstance(key[0], np.ndarray)
        masked = isinstance(key, np.ndarray) and key.dtype == bool
        if rows or masked and hasattr(type(value), "__xdap_wrap__"):
            with pytest.raises(TypeError):
                a[key] = value
            np.testing.assert_array_equal(a.to_numpy(), g)
            return
        a[key] = value
        np.testing.assert_array_equal(a.to_numpy(), want)
        assert a.distribution == before
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_reshape_and_permute_on_every_layout(comm):
    """``reshape`` (to every shape of the same size, one -1 inferred) and
    ``permute_dims`` of a 3-D array equal NumPy's -- views where the layout
    allows (rows in blocks), moves elsewhere -- and a view written through
    writes the array."""
    @SETTINGS
    @given(st.data())
    def check(data):
        shape = data.draw(st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(1, 3)),
                          label="shape")
        g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        a = _array(comm, g, _layout_of(data, comm, shape))
        n = g.size
        divisors = [k for k in range(1, n + 1) if n % k == 0]
        k = data.draw(st.sampled_from(divisors), label="rows")
        new = data.draw(st.sampled_from([(k, -1), (-1, k), (n,), (k, n // k, 1)]), label="new")
        np.testing.assert_array_equal(xp.reshape(a, new).to_numpy(), g.reshape(new))
        perm = tuple(data.draw(st.permutations(range(3)), label="perm"))
        np.testing.assert_array_equal(xp.permute_dims(a, perm).to_numpy(), g.transpose(perm))
        np.testing.assert_array_equal(a.mT.to_numpy(), np.swapaxes(g, -1, -2))
        view = xp.reshape(a, (shape[0], -1))
        # a view on one rank is a view on all (a rank without rows shares nothing)
        if comm.allreduce(bool(np.shares_memory(view.parts.values, a.parts.values)),
                          op=MPI.LOR):
            view[0] = 99.0
            want = g.copy().reshape(shape[0], -1)
            want[0] = 99.0
            np.testing.assert_array_equal(a.to_numpy().reshape(shape[0], -1), want)
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_take_with_keys_of_another_distribution(comm):
    """``take`` along each axis and ``take_along_axis``, the indices a
    DistArray laid out otherwise than ``x`` (or a NumPy array), equal
    NumPy's."""
    @SETTINGS
    @given(st.data())
    def check(data):
        shape = data.draw(shapes, label="shape")
        g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 1.5
        layout = _layout_of(data, comm, shape)
        a = _array(comm, g, layout)
        axis = data.draw(st.sampled_from([0, 1]), label="axis")
        idx = np.array(data.draw(st.lists(st.integers(0, shape[axis] - 1), min_size=1,
                                          max_size=7)))
        key = data.draw(st.sampled_from(["numpy", "distarray"]), label="key")
        ind = idx if key == "numpy" else _array(comm, idx, data.draw(
            st.sampled_from(sorted(layouts(comm.size, idx.shape))), label="key layout"))
        np.testing.assert_array_equal(xp.take(a, ind, axis=axis).to_numpy(),
                                      np.take(g, idx, axis=axis))
        along = np.array(data.draw(st.lists(st.integers(0, shape[axis] - 1),
                                            min_size=g.size, max_size=g.size))).reshape(shape)
        # the standard's take_along_axis takes an array of the namespace: x's own
        # layout, or another
        ind2 = _array(comm, along, layout if key == "numpy" else data.draw(
            st.sampled_from(sorted(layouts(comm.size, shape))), label="along layout"))
        np.testing.assert_array_equal(xp.take_along_axis(a, ind2, axis=axis).to_numpy(),
                                      np.take_along_axis(g, along, axis=axis))
    check()


@pytest.mark.mpi(ranks=RANKS)
def test_mask_assignment_of_arrays_on_every_layout(comm):
    """``a[mask] = v`` with ``v`` an array of the selection's shape, for a
    mask of the array's shape and one of its leading dim, on every layout
    (cyclic, grids, empty ranks): each rank's selected elements take their
    places in the selection's C order, as NumPy's."""
    rng = np.random.default_rng(21)
    g = rng.standard_normal((7, 5))
    for layout in sorted(layouts(comm.size, g.shape)):
        for mask in (rng.random(g.shape) < 0.6, rng.random(7) < 0.6, np.zeros((7, 5), bool)):
            want = g.copy()
            value = np.arange(want[mask].size, dtype=np.float64).reshape(want[mask].shape) + 100
            want[mask] = value
            a = _array(comm, g, layout)
            a[mask] = value
            np.testing.assert_array_equal(a.to_numpy(), want, err_msg=f"{layout} {mask.shape}")
            b = _array(comm, g, layout)
            b[mask] = value[:1] if len(value) else value      # broadcast, as NumPy does
            want2 = g.copy()
            want2[mask] = value[:1] if len(value) else value
            np.testing.assert_array_equal(b.to_numpy(), want2, err_msg=f"{layout} broadcast")
    a = _array(comm, g, "blocks")
    with pytest.raises(ValueError, match="does not broadcast"):
        a[g > 0] = np.arange(3.0)
    np.testing.assert_array_equal(a.to_numpy(), g)
