"""Halo exchange on real ranks against a serial NumPy reference.

Reference: the global array with every periodic block dimension's edge
padding re-filled by ``numpy.pad(interior, (lo, hi), mode="wrap")``; after
``exchange_halos`` each rank's buffer must equal that array at its global
indices.  Ghost cells are poisoned first (from_global fills them
correctly), so every ghost must really be received.
"""

import numpy as np
import pytest
from mpi4py import MPI

import xdap
from xdap.parts import parts
from xdap.rows import leaf_ranges
from xdap.bitmaps import pack_validity
from xdap.maps import BlockMap
from xdap.movement.halo import halo_plan


def wrapped(g, maps):
    """The reference: periodic edge padding refilled by wrap, dim by dim."""
    out = g.copy()
    for k, m in enumerate(maps):
        if isinstance(m, BlockMap) and m.periodic:
            L, H = m.padding[0][0], m.padding[-1][1]
            if L or H:
                interior = np.take(out, np.arange(L, m.size - H), axis=k)
                pad = [(0, 0)] * out.ndim
                pad[k] = (L, H)
                out = np.pad(interior, pad, mode="wrap")
    return out


def ghost_mask(a):
    """Local cells that are ghosts: communication padding, or periodic edge
    padding -- computed from the maps, independently of the halo plan."""
    d = a.distribution
    masks = []
    for k, m in enumerate(d.maps):
        p = d.coords[k]
        n = m.local_size(p)
        g = np.zeros(n, bool)
        own = m.owned_local_slice(p)
        g[:own.start] = True
        g[own.stop:] = True
        if isinstance(m, BlockMap) and m.periodic:
            L, H = m.padding[0][0], m.padding[-1][1]
            gi = m.global_indices(p)
            g |= (gi < L) | (gi >= m.size - H)
        masks.append(g)
    if not masks:
        return np.zeros((), bool)
    out = np.zeros([len(m) for m in masks], bool)
    for k, m in enumerate(masks):
        shape = [1] * len(masks)
        shape[k] = len(m)
        out |= m.reshape(shape)
    return out


def source_index(a):
    """Per dim, the global cell each local position copies (wrap for
    periodic edge padding, itself otherwise)."""
    d = a.distribution
    out = []
    for k, m in enumerate(d.maps):
        gi = d.global_indices(k).copy()
        if isinstance(m, BlockMap) and m.periodic:
            L, H = m.padding[0][0], m.padding[-1][1]
            span = m.size - L - H
            gi[gi < L] += span
            gi[gi >= m.size - H] -= span
        out.append(gi)
    return out


CASES = [
    # label, global shape, from_global options (grid None: balanced)
    ("1d", (23,), dict(dist=("b",), padding=((1, 1),))),
    ("1d wide periodic", (29,), dict(dist=("b",), padding=((2, 2),), periodic=(True,))),
    ("2d", (13, 11), dict(dist=("b", "b"), padding=((1, 1), (1, 1)))),
    ("2d periodic both", (13, 22), dict(dist=("b", "b"), padding=((1, 1), (2, 2)),
                                       periodic=(True, True))),
    ("2d periodic rows", (12, 9), dict(dist=("b", "b"), padding=((1, 1), (1, 1)),
                                      periodic=(True, False))),
    ("2d rows only", (10, 7), dict(dist=("b", "n"), padding=((2, 2), None))),
    # rows of 200 float64: a rank's halo does not fit in a vote (the vote, then neighbours)
    ("2d long rows", (9, 200), dict(dist=("b", "n"), padding=((1, 1), None),
                                    periodic=(True, False))),
    ("2d block x cyclic", (11, 9), dict(dist=("b", "c"), padding=((1, 1), None),
                                       periodic=(True, False))),
    ("3d", (9, 8, 7), dict(dist=("b", "b", "b"), padding=((1, 1),) * 3)),
    ("3d periodic", (9, 10, 8), dict(dist=("b", "b", "b"), padding=((1, 1),) * 3,
                                    periodic=(True, False, True))),
]
# grid None: balanced; "rows"/"cols": every rank along dim 0 / dim 1 (cases
# with at least two distributed dims only)
COMBOS = [(c, w) for c in CASES for w in (None, "rows", "cols")
          if w is None or sum(d != "n" for d in c[2]["dist"]) >= 2]
COMBO_IDS = [f"{c[0]}-{w or 'balanced'}" for c, w in COMBOS]


def _grid(comm, shape, opts, which):
    ndist = sum(1 for d in opts["dist"] if d != "n")
    if which is None or ndist < 2:
        return None if which is None else "skip"
    grid = [1] * len(shape)
    grid[0 if which == "rows" else 1] = comm.size
    return tuple(grid)


