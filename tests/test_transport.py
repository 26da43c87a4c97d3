"""The transport: rows of every type along routes, on real ranks.

Every rank builds the same global rows (Python values, a fixed recipe),
holds the rows whose global id g has g % P == rank, and sends row g to the
rank ``dest(g)``.  What each rank must receive is computed from the
global rows alone -- the independent reference.
"""
import numpy as np
import pytest
from mpi4py import MPI

from xdap import packing, transport
from xdap.parts import Parts, as_container, container, parts, parts_from_lists
from xdap.types import type_info

RANKS = (1, 2, 3, 4)
N = 13


def _word(i):
    return ("", "a", "héllo", "xyz", "ß" * 3)[i % 5]


# type -> the global row g as xnd's Python value
TYPES = {
    "float64": lambda g: g * 0.5,
    "3 * int32": lambda g: [g, -g, 2 * g],
    "?float64": lambda g: None if g % 3 == 1 else g / 4,
    "2 * 2 * ?int16": lambda g: [[g, None], [None if g % 2 else -g, 7]],
    "complex128": lambda g: complex(g, -g),
    "bool": lambda g: g % 2 == 0,
    "{x: float64, n: 3 * int8}": lambda g: {"x": g / 8, "n": [g % 5, 1, -1]},
    "?{x: ?float64, tag: fixed_bytes(size=2)}": lambda g: None if g % 4 == 3 else
        {"x": None if g % 3 == 0 else float(g), "tag": bytes([97 + g % 26, 98])},
    "categorical('red', 'green', NA)": lambda g: ("red", "green", None)[g % 3],
    "fixed_string(4)": lambda g: _word(g)[:2],
    "var * var * float64": lambda g: [float(g)] * (g % 4),
    "var * var * var * ?int16": lambda g: [[g, None][: g % 3], [], [1] * (g % 2)][: 1 + g % 3],
    "var * var * {a: int8, b: ?float32}": lambda g: [{"a": g % 7, "b": None if g % 2 else 1.5}] * (g % 3),
    "string": _word,
    "bytes": lambda g: bytes(range(g % 4)),
}


def _leaf_type(t, n):
    """The local container type of n rows of the global row type ``t``."""
    if t.startswith("var"):
        return t
    if t in ("string", "bytes"):
        return f"{n} * {t}"
    return f"{n} * {t}"


def local_parts(t, ids):
    """Parts of the rows with global ids ``ids`` (independently of xdap's
    transport: xnd or xdap's list reader)."""
    values = [TYPES[t](int(g)) for g in ids]
    info = type_info(_leaf_type(t, len(ids)), scalar=True)
    if info.ragged and not info.text:
        return parts_from_lists(values, info)
    return parts(as_container(values, type=_leaf_type(t, len(ids))))


def value_of(p: Parts):
    """Python values of Parts (zero rows: [])."""
    if p.nrows == 0:
        return []
    return container(p).value


def dest(g, P):
    return (g * 7 + 3) % P


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("t", sorted(TYPES))
def test_rows_of_every_type_go_where_the_route_says(t):
    comm = MPI.COMM_WORLD
    P, me = comm.size, comm.rank
    ids = np.arange(me, N, P)
    p = local_parts(t, ids)
    route = transport.Route.to_ranks(comm, dest(ids, P))
    got_ids, got = transport.move(route, parts(as_container(ids.astype(np.int64))), p)
    # arrivals: by source rank, each in its sender's order
    want_ids = [g for r in range(P) for g in range(r, N, P) if dest(g, P) == me]
    assert got_ids.values.tolist() == want_ids
    assert value_of(got) == [TYPES[t](g) for g in want_ids]
    assert got.info == p.info or (p.info.ragged and got.info == p.info) or \
        got.info.with_shape(()) == p.info.with_shape(())

    # the same rows put in global order by the route's order, and back
    ordered = transport.Route(comm, route.rows, route.send_counts,
                              order=np.argsort(got_ids.values, kind="stable"))
    back_ids, back = transport.move(ordered, parts(as_container(ids.astype(np.int64))), p)
    assert back_ids.values.tolist() == sorted(want_ids)
    assert value_of(back) == [TYPES[t](g) for g in sorted(want_ids)]


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("t", ["var * var * float64", "?float64", "string", "3 * int32"])
@pytest.mark.parametrize("root", [0, -1, None])
def test_gather_to_a_root_and_to_every_rank_with_empty_ranks(t, root):
    comm = MPI.COMM_WORLD
    P, me = comm.size, comm.rank
    root = None if root is None else root % P
    # rank 0 holds nothing (an empty ragged partition included)
    ids = np.arange(me, N, P) if me else np.zeros(0, np.int64)
    p = local_parts(t, ids)
    route = transport.Route.gather(comm, np.arange(len(ids)), root)
    got_ids, got = transport.move(route, parts(as_container(ids.astype(np.int64))), p)
    want = [g for r in range(1, P) for g in range(r, N, P)] if root is None or me == root \
        else []
    assert got_ids.values.tolist() == want
    assert value_of(got) == [TYPES[t](g) for g in want]


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_reverse_route_returns_one_value_per_row_sent():
    comm = MPI.COMM_WORLD
    P, me = comm.size, comm.rank
    ids = np.arange(me, N, P)
    route = transport.Route.to_ranks(comm, dest(ids, P)).with_recv_counts()
    got, = transport.move(route, parts(as_container(ids * 1.0)))
    back, = transport.move(route.reversed(), parts(as_container(got.values * 10)))
    # back[k] answers rows[k]: the row sent k-th
    assert back.values.tolist() == (ids[route.rows] * 10.0).tolist()


