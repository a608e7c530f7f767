"""regret_table (the recorded form of Wheel-bandit study runs) and the order records are read."""

from __future__ import annotations

import math

import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality import _wheel
from laplace_lab.studies.store import Row


def _row(
    agent: str, rep: int, regret: float, delta: float = 0.95, horizon: int = 16000, s: float = 1.0
) -> Row:
    params = {"agent": agent, "delta": delta, "horizon": horizon}
    return Row(params, rep, {"regret": regret, "seconds": 0.0}, s)  # the batch share counts


def test_regret_table_means_half_widths_and_seed_order():
    rows = [
        _row("map", 1, 300.0),
        _row("map", 0, 100.0),
        _row("map", 2, 200.0),
        _row("gradient_laplace-k500", 2, 90.0),
        _row("gradient_laplace-k500", 0, 50.0),
        _row("gradient_laplace-k500", 1, 70.0, s=4.0),
        _row("map", 0, 9999.0, delta=0.9),  # another table: left out
    ]
    table = _wheel.regret_table(rows, 0.95, 16000)
    # map: mean 200, sd 100 → 1.96 · 100/√3 = 113.2; gradient: mean 70, sd 20 → 22.6
    assert table["final_regret"] == {"gradient_laplace-k500": [70.0, 22.6], "map": [200.0, 113.2]}
    assert list(table["final_regret"]) == ["gradient_laplace-k500", "map"]  # best first
    assert table["per_seed"]["map"] == [100.0, 300.0, 200.0]  # by replication index
    assert (table["seeds"], table["horizon"], table["delta"]) == (3, 16000, 0.95)
    assert table["wall_seconds_per_run"] == {"gradient_laplace-k500": 2.0, "map": 1.0}


def test_regret_table_refuses_unequal_seed_counts_and_empty_selection():
    rows = [_row("map", 0, 1.0), _row("map", 1, 2.0), _row("last_k-k500", 0, 3.0)]
    with pytest.raises(ValueError, match="different numbers of seeds"):
        _wheel.regret_table(rows, 0.95, 16000)
    with pytest.raises(ValueError, match=r"delta=0\.9, horizon=16000"):
        _wheel.regret_table(rows, 0.9, 16000)


def test_one_seed_has_no_interval():
    table = _wheel.regret_table([_row("map", 0, 5.0)], 0.95, 16000)
    assert table["final_regret"]["map"][0] == 5.0 and math.isinf(table["final_regret"]["map"][1])


def test_records_at_one_horizon_are_read_most_seeds_first():
    records = _wheel.bandit_records(0.95)
    keys = [(int(r.data["horizon"]), int(r.data["seeds"])) for r in records]
    assert keys == sorted(keys, key=lambda hs: (-hs[0], -hs[1]))
