"""Verdict logic of the Wheel Bandit table claims on hand-built regrets (no bandit runs)."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.registry import Context, Status
from laplace_lab.paper_checks.subnetwork_laplace_optimality import bandit


def _fake_runs(final: dict[str, list[float]], horizon: int):
    def runs(delta: float, full: bool, seed: int) -> dict[str, object]:
        traces = {a: np.linspace(0.0, np.mean(v), 10) for a, v in final.items()}
        return {"horizon": horizon, "seeds": 3, "final": final, "traces": traces, "s": 60.0}

    return runs


def _table2_final(k500: float, baseline: float) -> dict[str, list[float]]:
    from laplace_lab.studies.catalog.wheel_bandit import agents

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
