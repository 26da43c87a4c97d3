"""The kernel library as Python functions: ``sin(x, out=None)``,
``add(x, y, out=None)``, ... (one per gumath function of the compiled
modules ``_unary``, ``_binary`` and ``_compare``, generated at build time
from kernel-configs/*.cfg).

Each function takes DistArrays (collective: the result has the operands'
distribution), xnd containers, NumPy arrays and Python scalars, for fixed,
ragged (``var * var * T``) and optional (``?T``) data; see
``xdap.kernels.apply`` for the rules. Plain xnd containers of matching
dtypes go straight to the compiled fast path.

>>> import numpy as np
>>> from xnd import xnd
>>> from xdap.kernels import sin, add, less
>>> add(xnd([[1.0, None], [2.0]], dtype="?float64"), 1.0)
xnd([[2.0, None], [3.0]], type='var * var * ?float64')
>>> less(np.array([1, 5], dtype=np.int32), 3).value
[True, False]
"""
from __future__ import annotations

from xnd import xnd as _xnd

from ..parts import container
from .. import agreement as _agreement  # debug mode: every call goes through apply's checks
from .signature import parse
from .allocate import AllocatingKernel
from .apply import (_derived, _refuse_non_numeric, _scalar, apply, fast, local_apply,
                    local_call, results_like)

UNARY = ("fabs", "absolute", "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
         "sqrt", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
         "asinh", "acosh", "atanh", "erf", "erfc", "lgamma", "tgamma", "ceil", "floor", "trunc",
         "round", "nearbyint")
BINARY = ("add", "subtract", "multiply", "divide", "power", "fmod", "maximum", "minimum",
          "copysign", "atan2", "hypot")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")

__all__ = list(UNARY + BINARY + COMPARE) + ["gufunc", "ufunc_kernel", "Kernel", "raw",
                                              "wrap_module", "UNARY", "BINARY", "COMPARE"]

# NumPy's names where they differ from the C library's
_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                "acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2", "nearbyint": "rint"}


def ufunc_kernel(ufunc):
    """The name of the library kernel that computes the NumPy ufunc, or None.

    >>> import numpy as np
    >>> ufunc_kernel(np.arcsin), ufunc_kernel(np.true_divide), ufunc_kernel(np.isnan)
    ('asin', 'divide', None)
    """
    table = _ufunc_table()
    return table.get(ufunc)


def _ufunc_table(cache={}):
    if not cache:
        import numpy as np
        for name in UNARY + BINARY + COMPARE:
            f = getattr(np, _NUMPY_NAMES.get(name, name), None)
            if isinstance(f, np.ufunc):
                cache[f] = name
    return cache


def _module(name):
    import importlib
    try:
        return importlib.import_module(f"xdap.kernels.{name}")     # sys.modules keeps it
    except ImportError as e:
        raise ImportError(f"the kernel library xdap.kernels.{name} is not built: run "
                          "`.venv/bin/python setup.py build_ext --inplace` (or `make`)") from e


def gufunc(name: str):
    """The gumath multimethod behind a library function (gumath's own
    dispatch; e.g. ``gufunc("sin")(xnd([1.0]))``)."""
    module = "_unary" if name in UNARY else "_binary" if name in BINARY else "_compare"
    if name not in UNARY + BINARY + COMPARE:
        raise ValueError(f"no library kernel named {name!r}")
    return raw(getattr(_module(module), name))


class Kernel:
    """A function of a kernel module built by ``xdap kernel build``, as a
    first-class xdap kernel: it takes DistArrays (every rank's part, the
    result with the operands' distribution; collective), xnd containers,
    NumPy arrays and Python scalars, with ``out=``, NumPy's promotion and
    the same errors as ``xdap.kernels.sin`` -- through
    ``xdap.kernels.apply``. Called on xnd containers alone it is gumath's
    own call. ``k.__gufunc__`` is the gumath multimethod itself; its other
    attributes pass through.
    """

    __slots__ = ("__gufunc__", "__name__", "__dict__")

    def __init__(self, func, name: str, module=None):
        self.__gufunc__ = func
        self.__name__ = name
        self.__module__ = module
        self.__doc__ = (f"{self.__name__}(*args, out=None): the gumath kernel "
                        f"{self.__name__} applied per rank (xdap.kernels.apply).\n\n"
                        + (getattr(func, "__doc__", None) or ""))

    def __call__(self, *args, out=None):
        if out is None and all(type(a) is _xnd for a in args):
            # containers only: gumath's own dispatch, exactly (kernels over
            # whole dims -- dot, outer -- broadcast and loop as gumath says)
            return self.__gufunc__(*args)
        state = self.__dict__
        if "fast" not in state:
            _bind_kernel(state, self.__gufunc__)
        if state["fast"] is not None and not _agreement._DEBUG:
            # an elementwise kernel: the library functions' own DistArray path
            if len(args) == 2:
                result = _distributed(state["fast"], state["retry"], args[0], args[1], out)
                if result is not None:
                    return result
            elif len(args) == 1 and out is None and hasattr(type(args[0]), "__xdap_wrap__"):
                return _distributed_unary(state, self.__name__, args[0])
        return apply(self.__gufunc__, *args, out=out)

    def __getattr__(self, name):
        return getattr(self.__gufunc__, name)

    def __repr__(self):
        return f"<xdap kernel {self.__name__} of {self.__module__}>"


def raw(func):
    """The gumath multimethod behind ``func`` (a ``Kernel``, an
    ``AllocatingKernel`` or itself)."""
    return func.__gufunc__ if isinstance(func, (Kernel, AllocatingKernel)) else func


