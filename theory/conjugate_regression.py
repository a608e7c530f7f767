"""Conjugate Bayesian linear regression with known noise and with unknown noise.

Known noise gives a Gaussian predictive; the normal–inverse-gamma prior (unknown noise)
gives a Student-t predictive.

Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", arXiv:2605.12208, §5, lists a "conjugate Bayesian linear regression" among
its conjugate checks (without formulas; the standard ones are used). Known σ²: predictive
N(x*ᵀm_n, σ² + x*ᵀS_n x*), S_n = (S0⁻¹ + XᵀX/σ²)⁻¹, m_n = S_n(S0⁻¹m0 + Xᵀy/σ²). Data are
``(X, y)``; the statistics are (n, XᵀX, Xᵀy, yᵀy).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats
from scipy.special import gammaln

from laplace_lab._checks import positive_float
from laplace_lab.theory.conjugate_base import ConjugateModel, data_vector

__all__ = ["BayesianLinearRegression", "NormalInverseGammaRegression", "RegressionStats"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class RegressionStats(NamedTuple):
    """n, XᵀX (d×d), Xᵀy (d) and yᵀy."""

    n: Any
    xtx: Any
    xty: Any
    yty: Any


class NIGPosterior(NamedTuple):
    """Normal–inverse-gamma posterior: w | σ² ~ N(m_n, σ² V_n), σ² ~ IG(a_n, b_n)."""

    mean: np.ndarray
    scaled_cov: np.ndarray
    a: float
    b: float
    #: marginal of w: multivariate t with 2a_n degrees of freedom (frozen scipy)
    weights: Any
    #: marginal of σ²: inverse gamma (frozen scipy)
    noise_var: Any


def _spd(value: object, d: int | None, name: str) -> np.ndarray:
    A = np.asarray(value, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or (d is not None and A.shape[0] != d):
        raise ValueError(f"{name} must be a square matrix of size {d}; got shape {A.shape}")
    if not np.all(np.isfinite(A)) or np.max(np.abs(A - A.T)) > 1e-10 * np.max(np.abs(A)):
        raise ValueError(f"{name} must be finite and symmetric")
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite") from None
    return 0.5 * (A + A.T)


class _Regression(ConjugateModel):
    """Shared plumbing: inputs, statistics, Gaussian prior on w."""

    needs_x = True
    stats_type = RegressionStats

    def _init_prior(self, prior_mean: object, prior_cov: object) -> None:
        m0 = np.asarray(prior_mean, dtype=np.float64)
        if m0.ndim != 1 or m0.size == 0 or not np.all(np.isfinite(m0)):
            raise ValueError(f"prior_mean must be a finite non-empty vector; got {m0.shape}")
        self.prior_mean = m0
        self.prior_cov = _spd(prior_cov, m0.size, "prior_cov")
        self.prior_precision = np.linalg.inv(self.prior_cov)
        self._prior_logdet = np.linalg.slogdet(self.prior_cov)[1]  # log|S0|, once
        self.d = m0.size

    def _stats(self, data: Any) -> RegressionStats:
        if not isinstance(data, tuple) or len(data) != 2:
            raise TypeError("data must be a tuple (X, y)")
        X = np.asarray(data[0], dtype=np.float64)
        y = data_vector(data[1], "y")
        if X.ndim != 2 or X.shape != (y.size, self.d):
            raise ValueError(
                f"X must have shape (len(y), d) = ({y.size}, {self.d}); got {X.shape}"
            )
        if not np.all(np.isfinite(X)):
            raise ValueError("X must be finite")
        return RegressionStats(float(y.size), X.T @ X, X.T @ y, float(y @ y))

    def _check_x_new(self, x_new: object) -> np.ndarray:
        if x_new is None:
            raise ValueError(f"x_new is required for {type(self).__name__}")
        x = np.asarray(x_new, dtype=np.float64)
        if x.shape != (self.d,) or not np.all(np.isfinite(x)):
            raise ValueError(f"x_new must be a finite vector of length {self.d}; got {x.shape}")
        return x

    def _augment(self, s: RegressionStats, y_new: np.ndarray, x_new: np.ndarray):
        y = np.asarray(y_new, dtype=np.float64)
        return RegressionStats(
            s.n + 1.0 + 0.0 * y,
            s.xtx + np.outer(x_new, x_new),
            s.xty + y[..., None] * x_new,
            s.yty + y * y,
        )

    @staticmethod
    def _rss(w: np.ndarray, s: RegressionStats) -> np.ndarray:
        xtxw = np.einsum("...ij,...j->...i", s.xtx, w)
        return s.yty - 2.0 * np.sum(w * s.xty, axis=-1) + np.sum(w * xtxw, axis=-1)

    @staticmethod
    def _grad_rss_half(w: np.ndarray, s: RegressionStats) -> np.ndarray:
        """XᵀXw − Xᵀy."""
        return np.einsum("...ij,...j->...i", s.xtx, w) - s.xty

    def _ls(self, s: RegressionStats) -> np.ndarray:
        xtx = np.asarray(s.xtx)
        if np.linalg.matrix_rank(xtx.reshape(-1, self.d, self.d)[0]) < self.d:
            raise ValueError(
                "data: XᵀX is singular (n < d or collinear columns); the MLE is not unique"
            )
        return np.linalg.solve(xtx, np.asarray(s.xty)[..., None])[..., 0]

    def _post_w(self, s: RegressionStats, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """(m, P): P = S0⁻¹ + XᵀX/scale, m = P⁻¹(S0⁻¹m0 + Xᵀy/scale)."""
        P = self.prior_precision + np.asarray(s.xtx) / scale
        rhs = self.prior_precision @ self.prior_mean + np.asarray(s.xty) / scale
        return np.linalg.solve(P, rhs[..., None])[..., 0], P


class BayesianLinearRegression(_Regression):
    """y_i = x_iᵀw + ε_i, ε_i ~ N(0, σ²) known, w ~ N(m0, S0).

    The analytic predictive is N(x*ᵀm_n, σ² + x*ᵀS_n x*) with S_n = (S0⁻¹ + XᵀX/σ²)⁻¹ and
    m_n = S_n(S0⁻¹m0 + Xᵀy/σ²). Gaussian-linear: the posterior (log-joint) SSLA variant is
    exact for it.

    Parameters
    ----------
    prior_mean : array (d,)
    prior_cov : array (d, d), positive definite
    noise_var : float
        σ² > 0.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5 (conjugate Bayesian
       linear regression).
    """

    gaussian_linear = True

    def __init__(self, prior_mean: Any, prior_cov: Any, noise_var: float) -> None:
        self._init_prior(prior_mean, prior_cov)
        self.noise_var = positive_float(noise_var, "noise_var")
        self.dim = self.d

    def _loglik(self, theta: np.ndarray, s: RegressionStats) -> np.ndarray:
        return -0.5 * s.n * (_LOG_2PI + np.log(self.noise_var)) - self._rss(theta, s) / (
            2.0 * self.noise_var
        )

    def _loglik_change(self, theta1: np.ndarray, theta0: np.ndarray, s: RegressionStats):
        g = self._grad_rss_half(theta1, s) + self._grad_rss_half(theta0, s)
        return -np.sum((theta1 - theta0) * g, axis=-1) / (2.0 * self.noise_var)

    def _new_loglik(self, theta: np.ndarray, y_new: np.ndarray, x_new: np.ndarray):
        r = y_new - theta @ x_new
        return -0.5 * (_LOG_2PI + np.log(self.noise_var)) - r * r / (2.0 * self.noise_var)

    def _fisher(self, theta: np.ndarray, s: RegressionStats) -> np.ndarray:
        J = np.asarray(s.xtx) / self.noise_var
        return np.broadcast_to(
            J, np.broadcast_shapes(theta.shape[:-1], J.shape[:-2]) + J.shape[-2:]
        )

    def _mle(self, s: RegressionStats) -> np.ndarray:
        return self._ls(s)

    def _map(self, s: RegressionStats) -> np.ndarray:
        return self._post_w(s, self.noise_var)[0]

    def _log_prior(self, theta: np.ndarray) -> np.ndarray:
        # log N(θ; m0, S0) in closed form (a frozen scipy distribution per call costs more
        # than the arithmetic)
        r = np.asarray(theta, dtype=np.float64) - self.prior_mean
        q = np.einsum("...i,ij,...j->...", r, self.prior_precision, r)
        logdet = self._prior_logdet
        return -0.5 * (self.d * _LOG_2PI + logdet + q)

    def _prior_neg_hessian(self, theta: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.prior_precision, (*theta.shape[:-1], self.d, self.d))

    def _posterior(self, s: RegressionStats) -> Any:
        m, P = self._post_w(s, self.noise_var)
        return stats.multivariate_normal(m, np.linalg.inv(P))

    def _pred_moments(self, s: RegressionStats, x_new: np.ndarray) -> tuple[float, float]:
        m, P = self._post_w(s, self.noise_var)
        return float(x_new @ m), float(self.noise_var + x_new @ np.linalg.solve(P, x_new))

    def _predictive(self, s: RegressionStats, x_new: np.ndarray) -> Any:
        mean, var = self._pred_moments(s, x_new)
        return stats.norm(mean, np.sqrt(var))

    def _log_predictive(self, s: RegressionStats, y_new: np.ndarray, x_new: np.ndarray):
        mean, var = self._pred_moments(s, x_new)
        return -0.5 * (_LOG_2PI + np.log(var)) - (y_new - mean) ** 2 / (2.0 * var)

    def _plugin(self, theta: np.ndarray, x_new: np.ndarray) -> tuple[float, float]:
        return float(theta @ x_new), float(np.sqrt(self.noise_var))

    def log_evidence(self, data: Any) -> float:
        """The log marginal likelihood log p(y | X) = log N(y; X m0, σ²I + X S0 Xᵀ).

        From the sufficient statistics, with P = S0⁻¹ + XᵀX/σ² and m_n the posterior mean:
        log p(y) = −(n/2) log(2πσ²) − ½ log det(S0 P) − ½ (yᵀy/σ² + m0ᵀS0⁻¹m0 − m_nᵀPm_n).
        For this Gaussian-linear model the Laplace approximation at the MAP is exact, so it
        equals the Laplace log marginal likelihood of linearized Laplace on f(x) = xᵀw.

        Parameters
        ----------
        data : (X, y) or RegressionStats
        """
        s = self.sufficient_statistics(data)
        m, P = self._post_w(s, self.noise_var)
        _, logdet = np.linalg.slogdet(self.prior_cov @ P)
        m0 = self.prior_mean
        quad = s.yty / self.noise_var + m0 @ self.prior_precision @ m0 - m @ P @ m
        return float(-0.5 * s.n * (_LOG_2PI + np.log(self.noise_var)) - 0.5 * logdet - 0.5 * quad)

    def _sample(self, rng: np.random.Generator, n: int, theta_true: Any) -> tuple:
        w = np.asarray(theta_true, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"theta_true must have shape ({self.d},); got {w.shape}")
        X = rng.standard_normal((n, self.d))
        return X, X @ w + rng.normal(0.0, np.sqrt(self.noise_var), size=n)


class NormalInverseGammaRegression(_Regression):
    """Unknown noise: w | σ² ~ N(m0, σ² V0), σ² ~ IG(a0, b0); θ = (w, η = log σ²).

    The Laplace variants work in η = log σ² (an unconstrained coordinate); ``log_prior``
    is the density of (w, η), i.e. includes the Jacobian e^η. The analytic predictive is
    Student-t with 2a_n degrees of freedom, location x*ᵀm_n and squared scale
    (b_n/a_n)(1 + x*ᵀV_n x*).

    Parameters
    ----------
    prior_mean : array (d,)
    prior_cov : array (d, d)
        V0 (positive definite; the prior covariance of w is σ² V0).
    shape, rate : float
        a0 > 0, b0 > 0.
    """

    def __init__(self, prior_mean: Any, prior_cov: Any, shape: float, rate: float) -> None:
        self._init_prior(prior_mean, prior_cov)
        self.shape = positive_float(shape, "shape")
        self.rate = positive_float(rate, "rate")
        self.dim = self.d + 1

    def _split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return theta[..., : self.d], theta[..., self.d]

    def _loglik(self, theta: np.ndarray, s: RegressionStats) -> np.ndarray:
        w, eta = self._split(theta)
        return -0.5 * s.n * (_LOG_2PI + eta) - 0.5 * np.exp(-eta) * self._rss(w, s)

    def _loglik_change(self, theta1: np.ndarray, theta0: np.ndarray, s: RegressionStats):
        return self._loglik(theta1, s) - self._loglik(theta0, s)

    def _new_loglik(self, theta: np.ndarray, y_new: np.ndarray, x_new: np.ndarray):
        w, eta = self._split(theta)
        r = y_new - w @ x_new
        return -0.5 * (_LOG_2PI + eta) - 0.5 * np.exp(-eta) * r * r

    def _fisher(self, theta: np.ndarray, s: RegressionStats) -> np.ndarray:
        """−∇²ℓ in (w, η): [[e^{−η}XᵀX, −e^{−η}(XᵀXw − Xᵀy)], [·, e^{−η} RSS(w)/2]]."""
        w, eta = self._split(theta)
        e = np.exp(-eta)
        g = self._grad_rss_half(w, s)
        rss = self._rss(w, s)
        shape = np.broadcast_shapes(theta.shape[:-1], np.shape(rss))
        J = np.zeros((*shape, self.dim, self.dim))
        J[..., : self.d, : self.d] = e[..., None, None] * np.asarray(s.xtx)
        J[..., : self.d, self.d] = -e[..., None] * g
        J[..., self.d, : self.d] = -e[..., None] * g
        J[..., self.d, self.d] = 0.5 * e * rss
        return J

    def _mle(self, s: RegressionStats) -> np.ndarray:
        w = self._ls(s)
        rss = np.asarray(self._rss(w, s))
        if np.any(rss <= 0):
            raise ValueError(
                "data: the residual sum of squares of the least-squares fit is 0 (n ≤ d or an "
                "exact fit), so the noise MLE log σ̂² = log(RSS/n) is −∞"
            )
        eta = np.log(rss / s.n)
        return np.concatenate([w, np.asarray(eta)[..., None]], axis=-1)

    def _post_nig(self, s: RegressionStats) -> tuple[np.ndarray, np.ndarray, Any, Any]:
        m, P = self._post_w(s, 1.0)
        quad = self.prior_mean @ self.prior_precision @ self.prior_mean
        b = self.rate + 0.5 * (
            s.yty
            + quad
            - np.sum(m * np.asarray(s.xty), axis=-1)
            - np.sum(m * (self.prior_precision @ self.prior_mean), axis=-1)
        )
        return m, P, self.shape + 0.5 * s.n, b

    def _map(self, s: RegressionStats) -> np.ndarray:
        m, _, a, b = self._post_nig(s)
        eta = np.log(b / (a + 0.5 * self.d))
        return np.concatenate([m, np.asarray(eta)[..., None]], axis=-1)

    def _log_prior(self, theta: np.ndarray) -> np.ndarray:
        w, eta = self._split(theta)
        r = w - self.prior_mean
        q = np.einsum("...i,ij,...j->...", r, self.prior_precision, r)
        logdet = self._prior_logdet
        return (
            -0.5 * self.d * (_LOG_2PI + eta)
            - 0.5 * logdet
            - 0.5 * np.exp(-eta) * q
            + self.shape * np.log(self.rate)
            - gammaln(self.shape)
            - self.shape * eta
            - self.rate * np.exp(-eta)
        )

    def _prior_neg_hessian(self, theta: np.ndarray) -> np.ndarray:
        w, eta = self._split(theta)
        e = np.exp(-eta)
        r = w - self.prior_mean
        Pr = r @ self.prior_precision
        H = np.zeros((*theta.shape[:-1], self.dim, self.dim))
        H[..., : self.d, : self.d] = e[..., None, None] * self.prior_precision
        H[..., : self.d, self.d] = -e[..., None] * Pr
        H[..., self.d, : self.d] = -e[..., None] * Pr
        H[..., self.d, self.d] = e * (0.5 * np.sum(r * Pr, axis=-1) + self.rate)
        return H

    def _posterior(self, s: RegressionStats) -> NIGPosterior:
        m, P, a, b = self._post_nig(s)
        V = np.linalg.inv(P)
        return NIGPosterior(
            m,
            V,
            float(a),
            float(b),
            stats.multivariate_t(m, (b / a) * V, df=2.0 * a),
            stats.invgamma(a, scale=b),
        )

    def _pred_params(self, s: RegressionStats, x_new: np.ndarray) -> tuple[float, float, float]:
        m, P, a, b = self._post_nig(s)
        scale2 = (b / a) * (1.0 + x_new @ np.linalg.solve(P, x_new))
        return float(2.0 * a), float(x_new @ m), float(np.sqrt(scale2))

    def _predictive(self, s: RegressionStats, x_new: np.ndarray) -> Any:
        df, loc, scale = self._pred_params(s, x_new)
        return stats.t(df, loc, scale)

    def _log_predictive(self, s: RegressionStats, y_new: np.ndarray, x_new: np.ndarray):
        df, loc, scale = self._pred_params(s, x_new)
        return stats.t.logpdf(y_new, df, loc, scale)

    def _plugin(self, theta: np.ndarray, x_new: np.ndarray) -> tuple[float, float]:
        return float(theta[: self.d] @ x_new), float(np.exp(0.5 * theta[self.d]))

    def _sample(self, rng: np.random.Generator, n: int, theta_true: Any) -> tuple:
        t = np.asarray(theta_true, dtype=np.float64)
        if t.shape != (self.dim,):
            raise ValueError(
                f"theta_true must be (w, log σ²) of shape ({self.dim},); got {t.shape}"
            )
        X = rng.standard_normal((n, self.d))
        return X, X @ t[: self.d] + rng.normal(0.0, np.exp(0.5 * t[self.d]), size=n)
