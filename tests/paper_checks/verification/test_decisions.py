"""The decision rules against independent references: scipy's one-sample t test, statsmodels'
TOST and power solver; the audit against wrong rules; the registry's rules of kind and setting."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ttest_1samp
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from laplace_lab.paper_checks.verification import comparisons, decisions
from laplace_lab.paper_checks.verification.kinds import Kind, Setting, Status
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    Verdict,
    claim,
    run_claim,
)

ALPHA = decisions.ALPHA


def _values(seed: int, n: int, shift: float, scale: float = 1.0) -> np.ndarray:
    return shift + scale * np.random.default_rng(seed).standard_normal(n)


def _reversed_between_half_alpha_and_alpha() -> np.ndarray:
    """20 replicates whose mean lies below 0 with a one-sided p in (α/2, α) (a scan of the
    shift)."""
    for shift in np.linspace(-0.2, -0.6, 81):
        mid = _values(1, 20, shift)
        p = ttest_1samp(mid, 0.0, alternative="less").pvalue
        if ALPHA / 2 < p < ALPHA:
            return mid
    pytest.fail("no shift gives p in (α/2, α)")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(3, 40),
    shift=st.floats(-1.5, 1.5),
    side=st.sampled_from([-1, 1]),
)
def test_one_superiority_test_decides_as_scipys_one_sided_p_values(seed, n, shift, side):
    """CONFIRMED iff scipy's one-sided p in the claimed direction is below α; REFUTED iff the
    reverse one is; else INCONCLUSIVE (never both)."""
    x = _values(seed, n, shift)
    d = decisions.superiority(decisions.test("x", x, threshold=0.1, side=side))
    claimed = "greater" if side > 0 else "less"
    reverse = "less" if side > 0 else "greater"
    p_claimed = ttest_1samp(x, 0.1, alternative=claimed).pvalue
    p_reverse = ttest_1samp(x, 0.1, alternative=reverse).pvalue
    want = (
        Status.CONFIRMED
        if p_claimed < ALPHA
        else Status.REFUTED
        if p_reverse < ALPHA
        else Status.INCONCLUSIVE
    )
    assert d.status is want, (p_claimed, p_reverse, d.points)
    assert d.audit() is None


def test_every_task_conjunction_refutes_only_at_the_bonferroni_level():
    """'On every task': one task reversed at p between α/2 and α leaves 2 tasks INCONCLUSIVE;
    one reversed below α/2 refutes; every task significant confirms without a correction."""
    good = _values(0, 30, 1.0)
    mid = _reversed_between_half_alpha_and_alpha()
    tests = [decisions.test("a", good), decisions.test("b", mid)]
    assert decisions.superiority(tests).status is Status.INCONCLUSIVE
    assert decisions.superiority(tests[1]).status is Status.REFUTED  # alone, at α
    strong = _values(2, 30, -1.0)
    assert decisions.superiority([tests[0], decisions.test("c", strong)]).status is Status.REFUTED
    both = [decisions.test("a", good), decisions.test("d", _values(3, 30, 1.0))]
    assert decisions.superiority(both).status is Status.CONFIRMED


def test_a_null_effect_is_inconclusive_and_says_how_many_replicates_would_decide():
    x = np.array([0.3, -0.2, 0.1, -0.25, 0.05, 0.02])
    d = decisions.superiority(decisions.test("gain", x), command="laplace-lab check --full")
    assert d.status is Status.INCONCLUSIVE
    text = " ".join(d.points)
    assert "smallest difference" in text and "replicates would decide" in text
    assert "laplace-lab check --full" in text


@pytest.mark.parametrize(("effect", "sd"), [(0.5, 1.0), (0.2, 1.0), (1.0, 0.5)])
def test_replicates_needed_agrees_with_statsmodels_power_solver(effect, sd):
    """The normal approximation against statsmodels' t-based solver: within 3 replicates."""
    t = decisions.test("x", mean=effect, se=sd / math.sqrt(10), df=9)
    object.__setattr__(t, "values", tuple(range(10)))  # n = 10 replicates, sd as given
    ours = t.replicates_needed(ALPHA)
    theirs = TTestPower().solve_power(
        effect_size=effect / sd, alpha=ALPHA, power=decisions.POWER, alternative="larger"
    )
    assert abs(ours - theirs) <= 3, (ours, theirs)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), shift=st.floats(-0.6, 0.6))
