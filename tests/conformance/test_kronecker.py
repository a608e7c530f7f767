"""The oracles of the diagonal and KFAC cases against the regimes where they are exact, and
the two KFAC conventions far enough apart that the cases separate them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from laplace_lab.conformance import DenseOracle, Problem, build_problem, cases
from laplace_lab.conformance.catalog.kfac import convention_gap
from laplace_lab.conformance.catalog.predictive import blr_variances
from laplace_lab.conformance.kronecker import KFACOracle


def _blocks(kfac: KFACOracle):
    """θ indices of each layer's [W b] block."""
    return [np.hstack([f.weight, f.bias[:, None]]).reshape(-1) for f in kfac.factors]


def _problem(model, n, likelihood="regression", seed=0):
    rng = np.random.default_rng(seed)
    X = torch.as_tensor(rng.normal(size=(n, 3)))
    with torch.no_grad():
        f = model(X)[:, 0]
    if likelihood == "multiclass":
        y = torch.as_tensor(rng.integers(0, 3, size=n))
    else:
        y = (f > 0).double() if likelihood == "binary" else f + 0.1
    X_test = torch.as_tensor(rng.normal(size=(4, 3)))
    noise = 0.3 if likelihood == "regression" else 1.0
    return Problem("hand-built", seed, model, X, y, X_test, likelihood, 2.5, noise)


def test_diagonal_laplace_is_exact_on_an_orthogonal_design():
    p = build_problem("linear-gaussian-orthogonal", seed=0)
    o = DenseOracle(p)
    off = o.ggn - np.diag(np.diag(o.ggn))
    assert np.abs(off).max() < 1e-13 * np.abs(o.ggn).max()  # ΦᵀΦ/σ0² diagonal
    exact = blr_variances(p)
    np.testing.assert_allclose(o.diagonal_variance(), exact, rtol=1e-12)
    np.testing.assert_allclose(o.predictive_variance(), exact, rtol=1e-12)
    assert np.all(o.diagonal_tolerance() < 1e-12 * exact)


def test_diagonal_laplace_is_not_the_marginal_variance_on_the_networks():
    o = DenseOracle(build_problem("mlp-regression", seed=0))
    marginal = (o.G[:, 0, :] ** 2) @ o.marginal_variances
    assert np.min(np.abs(marginal / o.diagonal_variance() - 1.0)) > 0.01


def test_joint_kfac_of_one_linear_layer_is_the_ggn_and_separate_drops_the_mean_input():
    p = build_problem("linear-gaussian", seed=0)
    o = DenseOracle(p)
    joint, separate = KFACOracle(o, "joint"), KFACOracle(o, "separate")
    scale = np.abs(o.ggn).max()
    assert np.abs(joint.curvature - o.ggn).max() < 1e-13 * scale
    # the W–b block of the GGN is Σ_n x_n / σ0² = N x̄ / σ0²; separate has zero there
    X = p.X_train.numpy()
    gap = joint.curvature - separate.curvature
    np.testing.assert_allclose(gap[:4, 4], X.sum(0) / p.noise_var, rtol=1e-12)
    assert np.abs(np.delete(np.delete(gap, 4, 0), 4, 1)).max() == 0.0


@pytest.mark.parametrize(
    ("layers", "n", "likelihood"),
    [
        ([3, 4, 2, 1], 10, "regression"),  # deep linear: δ_n is the same for every n
        ("tanh", 1, "regression"),  # N = 1: Σ_n of one Kronecker product
        ("tanh", 1, "binary"),
    ],
)
def test_kfac_blocks_are_exact_for_deep_linear_networks_and_one_data_point(layers, n, likelihood):
    torch.manual_seed(0)
    if layers == "tanh":
        model = torch.nn.Sequential(
            torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)
        ).double()
    else:
        model = torch.nn.Sequential(
            *[torch.nn.Linear(a, b) for a, b in itertools.pairwise(layers)]
        ).double()
    o = DenseOracle(_problem(model, n, likelihood))
    kfac = KFACOracle(o, "joint")
    for idx in _blocks(kfac):
        block = np.ix_(idx, idx)
        scale = np.abs(o.ggn[block]).max()
        assert np.abs(kfac.curvature[block] - o.ggn[block]).max() < 1e-13 * scale


def _softmax_layer(weight_scale):
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 3).double()
    with torch.no_grad():
        model.weight.mul_(weight_scale)  # 0: every point has the logits b, the same π
    return model


