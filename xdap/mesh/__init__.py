"""Unstructured meshes in pieces: no rank ever holds the whole mesh
(docs/mesh.md; ``xdap demo mesh`` runs the pipeline end to end).

- ``files``: a mesh file read in pieces (XDMF + HDF5 slices per rank; other
  meshio formats read on rank 0 and scattered), node coordinates, and a
  gmsh test mesh;
- ``cells``: cells as node-id lists (one kind, or mixed kinds, ragged) and
  their facets;
- ``graph``: the dual graph (cells sharing a facet), and METIS on it;
- ``cuts``: a partition's edge cut and interface, from the dual graph's
  arrays (or the cells' facets matched again);
- ``hilbert`` and ``partition``: Hilbert-curve keys, and two distributed
  geometric partitioners that never gather: keys of cell centroids cut
  into equal runs by a distributed sample sort (as Zoltan's HSFC and p4est
  do), and recursive coordinate bisection (Zoltan's RCB);
- ``refine``: the partition refined across its boundaries in parallel
  (label propagation under a balance bound, as ParMETIS and KaHIP refine),
  never gathering;
- ``distributed``: the cells and all their fields moved by one plan
  (``migrate_mesh``), and the ghost layer of the nodes they use
  (``ghost_layer``);
- ``nodes``: nodes follow their cells -- a node field owned by ranks whose
  cells use each node (``node_field``), so the ghost layer is the halo;
- ``geometry``: tetrahedron volumes and plane slices (pure NumPy);
- ``xdmf``: the distributed mesh and its fields written as XDMF + HDF5,
  each rank its slab (``write_xdmf``), for ParaView, VisIt and meshio.
"""
from .distributed import GhostLayer, MigratedMesh, ghost_layer, migrate_mesh
from .files import MeshBlock, cell_centroids, generate_box, read_block, read_points
from .cells import FACETS, local_cells
from .cuts import edge_cut, partition_interface
from .graph import dual_graph, metis_partition
from .hilbert import hilbert_keys
from .nodes import node_field, node_owners, node_points
from .partition import hilbert_partition, rcb_partition
from .refine import refine_partition
from .xdmf import write_xdmf

__all__ = ["hilbert_keys", "hilbert_partition", "rcb_partition", "dual_graph", "edge_cut", "partition_interface",
           "metis_partition", "local_cells", "FACETS", "generate_box", "read_block",
           "read_points", "cell_centroids", "MeshBlock", "migrate_mesh", "MigratedMesh",
           "ghost_layer", "GhostLayer", "node_field", "node_owners", "node_points",
           "refine_partition", "write_xdmf"]
