"""Lanczos, eigsh and lanczos_inverse_sqrt against dense eigh, ARPACK and conjugate gradients."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from hypothesis import given
from hypothesis import strategies as st

from laplace_lab.numerics.krylov import lanczos, lanczos_inverse_sqrt
from laplace_lab.numerics.thick_restart import eigsh
from tests.numerics.conftest import host


def _orthogonal(n: int, rng: np.random.Generator) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


def _with_spectrum(d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    Q = _orthogonal(d.size, rng)
    A = (Q * d) @ Q.T
    return 0.5 * (A + A.T)


def _cases() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    n = 120
    G = rng.standard_normal((n, n))
    J = rng.standard_normal((15, n))  # the GGN case: rank N = 15 < p = 120
    clustered = np.concatenate([1.0 + 1e-6 * np.arange(6), np.linspace(0.0, 0.5, n - 6)])
    repeated = np.concatenate([[3.0, 3.0, 3.0, 2.0, 2.0], np.linspace(0.0, 1.5, n - 5)])
    return {
        "random_spd": G @ G.T / n + 0.1 * np.eye(n),
        "psd_rank_15": J.T @ J,
        "identity": np.eye(n),
        "clustered": _with_spectrum(clustered, rng),
        "repeated": _with_spectrum(repeated, rng),
        "norm_1e-8": 1e-8 * (G @ G.T / n),
        "norm_1e+8": 1e8 * (G @ G.T / n),
    }


CASES = _cases()


def _true_residuals(A: np.ndarray, values: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    return np.linalg.norm(A @ vectors - vectors * values, axis=0)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("which", ["LA", "SA"])
def test_eigsh_matches_dense_eigh(name, which):
    A = CASES[name]
    n, k = A.shape[0], 8
    dense = np.linalg.eigvalsh(A)
    expected = dense[::-1][:k] if which == "LA" else dense[:k]
    scale = np.max(np.abs(dense))
    res = eigsh(lambda v: A @ v, n, k, which=which, rng=np.random.default_rng(1))
    assert res.converged
    assert np.all(np.isfinite(res.values)) and np.all(np.isfinite(res.vectors))
    np.testing.assert_allclose(res.values, expected, rtol=0, atol=1e-10 * scale)
    # No false convergence: the reported residuals are the true ones, and small.
    true = _true_residuals(A, res.values, res.vectors)
    assert np.all(true <= 1e-10 * scale * 10)
    np.testing.assert_allclose(res.residuals, true, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(res.vectors.T @ res.vectors, np.eye(k), atol=1e-12)


def test_eigsh_largest_magnitude_on_indefinite():
    rng = np.random.default_rng(3)
    d = np.concatenate([[-9.0, 8.0, -7.5], rng.uniform(-2, 2, 77)])
    A = _with_spectrum(d, rng)
    res = eigsh(lambda v: A @ v, 80, 3, which="LM", rng=0)
    np.testing.assert_allclose(res.values, [-9.0, 8.0, -7.5], atol=1e-10 * 9)


def test_eigsh_same_seed_same_bits_and_different_seed_same_values():
    A = CASES["random_spd"]
    runs = [eigsh(lambda v: A @ v, 120, 6, rng=np.random.default_rng(s)) for s in (5, 5, 6)]
    assert np.array_equal(runs[0].values, runs[1].values)
    assert np.array_equal(runs[0].vectors, runs[1].vectors)
    np.testing.assert_allclose(runs[0].values, runs[2].values, atol=1e-10 * runs[0].values[0])
    # And the default (rng=None) is seeded, hence deterministic too.
    a, b = (eigsh(lambda v: A @ v, 120, 6, rng=0) for _ in range(2))
    assert np.array_equal(a.values, b.values)


def test_eigsh_agrees_with_arpack_on_the_same_linear_operator():
    rng = np.random.default_rng(11)
    J = rng.standard_normal((60, 800)) * (1.0 / np.arange(1, 61))[:, None]
    op = spla.LinearOperator((800, 800), matvec=lambda v: J.T @ (J @ v), dtype=np.float64)
    v0 = rng.standard_normal(800)
    arpack = np.sort(spla.eigsh(op, k=10, which="LA", v0=v0, return_eigenvectors=False))[::-1]
    ours = eigsh(op.matvec, 800, 10, v0=v0, rng=0)
    np.testing.assert_allclose(ours.values, arpack, rtol=0, atol=1e-10 * arpack[0])


def test_eigsh_on_exhausted_space_returns_all_eigenpairs():
    A = CASES["psd_rank_15"][:30, :30]
    res = eigsh(lambda v: A @ v, 30, 30, rng=0)
    np.testing.assert_allclose(res.values, np.linalg.eigvalsh(A)[::-1], atol=1e-10 * res.values[0])


def test_lanczos_relation_orthogonality_and_tridiagonal():
    A = CASES["random_spd"]
    run = lanczos(lambda v: A @ v, 120, 30, rng=np.random.default_rng(2))
    Q = run.basis
    T = np.diag(run.alpha) + np.diag(run.beta, 1) + np.diag(run.beta, -1)
    R = A @ Q - Q @ T  # = β_m q_{m+1} e_mᵀ: zero but for the last column
    assert np.max(np.abs(R[:, :-1])) <= 1e-12 * np.linalg.norm(A, 2)
    np.testing.assert_allclose(np.linalg.norm(R[:, -1]), run.residual_norm, rtol=1e-10)
    assert run.orthogonality_loss <= 1e-13
    assert run.num_matvecs == 30 and run.breakdowns == ()


def test_lanczos_without_reorthogonalisation_reports_orthogonality_loss():
    d = np.concatenate([np.geomspace(1e-3, 1e3, 60)])
    A = _with_spectrum(d, np.random.default_rng(4))
    plain = lanczos(lambda v: A @ v, 60, 50, reorthogonalize="none", rng=0)
    full = lanczos(lambda v: A @ v, 60, 50, reorthogonalize="full", rng=0)
    assert plain.orthogonality_loss > 1e-2  # converged Ritz vectors reappear
    assert full.orthogonality_loss < 1e-13


def test_lanczos_breakdown_on_rank_deficient_ggn_restarts_orthogonally():
    J = np.random.default_rng(5).standard_normal((10, 50))
    G = J.T @ J
    run = lanczos(lambda v: G @ v, 50, 25, rng=0)
    assert run.breakdowns and run.breakdowns[0] >= 9  # Krylov space of G has dimension ≤ 11
    assert run.orthogonality_loss < 1e-13
    T = np.diag(run.alpha) + np.diag(run.beta, 1) + np.diag(run.beta, -1)
    # The Ritz values include every non-zero eigenvalue of G (exact invariant subspace).
    ritz = np.sort(np.linalg.eigvalsh(T))[::-1][:10]
    np.testing.assert_allclose(ritz, np.linalg.eigvalsh(G)[::-1][:10], atol=1e-10 * ritz[0])
    stopped = lanczos(lambda v: G @ v, 50, 25, on_breakdown="stop", rng=0)
    # dim K(G, v0) = 11; finite precision may need one more step to see the breakdown.
    assert stopped.basis.shape[1] == stopped.breakdowns[0] + 1 <= 12
    assert stopped.residual_norm == 0.0


def test_lanczos_on_identity_breaks_down_every_step_without_nan():
    run = lanczos(lambda v: v, 40, 10, rng=0)
    assert run.breakdowns == tuple(range(10))
    np.testing.assert_array_equal(run.alpha, np.ones(10))
    assert np.all(run.beta == 0.0) and run.orthogonality_loss < 1e-14


def _cg_iterates(A: np.ndarray, b: np.ndarray, steps: int) -> list[np.ndarray]:
    x, r = np.zeros_like(b), b.copy()
    p, out = r.copy(), []
    for _ in range(steps):
        Ap = A @ p
        a = (r @ r) / (p @ Ap)
        x = x + a * p
        r_new = r - a * Ap
        p = r_new + (r_new @ r_new) / (r @ r) * p
        r = r_new
        out.append(x.copy())
    return out


def test_inverse_sqrt_to_completion_inverts_spd_matrix():
    A = CASES["random_spd"][:60, :60]
    L = lanczos_inverse_sqrt(lambda v: A @ v, np.ones(60), 60)
    assert np.linalg.norm(L @ L.T @ A - np.eye(60), 2) <= 1e-6


@pytest.mark.parametrize("m", [1, 3, 8, 15])
def test_inverse_sqrt_partial_runs_reproduce_conjugate_gradients(m):
    A = CASES["random_spd"][:60, :60]
    b = np.random.default_rng(8).standard_normal(60)
    L = lanczos_inverse_sqrt(lambda v: A @ v, b, m)
    x_cg = _cg_iterates(A, b, m)[-1]
    np.testing.assert_allclose(L @ (L.T @ b), x_cg, rtol=0, atol=1e-9 * np.linalg.norm(x_cg))


def test_inverse_sqrt_pseudo_inverts_psd_on_its_range():
    J = np.random.default_rng(9).standard_normal((6, 40))
    G = J.T @ J
    v = G @ np.ones(40)  # in range(G): Krylov space = range(G)
    L = lanczos_inverse_sqrt(lambda x: G @ x, v, 40)
    assert L.shape[1] == 6
    np.testing.assert_allclose(
        L @ L.T, np.linalg.pinv(G), atol=1e-8 * np.linalg.norm(np.linalg.pinv(G))
    )


@given(
    rank=st.integers(1, 25),
    n=st.integers(26, 60),
    k=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    log_scale=st.floats(-8, 8),
)
def test_eigsh_property_psd_of_any_rank(rank, n, k, seed, log_scale):
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((rank, n)) * 10.0**log_scale
    A = J.T @ J
    res = eigsh(lambda v: A @ v, n, k, rng=np.random.default_rng(seed))
    dense = np.linalg.eigvalsh(A)[::-1][:k]
    assert res.converged and np.all(np.isfinite(res.values))
    np.testing.assert_allclose(res.values, dense, rtol=0, atol=1e-10 * dense[0])


def test_backends_agree_with_numpy(backend):
    A_np = CASES["psd_rank_15"] + 0.5 * np.eye(120)
    A = backend(A_np)
    v0 = backend(np.random.default_rng(3).standard_normal(120))
    res = eigsh(lambda v: A @ v, 120, 5, v0=v0, rng=0)
    assert type(res.vectors) is type(A)
    np.testing.assert_allclose(res.values, np.linalg.eigvalsh(A_np)[::-1][:5], atol=1e-9)
    run = lanczos(lambda v: A @ v, 120, 20, v0=v0, rng=0)
    assert run.orthogonality_loss < 1e-13
    # A = GGN + 0.5 I: K(A, v0) is invariant of dimension 16 and contains v0, so the
    # Krylov inverse is exact on v0: L Lᵀ v0 = A⁻¹ v0.
    L = lanczos_inverse_sqrt(lambda v: A @ v, v0, 120)
    Ln, v0n = host(L), host(v0)
    assert Ln.shape[1] <= 17
    np.testing.assert_allclose(Ln @ (Ln.T @ v0n), np.linalg.solve(A_np, v0n), atol=1e-9)
    # like= fixes the backend when there is no start vector.
    res2 = eigsh(lambda v: A @ v, 120, 5, like=A, rng=0)
    np.testing.assert_allclose(res2.values, res.values, atol=1e-9)


def test_float32_converges_at_its_own_precision():
    import torch

    A_np = CASES["random_spd"]
    A = torch.asarray(A_np, dtype=torch.float32)
    res = eigsh(lambda v: A @ v, 120, 4, like=A, rng=0)
    assert res.converged and res.vectors.dtype == torch.float32
    expected = np.linalg.eigvalsh(A_np)[::-1][:4]
    np.testing.assert_allclose(res.values, expected, rtol=0, atol=1e-4 * expected[0])


def test_bad_input_is_rejected_with_the_argument_named():
    A = np.eye(5)
    mv = lambda v: A @ v  # noqa: E731
    with pytest.raises(ValueError, match="k must be"):
        eigsh(mv, 5, 6, rng=0)
    with pytest.raises(ValueError, match="n must be"):
        lanczos(mv, 0, 1, rng=0)
    with pytest.raises(ValueError, match="num_steps"):
        lanczos(mv, 5, 6, rng=0)
    with pytest.raises(TypeError, match="k must be an integer"):
        eigsh(mv, 5, 2.0, rng=0)
    with pytest.raises(ValueError, match="which"):
        eigsh(mv, 5, 2, which="BE", rng=0)
    with pytest.raises(ValueError, match="v0 must be non-zero"):
        eigsh(mv, 5, 2, v0=np.zeros(5), rng=0)
    with pytest.raises(ValueError, match="v0 must be finite"):
        lanczos(mv, 5, 2, v0=np.array([1.0, np.nan, 0, 0, 0]), rng=0)
    with pytest.raises(ValueError, match="v0 must have shape"):
        lanczos(mv, 5, 2, v0=np.ones(4), rng=0)
    with pytest.raises(ValueError, match="tol must be positive"):
        eigsh(mv, 5, 2, tol=-1.0, rng=0)
    with pytest.raises(TypeError, match="rng is required"):
        lanczos(mv, 5, 2)
    with pytest.raises(TypeError, match="rng"):
        eigsh(mv, 5, 2, v0=np.ones(5))  # restarts may draw: rng required even with v0
    with pytest.raises(ValueError, match="reorthogonalize"):
        lanczos(mv, 5, 2, reorthogonalize="partial", rng=0)
    with pytest.raises(ValueError, match="non-finite"):
        eigsh(lambda v: v * np.nan, 5, 2, rng=0)
    with pytest.raises(ValueError, match="matvec must return shape"):
        lanczos(lambda v: v[:3], 5, 2, rng=0)
    with pytest.raises(ValueError, match="positive semi-definite"):
        lanczos_inverse_sqrt(lambda v: -v, np.ones(5), 3)
    with pytest.raises(TypeError, match="matvec must be callable"):
        eigsh(A, 5, 2, rng=0)


def test_eigsh_when_random_restarts_lie_in_the_krylov_space():
    # The operator is built from the same random stream as eigsh's start and restart
    # vectors, so every random draw lies in range(A) = span(Q) after rank steps; eigsh must
    # still find the k − rank zero eigenvalues (it once returned only `rank` values,
    # flagged converged).
    rank, n, k = 4, 26, 6
    J = np.random.default_rng(0).standard_normal((rank, n))
    A = J.T @ J
    res = eigsh(lambda v: A @ v, n, k, rng=np.random.default_rng(0))
    dense = np.linalg.eigvalsh(A)[::-1][:k]
    assert res.converged and res.values.shape == (k,)
    np.testing.assert_allclose(res.values, dense, rtol=0, atol=1e-10 * dense[0])


def test_eigsh_verify_finds_every_copy_of_a_highly_repeated_eigenvalue():
    # Single-vector Krylov sees one copy per start direction (plus rounding-induced ones):
    # without verification 6 of the 10 copies of λ = 1 are found and reported converged
    # (ARPACK also misses copies); verify=True explores deflated fresh directions.
    rng = np.random.default_rng(0)
    n = 200
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = np.concatenate([np.ones(10), np.linspace(0.5, 0.0, n - 10)])
    A = (Q * w) @ Q.T
    res = eigsh(lambda v: A @ v, n, 12, rng=np.random.default_rng(1), verify=True)
    assert res.converged
    np.testing.assert_allclose(res.values, np.sort(w)[::-1][:12], atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigsh_refuses_a_non_symmetric_operator_it_would_report_converged(dtype):
    rng = np.random.default_rng(11)
    n = 120
    S = _with_spectrum(np.linspace(0.0, 1.0, n), rng)
    K = rng.standard_normal((n, n))
    A = (S + 0.05 * (K - K.T) / np.sqrt(n)).astype(dtype)  # a skew part of norm ≈ 0.1
    truth = np.sort(np.linalg.eigvals(A.astype(np.float64)).real)[::-1][:4]
    like = np.zeros(n, dtype=dtype)
    with pytest.raises(ValueError, match="matvec must be a symmetric operator"):
        eigsh(lambda v: A @ v, n, 4, rng=0, like=like)
    # Without the probe the symmetric iteration "converges" to values of neither A nor Aᵀ.
    blind = eigsh(lambda v: A @ v, n, 4, rng=0, like=like, check_symmetry=False)
    assert blind.converged
    assert np.max(np.abs(blind.values - truth)) > 1e-2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_symmetry_probe_passes_ggn_products_and_leaves_the_iteration_unchanged(dtype):
    rng = np.random.default_rng(12)
    J = (rng.standard_normal((300, 2000)) * np.geomspace(1.0, 1e-4, 2000)).astype(dtype)
    like = np.zeros(2000, dtype=dtype)
    probed = eigsh(lambda v: J.T @ (J @ v), 2000, 5, rng=3, like=like)
    plain = eigsh(lambda v: J.T @ (J @ v), 2000, 5, rng=3, like=like, check_symmetry=False)
    np.testing.assert_array_equal(probed.values, plain.values)
    # the random start vector is one of the two probes: its product is the first step's
    assert probed.num_matvecs == plain.num_matvecs + 1
    v0 = np.asarray(np.random.default_rng(4).standard_normal(2000), dtype=dtype)
    given = eigsh(lambda v: J.T @ (J @ v), 2000, 5, rng=3, like=like, v0=v0)
    given_plain = eigsh(
        lambda v: J.T @ (J @ v), 2000, 5, rng=3, like=like, v0=v0, check_symmetry=False
    )
    np.testing.assert_array_equal(given.values, given_plain.values)
    assert given.num_matvecs == given_plain.num_matvecs + 2
