"""Verdict logic of the Wheel Bandit table claims on hand-built regrets (no bandit runs)."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality import bandit
from laplace_lab.paper_checks.verification import Context, Status


def _fake_runs(final: dict[str, list[float]], horizon: int):
    def runs(delta: float, full: bool, seed: int) -> dict[str, object]:
        traces = {a: np.linspace(0.0, np.mean(v), 10) for a, v in final.items()}
        return {"horizon": horizon, "seeds": 3, "final": final, "traces": traces, "s": 60.0}

    return runs


def _table2_final(k500: float, baseline: float) -> dict[str, list[float]]:
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import agents

    final = {a: [baseline - 10, baseline, baseline + 10] for a in agents((100, 500))}
    for a in ("gradient_laplace-k500", "greedy_laplace-k500"):
        final[a] = [k500 - 10, k500, k500 + 10]
    return final


@pytest.mark.parametrize(
    ("k500", "baseline", "horizon", "status"),
    [
        (1000.0, 5000.0, bandit.PAPER_T, Status.CONFIRMED),  # stated ordering, significant
        (5000.0, 1000.0, bandit.PAPER_T, Status.REFUTED),  # reversed, significant
        (5000.0, 5005.0, bandit.PAPER_T, Status.INCONCLUSIVE),  # ran; neither significant
        (5000.0, 1000.0, 4000, Status.NOT_REPRODUCIBLE_HERE),  # short horizon cannot refute
    ],
)
def test_table_verdicts(monkeypatch, k500, baseline, horizon, status):
    monkeypatch.setattr(bandit, "_runs", _fake_runs(_table2_final(k500, baseline), horizon))
    v = bandit._verdict(Context(full=True), 0.9, "Table 2")
    assert v.status is status
    if status in (Status.CONFIRMED, Status.REFUTED, Status.INCONCLUSIVE):
        assert v.decision is not None and v.decision.status is status
        assert v.decision.audit() is None
    if status is Status.INCONCLUSIVE:
        assert "--claim wheel-bandit-table2-ordering" in " ".join(v.decision.points)


def test_welch_tests_agree_with_scipy():
    """The ordering tests are Welch's two-sample t (each agent's seeds drawn apart)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    per_seed = {
        a: list(rng.normal(m, s, size=n))
        for a, m, s, n in (
            ("subnet_diagonal-k500", 6000, 900, 25),
            ("gradient_laplace-k500", 5500, 400, 25),
            ("last_k-k500", 4000, 700, 25),
            ("greedy_laplace-k500", 5600, 600, 25),
            ("map", 5000, 2000, 25),
        )
    }
    for (worse, better), t in zip(
        bandit._ORDERINGS[0.9], bandit.ordering_tests(per_seed, 0.9), strict=True
    ):
        ref = stats.ttest_ind(per_seed[worse], per_seed[better], equal_var=False)
        assert t.mean / t.se == pytest.approx(ref.statistic, rel=1e-10)
        assert t.df == pytest.approx(ref.df, rel=1e-10)


def _record(horizon: int, final: dict[str, list[float]], per_seed=None) -> bandit.Recorded:
    data = {"horizon": horizon, "delta": 0.95, "seeds": 3, "final_regret": final}
    if per_seed is not None:
        data |= {"per_seed": per_seed, "seeds": len(next(iter(per_seed.values())))}
    return bandit.Recorded("cmd", "0" * 40, "2026-01-01", "a run", data)


def test_a_record_counts_only_at_the_paper_horizon_with_its_seeds_and_raw_values():
    final = {"last_k-k500": [4083, 753], "gradient_laplace-k500": [5749, 863]}
    short = bandit.decided_record(_record(4000, final), 0.95)
    few = bandit.decided_record(_record(bandit.PAPER_T, final), 0.95)
    assert not short.counts and not few.counts
    assert "context only" in few.why and "no per-seed values" in few.why
    assert len(few.decision.tests) == 1  # the only ordering with both agents recorded
    rng = np.random.default_rng(1)
    per_seed = {a: list(rng.normal(m, 300, size=25)) for a, (m, _) in final.items()}
    partial = bandit.decided_record(_record(bandit.PAPER_T, final, per_seed), 0.95)
    assert not partial.counts and "an agent not run" in partial.why
    agents = {a for pair in bandit._ORDERINGS[0.95] for a in pair}
    per_seed = {
        a: list(rng.normal(4083 if a == "last_k-k500" else 5749, 300, size=25)) for a in agents
    }
    paper = bandit.decided_record(_record(bandit.PAPER_T, final, per_seed), 0.95)
    assert paper.counts and paper.decision.status is Status.REFUTED


