"""laplace-torch 0.3: the suite's findings stay reproduced, and Gradient-/Greedy-Laplace work
as laplace-torch masks, checked inside laplace-torch against laplace-lab's own predictive.

Skipped when laplace-torch is not installed (``make test`` installs it: see the Makefile).
"""

from __future__ import annotations

import numpy as np
import pytest

laplace = pytest.importorskip("laplace")

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases, validate  # noqa: E402
from laplace_lab.conformance.adapters.laplace_torch_masks import (  # noqa: E402
    GradientLaplaceSubnetMask,
    GreedyLaplaceSubnetMask,
)
from laplace_lab.numerics import (  # noqa: E402
    GGN,
    gradient_laplace,
    greedy_laplace,
    per_sample_jacobian,
    subnetwork_variance,
)

TARGET = "laplace_lab.conformance.adapters.laplace_torch:predictive_variance"
#: The cases of the per-library runs (the heavy ones only run in the scoreboard's
#: regeneration).
LIGHT = {n: c for n, c in cases().items() if not c.heavy}

# one worker validates every installed library once (tests/conformance/conftest.py)
pytestmark = pytest.mark.xdist_group("scoreboard")

# Finding 1: float64 models get a GGN formed in float32 (CurvlinopsGGN, all weights).
FLOAT32_GGN = {
    "predictive/linear-gaussian",
    "predictive/linear-gaussian-diagonal-prior",
    "predictive/mlp-regression",
    "predictive/mlp-binary",
    "predictive/mlp-multiclass",
    "predictive/cnn-multiclass",  # the CNN's GGN too
    "evidence/linear-gaussian",
    "evidence/linear-gaussian-diagonal-prior",
    "evidence/mlp-regression",
    "evidence/mlp-binary",
    "evidence/mlp-multiclass",
    # a prior mean μ0 ≠ 0 (prior_mean): right but for the same float32 GGN
    "prior-mean/predictive-mlp-regression",
    "prior-mean/evidence-linear-gaussian",
    "prior-mean/evidence-mlp-regression",
    # the closed-form links read the same float32-formed Σ (the MC and float32 cases pass)
    "probabilities/probit/mlp-binary",
    "probabilities/probit/mlp-multiclass",
    "probabilities/bridge/mlp-multiclass",
    # FullLLLaplace forms the last layer's GGN the same way
    "last-layer/mlp-regression-full",
    "last-layer/mlp-multiclass-full",
    "last-layer/cnn-multiclass-full",
    # CurvlinopsEF's full EF the same way
    "empirical-fisher/mlp-binary-full",
    "empirical-fisher/mlp-multiclass-full",
}
# Finding 2: a diagonal prior on a subnetwork is refused (FullSubnetLaplace and
# DiagSubnetLaplace). Finding 3: LowRankLaplace needs a module no PyPI package provides.
REFUSED = {
    "predictive/mlp-regression-diagonal-prior",
    "diagonal-subnetwork/mlp-regression-diagonal-prior",
    "low-rank/linear-gaussian-spectrum",
    "low-rank/mlp-regression",
    "low-rank/mlp-multiclass",
    "low-rank-evidence/linear-gaussian-spectrum",  # LowRankLaplace again (finding 3)
    "low-rank-evidence/mlp-regression",
    "low-rank-evidence/mlp-regression-diagonal-prior",
}
OFFERED_MASKS = {"largest_magnitude", "subnet_diagonal", "neural_linear"}
# KronLaplace gives every bias its own factor: the joint [W b] convention is not offered
# (on the MLPs, and on the Conv2d networks in both approximations).
JOINT_KFAC = {n for n in cases() if n.startswith("kfac/") and "-joint" in n}
# Structured posterior samples: KronLaplace has no joint convention (as above), and
# LowRankLaplace cannot run (finding 3).
STRUCTURED_SAMPLES_REFUSED = {
    n
    for n in cases()
    if n.startswith("structured-samples/") and (n.endswith("-joint") or "/low-rank/" in n)
}
# Last-layer Laplace: no one-logit likelihood, and the two-logit model [0, f] would make
# last_layer_jacobians take 2 outputs for the last layer's 1.
BINARY_LAST_LAYER = {n for n in cases() if n.startswith("last-layer/mlp-binary-")}
# One sigma_noise for all outputs: multi-output regression with per-output noise (finding 8).
PER_OUTPUT_NOISE = {n for n, c in cases().items() if c.problem.endswith("-multi-output")}
# Finding 4: optimize_prior_precision's default budget (100 Adam steps, lr 0.1) stops short
# of the evidence optimum.
EMPIRICAL_BAYES = {n for n in cases() if n.startswith("empirical-bayes/")}
# Finding 5: the empirical Fisher of a Gaussian likelihood is off by the factor 2σ0².
GAUSSIAN_EF = {
    n
    for n, c in cases().items()
    if c.capability == "ef_predictive_variance" and c.problem.startswith(("linear", "mlp-regr"))
}

