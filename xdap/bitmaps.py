"""Validity bitmaps: Arrow's layout of optional data (LSB-first, 1 = valid).

A ``?T`` partition keeps one bit per leaf (``Parts.validity``); NumPy works
on bool masks.  These are the conversions between the two -- the only
place either form is made.

>>> import numpy as np
>>> bits = pack_validity(np.array([True, False, True]))
>>> bits.tolist(), unpack_validity(bits, 3).tolist(), all_valid(9).tolist()
([5], [True, False, True], [255, 255])
"""
from __future__ import annotations

import numpy as np

__all__ = ["pack_validity", "unpack_validity", "all_valid"]


def pack_validity(mask: np.ndarray) -> np.ndarray:
    """Bool mask -> LSB-first bitmap (Arrow's layout)."""
    return np.packbits(np.asarray(mask, dtype=bool).ravel(), bitorder="little")


def all_valid(n: int) -> np.ndarray:
    """The bitmap of ``n`` valid items (``?T`` data with nothing missing)."""
    return np.full((n + 7) // 8, 0xFF, np.uint8)


def unpack_validity(bitmap, n: int) -> np.ndarray:
    """LSB-first bitmap -> bool mask of n items."""
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), count=n, bitorder="little")
    return bits.view(bool)
