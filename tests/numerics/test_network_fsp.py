"""FSP-Laplace on torch models (Algorithm 2 at w*) against exact GP posteriors and dense
references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.numerics.kernels import RBF, Matern12, Matern32
from laplace_lab.numerics.network_fsp import OutputGram, network_fsp_laplace

JITTER = 1e-6


class Features(torch.nn.Module):
    """f(x, w) = W φ(x), φ fixed random Fourier features: J(x) = e_c ⊗ φ(x), exactly linear."""

    def __init__(self, p: int, d: int, n_out: int, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("omega", 4.0 * torch.randn(d, p, generator=g, dtype=torch.float64))
        self.register_buffer("phase", 6.3 * torch.rand(p, generator=g, dtype=torch.float64))
        self.out = torch.nn.Linear(p, n_out, bias=False, dtype=torch.float64)

    def features(self, X: torch.Tensor) -> torch.Tensor:
        return torch.cos(X @ self.omega + self.phase)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(X))


def _setting(n_out: int, seed: int = 0, n_c: int = 25, n_x: int = 8):
    """p = n_C features (Φ_C invertible) and the training inputs among the context points."""
    rng = np.random.default_rng(seed)
    C = rng.uniform(-2, 2, size=(n_c, 2))
    idx = np.sort(rng.choice(n_c, size=n_x, replace=False))
    model = Features(n_c, 2, n_out, seed)
    Phi = model.features(torch.as_tensor(C)).detach().numpy()
    assert np.linalg.cond(Phi) < 1e4
    return rng, C, idx, model, Phi


def _jittered(kernel, C):
    K = kernel(C)
    return K + JITTER * np.mean(np.diag(K)) * np.eye(C.shape[0])


@pytest.mark.parametrize("kernel", [Matern12(1.3, 0.5), Matern32(0.7, 0.4), RBF(1.0, 0.6)])
def test_regression_posterior_is_the_exact_gp_posterior(kernel):
    # Linear model, Φ_C invertible, X ⊂ C: the FSP MAP is the GP posterior mean at C and the
    # linearised FSP-Laplace covariance of f(C) is the GP posterior covariance (§3.1, eq. 3.6).
    rng, C, idx, model, Phi = _setting(1)
    noise = 0.15
    K = _jittered(kernel, C)
    y = rng.standard_normal(idx.size)
    gain = K[:, idx] @ np.linalg.inv(K[np.ix_(idx, idx)] + noise**2 * np.eye(idx.size))
    gp_mean, gp_cov = gain @ y, K - gain @ K[idx]
    with torch.no_grad():  # the FSP MAP in closed form: Φ_C w* = GP posterior mean at C
        model.out.weight.copy_(torch.as_tensor(np.linalg.solve(Phi, gp_mean))[None])
    post = network_fsp_laplace(
        model, C[idx], likelihood="regression", kernel=kernel, context=C, noise_var=noise**2
    )
    pred = post.predict(C)
    np.testing.assert_allclose(pred.mean, gp_mean, atol=1e-10)
    np.testing.assert_allclose(post.covariance(C), gp_cov, atol=2e-6 * kernel.variance)
    np.testing.assert_allclose(pred.variance, np.diag(gp_cov), atol=2e-6 * kernel.variance)
    assert post.result.num_truncated == 0


def test_binary_posterior_is_the_laplace_approximate_gp_classifier():
    # Bernoulli likelihood: at the mode, Λ in f(C)-coordinates is K⁻¹ + W (Rasmussen &
    # Williams, Alg. 3.1), so Algorithm 2 must return (K⁻¹ + W)⁻¹ at the context points.
    kernel = Matern32(2.0, 0.5)
    rng, C, idx, model, Phi = _setting(1, seed=1)
    K = _jittered(kernel, C)
    t = rng.integers(0, 2, idx.size).astype(float)
    f = np.zeros(C.shape[0])
    for _ in range(50):  # Newton on the GP-classification posterior over f(C)
        pi = 1 / (1 + np.exp(-f[idx]))
        W = np.zeros(C.shape[0])
        W[idx] = pi * (1 - pi)
        grad = np.zeros(C.shape[0])
        grad[idx] = t - pi
        f = np.linalg.solve(np.linalg.inv(K) + np.diag(W), W * f + grad)
    pi = 1 / (1 + np.exp(-f[idx]))
    W = np.zeros(C.shape[0])
    W[idx] = pi * (1 - pi)
    cov = np.linalg.inv(np.linalg.inv(K) + np.diag(W))
    with torch.no_grad():
        model.out.weight.copy_(torch.as_tensor(np.linalg.solve(Phi, f))[None])
    post = network_fsp_laplace(model, C[idx], likelihood="binary", kernel=kernel, context=C)
    pred = post.predict(C)
    np.testing.assert_allclose(pred.mean, f, atol=1e-9)
    np.testing.assert_allclose(pred.variance, np.diag(cov), atol=1e-5 * kernel.variance)


def test_multiclass_posterior_uses_independent_gp_outputs():
    # d' = 3 logits with the prior Σ ⊗ I_3: the covariance of f(C) is (K⁻¹ ⊗ I + H)⁻¹, H the
    # block diagonal of softmax Hessians (+ the GGN's ε = 1e-6) at the training inputs.
    kernel = RBF(1.0, 0.7)
    rng, C, idx, model, _ = _setting(3, seed=2, n_c=20, n_x=6)
    with torch.no_grad():
        model.out.weight.copy_(torch.as_tensor(0.3 * rng.standard_normal((3, 20))))
    K = _jittered(kernel, C)
    logits = model(torch.as_tensor(C)).detach().numpy()
    H = np.zeros((60, 60))
    for i in idx:
        e = np.exp(logits[i] - logits[i].max())
        pi = e / e.sum()
        H[3 * i : 3 * i + 3, 3 * i : 3 * i + 3] = np.diag(pi) - np.outer(pi, pi) + 1e-6 * np.eye(3)
    cov = np.linalg.inv(np.kron(np.linalg.inv(K), np.eye(3)) + H)
    post = network_fsp_laplace(model, C[idx], likelihood="multiclass", kernel=kernel, context=C)
    pred = post.predict(C)
    assert pred.variance.shape == (20, 3)
    np.testing.assert_allclose(pred.variance.reshape(-1), np.diag(cov), atol=1e-5)
    np.testing.assert_allclose(post.covariance(C[:4]), cov[:12, :12], atol=1e-5)


def test_mlp_predictive_equals_dense_algorithm2_and_samples_match_it():
    # A tanh MLP (p > n_C): predict = diag(J* U (UᵀΛU)⁻¹ Uᵀ J*ᵀ), U a basis of range(J(C)ᵀ),
    # Λ = J(C)ᵀ K⁻¹ J(C) + J_wᵀJ_w with J from finite differences of the network.
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)
    ).double()
    rng = np.random.default_rng(4)
    C, X, T = rng.uniform(-2, 2, (12, 2)), rng.uniform(-1, 1, (7, 2)), rng.uniform(-3, 3, (9, 2))
    kernel, noise_var = Matern12(1.0, 0.8), 0.3
    post = network_fsp_laplace(
        model, X, likelihood="regression", kernel=kernel, context=C, noise_var=noise_var
    )
    theta0 = torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()

    def fd_jacobian(P):
        out, h = [], 1e-6
        for i in range(theta0.numel()):
            cols = []
            for s in (1, -1):
                th = theta0.clone()
                th[i] += s * h
                torch.nn.utils.vector_to_parameters(th, model.parameters())
                cols.append(model(torch.as_tensor(P)).detach().numpy()[:, 0])
            out.append((cols[0] - cols[1]) / (2 * h))
        torch.nn.utils.vector_to_parameters(theta0, model.parameters())
        return np.stack(out, axis=1)

    J_C, J_X, J_T = fd_jacobian(C), fd_jacobian(X), fd_jacobian(T)
    Lam = J_C.T @ np.linalg.solve(_jittered(kernel, C), J_C) + J_X.T @ J_X / noise_var
    U = np.linalg.svd(J_C.T, full_matrices=False)[0]
    dense = U @ np.linalg.solve(U.T @ Lam @ U, U.T)
    pred = post.predict(T)
    np.testing.assert_allclose(pred.variance, np.einsum("ij,jk,ik->i", J_T, dense, J_T), rtol=1e-5)
    draws = post.sample(T, 4000, rng=0)
    assert draws.shape == (4000, 9)
    # Monte Carlo variance within 5 standard errors (relative s.e. √(2/4000) ≈ 2.2 %)
    np.testing.assert_allclose(draws.var(0), pred.variance, rtol=5 * np.sqrt(2 / 4000))


def test_output_gram_is_the_kronecker_product_with_relative_jitter():
    C = np.linspace(-1, 1, 6)[:, None]
    g = OutputGram(RBF(2.0, 0.5), C, n_outputs=3, jitter=1e-3)
    K = RBF(2.0, 0.5)(C) + 2e-3 * np.eye(6)
    dense = np.kron(K, np.eye(3))
    np.testing.assert_allclose(g.dense(), dense)
    v = np.random.default_rng(0).standard_normal(18)
    np.testing.assert_allclose(g.matvec(v), dense @ v)
    np.testing.assert_allclose(g.diagonal(), np.full(18, 2.002))


def test_bad_inputs_name_the_argument():
    model = Features(5, 2, 1, 0)
    C = np.random.default_rng(0).uniform(-1, 1, (5, 2))
    with pytest.raises(ValueError, match="noise_var"):
        network_fsp_laplace(model, C, likelihood="regression", kernel=RBF(), context=C)
    with pytest.raises(ValueError, match="noise_var"):
        network_fsp_laplace(model, C, likelihood="binary", kernel=RBF(), context=C, noise_var=1.0)
    with pytest.raises(ValueError, match="likelihood"):
        network_fsp_laplace(model, C, likelihood="poisson", kernel=RBF(), context=C)
    with pytest.raises(ValueError, match="multiclass"):
        network_fsp_laplace(model, C, likelihood="multiclass", kernel=RBF(), context=C)
    with pytest.raises(ValueError, match="context"):
        network_fsp_laplace(
            model, C, likelihood="regression", kernel=RBF(), context=C * np.nan, noise_var=1.0
        )
    with pytest.raises(TypeError, match="kernel"):
        network_fsp_laplace(model, C, likelihood="binary", kernel=3.0, context=C)
    with pytest.raises(TypeError, match="model"):
        network_fsp_laplace(object(), C, likelihood="binary", kernel=RBF(), context=C)


def test_a_float32_network_gives_the_float64_posterior_to_float32_accuracy():
    """Its Jacobians carry float32 rounding even though Algorithm 2 runs in float64: the
    directions that rounding adds to M are cut (they doubled the rank, 4 → 7, and the
    variances up to twofold)."""
    import copy

    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    m32 = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    m64 = copy.deepcopy(m32).double()
    X, C = rng.normal(size=(30, 2)), np.array([5.0, 5.0]) + 0.3 * rng.normal(size=(25, 2))
    Xs = rng.normal(size=(4, 2))
    fits = [
        network_fsp_laplace(m, X, likelihood="regression", kernel=RBF(), context=C, noise_var=0.1)
        for m in (m64, m32)
    ]
    assert fits[0].result.basis.shape[1] == fits[1].result.basis.shape[1]
    np.testing.assert_allclose(
        fits[1].predict(Xs).variance, fits[0].predict(Xs).variance, rtol=1e-4
    )
