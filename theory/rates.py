"""Convergence rates: OLS of log-error on log-n with confidence intervals (statsmodels).

Rates are estimated, not assumed: the slope of log-error on log-n is fitted by OLS
(statsmodels) and reported with its confidence interval. An error e(n) ≈ C·n^a gives
log e = log C + a log n; the fitted slope estimates the exponent a.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["RateFit", "fit_rate"]


class RateFit(NamedTuple):
    """Fitted exponent a of e(n) ≈ C·n^a with its confidence interval."""

    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    r_squared: float
    n_points: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the confidence interval of the slope."""
        return self.ci_low <= value <= self.ci_high


def fit_rate(n: object, error: object, *, level: float = 0.95) -> RateFit:
    """OLS fit of log(error) on log(n) (statsmodels), with a ``level`` CI on the slope.

    Parameters
    ----------
    n : array of positive sample sizes (at least 3 distinct)
    error : array of positive, finite errors, same length
    level : float in (0, 1)

    Raises
    ------
    ValueError
        Non-positive or non-finite entries, mismatched lengths, fewer than 3 points.
    """
    from statsmodels.regression.linear_model import OLS  # not statsmodels.api: 0.5 s less
    from statsmodels.tools.tools import add_constant

    n_ = np.asarray(n, dtype=np.float64)
    e = np.asarray(error, dtype=np.float64)
    if n_.ndim != 1 or e.shape != n_.shape:
        raise ValueError(f"n and error must be 1-D of equal length; got {n_.shape}, {e.shape}")
    if n_.size < 3 or np.unique(n_).size < 3:
        raise ValueError(f"n needs at least 3 distinct values to fit a rate; got {n_.size}")
    if not np.all(np.isfinite(n_)) or np.any(n_ <= 0):
        raise ValueError("n must be positive and finite")
    if not np.all(np.isfinite(e)) or np.any(e <= 0):
        raise ValueError(f"error must be positive and finite; got {e.tolist()}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got level={level}")
    res = OLS(np.log(e), add_constant(np.log(n_))).fit()
    lo, hi = res.conf_int(alpha=1.0 - level)[1]
    # a constant error is fitted exactly (slope 0): R² = 1, not statsmodels' 0/0
    r2 = 1.0 if float(res.centered_tss) == 0.0 else float(res.rsquared)
    return RateFit(
        float(res.params[1]),
        float(lo),
        float(hi),
        float(res.params[0]),
        r2,
        int(n_.size),
    )
