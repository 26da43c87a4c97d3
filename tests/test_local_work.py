"""Local work is free: operations whose work is local make no MPI call
(outside debug mode), temporaries lend their buffers, in-place operators
update the array.

The communicator is wrapped so that every MPI call through it is counted;
the arrays live on it, so a kernel, a conversion or a view that talked to
the other ranks would be seen.
"""
import gumath
import numpy as np
import pytest
from mpi4py import MPI

import xdap
import xdap.agreement
import xdap.array
import xdap.kernels.library
from helpers import debug_mode

# method names of a communicator that are not communication
_QUIET = {"Get_rank", "Get_size", "Get_attr", "Set_attr", "Compare", "Get_group",
          "Get_topology", "Is_inter", "Is_intra", "Get_name", "Get_info", "Clone"}
_PICKLED = {"allgather", "allreduce", "alltoall", "bcast", "gather", "scatter", "barrier",
            "send", "recv", "isend", "irecv", "sendrecv", "reduce", "exscan", "scan"}


class Counting(MPI.Intracomm):
    """COMM_WORLD, counting every communication method called on it."""
    calls: list = []

    def __getattribute__(self, name):
        if (name[:1].isupper() and name not in _QUIET) or name in _PICKLED:
            Counting.calls.append(name)
        return super().__getattribute__(name)


@pytest.fixture
def quiet(monkeypatch):
    """Debug mode off (the suite runs in it: local calls vote there)."""
    monkeypatch.setattr(xdap.agreement, "_DEBUG", False)
    Counting.calls.clear()
    return Counting(MPI.COMM_WORLD)


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_local_operations_make_no_mpi_call(quiet):
    comm = quiet
    g = np.arange(24.0).reshape(6, 4) - 7
    rec = np.zeros(6, np.dtype([("x", "f8"), ("n", "i8")], align=True))
    rec["x"] = np.arange(6.0)
    a = xdap.from_global(g, dist=("b", "c"), comm=comm)
    b = xdap.from_global(g * 2, dist=("b", "c"), comm=comm)
    r = xdap.from_global([[1.0, None], [], [2.0, 3.0]] * 3, type="var * var * ?float64",
                         comm=comm)
    s = xdap.from_global(rec, comm=comm)
    out = xdap.zeros((6, 4), dist=("b", "c"), comm=comm)
    Counting.calls.clear()

    results = [a + 1, 2 * a, a * b, a - b / 3, -a, abs(a), a ** 2, a < 0, np.sin(a),
               np.add(a, b, out=out), xdap.kernels.hypot(a, b), a.astype("float32"),
               a.copy(), r * 2 + 1, xdap.kernels.sin(r), s.field("x") + 1,
               xdap.kernels.apply(gumath.sin, a)]
    c = a * 1.0
    c += b
    c *= 2
    views = [a.local, a.local_numpy(), r.local, s.field("n").local_numpy(), a.global_indices(1),
             a.T, xdap.permute_dims(a, (1, 0)), xdap.expand_dims(a, axis=0), xdap.tril(a),
             xdap.zeros_like(a)]
    assert Counting.calls == [], Counting.calls

    # and they computed the right thing (to_numpy communicates: after the count)
    got = [x.to_numpy() for x in results if x.parts.info.dtype != "bool" and not x.parts.info.ragged]
    want = [g + 1, 2 * g, g * (2 * g), g - 2 * g / 3, -g, abs(g), g ** 2, np.sin(g),
            g + 2 * g, np.hypot(g, 2 * g), g.astype("float32"), g, rec["x"] + 1, np.sin(g)]
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    np.testing.assert_array_equal((a < 0).to_numpy(), g < 0)
    np.testing.assert_array_equal(c.to_numpy(), (g + 2 * g) * 2)
    assert len(views) == 10


@pytest.mark.mpi(ranks=(2, 3))
def test_debug_mode_catches_ranks_that_diverge(comm):
    """In debug mode a local call votes: a rank that passes another
    operand raises the same error as every other rank."""
    with debug_mode():
        _debug_mode_catches_ranks_that_diverge(comm)


