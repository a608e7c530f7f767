"""The Table 1 margins and the printing standard error of the surrogate-NTK checks."""

from __future__ import annotations

import math

import pytest

from laplace_lab.paper_checks.surrogate_ntk_lla import digits, table1
from laplace_lab.paper_checks.verification import Status, decisions


def test_margins_are_half_the_gap_to_the_degraded_row():
    # Table 1: MAP 91.01 / 0.2539 / 0.010, 'LLA' 90.92 / 0.2714 / 0.023
    assert table1.MARGIN["ACC"] == pytest.approx(0.045)
    assert table1.MARGIN["NLL"] == pytest.approx(0.00875)
    assert table1.MARGIN["ECE"] == pytest.approx(0.0065)
    assert digits.DELTA["ACC"] == pytest.approx(0.00045)  # a fraction on the substitute


def test_printed_difference_has_the_rounding_standard_error():
    t = table1.printed("a − b", 0.821, 0.789, 1e-3)
    assert t.mean == pytest.approx(0.032)
    assert t.se == pytest.approx(1e-3 / math.sqrt(6.0))  # two uniform errors of var unit²/12
    assert t.n == 0


def test_a_difference_within_rounding_of_its_margin_decides_nothing():
    # ScaLLA biased loses 0.04 accuracy points against a 0.045-point margin
    t = table1.printed("ACC", 90.99, 91.03, 0.01, threshold=-table1.MARGIN["ACC"])
    assert decisions.superiority(t).status is Status.INCONCLUSIVE
    t = table1.printed("ACC", 90.50, 91.03, 0.01, threshold=-table1.MARGIN["ACC"])
    assert decisions.superiority(t).status is Status.REFUTED


@pytest.mark.parametrize(
    ("metric", "a", "b"),
    [
        ("NLL", 0.2528, 0.2539),  # ScaLLA against the MAP: inside
        ("NLL", 0.2539 + 0.00875, 0.2539),  # on the margin
        ("NLL", 0.2700, 0.2539),  # beyond
        ("ECE", 0.012, 0.005),
        ("ACC", 90.99, 91.03),  # a lower accuracy is the loss
        ("ACC", 90.50, 91.03),
    ],
)
def test_a_loss_in_margins_decides_as_the_shifted_one_sided_test(metric, a, b):
    # non-inferiority of a − b against δ, in units of δ, is the one-sided test against δ
    i = table1.NAMES.index(metric)
    worse = table1.WORSE[metric]
    in_margins = decisions.equivalence(
        table1.loss(metric, a, b, metric), margin=1.0, source="test", side=-1
    )
    shifted = decisions.superiority(
        table1.printed(
            metric, a, b, table1.PRINTED[i], threshold=worse * table1.MARGIN[metric], side=-worse
        )
    )
    assert in_margins.status is shifted.status
    assert table1.loss(metric, a, b, metric).mean == pytest.approx(
        worse * (a - b) / table1.MARGIN[metric]
    )
