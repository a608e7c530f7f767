"""Divergences against direct quadrature / summation, the predictive containers against
scipy.stats, and the OLS rate fit against exact power laws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from laplace_lab.theory import (
    DiscretePredictive,
    QuadraturePredictive,
    divergences,
    fit_rate,
    kl_divergence,
    total_variation,
    wasserstein1,
)


def _kinks(g, lo=-60.0, hi=60.0):
    """Sign changes of g on a fine grid, refined by brentq (where |g| has kinks)."""
    y = np.linspace(lo, hi, 24001)
    v = g(y)
    idx = np.nonzero(np.sign(v[:-1]) * np.sign(v[1:]) < 0)[0]
    return [optimize.brentq(lambda t: float(g(t)), y[i], y[i + 1], xtol=1e-14) for i in idx]


def _abs_integral(g):
    """∫_ℝ |g|: [-60, 60] split at the kinks, plus the two tails."""

    def g1(y):
        return abs(float(g(y)))

    mid = integrate.quad(g1, -60, 60, points=_kinks(g) or None, epsabs=0, epsrel=1e-12, limit=400)
    tails = [
        integrate.quad(g1, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
        for a, b in ((-np.inf, -60.0), (60.0, np.inf))
    ]
    return mid[0] + sum(tails)


def _direct_continuous(p, q):
    def kl_integrand(y):
        return p.pdf(y) * (p.logpdf(y) - q.logpdf(y))

    kl = integrate.quad(kl_integrand, -np.inf, np.inf, epsabs=0, epsrel=1e-12, limit=200)[0]
    tv = 0.5 * _abs_integral(lambda y: p.pdf(y) - q.pdf(y))
    w1 = _abs_integral(lambda y: p.cdf(y) - q.cdf(y))
    return kl, tv, w1


@pytest.mark.parametrize(
    ("m1", "s1", "m2", "s2"), [(0, 1, 0.3, 1.4), (1, 2, 1, 2.0), (0, 1, 0.5, 1.0), (-2, 0.5, 1, 3)]
)
def test_normal_closed_forms_equal_quadrature(m1, s1, m2, s2):
    p, q = stats.norm(m1, s1), stats.norm(m2, s2)
    kl, tv, w1 = _direct_continuous(p, q)
    assert kl_divergence(p, q) == pytest.approx(kl, rel=1e-9, abs=1e-14)
    assert total_variation(p, q) == pytest.approx(tv, rel=1e-8, abs=1e-14)
    assert wasserstein1(p, q) == pytest.approx(w1, rel=1e-8, abs=1e-14)


def test_tiny_normal_divergences_keep_their_relative_accuracy():
    # KL(N(0, 1+ε) ‖ N(0, 1)) = (ε − log(1+ε))/2 ≈ ε²/4 for ε = 1e-7: no cancellation
    eps = 1e-7
    p, q = stats.norm(0, np.sqrt(1 + eps)), stats.norm(0, 1)
    assert kl_divergence(p, q) == pytest.approx((eps - np.log1p(eps)) / 2, rel=1e-8)
    assert kl_divergence(p, q) == pytest.approx(eps**2 / 4, rel=1e-6)
    # W1 of a scale change = |Δσ|·√(2/π)
    assert wasserstein1(p, q) == pytest.approx(
        (np.sqrt(1 + eps) - 1) * np.sqrt(2 / np.pi), rel=1e-8
    )


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")  # the reference's tails
def test_generic_continuous_path_matches_quadrature():
    p = stats.t(5, 0.2, 1.1)
    q = stats.t(8, 0.0, 1.0)
    kl, tv, w1 = _direct_continuous(p, q)
    d = divergences(p, q)
    assert d.kl_forward == pytest.approx(kl, rel=1e-7)
    assert d.total_variation == pytest.approx(tv, rel=1e-7)
    assert d.wasserstein1 == pytest.approx(w1, rel=1e-6)
    assert d.kl_reverse == pytest.approx(_direct_continuous(q, p)[0], rel=1e-7)


def test_discrete_divergences_equal_direct_sums():
    p, q = stats.poisson(3.0), stats.nbinom(12, 0.8)
    k = np.arange(0, 200)
    pp, qq = p.pmf(k), q.pmf(k)
    d = divergences(p, q)
    assert d.kl_forward == pytest.approx(np.sum(pp * np.log(pp / qq)), rel=1e-10)
    assert d.kl_reverse == pytest.approx(np.sum(qq * np.log(qq / pp)), rel=1e-10)
    assert d.total_variation == pytest.approx(0.5 * np.sum(np.abs(pp - qq)), rel=1e-10)
    assert d.wasserstein1 == pytest.approx(np.sum(np.abs(np.cumsum(pp - qq))), rel=1e-10)


def test_divergence_of_a_distribution_with_itself_is_zero_and_types_must_match():
    p = stats.poisson(2.5)
    assert divergences(p, p) == (0.0, 0.0, 0.0, 0.0)
    with pytest.raises(TypeError, match="both be discrete"):
        kl_divergence(p, stats.norm())


def test_discrete_predictive_matches_scipy_poisson():
    lam = 4.2
    d = DiscretePredictive(lambda k: stats.poisson.logpmf(k, lam) + 17.0)  # any constant
    k = np.arange(0, 25)
    np.testing.assert_allclose(d.pmf(k), stats.poisson.pmf(k, lam), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(k + 0.5), stats.poisson.cdf(k, lam), rtol=1e-12)
    assert d.mean() == pytest.approx(lam, rel=1e-12)
    assert d.var() == pytest.approx(lam, rel=1e-11)
    assert d.interval(0.9) == stats.poisson(lam).interval(0.9)
    assert float(d.logpmf(-1)) == -np.inf and float(d.logpmf(2.5)) == -np.inf
    with pytest.raises(ValueError, match="confidence"):
        d.interval(1.5)


def test_quadrature_predictive_matches_scipy_t():
    ref = stats.t(4, 1.0, 2.0)
    qp = QuadraturePredictive(lambda y: ref.logpdf(y) - 3.0, loc=0.0, scale=1.0)
    y = np.array([-10.0, 0.0, 1.0, 4.0])
    np.testing.assert_allclose(qp.logpdf(y), ref.logpdf(y), rtol=1e-10)
    np.testing.assert_allclose(qp.cdf(y), ref.cdf(y), rtol=1e-9)
    assert qp.mean() == pytest.approx(1.0, rel=1e-9)
    assert qp.var() == pytest.approx(ref.var(), rel=1e-7)
    np.testing.assert_allclose(qp.interval(0.95), ref.interval(0.95), rtol=1e-9)
    with pytest.raises(ValueError, match="scale"):
        QuadraturePredictive(ref.logpdf, loc=0.0, scale=0.0)


def test_fit_rate_recovers_an_exact_power_law_and_a_noisy_one():
    n = np.array([20, 100, 1e3, 1e4, 1e5, 1e6])
    f = fit_rate(n, 3.0 * n**-1.5)
    assert f.slope == pytest.approx(-1.5, abs=1e-12)
    assert f.intercept == pytest.approx(np.log(3.0), abs=1e-10)
    assert f.r_squared == pytest.approx(1.0)
    noise = np.exp(0.1 * np.random.default_rng(3).standard_normal(n.size))
    g = fit_rate(n, n**-2.0 * noise)
    assert g.contains(-2.0) and g.ci_high - g.ci_low < 0.2


@pytest.mark.parametrize(
    ("n", "err", "match"),
    [
        ([1, 2, 3], [1, 0, 1], "error must be positive"),
        ([1, 2], [1, 1], "at least 3"),
        ([1, 2, 3], [1, 1], "equal length"),
        ([0, 2, 3], [1, 1, 1], "n must be positive"),
    ],
)
def test_fit_rate_bad_input(n, err, match):
    with pytest.raises(ValueError, match=match):
        fit_rate(n, err)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_tv_of_nearly_equal_normals_is_accurate_and_warning_free():
    # reference: 50-digit mpmath, crossing points by bisection, masses by ncdf
    p, q = stats.norm(4.0000000001, 1.0), stats.norm(4.0, 1.0000000001)
    assert total_variation(p, q) == pytest.approx(5.9987167185727468e-11, rel=1e-6)
    # variances equal to 1 ulp, equal means (the exact posterior variant): 0, not NaN
    assert (
        total_variation(stats.norm(4.0, 1.4142135623730951), stats.norm(4.0, 1.4142135623730954))
        < 1e-15
    )


@pytest.mark.parametrize(
    ("p", "q"),
    [
        (stats.norm(0.3, 1.2), stats.norm(-0.1, 0.9)),
        (stats.norm(2.0, 1.0), stats.norm(2.0, 1.0 + 1e-9)),
        (
            DiscretePredictive(lambda k: stats.poisson.logpmf(k, 3.0)),
            DiscretePredictive(lambda k: stats.nbinom.logpmf(k, 12, 0.8)),
        ),
    ],
)
def test_divergences_are_the_four_functions_bit_for_bit(p, q):
    """divergences() evaluates each distribution once; its numbers are the four functions'."""
    d = divergences(p, q)
    assert d.kl_forward == kl_divergence(p, q)
    assert d.kl_reverse == kl_divergence(q, p)
    assert d.total_variation == total_variation(p, q)
    assert d.wasserstein1 == wasserstein1(p, q)
    assert d.kl_forward > 0.0 and d.total_variation > 0.0
