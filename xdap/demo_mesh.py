"""``xdap demo mesh``: the mesh pipeline on real ranks.

    .venv/bin/mpiexec -n 4 .venv/bin/python -m xdap demo mesh [--tets N] [--mesh FILE]
        [--partitioner refined|rcb|hilbert|metis] [--out DIR]

1. read   -- a tetrahedral mesh (a gmsh box of about N tets, written once with
   meshio as XDMF + HDF5 and cached; or any meshio-readable FILE): each rank
   reads its block of cells and the cell field ``rho`` (``?float64``, NaN in
   the file = missing) -- never the whole mesh;
2. partition -- the dual graph (``var * var * int64``: each cell's
   neighbours across a face), then recursive coordinate bisection of the
   cell centroids refined across its boundaries in parallel (neither
   gathers), or the Hilbert partitioner, or METIS (the graph alone
   gathered to one rank); edge cut (from the graph) and balance printed;
3. migrate -- the cells and every field by one reusable plan
   (``xdap.mesh.migrate_mesh``); the nodes follow them (each owned by a
   rank whose cells use it: ``xdap.mesh.node_field``), so the ghost layer
   (``xdap.mesh.ghost_layer``) is the halo of the cells; the coordinates
   of the nodes a rank uses, each rank reading only its N/P rows;
4. compute -- cell volumes, a kernel (mass = rho * volume, NA stays NA),
   node volumes assembled on the nodes' owners, the ghosts updated, two
   reductions (the cube's volume: 1);
5. solve -- one backward-Euler step of diffusion on the nodes,
   ``(M + dt K) u = M f`` (P1 stiffness, the node volumes as lumped mass,
   f = x), by conjugate gradients written with ``xdap.array_api``; the
   operator applied through the ghost layer (update the ghosts, apply each
   cell's element matrix, assemble the corners on the owners) -- checked
   against SciPy's sparse direct solve of the whole mesh;
6. save and show -- ``result.xdmf`` + ``result.h5`` (``write_xdmf``: the
   migrated mesh, its partition, ``rho``, ``mass``, the node volumes and ``u``,
   each rank writing its slab; ParaView, VisIt and meshio open it), a Zarr
   store of the node volumes that plain zarr opens, and ``partition.png``
   (the cells crossing the plane z = 0.3, colored by owner, the
   partition's interface cells outlined).

Each stage prints its time and the peak memory per rank so far.
Every result is checked against numpy on the whole mesh when it has at most
``--check-limit`` cells (default 200,000), and the demo says so.
"""
from __future__ import annotations

import importlib
import os
import resource
import tempfile
import time
import tracemalloc

import numpy as np
from mpi4py import MPI

import xdap
from xdap.mesh import (cell_centroids, dual_graph, generate_box, ghost_layer, hilbert_partition,
                       local_cells, metis_partition, migrate_mesh, node_field, node_points,
                       partition_interface, rcb_partition, read_block, read_points,
                       refine_partition, write_xdmf)
from xdap.mesh.geometry import slice_polygons, tet_volumes
from xdap.optional import need


def add_arguments(parser) -> None:
    parser.add_argument("--tets", type=int, default=100_000,
                        help="tetrahedra of the generated box mesh (default 100,000)")
    parser.add_argument("--mesh", help="a meshio-readable tetrahedral mesh instead of the box")
    parser.add_argument("--partitioner", choices=["refined", "rcb", "hilbert", "metis"],
                        default="refined", help="refined (default): recursive coordinate "
                        "bisection refined across its boundaries in parallel; rcb: unrefined; "
                        "hilbert: the Hilbert-curve partition, unrefined; metis: "
                        "the graph gathered to rank 0")
    parser.add_argument("--out", help="directory for the results (default: a temporary one)")
    parser.add_argument("--check-limit", type=int, default=200_000,
                        help="compare with serial numpy up to this many cells")
    parser.add_argument("--trace-memory", action="store_true",
                        help="also print each stage's peak of NumPy and Python allocations "
                        "(tracemalloc: the data alone, without the interpreter and libraries)")


