"""Unstructured meshes in pieces (the mesh pipeline, issue 16; growing).

``hilbert`` -- Hilbert-curve keys of points (pure NumPy); ``partition`` --
a distributed geometric partitioner: Hilbert keys of cell centroids cut
into equal pieces by a distributed sample sort (the idea of Zoltan's HSFC
and p4est), which never gathers the points or the mesh.
"""
from .hilbert import hilbert_keys
from .partition import hilbert_partition

__all__ = ["hilbert_keys", "hilbert_partition"]
