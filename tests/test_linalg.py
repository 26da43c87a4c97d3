"""The Array API's linalg extension (xdap.array_api.linalg) on 1-4 ranks,
against NumPy on the global arrays: stacks whose batch dims are split
(cyclic, empty ranks) run LAPACK per rank; a split tall or wide matrix
goes through TSQR (qr, svd, svdvals, matrix_rank, pinv, the 2/-2/nuc
norms) or is gathered (square systems); norms, traces and diagonals from
each rank's own elements. A singular matrix on one rank is LinAlgError on
every rank; bad or one-rank-different arguments one error everywhere."""
import numpy as np
import pytest

import xdap
from helpers import same_error

L = xdap.array_api.linalg
xp = xdap.array_api
RANKS = (1, 2, 3, 4)
rng = np.random.default_rng(37)
S = rng.standard_normal((5, 4, 4))
S = S @ np.swapaxes(S, -1, -2) + 4 * np.eye(4)          # symmetric positive definite
T = rng.standard_normal((13, 4))                          # tall
W = np.ascontiguousarray(T[:3].T)                         # wide (4 x 3 -> 3 x ... )
Z = (rng.standard_normal((11, 3)) + 1j * rng.standard_normal((11, 3)))


def same(got, want, what, tol=1e-9):
    got = got.to_numpy() if hasattr(got, "to_numpy") else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(what))


def stacks(P):
    empty = {1: [5], 2: [0, 5], 3: [2, 0, 3], 4: [0, 5, 0, 0]}[P]
    return [dict(dist=("b",)), dict(dist=("c", "n", "b")), dict(dist=("b",), sizes=(empty,))]


def matrices(P, rows):
    empty = {1: [rows], 2: [0, rows], 3: [rows - 1, 0, 1], 4: [2, 0, rows - 2, 0]}[P]
    return [dict(dist=("b",)), dict(dist=("c",)), dict(dist=("b", "b")),
            dict(dist=("b",), sizes=(empty,))]


@pytest.mark.mpi(ranks=RANKS)
def test_stacks_run_lapack_per_rank(comm):
    for kw in stacks(comm.size):
        s = xdap.from_global(S, comm=comm, **kw)
        same(L.cholesky(s), np.linalg.cholesky(S), ("cholesky", kw))
        same(L.cholesky(s, upper=True), np.linalg.cholesky(S, upper=True), "upper")
        same(L.det(s), np.linalg.det(S), ("det", kw))
        same(L.inv(s), np.linalg.inv(S), "inv")
        same(L.eigvalsh(s), np.linalg.eigvalsh(S), "eigvalsh")
        w, v = L.eigh(s)
        same(w, np.linalg.eigh(S).eigenvalues, "eigh")
        same(xp.matmul(s, v), v.to_numpy() * w.to_numpy()[:, None, :], "eigh vectors")
        sign, logdet = L.slogdet(s)
        same(logdet, np.linalg.slogdet(S).logabsdet, "slogdet")
        same(L.matrix_power(s, 3), np.linalg.matrix_power(S, 3), "matrix_power")
        same(L.matrix_power(s, -1), np.linalg.inv(S), "matrix_power -1")
        same(L.trace(s, offset=1), np.trace(S, 1, axis1=-2, axis2=-1), "trace")
        same(L.diagonal(s, offset=-1), np.diagonal(S, -1, -2, -1), "diagonal")
        same(L.svdvals(s), np.linalg.svdvals(S), "svdvals")
        same(L.matrix_rank(s), np.linalg.matrix_rank(S), "matrix_rank")
        same(L.matrix_rank(s, rtol=np.full(5, 0.5)), np.linalg.matrix_rank(S, rtol=0.5),
             "matrix_rank rtol per matrix")
        same(L.pinv(s), np.linalg.pinv(S), "pinv")
        for o in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            same(L.matrix_norm(s, ord=o), np.linalg.matrix_norm(S, ord=o), ("matrix_norm", o))
        same(L.vector_norm(s, axis=(1, 2), ord=3), np.linalg.vector_norm(S, axis=(1, 2), ord=3),
             "vector_norm axes")
        same(L.solve(s, xdap.from_global(S[:, :, :2].copy(), comm=comm)),
             np.linalg.solve(S, S[:, :, :2]), "solve stacks")
        same(L.solve(s, np.ones(4)), np.linalg.solve(S, np.ones(4)), "solve vector")
        q, r = L.qr(s)
        same(xp.matmul(q, r), S, "qr")
        u, sv, vh = L.svd(s)
        same(xp.matmul(u * xp.expand_dims(sv, axis=1), vh), S, "svd")