def test_equivalence_confirms_as_statsmodels_tost(seed, n, shift):
    """CONFIRMED iff statsmodels' TOST p-value is below α (margin ±0.4)."""
    x = _values(seed, n, shift, 0.5)
    d = decisions.equivalence(decisions.test("x", x), margin=0.4, source="a test margin")
    p, _, _ = ttost_paired(x, np.zeros_like(x), -0.4, 0.4)
    assert (d.status is Status.CONFIRMED) == (p < ALPHA), (p, d.points)
    if d.status is Status.REFUTED:
        lo = ttest_1samp(x, 0.4, alternative="greater").pvalue
        hi = ttest_1samp(x, -0.4, alternative="less").pvalue
        assert min(lo, hi) < ALPHA
    assert d.audit() is None


def test_a_difference_that_is_not_significant_never_confirms_equivalence():
    """A wide interval around 0 is not equivalence: INCONCLUSIVE, not CONFIRMED."""
    x = np.array([1.0, -1.2, 0.9, -0.8, 0.1])
    assert ttest_1samp(x, 0.0).pvalue > 0.5
    d = decisions.equivalence(decisions.test("x", x), margin=0.2, source="a test margin")
    assert d.status is Status.INCONCLUSIVE


def test_equivalence_refuses_a_margin_without_a_source():
    with pytest.raises(ValueError, match="source"):
        decisions.equivalence(decisions.test("x", [0.0, 1.0]), margin=0.1, source=" ")
    with pytest.raises(ValueError, match="margin"):
        decisions.equivalence(decisions.test("x", [0.0, 1.0]), margin=0.0, source="s")


def test_a_tie_is_inconclusive():
    d = decisions.tie(Kind.SUPERIORITY, "25 context points best for both priors")
    assert d.status is Status.INCONCLUSIVE and "tie" in d.points[0]


def test_the_audit_catches_a_one_sided_test_that_ignores_the_sign(monkeypatch):
    """A wrong rule — significance of |mean − threshold| whatever its sign — confirms a
    superiority whose estimate lies on the wrong side; the audit names it."""

    def two_sided(self, alpha, *, direction):
        b = abs(self.mean - self.threshold) - comparisons.t_quantile(1 - alpha, self.df) * self.se
        return b > 0

    monkeypatch.setattr(decisions.Test, "significant", two_sided)
    d = decisions.superiority(decisions.test("x", _values(0, 30, -1.0)))
    assert d.status is Status.CONFIRMED
    assert "p-values of the same data give REFUTED" in d.audit()


def test_the_audit_catches_a_standard_error_off_by_a_square_root(monkeypatch):
    real = decisions.test

    def wrong(*args, **kwargs):
        t = real(*args, **kwargs)
        object.__setattr__(t, "se", t.se * math.sqrt(t.n))
        return t

    monkeypatch.setattr(decisions, "test", wrong)
    d = decisions.superiority(decisions.test("x", _values(0, 12, 0.3)))
    assert "differs from scipy" in d.audit()


def _toy(kind, setting, status, decision=None, margin=""):
    def func(ctx):
        return Verdict(status, summary="toy", evidence=["toy"], decision=decision)

    return Claim(
        "toy", "c", "eq. (1)", "It holds.", status, func, (), False, kind, setting, margin
    )


def test_a_statistical_verdict_without_its_decision_is_an_error():
    v = run_claim(_toy(Kind.SUPERIORITY, Setting.paper(), Status.REFUTED), Context())
    assert v.status is Status.ERROR and "decisions module" in v.reason
    d = decisions.superiority(decisions.test("x", _values(0, 20, 1.0)))
    v = run_claim(_toy(Kind.SUPERIORITY, Setting.paper(), Status.REFUTED, d), Context())
    assert v.status is Status.ERROR and "decision says CONFIRMED" in v.reason
    v = run_claim(_toy(Kind.SUPERIORITY, Setting.paper(), Status.CONFIRMED, d), Context())
    assert v.status is Status.CONFIRMED and any("Rule:" in p for p in v.points)


def test_a_table_number_can_be_neither_refuted_nor_confirmed_on_a_substitute():
    sub = Setting.substitute("statsmodels' co2 series, 1958–2001", specific=True)
    for status in (Status.REFUTED, Status.CONFIRMED):
        v = run_claim(_toy(Kind.EXACT, sub, status), Context())
        assert v.status is Status.NOT_REPRODUCIBLE_HERE and "substitute" in v.reason
        assert v.reason.startswith(f"would read {status.value} on a substitute")
    qualitative = Setting.substitute("sklearn digits")
    assert run_claim(_toy(Kind.EXACT, qualitative, Status.REFUTED), Context()).status is (
        Status.REFUTED
    )


