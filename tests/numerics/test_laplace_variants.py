"""Diagonal Laplace and the isotropic-prior path against dense inverses; the evidence against
a direct log-determinant."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import GGN
from laplace_lab.numerics.laplace_variants import (
    SpectralLaplace,
    diagonal_laplace_variance,
    prior_precision_path,
    with_prior_precision,
)
from laplace_lab.numerics.network_ssla import (
    assla_log_density,
    assla_log_density_from_variance,
    ssla_log_density,
    ssla_log_density_from_variance,
)
from laplace_lab.numerics.predictive import predictive_variance


@pytest.mark.parametrize(("n", "p"), [(6, 30), (40, 9)])  # Gram form and p-form
def test_spectral_variances_equal_dense_inverses(n, p):
    rng = np.random.default_rng(1)
    J = rng.standard_normal((n, p)) * rng.uniform(0.1, 3.0, p)
    G = rng.standard_normal((4, 3, p))
    spectral = SpectralLaplace(J)
    lams = [1e-3, 0.7, 50.0]
    got = spectral.variance(G, lams)
    assert got.shape == (3, 4, 3)
    for i, lam in enumerate(lams):
        inv = np.linalg.inv(J.T @ J + lam * np.eye(p))
        np.testing.assert_allclose(got[i], np.einsum("mcp,pq,mcq->mc", G, inv, G), rtol=1e-8)
        np.testing.assert_allclose(spectral.marginal_variance(lam), np.diag(inv), rtol=1e-8)
    np.testing.assert_allclose(prior_precision_path(J, G[:, 0], lams), got[:, :, 0], rtol=1e-12)


def test_log_evidence_is_the_laplace_evidence_up_to_a_constant():
    rng = np.random.default_rng(2)
    J = rng.standard_normal((5, 12))
    theta2 = 3.7
    lams = np.array([0.1, 1.0, 10.0])
    got = SpectralLaplace(J).log_evidence(lams, theta2)
    # log N(θ̂; 0, λ⁻¹I) − ½ log|JᵀJ + λI|, λ-dependent parts only
    direct = np.array(
        [
            6 * np.log(lam)
            - lam * theta2 / 2
            - 0.5 * np.linalg.slogdet(J.T @ J + lam * np.eye(12))[1]
            for lam in lams
        ]
    )
    np.testing.assert_allclose(np.diff(got), np.diff(direct), rtol=1e-10)


def test_diagonal_variance_and_prior_swap():
    rng = np.random.default_rng(3)
    J = rng.standard_normal((7, 5))
    ggn = GGN.regression(J, noise_var=0.5, prior_precision=2.0)
    G = rng.standard_normal((3, 5))
    d = np.sum(J * J, axis=0) / 0.5 + 2.0
    np.testing.assert_allclose(diagonal_laplace_variance(ggn, G), (G * G) @ (1 / d), rtol=1e-12)
    swapped = with_prior_precision(ggn, 9.0)
    np.testing.assert_allclose(np.asarray(swapped.prior_precision), 9.0)
    np.testing.assert_array_equal(np.asarray(swapped.Jw), np.asarray(ggn.Jw))
    with pytest.raises(TypeError, match="ggn must be a GGN"):
        diagonal_laplace_variance(J, G)
    with pytest.raises(ValueError, match="prior_precisions"):
        SpectralLaplace(J).variance(G, [-1.0])
    with pytest.raises(ValueError, match="G_test"):
        SpectralLaplace(J).variance(np.ones((3, 4)), [1.0])


def test_ssla_densities_from_variance_equal_the_ggn_versions():
    rng = np.random.default_rng(4)
    J = rng.standard_normal((10, 25))
    ggn = GGN.regression(J, noise_var=0.3, prior_precision=1.5)
    G, f = rng.standard_normal((4, 25)), rng.standard_normal(4)
    y = f[:, None] + np.linspace(-2, 2, 7)
    v = np.asarray(predictive_variance(ggn, G))
    np.testing.assert_allclose(
        assla_log_density_from_variance(v, f, y, noise_var=0.3),
        assla_log_density(ggn, G, f, y, noise_var=0.3),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        ssla_log_density_from_variance(v, f, y, noise_var=0.3),
        ssla_log_density(ggn, G, f, y, noise_var=0.3),
        rtol=1e-12,
    )
    with pytest.raises(ValueError, match="v and f_test"):
        assla_log_density_from_variance(v, f[:3], y, noise_var=0.3)
