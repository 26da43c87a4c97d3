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

from .array import DistArray, from_global
from .comm import CartesianPartition, Partition
from .distribution import Distribution, make_distribution
from .protocols.dap import from_distarray
from .protocols.partitioned import from_partitioned
from .protocols.arrow import distarray_from_arrow as from_arrow
from .io import load
from .movement.scatter import Scatter

__all__ = ["Partition", "CartesianPartition", "DistArray", "Distribution", "from_global", "from_distarray", "make_distribution", "load", "Scatter",
           "from_partitioned", "from_arrow",
           "__version__"]