# Finding 1 again: CurvlinopsHessian forms a float64 model's Hessian in float32 (the same line).
FLOAT32_HESSIAN = {n for n in cases() if n.startswith("hessian/")}


@pytest.fixture(scope="module")
def validation(validations):
    return validations["laplace-torch"]


def test_the_recorded_findings_and_nothing_else(validation):
    outcome = {r.case.name: r.outcome for r in validation.results}
    expected = {}
    for name, case in LIGHT.items():
        if case.capability == "subset_masks" and case.method not in OFFERED_MASKS:
            expected[name] = Outcome.SKIP
        elif case.capability == "ekfac_predictive_variance":  # no EKFAC Laplace in 0.3
            expected[name] = Outcome.SKIP
        elif case.capability == "minibatch_predictive_variance":  # no subsample scaling
            expected[name] = Outcome.SKIP
        elif name in FLOAT32_GGN or name in EMPIRICAL_BAYES or name in GAUSSIAN_EF:
            expected[name] = Outcome.FAIL
        elif name in FLOAT32_HESSIAN:
            expected[name] = Outcome.FAIL
        elif name in JOINT_KFAC | BINARY_LAST_LAYER | PER_OUTPUT_NOISE or (
            name in STRUCTURED_SAMPLES_REFUSED and name.endswith("-joint")
        ):  # not offered: refused by the adapter before laplace-torch is called
            expected[name] = Outcome.NA
        elif name in REFUSED | STRUCTURED_SAMPLES_REFUSED:  # laplace-torch raises
            expected[name] = Outcome.ERROR
        else:
            expected[name] = Outcome.PASS
    assert outcome == expected
    assert not validation.passed


def test_diag_and_kron_laplace_pass_well_inside_the_tolerance(validation):
    # DiagLaplace (8 cases, float64 included: its diagonal comes from torch.func Jacobians,
    # not from the float32 identity of finding 1) and KronLaplace on the separate convention
    # (5 MLP cases, the 3-class softmax MLP included: its type-2 G = Σ_n D_nᵀ H_n D_n, and
    # the CNN in KFAC-expand and KFAC-reduce, asdl_fisher_kwargs={"kfac_approx": ...})
    structured = {
        r.case.name: r.details["max_error_over_tolerance"]
        for r in validation.results
        if r.case.name.startswith(("diagonal/", "kfac/")) and r.case.name not in JOINT_KFAC
    }
    assert len(structured) == 15 and max(structured.values()) < 0.05, structured
    assert len(JOINT_KFAC) == 9
    for r in validation.results:
        if r.case.name in JOINT_KFAC:
            assert "no joint [W b] factor" in r.summary, r.summary


def test_kron_laplace_is_the_separate_convention_and_its_factors_are_curvlinops():
    # laplace-torch's Kron factors: [B, A] on the weight, [B] on the bias, with B the
    # gradient covariance Σ_n w_n δ_n δ_nᵀ and A the input covariance (1/N) Σ_n a_n a_nᵀ
    from laplace_lab.conformance.kronecker import KFACOracle

    p = build_problem("mlp-regression", seed=0)
    la = laplace.Laplace(
        p.model,
        "regression",
        subset_of_weights="all",
        hessian_structure="kron",
        sigma_noise=p.noise_var**0.5,
    )
    la.fit(DataLoader(TensorDataset(p.X_train, p.y_train.reshape(-1, 1)), batch_size=16))
    kfac = KFACOracle(DenseOracle(p), "separate")
    (w_B, w_A), (b_B,), (w2_B, w2_A), (b2_B,) = la.H_facs.kfacs
    for (B, A, Bb), f in zip([(w_B, w_A, b_B), (w2_B, w2_A, b2_B)], kfac.factors, strict=True):
        G = f.G * p.noise_var  # laplace-torch multiplies by 1/σ0² afterwards
        np.testing.assert_allclose((B * A[0, 0]).numpy(), G * f.A[0, 0], rtol=1e-12)
        np.testing.assert_allclose(Bb.numpy(), G, rtol=1e-12)
        np.testing.assert_allclose((A / A[0, 0]).numpy(), f.A[:-1, :-1] / f.A[0, 0], rtol=1e-12)


