"""The margin account of the FSP-Laplace out-of-distribution claim (Table C.1)."""

import pytest

from laplace_lab.paper_checks.fsp_laplace import uci
from laplace_lab.paper_checks.verification.replicates import Check, Estimate, Result


def _result(low: float, high: float) -> Result:
    # A two-value estimate whose 95% t interval is [low, high]: mean ± 12.706·|a − b|/2.
    mean, half = (low + high) / 2, (high - low) / 2
    d = half / 12.706204736174698
    est = Estimate((mean - d, mean + d), -uci.OOD_MARGIN, 0.95)
    assert est.low == pytest.approx(low) and est.high == pytest.approx(high)
    return Result(Check("set: gap", lambda i: 0.0, -uci.OOD_MARGIN, +1), est)


def test_margin_range_refutes_below_the_worst_upper_end_and_confirms_above_the_lower():
    # Boston [−0.08, −0.01]: REFUTED below 0.01, CONFIRMED from 0.08; concrete [−0.01, 0.02].
    lo, hi = uci.margin_range((_result(-0.08, -0.01), _result(-0.01, 0.02)))
    assert lo == pytest.approx(0.01) and hi == pytest.approx(0.08)


def test_margin_range_is_zero_when_every_interval_lies_above_zero():
    assert uci.margin_range((_result(0.01, 0.05),)) == (0.0, 0.0)


def test_paper_gaps_are_table_c1():
    # Table C.1 (arXiv:2407.13711): mean FSP − Laplace gap over the 11 sets is +0.002; wine,
    # protein and denmark lie more than 0.02 below.
    text = uci._paper_gaps()
    assert "(mean +0.002)" in text
    assert "3 of 11 sets (protein, wine, denmark)" in text
