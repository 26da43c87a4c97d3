"""xarray Datasets whose variables are DistArrays: ``open_dataset`` reads a
NetCDF-4 file or a Zarr store with each rank reading only its rows of the
variables along one dimension; ``to_netcdf`` writes such a dataset back,
each rank its slab, as a file plain xarray opens.

xarray keeps coordinates in pandas indexes, which hold their values whole:
so coordinates are NumPy on every rank (a time axis is O(T), small beside
the T x lat x lon data), and only data variables along the split dimension
are distributed.  Everything else xarray does on such a dataset runs
through the DistArrays' namespace (docs/xarray.md).

>>> import os, tempfile, numpy as np, xarray, xdap
>>> from mpi4py import MPI
>>> path = os.path.join(tempfile.mkdtemp(), "d.nc")
>>> xarray.Dataset({"t": (("time", "x"), np.arange(6.0).reshape(3, 2))},
...                coords={"time": [1, 2, 3]}).to_netcdf(path, engine="h5netcdf")
>>> ds = xdap.open_dataset(path, comm=MPI.COMM_SELF)
>>> type(ds.t.data).__name__, float(ds.t.mean("time")[1])
('DistArray', 3.0)
"""
from __future__ import annotations

import hashlib
import os
import shutil

import numpy as np

from .. import arguments
from ..agreement import on_rank0
from ..arraylike import is_distributed
from ..comm import resolve
from ..contract import collective
from ..optional import need

__all__ = ["open_dataset", "to_netcdf"]


def _digest(values) -> str:
    """The bytes of a small NumPy value (a coordinate), digested: what ranks
    compare instead of the values."""
    v = np.asarray(values)
    h = hashlib.sha256(f"{v.dtype.str}{v.shape}".encode())
    if v.dtype.kind == "O":
        h.update(repr(v.tolist()).encode())
    else:
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()[:24]


def _coordinates(ds) -> tuple:
    """What every rank must see alike of a dataset's coordinates and
    attributes: names, dims, values (digested)."""
    return tuple((name, c.dims, _digest(c.values)) for name, c in sorted(ds.coords.items())) + \
        (repr(sorted(ds.attrs.items(), key=str)),)


@collective
def open_dataset(path, dim=None, dist="b", comm=None, engine=None, sizes=None,
                 drop_variables=None):
    """The NetCDF-4 file or Zarr store at ``path`` as an ``xarray.Dataset``
    whose data variables along ``dim`` are DistArrays: ``dist`` "b" (rows
    of ``dim`` in blocks, ``sizes`` of them per rank if given) or "c"
    (cyclic); each rank reads only its rows, as ``from_xarray`` reads one
    variable (for a dim that is not a variable's first, one redistribution
    after the read).  Default ``dim``: the first dim of the largest data
    variable.  Coordinates and the variables without ``dim`` are NumPy on
    every rank (xarray's indexes hold their values whole; they are the
    small axes of the grid).  ``engine``: xarray's (default: by the path;
    NetCDF-4 through h5netcdf).  ``drop_variables``: names not read (a
    variable of strings along ``dim`` has no DistArray form here: drop it).

    Collective. Every rank opens the dataset; its variables' names, dims,
    shapes, dtypes, source, coordinates and attributes are agreed (a rank
    that opened another file is one error on every rank). Variables are
    read at the call (each rank its rows: O(N/P) a rank), not lazily.
    """
    xarray = need("xarray")
    comm = resolve(comm)
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"open_dataset: path must be a str or os.PathLike, got "
                        f"{arguments._shown(path)}")
    path = os.fspath(path)
    dist = arguments.choice("open_dataset", "dist", dist, ("b", "c"))
    if engine is not None and not isinstance(engine, str):
        raise TypeError(f"open_dataset: engine must be a str or None, got "
                        f"{arguments._shown(engine)}")
    if drop_variables is not None:
        drop_variables = [drop_variables] if isinstance(drop_variables, str) else \
            list(drop_variables)
        if not all(isinstance(n, str) for n in drop_variables):
            raise TypeError(f"open_dataset: drop_variables must be names (str), got "
                            f"{arguments._shown(drop_variables)}")
    if not os.path.exists(path):
        raise ValueError(f"open_dataset: rank {comm.rank} finds no file or store at {path!r}")
    if engine is None and os.path.isdir(path):
        engine = "zarr"
    elif engine is None:
        engine = "h5netcdf"
    try:
        ds = xarray.open_dataset(path, engine=engine, drop_variables=drop_variables,
                                 **({"consolidated": None} if engine == "zarr" else {}))
    except Exception as e:      # a file xarray cannot read, as any reader says it
        raise ValueError(f"open_dataset: rank {comm.rank} cannot open {path!r} with engine "
                         f"{engine!r}: {type(e).__name__}: {e}") from None
    if dim is None:
        big = sorted(((v.size, name) for name, v in ds.data_vars.items() if v.ndim),
                     reverse=True)
        if not big:
            raise ValueError(f"open_dataset: {path!r} has no data variable with a dim to split")
        dim = ds[big[0][1]].dims[0]
    if not isinstance(dim, str) or dim not in ds.dims:
        raise ValueError(f"open_dataset: dim {dim!r} is not a dimension of {path!r} "
                         f"(its dims: {', '.join(map(str, ds.dims))})")
    from ..distribution import make_distribution
    from ..io.xarray_vars import describe
    split, summary = {}, []
    for name, v in ds.data_vars.items():
        if dim in v.dims:
            found = describe(v, "open_dataset")
            k = v.dims.index(dim)
            layout = tuple(dist if n == k else "n" for n in range(v.ndim))
            per_dim = {} if sizes is None else \
                dict(sizes=tuple(sizes if n == k else None for n in range(v.ndim)))
            split[name] = (layout, per_dim)
            summary.append((name, found.summary(),
                            make_distribution(found.shape, layout, None, comm, **per_dim)))
        else:
            summary.append((name, v.dims, v.shape, v.dtype.str))
    # names in order: xarray may list a file's variables in another order per rank
    summary.sort(key=lambda entry: entry[0])
    yield dict(path=path, dim=dim, dist=dist, comm=comm.size, engine=engine,
               sizes=None if sizes is None else tuple(int(s) for s in sizes),
               drop_variables=drop_variables, dataset=(tuple(summary), _coordinates(ds)))
    from .exchange import from_xarray
    out = {}
    for name, v in sorted(ds.data_vars.items()):
        if name in split:
            layout, per_dim = split[name]
            a = from_xarray(v, dist=layout, comm=comm, **per_dim)
            out[name] = xarray.Variable(v.dims, a, v.attrs, v.encoding)
        else:
            out[name] = v.variable.load()
    return xarray.Dataset(out, coords={n: c.load() for n, c in ds.coords.items()},
                          attrs=ds.attrs)


