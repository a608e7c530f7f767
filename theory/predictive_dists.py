"""Normalised predictive distributions built from an unnormalised log-density.

SSLA (eq. 12) and ASSLA (eq. 17) of Rodemann et al., arXiv:2605.12208, give log p(ŷ | D)
only up to a constant in ŷ, so they must be normalised over ŷ before they are compared with
an analytic predictive. Two containers with scipy.stats-like methods:

- :class:`DiscretePredictive` — a pmf on {0, 1, 2, …}, normalised over 0..K where K is the
  first point at which a geometric bound on the remaining mass is < 1e-12 of the total;
- :class:`QuadraturePredictive` — a pdf on ℝ normalised by adaptive quadrature (QUADPACK
  on the two half-lines around the mode).

Gaussian-linear models give a log-density exactly quadratic in ŷ; for them ``theory.ssla``
returns a frozen ``scipy.stats.norm`` instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
from scipy import integrate, optimize
from scipy.special import logsumexp

__all__ = ["DiscretePredictive", "QuadraturePredictive"]

#: Truncate a pmf where the remaining mass is below this fraction of the total.
TAIL_MASS = 1e-12
_MAX_SUPPORT = 1 << 24


class _Moments:
    """std and the equal-tailed interval from ``var`` and ``ppf`` (as scipy.stats)."""

    def var(self) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def ppf(self, q: float) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def std(self) -> float:
        return float(np.sqrt(self.var()))

    def interval(self, confidence: float) -> tuple[float, float]:
        """Equal-tailed interval as in scipy.stats: (ppf((1−c)/2), ppf((1+c)/2))."""
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1); got {confidence}")
        a = (1.0 - confidence) / 2.0
        return float(self.ppf(a)), float(self.ppf(1.0 - a))


class DiscretePredictive(_Moments):
    """A pmf on the non-negative integers from a vectorised unnormalised log-pmf.

    Parameters
    ----------
    log_unnormalised : callable
        k ↦ log f(k) for an array of integers k ≥ 0 (vectorised).
    start : int
        A first guess of the truncation point K (doubled until the tail is < 1e-12).
    """

    def __init__(self, log_unnormalised: Callable[[np.ndarray], np.ndarray], *, start: int = 64):
        self._logf = log_unnormalised
        K = max(int(start), 8)
        while True:
            k = np.arange(K + 1, dtype=np.float64)
            lf = np.asarray(log_unnormalised(k), dtype=np.float64)
            if not np.all(np.isfinite(lf) | (lf == -np.inf)) or np.all(lf == -np.inf):
                raise ValueError("the unnormalised log-pmf is NaN, +inf or zero everywhere")
            logz = logsumexp(lf)
            step = lf[-1] - lf[-2]
            if step < 0.0:
                rho = np.exp(step)  # tail ≤ f(K)·ρ/(1 − ρ) when the ratios keep decreasing
                if lf[-1] + np.log(rho / (1.0 - rho)) - logz < np.log(TAIL_MASS):
                    break
            K *= 2
            if K > _MAX_SUPPORT:
                raise ValueError(f"the pmf has no tail below {TAIL_MASS} up to k = {_MAX_SUPPORT}")
        self.support_max = K
        self._logz = float(logz)
        self._lp = lf - logz
        self._p = np.exp(self._lp)
        self._cdf = np.minimum(np.cumsum(self._p), 1.0)

    def logpmf(self, k: object) -> np.ndarray:
        """log pmf (the stored function is used beyond K; the normaliser is the sum to K)."""
        k = np.asarray(k, dtype=np.float64)
        ok = (k >= 0) & (k == np.floor(k))
        safe = np.where(ok, k, 0.0)
        return np.where(ok, np.asarray(self._logf(safe), dtype=np.float64) - self._logz, -np.inf)

    def pmf(self, k: object) -> np.ndarray:
        return np.exp(self.logpmf(k))

    def cdf(self, k: object) -> np.ndarray:
        k = np.floor(np.asarray(k, dtype=np.float64))
        idx = np.clip(k, -1, self.support_max).astype(np.int64)
        return np.where(idx < 0, 0.0, self._cdf[np.maximum(idx, 0)])

    def ppf(self, q: object) -> np.ndarray:
        """Smallest k with cdf(k) ≥ q."""
        q = np.asarray(q, dtype=np.float64)
        return np.searchsorted(self._cdf, q - 1e-15, side="left").astype(np.float64)

    def mean(self) -> float:
        k = np.arange(self.support_max + 1)
        return float(np.sum(k * self._p))

    def var(self) -> float:
        k = np.arange(self.support_max + 1)
        return float(np.sum((k - self.mean()) ** 2 * self._p))


class QuadraturePredictive(_Moments):
    """A pdf on ℝ from a vectorised unnormalised log-density, normalised by quadrature.

    Parameters
    ----------
    log_unnormalised : callable
        y ↦ log f(y) (vectorised over arrays).
    loc, scale : float
        Where the mass is (a guess of the mode and the spread); the mode is refined by a
        bounded scalar minimisation on [loc − 20·scale, loc + 20·scale].
    """

    def __init__(
        self, log_unnormalised: Callable[[np.ndarray], np.ndarray], *, loc: float, scale: float
    ):
        self._logf = log_unnormalised
        if not (np.isfinite(loc) and np.isfinite(scale) and scale > 0):
            raise ValueError(f"loc and scale must be finite with scale > 0; got {loc}, {scale}")
        res = optimize.minimize_scalar(
            lambda y: -float(log_unnormalised(np.asarray(y))),
            bounds=(loc - 20 * scale, loc + 20 * scale),
            method="bounded",
            options={"xatol": 1e-10 * scale},
        )
        self.mode = float(res.x)
        self.scale = float(scale)
        self._c = float(log_unnormalised(np.asarray(self.mode)))
        z = self._integrate(lambda y: np.exp(self._logf(np.asarray(y)) - self._c))
        self._logz = self._c + float(np.log(z))

    def _integrate(self, g: Callable, lo: float = -np.inf, hi: float = np.inf) -> float:
        """∫ g over [lo, hi], split at the mode ± 10 scale (QUADPACK qagi/qags)."""
        cuts = [self.mode - 10 * self.scale, self.mode, self.mode + 10 * self.scale]
        edges = [lo] + [c for c in cuts if lo < c < hi] + [hi]
        total = 0.0
        for a, b in itertools.pairwise(edges):
            val, _ = integrate.quad(g, a, b, epsabs=0.0, epsrel=1e-12, limit=200)
            total += val
        return total

    def logpdf(self, y: object) -> np.ndarray:
        return (
            np.asarray(self._logf(np.asarray(y, dtype=np.float64)), dtype=np.float64) - self._logz
        )

    def pdf(self, y: object) -> np.ndarray:
        return np.exp(self.logpdf(y))

    def _cdf1(self, y: float) -> float:
        if y <= self.mode:
            return self._integrate(lambda t: float(self.pdf(t)), hi=y)
        return 1.0 - self._integrate(lambda t: float(self.pdf(t)), lo=y)

    def cdf(self, y: object) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        return np.vectorize(self._cdf1, otypes=[np.float64])(y)

    def ppf(self, q: float) -> float:
        if not 0.0 < q < 1.0:
            raise ValueError(f"q must be in (0, 1); got {q}")
        lo, hi = self.mode - self.scale, self.mode + self.scale
        while self._cdf1(lo) > q:
            lo -= 2 * (hi - lo)
        while self._cdf1(hi) < q:
            hi += 2 * (hi - lo)
        return float(optimize.brentq(lambda y: self._cdf1(y) - q, lo, hi, xtol=1e-12 * self.scale))

    def mean(self) -> float:
        return self.mode + self._integrate(lambda t: (t - self.mode) * float(self.pdf(t)))

    def var(self) -> float:
        m = self.mean()
        return self._integrate(lambda t: (t - m) ** 2 * float(self.pdf(t)))
