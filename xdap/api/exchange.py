"""What distributed arrays add to the standard: exchange with other
libraries and files, and the whole array on a rank.

- imports (collective): ``from_distarray`` (DAP 0.9.0 / 0.10.0),
  ``from_partitioned``, ``from_arrow``, ``from_awkward``, ``load``;
- exports of this rank's part (local work, zero-copy): ``__distarray__``,
  ``partitioned``, ``to_arrow``, ``to_awkward``, ``local_numpy``;
- the whole array (collective, copies): ``to_global``, ``to_numpy``;
  ``save``.

The imports agree on what every rank passes alike (the communicator, a
path, a target distribution) and then check what each rank passes by
design -- its own DAP dict, tiles, Arrow array -- in the importer's own
verdict before data moves (``xdap.protocols``, ``xdap.io``).

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
>>> xdap.from_distarray(a.__distarray__(), comm=MPI.COMM_SELF).to_numpy().tolist()
[0.0, 1.0, 2.0, 3.0]
"""
from __future__ import annotations

import os
import shutil

import numpy as np

from .. import arguments
from ..agreement import on_rank0, settled
from ..arraylike import new
from ..comm import resolve
from ..contract import collective, local, part
from ..optional import need
from ..parts import container

__all__ = ["from_distarray", "from_partitioned", "from_arrow", "from_awkward", "load",
           "from_hdf5", "to_hdf5", "from_zarr", "to_zarr", "from_xarray", "from_npy", "to_npy",
           "from_csv",
           "to_global", "to_numpy", "save", "distarray", "partitioned", "partitioned_property",
           "to_arrow", "to_awkward", "local_numpy", "numpy_array", "dlpack", "dlpack_device",
           "to_device"]


# -- imports -------------------------------------------------------------------------
@collective(own=("obj",))
def from_distarray(obj, comm=None):
    """Import a DAP 0.9.0 / 0.10.0 export (collective; zero-copy where the
    buffer is C-contiguous, a copy otherwise); see ``xdap.protocols.dap``.

    ``obj`` is an object with ``__distarray__()`` or the dict itself, on every
    rank of ``comm`` (default ``MPI.COMM_WORLD``). Every rule of the protocol
    is checked across ranks; a violation on any rank raises the same
    ValueError/TypeError on every rank, naming the rule, rank and value.
    """
    comm = resolve(comm)
    # obj is each rank's own dict: the importer's verdict checks it against the others'
    yield dict(comm=comm)
    from ..protocols import dap
    return new(dap.import_dap(obj, comm))


@collective(own=("obj",))
def from_partitioned(obj, comm=None):
    """Import a ``__partitioned__`` export (collective); see
    ``xdap.protocols.partitioned.import_partitioned`` for the accepted forms.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> d = {"shape": (4,), "partition_tiling": (1,), "partitions": {
    ...      (0,): {"start": (0,), "shape": (4,), "data": np.arange(4.0), "location": [0]}},
    ...      "locals": [(0,)], "get": lambda x: x}
    >>> xdap.from_partitioned(d, comm=MPI.COMM_SELF).to_global().value
    [0.0, 1.0, 2.0, 3.0]
    """
    comm = resolve(comm)
    yield dict(comm=comm)
    from ..protocols import partitioned
    return new(partitioned.import_partitioned(obj, comm))


@collective(own=("arr",))
def from_arrow(arr, comm=None, type=None):
    """A DistArray whose rows are every rank's Arrow array, stacked in rank
    order (collective; zero-copy); see ``xdap.protocols.arrow.stack_arrow``.

    >>> import pyarrow as pa, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_arrow(pa.array([[1.0], [2.0, 3.0]]), comm=MPI.COMM_SELF)
    >>> a.global_shape, a.to_global().value
    ((2, None), [[1.0], [2.0, 3.0]])
    """
    comm = resolve(comm)
    if type is not None and not isinstance(type, str):
        raise TypeError(f"from_arrow: type must be an ndtypes string, got {type!r}")
    yield dict(comm=comm, type=type)
    from ..protocols import arrow
    return new(arrow.stack_arrow(arr, comm, type))


@collective(own=("arr",))
def from_awkward(arr, comm=None, type=None):
    """A DistArray of every rank's awkward array, rows stacked in rank order
    (collective; zero-copy); see ``xdap.protocols.awkward.stack_awkward``."""
    comm = resolve(comm)
    if type is not None and not isinstance(type, str):
        raise TypeError(f"from_awkward: type must be an ndtypes string, got {type!r}")
    yield dict(comm=comm, type=type)
    from ..protocols import awkward
    return new(awkward.stack_awkward(arr, comm, type))


def _path(name, path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name}: path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


@collective
def load(path, comm=None, dist=None, grid=None, **per_dim):
    """Load a save written by ``DistArray.save`` (collective); see
    ``xdap.io.load``.  The path and the target distribution are agreed;
    the store is checked as untrusted input before anything is read.

    >>> import tempfile, os, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(6.0), comm=MPI.COMM_SELF)
    >>> path = os.path.join(tempfile.mkdtemp(), "a.xdap")
    >>> a.save(path)
    >>> xdap.load(path, comm=MPI.COMM_SELF).to_global().value
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    """
    comm = resolve(comm)
    path = _path("load", path)
    yield dict(path=path, comm=comm, dist=dist, grid=grid, per_dim=per_dim)
    from .. import io
    return new(io.load(path, comm, dist, grid, **per_dim))


