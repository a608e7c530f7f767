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


def test_prefix_lengths_beyond_the_order_name_len_order_not_p():
    from laplace_lab.numerics import subnetwork_variance_path

    rng = np.random.default_rng(4)
    ggn = GGN.regression(rng.standard_normal((20, 10)), noise_var=1.0, prior_precision=1.0)
    G = rng.standard_normal((3, 10))
    with pytest.raises(
        ValueError, match=r"ks must be in \[1, len\(order\)\]; got ks=5, len\(order\)=3"
    ):
        subnetwork_variance_path(ggn, G, [0, 1, 2], [2, 5])


def test_gradient_laplace_given_a_ggn_says_to_pass_its_scores():
    from laplace_lab.numerics import gradient_laplace

    ggn = GGN.regression(
        np.random.default_rng(5).standard_normal((8, 6)), noise_var=1.0, prior_precision=1.0
    )
    with pytest.raises(
        TypeError, match=r"not a GGN: pass its scores, gradient_laplace\(ggn\.scores\(\), k\)"
    ):
        gradient_laplace(ggn, 2)
    np.testing.assert_array_equal(
        gradient_laplace(ggn.scores(), 2), np.argsort(-ggn.scores(), kind="stable")[:2]
    )
    with pytest.raises(TypeError, match="scores must be a numeric array; got dict"):
        gradient_laplace({"a": 1}, 1)


def test_bounds_of_sizes_are_named_by_what_they_are():
    from laplace_lab.theory import random_cpi, random_psd

    with pytest.raises(ValueError, match=r"p must be in \[1, 10000\]; got p=20000"):
        random_psd(20_000, rng=0)
    with pytest.raises(ValueError, match=r"ties must be in \[0, p - 1\]; got ties=5, p - 1=3"):
        random_cpi(4, ties=5, rng=0)
