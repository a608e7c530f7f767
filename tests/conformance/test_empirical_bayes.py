"""Empirical Bayes (``optimize_prior``): the oracle's optimum is exact, laplace-lab's adapter
passes every case, and wrong optimisers fail exactly the cases they should."""

from __future__ import annotations

import math

import numpy as np
import pytest

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases, validate
from laplace_lab.conformance.adapters import numerics as ours
from laplace_lab.conformance.catalog.empirical_bayes import EvidenceSurface, refitted_optimum
from laplace_lab.conformance.catalog.evidence import blr_evidence

MUTANTS = "tests.conformance.mutant_targets"
CASES = [n for n in cases() if n.startswith("empirical-bayes/")]
NOISE = {n for n in CASES if n.endswith("-noise")}


def _surface(problem_name):
    problem = build_problem(problem_name, seed=0)
    return problem, EvidenceSurface.from_oracle(DenseOracle(problem))


def _outcomes(target):
    return {r.case.name: r for r in validate(target, only=CASES).results}


def test_the_cases_cover_every_likelihood_with_and_without_the_noise():
    assert set(CASES) == {
        f"empirical-bayes/{n}"
        for n in (
            "linear-gaussian",
            "linear-gaussian-noise",
            "mlp-regression",
            "mlp-regression-noise",
            "mlp-binary",
            "mlp-multiclass",
        )
    }
    for name in CASES:  # starting values break the symmetries α = 1, σ0² = 1
        problem = build_problem(cases()[name].problem, seed=0)
        assert problem.prior_precision != 1.0
        assert problem.likelihood != "regression" or problem.noise_var != 1.0


@pytest.mark.parametrize(
    "name", ["linear-gaussian", "mlp-regression", "mlp-binary", "mlp-multiclass"]
)
def test_the_surface_is_the_dense_laplace_evidence(name):
    problem, surface = _surface(name)
    oracle = DenseOracle(problem)
    at_start = surface.value(problem.prior_precision, problem.noise_var)
    assert at_start == pytest.approx(oracle.log_marginal_likelihood, abs=1e-11)
    if name == "linear-gaussian":  # θ̂ is the MAP under α0: Laplace is the exact evidence
        assert at_start == pytest.approx(blr_evidence(problem), abs=1e-11)
    # the analytic gradient and curvature against central differences of the value
    alpha, s2, h = 0.7 * problem.prior_precision, 1.3 * problem.noise_var, 1e-4

    def value(a, v):
        return surface.value(alpha * math.exp(a), s2 * math.exp(v))

    numeric = [(value(h, 0) - value(-h, 0)) / (2 * h), (value(0, h) - value(0, -h)) / (2 * h)]
    np.testing.assert_allclose(surface.gradient(alpha, s2), numeric, atol=1e-7)
    c_aa = -(value(h, 0) - 2 * value(0, 0) + value(-h, 0)) / h**2
    assert surface.curvature(alpha, s2)[0, 0] == pytest.approx(c_aa, rel=1e-5)


@pytest.mark.parametrize("name", ["linear-gaussian", "mlp-regression", "mlp-binary"])
def test_the_optimum_is_a_stationary_maximum_found_to_machine_precision(name):
    problem, surface = _surface(name)
    noise = problem.likelihood == "regression"
    alpha, s2 = surface.optimum(optimize_noise=noise)
    assert np.all(np.abs(surface.gradient(alpha, s2)) < 1e-12 * surface.p)
    best = surface.value(alpha, s2)
    for da in (-1e-3, 1e-3):
        assert surface.value(alpha * math.exp(da), s2) < best
        if noise:
            assert surface.value(alpha, s2 * math.exp(da)) < best
    # α alone: the root of ∂L/∂log α at σ0² fixed
    a1, _ = surface.optimum(optimize_noise=False)
    assert abs(surface.gradient(a1, problem.noise_var)[0]) < 1e-12 * surface.p


@pytest.mark.parametrize("name", CASES)
def test_the_tolerance_admits_rounding_flatness_and_rejects_one_percent(name):
    problem, surface = _surface(cases()[name].problem)
    noise = name in NOISE
    alpha, s2 = surface.optimum(optimize_noise=noise)
    tol = surface.location_tolerance(alpha, s2, problem.dtype)
    assert 1e-8 < tol[0] < 1e-4 and tol[0] < math.log(1.01) / 100  # 1% is ≥ 100 tolerances
    if not noise:  # along log α the evidence drops by τ_L exactly at the tolerance's edge
        lam = surface.eigenvalues(s2)
        from laplace_lab.conformance.tolerance import lml_tolerance

        tau = lml_tolerance(
            surface.log_likelihood_at(s2),
            surface.log_prior(alpha),
            np.diag(lam + alpha),
            dtype=problem.dtype,
            n_rows=surface.n_rows,
        )
        drop = surface.value(alpha, s2) - surface.value(alpha * math.exp(tol[0]), s2)
        assert drop == pytest.approx(tau, rel=1e-3)


