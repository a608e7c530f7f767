"""SSLA / ASSLA against closed forms (docs/mathematics.md, "Closed forms"), exactness of the
posterior variant, the matrix determinant lemma, normalisation properties (Hypothesis) and
bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, stats

from laplace_lab.theory import (
    BayesianLinearRegression,
    NormalInverseGammaRegression,
    NormalNormal,
    PoissonGamma,
    kl_divergence,
    ssla_log_predictive,
    ssla_predictive,
)


def _centred(logf: np.ndarray) -> np.ndarray:
    """A log-density up to a constant, pinned at the first point."""
    return np.asarray(logf) - np.asarray(logf)[0]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --------------------------------------------------------------------- exactness
@pytest.mark.parametrize("n", [1, 20, 10**4])
def test_posterior_refit_is_exact_for_normal_normal(rng, n):
    m = NormalNormal(4.0, 1.0, 2.0)
    x = m.sample_data(n, 4.5, rng=rng)
    y = np.linspace(-3.0, 12.0, 31)
    exact = m.predictive(x).logpdf(y)
    approx = ssla_predictive(m, x, variant="refit", hessian="posterior").logpdf(y)
    np.testing.assert_allclose(approx, exact, rtol=1e-10)
    # even unnormalised, eq. (12) on the log-joint is the exact log-density (q/2 log 2π cancel)
    raw = ssla_log_predictive(m, x, y, variant="refit", hessian="posterior")
    np.testing.assert_allclose(raw, exact, rtol=1e-10)


def test_posterior_refit_is_exact_for_known_noise_regression(rng):
    m = BayesianLinearRegression(np.array([0.0, 1.0, -1.0]), np.diag([1.0, 2.0, 0.5]), 0.3)
    X, y = m.sample_data(15, np.array([0.5, 0.5, 0.5]), rng=rng)
    xs = np.array([1.0, -0.4, 2.0])
    yy = np.linspace(-4.0, 4.0, 17)
    exact = m.predictive((X, y), xs).logpdf(yy)
    raw = ssla_log_predictive(m, (X, y), yy, x_new=xs, variant="refit", hessian="posterior")
    np.testing.assert_allclose(raw, exact, rtol=1e-10)
    pred = ssla_predictive(m, (X, y), x_new=xs, variant="refit", hessian="posterior")
    np.testing.assert_allclose(pred.logpdf(yy), exact, rtol=1e-10)


def test_posterior_refit_is_exact_for_normal_inverse_gamma_after_normalisation(rng):
    # Laplace in η = log σ² errs by a Stirling factor of the shape a_n + 1/2 only, which does
    # not depend on ŷ: after normalisation the Student-t predictive is recovered.
    m = NormalInverseGammaRegression(np.zeros(2), np.eye(2), 2.0, 1.0)
    X, y = m.sample_data(12, np.array([1.0, -1.0, np.log(0.5)]), rng=rng)
    xs = np.array([0.3, 1.0])
    yy = np.linspace(-5.0, 5.0, 11)
    raw = ssla_log_predictive(m, (X, y), yy, x_new=xs, variant="refit", hessian="posterior")
    exact = m.predictive((X, y), xs).logpdf(yy)
    np.testing.assert_allclose(_centred(raw), _centred(exact), atol=1e-10)


# -------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("n", [20, 1000, 10**6])
def test_normal_normal_ssla_likelihood_closed_form(rng, n):
    m = NormalNormal(4.0, 1.0, 2.0)
    s = m.sufficient_statistics(m.sample_data(n, 4.0, rng=rng))
    y = np.linspace(-2.0, 10.0, 25)
    xbar = s.mean
    theta_t = xbar + (y - xbar) / (n + 1)
    closed = stats.norm.logpdf(y, xbar, np.sqrt(2.0 * (n + 1) / n)) + stats.norm.logpdf(
        theta_t, 4.0, 1.0
    )
    generic = ssla_log_predictive(m, s, y, variant="refit", hessian="likelihood")
    np.testing.assert_allclose(_centred(generic), _centred(closed), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [20, 10**6])
def test_normal_normal_assla_is_plugin_normal(rng, n):
    m = NormalNormal(4.0, 1.0, 2.0)
    s = m.sufficient_statistics(m.sample_data(n, 4.0, rng=rng))
    pred = ssla_predictive(m, s, variant="approx")
    assert pred.mean() == pytest.approx(s.mean, rel=1e-14)
    assert pred.var() == pytest.approx(2.0, rel=1e-12)  # no epistemic part: σ_n² is dropped


@pytest.mark.parametrize("n", [20, 10**6])
def test_poisson_assla_closed_form(rng, n):
    m = PoissonGamma(6.0, 2.0)
    s = m.sufficient_statistics(m.sample_data(n, 3.0, rng=rng))
    lam = s.total / s.n
    k = np.arange(0, 30)
    closed = stats.poisson.logpmf(k, lam) + 0.5 * np.log(s.total / (s.total + k))
    generic = ssla_log_predictive(m, s, k, variant="approx")
    np.testing.assert_allclose(_centred(generic), _centred(closed), rtol=1e-10, atol=1e-12)
    pmf = ssla_predictive(m, s, variant="approx").pmf(k)
    ref = np.exp(closed - np.logaddexp.reduce(closed))
    np.testing.assert_allclose(pmf[:20], ref[:20], rtol=1e-10)


def test_regression_assla_log_det_term_is_the_matrix_determinant_lemma(rng):
    m = BayesianLinearRegression(np.zeros(3), np.eye(3), 0.5)
    X, y = m.sample_data(25, np.array([1.0, 0.0, -1.0]), rng=rng)
    xs = np.array([0.7, -0.2, 1.3])
    w = m.mle((X, y))
    J = m.fisher_information(w, (X, y))
    lemma = -0.5 * np.log1p(xs @ np.linalg.solve(J, xs) / 0.5)  # determinant lemma (GN)
    yy = np.array([-1.0, 0.5, 2.0])
    got = ssla_log_predictive(m, (X, y), yy, x_new=xs, variant="approx")
    ref = stats.norm.logpdf(yy, xs @ w, np.sqrt(0.5)) + lemma
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_poisson_posterior_refit_kl_matches_stirling_constant():
    # ssla_rates docstring: KL ≈ 1/(288 n⁴ λ³) from the Stirling term of the Gamma integral
    m = PoissonGamma(6.0, 2.0)
    n, lam = 10**4, 3.0
    s = m.sufficient_statistics(np.full(n, lam))
    exact = ssla_predictive(m, s, variant="refit", hessian="posterior")
    from laplace_lab.theory.ssla_rates import exact_predictive

    kl = kl_divergence(exact, exact_predictive(m, s))
    assert kl == pytest.approx(1.0 / (288 * n**4 * lam**3), rel=0.01)


# --------------------------------------------------------------------- properties
@st.composite
def _normal_case(draw):
    mu0 = draw(st.floats(-5, 5))
    tau2 = draw(st.floats(0.05, 20))
    s2 = draw(st.floats(0.05, 20))
    n = draw(st.integers(1, 500))
    seed = draw(st.integers(0, 2**32 - 1))
    return NormalNormal(mu0, tau2, s2), n, seed


@st.composite
def _poisson_case(draw):
    a = draw(st.floats(0.2, 30))
    b = draw(st.floats(0.05, 20))
    lam = draw(st.floats(0.05, 40))
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    return PoissonGamma(a, b), lam, n, seed


_GL_X, _GL_W = np.polynomial.legendre.leggauss(300)
VARIANTS = [(v, h) for v in ("refit", "approx") for h in ("likelihood", "posterior")]


@given(_normal_case())
def test_normal_predictives_integrate_to_one_and_kl_nonnegative(case):
    m, n, seed = case
    x = m.sample_data(n, m.prior_mean, rng=np.random.default_rng(seed))
    exact = m.predictive(x)
    sd = exact.std()
    y = exact.mean() + sd * np.linspace(-8.0, 8.0, 9)
    for v, h in VARIANTS:
        p = ssla_predictive(m, x, variant=v, hessian=h)
        # the normalised density is the unnormalised eq. 12/17 shifted by one constant ...
        shift = p.logpdf(y) - ssla_log_predictive(m, x, y, variant=v, hessian=h)
        assert np.ptp(shift) < 1e-8
        # ... and that constant makes it integrate to one
        nodes = p.mean() + 14.0 * p.std() * _GL_X  # vectorised Gauss–Legendre on ±14 sd
        mass = 14.0 * p.std() * np.sum(_GL_W * p.pdf(nodes))
        assert abs(mass - 1.0) < 1e-8
        assert np.all(np.isfinite(p.logpdf(np.linspace(-50, 50, 11))))
        assert kl_divergence(p, exact) >= 0.0
        assert kl_divergence(exact, p) >= 0.0


@given(_poisson_case())
def test_poisson_predictives_sum_to_one_and_kl_nonnegative(case):
    m, lam, n, seed = case
    x = m.sample_data(n, lam, rng=np.random.default_rng(seed))
    if x.sum() == 0:
        with pytest.raises(ValueError, match="all counts are zero"):
            ssla_predictive(m, x)
        return
    exact = m.predictive(x)
    for v, h in VARIANTS:
        if h == "posterior" and m.shape + x.sum() <= 1.0:
            continue
        p = ssla_predictive(m, x, variant=v, hessian=h)
        k = np.arange(p.support_max + 1)
        assert abs(np.sum(p.pmf(k)) - 1.0) < 1e-8
        assert 1.0 - np.sum(p.pmf(np.arange(4 * p.support_max + 100))) < 1e-8
        assert np.all(np.isfinite(p.logpmf(k)))
        assert kl_divergence(p, exact) >= 0.0
        assert kl_divergence(exact, p) >= 0.0


def test_nig_quadrature_predictive_is_normalised(rng):
    m = NormalInverseGammaRegression(np.zeros(2), np.eye(2), 2.0, 1.0)
    X, y = m.sample_data(10, np.array([1.0, -1.0, 0.0]), rng=rng)
    p = ssla_predictive(m, (X, y), x_new=np.array([1.0, 0.5]), variant="approx")
    assert integrate.quad(p.pdf, -np.inf, np.inf, epsabs=0)[0] == pytest.approx(1.0, abs=1e-9)
    lo, hi = p.interval(0.9)
    assert float(p.cdf(hi) - p.cdf(lo)) == pytest.approx(0.9, abs=1e-9)


# --------------------------------------------------------------------- bad input
def test_bad_arguments_raise():
    m = PoissonGamma(6.0, 2.0)
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="variant"):
        ssla_predictive(m, x, variant="exact")
    with pytest.raises(ValueError, match="hessian"):
        ssla_log_predictive(m, x, 1.0, hessian="ggn")
    with pytest.raises(TypeError, match="model"):
        ssla_predictive(stats.norm(), x)
    with pytest.raises(ValueError, match=r"y_new.*non-negative"):
        ssla_log_predictive(m, x, -1.0)
    with pytest.raises(ValueError, match=r"y_new.*integer"):
        ssla_log_predictive(m, x, 1.5)
    with pytest.raises(ValueError, match="all counts are zero"):
        ssla_log_predictive(m, np.zeros(4), 1.0, variant="approx")
    with pytest.raises(ValueError, match="y_new must be finite"):
        ssla_log_predictive(NormalNormal(0, 1, 1), np.ones(3), np.inf)
