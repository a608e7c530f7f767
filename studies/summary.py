"""Summaries of stored replications: mean, standard error and 95% intervals per grid point.

Probabilities (0/1 metrics a study declares in ``Study.probabilities``) get Wilson score
intervals (``statsmodels.stats.proportion.proportion_confint(method="wilson")``), which stay
inside [0, 1] and keep their coverage near 0 and 1, where a normal interval collapses to a
point. Other metrics get mean ± z·s.e. :func:`fit_rates` fits how a mean decays along one
grid axis with :func:`laplace_lab.theory.rates.fit_rate` (log–log OLS, a confidence interval for
the slope).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.spec import Study
from laplace_lab.studies.store import Row
from laplace_lab.theory.rates import RateFit, fit_rate

__all__ = ["SummaryRow", "fit_rates", "summarise"]


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


def fit_rates(
    summary: Iterable[SummaryRow], metric: str, *, x: str, floor: float = 0.0
) -> dict[tuple[tuple[str, Any], ...], RateFit]:
    """The power law of the mean of ``metric`` along grid axis ``x``, per other setting.

    Grid points whose mean is ≤ ``floor`` (e.g. roundoff level) are left out; a setting
    keeps a fit only with ≥ 3 points left. Keys are the other parameters as sorted
    (name, value) pairs.
    """
    points: dict[tuple[tuple[str, Any], ...], list[tuple[float, float]]] = defaultdict(list)
    for s in summary:
        if s.metric == metric and s.mean > floor:
            key = tuple((k, v) for k, v in sorted(s.params.items()) if k != x)
            points[key].append((s.params[x], s.mean))
    out = {}
    for key, pts in sorted(points.items()):
        if len(pts) >= 3:
            xs, ys = zip(*sorted(pts), strict=True)
            out[key] = fit_rate(xs, ys)
    return out
