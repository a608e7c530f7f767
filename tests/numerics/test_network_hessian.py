"""network_hessian against closed forms: a two-weight tanh network, logistic regression and
linear multi-output regression."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.numerics.network_hessian import network_hessian


class TwoWeights(torch.nn.Module):
    """f(x) = w2 · tanh(w1 · x), two scalar weights."""

    def __init__(self, w1: float, w2: float) -> None:
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.tensor([w1], dtype=torch.float64))
        self.w2 = torch.nn.Parameter(torch.tensor([w2], dtype=torch.float64))

    def forward(self, x):
        return self.w2 * torch.tanh(self.w1 * x)


def test_a_tanh_network_matches_the_hand_derived_hessian():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=7), rng.normal(size=7)
    w1, w2, s2 = 0.8, -1.3, 0.4
    t = np.tanh(w1 * x)
    sech2 = 1.0 - t**2
    f = w2 * t
    r = (f - y) / s2  # ∂[−log N(y | f, s2)]/∂f
    J = np.stack([w2 * x * sech2, t], axis=1)  # ∂f/∂(w1, w2)
    d11 = -2.0 * w2 * x**2 * sech2 * t  # ∂²f/∂w1², ∂²f/∂w1∂w2 = x sech², ∂²f/∂w2² = 0
    d12 = x * sech2
    residual = np.array([[np.sum(r * d11), np.sum(r * d12)], [np.sum(r * d12), 0.0]])
    expected = J.T @ J / s2 + residual
    model = TwoWeights(w1, w2).eval()
    X = torch.as_tensor(x)[:, None]
    got = network_hessian(model, X, torch.as_tensor(y), likelihood="regression", noise_var=s2)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)
    chunked = network_hessian(
        model, X, torch.as_tensor(y), likelihood="regression", noise_var=s2, chunk=3
    )
    np.testing.assert_allclose(chunked, expected, rtol=1e-13, atol=1e-14)


def test_logistic_regression_is_the_weighted_gram_of_its_features():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 3))
    y = (rng.uniform(size=9) < 0.5).astype(float)
    model = torch.nn.Linear(3, 1).double().eval()
    with torch.no_grad():
        model.weight.copy_(torch.as_tensor(rng.normal(size=(1, 3))))
        model.bias.fill_(0.2)
    Phi = np.hstack([X, np.ones((9, 1))])  # parameters() order: weight, then bias
    s = 1.0 / (1.0 + np.exp(-(Phi @ np.r_[model.weight.detach().numpy()[0], 0.2])))
    expected = (Phi * (s * (1 - s))[:, None]).T @ Phi  # linear in θ: no residual term
    got = network_hessian(model, torch.as_tensor(X), torch.as_tensor(y), likelihood="binary")
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_multi_output_regression_weights_each_output_by_its_noise():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(6, 2))
    s2 = np.array([0.1, 0.5])
    model = torch.nn.Linear(2, 2).double().eval()
    Phi = np.hstack([X, np.ones((6, 1))])
    # θ = [W (row-major: output 0's weights, output 1's), b]: block of output c is ΦᵀΦ/σ_c²
    expected = np.zeros((6, 6))
    for c in range(2):
        idx = [2 * c, 2 * c + 1, 4 + c]
        expected[np.ix_(idx, idx)] = Phi.T @ Phi / s2[c]
    y = torch.as_tensor(rng.normal(size=(6, 2)))
    got = network_hessian(
        model, torch.as_tensor(X), y, likelihood="multioutput-regression", noise_var=s2
    )
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)


def test_bad_arguments_are_named():
    model = torch.nn.Linear(2, 1).double().eval()
    X, y = torch.zeros(3, 2, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="likelihood"):
        network_hessian(model, X, y, likelihood="poisson")
    with pytest.raises(ValueError, match="noise_var"):
        network_hessian(model, X, y, likelihood="regression", noise_var=-1.0)
    with pytest.raises(ValueError, match="rows"):
        network_hessian(model, X, y[:2], likelihood="regression")
