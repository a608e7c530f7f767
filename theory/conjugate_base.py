"""The common interface of the conjugate models and their input validators.

The models are those of theory.conjugate and theory.conjugate_regression.

The models behind the SSLA / ASSLA checks of Rodemann et al., "Self-Supervised Laplace
Approximation for Bayesian Uncertainty Quantification", arXiv:2605.12208, §3–5. A model
implements vectorised private methods on sufficient statistics; :class:`ConjugateModel`
turns them into the public API (posterior, predictive, log-likelihood, observed Fisher
information, MLE, MAP, sampling).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from laplace_lab._checks import positive_int
from laplace_lab._random import as_generator

__all__ = ["ConjugateModel", "count_values", "data_vector", "log1pmx"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def data_vector(data: object, name: str = "data") -> np.ndarray:
    """Non-empty, finite, 1-D float64 observations."""
    y = np.asarray(data)
    if y.dtype == object or not (
        np.issubdtype(y.dtype, np.floating) or np.issubdtype(y.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real numeric array; got dtype {y.dtype}")
    y = y.astype(np.float64, copy=False)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    return y


def count_values(y: object, name: str) -> np.ndarray:
    """Finite, non-negative, integer-valued float64 array (any shape)."""
    c = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} must be finite counts")
    if np.any(c < 0):
        raise ValueError(f"{name} must be non-negative counts; got min {c.min():g}")
    if np.any(c != np.round(c)):
        raise ValueError(f"{name} must be integer counts; got a non-integer value")
    return c


def log1pmx(u: np.ndarray) -> np.ndarray:
    """log(1 + u) − u without cancellation for small |u| (series for |u| < 1e-2)."""
    u = np.asarray(u, dtype=np.float64)
    small = np.abs(u) < 1e-2
    # log1p(u) − u = −Σ_{k≥2} (−u)^k / k; 8 terms: < 1e-17 relative error for |u| < 1e-2.
    us = np.where(small, u, 0.0)
    series = sum(-((-us) ** k) / k for k in range(2, 10))
    big = np.where(small, 0.0, u)
    return np.where(small, series, np.log1p(big) - big)


class ConjugateModel(abc.ABC):
    """A conjugate model: likelihood, prior, Fisher information and the analytic predictive.

    Subclasses implement the private, vectorised methods on sufficient statistics; this
    class supplies the public API (``posterior``, ``predictive``, …).
    """

    #: dimension q of θ
    dim: int = 1
    #: observations are counts (pmf on ℕ) rather than reals
    discrete: bool = False
    #: log-likelihood and log-prior are quadratic in (θ, y): every Laplace variant is
    #: Gaussian in ŷ (normal–normal, known-noise Bayesian linear regression)
    gaussian_linear: bool = False
    #: the model has inputs x (regression)
    needs_x: bool = False
    #: the statistics type
    stats_type: type = tuple

    # ----------------------------------------------------------------- to implement
    @abc.abstractmethod
    def _stats(self, data: Any) -> Any: ...
    @abc.abstractmethod
    def _augment(self, s: Any, y_new: np.ndarray, x_new: np.ndarray | None) -> Any: ...
    @abc.abstractmethod
    def _loglik(self, theta: np.ndarray, s: Any) -> np.ndarray: ...
    @abc.abstractmethod
    def _loglik_change(self, theta1: np.ndarray, theta0: np.ndarray, s: Any) -> np.ndarray:
        """ℓ_D(θ₁) − ℓ_D(θ₀), computed without the O(n) cancellation of two ℓ's."""

    @abc.abstractmethod
    def _new_loglik(self, theta: np.ndarray, y_new: np.ndarray, x_new: Any) -> np.ndarray: ...
    @abc.abstractmethod
    def _fisher(self, theta: np.ndarray, s: Any) -> np.ndarray:
        """Observed information −∇²ℓ_D(θ), shape (..., q, q)."""

    @abc.abstractmethod
    def _mle(self, s: Any) -> np.ndarray: ...
    @abc.abstractmethod
    def _map(self, s: Any) -> np.ndarray: ...
    @abc.abstractmethod
    def _log_prior(self, theta: np.ndarray) -> np.ndarray: ...
    @abc.abstractmethod
    def _prior_neg_hessian(self, theta: np.ndarray) -> np.ndarray:
        """−∇² log π(θ), shape (..., q, q)."""

    @abc.abstractmethod
    def _log_predictive(self, s: Any, y_new: np.ndarray, x_new: Any) -> np.ndarray: ...
    @abc.abstractmethod
    def _posterior(self, s: Any) -> Any: ...
    @abc.abstractmethod
    def _predictive(self, s: Any, x_new: Any) -> Any: ...
    @abc.abstractmethod
    def _plugin(self, theta: np.ndarray, x_new: Any) -> tuple[float, float]:
        """(mean, standard deviation) of p(y | x_new, θ) for one θ of shape (q,)."""

    @abc.abstractmethod
    def _sample(self, rng: np.random.Generator, n: int, theta_true: Any) -> Any: ...

    def _check_x_new(self, x_new: object) -> Any:
        if x_new is not None:
            raise ValueError(f"x_new must be None for {type(self).__name__} (no inputs)")
        return None

    def _check_y_new(self, y_new: object) -> np.ndarray:
        y = np.asarray(y_new, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y_new must be finite")
        return count_values(y, "y_new") if self.discrete else y

    # ----------------------------------------------------------------- public API
    def sufficient_statistics(self, data: Any) -> Any:
        """The sufficient statistics of ``data`` (validated and returned if already statistics)."""
        if isinstance(data, self.stats_type):
            self._check_stats(data)
            return data
        return self._stats(data)

    def _check_stats(self, s: Any) -> None:
        """Statistics passed by the caller: finite, and n a positive integer (ValueError
        naming ``data``); models add their own constraints."""
        for name, value in zip(s._fields, s, strict=True):
            if not np.all(np.isfinite(np.asarray(value, dtype=np.float64))):
                raise ValueError(f"data: the sufficient statistic {name} must be finite")
        n = np.asarray(s.n, dtype=np.float64)
        if np.any(n < 1) or np.any(n != np.round(n)):
            raise ValueError(f"data: the sufficient statistic n must be an integer ≥ 1; got {s.n}")

    def _theta(self, theta: object) -> np.ndarray:
        t = np.asarray(theta, dtype=np.float64)
        if self.dim == 1 and (t.ndim == 0 or t.shape[-1] != 1):
            t = t[..., None]
        if t.shape[-1] != self.dim:
            raise ValueError(f"theta must have trailing length {self.dim}; got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ValueError("theta must be finite")
        return t

    def _out(self, value: np.ndarray) -> Any:
        value = np.asarray(value)
        return float(value) if value.ndim == 0 else value

    def posterior(self, data: Any) -> Any:
        """The analytic posterior p(θ | D) (a frozen scipy.stats distribution)."""
        return self._posterior(self.sufficient_statistics(data))

    def predictive(self, data: Any, x_new: Any = None) -> Any:
        """The analytic posterior predictive p(y_new | x_new, D), frozen scipy.stats."""
        return self._predictive(self.sufficient_statistics(data), self._check_x_new(x_new))

    def log_predictive(self, data: Any, y_new: Any, x_new: Any = None) -> Any:
        """log p(y_new | x_new, D), in a form that stays accurate at n = 10⁶."""
        s = self.sufficient_statistics(data)
        return self._out(
            self._log_predictive(s, self._check_y_new(y_new), self._check_x_new(x_new))
        )

    def log_likelihood(self, theta: Any, data: Any) -> Any:
        """ℓ_D(θ) = Σ_i log p(y_i | x_i, θ)."""
        return self._out(self._loglik(self._theta(theta), self.sufficient_statistics(data)))

    def fisher_information(self, theta: Any, data: Any) -> Any:
        """Observed Fisher information J(θ) = −∇²ℓ_D(θ) (scalar for q = 1, else q×q)."""
        J = self._fisher(self._theta(theta), self.sufficient_statistics(data))
        return self._out(J[..., 0, 0]) if self.dim == 1 else J

    def log_prior(self, theta: Any) -> Any:
        """log π(θ)."""
        return self._out(self._log_prior(self._theta(theta)))

    def mle(self, data: Any) -> Any:
        """θ̂ = argmax ℓ_D (eq. 14)."""
        t = self._mle(self.sufficient_statistics(data))
        return self._out(t[..., 0]) if self.dim == 1 else t

    def map(self, data: Any) -> Any:
        """argmax of the log-joint ℓ_D + log π (the posterior mode)."""
        t = self._map(self.sufficient_statistics(data))
        return self._out(t[..., 0]) if self.dim == 1 else t

    def sample_data(self, n: int, theta_true: Any, *, rng: np.random.Generator | int) -> Any:
        """n observations from the model at θ_true, drawn from ``rng`` (a generator or seed)."""
        return self._sample(as_generator(rng), positive_int(n, "n"), theta_true)
