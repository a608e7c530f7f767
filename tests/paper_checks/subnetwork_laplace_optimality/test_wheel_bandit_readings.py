"""The Wheel-bandit reading-sensitivity study: its readings, grid and report."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
    READINGS,
    BanditConfig,
    run_bandit,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import (
    wheel_bandit_readings as wr,
)
from laplace_lab.studies.summary import SummaryRow

# A short run whose every phase trains, refits and re-selects: 100 rounds = 15 warm pulls +
# 4 phases of 20 and one of 5. With fewer Adam updates per phase (5) or rounds (60), the
# network barely learns and resetting Adam or the arm means change it but not yet an arm.
_SHORT = dict(method="gradient_laplace", k=20, horizon=100, updates_per_phase=20)


def _alternatives() -> list[tuple[str, object]]:
    pairs = [(name, value) for name, values in READINGS.items() for value in values[1:]]
    return [*pairs, ("variant", "riquelme")]


@pytest.mark.parametrize(("field", "value"), _alternatives())
def test_every_reading_changes_the_run(field, value):
    short = dict(_SHORT)
    if field == "posterior_noise":
        # The residual estimate is floored at the true σ0² = 1e-4, which it reaches once
        # the network fits the replay: the readings differ only on an under-trained one.
        short["updates_per_phase"] = 5
    base = run_bandit(BanditConfig(**short), rng=11)
    other = run_bandit(BanditConfig(**{**short, field: value}), rng=11)
    # Every reading acts on the pulled arms except the regret definition, which acts on
    # the regret of the same arms.
    if field == "regret":
        np.testing.assert_array_equal(base.arms, other.arms)
        assert not np.array_equal(base.regret, other.regret)
    else:
        assert not np.array_equal(base.arms, other.arms), f"{field}={value} has no effect"


def test_reselect_every_keeps_the_subnetwork_between_selections(monkeypatch):
    # Gradient-Laplace's top-k subset is stable across phases at this size, so the arms do
    # not tell a kept subset from a re-selected one: count the selections instead.
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments import wheel_lockstep

    calls = []
    original = wheel_lockstep.replay_posterior

    def counting(*args, S=None, **kwargs):
        if S is None:
            calls.append(1)
        return original(*args, S=S, **kwargs)

    monkeypatch.setattr(wheel_lockstep, "replay_posterior", counting)
    for every, expected in ((1, 5), (2, 3), (10, 1)):  # phases 0-4: every phase, 0/2/4, 0
        calls.clear()
        run_bandit(BanditConfig(**_SHORT, reselect_every=every), rng=11)
        assert len(calls) == expected


def test_realised_regret_does_not_move_the_agent():
    base = run_bandit(BanditConfig(**_SHORT), rng=4)
    realised = run_bandit(BanditConfig(**_SHORT, regret="realised"), rng=4)
    np.testing.assert_array_equal(base.arms, realised.arms)
    # missed annulus rounds cost 49 (+ noise of sd 0.01·√2); elsewhere only noise
    hit = base.regret > 0
    np.testing.assert_allclose(realised.regret[hit], 49.0, atol=0.1)
    assert np.all(np.abs(realised.regret[~hit]) < 0.1)


def test_readings_parse_and_bad_grid_points_are_refused():
    assert wr.parse_reading("default") == {}
    assert wr.parse_reading("variant=riquelme+reselect_every=10") == {
        "variant": "riquelme",
        "reselect_every": 10,
    }
    point = {"reading": "default", "agent": "gradient_laplace-k500", "horizon": 100}
    wr.check_params({**point, "delta": 0.95})
    for reading in wr.READING_GRID:
        wr.check_params({**point, "delta": 0.95, "reading": reading})
    for bad, match in [
        ({"reading": "thompson_noise=zero"}, "thompson_noise"),
        ({"reading": "learning_rate=1"}, "reading field"),
        ({"reading": "network=reinit+network=reinit"}, "distinct"),
        ({"reading": "reselect_every=often"}, "reselect_every"),
        ({"reading": "variant=wheel"}, "variant"),
        ({"agent": "greedy_laplace"}, "size"),
        ({"horizon": 10}, "horizon"),
        ({"delta": 1.0}, "delta"),
    ]:
        with pytest.raises(ValueError, match=match):
            wr.check_params({**point, "delta": 0.95, **bad})
    with pytest.raises(TypeError, match="reading"):
        wr.parse_reading(3)


def _rows(reading: str, regrets: dict[str, tuple[float, float]], horizon=16000) -> list:
    """Summary rows of final regret: agent → (mean, s.e.) over 3 runs."""
    return [
        SummaryRow(
            params={"reading": reading, "agent": a, "horizon": horizon, "delta": 0.95},
            metric="regret",
            n=3,
            mean=m,
            se=se,
            low=m - 1.96 * se,
            high=m + 1.96 * se,
            interval="normal",
        )
        for a, (m, se) in regrets.items()
    ]


def test_table_ordering_on_hand_made_rows():
    table = {a: (v, 100.0) for a, v in wr.TABLES[0.95].items() if a in wr.AGENTS}
    order = wr.table_ordering({a: (m, 1.96 * se) for a, (m, se) in table.items()})
    assert order == (True, True)  # Table 1 itself: 8,212 and 8,617 vs ≥ 30,266
    # Last-k-500 between the leaders: the means fail
    swapped = {**table, "last_k-k500": (8400.0, 100.0)}
    assert wr.table_ordering({a: (m, 1.96 * s) for a, (m, s) in swapped.items()}) == (
        False,
        False,
    )
    # means ordered but the intervals overlap: 8,617 + 196 > 8,700 − 196
    close = {**table, "map": (8700.0, 100.0)}
    assert wr.table_ordering({a: (m, 1.96 * s) for a, (m, s) in close.items()}) == (
        True,
        False,
    )
    assert wr.table_ordering({"map": (1.0, 0.1)}) is None
    text = wr.report(_rows("default", table) + _rows("network=reinit", swapped))
    assert "reading default:" in text and "reading network=reinit:" in text
    first, second = text.split("reading network=reinit:")
    assert "means hold, non-overlapping intervals hold" in first
    assert "means fail, non-overlapping intervals fail" in second


def test_table_distance_scales_the_table_to_the_horizon():
    table = wr.TABLES[0.95]
    at_paper = {a: (table[a], 0.0) for a in wr.AGENTS}
    assert wr.table_distance(at_paper, 0.95, 16000) == pytest.approx((0.0, 1.0))
    # a tenth of the table's regret at an eighth of its horizon: ratio 0.8 for every agent
    eighth = {a: (table[a] / 10, 0.0) for a in wr.AGENTS}
    dist, ratio = wr.table_distance(eighth, 0.95, 2000)
    assert ratio == pytest.approx(0.8) and dist == pytest.approx(abs(np.log(0.8)))
    # one agent 4x above, one 4x below the table: distance log 4, geometric ratio 1
    mixed = {"map": (4 * table["map"], 0.0), "neural_linear": (table["neural_linear"] / 4, 0)}
    assert wr.table_distance(mixed, 0.95, 16000) == pytest.approx((np.log(4), 1.0))
    assert wr.table_distance({"map": (0.0, 0.0)}, 0.95, 16000) is None