def test_the_registry_refuses_a_claim_without_its_kind_setting_or_margin():
    common = dict(paper="toy", name="c", location="eq. (1)", statement="It holds.")
    with pytest.raises(ValueError, match="kind"):
        claim(**common, setting=Setting.paper())
    with pytest.raises(ValueError, match="setting"):
        claim(**common, kind=Kind.EXACT)
    with pytest.raises(ValueError, match="margin"):
        claim(**common, kind=Kind.EQUIVALENCE, setting=Setting.paper())
    with pytest.raises(ValueError, match="what differs"):
        Setting.substitute("")


def test_the_summary_names_the_test_that_decided():
    """The line a verdict's summary shows is the deciding test, not the first one listed."""
    good = decisions.test("first task", _values(0, 30, 1.0))
    bad = decisions.test("second task", _values(1, 30, -1.0))
    d = decisions.superiority([good, bad])
    assert d.status is Status.REFUTED and d.summary.startswith("the reverse ordering")
    assert "second task" in d.summary
    tied = decisions.test("third task", _values(2, 30, 0.0, 0.01))
    d = decisions.superiority([good, tied])
    assert d.status is Status.INCONCLUSIVE and "third task" in d.summary
    e = decisions.equivalence(
        [
            decisions.test("inside", _values(3, 40, 0.0, 0.1)),
            decisions.test("wide", [1.0, -1.0, 0.5]),
        ],
        margin=0.3,
        source="a test margin",
    )
    assert e.status is Status.INCONCLUSIVE and "wide" in e.summary
    assert not any(p.startswith("inside:") for p in e.points)  # no power line for a decided one


def test_a_non_inferiority_better_than_the_margin_passes_its_audit():
    """Lower is better (side −1): an estimate below −δ is 'surpassed by more than the margin',
    a valid CONFIRMED non-inferiority, not an inconsistency."""
    x = _values(4, 20, -0.5, 0.05)
    d = decisions.equivalence(decisions.test("x", x), margin=0.1, source="s", side=-1)
    assert d.status is Status.CONFIRMED and d.audit() is None
    d = decisions.equivalence(decisions.test("x", -x), margin=0.1, source="s", side=+1)
    assert d.status is Status.CONFIRMED and d.audit() is None


def test_a_test_from_its_standard_error_states_the_sample_multiple_that_would_decide():
    t = decisions.test("gain", mean=0.1, se=0.1)
    d = decisions.superiority(t)
    assert d.status is Status.INCONCLUSIVE
    assert any("times the one behind this standard error" in p for p in d.points)


def test_a_sample_without_a_counterexample_does_not_confirm_a_universal_statement():
    found = decisions.counterexample(True, witness="variance fell at 3 of 50 points")
    assert found.status is Status.REFUTED
    none = decisions.counterexample(False, witness="no fall in 5 splits")
    assert none.status is Status.INCONCLUSIVE
    proof = decisions.counterexample(False, witness="all 2^10 subsets", exhaustive=True)
    assert proof.status is Status.CONFIRMED


def test_one_run_decides_nothing_whichever_way_it_falls():
    d = decisions.one_run(Kind.SUPERIORITY, "M* = 10 (rough) vs 25 (smooth)", command="run")
    assert d.status is Status.INCONCLUSIVE and d.kind is Kind.SUPERIORITY
    assert d.points == (
        "one run: M* = 10 (rough) vs 25 (smooth)",
        "Decide with the comparison over seeds: run",
    )


def test_a_sequential_design_that_stopped_early_still_corrects_for_every_task():
    """Two tasks quantified, one run (the design stopped at the first): a reverse ordering
    with one-sided p in (α/2, α) refutes one task alone but not one task of two."""
    mid = _reversed_between_half_alpha_and_alpha()
    one = decisions.test("b", mid)
    assert decisions.superiority(one).status is Status.REFUTED
    d = decisions.superiority(one, of=2)
    assert d.status is Status.INCONCLUSIVE and "α/2" in d.rule
    assert d.audit() is None  # the p-value route counts both tasks too
    with pytest.raises(ValueError, match="of must be at least"):
        decisions.superiority([one, one], of=1)


