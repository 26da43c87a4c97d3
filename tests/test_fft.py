"""The Array API's fft extension (xdap.array_api.fft) on 1-4 ranks: every
transform equals NumPy's on the global array -- along undistributed axes
(local), distributed ones (slab stages), all axes, a split 1-D line (the
six-step algorithm, and a prime length on one rank), with n/s cropping and
padding, every norm, float32/complex64 kept -- in cyclic, 2-D grid and
empty-rank layouts, with the result in the input's layout or the
transposed one; frequencies born distributed; bad or one-rank-different
arguments are one error on every rank."""
import os
import warnings

import numpy as np
import pytest

import xdap
from helpers import same_error

F = xdap.array_api.fft
RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(37)
G = rng.standard_normal((6, 5, 4)) + 1j * rng.standard_normal((6, 5, 4))
R = rng.standard_normal((6, 5, 4))


def layouts(P):
    empty = {1: [6], 2: [0, 6], 3: [2, 0, 4], 4: [3, 0, 3, 0]}[P]
    return [dict(dist=("b",)), dict(dist=("c", "b")), dict(dist=("n", "n", "b")),
            dict(dist=("b",), sizes=(empty,))]


def same(got, want, what):
    got = got.to_numpy()
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=str(what))


@pytest.mark.mpi(ranks=RANKS)
def test_one_axis_transforms_match_numpy(comm):
    for kw in layouts(comm.size):
        g, r = xdap.from_global(G, comm=comm, **kw), xdap.from_global(R, comm=comm, **kw)
        for ax in (0, 1, -1):
            same(F.fft(g, axis=ax), np.fft.fft(G, axis=ax), ("fft", kw, ax))
            same(F.ifft(g, axis=ax, n=7, norm="ortho"),
                 np.fft.ifft(G, axis=ax, n=7, norm="ortho"), ("ifft", kw, ax))
            same(F.rfft(r, axis=ax, n=3), np.fft.rfft(R, axis=ax, n=3), ("rfft", kw, ax))
            same(F.irfft(g, axis=ax), np.fft.irfft(G, axis=ax), ("irfft", kw, ax))
            same(F.hfft(g, axis=ax, norm="forward"), np.fft.hfft(G, axis=ax, norm="forward"),
                 ("hfft", kw, ax))
            same(F.ihfft(r, axis=ax), np.fft.ihfft(R, axis=ax), ("ihfft", kw, ax))
        y = F.fft(g, axis=0)
        assert y.distribution == g.distribution        # back in the input's layout


@pytest.mark.mpi(ranks=RANKS)
def test_several_axes_match_numpy(comm):
    for kw in layouts(comm.size):
        g, r = xdap.from_global(G, comm=comm, **kw), xdap.from_global(R, comm=comm, **kw)
        same(F.fftn(g), np.fft.fftn(G), ("fftn", kw))
        same(F.ifftn(g, s=(3, 8), axes=(2, 0)), np.fft.ifftn(G, s=(3, 8), axes=(2, 0)),
             ("ifftn", kw))
        same(F.rfftn(r), np.fft.rfftn(R), ("rfftn", kw))
        same(F.irfftn(g), np.fft.irfftn(G), ("irfftn", kw))
        same(F.rfftn(r, axes=(1, 0), s=(4, 7)), np.fft.rfftn(R, axes=(1, 0), s=(4, 7)),
             ("rfftn axes", kw))
        same(F.irfftn(g, axes=(0, 2), s=(5, 6), norm="forward"),
             np.fft.irfftn(G, axes=(0, 2), s=(5, 6), norm="forward"), ("irfftn axes", kw))
        t = F.fftn(g, layout="transposed")
        same(t, np.fft.fftn(G), ("transposed", kw))
        assert all(t.distribution.maps[0].whole for _ in (0,))    # the last stage's axis
        same(F.fftshift(g), np.fft.fftshift(G), ("fftshift", kw))
        same(F.ifftshift(g, axes=1), np.fft.ifftshift(G, axes=1), ("ifftshift", kw))
    c64 = xdap.from_global(G.astype(np.complex64), comm=comm, dist=("b", "c"))
    same(F.fftn(c64), np.fft.fftn(G.astype(np.complex64)), "complex64 kept")


@pytest.mark.mpi(ranks=RANKS)
def test_a_split_line(comm):
    """Six-step for lengths with a factor (no rank holds more than its
    share); a prime length or a real transform on one rank."""
    for n in (12, 30, 64, 7):
        L = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        for kw in (dict(dist=("b",)), dict(dist=("c",))):
            line = xdap.from_global(L, comm=comm, **kw)
            for norm in ("backward", "ortho", "forward"):
                same(F.fft(line, norm=norm), np.fft.fft(L, norm=norm), ("line", n, kw, norm))
                same(F.ifft(line, norm=norm), np.fft.ifft(L, norm=norm), ("iline", n, kw))
            same(F.fftn(line), np.fft.fftn(L), ("fftn line", n))
            same(F.rfft(xdap.from_global(L.real, comm=comm, **kw)), np.fft.rfft(L.real),
                 ("rfft line", n))
            same(F.fft(line, n=n + 3), np.fft.fft(L, n=n + 3), ("padded line", n))