@pytest.mark.mpi(ranks=RANKS)
def test_stacks_broadcast_in_matmul_and_solve(comm):
    """NumPy's (and the standard's) stack broadcasting on both sides:
    ``(1, 2, 3) @ (4, 3, 2)`` is ``(4, 2, 2)`` (the left stack stretched --
    it used to be refused), ``solve`` of stacks that broadcast, an empty
    ``(0, 0)`` system against a stack; split stacks (cyclic, an empty
    rank) and NumPy right operands too."""
    r = np.random.default_rng(5)
    for s1, s2 in (((1, 2, 3), (4, 3, 2)), ((1, 1, 2, 3), (2, 5, 3, 2)), ((4, 2, 3), (1, 3, 2)),
                   ((2, 1, 2, 3), (5, 3, 2)), ((1, 2, 3), (3, 2)), ((3, 2, 3), (2, 1, 3, 2))):
        g1, g2 = r.standard_normal(s1), r.standard_normal(s2)
        for kw in (dict(dist=("b",)), dict(dist=("c",))):
            a = xdap.from_global(g1, comm=comm, **kw)
            same(xp.matmul(a, xdap.from_global(g2, comm=comm, **kw)), g1 @ g2, ("matmul", s1, s2))
            same(xp.matmul(a, g2), g1 @ g2, ("matmul NumPy", s1, s2))
    for s1, s2 in (((0, 0), (3, 0, 2)), ((3, 3), (2, 3, 4)), ((1, 3, 3), (4, 3, 2)),
                   ((4, 3, 3), (1, 3, 2)), ((2, 1, 3, 3), (5, 3, 1))):
        g1 = r.standard_normal(s1) + 3 * np.eye(s1[-1])
        g2 = r.standard_normal(s2)
        a, b = xdap.from_global(g1, comm=comm), xdap.from_global(g2, comm=comm, dist=("c",))
        same(L.solve(a, b), np.linalg.solve(g1, g2), ("solve", s1, s2))
    same_error(comm, lambda: L.solve(xdap.from_global(np.ones((2, 3, 3)), comm=comm),
                                     np.ones((4, 3, 1))), match="do not broadcast")
    same_error(comm, lambda: xp.matmul(xdap.from_global(np.ones((2, 2, 3)), comm=comm),
                                       np.ones((3, 3, 2))), match="do not broadcast")


