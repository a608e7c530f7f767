"""Summaries: Wilson and normal intervals against their closed forms; rate fits."""

from __future__ import annotations

import math

import pytest

from laplace_lab.studies.store import Row
from laplace_lab.studies.summary import SummaryRow, fit_rates, summarise
from tests.studies.toy import TOY


def _rows(values, metric="covered", params=None):
    params = params or {"n": 100, "scale": 1.0, "pause": 0.0}
    return [Row(dict(params), i, {metric: v}, 0.0) for i, v in enumerate(values)]


def test_wilson_interval_matches_its_closed_form():
    values = [1.0] * 37 + [0.0] * 3
    (s,) = summarise(TOY, _rows(values))
    n, phat, z = 40, 37 / 40, 1.959963984540054
    centre = (phat + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    assert s.interval == "wilson" and s.mean == phat
    assert s.low == pytest.approx(centre - half, rel=1e-12)
    assert s.high == pytest.approx(centre + half, rel=1e-12)


def test_all_successes_give_a_wilson_interval_below_one():
    (s,) = summarise(TOY, _rows([1.0] * 60))
    assert s.high == pytest.approx(1.0) and s.low == pytest.approx(
        60 / (60 + 1.959963984540054**2)
    )


def test_normal_interval_is_mean_plus_minus_z_se():
    values = [1.0, 2.0, 4.0, 8.0]
    (s,) = summarise(TOY, _rows(values, metric="error"))
    mean = 3.75
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / 3 / 4)
    assert (s.mean, s.interval) == (mean, "normal")
    assert s.se == pytest.approx(se, rel=1e-14)
    assert s.low == pytest.approx(mean - 1.959963984540054 * se, rel=1e-12)


def test_bad_probabilities_and_confidence_are_refused():
    with pytest.raises(ValueError, match=r"'covered' .* declared a probability"):
        summarise(TOY, _rows([1.0, 0.5]))
    with pytest.raises(ValueError, match="confidence must be in"):
        summarise(TOY, _rows([1.0]), confidence=1.5)


def test_grid_points_are_ordered_numerically():
    rows = _rows([0.0], params={"n": 1000, "scale": 1.0, "pause": 0.0}) + _rows(
        [1.0], params={"n": 200, "scale": 1.0, "pause": 0.0}
    )
    assert [s.params["n"] for s in summarise(TOY, rows)] == [200, 1000]


def test_fit_rates_recovers_an_exact_power_law_and_drops_the_floor():
    summary = [
        SummaryRow({"N": n, "k": k}, "err", 10, 3.0 * k * n**-0.7, 0.0, 0.0, 0.0, "normal")
        for n in (10, 100, 1000, 10_000)
        for k in (1, 2)
    ]
    summary.append(SummaryRow({"N": 10**5, "k": 1}, "err", 10, 1e-30, 0.0, 0.0, 0.0, "normal"))
    fits = fit_rates(summary, "err", x="N", floor=1e-20)
    assert set(fits) == {(("k", 1),), (("k", 2),)}
    for fit in fits.values():
        assert fit.slope == pytest.approx(-0.7, abs=1e-12) and fit.n_points == 4
