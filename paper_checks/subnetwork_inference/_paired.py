"""Paired one-sided comparisons shared by the experiment claims of this package.

Two methods scored on the same units (test points, splits, trained networks) give per-unit
differences d = claimed better − claimed worse. :func:`paired_test` hands them to the decision
rules of :mod:`laplace_lab.paper_checks.verification.decisions` as one
:class:`~laplace_lab.paper_checks.verification.decisions.Test` of mean(d) > 0; a claim over
several comparisons decides them together by
:func:`~laplace_lab.paper_checks.verification.decisions.superiority` (every one significant
at α confirms, one reversed at α/m refutes, otherwise INCONCLUSIVE). A difference that is not
significant never decides.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.verification import decisions


def differences(better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """Per-unit differences, claimed better − claimed worse."""
    return np.ravel(np.asarray(better, dtype=np.float64) - np.asarray(worse, dtype=np.float64))


def paired_test(label: str, better: np.ndarray, worse: np.ndarray) -> decisions.Test:
    """The one-sided test of mean(better − worse) > 0 over paired units."""
    return decisions.test(label, differences(better, worse), threshold=0.0, side=+1)


def one_sided_p(t: decisions.Test) -> float:
    """The one-sided p-value of ``t``'s claimed direction (for the evidence only)."""
    from scipy import stats

    if t.se == 0.0:
        return 0.0 if t.effect > 0 else 1.0
    return float(stats.t.sf(t.effect / t.se, t.df))


def decision_summary(d: decisions.Decision) -> str:
    """A superiority decision in one line, naming the comparisons that decided it (the
    reversed ones when REFUTED, the undecided ones when INCONCLUSIVE)."""
    from laplace_lab.paper_checks.verification import Status

    m = len(d.tests)
    if d.status is Status.REFUTED:
        level = d.alpha / m if d.quantifier == "all" else d.alpha
        hit = [t for t in d.tests if t.significant(level, direction=-t.side)]
        return "the reverse ordering is significant: " + "; ".join(t.text(level) for t in hit)
    if d.status is Status.INCONCLUSIVE:
        open_ = [t for t in d.tests if not t.significant(d.alpha, direction=t.side)]
        return "not significant either way at this budget: " + "; ".join(
            t.text(d.alpha) for t in open_
        )
    return d.summary
