"""Replicated statistics against thresholds: t intervals, sequential looks and the
conjunction of checks."""

import math

import numpy as np
import pytest

from laplace_lab.paper_checks.verification.replicates import (
    Check,
    conjunction,
    design_text,
    estimate,
    look_level,
    sequential,
)


def test_estimate_is_the_student_t_interval():
    from scipy import stats

    x = [0.1, 0.4, 0.2, 0.5]
    est = estimate(x, 0.0)
    half = stats.t.ppf(0.975, 3) * np.std(x, ddof=1) / 2
    assert est.mean == pytest.approx(0.3)
    assert (est.low, est.high) == pytest.approx((0.3 - half, 0.3 + half))
    assert est.side == +1 and estimate(x, 0.3).side == 0 and estimate(x, 1.0).side == -1
    assert math.isinf(estimate([1.0], 0.0).half_width)


def test_sequential_stops_once_the_interval_excludes_the_threshold():
    values = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95]
    drawn = []

    def draw(i):
        drawn.append(i)
        return values[i]

    est = sequential(draw, 0.0, looks=(3, 4, 5, 6))
    assert est.n == 3 and drawn == [0, 1, 2] and est.side == +1
    # Each of the 4 looks at the Bonferroni level 1 − 0.05/4.
    assert est.level == pytest.approx(1 - 0.05 / 4)


def test_sequential_draws_only_up_to_the_next_look():
    # values near 0 until replicate 4, then near 1: undecided at n = 2, 4 and 8, decided at 16
    values = [0.01, -0.01, 0.02, -0.02] + [1.0, 1.1] * 20
    drawn = []

    def draw(i):
        drawn.append(i)
        return values[i]

    est = sequential(draw, 0.0, looks=(2, 4, 8, 16, 32))
    assert est.n == 16 and drawn == list(range(16)) and est.side == +1
    assert est.level == pytest.approx(look_level((2, 4, 8, 16, 32))) == pytest.approx(0.99)
    text = design_text((2, 4, 8, 16, 32))
    assert "n = 2, 4, 8, 16, 32" in text and "99%" in text


@pytest.mark.parametrize("looks", [(), (1, 3), (3, 3), (5, 4)])
def test_looks_must_be_increasing_counts_of_at_least_two(looks):
    with pytest.raises(ValueError, match="looks must be increasing"):
        sequential(lambda i: 0.0, 0.0, looks=looks)


def test_sequential_stops_at_the_cap_when_the_threshold_stays_inside():
    values = [1.0, -1.0, 0.5, -0.5, 0.2]
    est = sequential(lambda i: values[i], 0.0, looks=(3, 4, 5))
    assert est.n == 5 and est.side == 0


def test_conjunction_stops_at_the_first_check_that_fails():
    ran = []

    def check(label, value, side):
        def draw(i):
            ran.append(label)
            return value + 0.01 * (-1) ** i

        return Check(label, draw, 0.0, side)

    outcome, results = conjunction(
        [check("a", 1.0, +1), check("b", 1.0, -1), check("c", 1.0, +1)], looks=(3, 4)
    )
    assert outcome == "fails" and [r.check.label for r in results] == ["a", "b"]
    assert "c" not in ran and results[1].outcome == "fails"
    outcome, results = conjunction([check("a", 1.0, +1)], looks=(3, 4))
    assert outcome == "holds"
