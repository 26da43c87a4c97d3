"""A fuzzer of DAP 0.10.0 dimension dictionaries with ONE rank's export
mutated, and an independent model of the spec that says what the import
must do.

``examples(P)`` is a hypothesis strategy of ``Example``s for P ranks: a
valid layout (1-d or 2-d; block, irregular block, cyclic, block-cyclic,
unstructured with or without shared indices, undistributed) of a float64
array whose value at each global position is unique, then -- usually -- one
mutation of one rank's dim dict or buffer (a key set to a value of another
type or off by one, deleted or added; indices made float, out of range,
negative, repeated; the buffer cut short).

``model(example)`` follows the spec (docs in ``../shared/seeds``, and
xdap's documented choices where the spec is silent: negative unstructured
indices count from the end, every index must be held, a shared index takes
the lowest holder's value) without importing xdap: either the global array
the dicts describe, or None for "must be refused".

``run(comm, example)`` imports the example's rank-``comm.rank`` dict with
``xdap.from_distarray`` under a watchdog and classifies what happened
against the model.
"""
from __future__ import annotations

import dataclasses
from decimal import Decimal

import numpy as np
from hypothesis import strategies as st

INT_KEYS = ("size", "proc_grid_size", "proc_grid_rank", "start", "stop", "block_size")
REQUIRED = {"b": ("start", "stop"), "c": ("start",), "u": ("indices",)}
COMMON = ("dist_type", "size", "proc_grid_size", "proc_grid_rank")
_INTS = {"b": ("size", "proc_grid_size", "proc_grid_rank", "start", "stop"),
         "c": ("size", "proc_grid_size", "proc_grid_rank", "start", "block_size"),
         "u": ("size", "proc_grid_size", "proc_grid_rank")}


@dataclasses.dataclass
class Example:
    nprocs: int
    dicts: list          # per rank: a tuple of dim dicts
    buffers: list        # per rank: its buffer (float64)
    mutation: str        # what was changed ("none" for a valid layout)

    def __repr__(self):
        return f"Example({self.nprocs} ranks, {self.mutation}, dicts={self.dicts})"


def _c_order(rank, grid):
    out = []
    for g in reversed(grid):
        out.append(rank % g)
        rank //= g
    return tuple(out[::-1])


