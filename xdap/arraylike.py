"""How an engine meets the DistArray surface without importing it.

The engines (kernels, movement, protocols, io) work on the core pair
``(Distribution, Parts)``.  A few of their public functions are also
called with DistArrays -- ``xdap.kernels.sin(a)``,
``xdap.movement.broadcast(a, axes)``, ``xdap.Scatter(a, needed)`` -- and
must hand back the caller's kind of object.  They see any object that
implements this protocol, as NumPy's ufuncs see any object with
``__array_ufunc__``:

    x.distribution    an ``xdap.Distribution``
    x.parts           this rank's ``xdap.parts.Parts``
    x.__xdap_wrap__(distribution, parts, same_rows, agreed=False)
                      a new object of x's kind over the pair; ``same_rows``
                      says the pair has x's distribution and x's ragged rows
                      (a kernel result), ``agreed`` that the engine made the
                      pair agree on every rank (a redistribution's result):
                      either way nothing needs checking again
    x.__xdap_plain__(distribution, info, values, fresh, dtype=None)
                      the same for plain values (a NumPy array of fixed
                      numbers without missing values; a NumPy scalar, a 0-d
                      array of ``dtype``) of type ``info``, made with the
                      least work: the prepared paths' results

``xdap.DistArray`` implements it; nothing here knows DistArray.

>>> is_distributed(3.0), is_distributed([1, 2])
(False, False)
"""
from __future__ import annotations

__all__ = ["is_distributed", "unwrap", "wrap_like", "register", "new"]


def is_distributed(x) -> bool:
    """Whether ``x`` implements the protocol (a DistArray or the like)."""
    return hasattr(type(x), "__xdap_wrap__")


def unwrap(x) -> tuple:
    """``(distribution, parts)`` of a distributed array."""
    return x.distribution, x.parts


def wrap_like(x, distribution, parts, same_rows: bool = False, agreed: bool = False):
    """A new array of ``x``'s kind over ``(distribution, parts)``."""
    return x.__xdap_wrap__(distribution, parts, same_rows, agreed=agreed)


_KIND: list = []


def register(cls) -> None:
    """Make ``cls`` the kind of array that ``new`` makes (``xdap.DistArray``
    registers itself)."""
    _KIND[:] = [cls]


def new(pair):
    """An array of the registered kind over an engine's agreed
    ``(Distribution, Parts)`` (None stays None: a rank outside a target
    communicator) -- for calls that have no array operand to be like."""
    return _KIND[0]._agreed(pair)
