"""The decision rules that turn measurements into CONFIRMED, REFUTED or INCONCLUSIVE.

They are one module, for every kind of claim (:class:`~.kinds.Kind`).

- :func:`exact` — an identity or a stated value: CONFIRMED when the error is within the
  tolerance (rounding and conditioning), REFUTED otherwise.
- :func:`superiority` — "better", "lower", "beats": a one-sided Student-t test of the mean of a
  per-replicate statistic (a paired difference, say) against a threshold, at level α. A sentence
  that quantifies over tasks or grid points ("on every data set") is a conjunction: CONFIRMED
  when every test is significant in the claimed direction at α (an intersection–union test needs
  no correction), REFUTED when one test is significant in the reverse direction at α/m
  (Bonferroni over the m tests), INCONCLUSIVE otherwise. "On some task" is the dual.
- :func:`equivalence` — "comparable", "matches", "almost as", "near": two one-sided tests
  (TOST; Schuirmann 1987) against a margin fixed before measuring and taken from the paper's own
  numbers. CONFIRMED when the (1 − 2α) interval lies inside (−δ, δ); REFUTED when it lies wholly
  beyond one end of the margin; INCONCLUSIVE otherwise. A non-significant difference never
  confirms. With ``side`` it is a non-inferiority test (one bound only).
- :func:`as_printed` — a comparison of numbers printed in a table without error bars (an
  exact kind): each printed number stands for any value within half a unit of its last digit,
  so a comparison holds when it holds for every such value, fails when it fails for every
  one, and is a tie (INCONCLUSIVE) when rounding could reverse it. Rounding is not sampling
  noise: a table without error bars decides what it prints, never whether a difference
  exceeds the seed-to-seed spread.
- :func:`tie` — an ordering on a grid or a count that ties is INCONCLUSIVE, never a decision.
- :func:`existence`, :func:`counterexample` and :func:`cost` — a witness found exactly; a
  universal statement refuted by a counterexample (and confirmed by none only when the search
  is exhaustive: a sample without one is INCONCLUSIVE); an operation count. Decided without a
  test.

Every statistical decision states its estimate and interval, and when it is INCONCLUSIVE the
smallest effect it could have detected and the number of replicates that would decide at the
observed variance (80% power, normal approximation; Chow, Shao & Wang 2008, §3.1). A decision
checks itself on the data it decides (:meth:`Decision.audit`): each interval is recomputed from
the raw replicates by an independent route (``scipy.stats.ttest_1samp``), and the direction of
every decided test is held against the sign of its estimate, so that a wrong rule is an ERROR of
the run, never a verdict.

References
----------
.. [1] D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the power
   approach for assessing the equivalence of average bioavailability", *J. Pharmacokinet.
   Biopharm.* 15 (1987) 657–680.
.. [2] R. L. Berger, "Multiparameter hypothesis testing and acceptance sampling",
   *Technometrics* 24 (1982) 295–300 (the intersection–union test).
.. [3] S.-C. Chow, J. Shao, H. Wang, *Sample Size Calculations in Clinical Research*, 2nd ed.,
   Chapman & Hall/CRC, 2008, §3.1–3.2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from laplace_lab.paper_checks.verification.comparisons import (
    ALPHA,
    POWER,
    Test,
    cross_validated,
    proportion,
    test,
)
from laplace_lab.paper_checks.verification.kinds import Kind, Status

__all__ = [
    "ALPHA",
    "POWER",
    "Decision",
    "Printed",
    "Test",
    "as_printed",
    "counterexample",
    "cross_validated",
    "equivalence",
    "exact",
    "existence",
    "printed",
    "proportion",
    "superiority",
    "test",
    "tie",
]


@dataclass(frozen=True)
class Decision:
    """A status decided by one rule, with everything the report needs to say why.

    ``status`` is CONFIRMED, REFUTED or INCONCLUSIVE; ``rule`` names the rule and its level;
    ``tests`` are the tested means; ``margin`` (equivalence) is δ and its source; ``points``
    are the evidence lines (the interval of each test and, when INCONCLUSIVE, the smallest
    detectable effect and the replicates that would decide).
    """

    kind: Kind
    status: Status
    rule: str
    tests: tuple[Test, ...] = ()
    alpha: float = ALPHA
    quantifier: str = "all"
    margin: float | None = None
    margin_source: str = ""
    points: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """The decision in one line, for a verdict's ``summary``."""
        return self.points[0] if self.points else self.rule

    def as_json(self) -> dict[str, Any]:
        """The ``decision`` object of ``verdicts.json``."""
        out: dict[str, Any] = {
            "kind": self.kind.value,
            "status": self.status.value,
            "rule": self.rule,
            "alpha": self.alpha,
        }
        if self.margin is not None:
            out["margin"] = self.margin
            out["margin_source"] = self.margin_source
        out["tests"] = [
            {
                "label": t.label,
                "mean": t.mean,
                "se": t.se,
                "n": t.n,
                "threshold": t.threshold,
                "side": t.side,
                "values": list(t.values),
                "df": t.df if math.isfinite(t.df) else None,
            }
            for t in self.tests
        ]
        if self.tests:
            out["quantifier"] = self.quantifier
            out["of"] = int(self.details.get("of", len(self.tests)))
            out["side"] = self.details.get("side")
        out["points"] = list(self.points)
        return out

    @classmethod
    def redecided(cls, data: dict[str, Any]) -> Decision:
        """A stored decision (:meth:`as_json`) decided again under the current rules.

        A superiority or equivalence decision is rebuilt from its stored tests (the
        replicates where stored, else each estimate with its standard error) and decided by
        today's :func:`superiority` or :func:`equivalence` with its stored level, quantifier,
        multiplicity and margin. An exact, existence or cost decision has no replicates to
        re-decide: its stored status stands, and its rule says so.
        """
        kind, status = Kind(data["kind"]), Status(data["status"])
        alpha = float(data.get("alpha", ALPHA))
        if kind not in (Kind.SUPERIORITY, Kind.EQUIVALENCE) or not data.get("tests"):
            points = tuple(str(x) for x in data.get("points", ()))
            return cls(
                kind,
                status,
                f"{data['rule']} (stored; no replicates to re-decide)",
                alpha=alpha,
                points=points,
            )
        tests = []
        for t in data["tests"]:
            if t.get("values"):
                tests.append(
                    test(t["label"], t["values"], threshold=t["threshold"], side=t["side"])
                )
            else:
                df = math.inf if t.get("df") is None else float(t["df"])
                tests.append(
                    test(
                        t["label"],
                        mean=t["mean"],
                        se=t["se"],
                        df=df,
                        threshold=t["threshold"],
                        side=t["side"],
                    )
                )
        if kind is Kind.SUPERIORITY:
            return superiority(
                tests, alpha=alpha, quantifier=data.get("quantifier", "all"), of=data.get("of")
            )
        return equivalence(
            tests,
            margin=float(data["margin"]),
            source=data.get("margin_source") or "the claim's margin",
            alpha=alpha,
            side=data.get("side"),
        )

    def at_the_boundary(self) -> Decision:
        """The same rule on the same data moved to the boundary of the claim: each estimate
        at its threshold (superiority), or at the margin on the claimed side (equivalence),
        the spread kept. A rule with measured power answers INCONCLUSIVE there (a CONFIRMED
        or REFUTED at the boundary means a rule that decides without evidence, e.g. a
        standard error of 0); the walk of the recorded runs applies it to every stored
        decision."""
        if self.kind not in (Kind.SUPERIORITY, Kind.EQUIVALENCE) or not self.tests:
            raise ValueError(f"no boundary for a {self.kind.value} decision without tests")
        side = self.details.get("side")
        moved = []
        for t in self.tests:
            if self.kind is Kind.SUPERIORITY:
                at = t.threshold
            else:
                at = t.threshold + (self.margin or 0.0) * (-side if side else 1)
            if t.n:
                moved.append(
                    test(
                        t.label,
                        [v - t.mean + at for v in t.values],
                        threshold=t.threshold,
                        side=t.side,
                    )
                )
            else:
                moved.append(
                    test(t.label, mean=at, se=t.se, df=t.df, threshold=t.threshold, side=t.side)
                )
        if self.kind is Kind.SUPERIORITY:
            return superiority(
                moved, alpha=self.alpha, quantifier=self.quantifier, of=self.details.get("of")
            )
        return equivalence(
            moved,
            margin=float(self.margin or 0.0),
            source=self.margin_source or "the claim's margin",
            alpha=self.alpha,
            side=side,
        )

    def audit(self) -> str | None:
        """Check the decision on its own data; a message when it is inconsistent, else None.

        - Each test's one-sided bounds are recomputed from its replicates by
          ``scipy.stats.ttest_1samp``.
        - The status is decided again from one-sided p-values (scipy's t distribution), an
          independent route to the same rule.
        - A decided test must lie on the side of its threshold that its status says (a
          CONFIRMED superiority has every estimate on the claimed side, a REFUTED one some
          estimate on the other; a CONFIRMED equivalence has every estimate inside the margin,
          a REFUTED one an estimate outside it).
        """
        from scipy.stats import ttest_1samp

        for t in self.tests:
            if not t.n:
                continue
            if t.se == 0.0:
                same = all(v == t.values[0] for v in t.values)
                if not same:
                    return f"{t.label}: se 0 for replicates that differ"
                continue
            for alternative, toward in (("greater", +1), ("less", -1)):
                ref = ttest_1samp(t.values, t.threshold, alternative=alternative)
                ci = ref.confidence_interval(1.0 - self.alpha)
                ours = t.bound(self.alpha, toward=toward)
                theirs = float(ci.low if toward > 0 else ci.high)
                if not math.isclose(ours, theirs, rel_tol=1e-8, abs_tol=1e-12 * (1 + abs(ours))):
                    return (
                        f"{t.label}: the {alternative} one-sided bound {ours:.6g} differs from "
                        f"scipy's {theirs:.6g}"
                    )
        again = self._by_p_values()
        if again is not None and again is not self.status:
            return (
                f"the rule gave {self.status.value} where the one-sided p-values of the same "
                f"data give {again.value}"
            )
        if self.status is Status.INCONCLUSIVE or not self.tests:
            return None
        effects = [t.effect for t in self.tests]
        ahead = [e > 0 for e in effects]
        behind = [e < 0 for e in effects]
        if self.kind is Kind.SUPERIORITY:
            every = self.quantifier == "all"
            if self.status is Status.CONFIRMED:
                agree = all(ahead) if every else any(ahead)
            else:
                agree = any(behind) if every else all(behind)
            if not agree:
                return (
                    f"a {self.status.value} superiority with estimates {effects} in the claimed "
                    "direction: the rule contradicts the sign of its estimates"
                )
        if self.kind is Kind.EQUIVALENCE and self.margin is not None:
            side = self.details.get("side")
            inside = [
                abs(t.mean - t.threshold) < self.margin
                if side is None
                else side * (t.mean - t.threshold) > -self.margin
                for t in self.tests
            ]
            if self.status is Status.CONFIRMED and not all(inside):
                return "a CONFIRMED equivalence whose estimate lies outside its margin"
            if self.status is Status.REFUTED and all(inside):
                return "a REFUTED equivalence whose estimates all lie inside the margin"
        return None

    def _by_p_values(self) -> Status | None:
        """The status from one-sided p-values (None for a rule without tests)."""
        from scipy.stats import t as student

        if not self.tests or self.kind not in (Kind.SUPERIORITY, Kind.EQUIVALENCE):
            return None

        def p(test: Test, at: float, direction: int) -> float:
            """One-sided p of "mean beyond ``at`` in ``direction``"."""
            if test.se == 0.0:
                return 0.0 if direction * (test.mean - at) > 0 else 1.0
            return float(student.sf(direction * (test.mean - at) / test.se, test.df))

        m = int(self.details.get("of", len(self.tests)))
        a, strict = self.alpha, self.alpha / m
        if self.kind is Kind.SUPERIORITY:
            if self.quantifier == "all":
                yes = all(p(t, t.threshold, t.side) < a for t in self.tests)
                no = any(p(t, t.threshold, -t.side) < strict for t in self.tests)
            else:
                yes = any(p(t, t.threshold, t.side) < strict for t in self.tests)
                no = all(p(t, t.threshold, -t.side) < a for t in self.tests)
        else:
            d = float(self.margin or 0.0)
            side = self.details.get("side")
            lower = [p(t, t.threshold - d, +1) for t in self.tests]
            upper = [p(t, t.threshold + d, -1) for t in self.tests]
            beyond_hi = [p(t, t.threshold + d, +1) for t in self.tests]
            beyond_lo = [p(t, t.threshold - d, -1) for t in self.tests]
            if side is None:
                yes = all(lo < a and hi < a for lo, hi in zip(lower, upper, strict=True))
                no = any(min(x, y) < strict for x, y in zip(beyond_hi, beyond_lo, strict=True))
            elif side > 0:
                yes = all(lo < a for lo in lower)
                no = any(x < strict for x in beyond_lo)
            else:
                yes = all(hi < a for hi in upper)
                no = any(x < strict for x in beyond_hi)
        if yes and no:
            return None  # the rules' own order decides; the sign checks below still apply
        return Status.CONFIRMED if yes else Status.REFUTED if no else Status.INCONCLUSIVE


