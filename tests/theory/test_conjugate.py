"""Conjugate models against independent references: quadrature of likelihood × prior,
dense Gaussian conditioning, finite differences, numerical optimisation, mpmath."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, stats

from laplace_lab.theory import (
    BayesianLinearRegression,
    NormalInverseGammaRegression,
    NormalNormal,
    PoissonGamma,
)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _hessian_fd(f, theta, h=1e-4):
    """Central second differences of a scalar function (dense reference)."""
    theta = np.asarray(theta, float)
    q = theta.size
    H = np.zeros((q, q))
    E = np.eye(q) * h
    for i in range(q):
        for j in range(q):
            H[i, j] = (
                f(theta + E[i] + E[j])
                - f(theta + E[i] - E[j])
                - f(theta - E[i] + E[j])
                + f(theta - E[i] - E[j])
            ) / (4 * h * h)
    return H


# ----------------------------------------------------------------------- normal–normal
def test_normal_normal_predictive_equals_quadrature_of_likelihood_times_prior(rng):
    m = NormalNormal(prior_mean=4.0, prior_var=1.0, noise_var=2.0)
    x = m.sample_data(7, 3.0, rng=rng)

    def joint(mu, y=None):
        val = np.exp(np.sum(stats.norm.logpdf(x, mu, np.sqrt(2.0))) + stats.norm.logpdf(mu, 4, 1))
        return val if y is None else val * stats.norm.pdf(y, mu, np.sqrt(2.0))

    evidence = integrate.quad(joint, -np.inf, np.inf, epsabs=0)[0]
    for y in (-1.0, 3.3, 8.0):
        ref = integrate.quad(joint, -np.inf, np.inf, args=(y,), epsabs=0)[0] / evidence
        assert m.predictive(x).pdf(y) == pytest.approx(ref, rel=1e-8)
        assert m.log_predictive(x, y) == pytest.approx(np.log(ref), rel=1e-8)
    post_mean = integrate.quad(lambda mu: mu * joint(mu), -np.inf, np.inf, epsabs=0)[0] / evidence
    assert m.posterior(x).mean() == pytest.approx(post_mean, rel=1e-9)


def test_normal_normal_likelihood_fisher_mle_map(rng):
    m = NormalNormal(1.0, 0.5, 3.0)
    x = m.sample_data(40, 2.0, rng=rng)
    mu = 1.7
    assert m.log_likelihood(mu, x) == pytest.approx(
        np.sum(stats.norm.logpdf(x, mu, np.sqrt(3.0))), rel=1e-13
    )
    fd = _hessian_fd(lambda t: m.log_likelihood(t[0], x), [mu])[0, 0]
    assert m.fisher_information(mu, x) == pytest.approx(40 / 3.0, rel=1e-12)  # eq. (33)
    assert -fd == pytest.approx(40 / 3.0, rel=1e-5)
    mle = optimize.minimize_scalar(lambda t: -m.log_likelihood(t, x)).x
    assert m.mle(x) == pytest.approx(mle, abs=1e-6)
    mp = optimize.minimize_scalar(lambda t: -m.log_likelihood(t, x) - m.log_prior(t)).x
    assert m.map(x) == pytest.approx(mp, abs=1e-6)
    assert m.log_prior(mu) == pytest.approx(stats.norm.logpdf(mu, 1.0, np.sqrt(0.5)))


def test_statistics_are_accepted_in_place_of_data(rng):
    m = NormalNormal(0.0, 1.0, 1.0)
    x = m.sample_data(100, 0.3, rng=rng)
    s = m.sufficient_statistics(x)
    assert m.sufficient_statistics(s) is s
    assert m.log_likelihood(0.1, s) == pytest.approx(m.log_likelihood(0.1, x), rel=1e-14)


# ----------------------------------------------------------------------- Poisson–gamma
def test_poisson_gamma_predictive_equals_quadrature_and_nbinom(rng):
    m = PoissonGamma(shape=6.0, rate=2.0)
    x = m.sample_data(9, 3.0, rng=rng)

    def joint(lam, y=None):
        val = np.exp(np.sum(stats.poisson.logpmf(x, lam)) + stats.gamma.logpdf(lam, 6, scale=0.5))
        return val if y is None else val * stats.poisson.pmf(y, lam)

    evidence = integrate.quad(joint, 0, np.inf, epsabs=0)[0]
    for y in (0, 2, 5, 11):
        ref = integrate.quad(joint, 0, np.inf, args=(y,), epsabs=0)[0] / evidence
        assert m.predictive(x).pmf(y) == pytest.approx(ref, rel=1e-8)
        assert m.log_predictive(x, y) == pytest.approx(np.log(ref), rel=1e-8)


def test_poisson_stable_log_predictive_matches_mpmath_at_n_1e6():
    m = PoissonGamma(6.0, 2.0)
    s = m.sufficient_statistics(np.full(10**6, 3.0))
    mpmath.mp.dps = 40
    r, b = mpmath.mpf(6 + 3 * 10**6), mpmath.mpf(2 + 10**6)
    for k in (0, 3, 9):
        ref = (
            mpmath.loggamma(r + k)
            - mpmath.loggamma(r)
            - mpmath.loggamma(k + 1)
            + r * mpmath.log(b / (b + 1))
            - k * mpmath.log(b + 1)
        )
        assert abs(m.log_predictive(s, k) - float(ref)) < 1e-13


def test_poisson_fisher_is_eq35_and_matches_finite_differences(rng):
    m = PoissonGamma(2.0, 1.0)
    x = m.sample_data(30, 4.0, rng=rng)
    lam = 3.5
    assert m.fisher_information(lam, x) == pytest.approx(x.sum() / lam**2, rel=1e-14)
    fd = _hessian_fd(lambda t: m.log_likelihood(t[0], x), [lam])[0, 0]
    assert -fd == pytest.approx(x.sum() / lam**2, rel=1e-5)
    assert m.log_likelihood(lam, x) == pytest.approx(np.sum(stats.poisson.logpmf(x, lam)))
    assert m.mle(x) == pytest.approx(x.mean(), rel=1e-15)
    assert m.map(x) == pytest.approx((2.0 + x.sum() - 1) / (1.0 + 30), rel=1e-14)


# ------------------------------------------------------------- Bayesian linear regression
def test_blr_log_evidence_is_the_gaussian_marginal_of_y(rng):
    d, n = 3, 9
    m0 = np.array([0.5, -1.0, 0.2])
    A = rng.standard_normal((d, d))
    S0 = A @ A.T + np.eye(d)
    m = BayesianLinearRegression(m0, S0, noise_var=0.7)
    X, y = m.sample_data(n, np.array([1.0, 2.0, -0.5]), rng=rng)
    ref = stats.multivariate_normal(X @ m0, 0.7 * np.eye(n) + X @ S0 @ X.T).logpdf(y)
    assert m.log_evidence((X, y)) == pytest.approx(ref, rel=1e-12)
    assert m.log_evidence(m.sufficient_statistics((X, y))) == pytest.approx(ref, rel=1e-12)


def test_blr_predictive_equals_dense_gaussian_conditioning(rng):
    d, n = 3, 12
    m0 = np.array([0.5, -1.0, 0.0])
    A = rng.standard_normal((d, d))
    S0 = A @ A.T + np.eye(d)
    m = BayesianLinearRegression(m0, S0, noise_var=0.7)
    X, y = m.sample_data(n, np.array([1.0, 2.0, -0.5]), rng=rng)
    xs = np.array([0.2, -1.1, 0.4])
    # joint Gaussian of (y, y*) under the prior, then condition on y
    Xa = np.vstack([X, xs])
    mean = Xa @ m0
    cov = Xa @ S0 @ Xa.T + 0.7 * np.eye(n + 1)
    K = cov[n, :n] @ np.linalg.inv(cov[:n, :n])
    ref_mean = mean[n] + K @ (y - mean[:n])
    ref_var = cov[n, n] - K @ cov[:n, n]
    pred = m.predictive((X, y), xs)
    assert pred.mean() == pytest.approx(ref_mean, rel=1e-11)
    assert pred.var() == pytest.approx(ref_var, rel=1e-11)
    assert m.log_predictive((X, y), 0.3, xs) == pytest.approx(pred.logpdf(0.3), rel=1e-12)
    w = rng.standard_normal(d)
    assert m.log_likelihood(w, (X, y)) == pytest.approx(
        np.sum(stats.norm.logpdf(y, X @ w, np.sqrt(0.7))), rel=1e-12
    )
    H = _hessian_fd(lambda t: m.log_likelihood(t, (X, y)), w, h=1e-3)
    np.testing.assert_allclose(m.fisher_information(w, (X, y)), -H, rtol=1e-5)
    np.testing.assert_allclose(m.mle((X, y)), np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-10)
    np.testing.assert_allclose(m.posterior((X, y)).mean, m.map((X, y)), rtol=1e-12)


def test_nig_predictive_equals_quadrature_over_noise_variance(rng):
    n = 8
    m0, V0, a0, b0 = np.array([0.3, -0.2]), np.array([[2.0, 0.3], [0.3, 1.0]]), 3.0, 2.0
    m = NormalInverseGammaRegression(m0, V0, a0, b0)
    X, y = m.sample_data(n, np.array([1.0, -1.0, np.log(0.6)]), rng=rng)
    xs = np.array([0.5, 1.5])
    # p(σ² | y) ∝ N(y; X m0, σ²(I + X V0 Xᵀ)) IG(σ²; a0, b0), then mix the known-σ² predictive
    C = np.eye(n) + X @ V0 @ X.T

    def post_unnorm(s2):
        return np.exp(
            stats.multivariate_normal(X @ m0, s2 * C).logpdf(y)
            + stats.invgamma.logpdf(s2, a0, scale=b0)
        )

    Z = integrate.quad(post_unnorm, 0, np.inf, epsabs=0, limit=200)[0]

    def mixed(s2, yy):
        blr = BayesianLinearRegression(m0, s2 * V0, s2)  # known-noise predictive at σ²
        return post_unnorm(s2) * blr.predictive((X, y), xs).pdf(yy)

    for yy in (-2.0, 0.0, 1.7):
        ref = integrate.quad(mixed, 0, np.inf, args=(yy,), epsabs=0, limit=200)[0] / Z
        assert m.predictive((X, y), xs).pdf(yy) == pytest.approx(ref, rel=1e-7)
    theta = np.array([0.9, -0.8, np.log(0.5)])
    H = _hessian_fd(lambda t: m.log_likelihood(t, (X, y)), theta, h=1e-4)
    np.testing.assert_allclose(m.fisher_information(theta, (X, y)), -H, rtol=1e-5, atol=1e-6)
    Hp = _hessian_fd(lambda t: m.log_prior(t), theta, h=1e-4)
    np.testing.assert_allclose(m._prior_neg_hessian(theta), -Hp, rtol=1e-5, atol=1e-6)
    neg = lambda t: -m.log_likelihood(t, (X, y))  # noqa: E731
    np.testing.assert_allclose(m.mle((X, y)), optimize.minimize(neg, theta).x, atol=1e-5)
    negj = lambda t: -m.log_likelihood(t, (X, y)) - m.log_prior(t)  # noqa: E731
    np.testing.assert_allclose(m.map((X, y)), optimize.minimize(negj, theta).x, atol=1e-5)


def test_nig_log_prior_is_density_of_w_and_log_noise_var():
    m = NormalInverseGammaRegression(np.zeros(1), np.eye(1), 2.5, 1.5)
    # ∫∫ π(w, η) dw dη = 1
    val = integrate.dblquad(
        lambda w, eta: np.exp(m.log_prior(np.array([w, eta]))),
        -12,
        14,
        -np.inf,
        np.inf,
        epsabs=1e-12,
    )[0]
    assert val == pytest.approx(1.0, abs=1e-8)


# ----------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("factory", "match"),
    [
        (lambda: NormalNormal(0.0, 0.0, 1.0), "prior_var"),
        (lambda: NormalNormal(0.0, 1.0, -2.0), "noise_var"),
        (lambda: NormalNormal(np.nan, 1.0, 1.0), "prior_mean"),
        (lambda: PoissonGamma(0.0, 1.0), "shape"),
        (lambda: PoissonGamma(1.0, -1.0), "rate"),
        (lambda: BayesianLinearRegression(np.zeros(2), -np.eye(2), 1.0), "prior_cov"),
        (lambda: BayesianLinearRegression(np.zeros(2), np.eye(2), 0.0), "noise_var"),
        (lambda: NormalInverseGammaRegression(np.zeros(2), np.eye(2), 1.0, 0.0), "rate"),
    ],
)
def test_bad_hyperparameters_raise_naming_the_argument(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


def test_bad_data_raise_naming_the_argument():
    pg = PoissonGamma(6.0, 2.0)
    with pytest.raises(ValueError, match="all counts are zero"):
        pg.mle(np.zeros(5))
    with pytest.raises(ValueError, match=r"data.*non-negative"):
        pg.posterior(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"data.*integer"):
        pg.posterior(np.array([1.0, 2.5]))
    with pytest.raises(ValueError, match="data must not be empty"):
        NormalNormal(0, 1, 1).posterior(np.array([]))
    with pytest.raises(ValueError, match="data must be finite"):
        NormalNormal(0, 1, 1).posterior(np.array([1.0, np.nan]))
    blr = BayesianLinearRegression(np.zeros(2), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="X must have shape"):
        blr.posterior((np.ones((3, 2)), np.ones(4)))
    with pytest.raises(TypeError, match="data must be a tuple"):
        blr.posterior(np.ones(3))
    with pytest.raises(ValueError, match="x_new is required"):
        blr.predictive((np.ones((3, 2)), np.ones(3)))
    with pytest.raises(ValueError, match="XᵀX is singular"):
        blr.mle((np.ones((3, 2)), np.ones(3)))
    with pytest.raises(ValueError, match="x_new must be None"):
        pg.predictive(np.ones(3), x_new=np.ones(2))
    with pytest.raises(TypeError, match="rng is required"):
        pg.sample_data(5, 3.0, rng=None)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        pg.sample_data(0, 3.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="theta must"):
        blr.log_likelihood(np.ones(3), (np.ones((3, 2)), np.ones(3)))


def test_passed_sufficient_statistics_are_validated():
    from laplace_lab.theory.conjugate import NormalStats, PoissonStats

    nn, pg = NormalNormal(4.0, 1.0, 2.0), PoissonGamma(6.0, 2.0)
    bad = [
        (nn, NormalStats(-5.0, 1.0, 0.0), "n must be an integer"),
        (nn, NormalStats(0.0, 1.0, 0.0), "n must be an integer"),
        (nn, NormalStats(2.5, 1.0, 0.0), "n must be an integer"),
        (nn, NormalStats(3.0, float("nan"), 0.0), "mean must be finite"),
        (nn, NormalStats(3.0, 1.0, -1.0), "m2 must be"),
        (pg, PoissonStats(10.0, -3.0, 0.0), "total must be an integer"),
        (pg, PoissonStats(float("nan"), 3.0, 0.0), "n must be finite"),
    ]
    for model, statistics, match in bad:
        with pytest.raises(ValueError, match=match):
            model.predictive(statistics)


def test_parameter_domain_and_degenerate_fits_raise():
    from laplace_lab.theory import NormalInverseGammaRegression

    with pytest.raises(ValueError, match="theta must be positive"):
        PoissonGamma(6.0, 2.0).log_likelihood(-1.0, [1, 2, 3])
    nig = NormalInverseGammaRegression(np.zeros(2), np.eye(2), 2.0, 1.0)
    with pytest.raises(ValueError, match="residual sum of squares"):
        nig.mle((np.eye(2), np.ones(2)))


def test_poisson_predictive_logpmf_is_accurate_at_large_n():
    # scipy's nbinom.logpmf loses ~1e-8 at r ≈ 3e6; the public predictive must not, or
    # divergences of order 1e-25 (SSLA at n = 1e6) come out 1e7 times too large.
    from laplace_lab.theory import divergences, ssla_predictive
    from laplace_lab.theory.conjugate import PoissonStats
    from laplace_lab.theory.ssla_rates import exact_predictive

    m = PoissonGamma(6.0, 2.0)
    s = PoissonStats(1e6, 3e6, 0.0)
    approx = ssla_predictive(m, s, variant="refit")
    public = divergences(approx, m.predictive(s)).kl_forward
    reference = divergences(approx, exact_predictive(m, s)).kl_forward
    assert public == pytest.approx(reference, rel=1e-6)
    assert reference == pytest.approx(1.5754e-25, rel=1e-3)  # 50-digit mpmath value


def test_poisson_predictive_of_array_valued_statistics_is_refused():
    """Its negative-binomial sum is per data set: several at once were divided elementwise
    (a wrong value) or failed to broadcast."""
    from laplace_lab.theory.conjugate import PoissonStats

    s = PoissonStats(np.array([5.0, 6.0]), np.array([10.0, 40.0]), np.array([0.0, 0.0]))
    with pytest.raises(ValueError, match="statistics of one data set"):
        PoissonGamma(2.5, 1.5).log_predictive(s, np.array([2.0, 2.0]))


@pytest.mark.parametrize(("shape", "rate"), [(6.0, 2.0), (0.5, 3.0), (2.7, 13.3), (1e-3, 1e3)])
def test_poisson_gamma_log_prior_is_scipys_gamma_log_density_bit_for_bit(shape, rate, rng):
    """The closed-form log prior reproduces scipy.stats.gamma.logpdf exactly, out of the
    support (−∞) and at NaN included."""
    m = PoissonGamma(shape, rate)
    lam = rng.gamma(2.0, 3.0, size=(50, 1)) * 10.0 ** rng.uniform(-6, 6, size=(50, 1))
    lam[:3, 0] = (0.0, -1.0, np.nan)
    got = m._log_prior(lam)
    want = stats.gamma.logpdf(lam[..., 0], shape, scale=1.0 / rate)
    assert got.shape == want.shape == (50,)
    assert np.array_equal(got, want, equal_nan=True)
    assert got[1] == -np.inf and np.isnan(got[2])
    scalar = m._log_prior(np.array([3.0]))
    assert type(scalar) is np.float64
    assert scalar == stats.gamma.logpdf(3.0, shape, scale=1.0 / rate)
