"""SBC on a GLM measures the Laplace posterior's departure (conformance.calibration_glm):
the rank summaries read known shapes at their exact expected values, the Gaussian control
is calibrated, the logistic departure shrinks with N, and a sampler with the covariance × 4
is flagged at an N where the Laplace posterior is not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from laplace_lab.conformance.adapters import numerics as ours
from laplace_lab.conformance.calibration_glm import LEVEL, glm_sbc, rank_summary

L = 99  # draws per data set
SMALL, LARGE = 10, 640  # training points


def _mean(g, u_of_z) -> float:
    """E[g(u(z))], z ~ N(0, 1), by quadrature."""
    return integrate.quad(lambda z: g(u_of_z(z)) * stats.norm.pdf(z), -12, 12)[0]


def _expected_q_moments(u_of_z) -> tuple[float, float]:
    """E[q], E[q²] for q = (r + ½)/(L + 1) − ½, r | z ~ Binomial(L, u(z)), z ~ N(0, 1):
    E[q | u] = (Lu − L/2)/(L + 1), E[q² | u] = (Lu(1 − u) + (Lu − L/2)²)/(L + 1)²."""
    m = L + 1
    return (
        _mean(lambda u: (L * u - L / 2) / m, u_of_z),
        _mean(lambda u: (L * u * (1 - u) + (L * u - L / 2) ** 2) / m**2, u_of_z),
    )


@pytest.mark.parametrize(
    ("spread", "offset", "shape"),
    [(1.0, 0.0, "flat"), (0.5, 0.0, "∪"), (2.0, 0.0, "∩"), (1.0, 0.5, "∩, falling")],
)
def test_rank_summary_reads_a_known_sampler(spread, offset, shape):
    # true value z ~ N(0, 1), draws N(offset, spread²): u = P(draw < z) = Φ((z − offset)/spread);
    # an offset also narrows the ranks' spread (Var Φ(z − 0.5) < 1/12: D = 0.90 here)
    rng = np.random.default_rng(3)
    R = 4000
    z = rng.normal(size=R)
    ranks = np.sum(offset + spread * rng.normal(size=(R, L)) < z[:, None], axis=1)
    s = rank_summary(ranks, L, quantity="z")
    u_of_z = lambda z: stats.norm.cdf((z - offset) / spread)  # noqa: E731
    e1, e2 = _expected_q_moments(u_of_z)
    m2 = (100**2 - 1) / (12 * 100**2)  # E₀[q²] under uniform ranks on {0, …, 99}
    q = (ranks + 0.5) / 100 - 0.5
    assert abs(s.dispersion - (e2 - e1**2) / m2) <= 4 * np.std(q**2) / np.sqrt(R) / m2
    assert abs(s.shift - 2 * e1) <= 4 * 2 * np.std(q) / np.sqrt(R)
    assert s.shape() == shape
    assert sum(s.counts) == R
    if shape == "flat":
        assert min(s.p_values) > LEVEL
    # the outer bins (ranks ≤ 9 or ≥ 90) against their exact share
    outer = _mean(lambda u: stats.binom.cdf(9, L, u) + stats.binom.sf(89, L, u), u_of_z)
    got = (s.counts[0] + s.counts[-1]) / R
    assert abs(got - outer) <= 4 * np.sqrt(outer * (1 - outer) / R)


def _overdispersed(model, X_train, y_train, X_test, **kwargs):
    return ours.predictive_variance(model, X_train, y_train, X_test, **kwargs)


def _covariance_times_four(model, X_train, y_train, *, n_samples, seed, **kwargs):
    """θ̂ + 2(θ − θ̂) for laplace-lab's draws θ: covariance 4Ω⁻¹."""
    draws = ours.posterior_samples(
        model, X_train, y_train, n_samples=n_samples, seed=seed, **kwargs
    )
    mean = ours._theta(model)
    return mean + 2.0 * (draws - mean)


_overdispersed.posterior_samples = _covariance_times_four


@pytest.fixture(scope="module")
def runs():
    target = ours.predictive_variance
    return {
        "control": glm_sbc(target, likelihood="regression", n_train=SMALL, seed=0),
        "small": glm_sbc(target, n_train=SMALL, seed=0),
        "large": glm_sbc(target, n_train=LARGE, seed=0),
        "wide": glm_sbc(_overdispersed, n_train=LARGE, seed=0),
    }


