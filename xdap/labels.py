"""What a labelled variable (xarray, NetCDF) says about its array besides
the values: its name, its dimensions' names, its coordinates and its
attributes -- kept with a DistArray as metadata (``a.labels``).

A coordinate that runs along the first dimension is as long as the data
is tall, so it is distributed as the data's rows are (a 1-d DistArray in
row blocks: rule 1, nothing of size N on one rank); every other coordinate
is small -- one axis of a grid -- and every rank holds it whole (NumPy).

Labels ride along; they do not steer: operations on a labelled array give
plain arrays (as NumPy's do), and ``to_zarr`` / ``to_hdf5`` write the
dimension names when none are given.

>>> import numpy as np
>>> lab = Labels("t", ("time", "x"), {"x": Coordinate(("x",), np.arange(3.0))}, {"units": "K"})
>>> lab.dims, lab.coords["x"].values.tolist(), lab.attrs["units"]
(('time', 'x'), [0.0, 1.0, 2.0], 'K')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Labels", "Coordinate"]


@dataclass(frozen=True)
class Coordinate:
    """One coordinate variable: the dimensions it runs along, its values
    (a DistArray in row blocks when it runs along the first dimension, else
    NumPy on every rank) and its attributes. ``dtype`` is its NumPy dtype:
    datetime64/timedelta64 coordinates are held as their int64 counts of
    that unit (lossless; ``np.asarray(c.values.to_numpy()).view(c.dtype)``
    gives them back)."""
    dims: tuple
    values: object
    attrs: dict = field(default_factory=dict)
    dtype: np.dtype | None = None

    def __post_init__(self):
        if self.dtype is None:
            object.__setattr__(self, "dtype", np.dtype(self.values.dtype))


@dataclass(frozen=True)
class Labels:
    """A variable's ``name``, ``dims`` (one name an axis), ``coords``
    (name -> Coordinate) and ``attrs`` (units, long names, ...)."""
    name: str | None
    dims: tuple
    coords: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
