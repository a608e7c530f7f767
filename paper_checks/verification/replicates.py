"""Replicated statistics against thresholds: Student-t intervals looked at sequentially.

A claim decided on a statistic measured once per independent replicate — a fresh data set,
prior fit and network initialisation, or a test fold — never on one draw, compares the
statistic with its threshold through the Student-t interval of its mean over the replicates:

- it **holds** when the whole interval lies on the claimed side of the threshold, **fails**
  when the whole interval lies on the other side, and is **inconclusive** otherwise;
- replicates are added while the interval still contains the threshold, up to the next of
  the design's looks n_1 < n_2 < … < n_L (:func:`sequential`): a statistic far from its
  threshold costs n_1 replicates, one near it at most n_L. A doubling schedule such as
  5, 10, 20, 40, 80 decides a statistic 0.35 standard deviations from its threshold with
  probability about 0.7, one 0.5 sd away with about 0.97;
- on a Dask cluster (``check --scheduler``) the replicates of a look run as tasks of their
  own, each stored as it finishes (:mod:`.fanout`);
- each of the L looks uses the level 1 − (1 − :data:`LEVEL`)/L
  (:class:`~laplace_lab.paper_checks.verification.sequential.Looks`: Bonferroni), so that
  looking repeatedly keeps the design's chance of a wrong decision at most 1 − :data:`LEVEL`.

A claim that needs several statistics (:func:`conjunction`) holds when each holds, fails when
one fails, and is otherwise inconclusive at the replicates drawn. :func:`decide` runs the same
design and hands the replicates to the superiority rule of
:mod:`~laplace_lab.paper_checks.verification.decisions`: an undecided claim is INCONCLUSIVE
(it ran here; its data cannot decide at this budget), with its interval, the smallest effect
it could have detected and the replicates that would decide — never NOT_REPRODUCIBLE_HERE,
which is kept for checks that cannot run here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from laplace_lab.paper_checks.verification import decisions
from laplace_lab.paper_checks.verification.fanout import Design
from laplace_lab.paper_checks.verification.progress import step
from laplace_lab.paper_checks.verification.sequential import Looks

__all__ = [
    "LEVEL",
    "Check",
    "Estimate",
    "Result",
    "conjunction",
    "decide",
    "design_text",
    "estimate",
    "look_level",
    "sequential",
]

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


def _looks(looks: Sequence[int], level: float) -> Looks:
    looks = tuple(int(n) for n in looks)
    if not looks or looks[0] < 2:
        raise ValueError(f"looks must be increasing replicate counts >= 2; got {looks}")
    try:
        return Looks(looks, 1.0 - level)
    except ValueError:
        raise ValueError(f"looks must be increasing replicate counts >= 2; got {looks}") from None


def look_level(looks: Sequence[int], level: float = LEVEL) -> float:
    """The confidence level of each look: 1 − (1 − ``level``)/L (Bonferroni over L looks)."""
    return 1.0 - _looks(looks, level).per_look


def design_text(looks: Sequence[int], what: str = "replicates", level: float = LEVEL) -> str:
    """The design in words, for a claim's evidence."""
    looks = _looks(looks, level).counts
    return (
        f"{what.capitalize()}: {looks[0]} before the first look, more while the "
        f"{100 * level:g}% t interval of the mean contains the threshold, looking at "
        f"n = {', '.join(map(str, looks))} (each of the {len(looks)} looks at the Bonferroni "
        f"level {100 * look_level(looks, level):.3g}%)."
    )


def sequential(
    draw: Callable[[int], float],
    threshold: float,
    *,
    looks: Sequence[int],
    level: float = LEVEL,
) -> Estimate:
    """Replicates 0, 1, … of ``draw`` until the interval at a look excludes ``threshold``.

    Parameters
    ----------
    draw : callable
        ``draw(i)`` is the statistic on replicate i (deterministic in i: replicate i is the
        same wherever it is drawn, so claims that share replicates share their fits).
    threshold : float
    looks : sequence of int
        The increasing numbers of replicates at which the interval is looked at (≥ 2).
    level : float
        Confidence level of the whole design; each of the L looks uses
        :func:`look_level`.

    Returns
    -------
    Estimate
        At the first look whose interval excludes ``threshold``, else at the last look.
    """
    values: list[float] = []
    design = Design()

    def look(n: int, alpha: float) -> Estimate:
        values.extend(design.values(draw, range(len(values), n), n))
        step(n, n, "replicates")
        return estimate(values, threshold, level=1.0 - alpha)

    return _looks(looks, level).run(look, lambda est: est.side != 0)[1]


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
    checks: Sequence[Check], *, looks: Sequence[int], level: float = LEVEL
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
        est = sequential(check.draw, check.threshold, looks=looks, level=level)
        results.append(Result(check, est))
        if results[-1].outcome == "fails":
            return "fails", tuple(results)
    held = all(r.outcome == "holds" for r in results)
    return ("holds" if held else "inconclusive"), tuple(results)


def decide(
    checks: Sequence[Check],
    *,
    looks: Sequence[int],
    level: float = LEVEL,
    command: str = "",
) -> tuple[decisions.Decision, tuple[Result, ...]]:
    """:func:`conjunction`'s sequential design, decided by the superiority rule.

    Each check draws replicates up to the look that decides it; the replicates of every check
    run are then handed to :func:`~laplace_lab.paper_checks.verification.decisions.superiority`
    ("every check", intersection–union) at the one-sided level of one look,
    (1 − :func:`look_level`)/2, so that the design's chance of a wrong decision stays at most
    1 − ``level``.

    Returns
    -------
    decision : Decision
        CONFIRMED, REFUTED or INCONCLUSIVE, with the intervals (and, inconclusive, the
        replicates that would decide; ``command`` runs them).
    results : tuple of Result
        The checks run, in order.
    """
    _, results = conjunction(checks, looks=looks, level=level)
    alpha = (1.0 - look_level(looks, level)) / 2.0
    tests = [
        decisions.test(
            r.check.label,
            r.estimate.values,
            threshold=r.check.threshold,
            side=r.check.side,
        )
        for r in results
    ]
    decision = decisions.superiority(tests, alpha=alpha, command=command, of=len(checks))
    return decision, results
