"""xarray's everyday operations on DataArrays and Datasets whose data is a
DistArray (issue 51), each against plain xarray on the global NumPy data:
reductions with and without skipna along the distributed and the other
dim, anomalies, alignment, where/fillna/clip, isel/sel, concat, stack,
groupby, resample, rolling, coarsen, cum*, diff, shift, roll, weighted,
xr.dot -- on 1-4 ranks, rows in blocks, cyclic, with empty ranks, and the
other dim distributed.  Results that keep a distributed dim stay
DistArrays (nothing is gathered on the way); one rank passing a different
dim or label is one error on every rank; interp, which hands the whole
array to SciPy, is refused the same way on every rank."""
import warnings

import numpy as np
import pytest

import xdap
from helpers import same_error

xr = pytest.importorskip("xarray")

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(51)
T = 40                                   # days: January and part of February
G = rng.standard_normal((T, 3))
G[::7, 1] = np.nan                       # missing values, no all-missing slice
G[3, 2] = np.nan
TIME = np.datetime64("2020-01-01", "ns") + np.arange(T) * np.timedelta64(1, "D")
Y = np.array([10.0, 20.0, 30.0])
W = xr.DataArray(np.array([0.5, 1.0, 2.0]), dims="y", coords={"y": Y})


def layouts(P):
    """Rows (time) in blocks, cyclic, in blocks with empty ranks; y in blocks."""
    empty = {1: [T], 2: [0, T], 3: [13, 0, 27], 4: [10, 0, 30, 0]}[P]
    return {"block": dict(dist=("b", "n")), "cyclic": dict(dist=("c", "n")),
            "empty": dict(dist=("b", "n"), sizes=(empty, None)),
            "y split": dict(dist=("n", "b"))}


def labelled(data, comm=None, **layout):
    """The daily series: a DistArray's DataArray (with ``comm``) or NumPy's."""
    if comm is not None:
        data = xdap.from_global(data, comm=comm, **layout)
    return xr.DataArray(data, dims=("time", "y"), coords={"time": TIME, "y": Y}, name="t")


OPS = {
    "mean time": lambda x: x.mean("time"),
    "mean y": lambda x: x.mean("y"),
    "mean skipna=False": lambda x: x.mean(skipna=False),
    "sum time": lambda x: x.sum("time"),
    "sum skipna=False": lambda x: x.sum("time", skipna=False),
    "std": lambda x: x.std("time"),
    "var ddof=1": lambda x: x.var("y", ddof=1),
    "min": lambda x: x.min("time"),
    "max": lambda x: x.max(),
    "median time": lambda x: x.median("time"),
    "median y": lambda x: x.median("y"),
    "quantile time": lambda x: x.quantile(0.9, dim="time"),
    "quantiles y": lambda x: x.quantile([0.1, 0.5], dim="y"),
    "argmax time": lambda x: x.argmax("time"),
    "argmin y": lambda x: x.fillna(0.0).argmin("y"),
    "count": lambda x: x.count("time"),
    "anomaly": lambda x: x - x.mean("time"),
    "broadcast": lambda x: x * W,
    "align": lambda x: x + x.isel(time=slice(5, None)),
    "where": lambda x: x.where(x > 0),
    "where other": lambda x: x.where(x > 0, -1.0),
    "isnull sum": lambda x: x.isnull().sum("time"),
    "fillna": lambda x: x.fillna(0.0),
    "clip": lambda x: x.clip(-0.5, 0.5),
    "isel slice": lambda x: x.isel(time=slice(3, 30, 2)),
    "isel list": lambda x: x.isel(time=[1, 5, 39]),
    "sel label": lambda x: x.sel(time="2020-01-10"),
    "sel month": lambda x: x.sel(time="2020-02"),
    "sel slice": lambda x: x.sel(time=slice("2020-01-05", "2020-01-20")),
    "sel mask": lambda x: x.sel(time=x.time.dt.day > 15),
    "sel y": lambda x: x.sel(y=20.0),
    "concat": lambda x: xr.concat([x, x.isel(time=slice(0, 4))], "time"),
    "transpose": lambda x: x.transpose(),
    "stack": lambda x: x.stack(z=("time", "y")),
    "unstack": lambda x: x.stack(z=("time", "y")).unstack("z"),
    "groupby mean": lambda x: x.groupby("time.month").mean(),
    "groupby sum": lambda x: x.groupby("time.month").sum(),
    "groupby anomaly": lambda x: x.groupby("time.month") - x.groupby("time.month").mean(),
    "groupby map": lambda x: x.groupby("time.month").map(lambda g: g - g.mean()),
    "resample": lambda x: x.resample(time="1W").mean(),
    "rolling mean": lambda x: x.rolling(time=3).mean(),
    "rolling sum center": lambda x: x.rolling(time=7, center=True).sum(),
    "coarsen": lambda x: x.coarsen(time=4).mean(),
    "cumsum": lambda x: x.cumsum("time"),
    "cumprod": lambda x: x.cumprod("y"),
    "diff": lambda x: x.diff("time"),
    "shift": lambda x: x.shift(time=2),
    "roll": lambda x: x.roll(time=3),
    "weighted": lambda x: x.weighted(W).mean("y"),
    "dot": lambda x: xr.dot(x, W),
    "dot over time": lambda x: xr.dot(x.fillna(0.0), x.fillna(0.0), dim="time"),
}


