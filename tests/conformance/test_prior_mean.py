"""A prior with a non-zero mean μ0: the problems sit at the MAP μ0 moves, the oracle's
evidence is the closed form of Bayesian linear regression with prior mean μ0, and a target
that ignores μ0 or flips its sign fails exactly the evidence cases."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.conformance import Outcome, cases, validate
from laplace_lab.conformance.catalog.prior_mean import blr_prior_mean_evidence
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import build_problem, negative_log_joint

FAMILY = {n for n in cases() if n.startswith("prior-mean/")}
EVIDENCE = {n for n in FAMILY if "/evidence-" in n}


def _max_gradient(problem, mu0) -> float:
    import torch

    model = problem.fresh_model()
    V = torch.as_tensor(problem.prior_vector())
    loss = negative_log_joint(
        model, problem.X_train, problem.y_train, "regression", problem.noise_var, V, mu0
    )
    return max(float(g.abs().max()) for g in torch.autograd.grad(loss, list(model.parameters())))


@pytest.mark.parametrize("name", ["linear-gaussian-prior-mean", "mlp-regression-prior-mean"])
def test_the_model_is_at_the_map_of_the_prior_with_its_mean(name):
    problem = build_problem(name)
    mu0 = problem.prior_mean
    assert mu0 is not None and mu0.shape == (problem.p,) and np.ptp(mu0) > 1.0
    assert _max_gradient(problem, mu0) < 1e-6  # the MAP of N(μ0, V⁻¹) ...
    assert _max_gradient(problem, 0.0) > 0.1  # ... not of N(0, V⁻¹): μ0 moved it


def test_the_oracle_is_the_closed_form_with_a_prior_mean():
    problem = build_problem("linear-gaussian-prior-mean")
    oracle = DenseOracle(problem)
    exact = blr_prior_mean_evidence(problem)
    assert oracle.log_marginal_likelihood == pytest.approx(exact, rel=1e-13)
    # log N(y; Φμ0, σ0²I + ΦV⁻¹Φᵀ) written out, a second closed form
    X = problem.X_train.numpy()
    y = problem.y_train.numpy()
    Phi = np.hstack([X, np.ones((len(X), 1))])
    K = problem.noise_var * np.eye(len(X)) + Phi @ np.diag(1.0 / problem.prior_vector()) @ Phi.T
    r = y - Phi @ problem.prior_mean
    _, logdet = np.linalg.slogdet(2 * np.pi * K)
    assert exact == pytest.approx(-0.5 * (r @ np.linalg.solve(K, r) + logdet), rel=1e-13)
    # the prior mean is not a rounding matter: the zero-mean evidence is nats away
    problem.prior_mean = None
    assert abs(blr_prior_mean_evidence(problem) - exact) > 1.0


@pytest.mark.parametrize("mutant", ["prior_mean_ignored", "prior_mean_sign"])
def test_a_wrong_prior_mean_fails_exactly_the_evidence_cases(mutant):
    assert len(FAMILY) == 3 and len(EVIDENCE) == 2
    ours = validate("laplace_lab.conformance.adapters.numerics:predictive_variance", only=FAMILY)
    assert all(r.outcome is Outcome.PASS for r in ours.results), ours.summary()
    # Ω does not depend on μ0 given θ̂: the predictive case passes either way
    v = validate(f"tests.conformance.mutant_targets:{mutant}", only=sorted(FAMILY))
    assert not any(r.outcome is Outcome.ERROR for r in v.results), v.summary()
    assert {r.case.name for r in v.results if r.outcome is Outcome.FAIL} == EVIDENCE
