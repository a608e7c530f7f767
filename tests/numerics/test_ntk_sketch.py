"""JVP NTK sketch: unbiasedness; exact variances (single-output as in the paper, multi-output)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from laplace_lab.numerics.ntk_sketch import (
    jvp_ntk_estimate,
    ntk_estimate_variance,
    paper_ntk_variance,
)
from tests.numerics.conftest import host


def _jacobians(seed=0, C1=3, C2=2, p=6):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((C1, p)), rng.standard_normal((C2, p))


def _exact_by_enumeration(J1, J2):
    """Rademacher mean and variance of (J1 v)(J2 v)ᵀ by enumerating all 2^p sign vectors."""
    p = J1.shape[1]
    V = np.array(list(itertools.product([-1.0, 1.0], repeat=p))).T  # p × 2^p
    samples = np.einsum("as,bs->sab", J1 @ V, J2 @ V)
    return samples.mean(axis=0), samples.var(axis=0)


def test_rademacher_mean_and_variance_equal_exhaustive_enumeration():
    J1, J2 = _jacobians(p=10)
    mean, var = _exact_by_enumeration(J1, J2)
    np.testing.assert_allclose(mean, J1 @ J2.T, atol=1e-12)
    np.testing.assert_allclose(ntk_estimate_variance(J1, J2), var, rtol=1e-12)


def test_gaussian_variance_matches_monte_carlo():
    J1, J2 = _jacobians(seed=1)
    rng = np.random.default_rng(2)
    V = rng.standard_normal((6, 400_000))
    samples = np.einsum("as,bs->sab", J1 @ V, J2 @ V)
    exact = ntk_estimate_variance(J1, J2, dist="gaussian")
    # the sample variance of 4e5 draws: relative standard error ≈ sqrt(kurtosis/4e5) < 2%
    np.testing.assert_allclose(samples.var(axis=0), exact, rtol=0.05)
    np.testing.assert_allclose(
        samples.mean(axis=0), J1 @ J2.T, atol=5 * np.sqrt(exact.max() / 4e5)
    )


@pytest.mark.parametrize("dist", ["rademacher", "gaussian"])
def test_estimate_is_unbiased_within_its_standard_error(dist):
    J1, J2 = _jacobians(seed=3, p=50)
    s = 20_000
    est = jvp_ntk_estimate(J1, J2, s, dist=dist, rng=np.random.default_rng(4))
    se = np.sqrt(ntk_estimate_variance(J1, J2, dist=dist, num_probes=s))
    z = (est - J1 @ J2.T) / se
    assert np.max(np.abs(z)) < 4.0  # 6 entries: P(max |z| ≥ 4) < 4e-4


@pytest.mark.parametrize("dist", ["rademacher", "gaussian"])
def test_single_output_variance_equals_the_papers_eqs_5_and_6(dist):
    j = np.random.default_rng(5).standard_normal(30)
    ours = float(ntk_estimate_variance(j, dist=dist)[0, 0])
    assert ours == pytest.approx(paper_ntk_variance(j, dist=dist), rel=1e-12)
    # closed forms: 2‖j‖⁴ and 2‖j‖⁴ − 2Σ j_i⁴
    closed = 2 * np.sum(j**2) ** 2 - (2 * np.sum(j**4) if dist == "rademacher" else 0.0)
    assert ours == pytest.approx(closed, rel=1e-12)


def test_multi_output_variance_differs_from_the_paper():
    J = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # two orthogonal output rows
    ours = ntk_estimate_variance(J, dist="gaussian")
    np.testing.assert_allclose(ours, [[2.0, 1.0], [1.0, 2.0]])  # (u·w)² + ‖u‖²‖w‖²
    assert paper_ntk_variance(J, dist="gaussian") == 8.0  # 2·tr(JᵀJ)² = 2·2²
    assert ours.sum() == 6.0  # not 8 under any reading


def test_rademacher_variance_never_exceeds_gaussian():
    J1, J2 = _jacobians(seed=6, C1=4, C2=4, p=9)
    g = ntk_estimate_variance(J1, J2, dist="gaussian")
    r = ntk_estimate_variance(J1, J2, dist="rademacher")
    assert np.all(r <= g + 1e-12) and np.all(r >= -1e-12)


def test_seeded_estimates_are_reproducible_and_shared_probes_for_j2_none():
    J1, _ = _jacobians()
    a = jvp_ntk_estimate(J1, None, 7, rng=np.random.default_rng(0))
    b = jvp_ntk_estimate(J1, J1, 7, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, a.T)


def test_backends_agree_with_numpy(backend):
    J1, J2 = _jacobians(seed=7)
    est = jvp_ntk_estimate(backend(J1), backend(J2), 300, rng=np.random.default_rng(1))
    ref = jvp_ntk_estimate(J1, J2, 300, rng=np.random.default_rng(1))
    np.testing.assert_allclose(host(est), ref, rtol=1e-12)
    var = ntk_estimate_variance(backend(J1), backend(J2), dist="gaussian")
    np.testing.assert_allclose(host(var), ntk_estimate_variance(J1, J2, dist="gaussian"))


def test_bad_input_is_rejected_with_the_argument_named():
    J1, J2 = _jacobians()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="same number of parameters"):
        jvp_ntk_estimate(J1, J2[:, :4], 3, rng=rng)
    with pytest.raises(ValueError, match="num_probes must be a positive integer"):
        jvp_ntk_estimate(J1, J2, 0, rng=rng)
    with pytest.raises(TypeError, match="rng is required"):
        jvp_ntk_estimate(J1, J2, 3, rng=None)
    with pytest.raises(ValueError, match="dist must be"):
        jvp_ntk_estimate(J1, J2, 3, dist="uniform", rng=rng)
    with pytest.raises(ValueError, match="J1 must be finite"):
        ntk_estimate_variance(np.full((2, 3), np.inf))
    with pytest.raises(TypeError, match="J must be a real array"):
        paper_ntk_variance(np.ones((2, 3), dtype=complex))
