"""The Array API's ``fft`` extension on distributed data (``xp.fft``):
``fft``, ``ifft``, ``fftn``, ``ifftn``, ``rfft``, ``irfft``, ``rfftn``,
``irfftn``, ``hfft``, ``ihfft``, ``fftfreq``, ``rfftfreq``, ``fftshift``,
``ifftshift`` -- NumPy's transforms (pocketfft) on each rank's block, with
data moved only where a transformed axis is distributed.

What each moves:

- transforms along axes every rank holds whole: nothing (no MPI call);
- along distributed axes: a slab (or pencil) decomposition -- the data
  moves once so that those axes are whole and the others distributed
  (one redistribution, its plan cached for repeated calls), and when the
  transform covers every axis, in two stages: all axes but the first, one
  move, then the first (mpi4py-fft's slab transform). Real-to-complex
  transforms move after the real axis is halved, complex-to-real before;
- a 1-D array split over ranks: the six-step algorithm -- the line seen as
  an ``n1 x n2`` matrix, transformed along its columns, twiddled, moved,
  transformed along its rows, moved to C order: three exchanges, no rank
  ever holds more than its share. A length with no factor (a prime) is
  transformed on one rank (one gather, one scatter; a warning says so);
- ``fftshift``/``ifftshift``: ``roll`` (a slab exchange along a
  distributed axis); ``fftfreq``/``rfftfreq``: born distributed.

``layout=``: a keyword beyond the standard. ``"input"`` (the default)
gives the result in the input's distribution (when the transformed axes
kept their lengths; else blocks on the same dims); ``"transposed"`` leaves
it where the last stage computed it (transformed axes whole, the others in
blocks), as mpi4py-fft's forward output does, and saves the move back.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.arange(8.0), comm=MPI.COMM_SELF)
>>> np.allclose(xdap.array_api.fft.rfft(a).to_numpy(), np.fft.rfft(np.arange(8.0)))
True
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import arguments
from ..agreement import settled
from ..contract import collective
from ..distribution import make_distribution
from .layouts import axes_whole, moved, reshaped, with_axis, wrap

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

NORMS = ("backward", "ortho", "forward")
WARN_LINE = 1 << 16      # a line transformed on one rank: a warning from this length
LAYOUTS = ("input", "transposed")
# a rank's local transform may fail there alone (memory): each ends in one
# verdict under this name, so the others never wait in the next exchange
_BLOCK = "fft: this rank's block"


# -- the checks ---------------------------------------------------------------------
def _x(name, x, real=False):
    arguments.numeric(name, x)
    kind = x.parts.values.dtype.kind
    if kind not in ("f" if real else "fc"):
        need = "real floating-point" if real else "floating-point (complex or real)"
        raise TypeError(f"{name}: x must hold {need} numbers, not {x.parts.values.dtype}")
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dim, not a 0-d array")
    return x


def _common(name, x, norm, layout):
    norm = arguments.choice(name, "norm", norm, NORMS)
    layout = arguments.choice(name, "layout", layout, LAYOUTS)
    return norm, layout


def _one_axis(name, x, n, axis):
    axis = arguments.axis(name, x.ndim, axis)
    if n is not None:
        n = arguments.integer(name, "n", n, low=1)
    return n, axis


def _axes_and_s(name, x, s, axes):
    if axes is None:
        if s is not None:
            raise ValueError(f"{name}: s= needs axes= (the standard leaves s without axes "
                             "undefined)")
        axes = tuple(range(x.ndim))
    else:
        if isinstance(axes, int) or not all(isinstance(a, (int, np.integer)) for a in axes):
            raise TypeError(f"{name}: axes must be a sequence of ints, got "
                            f"{arguments._shown(axes)}")
        axes = tuple(arguments.axis(name, x.ndim, int(a)) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: axes must be unique, got {axes}")
    if s is not None:
        if isinstance(s, int) or not all(isinstance(v, (int, np.integer)) for v in s):
            raise TypeError(f"{name}: s must be a sequence of ints, got {arguments._shown(s)}")
        s = tuple(int(v) for v in s)
        if len(s) != len(axes) or any(v < 1 and v != -1 for v in s):
            raise ValueError(f"{name}: s must give one length >= 1 (or -1) for each of the "
                             f"{len(axes)} axes, got {s}")
        s = tuple(x.shape[a] if v == -1 else v for a, v in zip(axes, s))
    return s, axes


# -- the work -----------------------------------------------------------------------
def _stage(x, axes, transform):
    """``transform(block, axes)`` of every rank's block, ``axes`` made
    whole first: a DistArray whose transformed axes take their new lengths."""
    x = axes_whole(x, axes)
    with settled(x.comm, _BLOCK):
        out = transform(np.asarray(x.parts.values), axes)
    d = x.distribution
    for a in axes:
        if out.shape[a] != d.global_shape[a]:
            d = with_axis(d, a, out.shape[a])
    return wrap(x, d, out)


def _stages(x, plan):
    """Run ``plan`` -- ``[(axes, transform)]`` -- stage by stage. A stage
    over every axis of an array of 2+ dims splits in two: all but the first
    axis, then the first (a slab decomposition: a forward transform's
    "transposed" output has axis 0 whole, as mpi4py-fft's forward output;
    a real transform's real axis comes first) -- but a complex inverse of
    an array with some axes whole transforms those first, in place, then
    the others after one move: the inverse of a "transposed" result goes
    back to its slabs in one exchange, as mpi4py-fft's backward does. One
    over the single axis of a distributed 1-D array runs ``_line``."""
    for axes, transform in plan:
        if len(axes) == x.ndim and not all(x.distribution.maps[a].whole for a in axes):
            if x.ndim == 1:
                x = _line(x, transform)
                continue
            whole = tuple(a for a in axes if x.distribution.maps[a].whole)
            if whole and transform.complex_to_complex and transform.inverse:
                first, then = whole, tuple(a for a in axes if a not in whole)
            else:
                then = (axes[0],)
                first = tuple(a for a in axes if a != axes[0])
            x = _stage(x, first, transform.on(first))
            x = _stage(x, then, transform.on(then))
        else:
            x = _stage(x, axes, transform)
    return x


class _Transform:
    """A separable N-D transform: ``numpy.fft.<func>`` (fftn or ifftn) over
    some axes with their lengths (by axis) and ``norm``; ``real_axis``:
    the axis an ``rfft`` transforms first (rfftn). ``on(axes)``: the same
    transform over a subset (a stage of a slab decomposition)."""

    def __init__(self, func, lengths, norm, real_axis=None):
        self.func, self.lengths, self.norm, self.real_axis = func, dict(lengths), norm, real_axis

    def on(self, axes):
        return _Transform(self.func, {a: n for a, n in self.lengths.items() if a in axes},
                          self.norm, self.real_axis if self.real_axis in axes else None)

    def length(self, axis):
        return self.lengths.get(axis)

    @property
    def complex_to_complex(self):
        return self.real_axis is None

    @property
    def inverse(self):
        return self.func is np.fft.ifftn

    def __call__(self, v, axes):
        if self.real_axis is not None:          # rfftn: the real axis first, halved
            v = np.fft.rfft(v, n=self.lengths.get(self.real_axis), axis=self.real_axis,
                            norm=self.norm)
        rest = tuple(a for a in axes if a != self.real_axis)
        if rest:
            v = self.func(v, s=[self.lengths.get(a, v.shape[a]) for a in rest], axes=rest,
                          norm=self.norm)
        return v


class _OneAxis:
    """``numpy.fft.<func>(v, n, axis, norm)``: one axis (fft, ifft, rfft,
    irfft, hfft, ihfft), as a stage transform."""

    def __init__(self, func, n, norm):
        self.func, self.n, self.norm = func, n, norm

    def on(self, axes):
        return self

    def length(self, axis):
        return self.n

    @property
    def complex_to_complex(self):
        return self.func in (np.fft.fft, np.fft.ifft)

    @property
    def inverse(self):
        return self.func is np.fft.ifft

    def __call__(self, v, axes):
        (axis,) = axes
        return self.func(v, n=self.n, axis=axis, norm=self.norm)


def _line(x, transform):
    """A 1-D transform of a distributed line: the six-step algorithm for
    complex-to-complex transforms of a length with a factor (``n = n1 *
    n2``) that keep it, else on one rank."""
    n = x.shape[0]
    n1 = max((f for f in range(2, math.isqrt(n) + 1) if n % f == 0), default=1)
    if transform.complex_to_complex and transform.length(0) in (None, n) and n1 > 1:
        return _six_step(x, n1, n // n1, transform.inverse, transform.norm)
    if n >= WARN_LINE:
        warnings.warn(f"fft: a 1-D transform of a distributed line of {n} elements that the "
                      "six-step algorithm cannot split (a prime length, a new length or a "
                      "real transform) runs on rank 0: O(n) there", RuntimeWarning,
                      stacklevel=5)
    sizes = [n] + [0] * (x.comm.size - 1)
    one = moved(x, make_distribution((n,), ("b",), comm=x.comm, sizes=(sizes,)))
    with settled(x.comm, _BLOCK):
        out = transform(np.asarray(one.parts.values), (0,)) if x.comm.rank == 0 else None
    m = x.comm.bcast(None if out is None else (out.shape[0], out.dtype.str), root=0)
    if out is None:
        out = np.empty(0, np.dtype(m[1]))
    d = make_distribution((m[0],), ("b",), comm=x.comm,
                          sizes=([m[0]] + [0] * (x.comm.size - 1),))
    return wrap(x, d, out)


def _six_step(x, n1, n2, inverse, norm):
    """The DFT of a distributed line of ``n = n1 * n2`` elements: as an
    ``n1 x n2`` matrix ``A[j1, j2] = x[j1 n2 + j2]``, the DFT of each column
    (length n1), times the twiddles ``w_n^(j2 k1)``, the DFT of each row
    (length n2); ``X[k1 + n1 k2]`` is then the transposed matrix read in C
    order. Three exchanges; the scale of ``norm`` applied once at the end."""
    from .manipulation import _permuted
    n = n1 * n2
    sign = 1.0 if inverse else -1.0
    dft = (lambda v, axis: np.fft.ifft(v, axis=axis, norm="forward")) if inverse else \
        (lambda v, axis: np.fft.fft(v, axis=axis))
    a = reshaped(x, (n1, n2))
    a = axes_whole(a, (0,))                               # columns in blocks
    d = a.distribution
    j2 = np.asarray(d.global_indices(1), np.float64)
    k1 = np.arange(n1, dtype=np.float64)
    with settled(x.comm, _BLOCK):
        b = dft(np.asarray(a.parts.values), 0)
        b = b * np.exp(sign * 2j * np.pi * np.outer(k1, j2) / n).astype(b.dtype, copy=False)
    c = _stage(wrap(a, d, b), (1,), lambda v, axes: dft(v, 1))   # rows in blocks
    out = reshaped(_permuted(c, (1, 0)), (n,))
    scale = {"backward": 1.0 / n if inverse else 1.0, "ortho": 1.0 / math.sqrt(n),
             "forward": 1.0 if inverse else 1.0 / n}[norm]
    if scale != 1.0:
        values = np.asarray(out.parts.values) * out.parts.values.dtype.type(scale)
        out = wrap(out, out.distribution, values)
    return out


def _result(x, y, layout):
    """``y`` laid out as asked: ``x``'s distribution when the shape is
    unchanged, else blocks on ``x``'s distributed dims ("input"); as the
    last stage left it ("transposed")."""
    if layout == "transposed":
        return y
    d = x.distribution
    if y.shape == x.shape:
        return moved(y, d)
    if y.distribution.grid == d.grid and all(
            y.distribution.maps[k].whole == d.maps[k].whole for k in range(x.ndim)):
        return y
    spec = tuple("n" if m.whole else "b" for m in d.maps)
    return moved(y, make_distribution(y.shape, spec, grid=d.grid, comm=x.comm))


# -- one axis ------------------------------------------------------------------------
def _one(name, x, n, axis, norm, layout, real_in=False):
    _x(name, x, real=real_in)
    n, axis = _one_axis(name, x, n, axis)
    norm, layout = _common(name, x, norm, layout)
    return n, axis, norm, layout


@collective
def fft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The 1-D discrete Fourier transform along ``axis`` (NumPy's
    ``np.fft.fft``; ``n`` crops or zero-pads first). Collective: local
    along an undistributed axis, one move (or the six-step algorithm for a
    distributed line) otherwise; see the module."""
    n, axis, norm, layout = _one("fft", x, n, axis, norm, layout)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.fft, n, norm))]), layout)


