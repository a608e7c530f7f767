"""The CLT limit that refutes App. A.4's o_P(√(log p / N)) rate, against closed forms."""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from laplace_lab.paper_checks.subnetwork_laplace_optimality import theorems


def test_isserlis_covariance_of_squared_gaussian_gradients():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    lam = a @ a.T + 0.5 * np.eye(3)
    g = rng.standard_normal((400_000, 3)) @ np.linalg.cholesky(lam).T
    empirical = np.cov(g**2, rowvar=False)
    exact = theorems.score_deviation_covariance(lam)
    # Var of the sample covariance of g² is O(Λ⁴/n): 2% of the largest entry is > 5 s.e.
    assert np.max(np.abs(empirical - exact)) < 0.02 * np.max(exact)


def test_limit_is_the_mean_max_of_two_independent_half_normals_for_the_identity():
    # Λ = I₂: W_i iid N(0, 2), so E max|W_i| = √2 ∫₀^∞ (1 − erf(x/√2)²) dx
    tail, _ = integrate.quad(lambda x: 1.0 - special.erf(x / math.sqrt(2.0)) ** 2, 0, np.inf)
    exact = math.sqrt(2.0) * tail / math.sqrt(math.log(2.0))
    mean, se = theorems.clt_scaled_limit(np.eye(2), np.random.default_rng(0), 200_000)
    assert abs(mean - exact) < 4 * se
    assert se < 2e-3 * exact
