"""The diagonal subnetwork Laplace cases (``diagonal_predictive_variance`` with ``subset``):
laplace-lab passes every one, each wrong answer beside them is far outside the tolerance,
the oracle is exact Bayesian linear regression where Ω_SS is diagonal, and injected bugs
fail exactly their cases."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases, validate
from laplace_lab.conformance.catalog.predictive import blr_variances

OURS = "laplace_lab.conformance.adapters.numerics:predictive_variance"
MUTANTS = "tests.conformance.mutant_targets"
SUBNETWORK = [n for n in cases() if n.startswith("diagonal-subnetwork/")]


@pytest.fixture(scope="module")
def ours():
    return validate(OURS, only=SUBNETWORK)


def test_the_cases_take_unsorted_subsets_spanning_the_layers_in_every_likelihood():
    problems = {cases()[n].problem for n in SUBNETWORK}
    likelihoods, dtypes = set(), set()
    for name in problems:
        p = build_problem(name, seed=0)
        S = p.subset
        assert S.size == 12 and np.any(np.diff(S) < 0)  # unsorted
        first = sum(int(t.numel()) for t in list(p.model.parameters())[:2])
        assert S.min() < first <= S.max()  # both layers
        likelihoods.add(p.likelihood)
        dtypes.add(str(p.dtype))
    assert likelihoods == {"regression", "binary", "multiclass"}
    assert dtypes == {"torch.float32", "torch.float64"}
    assert any(np.ptp(build_problem(n).prior_vector()) > 0 for n in problems)


def test_laplace_lab_passes_every_case_well_inside_the_tolerance(ours):
    assert len(ours.results) == len(SUBNETWORK) >= 4
    assert {r.outcome for r in ours.results} == {Outcome.PASS}, ours.summary()
    assert max(r.details["max_error_over_tolerance"] for r in ours.results) < 0.05


def test_every_near_miss_fails_at_every_test_point(ours):
    # the smallest distance over test points and outputs of each wrong answer, in
    # tolerances: ≥ 2.5e3 in float32 and ≥ 1.7e10 in float64 (seed 0)
    for r in ours.results:
        near = r.details["near_misses"]
        assert set(near) == {
            "full_subnetwork",
            "sorted_test_columns",
            "prior_as_variance",
            "marginal_variances",
            "all_parameters",
        }
        floor = 1e3 if "float32" in r.case.name else 1e9
        assert min(low for low, _ in near.values()) > floor, (r.case.name, near)


def test_the_diagonal_subnetwork_is_bayesian_linear_regression_where_omega_is_diagonal():
    # orthogonal design columns: Ω = ΦᵀΦ/σ0² + V is diagonal, so on any subset S the
    # diagonal subnetwork Laplace is the Bayesian linear regression on the features Φ_S
    p = build_problem("linear-gaussian-orthogonal", seed=0)
    oracle = DenseOracle(p)
    p.subset = np.array([3, 0, 4], dtype=np.int64)  # (b, w₀, w₃): unsorted
    exact = blr_variances(p)
    np.testing.assert_allclose(oracle.diagonal_variance(p.subset), exact, rtol=1e-12)
    # and where Ω is not diagonal it is not: the linear-Gaussian subset problem
    q = build_problem("linear-gaussian-subset", seed=0)
    gap = np.abs(DenseOracle(q).diagonal_variance(q.subset) / blr_variances(q) - 1.0)
    assert gap.min() > 1e-3


def _failed(mutant: str) -> set[str]:
    v = validate(f"{MUTANTS}:{mutant}", only=SUBNETWORK)
    assert not any(r.outcome is Outcome.ERROR for r in v.results), v.summary()
    return {r.case.name for r in v.results if r.outcome is Outcome.FAIL}


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        # the test Jacobian's columns in sorted order against diag(Ω)_S in the subset's order
        ("wrong_diagonal_subnetwork_order", set(SUBNETWORK)),
        # the marginal variances diag(Ω_SS⁻¹) in place of diag(Ω_SS)⁻¹
        ("wrong_diagonal_inverse", set(SUBNETWORK)),
        # the prior precision read as a variance: no case has α = 1 or V = 1 on all of S
        ("structured_prior_as_variance", set(SUBNETWORK)),
        # σ0² = 0.3 left out: the regression cases only
        ("structured_forgotten_noise", {n for n in SUBNETWORK if "regression" in n}),
    ],
)
def test_diagonal_subnetwork_bugs_fail_exactly_their_cases(mutant, expected):
    assert _failed(mutant) == expected