@pytest.mark.mpi(ranks=RANKS)
def test_a_split_tall_matrix_by_tsqr(comm):
    for kw in matrices(comm.size, 13):
        t = xdap.from_global(T, comm=comm, **kw)
        q, r = L.qr(t)
        qq, rr = q.to_numpy(), r.to_numpy()
        np.testing.assert_allclose(qq @ rr, T, atol=1e-12)
        np.testing.assert_allclose(qq.T @ qq, np.eye(4), atol=1e-12)
        np.testing.assert_allclose(np.abs(rr), np.abs(np.linalg.qr(T).R), atol=1e-12)
        assert np.allclose(np.tril(rr, -1), 0)
        u, sv, vh = L.svd(t, full_matrices=False)
        np.testing.assert_allclose((u.to_numpy() * sv.to_numpy()) @ vh.to_numpy(), T,
                                   atol=1e-12)
        same(sv, np.linalg.svdvals(T), ("svd", kw))
        same(L.svdvals(t), np.linalg.svdvals(T), "svdvals")
        same(L.matrix_rank(t), np.linalg.matrix_rank(T), "matrix_rank")
        same(L.pinv(t), np.linalg.pinv(T), ("pinv", kw))
        for o in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            same(L.matrix_norm(t, ord=o), np.linalg.matrix_norm(T, ord=o), ("norm", o, kw))
        same(L.matrix_norm(t, keepdims=True), np.linalg.matrix_norm(T, keepdims=True), "keep")
        same(L.vector_norm(t), np.linalg.vector_norm(T), "vector_norm")
        same(L.vector_norm(t, ord=np.inf), np.linalg.vector_norm(T, ord=np.inf), "inf")
        same(L.vector_norm(t, axis=0, keepdims=True, ord=1),
             np.linalg.vector_norm(T, axis=0, keepdims=True, ord=1), "vector_norm axis")
        same(L.trace(t, offset=-2), np.trace(T, -2), "trace")
        same(L.diagonal(t, offset=-3), np.diagonal(T, -3), "diagonal")
        u, sv, vh = L.svd(t)                             # full: an M x M U, gathered
        np.testing.assert_allclose(np.abs(sv.to_numpy()), np.linalg.svdvals(T))
        assert u.shape == (13, 13) and vh.shape == (4, 4)
    z = xdap.from_global(Z, comm=comm, dist=("c",))        # complex
    q, r = L.qr(z)
    np.testing.assert_allclose(q.to_numpy() @ r.to_numpy(), Z, atol=1e-12)
    same(L.pinv(z), np.linalg.pinv(Z), "complex pinv")


@pytest.mark.mpi(ranks=RANKS)
def test_a_split_wide_matrix_through_its_transpose(comm):
    wide = rng.standard_normal((3, 11))
    for kw in matrices(comm.size, 3)[:3]:
        w = xdap.from_global(wide, comm=comm, **kw)
        u, sv, vh = L.svd(w, full_matrices=False)
        np.testing.assert_allclose((u.to_numpy() * sv.to_numpy()) @ vh.to_numpy(), wide,
                                   atol=1e-12)
        same(L.svdvals(w), np.linalg.svdvals(wide), ("svdvals", kw))
        same(L.pinv(w), np.linalg.pinv(wide), ("pinv", kw))
        same(L.matrix_norm(w, ord=-2), np.linalg.matrix_norm(wide, ord=-2), "norm -2")
        q, r = L.qr(w)                                   # gathered
        np.testing.assert_allclose(q.to_numpy() @ r.to_numpy(), wide, atol=1e-12)


@pytest.mark.mpi(ranks=RANKS)
def test_split_square_systems_are_gathered(comm):
    A = S[0]
    for kw in matrices(comm.size, 4)[:3]:
        a = xdap.from_global(A, comm=comm, **kw)
        same(L.inv(a), np.linalg.inv(A), ("inv", kw))
        same(L.det(a), np.linalg.det(A), "det")
        same(L.cholesky(a), np.linalg.cholesky(A), "cholesky")
        same(L.solve(a, np.arange(4.0)), np.linalg.solve(A, np.arange(4.0)), "solve")
        same(L.eigvalsh(a), np.linalg.eigvalsh(A), "eigvalsh")
        same(L.matrix_power(a, 2), A @ A, "matrix_power")
    v1 = xdap.from_global(np.arange(5.0), comm=comm, dist=("c",))
    v2 = xdap.from_global(np.arange(3.0), comm=comm)
    same(L.outer(v1, v2), np.outer(np.arange(5.0), np.arange(3.0)), "outer")
    A3, B3 = rng.standard_normal((7, 3)), rng.standard_normal((7, 3))
    same(L.cross(xdap.from_global(A3, comm=comm, dist=("b", "b")),
                 xdap.from_global(B3, comm=comm)), np.cross(A3, B3), "cross")
    same(L.cross(xdap.from_global(A3, comm=comm), xdap.from_global(B3[0], comm=comm)),
         np.cross(A3, B3[0]), "cross broadcast")


