"""The Laplace bridge inverts the Laplace approximation of a Dirichlet in the softmax basis."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics.laplace_bridge import bridge_probability, laplace_bridge


def _softmax_basis_gaussian(alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MacKay's (1998) Laplace approximation of Dir(α) in the softmax basis: μ, Σ."""
    K = alpha.size
    inv = 1.0 / alpha
    mu = np.log(alpha) - np.mean(np.log(alpha))
    S = np.diag(inv) - (inv[:, None] + inv[None, :]) / K + inv.sum() / K**2
    return mu, S


@pytest.mark.parametrize("alpha", [[2.0, 0.5, 7.0], [1.3, 1.3, 4.0, 0.2], [30.0, 5.0, 0.9]])
def test_the_bridge_recovers_the_dirichlet_it_came_from(alpha):
    # The bridge is the inverse of the Laplace approximation (Hobbhahn et al. §3); Σ has
    # 1ᵀΣ1 = 0, so a variance c along 1 (where softmax is invariant) is added, which the
    # zero-sum conditioning removes again exactly.
    alpha = np.asarray(alpha)
    mu, S = _softmax_basis_gaussian(alpha)
    np.testing.assert_allclose(S.sum(), 0.0, atol=1e-12)
    for c in (0.3, 5.0):
        got = laplace_bridge(mu[None], (S + c)[None])[0]
        np.testing.assert_allclose(got, alpha, rtol=1e-12)
        np.testing.assert_allclose(
            bridge_probability(mu[None], (S + c)[None])[0], alpha / alpha.sum(), rtol=1e-12
        )


def test_a_shift_of_the_mean_along_the_sum_changes_nothing_when_sigma_1_is_along_1():
    # softmax(f + t·1) = softmax(f). The zero-sum conditioning keeps that invariance when
    # Σ1 ∝ 1 (then μ' = μ − mean(μ)·1); it does not in general (μ' moves by t(1 − KΣ1/1ᵀΣ1)).
    rng = np.random.default_rng(4)
    A = rng.normal(size=(3, 3))
    P = np.eye(3) - 1 / 3
    S = P @ A @ A.T @ P + 0.5 * np.eye(3)  # row sums all 0.5
    mu = np.array([0.4, -1.1, 0.9])
    base = bridge_probability(mu[None], S[None])
    np.testing.assert_allclose(bridge_probability((mu + 2.5)[None], S[None]), base, rtol=1e-12)
    S2 = A @ A.T + 0.1 * np.eye(3)  # Σ1 not along 1: the shift moves the bridge
    moved = bridge_probability((mu + 2.5)[None], S2[None]) - bridge_probability(mu[None], S2[None])
    assert np.max(np.abs(moved)) > 1e-3
    # a common scale of Σ divides α and leaves the mean α/Σα: only Σα, the Dirichlet's
    # concentration, carries the overall uncertainty
    np.testing.assert_allclose(
        laplace_bridge(mu[None], (4.0 * S2)[None]), laplace_bridge(mu[None], S2[None]) / 4.0
    )
    np.testing.assert_allclose(
        bridge_probability(mu[None], (4.0 * S2)[None]),
        base2 := (bridge_probability(mu[None], S2[None])),
        rtol=1e-12,
    )
    assert np.max(np.abs(base2 - np.exp(mu) / np.exp(mu).sum())) > 0.05  # not softmax(μ)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="K ≥ 3"):
        laplace_bridge(np.zeros((2, 2)), np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="shape"):
        laplace_bridge(np.zeros((2, 3)), np.ones((2, 3, 2)))
    with pytest.raises(ValueError, match="1ᵀΣ1 > 0"):
        laplace_bridge(np.zeros((1, 3)), np.zeros((1, 3, 3)))
