"""Exact probe moments of the surrogate-NTK checks against hand-computed values."""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.surrogate_ntk_lla._moments import (
    RADEMACHER,
    ProbeLaw,
    discrete_moments,
    gaussian_moments,
)


def test_identity_jacobian():
    J = np.eye(2)
    rad = discrete_moments(J, J)
    np.testing.assert_allclose(rad.mean, np.eye(2), atol=1e-15)
    np.testing.assert_allclose(rad.var, [[0.0, 1.0], [1.0, 0.0]], atol=1e-15)  # v_i² = 1
    assert abs(rad.trace_var) < 1e-15  # ‖v‖² = 2 for every sign vector
    gauss = gaussian_moments(J, J)
    np.testing.assert_allclose(gauss.mean, np.eye(2), atol=1e-14)
    np.testing.assert_allclose(gauss.var, [[2.0, 1.0], [1.0, 2.0]], atol=1e-13)  # Var χ²₁ = 2
    assert abs(gauss.trace_var - 4.0) < 1e-13  # Var χ²₂ = 4


def test_one_output_sum_of_two_coordinates():
    J = np.array([[1.0, 1.0]])
    rad = discrete_moments(J, J)  # z² ∈ {4, 0, 0, 4}
    assert abs(rad.mean[0, 0] - 2.0) < 1e-15 and abs(rad.var[0, 0] - 4.0) < 1e-15
    gauss = gaussian_moments(J, J)  # z ~ N(0, 2): Var z² = 2·2²
    assert abs(gauss.var[0, 0] - 8.0) < 1e-13 and abs(gauss.trace_var - 8.0) < 1e-13


def test_a_kurtotic_law_and_the_default_law():
    kurtotic = ProbeLaw((-np.sqrt(6.0), 0.0, np.sqrt(6.0)), (1 / 12, 5 / 6, 1 / 12))
    m = discrete_moments(np.eye(1), np.eye(1), kurtotic)
    assert abs(m.mean[0, 0] - 1.0) < 1e-14 and abs(m.var[0, 0] - 5.0) < 1e-13  # E v⁴ − 1
    assert RADEMACHER == ProbeLaw((-1.0, 1.0), (0.5, 0.5))


def test_different_jacobians_for_x_and_x_prime():
    J1, J2 = np.array([[1.0, 0.0, 2.0]]), np.array([[0.0, 3.0, 1.0]])
    gauss = gaussian_moments(J1, J2)  # (u·w)² + ‖u‖²‖w‖² = 4 + 5·10
    assert abs(gauss.mean[0, 0] - 2.0) < 1e-13 and abs(gauss.var[0, 0] - 54.0) < 1e-12
    rad = discrete_moments(J1, J2)  # minus 2 Σ u_i² w_i² = 2·4·1
    assert abs(rad.var[0, 0] - 46.0) < 1e-12