def _debug_mode_catches_ranks_that_diverge(comm):
    a = xdap.from_global(np.arange(8.0), comm=comm)
    b = xdap.from_global(np.arange(8.0), dist=("c",), comm=comm)
    other = b if comm.rank == 1 else a
    # rank 1 would align its operands (a collective) where the others call
    # the kernel: the call's vote compares the operands first, and every
    # rank raises the same error naming what each passed
    with pytest.raises(ValueError, match=r"add: the operands must be the same on every rank: "
                       r"rank 0 passed \(an array 8 \* float64, dist \(b\).*rank 1 "
                       r"\(an array 8 \* float64, dist \(b\).*dist \(c\)"):
        a + other
    # out= a NumPy array on one rank only: one TypeError on every rank
    z = xdap.zeros(8, comm=comm)
    out = np.zeros(a.local_numpy().shape) if comm.rank == 1 else z
    for call in (lambda: xdap.kernels.library.sin(a, out=out),
                 lambda: xdap.kernels.library.add(a, a, out=out),
                 lambda: xdap.kernels.library.multiply(a, 2.0, out=out)):
        with pytest.raises(TypeError, match=r"out= must be a DistArray.*\(rank 1\)"):
            call()
    np.testing.assert_allclose(xdap.kernels.library.sin(a, out=z).to_numpy(),
                               np.sin(np.arange(8.0)), rtol=1e-15, atol=1e-15)


def test_a_temporary_lends_its_buffer_and_in_place_updates(monkeypatch):
    comm = MPI.COMM_SELF
    monkeypatch.setattr(xdap.agreement, "_DEBUG", False)
    xdap.array.bind_fast_paths()
    # (id of the array, whether its buffer takes the result, id of the result): ids, so that
    # the record holds no reference -- a temporary is told by its reference count
    seen = []
    scalar = xdap.array._scalar_result
    array = xdap.array._array_result

    def scalar_recording(handle, x, number, reflected, into=False):
        out = scalar(handle, x, number, reflected, into)
        seen.append((id(x), bool(into), id(out)))
        return out

    def array_recording(handle, x, y, into):
        out = array(handle, x, y, into)
        seen.append((id(x), into is not None, id(out)))
        return out
    monkeypatch.setattr(xdap.array, "_scalar_result", scalar_recording)
    monkeypatch.setattr(xdap.array, "_array_result", array_recording)
    g = np.arange(6.0)
    a = xdap.from_global(g, comm=comm)
    seen.clear()
    e = a * 2 + 1
    np.testing.assert_array_equal(e.to_numpy(), g * 2 + 1)
    (x0, into0, t), (x1, into1, out1) = seen
    assert x0 == id(a) and not into0              # a * 2: a new array ...
    assert x1 == t and into1 and out1 == t == id(e)   # ... whose buffer takes + 1 (NumPy's elision)
    assert e._fresh
    seen.clear()
    t = a * 2                                 # a named array is not a temporary
    u = t + 1                                 # (a new array: the scalar path, made in C)
    assert not seen[-1][1] and u is not t and u._fresh
    np.testing.assert_array_equal(t.to_numpy(), g * 2)
    seen.clear()
    c = a + (t * 2)                           # commutative: the right temporary lends its buffer
    assert seen[-1][1] and seen[-1][2] == seen[-2][2] == id(c)
    np.testing.assert_array_equal(c.to_numpy(), g + g * 4)
    seen.clear()
    b = a
    a += 1                                    # in place: b sees it, nothing allocated
    assert a is b and seen[-1][2] == id(b) and seen[-1][1]
    np.testing.assert_array_equal(b.to_numpy(), g + 1)
    i = xdap.from_global(np.arange(3), comm=comm)
    with pytest.raises(TypeError, match="out= has dtype int64"):
        i += 0.5                              # NumPy's same-kind rule


