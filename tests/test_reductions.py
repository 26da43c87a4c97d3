"""Reductions on real ranks against NumPy / masked-array / pure-Python
references computed from the global data: every op, axes subsets, fixed,
optional and ragged data, every distribution kind."""
import numpy as np
import pytest

import xdap

OPS = ["sum", "prod", "min", "max", "mean", "count", "any", "all"]
AXES = [None, 0, 1, (0, 1), -1]


def unstructured(n, nprocs, overlap):
    rng = np.random.default_rng(7)
    chunks = np.array_split(rng.permutation(n), nprocs)
    if overlap:
        chunks = [np.unique(np.concatenate([c, chunks[(i + 1) % nprocs][:overlap]]))
                  for i, c in enumerate(chunks)]
    return [c.tolist() for c in chunks]


def dists(comm, n):
    return {
        "block": dict(dist=("b", "b")),
        "padded periodic": dict(dist=("b", "b"), padding=((1, 1), (1, 1)), periodic=(True, False)),
        "cyclic x block": dict(dist=("c", "b")),
        "block-cyclic": dict(dist=("b", "c"), block_size=(None, 2)),
        "unstructured shared": dict(dist=("u", "n"), indices=(unstructured(n, comm.size, 2), None)),
    }


DIST_NAMES = ["block", "padded periodic", "cyclic x block", "block-cyclic", "unstructured shared"]


def data(kind):
    rng = np.random.default_rng(3)
    shape = (9, 7)
    if kind == "float64":
        return rng.standard_normal(shape)
    if kind == "int32":
        return rng.choice(np.array([-1, 1, 2, 3], np.int32), shape)
    if kind == "bool":
        return rng.random(shape) < 0.7
    if kind == "complex128":
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if kind == "?float64":
        mask = rng.random(shape) < 0.3
        mask[2, :] = True                       # a row with nothing valid
        mask[:, 4] = True                       # a column with nothing valid
        return np.ma.masked_array(rng.standard_normal(shape), mask=mask)
    if kind == "?int64":
        return np.ma.masked_array(rng.choice(np.array([-2, 1, 3]), shape),
                                  mask=rng.random(shape) < 0.4)
    raise AssertionError(kind)


def reference(g, op, axis):
    """NumPy (masked arrays for optional data); None marks NA."""
    m = g if isinstance(g, np.ma.MaskedArray) else np.ma.masked_array(g, mask=np.zeros(g.shape, bool))
    ax = axis
    if op == "sum":
        r = np.ma.sum(m, axis=ax)
        r = np.ma.filled(r, 0)
    elif op == "prod":
        r = np.ma.filled(np.ma.prod(m, axis=ax), 1)
    elif op == "count":
        r = np.ma.count(m, axis=ax)
    elif op == "any":
        r = np.ma.filled(np.ma.any(m != 0, axis=ax), False)
    elif op == "all":
        r = np.ma.filled(np.ma.all(m != 0, axis=ax), True)
    else:
        r = {"min": np.ma.min, "max": np.ma.max, "mean": np.ma.mean}[op](m, axis=ax)
    if r is np.ma.masked:
        return None
    if np.ma.isMaskedArray(r):
        na = np.ma.getmaskarray(r)
        return np.where(na, None, np.asarray(r.data).astype(object)).tolist()
    return np.asarray(r).tolist()


def close(got, want):
    if isinstance(want, list):
        assert len(got) == len(want), (got, want)
        for x, y in zip(got, want):
            close(x, y)
    elif want is None or got is None:
        assert got is want, (got, want)
    else:
        assert np.isclose(got, want, rtol=1e-12, atol=1e-12), (got, want)


def check(a, g, op, axis):
    r = getattr(a, op)(axis)
    want = reference(g, op, axis)
    if isinstance(r, xdap.DistArray):
        close(r.to_global().value, want)
        # every rank's local part (replicated along the reduced grid axes)
        w = np.array(want, dtype=object)
        d = r.distribution
        idx = np.ix_(*[d.global_indices(k) for k in range(d.ndim)])
        close(r.local.value, w[idx].tolist())
    else:
        close(r, want)


@pytest.mark.mpi
@pytest.mark.parametrize("dist", DIST_NAMES)
@pytest.mark.parametrize("kind", ["float64", "?float64"])
def test_every_op_and_axes(comm, dist, kind):
    g = data(kind)
    a = xdap.from_global(g, comm=comm, **dists(comm, g.shape[0])[dist])
    for op in OPS:
        for axis in AXES:
            check(a, g, op, axis)


@pytest.mark.mpi
@pytest.mark.parametrize("kind", ["int32", "bool", "?int64", "complex128"])
def test_other_dtypes(comm, kind):
    g = data(kind)
    a = xdap.from_global(g, dist=("b", "b"), comm=comm)
    for op in OPS:
        if kind == "complex128" and op in ("min", "max"):
            with pytest.raises(TypeError, match="complex"):
                a.min()
            continue
        for axis in (None, 0, 1):
            check(a, g, op, axis)
    want_dtype = {"int32": "int64", "bool": "int64", "?int64": "int64", "complex128": "complex128"}
    # NumPy scalars of NumPy's result dtypes (None only where NA)
    assert a.sum().dtype == np.dtype(want_dtype[kind])
    assert a.count().dtype == np.int64 and a.any().dtype == np.bool_


