"""xdap.open_dataset and xdap.to_netcdf (issue 51): a NetCDF-4 file and a
Zarr store that plain xarray wrote open as Datasets whose variables along
the split dim are DistArrays (each rank its rows), equal to xarray's own
reading; the climate workflow -- monthly climatology, anomaly, a 7-day
rolling mean, the 90th percentile over time, save -- gives plain xarray's
result on 1-4 ranks, in blocks, cyclic and with empty ranks, and the file
it writes opens in plain xarray as the same dataset; bad input and one rank
passing another path, dim or layout are one error on every rank."""
import os
import tempfile
import warnings

import numpy as np
import pytest

import xdap
from helpers import same_error

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

RANKS = (1, 2, 3, 4)
T, NY, NX = 75, 4, 5                    # days: January to mid-March
rng = np.random.default_rng(510)
TIME = np.datetime64("2020-01-01", "ns") + np.arange(T) * np.timedelta64(1, "D")
LAND = rng.random((NY, NX)) < 0.3       # missing over land, in every time step
SST = (15 + 3 * np.sin(np.arange(T) / 9.0)[:, None, None]
       + rng.standard_normal((T, NY, NX))).astype(np.float32)
SST[:, LAND] = np.nan


def written_by_xarray(comm):
    """A NetCDF-4 file and a Zarr store that rank 0 writes with xarray."""
    d = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    if comm.rank == 0:
        ds = xr.Dataset({"sst": (("time", "lat", "lon"), SST, {"units": "degC"}),
                         "land": (("lat", "lon"), LAND),
                         "station": (("time",), np.array([f"s{k}" for k in range(T)]))},
                        coords={"time": TIME, "lat": np.linspace(-30, 30, NY),
                                "lon": np.linspace(0, 320, NX)},
                        attrs={"title": "generated daily SST"})
        ds.to_netcdf(os.path.join(d, "sst.nc"), engine="h5netcdf")
        ds.drop_vars("station").to_zarr(os.path.join(d, "sst.zarr"), consolidated=False)
    comm.Barrier()
    return d


def layouts(P):
    empty = {1: [T], 2: [0, T], 3: [30, 0, 45], 4: [20, 0, 55, 0]}[P]
    return [dict(dist="b"), dict(dist="c"), dict(dist="b", sizes=empty)]


def gathered(ds):
    return ds.map(lambda v: v.copy(data=v.data.to_numpy())
                  if isinstance(v.data, xdap.DistArray) else v)


def workflow(ds):
    """Monthly climatology, anomaly, 7-day rolling mean, 90th percentile."""
    sst = ds.sst
    clim = sst.groupby("time.month").mean("time")
    anomaly = sst.groupby("time.month") - clim
    smooth = anomaly.rolling(time=7, center=True).mean()
    return xr.Dataset({"clim": clim, "smooth": smooth,
                       "p90": smooth.quantile(0.9, dim="time", skipna=True),
                       "warm_days": (smooth > 0.5).sum("time")})


@pytest.mark.mpi(ranks=RANKS)
def test_open_dataset_reads_what_xarray_reads(comm):
    d = written_by_xarray(comm)
    nc = os.path.join(d, "sst.nc")
    plain = xr.open_dataset(nc, engine="h5netcdf", drop_variables=["station"]).load()
    for kw in layouts(comm.size):
        ds = xdap.open_dataset(nc, comm=comm, drop_variables="station", **kw)
        a = ds.sst.data
        assert isinstance(a, xdap.DistArray) and a.distribution == \
            xdap.zeros(SST.shape, comm=comm, dist=(kw["dist"], "n", "n"),
                       **({"sizes": (kw["sizes"], None, None)} if "sizes" in kw else {})
                       ).distribution
        assert isinstance(ds.land.data, np.ndarray)       # no dim to split: NumPy
        xr.testing.assert_identical(gathered(ds), plain)
    z = xdap.open_dataset(os.path.join(d, "sst.zarr"), dim="time", comm=comm)
    xr.testing.assert_identical(gathered(z), xr.open_zarr(os.path.join(d, "sst.zarr"),
                                                          consolidated=False).load())