@pytest.mark.mpi(ranks=RANKS)
def test_cholesky_block_cyclic_past_the_gather_limit(comm, monkeypatch):
    """Past BLOCK_ELEMENTS (lowered here) a split matrix is factored in
    blocks dealt over a 2-D grid, never gathered: NumPy's factor, real and
    complex, lower and upper; not positive definite: LinAlgError everywhere."""
    import xdap.api.linalg as linalg
    monkeypatch.setattr(linalg, "BLOCK_ELEMENTS", 0)
    monkeypatch.setattr(linalg, "BLOCK_SIZE", 3)
    for n, cplx, kw in [(10, False, dict(dist=("b",))), (11, True, dict(dist=("c", "b"))),
                        (4, False, dict(dist=("b",), sizes=([4] + [0] * (comm.size - 1),)))]:
        M = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if cplx else 0)
        A = M @ M.conj().T + n * np.eye(n)
        a = xdap.from_global(A, comm=comm, **kw)
        low = L.cholesky(a)
        if comm.size > 1:
            assert low.distribution.maps[0].block_size == 3        # block-cyclic, not gathered
        same(low, np.linalg.cholesky(A), ("block cholesky", n, kw))
        same(L.cholesky(a, upper=True), np.linalg.cholesky(A, upper=True), ("upper", n))
    bad = xdap.from_global(-np.eye(7), comm=comm)
    message = same_error(comm, lambda: L.cholesky(bad), np.linalg.LinAlgError)[1]
    assert "not positive definite" in message


@pytest.mark.mpi(ranks=RANKS)
def test_solve_block_cyclic_past_the_gather_limit(comm, monkeypatch):
    """Past BLOCK_ELEMENTS (lowered here) ``solve`` of a split matrix runs
    LU with partial pivoting on blocks dealt over a 2-D grid: NumPy's
    solution for a matrix that needs pivoting (a zero first entry), real
    and complex, a vector or several right-hand sides, a DistArray or
    NumPy ``x2``; an exactly singular matrix: LinAlgError everywhere."""
    import xdap.api.linalg as linalg
    monkeypatch.setattr(linalg, "BLOCK_ELEMENTS", 0)
    monkeypatch.setattr(linalg, "BLOCK_SIZE", 3)
    for n, cplx, kw in [(10, False, dict(dist=("b",))), (11, True, dict(dist=("c", "b"))),
                        (7, False, dict(dist=("b",), sizes=([7] + [0] * (comm.size - 1),)))]:
        A = rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if cplx else 0)
        A[0, 0] = 0
        a = xdap.from_global(A, comm=comm, **kw)
        b = np.arange(n, dtype=np.float64)
        same(L.solve(a, b), np.linalg.solve(A, b), ("block solve", n, kw))
        B = rng.standard_normal((n, 3))
        same(L.solve(a, xdap.from_global(B, comm=comm, dist=("c",))), np.linalg.solve(A, B),
             ("block solve, 3 right-hand sides", n))
    singular = np.ones((6, 6))
    message = same_error(comm, lambda: L.solve(xdap.from_global(singular, comm=comm),
                                               np.ones(6)), np.linalg.LinAlgError)[1]
    assert "Singular" in message