@collective
def ifft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The inverse of ``fft`` (NumPy's ``np.fft.ifft``)."""
    n, axis, norm, layout = _one("ifft", x, n, axis, norm, layout)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.ifft, n, norm))]), layout)


@collective
def rfft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The transform of real data along ``axis``: its ``n // 2 + 1``
    non-negative frequencies (NumPy's ``np.fft.rfft``)."""
    n, axis, norm, layout = _one("rfft", x, n, axis, norm, layout, real_in=True)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.rfft, n, norm))]), layout)


@collective
def irfft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The inverse of ``rfft``: real output of length ``n`` (default
    ``2 * (m - 1)``; NumPy's ``np.fft.irfft``)."""
    n, axis, norm, layout = _one("irfft", x, n, axis, norm, layout)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.irfft, n, norm))]), layout)


@collective
def hfft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The transform of a Hermitian-symmetric signal, given by its first
    half: real output (NumPy's ``np.fft.hfft``)."""
    n, axis, norm, layout = _one("hfft", x, n, axis, norm, layout)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.hfft, n, norm))]), layout)


@collective
def ihfft(x, /, *, n=None, axis=-1, norm="backward", layout="input"):
    """The inverse of ``hfft`` (NumPy's ``np.fft.ihfft``): real input."""
    n, axis, norm, layout = _one("ihfft", x, n, axis, norm, layout,
                                 real_in=True)
    yield dict(x=x, n=n, axis=axis, norm=norm, layout=layout)
    return _result(x, _stages(x, [((axis,), _OneAxis(np.fft.ihfft, n, norm))]), layout)