def test_the_gaussian_control_is_calibrated(runs):
    # the Laplace posterior is the posterior: flagged with probability ≤ LEVEL
    c = runs["control"]
    assert c.ranks.shape == (400, 4)
    assert not c.flagged(), [s.p_values for s in c.summaries]
    assert c.reading() == "flat"


def _standard_error(c, column: int, power: int) -> float:
    """The standard error of the mean of q^power over the R data sets of one quantity."""
    q = (c.ranks[:, column] + 0.5) / (c.n_draws + 1) - 0.5
    return float(np.std(q**power) / np.sqrt(q.size))


def test_the_logistic_departure_shrinks_with_n(runs):
    small, large = runs["small"], runs["large"]
    m2 = (100**2 - 1) / (12 * 100**2)  # Var₀(q) under uniform ranks on {0, …, 99}
    # N = 10: decisive; the coordinates ∪ (the symmetric Laplace misses the posterior's
    # outer tail) and log p(y|θ) rising (its draws fit the data worse than the true θ)
    assert small.p_value < 1e-12
    *coords, loglik = small.summaries
    assert all(s.dispersion > 1 for s in coords)
    assert np.mean([s.dispersion for s in coords]) > 1.1
    assert loglik.shift > 0.25 and "rising" in loglik.shape()
    # N = 640: not flagged, and each coordinate's dispersion within 4 standard errors of 1
    assert not large.flagged()
    for j, s in enumerate(large.summaries[:-1]):
        assert abs(s.dispersion - 1) < 4 * _standard_error(large, j, 2) / m2
    se = 2 * np.sqrt(m2 / 400)  # the standard error of a shift under uniform ranks
    assert loglik.shift - large.summaries[-1].shift > 4 * np.sqrt(2) * se
    assert np.mean([s.dispersion for s in large.summaries[:-1]]) < np.mean(
        [s.dispersion for s in coords]
    )


def test_a_covariance_times_four_is_flagged_where_laplace_is_not(runs):
    large, wide = runs["large"], runs["wide"]
    assert not large.flagged() and wide.flagged()
    assert wide.p_value < 1e-30
    # draws twice as wide as N(θ̂, Ω⁻¹) ≈ the posterior: each coordinate's dispersion is the
    # spread-2 value (E[q²] − E[q]²)/Var₀(q) with u = Φ(z/2), 0.40, up to 4 standard errors
    # and the Laplace posterior's own departure at this N
    e1, e2 = _expected_q_moments(lambda z: stats.norm.cdf(z / 2))
    m2 = (100**2 - 1) / (12 * 100**2)
    for j, (s, ref) in enumerate(zip(wide.summaries[:-1], large.summaries[:-1], strict=True)):
        assert s.shape() == "∩"
        tolerance = 4 * _standard_error(wide, j, 2) / m2 + abs(ref.dispersion - 1)
        assert abs(s.dispersion - (e2 - e1**2) / m2) < tolerance
    assert wide.summaries[-1].shift > 0.5  # its draws fit the data much worse than θ


def test_bad_arguments_name_themselves():
    target = ours.predictive_variance
    with pytest.raises(ValueError, match="likelihood"):
        glm_sbc(target, likelihood="multiclass", n_train=5, seed=0)
    with pytest.raises(ValueError, match="n_draws"):
        glm_sbc(target, n_train=5, seed=0, n_draws=100)
    with pytest.raises(ValueError, match="posterior_samples"):
        glm_sbc(lambda *a, **k: None, n_train=5, seed=0)
    with pytest.raises(ValueError, match="ranks"):
        rank_summary(np.array([0, 100]), L)


def test_a_target_named_module_callable_is_the_same_target():
    kw = {"n_train": 8, "seed": 3, "n_datasets": 20, "n_draws": 19}
    by_name = glm_sbc("laplace_lab.conformance.adapters.numerics:predictive_variance", **kw)
    by_object = glm_sbc(ours.predictive_variance, **kw)
    assert by_name.ranks.shape == (20, 4) and np.ptp(by_name.ranks) > 0
    np.testing.assert_array_equal(by_name.ranks, by_object.ranks)
    with pytest.raises(ValueError, match=r"no\.such"):
        glm_sbc("no.such:target", **kw)