def wrap_module(module) -> None:
    """Make a built kernel module's gumath functions ``Kernel`` objects (its
    init calls this; ``module.__gufuncs__`` keeps the raw ones).  A kernel
    whose outputs the module allocates (``__xdap_allocating__``) becomes an
    ``AllocatingKernel``."""
    import json
    allocating = json.loads(getattr(module, "__xdap_allocating__", "{}"))
    raw_funcs = {}
    for name in dir(module):
        f = getattr(module, name)
        if type(f).__name__ == "gufunc":
            raw_funcs[name] = f
            if name in allocating:
                k = AllocatingKernel(f, name, module.__name__, allocating[name])
            else:
                k = Kernel(f, name, module.__name__)
            setattr(module, name, k)
    module.__gufuncs__ = raw_funcs


def _make_unary(name):
    state = {}

    def kernel(x, out=None):
        f = state.get("fast")
        if f is None:
            f = _bind(state, name)
        if type(x) is _xnd:
            try:
                return f(x) if out is None else f(x, out=out)
            except state["retry"]:
                pass
            except ValueError:
                _refuse_non_numeric([x])
                raise
        elif out is None and hasattr(type(x), "__xdap_wrap__"):
            return _distributed_unary(state, name, x)
        return apply(state["gufunc"], x, out=out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = (f"{name}(x, out=None): elementwise {name} (see xdap.kernels).\n\n"
                      "x: DistArray, xnd container, NumPy array. Returns the same kind, with "
                      "x's layout\nand distribution; out= is written in place and returned.")
    return kernel


def _distributed_unary(state, name, x):
    """apply()'s one-DistArray case, minus its argument sorting."""
    p = x.parts
    with local_call(x.distribution.comm, name, (x,)):    # no communication
        c = p.xnd if p.xnd is not None else container(p)
        try:
            result = state["fast"](c)
        except state["retry"]:          # another route, on this rank alone
            result = local_apply(state["gufunc"], [c])
    if type(result) is _xnd:        # the common case: one output
        return _derived(x, x.distribution, p, result)
    return results_like(x, x.distribution, p, result)


def _make_binary(name):
    state = {}

    def kernel(x, y, out=None):
        f = state.get("fast")
        if f is None:
            f = _bind(state, name)
        if type(x) is _xnd and type(y) is _xnd:
            try:
                return f(x, y) if out is None else f(x, y, out=out)
            except state["retry"]:
                pass
            except ValueError:
                _refuse_non_numeric([x, y])
                raise
        elif not _agreement._DEBUG:
            result = _distributed(f, state["retry"], x, y, out)
            if result is not None:
                return result
        return apply(state["gufunc"], x, y, out=out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = (f"{name}(x, y, out=None): elementwise {name} (see xdap.kernels).\n\n"
                      "x, y: DistArrays (one distribution, one type shape), xnd containers, "
                      "NumPy arrays,\nPython scalars (broadcast). Mixed dtypes meet in their "
                      "common exact type.")
    return kernel


_NUMBERS = (int, float)


def _distributed(f, retry, x, y, out):
    """The common DistArray case, straight to the fast path: a fixed (or
    rows-sharing) DistArray with a Python number or a DistArray of the very
    same distribution and layout, ``out=`` None or another such.  Local
    checks only (they read agreed state: no communication); anything else
    -- other operands, dtypes the kernel must be promoted for, views to
    copy -- returns None for ``apply`` to handle, with its errors."""
    tx, ty = type(x), type(y)
    first = y if tx in _NUMBERS else x
    if not hasattr(type(first), "__xdap_wrap__"):
        return None
    d, p = first.distribution, first.parts
    info = p.info
    if not info.numeric:
        return None
    for a in (x, y) if out is None else (x, y, out):
        if type(a) in _NUMBERS or a is first:
            continue
        if not hasattr(type(a), "__xdap_wrap__"):
            return None
        q = a.parts
        if a.distribution is not d or q.info.layout != info.layout or not q.info.numeric or \
                (info.ragged and q.rows is not p.rows_token()):
            return None
    try:
        cx = _scalar(x, info.dtype) if tx in _NUMBERS else \
            (x.parts.xnd if x.parts.xnd is not None else container(x.parts))
        cy = _scalar(y, info.dtype) if ty in _NUMBERS else \
            (y.parts.xnd if y.parts.xnd is not None else container(y.parts))
        if out is None:
            result = f(cx, cy)
            if type(result) is _xnd:
                return _derived(first, d, p, result)
            return results_like(first, d, p, result)
        if not out.parts.values.flags.writeable:
            return None
        f(cx, cy, out=out.parts.xnd if out.parts.xnd is not None else container(out.parts))
        return out
    except retry:
        return None
    except (ValueError, TypeError):
        return None               # apply() says it, the same way on every rank


def _bind(state, name):
    """A library function's first call: its state (``_bind_kernel``) and its
    fast handle (library kernels are elementwise)."""
    _bind_kernel(state, gufunc(name), elementwise=True)
    return state["fast"]


def _bind_kernel(state, func, elementwise=None):
    """A kernel's first call on arrays: fill its ``state`` -- the gumath
    function, its fast handle when every signature is elementwise (None
    otherwise: core dims go through apply), and the fast path's 'take
    another route' exceptions (dtype conversion, non-contiguous views) that
    apply() handles.  Like apply.py, this keeps xdap._apply out of import
    time."""
    from .._apply import NeedsCopy, NoKernel, NotElementwise
    if elementwise is None:
        elementwise = all(parse(k).elementwise for k in func.kernels)
    state["gufunc"] = func
    state["retry"] = (NoKernel, NeedsCopy, NotElementwise)
    state["fast"] = fast(func) if elementwise else None



for _n in UNARY:
    globals()[_n] = _make_unary(_n)
for _n in BINARY + COMPARE:
    globals()[_n] = _make_binary(_n)
del _n