# -- HDF5 ---------------------------------------------------------------------------
def _dataset(name, dataset) -> str:
    if not isinstance(dataset, str) or not dataset.strip("/"):
        raise TypeError(f"{name}: dataset must be a non-empty str (an HDF5 path such as "
                        f"'/results/u'), got {arguments._shown(dataset)}")
    return dataset


@collective
def from_hdf5(path, dataset, dist=None, grid=None, comm=None, **per_dim):
    """An HDF5 dataset (h5py reads it: any chunking, any compression filter
    h5py has) as a DistArray: numbers and bools, compound types as records
    (aligned as ndtypes lays them out: one conversion), optional data where
    the dataset names its validity dataset (attribute ``xdap_valid``, as
    ``to_hdf5`` writes it).

    Collective. Every rank opens the file and reads the dataset's shape and
    type (agreed: a rank that sees another file is one error everywhere);
    then each reads only its rows of axis 0 -- one hyperslab, straight into
    its block -- and, for another ``dist``/``grid``, the blocks move once
    (one redistribution).

    >>> import os, tempfile, h5py, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "f.h5")
    >>> with h5py.File(path, "w") as f:
    ...     _ = f.create_dataset("u", data=np.arange(6.0).reshape(3, 2), compression="gzip")
    >>> xdap.from_hdf5(path, "u", comm=MPI.COMM_SELF).to_numpy().tolist()
    [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    """
    from ..distribution import make_distribution
    from ..io.hdf5 import describe
    comm = resolve(comm)
    path = _path("from_hdf5", path)
    dataset = _dataset("from_hdf5", dataset)
    shape, dtype, valid = describe(path, dataset, "from_hdf5")
    # read in native byte order (h5py converts), records aligned as ndtypes lays them out
    if dtype.names:
        dtype = np.dtype([(n, dtype.fields[n][0].newbyteorder("=")) for n in dtype.names],
                         align=True)
    else:
        dtype = dtype.newbyteorder("=")
    target = make_distribution(shape, dist, grid, comm, **per_dim)
    yield dict(path=path, dataset=dataset, dist=target, grid=target.grid, comm=comm.size,
               per_dim=(shape, dtype.str if not dtype.names else dtype.descr, valid))
    from ..io.hdf5 import read_rows
    return _from_rows(shape, dtype, comm, target,
                      lambda lo, hi: read_rows(path, dataset, lo, hi, dtype),
                      None if valid is None else
                      lambda lo, hi: read_rows(path, valid, lo, hi, np.dtype(np.bool_)),
                      what=f"from_hdf5: cannot read {dataset!r} of {path!r}")


@collective
def to_hdf5(x, path, dataset, mode="a", dims=None):
    """Write the DistArray into the HDF5 file at ``path`` as ``dataset``
    (h5py, NumPy's dtype; records as compound types; optional data as the
    values -- 0 where missing -- plus a bool dataset ``dataset + "_valid"``
    that the values' attribute ``xdap_valid`` names). ``mode``: "a" adds the
    dataset to the file (made if absent; an existing dataset of that name is
    an error), "w" makes the file anew.

    Collective. Each rank writes its rows of axis 0 as one slab, after one
    redistribution to row blocks when the array is distributed otherwise:
    collectively through parallel HDF5 when h5py is built with MPI, else
    rank by rank (one file open at a time). Ragged data has no HDF5 form
    here: save it with ``a.save`` (xdap's store).

    ``dims`` (default: ``a.labels.dims`` of an array ``from_xarray`` read,
    else none) names the axes as NetCDF-4 does (HDF5 dimension scales), so
    ``xarray.open_dataset(path, engine="h5netcdf")`` sees a variable with
    those dims. A 1-d dataset already in the file under a dim's name and of
    its length becomes that dim's coordinate: write coordinates first.

    >>> import os, tempfile, h5py, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "f.h5")
    >>> xdap.from_global(np.arange(4), comm=MPI.COMM_SELF).to_hdf5(path, "n")
    >>> h5py.File(path, "r")["n"][()].tolist()
    [0, 1, 2, 3]
    """
    arguments.fixed("to_hdf5", x)
    path = _path("to_hdf5", path)
    dataset = _dataset("to_hdf5", dataset)
    mode = arguments.choice("to_hdf5", "mode", mode, ("a", "w"))
    dims = _dims("to_hdf5", x, dims, None)
    yield dict(x=x, path=path, dataset=dataset, mode=mode, dims=dims)
    from ..distribution import row_block_layout
    from ..io.hdf5 import VALID_ATTR, write_rows
    from ..movement.redistribute import to_layout
    shape = x.distribution.global_shape
    blocks, first, _ = row_block_layout(shape, x.distribution.comm)
    d, p = to_layout(x.distribution, x.parts, blocks)
    total = shape[0] if shape else None
    values = p.values
    mask = p.valid_mask()
    sets = []
    if mask is not None:
        values = np.where(mask, values, np.zeros((), values.dtype))
        sets.append((dataset + "_valid", np.ascontiguousarray(mask), first, total, {}))
        attrs = {VALID_ATTR: dataset + "_valid"}
    else:
        attrs = {}
    sets.insert(0, (dataset, np.ascontiguousarray(values), first, total, attrs))
    if dims is not None:         # a dim the file holds otherwise: refused before any write
        from ..io.hdf5 import attach_dims, check_dims
        on_rank0(d.comm, lambda: check_dims(path, dataset, shape, dims, mode, "to_hdf5"),
                  f"to_hdf5: cannot read {path!r}")
    write_rows(d.comm, path, sets, "to_hdf5", mode)
    if dims is not None:
        on_rank0(d.comm, lambda: attach_dims(path, [name for name, *_ in sets], dims,
                                              "to_hdf5"),
                  f"to_hdf5: cannot name the dims of {dataset!r} in {path!r}")


