"""The Table 1 margins and the printing standard error of the surrogate-NTK checks."""

from __future__ import annotations

import pytest

from laplace_lab.paper_checks.surrogate_ntk_lla import digits, table1
from laplace_lab.paper_checks.verification import Status, decisions


def test_margins_are_half_the_gap_to_the_degraded_row():
    # Table 1: MAP 91.01 / 0.2539 / 0.010, 'LLA' 90.92 / 0.2714 / 0.023
    assert table1.MARGIN["ACC"] == pytest.approx(0.045)
    assert table1.MARGIN["NLL"] == pytest.approx(0.00875)
    assert table1.MARGIN["ECE"] == pytest.approx(0.0065)
    assert digits.DELTA["ACC"] == pytest.approx(0.00045)  # a fraction on the substitute


def test_printed_difference_has_the_rounding_slack():
    t = table1.printed("a − b", 0.821, 0.789, 1e-3)
    assert t.difference == pytest.approx(0.032)
    assert t.slack == pytest.approx(1e-3)  # two numbers within half a unit each
    assert t.holds and not t.fails


def test_a_difference_within_rounding_of_its_margin_decides_nothing():
    # ScaLLA biased loses 0.04 accuracy points against a 0.045-point margin
    t = table1.printed("ACC", 90.99, 91.03, 0.01, threshold=-table1.MARGIN["ACC"])
    assert decisions.as_printed(t).status is Status.INCONCLUSIVE
    t = table1.printed("ACC", 90.50, 91.03, 0.01, threshold=-table1.MARGIN["ACC"])
    assert decisions.as_printed(t).status is Status.REFUTED


@pytest.mark.parametrize(
    ("metric", "a", "b", "status"),
    [
        ("NLL", 0.2528, 0.2539, Status.CONFIRMED),  # ScaLLA against the MAP: inside
        ("NLL", 0.2539 + 0.00875, 0.2539, Status.INCONCLUSIVE),  # on the margin
        ("NLL", 0.2700, 0.2539, Status.REFUTED),  # beyond
        ("ECE", 0.012, 0.005, Status.INCONCLUSIVE),  # 0.007 ± 0.001 against 0.0065: a tie
        ("ACC", 90.99, 91.03, Status.INCONCLUSIVE),  # a 0.04 ± 0.01 loss against 0.045
        ("ACC", 90.50, 91.03, Status.REFUTED),
    ],
)
def test_a_loss_in_margins_is_the_printed_difference_against_its_margin(metric, a, b, status):
    i = table1.NAMES.index(metric)
    worse = table1.WORSE[metric]
    loss = table1.loss(metric, a, b, metric)
    assert loss.difference == pytest.approx(worse * (a - b) / table1.MARGIN[metric])
    assert loss.slack == pytest.approx(table1.PRINTED[i] / table1.MARGIN[metric])
    assert decisions.as_printed(loss).status is status