# -- several axes -------------------------------------------------------------------
def _many(name, x, s, axes, norm, layout, real_in=False):
    _x(name, x, real=real_in)
    s, axes = _axes_and_s(name, x, s, axes)
    norm, layout = _common(name, x, norm, layout)
    return s, axes, norm, layout


def _lengths(axes, s):
    return {} if s is None else dict(zip(axes, s))


@collective
def fftn(x, /, *, s=None, axes=None, norm="backward", layout="input"):
    """The N-D transform over ``axes`` (default all; ``s`` their lengths;
    NumPy's ``np.fft.fftn``). Collective: a slab decomposition where axes
    are distributed (see the module)."""
    s, axes, norm, layout = _many("fftn", x, s, axes, norm, layout)
    yield dict(x=x, s=s, axes=axes, norm=norm, layout=layout)
    t = _Transform(np.fft.fftn, _lengths(axes, s), norm)
    return _result(x, _stages(x, [(axes, t)]), layout)


@collective
def ifftn(x, /, *, s=None, axes=None, norm="backward", layout="input"):
    """The inverse of ``fftn`` (NumPy's ``np.fft.ifftn``)."""
    s, axes, norm, layout = _many("ifftn", x, s, axes, norm, layout)
    yield dict(x=x, s=s, axes=axes, norm=norm, layout=layout)
    t = _Transform(np.fft.ifftn, _lengths(axes, s), norm)
    return _result(x, _stages(x, [(axes, t)]), layout)