@pytest.mark.parametrize(("weight_scale", "n"), [(0.0, 10), (1.0, 1)])
def test_multiclass_kfac_is_exact_where_the_output_hessian_is_the_same_for_every_point(
    weight_scale, n
):
    # one softmax Linear layer, D_n = I: the block is Σ_n H_n ⊗ ã_n ã_nᵀ, and KFAC's
    # (Σ_n H_n) ⊗ (1/N) Σ_n ã_n ã_nᵀ equals it when every H_n is the same (W = 0) or N = 1
    o = DenseOracle(_problem(_softmax_layer(weight_scale), n, "multiclass"))
    kfac = KFACOracle(o, "joint")
    assert o.J.shape[1] == 3 and np.abs(o.H[0] @ np.ones(3)).max() < 1e-15  # H_n 1 = 0
    scale = np.abs(o.ggn).max()
    assert np.abs(kfac.curvature - o.ggn).max() < 1e-13 * scale
    # the output factor is Σ_n H_n itself, not a scalar weight times δδᵀ
    (f,) = kfac.factors
    np.testing.assert_allclose(f.G, o.H.sum(axis=0), rtol=0, atol=1e-14 * np.abs(f.G).max())


def test_multiclass_kfac_is_not_exact_when_the_output_hessians_differ():
    # W ≠ 0, N = 10: π_n (hence H_n) differs between points and KFAC's block is off; so is
    # the last layer of the multiclass MLP, whose case checks the KFAC definition itself
    o = DenseOracle(_problem(_softmax_layer(1.0), 10, "multiclass"))
    gap = np.abs(KFACOracle(o, "joint").curvature - o.ggn).max()
    assert gap > 1e-2 * np.abs(o.ggn).max()
    o = DenseOracle(build_problem("mlp-multiclass", seed=0))
    kfac = KFACOracle(o, "joint")
    for idx in _blocks(kfac):
        block = np.ix_(idx, idx)
        assert (
            np.abs(kfac.curvature[block] - o.ggn[block]).max() > 1e-2 * np.abs(o.ggn[block]).max()
        )


def test_multiclass_output_factor_is_the_sum_over_the_hessian_square_roots_columns():
    # G_l = Σ_n D_nᵀ H_n D_n = Σ_n Σ_c g_nc g_ncᵀ, g_nc = D_nᵀ r_nc for H_n = R_n R_nᵀ: here R_n
    # from an eigendecomposition of H_n (the oracle never factorises H_n)
    o = DenseOracle(build_problem("mlp-multiclass", seed=0))
    lam, U = np.linalg.eigh(o.H)
    R = U * np.sqrt(np.clip(lam, 0.0, None))[:, None, :]
    for f in KFACOracle(o, "joint").factors:
        D = o.J[:, :, f.bias]  # (N, C, out)
        g = np.einsum("nkc,nko->nco", R, D).reshape(-1, D.shape[2])
        np.testing.assert_allclose(g.T @ g, f.G, rtol=0, atol=1e-13 * np.abs(f.G).max())


def test_kfac_is_not_exact_outside_those_regimes():
    # the deep linear network under a Bernoulli likelihood: w_n differs between points
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)).double()
    o = DenseOracle(_problem(model, 10, "binary"))
    kfac = KFACOracle(o, "joint")
    idx = _blocks(kfac)[0]
    block = np.ix_(idx, idx)
    assert np.abs(kfac.curvature[block] - o.ggn[block]).max() > 1e-3 * np.abs(o.ggn[block]).max()


def test_the_conventions_differ_by_far_more_than_the_tolerance_on_every_kfac_case():
    conv = ("cnn-multiclass", "conv-linear-gaussian")  # tests/conformance/test_conv_kronecker.py
    problems = {c.problem for n, c in cases().items() if n.startswith("kfac/")} - set(conv)
    gaps = {}
    for name in sorted(problems):
        o = DenseOracle(build_problem(name, seed=0))
        gap = convention_gap(o)
        joint = KFACOracle(o, "joint")
        ratio = gap * joint.predictive_variance() / joint.variance_tolerance()
        assert ratio.min() > 30, (name, ratio.min())
        gaps[name] = (gap.min(), gap.max())
    # the largest relative difference per problem (recorded in docs/validation.md)
    assert {k: round(float(v[1]), 2) for k, v in gaps.items()} == {
        "linear-gaussian": 0.45,
        "mlp-binary": 0.14,
        "mlp-multiclass": 0.19,
        "mlp-regression": 0.31,
        "mlp-regression-float32": 0.31,
    }