@pytest.mark.mpi(ranks=RANKS)
def test_frequencies_are_born_distributed(comm):
    f = F.fftfreq(9, d=0.5, comm=comm)
    same(f, np.fft.fftfreq(9, d=0.5), "fftfreq")
    assert f.distribution.maps[0].grid_size == comm.size
    same(F.rfftfreq(10, dtype=np.float32, comm=comm), np.fft.rfftfreq(10).astype(np.float32),
         "rfftfreq")


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=RANKS)
def test_bad_arguments_are_one_error_everywhere(comm):
    g = xdap.from_global(G, comm=comm)
    cases = [(lambda: F.fft(g, norm="none"), "norm"), (lambda: F.fft(g, n=0), "n"),
             (lambda: F.rfft(g), "real"), (lambda: F.fftn(g, s=(3,), axes=(0, 1)), "s must"),
             (lambda: F.fftn(g, s=(3,)), "needs axes"),
             (lambda: F.fftn(g, axes=(0, 0)), "unique"), (lambda: F.fft(g, axis=3), "axis"),
             (lambda: F.fftfreq(0, comm=comm), "n"), (lambda: F.fft(g, layout="x"), "layout"),
             (lambda: F.fft(xdap.from_global(np.arange(3), comm=comm)), "floating")]
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError, IndexError), seconds=30)
        assert words in message, (words, message)


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    g = xdap.from_global(G, comm=comm)
    calls = [lambda: F.fft(g, axis=_one_rank(comm, 0, 1)),
             lambda: F.fftn(g, s=_one_rank(comm, (2, 2, 2), (2, 2, 3))),
             lambda: F.fft(g, norm=_one_rank(comm, "ortho", "forward")),
             lambda: F.fftshift(g, axes=_one_rank(comm, 0, (0, 1))),
             lambda: F.fftfreq(_one_rank(comm, 8, 9), comm=comm),
             lambda: F.fft(g, layout=_one_rank(comm, "input", "transposed"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in calls:
            same_error(comm, call, (ValueError, TypeError), seconds=30)


def _mpi4py_fft():
    """mpi4py-fft, or a skip where this venv has none -- in the venv on the
    MPI on PATH (``make test MPI=system``), where tools/site_stack.sh builds
    it against FFTW, it must be there: the comparison is never lost."""
    try:
        import mpi4py_fft
        return mpi4py_fft
    except ImportError:
        if os.environ.get("XDAP_MPI") == "system" and os.path.exists("/usr/include/fftw3.h"):
            raise AssertionError("mpi4py-fft is missing from the MPI=system venv, where "
                                 "tools/site_stack.sh builds it")
        pytest.skip("mpi4py-fft is not installed (the site stack: make test MPI=system)")


@pytest.mark.mpi(ranks=RANKS)
@pytest.mark.parametrize("slab", [True, False], ids=["slabs", "pencils"])
def test_fftn_equals_mpi4py_fft(comm, slab):
    """The same forward and backward transform as mpi4py-fft's PFFT (on
    FFTW), compared value by value where each puts its output, on uneven
    sizes: xdap's layout="transposed" output in mpi4py-fft's own slices,
    and both equal NumPy's on the whole array."""
    mpi4py_fft = _mpi4py_fft()
    shape = (9, 10, 7)
    g = np.random.default_rng(3).standard_normal(shape) + 1j * np.random.default_rng(4) \
        .standard_normal(shape)
    fft = mpi4py_fft.PFFT(comm, shape, axes=(0, 1, 2), dtype=np.complex128, slab=slab,
                          backend="fftw")
    u = mpi4py_fft.newDistArray(fft, False)
    u[...] = g[fft.local_slice(False)]
    # NumPy's convention (mpi4py-fft's default scales the forward transform)
    u_hat = fft.forward(u, mpi4py_fft.newDistArray(fft, True), normalize=False)
    theirs = np.zeros(shape, complex)
    theirs[fft.local_slice(True)] = np.asarray(u_hat)     # (its DistArray takes no ...)
    theirs = comm.allreduce(theirs)
    a = xdap.from_global(g, dist=("b",) if slab else ("b", "b"), comm=comm)
    mine = xdap.array_api.fft.fftn(a, layout="transposed")
    want = np.fft.fftn(g)
    np.testing.assert_allclose(mine.to_numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(theirs, want, rtol=1e-12, atol=1e-12)
    back = xdap.array_api.fft.ifftn(mine)
    v = fft.backward(u_hat, mpi4py_fft.newDistArray(fft, False), normalize=True)
    np.testing.assert_allclose(np.asarray(v), g[fft.local_slice(False)], rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(back.to_numpy(), g, rtol=1e-12, atol=1e-12)


@pytest.mark.mpi(ranks=RANKS)
def test_the_inverse_of_a_transposed_result_goes_back_to_its_slabs(comm):
    """``ifftn(fftn(a, layout="transposed"), layout="transposed")`` ends in
    ``a``'s own distribution -- the inverse transforms the axes already
    whole first, then the others after one move, as mpi4py-fft's backward
    lands in its input's slabs -- and gives ``a`` back."""
    g = np.random.default_rng(5).standard_normal((12, 10, 7)) + 0j
    for dist in (("b",), ("b", "b")):
        a = xdap.from_global(g, dist=dist, comm=comm)
        f = F.fftn(a, layout="transposed")
        assert f.distribution.maps[0].whole
        back = F.ifftn(f, layout="transposed")
        if dist == ("b",):
            assert back.distribution == a.distribution, (back.distribution, a.distribution)
        same(back, g, ("round trip", dist))