def test_the_recorded_paper_horizon_runs_refute_table1():
    """The stored T = 16,000 runs at δ = 0.95: at 25 seeds (all ten agents, per-seed regrets)
    MAP and Last-k-500 lie significantly below Gradient- and Greedy-Laplace-500, a stated
    ordering reversed at α/9: REFUTED, and that record counts; the 3-seed run (means and
    standard errors only) is context and cannot decide."""
    paper_seeds, three_seeds, short = (
        bandit.decided_record(r, 0.95) for r in bandit.bandit_records(0.95)
    )
    assert (paper_seeds.data["horizon"], paper_seeds.data["seeds"]) == (bandit.PAPER_T, 25)
    assert paper_seeds.commit.startswith("0a82622")
    assert len(paper_seeds.data["per_seed"]) == 10
    assert all(len(v) == 25 for v in paper_seeds.data["per_seed"].values())
    d = paper_seeds.decision
    assert paper_seeds.counts and d.status is Status.REFUTED and d.audit() is None
    m = len(d.tests)
    reversed_ = {t.label for t in d.tests if t.significant(d.alpha / m, direction=-t.side)}
    assert any("last_k-k500 − of gradient_laplace-k500" in r for r in reversed_)
    assert any("map − of greedy_laplace-k500" in r for r in reversed_)
    held = [t for t in d.tests if t.significant(d.alpha, direction=t.side)]
    assert [t.label.split(" (")[0] for t in held] == [
        "final regret of subnet_diagonal-k100 − of greedy_laplace-k100"
    ]
    assert (three_seeds.data["seeds"], three_seeds.counts) == (3, False)
    assert three_seeds.decision.status is Status.INCONCLUSIVE
    assert (short.data["horizon"], short.counts) == (4000, False)


def test_the_recorded_table2_runs_refute_last_k_against_gradient_laplace():
    """δ = 0.9 at T = 16,000 and 25 seeds, all five compared agents: Last-k-500 lies
    significantly below Gradient-Laplace-500 (a stated ordering reversed at α/6): REFUTED."""
    (record,) = bandit.bandit_records(0.9)
    assert (record.data["horizon"], record.data["seeds"]) == (bandit.PAPER_T, 25)
    assert record.commit.startswith("067b93b")
    decided = bandit.decided_record(record, 0.9)
    d = decided.decision
    assert decided.counts and d.status is Status.REFUTED and d.audit() is None
    strict = d.alpha / len(d.tests)
    reversed_ = [t.label for t in d.tests if t.significant(strict, direction=-t.side)]
    assert reversed_ == ["final regret of last_k-k500 − of gradient_laplace-k500 (Welch)"]
    assert not any(t.significant(d.alpha, direction=t.side) for t in d.tests)


def test_quick_mode_is_not_reproducible_and_the_counting_record_is_the_headline(monkeypatch):
    from laplace_lab.paper_checks.verification.report import Outcome

    def one_seed(delta: float, full: bool, seed: int) -> dict[str, object]:
        final = {"map": [700.0], "gradient_laplace-k100": [650.0]}
        traces = {a: np.linspace(0.0, v[0], 10) for a, v in final.items()}
        return {"horizon": 150, "seeds": 1, "final": final, "traces": traces, "s": 2.0}

    monkeypatch.setattr(bandit, "_runs", one_seed)
    v = bandit._verdict(Context(full=False), 0.95, "Table 1")
    assert v.status is Status.NOT_REPRODUCIBLE_HERE
    assert "± 0" not in v.evidence and "650" not in v.evidence
    assert "recorded T = 16,000" in v.evidence and "REFUTED" in v.evidence
    assert [r.data["horizon"] for r in v.recorded] == [16000, 16000, 4000]
    assert [r.counts for r in v.recorded] == [True, False, False]
    from laplace_lab.papers import claims

    (item,) = [c for c in claims(bandit.PAPER) if c.name == "wheel-bandit-table1-ordering"]
    assert Outcome(item, v, 0.0).status is Status.REFUTED
