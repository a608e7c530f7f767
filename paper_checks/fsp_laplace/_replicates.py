"""Replicated statistics of the FSP-Laplace claims and the decision on their intervals.

The qualitative claims of Cinquin et al. (arXiv:2407.13711, §4 and App. C.1) and the
out-of-distribution claim of App. C are decided on statistics measured once per independent
replicate — a fresh data set, prior fit and network initialisation, or a test fold — never on
one draw. A statistic is compared with its threshold through the Student-t interval of its
mean over the replicates:

- it **holds** when the whole interval lies on the claimed side of the threshold, **fails**
  when the whole interval lies on the other side, and is **inconclusive** otherwise;
- replicates are added one at a time while the interval still contains the threshold, from
  ``first`` up to ``cap`` (:func:`sequential`): a statistic far from its threshold costs
  ``first`` replicates, one near it at most ``cap``;
- each of the L = cap − first + 1 looks uses the level 1 − (1 − :data:`LEVEL`)/L
  (Bonferroni), so that looking after every replicate keeps the design's chance of a wrong
  decision at most 1 − :data:`LEVEL`.

A claim that needs several statistics (:func:`conjunction`) holds when each holds, fails when
one fails, and is otherwise inconclusive at the replicates drawn: NOT_REPRODUCIBLE_HERE, with
the interval that contains its threshold in the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LEVEL", "Check", "Estimate", "Result", "conjunction", "estimate", "sequential"]

#: Confidence level of a whole sequential design, fixed before measuring.
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """The mean of a statistic over replicates, its t interval and where the threshold lies.

    Parameters
    ----------
    values : tuple of float
        The statistic per replicate, in the order measured.
    threshold : float
        The value the claim compares the mean with.
    level : float
        Confidence level of this interval (one look of a sequential design).
    """

    values: tuple[float, ...]
    threshold: float
    level: float = LEVEL

    @property
    def n(self) -> int:
        """The number of replicates."""
        return len(self.values)

    @property
    def mean(self) -> float:
        """The mean over replicates."""
        return float(np.mean(self.values))

    @property
    def half_width(self) -> float:
        """t quantile × standard error of the mean (infinite for one replicate)."""
        if self.n < 2:
            return math.inf
        from scipy.stats import t

        se = float(np.std(self.values, ddof=1)) / math.sqrt(self.n)
        return float(t.ppf(0.5 + self.level / 2, self.n - 1)) * se

    @property
    def low(self) -> float:
        """Lower end of the interval."""
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        """Upper end of the interval."""
        return self.mean + self.half_width

    @property
    def side(self) -> int:
        """+1 if the whole interval lies above the threshold, −1 if below, 0 if it contains it."""
        if self.low > self.threshold:
            return 1
        if self.high < self.threshold:
            return -1
        return 0

    def text(self, fmt: str = ".3g") -> str:
        """ "mean [low, high] (n = N)"."""
        return f"{self.mean:{fmt}} [{self.low:{fmt}}, {self.high:{fmt}}] (n = {self.n})"


def estimate(values: Sequence[float], threshold: float, *, level: float = LEVEL) -> Estimate:
    """The :class:`Estimate` of ``values`` against ``threshold`` at ``level``."""
    values = tuple(float(v) for v in values)
    if not values:
        raise ValueError("estimate needs at least one value")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got level={level!r}")
    return Estimate(values, float(threshold), float(level))


def sequential(
    draw: Callable[[int], float],
    threshold: float,
    *,
    first: int,
    cap: int,
    level: float = LEVEL,
) -> Estimate:
    """Replicates 0, 1, … of ``draw`` until the interval excludes ``threshold``, or ``cap``.

    Parameters
    ----------
    draw : callable
        ``draw(i)`` is the statistic on replicate i (deterministic in i: replicate i is the
        same wherever it is drawn, so claims that share replicates share their fits).
    threshold : float
    first, cap : int
        Replicates drawn before the first look, and at most.
    level : float
        Confidence level of the whole design; each of the cap − first + 1 looks uses
        1 − (1 − level)/(cap − first + 1).

    Returns
    -------
    Estimate
        At the first n ≥ ``first`` whose interval excludes ``threshold``, else at ``cap``.
    """
    if not 2 <= first <= cap:
        raise ValueError(f"need 2 <= first <= cap; got first={first}, cap={cap}")
    look = 1.0 - (1.0 - level) / (cap - first + 1)
    values = [draw(i) for i in range(first)]
    while True:
        est = estimate(values, threshold, level=look)
        if est.side != 0 or est.n >= cap:
            return est
        values.append(draw(est.n))


@dataclass(frozen=True)
class Check:
    """One statistic a claim needs.

    Parameters
    ----------
    label : str
        What is measured, as the evidence names it.
    draw : callable
        ``draw(i)``: the statistic on replicate i.
    threshold : float
    side : {+1, −1}
        The claim needs the mean above (+1) or below (−1) the threshold.
    """

    label: str
    draw: Callable[[int], float]
    threshold: float
    side: int


@dataclass(frozen=True)
class Result:
    """A :class:`Check` and its :class:`Estimate`."""

    check: Check
    estimate: Estimate

    @property
    def outcome(self) -> str:
        """ "holds", "fails" or "inconclusive"."""
        side = self.estimate.side
        return "inconclusive" if side == 0 else ("holds" if side == self.check.side else "fails")

    def text(self, fmt: str = ".3g") -> str:
        """The check, its estimate and the outcome."""
        relation = ">" if self.check.side > 0 else "<"
        mark = {"holds": "", "fails": " ✗", "inconclusive": " (inconclusive)"}[self.outcome]
        return (
            f"{self.check.label} {self.estimate.text(fmt)}, needed "
            f"{relation} {self.check.threshold:{fmt}}{mark}"
        )


def conjunction(
    checks: Sequence[Check], *, first: int, cap: int, level: float = LEVEL
) -> tuple[str, tuple[Result, ...]]:
    """Run ``checks`` in order (each :func:`sequential`), stopping at the first that fails.

    Returns
    -------
    outcome : str
        "holds" (every check holds), "fails" (one fails) or "inconclusive".
    results : tuple of Result
        The checks run, in order.
    """
    results = []
    for check in checks:
        est = sequential(check.draw, check.threshold, first=first, cap=cap, level=level)
        results.append(Result(check, est))
        if results[-1].outcome == "fails":
            return "fails", tuple(results)
    held = all(r.outcome == "holds" for r in results)
    return ("holds" if held else "inconclusive"), tuple(results)
