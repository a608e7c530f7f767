"""Deliberately wrong variants of what the subnetwork-inference claims rely on (their mutants).

Each replaces a function the claims call at run time; the claims declare them with the verdict they
must then give (:mod:`laplace_lab.paper_checks.verification.mutants`). A variant that calls the
true function holds it as a default argument, which the mutant does not rebind.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit

from laplace_lab.networks.data import split_standardise
from laplace_lab.networks.swag import swag_diagonal_variance
from laplace_lab.theory.probit import logistic_gaussian_integral


def w2_over_s(marginal_variances, S):
    """Eq. (23) summed over S instead of its complement."""
    var = np.asarray(marginal_variances, dtype=np.float64)
    return float(np.sqrt(var[np.asarray(S, dtype=int)].sum()))


def gaussian_w2_without_cross_term(mean1, cov1, mean2, cov2):
    """W2 between Gaussians without the −2 tr((Σ2^½ Σ1 Σ2^½)^½) term."""
    value = np.sum((np.asarray(mean1) - mean2) ** 2) + np.trace(cov1) + np.trace(cov2)
    return float(np.sqrt(max(value, 0.0)))


def pooled_split_standardise(X, y, *, _true=split_standardise, **split):
    """The split of :func:`~laplace_lab.networks.data.split_standardise`, standardised with the
    mean and standard deviation of the training and test rows together."""
    ds = _true(X, y, **split)
    raw = np.vstack([ds.X_train * ds.x_std + ds.x_mean, ds.X_test * ds.x_std + ds.x_mean])
    mean, sd = raw.mean(0), raw.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    n = ds.X_train.shape[0]
    out = {"X_train": (raw[:n] - mean) / sd, "X_test": (raw[n:] - mean) / sd}
    out.update(x_mean=mean, x_std=sd)
    if ds.task == "regression":
        t = np.concatenate([ds.y_train, ds.y_test]) * ds.y_std + ds.y_mean
        y_mean, y_std = float(t.mean()), float(t.std())
        out.update(
            y_train=(t[:n] - y_mean) / y_std,
            y_test=(t[n:] - y_mean) / y_std,
            y_mean=y_mean,
            y_std=y_std,
        )
    return dataclasses.replace(ds, **out)


def swag_with_isotropic_noise(model, X, y, *, _true=swag_diagonal_variance, **kw):
    """Diagonal SWAG of iterates perturbed by isotropic Gaussian noise, of variance 10× the largest
    SWAG variance, at every parameter (its sample variance over 60 iterates)."""
    variance = _true(model, X, y, **kw)
    noise = 10.0 * float(np.max(variance))
    draws = np.random.default_rng(0).standard_normal((60, variance.size))
    return variance + noise * draws.var(axis=0)


def psd_sqrt_unclipped(A):
    """The eigen-root without clipping roundoff-negative eigenvalues: √ of them is NaN, and a
    NaN matrix is passed on as NaN (CuPy's ``eigh`` returns NaN where NumPy's raises)."""
    A = 0.5 * (np.asarray(A, dtype=np.float64) + np.asarray(A, dtype=np.float64).T)
    if not np.all(np.isfinite(A)):
        return np.full_like(A, np.nan)
    w, Q = np.linalg.eigh(A)
    with np.errstate(invalid="ignore"):
        return (Q * np.sqrt(w)) @ Q.T


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
    "pooled_split_standardise",
    "probit_without_pi",
    "psd_sqrt_unclipped",
    "squared_rescaling",
    "swag_with_isotropic_noise",
    "w2_over_s",
]


def smallest_variances(variances, k):
    """Daxberger's rule reversed: the k weights of smallest variance."""
    return np.argsort(np.asarray(variances, dtype=np.float64), kind="stable")[:k]