def test_the_fixed_map_optimum_is_not_the_refitted_mackay_optimum():
    # θ̂ re-fitted for every α (the true BLR evidence maximiser) is another point, far
    # outside the tolerance: a target that re-fits the MAP fails
    from laplace_lab.theory import BayesianLinearRegression

    problem, surface = _surface("linear-gaussian")
    for noise in (False, True):
        fixed = np.array(surface.optimum(optimize_noise=noise))
        refit = np.array(refitted_optimum(problem, optimize_noise=noise))
        tol = surface.location_tolerance(*fixed, problem.dtype)
        assert abs(math.log(refit[0] / fixed[0])) > 1e3 * tol[0]
    X = problem.X_train.numpy()
    Phi, y = np.hstack([X, np.ones((len(X), 1))]), problem.y_train.numpy()

    def evidence(a, s2):
        return BayesianLinearRegression(np.zeros(5), np.eye(5) / a, s2).log_evidence((Phi, y))

    a, s2 = refit  # noise optimised: a stationary point of the exact BLR evidence
    for da, dv in ((1e-4, 0.0), (0.0, 1e-4)):
        up = evidence(a * math.exp(da), s2 * math.exp(dv))
        down = evidence(a * math.exp(-da), s2 * math.exp(-dv))
        assert abs(up - down) / 2e-4 < 1e-6


def test_laplace_labs_adapter_passes_every_case():
    results = _outcomes(ours.predictive_variance)
    bad = {n: r.summary for n, r in results.items() if r.outcome is not Outcome.PASS}
    assert not bad, bad
    assert max(r.details["max_error_over_tolerance"] for r in results.values()) < 0.05


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        ("wrong_prior_as_variance", set(CASES)),  # no optimum has α* = 1
        ("wrong_coarse_grid", set(CASES)),  # a factor-2 grid is up to √2 off
        ("wrong_fixed_noise", NOISE),  # right wherever σ0² is kept
        ("wrong_one_percent", set(CASES)),
    ],
)
def test_wrong_optimisers_fail_exactly_their_cases(mutant, expected):
    results = _outcomes(f"{MUTANTS}:{mutant}")
    assert not [r for r in results.values() if r.outcome is Outcome.ERROR]
    failed = {n for n, r in results.items() if r.outcome is Outcome.FAIL}
    assert failed == expected
    assert {n for n, r in results.items() if r.outcome is Outcome.PASS} == set(CASES) - expected


def test_answers_outside_the_contract_are_errors():
    def target(*args, **kwargs):
        return ours.predictive_variance(*args, **kwargs)

    target.optimize_prior = lambda *args, **kwargs: 1.5  # α alone, not the pair
    (result,) = validate(target, only=["empirical-bayes/mlp-binary"]).results
    assert result.outcome is Outcome.ERROR and "(prior_precision, noise_var)" in result.summary
    assert "optimize_noise=False" in result.reproducer
    target.optimize_prior = lambda *args, **kwargs: (-1.0, 1.0)
    (result,) = validate(target, only=["empirical-bayes/mlp-binary"]).results
    assert result.outcome is Outcome.ERROR and "positive finite" in result.summary


def test_the_reproducer_of_a_failure_reproduces_it():
    (result,) = validate(
        f"{MUTANTS}:wrong_coarse_grid", only=["empirical-bayes/linear-gaussian-noise"]
    ).results
    assert result.outcome is Outcome.FAIL
    namespace: dict = {}
    exec(result.reproducer.replace("print(got)", "pass"), namespace)
    assert list(namespace["got"]) == pytest.approx(result.details["got"], rel=1e-14)


def test_bad_input_is_refused_naming_the_argument():
    p = build_problem("mlp-binary", seed=0)
    args = (p.model, p.X_train, p.y_train)
    kw = {"likelihood": "binary", "noise_var": 1.0, "optimize_noise": False}
    with pytest.raises(ValueError, match="optimize_noise=True needs likelihood='regression'"):
        ours.optimize_prior(*args, **{**kw, "optimize_noise": True}, prior_precision=2.0)
    with pytest.raises(TypeError, match="prior_precision must be a real number"):
        ours.optimize_prior(*args, **kw, prior_precision=np.ones(p.p))
    with pytest.raises(ValueError, match="noise_var must be positive"):
        ours.optimize_prior(*args, **{**kw, "noise_var": 0.0}, prior_precision=2.0)
    with pytest.raises(TypeError, match="optimize_noise must be a bool"):
        ours.optimize_prior(*args, **{**kw, "optimize_noise": "yes"}, prior_precision=2.0)