def _make(comm, label, shape, opts, which, dtype=np.float64, seed=0):
    grid = _grid(comm, shape, opts, which)
    if grid == "skip":
        pytest.skip("one distributed dim")
    rng = np.random.default_rng(seed)
    g = (rng.standard_normal(shape) * 100).astype(dtype)
    return g, xdap.from_global(g, grid=grid, comm=comm, **opts)


@pytest.mark.mpi
@pytest.mark.parametrize("case,which", COMBOS, ids=COMBO_IDS)
def test_exchange_matches_wrapped_reference(comm, case, which):
    label, shape, opts = case
    g, a = _make(comm, label, shape, opts, which)
    ref = wrapped(g, a.distribution.maps)
    v = parts(a.local).values
    ghosts = ghost_mask(a)
    v[ghosts] = np.nan
    assert a.exchange_halos() is a
    idx = np.ix_(*[a.distribution.global_indices(k) for k in range(a.ndim)])
    np.testing.assert_array_equal(v, ref[idx])
    for _ in range(2):                       # the repeated call's prepared path (its
        v[ghosts] = np.nan                   # cells riding in the vote where they fit)
        assert a.exchange_halos() is a
        np.testing.assert_array_equal(v, ref[idx])


@pytest.mark.mpi
@pytest.mark.parametrize("case,which", COMBOS, ids=COMBO_IDS)
def test_accumulate_add_is_the_adjoint(comm, case, which):
    label, shape, opts = case
    _, a = _make(comm, label, shape, opts, which)
    rng = np.random.default_rng(100 + comm.rank)
    v = parts(a.local).values
    v[...] = rng.standard_normal(v.shape)
    x = v.copy()
    ghosts = ghost_mask(a)
    # reference for mode add: every ghost's value added to the cell it copies
    src = source_index(a)
    gathered = comm.allgather((v.copy(), ghosts, src))
    total = np.zeros(shape)
    for vals, gh, s in gathered:
        for pos in zip(*np.nonzero(gh)):
            total[tuple(s[k][pos[k]] for k in range(len(shape)))] += vals[pos]
    want = x.copy()
    idx = np.ix_(*src)
    want[~ghosts] += total[idx][~ghosts]
    a.accumulate_halos("add")
    np.testing.assert_allclose(v, want, rtol=1e-13, atol=1e-12)
    # <E x, y> == <x, E* y> with E* = accumulate add + clear
    _, b = _make(comm, label, shape, opts, which)
    _, c = _make(comm, label, shape, opts, which)
    xb, yc = parts(b.local).values, parts(c.local).values
    xb[...] = rng.standard_normal(xb.shape)
    yc[...] = rng.standard_normal(yc.shape)
    x0, y0 = xb.copy(), yc.copy()
    b.exchange_halos()
    c.accumulate_halos("add", clear=True)
    lhs = comm.allreduce(float(np.vdot(xb, y0)))
    rhs = comm.allreduce(float(np.vdot(x0, yc)))
    assert np.isclose(lhs, rhs, rtol=1e-12), (lhs, rhs)
    assert (yc[ghosts] == 0).all()


@pytest.mark.mpi
@pytest.mark.parametrize("label,shape,opts", CASES, ids=[c[0] for c in CASES])
def test_accumulate_replace(comm, label, shape, opts):
    _, a = _make(comm, label, shape, opts, None)
    v = parts(a.local).values
    ghosts = ghost_mask(a)
    src = source_index(a)
    flat = np.ravel_multi_index(np.ix_(*src), shape) if len(shape) > 1 else src[0]
    # every ghost copy of a cell carries the same value: order cannot matter
    v[...] = -1.0
    v[ghosts] = 1000.0 + flat[ghosts]
    has_copy = np.zeros(shape, bool)
    for gh, s in comm.allgather((ghosts, src)):
        for pos in zip(*np.nonzero(gh)):
            has_copy[tuple(s[k][pos[k]] for k in range(len(shape)))] = True
    want = v.copy()
    hit = has_copy[np.ix_(*src)] & ~ghosts
    want[hit] = 1000.0 + flat[hit]
    a.accumulate_halos("replace")
    np.testing.assert_array_equal(v, want)


@pytest.mark.mpi
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.complex128])
def test_repeated_exchanges_of_every_dtype(comm, dtype):
    """The repeated exchange's prepared path (its cells riding in the vote
    where they fit) on data of other item sizes: complex128's 16 bytes do
    not divide the vote's 24-byte header, so its cells are copied region by
    region; the others through flat indices."""
    case = CASES[3]                           # 2-D, periodic both ways, uneven padding
    g, a = _make(comm, *case, None, dtype=dtype, seed=4)
    ref = wrapped(g, a.distribution.maps)
    v = parts(a.local).values
    ghosts = ghost_mask(a)
    idx = np.ix_(*[a.distribution.global_indices(k) for k in range(a.ndim)])
    for _ in range(3):
        v[ghosts] = 0
        a.exchange_halos()
        np.testing.assert_array_equal(v, ref[idx])


