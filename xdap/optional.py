"""Optional dependencies, imported where first used.

xdap's core needs numpy, mpi4py and the xnd stack; the rest comes with
pip's extras (pyproject.toml): ``store`` (zarr), ``hdf5`` (h5py),
``netcdf`` (xarray, h5netcdf), ``mesh`` (meshio, gmsh, pymetis, scipy, with
``store`` and ``hdf5``), ``arrow``, ``awkward``, ``pictures`` (matplotlib). A call
that needs a missing one raises an ``ImportError`` that names the extra to
install, the same on every rank (an environment is the same everywhere), so
it never leaves a rank waiting.

>>> from xdap.optional import need
>>> need("numpy.linalg").__name__
'numpy.linalg'
>>> import sys; sys.modules["pymetis"] = None      # as if it were not installed
>>> need("pymetis")
Traceback (most recent call last):
...
ImportError: pymetis is not installed here: pip install 'xdap[mesh]'
>>> del sys.modules["pymetis"]
"""
from __future__ import annotations

import importlib
import importlib.util

# the top-level module -> the extra of pyproject.toml that brings it
EXTRAS = {
    "zarr": "store",
    "h5py": "hdf5", "meshio": "mesh", "gmsh": "mesh", "pymetis": "mesh", "scipy": "mesh",
    "xarray": "netcdf", "h5netcdf": "netcdf",
    "pyarrow": "arrow",
    "awkward": "awkward",
    "matplotlib": "pictures",
}


def need(module: str):
    """``module`` imported (``"zarr"``, ``"zarr.codecs"``), or an
    ``ImportError`` naming the pip extra that installs it. A module that is
    installed but fails to import raises its own error."""
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        try:
            installed = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            installed = False
        if installed:
            raise
        extra = EXTRAS.get(top)
        hint = f"pip install 'xdap[{extra}]'" if extra else f"pip install {top}"
        raise ImportError(f"{top} is not installed here: {hint}") from error
