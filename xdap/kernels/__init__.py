"""xdap.kernels: gumath kernels applied per rank to DistArrays and containers.

``apply(func, *args, out=None)`` runs any gumath callable (our library's,
a module built with ``xdap kernel build``, or gumath's own) elementwise on
every rank's local container; see ``xdap.kernels.apply``.

>>> import numpy as np, gumath
>>> from xdap.kernels import apply
>>> apply(gumath.sin, np.array([0.0])).value
[0.0]
"""
from .apply import apply

__all__ = ["apply"]
