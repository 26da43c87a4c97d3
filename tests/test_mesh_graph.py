"""The dual graph of a distributed tetrahedral (and triangle) mesh, its
edge cut and METIS, against a serial reference built here from a dict of
faces over the whole mesh."""
import itertools

import numpy as np
import pytest

from xdap.mesh import (dual_graph, edge_cut, hilbert_partition, metis_partition,
                       partition_interface)


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
        cut, interface = partition_interface(tets[mine], mine, part, comm)
        assert cut == want, name
        ref_interface = [any(everyone[o] != everyone[c] for o in ref[c]) for c in mine]
        assert interface.tolist() == ref_interface, name
        assert comm.allreduce(int(interface.sum())) > 0
        # from the dual graph's arrays: the same answers, no second facet pass
        cut, interface = partition_interface(None, mine, part, comm, graph=(offsets, nbrs))
        assert cut == want and interface.tolist() == ref_interface, name
        assert edge_cut(None, part, comm, graph=(offsets, nbrs), cell_ids=mine) == want, name


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_node_ids_too_wide_for_one_key_word(comm):
    # node ids near 2**40: three of them need two 64-bit words a facet key,
    # and two facets equal in their low bits must still differ
    pts, tets = cube_tets(3)
    ref = reference_graph(tets)
    wide = tets + (1 << 40)
    wide[::2] += 1 << 41                     # half the mesh moved up: no facet joins the halves
    halves = reference_graph(wide)
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(wide[mine], mine, comm)
    for i, c in enumerate(mine):
        assert nbrs[offsets[i]:offsets[i + 1]].tolist() == halves[c], c
    assert any(halves[c] != ref[c] for c in range(len(tets)))
    offsets, nbrs = dual_graph(tets[mine] + (1 << 40), mine, comm)
    assert all(nbrs[offsets[i]:offsets[i + 1]].tolist() == ref[c] for i, c in enumerate(mine))


@pytest.mark.mpi(ranks=(2, 3))
def test_graph_arguments_differing_on_one_rank(comm):
    _, tets = cube_tets(2)
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    part = mine % 2
    bad = (offsets[:-1], nbrs) if comm.rank == 1 else (offsets, nbrs)
    with pytest.raises(ValueError, match=r"graph offsets must rise.*\(rank 1\)"):
        partition_interface(None, mine, part, comm, graph=bad)
    bad = (offsets, nbrs + 1000) if comm.rank == 0 else (offsets, nbrs)
    with pytest.raises(ValueError, match=r"neighbour \d+ on rank 0 is no cell"):
        edge_cut(None, part, comm, graph=bad, cell_ids=mine)
    with pytest.raises(ValueError, match="parts needs one part per cell"):
        partition_interface(None, mine, part[:-1] if comm.rank == 1 else part, comm,
                            graph=(offsets, nbrs))
    with pytest.raises(ValueError, match="parts needs one part per cell"):
        partition_interface(None, mine, part.astype(float) if comm.rank == 0 else part, comm,
                            graph=(offsets, nbrs))
    with pytest.raises(TypeError, match="graph must be"):
        edge_cut(None, part, comm, graph=[offsets, nbrs] if comm.rank else (offsets, nbrs),
                 cell_ids=mine)
    assert edge_cut(None, part, comm, graph=(offsets, nbrs), cell_ids=mine) == \
        edge_cut(tets[mine], part, comm)                                     # still in step


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_interface_from_a_graph_whose_last_cells_have_no_neighbours(comm):
    # a lone tetrahedron, apart from the mesh, last on every rank: its row of
    # the graph is empty (an empty row at the end once broke the interface)
    _, tets = cube_tets(2)
    lone = np.array([[1000, 1001, 1002, 1003]]) + 4 * comm.rank
    mine = my_cells(comm, len(tets), "scattered")
    ids = np.append(mine, len(tets) + comm.rank)
    cells = np.concatenate([tets[mine], lone])
    offsets, nbrs = dual_graph(cells, ids, comm)
    assert offsets[-1] == offsets[-2]
    part = ids % 2
    cut, interface = partition_interface(None, ids, part, comm, graph=(offsets, nbrs))
    want_cut, want_interface = partition_interface(cells, ids, part, comm)
    assert cut == want_cut and interface.tolist() == want_interface.tolist()
    assert not interface[-1]


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


