"""Random arrays born distributed, the same for a seed on any number of
ranks and in any distribution.

Element ``i`` of the array (in C order over the global shape) is drawn from
position ``i`` of one counter-based stream -- NumPy's ``Philox`` keyed by
``SeedSequence(seed)`` -- and nothing else, so a rank computes its values
alone: it jumps its stream to its first element (``Philox.advance``, no
draws in between) and draws only its own. Where the requested distribution
is not plain blocks of rows, the values are drawn in those blocks and moved
once (one redistribution).

- ``random``: uniform in [0, 1); the global array is exactly
  ``np.random.Generator(xdap.random.bit_generator(seed)).random(shape)``;
- ``normal``: Box-Muller on pairs of stream positions, its cosine for the
  even element of the pair and its sine for the odd one (NumPy's
  ``Generator.normal`` draws a variable number of values per element, which
  no rank could jump over);
- ``integers``: ``low + floor(u * (high - low))`` of each element's uniform
  ``u`` -- uniform to within ``(high - low) / 2**53`` (NumPy's rejection
  sampling is exact but, again, cannot be jumped); ranges up to 2**53;
- ``permutation``: ``argsort`` of one random 64-bit key per index (xdap's
  distributed sort).

Collective (the arguments are agreed); memory: each rank's share.

>>> import numpy as np, xdap.random
>>> from mpi4py import MPI
>>> a = xdap.random.random((2, 3), seed=7, comm=MPI.COMM_SELF)
>>> ref = np.random.Generator(xdap.random.bit_generator(7)).random((2, 3))
>>> bool(np.array_equal(a.to_numpy(), ref))
True
>>> sorted(xdap.random.permutation(5, seed=1, comm=MPI.COMM_SELF).to_numpy().tolist())
[0, 1, 2, 3, 4]
"""
from __future__ import annotations

import math

import numpy as np

from . import arguments
from .arraylike import new
from .contract import collective
from .distribution import make_distribution, row_block_layout
from .movement.redistribute import to_layout
from .parts import Parts

__all__ = ["random", "normal", "integers", "permutation", "bit_generator"]


def bit_generator(seed: int) -> np.random.Philox:
    """The stream every draw with this ``seed`` reads, from its start: NumPy's
    ``Philox`` keyed by ``SeedSequence(seed)`` (a reference for tests, or
    for drawing on one process what xdap draws on many)."""
    seed = arguments.integer("bit_generator", "seed", seed, low=0)
    return np.random.Philox(key=np.random.SeedSequence(seed).generate_state(2, np.uint64))