def test_one_witness_cannot_decide_a_statistical_claim():
    for kind in (Kind.SUPERIORITY, Kind.EQUIVALENCE):
        with pytest.raises(ValueError, match="kind must not be"):
            decisions.existence(True, witness="one run's ordering", kind=kind)
    assert decisions.existence(True, witness="w").status is Status.CONFIRMED


def test_data_moved_to_the_boundary_no_longer_decides():
    """A decided superiority or equivalence, its estimates moved to the threshold (or to the
    margin), is INCONCLUSIVE; replicates that are all equal, moved there, are not (a standard
    error of 0 decides without evidence, which the walk of the claims must see)."""
    sup = decisions.superiority(decisions.test("x", _values(0, 20, 1.0)))
    assert sup.status is Status.CONFIRMED
    assert sup.at_the_boundary().status is Status.INCONCLUSIVE
    for side in (None, +1, -1):
        eq = decisions.equivalence(
            decisions.test("d", _values(1, 40, 0.0, scale=0.1)), margin=0.2, source="s", side=side
        )
        assert eq.status is Status.CONFIRMED
        assert eq.at_the_boundary().status is Status.INCONCLUSIVE, side
    given = decisions.superiority(decisions.proportion("p", 100, 100, threshold=0.95))
    assert given.status is Status.CONFIRMED
    assert given.at_the_boundary().status is Status.INCONCLUSIVE
    with pytest.raises(ValueError, match="no boundary"):
        decisions.tie(Kind.SUPERIORITY, "a tie").at_the_boundary()


def test_a_proportion_is_the_score_test_and_all_successes_are_not_certainty():
    """The one-sided score test of a proportion against statsmodels' proportions_ztest with
    the null variance; 5 of 5 successes do not beat 0.95, 100 of 100 do."""
    from statsmodels.stats.proportion import proportions_ztest

    for k, n, p0 in ((45, 50, 0.8), (12, 20, 0.5), (98, 100, 0.95)):
        t = decisions.proportion("p", k, n, threshold=p0)
        z, p = proportions_ztest(k, n, value=p0, alternative="larger", prop_var=p0)
        assert math.isclose((t.mean - p0) / t.se, z, rel_tol=1e-12)
        assert (decisions.superiority(t).status is Status.CONFIRMED) == (p < ALPHA)
    assert decisions.superiority(decisions.proportion("p", 5, 5, threshold=0.95)).status is (
        Status.INCONCLUSIVE
    )
    with pytest.raises(ValueError, match="successes"):
        decisions.proportion("p", 6, 5, threshold=0.5)


def test_as_printed_holds_fails_or_ties_by_the_rounding_of_the_last_digit():
    from laplace_lab.paper_checks.verification.decisions import as_printed, printed

    # 0.821 vs 0.789 printed to 1e-3: the values differ by 0.032 ± 0.001, above 0 always
    assert as_printed(printed("AUC gain", 0.821, 0.789, 1e-3)).status is Status.CONFIRMED
    # 0.790 vs 0.789: values in [0.7895, 0.7905) and [0.7885, 0.7895) differ by more than 0
    assert as_printed(printed("AUC gain", 0.790, 0.789, 1e-3)).status is Status.CONFIRMED
    # equal printed numbers: the values may differ either way, a tie
    tie = as_printed(printed("AUC gain", 0.789, 0.789, 1e-3))
    assert tie.status is Status.INCONCLUSIVE and "could reverse" in tie.points[0]
    # 0.788 vs 0.789: at or below 0 for every value the digits stand for
    assert as_printed(printed("AUC gain", 0.788, 0.789, 1e-3)).status is Status.REFUTED
    # non-inferiority in units of a margin: 0.04-point loss against a 0.045 margin, ACC to 0.01
    loss = printed("ACC loss / δ", 91.03, 90.99, 0.01, threshold=1.0, side=-1, scale=0.045)
    assert as_printed(loss).status is Status.INCONCLUSIVE
    ok = printed("ACC loss / δ", 91.01, 91.00, 0.01, threshold=1.0, side=-1, scale=0.045)
    both = as_printed([ok, loss])
    assert both.status is Status.INCONCLUSIVE and both.points[0].startswith("a tie")
    assert both.kind is Kind.EXACT and both.tests == ()
    with pytest.raises(ValueError, match="unit and scale"):
        printed("x", 1.0, 0.5, 0.0)