def _power_points(
    tests: Sequence[Test], alpha: float, *, distance: float | None = None
) -> list[str]:
    out = []
    for t in tests:
        need = t.replicates_needed(alpha, distance=distance)
        need_text = (
            "no number of replicates would decide (the estimate sits on the threshold)"
            if math.isinf(need)
            else f"about {need:.0f} replicates would decide at the observed variance"
            if t.n
            else f"a sample about {need:.2g} times the one behind this standard error would decide"
        )
        out.append(
            f"{t.label}: the smallest difference from {t.threshold:.3g} detectable at this "
            f"budget is {t.detectable(alpha):.3g} (power {POWER:.0%}, level {alpha:g}); "
            f"{need_text}"
        )
    return out


def superiority(
    tests: Test | Sequence[Test],
    *,
    alpha: float = ALPHA,
    quantifier: str = "all",
    command: str = "",
    of: int | None = None,
) -> Decision:
    """Decide "A beats B" (module docstring) from one or several one-sided tests.

    Parameters
    ----------
    tests : Test or sequence of Test
        One per task or grid point the sentence quantifies over; each with the claimed side.
    alpha : float
        The level of the whole decision.
    quantifier : {"all", "any"}
        "on every task" (intersection–union: each at alpha; a reverse at alpha/m refutes) or
        "on some task" (one at alpha/m confirms; every reverse at alpha refutes).
    command : str
        The command that runs more replicates, quoted when the decision is INCONCLUSIVE.
    of : int, optional
        The number of tasks the sentence quantifies over, when a sequential design stopped
        before running them all (default: ``len(tests)``): the multiplicity correction counts
        every one of them.

    Examples
    --------
    Three replicates of A − B with mean 2 and standard error 1/√3: the one-sided 95% lower
    bound 2 − t₀.₉₅(2)/√3 = 0.3141 is above 0, so "A beats B" is CONFIRMED; replicates that
    straddle 0 leave it INCONCLUSIVE, and a significant reverse ordering REFUTES it.

    >>> from laplace_lab.paper_checks.verification.decisions import superiority, test
    >>> t = test("A − B", [1.0, 2.0, 3.0], threshold=0.0, side=+1)
    >>> round(t.bound(0.05, toward=+1), 4)
    0.3141
    >>> superiority(t).status.name
    'CONFIRMED'
    >>> superiority(test("A − B", [1.0, -1.0, 2.0])).status.name
    'INCONCLUSIVE'
    >>> superiority(test("A − B", [-1.0, -2.0, -3.0])).status.name
    'REFUTED'
    """
    tests = (tests,) if isinstance(tests, Test) else tuple(tests)
    if not tests:
        raise ValueError("superiority needs at least one test")
    if quantifier not in ("all", "any"):
        raise ValueError(f"quantifier must be 'all' or 'any'; got quantifier={quantifier!r}")
    m = len(tests) if of is None else int(of)
    if m < len(tests):
        raise ValueError(f"of must be at least the {len(tests)} tests; got of={of!r}")
    strict = alpha / m
    if quantifier == "all":
        confirmed = all(t.significant(alpha, direction=t.side) for t in tests)
        refuted = any(t.significant(strict, direction=-t.side) for t in tests)
        rule = (
            f"one-sided t at α = {alpha:g}, every one of {m} (intersection–union); a reverse "
            f"at α/{m} refutes"
            if m > 1
            else f"one-sided t at α = {alpha:g}; the reverse ordering at α refutes"
        )
    else:
        confirmed = any(t.significant(strict, direction=t.side) for t in tests)
        refuted = all(t.significant(alpha, direction=-t.side) for t in tests)
        rule = f"one-sided t, some one of {m} at α/{m} = {strict:.3g}; every reverse at α refutes"
    status = Status.CONFIRMED if confirmed else Status.REFUTED if refuted else Status.INCONCLUSIVE
    level = alpha if quantifier == "all" else strict
    undecided = [t for t in tests if not t.significant(level, direction=t.side)]
    if status is Status.REFUTED:
        at = strict if quantifier == "all" else alpha
        first = next(t for t in tests if t.significant(at, direction=-t.side))
    elif status is Status.CONFIRMED and quantifier == "any":
        first = next(t for t in tests if t.significant(strict, direction=t.side))
    else:
        first = undecided[0] if status is Status.INCONCLUSIVE and undecided else tests[0]
    order = [first, *(t for t in tests if t is not first)]  # the deciding test first
    points = [t.text(level) for t in order]
    if status is Status.INCONCLUSIVE:
        points += _power_points(undecided or tests, alpha)
        if command:
            points.append(f"Run more replicates: {command}")
    head = {
        Status.CONFIRMED: "significant in the claimed direction",
        Status.REFUTED: "the reverse ordering is significant",
        Status.INCONCLUSIVE: "neither ordering is significant at this budget",
    }[status]
    return Decision(
        Kind.SUPERIORITY,
        status,
        rule,
        tests,
        alpha,
        quantifier,
        points=(f"{head}: " + points[0], *points[1:]),
        details={"of": m},
    )