def test_a_view_is_never_a_temporary():
    """A field view shares its records' memory: it never lends its buffer."""
    comm = MPI.COMM_SELF
    rec = np.zeros(4, np.dtype([("x", "f8"), ("n", "i8")], align=True))
    s = xdap.from_global(rec, comm=comm)
    y = s["x"] + 1                            # s["x"] is a temporary view
    np.testing.assert_array_equal(s.to_numpy()["x"], np.zeros(4))
    np.testing.assert_array_equal(y.to_numpy(), np.ones(4))


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_scalar_operators_made_in_c_follow_numpy(comm, monkeypatch):
    """``a <op> number`` for a Python int or float takes the C path
    (``xdap._apply.scalar_result``) where the result has ``a``'s dtype, the
    general path otherwise: both give NumPy's values and dtypes (NEP 50),
    on uneven blocks, an empty rank, 0-d arrays and strided views, and the
    same errors as NumPy."""
    from helpers import check_global
    monkeypatch.setattr(xdap.agreement, "_DEBUG", False)   # the C path is outside debug mode
    ops = [("+", lambda x, s: x + s), ("-", lambda x, s: x - s), ("*", lambda x, s: x * s),
           ("/", lambda x, s: x / s), ("**", lambda x, s: x ** s),
           ("r+", lambda x, s: s + x), ("r-", lambda x, s: s - x), ("r*", lambda x, s: s * x),
           ("r/", lambda x, s: s / x)]
    sizes = ([0] * (comm.size - 1) + [7],) if comm.size > 1 else None
    # (not 8- and 16-bit ints: with a float, or divided, xdap makes float32 -- exact for
    # them -- where NumPy makes float64: the general path's rule, not this one's)
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        g = (np.arange(1, 8) % 5 + 1).astype(dtype)
        arrays = [("block", g, xdap.from_global(g, comm=comm)),
                  ("empty rank", g, xdap.from_global(g, sizes=sizes, comm=comm)),
                  ("[::-2]", g[::-2], xdap.from_global(g, comm=comm)[::-2]),
                  ("0-d", g[3], xdap.from_global(g, comm=comm)[3])]
        for number in (3, 2.5, -1, 0.5):
            for what, want_of, a in arrays:
                for name, op in ops:
                    try:
                        want = op(np.asarray(want_of), number)
                    except (ValueError, TypeError, OverflowError) as e:
                        with pytest.raises(type(e)):
                            op(a, number)
                        continue
                    got = op(a, number)
                    check_global(got, want, (dtype, what, name, number), dtype=True)
    a = xdap.from_global(np.arange(4.0), comm=comm)
    b = a + 1
    assert b._fresh and b.distribution is a.distribution and b.parts.info is a.parts.info
    assert not np.shares_memory(b.local_numpy(), a.local_numpy()) or a.local_numpy().size == 0


@pytest.mark.mpi(ranks=(1, 2, 3))
def test_fast_path_results_are_numpy_values_and_follow_the_kernels(comm, monkeypatch):
    """The C fast paths (``xdap._apply``) run the kernel's loop into a new
    NumPy array and make no xnd container for it: the container is made
    when something asks (a kernel of the general path, an export), over the
    same memory.  Their values are the kernels' own -- the same ``xdap.kernels``
    call on the operands' containers -- for arrays, 0-d arrays (a
    reduction's result, unbuffered) and Python numbers, in place too,
    where an input overlaps the output."""
    from helpers import check_global
    import xdap.array_api as xp
    from xdap.parts import container
    monkeypatch.setattr(xdap.agreement, "_DEBUG", False)
    lib = xdap.kernels.library
    sizes = None
    if comm.size > 1:                                  # rank 0 empty, the others uneven
        rest = [8 // (comm.size - 1)] * (comm.size - 1)
        rest[-1] += 8 - sum(rest)
        sizes = ([0] + rest,)
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        g = (np.arange(1, 9) % 5 + 1).astype(dtype)
        a = xdap.from_global(g, sizes=sizes, comm=comm)
        b = xdap.from_global(g[::-1].copy(), sizes=sizes, comm=comm)
        for name, got, want in (("add", a + b, lambda: lib.add(a, b)),
                                ("multiply", a * b, lambda: lib.multiply(a, b)),
                                ("subtract", a - b, lambda: lib.subtract(a, b)),
                                ("less", a < b, lambda: lib.less(a, b)),
                                ("negative", -a, lambda: lib.negative(a)),
                                ("absolute", abs(a), lambda: lib.absolute(a))):
            assert got.parts.xnd is None, (dtype, name)        # no container made ...
            want = want()
            np.testing.assert_array_equal(got.local_numpy(), want.local_numpy())
            assert got.local_numpy().dtype == want.local_numpy().dtype
            c = container(got.parts)                       # ... until one is asked for
            assert np.shares_memory(np.asarray(c), got.local_numpy()) or got.local_numpy().size == 0
        s = xp.sum(a)                                      # a 0-d array without a container
        t = xp.max(b)
        for got, want in ((s * 3, g.sum() * 3), (3 * s, 3 * g.sum()), (s - t, g.sum() - g.max()),
                          (s + t * s, g.sum() + g.max() * g.sum()), (s < t, g.sum() < g.max()),
                          (-s, -g.sum()), (a * s, g * g.sum())):
            check_global(got, np.asarray(want, dtype=np.asarray(want).dtype), dtype)
        c = a * 1                                          # in place, an input overlapping
        c += c[::-1] if comm.size == 1 else c              # (one rank: a reversed view)
        want = g + g[::-1] if comm.size == 1 else g * 2
        check_global(c, want.astype(dtype), dtype, dtype=True)
    r = xdap.from_global(np.arange(6.0), comm=comm) * 2        # read-only values lend nothing
    r.local_numpy().flags.writeable = False
    before = r.local_numpy().copy()
    out = r + 1.0
    np.testing.assert_array_equal(r.local_numpy(), before)
    check_global(out, np.arange(6.0) * 2 + 1, "read-only")
