"""The dual graph of a distributed tetrahedral (and triangle) mesh, its
edge cut and METIS, against a serial reference built here from a dict of
faces over the whole mesh."""
import itertools

import numpy as np
import pytest

from xdap.mesh import dual_graph, edge_cut, hilbert_partition, metis_partition


def cube_tets(n):
    """A structured tetrahedral mesh of the unit cube: n**3 hexahedra, six
    tetrahedra each (Kuhn's split, conforming). Returns (points, tets)."""
    g = np.arange(n + 1)
    pts = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) / n
    node = lambda i, j, k: (i * (n + 1) + j) * (n + 1) + k      # noqa: E731
    tets = []
    for i, j, k in itertools.product(range(n), repeat=3):
        corners = {(a, b, c): node(i + a, j + b, k + c) for a, b, c in itertools.product((0, 1), repeat=3)}
        for perm in itertools.permutations(range(3)):           # one tet per path 000 -> 111
            path, at = [corners[(0, 0, 0)]], [0, 0, 0]
            for axis in perm:
                at[axis] = 1
                path.append(corners[tuple(at)])
            tets.append(path)
    return pts, np.array(tets, np.int64)


def reference_graph(cells):
    """Serial: {cell: sorted neighbours} from a dict of facets."""
    seen = {}
    k = cells.shape[1]
    for c, nodes in enumerate(cells):
        for f in itertools.combinations(sorted(nodes.tolist()), k - 1):
            seen.setdefault(f, []).append(c)
    nbrs = {c: [] for c in range(len(cells))}
    for owners in seen.values():
        assert len(owners) <= 2
        if len(owners) == 2:
            a, b = owners
            nbrs[a].append(b)
            nbrs[b].append(a)
    return {c: sorted(v) for c, v in nbrs.items()}


def my_cells(comm, N, how):
    if how == "blocks":
        return np.array_split(np.arange(N), comm.size)[comm.rank]
    perm = np.random.default_rng(3).permutation(N)               # same on every rank
    return np.sort(perm[comm.rank::comm.size])


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("how", ["blocks", "scattered"])
def test_dual_graph_is_the_serial_one(comm, how):
    pts, tets = cube_tets(3)
    ref = reference_graph(tets)
    mine = my_cells(comm, len(tets), how)
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    for i, c in enumerate(mine):
        assert nbrs[offsets[i]:offsets[i + 1]].tolist() == ref[c], c
    # 2-D: triangles of a strip
    tris = np.array([[i, i + 1, i + 2] for i in range(10)])
    mine = my_cells(comm, len(tris), how)
    offsets, nbrs = dual_graph(tris[mine], mine, comm)
    ref = reference_graph(tris)
    assert all(nbrs[offsets[i]:offsets[i + 1]].tolist() == ref[c] for i, c in enumerate(mine))


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_edge_cut_and_both_partitioners(comm):
    pts, tets = cube_tets(4)
    ref = reference_graph(tets)
    edges = [(a, b) for a, v in ref.items() for b in v if a < b]
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    for name, part in [
            ("metis", metis_partition(offsets, nbrs, mine, comm)),
            ("hilbert", hilbert_partition(pts[tets[mine]].mean(axis=1), comm))]:
        assert part.shape == mine.shape and ((part >= 0) & (part < comm.size)).all(), name
        everyone = np.zeros(len(tets), np.int64)
        everyone[np.concatenate(comm.allgather(mine))] = np.concatenate(comm.allgather(part))
        counts = np.bincount(everyone, minlength=comm.size)
        assert counts.min() > 0 and counts.max() <= 1.1 * len(tets) / comm.size + 1, (name, counts)
        want = sum(everyone[a] != everyone[b] for a, b in edges)
        assert edge_cut(tets[mine], part, comm) == want, name


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_meshes_raise_on_every_rank(comm):
    pts, tets = cube_tets(2)
    mine = my_cells(comm, len(tets), "blocks")
    cells = tets[mine]
    if comm.rank == 0:
        cells = np.concatenate([cells, cells[:1]])          # a cell listed twice
        ids = np.append(mine, len(tets))
    else:
        ids = mine
    with pytest.raises(ValueError, match="shared by more than two cells"):
        dual_graph(cells, ids, comm)
    with pytest.raises(ValueError, match="nodes per cell"):
        dual_graph(tets[mine][:, :3 if comm.rank else 4], mine, comm)
    with pytest.raises(ValueError, match="one id per cell"):
        dual_graph(tets[mine], mine[:-1] if comm.rank == 1 else mine, comm)