def equivalence(
    tests: Test | Sequence[Test],
    *,
    margin: float,
    source: str,
    alpha: float = ALPHA,
    side: int | None = None,
    command: str = "",
) -> Decision:
    """Decide "A is comparable to B" by TOST (or non-inferiority with ``side``).

    Parameters
    ----------
    tests : Test or sequence of Test
        The differences A − B (their ``threshold`` is the equal value, usually 0); the
        sentence holds when every one is equivalent.
    margin : float
        δ > 0, fixed before measuring, in the units of the difference.
    source : str
        Where δ comes from in the paper's own numbers.
    side : {None, +1, −1}
        None: two-sided equivalence. +1: non-inferiority, A − B > −δ (higher is better);
        −1: A − B < δ (lower is better).

    Examples
    --------
    Four differences A − B near 0: their 90% interval lies within the margin ±0.1, so "A is
    comparable to B" is CONFIRMED; against the margin ±0.01 the same evidence decides
    nothing.

    >>> from laplace_lab.paper_checks.verification.decisions import equivalence, test
    >>> t = test("A − B", [0.01, -0.02, 0.0, 0.01])
    >>> equivalence(t, margin=0.1, source="the paper's table").status.name
    'CONFIRMED'
    >>> equivalence(t, margin=0.01, source="the paper's table").status.name
    'INCONCLUSIVE'
    """
    tests = (tests,) if isinstance(tests, Test) else tuple(tests)
    if not tests:
        raise ValueError("equivalence needs at least one test")
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be finite and > 0; got margin={margin!r}")
    if not source.strip():
        raise ValueError("source must say where the margin comes from in the paper")
    if side not in (None, -1, 1):
        raise ValueError(f"side must be None, +1 or -1; got side={side!r}")
    m = len(tests)
    strict = alpha / m
    inside, beyond = [], []
    for t in tests:
        lo, hi = t.bound(alpha, toward=+1), t.bound(alpha, toward=-1)
        lo_s, hi_s = t.bound(strict, toward=+1), t.bound(strict, toward=-1)
        c = t.threshold
        if side is None:
            inside.append(lo > c - margin and hi < c + margin)
            beyond.append(lo_s > c + margin or hi_s < c - margin)
        elif side > 0:
            inside.append(lo > c - margin)
            beyond.append(hi_s < c - margin)
        else:
            inside.append(hi < c + margin)
            beyond.append(lo_s > c + margin)
    status = (
        Status.CONFIRMED if all(inside) else Status.REFUTED if any(beyond) else Status.INCONCLUSIVE
    )
    what = "TOST" if side is None else "non-inferiority"
    rule = f"{what} at α = {alpha:g} against the margin δ = {margin:.3g} ({source})" + (
        f"; every one of {m}, a difference beyond δ at α/{m} refutes" if m > 1 else ""
    )
    points = [
        f"{t.label} {t.mean:.3g} with (1 − 2α) interval [{t.bound(alpha, toward=+1):.3g}, "
        f"{t.bound(alpha, toward=-1):.3g}] ({'n = ' + str(t.n) if t.n else f'se {t.se:.3g}'}), "
        f"margin ±{margin:.3g} around {t.threshold:.3g}"
        for t in tests
    ]
    deciding = beyond if status is Status.REFUTED else [not ok for ok in inside]
    if any(deciding) and status is not Status.CONFIRMED:  # the deciding test first
        k = deciding.index(True)
        points = [points[k], *points[:k], *points[k + 1 :]]
    if status is Status.INCONCLUSIVE:
        for t, ok in zip(tests, inside, strict=True):
            if ok:
                continue
            gap = margin - abs(t.mean - t.threshold)
            need = t.replicates_needed(alpha, distance=gap) if gap > 0 else math.inf
            many = (
                f"about {need:.0f} replicates"
                if t.n
                else f"a sample about {need:.2g} times the one behind this standard error"
            )
            points.append(
                f"{t.label}: the interval reaches past the margin; "
                + (
                    f"{many} would decide at the observed variance"
                    if math.isfinite(need)
                    else "the estimate lies at or beyond the margin: more replicates could "
                    "refute, never confirm"
                )
            )
        if command:
            points.append(f"Run more replicates: {command}")
    head = {
        Status.CONFIRMED: "within the margin",
        Status.REFUTED: "significantly beyond the margin",
        Status.INCONCLUSIVE: "neither within nor beyond the margin at this budget",
    }[status]
    return Decision(
        Kind.EQUIVALENCE,
        status,
        rule,
        tests,
        alpha,
        "all",
        float(margin),
        source.strip(),
        (f"{head}: " + points[0], *points[1:]),
        {"side": side},
    )