@pytest.mark.mpi
def test_optional_and_integer_data(comm):
    g = np.ma.masked_array(np.arange(60, dtype=np.int32).reshape(6, 10),
                           mask=(np.arange(60).reshape(6, 10) % 7 == 0))
    a = xdap.from_global(g, dist=("b", "b"), padding=((1, 1), (1, 1)), periodic=(True, True),
                         comm=comm)
    p = parts(a.local)
    ghosts = ghost_mask(a)
    p.values[ghosts] = -5
    m = p.valid_mask()
    m[ghosts] = True
    from xdap.bitmaps import pack_validity
    p.validity[:] = pack_validity(m)
    a.exchange_halos()
    ref_v = wrapped(g.filled(0), a.distribution.maps)   # NA slots hold 0 in the container
    ref_m = wrapped(~g.mask, a.distribution.maps)
    idx = np.ix_(*[a.distribution.global_indices(k) for k in range(2)])
    np.testing.assert_array_equal(p.values, ref_v[idx])
    np.testing.assert_array_equal(p.valid_mask(), ref_m[idx])


@pytest.mark.mpi
def test_plan_is_pure_and_errors_are_collective(comm):
    a = xdap.from_global(np.zeros((8, 8)), dist=("b", "b"), padding=((1, 1), (1, 1)), comm=comm)
    # the plan of every rank is computable anywhere; sends and receives pair up
    plans = [halo_plan(a.distribution, r) for r in range(comm.size)]
    recvs = sorted((r, p, t) for p_, pl in enumerate(plans) for p, t, _ in pl.recvs for r in [p_])
    sends = sorted((p, r, t) for r, pl in enumerate(plans) for p, t, _ in pl.sends)
    assert recvs == sends
    # a ragged array without padding has no ghost rows: nothing changes
    r = xdap.from_global([[1.0], []] * 4, type="var * var * float64", comm=comm)
    before = r.local.value
    assert r.exchange_halos().local.value == before
    with pytest.raises(ValueError, match="mode must be"):
        a.accumulate_halos("max")
    # a read-only validity bitmap on the last rank: refused everywhere, nothing written
    g = np.ma.array(np.arange(8.0), mask=np.arange(8) % 3 == 0)
    o = xdap.from_global(g, dist=("b",), padding=((1, 1),), comm=comm)
    before = o.parts.validity.copy()
    if comm.rank == comm.size - 1:
        o.parts.validity.flags.writeable = False
    with pytest.raises(ValueError, match=rf"validity bitmap is read-only \(rank {comm.size - 1}\)"):
        o.exchange_halos()
    np.testing.assert_array_equal(o.parts.validity, before)
    if comm.size == 1:
        # a periodic wrap wider than the interior cannot be filled ...
        with pytest.raises(ValueError, match="interior"):
            xdap.from_global(np.zeros(2), dist=("b",), padding=((1, 1),), periodic=(True,),
                             comm=comm).exchange_halos()
        # ... but an interior of one cell is enough: both ghosts copy it
        b = xdap.from_global(np.array([1.0, 2.0, 3.0]), dist=("b",), padding=((1, 1),),
                             periodic=(True,), comm=comm)
        np.testing.assert_array_equal(parts(b.exchange_halos().local).values,
                                      np.pad([2.0], 1, mode="wrap"))


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["add", "replace"])
def test_accumulate_optional(comm, mode):
    from xdap.bitmaps import pack_validity
    shape = (8, 10)
    g = np.ma.masked_array(np.zeros(shape), mask=np.zeros(shape, bool))
    a = xdap.from_global(g, dist=("b", "b"), padding=((1, 1), (1, 1)), periodic=(True, False),
                         comm=comm)
    p = parts(a.local)
    rng = np.random.default_rng(200 + comm.rank)
    ghosts = ghost_mask(a)
    src = source_index(a)
    flat = np.ravel_multi_index(np.ix_(*src), shape)
    valid = rng.random(p.values.shape) < 0.6
    if mode == "add":
        p.values[...] = rng.integers(1, 9, p.values.shape)
    else:                        # equal copies of a cell: the order cannot matter
        p.values[...] = np.where(ghosts, 1000.0 + flat, -1.0)
        valid = np.where(ghosts, (flat % 3) != 0, valid)
    p.validity[:] = pack_validity(valid)
    before_v, before_m = p.values.copy(), valid.copy()
    # reference from every rank's ghosts
    add = np.zeros(shape)
    any_valid = np.zeros(shape, bool)
    copied = np.zeros(shape, bool)
    for vals, m, gh, s in comm.allgather((before_v, before_m, ghosts, src)):
        for pos in zip(*np.nonzero(gh)):
            cell = tuple(s[k][pos[k]] for k in range(2))
            copied[cell] = True
            if m[pos]:
                add[cell] += vals[pos]
                any_valid[cell] = True
    want_v, want_m = before_v.copy(), before_m.copy()
    own = ~ghosts
    if mode == "add":
        hit = own & any_valid[np.ix_(*src)]
        want_v[hit] = np.where(before_m, before_v, 0)[hit] + add[np.ix_(*src)][hit]
        want_m[hit] = True
    else:
        hit = own & copied[np.ix_(*src)]
        want_v[hit] = 1000.0 + flat[hit]
        want_m[hit] = ((flat % 3) != 0)[hit]
    a.accumulate_halos(mode)
    got_m = p.valid_mask()
    np.testing.assert_array_equal(got_m, want_m)
    np.testing.assert_array_equal(p.values[got_m], want_v[got_m])


