"""Kernels whose outputs the module allocates: what ``xdap kernel build``
does where gumath 0.2.0dev3 cannot hold a kernel as the .cfg describes it.

gumath sizes a kernel's outputs from its inputs' shapes, needs at least one
input, and its gufunc crashes when outputs outnumber inputs.  xndtools'
format allows all three: ``output: a`` with no input (``f() -> a``), a
return value beside an argument output on a one-input function, an output
``a(n)`` sized by a scalar input ``n``.  For such a kernel the generated C
takes the outputs as inplace arguments after the inputs (``ins, outs ->
void``) and checks every buffer against the sizes it computes itself, so no
call reads or writes outside its buffers; this function allocates the
outputs (zeroed, or the kernel's initial values), calls it, and returns
them -- one value, a tuple in xndtools' order (argument outputs, then the
return value), or None.

>>> import pathlib, tempfile
>>> from xdap.codegen import build
>>> from xnd import xnd
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "r.h").write_text("long fill(long n, long *a);")
>>> _ = (d / "r.c").write_text('''#include "r.h"
... long fill(long n, long *a) { for (long i = 0; i < n; i++) a[i] = i * i; return n; }''')
>>> _ = (d / "r.cfg").write_text('''
... [MODULE r]
... includes = r.h
... sources = r.c
... ellipses = none
... [KERNEL squares]
... prototypes = long fill(long n, long *a);
... input = n
... output = a(n)
... ''')
>>> import importlib.util
>>> path = build(d / "r.cfg", d)
>>> spec = importlib.util.spec_from_file_location("r", path)
>>> r = importlib.util.module_from_spec(spec); spec.loader.exec_module(r)
>>> a, count = r.squares(xnd(4))
>>> a.value, count.value
([0, 1, 4, 9], 4)
"""
from __future__ import annotations

import ast

import numpy as np
from xnd import xnd

from .operands import operand_dtype

__all__ = ["AllocatingKernel"]


class AllocatingKernel:
    """A built kernel whose outputs are allocated here (see the module
    docstring); ``__gufunc__`` is the registered gumath function, which takes
    the outputs as inplace arguments after the inputs.  Its other attributes
    pass through to it."""

    __slots__ = ("__gufunc__", "__name__", "__dict__")

    def __init__(self, func, name: str, module, spec: dict):
        self.__gufunc__ = func
        self.__name__ = name
        self.__module__ = module
        self.__dict__["spec"] = spec
        self.__doc__ = (f"{name}(*inputs): the gumath kernel {name}; its outputs are "
                        "allocated by the module (xdap.kernels.allocate).\n\n"
                        + (getattr(func, "__doc__", None) or ""))

    def __getattr__(self, name):
        return getattr(self.__gufunc__, name)

    def __call__(self, *args, out=None):
        if out is not None:
            raise TypeError(f"{self.__name__}: this kernel allocates its outputs itself; "
                            "out= is not taken")
        if any(hasattr(type(a), "__xdap_wrap__") for a in args):
            return self._distributed(args)
        return self._local(*args)

    def _local(self, *args):
        xs = [a if type(a) is xnd else _container(a) for a in args]
        variant = _select(self.__name__, self.__dict__["spec"]["variants"], xs)
        outs = [xnd.empty(t) for t in _output_types(self.__name__, variant, xs)]
        if variant["placeholder"]:
            self.__gufunc__(xnd(0, type="uint8"))       # an unused argument: gumath needs one
        else:
            self.__gufunc__(*xs, *outs)
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _distributed(self, args):
        """DistArray operands: gufunc semantics as for any kernel with core
        dims (``xdap.kernels.cores``: loop dims keep their distribution, core
        dims whole; checked on agreed state, no MPI call), each rank's part
        through ``_local``."""
        from . import cores
        from .apply import local_call
        from .signature import parse
        name = self.__name__
        first = next(a for a in args if hasattr(type(a), "__xdap_wrap__"))
        xs = [a.local if hasattr(type(a), "__xdap_wrap__") else _container(a) for a in args]
        variant = _select(name, self.__dict__["spec"]["variants"], xs)
        sig = parse(variant["signature"])
        plan = []

        def check(args, out):
            plan.append(cores.check_core_operands(name, sig, args))
        with local_call(first.distribution.comm, name, args, None, check=check):
            loop, dists = plan[0]
            if dists is None:
                raise TypeError(f"{name}: a kernel whose outputs the module allocates takes "
                                "fixed dimensions, not ragged rows")
            results = cores.core_call(name, self._local, sig, args, loop, dists)
        if results is None:
            return None
        wrapped = tuple(first.__xdap_wrap__(d, p, True) for d, p in results)
        return wrapped[0] if len(wrapped) == 1 else wrapped

    def __repr__(self):
        return f"<xdap kernel {self.__name__} of {self.__module__} (allocates its outputs)>"


