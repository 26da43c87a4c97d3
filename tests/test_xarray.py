"""xarray variables in (xdap.from_xarray) and NetCDF-4 out (to_hdf5 with
dims) on 1-4 ranks: a NetCDF-4 file xarray wrote (dates, 2-d and string
coordinates, an undecoded _FillValue) and a Zarr store read through xarray
(dask-backed) load equal to xarray's own reading, in every layout, with
their dims, coordinates and attributes; what xdap writes xarray opens as
the same variable; a Dataset, a variable xdap cannot hold, or one rank
passing another variable, file, layout or dims is one error on every
rank."""
import os
import tempfile

import numpy as np
import pytest

import xdap
from helpers import same_error

xarray = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(40)
T = rng.standard_normal((9, 3, 4)).astype(np.float32)
N = np.arange(9, dtype=np.int32) * 3
N[[2, 5]] = -1                                     # the fill value: missing
TIME = np.arange("2020-01-01", "2020-01-10", dtype="datetime64[D]").astype("datetime64[ns]")
STATION = np.array(["a", "bb", "ccc", "d", "e", "f", "g", "h", "iiii"], dtype=object)


def written_by_xarray(comm):
    """A NetCDF-4 file and a Zarr store that rank 0 writes with xarray alone."""
    d = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    if comm.rank == 0:
        ds = xarray.Dataset(
            {"t": (("time", "y", "x"), T, {"units": "K", "long_name": "temperature"}),
             "n": (("time",), N),
             "c": ((), np.float64(2.5)),
             "label": (("y",), np.array(["p", "q", "r"]))},
            coords={"time": TIME, "y": [10.0, 20.0, 30.0],
                    "lat": (("y", "x"), np.arange(12.0).reshape(3, 4)),
                    "station": (("time",), STATION)})
        ds["n"].encoding["_FillValue"] = np.int32(-1)
        ds.to_netcdf(os.path.join(d, "in.nc"), engine="h5netcdf")
        ds.drop_vars(["station", "label"]).to_zarr(os.path.join(d, "in.zarr"),
                                                   consolidated=False,
                                                   encoding={"t": {"chunks": (4, 3, 2)}})
    comm.Barrier()
    return d


@pytest.mark.mpi(ranks=RANKS)
def test_from_xarray_reads_netcdf_as_xarray_does(comm):
    d = written_by_xarray(comm)
    ds = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf")
    empty = {1: [9], 2: [0, 9], 3: [4, 0, 5], 4: [2, 0, 7, 0]}[comm.size]
    for kw in [dict(dist=("b",)), dict(dist=("c",)), dict(dist=("b", "c")),
               dict(dist=("n", "b")), dict(dist=("b",), sizes=(empty,))]:
        a = xdap.from_xarray(ds["t"], comm=comm, **kw)
        assert np.array_equal(a.to_numpy(), ds["t"].values), kw
        assert a.distribution == xdap.zeros(T.shape, comm=comm, **kw).distribution
        assert a.dtype == np.float32
    a = xdap.from_xarray(ds["t"], comm=comm, dist=("b", "n", "n"))
    assert a.distribution == xdap.zeros(T.shape, comm=comm, dist=("b", "n", "n")).distribution
    lab = a.labels
    assert lab.name == "t" and lab.dims == ("time", "y", "x")
    assert lab.attrs == {"units": "K", "long_name": "temperature"}
    assert sorted(lab.coords) == ["lat", "station", "time", "y"]
    time = lab.coords["time"]        # along the first dim: distributed, as int64 counts
    assert isinstance(time.values, xdap.DistArray) and time.dtype == TIME.dtype
    assert np.array_equal(time.values.to_numpy().view(time.dtype), TIME)
    assert time.values.distribution.is_contiguous_1d
    station = lab.coords["station"]  # strings of any length: fixed strings of the longest
    assert isinstance(station.values, xdap.DistArray)
    assert station.values.to_numpy().tolist() == STATION.tolist()
    assert np.array_equal(lab.coords["lat"].values, np.arange(12.0).reshape(3, 4))
    assert lab.coords["y"].dims == ("y",) and lab.coords["y"].values.tolist() == [10, 20, 30]
    c = xdap.from_xarray(ds["c"], comm=comm)          # 0-d
    assert c.shape == () and float(c) == 2.5


@pytest.mark.mpi(ranks=RANKS)
def test_fill_values_become_optional_data(comm):
    d = written_by_xarray(comm)
    raw = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf", mask_and_scale=False)
    n = xdap.from_xarray(raw["n"], comm=comm, dist=("c",))
    assert n.parts.info.optional and n.dtype == np.int32
    want = [None if v == -1 else int(v) for v in N]
    assert n.to_global().value == want
    decoded = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf")
    m = xdap.from_xarray(decoded["n"], comm=comm)       # decoded: NaN, as xarray gives it
    assert not m.parts.info.optional
    assert np.array_equal(m.to_numpy(), decoded["n"].values, equal_nan=True)