@st.composite
def _layout(draw, P):
    ndim = draw(st.integers(1, 2))
    kinds = [draw(st.sampled_from("bcun")) for _ in range(ndim)]
    spread = [k for k in range(ndim) if kinds[k] != "n"]
    if not spread:
        kinds[0], spread = "b", [0]
    grid = [1] * ndim
    if len(spread) == 1:
        grid[spread[0]] = P
    else:
        first = draw(st.sampled_from([d for d in range(1, P + 1) if P % d == 0]))
        grid[spread[0]], grid[spread[1]] = first, P // first
    sizes = [draw(st.integers(0, 9)) for _ in range(ndim)]
    index_lists, dim_dicts = [], []
    for k in range(ndim):
        n, g, kind = sizes[k], grid[k], kinds[k]
        lists, dicts = [], []
        if kind in "bn":
            cuts = sorted(draw(st.lists(st.integers(0, n), min_size=g - 1, max_size=g - 1)))
            bounds = [0] + cuts + [n]
            for p in range(g):
                lists.append(list(range(bounds[p], bounds[p + 1])))
                dicts.append({"dist_type": "b", "size": n, "proc_grid_size": g,
                              "proc_grid_rank": p, "start": bounds[p], "stop": bounds[p + 1]})
        elif kind == "c":
            bs = draw(st.integers(1, 3))
            say_bs = bs != 1 or draw(st.booleans())
            for p in range(g):
                lists.append([i for i in range(n) if (i // bs) % g == p])
                d = {"dist_type": "c", "size": n, "proc_grid_size": g, "proc_grid_rank": p,
                     "start": p * bs}
                if say_bs:
                    d["block_size"] = bs
                dicts.append(d)
        else:
            perm = draw(st.permutations(list(range(n))))
            cuts = sorted(draw(st.lists(st.integers(0, n), min_size=g - 1, max_size=g - 1)))
            bounds = [0] + cuts + [n]
            lists = [list(perm[bounds[p]:bounds[p + 1]]) for p in range(g)]
            shared = n > 0 and g > 1 and draw(st.booleans())
            if shared:                       # one index also held by another position
                p, q = draw(st.integers(0, g - 1)), draw(st.integers(0, g - 1))
                extra = [i for i in lists[q] if i not in lists[p]]
                if extra:
                    lists[p] = lists[p] + [extra[0]]
            flag = draw(st.sampled_from([None, "true", "false"]))
            total = sum(len(x) for x in lists)
            for p in range(g):
                d = {"dist_type": "u", "size": n, "proc_grid_size": g, "proc_grid_rank": p,
                     "indices": np.array(lists[p], np.int64)}
                if flag == "true" and total == n:
                    d["one_to_one"] = True
                elif flag == "false":
                    d["one_to_one"] = False
                dicts.append(d)
        index_lists.append(lists)
        dim_dicts.append(dicts)
    whole = np.arange(float(np.prod(sizes, dtype=np.int64))).reshape(sizes) + 0.5
    dicts, buffers = [], []
    for r in range(P):
        c = _c_order(r, grid)
        dicts.append(tuple(dict(dim_dicts[k][c[k]]) for k in range(ndim)))
        buffers.append(whole[np.ix_(*[index_lists[k][c[k]] for k in range(ndim)])].copy())
    return dicts, buffers


def _values(v):
    """Replacement values for an int key currently ``v``."""
    base = v if isinstance(v, int) else 1
    return [base + 1, base - 1, 0, -1, float(base), base + 0.5, True, False, Decimal(base),
            str(base), None, np.int64(base), np.float64(base), [base], np.int32(base + 1)]


@st.composite
def examples(draw, P):
    dicts, buffers = draw(_layout(P))
    if draw(st.integers(0, 6)) == 0:
        return Example(P, dicts, buffers, "none")
    r = draw(st.integers(0, P - 1))
    k = draw(st.integers(0, len(dicts[r]) - 1))
    d = dict(dicts[r][k])
    what = draw(st.sampled_from(["set", "set", "set", "delete", "add", "buffer", "indices",
                                 "dist_type", "one_to_one"]))
    if what == "set":
        key = draw(st.sampled_from([x for x in INT_KEYS if x in d] + ["block_size"]))
        value = draw(st.sampled_from(_values(d.get(key))))
        d[key] = value
        mutation = f"rank {r} dim {k}: {key} = {value!r}"
    elif what == "delete":
        key = draw(st.sampled_from(sorted(d)))
        del d[key]
        mutation = f"rank {r} dim {k}: {key} deleted"
    elif what == "add":
        d["note"] = 1
        mutation = f"rank {r} dim {k}: key 'note' added"
    elif what == "buffer":
        b = buffers[r]
        if b.shape[k] == 0:
            return Example(P, dicts, buffers, "none")
        buffers = list(buffers)
        buffers[r] = np.take(b, range(b.shape[k] - 1), axis=k).copy()
        mutation = f"rank {r}: buffer cut to {buffers[r].shape}"
    elif what == "indices" and d.get("dist_type") == "u":
        idx = np.asarray(d["indices"])
        how = draw(st.sampled_from(["float", "size", "negative", "repeat", "list", "2-d"]))
        if how == "float":
            d["indices"] = idx.astype(np.float64)
        elif how == "size" and len(idx):
            d["indices"] = np.concatenate([idx[:-1], [d["size"]]]).astype(np.int64)
        elif how == "negative" and len(idx):
            d["indices"] = np.concatenate([idx[:-1], [idx[-1] - d["size"]]]).astype(np.int64)
        elif how == "repeat" and len(idx) > 1:
            d["indices"] = np.concatenate([idx[:-1], idx[:1]]).astype(np.int64)
        elif how == "list":
            d["indices"] = [int(i) for i in idx]
        elif how == "2-d":
            d["indices"] = idx.reshape(1, -1)
        mutation = f"rank {r} dim {k}: indices {how}"
    elif what == "dist_type":
        d["dist_type"] = draw(st.sampled_from([x for x in ("b", "c", "u", "n", "x", 1)
                                               if x != d.get("dist_type")]))
        mutation = f"rank {r} dim {k}: dist_type = {d['dist_type']!r}"
    elif what == "one_to_one" and d.get("dist_type") == "u":
        d["one_to_one"] = draw(st.sampled_from([True, False, 1, "yes", np.bool_(True)]))
        mutation = f"rank {r} dim {k}: one_to_one = {d['one_to_one']!r}"
    else:
        return Example(P, dicts, buffers, "none")
    dicts = list(dicts)
    dicts[r] = dicts[r][:k] + (d,) + dicts[r][k + 1:]
    return Example(P, dicts, buffers, mutation)


# -- the model ------------------------------------------------------------------------------

def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _same(x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and \
            x.shape == y.shape and bool((x == y).all())
    if _is_int(x) and _is_int(y):
        return int(x) == int(y)
    return type(x) is type(y) and x == y


def _same_indices(x, y, n) -> bool:
    """Two index lists that say the same (a list and an array may)."""
    a, b = _indices(x, n), _indices(y, n)
    return a is not None and b is not None and bool((a == b).all())


def _indices(v, n):
    """The index list of a 'u' dict as int64 (None: not a valid one)."""
    if isinstance(v, (list, tuple)):
        if not all(_is_int(i) for i in v):
            return None
        a = np.array(v, np.int64).reshape(-1)
    elif isinstance(v, np.ndarray):
        if v.ndim != 1 or (v.size and v.dtype.kind not in "iu"):
            return None
        a = v.astype(np.int64)
    else:
        return None
    return a if len(a) == n else None


def _dim(dicts, lengths):
    """One dimension's dicts (one per grid position) and buffer lengths ->
    the global index of every buffer position, per position; None if invalid."""
    G = len(dicts)
    kind = dicts[0].get("dist_type")
    size = dicts[0]["size"]
    for p, d in enumerate(dicts):
        if d.get("dist_type") != kind or d["size"] != size:
            return None
    if kind == "b":
        out, at = [], 0
        for p, d in enumerate(dicts):
            s, e = d["start"], d["stop"]
            if not (_is_int(s) and _is_int(e)) or s != at or not s <= e <= size or \
                    e - s != lengths[p]:
                return None
            out.append(np.arange(s, e))
            at = e
        return out if at == size else None
    if kind == "c":
        bs = [d.get("block_size", 1) for d in dicts]
        if not all(_is_int(b) and b >= 1 for b in bs) or len(set(int(b) for b in bs)) != 1:
            return None
        bs = int(bs[0])
        out = []
        for p, d in enumerate(dicts):
            mine = np.array([i for i in range(size) if (i // bs) % G == p], np.int64)
            # a rank owning nothing may also say start == size (spec 1.6.4)
            starts = (p * bs, size) if p * bs >= size else (p * bs,)
            if not _is_int(d["start"]) or d["start"] not in starts or len(mine) != lengths[p]:
                return None
            out.append(mine)
        return out
    flags = [d.get("one_to_one", False) for d in dicts]
    if not all(isinstance(f, (bool, np.bool_)) for f in flags) or len(set(map(bool, flags))) != 1:
        return None
    out = []
    for p, d in enumerate(dicts):
        a = _indices(d["indices"], lengths[p])
        if a is None or (a.size and (a.min() < -size or a.max() >= size)):
            return None
        a = np.where(a < 0, a + size, a)
        if len(np.unique(a)) != len(a):
            return None
        out.append(a)
    everything = np.concatenate(out) if out else np.zeros(0, np.int64)
    if len(np.unique(everything)) != size:
        return None
    if bool(flags[0]) and len(everything) != size:
        return None
    return out


def model(ex: Example):
    """The global array the dicts describe, or None: the import must fail."""
    P = ex.nprocs
    ndim = len(ex.dicts[0])
    if any(len(t) != ndim or b.ndim != ndim for t, b in zip(ex.dicts, ex.buffers)):
        return None
    coords = np.zeros((P, ndim), np.int64)
    grid = []
    for k in range(ndim):
        sizes = set()
        for r in range(P):
            d = ex.dicts[r][k]
            if not isinstance(d, dict) or any(key not in d for key in COMMON):
                return None
            if d["dist_type"] not in REQUIRED:
                return None
            if any(key not in d for key in REQUIRED[d["dist_type"]]):
                return None
            if any(key in d and not _is_int(d[key]) for key in _INTS[d["dist_type"]]):
                return None             # (other keys are not this kind's: ignored)
            if d["dist_type"] == "u" and _indices(d["indices"], ex.buffers[r].shape[k]) is None:
                return None             # every rank's own index list is checked
            if d["size"] < 0 or d["proc_grid_size"] < 1 or \
                    not 0 <= d["proc_grid_rank"] < d["proc_grid_size"]:
                return None
            coords[r, k] = d["proc_grid_rank"]
            sizes.add(int(d["proc_grid_size"]))
        if len(sizes) != 1:
            return None
        grid.append(sizes.pop())
    if int(np.prod(grid)) != P or len({tuple(c) for c in coords}) != P:
        return None
    positions = []
    for k in range(ndim):
        at, lengths = [None] * grid[k], [None] * grid[k]
        for r in range(P):
            p = coords[r, k]
            d, n = ex.dicts[r][k], ex.buffers[r].shape[k]
            if at[p] is None:
                at[p], lengths[p] = d, n
            elif at[p].keys() != d.keys() or lengths[p] != n or \
                    not all(_same_indices(at[p][key], d[key], n) if key == "indices" else
                            _same(at[p][key], d[key]) for key in d):
                return None
        got = _dim(at, lengths)
        if got is None:
            return None
        positions.append(got)
    shape = [int(ex.dicts[0][k]["size"]) for k in range(ndim)]
    whole = np.full(shape, np.nan)
    for r in sorted(range(P), reverse=True):      # the lowest holder's value wins
        ix = np.ix_(*[positions[k][coords[r, k]] for k in range(ndim)])
        whole[ix] = ex.buffers[r]
    return whole


# -- running one example -----------------------------------------------------------------------

def run(comm, ex: Example, watchdog) -> str:
    """Import rank ``comm.rank``'s part and compare with the model:
    'accepted' / 'refused' when xdap did what the model says (on every
    rank alike), else a failure class naming what went wrong."""
    import xdap
    want = model(ex)
    d = {"__version__": "0.10.0", "buffer": ex.buffers[comm.rank],
         "dim_data": ex.dicts[comm.rank]}
    got, error = None, None
    with watchdog(60):
        try:
            a = xdap.from_distarray(d, comm=comm)
            got = np.asarray(a.to_global().value, dtype=np.float64).reshape(
                a.global_shape)
        except (ValueError, TypeError) as e:
            error = (type(e).__name__, str(e))
        except Exception as e:                      # a crash: not a clear error
            error = ("crash", f"{type(e).__name__}: {e}")
        seen = comm.allgather(error)
    if any(e is not None and e[0] == "crash" for e in seen):
        return "crash"
    if any(e is not None for e in seen):
        if any(e is None for e in seen) or len(set(seen)) != 1:
            return "different errors per rank"
        return "refused" if want is None else "refused a valid export"
    if want is None:
        return "accepted an invalid export"
    if got.shape != want.shape or not np.array_equal(got, want):
        return "wrong result"
    return "accepted"
