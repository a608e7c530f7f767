"""Curvature representations of the heteroscedastic SSLA study; grid intervals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("torch")

from laplace_lab.networks.training import adam_recipe
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import (
    CURVATURES,
    CurvatureVariances,
    _count_at_most,
    _interp_rows,
    curvature_comparison,
    curvature_coverage,
    grid_intervals,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
    HeteroscedasticFit,
)


def test_grid_intervals_of_a_normal_density():
    y = np.linspace(-10, 10, 4001)[None, :] + np.array([[0.0], [3.0]])
    logp = stats.norm(np.array([[0.0], [3.0]]), 2.0).logpdf(y) + 7.0  # any constant
    iv = grid_intervals(y, logp, (0.95, 0.5))
    np.testing.assert_allclose(iv[0, 0], [-1.96 * 2, 1.96 * 2], atol=2e-3)
    np.testing.assert_allclose(iv[1, 1], [3 - 0.6745 * 2, 3 + 0.6745 * 2], atol=2e-3)


def test_grid_intervals_are_numpy_interp_per_row():
    """The row-wise interpolation is np.interp's, bit for bit, on CDFs with flat stretches
    (densities that underflow at the tails), nodes hit exactly and ends."""
    rng = np.random.default_rng(3)
    steps = rng.exponential(size=(40, 30)) * (rng.random((40, 30)) < 0.6)
    steps[:10, :6] = 0.0
    cdf = np.cumsum(steps, axis=1)
    cdf /= cdf[:, -1:]
    f = np.cumsum(rng.standard_normal((40, 30)), axis=1)
    for x in (0.025, 0.5, 0.975, 0.0, 1.0, -0.5, 1.5, cdf[20, 7]):
        ref = [np.interp(x, cdf[j], f[j]) for j in range(40)]
        np.testing.assert_array_equal(_interp_rows(x, cdf, f), ref)


def test_bisection_counts_what_a_comparison_counts_on_cdfs_with_nan_tails():
    """Rows non-decreasing with flat stretches and repeated values, NaN tails of any length
    (all-NaN rows too) and rows of one value: the count of entries ≤ x equals the direct
    count, for x below, inside (on nodes too) and above every row."""
    rng = np.random.default_rng(11)
    steps = rng.exponential(size=(60, 41)) * (rng.random((60, 41)) < 0.5)
    cdf = np.round(np.cumsum(steps, axis=1), 1)  # ties between neighbours
    for j, tail in enumerate(rng.integers(0, 42, size=20)):
        cdf[j, 41 - tail :] = np.nan
    cdf[20] = 3.0
    for x in (-1.0, 0.0, 0.1, 1.0, 2.5, cdf[30, 17], cdf[31, 40], 1e9, np.inf):
        np.testing.assert_array_equal(_count_at_most(x, cdf), np.sum(cdf <= x, axis=1))
    one = np.array([[0.5]])
    assert _count_at_most(0.4, one).tolist() == [0] and _count_at_most(0.5, one).tolist() == [1]


def test_assla_is_the_same_for_every_curvature_and_ssla_is_not():
    r = curvature_comparison(
        rng=0,
        n_train=80,
        n_test=60,
        config=adam_recipe(lr=1e-2, epochs=30, batch_size=40),
        grid_points=401,
    )
    covs = [r.coverage["ASSLA"][c] for c in CURVATURES]
    for c in covs[1:]:
        np.testing.assert_array_equal(c, covs[0])
    assert r.density_spread["ASSLA"] < 1e-10
    # SSLA in the linearised network is LA: the same coverage up to the grid
    for c in CURVATURES:
        np.testing.assert_allclose(r.coverage["SSLA"][c], r.coverage["LA"][c], atol=2 / 60)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"grid_points": 1}, r"grid_points must be in \[2, inf\]; got grid_points=1"),
        ({"prior_precision": -1.0}, r"prior_precision must be positive and finite"),
    ],
)
def test_bad_grid_or_prior_is_refused_before_training(kwargs, match):
    with pytest.raises(ValueError, match=match):
        curvature_comparison(rng=0, **kwargs)


def test_a_prior_precision_beside_computed_variances_is_refused():
    fit = object.__new__(HeteroscedasticFit)  # refused before any field is read
    computed = CurvatureVariances(2.5, {"GGN": np.ones(3)})
    with pytest.raises(ValueError, match=r"prior_precision must be None when curvature is given"):
        curvature_coverage(fit, curvature=computed, prior_precision=1.0)
