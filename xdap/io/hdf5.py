"""HDF5 datasets in and out, rows by rank, through h5py.

- ``describe(path, dataset)``: a dataset's shape, NumPy dtype and the name
  of its validity dataset (optional data: attribute ``xdap_valid``), read
  as untrusted input -- every failure one ``ValueError``.
- ``read_rows(path, dataset, start, stop)``: rows ``start:stop`` of axis 0
  (one hyperslab; compressed and chunked datasets as h5py reads them).
- ``write_rows(comm, path, sets, what, mode)``: each rank's rows of several
  datasets into one file: collectively through parallel HDF5 when h5py is
  built with MPI (``h5py.get_config().mpi``), else rank by rank in rank
  order, a token passed along (so no two ranks have the file open for
  writing at once). ``mode`` "w" makes the file anew, "a" adds datasets
  to it (an existing dataset of that name is an error).
- ``attach_dims(path, datasets, dims, what)``: names the datasets' axes
  as NetCDF-4 does (HDF5 dimension scales), so xarray and netCDF readers
  open the file as variables with those dims.

The engines of ``xdap.from_hdf5`` / ``DistArray.to_hdf5`` and of
``xdap.mesh.write_xdmf``.
"""
from __future__ import annotations

import os

import numpy as np

from ..agreement import agree, on_rank0, settled
from ..optional import need

__all__ = ["describe", "read_rows", "write_rows", "check_dims", "attach_dims", "VALID_ATTR"]

VALID_ATTR = "xdap_valid"     # names the bool dataset of an optional dataset's valid entries


def describe(path: str, dataset: str, what: str):
    """``(shape, dtype, valid_name or None)`` of ``dataset`` in ``path``;
    a missing file or dataset, a group, a non-numeric type or a validity
    dataset of another shape is one ValueError naming it."""
    h5py = need("h5py")
    try:
        with h5py.File(path, "r") as f:
            if dataset not in f:
                raise ValueError(f"{what}: {path!r} holds no dataset {dataset!r} "
                                 f"(it has {sorted(f.keys())[:10]})")
            ds = f[dataset]
            if not isinstance(ds, h5py.Dataset):
                raise ValueError(f"{what}: {dataset!r} in {path!r} is a group, not a dataset")
            dtype = ds.dtype
            if dtype.kind not in "biufc" and not (dtype.kind == "V" and dtype.names):
                raise ValueError(f"{what}: {dataset!r} in {path!r} holds {dtype}, which xdap "
                                 "does not read (numbers, bools and compound records)")
            valid = ds.attrs.get(VALID_ATTR)
            if valid is not None:
                valid = valid.decode() if isinstance(valid, bytes) else str(valid)
                if valid not in f or f[valid].shape != ds.shape or f[valid].dtype != np.bool_:
                    raise ValueError(f"{what}: {dataset!r}'s validity dataset {valid!r} is "
                                     f"missing or not a bool array of shape {ds.shape}")
            return tuple(int(s) for s in ds.shape), dtype, valid
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path!r}: {e}") from None


def read_rows(path: str, dataset: str, start: int, stop: int, dtype: np.dtype):
    """Rows ``start:stop`` of the dataset's axis 0 (all of a 0-d one) as
    a C-contiguous array of ``dtype`` (read straight into it)."""
    h5py = need("h5py")
    with h5py.File(path, "r") as f:
        ds = f[dataset]
        if ds.ndim == 0:
            return np.asarray(ds[()], dtype)
        out = np.empty((stop - start,) + ds.shape[1:], dtype)
        if stop > start:
            ds.read_direct(out, np.s_[start:stop])
        return out


PARTIAL = ".xdap-partial"     # the suffix of what a writer writes before every rank succeeded


