"""The NumPy functions beyond the Array API standard that a DistArray
answers through ``__array_function__`` (``np.nanmean(a)``,
``np.histogram(a)``): NumPy's function -> xdap's.  Any other NumPy function
behaves as without the hook (``np.sum(a)`` calls ``a.sum``; one that needs
the values as one NumPy array refuses, naming ``to_numpy``).

>>> import numpy as np
>>> from xdap.api.numpy_functions import NUMPY_FUNCTIONS
>>> NUMPY_FUNCTIONS[np.nanmean].__name__
'nanmean'
"""
from __future__ import annotations

import numpy as np

from . import einsum, nan_functions, numpy_manipulation, numpy_statistics

NUMPY_FUNCTIONS = {**numpy_statistics.NUMPY_FUNCTIONS, **nan_functions.NUMPY_FUNCTIONS,
                   np.pad: numpy_manipulation.pad, np.einsum: einsum.einsum,
                   np.lib.stride_tricks.sliding_window_view:
                       numpy_manipulation.sliding_window_view}