def test_multiclass_kron_laplace_factors_are_the_backpropagated_softmax_hessian():
    # likelihood="classification": curvlinops' type-2 KFAC of CrossEntropyLoss(sum), so the
    # output factor B is Σ_n D_nᵀ(diag(π_n) − π_nπ_nᵀ)D_n, on the weight and on the bias, and
    # the last layer's (D_n = I) is Σ_n H_n, whose rows sum to zero
    from laplace_lab.conformance.kronecker import KFACOracle

    p = build_problem("mlp-multiclass", seed=0)
    la = laplace.Laplace(
        p.model, "classification", subset_of_weights="all", hessian_structure="kron"
    )
    la.fit(DataLoader(TensorDataset(p.X_train, p.y_train), batch_size=16))
    kfac = KFACOracle(DenseOracle(p), "separate")
    (w_B, w_A), (b_B,), (w2_B, w2_A), (b2_B,) = la.H_facs.kfacs
    for (B, A, Bb), f in zip([(w_B, w_A, b_B), (w2_B, w2_A, b2_B)], kfac.factors, strict=True):
        scale = np.abs(f.G).max()
        np.testing.assert_allclose(Bb.numpy(), f.G, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(
            (B * A[0, 0]).numpy(), f.G * f.A[0, 0], rtol=0, atol=1e-12 * scale
        )
        np.testing.assert_allclose((A / A[0, 0]).numpy(), f.A[:-1, :-1] / f.A[0, 0], rtol=1e-12)
    np.testing.assert_allclose(b2_B.numpy().sum(axis=1), 0.0, atol=1e-13)


def test_float64_failures_are_float32_roundoff_not_gross_errors(validation):
    for r in validation.results:
        if r.case.name in FLOAT32_GGN:
            assert 1e-10 < r.details["max_relative_error"] < 1e-6, (r.case.name, r.summary)


def test_empirical_bayes_failures_are_the_step_budget(validation, monkeypatch):
    assert len(EMPIRICAL_BAYES) == 6
    for r in validation.results:
        if r.case.name in EMPIRICAL_BAYES:
            got, optimum = r.details["got"], r.details["oracle"]
            rel = max(abs(g / o - 1.0) for g, o in zip(got, optimum, strict=True))
            assert r.details["max_error_over_tolerance"] > 1.0 and 5e-6 < rel < 3e-3, r.summary
    # ten times the steps: laplace-torch's own evidence then gives the exact optimum
    from laplace_lab.conformance.adapters import laplace_torch as adapter

    monkeypatch.setattr(adapter, "MARGLIK_STEPS", 1000)
    more = validate(TARGET, only=["empirical-bayes/linear-gaussian", "empirical-bayes/mlp-binary"])
    assert [r.outcome for r in more.results] == [Outcome.PASS, Outcome.PASS], more.summary()


def test_the_errors_name_their_cause(validation):
    text = {r.case.name: r.summary for r in validation.results}
    assert (
        "Length of prior precision does not align"
        in text["predictive/mlp-regression-diagonal-prior"]
    )
    assert "asdfghjkl" in text["low-rank/mlp-regression"]
    assert "asdfghjkl" in text["low-rank-evidence/mlp-regression"]


def test_root_cause_of_the_float32_ggn_is_the_float32_identity():
    # CurvlinopsInterface.full multiplies the GGN operator by torch.eye(p): float32 by default
    from curvlinops import GGNLinearOperator

    p = build_problem("mlp-regression", seed=0)
    exact = 2.0 * p.noise_var * DenseOracle(p).ggn  # GGN of MSELoss(reduction="sum")
    op = GGNLinearOperator(
        p.model,
        torch.nn.MSELoss(reduction="sum"),
        list(p.model.parameters()),
        [(p.X_train, p.y_train.reshape(-1, 1))],
        check_deterministic=False,
    )
    scale = np.abs(exact).max()
    as_laplace_torch = (op @ torch.eye(op.shape[0])).double().numpy()
    with_float64_identity = (op @ torch.eye(op.shape[0], dtype=torch.float64)).numpy()
    assert np.abs(with_float64_identity - exact).max() < 1e-14 * scale
    assert np.abs(as_laplace_torch - exact).max() > 1e-9 * scale


def _loader(p, likelihood):
    y = p.y_train.reshape(-1, 1) if likelihood == "regression" else p.y_train
    return DataLoader(TensorDataset(p.X_train, y), batch_size=5)  # several batches


@pytest.mark.parametrize(
    ("problem", "likelihood"),
    [("mlp-regression", "regression"), ("mlp-multiclass", "classification")],
)
@pytest.mark.parametrize("mask_class", [GradientLaplaceSubnetMask, GreedyLaplaceSubnetMask])
def test_our_masks_inside_laplace_torch_match_our_predictive(problem, likelihood, mask_class):
    p = build_problem(problem, seed=0)
    s2 = p.noise_var
    loader = _loader(p, likelihood)
    options = {"likelihood": likelihood}
    if mask_class is GreedyLaplaceSubnetMask:
        options |= {"noise_var": s2, "prior_precision": 1.0}
    indices = mask_class(p.model, 10, **options).select(loader)
    noise = {"sigma_noise": s2**0.5} if likelihood == "regression" else {}
    la = laplace.Laplace(
        p.model,
        likelihood,
        subset_of_weights="subnetwork",
        hessian_structure="full",
        subnetwork_indices=indices,
        prior_precision=1.0,
        **noise,
    )
    la.fit(loader)
    Js, _ = la.backend.jacobians(p.X_test)
    theirs = la.functional_variance(Js).diagonal(dim1=1, dim2=2).numpy()

    J = per_sample_jacobian(p.model, p.X_train)
    G = per_sample_jacobian(p.model, p.X_test)
    if likelihood == "regression":
        ggn = GGN.regression(J, noise_var=s2, prior_precision=1.0)
        theirs = theirs[:, 0]
    else:
        ggn = GGN.multiclass(J, p.model(p.X_train).detach(), prior_precision=1.0, eps=0.0)
    if mask_class is GreedyLaplaceSubnetMask:
        # the mask's Ω is the paper's (App. C.5: multiclass H_n + 1e-6 I); ours here without it
        jittered = (
            ggn
            if likelihood == "regression"
            else GGN.multiclass(J, p.model(p.X_train).detach(), prior_precision=1.0)
        )
        S = greedy_laplace(jittered, 10)
    else:
        S = gradient_laplace(ggn.scores(), 10)
    assert sorted(indices.tolist()) == sorted(S.tolist())
    ours = subnetwork_variance(ggn, G, indices.numpy()).numpy()
    np.testing.assert_allclose(theirs, ours, rtol=1e-10)


def test_the_documented_reproducers_show_the_findings():
    from tests.readme import python_blocks, run_block

    blocks = python_blocks("## laplace-torch 0.3", "docs/validation.md")
    assert len(blocks) == 6  # the fifth, finding 5, runs in test_empirical_fisher.py
    # finding 8: a per-output sigma_noise stops the constructor
    assert "more than one value is ambiguous" in run_block(blocks[5])["message"]
    first = run_block(blocks[0])
    assert first["la"].H.dtype == torch.float64
    assert float((first["la"].H - first["Phi"].T @ first["Phi"]).abs().max()) > 1e-9
    second = run_block(blocks[1])
    assert second["la"].prior_precision_diag.tolist() == [1.0, 4.0]  # (b, w₀); per layer (4, 1)
    import importlib.util

    run_block(blocks[2])
    assert importlib.util.find_spec("asdfghjkl") is None
    fourth = run_block(blocks[3])  # its last fit: 1000 Adam steps reach the exact optimum
    assert abs(fourth["la"].prior_precision.item() / fourth["exact"] - 1.0) < 1e-6


def test_last_layer_laplace_takes_the_cases_last_layer_weight_then_bias(validation):
    # LLLaplace's last layer (FeatureExtractor: the last leaf module of the forward pass)
    # is the catalog's: its posterior mean is θ̂ on [W, b] in parameters() order
    from laplace_lab.conformance.catalog.last_layer import last_layer_indices

    p = build_problem("mlp-multiclass", seed=0)
    la = laplace.Laplace(p.model, "classification", subset_of_weights="last_layer")
    la.fit(DataLoader(TensorDataset(p.X_train, p.y_train), batch_size=16))
    theta = torch.nn.utils.parameters_to_vector(p.model.parameters()).detach().numpy()
    weight, bias = last_layer_indices(p.model)
    assert (weight.size, bias.size) == (24, 3)
    np.testing.assert_array_equal(la.mean.detach().numpy(), theta[np.concatenate([weight, bias])])
    for r in validation.results:
        if r.case.name in BINARY_LAST_LAYER:
            assert "no one-logit Bernoulli likelihood" in r.summary, r.summary
    assert len(BINARY_LAST_LAYER) == 3


def test_finding_1_the_hessian_is_right_but_formed_in_float32(validation):
    # CurvlinopsHessian: relative errors of float32 size on every true-Hessian case, far
    # below the 4–32% by which the GGN's variances differ from the Hessian's ...
    assert len(FLOAT32_HESSIAN) == 5
    for r in validation.results:
        if r.case.name in FLOAT32_HESSIAN:
            assert 1e-10 < r.details["max_relative_error"] < 1e-6, (r.case.name, r.summary)
            assert r.details.get("float32_sized"), r.summary
    # ... and with torch's default dtype float64 (its identity then float64) it passes
    from laplace_lab.conformance.adapters import laplace_torch as adapter

    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        v = validate(adapter.predictive_variance, only=["hessian/mlp-multiclass"])
    finally:
        torch.set_default_dtype(before)
    (r,) = v.results
    assert r.outcome is Outcome.PASS and r.details["max_error_over_tolerance"] < 0.05, r.summary