def write_rows(comm, path: str, sets, what: str, mode: str = "w") -> None:
    """Each rank's rows of every dataset into the file at ``path``.
    ``sets``: ``[(name, rows, first, total, attrs)]`` -- this rank's rows,
    the global index of its first, the dataset's global rows (``rows``'
    other dims and dtype are the dataset's; ``total`` None: a 0-d dataset
    rank 0 writes), and attributes. Collective; one error on every rank.

    Nothing is lost where a rank fails: a new file (``mode`` "w", or "a"
    where there is none) is written as ``path + PARTIAL`` and moved over
    ``path`` (``os.replace``) only when every rank has written its rows;
    datasets added to an existing file are written under ``name + PARTIAL``
    and renamed when every rank has succeeded -- a failure removes them,
    and leaves the file's other datasets as they were."""
    h5py = need("h5py")
    exists = comm.bcast(os.path.exists(path) if comm.rank == 0 else None, root=0)
    fresh = mode == "w" or not exists
    target = path + PARTIAL if fresh else path
    final = [name for name, *_ in sets]
    partial = [(name if fresh else name + PARTIAL, rows, first, total, attrs)
               for name, rows, first, total, attrs in sets]
    try:
        _write(comm, h5py, target, partial, what, "w" if fresh else "a", final)
    except BaseException:
        _discard(comm, h5py, target, None if fresh else [s[0] for s in partial])
        raise
    if fresh:                    # every rank wrote: the file takes its place at once
        on_rank0(comm, lambda: os.replace(target, path), f"{what}: cannot move {target!r} "
                  f"to {path!r}")
        return

    def rename(f):
        for name, (temporary, *_) in zip(final, partial):
            f.move(temporary, name)
    try:
        _in_file(comm, h5py, path, rename, f"{what}: cannot name the datasets in {path!r}")
    except BaseException:
        _discard(comm, h5py, target, [s[0] for s in partial])
        raise


def _write(comm, h5py, path, sets, what, mode, final) -> None:
    """``write_rows``' writes into ``path`` (``mode`` "w" or "a"; ``final``:
    the names the datasets will have, which must not be in the file)."""
    shapes = [(name, () if total is None else (total,) + rows.shape[1:], rows.dtype, attrs)
              for name, rows, _, total, attrs in sets]
    if h5py.get_config().mpi:
        error = None
        try:
            # every step inside the file is collective: its metadata (the same
            # on every rank), then each rank's selection and buffer made and
            # agreed (a rank that failed there never enters a collective write
            # the others wait in), then the writes; the file is closed
            # collectively whatever happened, and the outcome agreed after it
            with h5py.File(path, mode, driver="mpio", comm=comm) as f:
                for name in final:
                    if name in f:
                        raise ValueError(f"{what}: {path!r} already holds {name!r}")
                datasets = []
                for name, shape, dtype, attrs in shapes:
                    datasets.append(f.create_dataset(name, shape, dtype))
                    datasets[-1].attrs.update(attrs)
                with settled(comm, f"{what}: cannot write {path!r}"):
                    slabs = [selected_rows(h5py, ds, first, rows, total)
                             for ds, (_, rows, first, total, _) in zip(datasets, sets)]
                for ds, slab in zip(datasets, slabs):
                    write_selection(ds.id, *slab)
        except ValueError as e:
            error = e
        except Exception as e:
            error = ValueError(f"{what}: cannot write {path!r}: {type(e).__name__}: {e} "
                               f"(rank {comm.rank})")
        agree(comm, error)
        return

    def make(f):
        for name in final:
            if name in f:
                raise ValueError(f"{what}: {path!r} already holds {name!r}")
        for name, shape, dtype, attrs in shapes:
            ds = f.create_dataset(name, shape, dtype)
            ds.attrs.update(attrs)
    on_rank0(comm, lambda: _with_file(h5py, path, mode, make), f"{what}: cannot make {path!r}")
    # in turn: a token (the first error seen, or none) passes from rank to rank
    failed = comm.recv(source=comm.rank - 1, tag=77) if comm.rank else None
    if failed is None:
        try:
            with h5py.File(path, "r+") as f:
                for name, rows, first, total, _ in sets:
                    if total is None:
                        if comm.rank == 0:
                            f[name][()] = rows
                    elif len(rows):
                        f[name][first:first + len(rows)] = rows
        except Exception as e:             # any: the ranks after this one wait for the token
            failed = f"rank {comm.rank}: {type(e).__name__}: {e}"
    if comm.rank + 1 < comm.size:
        comm.send(failed, dest=comm.rank + 1, tag=77)
    # the failing rank and every one after it hold the error: agree makes it everyone's
    agree(comm, ValueError(f"{what}: cannot write {path!r}: {failed}") if failed else None)


def selected_rows(h5py, ds, first: int, rows: np.ndarray, total) -> tuple:
    """``(memory space, file space, buffer, transfer list)`` of a
    collective ``H5Dwrite`` of ``rows`` into ``ds[first:first + len(rows)]``
    (``total`` None: the 0-d dataset, every rank writing the same value):
    a rank without rows selects nothing but still writes -- h5py's own
    ``ds[...] = rows`` returns before writing an empty selection, and that
    rank would leave the others waiting in the collective write (parallel
    HDF5 only)."""
    h5s = h5py.h5s
    dxpl = h5py.h5p.create(h5py.h5p.DATASET_XFER)
    dxpl.set_dxpl_mpio(h5py.h5fd.MPIO_COLLECTIVE)
    fspace = ds.id.get_space()
    if total is None:
        data = np.ascontiguousarray(rows)
        return h5s.create(h5s.SCALAR), fspace, data, dxpl
    if rows.size:
        fspace.select_hyperslab((first,) + (0,) * (rows.ndim - 1), rows.shape)
        data = np.ascontiguousarray(rows)
        return h5s.create_simple(data.shape), fspace, data, dxpl
    fspace.select_none()
    data = np.empty((1,) * max(rows.ndim, 1), rows.dtype)
    mspace = h5s.create_simple(data.shape)
    mspace.select_none()
    return mspace, fspace, data, dxpl