@collective
def rfftn(x, /, *, s=None, axes=None, norm="backward", layout="input"):
    """The N-D transform of real data (NumPy's ``np.fft.rfftn``): the last
    of ``axes`` halved first -- so a slab decomposition moves half the
    bytes -- then the others."""
    s, axes, norm, layout = _many("rfftn", x, s, axes, norm, layout, real_in=True)
    yield dict(x=x, s=s, axes=axes, norm=norm, layout=layout)
    t = _Transform(np.fft.fftn, _lengths(axes, s), norm, real_axis=axes[-1])
    # a slab split transforms all axes but the first one first: the real one among them
    return _result(x, _stages(x, [(axes, t)]), layout)


@collective
def irfftn(x, /, *, s=None, axes=None, norm="backward", layout="input"):
    """The inverse of ``rfftn`` (NumPy's ``np.fft.irfftn``): the complex
    axes first, the last of ``axes`` (complex to real) last -- moving
    before the output doubles."""
    s, axes, norm, layout = _many("irfftn", x, s, axes, norm, layout)
    yield dict(x=x, s=s, axes=axes, norm=norm, layout=layout)
    lengths = _lengths(axes, s)
    plan = []
    if len(axes) > 1:
        plan.append((axes[:-1], _Transform(np.fft.ifftn, {a: lengths[a] for a in axes[:-1]
                                                          if a in lengths}, norm)))
    plan.append(((axes[-1],), _OneAxis(np.fft.irfft, lengths.get(axes[-1]), norm)))
    return _result(x, _stages(x, plan), layout)


