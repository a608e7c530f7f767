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
        (5000.0, 5005.0, bandit.PAPER_T, Status.NOT_REPRODUCIBLE_HERE),  # not separated
        (5000.0, 1000.0, 4000, Status.NOT_REPRODUCIBLE_HERE),  # short horizon cannot refute
    ],
)
def test_table_verdicts(monkeypatch, k500, baseline, horizon, status):
    monkeypatch.setattr(bandit, "_runs", _fake_runs(_table2_final(k500, baseline), horizon))
    v = bandit._verdict(Context(full=True), 0.9, "Table 2")
    assert v.status is status
    if status is Status.REFUTED:
        assert "subnet_diagonal-k500" in v.evidence and "reversed" in v.evidence


def test_ordering_outcome_on_intervals():
    # Table 2 pairs: (worse, better); half-widths are 1.96 s.e.
    stats = {
        "subnet_diagonal-k500": (100.0, 10.0),
        "gradient_laplace-k500": (50.0, 10.0),  # holds: 60 < 90
        "last_k-k500": (55.0, 10.0),  # overlaps gradient (60 ≥ 45): neither way
        "greedy_laplace-k500": (80.0, 5.0),  # reversed against last_k: 65 < 75
    }
    checked, reversed_, missing = bandit.ordering_outcome(stats, 0.9)
    assert checked["gradient_laplace-k500 < subnet_diagonal-k500"] is True
    assert checked["gradient_laplace-k500 < last_k-k500"] is False
    assert reversed_ == ["last_k-k500 (55 ± 10) < greedy_laplace-k500 (80 ± 5)"]
    assert missing == ["greedy_laplace-k500 < map", "gradient_laplace-k500 < map"]


def _record(horizon: int, final: dict[str, list[float]]) -> bandit.Recorded:
    data = {"horizon": horizon, "delta": 0.95, "seeds": 3, "final_regret": final}
    return bandit.Recorded("cmd", "0" * 40, "2026-01-01", "a run", data)


def test_recorded_reversal_at_the_paper_horizon_refutes_and_a_short_one_is_context():
    final = {"last_k-k500": [4083, 753], "gradient_laplace-k500": [5749, 863]}
    status, line = bandit._implication(_record(bandit.PAPER_T, final), 0.95)
    assert status == "REFUTED" and "last_k-k500 (4083 ± 753) < gradient_laplace" in line
    status, line = bandit._implication(_record(4000, final), 0.95)
    assert status == "" and "shorter horizon" in line


def test_the_recorded_paper_horizon_runs_reverse_table1():
    """The stored T = 16,000 runs: at 25 seeds (all ten agents) MAP's and Last-k-500's
    intervals lie below Gradient- and Greedy-Laplace-500's and no stated ordering holds; at
    3 seeds Last-k-500's below Gradient-500's."""
    paper_seeds, three_seeds, *_ = bandit.bandit_records(0.95)
    assert (paper_seeds.data["horizon"], paper_seeds.data["seeds"]) == (bandit.PAPER_T, 25)
    assert paper_seeds.commit.startswith("0a82622")
    final = paper_seeds.data["final_regret"]
    hi_map = final["map"][0] + final["map"][1]
    hi_last = final["last_k-k500"][0] + final["last_k-k500"][1]
    for agent in ("gradient_laplace-k500", "greedy_laplace-k500"):
        assert hi_map < final[agent][0] - final[agent][1]  # 5291 < 5392 (Greedy), 5668
        assert hi_last < final[agent][0] - final[agent][1]  # 4295
    assert bandit._implication(paper_seeds, 0.95)[0] == "REFUTED"
    assert len(final) == 10 and all(len(v) == 25 for v in paper_seeds.data["per_seed"].values())
    checked, reversed_, missing = bandit.ordering_outcome(
        {a: tuple(v) for a, v in final.items()}, 0.95
    )
    assert (len(checked), sum(checked.values()), len(reversed_), missing) == (9, 0, 4, [])
    assert list(final)[-2:] == ["greedy_laplace-k500", "gradient_laplace-k500"]  # last: 5992, 6019
    assert (three_seeds.data["horizon"], three_seeds.data["seeds"]) == (bandit.PAPER_T, 3)
    assert three_seeds.commit.startswith("e14eb25")
    lo_grad = three_seeds.data["final_regret"]["gradient_laplace-k500"]
    hi_last = three_seeds.data["final_regret"]["last_k-k500"]
    assert hi_last[0] + hi_last[1] < lo_grad[0] - lo_grad[1]  # 4836 < 4886
    assert bandit._implication(three_seeds, 0.95)[0] == "REFUTED"


def test_the_recorded_table2_runs_reverse_last_k_against_gradient_laplace():
    """δ = 0.9 at T = 16,000 and 25 seeds, all five compared agents: none of the six stated
    orderings holds, and Last-k-500's interval lies below Gradient-Laplace-500's (5796 <
    5891), a stated ordering reversed."""
    (record,) = bandit.bandit_records(0.9)
    assert (record.data["horizon"], record.data["seeds"]) == (bandit.PAPER_T, 25)
    assert record.commit.startswith("067b93b")
    final = record.data["final_regret"]
    last, grad = final["last_k-k500"], final["gradient_laplace-k500"]
    assert last[0] + last[1] < grad[0] - grad[1]
    assert len(final) == 5 and all(len(v) == 25 for v in record.data["per_seed"].values())
    checked, reversed_, missing = bandit.ordering_outcome(
        {a: tuple(v) for a, v in final.items()}, 0.9
    )
    assert (len(checked), sum(checked.values()), len(reversed_), missing) == (6, 0, 1, [])
    assert bandit._implication(record, 0.9)[0] == "REFUTED"
    assert list(final)[:2] == ["last_k-k500", "greedy_laplace-k500"]  # 4700, 6070


def test_quick_mode_is_not_reproducible_shows_the_record_and_no_one_seed_interval(monkeypatch):
    def one_seed(delta: float, full: bool, seed: int) -> dict[str, object]:
        final = {"map": [700.0], "gradient_laplace-k100": [650.0]}
        traces = {a: np.linspace(0.0, v[0], 10) for a, v in final.items()}
        return {"horizon": 150, "seeds": 1, "final": final, "traces": traces, "s": 2.0}

    monkeypatch.setattr(bandit, "_runs", one_seed)
    v = bandit._verdict(Context(full=False), 0.95, "Table 1")
    assert v.status is Status.NOT_REPRODUCIBLE_HERE
    assert "± 0" not in v.evidence and "650" not in v.evidence
    assert "recorded T = 16,000" in v.evidence and "REFUTES" in v.evidence
    assert [r.data["horizon"] for r in v.recorded] == [16000, 16000, 4000]