@pytest.mark.mpi
def test_three_d_axis_subsets(comm):
    rng = np.random.default_rng(5)
    g = rng.standard_normal((5, 6, 7))
    a = xdap.from_global(g, dist=("b", "b", "b"), comm=comm)
    for axis in [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), None]:
        for op in ("sum", "max", "mean"):
            check(a, g, op, axis)


def ragged_data():
    rng = np.random.default_rng(11)
    rows = []
    for i in range(13):
        n = int(rng.integers(0, 5)) if i % 4 else 0          # some empty rows
        rows.append([None if rng.random() < 0.25 else float(rng.integers(-5, 6)) for _ in range(n)])
    return rows


def ragged_ref(rows, op):
    def red(vals):
        vals = [v for v in vals if v is not None]
        if op == "count":
            return len(vals)
        if op == "sum":
            return float(sum(vals))
        if op == "prod":
            return float(np.prod(vals)) if vals else 1.0
        if op == "any":
            return any(v != 0 for v in vals)
        if op == "all":
            return all(v != 0 for v in vals)
        if not vals:
            return None
        return {"min": min, "max": max, "mean": lambda v: sum(v) / len(v)}[op](vals)
    return [red(r) for r in rows], red([v for r in rows for v in r])


@pytest.mark.mpi
@pytest.mark.parametrize("dist", ["b", "c", "u", "padded"])
def test_ragged_per_row_and_everything(comm, dist):
    rows = ragged_data()
    opts = {"b": dict(dist=("b",)), "c": dict(dist=("c",)),
            "u": dict(dist=("u",), indices=(unstructured(len(rows), comm.size, 1),)),
            "padded": dict(dist=("b",), padding=((1, 1),))}[dist]
    a = xdap.from_global(rows, type="var * var * ?float64", comm=comm, **opts)
    for op in OPS:
        per_row, total = ragged_ref(rows, op)
        r = getattr(a, op)(1)
        assert isinstance(r, xdap.DistArray) and r.distribution == a.distribution
        close(r.to_global().value, per_row)
        gi = a.distribution.global_indices(0)
        close(r.local.value, [per_row[i] for i in gi])
        close(getattr(a, op)(), total)
        close(getattr(a, op)(None), total)
    assert str(a.min(1).type).endswith("?float64") and str(a.sum(1).type).endswith("* float64")


@pytest.mark.mpi
def test_empty_and_errors_on_every_rank(comm):
    e = xdap.from_global(np.zeros((4, 0)), dist=("b", "n"), comm=comm)
    assert e.sum() == 0.0 and e.prod() == 1.0 and e.count() == 0
    assert not e.any() and e.all() and isinstance(e.any(), np.bool_)
    with pytest.raises(ValueError, match="empty selection"):
        e.min()
    with pytest.raises(ValueError, match="empty selection"):
        e.mean(axis=1)
    assert e.sum(axis=1).to_global().value == [0.0] * 4
    o = xdap.from_global(np.ma.masked_all((4, 3)), comm=comm)
    assert o.min() is None and o.mean() is None and o.count() == 0
    assert o.max(axis=0).to_global().value == [None] * 3
    a = xdap.from_global(np.arange(12.0).reshape(3, 4), comm=comm)
    with pytest.raises(ValueError, match="unknown operation"):
        xdap.movement.reduce(a, "median")
    with pytest.raises(ValueError, match="out of bounds"):
        a.sum(axis=2)
    with pytest.raises(ValueError, match="repeated"):
        a.sum(axis=(0, 0))
    r = xdap.from_global([[1.0], [2.0, 3.0]] * 3, type="var * var * float64", comm=comm)
    with pytest.raises(ValueError, match="over each row"):
        r.sum(axis=0)


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_nan_wins_min_and_max_on_every_rank(comm):
    """A NaN on one rank beats every other rank's value and the identity
    (-inf for max) of ranks that hold nothing, as in NumPy: MPI's own MAX
    gave NaN on one rank and -inf on another."""
    for g in (np.array([[1.0, np.nan, 1.0]]),                     # rank 0 holds it all
              np.r_[np.arange(4.0 * comm.size), np.nan][::-1],   # the NaN first, on rank 0
              np.r_[np.arange(4.0 * comm.size), np.nan]):        # ... last, on the last rank
        for dtype in (np.float32, np.float64):
            a = xdap.from_global(g.astype(dtype), comm=comm)
            for op in ("max", "min"):
                got = getattr(a, op)()
                assert np.isnan(got), (op, got)
                assert all(np.isnan(v) for v in comm.allgather(float(got)))
    # along an axis: a NaN in one column only
    g = np.arange(12.0).reshape(4, 3)
    g[3, 1] = np.nan
    a = xdap.from_global(g, dist=("b", "n"), comm=comm)
    np.testing.assert_array_equal(np.asarray(a.max(axis=0).to_numpy()), np.max(g, axis=0))
