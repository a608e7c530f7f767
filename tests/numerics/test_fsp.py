"""Kernels, the RKHS-norm estimate and FSP-Laplace Algorithm 2 against dense references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.gaussian_process import kernels as skk

from laplace_lab.numerics.fsp import (
    dropped_terms,
    fsp_laplace,
    fsp_laplace_from_factor,
    rkhs_norm_estimate,
)
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12, Matern32, Matern52, Periodic
from laplace_lab.paper_checks.fsp_laplace._tanh_mlp import TanhMLP
from tests.numerics.conftest import host

# ----------------------------------------------------------------------------- kernels

KERNEL_PAIRS = [
    (RBF(2.0, 0.7), 2.0 * skk.RBF(0.7)),
    (Matern12(2.0, 0.7), 2.0 * skk.Matern(0.7, nu=0.5)),
    (Matern32(2.0, 0.7), 2.0 * skk.Matern(0.7, nu=1.5)),
    (Matern52(2.0, 0.7), 2.0 * skk.Matern(0.7, nu=2.5)),
    (Periodic(2.0, 0.7, period=1.3), 2.0 * skk.ExpSineSquared(0.7, 1.3)),
]


@pytest.mark.parametrize(("ours", "sk"), KERNEL_PAIRS, ids=lambda k: type(k).__name__)
def test_kernels_match_scikit_learn(ours, sk):
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(9, 3)), rng.normal(size=(5, 3))
    np.testing.assert_allclose(ours(X1, X2), sk(X1, X2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours(X1), sk(X1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.diag(X1), np.full(9, 2.0))


def test_kernel_gram_matvec_in_blocks_equals_dense():
    rng = np.random.default_rng(1)
    C = rng.uniform(-2, 2, size=(23, 2))
    gram = KernelGram(Matern32(1.5, 0.4), C, jitter=1e-3, block=5)
    v = rng.standard_normal(23)
    K = Matern32(1.5, 0.4)(C) + 1e-3 * np.eye(23)
    np.testing.assert_allclose(gram.matvec(v), K @ v, rtol=1e-12)
    np.testing.assert_allclose(gram.dense(), K)
    np.testing.assert_allclose(gram.diagonal(), np.full(23, 1.5 + 1e-3))


# ----------------------------------------------------------------------------- RKHS norm


@given(
    n_rep=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    kernel=st.sampled_from([RBF(1.0, 0.5), Matern12(1.0, 0.5), Matern52(1.0, 0.3)]),
)
def test_rkhs_estimate_underestimates_grows_when_nested_and_is_exact_on_representers(
    n_rep, seed, kernel
):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, size=(n_rep, 1))  # representer points: f = Σ a_j k(·, z_j)
    a = rng.standard_normal(n_rep)
    true_norm = a @ kernel(Z) @ a
    extra = rng.uniform(-1.5, 1.5, size=(12, 1))
    estimates = []
    for m in range(1, 13):  # nested context sets C_1 ⊂ C_2 ⊂ ... ⊂ C_12
        C = extra[:m]
        estimates.append(rkhs_norm_estimate(kernel(C, Z) @ a, KernelGram(kernel, C, jitter=1e-10)))
    scale = max(true_norm, 1e-300)
    assert np.all(np.array(estimates) <= true_norm + 1e-6 * scale)
    assert np.all(np.diff(estimates) >= -1e-6 * scale)
    C = np.concatenate([Z, extra[:4]])  # representers inside C: exact
    K = kernel(C) + 1e-12 * np.eye(C.shape[0])
    assert rkhs_norm_estimate(kernel(C, Z) @ a, K) == pytest.approx(true_norm, rel=1e-5)


# ----------------------------------------------------------------------------- Algorithm 2


def _gp_setting(seed=0, p=200, nC=25, train_idx=(2, 5, 9, 14, 20), noise=0.3):
    """A well-conditioned random J(C) (n_C < p) at a 1-D grid of context points; X ⊂ C.

    (A small MLP's J(C) on a 1-D grid is numerically rank deficient — singular values
    decay to ~1e-8 — which makes exact identities ill-posed; a random J(C) is not.)
    """
    rng = np.random.default_rng(seed)
    C = np.linspace(-2, 2, nC)[:, None]
    J_C = rng.standard_normal((nC, p)) / np.sqrt(p)
    gram = KernelGram(Matern52(1.0, 0.5), C, jitter=1e-6)
    Jw = J_C[list(train_idx)] / noise
    return J_C, gram, Jw, list(train_idx), noise


def test_algorithm2_reproduces_the_exact_gp_posterior_at_context_points():
    # With J(C) of full row rank and the training inputs among the context points, the
    # linearized FSP posterior of f(C) is the GP posterior K − K_CX (K_XX + σ²I)⁻¹ K_XC.
    J_C, gram, Jw, idx, noise = _gp_setting()
    assert np.linalg.matrix_rank(J_C) == J_C.shape[0]
    res = fsp_laplace(J_C, gram, Jw)
    K = gram.dense()
    gp = K - K[:, idx] @ np.linalg.solve(K[np.ix_(idx, idx)] + noise**2 * np.eye(len(idx)), K[idx])
    cov = J_C @ res.scale @ res.scale.T @ J_C.T
    np.testing.assert_allclose(cov, gp, atol=1e-6 * np.max(np.diag(K)))
    assert res.num_truncated == 0
    assert np.all(res.context_variance <= res.prior_variance * (1 + 1e-9))


def test_algorithm2_equals_dense_computation_on_a_small_mlp():
    # Training points off the context set: compare with U_M (U_Mᵀ Λ U_M)⁻¹ U_Mᵀ computed
    # densely, U_M an orthonormal basis of range(J(C)ᵀ), Λ = J(C)ᵀ K⁻¹ J(C) + J_wᵀ J_w.
    # (3-D inputs keep J(C) well conditioned; on a 1-D grid it is numerically singular.)
    rng = np.random.default_rng(3)
    mlp = TanhMLP(3, 10)
    theta = mlp.init(rng)
    C = rng.uniform(-2, 2, size=(15, 3))
    X = rng.uniform(-1, 1, size=(8, 3))
    J_C, Jw = mlp.jacobian(theta, C), mlp.jacobian(theta, X) / 0.2
    assert np.linalg.cond(J_C) < 1e3
    gram = KernelGram(Matern12(1.0, 0.6), C)
    res = fsp_laplace(J_C, gram, Jw)
    K = gram.dense()
    Lam = J_C.T @ np.linalg.solve(K, J_C) + Jw.T @ Jw
    U = np.linalg.svd(J_C.T, full_matrices=False)[0]
    dense_cov = U @ np.linalg.solve(U.T @ Lam @ U, U.T)
    J_test = mlp.jacobian(theta, rng.uniform(-3, 3, size=(17, 3)))
    np.testing.assert_allclose(
        res.predictive_variance(J_test),
        np.einsum("ij,jk,ik->i", J_test, dense_cov, J_test),
        rtol=1e-8,
    )
    assert res.num_truncated == 0


def test_algorithm2_from_the_dense_inverse_factor_equals_the_dense_computation():
    # Steps 4–9 from L = V Θ^{-1/2} (L Lᵀ = Σ⁻¹ exactly): the same dense reference as above,
    # and the full-length Lanczos run of fsp_laplace agrees with it.
    rng = np.random.default_rng(7)
    mlp = TanhMLP(3, 10)
    theta = mlp.init(rng)
    C = rng.uniform(-2, 2, size=(15, 3))
    J_C, Jw = mlp.jacobian(theta, C), mlp.jacobian(theta, rng.uniform(-1, 1, (8, 3))) / 0.2
    gram = KernelGram(Matern12(1.0, 0.6), C)
    K = gram.dense()
    w, V = np.linalg.eigh(K)
    res = fsp_laplace_from_factor(J_C, V / np.sqrt(w), Jw, prior_variance=gram.diagonal())
    Lam = J_C.T @ np.linalg.solve(K, J_C) + Jw.T @ Jw
    U = np.linalg.svd(J_C.T, full_matrices=False)[0]
    dense_cov = U @ np.linalg.solve(U.T @ Lam @ U, U.T)
    J_test = mlp.jacobian(theta, rng.uniform(-3, 3, size=(11, 3)))
    want = np.einsum("ij,jk,ik->i", J_test, dense_cov, J_test)
    np.testing.assert_allclose(res.predictive_variance(J_test), want, rtol=1e-8)
    lanczos_run = fsp_laplace(J_C, gram, Jw)
    np.testing.assert_allclose(lanczos_run.predictive_variance(J_test), want, rtol=1e-8)
    with pytest.raises(ValueError, match="L must have n_C"):
        fsp_laplace_from_factor(J_C, V[:5], Jw, prior_variance=gram.diagonal())
    with pytest.raises(ValueError, match="prior_variance must be positive"):
        fsp_laplace_from_factor(J_C, V, Jw, prior_variance=np.zeros(15))


def test_truncation_caps_context_variances_at_the_prior():
    # A short Lanczos run underestimates Σ(C,C)⁺, so some variances exceed the prior and
    # step 9 must remove the smallest eigenvalues of D_A until none does.
    J_C, gram, _, _, _ = _gp_setting(seed=4)
    res = fsp_laplace(J_C, gram, None, num_steps=4)
    # Untruncated covariance U_M A⁺ U_Mᵀ with A = U_Mᵀ Λ U_M and Λ = M Mᵀ (no data term).
    UM = res.basis.T @ res.M
    A = UM @ UM.T
    np.testing.assert_allclose(np.linalg.eigvalsh(A), res.eigenvalues, rtol=1e-8, atol=1e-10)
    full_var = np.einsum("ij,jk,ik->i", J_C @ res.basis, np.linalg.pinv(A), J_C @ res.basis)
    assert np.any(full_var > res.prior_variance * 1.01)  # truncation was needed
    assert res.num_truncated >= 1
    assert np.all(res.context_variance <= res.prior_variance * (1 + 1e-9))
    np.testing.assert_allclose(
        res.context_variance, np.sum((J_C @ res.scale) ** 2, axis=1), rtol=1e-10
    )


def test_dropped_terms_match_dense_projections():
    rng = np.random.default_rng(5)
    mlp = TanhMLP(1, 6)
    theta = mlp.init(rng)
    C = np.linspace(-1, 1, 12)[:, None]
    J_C = mlp.jacobian(theta, C)
    Jw = mlp.jacobian(theta, rng.uniform(-2, 2, size=(6, 1))) / 0.5
    res = fsp_laplace(J_C, KernelGram(RBF(1.0, 0.5), C, jitter=1e-6), Jw)
    Lam = res.M @ res.M.T + Jw.T @ Jw
    P = res.basis @ res.basis.T
    P0 = np.eye(P.shape[0]) - P
    nrm = np.linalg.norm(Lam)
    got = dropped_terms(res, Jw)
    assert got.p0_ratio == pytest.approx(np.linalg.norm(P0 @ Lam @ P0) / nrm, rel=1e-6)
    cross = P @ Lam @ P0 + P0 @ Lam @ P
    assert got.cross_ratio == pytest.approx(np.linalg.norm(cross) / nrm, rel=1e-6)
    assert got.total_ratio == pytest.approx(np.linalg.norm(Lam - P @ Lam @ P) / nrm, rel=1e-6)
    assert got.cross_ratio > got.p0_ratio > 1e-6  # off-grid data: neither term vanishes
    # With the training inputs among the context points nothing is dropped.
    J_C2, gram2, Jw2, _, _ = _gp_setting()
    exact = dropped_terms(fsp_laplace(J_C2, gram2, Jw2), Jw2)
    assert exact.total_ratio < 1e-8


def test_backends_agree_with_numpy(backend):
    J_C, gram, Jw, _, _ = _gp_setting(seed=6)
    ref = fsp_laplace(J_C, gram, Jw)
    C_x = backend(np.linspace(-2, 2, 25)[:, None])
    gram_x = KernelGram(Matern52(1.0, 0.5), C_x, jitter=1e-6)
    res = fsp_laplace(backend(J_C), gram_x, backend(Jw))
    J_test = backend(J_C[::3])
    np.testing.assert_allclose(
        host(res.predictive_variance(J_test)), ref.predictive_variance(J_C[::3]), rtol=1e-7
    )
    assert res.num_truncated == ref.num_truncated


def test_bad_input_is_rejected_with_the_argument_named():
    J_C, gram, Jw, _, _ = _gp_setting()
    with pytest.raises(ValueError, match="Jw must have p="):
        fsp_laplace(J_C, gram, Jw[:, :5])
    with pytest.raises(ValueError, match="J_context must be finite"):
        fsp_laplace(J_C * np.nan, gram, Jw)
    with pytest.raises(ValueError, match="prior_variance is required"):
        fsp_laplace(J_C, gram.matvec, Jw)
    with pytest.raises(ValueError, match="prior_variance must be positive"):
        fsp_laplace(J_C, gram, Jw, prior_variance=-np.ones(25))
    with pytest.raises(ValueError, match="start vector"):
        fsp_laplace(np.zeros_like(J_C), gram, Jw)
    with pytest.raises(ValueError, match="lengthscale must be positive"):
        RBF(1.0, 0.0)
    with pytest.raises(ValueError, match="period must be positive"):
        Periodic(1.0, 1.0, period=-1.0)
    with pytest.raises(ValueError, match="same input dimension"):
        RBF()(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="gram must be positive definite"):
        rkhs_norm_estimate(np.ones(2), np.ones((2, 2)) * np.array([[1, 2], [2, 1]]))
    with pytest.raises(ValueError, match="jitter must be"):
        KernelGram(RBF(), np.ones((3, 1)), jitter=-1.0)


def test_float32_inputs_keep_the_rank_and_variances_of_float64():
    """Rounding of M = J(C)ᵀL in float32 must not pass for posterior directions: with a rank-3
    J(C) the basis keeps 3 columns in both dtypes (it kept 20 at rcond = 1e-10), and the test
    variances agree to float32 accuracy (they were 10⁴–10⁵ times too large)."""
    rng = np.random.default_rng(0)
    Jc = rng.normal(size=(20, 3)) @ rng.normal(size=(3, 40))
    Jw, Jt = 0.1 * rng.normal(size=(10, 40)), rng.normal(size=(3, 40))
    out = {}
    for dt in (np.float64, np.float32):
        r = fsp_laplace_from_factor(
            Jc.astype(dt), np.eye(20, dtype=dt), Jw.astype(dt), prior_variance=np.ones(20)
        )
        out[dt] = (r.basis.shape[1], np.asarray(r.predictive_variance(Jt.astype(dt))))
    assert out[np.float64][0] == out[np.float32][0] == 3
    np.testing.assert_allclose(out[np.float32][1], out[np.float64][1], rtol=1e-4)


def test_cut_offs_are_validated_and_a_zero_m_is_named():
    rng = np.random.default_rng(3)
    Jc, Jw = rng.normal(size=(6, 9)), 0.1 * rng.normal(size=(3, 9))
    kw = {"prior_variance": np.ones(6)}
    for bad, name in ((dict(rtol=float("nan")), "rtol"), (dict(rtol=-2.0), "rtol"),
                      (dict(rcond=float("nan")), "rcond")):  # fmt: skip
        with pytest.raises(ValueError, match=name):
            fsp_laplace_from_factor(Jc, 0.3 * np.eye(6), Jw, **kw, **bad)
    with pytest.raises(ValueError, match="M = J\\(C\\)ᵀL is zero"):
        fsp_laplace_from_factor(np.zeros((6, 9)), np.eye(6), None, **kw)
