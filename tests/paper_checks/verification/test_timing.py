"""A fitted time exponent confirms, refutes only when its whole interval misses the band,
and is NOT_REPRODUCIBLE_HERE when its interval is too wide or reaches across."""

from __future__ import annotations

import math

import pytest

from laplace_lab.paper_checks.verification.registry import Status
from laplace_lab.paper_checks.verification.timing import MAX_EXPONENT_CI, exponent_status
from laplace_lab.theory.rates import RateFit


def _fit(slope: float, low: float, high: float) -> RateFit:
    return RateFit(slope, low, high, 0.0, 1.0, 4)


@pytest.mark.parametrize(
    ("fit", "band", "status"),
    [
        (_fit(1.05, 0.95, 1.15), (0.7, 1.3), Status.CONFIRMED),
        (_fit(2.0, 1.9, 2.1), (0.7, 1.3), Status.REFUTED),  # the whole interval above
        (_fit(0.62, 0.30, 0.90), (0.7, 1.3), Status.NOT_REPRODUCIBLE_HERE),  # reaches the band
        (_fit(1.0, 0.2, 1.8), (0.7, 1.3), Status.NOT_REPRODUCIBLE_HERE),  # too wide
        (_fit(0.92, 0.82, 1.02), (-math.inf, 0.7), Status.REFUTED),  # "sub-linear" refuted
        (_fit(0.05, 0.0, 0.1), (-math.inf, 0.7), Status.CONFIRMED),
    ],
)
def test_exponent_status(fit, band, status):
    got, why = exponent_status(fit, *band)
    assert got is status
    assert bool(why) is (status is Status.NOT_REPRODUCIBLE_HERE)
    if why:  # the clock is named first: a claim's one-line reason (160 characters) keeps it
        assert why.index("clock") < 40, why


def test_the_width_rule_is_the_documented_one():
    edge = _fit(1.0, 1.0 - MAX_EXPONENT_CI / 2, 1.0 + MAX_EXPONENT_CI / 2)
    assert exponent_status(edge, 0.7, 1.3)[0] is Status.CONFIRMED
    nan = _fit(math.nan, math.nan, math.nan)
    assert exponent_status(nan, 0.7, 1.3)[0] is Status.NOT_REPRODUCIBLE_HERE
