"""The mesh pipeline's partitioning stage on 4 ranks (issue 16; growing).

    .venv/bin/python benchmarks/mesh.py [hexes per side]   # launches 4 ranks itself

A tetrahedral mesh of the unit cube (n**3 hexahedra, six tetrahedra each;
default n = 40: 384,000 tets), every rank generating only its block of
cells -- no rank holds the mesh. Timed, slowest rank, one run each:

    dual graph   xdap.mesh.dual_graph: facets hashed to owner ranks, two Alltoallv
    METIS        xdap.mesh.metis_partition: the graph gathered to rank 0, pymetis
    Hilbert      xdap.mesh.hilbert_partition of the cell centroids (never gathers)
    edge cut     xdap.mesh.edge_cut of each partition

Target: the geometric partitioner's edge cut within 2x of METIS's. The
block of cells each rank starts with (index order) is reported for scale.
Peak RSS per rank (INFO).
"""
from __future__ import annotations

import itertools
import os
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import COMM, P, relaunch, run_main, say, verdict  # noqa: E402

from xdap.mesh import dual_graph, edge_cut, hilbert_partition, metis_partition  # noqa: E402


def cube_tets_block(n: int, lo: int, hi: int):
    """Tets of hexahedra lo..hi-1 (of n**3, x-major): (ids, node ids, centroids)."""
    h = np.arange(lo, hi)
    i, j, k = h // (n * n), (h // n) % n, h % n
    node = lambda a, b, c: ((i + a) * (n + 1) + (j + b)) * (n + 1) + (k + c)   # noqa: E731
    tets = []
    for perm in itertools.permutations(range(3)):        # Kuhn's six tets: paths 000 -> 111
        at = [0, 0, 0]
        path = [node(0, 0, 0)]
        for axis in perm:
            at[axis] = 1
            path.append(node(*at))
        tets.append(np.stack(path, axis=1))
    cells = np.stack(tets, axis=1).reshape(-1, 4)
    ids = (h[:, None] * 6 + np.arange(6)).reshape(-1)
    g = n + 1
    xyz = np.stack([cells // (g * g), (cells // g) % g, cells % g], axis=-1) / n
    return ids, cells, xyz.mean(axis=1)


def timed(fn):
    COMM.Barrier()
    t0 = time.perf_counter()
    out = fn()
    COMM.Barrier()
    return COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX), out


def main():
    if relaunch(__file__, 4, timeout=1800):
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    lo, hi = n ** 3 * COMM.rank // P, n ** 3 * (COMM.rank + 1) // P
    ids, cells, centroids = cube_tets_block(n, lo, hi)
    N = 6 * n ** 3
    say(f"mesh partitioning: {N:,} tetrahedra ({n}^3 hexahedra) on {P} ranks")
    t_graph, (offsets, nbrs) = timed(lambda: dual_graph(cells, ids, COMM))
    t_metis, metis = timed(lambda: metis_partition(offsets, nbrs, ids, COMM))
    t_hilb, hilb = timed(lambda: hilbert_partition(centroids, COMM))
    cuts = {}
    for name, part in (("blocks", np.full(len(ids), COMM.rank)), ("METIS", metis),
                       ("Hilbert", hilb)):
        cuts[name] = edge_cut(cells, part, COMM)
    edges = COMM.allreduce(len(nbrs)) // 2
    sizes = {name: COMM.allreduce(np.bincount(part, minlength=P)) for name, part in
             (("METIS", metis), ("Hilbert", hilb))}
    say(f"  dual graph   {t_graph:8.3f} s   ({edges:,} edges)")
    say(f"  METIS        {t_metis:8.3f} s   edge cut {cuts['METIS']:,}   parts {sizes['METIS'].tolist()}")
    say(f"  Hilbert      {t_hilb:8.3f} s   edge cut {cuts['Hilbert']:,}   parts {sizes['Hilbert'].tolist()}")
    say(f"  (index blocks)           edge cut {cuts['blocks']:,}")
    r = cuts["Hilbert"] / max(cuts["METIS"], 1)
    say(f"RESULT mesh_hilbert_cut_vs_metis={r:.2f} (Hilbert {cuts['Hilbert']:,} / METIS "
        f"{cuts['METIS']:,} cut facets of {edges:,}, {N:,} tets on {P} ranks; target <= 2) "
        f"{verdict(r <= 2)}")
    say(f"RESULT mesh_partition_seconds=dual graph {t_graph:.2f}, METIS {t_metis:.2f}, Hilbert "
        f"{t_hilb:.2f} INFO")
    rss = COMM.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, op=MPI.MAX)
    say(f"RESULT mesh_partition_peak_rss={rss:.0f} MiB per rank (max) INFO")


if __name__ == "__main__":
    run_main(main)
