"""Hilbert-curve keys: points that are close in space get close keys
(pure NumPy, vectorised over points).

The key of a cell of a ``2**bits`` grid in ``d`` dimensions is its position
along the Hilbert curve through the grid: consecutive keys are face
neighbours, so cutting the key range into intervals cuts space into
compact, connected pieces. Computed with Skilling's transform ("Programming
the Hilbert curve", AIP Conf. Proc. 707, 2004): undo the curve's rotations
and reflections from the top bit down, Gray-encode, then interleave the
coordinates' bits -- ``d * bits`` bits in all, at most 64.

>>> cells = np.array([[0, 0], [0, 1], [1, 1], [1, 0]])
>>> hilbert_keys(cells, bits=1).tolist()
[0, 1, 2, 3]
"""
from __future__ import annotations

import numpy as np

__all__ = ["hilbert_keys", "max_bits"]


def max_bits(ndim: int) -> int:
    """The most bits per coordinate whose keys fit in 64 bits."""
    return 64 // ndim


def hilbert_keys(cells, bits: int) -> np.ndarray:
    """uint64 keys of integer grid cells ``cells`` (shape ``(n, d)``, each
    coordinate in ``[0, 2**bits)``)."""
    cells = np.asarray(cells)
    if cells.ndim != 2 or not 1 <= cells.shape[1] <= 64:
        raise ValueError(f"hilbert_keys: cells must be (n, d) integer coordinates, got shape "
                         f"{cells.shape}")
    n, d = cells.shape
    if not 1 <= bits <= max_bits(d):
        raise ValueError(f"hilbert_keys: {d}-d keys hold 1 to {max_bits(d)} bits per "
                         f"coordinate, got {bits}")
    if cells.size and (cells.min() < 0 or cells.max() >= (1 << bits)):
        raise ValueError(f"hilbert_keys: coordinates must lie in [0, 2**{bits})")
    x = [cells[:, i].astype(np.uint64) for i in range(d)]
    # in place, with masks instead of np.where: every step one pass over
    # the points and no temporaries beyond two columns (``mask``, ``t``)
    mask = np.empty(n, np.uint64)
    t = np.empty(n, np.uint64)
    zero = np.uint64(0)
    # undo the rotations and reflections, top bit down
    for b in range(bits - 1, 0, -1):
        p = np.uint64((1 << b) - 1)
        for i in range(d):
            np.right_shift(x[i], np.uint64(b), out=mask)
            mask &= np.uint64(1)
            np.subtract(zero, mask, out=mask)                 # all ones where bit b is set
            np.bitwise_xor(x[0], x[i], out=t)                 # exchange the low bits ...
            t &= p
            t &= ~mask                                        # ... where it is clear
            np.bitwise_and(mask, p, out=mask)                 # reflect where it is set
            x[0] ^= mask
            x[0] ^= t
            x[i] ^= t
    # Gray encode
    for i in range(1, d):
        x[i] ^= x[i - 1]
    t[:] = 0
    for b in range(bits - 1, 0, -1):
        np.right_shift(x[d - 1], np.uint64(b), out=mask)
        mask &= np.uint64(1)
        np.subtract(zero, mask, out=mask)
        mask &= np.uint64((1 << b) - 1)
        t ^= mask
    for i in range(d):
        x[i] ^= t
    return _interleave(x, bits)


# bit spreading by magic masks: each coordinate's bits moved d - 1 apart
_SPREAD = {2: [(16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
               (2, 0x3333333333333333), (1, 0x5555555555555555)],
           3: [(32, 0x001F00000000FFFF), (16, 0x001F0000FF0000FF), (8, 0x100F00F00F00F00F),
               (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249)]}


def _interleave(x, bits: int) -> np.ndarray:
    """The coordinates' bits interleaved, the top bit of every coordinate
    first (coordinate 0 the most significant): magic-mask spreading for 2
    and 3 dims (five shift-or-mask passes), a loop over the bits else."""
    d, n = len(x), len(x[0])
    if d == 1:
        return x[0]
    if d in _SPREAD:
        key = np.zeros(n, np.uint64)
        for i in range(d):
            v = x[i]
            for shift, m in _SPREAD[d]:
                v = (v | (v << np.uint64(shift))) & np.uint64(m)
            key |= v << np.uint64(d - 1 - i)
        return key
    one = np.uint64(1)
    key = np.zeros(n, np.uint64)
    for b in range(bits - 1, -1, -1):
        for i in range(d):
            key = (key << one) | ((x[i] >> np.uint64(b)) & one)
    return key