def _dims(what, x, dims, default):
    """The axes' names: ``dims`` as given, else the labels' (``from_xarray``),
    else ``default``."""
    shape = x.distribution.global_shape
    if dims is None:
        dims = x.labels.dims if x.labels is not None else default
        return None if dims is None else tuple(dims)
    if isinstance(dims, str) or not isinstance(dims, (tuple, list)) or \
            not all(isinstance(n, str) and n for n in dims) or len(dims) != len(shape):
        raise TypeError(f"{what}: dims must be {len(shape)} non-empty names (str), got "
                        f"{arguments._shown(dims)}")
    return tuple(dims)


# -- plain Zarr arrays --------------------------------------------------------------
def _from_rows(shape, dtype, comm, target, read, read_valid=None, sizes=None, *, what):
    """A DistArray of ``target`` from each rank's rows of axis 0 (``read(start,
    stop)``; ``read_valid``: the same rows' validity, for optional data):
    read in row blocks (``sizes``: each rank's count, default balanced),
    moved once when ``target`` is another layout.  ``what`` (``"from_zarr:
    cannot read 'x.zarr'"``): a read that fails on any rank -- a corrupt
    chunk, an I/O error, memory -- is one error on every rank, that text
    first (``xdap.agreement.settled``: one message more, where the file's
    reads cost far more)."""

    from ..bitmaps import pack_validity
    from ..distribution import row_block_layout
    from ..dtypes import dtype_from_numpy
    from ..movement.redistribute import prepare_move, to_layout
    from ..parts import Parts
    from ..types import TypeInfo
    blocks, start, stop = row_block_layout(shape, comm, sizes)
    with settled(comm, what):          # the reads, and the move's allocations, agreed
        values = read(start, stop)
        validity = None if read_valid is None else pack_validity(read_valid(start, stop))
        info = TypeInfo.fixed(values.shape, dtype_from_numpy(dtype),
                              optional=read_valid is not None)
        parts = Parts(info, values, validity)
        move = prepare_move(blocks, parts, target)
    return new(move() if move is not None else to_layout(blocks, parts, target))


@collective
def from_zarr(path_or_array, dist=None, grid=None, comm=None, **per_dim):
    """A plain Zarr array -- v2 or v3, any codecs, chunks, dtype of numbers
    or bools, as zarr, xarray or dask wrote it -- as a DistArray. A path
    (each rank opens it) or a ``zarr.Array`` each rank opened (any store
    zarr-python reads).

    Collective. The shape and dtype are agreed; then each rank reads rows
    of axis 0 -- zarr decodes only the chunks that overlap them -- in one
    of two plans (``xdap.io.zarr_arrays.read_sizes``): its own rows, a
    chunk that straddles two ranks' rows decoded by both; or whole chunks,
    each decoded once, then one exchange -- the second only when it decodes
    less in all and the slowest rank finishes sooner. Another
    ``dist``/``grid`` costs one redistribution, from whole chunks. A group
    in xdap's own layout (what ``to_zarr`` writes for ragged, optional or
    typed data, and ``a.save``) loads as ``xdap.load`` loads it.

    >>> import os, tempfile, zarr, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "z.zarr")
    >>> zarr.create_array(path, shape=(5,), chunks=(2,), dtype="i4")[:] = np.arange(5)
    >>> xdap.from_zarr(path, comm=MPI.COMM_SELF).to_numpy().tolist()
    [0, 1, 2, 3, 4]
    """
    from ..distribution import make_distribution
    from ..io.zarr_arrays import describe
    comm = resolve(comm)
    target = path_or_array if not isinstance(path_or_array, (str, os.PathLike)) else \
        _path("from_zarr", path_or_array)
    array, shape, dtype = describe(target, "from_zarr")
    where = target if isinstance(target, str) else str(getattr(array, "store_path", "array"))
    if array is None:           # xdap's own layout (ragged, optional, typed): load reads it
        yield dict(path_or_array=(where, "xdap store"), dist=dist, grid=grid, comm=comm,
                   per_dim=per_dim)
        from .. import io
        return new(io.load(where, comm, dist, grid, **per_dim))
    d = make_distribution(shape, dist, grid, comm, **per_dim)
    yield dict(path_or_array=where, dist=d, grid=d.grid, comm=comm.size,
               per_dim=(shape, dtype.str))
    from ..distribution import row_block_layout
    from ..io.zarr_arrays import read_rows, read_sizes
    sizes = None
    if shape:
        plain = row_block_layout(shape, comm)[0]
        sizes = read_sizes(np.diff(plain.maps[0].bounds).tolist(), array.chunks[0],
                           target_is_plain=d == plain)
    return _from_rows(shape, dtype, comm, d, lambda lo, hi: read_rows(array, lo, hi, dtype),
                      sizes=sizes, what=f"from_zarr: cannot read {where!r}")


