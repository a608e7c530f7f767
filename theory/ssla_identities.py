"""Numerical forms of the displayed identities behind SSLA.

They are the Gaussian integral of eq. (8), the Laplace evidence of eq. (11) and the
Fisher-information approximations of eq. (15) and Corollary 2.

J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation for
Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3–4.

- :func:`gaussian_integral`: ∫ exp(−½ uᵀHu) du by tensor-product trapezoidal quadrature on a
  box set by the widest direction (no use of det H), for q ≤ 2; eq. (8) states it equals
  (2π)^{q/2} |J(θ̃)|^{−1/2}.
- :func:`laplace_log_evidence` (eq. 11, at the MLE with the likelihood Hessian) and
  :func:`exact_log_evidence` (Bayes' rule at the posterior mean,
  log p(D) = ℓ(θ) + log π(θ) − log p(θ | D), exact for conjugate models).
- :class:`ExponentialRegression`: y = θ₀ exp(−θ₁ x) + N(0, σ²), a nonlinear regression with
  known σ², with the observed information −ℓ''(θ)/n and the three matrices eq. (15) can mean
  by "(1/n) J̃ᵀJ̃ with J̃ the Jacobian from ℓ̃": the outer product of the summed score
  (the gradient of ℓ̃, a vector: rank one), the summed outer products of per-point scores
  (the empirical Fisher), and the Gauss–Newton matrix Σ g_i g_iᵀ/σ² of the output
  gradients g_i.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import least_squares

from laplace_lab._checks import as_psd_matrix, positive_float, positive_int
from laplace_lab.theory.conjugate_base import ConjugateModel

__all__ = [
    "ExponentialRegression",
    "exact_log_evidence",
    "gaussian_integral",
    "laplace_log_evidence",
]


def gaussian_integral(H: Any, *, nodes: int = 401, width: float = 12.0) -> float:
    """∫_{ℝ^q} exp(−½ uᵀ H u) du by the trapezoidal rule, q ∈ {1, 2}.

    The box is ±``width``/√λ_min(H) in every coordinate (the integrand is below
    exp(−width²/2) outside it); the integrand is analytic, so the rule converges
    geometrically in ``nodes``.
    """
    A = as_psd_matrix(H, "H")
    q = A.shape[0]
    if q not in (1, 2):
        raise ValueError(f"H must be 1×1 or 2×2; got {A.shape}")
    lam_min = float(np.linalg.eigvalsh(A)[0])
    if lam_min <= 0:
        raise ValueError("H must be positive definite")
    nodes = positive_int(nodes, "nodes")
    t = np.linspace(-1.0, 1.0, nodes) * width / np.sqrt(lam_min)
    h = t[1] - t[0]
    if q == 1:
        return float(np.trapezoid(np.exp(-0.5 * A[0, 0] * t * t), dx=h))
    U, V = np.meshgrid(t, t, indexing="ij")
    quad = A[0, 0] * U * U + 2 * A[0, 1] * U * V + A[1, 1] * V * V
    return float(np.trapezoid(np.trapezoid(np.exp(-0.5 * quad), dx=h, axis=1), dx=h))


def laplace_log_evidence(model: ConjugateModel, data: Any) -> float:
    """Eq. (11) of [1]_: ℓ_D(θ̂) + (q/2) log 2π − ½ log|J(θ̂)| + log π(θ̂), θ̂ the MLE.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3
       eq. (11).
    """
    theta = np.atleast_1d(np.asarray(model.mle(data), dtype=np.float64))
    J = np.atleast_2d(np.asarray(model.fisher_information(theta, data), dtype=np.float64))
    sign, logdet = np.linalg.slogdet(J)
    if sign <= 0:
        raise ValueError("the observed information at the MLE is not positive definite")
    q = theta.size
    point = theta[0] if q == 1 else theta
    total = model.log_likelihood(point, data) + model.log_prior(point)
    return float(np.squeeze(total)) + 0.5 * q * np.log(2 * np.pi) - 0.5 * logdet


def exact_log_evidence(model: ConjugateModel, data: Any) -> float:
    """log p(D) = ℓ_D(θ) + log π(θ) − log p(θ | D) at θ = the posterior mean (exact)."""
    post = model.posterior(data)
    mean = post.mean() if callable(post.mean) else post.mean
    theta = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    point = theta[0] if theta.size == 1 else theta
    total = model.log_likelihood(point, data) + model.log_prior(point) - post.logpdf(point)
    return float(np.squeeze(total))


class ExponentialRegression:
    """y = θ₀ exp(−θ₁ x) + ε, ε ~ N(0, σ²) with σ² known; a flat prior (θ̂ the MLE).

    Every matrix is per observation (divided by n), as eq. (15) of [1]_ writes I(θ).

    Parameters
    ----------
    noise_var : float
        σ² > 0.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §4 eq.
       (15) and Corollary 2.
    """

    q = 2

    def __init__(self, noise_var: float) -> None:
        self.noise_var = positive_float(noise_var, "noise_var")

    @staticmethod
    def mean(theta: Any, x: Any) -> np.ndarray:
        t, x = np.asarray(theta, dtype=np.float64), np.asarray(x, dtype=np.float64)
        return t[0] * np.exp(-t[1] * x)

    @staticmethod
    def output_gradients(theta: Any, x: Any) -> np.ndarray:
        """g_i = ∇_θ f(x_i; θ), shape (n, 2)."""
        t, x = np.asarray(theta, dtype=np.float64), np.asarray(x, dtype=np.float64)
        e = np.exp(-t[1] * x)
        return np.stack([e, -t[0] * x * e], axis=1)

    def residuals(self, theta: Any, x: Any, y: Any) -> np.ndarray:
        return np.asarray(y, dtype=np.float64) - self.mean(theta, x)

    def mle(self, x: Any, y: Any, start: Any) -> np.ndarray:
        """The least-squares (maximum-likelihood) θ̂ from ``start`` (scipy, tight tolerances)."""
        res = least_squares(
            lambda t: self.residuals(t, x, y),
            np.asarray(start, dtype=np.float64),
            jac=lambda t: -self.output_gradients(t, x),
            xtol=1e-15,
            ftol=1e-15,
            gtol=1e-15,
        )
        return res.x

    def observed_information(self, theta: Any, x: Any, y: Any) -> np.ndarray:
        """−ℓ''(θ)/n = (1/(nσ²)) Σ [g_i g_iᵀ − r_i ∇²f_i]."""
        t = np.asarray(theta, dtype=np.float64)
        x = np.asarray(x, dtype=np.float64)
        g, r = self.output_gradients(t, x), self.residuals(t, x, y)
        e = np.exp(-t[1] * x)
        h01, h11 = -x * e, t[0] * x * x * e  # ∂²f/∂θ₀∂θ₁, ∂²f/∂θ₁² (∂²f/∂θ₀² = 0)
        curv = np.array([[0.0, np.sum(r * h01)], [np.sum(r * h01), np.sum(r * h11)]])
        return (g.T @ g - curv) / (self.noise_var * x.size)

    def gauss_newton(self, theta: Any, x: Any) -> np.ndarray:
        """(1/n) Σ g_i g_iᵀ/σ²: the Gauss–Newton information."""
        g = self.output_gradients(theta, x)
        return g.T @ g / (self.noise_var * g.shape[0])

    def scores(self, theta: Any, x: Any, y: Any) -> np.ndarray:
        """Per-point scores s_i = ∇_θ log p(y_i | x_i, θ) = r_i g_i/σ², shape (n, 2)."""
        return (
            self.residuals(theta, x, y)[:, None]
            * self.output_gradients(theta, x)
            / (self.noise_var)
        )

    def empirical_fisher(self, theta: Any, x: Any, y: Any) -> np.ndarray:
        """(1/n) Σ s_i s_iᵀ: the stacked per-point Jacobian of ℓ̃'s terms, squared."""
        s = self.scores(theta, x, y)
        return s.T @ s / s.shape[0]

    def score_outer_product(self, theta: Any, x: Any, y: Any) -> np.ndarray:
        """(1/n) (Σ s_i)(Σ s_i)ᵀ: the gradient vector of ℓ̃ times its transpose (rank one)."""
        s = self.scores(theta, x, y).sum(axis=0)
        return np.outer(s, s) / np.asarray(x).size