@pytest.mark.mpi(ranks=(1, 2, 4))
def test_row_exchange_repeats_without_allocating_and_matches_move():
    comm = MPI.COMM_WORLD
    P, me = comm.size, comm.rank
    ids = np.arange(me, N, P)
    values = np.stack([ids * 1.0, -ids * 1.0], axis=1)
    route = transport.Route.to_ranks(comm, dest(ids, P)).with_recv_counts()
    ex = transport.RowExchange(route)
    out = np.empty((route.n_recv, 2))
    for k in range(3):
        ex.pack(values + k)
        got = ex.send(out=out)
        assert got is out
        want, = transport.move(route, parts(as_container(values + k)))
        assert np.array_equal(out, want.values)


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("order", ["arrival", "permuted", "own first", "repeats"])
def test_row_exchange_places_rows_as_move_does(comm, order):
    # own rows by a local take, the others' straight into place or through a
    # buffer: the result is move()'s whatever the order asks for
    P, me = comm.size, comm.rank
    ids = np.arange(me, N, P)
    values = np.stack([ids * 1.0, -ids * 1.0], axis=1)
    route = transport.Route.to_ranks(comm, dest(ids, P)).with_recv_counts()
    n = route.n_recv
    rng = np.random.default_rng(me)
    src = np.repeat(np.arange(P), route.recv_counts)
    pick = {"arrival": None, "permuted": rng.permutation(n),
            "own first": np.argsort(src != me, kind="stable"),
            "repeats": rng.integers(0, max(n, 1), n + 3) if n else np.zeros(0, np.int64)}[order]
    routed = transport.Route(comm, route.rows, route.send_counts, route.recv_counts,
                             send_starts=route.send_starts, order=pick)
    ex = transport.RowExchange(routed)
    arrived, = transport.move(route, parts(as_container(values)))
    want = arrived.values if pick is None else arrived.values[pick]
    for k in range(2):
        ex.pack(values + k)
        np.testing.assert_array_equal(ex.send(), want + k)
        out = np.empty_like(want)
        ex.pack(values + 2 * k)
        ex.start(out)
        assert ex.finish() is out
        np.testing.assert_array_equal(out, want + 2 * k)


def test_packing_round_trip_keeps_every_type():
    for t in TYPES:
        ids = np.arange(N)
        p = local_parts(t, ids)
        rows = [5, 0, 5, 12]
        pk = packing.pack(p, rows)
        q = packing.unpack(pk.form, pk.buffers, len(rows))
        assert value_of(q) == [TYPES[t](g) for g in rows], t
        # a segment of rows is a contiguous run of every buffer
        lo, hi = pk.bounds([1]), pk.bounds([3])
        seg = packing.unpack(pk.form, [b[a[0]:z[0]] for b, a, z in zip(pk.buffers, lo, hi)], 2)
        assert value_of(seg) == [TYPES[t](g) for g in rows[1:3]], t


def test_send_lists_and_counts_on_one_rank():
    comm = MPI.COMM_SELF
    assert transport.exchange_counts(comm, [3]).tolist() == [3]
    got = transport.send_lists(comm, {0: np.array([4, 5])})
    assert list(got) == [0] and got[0].tolist() == [4, 5]
    assert transport.send_lists(comm, {}) == {}