@collective
def to_zarr(x, path, *, chunks=None, mode="w-", dims=None):
    """Write the DistArray as a plain Zarr v3 array at ``path`` (zarr's
    default codecs; ``chunks``: a tuple, default ~16 MiB of whole rows) that
    zarr, xarray and dask open: fixed numbers and bools. Ragged, optional,
    string and record data have no plain-array form that keeps their
    meaning: they are written in xdap's own layout (a Zarr group of values,
    offsets and validity arrays, as ``a.save`` writes it), which
    ``xdap.from_zarr`` and ``xdap.load`` read back.
    ``mode``: "w-" refuses an existing path, "w" replaces it. ``dims``: the
    dimensions' names (default ``a.labels.dims`` of an array ``from_xarray``
    read, else ``dim_0``, ``dim_1``, ... as xarray names them), so
    ``xarray.open_zarr`` of the enclosing group sees a variable.

    Collective. Rank 0 writes the metadata; then every rank writes whole
    chunks at once, with no lock: the array first moves (one
    redistribution, skipped when it lies so) to blocks of rows whose
    boundaries fall on chunk boundaries, balanced in chunks.

    >>> import os, tempfile, zarr, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "z.zarr")
    >>> xdap.from_global(np.eye(2), comm=MPI.COMM_SELF).to_zarr(path)
    >>> zarr.open_array(path, mode="r")[:].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    arguments.array("to_zarr", x)
    path = _path("to_zarr", path)
    mode = arguments.choice("to_zarr", "mode", mode, ("w-", "w"))
    info = x.parts.info
    if info.ragged or info.boxed or info.optional or not info.numeric:
        # no plain array holds it without loss: xdap's own layout (a group)
        if chunks is not None or dims is not None:
            raise ValueError(f"to_zarr: chunks= and dims= shape plain arrays; "
                             f"{arguments.type_of(x)} is written in xdap's own layout (a Zarr "
                             "group, as a.save)")
        yield dict(x=x, path=path, chunks=None, mode=mode, dims=None)
        _refuse_existing(path, mode, x.distribution.comm)
        from ..io import save as write
        write(x.distribution, x.parts, path)
        return
    shape, dtype = x.distribution.global_shape, info.numpy_dtype
    if chunks is not None:
        chunks = arguments.shape("to_zarr", chunks, "chunks")
        if len(chunks) != len(shape) or 0 in chunks:
            raise ValueError(f"to_zarr: chunks must be {len(shape)} sizes >= 1, got {chunks}")
    dims = _dims("to_zarr", x, dims, tuple(f"dim_{k}" for k in range(len(shape))))
    yield dict(x=x, path=path, chunks=chunks, mode=mode, dims=dims)
    from ..distribution import make_distribution
    from ..io.files import put_in_place
    from ..io.zarr_arrays import chunk_aligned_sizes, create, default_chunks
    from ..movement.redistribute import to_layout
    comm = x.distribution.comm
    _refuse_existing(path, mode, comm)
    chunks = chunks or default_chunks(shape, dtype)
    if shape:
        sizes = chunk_aligned_sizes(shape[0], chunks[0], comm.size)
        aligned = make_distribution(shape, ("b",), comm=comm, sizes=(sizes,))
    else:
        aligned = make_distribution(shape, None, comm=comm)
    d, p = to_layout(x.distribution, x.parts, aligned)
    # written beside path, moved into place once every rank has written: a
    # failure anywhere leaves what was at path
    def write(staging):
        array = need("zarr").open_array(staging, mode="r+")
        if not shape:
            if comm.rank == 0:
                array[()] = p.values
        elif len(p.values):
            first = int(aligned.maps[0].bounds[aligned.coords[0]])
            array[first:first + len(p.values)] = p.values
    _staged(comm, path, "to_zarr", lambda staging: create(staging, shape, dtype, chunks,
                                                          tuple(dims)),
            write, put_in_place)


def _staged(comm, path, what, stage, write, commit):
    """A writer that loses nothing: rank 0 makes the staging place beside
    ``path`` (``stage(staging)``, a killed write's leftover removed first);
    every rank writes its part there (``write(staging)``, its failure
    every rank's: ``settled``); rank 0 moves it into place (``commit(staging,
    path)``).  Any failure leaves ``path`` as it was and removes the
    staging place."""
    from ..io.pieces import PARTIAL
    staging = path.rstrip(os.sep) + PARTIAL
    on_rank0(comm, lambda: (shutil.rmtree(staging, ignore_errors=True), stage(staging)),
             f"{what}: cannot write beside {path!r}")
    try:
        with settled(comm, f"{what}: cannot write {path!r}"):
            write(staging)
        on_rank0(comm, lambda: commit(staging, path), f"{what}: cannot move the new data to "
                 f"{path!r}")
    except BaseException:
        if comm.rank == 0:                 # nothing of this write is left behind
            shutil.rmtree(staging, ignore_errors=True)
        raise


# -- xarray variables (NetCDF-4, Zarr, dask, ...) ------------------------------------
@collective
def from_xarray(dataarray, dist=None, grid=None, comm=None, **per_dim):
    """One variable of a lazily opened xarray dataset -- NetCDF-4 or HDF5
    (``xarray.open_dataset(path, engine="h5netcdf")``), Zarr, dask-backed or
    in memory -- as a DistArray of numbers or bools, with its name, dims,
    coordinates and attributes kept as ``a.labels`` (``xdap.labels``).

    Collective. Every rank opens the dataset itself and passes its own
    ``ds[name]``; what each sees -- name, dims, shape, dtype, source file,
    coordinates -- is agreed (a rank that opened another file or variable
    is one error on every rank). Then each rank reads only its rows of
    axis 0 through xarray's lazy indexing (the backend reads only their
    chunks), and another ``dist``/``grid`` costs one redistribution.

    A variable opened undecoded (``mask_and_scale=False``) whose attributes
    carry a ``_FillValue`` becomes optional data: the fill entries are the
    missing ones (decoded, xarray has already turned them into NaN).
    Coordinates along the first dimension are 1-d DistArrays in row blocks
    (as long as the data is tall: never whole on one rank); the others are
    NumPy on every rank. Dates are held as int64 counts of their unit.

    >>> import numpy as np, xarray, xdap
    >>> from mpi4py import MPI
    >>> v = xarray.DataArray(np.arange(6.0).reshape(3, 2), dims=("time", "x"),
    ...                      coords={"x": [10, 20]}, name="u", attrs={"units": "m"})
    >>> a = xdap.from_xarray(v, comm=MPI.COMM_SELF)
    >>> a.to_numpy().tolist(), a.labels.dims, a.labels.coords["x"].values.tolist()
    ([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], ('time', 'x'), [10, 20])
    """
    from ..distribution import make_distribution
    from ..io.xarray_vars import describe
    comm = resolve(comm)
    found = describe(dataarray, "from_xarray")
    target = make_distribution(found.shape, dist, grid, comm, **per_dim)
    yield dict(dataarray=found.summary(), dist=target, grid=target.grid, comm=comm.size,
               per_dim=found.shape)
    from ..io.xarray_vars import read_rows
    from ..labels import Coordinate, Labels
    read = _remembered(lambda lo, hi: read_rows(dataarray, lo, hi, found.dtype))
    what = f"from_xarray: cannot read {found.name!r}"
    if found.fill is None:
        a = _from_rows(found.shape, found.dtype, comm, target, read, what=what)
    elif found.dtype.kind in "fc" and np.isnan(found.fill):
        a = _from_rows(found.shape, found.dtype, comm, target, read,
                       lambda lo, hi: ~np.isnan(read.last), what=what)
    else:
        a = _from_rows(found.shape, found.dtype, comm, target, read,
                       lambda lo, hi: read.last != found.fill, what=what)
    coords = {}
    for name in sorted(found.coords):
        c = found.coords[name]
        dims = tuple(str(n) for n in c.dims)
        if found.dims and found.dims[0] in dims:
            values = _coordinate_rows(c, comm)
        else:
            values = np.asarray(c.values)
        coords[name] = Coordinate(dims, values, dict(c.attrs), np.dtype(c.dtype))
    a._labels = Labels(found.name, found.dims, coords, found.attrs)
    return a


class _remembered:
    """A row reader that keeps what it read last (the validity of optional
    data is computed from the same rows, not read again)."""

    def __init__(self, read):
        self.read, self.last = read, None

    def __call__(self, lo, hi):
        self.last = self.read(lo, hi)
        return self.last


def _coordinate_rows(c, comm):
    """A coordinate along the first dimension as a DistArray in row blocks
    of its own first axis; strings of any length (NumPy object arrays) as
    fixed strings of the longest one on any rank."""
    from ..agreement import agreement
    from ..distribution import row_block_layout
    from ..io.xarray_vars import held_dtype, read_rows
    shape = tuple(int(s) for s in c.shape)
    blocks, start, stop = row_block_layout(shape, comm)
    dtype = np.dtype(c.dtype)
    what = f"from_xarray: cannot read coordinate {c.name!r}"
    if dtype.kind == "O":
        with agreement(comm, "from_xarray", share=True) as ag:
            try:                     # the file's rows: a failure is told in the agreement
                rows = np.asarray(c.values if c.ndim == 0 else c[start:stop].values)
            except Exception as e:
                raise ValueError(f"{what}: {type(e).__name__}: {e}") from e
            if not all(isinstance(v, str) for v in rows.flat):
                raise ValueError(f"from_xarray: coordinate {c.name!r} holds Python objects "
                                 "other than str (xdap holds numbers, dates and strings)")
            ag.share(max((len(v) for v in rows.flat), default=0))
        dtype = np.dtype(f"U{max(1, max(ag.shared))}")
        return _from_rows(shape, dtype, comm, blocks, lambda lo, hi: rows.astype(dtype),
                          what=what)
    dtype = held_dtype(dtype)
    return _from_rows(shape, dtype, comm, blocks, lambda lo, hi: read_rows(c, lo, hi, dtype),
                      what=what)


def _refuse_existing(path, mode, comm):
    """``mode="w-"``: an existing ``path`` is one ValueError on every rank
    (rank 0 looks: the ranks may not share a view of a file system's cache)."""
    def look():
        if mode == "w-" and os.path.exists(path):
            raise ValueError(f"to_zarr: {path!r} exists (mode='w' replaces it)")
    on_rank0(comm, look, f"to_zarr: cannot look at {path!r}")


# -- .npy pieces and CSV ------------------------------------------------------------
@collective
def from_npy(path, dist=None, grid=None, comm=None, **per_dim):
    """A directory of ``.npy`` pieces (or a list of files) -- one array cut
    along axis 0, the pieces in name order, as ``to_npy`` or heat's
    ``save_npy_from_path`` write them -- as a DistArray.

    Collective. Every rank reads the pieces' headers (the layout is agreed),
    then each memory-maps only the pieces its balanced block of rows
    overlaps and copies out those rows; another ``dist``/``grid`` costs one
    redistribution.

    >>> import os, tempfile, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "a.npy"), np.arange(3)); np.save(os.path.join(d, "b.npy"), [7])
    >>> xdap.from_npy(d, comm=MPI.COMM_SELF).to_numpy().tolist()
    [0, 1, 2, 7]
    """
    from ..distribution import make_distribution
    from ..io.pieces import npy_layout, npy_pieces
    comm = resolve(comm)
    if not isinstance(path, (list, tuple)):
        path = _path("from_npy", path)
    paths = npy_pieces(path, "from_npy")
    rows, dtype, tail = npy_layout(paths, "from_npy")
    shape = (sum(rows),) + tail
    d = make_distribution(shape, dist, grid, comm, **per_dim)
    yield dict(path=paths, dist=d, grid=d.grid, comm=comm.size,
               per_dim=(rows, dtype.str, tail))
    from ..io.pieces import npy_rows
    return _from_rows(shape, dtype.newbyteorder("="), comm, d,
                      lambda lo, hi: npy_rows(paths, rows, lo, hi, dtype, tail),
                      what=f"from_npy: cannot read the pieces of {path!r}")


@collective
def to_npy(x, path):
    """Write the DistArray as ``.npy`` pieces into the directory ``path``
    (made if absent; it must hold no ``.npy`` files yet): each rank its
    rows as ``part-RRRRR.npy``, after one redistribution to row blocks when
    it lies otherwise. ``xdap.from_npy`` and ``np.concatenate`` of the
    pieces in name order give the array back. Fixed numbers and bools.
    Collective; every rank writes at once.

    >>> import os, tempfile, numpy as np, xdap
    >>> from mpi4py import MPI
    >>> d = os.path.join(tempfile.mkdtemp(), "pieces")
    >>> xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF).to_npy(d)
    >>> sorted(os.listdir(d)), xdap.from_npy(d, comm=MPI.COMM_SELF).to_numpy().tolist()
    (['part-00000.npy'], [0.0, 1.0, 2.0, 3.0])
    """
    arguments.numeric("to_npy", x)
    path = _path("to_npy", path)
    if x.ndim == 0:
        raise ValueError("to_npy: pieces are cut along axis 0; a 0-d array has none")
    if os.path.isdir(path) and any(n.endswith(".npy") for n in os.listdir(path)):
        raise ValueError(f"to_npy: {path!r} already holds .npy files")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"to_npy: {path!r} exists and is not a directory")
    yield dict(x=x, path=path)
    from ..distribution import row_block_layout
    from ..io.pieces import commit_pieces, write_piece
    from ..movement.redistribute import to_layout
    comm = x.distribution.comm
    blocks = row_block_layout(x.distribution.global_shape, comm)[0]
    d, p = to_layout(x.distribution, x.parts, blocks)
    _staged(comm, path, "to_npy", os.makedirs,
            lambda staging: write_piece(os.path.join(staging, f"part-{comm.rank:05d}.npy"),
                                        p.values),
            commit_pieces)


