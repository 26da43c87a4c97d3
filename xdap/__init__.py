"""xdap: typed, distributed scientific arrays.

Each MPI rank holds its partition as an xnd container (fixed, ragged or
optional data); a Distribution maps global to local indices; arrays are
shared with other libraries through the Distributed Array Protocol.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(8.0), dist=("c",), comm=MPI.COMM_SELF)
>>> b = xdap.from_distarray(a.__distarray__(), comm=MPI.COMM_SELF)
>>> b.to_global().value == list(np.arange(8.0))
True
"""
__version__ = "0.1.0"

import importlib

from .array import (DistArray, arange, empty, from_arrow, from_awkward, from_distarray,
                    from_function, from_global, from_local, from_partitioned, full, load, zeros)
from .numpy_api import (argmax, argmin, argsort, broadcast_to, clip, concat, cumulative_prod,
                        cumulative_sum, expand_dims, flip, matmul, matrix_transpose, nonzero,
                        permute_dims, reshape, roll,
                        searchsorted, sort, squeeze, stack, std, take, tril, triu, unique_all,
                        unique_counts, unique_inverse, unique_values, var, where)
from .manipulation import (broadcast_arrays, count_nonzero, diff, imag, meshgrid, moveaxis, real,
                           repeat, take_along_axis, tensordot, tile, unstack, vecdot)
from . import array_api  # noqa: F401 -- a.__array_namespace__() (it registers itself)
from .array_api import empty_like, full_like, ones_like, zeros_like
from .partitions import CartesianPartition, Partition
from .distribution import Distribution, make_distribution
from .printing import rank_print as print  # noqa: A001 -- xdap.print: rank by rank
from . import abort as _abort
from . import watch as _watch

# An uncaught exception on one rank aborts the whole job instead of leaving
# the other ranks waiting forever (XDAP_ABORT_ON_ERROR=0: Python's own hook).
_abort.install()
# XDAP_DEBUG_HANGS=<seconds>: a collective some ranks never reach is reported.
if _watch.timeout():
    _watch.start()

# Loaded on first use (PEP 562): pyarrow, the kernel library and the movement
# engine cost ~0.2 s to import, which a job that only distributes and exports
# should not pay.
_LAZY = {
    "Scatter": ("xdap.movement.scatter", "Scatter"),
    "plot": ("xdap.pictures", "plot"),      # matplotlib: imported only to draw
    "RedistributionWarning": ("xdap.kernels.apply", "RedistributionWarning"),
}
_SUBMODULES = ("plans", "codegen", "io", "kernels", "movement", "protocols")


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"xdap.{name}")
    else:
        raise AttributeError(f"module 'xdap' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["DistArray", "Distribution", "from_global", "from_local", "empty", "zeros", "full",
           "empty_like", "zeros_like", "ones_like", "full_like",
           "arange", "from_function", "make_distribution",
           "from_distarray", "from_partitioned", "from_arrow", "from_awkward", "load",
           "sort", "argsort", "unique_values", "cumulative_sum", "cumulative_prod", "argmax", "argmin",
           "nonzero", "broadcast_to", "unique_counts", "unique_inverse", "unique_all",
           "tril", "triu",
           "where", "clip", "var", "std", "matmul", "take", "permute_dims", "matrix_transpose",
           "flip", "expand_dims", "squeeze", "concat", "stack", "roll", "reshape", "searchsorted",
           "broadcast_arrays", "count_nonzero", "diff", "imag", "meshgrid", "moveaxis", "real",
           "repeat", "take_along_axis", "tensordot", "tile", "unstack", "vecdot", "Scatter", "plot", "Partition", "CartesianPartition", "print", "__version__"]
