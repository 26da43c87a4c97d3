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
    one = np.uint64(1)
    # undo the rotations and reflections, top bit down
    q = 1 << (bits - 1)
    while q > 1:
        p = np.uint64(q - 1)
        uq = np.uint64(q)
        for i in range(d):
            hit = (x[i] & uq) != 0
            x[0] = np.where(hit, x[0] ^ p, x[0])                      # reflect
            t = np.where(hit, np.uint64(0), (x[0] ^ x[i]) & p)        # else exchange low bits
            x[0] ^= t
            x[i] ^= t
        q >>= 1
    # Gray encode
    for i in range(1, d):
        x[i] ^= x[i - 1]
    t = np.zeros(n, np.uint64)
    q = 1 << (bits - 1)
    while q > 1:
        t = np.where((x[d - 1] & np.uint64(q)) != 0, t ^ np.uint64(q - 1), t)
        q >>= 1
    for i in range(d):
        x[i] ^= t
    # interleave: the top bit of every coordinate first
    key = np.zeros(n, np.uint64)
    for b in range(bits - 1, -1, -1):
        for i in range(d):
            key = (key << one) | ((x[i] >> np.uint64(b)) & one)
    return key