# -- ragged arrays: padded rows are ghost rows ------------------------------------------

def _ragged_rows(n, periodic):
    rows = [[float(i) + j / 10 for j in range(i % 3 + 1)] for i in range(n)]
    if periodic:        # the edge padding rows are the wrapped copies, as a periodic grid has
        rows[0], rows[-1] = rows[-2], rows[1]
    return rows


@pytest.mark.mpi(ranks=(1, 2, 3, 4))
@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("optional", [False, True])
def test_ragged_halos_refill_ghost_rows(periodic, optional):
    """Ghost rows get their owners' values: checked against the global rows,
    after every value on the rank (ghosts too) was overwritten."""
    comm = MPI.COMM_WORLD
    rows = _ragged_rows(3 * comm.size + 2, periodic)
    if optional:
        rows = [[None if (i + j) % 4 == 0 else v for j, v in enumerate(r)]
                for i, r in enumerate(rows)]
        rows[0], rows[-1] = (rows[-2], rows[1]) if periodic else (rows[0], rows[-1])
    t = "var * var * ?float64" if optional else "var * var * float64"
    a = xdap.from_global(rows, type=t, padding=((1, 1),), periodic=(periodic,))
    want = a.local.value
    m = a.distribution.maps[0]
    own = m.owned_local_slice(comm.rank)
    starts, stops = leaf_ranges(a.parts.offsets, np.arange(a.parts.nrows))
    ghost = np.ones(len(a.parts.values), bool)
    for k in range(own.start, own.stop):
        ghost[starts[k]:stops[k]] = False
    a.parts.values[ghost] = -1.0
    if optional:
        mask = a.parts.valid_mask().copy()
        mask[ghost] = True
        a.parts.validity[:] = pack_validity(mask)
    a.exchange_halos()
    got = a.local.value
    refilled = set(range(own.start, own.stop))
    for region in halo_plan(a.distribution).ghost_regions:
        refilled |= set(range(region[0].start, region[0].stop))
    for k, (g, w) in enumerate(zip(got, want)):
        # ghost and owned rows hold the global rows; boundary padding (the
        # edges of a non-periodic array) is no ghost and keeps the -1s
        assert g == (w if k in refilled else [-1.0] * len(w)), (k, g, w)
    assert periodic or comm.size == 1 or len(refilled) > own.stop - own.start


@pytest.mark.mpi(ranks=(2, 3))
def test_ragged_halos_refuse_ghost_rows_of_another_length():
    comm = MPI.COMM_WORLD
    rows = _ragged_rows(3 * comm.size + 3, periodic=False)   # row 0: 1 value, row -2: 2
    a = xdap.from_global(rows, type="var * var * float64", padding=((1, 1),), periodic=(True,))
    with pytest.raises(ValueError, match="ghost row .* holds .* values but the row it copies"):
        a.exchange_halos()


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_per_rank_padding_through_from_global(comm):
    """One (lo, hi) per grid rank, as DAP allows and BlockMap holds, through
    the public constructor (only the uniform form was accepted for a while);
    adjacent widths that differ are the same error on every rank."""
    P = comm.size
    pad = [(k % 2, 1 + (k + 1) % 2) for k in range(P)]
    for k in range(P - 1):                     # neighbours' shared widths agree
        pad[k + 1] = (pad[k][1], pad[k + 1][1])
    g = np.arange(6.0 * P)
    a = xdap.from_global(g, padding=(pad,), comm=comm)
    m = a.distribution.maps[0]
    assert m.padding == tuple(pad)
    a.exchange_halos()
    np.testing.assert_array_equal(a.local_numpy(), g[np.asarray(a.global_indices(0))])
    bad = [(1, 1)] * P
    bad[0] = (0, 2)
    with pytest.raises(ValueError, match="must equal left communication padding"):
        xdap.from_global(g, padding=(bad,), comm=comm)
