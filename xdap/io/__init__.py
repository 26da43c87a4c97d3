"""Saving and loading DistArrays: ``a.save(path)`` and ``xdap.load(path)``.

A save is a directory: ``manifest.json`` (global type, distribution, the
list of pieces with their sizes and CRC-32s) plus one piece per saving rank
-- ``.npy`` files for fixed data (and their validity bitmaps), Arrow IPC
files for ragged data. Writing is crash-safe (a new generation of files,
then an atomic switch of the manifest), reading verifies every file it
uses. The format is specified in docs/exchange.md ("Saving and loading").

Modules: ``files`` (durable checksummed files), ``npy`` (headers),
``arrow_file`` (ragged pieces), ``manifest`` (the JSON), ``plan`` (which
indices go where; pure), ``writer`` (``save``) and ``reader`` (``load``):
the collective executors.
"""
from .reader import load
from .writer import save

__all__ = ["save", "load"]
