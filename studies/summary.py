"""Summaries of stored replications: mean, standard error and 95% intervals per grid point.

Probabilities (0/1 metrics a study declares in ``Study.probabilities``) get Wilson score
intervals (``statsmodels.stats.proportion.proportion_confint(method="wilson")``), which stay
inside [0, 1] and keep their coverage near 0 and 1, where a normal interval collapses to a
point. Other metrics get mean ± z·s.e. Rates are fitted by :func:`fit_power_law`
(log–log OLS with a confidence interval for the exponent).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import statsmodels.api as sm
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from studies.seeding import params_key
from studies.spec import Study
from studies.store import Row

__all__ = ["PowerLaw", "SummaryRow", "fit_power_law", "summarise"]


@dataclass(frozen=True)
class SummaryRow:
    """One metric at one grid point, over its replications."""

    params: dict[str, Any]
    metric: str
    n: int
    mean: float
    se: float
    low: float
    high: float
    interval: str  # "wilson" or "normal"


def _order(params: dict[str, Any]) -> tuple:
    """Sort grid points numerically where values are numbers (1000 after 200)."""
    return tuple(
        (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))
        for _, v in sorted(params.items())
    )


def summarise(study: Study, rows: Iterable[Row], *, confidence: float = 0.95) -> list[SummaryRow]:
    """Mean, s.e. and a ``confidence`` interval of every metric at every stored grid point.

    Rows are grouped by grid point (sorted by value) and metric (sorted by name).
    A probability metric must be 0 or 1 in every replication (ValueError otherwise).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got confidence={confidence}")
    groups: dict[str, tuple[dict[str, Any], dict[str, list[float]]]] = {}
    for row in rows:
        key = params_key(row.params)
        if key not in groups:
            groups[key] = (row.params, defaultdict(list))
        for name, value in row.metrics.items():
            groups[key][1][name].append(value)
    z = float(norm.ppf(0.5 + confidence / 2))
    out = []
    for params, metrics in sorted(groups.values(), key=lambda g: _order(g[0])):
        for name in sorted(metrics):
            x = np.asarray(metrics[name], dtype=np.float64)
            n = x.size
            mean = float(x.mean())
            se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
            if name in study.probabilities:
                if not np.all((x == 0.0) | (x == 1.0)):
                    raise ValueError(
                        f"metric {name!r} of {study.name!r} is declared a probability but "
                        f"takes values other than 0 and 1 at {params}"
                    )
                low, high = proportion_confint(
                    int(x.sum()), n, alpha=1 - confidence, method="wilson"
                )
                out.append(
                    SummaryRow(params, name, n, mean, se, float(low), float(high), "wilson")
                )
            else:
                half = z * se if n > 1 else math.nan
                low, high = mean - half, mean + half
                out.append(SummaryRow(params, name, n, mean, se, low, high, "normal"))
    return out


@dataclass(frozen=True)
class PowerLaw:
    """y ≈ C · Π_j x_j^{β_j}, fitted by OLS of log y on the log x_j.

    ``exponents[name] = (β, low, high)`` with a t-interval at the fit's confidence level.
    """

    exponents: dict[str, tuple[float, float, float]]
    log_constant: float
    n_points: int

    def __getitem__(self, name: str) -> tuple[float, float, float]:
        return self.exponents[name]


def fit_power_law(
    y: Sequence[float], x: Mapping[str, Sequence[float]], *, confidence: float = 0.95
) -> PowerLaw:
    """Fit log y = log C + Σ_j β_j log x_j by OLS (statsmodels), with t-intervals for β_j.

    Parameters
    ----------
    y : sequence of positive floats
        E.g. the mean error at each grid point.
    x : mapping of name to sequence of positive floats
        The regressors, e.g. ``{"N": Ns}`` or ``{"N": Ns, "k": ks}``; each as long as y.
    confidence : float
        Level of the intervals.
    """
    ya = np.asarray(y, dtype=np.float64)
    if ya.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {ya.shape}")
    if not x:
        raise ValueError("x must name at least one regressor")
    cols = []
    for name, values in x.items():
        xa = np.asarray(values, dtype=np.float64)
        if xa.shape != ya.shape:
            raise ValueError(f"x[{name!r}] must have the shape of y {ya.shape}; got {xa.shape}")
        if not (np.all(xa > 0) and np.all(np.isfinite(xa))):
            raise ValueError(f"x[{name!r}] must be positive and finite for a log-log fit")
        cols.append(np.log(xa))
    if not (np.all(ya > 0) and np.all(np.isfinite(ya))):
        raise ValueError("y must be positive and finite for a log-log fit")
    if ya.size < len(cols) + 2:
        raise ValueError(
            f"a fit of {len(cols)} exponents needs at least {len(cols) + 2} points; got {ya.size}"
        )
    design = np.column_stack([np.ones_like(ya), *cols])
    fit = sm.OLS(np.log(ya), design).fit()
    ci = fit.conf_int(alpha=1 - confidence)
    exponents = {
        name: (float(fit.params[j]), float(ci[j][0]), float(ci[j][1]))
        for j, name in enumerate(x, start=1)
    }
    return PowerLaw(exponents, float(fit.params[0]), int(ya.size))
