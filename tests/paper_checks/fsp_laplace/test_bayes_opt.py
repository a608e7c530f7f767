"""The decisions of the FSP-Laplace Bayesian-optimisation claims, on hand-made scores."""

from __future__ import annotations

from laplace_lab.paper_checks.fsp_laplace.bayes_opt import (
    RECORDED,
    beats_laplace,
    comparable,
    comparable_to_gp,
)
from laplace_lab.paper_checks.verification import load_recorded


def _scores(fsp_final, other_final, other="Laplace", fsp_mean=None, other_mean=None):
    return {
        "task": {
            "FSP-Laplace": {"final": fsp_final, "mean": fsp_mean or fsp_final},
            other: {"final": other_final, "mean": other_mean or other_final},
        }
    }


def test_comparable_is_the_standard_error_overlap_rule():
    # Means 1.0 and 0.5, s.e. 0.115 and 0.058: 0.5 apart > 0.173 → not comparable.
    assert not comparable([1.2, 1.0, 0.8], [0.6, 0.5, 0.4])
    # Means 0.6 and 0.5 with the same s.e.: 0.1 ≤ 0.173 → comparable.
    assert comparable([0.8, 0.6, 0.4], [0.6, 0.5, 0.4])
    # A lower FSP regret is always comparable (better).
    assert comparable([0.1, 0.1, 0.1], [0.6, 0.5, 0.4])


def test_beats_laplace_needs_a_paired_difference_above_one_standard_error():
    # Paired differences 0.3, 0.2, 0.1: mean 0.2 > s.e. 0.058.
    ok, rows, measured = beats_laplace(_scores([0.1, 0.2, 0.3], [0.4, 0.4, 0.4]))
    assert ok and measured["task final"] == 0.2
    # Paired differences 0.6, −0.3, 0.0: mean 0.1 < s.e. 0.26.
    ok, rows, _ = beats_laplace(_scores([0.1, 0.7, 0.4], [0.7, 0.4, 0.4]))
    assert not ok and rows[0].endswith("✗")


def test_comparable_to_gp_needs_the_final_and_the_mean_regret():
    data = _scores([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], "GP", [2.0, 2.1, 1.9], [1.0, 1.1, 0.9])
    ok, rows, _ = comparable_to_gp(data)
    assert not ok and "✗" not in rows[0] and rows[1].endswith("(intervals apart)")


def test_recorded_full_run_decides_as_reported():
    data = load_recorded(RECORDED).data["scores"]
    assert set(data) == {"branin", "hartmann3"}
    assert all(len(per["GP"]["final"]) == 5 for per in data.values())
    assert beats_laplace(data)[0]
    assert not comparable_to_gp(data)[0]
