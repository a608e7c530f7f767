"""W2 between Gaussians (Daxberger eqs. 22–23) and the probit approximation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm

from laplace_lab.theory import random_psd
from laplace_lab.theory.probit import logistic_gaussian_integral, probit_approximation
from laplace_lab.theory.wasserstein import (
    gaussian_w2,
    subnetwork_covariance,
    subnetwork_w2,
    w2_diagonal,
)


def test_gaussian_w2_closed_forms():
    # Commuting (diagonal) covariances: W2² = ‖m1 − m2‖² + Σ(√a − √b)².
    a, b = np.array([1.0, 4.0, 0.25]), np.array([9.0, 1.0, 0.0])
    m1, m2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
    expected = np.sqrt(5.0 + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2))
    assert gaussian_w2(m1, np.diag(a), m2, np.diag(b)) == pytest.approx(expected, rel=1e-12)
    # One-dimensional case and symmetry.
    A = random_psd(4, rng=np.random.default_rng(0))
    B = random_psd(4, rng=np.random.default_rng(1))
    z = np.zeros(4)
    assert gaussian_w2(z, A, z, B) == pytest.approx(gaussian_w2(z, B, z, A), rel=1e-9)
    assert gaussian_w2(z, A, z, A) == pytest.approx(0.0, abs=1e-7)


def test_w2_via_optimal_coupling_matches_formula():
    # For Gaussians the optimal map is T = Σ1^{-1/2}(Σ1^{1/2}Σ2Σ1^{1/2})^{1/2}Σ1^{-1/2};
    # E‖x − Tx‖² under x ~ N(0, Σ1) must equal W2².
    rng = np.random.default_rng(2)
    S1, S2 = random_psd(3, cond=10, rng=rng), random_psd(3, cond=10, rng=rng)
    w, Q = np.linalg.eigh(S1)
    r1, r1inv = (Q * np.sqrt(w)) @ Q.T, (Q / np.sqrt(w)) @ Q.T
    w2, Q2 = np.linalg.eigh(r1 @ S2 @ r1)
    T = r1inv @ ((Q2 * np.sqrt(w2)) @ Q2.T) @ r1inv
    cost = np.trace((np.eye(3) - T) @ S1 @ (np.eye(3) - T).T)
    z = np.zeros(3)
    assert gaussian_w2(z, S1, z, S2) ** 2 == pytest.approx(cost, rel=1e-10)


def test_subnetwork_w2_marginal_is_eq_23_exactly_and_conditional_is_not():
    rng = np.random.default_rng(3)
    J = rng.standard_normal((3, 6))
    Omega = J.T @ J + 0.7 * np.eye(6)
    var = np.diag(np.linalg.inv(Omega))
    S = [4, 0, 2]
    assert subnetwork_w2(Omega, S, kind="marginal") == pytest.approx(w2_diagonal(var, S), rel=1e-7)
    assert subnetwork_w2(Omega, S) > w2_diagonal(var, S) + 1e-3
    cov = subnetwork_covariance(Omega, S)
    np.testing.assert_allclose(cov[np.ix_(S, S)] @ Omega[np.ix_(S, S)], np.eye(3), atol=1e-12)
    assert np.all(cov[[1, 3, 5]] == 0)


def test_w2_bad_input():
    with pytest.raises(ValueError, match="kind must be"):
        subnetwork_covariance(np.eye(2), [0], kind="joint")
    with pytest.raises(ValueError, match="marginal_variances must be"):
        w2_diagonal([1.0, -1.0], [0])
    with pytest.raises(ValueError, match="mean1 and mean2"):
        gaussian_w2(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))


@pytest.mark.parametrize(("mu", "s"), [(0.3, 0.1), (8.0, 16.0), (-5.0, 3.0), (2.0, 0.5)])
def test_logistic_gaussian_integral_matches_adaptive_quadrature(mu, s):
    exact = quad(lambda f: expit(f) * norm.pdf(f, mu, s), -np.inf, np.inf, epsabs=1e-13)[0]
    assert logistic_gaussian_integral(mu, s**2) == pytest.approx(exact, abs=1e-12)


def test_probit_limits_and_symmetry():
    assert probit_approximation(1.3, 0.0) == pytest.approx(expit(1.3), rel=1e-15)
    assert logistic_gaussian_integral(1.3, 0.0) == pytest.approx(expit(1.3), rel=1e-15)
    mu = np.array([-2.0, 2.0])
    vals = logistic_gaussian_integral(mu, 4.0)
    assert vals[0] + vals[1] == pytest.approx(1.0, abs=1e-13)
    with pytest.raises(ValueError, match="var must be finite and non-negative"):
        probit_approximation(0.0, -1.0)
