"""The quadrature of eq. (8), the evidences of eq. (11), the eq. (15) matrices, the multiclass
probit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from laplace_lab.theory import NormalNormal
from laplace_lab.theory.probit import probit_approximation, probit_softmax
from laplace_lab.theory.ssla_identities import (
    ExponentialRegression,
    exact_log_evidence,
    gaussian_integral,
    laplace_log_evidence,
)


@pytest.mark.parametrize("H", [np.array([[3.0]]), np.array([[2.0, 0.9], [0.9, 0.6]])])
def test_gaussian_integral_is_two_pi_over_root_det(H):
    q = H.shape[0]
    expected = (2 * np.pi) ** (q / 2) / np.sqrt(np.linalg.det(H))
    assert gaussian_integral(H) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError):
        gaussian_integral(np.eye(3))


def test_evidences_of_the_normal_normal_model():
    model = NormalNormal(prior_mean=1.0, prior_var=2.0, noise_var=0.5)
    x = np.array([0.3, 1.9, 1.1, 0.4, 2.2])
    n = x.size
    # the data are jointly normal: mean μ0·1, covariance σ²I + τ0²11ᵀ
    cov = 0.5 * np.eye(n) + 2.0 * np.ones((n, n))
    exact = stats.multivariate_normal(np.full(n, 1.0), cov).logpdf(x)
    assert exact_log_evidence(model, x) == pytest.approx(exact, rel=1e-12)
    # eq. (11) at the MLE x̄ with J = n/σ², by hand
    xbar = x.mean()
    hand = (
        stats.norm(xbar, np.sqrt(0.5)).logpdf(x).sum()
        + 0.5 * np.log(2 * np.pi)
        - 0.5 * np.log(n / 0.5)
        + stats.norm(1.0, np.sqrt(2.0)).logpdf(xbar)
    )
    assert laplace_log_evidence(model, x) == pytest.approx(hand, rel=1e-12)


def test_exponential_regression_information_matrices():
    model = ExponentialRegression(0.25)
    rng = np.random.default_rng(0)
    theta = np.array([2.0, 0.7])
    x = rng.uniform(0, 4, 50)
    y = model.mean(theta, x) + 0.5 * rng.standard_normal(50)

    def loglik(t):
        return -0.5 * np.sum(model.residuals(t, x, y) ** 2) / 0.25

    h = 1e-4
    hess = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            e_i, e_j = np.eye(2)[i] * h, np.eye(2)[j] * h
            hess[i, j] = (
                loglik(theta + e_i + e_j)
                - loglik(theta + e_i - e_j)
                - loglik(theta - e_i + e_j)
                + loglik(theta - e_i - e_j)
            ) / (4 * h * h)
    np.testing.assert_allclose(model.observed_information(theta, x, y), -hess / 50, rtol=1e-5)
    s = model.scores(theta, x, y)
    np.testing.assert_allclose(model.empirical_fisher(theta, x, y), s.T @ s / 50)
    outer = model.score_outer_product(theta, x, y)
    assert np.linalg.matrix_rank(outer) == 1
    # at the MLE the summed score vanishes (relative to the size of the per-point scores)
    th = model.mle(x, y, theta)
    s_hat = model.scores(th, x, y)
    assert np.abs(s_hat.sum(axis=0)).max() < 1e-7 * np.abs(s_hat).sum()
    gn = model.gauss_newton(th, x)
    g = model.output_gradients(th, x)
    np.testing.assert_allclose(gn, g.T @ g / (0.25 * 50))


def test_probit_softmax():
    f = np.array([[2.0, -1.0, 0.5]])
    np.testing.assert_allclose(
        probit_softmax(f, np.zeros_like(f)), np.exp(f) / np.exp(f).sum(), rtol=1e-14
    )
    # two classes with variance on one logit only: σ((f1 − f2)/...) is no longer the MAP's
    p = probit_softmax(np.array([1.0, 0.5]), np.array([8.0, 0.0]))
    assert p.sum() == pytest.approx(1.0) and p.argmax() == 1
    # with a common variance the argmax is the MAP's, as for one logit
    z = probit_softmax(np.array([1.0, 0.5]), np.array([8.0, 8.0]))
    assert z.argmax() == 0
    assert probit_approximation(1.0, 8.0) > 0.5
    with pytest.raises(ValueError):
        probit_softmax(f, -np.ones_like(f))