@pytest.mark.mpi(ranks=RANKS)
def test_matmul_of_two_split_matrices_by_summa(comm):
    """Neither operand gathered: both in blocks over one 2-D grid, the
    product there -- from any layout, any shapes, mixed dtypes."""
    for (m, k, n) in [(7, 5, 6), (13, 9, 4), (3, 8, 11), (2, 2, 2)]:
        A, B = rng.standard_normal((m, k)), rng.integers(-3, 3, (k, n))
        for kw1, kw2 in [(dict(), dict()), (dict(dist=("c", "b")), dict(dist=("b",))),
                         (dict(dist=("b", "b")), dict(dist=("n", "b")))]:
            a, b = xdap.from_global(A, comm=comm, **kw1), xdap.from_global(B, comm=comm, **kw2)
            same(a @ b, A @ B, (m, k, n, kw1, kw2))
            same(L.matmul(a, b), A @ B, "linalg.matmul")
    if comm.size == 4:
        c = xdap.from_global(np.ones((8, 8)), comm=comm) @ xdap.from_global(np.ones((8, 8)),
                                                                            comm=comm)
        assert c.distribution.grid == (2, 2)          # SUMMA's grid, not gathered rows


def _one_rank(comm, good, bad):
    return bad if comm.rank == comm.size - 1 else good


@pytest.mark.mpi(ranks=RANKS)
def test_failures_and_bad_arguments_are_one_error_everywhere(comm):
    singular = np.stack([np.eye(3), np.eye(3), np.zeros((3, 3)), np.eye(3)])
    message = same_error(comm, lambda: L.inv(xdap.from_global(singular, comm=comm)),
                         np.linalg.LinAlgError)[1]
    assert "Singular" in message
    t = xdap.from_global(T, comm=comm)
    cases = [(lambda: L.det(t), "square"), (lambda: L.qr(t, mode="r"), "mode"),
             (lambda: L.matrix_norm(t, ord=3), "ord"), (lambda: L.cholesky(t[0]), "2+ dims"),
             (lambda: L.matrix_rank(t, rtol="x"), "rtol"),
             (lambda: L.solve(xdap.from_global(S, comm=comm), np.ones(3)), "does not match"),
             (lambda: L.cross(t, t), "3 elements")]
    for call, words in cases:
        _, message = same_error(comm, call, (ValueError, TypeError), seconds=30)
        assert words in message, (words, message)


@pytest.mark.mpi(ranks=(2, 3, 4))
def test_one_rank_different_is_one_error_everywhere(comm):
    s = xdap.from_global(S, comm=comm)
    t = xdap.from_global(T, comm=comm)
    calls = [lambda: L.matrix_norm(t, ord=_one_rank(comm, 2, 1)),
             lambda: L.qr(t, mode=_one_rank(comm, "reduced", "complete")),
             lambda: L.svd(t, full_matrices=_one_rank(comm, True, False)),
             lambda: L.trace(s, offset=_one_rank(comm, 0, 1)),
             lambda: L.matrix_rank(s, rtol=_one_rank(comm, 0.1, 0.2)),
             lambda: L.solve(s, _one_rank(comm, np.ones(4), np.zeros(4))),
             lambda: L.cholesky(_one_rank(comm, s, xdap.from_global(S, comm=comm, dist=("c",))),
                                upper=False),
             lambda: L.vector_norm(t, axis=_one_rank(comm, 0, 1))]
    for call in calls:
        same_error(comm, call, (ValueError, TypeError), seconds=30)


@pytest.mark.mpi(ranks=RANKS)
def test_matrix_power_of_a_split_matrix_by_summa(comm):
    A = rng.standard_normal((6, 6)) / 3 + np.eye(6)
    for kw in (dict(dist=("b",)), dict(dist=("c", "b"))):
        a = xdap.from_global(A, comm=comm, **kw)
        for n in (0, 1, 2, 5, -2):
            same(L.matrix_power(a, n), np.linalg.matrix_power(A, n), ("matrix_power", n, kw))
    ints = xdap.from_global(np.arange(9).reshape(3, 3), comm=comm)
    same(L.matrix_power(ints, 3), np.linalg.matrix_power(np.arange(9).reshape(3, 3), 3), "ints")