def _raw(seed, start, count):
    """Stream positions ``start .. start + count`` as uint64: the stream
    jumped to the block of 4 (Philox's counter) that holds ``start``."""
    g = bit_generator(seed)
    g.advance(start // 4)
    skip = start % 4
    return g.random_raw(count + skip)[skip:]


def _uniform(seed, first, count):
    """Positions ``first ..`` as uniform doubles: NumPy's own
    ``Generator.random`` (one stream word a double) from the jumped stream."""
    g = bit_generator(seed)
    g.advance(first // 4)
    g.random_raw(first % 4)
    return np.random.Generator(g).random(count)


def _normal(seed, first, count):
    """Box-Muller on the pairs of positions (2j, 2j + 1): elements 2j and
    2j + 1 are r cos t and r sin t of that pair (r = sqrt(-2 log(1 - u)),
    t = 2 pi v), so element i needs only its own pair."""
    lo, hi = first - first % 2, first + count + (first + count) % 2
    u = _uniform(seed, lo, hi - lo)
    r = np.log1p(-u[0::2])                   # 1 - u in (0, 1]: finite
    r *= -2.0
    np.sqrt(r, out=r)
    t = u[1::2] * (2.0 * np.pi)
    out = np.empty(hi - lo)
    np.cos(t, out=out[0::2])
    np.sin(t, out=out[1::2])
    out[0::2] *= r
    out[1::2] *= r
    return out[first - lo:first - lo + count]


def _checked(name, shape, seed, dist, grid, comm, per_dim):
    shape = arguments.shape(name, shape)
    seed = arguments.integer(name, "seed", seed, low=0)
    d = make_distribution(shape, dist, grid, comm, **per_dim)   # checks dist, grid, comm
    return shape, seed, d


def _drawn(shape, seed, values_of, d):
    """The array of ``shape`` whose elements ``first .. first + count`` (C
    order) are ``values_of(seed, first, count)``, in distribution ``d``:
    drawn in blocks of rows (each rank its own range of the stream), then
    moved to ``d`` (one exchange) when that is another distribution."""
    blocks, start, stop = row_block_layout(shape, d.comm)
    nrows = stop - start if shape else 1         # 0-d: every rank holds the one element
    row = math.prod(shape[1:])
    local = values_of(seed, start * row, nrows * row)
    parts = Parts.of_array(local.reshape((nrows,) + tuple(shape[1:]) if shape else ()))
    return new(to_layout(blocks, parts, d))


@collective
def random(shape, *, seed, dist=None, grid=None, comm=None, **per_dim):
    """Uniform float64 values in [0, 1): exactly NumPy's
    ``Generator(bit_generator(seed)).random(shape)``, on any rank count."""
    shape, seed, d = _checked("random", shape, seed, dist, grid, comm, per_dim)
    yield dict(shape=shape, seed=seed, dist=d, grid=d.grid, comm=d.comm.size, per_dim=None)
    return _drawn(shape, seed, _uniform, d)


@collective
def normal(shape, *, seed, loc=0.0, scale=1.0, dist=None, grid=None, comm=None, **per_dim):
    """Normal float64 values (mean ``loc``, standard deviation ``scale``),
    Box-Muller on two stream positions an element."""
    shape, seed, d = _checked("normal", shape, seed, dist, grid, comm, per_dim)
    loc = arguments.real("normal", "loc", loc)
    scale = arguments.real("normal", "scale", scale, low=0.0)
    yield dict(shape=shape, seed=seed, loc=loc, scale=scale, dist=d, grid=d.grid,
               comm=d.comm.size, per_dim=None)


    def scaled(seed, first, count):
        z = _normal(seed, first, count)
        z *= scale
        z += loc
        return z
    return _drawn(shape, seed, scaled, d)


@collective
def integers(low, high=None, shape=(), *, seed, dist=None, grid=None, comm=None, **per_dim):
    """int64 values in ``[low, high)`` (``[0, low)`` when ``high`` is
    None), each ``low + floor(u * (high - low))`` of its uniform ``u``."""
    if high is None:
        low, high = 0, low
    low = arguments.integer("integers", "low", low)
    high = arguments.integer("integers", "high", high)
    if not 0 < high - low <= 2**53:
        raise ValueError(f"integers: high - low must be in [1, 2**53], got "
                         f"[{low}, {high})")
    shape, seed, d = _checked("integers", shape, seed, dist, grid, comm, per_dim)
    yield dict(low=low, high=high, shape=shape, seed=seed, dist=d, grid=d.grid, comm=d.comm.size,
               per_dim=None)
    span = high - low

    def scaled(seed, first, count):
        u = _uniform(seed, first, count)
        u *= span
        k = u.astype(np.int64)                  # floor: u >= 0
        np.minimum(k, span - 1, out=k)          # u * span may round up to span
        k += low
        return k
    return _drawn(shape, seed, scaled, d)


@collective
def permutation(n, *, seed, comm=None):
    """A random permutation of ``0 .. n-1`` as a 1-D int64 DistArray:
    ``argsort`` of one random 64-bit key per index (xdap's sample sort:
    one exchange), the same for a seed on any rank count."""
    n = arguments.integer("permutation", "n", n, low=0)
    seed = arguments.integer("permutation", "seed", seed, low=0)
    d = make_distribution((n,), ("b",), None, comm)
    yield dict(n=n, seed=seed, comm=d.comm.size)
    from .api.sorting import argsort
    keys = _drawn((n,), seed, _raw, d)
    return argsort(keys, stable=True)
