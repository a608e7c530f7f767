"""Paired one-sided comparisons shared by the experiment claims of this package.

Two methods scored on the same test points give per-point differences d = better − worse.
A one-sided paired t-test at ``level`` settles the stated order ("stated"), the reverse
order ("reversed"), or neither ("unclear"); several comparisons of one claim share a
family-wise level by Bonferroni (the caller divides). A claim is REFUTED where any stated
order is significantly reversed, CONFIRMED where all are significant, and
NOT_REPRODUCIBLE_HERE (inconclusive) otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from laplace_lab.paper_checks.verification import Status

ALPHA = 0.05


def paired(better: np.ndarray, worse: np.ndarray, level: float) -> tuple[str, float, float]:
    """('stated' | 'reversed' | 'unclear', mean difference, one-sided p of the stated order)."""
    d = np.asarray(better, dtype=np.float64) - np.asarray(worse, dtype=np.float64)
    if not np.any(d):
        return "unclear", 0.0, 1.0
    t = stats.ttest_1samp(d, 0.0)
    half = float(t.pvalue) / 2
    p_stated = half if t.statistic > 0 else 1 - half
    p_reverse = half if t.statistic < 0 else 1 - half
    state = "stated" if p_stated < level else "reversed" if p_reverse < level else "unclear"
    return state, float(d.mean()), float(p_stated)


def status_of(states: set[str]) -> Status:
    """The verdict of a claim whose comparisons ended in ``states``."""
    if "reversed" in states:
        return Status.REFUTED
    return Status.CONFIRMED if states == {"stated"} else Status.NOT_REPRODUCIBLE_HERE
