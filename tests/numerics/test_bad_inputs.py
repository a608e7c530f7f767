"""Bad inputs that once slipped through to NaN or garbage now raise errors naming them."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import GGN, LowRankLaplace, coverage, ipv, wasserstein_gap


def test_indefinite_lambda_is_rejected_like_theory_does():
    with pytest.raises(ValueError, match="Lam must be positive semi-definite"):
        ipv(np.diag([1.0, -0.05]), [0, 1], n=10)


def test_metric_parameters_must_be_finite():
    v = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="noise_var must be finite"):
        wasserstein_gap(v, v, noise_var=np.inf)
    with pytest.raises(ValueError, match="z must be positive and finite"):
        coverage(v, v, v, z=np.inf)


def test_prior_precision_needs_a_finite_reciprocal():
    J = np.random.default_rng(0).standard_normal((3, 5))
    with pytest.raises(ValueError, match="finite reciprocal"):
        GGN.regression(J, noise_var=1.0, prior_precision=1e-320)


def test_lowrank_rejects_nan_test_jacobians():
    J = np.random.default_rng(1).standard_normal((4, 12))
    lr = LowRankLaplace.from_factor(J, 1.0, 3, rng=np.random.default_rng(2))
    G = np.ones((2, 12))
    G[0, 3] = np.nan
    with pytest.raises(ValueError, match="G_test"):
        lr.predictive_variance(G)


def test_float32_woodbury_is_accurate_at_training_rows():
    # g in the row space of J_w and a weak prior make gᵀDg − ‖L⁻¹J_wDg‖² cancel; the exact
    # in-sample value of σ0²·(row)ᵀΩ⁻¹(row) is computed densely in float64.
    from laplace_lab.numerics import predictive_variance

    rng = np.random.default_rng(3)
    J = rng.standard_normal((60, 400))
    for alpha in (1e-2, 1e-4):
        ggn64 = GGN.regression(J, noise_var=0.1, prior_precision=alpha)
        G = J[:10] / np.sqrt(0.1)
        Omega = J.T @ J / 0.1 + alpha * np.eye(400)
        exact = np.einsum("ij,ji->i", G, np.linalg.solve(Omega, G.T))
        ggn32 = GGN.regression(J.astype(np.float32), noise_var=0.1, prior_precision=alpha)
        got = predictive_variance(ggn32, G.astype(np.float32))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, exact, rtol=1e-3)
        np.testing.assert_allclose(predictive_variance(ggn64, G), exact, rtol=1e-6)