def mixed_mesh_3d(n):
    """Hexahedra and wedges (meshio node order): an n**3 grid of hexahedra
    whose columns with i + j even are each cut into two wedges along a
    vertical diagonal plane -- conforming, quadrilateral and triangle faces."""
    node = lambda i, j, k: (i * (n + 1) + j) * (n + 1) + k        # noqa: E731
    cells = []
    for i, j, k in itertools.product(range(n), repeat=3):
        h = [node(i, j, k), node(i + 1, j, k), node(i + 1, j + 1, k), node(i, j + 1, k),
             node(i, j, k + 1), node(i + 1, j, k + 1), node(i + 1, j + 1, k + 1),
             node(i, j + 1, k + 1)]
        if (i + j) % 2:
            cells.append(h)
        else:
            cells.append([h[0], h[1], h[2], h[4], h[5], h[6]])
            cells.append([h[0], h[2], h[3], h[4], h[6], h[7]])
    return cells


def mixed_mesh_2d(n):
    """Quadrilaterals and triangles: an n**2 grid, every other cell cut in two."""
    node = lambda i, j: i * (n + 1) + j                             # noqa: E731
    cells = []
    for i, j in itertools.product(range(n), repeat=2):
        q = [node(i, j), node(i + 1, j), node(i + 1, j + 1), node(i, j + 1)]
        cells += [q] if (i + j) % 2 else [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
    return cells


def sharing_reference(cells, dim):
    """Serial and independent of any facet table: two cells of these
    conforming meshes share a facet exactly when they share >= dim nodes."""
    sets = [set(c) for c in cells]
    by_node = {}
    for c, nodes in enumerate(cells):
        for v in nodes:
            by_node.setdefault(v, set()).add(c)
    ref = {}
    for c, nodes in enumerate(cells):
        near = set().union(*(by_node[v] for v in nodes)) - {c}
        ref[c] = sorted(o for o in near if len(sets[c] & sets[o]) >= dim)
    return ref


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("dim", [2, 3])
def test_mixed_element_kinds_ragged(comm, dim):
    import xdap
    cells = mixed_mesh_3d(3) if dim == 3 else mixed_mesh_2d(6)
    ref = sharing_reference(cells, dim)
    assert len({len(c) for c in cells}) == 2
    mine = my_cells(comm, len(cells), "scattered")
    offsets = np.concatenate([[0], np.cumsum([len(cells[c]) for c in mine])])
    flat = np.array([v for c in mine for v in cells[c]], np.int64)
    got_off, nbrs = dual_graph((offsets, flat), mine, comm, dim=dim)
    for i, c in enumerate(mine):
        assert nbrs[got_off[i]:got_off[i + 1]].tolist() == ref[c], c
    # as DistArrays: ragged cells in, a var * var * int64 neighbour array out
    a = xdap.from_local([cells[c] for c in mine], type="var * var * int64", dist="u",
                        indices=mine, size=len(cells), comm=comm)
    graph = dual_graph(a, dim=dim)
    assert str(graph.type) == "var * var * int64"
    assert graph.to_global().value == [ref[c] for c in range(len(cells))]
    part = np.asarray(mine) % 2
    want = sum(part_of != part_nb for part_of, part_nb in
               ((c % 2, o % 2) for c, v in ref.items() for o in v if c < o))
    assert edge_cut(a, part, dim=dim) == want
    assert edge_cut((offsets, flat), part, comm, dim=dim) == want


@pytest.mark.mpi(ranks=(1, 3))
def test_tetrahedra_as_a_distarray(comm):
    import xdap
    _, tets = cube_tets(2)
    ref = reference_graph(tets)
    mine = my_cells(comm, len(tets), "scattered")
    a = xdap.from_local(tets[mine], dist="u", indices=mine, size=len(tets), comm=comm)
    graph = dual_graph(a)                            # simplices: no dim needed
    assert graph.to_global().value == [ref[c] for c in range(len(tets))]


@pytest.mark.mpi(ranks=(2, 3))
def test_bad_mixed_cells_raise_on_every_rank(comm):
    cells = mixed_mesh_3d(2)
    mine = my_cells(comm, len(cells), "blocks")
    offsets = np.concatenate([[0], np.cumsum([len(cells[c]) for c in mine])])
    flat = np.array([v for c in mine for v in cells[c]], np.int64)
    with pytest.raises(ValueError, match="ragged cells need dim="):
        dual_graph((offsets, flat), mine, comm)
    bad = (offsets, flat)
    if comm.rank == 1:      # its last cell gains a node: 7 or 9 is no 3-D kind
        bad = (np.append(offsets[:-1], offsets[-1] + 1), np.append(flat, 0))
    with pytest.raises(ValueError, match=r"has (7|9) nodes: no 3-D cell kind.*\(rank 1\)"):
        dual_graph(bad, mine, comm, dim=3)
    with pytest.raises(ValueError, match="offsets must rise"):
        dual_graph((offsets + (comm.rank == 0), flat), mine, comm, dim=3)
    with pytest.raises(ValueError, match="dim must be"):
        dual_graph((offsets, flat), mine, comm, dim=4)


@pytest.mark.mpi(ranks=(2, 3))
def test_a_rank_without_cells(comm):
    # rank 0 holds nothing: every function still answers, on every rank
    _, tets = cube_tets(2)
    ref = reference_graph(tets)
    mine = np.array([], np.int64) if comm.rank == 0 else \
        np.array_split(np.arange(len(tets)), comm.size - 1)[comm.rank - 1]
    offsets, nbrs = dual_graph(tets[mine].reshape(-1, 4), mine, comm)
    assert len(offsets) == len(mine) + 1
    for i, c in enumerate(mine):
        assert nbrs[offsets[i]:offsets[i + 1]].tolist() == ref[c]
    part = mine % 2
    want = sum((a % 2) != (b % 2) for a, v in ref.items() for b in v if a < b)
    assert edge_cut(tets[mine].reshape(-1, 4), part, comm) == want
    cut, interface = partition_interface(tets[mine].reshape(-1, 4), mine, part, comm)
    assert cut == want and interface.shape == mine.shape


@pytest.mark.mpi(ranks=(2, 3))
def test_numpy_cells_on_one_rank_distarray_on_the_others(comm):
    import xdap
    _, tets = cube_tets(2)
    mine = np.array_split(np.arange(len(tets)), comm.size)[comm.rank]
    a = xdap.from_local(tets[mine], comm=comm)
    with pytest.raises(ValueError, match="cells are a DistArray must be the same on every rank"):
        dual_graph(tets[mine], mine, comm) if comm.rank == 0 else dual_graph(a)
    with pytest.raises(ValueError, match="cells are a DistArray must be the same on every rank"):
        edge_cut(tets[mine], mine % 2, comm) if comm.rank == 1 else edge_cut(a, mine % 2)
    assert edge_cut(a, mine % 2) == edge_cut(tets[mine], mine % 2, comm)      # still in step


@pytest.mark.mpi(ranks=(1, 2))
@pytest.mark.parametrize("wide", [False, True])
def test_enough_facets_to_match_in_buckets(comm, wide):
    # over 2**15 facets a rank: the matching sorts hash buckets one by one
    # (graph._matching_order); with node ids near 2**40, keys of two words
    _, tets = cube_tets(16)
    ref = reference_graph(tets)
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(tets[mine] + ((1 << 40) if wide else 0), mine, comm)
    assert 4 * len(tets) // comm.size >= 2 * (1 << 14)
    for i, c in enumerate(mine):
        assert nbrs[offsets[i]:offsets[i + 1]].tolist() == ref[c], c


@pytest.mark.mpi(ranks=(2, 3))
def test_a_graph_changed_on_one_rank_then_back(comm):
    # each call's fetch plan is the graph's of that call on every rank: a
    # rank whose graph changed and changed back never meets another's old
    # plan (a plan kept per rank under a digest of its own graph did, and hung)
    _, tets = cube_tets(3)
    ref = reference_graph(tets)
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(tets[mine], mine, comm)
    part = mine % 2
    want = sum((a % 2) != (b % 2) for a, v in ref.items() for b in v if a < b)
    assert partition_interface(None, mine, part, comm, graph=(offsets, nbrs))[0] == want
    other = (np.zeros(len(mine) + 1, np.int64), np.zeros(0, np.int64))
    changed = other if comm.rank == 1 else (offsets, nbrs)
    cut, interface = partition_interface(None, mine, part, comm, graph=changed)
    if comm.rank == 1:
        assert not interface.any()                      # its cells have no neighbours now
    shifted = (mine + 1) % 2                            # other parts, the first graph again
    cut, interface = partition_interface(None, mine, shifted, comm, graph=(offsets, nbrs))
    assert cut == want
    ref_interface = [any((o + 1) % 2 != (c + 1) % 2 for o in ref[c]) for c in mine]
    assert interface.tolist() == ref_interface


@pytest.mark.mpi(ranks=(1, 2, 3))
@pytest.mark.parametrize("shift", [-40, 1 << 58])
def test_cell_ids_an_id_and_slot_word_cannot_hold(comm, shift):
    # an id and its facet slot travel as one word when both fit 63 bits;
    # negative ids or ids near 2**58 take two words, with the same graph
    _, tets = cube_tets(3)
    ref = reference_graph(tets)
    mine = my_cells(comm, len(tets), "scattered")
    offsets, nbrs = dual_graph(tets[mine], mine + shift, comm)
    for i, c in enumerate(mine):
        assert (nbrs[offsets[i]:offsets[i + 1]] - shift).tolist() == ref[c], c
