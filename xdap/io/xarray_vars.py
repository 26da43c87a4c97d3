"""xarray variables in, rows by rank: whatever xarray opens lazily -- NetCDF-4
and HDF5 (h5netcdf), Zarr, dask-backed or in-memory arrays -- read one
block of rows of axis 0 a rank, through xarray's lazy indexing (the backend
reads only those rows' chunks).

- ``describe(var, what)``: a DataArray's shape, dtype, dims, name, missing
  value and coordinates, as untrusted input: a Dataset, an unreadable
  dtype or a malformed attribute is one clear error;
- ``read_rows(var, start, stop, dtype)``: rows ``start:stop`` of axis 0 as
  NumPy, in ``dtype``;
- ``held_dtype(dtype)``: the dtype xdap holds a coordinate of ``dtype`` as
  (datetime64/timedelta64: int64 counts of the same unit).

The engine of ``xdap.from_xarray``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..optional import need

__all__ = ["Described", "describe", "read_rows", "held_dtype"]


@dataclass(frozen=True)
class Described:
    """What ``describe`` found: the variable's ``shape``, ``dtype`` (native
    byte order), ``name``, ``dims``, ``fill`` (the raw ``_FillValue`` of a
    variable opened undecoded, else None), ``source`` (the file xarray read
    it from, if any), ``attrs`` and ``coords`` (name -> the coordinate's
    DataArray)."""
    shape: tuple
    dtype: np.dtype
    name: str | None
    dims: tuple
    fill: object
    source: str | None
    attrs: dict
    coords: dict

    def summary(self) -> tuple:
        """What every rank must see alike (agreed before any row is read)."""
        coords = tuple((n, tuple(map(str, c.dims)), tuple(c.shape), str(c.dtype))
                       for n, c in sorted(self.coords.items()))
        fill = None if self.fill is None else repr(self.fill)
        return (self.name, self.dims, self.shape, self.dtype.str, fill, self.source, coords)


def describe(var, what: str) -> Described:
    xr = need("xarray")
    if isinstance(var, xr.Dataset):
        raise TypeError(f"{what}: got an xarray.Dataset; pass one variable of it, "
                        f"ds[name] (it holds {sorted(map(str, var.data_vars))[:10]})")
    if not isinstance(var, xr.DataArray):
        raise TypeError(f"{what}: expected an xarray.DataArray (a variable of a lazily "
                        f"opened dataset), got {type(var).__name__}")
    dtype = np.dtype(var.dtype)
    if dtype.kind not in "biufc":
        raise ValueError(f"{what}: variable {var.name!r} holds {dtype}; xdap reads numbers "
                         "and bools here (coordinates may hold dates and strings)")
    fill = var.attrs.get("_FillValue")
    if fill is not None:
        fill = np.asarray(fill)
        if fill.size != 1 or not np.can_cast(fill.dtype, dtype, "same_kind"):
            raise ValueError(f"{what}: variable {var.name!r} has _FillValue {fill!r}, which is "
                             f"not one value of its type {dtype}")
        fill = fill.reshape(()).astype(dtype)[()]
    attrs = {k: v for k, v in var.attrs.items() if k != "_FillValue"}
    source = var.encoding.get("source")
    return Described(tuple(int(s) for s in var.shape), dtype.newbyteorder("="),
                     None if var.name is None else str(var.name),
                     tuple(str(d) for d in var.dims), fill,
                     None if source is None else str(source), attrs,
                     {str(n): c for n, c in var.coords.items()})


def held_dtype(dtype) -> np.dtype:
    """The dtype a coordinate is held as: itself, but dates and durations
    as int64 counts of their unit (xdap's types have no calendar)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype.kind in "mM" else dtype.newbyteorder("=")


def read_rows(var, start: int, stop: int, dtype) -> np.ndarray:
    """Rows ``start:stop`` of axis 0 (all of a 0-d variable), C-contiguous,
    in ``dtype``; dates and durations as their int64 counts."""
    values = var.values if var.ndim == 0 else var[start:stop].values
    values = np.asarray(values)
    if values.dtype.kind in "mM":
        values = values.view(np.int64)
    return np.require(values.astype(dtype, copy=False), requirements="C")   # keeps 0-d