def write_selection(dataset_id, mspace, fspace, data, dxpl) -> None:
    """One collective ``H5Dwrite`` (``selected_rows``' selection): where
    it fails, it fails on the ranks HDF5 reports it on, after every rank
    took part -- the writer agrees on it once the file is closed."""
    dataset_id.write(mspace, fspace, data, dxpl=dxpl)


def _with_file(h5py, path, mode, work):
    with h5py.File(path, mode) as f:
        work(f)


def _in_file(comm, h5py, path, work, failure) -> None:
    """``work(f)`` on the file opened for writing: collectively with
    parallel HDF5 (its metadata changes are collective), else on rank 0."""
    if not h5py.get_config().mpi:
        on_rank0(comm, lambda: _with_file(h5py, path, "r+", work), failure)
        return
    error = None
    try:
        with h5py.File(path, "r+", driver="mpio", comm=comm) as f:
            work(f)
    except Exception as e:
        error = ValueError(f"{failure}: {type(e).__name__}: {e}")
    agree(comm, error)


def _discard(comm, h5py, path, datasets) -> None:
    """After an agreed failure: remove what ``write_rows`` wrote -- the
    partial file (``datasets`` None), or those datasets of the file.  Best
    effort: the failure already raised is the one every rank reports."""
    if datasets is None:
        if comm.rank == 0:
            try:
                os.remove(path)
            except OSError:
                pass
        return

    def remove(f):
        for name in datasets:
            if name in f:
                del f[name]
    try:
        _in_file(comm, h5py, path, remove, "cleaning up")
    except ValueError:
        pass


# what netCDF-4 writes into a dimension scale that is not also a coordinate variable
_DIMENSION_ONLY = "This is a netCDF dimension but not a netCDF variable."


def _check_scale(f, dim, n, name, axis, path, what):
    """The dataset ``f[dim]`` can be the scale of ``name``'s ``axis`` (a 1-d
    dataset of its length ``n``), else the ValueError naming it."""
    h5py = need("h5py")
    scale = f[dim]
    if not isinstance(scale, h5py.Dataset) or scale.shape != (n,):
        raise ValueError(f"{what}: {path!r} holds {dim!r} of shape "
                         f"{getattr(scale, 'shape', None)}, not a dimension "
                         f"of length {n} for {name!r}'s axis {axis}")
    return scale


def check_dims(path: str, dataset: str, shape, dims, mode: str, what: str) -> None:
    """Raise the ValueError ``attach_dims`` would, before anything is
    written: a dim whose name the file already holds as something other
    than a 1-d dataset of that axis' length."""
    h5py = need("h5py")
    if mode == "w" or not os.path.exists(path):
        return
    try:
        with h5py.File(path, "r") as f:
            for axis, (dim, n) in enumerate(zip(dims, shape)):
                if dim in f and dim != dataset.lstrip("/"):
                    _check_scale(f, dim, n, dataset, axis, path, what)
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path!r}: {e}") from None


def attach_dims(path: str, datasets, dims, what: str) -> None:
    """Attach dimension scales named ``dims`` to every axis of each of
    ``datasets`` in the file at ``path`` (one process: rank 0 after the
    write). A 1-d dataset of that name and length already in the file --
    a coordinate written before -- becomes the scale (a coordinate
    variable); a missing one is made as netCDF-4 makes a bare dimension;
    one of another length is a ValueError."""
    h5py = need("h5py")
    with h5py.File(path, "r+") as f:
        for name in datasets:
            ds = f[name]
            for axis, (dim, n) in enumerate(zip(dims, ds.shape)):
                if dim == name.lstrip("/"):         # a coordinate variable: its own scale
                    if not ds.is_scale:
                        ds.make_scale(dim)
                    continue
                if dim in f:
                    scale = _check_scale(f, dim, n, name, axis, path, what)
                else:
                    scale = f.create_dataset(dim, (n,), "f4")
                    scale.make_scale(f"{_DIMENSION_ONLY}{n:>10d}")
                if not scale.is_scale:
                    scale.make_scale(dim)
                ds.dims[axis].attach_scale(scale)
