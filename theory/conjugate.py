"""Conjugate models with analytic posterior predictives: the ground truth for SSLA / ASSLA.

The conjugate checks of J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised
Laplace Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5
and App. B.1 (eqs. 30–35); the closed forms are collected in docs/mathematics.md, "Analytic
predictives" and "Closed forms".

Every model works on **sufficient statistics**, so the paper's n = 10⁶ costs one pass over
the data and adding the self-predicted point ŷ is an O(1) update of the statistics
(vectorised over a whole grid of ŷ). Public methods accept either raw data or the
statistics returned by :meth:`ConjugateModel.sufficient_statistics`.

Parameters θ are arrays with a trailing axis of length ``dim`` internally; the public
methods of the scalar models take and return plain floats.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy import stats
from scipy.special import gammaln, xlogy

from laplace_lab._checks import positive_float, real_number
from laplace_lab.theory.conjugate_base import (
    ConjugateModel,
    count_values,
    data_vector,
    log1pmx,
)

__all__ = ["ConjugateModel", "NormalNormal", "NormalStats", "PoissonGamma", "PoissonStats"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def _mat(x: np.ndarray) -> np.ndarray:
    """A (...,) array as (..., 1, 1)."""
    return np.asarray(x, dtype=np.float64)[..., None, None]


class NormalStats(NamedTuple):
    """n, the mean x̄ and M2 = Σ(x_i − x̄)² (computed centred, so exact to roundoff)."""

    n: Any
    mean: Any
    m2: Any


class NormalNormal(ConjugateModel):
    """x_i ~ N(μ, σ²) with σ² known, μ ~ N(μ0, τ0²) (App. B.1.1 of [1]_, eqs. 30–33).

    Parameters
    ----------
    prior_mean, prior_var : float
        μ0 and τ0² > 0.
    noise_var : float
        The known observation variance σ² > 0.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, App. B.1.1, eqs.
       (30)–(33).
    """

    gaussian_linear = True
    stats_type = NormalStats

    def __init__(self, prior_mean: float, prior_var: float, noise_var: float) -> None:
        self.prior_mean = real_number(prior_mean, "prior_mean")
        self.prior_var = positive_float(prior_var, "prior_var")
        self.noise_var = positive_float(noise_var, "noise_var")

    def __repr__(self) -> str:
        return f"NormalNormal({self.prior_mean}, {self.prior_var}, {self.noise_var})"

    def _check_stats(self, s: NormalStats) -> None:
        super()._check_stats(s)
        if np.any(np.asarray(s.m2) < 0):
            raise ValueError(f"data: the sufficient statistic m2 must be ≥ 0; got {s.m2}")

    def _stats(self, data: Any) -> NormalStats:
        x = data_vector(data)
        mean = float(np.mean(x))
        return NormalStats(float(x.size), mean, float(np.sum((x - mean) ** 2)))

    def _augment(self, s: NormalStats, y_new: np.ndarray, x_new: None) -> NormalStats:
        d = y_new - s.mean
        n1 = s.n + 1.0
        return NormalStats(n1 + 0.0 * d, s.mean + d / n1, s.m2 + s.n * d * d / n1)

    def _loglik(self, theta: np.ndarray, s: NormalStats) -> np.ndarray:
        t = theta[..., 0]
        return -0.5 * s.n * (_LOG_2PI + np.log(self.noise_var)) - (
            s.m2 + s.n * (s.mean - t) ** 2
        ) / (2.0 * self.noise_var)

    def _loglik_change(self, theta1: np.ndarray, theta0: np.ndarray, s: NormalStats):
        d1, d0 = theta1[..., 0] - s.mean, theta0[..., 0] - s.mean
        return -s.n * (d1 - d0) * (d1 + d0) / (2.0 * self.noise_var)

    def _new_loglik(self, theta: np.ndarray, y_new: np.ndarray, x_new: None) -> np.ndarray:
        r = y_new - theta[..., 0]
        return -0.5 * (_LOG_2PI + np.log(self.noise_var)) - r * r / (2.0 * self.noise_var)

    def _fisher(self, theta: np.ndarray, s: NormalStats) -> np.ndarray:
        """eq. (33): J(μ) = n / σ²."""
        return _mat(
            np.broadcast_to(
                s.n / self.noise_var, np.broadcast_shapes(np.shape(s.n), theta.shape[:-1])
            )
        )

    def _mle(self, s: NormalStats) -> np.ndarray:
        return np.asarray(s.mean, dtype=np.float64)[..., None]

    def _post(self, s: NormalStats) -> tuple[Any, Any]:
        """(μ_n, σ_n²) of eq. (31)."""
        var = 1.0 / (s.n / self.noise_var + 1.0 / self.prior_var)
        mean = var * (self.prior_mean / self.prior_var + s.n * s.mean / self.noise_var)
        return mean, var

    def _map(self, s: NormalStats) -> np.ndarray:
        return np.asarray(self._post(s)[0], dtype=np.float64)[..., None]

    def _log_prior(self, theta: np.ndarray) -> np.ndarray:
        r = theta[..., 0] - self.prior_mean
        return -0.5 * (_LOG_2PI + np.log(self.prior_var)) - r * r / (2.0 * self.prior_var)

    def _prior_neg_hessian(self, theta: np.ndarray) -> np.ndarray:
        return _mat(np.full(theta.shape[:-1], 1.0 / self.prior_var))

    def _posterior(self, s: NormalStats) -> Any:
        mean, var = self._post(s)
        return stats.norm(mean, np.sqrt(var))

    def _predictive(self, s: NormalStats, x_new: None) -> Any:
        """eq. (30): N(μ_n, σ_n² + σ²)."""
        mean, var = self._post(s)
        return stats.norm(mean, np.sqrt(var + self.noise_var))

    def _log_predictive(self, s: NormalStats, y_new: np.ndarray, x_new: None) -> np.ndarray:
        mean, var = self._post(s)
        v = var + self.noise_var
        return -0.5 * (_LOG_2PI + np.log(v)) - (y_new - mean) ** 2 / (2.0 * v)

    def _plugin(self, theta: np.ndarray, x_new: None) -> tuple[float, float]:
        return float(theta[0]), float(np.sqrt(self.noise_var))

    def _sample(self, rng: np.random.Generator, n: int, theta_true: Any) -> np.ndarray:
        mu = real_number(theta_true, "theta_true")
        return rng.normal(mu, np.sqrt(self.noise_var), size=n)


class PoissonStats(NamedTuple):
    """n, the total count S = Σ x_i and Σ log x_i!."""

    n: Any
    total: Any
    log_fact: Any


class PoissonGamma(ConjugateModel):
    """x_i ~ Poi(λ), λ ~ Gamma(shape α, rate β) (App. B.1.2 of [1]_, eqs. 34–35).

    Parameters
    ----------
    shape, rate : float
        α > 0 and β > 0 of the Gamma prior.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, App. B.1.2, eqs.
       (34)–(35).
    """

    discrete = True
    stats_type = PoissonStats

    def __init__(self, shape: float, rate: float) -> None:
        self.shape = positive_float(shape, "shape")
        self.rate = positive_float(rate, "rate")

    def __repr__(self) -> str:
        return f"PoissonGamma({self.shape}, {self.rate})"

    def _theta(self, theta: object) -> np.ndarray:
        t = super()._theta(theta)
        if np.any(t <= 0):
            raise ValueError("theta must be positive: λ is a Poisson rate")
        return t

    def _check_stats(self, s: PoissonStats) -> None:
        super()._check_stats(s)
        total = np.asarray(s.total, dtype=np.float64)
        if np.any(total < 0) or np.any(total != np.round(total)):
            raise ValueError(
                f"data: the sufficient statistic total must be an integer ≥ 0; got {s.total}"
            )

    def _stats(self, data: Any) -> PoissonStats:
        x = count_values(data_vector(data), "data")
        return PoissonStats(float(x.size), float(np.sum(x)), float(np.sum(gammaln(x + 1.0))))

    def _augment(self, s: PoissonStats, y_new: np.ndarray, x_new: None) -> PoissonStats:
        return PoissonStats(
            s.n + 1.0 + 0.0 * y_new, s.total + y_new, s.log_fact + gammaln(y_new + 1)
        )

    def _positive_total(self, s: PoissonStats) -> None:
        if np.any(np.asarray(s.total) <= 0):
            raise ValueError(
                "data: all counts are zero, so the MLE λ̂ = 0 and log J(λ̂) = log(Σx/λ̂²) "
                "(eq. 35) is undefined"
            )

    def _loglik(self, theta: np.ndarray, s: PoissonStats) -> np.ndarray:
        """eq. (34): ℓ(λ) = Σx log λ − nλ − Σ log x!."""
        lam = theta[..., 0]
        return s.total * np.log(lam) - s.n * lam - s.log_fact

    def _loglik_change(self, theta1: np.ndarray, theta0: np.ndarray, s: PoissonStats):
        lam1, lam0 = theta1[..., 0], theta0[..., 0]
        u = (lam1 - lam0) / lam0
        return s.total * log1pmx(u) + u * (s.total - s.n * lam0)

    def _new_loglik(self, theta: np.ndarray, y_new: np.ndarray, x_new: None) -> np.ndarray:
        lam = theta[..., 0]
        return y_new * np.log(lam) - lam - gammaln(y_new + 1.0)

    def _fisher(self, theta: np.ndarray, s: PoissonStats) -> np.ndarray:
        """eq. (35): J(λ) = Σx / λ²."""
        return _mat(s.total / theta[..., 0] ** 2)

    def _mle(self, s: PoissonStats) -> np.ndarray:
        self._positive_total(s)
        return np.asarray(s.total / s.n, dtype=np.float64)[..., None]

    def _map(self, s: PoissonStats) -> np.ndarray:
        a = self.shape + s.total - 1.0
        if np.any(np.asarray(a) <= 0):
            raise ValueError(
                "data: the posterior mode (α + Σx − 1)/(β + n) is not positive "
                f"(α = {self.shape}, Σx = 0); the log-joint has no interior maximum"
            )
        return np.asarray(a / (self.rate + s.n), dtype=np.float64)[..., None]

    def _log_prior(self, theta: np.ndarray) -> np.ndarray:
        """log Gamma(λ; α, β): scipy.stats.gamma.logpdf's arithmetic, step for step.

        (α − 1) log x − x − log Γ(α) − log s with x = λ/s, s = 1/β; −∞ for λ < 0 and NaN
        for NaN λ, as scipy gives them, without the cost of its argument handling.
        """
        scale = 1.0 / self.rate
        x = np.asarray(theta[..., 0], dtype=np.float64) / scale
        out = np.full(x.shape, -np.inf)
        out[np.isnan(x)] = np.nan
        ok = x >= 0.0
        # scipy keeps its scalar parameters as 1-element arrays (argsreduce)
        a, s = np.atleast_1d(self.shape), np.atleast_1d(scale)
        out[ok] = xlogy(a - 1.0, x[ok]) - x[ok] - gammaln(a) - np.log(s)
        return out[()] if out.ndim == 0 else out

    def _prior_neg_hessian(self, theta: np.ndarray) -> np.ndarray:
        return _mat((self.shape - 1.0) / theta[..., 0] ** 2)

    def _posterior(self, s: PoissonStats) -> Any:
        return stats.gamma(self.shape + s.total, scale=1.0 / (self.rate + s.n))

    def _nb(self, s: PoissonStats) -> tuple[Any, Any]:
        return self.shape + s.total, (self.rate + s.n) / (self.rate + s.n + 1.0)

    def _predictive(self, s: PoissonStats, x_new: None) -> Any:
        """NegBin(r = α + Σx, p = (β + n)/(β + n + 1)) = scipy ``nbinom(r, p)``.

        The frozen object's ``logpmf``/``pmf`` are replaced by the stable closed form of
        :meth:`_log_predictive`: scipy's loses ~1e-8 in log-pmf at r ≈ 3·10⁶ (n = 10⁶),
        which would swamp divergences of order 1e-20.
        """
        frozen = stats.nbinom(*self._nb(s))

        def logpmf(k: Any) -> Any:
            return self._out(self._log_predictive(s, self._check_y_new(k), None))

        frozen.logpmf = logpmf
        frozen.pmf = lambda k: np.exp(logpmf(k))
        return frozen

    def _log_predictive(self, s: PoissonStats, y_new: np.ndarray, x_new: None) -> np.ndarray:
        """Stable NegBin log-pmf.

        log p(k) = Σ_{j<k} log1p(j/r) + k log(r/(β+n+1)) − log k! − r log1p(1/(β+n)).

        scipy's ``nbinom.logpmf`` loses ~1e-8 absolute at r = 3·10⁶ (lgamma differences);
        this form is accurate to roundoff for the small k that carry the mass.
        """
        if np.ndim(s.total) or np.ndim(s.n):
            raise ValueError(
                "s must hold the statistics of one data set (scalar total and n) for the "
                "predictive; evaluate array-valued statistics one at a time"
            )
        r = self.shape + s.total
        b = self.rate + s.n
        k = np.asarray(y_new, dtype=np.float64)
        kmax = int(np.max(k)) if k.size else 0
        j = np.arange(max(kmax, 1), dtype=np.float64)
        cum = np.concatenate([[0.0], np.cumsum(np.log1p(j / r))])
        head = cum[k.astype(np.int64)]
        return head + k * np.log(r / (b + 1.0)) - gammaln(k + 1.0) - r * np.log1p(1.0 / b)

    def _plugin(self, theta: np.ndarray, x_new: None) -> tuple[float, float]:
        return float(theta[0]), float(np.sqrt(theta[0]))

    def _sample(self, rng: np.random.Generator, n: int, theta_true: Any) -> np.ndarray:
        lam = positive_float(theta_true, "theta_true")
        return rng.poisson(lam, size=n).astype(np.float64)
