"""The divergence fuzzer's machinery (tests/test_divergence.py runs it).

Every public function of ``xdap``, ``xdap.array_api`` and every DistArray
method is found by enumeration (``surface``).  Its arguments are drawn by
*parameter name* (``PARAMS``): ``x`` is an array really split over the
ranks (irregular and empty blocks, cyclic, 2-D grids, 0-d), ``axis`` an
axis of it, ``shape`` a shape of its size, ``key`` an index of it, and so
on -- so a new function with the usual names is fuzzed without a line
here, and one with a new name fails until its name gets a strategy.

Each example is a call whose arguments every rank draws alike
(hypothesis, derandomized), and one argument changed on one rank: another
draw of the same kind (another axis, key, shape, dtype, array) or a
hostile one (NaN, inf, 2**70, a float for an int, uint64, a string).
``check`` makes the call with the changed argument on that rank only, and
again with each version on every rank (the references), and passes when
each rank saw the same: one error of an allowed class on every rank, or a
result equal to both references.  A hang is the watchdog's: it aborts the
launch and the test fails.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import tempfile
import traceback

import numpy as np
from hypothesis import strategies as st

import xdap
import xdap.agreement
import xdap.array_api as xp
from xdap.arraylike import is_distributed
from xdap.contract import contract_of

ALLOWED = (ValueError, TypeError, IndexError, BufferError)


# ----------------------------------------------------------------------------------
# the surface
# ----------------------------------------------------------------------------------
# DistArray attributes that are Python's machinery or the engines' protocol, not
# functions a user calls
_MACHINERY = {"__init__", "__hash__", "__module__", "__doc__", "__slots__", "__weakref__",
              "__xdap_contract__", "__xdap_wrap__", "__xdap_plain__", "__xdap_leaf_index__", "__annotations__",
              "__dict__",
              "__firstlineno__", "__static_attributes__", "__qualname__",
              # NumPy's dispatch: it forwards to functions fuzzed under their own names
              # (xdap.histogram, ...) or to NumPy's implementation, unchanged
              "__array_function__"}


def surface() -> dict:
    """{label: (owner, name)} of every public function: ``xdap.__all__``,
    ``xdap.array_api.__all__`` (its callables), its ``fft`` and ``linalg``
    extensions' and the DistArray class's own attributes (methods,
    operators, properties)."""
    out = {}
    for name in xdap.__all__:
        if name != "__version__":
            out[f"xdap.{name}"] = (xdap, name)
    for name in xp.__all__:
        obj = getattr(xp, name)
        if callable(obj) and not isinstance(obj, (type, np.dtype)):
            out[f"xp.{name}"] = (xp, name)
    for module in (xp.fft, xp.linalg):           # the extensions
        short = module.__name__.rsplit(".", 1)[-1]
        for name in module.__all__:
            if callable(getattr(module, name)):
                out[f"xp.{short}.{name}"] = (module, name)
    for name in vars(xdap.DistArray):
        if name in _MACHINERY or (name.startswith("_") and not name.endswith("__")):
            continue
        out[f"DistArray.{name}"] = (xdap.DistArray, name)
    return out


def contract(owner, name):
    """The declared contract of ``owner.name`` (a property's getter; a
    class's own), or None; slots are state."""
    obj = inspect.getattr_static(owner, name) if isinstance(owner, type) else \
        getattr(owner, name)
    if type(obj).__name__ == "member_descriptor":
        return "state"
    c = contract_of(obj)
    return None if c is None else c


# ----------------------------------------------------------------------------------
# arrays every rank builds alike
# ----------------------------------------------------------------------------------
DTYPES = ("bool", "int8", "int64", "uint8", "uint64", "float32", "float64", "complex128")
LAYOUTS_1D = ("block", "cyclic", "block-cyclic", "first-empty", "all-on-last", "padded",
              "all-on-first")
LAYOUTS_2D = ("rows", "cols", "grid", "cyclic-rows", "first-empty")


class ArraySpec:
    """An array every rank can build: its global NumPy data from a seed, and
    a layout that really splits it over the ranks (or leaves ranks empty)."""

    def __init__(self, shape, dtype, layout, seed, special=False, optional=False):
        self.shape, self.dtype, self.layout = tuple(shape), dtype, layout
        self.seed, self.special, self.optional = seed, special, optional

    def __repr__(self):
        extra = (" special" if self.special else "") + (" optional" if self.optional else "")
        return f"Array({self.shape}, {self.dtype}, {self.layout}, seed={self.seed}{extra})"

    def key(self):
        return (self.shape, self.dtype, self.layout, self.seed, self.special, self.optional)

    def numpy(self):
        rng = np.random.default_rng(self.seed)
        n = int(np.prod(self.shape, dtype=np.int64))
        dt = np.dtype(self.dtype)
        if dt.kind == "b":
            v = rng.random(n) < 0.5
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            if self.special:
                v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
            else:
                v = rng.integers(max(info.min, -20), min(info.max, 20), n, dtype=dt,
                                 endpoint=True)
        elif dt.kind == "f":
            v = (rng.standard_normal(n) * 10).astype(dt)
            if self.special and n:
                v[rng.integers(0, n, max(1, n // 4))] = rng.choice([np.nan, np.inf, -np.inf])
        else:
            v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
            if self.special and n:
                v[rng.integers(0, n)] = complex(np.nan, 1.0)
        v = v.reshape(self.shape)
        if self.optional:
            return np.ma.MaskedArray(v, mask=rng.random(v.shape) < 0.3)
        return v

    def options(self, P):
        """``from_global``'s layout options on ``P`` ranks."""
        n = self.shape[0] if self.shape else 0
        lay = self.layout
        if not self.shape:
            return {}
        if len(self.shape) == 1:
            if lay == "cyclic":
                return {"dist": ("c",)}
            if lay == "block-cyclic":
                return {"dist": ("c",), "block_size": (2,)}
            if lay == "first-empty":
                sizes = [0] + [n // (P - 1)] * (P - 2) + [n - (n // (P - 1)) * (P - 2)]
                return {"dist": ("b",), "sizes": (sizes,)}
            if lay == "all-on-last":
                return {"dist": ("b",), "sizes": ([0] * (P - 1) + [n],)}
            if lay == "padded" and n >= 2 * P:
                return {"dist": ("b",), "padding": ((1, 1),)}
            if lay == "all-on-first":
                return {"dist": ("b",), "sizes": ([n] + [0] * (P - 1),)}
            return {"dist": ("b",)}
        rest = ("n",) * (len(self.shape) - 2)
        if lay == "cols":
            return {"dist": ("n", "b") + rest}
        if lay == "grid":
            return {"dist": ("b", "c") + rest, "grid": (P, 1) + (1,) * len(rest)
                    if P == 3 else (2, P // 2) + (1,) * len(rest)}
        if lay == "cyclic-rows":
            return {"dist": ("c",) + ("n",) * (len(self.shape) - 1)}
        if lay == "first-empty":
            sizes = [0] + [n // (P - 1)] * (P - 2) + [n - (n // (P - 1)) * (P - 2)]
            return {"dist": ("b",) + ("n",) * (len(self.shape) - 1),
                    "sizes": (sizes,) + (None,) * (len(self.shape) - 1)}
        return {}

    def build(self, comm):
        return xdap.from_global(self.numpy(), comm=comm, **self.options(comm.size))


class Fresh:
    """A value built anew for each call on each rank (an array, or a
    structure holding arrays), from plain specs: every rank makes the same."""

    def __init__(self, make, text):
        self.make, self.text = make, text

    def __repr__(self):
        return self.text


def materialize(v, comm):
    if isinstance(v, ArraySpec):
        return v.build(comm)
    if isinstance(v, Fresh):
        return v.make(comm)
    if isinstance(v, tuple):
        return tuple(materialize(x, comm) for x in v)
    if isinstance(v, list):
        return [materialize(x, comm) for x in v]
    return v


# ----------------------------------------------------------------------------------
# strategies, by parameter name
# ----------------------------------------------------------------------------------
HOSTILE_INTS = [2 ** 70, -2 ** 70, float("nan"), float("inf"), 1.5, True, "1", None,
                np.uint64(2 ** 64 - 1), -1, 0, np.int8(-1), 1e300]
# an operator's other operand: numbers (anything else is Python's NotImplemented,
# decided before xdap runs)
HOSTILE_NUMBERS = [float("nan"), -float("inf"), 2 ** 70, np.uint64(2 ** 64 - 1), 1j, -0.0]
HOSTILE_ANY = [float("nan"), -float("inf"), 2 ** 70, "x", None, (), [1.5], object(),
               np.uint64(2 ** 64 - 1), 1j]


def arrays(data, P, ndim=None, dtype=None, min_size=0):
    """An ArraySpec: 0-d to 3-d, every layout, sizes below and above P."""
    if ndim is None:
        ndim = data.draw(st.sampled_from([0, 1, 1, 1, 2, 2, 3]))
    shape = tuple(data.draw(st.integers(min_size if k == 0 else 1, 2 * P + 3))
                  for k in range(ndim))
    if ndim == 1 and data.draw(st.booleans()):
        shape = (data.draw(st.integers(0, P - 1)),)     # fewer elements than ranks
    dt = dtype or data.draw(st.sampled_from(DTYPES))
    layout = data.draw(st.sampled_from(LAYOUTS_1D if ndim == 1 else LAYOUTS_2D)) \
        if ndim else "scalar"
    special = data.draw(st.integers(0, 4)) == 0
    optional = dt.startswith("float") and data.draw(st.integers(0, 9)) == 0
    return ArraySpec(shape, dt, layout, data.draw(st.integers(0, 2 ** 16)), special, optional)


def _x(ctx):
    return ctx.get("x")


def _ndim(ctx):
    x = _x(ctx)
    return len(x.shape) if isinstance(x, ArraySpec) else 1


def _shape_of(ctx):
    x = _x(ctx)
    return x.shape if isinstance(x, ArraySpec) else (4,)


def s_array(data, ctx, P):
    return arrays(data, P)


def s_like(data, ctx, P):
    """Another array for a binary operation: x's shape mostly (sometimes
    its layout too), else anything."""
    x = _x(ctx)
    choice = data.draw(st.integers(0, 5))
    if isinstance(x, ArraySpec) and choice < 4:
        dt = data.draw(st.sampled_from(DTYPES)) if choice == 0 else x.dtype
        layout = x.layout if choice < 3 else data.draw(st.sampled_from(
            LAYOUTS_1D if len(x.shape) == 1 else LAYOUTS_2D if x.shape else ("scalar",)))
        return ArraySpec(x.shape, dt, layout, data.draw(st.integers(0, 2 ** 16)))
    if choice == 4:
        return data.draw(st.sampled_from([2, 0.5, -1, True, 1j, np.float32(1.5)]))
    return arrays(data, P)


def s_array_list(data, ctx, P):
    x = arrays(data, P, ndim=data.draw(st.integers(1, 2)))
    ctx.setdefault("x", x)
    k = data.draw(st.integers(1, 3))
    return [x] + [s_like(data, {"x": x}, P) if data.draw(st.booleans()) else
                  ArraySpec(x.shape, x.dtype, x.layout, data.draw(st.integers(0, 99)))
                  for _ in range(k - 1)]


def s_axis(data, ctx, P):
    n = _ndim(ctx)
    return data.draw(st.one_of(st.integers(-n, max(n - 1, 0)), st.just(None),
                               st.sampled_from([n, -n - 1, 2.0])))


def s_axes(data, ctx, P):
    n = _ndim(ctx)
    perm = data.draw(st.permutations(list(range(n))))
    return data.draw(st.sampled_from([tuple(perm), tuple(perm[:-1]), 2, (0, 0)]))


def s_int(data, ctx, P):
    return data.draw(st.one_of(st.integers(-3, 6), st.sampled_from([0, 1, 2])))


def s_count(data, ctx, P):
    return data.draw(st.integers(0, 2 * P + 3))


def s_shape(data, ctx, P):
    x = _x(ctx)
    if isinstance(x, ArraySpec) and data.draw(st.booleans()):
        n = int(np.prod(x.shape))
        options = [(n,), (-1,), (1, n), (n, 1), x.shape[::-1], (n // 2, -1) if n % 2 == 0
                   else (-1, n), ()]
        return data.draw(st.sampled_from(options))
    return tuple(data.draw(st.lists(st.integers(0, 2 * P + 2), min_size=0, max_size=3)))


def s_dtype(data, ctx, P):
    return data.draw(st.sampled_from([None, np.float64, np.int32, "float32", np.dtype("int64"),
                                      np.bool_, np.complex128, np.uint8]))


def s_flag(data, ctx, P):
    return data.draw(st.booleans())


def s_real(data, ctx, P):
    return data.draw(st.one_of(st.integers(-3, 5), st.floats(-10, 10, allow_nan=False),
                               st.sampled_from([0.0, 1.0])))


def s_scalar(data, ctx, P):
    return data.draw(st.one_of(st.integers(-5, 300), st.floats(-5, 5, allow_nan=False),
                               st.booleans(), st.sampled_from([np.int8(3), np.float32(2.5),
                                                               np.uint64(7)])))


def s_bound(data, ctx, P):
    kind = data.draw(st.integers(0, 4))
    if kind == 4:
        return s_like(data, ctx, P)
    return data.draw(st.one_of(st.none(), st.integers(-5, 300), st.floats(-3, 3)))


def choice(*options):
    def draw(data, ctx, P):
        return data.draw(st.sampled_from(list(options)))
    return draw


def s_key(data, ctx, P):
    """An index of x: ints, slices (negative steps), ..., None, masks,
    integer arrays, a field name."""
    shape = _shape_of(ctx)
    n0 = shape[0] if shape else 1

    def one(n):
        return data.draw(st.one_of(
            st.integers(-n - 1, n),
            st.builds(slice, st.one_of(st.none(), st.integers(-n - 1, n + 1)),
                      st.one_of(st.none(), st.integers(-n - 1, n + 1)),
                      st.one_of(st.none(), st.sampled_from([1, 2, -1, -2, 3]))),
            st.just(Ellipsis), st.just(None)))
    kind = data.draw(st.integers(0, 9))
    if kind < 5:
        return tuple(one(n) for n in shape[:data.draw(st.integers(0, max(len(shape), 1)))]) \
            if kind < 3 else one(n0)
    if kind == 5:
        return data.draw(st.lists(st.integers(-n0, n0), max_size=4))
    if kind == 6:
        x = _x(ctx)
        if isinstance(x, ArraySpec):
            return Fresh(lambda comm, x=x: x.build(comm) > 0, f"({x!r} > 0)")
        return True
    if kind == 7:
        x = _x(ctx)
        if isinstance(x, ArraySpec) and x.shape:
            return np.random.default_rng(data.draw(st.integers(0, 99))).random(x.shape) < 0.5
        return np.ones(3, bool)
    if kind == 8:
        return data.draw(st.sampled_from(["x", 1.5, "pos"]))
    return data.draw(st.sampled_from([(0, [0, 1]), ([0], Ellipsis), (slice(None), [1])]))


def s_value(data, ctx, P):
    kind = data.draw(st.integers(0, 3))
    if kind < 2:
        return s_scalar(data, ctx, P)
    if kind == 2:
        return np.arange(data.draw(st.integers(0, 4)), dtype=data.draw(st.sampled_from(
            ["float64", "int8", "complex128"])))
    return arrays(data, P, ndim=data.draw(st.integers(0, 1)))


def s_indices(data, ctx, P):
    shape = _shape_of(ctx)
    n = shape[0] if shape else 1
    if data.draw(st.booleans()):
        return data.draw(st.lists(st.integers(-n, n), max_size=6))
    spec = arrays(data, P, ndim=1, dtype="int64")
    return Fresh(lambda comm, s=spec, n=n: xdap.from_global(
        (np.abs(s.numpy().astype(np.int64)) % max(n, 1)) - (n if n else 0) * (s.seed % 2),
        comm=comm, **s.options(comm.size)), f"indices{spec!r}")


def s_comm(data, ctx, P):
    return data.draw(st.sampled_from([None, "world"]))


def s_none(data, ctx, P):
    return None


def s_data(data, ctx, P):
    spec = arrays(data, P)
    return Fresh(lambda comm, s=spec: s.numpy(), f"numpy{spec!r}")


def s_function(data, ctx, P):
    return data.draw(st.sampled_from([lambda *i: sum(i), lambda *i: 1.0 / (1 + sum(i))]))


_FUZZ_DIR = os.path.join(tempfile.gettempdir(), "xdap-divergence-fuzz")


def s_path(data, ctx, P):
    """A path every rank names alike without talking (a collective here,
    skipped by the rank whose path is changed, would hang the fuzzer)."""
    return os.path.join(_FUZZ_DIR, f"a{data.draw(st.integers(0, 3))}.xdap")


def s_dataarray(data, ctx, P):
    """A variable each rank builds alike (xarray, in memory): numbers in
    1 or 2 dims, strings, a Dataset, or not xarray at all."""
    import xarray
    kind = data.draw(st.sampled_from(["1d", "2d", "strings", "dataset", "numpy"]))
    n = data.draw(st.integers(0, 5))
    if kind == "1d":
        return xarray.DataArray(np.arange(n, dtype=np.float64), dims=("t",), name="v")
    if kind == "2d":
        return xarray.DataArray(np.ones((n, 2), np.int32), dims=("t", "x"),
                                coords={"x": [1.0, 2.0]}, name="w")
    if kind == "strings":
        return xarray.DataArray(np.array(["a"] * n), dims=("t",))
    if kind == "dataset":
        return xarray.Dataset({"v": (("t",), np.zeros(n))})
    return np.arange(n)


def s_dataset(data, ctx, P):
    """A Dataset each rank builds alike around a DistArray (to_netcdf's
    input), or one with NumPy data only, or not xarray at all."""
    import xarray
    spec = arrays(data, P)
    kind = data.draw(st.sampled_from(["distributed", "numpy", "other"]))

    def make(comm, spec=spec, kind=kind):
        if kind == "other":
            return spec.numpy()
        a = spec.build(comm) if kind == "distributed" else spec.numpy()
        dims = tuple(f"d{k}" for k in range(np.ndim(spec.numpy())))
        return xarray.Dataset({"v": (dims, a)})
    return Fresh(make, f"Dataset[{kind}]({spec!r})")


def s_dist(data, ctx, P):
    return data.draw(st.sampled_from([None, ("b",), ("c",), ("n",), "b", ("u",), ("b", "c"),
                                      ("x",)]))


def s_grid(data, ctx, P):
    return data.draw(st.sampled_from([None, (P,), (1, P), (P, 1)]))


def s_ufunc(data, ctx, P):
    return data.draw(st.sampled_from([np.sin, np.add, np.isnan, np.floor_divide, np.divmod,
                                      np.maximum]))


def s_inputs(data, ctx, P):
    return [ctx.get("x") or arrays(data, P), s_like(data, ctx, P)]


def s_distribution(data, ctx, P):
    spec = arrays(data, P, ndim=1)
    ctx["built"] = spec
    return Fresh(lambda comm, s=spec: s.build(comm).distribution, f"distribution{spec!r}")


def s_local(data, ctx, P):
    spec = ctx.get("built")
    if spec is not None:                     # DistArray(distribution, local)
        return Fresh(lambda comm, s=spec: s.build(comm).local, f"local{spec!r}")
    n = data.draw(st.integers(0, 3))         # from_local: each rank's own piece
    dt = data.draw(st.sampled_from(["float64", "int32"]))
    return Fresh(lambda comm, n=n, dt=dt: np.arange(n + comm.rank % 2, dtype=dt),
                 f"piece({n}, {dt})")


def s_unstructured(data, ctx, P):
    return data.draw(st.sampled_from([None, [0, 1], np.array([True]), 3]))


def s_arrow(data, ctx, P):
    """Each rank's own Arrow array of rows (from_arrow, from_awkward)."""
    n = data.draw(st.integers(0, 3))
    return Fresh(lambda comm, n=n: __import__("pyarrow").array(
        [[float(comm.rank)] * (k % 3) for k in range(n + comm.rank % 2)],
        __import__("pyarrow").list_(__import__("pyarrow").float64())), f"arrow rows({n})")


def s_dest(data, ctx, P):
    """Each rank's destinations, one per local row of x."""
    shift = data.draw(st.integers(0, P))
    return Fresh(lambda comm, shift=shift, x=ctx.get("x"): (
        np.arange(x.build(comm).distribution.local_shape[0] if isinstance(x, ArraySpec) and
                  x.shape else 0) + shift) % comm.size, f"dest(+{shift})")


def s_needed(data, ctx, P):
    shape = _shape_of(ctx)
    n = shape[0] if shape else 1
    return data.draw(st.lists(st.integers(-1, n), max_size=5))


PARAMS = {
    # arrays
    "x": s_array, "x1": s_array, "a": s_array, "self": s_array, "condition": s_like,
    "x2": s_like, "other": s_like, "arrays": s_array_list, "repeats": s_indices,
    "sorter": s_indices, "indices": s_indices, "prepend": s_like, "append": s_like,
    "obj": s_data, "data": s_data, "arrays_and_dtypes": s_array_list,
    # axes, shapes, numbers
    "axis": s_axis, "source": s_axis, "destination": s_axis, "dim": s_axis, "axes": s_axes,
    "k": s_int, "n": s_int, "shift": s_int, "n_rows": s_count, "n_cols": s_count,
    "num": s_count, "root": s_int, "max_cells": s_count, "shape": s_shape,
    "repetitions": s_shape, "correction": s_real, "start": s_real, "stop": s_real,
    "step": s_real, "fill_value": s_scalar, "min": s_bound, "max": s_bound,
    # types, flags, choices
    "dtype": s_dtype, "type": s_dtype, "from_": s_dtype, "to": s_dtype,
    "keepdims": s_flag, "descending": s_flag, "stable": s_flag, "copy": s_flag,
    "endpoint": s_flag, "include_initial": s_flag, "clear": s_flag,
    "side": choice("left", "right", "middle"), "indexing": choice("xy", "ij", "yx"),
    "method": choice("auto", "packed", "datatypes", "linear", "lower", "nearest"),
    "mode": choice("add", "replace", "reduced", "complete"),
    "dialect": choice("spec", "heat"), "version": choice("0.10.0", "0.9.0"),
    "kind": choice("integral", "real floating", "bool"), "device": choice(None, "cpu"),
    "api_version": choice(None, "2024.12"), "sep": choice(" ", ","), "end": choice("\n"),
    "spec": choice("", ".3"),
    # indexing
    "key": s_key, "value": s_value,
    # where things live
    "comm": s_comm, "dist": s_dist, "grid": s_grid, "path": s_path, "f": s_function,
    # not drawn: per-rank by design, or outside Python's values
    "stream": s_none, "max_version": s_none, "dl_device": s_none, "file": s_none,
    "ax": s_none, "points": s_none, "polygons": s_none, "outline": s_none, "title": s_none,
    "objects": s_none,
    # NumPy's protocol, constructors
    "ufunc": s_ufunc, "inputs": s_inputs, "distribution": s_distribution, "local": s_local,
    "size": s_count, "owned": s_unstructured, "one_to_one": s_unstructured,
    "a_or_distribution": s_array, "needed": s_needed, "owners": s_none, "periodic": s_flag,
    "maps": s_none, "rank_coords": s_none, "global_shape": s_shape, "block_size": s_none,
    "padding": s_none, "sizes": s_none, "arr": s_arrow, "dest": s_dest,
    "name": choice("x", "pos", "nope", 3), "out": s_none,
    # NumPy's statistics beyond the standard (xdap.api.numpy_statistics)
    "bins": choice(10, 3, 1, [0.0, 0.5, 2.0], 0, "auto", 2.5, [1.0, 0.0]),
    "range": choice(None, (0.0, 1.0), (-2, 5), (3, 1), (0.0, float("nan"))),
    "density": choice(None, True, False), "weights": s_like, "minlength": s_count,
    "m": s_array, "y": s_bound, "rowvar": s_flag, "bias": s_flag,
    "ddof": choice(None, 0, 1, 2), "fweights": s_bound, "aweights": s_bound,
    "q": choice(0.5, [0.1, 0.9], 0, 1.0, 50, -0.1, "x", [[0.5]]), "overwrite_input": s_flag,
    "dataset": choice("u", "/results/u", "", 3, None),
    "chunks": choice(None, (2,), (3, 2), (0,), 2), "path_or_array": s_path,
    "dims": choice(None, ("y",), ("y", "x"), "x", (1,)),
    "header_lines": choice(0, 1, -1, 2.0), "dataarray": s_dataarray,
    # the fft and linalg extensions
    "norm": choice("backward", "ortho", "forward", "none"),
    "layout": choice("input", "transposed", "x"),
    "s": choice(None, (2,), (3, 2), (0,), (-1,), "x"), "d": choice(1.0, 0.5, 2, "x"),
    "upper": s_flag, "full_matrices": s_flag, "rtol": choice(None, 1e-3, 0.5, "x", True),
    "offset": choice(0, 1, -1, 2.5), "ord": choice(2, 1, -1, "fro", "nuc", float("inf"), 0, "x"),
    # NumPy's functions beyond the standard that xarray calls (pad, einsum, windows)
    "array": s_array, "pad_width": choice(0, 1, (1, 2), ((1, 0),), ((0, 2), (1, 1)), -1, "x", 2.5),
    "window_shape": choice(1, 2, (2,), (1, 1), 0, -1, "x"), "subok": s_flag,
    "writeable": s_flag, "operands": s_array_list, "optimize": choice(False, True, "greedy", "x"),
    "subscripts": choice("i->", "i->i", "ij->ji", "ij,j->i", "...->...", "i,i->", "ii->", "x"),
    "memo": s_none,
    # xarray datasets (xdap.open_dataset, xdap.to_netcdf)
    "engine": choice(None, "h5netcdf", "zarr", "nope", 3),
    "drop_variables": choice(None, "v", ["v", "w"], [3]), "ds": s_dataset,
}


def mutate(data, name, value, ctx, P, receiver=False):
    """Another value for ``name``: a different draw, or a hostile one.  A
    method's receiver is another array (anything else never reaches xdap:
    Python itself refuses ``nan.sum()`` on that rank alone)."""
    draw = PARAMS[name]
    if receiver:
        for _ in range(6):
            other = arrays(data, P)
            if _differs(other, value):
                return other
        return arrays(data, P, ndim=4)
    if data.draw(st.integers(0, 3)) == 0:
        return data.draw(st.sampled_from(HOSTILE_INTS if draw in (s_int, s_count, s_axis)
                                         else HOSTILE_NUMBERS if name == "other"
                                         else HOSTILE_ANY))
    for _ in range(6):
        other = draw(data, dict(ctx), P)
        if _differs(other, value):
            return other
    return data.draw(st.sampled_from(HOSTILE_ANY))


def _differs(a, b) -> bool:
    """Whether ``a`` is another argument than ``b`` as the ranks can tell:
    arrays of one shape, type and layout but other values cannot be told
    apart (their data is distributed; documented in xdap.contract.describe),
    so another array differs in one of those."""
    if isinstance(a, ArraySpec) and isinstance(b, ArraySpec):
        return (a.shape, a.dtype, a.layout, a.optional) != (b.shape, b.dtype, b.layout,
                                                            b.optional)
    if isinstance(a, Fresh) and isinstance(b, Fresh):
        return a.text.split("seed=")[0] != b.text.split("seed=")[0]
    try:
        return repr(a) != repr(b)
    except Exception:
        return True


# ----------------------------------------------------------------------------------
# one call, its outcome, what ranks compare
# ----------------------------------------------------------------------------------
class Call:
    """How to call one surface entry with drawn arguments."""

    def __init__(self, label, owner, name):
        self.label, self.owner, self.name = label, owner, name
        obj = inspect.getattr_static(owner, name) if isinstance(owner, type) else \
            getattr(owner, name)
        self.prop = isinstance(obj, property)
        self.is_class = isinstance(obj, type)
        fn = obj.fget if self.prop else obj.__init__ if self.is_class else obj
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            params = []
        if self.is_class:
            params = params[1:]                       # self
        self.method = owner is xdap.DistArray and not self.is_class
        self.params = params

    def draw(self, data, P):
        """The arguments: ``[(name, value, how)]`` with ``how`` "pos",
        "var" (one of ``*args``) or "kw" -- the first parameter (the array,
        a method's receiver) positional, the rest by keyword where they can
        be; an optional positional parameter left out leaves out the ones
        after it."""
        ctx, out = {}, []
        positional = True
        for k, p in enumerate(self.params):
            if p.kind == p.VAR_KEYWORD:
                continue
            name = p.name
            if name not in PARAMS:
                raise KeyError(f"no strategy for parameter {name!r} of {self.label}: add one "
                               "to tests/divergence.py PARAMS")
            required = p.default is p.empty and p.kind != p.VAR_POSITIONAL
            if p.kind == p.POSITIONAL_ONLY and not positional:
                continue
            if not required and not data.draw(st.booleans()):
                if p.kind == p.POSITIONAL_ONLY:
                    positional = False
                continue
            v = PARAMS[name](data, ctx, P)
            if k == 0 and isinstance(v, ArraySpec):
                ctx["x"] = v
            if p.kind == p.VAR_POSITIONAL:
                out += [(name, x, "var") for x in (v if isinstance(v, list) else [v])]
            elif p.kind == p.POSITIONAL_ONLY or (k == 0 and positional):
                out.append((name, v, "pos"))
            else:
                out.append((name, v, "kw"))
        return out, ctx

    def prepare(self, comm, drawn):
        """The arguments, built (arrays: collective, before the call)."""
        args, kwargs = [], {}
        for name, v, how in drawn:
            v = materialize(v, comm)
            if name == "comm" and isinstance(v, str) and v == "world":
                v = comm
            if how == "kw":
                kwargs[name] = v
            else:
                args.append(v)
        return args, kwargs

    def __call__(self, args, kwargs):
        if self.prop:
            return args[0], getattr(args[0], self.name)
        if self.method:
            receiver = args[0]
            result = getattr(receiver, self.name)(*args[1:], **kwargs)
        else:
            receiver = args[0] if args else None
            result = getattr(self.owner, self.name)(*args, **kwargs)
        if inspect.isgenerator(result):         # __iter__: its steps are the calls
            result = list(result)
        return receiver, result


def attempt(call, prepared, votes=None, flush=None):
    """``("ok", receiver, result)`` or ``("error", class name, message)``.

    ``flush``: the communicator whose ledger (``xdap.ledger``) a collective
    then carries, outside debug mode -- a call that moved nothing on some
    ranks and diverged (a view, a local check that failed on one rank) must
    be one error on every rank there; a call that raised an agreed error
    already met the others and makes no second vote."""
    try:
        if votes is None:
            receiver, result = call(*prepared)
        else:
            with votes:
                receiver, result = call(*prepared)
        got = ("ok", receiver, result)
    except ALLOWED as e:
        if getattr(e, "xdap_agreed", None) is not None:
            flush = None
        got = ("error", type(e).__name__, str(e))
    except Exception as e:
        return ("crash", type(e).__name__, f"{e}\n{traceback.format_exc()}")
    if flush is not None:
        try:
            xdap.agreement.agree(flush, None)      # the next collective: it carries the ledger
        except ALLOWED as e:
            return ("error", type(e).__name__, str(e))
        except Exception as e:
            return ("crash", type(e).__name__, f"{e}\n{traceback.format_exc()}")
    return got


def shape_of(v):
    """What every rank must agree on about a result, without moving data:
    DistArrays by distribution and type, NumPy values by their bytes."""
    if is_distributed(v):
        d = v.distribution
        return ("DistArray", d.fingerprint().hex(), d.global_shape, str(v.type))
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(shape_of(x) for x in v)
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, hashlib.sha1(
            np.ascontiguousarray(v).view(np.uint8) if v.size and not v.dtype.hasobject
            else repr(v.tolist()).encode()).hexdigest())
    if isinstance(v, (np.generic, int, float, complex, bool, str, bytes, type(None))):
        return ("value", type(v).__name__, repr(v))
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    return ("object", type(v).__name__)


def content(v):
    """The global content of a result (collective for DistArrays: called
    only once every rank agreed on ``shape_of``)."""
    if is_distributed(v):
        return ("DistArray", repr(v.to_global().value))
    if isinstance(v, (tuple, list)):
        return tuple(content(x) for x in v)
    return shape_of(v)


def outcome_of(comm, call, prepared, debug, votes=None):
    """One call on every rank (each with its own arguments): what it gave,
    as every rank can compare it -- errors by class and message, results by
    their global content (gathered only when every rank returned a result
    of one shape)."""
    before = xdap.agreement.set_debug(debug)
    try:
        got = attempt(call, prepared, votes, None if debug else comm)
    finally:
        xdap.agreement.set_debug(before)
    if got[0] != "ok":
        local = got
    else:
        local = ("ok", shape_of(got[2]), shape_of(got[1]) if is_distributed(got[1]) else None)
    everyone = comm.allgather(local)
    if got[0] == "ok" and _alike(everyone) and not any(o[1] == _NONE for o in everyone
                                                        if o[0] == "ok"):
        local = ("ok", content(got[2]), content(got[1]) if is_distributed(got[1]) else None)
    return local, everyone


class _Votes:
    """Counts the agreements that vote (more than one rank) while it is on."""
    count = 0

    def __enter__(self):
        self._finish = xdap.agreement.Agreement.finish
        votes = self

        def finish(ag, error=None):
            if ag.comm.size > 1:
                votes.count += 1
            return votes._finish(ag, error)
        xdap.agreement.Agreement.finish = finish
        return self

    def __exit__(self, *exc):
        xdap.agreement.Agreement.finish = self._finish
        return False


def _arrays_in(drawn) -> int:
    return sum(isinstance(v, (ArraySpec, Fresh)) or (isinstance(v, list) and any(
        isinstance(x, (ArraySpec, Fresh)) for x in v)) for _, v, _ in drawn)


OUTCOMES: dict = {}          # outcome class -> examples (what test_divergence reports)


def verdict(comm, label, kind, call, a, b, odd, debug):
    """The problem with one example (None: none): ``a`` the arguments every
    rank draws, ``b`` the changed ones rank ``odd`` passes; ``debug``:
    whether the calls run in debug mode (where every call votes; outside
    it, a local call -- or a view -- is written in the ledger, and the next
    collective must raise one error everywhere where the ranks diverged)."""
    problems = []
    if kind == "local" and _arrays_in(a) <= 1:
        # declared local: outside debug mode it must not vote (with one array
        # there is nothing to align, so nothing may communicate)
        votes = _Votes()
        outcome_of(comm, call, call.prepare(comm, a), False, votes)
        if votes.count:
            problems.append(f"declared local, but it voted {votes.count} time(s) outside "
                            "debug mode")
    # first the call as drawn, the same on every rank: one outcome everywhere
    ref_a, ref_all = outcome_of(comm, call, call.prepare(comm, a), debug)
    problems += _consistent(ref_all, "with the same arguments on every rank")
    key = "drawn: an error alike" if ref_all[0][0] != "ok" else "drawn: a value"
    OUTCOMES[key] = OUTCOMES.get(key, 0) + 1
    # every rank builds both versions' arrays (building is collective), then
    # passes its own: the changed one on rank odd
    both = call.prepare(comm, a), call.prepare(comm, b)
    div, div_all = outcome_of(comm, call, both[comm.rank == odd], debug)
    crashes = [o for o in div_all if o[0] == "crash"]
    if crashes:
        problems.append(f"a raw {crashes[0][1]}: {crashes[0][2]}")
    elif any(o[0] == "error" for o in div_all):
        if not all(o == div_all[0] for o in div_all):
            problems.append(f"not one error on every rank: {div_all}")
        elif "internal error" in div_all[0][2]:
            problems.append(f"an internal error: {div_all[0][2]}")
    else:
        if not _alike(div_all):
            problems.append(f"different results per rank: {div_all}")
        elif _root_only(a, b, odd):
            # MPI's rule: where a root is named, only the root's data counts
            if div != ref_a:
                problems.append("the root's data did not decide: " + _short(div) +
                                "; the root's call gave " + _short(ref_a))
        else:
            ref_b, _ = outcome_of(comm, call, call.prepare(comm, b), debug)
            # where the versions differ on rank odd alone -- the root's data
            # with the root odd, an array whose other pieces are alike (empty)
            # -- every rank called the changed version: its result it is;
            # where they are alike on rank odd (its piece empty in both), every
            # rank called the drawn one
            alike = comm.allgather(_alike_here(*both))
            odd_alone = _root_only(a, b, odd, root_is_odd=True) or \
                all(same for r, same in enumerate(alike) if r != odd)
            if odd_alone and div == ref_b or alike[odd] and div == ref_a:
                pass
            elif not (div == ref_a == ref_b):
                problems.append("a result with no error, equal to neither call's: changed "
                                "argument gave " + _short(ref_b) + "; unchanged " +
                                _short(ref_a) + "; one rank changed " + _short(div))
    if not problems:
        kind_of = "changed: an error alike" if div_all[0][0] == "error" else \
            "changed: the same value"
        OUTCOMES[kind_of] = OUTCOMES.get(kind_of, 0) + 1
    mine_ok = not problems
    agreed = comm.allgather(mine_ok)
    if all(agreed):
        return None
    first = agreed.index(False)
    return comm.bcast(problems[0] if comm.rank == first else None, root=first)


# parameters only the root's value of counts, where a ``root`` is named
# (``from_global(data, root=0)``: the others' data is ignored, as in MPI_Scatter)
ROOT_ONLY = {"data"}


def _alike_here(a, b) -> bool:
    """Whether two built versions of the arguments are the same on this
    rank: a DistArray its distribution, type and local values (fixed data;
    other data counts as different), anything else by equality."""
    (aa, ak), (ba, bk) = a, b
    if len(aa) != len(ba) or set(ak) != set(bk):
        return False

    def same(x, y):
        if is_distributed(x) or is_distributed(y):
            if not (is_distributed(x) and is_distributed(y)) or x.parts.info.ragged or \
                    y.parts.info.ragged or x.parts.validity is not None or \
                    y.parts.validity is not None:
                return False
            return x.distribution == y.distribution and str(x.type) == str(y.type) and \
                np.array_equal(x.parts.values, y.parts.values)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            return type(x) is type(y) and x.dtype == y.dtype and np.array_equal(x, y)
        try:
            return type(x) is type(y) and bool(x == y)
        except Exception:       # noqa: BLE001 -- incomparable: different
            return False
    return all(same(x, y) for x, y in zip(aa, ba)) and all(same(ak[k], bk[k]) for k in ak)


def _root_only(a, b, odd, root_is_odd=False) -> bool:
    """Whether the argument changed on rank ``odd`` is one it does not
    contribute: a ROOT_ONLY parameter, with a root named that is not it
    (``root_is_odd``: that is it -- its data alone counts)."""
    root = dict((n, v) for n, v, _ in a).get("root")
    changed = [n for (n, v, _), (_, w, _) in zip(a, b) if v is not w]
    return isinstance(root, int) and (root == odd) == root_is_odd and bool(changed) and \
        set(changed) <= ROOT_ONLY


_NONE = ("value", "NoneType", "None")


def _alike(everyone) -> bool:
    """Whether the ranks' outcomes are one: the same error, or results of
    one shape -- where some ranks' result is None and the others' a value
    (``to_numpy(root=0)``, ``plot``: the root's alone), the values agree."""
    if all(o == everyone[0] for o in everyone):
        return True
    if any(o[0] != "ok" for o in everyone):
        return False
    values = {o[1] for o in everyone if o[1] != _NONE}
    return len(values) <= 1 and len({o[2] for o in everyone}) == 1


def _consistent(everyone, how) -> list:
    """Problems of one call's outcomes on every rank: a crash, an internal
    error, errors or results that differ between ranks."""
    crashes = [o for o in everyone if o[0] == "crash"]
    if crashes:
        return [f"{how}: a raw {crashes[0][1]}: {crashes[0][2]}"]
    if not _alike(everyone):
        return [f"{how}: the ranks differ: {_short(everyone)}"]
    if everyone[0][0] == "error" and "internal error" in everyone[0][2]:
        return [f"{how}: an internal error: {everyone[0][2]}"]
    return []


def _short(o, n=300):
    text = repr(o)
    return text if len(text) <= n else text[:n] + "..."
