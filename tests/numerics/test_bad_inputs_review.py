"""Bad inputs that once slipped through to NaN or garbage now raise errors naming them."""

from __future__ import annotations

import numpy as np
import pytest

from numerics import GGN, LowRankLaplace, coverage, ipv, wasserstein_gap


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