def gathered(result):
    """An xarray result with its DistArray data (and coordinates) gathered
    to NumPy, for xarray.testing to compare."""
    def whole(v):
        return v.to_numpy() if isinstance(v, xdap.DistArray) else v
    if isinstance(result, xr.Dataset):
        return result.map(gathered)
    out = result.copy(data=whole(result.data))
    for name, c in result.coords.items():
        if isinstance(c.data, xdap.DistArray):
            out = out.assign_coords({name: c.copy(data=whole(c.data))})
    return out


def quietly(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("layout", ["block", "cyclic", "empty", "y split"])
def test_operations_give_xarrays_results(comm, layout):
    kw = layouts(comm.size)[layout]
    x, plain = labelled(G, comm, **kw), labelled(G)
    for name, op in OPS.items():
        got, want = quietly(op, x), quietly(op, plain)
        xr.testing.assert_allclose(gathered(got), want, rtol=1e-12, atol=1e-12)
        # what keeps a dim of the series keeps it distributed: no silent gather
        if got.ndim and any(d in got.dims for d in ("time", "y")):
            assert isinstance(got.data, xdap.DistArray), (name, layout, type(got.data))


@pytest.mark.mpi(ranks=RANKS)
def test_datasets_and_results_that_feed_back(comm):
    x, plain = labelled(G, comm, dist=("b", "n")), labelled(G)
    ds, pds = (xr.Dataset({"t": v, "u": 2 * v + 1}) for v in (x, plain))
    for op in (lambda d: d.mean("time"), lambda d: d.groupby("time.month").mean(),
               lambda d: d.rolling(time=5).mean(), lambda d: d - d.mean("time"),
               lambda d: d.where(d.t > 0).sum("y"), lambda d: d.isel(time=slice(7, 21))):
        xr.testing.assert_allclose(gathered(quietly(op, ds)), quietly(op, pds), rtol=1e-12)
    # a result is an input again: an anomaly's rolling mean, in place on a copy
    a = (x - x.mean("time")).rolling(time=3, center=True).mean()
    b = (plain - plain.mean("time")).rolling(time=3, center=True).mean()
    a2, b2 = a.copy(deep=True), b.copy(deep=True)
    a2 /= 2.0
    b2 /= 2.0
    xr.testing.assert_allclose(gathered(a2), b2, rtol=1e-12)
    xr.testing.assert_allclose(gathered(a), b, rtol=1e-12)       # the copy was deep


def _one_rank(comm, usual, other):
    return other if comm.rank == comm.size - 1 else usual


@pytest.mark.mpi(ranks=(2, 3))
def test_one_rank_different_dim_or_label_is_one_error_everywhere(comm):
    x = labelled(G, comm, dist=("b", "n"))
    calls = {
        "dim": lambda: x.mean(_one_rank(comm, "time", "y")),
        "label": lambda: x.sel(time=_one_rank(comm, "2020-01-10", "2020-01-11")).sum(),
        "window": lambda: x.rolling(time=_one_rank(comm, 3, 4)).mean(),
        "q": lambda: x.quantile(_one_rank(comm, 0.9, 0.8), dim="time"),
        "shift": lambda: x.shift(time=_one_rank(comm, 2, 3)),
    }
    for what, call in calls.items():
        cls, message = same_error(comm, lambda: quietly(call), (ValueError, TypeError), seconds=60)
        assert "rank" in message, (what, message)


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_interp_is_refused_the_same_way_everywhere(comm):
    """xarray's interp hands the whole variable to SciPy (np.asarray): xdap
    does not gather it silently -- one TypeError on every rank, which says
    how to ask for the whole array."""
    pytest.importorskip("scipy")
    x = labelled(G, comm, dist=("b", "n"))
    _, message = same_error(comm, lambda: x.interp(y=[15.0, 25.0]), TypeError, "whole",
                            seconds=60)
    assert "to_numpy" in message or "gather" in message, message


@pytest.mark.mpi(ranks=(1, 2))
def test_rolling_on_a_sub_communicator(comm):
    """xarray's rolling fills with a 0-d value it makes through the
    namespace (``xp.asarray``: on COMM_WORLD) and calls ``where`` with it
    and a variable on another communicator: a 0-d array, whose one value
    every rank holds, joins any communicator (as the operators take it);
    two arrays of data on different communicators are still refused."""
    import pandas as pd
    import xarray as xr
    from mpi4py import MPI
    import xdap.array_api as xp
    sub = comm.Split(comm.rank % 2, comm.rank)
    g = np.random.default_rng(3).random((40, 3)).astype(np.float32)
    g[5, 1] = np.nan
    t = pd.date_range("2000-01-01", periods=40, freq="5D")
    plain = xr.DataArray(g, dims=("time", "y"), coords={"time": t})
    ours = xr.DataArray(xdap.from_global(g, comm=sub), dims=("time", "y"), coords={"time": t})
    want = plain.rolling(time=7, center=True).mean()
    got = ours.rolling(time=7, center=True).mean()
    np.testing.assert_allclose(got.data.to_numpy(), want.values, rtol=1e-5, equal_nan=True)
    a = xdap.from_global(g, comm=sub)
    w = xp.where(a > 0.5, a, xp.asarray(np.float32(-1.0)))
    assert w.comm is sub
    np.testing.assert_array_equal(w.to_numpy(), np.where(g > 0.5, g, np.float32(-1.0)))
    if comm.size > 1:
        b = xdap.from_global(g, comm=comm)
        with pytest.raises(ValueError, match="different communicators"):
            xp.where(a > 0.5, a, b)
    sub.Free()