def run(args) -> int:
    comm = MPI.COMM_WORLD
    say = (lambda *a: print(*a, flush=True)) if comm.rank == 0 else (lambda *a: None)
    ok = True

    def check(label, good, detail=""):
        nonlocal ok
        good = bool(comm.allreduce(int(bool(good)), MPI.MIN))
        ok &= good
        say(f"  {'OK  ' if good else 'FAIL'} {label}{(': ' + detail) if detail else ''}")

    if args.trace_memory:
        tracemalloc.start()

    def per_rank_mib(mib):
        """Every rank's figure in MiB, as rank 0 prints it."""
        return ", ".join(f"{r:.0f}" for r in comm.allgather(mib))

    def peak_rss():
        return per_rank_mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    def stage(name, t0):
        dt = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        peak = peak_rss()
        data = ""
        if args.trace_memory:
            traced = per_rank_mib(tracemalloc.get_traced_memory()[1] / 2 ** 20)
            tracemalloc.reset_peak()
            data = f"; data peak per rank {traced} MiB"
        say(f"  [{name}: {dt:.2f} s; peak memory so far per rank {peak} MiB{data}]")

    if args.mesh is None and args.tets < 1:      # before anything is made in --out
        raise ValueError(f"demo mesh: --tets must be >= 1, got {args.tets}")
    out = args.out or comm.bcast(tempfile.mkdtemp(prefix="xdap-mesh-") if comm.rank == 0
                                 else None)
    if comm.rank == 0:
        os.makedirs(out, exist_ok=True)
    say(f"xdap {xdap.__version__} mesh pipeline on {comm.size} rank(s), results in {out}")
    if args.mesh is None:
        t0 = time.perf_counter()
        path = generate_box(os.path.join(out, f"box-{args.tets}.xdmf"), args.tets, comm)
        stage("gmsh box mesh (cached; not part of the pipeline)", t0)
    else:
        path = args.mesh

    # 1. read in pieces
    for library in ("h5py", "zarr"):    # a per-process cost, not a stage's: before the clock
        importlib.import_module(library)
    comm.Barrier()
    t_all = t0 = time.perf_counter()
    block = read_block(path, comm)
    N = block.ncells
    if block.cell_dim is not None or block.cells.shape[1] != 4:
        raise ValueError(f"demo mesh: {path!r} holds cells other than tetrahedra; the demo "
                         "computes tetrahedron volumes (xdap.mesh reads mixed kinds: "
                         "read_block gives them as ragged cells)")
    empty = [r for r, n in enumerate(comm.allgather(len(block.ids))) if n == 0]
    if empty:
        raise ValueError(f"demo mesh: {N:,} cells on {comm.size} ranks: rank {empty[0]} read "
                         "none; use fewer ranks or a larger mesh")
    say(f"\n[1] read {os.path.basename(path)}: {N:,} cells, {block.nnodes:,} nodes; "
        f"this rank read {len(block.ids):,} cells")
    centroids = cell_centroids(block, comm)
    stage("read", t0)

    # 2. the dual graph, partitioned
    t0 = time.perf_counter()
    cells = xdap.from_local(block.cells, comm=comm)
    graph = dual_graph(cells)              # var * var * int64: each cell's neighbours
    (offsets, nbrs), ids = local_cells(graph)
    say(f"\n[2] dual graph ({graph.type}): {comm.allreduce(len(nbrs)) // 2:,} shared faces")
    stage("dual graph", t0)
    t0 = time.perf_counter()
    if args.partitioner == "metis":
        dest = metis_partition(offsets, nbrs, ids, comm)
    elif args.partitioner == "hilbert":
        dest = hilbert_partition(centroids, comm)
    else:
        dest = rcb_partition(centroids, comm)
        if args.partitioner == "refined":
            dest = refine_partition(offsets, nbrs, ids, dest, comm)
    counts = comm.allreduce(np.bincount(dest, minlength=comm.size))
    cut, interface = partition_interface(None, ids, dest, comm, graph=(offsets, nbrs))
    del graph, offsets, nbrs
    say(f"    {args.partitioner} partition: edge cut {cut:,} faces, cells per rank "
        f"{counts.tolist()} (imbalance {counts.max() / counts.mean():.3f})")
    if comm.size > 1 and counts.min() == 0:
        raise ValueError(f"demo mesh: the partition leaves a rank without cells ({counts.tolist()});"
                         " use fewer ranks or more cells")
    stage(f"{args.partitioner} partition + edge cut", t0)

    # 3. migrate cells and fields by one plan; the ghost layer of their nodes
    t0 = time.perf_counter()
    rho_in = block.cell_data.get("rho", np.ones(len(block.ids)))
    rho = xdap.from_local(np.ma.array(rho_in, mask=np.isnan(rho_in)), comm=comm)
    on_interface = xdap.from_local(interface, comm=comm)
    mesh = migrate_mesh(cells, dest, {"rho": rho, "interface": on_interface})
    mine = np.asarray(mesh.cells.local_numpy())
    nodes = node_field(mesh.cells, block.nnodes)        # each node owned by a rank using it
    layer = ghost_layer(nodes, mesh.cells)              # its ghosts: the halo of its cells
    xyz = read_points(block, layer.needed, comm)        # reads N/P rows, gets the ones it uses
    ghosts = comm.allgather(layer.ghosts)
    say(f"\n[3] migrated {comm.allreduce(len(mine)):,} cells and their field by one plan; "
        f"this rank holds {len(mine):,}; nodes follow their cells: owned per rank "
        f"{comm.allgather(layer.n_owned)}, ghost nodes per rank {ghosts}")
    stage("migrate + ghost layer", t0)

    # 4. compute, assemble, update ghosts, reduce
    t0 = time.perf_counter()
    vol = tet_volumes(xyz[layer.local_cells])
    mrho = mesh.fields["rho"]
    vol_da = mrho.copy()
    vol_da.local_numpy()[...] = vol
    mass = mrho * vol_da                                  # a gumath kernel; NA stays NA
    layer.assemble_corners(np.repeat(vol / 4, 4), into=nodes)   # node volumes, on the owners
    needed = layer.needed
    at_needed = layer.update(nodes)                             # the ghost update
    total = nodes.sum()
    mass_total = mass.sum()
    say(f"\n[4] node volumes assembled and {sum(ghosts):,} ghost values updated; volume "
        f"{float(total):.12f}, mass {float(mass_total):.6f} (NA skipped)")
    stage("compute + ghosts + reduce", t0)

    # 5. solve: one backward-Euler step of diffusion on the nodes, by CG written
    # with the Array API namespace; the operator (P1 stiffness, lumped mass) is
    # applied through the ghost layer, as a finite-element code applies it
    t0 = time.perf_counter()
    solution, iterations, residual, operator = solve_diffusion(layer, xyz, nodes, vol)
    say(f"\n[5] (M + dt K) u = M f on {block.nnodes:,} nodes (P1, lumped M = node volumes, "
        f"f = x): CG with xdap.array_api, {iterations} iterations, relative residual "
        f"{residual:.1e}")
    stage("solve (CG through the ghost layer)", t0)

    # 6. save and show
    t0 = time.perf_counter()
    store = os.path.join(out, "result.xdap")
    nodes.save(store)
    stage("save (zarr store)", t0)
    t0 = time.perf_counter()
    xdmf = write_xdmf(os.path.join(out, "result.xdmf"), mesh, node_points(block, nodes),
                      cell_fields={"rho": mrho, "mass": mass},
                      node_fields={"volume": nodes, "u": solution})
    stage("write_xdmf", t0)
    say(f"  pipeline (read .. save): {comm.allreduce(time.perf_counter() - t_all, op=MPI.MAX):.2f} s")
    t0 = time.perf_counter()
    slab = slice_polygons(xyz[layer.local_cells], axis=2, at=0.3)
    ax = mesh.cells.plot(polygons=slab, outline=mesh.fields["interface"].local_numpy(),
                         title=f"{args.partitioner} partition, {N:,} tets, {comm.size} ranks: "
                         "the slice z = 0.3\noutlined: interface cells (ghost layers copy them)")
    if ax is not None:
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.figure.savefig(os.path.join(out, "partition.png"), dpi=90)
    stage("picture (rank 0 draws; not part of the pipeline)", t0)
    say(f"  peak memory per rank: {peak_rss()} MiB")

    # checks
    say("\n[checks]")
    check("every cell moved once", comm.allreduce(len(mine)) == N and
          len(np.unique(np.concatenate(comm.allgather(np.asarray(mesh.cells.global_indices(0)))
                                       if N <= args.check_limit else [np.arange(N)]))) == N)
    z_shape = None
    if comm.rank == 0:
        zarr = need("zarr")
        z = zarr.open_group(store, mode="r")["values"]
        z_shape = z.shape
    check("the store opens with plain zarr", comm.bcast(z_shape) == (block.nnodes,))
    if N <= args.check_limit:
        meshio = need("meshio")
        same = None
        if comm.rank == 0:               # meshio reads the whole file: on rank 0, when small
            back = meshio.read(xdmf)
            same = len(back.cells_dict["tetra"]) == N and len(back.points) == block.nnodes \
                and np.isclose(back.point_data["volume"].sum(), float(total), rtol=1e-12)
        check("meshio reads result.xdmf back (cells, nodes, node volumes)", comm.bcast(same))
        m = meshio.read(path)
        allcells = m.cells_dict["tetra"]
        corners = m.points[allcells]          # volumes by determinants, not the library's
        vols = np.abs(np.linalg.det(corners[:, 1:] - corners[:, :1])) / 6.0
        ref_nodes = np.bincount(allcells.ravel(), weights=np.repeat(vols / 4, 4),
                                minlength=len(m.points))
        rho_all = np.asarray(m.cell_data["rho"][0], np.float64) if "rho" in m.cell_data \
            else np.ones(len(allcells))
        ref_mass = np.nansum(rho_all * vols)
        got_nodes = np.asarray(nodes.to_global())
        check("node volumes == serial numpy", np.allclose(got_nodes, ref_nodes, rtol=1e-12,
                                                          atol=1e-15))
        check("ghost values == serial", np.allclose(at_needed, ref_nodes[needed], rtol=1e-12,
                                                       atol=1e-15))
        check("total volume == serial == 1", np.isclose(float(total), vols.sum(), rtol=1e-12)
              and (args.mesh is not None or np.isclose(vols.sum(), 1.0, rtol=1e-9)))
        check("mass (NA skipped) == serial", np.isclose(float(mass_total), ref_mass, rtol=1e-12))
        gids = np.asarray(mesh.cells.global_indices(0))
        mr = mrho.local_numpy()
        check("migrated cells and field == the file's", np.array_equal(mine, allcells[gids]) and
              np.array_equal(np.ma.getmaskarray(mr), np.isnan(rho_all[gids])) and
              np.allclose(np.ma.filled(mr, 0.0), np.nan_to_num(rho_all[gids])))
        saved = xdap.load(store, comm=comm).to_numpy()
        check("saved node volumes == serial", np.allclose(saved, ref_nodes, rtol=1e-12, atol=1e-15))
        reference = serial_diffusion(m.points, allcells, ref_nodes)
        got_u = np.asarray(solution.to_global())
        check("the CG solution == SciPy's direct solve of the whole mesh",
              np.allclose(got_u, reference, rtol=1e-7, atol=1e-9),
              f"largest difference {np.abs(got_u - reference).max():.1e}")
    else:
        say(f"  (no serial check: {N:,} cells > --check-limit {args.check_limit:,})")
    say(f"\nresult: {'all checks passed' if ok else 'FAILED'}")
    return 0 if ok else 1


