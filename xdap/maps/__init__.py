"""Dimension maps: how ONE array dimension is laid out over a 1-d process grid.

A map is a *global* description: it knows the part held by every grid rank
``p = 0 .. grid_size-1`` along its dimension.  Pure numpy, no MPI.

The kinds, after the Distributed Array Protocol (DAP) 0.10.0, section 1.6,
one module each:

* ``block`` -- :class:`BlockMap` (``'b'``; ``'n'`` is a block over one
  grid rank): contiguous, possibly irregular blocks with optional boundary
  / communication padding;
* ``cyclic`` -- :class:`CyclicMap` (``'c'``): cyclic and block-cyclic;
* ``unstructured`` -- :class:`UnstructuredMap` (``'u'``): an explicit list
  of global indices per grid rank, every process knowing them all;
* ``distributed`` -- :class:`DistributedUnstructuredMap`: the same kind,
  each process knowing its own part only (owner lookups through
  ``xdap.directory``).

``base`` holds the interface they all answer.  Each map owns its spec
letter and words (``spec``, ``describe()``: pictures, reprs), its ``dist=``
options (``from_spec``), its wire forms -- ``to_dim_dict(p)`` /
``from_dim_dicts(...)`` (DAP; the protocol's generic rules live in
``xdap.protocols.dap_dims``), ``to_json()`` / ``Map.from_json(...)`` and
``stored_indices`` (stores), ``tiles()`` (``__partitioned__``) -- its halo
kind (``ghosts_by_index``), and ``fingerprint()`` (plan keys), so no other
module asks what kind a map is.  Maps are immutable and hashable.

Vocabulary used throughout:

* *local position*: index into a rank's buffer along this dimension;
* *owned*: DAP's ``num_owned_indices`` -- communication padding (ghost copies
  of a neighbour's cells) is not owned, boundary padding is.  The owned local
  positions of every map form a contiguous slice of the buffer, see
  :meth:`Map.owned_local_slice`;
* *canonical*: the one copy of a global index that counts (its owner's):
  :meth:`Map.canonical_positions`.

>>> m = BlockMap(18, 2, padding=(1, 1))          # DAP 0.10.0 example 2.2
>>> m.to_dim_dict(1)["start"], m.to_dim_dict(1)["stop"]
(8, 18)
>>> m.global_indices(1)[:3]
array([ 8,  9, 10])
>>> m.owners([8, 17])
(array([0, 1]), array([8, 9]))
>>> Map.from_json(m.to_json()) == m, len(m.fingerprint())
(True, 16)
"""
from .base import MAP_KINDS, Map, NotLocal, Tiles, as_slice, dap_minor, is_int
from .block import BlockMap
from .cyclic import CyclicMap
from .unstructured import UnstructuredMap, index_digest, unstructured_fingerprint
from .distributed import DistributedUnstructuredMap

__all__ = ["Map", "BlockMap", "CyclicMap", "UnstructuredMap", "DistributedUnstructuredMap",
           "Tiles", "MAP_KINDS", "NotLocal", "is_int", "dap_minor", "as_slice", "index_digest",
           "unstructured_fingerprint"]
