"""Unstructured meshes in pieces (the mesh pipeline, issue 16; growing).

``files`` -- a mesh file read in pieces (XDMF + HDF5 slices per rank; other
meshio formats read on rank 0 and scattered), and a gmsh test mesh;
``cells`` -- cells as node-id lists (one kind, or mixed: ragged) and
their facets; ``graph`` -- the dual graph of a distributed mesh (cells sharing a
facet), its edge cut, and METIS on it; ``hilbert`` -- Hilbert-curve keys
of points (pure NumPy); ``partition`` --
a distributed geometric partitioner: Hilbert keys of cell centroids cut
into equal pieces by a distributed sample sort (the idea of Zoltan's HSFC
and p4est), which never gathers the points or the mesh; ``distributed`` --
the cells and all their fields moved by one plan (``migrate_mesh``) and the
ghost layer of the nodes they use (``ghost_layer``).
"""
from .distributed import GhostLayer, MigratedMesh, ghost_layer, migrate_mesh
from .files import MeshBlock, cell_centroids, generate_box, read_block, read_points
from .cells import FACETS, local_cells
from .graph import dual_graph, edge_cut, metis_partition, partition_interface
from .hilbert import hilbert_keys
from .partition import hilbert_partition

__all__ = ["hilbert_keys", "hilbert_partition", "dual_graph", "edge_cut", "partition_interface",
           "metis_partition", "local_cells", "FACETS", "generate_box", "read_block",
           "read_points", "cell_centroids", "MeshBlock", "migrate_mesh", "MigratedMesh",
           "ghost_layer", "GhostLayer"]