def exact(error: float, tolerance: float, *, what: str = "error") -> Decision:
    """An identity or a stated value: CONFIRMED when ``error`` ≤ ``tolerance``."""
    if not (math.isfinite(error) and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"error and tolerance must be finite; got {error}, {tolerance}")
    ok = abs(error) <= tolerance
    return Decision(
        Kind.EXACT,
        Status.CONFIRMED if ok else Status.REFUTED,
        f"|{what}| ≤ {tolerance:.3g}",
        points=(f"{what} {error:.3g} {'≤' if ok else '>'} tolerance {tolerance:.3g}",),
    )


def existence(found: bool, *, witness: str, kind: Kind = Kind.EXISTENCE) -> Decision:
    """A witness (or counterexample) found exactly: CONFIRMED when ``found``.

    A superiority or equivalence claim cannot decide by one witness (one run's ordering is not
    a test): it is refused, so that such a claim goes through :func:`superiority`,
    :func:`equivalence` or :func:`tie`."""
    if kind.statistical:
        raise ValueError(
            f"kind must not be {kind.value!r} for an existence decision: a "
            f"{kind.value} claim decides through the {kind.value} rule"
        )
    return Decision(
        kind,
        Status.CONFIRMED if found else Status.REFUTED,
        "an exact witness",
        points=(witness,),
    )


