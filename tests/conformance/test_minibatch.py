"""Curvature of a minibatch scaled to the data set: the problems hand the target n = 8 of the
N = 24 rows, the scaled minibatch GGN is an unbiased estimate of the full one, and the
inverse scale n/N fails exactly the family's cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from laplace_lab.conformance import Outcome, cases, validate
from laplace_lab.conformance.catalog.minibatch import scaled_precision
from laplace_lab.conformance.oracle import DenseOracle, jacobian
from laplace_lab.conformance.problems import build_problem

FAMILY = {n for n in cases() if n.startswith("minibatch/")}


def test_the_scaled_minibatch_ggn_is_unbiased_for_the_full_one():
    # a linear model, one output: G_i = φ_iφ_iᵀ/σ0²; averaging (N/n) Σ_{i∈B} G_i over all
    # C(6, 2) minibatches gives Σ_i G_i exactly
    problem = build_problem("linear-gaussian")
    X = problem.X_train.numpy()[:6]
    Phi = np.hstack([X, np.ones((6, 1))])
    G = np.einsum("ni,nj->nij", Phi, Phi) / problem.noise_var
    batches = [(6 / 2) * G[list(b)].sum(0) for b in itertools.combinations(range(6), 2)]
    np.testing.assert_allclose(np.mean(batches, axis=0), G.sum(0), rtol=1e-13)


@pytest.mark.parametrize("name", ["mlp-regression-minibatch", "mlp-multiclass-minibatch"])
def test_the_problem_is_a_minibatch_of_the_data_the_model_was_fitted_on(name):
    problem = build_problem(name)
    assert problem.n_data == 24 and problem.X_train.shape[0] == 8
    oracle = DenseOracle(problem)
    # P − V is 3 × the minibatch's own Σ J_nᵀH_nJ_n, from an independent Jacobian
    J = jacobian(problem.model, problem.X_train)
    HJ = np.einsum("ncd,ndp->ncp", oracle.H, J)
    batch = np.einsum("ncp,ncq->pq", J, HJ)
    P = scaled_precision(problem, oracle)
    np.testing.assert_allclose(P - np.diag(oracle.V), 3.0 * batch, rtol=1e-12, atol=1e-12)


def test_laplace_lab_passes_and_the_inverse_scale_fails_exactly_the_family():
    assert len(FAMILY) == 3
    ours = validate("laplace_lab.conformance.adapters.numerics:predictive_variance", only=FAMILY)
    assert all(r.outcome is Outcome.PASS for r in ours.results), ours.summary()
    wrong = validate("tests.conformance.mutant_targets:minibatch_inverse_scale", only=FAMILY)
    assert {r.case.name for r in wrong.results if r.outcome is Outcome.FAIL} == FAMILY
    # the wrong scale is not a rounding matter: relative errors of order one
    assert min(r.details["max_relative_error"] for r in wrong.results) > 0.5


def test_n_data_below_the_rows_given_is_refused():
    from laplace_lab.conformance.adapters.numerics import minibatch_predictive_variance

    p = build_problem("mlp-regression-minibatch")
    with pytest.raises(ValueError, match="n_data"):
        minibatch_predictive_variance(
            p.model, p.X_train, p.y_train, p.X_test, **p.target_kwargs(), n_data=4
        )
