"""The replicated decision of the FSP-Laplace claims: t intervals, sequential looks and the
conjunction of checks."""

import math

import numpy as np
import pytest

from laplace_lab.paper_checks.fsp_laplace._replicates import (
    Check,
    conjunction,
    estimate,
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

    est = sequential(draw, 0.0, first=3, cap=6)
    assert est.n == 3 and drawn == [0, 1, 2] and est.side == +1
    # Each of the cap − first + 1 = 4 looks at the Bonferroni level 1 − 0.05/4.
    assert est.level == pytest.approx(1 - 0.05 / 4)


def test_sequential_stops_at_the_cap_when_the_threshold_stays_inside():
    values = [1.0, -1.0, 0.5, -0.5, 0.2]
    est = sequential(lambda i: values[i], 0.0, first=3, cap=5)
    assert est.n == 5 and est.side == 0


def test_conjunction_stops_at_the_first_check_that_fails():
    ran = []

    def check(label, value, side):
        def draw(i):
            ran.append(label)
            return value + 0.01 * (-1) ** i

        return Check(label, draw, 0.0, side)

    outcome, results = conjunction(
        [check("a", 1.0, +1), check("b", 1.0, -1), check("c", 1.0, +1)], first=3, cap=4
    )
    assert outcome == "fails" and [r.check.label for r in results] == ["a", "b"]
    assert "c" not in ran and results[1].outcome == "fails"
    outcome, results = conjunction([check("a", 1.0, +1)], first=3, cap=4)
    assert outcome == "holds"