# -- frequencies and shifts ---------------------------------------------------------------
def _frequencies(name, n, d, dtype, device, comm):
    from ..comm import resolve
    n = arguments.integer(name, "n", n, low=1)
    if isinstance(d, bool) or not isinstance(d, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: d must be a real number, got {arguments._shown(d)}")
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise TypeError(f"{name}: dtype must be a real floating-point dtype, got {dtype}")
    if device not in (None, "cpu"):
        raise ValueError(f"{name}: xdap arrays live on the CPU, not device {device!r}")
    return n, float(d), dtype, resolve(comm)


def _born(n, length, values_of, dtype, comm):
    from ..parts import Parts
    target = make_distribution((length,), ("b",), comm=comm)
    idx = np.asarray(target.global_indices(0), np.int64)
    values = np.ascontiguousarray(values_of(idx), dtype or np.float64)
    from ..arraylike import new
    return new((target, Parts.of_array(values)))


@collective
def fftfreq(n, /, *, d=1.0, dtype=None, device=None, comm=None):
    """The sample frequencies of an ``n``-point ``fft`` (NumPy's
    ``np.fft.fftfreq``), born distributed in blocks: each rank computes its
    own. ``comm=``: a keyword beyond the standard (default COMM_WORLD)."""
    n, d, dtype, comm = _frequencies("fftfreq", n, d, dtype, device, comm)
    yield dict(n=n, d=d, dtype=None if dtype is None else dtype.str, device=None,
               comm=comm)
    half = (n - 1) // 2 + 1
    return _born(n, n, lambda i: np.where(i < half, i, i - n) / (n * d), dtype, comm)


@collective
def rfftfreq(n, /, *, d=1.0, dtype=None, device=None, comm=None):
    """The sample frequencies of an ``n``-point ``rfft``: ``n // 2 + 1``
    of them (NumPy's ``np.fft.rfftfreq``), born distributed."""
    n, d, dtype, comm = _frequencies("rfftfreq", n, d, dtype, device, comm)
    yield dict(n=n, d=d, dtype=None if dtype is None else dtype.str, device=None,
               comm=comm)
    return _born(n, n // 2 + 1, lambda i: i / (n * d), dtype, comm)


def _shift_axes(name, x, axes):
    arguments.fixed(name, x)
    if axes is None:
        return tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        axes = (axes,)
    if not all(isinstance(a, (int, np.integer)) for a in axes):
        raise TypeError(f"{name}: axes must be an int or a sequence of ints, got "
                        f"{arguments._shown(axes)}")
    return tuple(arguments.axis(name, x.ndim, int(a)) for a in axes)


@collective
def fftshift(x, /, *, axes=None):
    """The zero frequency moved to the middle (NumPy's ``np.fft.fftshift``):
    ``roll`` by ``n // 2`` along ``axes`` -- local along undistributed axes,
    one slab exchange along a distributed one."""
    axes = _shift_axes("fftshift", x, axes)
    yield dict(x=x, axes=axes)
    return _roll(x, axes, lambda n: n // 2)


@collective
def ifftshift(x, /, *, axes=None):
    """The inverse of ``fftshift``: ``roll`` by ``-(n // 2)``."""
    axes = _shift_axes("ifftshift", x, axes)
    yield dict(x=x, axes=axes)
    return _roll(x, axes, lambda n: -(n // 2))


def _roll(x, axes, by):
    from .manipulation import roll
    if not axes:
        return x
    return roll(x, tuple(by(x.shape[a]) for a in axes), axis=axes)