@collective
def from_csv(path, sep=",", header_lines=0, dtype=None, comm=None):
    """Rows of numbers from a CSV file as a 2-D DistArray in irregular
    blocks: each rank reads only its share of the file's bytes, moved to
    line boundaries (a line belongs to the rank it starts on), and parses
    it with NumPy -- heat's ``load_csv``. ``header_lines`` lines are
    skipped; ``dtype`` default float64.

    Collective: the column count is agreed after parsing (a ragged file is
    one error on every rank).

    >>> import os, tempfile, xdap
    >>> from mpi4py import MPI
    >>> path = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(path, "w").write(chr(10).join(["a,b", "1,2", "3,4"]))
    >>> xdap.from_csv(path, header_lines=1, comm=MPI.COMM_SELF).to_numpy().tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    comm = resolve(comm)
    path = _path("from_csv", path)
    if not isinstance(sep, str) or not sep:
        raise TypeError(f"from_csv: sep must be a non-empty str, got {arguments._shown(sep)}")
    header_lines = arguments.integer("from_csv", "header_lines", header_lines, low=0)
    dt = arguments.dtype("from_csv", dtype) or np.dtype(np.float64)
    if not os.path.isfile(path):
        raise ValueError(f"from_csv: no file {path!r}")
    yield dict(path=path, sep=sep, header_lines=header_lines, dtype=dt, comm=comm.size)
    from ..agreement import agreement
    from ..io.pieces import csv_rows
    rows = None
    # the parse, and every rank's column count, in one agreement (one message)
    with agreement(comm, "from_csv", share=True) as ag:
        try:
            rows = csv_rows(path, comm.rank, comm.size, header_lines, sep, dt)
        except Exception as e:             # a bad line, the disk, memory: this rank's
            raise ValueError(f"from_csv: rank {comm.rank} cannot parse its lines of "
                             f"{path!r}: {type(e).__name__}: {e}") from None
        ag.share(int(rows.shape[1]) if len(rows) else -1)
    widths = {w for w in ag.shared if w >= 0}
    if len(widths) > 1:
        from ..agreement import agreed_on
        raise agreed_on(comm, ValueError(f"from_csv: {path!r} has rows of {sorted(widths)} "
                                         "columns"))
    width = widths.pop() if widths else 0
    if not len(rows):
        rows = np.empty((0, width), dt)
    from ..create import from_local as pieces
    return new(pieces(rows, comm=comm))


# -- the whole array ---------------------------------------------------------------
def _root(name, x, root):
    if root is None:
        return None
    return arguments.rank(name, x.comm, root)


@collective
def to_global(x, root=None):
    """The whole array as an xnd container on every rank, or on ``root``
    only (None elsewhere). Collective; copies (buffers, no pickles).

    Owned values only: communication padding is not read; an index held
    by several ranks (unstructured, not one-to-one) is taken from its
    owner.
    """
    arguments.array("to_global", x)
    root = _root("to_global", x, root)
    yield dict(x=x, root=root)
    from ..movement.gather import to_global as gather
    out = gather(x.distribution, x.parts, root)
    return None if out is None else container(out)


@collective
def to_numpy(x, root=None):
    """The whole array as a NumPy array, on every rank (or on ``root``
    only, None elsewhere); collective, copies (``to_global``). Optional
    data is a ``numpy.ma.MaskedArray``; ragged arrays have no NumPy form
    (TypeError on every rank: use ``to_global`` or ``to_arrow``).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> xdap.from_global(np.arange(3.0), dist=("c",), comm=MPI.COMM_SELF).to_numpy()
    array([0., 1., 2.])
    """
    arguments.array("to_numpy", x)
    info = x.parts.info
    if info.ragged:
        raise TypeError(f"to_numpy: a ragged array ({info.global_type(x.shape[:1])}) has no "
                        "NumPy form; use a.to_global() (xnd) or a.to_arrow()")
    root = _root("to_numpy", x, root)
    yield dict(x=x, root=root)
    from ..movement.gather import to_global as gather
    p = gather(x.distribution, x.parts, root)
    if p is None:
        return None
    values = np.asarray(p.values)
    if info.optional:
        return np.ma.MaskedArray(values, mask=~p.valid_mask())
    return values


@collective
def save(x, path):
    """Save to the directory ``path``: type, distribution and data,
    crash-safe and checksummed (collective; see ``xdap.io.save``).
    Read it back with ``xdap.load(path)``, on any number of ranks.

    >>> import os, tempfile, xdap
    >>> from mpi4py import MPI
    >>> r = xdap.from_global([[1.0, None], [], [2.0]], type="var * var * ?float64",
    ...                      comm=MPI.COMM_SELF)
    >>> path = os.path.join(tempfile.mkdtemp(), "r.xdap")
    >>> r.save(path)
    >>> xdap.load(path, comm=MPI.COMM_SELF).local
    xnd([[1.0, None], [], [2.0]], type='var * var * ?float64')
    """
    arguments.array("save", x)
    path = _path("save", path)
    yield dict(x=x, path=path)
    from ..io import save as write
    write(x.distribution, x.parts, path)


# -- exports of this rank's part (local work) ------------------------------------------
@part(name="__distarray__")
def distarray(x, version: str = "0.10.0"):
    """DAP export (0.10.0; "0.9.0" on request): the buffer is a zero-copy
    view of ``local``.  No communication -- except the first export of
    a ragged array whose rows are not in block order: that one is
    collective, as it finds where each leaf sits in the global leaf
    order (a distributed prefix sum over the rows, O(rows / P)), kept
    for later calls (decided from the array's agreed state).

    See ``xdap.protocols.dap`` for the ragged/optional layout.
    """
    arguments.array("__distarray__", x)
    version = arguments.choice("__distarray__", "version", version, ("0.10.0", "0.9.0"))
    yield dict(x=x, version=version)
    from ..protocols import dap
    return dap.export(x.distribution, x.parts, version, leaf_index=x.__xdap_leaf_index__())


@part(name="partitioned")
def partitioned(x, dialect: str = "spec"):
    """The ``__partitioned__`` dict, in the spec's form or, with
    ``dialect="heat"``, in the form heat reads: ``ht.from_partition_dict(
    a.partitioned(dialect="heat"))`` (see
    ``xdap.protocols.partitioned.export``; zero-copy; the first export
    over a communicator is collective -- decided from agreed state).

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(4.0), comm=MPI.COMM_SELF)
    >>> a.partitioned(dialect="heat")["partitions"][(0,)]["location"]
    [0]
    """
    arguments.array("partitioned", x)
    dialect = arguments.choice("partitioned", "dialect", dialect, ("spec", "heat"))
    yield dict(x=x, dialect=dialect)
    from ..protocols import partitioned as exporter
    return exporter.export(x.distribution, x.parts, dialect)


@part(name="__partitioned__")
def partitioned_property(x):
    """``__partitioned__`` export (tiles with zero-copy views of ``local``;
    the first export over a communicator is collective, see
    ``xdap.protocols.partitioned``)."""
    arguments.array("__partitioned__", x)
    yield dict(x=x)
    from ..protocols import partitioned as exporter
    return exporter.export(x.distribution, x.parts)


@part
def to_arrow(x):
    """This rank's owned part as a pyarrow array (zero-copy; see
    ``xdap.protocols.arrow``)."""
    arguments.array("to_arrow", x)
    yield dict(x=x)
    from ..protocols.arrow import owned_arrow
    return owned_arrow(x.distribution, x.parts)


@part
def to_awkward(x):
    """This rank's owned part as an awkward Array (zero-copy; see
    ``xdap.protocols.awkward``)."""
    arguments.array("to_awkward", x)
    yield dict(x=x)
    from ..protocols.awkward import owned_awkward
    return owned_awkward(x.distribution, x.parts)


@part
def local_numpy(x):
    """This rank's elements as a NumPy array over the same memory (no
    copy; writing it writes the array): the local shape, with NumPy's
    dtype for the element (a structured dtype for records, ``S``/``U``
    for fixed strings, int64 codes for categoricals, ``complex128`` for
    complex). Optional data is a ``numpy.ma.MaskedArray`` whose data is
    the view (the mask is a copy). Padded blocks include their ghost
    cells. Ragged data has no NumPy form: TypeError on every rank.

    >>> import numpy as np, xdap
    >>> from mpi4py import MPI
    >>> a = xdap.from_global(np.arange(4) * 1j, comm=MPI.COMM_SELF)
    >>> a.local_numpy()
    array([0.+0.j, 0.+1.j, 0.+2.j, 0.+3.j])
    """
    arguments.array("local_numpy", x)
    p = x.parts
    if p.info.ragged:
        raise TypeError(f"local_numpy: a ragged array ({p.info.type_string()}) has no NumPy "
                        "form; use a.to_arrow() or a.to_awkward() (zero-copy), or a.local")
    yield dict(x=x)
    if p.info.optional:
        return np.ma.MaskedArray(p.values, mask=~p.valid_mask())
    return p.values


@part(name="__array__")
def numpy_array(x, dtype=None, copy=None):
    """``np.asarray(a)``: a 0-d array's value, which every rank holds (a
    NumPy 0-d array; no communication).  A larger array is spread over the
    ranks, so NumPy cannot take it whole: a TypeError naming
    ``a.to_numpy()`` (collective) and ``a.local_numpy()`` (this rank's
    part)."""
    arguments.array("__array__", x)
    if x.ndim or x.parts.info.optional or not x.parts.info.numeric:
        raise TypeError("a DistArray is spread over the ranks, so NumPy cannot take it whole: "
                        "a.to_numpy() gathers it (on every rank, or root=), "
                        "a.local_numpy() / a.local are this rank's part")
    yield dict(x=x, dtype=dtype, copy=copy)
    value = np.array(x.parts.values, copy=True)
    return value if dtype is None else value.astype(dtype)


@part(name="__dlpack__")
def dlpack(x, /, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of an array every rank holds whole (0-d, replicated,
    or on one rank): its values, zero-copy.  A distributed array's data is
    on many ranks -- one rank's part is ``a.local_numpy()``: a BufferError,
    decided from the distribution alone (no MPI call)."""
    arguments.array("__dlpack__", x)
    if not all(m.whole for m in x.distribution.maps) or \
            x.parts.info.ragged or x.parts.info.optional or x.parts.info.boxed:
        raise BufferError(f"__dlpack__: {x!r} is distributed (or not plain fixed data); "
                          "export each rank's part, a.local_numpy(), or a.to_numpy()")
    yield dict(x=x, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    kw = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kw["copy"] = copy
    return x.parts.values.__dlpack__(stream=stream, dl_device=dl_device, **kw)


@part(name="__dlpack_device__")
def dlpack_device(x, /):
    """``(kDLCPU, 0)``: xdap arrays live on the CPU."""
    yield dict(x=x)
    return (1, 0)


@local
def to_device(x, device, /, *, stream=None):
    """``x`` itself on ``"cpu"`` (its only device); any other is a
    ValueError."""
    arguments.array("to_device", x)
    if device not in ("cpu", None):
        raise ValueError(f"to_device: xdap arrays live on the CPU, not device {device!r}")
    yield dict(x=x, device=device, stream=stream)
    return x
