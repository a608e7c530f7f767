"""The dtype-aware tolerance rule: it bounds a correct float32 implementation's error, and it
refuses float32 accuracy where the model is float64."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from laplace_lab.conformance import Outcome, validate
from laplace_lab.conformance.tolerance import gamma, unit_roundoff, variance_tolerance
from laplace_lab.theory.strategies import ggn_factors, prior_precisions


@given(ggn_factors(max_n=5, max_p=6), prior_precisions(p=6))
def test_the_bound_is_at_least_4_gamma_relative(factor, v):
    J = factor.J
    p = J.shape[1]
    omega = J.T @ J + np.diag(v[:p])
    tol = variance_tolerance(omega, J, v[:p], dtype=np.float64, n_rows=len(J))
    exact = np.einsum("ij,ij->i", J, np.linalg.solve(omega, J.T).T)
    # ‖Ω‖‖Ω⁻¹g‖² ≥ gᵀΩ⁻¹g: never tighter than a relative error of 4γ
    assert np.all(tol >= 4 * gamma(np.float64, len(J), p) * exact * (1 - 1e-12))


def test_unit_roundoff_of_each_dtype():
    import torch

    assert unit_roundoff(torch.float32) == 2.0**-24 and unit_roundoff(np.float64) == 2.0**-53


def test_a_correct_float32_implementation_passes_float32_and_fails_float64():
    v = validate("tests.conformance.mutant_targets:dense_float32", only=["predictive/"])
    for r in v.results:
        float32 = r.case.problem.endswith("-float32")
        assert r.outcome is (Outcome.PASS if float32 else Outcome.FAIL), r.summary
        if float32:  # its error is float32 roundoff, far inside the bound
            assert r.details["max_relative_error"] < 2e-6
            assert r.details["max_error_over_tolerance"] < 0.1
        else:  # ... which is 1e5 times the float64 bound
            assert r.details["max_error_over_tolerance"] > 1e4