def counterexample(found: bool, *, witness: str, exhaustive: bool = False) -> Decision:
    """A universal statement searched for a counterexample: REFUTED when one is found;
    CONFIRMED when none is and the search was ``exhaustive`` (every case of a finite class, or
    a proof-backed sweep); otherwise INCONCLUSIVE — a sample without a counterexample does not
    establish an empirical universal statement."""
    if found:
        status = Status.REFUTED
    else:
        status = Status.CONFIRMED if exhaustive else Status.INCONCLUSIVE
    rule = "a counterexample refutes" + ("; the search is exhaustive" if exhaustive else "")
    return Decision(Kind.EXISTENCE, status, rule, points=(witness,))


def one_run(kind: Kind, what: str, *, command: str = "") -> Decision:
    """One run of a stochastic experiment (one seed's data and fits) read for an ordering:
    INCONCLUSIVE whichever way it falls — it is one replicate, no test; the comparison over
    seeds (``command``) decides."""
    points = [f"one run: {what}"]
    if command:
        points.append(f"Decide with the comparison over seeds: {command}")
    return Decision(kind, Status.INCONCLUSIVE, "one run decides nothing", points=tuple(points))


#: Relative room for the binary representation of printed decimals (0.790 − 0.789 ≠ 0.001).
_ROUNDING_RTOL = 1e-9


