"""The closed forms of last-layer Laplace (docs/mathematics.md, "Last-layer Laplace"),
written from the features φ(x) of a forward pass, against the last-layer oracles of
conformance.catalog.last_layer (which restrict the dense GGN of autograd Jacobians)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.conformance import DenseOracle, build_problem
from laplace_lab.conformance.catalog.last_layer import expected_variance, last_layer_indices
from laplace_lab.conformance.problems import negative_log_joint


def _features(model, X) -> np.ndarray:
    """φ(x): the input of the last Linear layer (tanh of the first layer), (N, h) float64."""
    with torch.no_grad():
        return model[1](model[0](torch.as_tensor(X).double())).numpy()


@pytest.fixture(scope="module")
def regression():
    return DenseOracle(build_problem("mlp-regression", seed=0))


@pytest.fixture(scope="module")
def multiclass():
    return DenseOracle(build_problem("mlp-multiclass", seed=0))


def test_regression_last_layer_map_is_the_bayesian_linear_regression_mean(regression):
    # the negative log joint is quadratic in θ_S with Hessian Ω_SS = Φ̃ᵀΦ̃/σ0² + αI, so one
    # Newton step from θ̂_S with the autograd gradient lands on Ω_SS⁻¹Φ̃ᵀy/σ0² exactly, and
    # at a stationary MAP that step is nil (L-BFGS stops here at gradients below 3e-7)
    p = regression.problem
    phi = np.hstack([_features(p.model, p.X_train), np.ones((p.X_train.shape[0], 1))])
    s2, alpha = p.noise_var, float(p.prior_precision)
    omega = phi.T @ phi / s2 + alpha * np.eye(phi.shape[1])
    mean = np.linalg.solve(omega, phi.T @ p.y_train.numpy() / s2)
    model = p.fresh_model()
    V = torch.full((p.p,), alpha, dtype=torch.float64)
    loss = negative_log_joint(model, p.X_train, p.y_train, "regression", s2, V)
    last = model[2]
    grad = torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, [last.weight, last.bias])])
    step = np.linalg.solve(omega, grad.numpy())
    S = np.concatenate(last_layer_indices(p.model))
    np.testing.assert_allclose(regression.theta[S] - step, mean, rtol=0, atol=1e-12)
    assert np.max(np.abs(step)) < 1e-6


def test_regression_kron_is_a_weight_regression_plus_an_independent_bias(regression):
    # separate convention: v = φ*ᵀ(Σ φφᵀ/σ0² + αI)⁻¹φ* + 1/(N/σ0² + α); the joint one is full
    p = regression.problem
    phi, star = _features(p.model, p.X_train), _features(p.model, p.X_test)
    s2, alpha, n = p.noise_var, float(p.prior_precision), phi.shape[0]
    A = phi.T @ phi / s2 + alpha * np.eye(phi.shape[1])
    v = np.sum(np.linalg.solve(A, star.T).T * star, axis=1) + 1.0 / (n / s2 + alpha)
    np.testing.assert_allclose(expected_variance(regression, "kron")[0], v, rtol=1e-12)
    full = expected_variance(regression, "full")[0]
    assert np.min(np.abs(v - full) / full) > 0.05  # the mean feature φ̄ is not 0


def test_multiclass_diagonal_reads_its_own_output_only(multiclass):
    # v_diag,c = Σ_j φ̃*_j² / (Σ_n (H_n)_cc φ̃_nj² + α), (H_n)_cc = π_nc(1 − π_nc)
    p = multiclass.problem
    ones = np.ones((p.X_train.shape[0], 1))
    phi = np.hstack([_features(p.model, p.X_train), ones])
    star = np.hstack([_features(p.model, p.X_test), np.ones((p.X_test.shape[0], 1))])
    with torch.no_grad():
        pi = torch.softmax(p.model(p.X_train.double()), dim=1).numpy()
    h = pi * (1 - pi)  # (N, C)
    precision = h.T @ phi**2 + float(p.prior_precision)  # (C, h + 1)
    v = (star**2) @ (1.0 / precision).T  # (M, C)
    np.testing.assert_allclose(expected_variance(multiclass, "diag")[0], v, rtol=1e-12)
