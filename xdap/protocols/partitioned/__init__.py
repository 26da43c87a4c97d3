"""The ``__partitioned__`` protocol (draft spec, seed 004): export and import.

Export (``a.__partitioned__``) describes a DistArray as a grid of
rectangular tiles:

- ``shape``: the global shape; ragged arrays (``var * var * T``) are a 1-d
  array of rows: ``(nrows,)``.
- ``partition_tiling``: tiles per dimension. A block dimension has one tile
  per grid rank (irregular and empty blocks included; padded blocks: the
  OWNED range, communication padding is left out). A cyclic / block-cyclic
  dimension of size n, block size b over g grid ranks has
  ``g * ceil(n / (g * b))`` tiles (at least g) of b elements, the last
  partial ones and trailing ones empty, tile i held by grid rank ``i % g``:
  every rank holds the same number of tiles, all listed in ``locals``.
  Unstructured dimensions cannot be tiled: ValueError (redistribute first).
- ``partitions``: ``{position: {"start", "shape", "data", "location",
  "rank"}}`` for EVERY grid position. ``data`` is None for other ranks'
  tiles; for this rank's tiles it is a zero-copy view of ``a.local``:

  ==================  ======================================================
  local type          ``data``
  ==================  ======================================================
  ``N * M * T``       a NumPy view (strided where the tile is not the whole
                      local block)
  ``N * M * ?T``      a NumPy masked array: ``.data`` is a view of the
                      values, ``.mask`` is computed from the validity bitmap
                      (True = missing; writing to it does not reach xdap)
  ``var * var * T``   a pyarrow ``ListArray`` slice over the rows (values,
                      offsets and validity bitmap shared, see
                      ``xdap.protocols.arrow``)
  ==================  ======================================================

  ``location`` is ``[(ip, pid)]`` of the process holding the tile, per the
  spec: ``ip`` is ``socket.gethostbyname(socket.gethostname())`` (the host
  name itself if that fails), ``pid`` is ``os.getpid()``. ``rank`` (an xdap
  extension, ignored by other consumers) is the holder's rank in ``a.comm``.
- ``locals``: this rank's tile positions (C order).
- ``get``: a picklable ``PartitionGetter``; local data are their own handles,
  so it returns a handle as is and a list of handles as a list.
- ``type`` (extension): the global ndtypes type string.

The first export over a communicator gathers every process's ``(ip, pid)``
(one allgather, cached on the communicator as an MPI attribute): make the
first ``__partitioned__`` access on all ranks. Later exports make no
communication. The whole dict pickles with the standard ``pickle`` (the
data then travel by value).

Import: ``import_partitioned(obj_or_dict, comm=None)`` (``xdap.from_partitioned``),
see its docstring.

The package, one job a module: ``export`` (the dict of a DistArray),
``geometry`` (an incoming dict's tile grid, validated), ``tiles`` (which
tiles a rank supplies, and their data as Parts), ``layout`` (the
Distribution the tiles form, and the local buffer), ``importer`` (the
collective entry point).

>>> import numpy as np, pickle
>>> from mpi4py import MPI
>>> from xdap.create import from_global
>>> dist, local = from_global(np.arange(12.0).reshape(4, 3), dist=("c",), block_size=(2,),
...                           comm=MPI.COMM_SELF)
>>> p = export(dist, local)
>>> p["shape"], p["partition_tiling"], p["locals"]
((4, 3), (2, 1), [(0, 0), (1, 0)])
>>> p["partitions"][(1, 0)]["start"], p["get"](p["partitions"][(1, 0)]["data"]).tolist()
((2, 0), [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]])
>>> dist2, local2 = import_partitioned(pickle.loads(pickle.dumps(p)), comm=MPI.COMM_SELF)
>>> dist2 == dist, local2.values.tolist() == local.values.tolist()
(True, True)
"""
from .export import PartitionGetter, export, process_locations
from .geometry import geometry
from .importer import import_partitioned
from .layout import assemble, plan_layout
from .tiles import as_parts, claimed_tiles, fetch_tiles

__all__ = ["export", "import_partitioned", "PartitionGetter", "process_locations", "geometry",
           "plan_layout", "assemble", "as_parts", "claimed_tiles", "fetch_tiles"]
