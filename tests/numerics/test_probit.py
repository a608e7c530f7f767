"""The probit approximation of Gaussian-logit class probabilities, against exact integrals."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import probit_probability
from laplace_lab.theory.probit import logistic_gaussian_integral


def test_one_logit_is_within_the_known_approximation_error_of_the_exact_integral():
    # MacKay's approximation of E σ(f), f ~ N(μ, v), is within about 0.02 everywhere
    # (Bishop 2006, §4.5.2, Fig. 4.9); the trapezoidal integral is exact to 1e-15.
    mu = np.array([-2.0, 0.0, 0.5, 3.0, 4.0])
    v = np.array([0.1, 4.0, 1.0, 9.0, 100.0])
    exact = logistic_gaussian_integral(mu, v)
    approx = probit_probability(mu, v)
    np.testing.assert_allclose(approx, exact, atol=0.02)
    assert approx[1] == 0.5  # symmetric at μ = 0 for any v
    # one logit as a column: the same probabilities, in that shape (not a softmax of one)
    np.testing.assert_array_equal(probit_probability(mu[:, None], v[:, None])[:, 0], approx)
    # a vanishing variance gives back the logistic function itself
    np.testing.assert_allclose(probit_probability(mu, np.zeros(5)), 1 / (1 + np.exp(-mu)))


def test_many_logits_scale_each_logit_then_softmax():
    # two classes with logits (μ, 0) and zero variance on the second: the softmax of
    # (μ/√(1+πv/8), 0) is σ of the scaled difference — the binary case
    mu, v = np.array([[1.5, 0.0], [-0.7, 0.0]]), np.array([[3.0, 0.0], [0.5, 0.0]])
    p = probit_probability(mu, v)
    np.testing.assert_allclose(p[:, 0], probit_probability(mu[:, 0], v[:, 0]), rtol=1e-14)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


def test_extreme_logits_give_finite_probabilities_without_overflow():
    with np.errstate(over="raise"):
        p = probit_probability(np.array([-1e4, 1e4]), np.array([1.0, 1.0]))
    np.testing.assert_array_equal(p, [0.0, 1.0])


@pytest.mark.parametrize(
    ("mean", "variance", "match"),
    [
        (np.float64(0.0), np.float64(1.0), "mean must have shape"),
        (np.zeros(3), np.ones(2), "variance must have the shape"),
        (np.zeros(2), np.array([1.0, -1.0]), "variance must be finite and non-negative"),
        (np.zeros(2), np.array([1.0, np.nan]), "variance must be finite and non-negative"),
        (np.array([0.0, np.nan]), np.ones(2), "mean must be finite"),
    ],
)
def test_bad_input_names_the_argument(mean, variance, match):
    with pytest.raises(ValueError, match=match):
        probit_probability(mean, variance)
