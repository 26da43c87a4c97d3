"""xdap: typed, distributed scientific arrays.

Each MPI rank holds its partition as an xnd container (fixed, ragged or
optional data); a Distribution maps global to local indices; arrays are
shared with other libraries through the Distributed Array Protocol.

Every public function declares whether it is local (no MPI call) or
collective (its arguments agreed on every rank before anything moves):
``xdap.contract``; they live in ``xdap.api`` by the Array API's categories.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(8.0), dist=("c",), comm=MPI.COMM_SELF)
>>> b = xdap.from_distarray(a.__distarray__(), comm=MPI.COMM_SELF)
>>> b.to_global().value == list(np.arange(8.0))
True
"""
__version__ = "0.1.0"

import importlib

from .array import DistArray
from .api.creation import (arange, copy, empty, empty_like, eye, from_function, from_global,
                           from_local, full, full_like, linspace, meshgrid, ones, ones_like,
                           tril, triu, zeros, zeros_like)
from .api.data_types import astype
from .api.datasets import open_dataset, to_netcdf
from .api.elementwise import clip, imag, real
from .api.exchange import (from_arrow, from_awkward, from_csv, from_distarray, from_hdf5,
                           from_npy, from_partitioned, from_xarray, from_zarr, load, to_global,
                           to_numpy)
from .api.indexing import take, take_along_axis
from .api.linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from .api.numpy_statistics import (bincount, corrcoef, cov, histogram, median, percentile,
                                   quantile)
from .api.nan_functions import (nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean,
                                nanmedian, nanmin, nanpercentile, nanprod, nanquantile, nanstd,
                                nansum, nanvar)
from .api.numpy_manipulation import pad, sliding_window_view
from .api.einsum import einsum
from .api.manipulation import (broadcast_arrays, broadcast_to, concat, expand_dims, flip,
                               moveaxis, permute_dims, repeat, reshape, roll, shift, squeeze,
                               stack, tile, unstack)
from .api.searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where
from .api.sets import unique_all, unique_counts, unique_inverse, unique_values
from .api.sorting import argsort, sort
from .api.statistical import cumulative_prod, cumulative_sum, std, var
from .api.utility import diff
from . import array_api  # noqa: F401 -- a.__array_namespace__() (it registers itself)
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
_SUBMODULES = ("plans", "codegen", "io", "kernels", "movement", "protocols", "api", "contract",
               "random")


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


__all__ = ["DistArray", "Distribution", "make_distribution",
           # creation
           "from_global", "from_local", "empty", "zeros", "ones", "full", "arange", "linspace",
           "eye", "from_function", "empty_like", "zeros_like", "ones_like", "full_like", "copy",
           "tril", "triu", "meshgrid",
           # exchange and the whole array
           "from_distarray", "from_partitioned", "from_arrow", "from_awkward", "load",
           "from_hdf5", "from_zarr", "from_xarray", "from_npy", "from_csv",
           "to_global", "to_numpy", "open_dataset", "to_netcdf",
           # elementwise, data types
           "clip", "real", "imag", "astype",
           # indexing, manipulation
           "take", "take_along_axis", "broadcast_arrays", "broadcast_to", "concat",
           "expand_dims", "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll",
           "shift", "squeeze", "stack", "tile", "unstack",
           # searching, sets, sorting, statistics, utility, linear algebra
           "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
           "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
           "cumulative_prod", "cumulative_sum", "std", "var", "diff", "matmul",
           "matrix_transpose", "tensordot", "vecdot",
           # NumPy's statistics beyond the standard
           "histogram", "bincount", "cov", "corrcoef", "quantile", "percentile", "median",
           "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmin", "nanmax", "nanargmin",
           "nanargmax", "nanmedian", "nanquantile", "nanpercentile", "nancumsum", "nancumprod",
           "pad", "sliding_window_view", "einsum",
           # data movement, partitions, printing and pictures
           "Scatter", "Partition", "CartesianPartition", "print", "plot", "__version__"]
