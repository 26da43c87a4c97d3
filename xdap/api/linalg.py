"""The Array API's ``linalg`` extension on distributed data (``xp.linalg``).

Three kinds of input, three ways of working -- each function says which it
takes and what it moves:

- **stacks of matrices** (``(..., M, N)``, 3+ dims) whose batch dims are
  distributed: every rank runs LAPACK (NumPy's ``numpy.linalg``) on its own
  matrices -- no data moves once the matrix dims are whole (one
  redistribution when they are not);
- **a 2-D matrix split by rows** (tall: ``M >= N``): the tall-skinny
  algorithms -- ``qr`` by TSQR (``xdap.linalg.tsqr``: each rank's QR, one
  ``Allgatherv`` of the ``N x N`` factors), ``svd``/``svdvals``/
  ``matrix_rank``/``pinv`` by TSQR then the SVD of the small R. A wide
  matrix takes the same road through its transpose (one move);
- **square systems** (``cholesky``, ``solve``, ``inv``, ``det``,
  ``slogdet``, ``eigh``, ``eigvalsh``; ``matrix_power`` of a negative
  power -- a non-negative one is repeated SUMMA) of a split 2-D
  matrix: gathered to every rank (one ``Allgatherv``, O(N^2) memory a rank;
  a ``RuntimeWarning`` above ``WARN_ELEMENTS``) and solved there, the
  results cut into row blocks; ``cholesky`` and ``solve`` of a matrix
  past ``BLOCK_ELEMENTS``: blocks dealt cyclically over a 2-D grid and
  factored there (``xdap.linalg.block_cholesky``; ``block_lu_solve``, LU
  with partial pivoting, the right-hand side on every rank), never
  gathered; the others past ``GATHER_ELEMENTS``: one clear ``ValueError``
  naming the size;
- ``matrix_norm``, ``vector_norm``, ``trace``, ``diagonal``, ``outer``,
  ``cross``: each rank's own elements and one reduction (or none).

A LAPACK failure on one rank's matrices (``LinAlgError``: singular, not
positive definite) is the same error on every rank. ``matmul`` (SUMMA for
two 2-D DistArrays, ``xdap.linalg.summa``), ``tensordot``, ``vecdot`` and
``matrix_transpose`` are the main namespace's.

>>> import numpy as np, xdap
>>> from mpi4py import MPI
>>> a = xdap.from_global(np.array([[4.0, 2.0], [2.0, 3.0]]), comm=MPI.COMM_SELF)
>>> la = xdap.array_api.linalg
>>> round(float(la.det(a)), 12), la.cholesky(a).to_numpy()[1, 1]
(8.0, np.float64(1.4142135623730951))
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from .. import arguments
from ..agreement import agreement
from ..arraylike import is_distributed
from ..contract import Repeats, collective
from ..distribution import Distribution, make_distribution
from ..movement.reduce import allreduce, counted_values, dot_parts
from .layouts import (axes_whole, in_blocks, moved, owned, rows, scalar_array, scalar_maker,
                      wrap)
from ..repeats import Rides, call_lane, plain

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matrix_norm",
           "matrix_power", "matrix_rank", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "trace", "vector_norm", "GATHER_ELEMENTS", "WARN_ELEMENTS"]

GATHER_ELEMENTS = 1 << 26     # a split matrix gathered to every rank: at most 512 MiB float64
WARN_ELEMENTS = 1 << 22       # ... and a warning past 32 MiB
BLOCK_ELEMENTS = 1 << 22      # cholesky of a split matrix this large: block-cyclic, not gathered
BLOCK_SIZE = 128              # ... in blocks of this many rows and columns


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


# -- the checks ---------------------------------------------------------------------
def _matrices(name, x, square=False, what="x", bools=False):
    arguments.numeric(name, x, what)
    if x.ndim < 2:
        raise ValueError(f"{name}: {what} must be a matrix or a stack of them (2+ dims), "
                         f"has {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: {what} must hold square matrices, its shape is {x.shape}")
    if x.parts.values.dtype.kind == "b" and not bools:
        raise TypeError(f"{name}: {what} must hold numbers, not bools")
    return x


def _split(x):
    """Whether ``x`` is one 2-D matrix spread over ranks (the distributed
    algorithms' case), not a stack nor a matrix every rank holds whole."""
    return x.ndim == 2 and not all(m.whole and not m.padded for m in x.distribution.maps)


def _gather_check(name, x, shape=None):
    """A split matrix a square-system function gathers: refused past
    ``GATHER_ELEMENTS``, with its size named (decided from the agreed shape)."""
    size = int(np.prod(shape or x.shape))
    if _split(x) and size > GATHER_ELEMENTS:
        raise ValueError(f"{name}: a {x.shape[0]} x {x.shape[1]} matrix split over ranks would "
                         f"be gathered to every rank ({size} elements, more than "
                         f"GATHER_ELEMENTS = {GATHER_ELEMENTS}); the block algorithms it needs "
                         "(2-D block-cyclic) are not in xdap yet")


# -- the ways of working --------------------------------------------------------------
def _stacked(x):
    """``x`` with its matrix dims whole on every rank (batch dims in blocks
    when they were not so): itself when it is so already."""
    d = x.distribution
    if all(m.whole and not m.padded for m in d.maps[-2:]) and \
            not any(m.padded for m in d.maps):
        return x
    spec = ("b",) * (x.ndim - 2) + ("n", "n")
    return moved(x, make_distribution(d.global_shape, spec, comm=x.comm))


def _lapack(name, comm, fn, *values):
    """``fn(*values)`` under one verdict: a LinAlgError (or any error) on
    one rank's matrices is the same error on every rank."""
    with agreement(comm, name):
        with np.errstate(all="ignore"):
            return fn(*values)


def _outputs(y, k, outs):
    """Each NumPy result (leading dims: ``y``'s ``k`` batch dims) as a
    DistArray with ``y``'s batch distribution."""
    d = y.distribution.leading(k)
    return tuple(scalar_array(y, o) if np.ndim(o) == 0 and k == 0 else
                 wrap(y, d.with_trailing(np.shape(o)[k:]), o) for o in outs)


def _per_matrix(name, x, fn):
    """``fn`` on every rank's matrices (a stack, or the whole matrix every
    rank holds); its results keep the batch dims' distribution."""
    y = _stacked(x)
    outs = _lapack(name, x.comm, fn, np.asarray(y.parts.values))
    return _outputs(y, x.ndim - 2, outs if isinstance(outs, tuple) else (outs,))


def _gathered(name, x, fn):
    """``fn`` on the whole split matrix, gathered to every rank (one
    Allgatherv); results in row blocks (0-d: on every rank)."""
    from .exchange import to_numpy
    size = int(np.prod(x.shape))
    if size > WARN_ELEMENTS:
        warnings.warn(f"{name}: the {x.shape[0]} x {x.shape[1]} matrix is gathered to every "
                      f"rank ({size} elements)", RuntimeWarning, stacklevel=4)
    outs = _lapack(name, x.comm, fn, np.asarray(to_numpy(x)))
    outs = outs if isinstance(outs, tuple) else (outs,)
    return tuple(_everywhere(x, o) for o in outs)


def _everywhere(x, value):
    """A NumPy result every rank holds alike, as a DistArray: 0-d as it is,
    else cut into row blocks (each rank keeps its rows)."""
    from .layouts import from_every_rank
    value = np.asarray(value)
    if value.ndim == 0:
        return scalar_array(x, value)
    return x.__xdap_wrap__(*from_every_rank(x, value), False, True)


def _one(results):
    return results[0]


def _rows_block(x):
    """``x`` (2-D) in row blocks and this rank's rows of it (NumPy)."""
    y = rows(x)
    return y, np.asarray(y.parts.values)


def _tall(x):
    """The tall side of a split 2-D matrix: ``(y, transposed)`` -- ``x`` in
    row blocks when ``M >= N``, else its conjugate transpose in row blocks
    (one move)."""
    from .manipulation import _permuted
    if x.shape[0] >= x.shape[1]:
        return rows(x), False
    t = _permuted(x, (1, 0))
    t = rows(t)
    values = np.asarray(t.parts.values)
    if values.dtype.kind == "c":
        t = wrap(t, t.distribution, values.conj())
    return t, True


def _floating(values):
    """NumPy's working dtype for LAPACK: floats and complex as they are,
    integers as float64."""
    return values if values.dtype.kind in "fc" else values.astype(np.float64)


def _tsqr(name, y, want_q=True):
    """TSQR (``xdap.linalg.tsqr``) of ``y``, a split matrix in row blocks,
    under one verdict: ``(this rank's rows of Q or None, R)``."""
    from ..linalg import tsqr
    return _lapack(name, y.comm, tsqr, y.comm, _floating(np.asarray(y.parts.values)), want_q)


# -- factorizations --------------------------------------------------------------------
@collective
def cholesky(x, /, *, upper=False):
    """The Cholesky factor of Hermitian positive-definite matrices
    (``numpy.linalg.cholesky``): lower, or upper with ``upper=True``.
    Stacks: per rank; a split matrix: gathered, or past ``BLOCK_ELEMENTS``
    factored block-cyclically over a 2-D grid, the factor in that layout
    (see the module)."""
    _matrices("cholesky", x, square=True)
    upper = arguments.flag("cholesky", "upper", upper)
    yield dict(x=x, upper=upper)
    fn = lambda v: np.linalg.cholesky(_floating(v), upper=upper)   # noqa: E731
    if not _split(x):
        return _one(_per_matrix("cholesky", x, fn))
    if int(np.prod(x.shape)) <= BLOCK_ELEMENTS:
        return _one(_gathered("cholesky", x, fn))
    return _block_cholesky(x, upper)


def _block_cyclic(x):
    """``x`` (a split square matrix) in blocks of ``BLOCK_SIZE`` dealt
    cyclically over a balanced 2-D grid -- ScaLAPACK's layout -- and its
    local array as a floating copy, with the block size."""
    from ..comm import balanced_grid
    nb = min(BLOCK_SIZE, x.shape[0])
    target = make_distribution(x.shape, ("c", "c"), grid=balanced_grid(x.comm.size, 2),
                               comm=x.comm, block_size=(nb, nb))
    y = moved(x, target)
    a = np.array(y.parts.values, dtype=_floating(np.zeros(0, y.parts.values.dtype)).dtype)
    return y, a, nb


def _block_solve(x1, b):
    """``x1 y = b`` for a split ``x1`` too large to gather: block-cyclic LU
    with partial pivoting (``xdap.linalg.block_lu_solve``); ``b`` (and the
    solution, then cut into row blocks) on every rank."""
    from ..linalg import block_lu_solve
    y, a, nb = _block_cyclic(x1)
    rhs = b.reshape(len(b), -1)
    out = block_lu_solve(x1.comm, a, y.distribution, nb, rhs)
    return _everywhere(x1, out.reshape(b.shape))


def _block_cholesky(x, upper):
    """A split matrix too large to gather: moved to blocks of ``BLOCK_SIZE``
    dealt cyclically over a 2-D grid (ScaLAPACK's layout), factored there
    (``xdap.linalg.block_cholesky``); the factor in that layout."""
    from ..linalg import block_cholesky
    from .manipulation import _permuted
    y, a, nb = _block_cyclic(x)
    target = y.distribution
    factor = wrap(y, target, block_cholesky(x.comm, a, target, nb))
    if not upper:
        return factor
    values = np.asarray(factor.parts.values)
    if values.dtype.kind == "c":
        factor = wrap(factor, target, values.conj())
    return _permuted(factor, (1, 0))


@collective
def qr(x, /, *, mode="reduced"):
    """``(Q, R)``: the QR factorization (``numpy.linalg.qr``). A split tall
    matrix: TSQR -- Q in the input's row blocks, R (N x N) in row blocks;
    ``mode="complete"`` of a split matrix taller than wide would make an
    M x M Q: gathered within ``GATHER_ELEMENTS``. Stacks: per rank."""
    _matrices("qr", x)
    mode = arguments.choice("qr", "mode", mode, ("reduced", "complete"))
    tall = x.shape[0] >= x.shape[1]
    if mode == "complete" or not tall:
        _gather_check("qr", x, (max(x.shape[-2:]), max(x.shape[-2:])))
    yield dict(x=x, mode=mode)
    fn = lambda v: tuple(np.linalg.qr(_floating(v), mode=mode))   # noqa: E731
    if not _split(x):
        return QRResult(*_per_matrix("qr", x, fn))
    if mode == "complete" and x.shape[0] != x.shape[1] or not tall:
        return QRResult(*_gathered("qr", x, fn))
    y = rows(x)
    q, r = _tsqr("qr", y)
    d = y.distribution.leading(1).with_trailing((r.shape[0],))
    return QRResult(wrap(y, d, q), _everywhere(x, r))


@collective
def svd(x, /, *, full_matrices=True):
    """``(U, S, Vh)``: the singular value decomposition
    (``numpy.linalg.svd``). A split matrix with ``full_matrices=False`` (or
    square): TSQR of its tall side, the SVD of the small R -- U (or Vh) in
    row (column) blocks, the small factors in row blocks. Stacks: per rank."""
    _matrices("svd", x)
    full = arguments.flag("svd", "full_matrices", full_matrices)
    if full and x.shape[0] != x.shape[1]:
        _gather_check("svd", x, (max(x.shape[-2:]), max(x.shape[-2:])))
    yield dict(x=x, full_matrices=full)
    fn = lambda v: tuple(np.linalg.svd(_floating(v), full_matrices=full))   # noqa: E731
    if not _split(x):
        return SVDResult(*_per_matrix("svd", x, fn))
    if full and x.shape[0] != x.shape[1]:
        return SVDResult(*_gathered("svd", x, fn))
    from .manipulation import _permuted
    y, transposed = _tall(x)
    q, r = _tsqr("svd", y)
    u_r, s, vh = _lapack("svd", x.comm, lambda a: np.linalg.svd(a, full_matrices=False), r)
    tall_u = wrap(y, y.distribution.leading(1).with_trailing((u_r.shape[1],)), q @ u_r)
    if not transposed:                 # x = (Q U_r) S Vh
        return SVDResult(tall_u, _everywhere(x, s), _everywhere(x, vh))
    # x^H = (Q U_r) S Vh  =>  x = Vh^H S (Q U_r)^H
    u = _everywhere(x, vh.conj().T)
    left = np.asarray(tall_u.parts.values)
    vh_x = _permuted(wrap(tall_u, tall_u.distribution, left.conj() if left.dtype.kind == "c"
                          else left), (1, 0))
    return SVDResult(u, _everywhere(x, s), vh_x)


@collective
def svdvals(x, /):
    """The singular values, descending (``numpy.linalg.svdvals``): of a
    split matrix by TSQR of its tall side (only the N x N factors move),
    on every rank; of stacks per rank."""
    _matrices("svdvals", x)
    yield dict(x=x)
    return _one(_singular_values("svdvals", x))


def _singular_values(name, x):
    if not _split(x):
        return _per_matrix(name, x, lambda v: np.linalg.svd(_floating(v), compute_uv=False))
    return (_everywhere(x, _split_singular_values(name, x)),)


def _split_singular_values(name, x):
    """The singular values of a split matrix, NumPy on every rank: TSQR of
    its tall side, then those of the small R."""
    y, _ = _tall(x)
    r = _tsqr(name, y, want_q=False)[1]
    # the same R on every rank, but memory is each rank's own: one verdict
    return _lapack(name, x.comm, lambda a: np.linalg.svd(a, compute_uv=False), r)


def _rtol(name, x, rtol):
    """``rtol``: None, a real number, or real numbers (a NumPy array or a
    DistArray) that broadcast to ``x``'s stack dims -- one per matrix."""
    if rtol is None:
        return None
    if isinstance(rtol, (bool, np.bool_)):
        raise TypeError(f"{name}: rtol must be real, got {rtol!r}")
    if is_distributed(rtol):
        arguments.numeric(name, rtol, "rtol")
        arguments.same_comm(name, (x, rtol))
        shape, kind = rtol.shape, rtol.parts.values.dtype.kind
    else:
        value = np.asarray(rtol)
        shape, kind = value.shape, value.dtype.kind
        if not shape:
            if kind not in "iuf":
                raise TypeError(f"{name}: rtol must be real, got {arguments._shown(rtol)}")
            return float(value)
        rtol = value
    if kind not in "iuf":
        raise TypeError(f"{name}: rtol must hold real numbers, not {kind!r} data")
    try:
        if np.broadcast_shapes(shape, x.shape[:-2]) != x.shape[:-2]:
            raise ValueError
    except ValueError:
        raise ValueError(f"{name}: rtol of shape {shape} does not broadcast to the stack "
                         f"{x.shape[:-2]}") from None
    return rtol


def _local_rtol(x, y, rtol):
    """This rank's tolerances for its matrices of ``y`` (``x`` in its
    stack layout): a float, or ``rtol`` broadcast to the stack and cut to
    this rank's batch indices."""
    if rtol is None or isinstance(rtol, float):
        return rtol
    from .exchange import to_numpy
    whole = np.asarray(to_numpy(rtol) if is_distributed(rtol) else rtol, np.float64)
    batch = x.shape[:-2]
    whole = np.broadcast_to(whole, batch)
    d = y.distribution
    return whole[np.ix_(*[np.asarray(d.global_indices(j)) for j in range(len(batch))])] \
        if batch else float(whole)


def _per_matrix_rtol(name, x, rtol, fn):
    """``fn(matrices, tolerances)`` per rank: ``rtol`` cut to its matrices."""
    y = _stacked(x)
    tol = _local_rtol(x, y, rtol)
    return _one(_per_matrix(name, y, lambda v: fn(v, tol)))


@collective
def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above ``rtol`` times the largest
    (default ``max(M, N) * eps``; ``rtol`` a number, or one a matrix that
    broadcasts to the stack; NumPy's ``matrix_rank``); through the
    singular values (TSQR for a split matrix)."""
    _matrices("matrix_rank", x)
    rtol = _rtol("matrix_rank", x, rtol)
    yield dict(x=x, rtol=rtol)
    if not _split(x):
        return _per_matrix_rtol("matrix_rank", x, rtol, lambda v, tol: np.asarray(
            np.linalg.matrix_rank(_floating(v), rtol=tol), np.int64))
    s = _split_singular_values("matrix_rank", x)
    tol = max(x.shape) * np.finfo(s.dtype).eps if rtol is None else _local_rtol(x, x, rtol)
    return scalar_array(x, np.asarray(np.count_nonzero(s > tol * (s.max() if len(s) else 0)),
                                      np.int64))


@collective
def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse (``numpy.linalg.pinv``, ``rtol``
    as NumPy's). A split matrix: TSQR of its tall side, then ``pinv(R)``;
    the result (N x M) lies in column blocks (M >= N) or row blocks."""
    _matrices("pinv", x)
    rtol = _rtol("pinv", x, rtol)
    yield dict(x=x, rtol=rtol)
    if not _split(x):
        return _per_matrix_rtol("pinv", x, rtol,
                                lambda v, tol: np.linalg.pinv(_floating(v), rtol=tol))
    from .manipulation import _permuted
    y, transposed = _tall(x)
    q, r = _tsqr("pinv", y)
    # the standard's default tolerance counts x's dims, not R's
    cut = max(x.shape) * np.finfo(r.dtype).eps if rtol is None else _local_rtol(x, x, rtol)
    pr = _lapack("pinv", x.comm, lambda a: np.linalg.pinv(a, rtol=cut), r)
    b = q @ pr.conj().T                        # the rows of pinv(tall)^H
    if transposed:                             # pinv(x) = pinv(x^H)^H = b
        return wrap(y, y.distribution.leading(1).with_trailing((b.shape[1],)), b)
    b = b.conj() if b.dtype.kind == "c" else b
    return _permuted(wrap(y, y.distribution.leading(1).with_trailing((b.shape[1],)), b), (1, 0))


# -- square systems ------------------------------------------------------------------------
def _square(name, x, fn):
    _matrices(name, x, square=True)
    _gather_check(name, x)
    yield dict(x=x)
    results = _gathered(name, x, fn) if _split(x) else _per_matrix(name, x, fn)
    return results


@collective
def det(x, /):
    """The determinant (``numpy.linalg.det``)."""
    return _one((yield from _square("det", x, lambda v: np.linalg.det(_floating(v)))))


@collective
def slogdet(x, /):
    """``(sign, logabsdet)`` of the determinant (``numpy.linalg.slogdet``)."""
    return SlogdetResult(*(yield from _square(
        "slogdet", x, lambda v: tuple(np.linalg.slogdet(_floating(v))))))


@collective
def inv(x, /):
    """The inverse (``numpy.linalg.inv``); singular: ``LinAlgError`` on
    every rank."""
    return _one((yield from _square("inv", x, lambda v: np.linalg.inv(_floating(v)))))


@collective
def eigh(x, /):
    """``(eigenvalues, eigenvectors)`` of Hermitian matrices, ascending
    (``numpy.linalg.eigh``; the lower triangle is read)."""
    return EighResult(*(yield from _square("eigh", x,
                                           lambda v: tuple(np.linalg.eigh(_floating(v))))))


@collective
def eigvalsh(x, /):
    """The eigenvalues of Hermitian matrices, ascending."""
    return _one((yield from _square("eigvalsh", x,
                                    lambda v: np.linalg.eigvalsh(_floating(v)))))


@collective
def matrix_power(x, n, /):
    """``x`` to the integer power ``n`` (``numpy.linalg.matrix_power``;
    negative: of the inverse). Stacks: per rank. A split matrix, ``n >= 0``:
    repeated squaring by SUMMA (``matmul``: about ``2 log2 n`` products,
    nothing gathered; ``n = 0`` the identity, born distributed); ``n < 0``:
    the inverse gathered (within ``GATHER_ELEMENTS``), then the same."""
    _matrices("matrix_power", x, square=True)
    n = arguments.integer("matrix_power", "n", n)
    if n < 0:
        _gather_check("matrix_power", x)
    yield dict(x=x, n=n)
    fn = lambda v: np.linalg.matrix_power(v if n >= 0 else _floating(v), n)   # noqa: E731
    if not _split(x):
        return _one(_per_matrix("matrix_power", x, fn))
    if n < 0:
        x = _one(_gathered("matrix_power", x, lambda v: np.linalg.inv(_floating(v))))
        n = -n
    return _power(x, n)


def _power(x, n):
    """``x ** n`` (n >= 0) of a split square matrix by repeated squaring,
    each product SUMMA's (``linear_algebra._matmul``)."""
    from .creation import eye
    from .linear_algebra import _matmul
    if n == 0:
        return eye(x.shape[0], dtype=x.parts.values.dtype, comm=x.comm)
    result, square = None, x
    while True:
        if n & 1:
            result = square if result is None else _matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = _matmul(square, square)


@collective
def solve(x1, x2, /):
    """The solution of ``x1 @ y = x2`` (``numpy.linalg.solve``): ``x2`` a
    vector (M,) or a matrix / stack (..., M, K) with ``x1``'s batch dims
    (moved onto ``x1``'s stack layout), or a NumPy array every rank holds.
    A split ``x1``: gathered with ``x2``, or past ``BLOCK_ELEMENTS`` solved
    by block-cyclic LU with partial pivoting (``x2`` on every rank: O(M K)
    a rank); the solution in row blocks.  The stacks of ``x1`` and a
    stacked ``x2`` broadcast against each other (each brought to the common
    stack first: a copy, ``broadcast_to``'s)."""
    from .linear_algebra import _operands
    _matrices("solve", x1, square=True, what="x1")
    m = x1.shape[-1]
    x2 = _operands("solve", x1, x2)
    shape2 = x2.shape
    if len(shape2) == 0 or (len(shape2) == 1 and shape2[0] != m) or \
            (len(shape2) > 1 and shape2[-2] != m):
        raise ValueError(f"solve: x2 of shape {shape2} does not match x1 of shape {x1.shape}")
    batch = None
    if len(shape2) > 2:                  # stacks broadcast, as the standard says
        try:
            batch = np.broadcast_shapes(x1.shape[:-2], shape2[:-2])
        except ValueError:
            raise ValueError(f"solve: x1's stack {x1.shape[:-2]} and x2's {shape2[:-2]} do "
                             "not broadcast") from None
    yield dict(x1=x1, x2=x2)
    if batch is not None:                # both brought to the common stack (copies)
        from .layouts import broadcast
        x1 = broadcast(x1, batch + x1.shape[-2:])
        x2 = broadcast(x2, batch + shape2[-2:]) if is_distributed(x2) else \
            np.broadcast_to(x2, batch + shape2[-2:])
        shape2 = x2.shape
    fn = lambda a, b: np.linalg.solve(_floating(a), b)          # noqa: E731
    if _split(x1) or len(shape2) <= 2 and x1.ndim == 2:
        from .exchange import to_numpy
        b = np.asarray(to_numpy(x2)) if is_distributed(x2) else x2
        if _split(x1) and int(np.prod(x1.shape)) > BLOCK_ELEMENTS:
            return _block_solve(x1, b)
        return _one(_gathered("solve", x1, lambda a: fn(a, b)))
    y1 = _stacked(x1)
    k = x1.ndim - 2
    if len(shape2) > 2:
        b = np.asarray(moved(x2, y1.distribution.leading(k).with_trailing(
            shape2[-2:])).parts.values)
    else:
        from .exchange import to_numpy
        b = np.asarray(to_numpy(x2)) if is_distributed(x2) else x2
    out = _lapack("solve", x1.comm, fn, np.asarray(y1.parts.values), b)
    return _outputs(y1, k, (out,))[0]


# -- norms, traces, diagonals ----------------------------------------------------------------
@collective
def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """The matrix norm (``numpy.linalg.matrix_norm``): ``fro`` (default),
    ``nuc``, 1, -1, 2, -2, inf, -inf. A split matrix: ``fro`` from every
    rank's elements (one Allreduce); 1 / inf from column / row sums of the
    row blocks (one move to row blocks, one Allreduce); 2, -2, ``nuc``
    from the singular values (TSQR). Stacks: per rank."""
    _matrices("matrix_norm", x)
    keepdims = arguments.flag("matrix_norm", "keepdims", keepdims)
    if isinstance(ord, str):
        ok = ord in ("fro", "nuc")
    else:
        ok = isinstance(ord, (int, float, np.integer, np.floating)) and \
            not isinstance(ord, (bool, np.bool_)) and float(ord) in (1, -1, 2, -2, np.inf,
                                                                     -np.inf)
    if not ok:
        raise ValueError(f"matrix_norm: ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, "
                         f"-inf, got {arguments._shown(ord)}")
    ord = ord if isinstance(ord, str) else float(ord)
    yield dict(x=x, keepdims=keepdims, ord=ord)
    numpy_ord = ord if isinstance(ord, str) else (int(ord) if np.isfinite(ord) else ord)
    if not _split(x):
        return _one(_per_matrix("matrix_norm", x, lambda v: np.linalg.matrix_norm(
            v, keepdims=keepdims, ord=numpy_ord)))
    real = np.result_type(_floating(np.zeros(0, x.parts.values.dtype)).real)
    if ord == "fro":
        v, _ = counted_values(x.distribution, x.parts)
        total = allreduce(x.comm, np.array([np.sum(np.abs(v) ** 2, dtype=real)]), "sum")[0]
        value = np.sqrt(total)
    elif ord in (1.0, -1.0, np.inf, -np.inf):
        y, a = _rows_block(x)
        if ord in (1.0, -1.0):       # column sums over every rank's rows
            sums = allreduce(x.comm, np.abs(a).sum(axis=0, dtype=real), "sum")
            value = sums.max() if ord > 0 else sums.min()
        else:                        # row sums: each rank's own rows
            sums = np.abs(a).sum(axis=1, dtype=real)
            pick, op = (np.max, "max") if ord > 0 else (np.min, "min")
            edge = -np.inf if ord > 0 else np.inf
            value = allreduce(x.comm, np.array([pick(sums) if len(sums) else edge], real),
                              op)[0]
    else:
        sv = _split_singular_values("matrix_norm", x)
        value = sv.sum() if ord == "nuc" else sv.max() if ord == 2 else sv.min()
    value = np.asarray(value, real)
    return _everywhere(x, value.reshape(1, 1)) if keepdims else scalar_array(x, value)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """``_vector_norm``; a repeated 2-norm of plain float data over
    everything takes its prepared path (``xdap.repeats``): each rank's
    BLAS dot and the kept digest in one message."""
    out = call_lane(_NORMS, _vector_norm, (x,), (),
                    {"axis": axis, "keepdims": keepdims, "ord": ord}, _norm_lane)
    if out is NotImplemented:
        return _vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    return out


def _norm_lane(agreed):
    """The work of a repeated ``vector_norm`` (``call_lane``'s ``make``)."""
    x = agreed["x"]
    if not plain(x) or x.dtype.kind not in "fc" or agreed["keepdims"] or \
            agreed["ord"] != 2 or agreed["axis"] not in (None, tuple(range(x.ndim))):
        return None
    partial, combine = dot_parts(x.distribution, x.dtype)
    real = np.empty(0, x.dtype).real.dtype
    finish = scalar_maker(x, real)
    if x.ndim == 1:
        payload = lambda x: partial(x.parts.values, x.parts.values)     # noqa: E731
    else:
        def payload(x):
            values = x.parts.values.reshape(-1)
            return partial(values, values)
    return Rides(payload, lambda x, part, records: finish(x, np.sqrt(combine(part, records).real)))


_NORMS = Repeats()


@collective(rides=True, name="vector_norm")
def _vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """The vector norm over ``axis`` (default: all elements;
    ``numpy.linalg.vector_norm``): ``ord`` any real number, inf, -inf, 0.
    Over all elements: every rank's own, one Allreduce; over some axes:
    those axes made whole (one move), then NumPy per rank."""
    arguments.numeric("vector_norm", x)
    keepdims = arguments.flag("vector_norm", "keepdims", keepdims)
    if isinstance(ord, (bool, np.bool_)) or not isinstance(ord, (int, float, np.integer,
                                                                   np.floating)):
        raise TypeError(f"vector_norm: ord must be a real number, got {arguments._shown(ord)}")
    ord = float(ord)
    if axis is not None:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(arguments.axis("vector_norm", x.ndim, a) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"vector_norm: repeated axes {axes}")
        axis = tuple(sorted(axes))
    vote = yield dict(x=x, axis=axis, keepdims=keepdims, ord=ord)
    values = x.parts.values
    real = np.result_type(_floating(np.zeros(0, values.dtype)).real)
    if axis is None or len(axis) == x.ndim:
        # every rank's own elements, one message: the partial rides with the vote
        v, _ = counted_values(x.distribution, x.parts)
        if ord == 2 and v.dtype.kind in "fc":    # NumPy's own: sqrt(dot(x, x)), unscaled
            v = v.astype(np.result_type(v.dtype, real), copy=False)
            part = np.vdot(v, v).real if v.dtype.kind == "c" else np.dot(v, v)
            value = np.sqrt(allreduce(x.comm, np.array([part], real), "sum", vote)[0])
        else:
            mags = np.abs(v).astype(real, copy=False)
            if ord == np.inf:
                value = allreduce(x.comm, np.array([mags.max() if len(mags) else 0], real),
                                  "max", vote)[0]
            elif ord == -np.inf:
                value = allreduce(x.comm, np.array([mags.min() if len(mags) else np.inf],
                                                   real), "min", vote)[0]
            elif ord == 0:
                value = allreduce(x.comm, np.array([np.count_nonzero(mags)], real), "sum",
                                  vote)[0]
            else:                        # NumPy's sum(|x|**ord)**(1/ord), unscaled as NumPy's
                with np.errstate(all="ignore"):
                    part = np.sum(mags * mags if ord == 2 else mags ** ord, dtype=real)
                total = allreduce(x.comm, np.array([part], real), "sum", vote)[0]
                with np.errstate(all="ignore"):
                    value = np.sqrt(total) if ord == 2 else total ** (1 / ord)
        value = np.asarray(value, real)
        if keepdims:
            return _everywhere(x, value.reshape((1,) * x.ndim))
        return scalar_array(x, value)
    vote.cast()
    y = axes_whole(x, axis)
    out = np.linalg.vector_norm(np.asarray(y.parts.values), axis=axis, keepdims=keepdims,
                                ord=ord).astype(real, copy=False)
    return wrap(y, _without(y.distribution, axis, keepdims), out)


vector_norm.__xdap_contract__ = _vector_norm.__xdap_contract__


def _without(d, axes, keepdims):
    """``d`` with ``axes`` (whole) dropped, or kept of length 1."""
    from .layouts import with_axis
    if keepdims:
        for a in axes:
            d = with_axis(d, a, 1)
        return d
    keep = [k for k in range(d.ndim) if k not in axes]
    return Distribution([d.maps[k] for k in keep], d.comm, np.asarray(d.rank_coords)[:, keep])


def _trace_dtype(dtype):
    """The standard's: the input's dtype, but integers narrower than the
    default integer widened to 64 bits (signed or unsigned as they are)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu" and dt.itemsize < 8:
        return np.dtype(np.int64 if dt.kind == "i" else np.uint64)
    return dt


@collective
def trace(x, /, *, offset=0, dtype=None):
    """The sums along the ``offset`` diagonal of the last two dims
    (``numpy.trace``). A split matrix: each rank's own diagonal elements,
    one Allreduce; stacks per rank."""
    _matrices("trace", x)
    offset = arguments.integer("trace", "offset", offset)
    dt = arguments.dtype("trace", dtype) or _trace_dtype(x.parts.values.dtype)
    yield dict(x=x, offset=offset, dtype=dt)
    if not _split(x):
        return _one(_per_matrix("trace", x, lambda v: np.trace(
            v, offset=offset, axis1=-2, axis2=-1, dtype=dt)))
    d = x.distribution
    block = owned(d, x.parts)
    i = np.asarray(d.global_indices(0))[d.maps[0].owned_local_slice(d.coords[0])]
    j = np.asarray(d.global_indices(1))[d.maps[1].owned_local_slice(d.coords[1])]
    on = (j[None, :] - i[:, None]) == offset
    part = np.sum(block[on], dtype=dt)
    return scalar_array(x, np.asarray(allreduce(x.comm, np.array([part], dt), "sum")[0], dt))


@collective
def diagonal(x, /, *, offset=0):
    """The ``offset`` diagonal of the last two dims (``numpy.diagonal``).
    A split matrix: each rank takes the diagonal elements of its row block
    (one move to row blocks when the columns are split): a 1-D array in
    blocks, no gather; stacks per rank."""
    _matrices("diagonal", x, bools=True)
    offset = arguments.integer("diagonal", "offset", offset)
    yield dict(x=x, offset=offset)
    if not _split(x):
        return _one(_per_matrix("diagonal", x, lambda v: np.ascontiguousarray(
            np.diagonal(v, offset=offset, axis1=-2, axis2=-1))))
    m, n = x.shape
    y, a = _rows_block(x)
    first, last = max(0, -offset), max(0, min(m, n - offset))   # the rows with an element
    bounds = np.asarray(y.distribution.maps[0].bounds)
    counts = [int(max(0, min(hi, last) - max(lo, first)))
              for lo, hi in zip(bounds[:-1], bounds[1:])]
    lo = int(bounds[y.distribution.coords[0]])
    rows_here = np.arange(max(lo, first), max(lo, first) + counts[y.distribution.coords[0]])
    values = np.ascontiguousarray(a[rows_here - lo, rows_here + offset])
    length = sum(counts)
    d = make_distribution((length,), ("b",), comm=x.comm, sizes=(counts,))
    return wrap(y, d, values)


@collective
def outer(x1, x2, /):
    """The outer product of two vectors (``numpy.outer``): ``x1``'s
    elements in blocks (one move from other layouts), ``x2`` gathered to
    every rank (O(len(x2))); the result in ``x1``'s row blocks."""
    arguments.numeric("outer", x1, "x1")
    arguments.numeric("outer", x2, "x2")
    arguments.same_comm("outer", (x1, x2))
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-D, got shapes {x1.shape} and {x2.shape}")
    yield dict(x1=x1, x2=x2)
    from .exchange import to_numpy
    y = in_blocks(x1)
    right = np.asarray(to_numpy(x2))
    out = np.multiply.outer(np.asarray(y.parts.values), right)
    return wrap(y, y.distribution.with_trailing((len(right),)), out)


@collective
def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-element vectors along ``axis``
    (``numpy.cross``): ``x2`` moved onto ``x1``'s distribution, ``axis``
    made whole (one move when it is split), then NumPy per rank."""
    arguments.numeric("cross", x1, "x1")
    arguments.numeric("cross", x2, "x2")
    arguments.same_comm("cross", (x1, x2))
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cross: x1 of shape {x1.shape} and x2 of shape {x2.shape} do not "
                         "broadcast") from None
    if axis is None or isinstance(axis, (bool, np.bool_)) or \
            not isinstance(axis, (int, np.integer)) or not -min(x1.ndim, x2.ndim) <= axis < 0:
        raise ValueError(f"cross: axis must be a negative int within both arrays' dims "
                         f"(-{min(x1.ndim, x2.ndim)}..-1), got {arguments._shown(axis)}")
    axis = int(axis) + len(shape)
    if x1.shape[axis - len(shape)] != 3 or x2.shape[axis - len(shape)] != 3:
        raise ValueError(f"cross: axis {axis - len(shape)} must have 3 elements in both, has "
                         f"{x1.shape[axis - len(shape)]} and {x2.shape[axis - len(shape)]}")
    yield dict(x1=x1, x2=x2, axis=axis)
    if x1.shape != shape or x2.shape != shape:
        from .manipulation import broadcast_to
        x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    y1 = axes_whole(x1, (axis,))
    y2 = moved(x2, y1.distribution)
    v1, v2 = np.asarray(y1.parts.values), np.asarray(y2.parts.values)
    if v1.size:
        out = np.cross(v1, v2, axis=axis)
    else:        # a rank without elements (a 1-D pair lies on rank 0 alone)
        out = np.zeros(v1.shape, np.result_type(v1, v2))
    return wrap(y1, y1.distribution, out)