@collective
def to_netcdf(ds, path, mode="w"):
    """Write an ``xarray.Dataset`` (or DataArray) whose data variables are
    DistArrays (``open_dataset``'s, or any: ``xr.Dataset({"t": (dims, a)})``)
    as the NetCDF-4 file at ``path`` that ``xarray.open_dataset(path,
    engine="h5netcdf")`` reads back as the same dataset: coordinates,
    attributes, dates.  ``mode`` "w" only: the file is made anew.

    Collective. Rank 0 writes the coordinates, attributes and the NumPy
    variables through xarray; each DistArray variable is then written by
    ``to_hdf5`` (each rank its slab: parallel HDF5 when h5py has MPI).  All
    of it goes to a file beside ``path``, moved into place once every rank
    has written: a failure anywhere leaves what was at ``path``.
    """
    xarray = need("xarray")
    if isinstance(ds, xarray.DataArray):
        ds = ds.to_dataset(name=ds.name if ds.name is not None else "__xarray_dataarray_variable__")
    if not isinstance(ds, xarray.Dataset):
        raise TypeError(f"to_netcdf: ds must be an xarray.Dataset or DataArray, got "
                        f"{arguments._shown(ds)}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_netcdf: path must be a str or os.PathLike, got "
                        f"{arguments._shown(path)}")
    path = os.fspath(path)
    mode = arguments.choice("to_netcdf", "mode", mode, ("w",))
    split, comm, summary = {}, None, []
    for name, v in ds.data_vars.items():
        if is_distributed(v.data):
            arguments.fixed("to_netcdf", v.data)
            if comm is not None and v.data.distribution.comm is not comm:
                raise ValueError(f"to_netcdf: variable {name!r} lives on another communicator")
            comm = v.data.distribution.comm
            split[name] = v.data
            summary.append((name, v.dims, v.data))
        else:
            summary.append((name, v.dims, v.shape, v.dtype.str))
    for name, c in ds.coords.items():
        if is_distributed(c.data):
            raise ValueError(f"to_netcdf: coordinate {name!r} is a DistArray; coordinates are "
                             "written whole by rank 0 (xarray's indexes hold them whole): "
                             "make it NumPy, or a data variable")
    if comm is None:
        raise ValueError("to_netcdf: no data variable is a DistArray (write it with xarray's "
                         "own ds.to_netcdf)")
    yield dict(ds=(tuple(sorted(summary, key=lambda entry: entry[0])), _coordinates(ds)),
               path=path, mode=mode)
    from ..io.files import put_in_place
    from ..io.pieces import PARTIAL
    from .exchange import to_hdf5
    staging = path + PARTIAL

    def skeleton():
        if os.path.isdir(staging):
            shutil.rmtree(staging)
        elif os.path.exists(staging):
            os.remove(staging)
        ds.drop_vars(list(split)).to_netcdf(staging, engine="h5netcdf")

    def attributes():
        with need("h5py").File(staging, "r+") as f:
            for name, a in split.items():
                f[name].attrs.update({k: v for k, v in ds[name].attrs.items()})

    on_rank0(comm, skeleton, f"to_netcdf: cannot write beside {path!r}")
    try:
        for name, a in sorted(split.items(), key=lambda item: item[0]):
            to_hdf5(a, staging, name, mode="a", dims=ds[name].dims)
        on_rank0(comm, attributes, f"to_netcdf: cannot write the attributes into {path!r}")
        on_rank0(comm, lambda: put_in_place(staging, path),
                 f"to_netcdf: cannot move the new file to {path!r}")
    except BaseException:
        if comm.rank == 0 and os.path.exists(staging):
            os.remove(staging)
        raise