@pytest.mark.mpi(ranks=RANKS)
def test_climate_workflow_gives_xarrays_result_and_saves_it(comm):
    d = written_by_xarray(comm)
    nc = os.path.join(d, "sst.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = workflow(xr.open_dataset(nc, engine="h5netcdf").load())
        for k, kw in enumerate(layouts(comm.size)):
            got = workflow(xdap.open_dataset(nc, comm=comm, drop_variables=["station"], **kw))
            assert isinstance(got.smooth.data, xdap.DistArray)
            xr.testing.assert_allclose(gathered(got), want, rtol=1e-5, atol=1e-5)
            out = os.path.join(d, f"out{k}.nc")
            xdap.to_netcdf(got, out)
            if comm.rank == 0:
                back = xr.open_dataset(out, engine="h5netcdf").load()
                xr.testing.assert_allclose(back, want, rtol=1e-5, atol=1e-5)
                assert back.attrs == {} and back.smooth.dims == ("time", "lat", "lon")
            comm.Barrier()


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_to_netcdf_keeps_attributes_and_replaces_the_file_whole(comm):
    d = written_by_xarray(comm)
    nc = os.path.join(d, "sst.nc")
    ds = xdap.open_dataset(nc, comm=comm, dist="c", drop_variables="station")
    out = os.path.join(d, "copy.nc")
    for _ in range(2):                                  # the second over the first
        xdap.to_netcdf(ds, out)
    if comm.rank == 0:
        xr.testing.assert_identical(
            xr.open_dataset(out, engine="h5netcdf").load(),
            xr.open_dataset(nc, engine="h5netcdf", drop_variables=["station"]).load())
        assert not [f for f in os.listdir(d) if "partial" in f]
    # a dataset with a DistArray coordinate is refused before anything is written
    bad = ds.assign_coords(day=("time", ds.sst.data[:, 0, 0]))
    same_error(comm, lambda: xdap.to_netcdf(bad, os.path.join(d, "bad.nc")), ValueError,
               "coordinate 'day' is a DistArray")
    assert not os.path.exists(os.path.join(d, "bad.nc"))


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_bad_input_is_one_error_everywhere(comm):
    d = written_by_xarray(comm)
    nc = os.path.join(d, "sst.nc")
    cases = [
        (lambda: xdap.open_dataset(os.path.join(d, "none.nc"), comm=comm), "no file"),
        (lambda: xdap.open_dataset(nc, dim="depth", comm=comm), "not a dimension"),
        (lambda: xdap.open_dataset(nc, dist="x", comm=comm), "dist"),
        (lambda: xdap.open_dataset(nc, comm=comm), "station"),      # strings along time
        (lambda: xdap.open_dataset(nc, comm=comm, drop_variables="station",
                                   sizes=[T + 1] + [0] * (comm.size - 1)), "sizes|sum"),
        (lambda: xdap.to_netcdf(np.zeros(3), os.path.join(d, "x.nc")), "xarray.Dataset"),
        (lambda: xdap.to_netcdf(xr.Dataset({"a": ("x", np.zeros(3))}),
                                os.path.join(d, "x.nc")), "no data variable is a DistArray"),
    ]
    for call, match in cases:
        same_error(comm, call, (ValueError, TypeError), match, seconds=60)


@pytest.mark.mpi(ranks=(2, 3))
def test_one_rank_different_is_one_error_everywhere(comm):
    d = written_by_xarray(comm)
    nc = os.path.join(d, "sst.nc")
    last = comm.rank == comm.size - 1
    if comm.rank == 0:
        xr.open_dataset(nc, engine="h5netcdf").isel(time=slice(1, None)).to_netcdf(
            os.path.join(d, "other.nc"), engine="h5netcdf")
    comm.Barrier()
    ds = xdap.open_dataset(nc, comm=comm, drop_variables="station")
    cases = [
        lambda: xdap.open_dataset(os.path.join(d, "other.nc" if last else "sst.nc"),
                                  comm=comm, drop_variables="station"),
        lambda: xdap.open_dataset(nc, dim="lat" if last else "time", comm=comm,
                                  drop_variables="station"),
        lambda: xdap.open_dataset(nc, dist="c" if last else "b", comm=comm,
                                  drop_variables="station"),
        lambda: xdap.to_netcdf(ds, os.path.join(d, "o1.nc" if last else "o2.nc")),
        lambda: xdap.to_netcdf(ds.drop_vars("land") if last else ds, os.path.join(d, "o3.nc")),
    ]
    for call in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), "rank", seconds=60)
    assert not any(os.path.exists(os.path.join(d, f)) for f in ("o1.nc", "o2.nc", "o3.nc"))