def test_the_documented_example_passes_every_diagonal_and_kfac_case():
    from tests.readme import python_blocks, run_block

    (block,) = python_blocks("## Diagonal and KFAC Laplace", "docs/validation.md")
    result = run_block(block, "docs/validation.md")["result"]
    assert result.summary().endswith("24 cases: 24 PASS, 0 FAIL, 0 ERROR, 0 N/A, 0 SKIP.")


def test_ekfac_is_the_best_diagonal_in_kfacs_eigenbasis_and_keeps_the_trace():
    # George et al. 2018, §3: s = diag(Qᵀ B Q) minimises ‖B − Q diag(s) Qᵀ‖_F, so EKFAC is
    # at least as close to each exact GGN block as KFAC (diagonal in the same basis), and
    # tr(Q diag(s) Qᵀ) = tr(B)
    from laplace_lab.conformance.kronecker import EKFACOracle

    o = DenseOracle(build_problem("mlp-binary", seed=0))
    kfac, ekfac = KFACOracle(o, "joint"), EKFACOracle(o, "joint")
    for idx in _blocks(kfac):
        block = np.ix_(idx, idx)
        B, E, K = o.ggn[block], ekfac.curvature[block], kfac.curvature[block]
        assert np.linalg.norm(B - E) < 0.9 * np.linalg.norm(B - K)
        assert abs(np.trace(E) - np.trace(B)) < 1e-13 * np.trace(B)
        Q = np.kron(*(np.linalg.eigh(f)[1] for f in _factors_of(kfac, idx)))
        s_E, s_B = np.diag(Q.T @ E @ Q), np.diag(Q.T @ B @ Q)  # the same diagonal in Q
        assert np.abs(s_E - s_B).max() < 1e-13 * np.trace(B)


def _factors_of(kfac: KFACOracle, idx):
    (f,) = [f for f in kfac.factors if f.bias[0] in idx]
    return f.G, f.A


@pytest.mark.parametrize("convention", ["joint", "separate"])
def test_ekfac_equals_kfac_where_kfac_is_exact(convention):
    from laplace_lab.conformance.kronecker import EKFACOracle

    # one Linear layer, Gaussian likelihood: the joint block is G ⊗ A = the GGN; separate
    # drops the W–b block in both; either way EKFAC's second moments are KFAC's eigenvalues
    o = DenseOracle(build_problem("linear-gaussian", seed=0))
    scale = np.abs(o.ggn).max()
    e, k = EKFACOracle(o, convention).curvature, KFACOracle(o, convention).curvature
    assert np.abs(e - k).max() < 1e-13 * scale
    # deep linear network: every layer block is exact for KFAC, hence for EKFAC
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Linear(4, 2), torch.nn.Linear(2, 1)
    )
    o = DenseOracle(_problem(model.double(), 10))
    e = EKFACOracle(o, "joint").curvature
    for idx in _blocks(KFACOracle(o, "joint")):
        block = np.ix_(idx, idx)
        assert np.abs(e[block] - o.ggn[block]).max() < 1e-12 * np.abs(o.ggn[block]).max()


def test_ekfac_and_kfac_differ_by_far_more_than_the_tolerance_on_the_networks():
    from laplace_lab.conformance.catalog.ekfac import kfac_gap
    from laplace_lab.conformance.kronecker import EKFACOracle

    for name in ("mlp-regression", "mlp-regression-float32", "mlp-binary", "mlp-multiclass"):
        o = DenseOracle(build_problem(name, seed=0))
        for convention in ("joint", "separate"):
            e = EKFACOracle(o, convention)
            ratio = kfac_gap(o, convention) * e.predictive_variance() / e.variance_tolerance()
            assert ratio.min() > 8, (name, convention, ratio.min())


def test_the_documented_example_passes_every_ekfac_case():
    from tests.readme import python_blocks, run_block

    (block,) = python_blocks("## EKFAC Laplace", "docs/validation.md")
    result = run_block(block, "docs/validation.md")["result"]
    assert result.summary().endswith("10 cases: 10 PASS, 0 FAIL, 0 ERROR, 0 N/A, 0 SKIP.")
