"""theory.rates.fit_rate: OLS of log cost on log size against closed forms and scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from laplace_lab.theory.rates import fit_rate


def test_exact_power_law_has_its_exponent_and_a_zero_width_interval():
    x = np.array([3.0, 6.0, 12.0, 24.0, 48.0])
    fit = fit_rate(x, 7.0 * x**2.5)
    assert fit.slope == pytest.approx(2.5, abs=1e-12)
    assert fit.ci_high - fit.ci_low == pytest.approx(0.0, abs=1e-9)
    assert math.exp(fit.intercept) == pytest.approx(7.0, rel=1e-12)


def test_slope_and_interval_by_hand():
    # log x = 0, 1, 2 and log y = 0, 1, 3: slope 3/2, intercept −1/6, RSS = 1/6 on 1 d.f.,
    # SE = sqrt(RSS / Σ(dx)²) = sqrt(1/12), t_{0.975, 1} = 12.7062047361747.
    fit = fit_rate(np.exp([0.0, 1.0, 2.0]), np.exp([0.0, 1.0, 3.0]))
    half = 12.7062047361747 * math.sqrt(1 / 12)
    assert fit.slope == pytest.approx(1.5, abs=1e-12)
    assert (fit.ci_low, fit.ci_high) == pytest.approx((1.5 - half, 1.5 + half), abs=1e-9)
    assert math.exp(fit.intercept) == pytest.approx(math.exp(-1 / 6), rel=1e-12)


def test_slope_and_interval_match_scipy_linregress():
    rng = np.random.default_rng(3)
    x = 2.0 ** np.arange(2, 9)
    y = x**1.7 * np.exp(0.2 * rng.standard_normal(x.size))
    ref = stats.linregress(np.log(x), np.log(y))
    fit = fit_rate(x, y, level=0.9)
    half = stats.t.ppf(0.95, x.size - 2) * ref.stderr
    assert fit.slope == pytest.approx(ref.slope, abs=1e-12)
    assert (fit.ci_low, fit.ci_high) == pytest.approx((ref.slope - half, ref.slope + half))


@pytest.mark.parametrize(
    ("sizes", "costs", "kwargs", "name"),
    [
        ([1, 2, 4], [1, 2, 3, 4], {}, "equal length"),
        ([1, 2], [1, 2], {}, "at least 3 distinct"),
        ([2, 2, 4], [1, 2, 3], {}, "at least 3 distinct"),
        ([1, 2, 4], [1, 0, 3], {}, "error must be positive"),
        ([1, np.nan, 4], [1, 2, 3], {}, "n must be positive"),
        ([1, 2, 4], [1, 2, 3], {"level": 1.0}, "level"),
    ],
)
def test_fit_rate_rejects_bad_input(sizes, costs, kwargs, name):
    with pytest.raises(ValueError, match=name):
        fit_rate(sizes, costs, **kwargs)


def test_constant_error_has_slope_zero_and_r_squared_one():
    with np.errstate(all="raise"):
        fit = fit_rate([10.0, 100.0, 1000.0], [2.0, 2.0, 2.0])
    assert fit.slope == pytest.approx(0.0, abs=1e-12)
    assert fit.r_squared == 1.0