@dataclass(frozen=True)
class Printed:
    """A difference of two printed numbers, against a threshold on one side.

    Each number stands for any value within half a unit of its last printed digit, so the
    difference of the values lies within ``slack`` (one unit, or the sum of the two half
    units) of ``difference``; it is given in the units the claim compares in.
    """

    label: str
    difference: float
    slack: float
    threshold: float = 0.0
    side: int = +1

    @property
    def beyond(self) -> float:
        """side × (difference − threshold): positive on the claimed side."""
        return self.side * (self.difference - self.threshold)

    @property
    def holds(self) -> bool:
        """The comparison holds for every value the printed numbers stand for (a difference
        of exactly one slack still does: the rounding intervals are half-open)."""
        return self.beyond >= self.slack * (1.0 - _ROUNDING_RTOL)

    @property
    def fails(self) -> bool:
        """The comparison fails for every value the printed numbers stand for."""
        return self.beyond <= -self.slack * (1.0 - _ROUNDING_RTOL)

    def text(self, fmt: str = ".3g") -> str:
        rel = ">" if self.side > 0 else "<"
        verdict = "holds" if self.holds else "fails" if self.fails else "rounding could reverse it"
        return (
            f"{self.label} {self.difference:{fmt}} ± {self.slack:{fmt}} (rounding), needed "
            f"{rel} {self.threshold:{fmt}}: {verdict}"
        )


