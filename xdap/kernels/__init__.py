"""xdap.kernels: gumath kernels applied per rank to DistArrays and containers.

- ``apply(func, *args, out=None)`` runs any gumath callable (our library's,
  a module built with ``xdap kernel build``, or gumath's own) on every
  rank's local container; see ``xdap.kernels.apply``.
- The library, one function per kernel: unary ``fabs absolute negative exp
  exp2 expm1 log log2 log10 log1p sqrt cbrt sin cos tan asin acos atan sinh
  cosh tanh asinh acosh atanh erf erfc lgamma tgamma ceil floor trunc round
  nearbyint``; binary ``add subtract multiply divide power fmod maximum
  minimum copysign atan2 hypot``; comparisons ``equal not_equal less
  less_equal greater greater_equal`` (-> bool). Type rules in docs/kernels.md.

>>> import numpy as np
>>> import xdap.kernels as kernels
>>> from xdap.parts import as_container
>>> a = as_container([[0.0, None], [], [1.0]], type="var * var * ?float64")
>>> kernels.multiply(a, 2.0)
xnd([[0.0, None], [], [2.0]], type='var * var * ?float64')
>>> kernels.sin(np.array([0, 1], dtype=np.int64)).type   # NumPy's promotion: float64
ndt("2 * float64")

xdap.kernels is also what NumPy's ufuncs run on a DistArray (``np.sin(a)``,
``a + 1``: ``DistArray.__array_ufunc__``).
"""
import sys as _sys


def _import_gumath():
    """gumath, without the numba it would pull in.  gumath's ``__init__``
    tries ``from numba.npyufunc import GUVectorize`` for its optional
    ``xndvectorize``; where numba is installed that imports numba, llvmlite
    and scipy on the first kernel call (0.33 s and ~60 MiB a rank, measured).
    xdap never uses ``xndvectorize``, so the import is blocked (a ``None``
    entry in ``sys.modules`` makes it an ImportError, which gumath expects)
    -- unless the program imported numba itself, then nothing changes."""
    if "numba" in _sys.modules:
        import gumath
        return gumath
    _sys.modules["numba"] = None
    try:
        import gumath
    finally:
        del _sys.modules["numba"]
    return gumath


# This environment's libgumath, loaded through its Python package before any
# extension of ours links it. Ours are built in place, so their runpath names
# the environment that built them last (make test MPI=system puts a second
# one beside .venv); loaded first, the library is reused by its soname,
# never a second copy from elsewhere, with tables of its own.
_gumath = _import_gumath()

from .apply import apply
from .library import *  # noqa: F401,F403  (the kernel functions)
from .library import BINARY, COMPARE, UNARY, gufunc

__all__ = ["apply", "gufunc"] + list(UNARY + BINARY + COMPARE)
