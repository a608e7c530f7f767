"""Multi-output regression with per-output noise: the oracle against the closed form of C
independent Bayesian linear regressions, laplace-lab's GGN against its definition, and a
shared-noise bug failing exactly the family's cases."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.conformance import Outcome, cases, validate
from laplace_lab.conformance.catalog.multi_output import (
    blr_multi_output_evidence,
    blr_multi_output_variances,
)
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import build_problem, negative_log_joint
from laplace_lab.numerics import GGN

FAMILY = {
    f"{kind}/{problem}"
    for kind in ("predictive", "evidence")
    for problem in ("linear-gaussian-multi-output", "mlp-regression-multi-output")
}


@pytest.fixture(scope="module")
def linear():
    problem = build_problem("linear-gaussian-multi-output")
    return problem, DenseOracle(problem)


def test_the_linear_posterior_factorises_over_the_outputs(linear):
    problem, oracle = linear
    d, C = 4, 3
    owner = np.concatenate([np.repeat(np.arange(C), d), np.arange(C)])  # output of θ_i
    cross = oracle.omega[owner[:, None] != owner[None, :]]
    assert np.abs(cross).max() == 0.0  # no coupling between outputs' rows [w_c, b_c]
    # block c is ΦᵀΦ/σ_c² + αI: its trace is (Σ‖x_n‖² + N)/σ_c² + (d + 1)α
    X = problem.X_train.double().numpy()
    for c, s2 in enumerate((0.1, 0.4, 0.9)):
        block = oracle.omega[np.ix_(owner == c, owner == c)]
        assert np.trace(block) == pytest.approx((np.sum(X**2) + X.shape[0]) / s2 + 5 * 2.0)


def test_the_oracle_is_the_closed_form_on_the_linear_model(linear):
    problem, oracle = linear
    np.testing.assert_allclose(
        oracle.predictive_variance(), blr_multi_output_variances(problem), rtol=1e-12
    )
    assert oracle.log_marginal_likelihood == pytest.approx(
        blr_multi_output_evidence(problem), rel=1e-13
    )
    # and the noise matters: with σ² shared the evidence moves by nats, not by rounding
    shared = build_problem("linear-gaussian-multi-output")
    shared.noise_var = np.full(3, 0.4)
    assert abs(blr_multi_output_evidence(shared) - oracle.log_marginal_likelihood) > 1.0


def test_the_mlp_is_at_its_map():
    import torch

    problem = build_problem("mlp-regression-multi-output")
    model = problem.fresh_model()
    loss = negative_log_joint(
        model, problem.X_train, problem.y_train, problem.likelihood, problem.noise_var, 2.0
    )
    grads = torch.autograd.grad(loss, list(model.parameters()))
    assert max(float(g.abs().max()) for g in grads) < 1e-6  # L-BFGS to its tolerance
    assert problem.p == 45 and problem.y_train.shape == (12, 3)


def test_multi_output_ggn_is_its_definition():
    rng = np.random.default_rng(3)
    J = rng.normal(size=(5, 3, 7))
    s2 = np.array([0.1, 0.4, 0.9])
    V = rng.uniform(0.5, 2.0, size=7)
    ggn = GGN.multi_output_regression(J, noise_var=s2, prior_precision=V)
    dense = sum(J[n].T @ np.diag(1.0 / s2) @ J[n] for n in range(5)) + np.diag(V)
    np.testing.assert_allclose(ggn.dense(), dense, rtol=1e-13)
    assert ggn.n_data == 5 and ggn.n_rows == 15
    one = GGN.multi_output_regression(J, noise_var=0.4, prior_precision=V)  # a float: shared
    shared = sum(J[n].T @ J[n] for n in range(5)) / 0.4 + np.diag(V)
    np.testing.assert_allclose(one.dense(), shared, rtol=1e-13)


@pytest.mark.parametrize("bad", [np.array([0.1, 0.4]), np.array([0.1, -0.4, 0.9]), np.nan])
def test_multi_output_ggn_rejects_a_bad_noise(bad):
    with pytest.raises(ValueError, match="noise_var"):
        GGN.multi_output_regression(np.ones((2, 3, 4)), noise_var=bad, prior_precision=1.0)


def test_laplace_lab_passes_and_a_shared_noise_fails_exactly_the_family():
    assert FAMILY <= set(cases())
    ours = validate("laplace_lab.conformance.adapters.numerics:predictive_variance", only=FAMILY)
    assert all(r.outcome is Outcome.PASS for r in ours.results), ours.summary()
    selected = sorted(FAMILY | {"predictive/mlp-regression", "evidence/mlp-regression"})
    v = validate("tests.conformance.mutant_targets:shared_noise", only=selected)
    assert not any(r.outcome is Outcome.ERROR for r in v.results), v.summary()
    assert {r.case.name for r in v.results if r.outcome is Outcome.FAIL} == FAMILY