DT = 1e-3                # the diffusion step (the cube's cells are ~1e-2 wide)


def p1_stiffness(corners):
    """The P1 element stiffness matrices of tetrahedra (``(n, 4, 3)``
    corner coordinates): ``vol * G G^T``, G the gradients of the four
    barycentric basis functions, shape ``(n, 4, 4)``."""
    edges = corners[:, 1:] - corners[:, :1]                  # (n, 3, 3): rows x_k - x_0
    inverse = np.linalg.inv(edges)                           # columns: grad of lambda_1..3
    grads = np.concatenate([-inverse.sum(axis=2, keepdims=True), inverse], axis=2)
    grads = grads.transpose(0, 2, 1)                         # (n, 4, 3)
    volumes = np.abs(np.linalg.det(edges)) / 6.0
    return volumes[:, None, None] * grads @ grads.transpose(0, 2, 1)


def solve_diffusion(layer, xyz, mass, volumes, tol=1e-10, maxiter=500):
    """``(M + dt K) u = M f`` on the node field's distribution by conjugate
    gradients written with ``xdap.array_api`` (vecdot, operators), the
    operator applied through the ghost layer: the owners' values fetched
    into the local nodes (``update``), each local cell's element matrix
    applied, the corner sums assembled on the owners (``assemble_corners``).
    ``mass``: the lumped mass (the node volumes); f: each node's x.
    Returns ``(u, iterations, relative residual, the operator)``."""
    import xdap.array_api as xp
    stiffness = DT * p1_stiffness(xyz[layer.local_cells])
    at_nodes = np.empty(len(layer.needed))       # the local nodes' values, kept

    def operator(u):
        layer.update(u, out=at_nodes)             # the ghost update: the owners' values
        corners = np.einsum("cij,cj->ci", stiffness, at_nodes[layer.local_cells])
        ku = xp.zeros_like(u)
        layer.assemble_corners(corners, into=ku)
        return mass * u + ku

    f = xp.zeros_like(mass)
    f.local_numpy()[...] = xyz[:layer.n_owned, 0]            # the owned nodes come first
    b = mass * f
    u = xp.zeros_like(b)
    r = b - operator(u)
    p = xp.asarray(r, copy=True)
    rs = xp.vecdot(r, r)
    norm_b = float(xp.linalg.vector_norm(b))
    iterations = 0
    while iterations < maxiter and float(xp.sqrt(rs)) > tol * norm_b:
        ap = operator(p)
        alpha = rs / xp.vecdot(p, ap)
        u += alpha * p
        r -= alpha * ap
        rs_new = xp.vecdot(r, r)
        p = r + (rs_new / rs) * p
        rs = rs_new
        iterations += 1
    return u, iterations, float(xp.sqrt(rs)) / norm_b, operator


def serial_diffusion(points, cells, lumped):
    """The same system on the whole mesh, assembled with NumPy and solved
    by SciPy's sparse direct solver: the reference (``lumped``: the node
    volumes)."""
    sparse = need("scipy.sparse")
    linalg = need("scipy.sparse.linalg")
    ke = DT * p1_stiffness(points[cells])
    rows = np.repeat(cells, 4, axis=1).reshape(-1)
    cols = np.tile(cells, (1, 4)).reshape(-1)
    n = len(points)
    a = sparse.csr_matrix((ke.reshape(-1), (rows, cols)), shape=(n, n)) + \
        sparse.diags(lumped)
    return linalg.spsolve(a.tocsc(), lumped * points[:, 0])
