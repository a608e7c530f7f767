"""Class probabilities of a Gaussian over logits by the probit approximation.

For one logit (binary classification), ∫ σ(f) N(f; μ, v) df ≈ σ(μ / √(1 + π v / 8))
(MacKay 1992; Bishop 2006, §4.5.2); for d' logits the same scaling is applied to every logit
before the softmax. :mod:`laplace_lab.theory.probit` holds the exact integral it is tested
against.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

__all__ = ["probit_probability"]


def probit_probability(mean: Any, variance: Any) -> np.ndarray:
    """Class probabilities of N(mean, variance) logits by the probit approximation.

    Parameters
    ----------
    mean : (n,), (n, 1) or (n, d') array_like
        The logits' means: one logit per point (binary) or d' ≥ 2 (multiclass).
    variance : array_like of the shape of ``mean``
        Their marginal variances, finite and ≥ 0.

    Returns
    -------
    ndarray of the shape of ``mean``
        One logit: P(y = 1) = ``σ(μ / √(1 + π v / 8))``; d' ≥ 2 logits: the softmax over the
        last axis of ``μ_c / √(1 + π v_c / 8)``.

    References
    ----------
    .. [1] D. J. C. MacKay, "The evidence framework applied to classification networks",
       Neural Computation 4(5), 1992.
    .. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §3
       eq. (13) and §4 eq. (19).
    """
    mu = np.asarray(mean, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    if mu.ndim not in (1, 2):
        raise ValueError(f"mean must have shape (n,) or (n, d'); got shape {mu.shape}")
    if mu.shape != v.shape:
        raise ValueError(f"variance must have the shape of mean {mu.shape}; got {v.shape}")
    if not np.all(np.isfinite(mu)):
        raise ValueError("mean must be finite")
    if np.any(v < 0) or not np.all(np.isfinite(v)):
        raise ValueError("variance must be finite and non-negative")
    z = mu / np.sqrt(1.0 + np.pi * v / 8.0)
    if mu.ndim == 1 or mu.shape[1] == 1:
        return expit(z)
    return softmax(z, axis=1)
