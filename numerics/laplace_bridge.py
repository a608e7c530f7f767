"""The Laplace bridge: a Dirichlet over class probabilities from a Gaussian over logits.

Hobbhahn, Kristiadi & Hennig (arXiv:2003.01227, §3) invert the Laplace approximation of a
Dirichlet Dir(α) in the softmax basis, which is the Gaussian with

    μ_k = log α_k − (1/K) Σ_l log α_l,
    Σ_kl = δ_kl/α_k − (1/K)(1/α_k + 1/α_l) + (1/K²) Σ_u 1/α_u,

(MacKay 1998): from the diagonal of a Gaussian N(μ, Σ) over K logits,

    α_k = (1/Σ_kk) (1 − 2/K + e^{μ_k}/K² Σ_l e^{−μ_l}),

a closed form, with the predictive probabilities the Dirichlet mean α_k/Σ_l α_l. The
softmax basis has Σ_k μ_k = 0 and 1ᵀΣ1 = 0 (softmax is invariant along 1); a Gaussian
over network logits is first conditioned on 1ᵀf = 0,
μ' = μ − Σ1 (1ᵀμ)/(1ᵀΣ1), Σ' = Σ − Σ11ᵀΣ/(1ᵀΣ1), as laplace-torch's ``link_approx="bridge"``
does (without the further variance rescaling of its ``"bridge_norm"``). For K = 2 the
conditioned variances are equal and 1 − 2/K = 0, so α ∝ e^{μ'}: the bridge's mean is
softmax(μ') and ignores the spread of the Gaussian; it is a predictive for K ≥ 3 logits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["bridge_probability", "laplace_bridge"]


def _checked(mean: Any, covariance: Any) -> tuple[np.ndarray, np.ndarray]:
    mu = np.asarray(mean, dtype=np.float64)
    S = np.asarray(covariance, dtype=np.float64)
    if mu.ndim != 2 or mu.shape[1] < 3:
        raise ValueError(f"mean must have shape (n, K) with K ≥ 3 logits; got {mu.shape}")
    if S.shape != (*mu.shape, mu.shape[1]):
        raise ValueError(f"covariance must have shape {(*mu.shape, mu.shape[1])}; got {S.shape}")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(S))):
        raise ValueError("mean and covariance must be finite")
    return mu, S


def laplace_bridge(mean: Any, covariance: Any) -> np.ndarray:
    """The Dirichlet parameters α of the Laplace bridge of N(mean, covariance) over logits.

    Parameters
    ----------
    mean : (n, K) array_like
        The logits' means, K ≥ 3.
    covariance : (n, K, K) array_like
        Their covariances (positive definite after conditioning on a zero sum: a variance
        along some other direction than 1).

    Returns
    -------
    (n, K) ndarray
        α > 0 of Dir(α) per row, from the zero-sum conditioned Gaussian (module docstring).

    References
    ----------
    .. [1] M. Hobbhahn, A. Kristiadi, P. Hennig, "Fast predictive uncertainty for
       classification with Bayesian deep networks", UAI 2022, arXiv:2003.01227, §3 (α_k of
       the Laplace bridge; the zero-sum Gaussian of the softmax basis).
    .. [2] D. J. C. MacKay, "Choice of basis for Laplace approximation", Machine Learning
       33 (1998) (the Laplace approximation of a Dirichlet in the softmax basis).
    """
    mu, S = _checked(mean, covariance)
    K = mu.shape[1]
    s = S.sum(axis=2)  # Σ1
    t = s.sum(axis=1, keepdims=True)  # 1ᵀΣ1
    if np.any(t <= 0):
        raise ValueError("covariance must have 1ᵀΣ1 > 0 (a variance along the sum of logits)")
    mu0 = mu - s * mu.sum(axis=1, keepdims=True) / t
    var0 = np.diagonal(S, axis1=1, axis2=2) - s * s / t
    if np.any(var0 <= 0):
        raise ValueError("the zero-sum conditioned covariance must have a positive diagonal")
    shift = mu0 - mu0.max(axis=1, keepdims=True)  # e^{μ_k} Σ e^{−μ_l} is shift-invariant
    ratio = np.exp(shift) * np.sum(np.exp(-shift), axis=1, keepdims=True)
    return (1.0 - 2.0 / K + ratio / K**2) / var0


def bridge_probability(mean: Any, covariance: Any) -> np.ndarray:
    """The Laplace bridge's predictive probabilities α_k/Σ_l α_l, (n, K).

    Parameters
    ----------
    mean : (n, K) array_like
        The logits' means, K ≥ 3.
    covariance : (n, K, K) array_like
        Their covariances.

    Returns
    -------
    (n, K) ndarray
        The Dirichlet mean of :func:`laplace_bridge` per row.

    References
    ----------
    .. [1] M. Hobbhahn, A. Kristiadi, P. Hennig, "Fast predictive uncertainty for
       classification with Bayesian deep networks", UAI 2022, arXiv:2003.01227, §3.
    """
    alpha = laplace_bridge(mean, covariance)
    return alpha / alpha.sum(axis=1, keepdims=True)