@pytest.mark.mpi(ranks=RANKS)
def test_from_xarray_reads_zarr_through_dask(comm):
    d = written_by_xarray(comm)
    ds = xarray.open_zarr(os.path.join(d, "in.zarr"), consolidated=False)
    assert ds["t"].chunks is not None                   # dask-backed: read lazily
    a = xdap.from_xarray(ds["t"], comm=comm)
    assert np.array_equal(a.to_numpy(), T)
    assert a.labels.dims == ("time", "y", "x")
    small = xarray.DataArray(np.arange(2.0), dims=("k",), name="s")   # empty ranks at 3, 4
    assert xdap.from_xarray(small, comm=comm).to_numpy().tolist() == [0.0, 1.0]


@pytest.mark.mpi(ranks=RANKS)
def test_to_hdf5_with_dims_is_netcdf_xarray_opens(comm):
    d = written_by_xarray(comm)
    ds = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf")
    a = xdap.from_xarray(ds["t"], comm=comm, dist=("c", "n", "n"))
    out = os.path.join(d, "out.nc")
    y = a.labels.coords["y"].values
    xdap.from_global(y, comm=comm).to_hdf5(out, "y", mode="w", dims=("y",))   # coordinate first
    a.to_hdf5(out, "t")                                  # dims from the labels
    xdap.from_global(np.ma.masked_less(np.arange(5.0), 2), comm=comm).to_hdf5(
        out, "m", dims=("k",))
    comm.Barrier()
    back = xarray.open_dataset(out, engine="h5netcdf")
    assert back["t"].dims == ("time", "y", "x")
    assert np.array_equal(back["t"].values, T)
    assert back["y"].values.tolist() == [10.0, 20.0, 30.0]
    assert back["m_valid"].dims == ("k",) and back["m_valid"].values.tolist() == [0, 0, 1, 1, 1]
    again = xdap.from_xarray(back["t"], comm=comm)
    assert np.array_equal(again.to_numpy(), T) and again.labels.dims == ("time", "y", "x")
    zarr_out = os.path.join(d, "out.zarr")
    if comm.rank == 0:
        import zarr
        zarr.open_group(zarr_out, mode="w")
    comm.Barrier()
    a.to_zarr(os.path.join(zarr_out, "t"))             # dims from the labels, too
    comm.Barrier()
    assert xarray.open_zarr(zarr_out, consolidated=False)["t"].dims == ("time", "y", "x")


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=RANKS)
def test_bad_input_is_one_error_everywhere(comm):
    d = written_by_xarray(comm)
    ds = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf")
    cases = [(lambda: xdap.from_xarray(ds, comm=comm), "pass one variable"),
             (lambda: xdap.from_xarray(T, comm=comm), "expected an xarray.DataArray"),
             (lambda: xdap.from_xarray(ds["label"], comm=comm), "numbers"),
             (lambda: xdap.from_global(T, comm=comm).to_hdf5(
                 os.path.join(d, "bad.nc"), "t", mode="w", dims=("a", "b")), "3 non-empty"),
             (lambda: xdap.from_global(T[:5, 0], comm=comm).to_hdf5(
                 out, "t2", dims=("time", "y")), "not a dimension of length 5")]
    out = os.path.join(d, "out.nc")
    xdap.from_global(np.arange(9.0), comm=comm).to_hdf5(out, "time", mode="w", dims=("time",))
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), seconds=30)
        assert words in message, (words, message)
    comm.Barrier()
    assert list(xarray.open_dataset(out, engine="h5netcdf").variables) == ["time"]


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    d = written_by_xarray(comm)
    ds = xarray.open_dataset(os.path.join(d, "in.nc"), engine="h5netcdf")
    z = xarray.open_zarr(os.path.join(d, "in.zarr"), consolidated=False)
    calls = [lambda: xdap.from_xarray(_one_rank(comm, ds["t"], ds["n"]), comm=comm),
             lambda: xdap.from_xarray(_one_rank(comm, ds["t"], z["t"]), comm=comm),
             lambda: xdap.from_xarray(_one_rank(comm, ds["t"], ds["t"][:5]), comm=comm),
             lambda: xdap.from_xarray(ds["t"], comm=comm, dist=_one_rank(comm, "b", "c")),
             lambda: xdap.from_global(T, comm=comm).to_hdf5(
                 os.path.join(d, "o.nc"), "t", mode="w",
                 dims=_one_rank(comm, ("a", "b", "c"), ("a", "b", "d")))]
    for call in calls:
        same_error(comm, call, (ValueError, TypeError), seconds=30)
    assert not os.path.exists(os.path.join(d, "o.nc"))
