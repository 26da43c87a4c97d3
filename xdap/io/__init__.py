"""Saving and loading DistArrays: ``a.save(path)`` and ``xdap.load(path)``.

A store is a Zarr v3 group (docs/format.md): fixed data is one Zarr array
of the global shape that zarr, xarray and dask open without xdap; ragged
and optional data are values, offsets and validity arrays; the group's
``xdap`` attribute holds the ndtypes type and the distribution. Every rank
writes whole chunks of its own, each with a CRC-32C; a save is crash-safe
(a staging directory swapped in atomically); a load reads only the chunks
a rank needs, on any number of ranks, into any distribution. Directories of
the previous format (``manifest.json``) still load.

Modules: ``store_format`` (the convention; pure), ``chunks`` (chunk grids
the ranks can write alone; pure), ``segments`` (flat arrays re-cut at chunk
boundaries), ``store_writer`` (``save``), ``store_reader`` (``load``),
``targets`` (the distribution a load produces); the previous format's
reader: ``legacy_reader`` with ``manifest``, ``files``, ``npy``,
``arrow_file``, ``plan`` and ``staged``.
"""
from .store_reader import load
from .store_writer import save

__all__ = ["save", "load"]