def _container(a):
    if isinstance(a, (bool, int, float, complex, np.generic)):
        return xnd(a.item() if isinstance(a, np.generic) else a)
    if isinstance(a, np.ndarray):
        from ..parts import as_container
        return as_container(a)       # zero-copy when C-contiguous; complex too
    raise TypeError(f"expected xnd containers, NumPy arrays or numbers, got {type(a).__name__}")


def _select(name, variants, xs):
    for v in variants:
        if len(v["inputs"]) == len(xs) and all(operand_dtype(x) == i["dtype"] for x, i in zip(xs, v["inputs"])):
            return v
    have = ", ".join(str(x.type) for x in xs) or "no arguments"
    want = "; ".join("(" + ", ".join(i["dtype"] for i in v["inputs"]) + ")" for v in variants)
    raise TypeError(f"{name}: no prototype takes {have} (inputs: {want})")


def _shape(name, x):
    t = x.type
    if str(t).startswith("var"):
        raise TypeError(f"{name}: a kernel whose outputs the module allocates takes fixed "
                        f"dimensions, not {t}")
    return tuple(t.shape)


def _output_types(name, v, xs):
    """The outputs' types: the inputs' loop dims (broadcast), then each
    output's core dims, then its dtype."""
    shapes = [_shape(name, x) for x in xs]
    loops = [s[:len(s) - i["ndim"]] for s, i in zip(shapes, v["inputs"])]
    try:
        loop = tuple(np.broadcast_shapes(*loops)) if loops else ()
    except ValueError:
        raise ValueError(f"{name}: the inputs' outer dimensions {loops} do not broadcast") from None
    values = {}

    def scalar(dn):
        if dn not in values:
            how, what = v["scalars"][dn]
            if how == "value":
                x = xs[what]
                if x.type.ndim != 0:
                    raise ValueError(f"{name}: {dn} sizes an output, so it must be one value, "
                                     f"not {x.type}")
                values[dn] = x.value if x.value is not None else _evaluate(
                    name, v["inputs"][what].get("default") or "0", scalar, length)
            else:
                values[dn] = _evaluate(name, what or "0", scalar, length)
        return values[dn]

    def length(array, axis):
        i = v["arrays"][array]
        s = shapes[i]
        core = s[len(s) - v["inputs"][i]["ndim"]:]
        return len(core) if axis is None else core[axis]

    types = []
    for o in v["outputs"]:
        dims = []
        for d in o["dims"]:
            if d[0] == "n":
                n = d[1]
            elif d[0] == "len":
                s = shapes[d[1]]
                n = s[len(s) - v["inputs"][d[1]]["ndim"] + d[2]]
            else:
                n = scalar(d[1])
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
                raise ValueError(f"{name}: output {o['name']} would have {n!r} items along a "
                                 "dimension (a count >= 0 is needed)")
            dims.append(int(n))
        types.append("".join(f"{n} * " for n in loop + tuple(dims)) + o["dtype"])
    return types


def _evaluate(name, expr, scalar, length):
    """A .cfg expression's value (C arithmetic on integers: / truncates)."""
    src = expr.replace("shape(", "len(")
    try:
        tree = ast.parse(src, mode="eval").body
    except SyntaxError:
        raise ValueError(f"{name}: cannot evaluate {expr!r}") from None

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            return scalar(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            x = ev(node.operand)
            return -x if isinstance(node.op, ast.USub) else x
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.Mod)) and b == 0:
                raise ValueError(f"{name}: {expr!r} divides by zero")
            if isinstance(node.op, ast.Div):
                return int(a / b) if isinstance(a, int) and isinstance(b, int) else a / b
            if isinstance(node.op, ast.Mod):
                return int(np.fmod(a, b)) if isinstance(a, int) and isinstance(b, int) else np.fmod(a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("len", "ndim") and node.args and isinstance(node.args[0], ast.Name):
            axis = node.args[1].value if len(node.args) > 1 else 0
            return length(node.args[0].id, None if node.func.id == "ndim" else axis)
        raise ValueError(f"{name}: cannot evaluate {expr!r}")

    return ev(tree)
