"""Bayesian optimisation: test functions at known points, expected improvement, the loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from laplace_lab.paper_checks.fsp_laplace.experiments.bayes_opt import (
    FSPLaplaceSurrogate,
    GPSurrogate,
    LaplaceSurrogate,
    bayes_opt,
    expected_improvement,
    latin_hypercube,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.bo_objectives import (
    ACKLEY2,
    BRANIN,
    HARTMANN3,
    OBJECTIVES,
    Objective,
)

QUADRATIC = Objective("quadratic", (0.0,), (1.0,), 0.0, ((0.3,),), lambda X: (X[:, 0] - 0.3) ** 2)


@pytest.mark.parametrize("f", list(OBJECTIVES.values()), ids=list(OBJECTIVES))
def test_objectives_reach_their_minimum_at_the_minimisers(f):
    # The minimisers are published to 5-6 digits: f there is f* to about 1e-5.
    values = f(np.array(f.minimisers))
    np.testing.assert_allclose(values, f.minimum, atol=1e-5)
    # ... and no point of the box is lower (20,000 uniform points).
    X = f.from_unit(np.random.default_rng(0).uniform(size=(20_000, f.dim)))
    assert f(X).min() >= f.minimum - 1e-9


def test_objectives_at_hand_computed_points():
    # Branin at the origin: 36 + 10 (1 − 1/(8π)) + 10.
    assert BRANIN(np.zeros(2))[0] == pytest.approx(36 + 10 * (1 - 1 / (8 * math.pi)) + 10)
    # Ackley at (1, 1): cos(2π) = 1, so −20 e^{−0.2} − e + 20 + e.
    assert ACKLEY2(np.ones(2))[0] == pytest.approx(20 - 20 * math.exp(-0.2))
    # Hartmann-3 is a sum of four negative Gaussian bumps: in (−Σα, 0) = (−8.4, 0).
    v = HARTMANN3(latin_hypercube(100, 3, rng=0))
    assert np.all((v < 0) & (v > -8.4))


def test_objective_rejects_wrong_shapes():
    with pytest.raises(ValueError, match="X must be a finite"):
        BRANIN(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="X must be a finite"):
        BRANIN(np.array([[np.nan, 0.0]]))
    with pytest.raises(TypeError, match="X must be a real numeric array"):
        BRANIN(np.array([["a", "b"]]))


def test_expected_improvement_closed_form():
    # At μ = best: σ φ(0) = σ / √(2π); zero variance: max(μ − best, 0).
    assert expected_improvement([1.0], [4.0], 1.0)[0] == pytest.approx(2 / math.sqrt(2 * math.pi))
    np.testing.assert_array_equal(expected_improvement([0.5, 2.0], [0.0, 0.0], 1.0), [0.0, 1.0])
    # Against Monte Carlo at μ − best = 0.3, σ = 0.7 (2e6 draws: s.e. ≈ 4e-4).
    draws = np.random.default_rng(1).normal(0.3, 0.7, 2_000_000)
    mc = np.maximum(draws, 0.0).mean()
    assert expected_improvement([0.3], [0.49], 0.0)[0] == pytest.approx(mc, abs=2e-3)


def test_latin_hypercube_stratifies_every_coordinate():
    U = latin_hypercube(16, 3, rng=0)
    # One point in each of the 16 strata of every coordinate.
    for j in range(3):
        np.testing.assert_array_equal(np.sort(np.floor(U[:, j] * 16)), np.arange(16))


def test_gp_bayes_opt_finds_the_minimum_of_a_quadratic():
    trace = bayes_opt(
        QUADRATIC, GPSurrogate(restarts=1), n_init=3, n_iter=8, n_candidates=500, rng=0
    )
    # Candidates are 500 stratified points: the nearest is within 1/1000 of 0.3, so a
    # converged run reaches (1e-3)² ≈ 1e-6; 1e-4 means |x − 0.3| ≤ 0.01.
    assert trace.best[-1] <= 1e-4
    assert trace.best.shape == (9,)
    assert np.all(np.diff(trace.best) <= 0)
    np.testing.assert_array_equal(trace.regret, trace.best)  # f* = 0


def test_bayes_opt_is_reproducible_and_stays_in_the_box():
    a = bayes_opt(BRANIN, GPSurrogate(restarts=0), n_init=4, n_iter=3, n_candidates=64, rng=7)
    b = bayes_opt(BRANIN, GPSurrogate(restarts=0), n_init=4, n_iter=3, n_candidates=64, rng=7)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.X.shape == (7, 2)
    assert np.all((a.X >= BRANIN.low) & (a.X <= BRANIN.high))
    np.testing.assert_allclose(a.values, BRANIN(a.X))
    assert np.all(a.regret >= 0)


def test_gp_surrogate_interpolates_and_grows_uncertain_away_from_data():
    X = np.linspace(0.05, 0.45, 9)[:, None]
    y = np.sin(6 * X[:, 0])
    y = (y - y.mean()) / y.std()
    mean, var = GPSurrogate(restarts=1).fit(X, y, rng=0).predict(np.array([[0.2], [0.95]]))
    # A noise-free smooth function: the marginal likelihood puts the noise variance at its
    # floor 1e-4, so the mean interpolates to within a few noise standard deviations (0.01).
    assert mean[0] == pytest.approx(y[3], abs=0.03)
    assert var[1] > 100 * var[0]


@pytest.mark.parametrize(
    "surrogate",
    [
        FSPLaplaceSurrogate(steps=300, n_context=32, n_covariance=64, num_lanczos=64),
        LaplaceSurrogate(steps=300),
    ],
    ids=["fsp-laplace", "laplace"],
)
def test_network_surrogates_fit_the_data_and_are_uncertain_away_from_it(surrogate):
    X = latin_hypercube(8, 2, rng=3) * 0.4  # data in the corner [0, 0.4]²
    y = X.sum(axis=1)
    y = (y - y.mean()) / y.std()
    fitted = surrogate.fit(X, y, rng=0)
    mean, var = fitted.predict(X)
    # 300 Adam steps on 8 points of a linear function: residuals within 0.2 (targets sd 1).
    assert np.max(np.abs(mean - y)) < 0.2
    _, var_far = fitted.predict(np.array([[0.95, 0.95]]))
    assert np.sqrt(var_far[0]) > 3 * np.sqrt(var.mean())


def test_bad_inputs_are_named():
    gp = GPSurrogate(restarts=0)
    with pytest.raises(ValueError, match="n_init"):
        bayes_opt(BRANIN, gp, n_init=1, n_iter=1, rng=0)
    with pytest.raises(ValueError, match="n_iter"):
        bayes_opt(BRANIN, gp, n_init=3, n_iter=-1, rng=0)
    with pytest.raises(ValueError, match="n_candidates"):
        bayes_opt(BRANIN, gp, n_init=3, n_iter=1, n_candidates=0, rng=0)
    with pytest.raises(TypeError, match="rng is required"):
        bayes_opt(BRANIN, gp, n_init=3, n_iter=1, rng=None)
    with pytest.raises(TypeError, match="objective must be an Objective"):
        bayes_opt(lambda X: X, gp, n_init=3, n_iter=1, rng=0)
    with pytest.raises(TypeError, match="surrogate must have a fit method"):
        bayes_opt(BRANIN, object(), n_init=3, n_iter=1, rng=0)
    with pytest.raises(ValueError, match="acquisition must return 64 finite scores"):
        bayes_opt(
            BRANIN, gp, n_init=3, n_iter=1, n_candidates=64, rng=0,
            acquisition=lambda m, v, b: np.full(64, np.nan),
        )  # fmt: skip
    with pytest.raises(ValueError, match="width"):
        FSPLaplaceSurrogate(width=0)
    with pytest.raises(ValueError, match="n_covariance"):
        FSPLaplaceSurrogate(n_covariance=0)
    with pytest.raises(ValueError, match="lr"):
        LaplaceSurrogate(lr=-1.0)
    with pytest.raises(ValueError, match="restarts"):
        GPSurrogate(restarts=-1)
    with pytest.raises(ValueError, match=r"y must be a finite \(3,\) array"):
        gp.fit(np.zeros((3, 2)), np.zeros(2), rng=0)
    with pytest.raises(ValueError, match="X must be a finite"):
        LaplaceSurrogate().fit(np.zeros(3), np.zeros(3), rng=0)
    with pytest.raises(TypeError, match="rng is required"):
        FSPLaplaceSurrogate().fit(np.zeros((3, 1)), np.zeros(3), rng=None)