def printed(
    label: str,
    a: float,
    b: float,
    unit: float,
    *,
    threshold: float = 0.0,
    side: int = +1,
    scale: float = 1.0,
) -> Printed:
    """``(a − b)/scale`` of two numbers printed to ``unit`` (one unit of their last digit)."""
    if side not in (-1, 1):
        raise ValueError(f"side must be +1 or -1; got side={side!r}")
    if not (math.isfinite(unit) and unit > 0 and math.isfinite(scale) and scale > 0):
        raise ValueError(f"unit and scale must be finite and > 0; got {unit}, {scale}")
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(threshold)):
        raise ValueError(f"a, b and threshold must be finite; got {a}, {b}, {threshold}")
    return Printed(label, (a - b) / scale, unit / scale, threshold, side)


def as_printed(comparisons: Printed | Sequence[Printed], *, what: str = "") -> Decision:
    """Decide a statement about a table's printed numbers (module docstring): CONFIRMED when
    every comparison holds for every value the numbers stand for, REFUTED when one fails for
    every such value, INCONCLUSIVE (a tie) when rounding could reverse one."""
    comparisons = (comparisons,) if isinstance(comparisons, Printed) else tuple(comparisons)
    if not comparisons:
        raise ValueError("as_printed needs at least one comparison")
    if all(c.holds for c in comparisons):
        status = Status.CONFIRMED
    elif any(c.fails for c in comparisons):
        status = Status.REFUTED
    else:
        status = Status.INCONCLUSIVE
    first = next(
        (c for c in comparisons if (c.fails if status is Status.REFUTED else not c.holds)),
        comparisons[0],
    )
    order = [first, *(c for c in comparisons if c is not first)]
    head = {
        Status.CONFIRMED: "holds as printed",
        Status.REFUTED: "fails as printed",
        Status.INCONCLUSIVE: "a tie: the rounding of the printed digits could reverse",
    }[status]
    rule = (
        "as printed: every comparison must hold for every value within half a unit of each "
        "printed digit; one that fails for every such value refutes"
        + (f" ({what})" if what else "")
    )
    return Decision(
        Kind.EXACT,
        status,
        rule,
        points=(f"{head}: " + order[0].text(), *(c.text() for c in order[1:])),
    )


def tie(kind: Kind, what: str, *, command: str = "") -> Decision:
    """An ordering that ties (two grid points, two counts): INCONCLUSIVE."""
    points = [f"a tie: {what}"]
    if command:
        points.append(f"Decide with more replicates or a finer grid: {command}")
    return Decision(kind, Status.INCONCLUSIVE, "a tie decides nothing", points=tuple(points))
