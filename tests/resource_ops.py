"""The operations whose MPI handles, file descriptors and threads must not
grow with use, and a probe of those counts (shared by
tests/test_resources.py and benchmarks/robustness.py)."""
import os
import tempfile
import threading

import numpy as np
from mpi4py import MPI

import xdap


def handles(comm) -> dict:
    """The next handle MPICH would give for each kind of MPI object (a
    freed handle is reused first, so a leak shows as growth), open file
    descriptors, live threads."""
    t = MPI.DOUBLE.Create_contiguous(1)
    dtype = t.py2f()
    t.Free()
    k = comm.Dup()
    c = k.py2f()
    k.Free()
    g = comm.Get_group()
    group = g.py2f()
    g.Free()
    r = comm.Irecv(np.empty(1), source=MPI.PROC_NULL)
    request = r.py2f()
    r.Wait()
    op = MPI.Op.Create(lambda a, b, t: None)
    o = op.py2f()
    op.Free()
    return {"datatypes": dtype, "communicators": c, "groups": group, "requests": request,
            "ops": o, "file descriptors": len(os.listdir("/proc/self/fd")),
            "threads": threading.active_count()}


def operations(comm) -> dict:
    """{name: a call of one xdap operation} over small arrays of every kind."""
    a = xdap.from_global(np.arange(64.0).reshape(8, 8), dist=("b", "b"), comm=comm)
    pad = xdap.from_global(np.arange(64.0).reshape(8, 8), dist=("b", "b"),
                           padding=((1, 1), (1, 1)), comm=comm)
    opt = xdap.from_global(np.ma.masked_equal(np.arange(16.0), 3.0), comm=comm)
    rag = xdap.from_global([[1.0, 2.0], [3.0]] * 4, type="var * var * float64", comm=comm)
    f = xdap.from_global(np.arange(16.0), comm=comm)
    s = xdap.Scatter(f, [0, 15])
    ids = np.arange(comm.rank, 4 * comm.size, comm.size)
    u = xdap.from_local(ids * 1.0, dist="u", indices=ids, comm=comm)
    tmp = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None)
    path = os.path.join(tmp, "a.xdap")
    a.save(path)
    return {
        "sum": lambda: a.sum(), "sum over an axis": lambda: a.sum(axis=0),
        "optional mean": lambda: opt.mean(), "ragged row max": lambda: rag.max(axis=1),
        "float16 sum": lambda: xdap.from_global(np.arange(4, dtype=np.float16), comm=comm).sum(),
        "redistribute (datatypes)": lambda: a.redistribute(dist=("c", "b"),
                                                           block_size=(2, None)),
        "redistribute (packed)": lambda: a.redistribute(dist=("c", "c"), method="packed"),
        "redistribute u -> b": lambda: u.redistribute(dist=("b",)),
        "ragged redistribute": lambda: rag.redistribute(dist=("c",)),
        "exchange_halos": lambda: pad.exchange_halos(),
        "accumulate_halos": lambda: pad.accumulate_halos(),
        "Scatter.forward": lambda: s.forward(f),
        "Scatter.reverse": lambda: s.reverse(np.ones(2), into=f),
        "to_global": lambda: a.to_global(), "to_global(root=0)": lambda: a.to_global(root=0),
        "kernel": lambda: xdap.kernels.sin(a), "kernel +": lambda: a + a,
        "from_local": lambda: xdap.from_local(np.zeros(3), comm=comm),
        "from_global(root=0)": lambda: xdap.from_global(
            np.arange(8.0) if comm.rank == 0 else None, root=0, comm=comm),
        "migrate": lambda: f.migrate(np.zeros(f.distribution.local_shape[0], int)),
        "from_distarray": lambda: xdap.from_distarray(a.__distarray__(), comm=comm),
        "from_partitioned": lambda: xdap.from_partitioned(a.__partitioned__, comm=comm),
        "save": lambda: a.save(path),
        "load": lambda: xdap.load(path, comm=comm),
    }


def growth(comm, op, iterations: int) -> dict:
    """How much each count grew over ``iterations`` calls (after two
    warm-up calls, which fill the caches)."""
    op()
    op()
    from xdap.io.store_writer import finish_cleanup
    finish_cleanup()
    before = handles(comm)
    for _ in range(iterations):
        op()
    finish_cleanup()              # a save's background cleanup is not a leak
    after = handles(comm)
    return {k: after[k] - before[k] for k in before}
