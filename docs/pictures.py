"""Draw the pictures docs/pictures.md shows (tests/test_pictures.py runs this).

    .venv/bin/mpiexec -n 4 .venv/bin/python docs/pictures.py [OUT_DIR]   # default: docs/img
"""
import os
import sys
import tempfile

import numpy as np
from mpi4py import MPI

import xdap

comm = MPI.COMM_WORLD
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "img")


def save(ax, name):
    if ax is not None:                       # rank 0 draws; the others get None
        ax.figure.savefig(os.path.join(out, name), dpi=90)


# 2-D: block rows x block-cyclic columns on a 2 x 2 grid
a = xdap.from_global(np.zeros((12, 16)), dist=("b", "c"), block_size=(None, 2), comm=comm)
save(a.plot(), "block_cyclic.png")

# padded blocks: the halos each rank holds, hatched in its color
h = xdap.from_global(np.zeros((10, 10)), dist=("b", "b"), padding=((1, 1), (1, 1)), comm=comm)
save(h.plot(), "padded.png")

# ragged rows dealt out cyclically: one bar per row, its length
rows = [list(range((7 * i) % 9)) for i in range(24)]
r = xdap.from_global(rows, type="var * var * int64", dist=("c",), comm=comm)
save(r.plot(), "ragged.png")

# unstructured points with one ghost copy per rank (hollow)
n = 160
g = np.arange(n)
xy = np.c_[np.cos(g * 0.12) * (1 + g / n), np.sin(g * 0.12) * (1 + g / n)]
owned = np.array_split(g, comm.size)
lists = [np.append(o, (o[-1] + 1) % n) for o in owned]
u = xdap.from_global(np.zeros(n), dist=("u",), indices=[lists], comm=comm)
save(u.plot(points=xy[u.global_indices(0)]), "points.png")

# a saved store, drawn by one process from its attributes (as `xdap show` does)
tmp = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
xdap.from_global(np.zeros((8, 30)), dist=("n", "c"), block_size=(None, 3),
                 comm=comm).save(os.path.join(tmp, "s"))
if comm.rank == 0:
    from xdap.pictures import plot_store
    save(plot_store(os.path.join(tmp, "s")), "store.png")
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)

# a tetrahedral mesh partitioned along a Hilbert curve: the cells the plane
# z = 0.3 cuts, colored by owner, the partition's interface cells outlined
from xdap.mesh import (cell_centroids, generate_box, ghost_layer, hilbert_partition,  # noqa: E402
                       migrate_mesh, partition_interface, read_block, read_points)
from xdap.mesh.geometry import slice_polygons  # noqa: E402
tmp = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
block = read_block(generate_box(os.path.join(tmp, "box.xdmf"), 20000, comm), comm)
dest = hilbert_partition(cell_centroids(block, comm), comm)
_, interface = partition_interface(block.cells, block.ids, dest, comm)
mesh = migrate_mesh(xdap.from_local(block.cells, comm=comm), dest,
                    {"interface": xdap.from_local(interface, comm=comm)})
layer = ghost_layer(xdap.zeros(block.nnodes, comm=comm), mesh.cells)
xyz = read_points(block, layer.needed, comm)
ax = mesh.cells.plot(polygons=slice_polygons(xyz[layer.local_cells], axis=2, at=0.3),
                     outline=mesh.fields["interface"].local_numpy(),
                     title=f"{block.ncells:,} tets on {comm.size} ranks, the slice z = 0.3;\n"
                           "outlined: interface cells (ghost layers copy them)")
save(ax, "mesh-partition.png")
comm.Barrier()
if comm.rank == 0:
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
