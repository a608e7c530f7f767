"""curvlinops 3.0.1 behind the contract: every case it can serve passes, its Kronecker
factors are the oracle's (output side G, input side A) — on the last layer too, when it is
given only that layer's parameters — and the two ways to get a wrong answer from it — the
default Monte Carlo Fisher and a mean-reduced loss — are far off.

Skipped when curvlinops is not installed (``make test`` installs it with laplace-torch).
"""

from __future__ import annotations

import numpy as np
import pytest

curvlinops = pytest.importorskip("curvlinops")

import torch  # noqa: E402

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases  # noqa: E402
from laplace_lab.conformance.adapters.curvlinops import (  # noqa: E402
    last_layer_predictive_variance,
)
from laplace_lab.conformance.kronecker import KFACOracle  # noqa: E402

#: The cases of the per-library runs (the heavy ones only run in the scoreboard's
#: regeneration).
LIGHT = {n: c for n, c in cases().items() if not c.heavy}
SERVED = (
    "predictive_variance",
    "diagonal_predictive_variance",
    "kfac_predictive_variance",
    "ekfac_predictive_variance",
    "ef_predictive_variance",
    "last_layer_predictive_variance",
    "hessian_predictive_variance",
)


# one worker validates every installed library once (tests/conformance/conftest.py)
pytestmark = pytest.mark.xdist_group("scoreboard")


@pytest.fixture(scope="module")
def validation(validations):
    return validations["curvlinops"]


def test_every_case_it_serves_passes_well_inside_the_tolerance(validation):
    outcome = {r.case.name: r.outcome for r in validation.results}
    expected = {
        name: Outcome.PASS if case.capability in SERVED else Outcome.SKIP
        for name, case in LIGHT.items()
    }
    assert outcome == expected
    ratios = {
        r.case.name: r.details["max_error_over_tolerance"]
        for r in validation.results
        if r.outcome is Outcome.PASS
    }
    served = [n for n, case in LIGHT.items() if case.capability in SERVED]
    assert len(ratios) == len(served) and max(ratios.values()) < 0.05, ratios


def _kfac(p, *, joint: bool, **options):
    X, y = p.X_train, p.y_train.reshape(-1, 1)
    op = curvlinops.KFACLinearOperator(
        p.model,
        torch.nn.MSELoss(reduction=options.pop("reduction", "sum")),
        list(p.model.parameters()),
        [(X[:7], y[:7]), (X[7:], y[7:])],  # two batches: the factors accumulate
        check_deterministic=False,
        separate_weight_and_bias=not joint,
        **options,
    )
    op.compute_kronecker_factors()
    return op


@pytest.mark.parametrize("joint", [True, False])
def test_gradient_covariance_is_the_output_factor_and_input_covariance_the_input_one(joint):
    # curvlinops' "gradient covariance" is G_l = Σ_n w_n δ_n δ_nᵀ (here 2 Σ δδᵀ: the output
    # Hessian of a summed squared error is 2), its "input covariance" A_l = (1/N) Σ ã ãᵀ,
    # with the 1 appended for the joint [W b] factor; θ = vec_row(W) needs G ⊗ A
    p = build_problem("mlp-regression", seed=0)
    op = _kfac(p, joint=joint, fisher_type="type-2")
    oracle = KFACOracle(DenseOracle(p), "joint")
    for name, f in zip(("0", "2"), oracle.factors, strict=True):
        G = f.G * 2.0 * p.noise_var  # the oracle's G carries 1/σ0²
        A = f.A if joint else f.A[:-1, :-1]
        np.testing.assert_allclose(op._gradient_covariances[name].numpy(), G, rtol=1e-12)
        np.testing.assert_allclose(op._input_covariances[name].numpy(), A, rtol=1e-12)


def test_type2_gradient_covariance_of_softmax_is_the_backpropagated_output_hessian():
    # C = 3 logits, CrossEntropyLoss(reduction="sum"), type-2: curvlinops backpropagates the
    # columns of a square root of diag(π) − ππᵀ, so its G_l is the oracle's Σ_n D_nᵀ H_n D_n
    p = build_problem("mlp-multiclass", seed=0)
    op = curvlinops.KFACLinearOperator(
        p.model,
        torch.nn.CrossEntropyLoss(reduction="sum"),
        list(p.model.parameters()),
        [(p.X_train[:7], p.y_train[:7]), (p.X_train[7:], p.y_train[7:])],
        check_deterministic=False,
        fisher_type="type-2",
        separate_weight_and_bias=False,
    )
    op.compute_kronecker_factors()
    oracle = KFACOracle(DenseOracle(p), "joint")
    for name, f in zip(("0", "2"), oracle.factors, strict=True):
        G = op._gradient_covariances[name].numpy()
        np.testing.assert_allclose(G, f.G, rtol=0, atol=1e-13 * np.abs(f.G).max())
        np.testing.assert_allclose(op._input_covariances[name].numpy(), f.A, rtol=1e-12)
    # the last layer's G is Σ_n H_n: its rows sum to zero (softmax is shift-invariant)
    np.testing.assert_allclose(oracle.factors[1].G.sum(axis=1), 0.0, atol=1e-13)


def test_the_last_layer_alone_has_the_factors_sum_of_output_hessians_and_input_covariance():
    # KFACLinearOperator given only the last layer's [W, b] (separate, type-2, summed
    # CrossEntropyLoss) covers that layer alone; its G is Σ_n (diag(π_n) − π_nπ_nᵀ) (the
    # last layer is the output: D_n = I) and its A = (1/N) Σ_n a_n a_nᵀ without the 1
    p = build_problem("mlp-multiclass", seed=0)
    last = p.model[-1]
    op = curvlinops.KFACLinearOperator(
        p.model,
        torch.nn.CrossEntropyLoss(reduction="sum"),
        [last.weight, last.bias],
        [(p.X_train, p.y_train)],
        check_deterministic=False,
        fisher_type="type-2",
        separate_weight_and_bias=True,
    )
    op.compute_kronecker_factors()
    assert set(op._gradient_covariances) == set(op._input_covariances) == {"2"}
    oracle = DenseOracle(p)
    G = oracle.H.sum(axis=0)  # Σ_n H_n, the oracle's output Hessians
    np.testing.assert_allclose(op._gradient_covariances["2"].numpy(), G, rtol=0, atol=1e-13)
    A = KFACOracle(oracle, "separate").factors[-1].A[:-1, :-1]
    np.testing.assert_allclose(op._input_covariances["2"].numpy(), A, rtol=1e-12)


def test_the_last_layer_needs_a_bias():
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1, False)
    )
    X = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="bias"):
        last_layer_predictive_variance(
            model,
            X,
            torch.zeros(2),
            X,
            likelihood="regression",
            prior_precision=1.0,
            noise_var=1.0,
            structure="full",
        )


def test_the_defaults_are_not_the_ggn():
    # KFACLinearOperator's default fisher_type="mc" draws one label per point: its G is a
    # Monte Carlo estimate, off by tens of percent here; reduction="mean" divides G by N
    p = build_problem("mlp-regression", seed=0)
    exact = _kfac(p, joint=True, fisher_type="type-2")._gradient_covariances["0"].numpy()
    sampled = _kfac(p, joint=True)._gradient_covariances["0"].numpy()
    mean = _kfac(p, joint=True, fisher_type="type-2", reduction="mean")
    assert np.linalg.norm(sampled - exact) > 0.1 * np.linalg.norm(exact)
    np.testing.assert_allclose(mean._gradient_covariances["0"].numpy() * 16, exact, rtol=1e-12)
