"""Scores of the FSP-Laplace real-data experiments: expected log-likelihood, squared error,
the exact GP baseline and single-threshold out-of-distribution accuracy.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711, Table 1, Table C.1 and App. B.2:

- :func:`regression_scores` — per test point E_{f ~ N(μ, v)} log N(y; f, σ²) (closed form;
  the paper estimates it from 10 posterior samples) on the standardised scale, its sum over the
  test points, and the mean squared error of the predictive mean on the data's own scale;
- :func:`gp_predictive` — the exact GP posterior of f at test inputs (Rasmussen & Williams
  2006, eqs. 2.25–2.26) by one Cholesky factorisation;
- :func:`threshold_accuracy` — the accuracy of the best single threshold on a predictive
  uncertainty separating in-distribution from out-of-distribution inputs (the decision stump of
  Malinin et al. 2021, as in App. B.2 "Out-of-distribution detection with regression data").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from laplace_lab._checks import positive_float, real_array
from laplace_lab.networks.fsp_laplace import expected_log_likelihood

__all__ = ["gp_predictive", "regression_scores", "tanh_mlp", "threshold_accuracy"]


def _vector(value: Any, name: str) -> np.ndarray:
    a = real_array(value, name).astype(np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a non-empty finite 1-D array; got shape {a.shape}")
    return a


def regression_scores(
    y: Any, mean: Any, variance: Any, noise_var: float, *, y_scale: float = 1.0
) -> dict[str, float]:
    """ELL per test point and summed (standardised scale), MSE on the original scale.

    Parameters
    ----------
    y, mean, variance : (n,) arrays
        Standardised test targets, predictive mean and epistemic variance Var f(x*).
    noise_var : float
        σ² of the Gaussian likelihood (standardised scale).
    y_scale : float
        The targets' standard deviation: the MSE is reported in the data's units,
        ``y_scale² · mean((y − μ)²)``.

    Returns
    -------
    dict
        ``ell`` (mean over test points), ``ell_sum``, ``mse``, ``noise_std`` (σ, standardised)
        and ``ell_optimal_noise_std``, the σ that maximises this ELL,
        √mean((y − μ)² + v).

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, Table 1 and Table C.1.
    """
    y = _vector(y, "y")
    mu = _vector(mean, "mean")
    v = _vector(variance, "variance")
    if mu.shape != y.shape or v.shape != y.shape:
        raise ValueError(f"mean and variance must have shape {y.shape}; got {mu.shape}, {v.shape}")
    if np.any(v < 0):
        raise ValueError(f"variance must be ≥ 0; got min(variance)={v.min()}")
    s = positive_float(y_scale, "y_scale")
    ell = expected_log_likelihood(y, mu, v, noise_var)
    return {
        "ell": float(ell.mean()),
        "ell_sum": float(ell.sum()),
        "mse": float(s**2 * np.mean((y - mu) ** 2)),
        "noise_std": float(np.sqrt(noise_var)),
        "ell_optimal_noise_std": float(np.sqrt(np.mean((y - mu) ** 2 + v))),
    }


def gp_predictive(
    kernel: Any, noise_var: float, X: Any, y: Any, X_test: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Exact GP posterior of f at ``X_test``: mean K*ᵀ(K + σ²I)⁻¹y, variance
    k(x*, x*) − K*ᵀ(K + σ²I)⁻¹K* (Rasmussen & Williams 2006, eqs. 2.25–2.26).

    ``kernel(X1, X2)`` is the prior covariance of f (a scikit-learn kernel or one of
    :mod:`laplace_lab.numerics.kernels`), without the noise term.

    References
    ----------
    .. [1] C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning", MIT
       Press 2006, §2.2, eqs. (2.25)–(2.26).
    """
    s2 = positive_float(noise_var, "noise_var")
    X = np.asarray(X, dtype=np.float64)
    Xs = np.asarray(X_test, dtype=np.float64)
    y = _vector(y, "y")
    if X.ndim != 2 or Xs.ndim != 2 or X.shape[0] != y.size or X.shape[1] != Xs.shape[1]:
        raise ValueError(
            f"X must be (n, d) with n = len(y) and X_test (m, d); got {X.shape}, {Xs.shape}"
        )
    K = np.asarray(kernel(X, X), dtype=np.float64) + s2 * np.eye(X.shape[0])
    Ks = np.asarray(kernel(X, Xs), dtype=np.float64)
    chol = scipy.linalg.cho_factor(K, lower=True)
    mean = Ks.T @ scipy.linalg.cho_solve(chol, y)
    W = scipy.linalg.solve_triangular(chol[0], Ks, lower=True)
    prior_var = np.asarray(kernel.diag(Xs), dtype=np.float64)
    return mean, np.maximum(prior_var - np.sum(W * W, axis=0), 0.0)


def threshold_accuracy(score_in: Any, score_out: Any) -> float:
    """Accuracy of the best rule "out of distribution iff score > t" on the pooled inputs.

    The decision stump of one feature (the predictive uncertainty) fitted to the pooled
    in-distribution and out-of-distribution scores; ties of equal scores fall on one side.
    With equally many inputs of each kind, 0.5 is chance and 1 a perfect separation.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, App. B.2 "Out-of-distribution detection with regression data".
    .. [2] A. Malinin, L. Prokhorenkova, A. Ustimenko, "Uncertainty in Gradient Boosting via
       Ensembles", ICLR 2021.
    """
    a, b = _vector(score_in, "score_in"), _vector(score_out, "score_out")
    scores = np.concatenate([a, b])
    is_out = np.concatenate([np.zeros(a.size), np.ones(b.size)])
    order = np.argsort(scores, kind="stable")
    s, o = scores[order], is_out[order]
    # threshold after position k: the k lowest are called in-distribution
    ins_below = np.concatenate([[0.0], np.cumsum(1.0 - o)])
    outs_above = b.size - np.concatenate([[0.0], np.cumsum(o)])
    cut = np.concatenate([[True], s[1:] > s[:-1], [True]])  # no threshold between equal scores
    return float(np.max((ins_below + outs_above)[cut]) / scores.size)


def tanh_mlp(d_in: int, width: int = 50, *, features: Any = None) -> Any:
    """Two hidden tanh layers of ``width`` units and one output (float64), after an optional
    fixed ``features`` module (App. B.2): :func:`~laplace_lab.networks.models.mlp`."""
    from torch import nn

    from laplace_lab.networks.models import mlp

    net = mlp(d_in, [width, width], activation="tanh")
    return (net if features is None else nn.Sequential(features, *net)).double()
