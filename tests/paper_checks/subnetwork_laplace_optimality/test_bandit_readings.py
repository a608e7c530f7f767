"""The Wheel-bandit readings claim's judgement of a record (hand-made regrets, no runs)."""

from __future__ import annotations

import math

import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality import bandit_readings as br
from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit_readings import (
    AGENTS,
    TABLES,
)
from laplace_lab.paper_checks.verification import ImplementationError, Recorded

TABLE = TABLES[0.95]


def _record(regrets: dict[str, dict[str, list[float]]], horizon: int = 1000) -> Recorded:
    data = {"horizon": horizon, "delta": 0.95, "seeds": 3, "regrets": regrets}
    return Recorded("cmd", "0" * 40, "2026-01-01", "a run", data)


def _spread(mean: float) -> list[float]:
    return [mean - 10.0, mean, mean + 10.0]  # 1.96 s.e. = 1.96 · 10/√3 ≈ 11.3


def test_projection_is_the_anchor_times_the_readings_factor():
    default = {a: (1000.0, 0.0) for a in AGENTS}
    anchor = {a: TABLE[a] / 2 for a in AGENTS}  # as written: half the table everywhere
    # a reading doubling every regret lands on the table exactly
    doubled = {a: (2000.0, 0.0) for a in AGENTS}
    assert br.projected_distance(doubled, default, anchor) == pytest.approx((0.0, 1.0))
    assert br.projected_distance(default, default, anchor) == pytest.approx((math.log(2), 0.5))
    with pytest.raises(ImplementationError, match="lacks an agent"):
        br.projected_distance(default, default, {"map": 1.0})


def test_judgement_finds_the_closest_reading_and_the_ordering():
    as_written = {a: _spread(1000.0) for a in AGENTS}
    # Table 1's ordering: leaders at 1,000, the others raised to 3,000
    tabled = {a: _spread(1000.0 if a in br.LEADERS else 3000.0) for a in AGENTS}
    # leaders far above the others: reversed with non-overlapping intervals
    reversed_ = {a: _spread(3000.0 if a in br.LEADERS else 1000.0) for a in AGENTS}
    anchor = {a: TABLE[a] / 3 for a in AGENTS}
    rec = _record({"default": as_written, "network=reinit": tabled, "x": reversed_})
    judged = br.judge_record(rec, anchor)
    assert judged["holds_significant"] == ["network=reinit"]
    assert judged["holds_means"] == ["network=reinit"]
    assert not judged["reversed_everywhere"]
    assert judged["readings"]["x"]["reversed"]
    # ×3 on MAP, NeuralLinear and Last-k-500 brings them onto the table (log 3 → 0)
    assert judged["closest"] == "network=reinit"
    assert judged["readings"]["network=reinit"]["projected"] == pytest.approx(2 / 5 * math.log(3))
    only_reversed = br.judge_record(_record({"default": reversed_}), anchor)
    assert only_reversed["reversed_everywhere"] and only_reversed["holds_means"] == []


def test_a_readings_ordering_is_decided_by_welch_tests_at_alpha_over_the_readings():
    from scipy.stats import ttest_ind

    leaders = [1000.0, 1040.0, 1075.0, 990.0, 1020.0]
    # the others 100 above the leaders: one-sided Welch p ≈ 0.001 per pair
    regrets = {a: [v + (0.0 if a in br.LEADERS else 100.0) for v in leaders] for a in AGENTS}
    pairs = [(o, ell) for ell in br.LEADERS for o in AGENTS if o not in br.LEADERS]
    p = max(
        ttest_ind(regrets[o], regrets[ell], equal_var=False, alternative="greater").pvalue
        for o, ell in pairs
    )
    for readings, status in ((1, "CONFIRMED"), (round(0.05 / p) + 5, "INCONCLUSIVE")):
        # every pair significant at α/R exactly when scipy's largest p is below it
        assert (p < 0.05 / readings) == (status == "CONFIRMED")
        assert br.ordering_decision(regrets, readings).status.name == status
    swapped = {a: regrets[b] for a, b in zip(AGENTS, reversed(AGENTS), strict=True)}
    assert br.ordering_decision(swapped, 1).status.name == "REFUTED"


def test_a_record_without_default_or_with_one_seed_is_an_implementation_error():
    anchor = {a: 1.0 for a in AGENTS}
    with pytest.raises(ImplementationError, match="default"):
        br.judge_record(_record({"x": {a: _spread(5.0) for a in AGENTS}}), anchor)
    one_seed = {a: [5.0] for a in AGENTS}
    with pytest.raises(ImplementationError, match="finite"):
        br.judge_record(_record({"default": one_seed}), anchor)


def test_the_recorded_readings_run():
    (record, *_) = br.reading_records()
    assert record.data["horizon"] == 1000 and record.data["seeds"] == 3
    judged = br.judge_record(record, br._anchor(record.data["regrets"]["default"]))
    assert "default" in judged["readings"] and len(judged["readings"]) >= 10
    # As written at T = 1,000 the leaders are not below MAP (Table 1's ordering fails)
    assert not judged["readings"]["default"]["ordering_means"]


def test_anchor_is_the_first_paper_horizon_record_with_every_agent(monkeypatch):
    def rec(horizon: int, final: dict[str, float]) -> Recorded:
        data = {"horizon": horizon, "final_regret": {a: [m, 1.0] for a, m in final.items()}}
        return Recorded("cmd", "0" * 40, "2026-01-01", "run", data)

    records = (rec(16000, {"map": 1.0}), rec(16000, {"map": 2.0, "last_k-k500": 3.0}))
    monkeypatch.setattr(br, "bandit_records", lambda delta: (rec(4000, {"map": 9.0}), *records))
    assert br._anchor(["map"]) == {"map": 1.0}  # the first at T = 16,000, not T = 4,000
    assert br._anchor(["map", "last_k-k500"]) == {"map": 2.0, "last_k-k500": 3.0}
    assert br._anchor(["no-such-agent"]) == {}


def test_the_recorded_anchor_is_the_25_seed_table():
    agents = ["map", "neural_linear", "last_k-k500", "gradient_laplace-k500"]
    readings = br._anchor(agents)
    assert readings["map"] == pytest.approx(4327.7)
    assert readings["neural_linear"] == pytest.approx(3851.4)
