"""Deliberately wrong variants of what the subnetwork-inference claims rely on (their mutants).

Each replaces a function the claims call at run time; the claims declare them with the verdict they
must then give (:mod:`laplace_lab.paper_checks.verification.mutants`). A variant that calls the
true function holds it as a default argument, which the mutant does not rebind.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from laplace_lab.theory.probit import logistic_gaussian_integral


def w2_over_s(marginal_variances, S):
    """Eq. (23) summed over S instead of its complement."""
    var = np.asarray(marginal_variances, dtype=np.float64)
    return float(np.sqrt(var[np.asarray(S, dtype=int)].sum()))


def gaussian_w2_without_cross_term(mean1, cov1, mean2, cov2):
    """W2 between Gaussians without the −2 tr((Σ2^½ Σ1 Σ2^½)^½) term."""
    value = np.sum((np.asarray(mean1) - mean2) ** 2) + np.trace(cov1) + np.trace(cov2)
    return float(np.sqrt(max(value, 0.0)))


def probit_without_pi(mu, var):
    """σ(μ/√(1 + s²/8)): the probit scaling without its π."""
    return expit(np.asarray(mu, float) / np.sqrt(1.0 + np.asarray(var, float) / 8.0))


def coarse_reference_integral(mu, var, *, nodes=1201, _true=logistic_gaussian_integral):
    """The reference logistic–Gaussian integral on 7 trapezoidal nodes."""
    return _true(mu, var, nodes=7)


def no_rescaling(prior_precision, size, total):
    """λ_S = λ: the full network's prior kept for the subnetwork."""
    return prior_precision


def squared_rescaling(prior_precision, size, total):
    """λ_S = λ·(S/D)²: rescaled twice."""
    return prior_precision * (size / total) ** 2


__all__ = [
    "coarse_reference_integral",
    "gaussian_w2_without_cross_term",
    "no_rescaling",
    "probit_without_pi",
    "squared_rescaling",
    "w2_over_s",
]


def smallest_variances(variances, k):
    """Daxberger's rule reversed: the k weights of smallest variance."""
    return np.argsort(np.asarray(variances, dtype=np.float64), kind="stable")[:k]
