"""The KFAC oracle of networks with Conv2d layers (KFAC-expand and KFAC-reduce) against the
regime where it is exact, against the MLP oracle where weight sharing is absent, and against
curvlinops' Kronecker factors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from laplace_lab.conformance import DenseOracle, build_problem
from laplace_lab.conformance.kronecker import KFACOracle, SharedKFACOracle, conv_patches
from laplace_lab.conformance.problems import conv_features
from laplace_lab.theory import BayesianLinearRegression


@pytest.fixture(scope="module")
def cnn():
    return DenseOracle(build_problem("cnn-multiclass", seed=0))


@pytest.fixture(scope="module")
def conv_linear():
    return DenseOracle(build_problem("conv-linear-gaussian", seed=0))


def _blr_variances(problem):
    """Bayesian linear regression on the features (Σ_r patch_r, R), written without the
    network."""
    F = conv_features(problem.X_train.numpy())
    Fs = conv_features(problem.X_test.numpy())
    blr = BayesianLinearRegression(np.zeros(10), np.eye(10) / problem.prior_precision, 0.3)
    cov = blr.posterior((F, problem.y_train.numpy())).cov
    return np.einsum("mi,ij,mj->m", Fs, cov, Fs)


def test_the_conv_linear_model_is_linear_in_its_features(conv_linear):
    p = conv_linear.problem
    assert conv_linear.J.shape == (12, 1, 10)
    np.testing.assert_array_equal(conv_linear.J[:, 0, :], conv_features(p.X_train.numpy()))
    np.testing.assert_array_equal(conv_linear.G[:, 0, :], conv_features(p.X_test.numpy()))


def test_joint_kfac_reduce_of_a_summed_conv_is_bayesian_linear_regression(conv_linear):
    reduce = SharedKFACOracle(conv_linear, "joint", "reduce")
    expand = SharedKFACOracle(conv_linear, "joint", "expand")
    scale = np.abs(conv_linear.ggn).max()
    assert np.abs(reduce.curvature - conv_linear.ggn).max() < 1e-14 * scale
    exact = _blr_variances(conv_linear.problem)
    np.testing.assert_allclose(reduce.predictive_variance(), exact, rtol=1e-13)
    assert np.all(reduce.variance_tolerance() < 1e-11 * exact)
    # expand sums Σ_r ã_r ã_rᵀ instead of (Σ_r ã_r)(Σ_r ã_r)ᵀ: 7% to 61% off at seed 0
    gap = np.abs(expand.predictive_variance() - exact) / exact
    assert 0.05 < gap.min() and gap.max() < 0.7, gap


@pytest.mark.parametrize("name", ["mlp-regression", "mlp-multiclass"])
def test_both_approximations_are_kfac_on_an_mlp(name):
    o = DenseOracle(build_problem(name, seed=0))
    for convention, approximation in itertools.product(
        ("joint", "separate"), ("expand", "reduce")
    ):
        ref = KFACOracle(o, convention).curvature
        got = SharedKFACOracle(o, convention, approximation).curvature
        assert np.abs(got - ref).max() < 1e-14 * np.abs(ref).max()


def test_the_reduce_output_factor_of_a_conv_layer_is_its_bias_jacobians(cnn):
    # ∂f/∂b of a conv layer is Σ_r D_r, so reduce's G is Σ_n J_bᵀ H_n J_b
    conv = SharedKFACOracle(cnn, "joint", "reduce").factors[0]
    Jb = cnn.J[:, :, conv.bias]
    G = np.einsum("nco,ncd,ndq->oq", Jb, cnn.H, Jb)
    assert np.abs(conv.G - G).max() < 1e-13 * np.abs(G).max()
    expand = SharedKFACOracle(cnn, "joint", "expand").factors[0]
    assert np.abs(expand.G - G).max() > 0.1 * np.abs(G).max()


def test_patches_by_index_loops_are_torch_unfold():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 2, 7, 6))
    for stride, padding in [(1, 0), (2, 1), ((2, 1), (0, 2))]:
        conv = torch.nn.Conv2d(2, 3, (3, 2), stride=stride, padding=padding)
        got = conv_patches(x, conv)
        ref = torch.nn.functional.unfold(
            torch.as_tensor(x), (3, 2), stride=stride, padding=padding
        ).numpy()
        np.testing.assert_array_equal(got, np.swapaxes(ref, 1, 2))


@pytest.mark.parametrize(
    ("separate", "approximation"), itertools.product((False, True), ("expand", "reduce"))
)
def test_the_factors_are_curvlinops_kfac_factors(cnn, conv_linear, separate, approximation):
    curvlinops = pytest.importorskip("curvlinops")
    convention = "separate" if separate else "joint"
    cases = [
        (cnn, torch.nn.CrossEntropyLoss(reduction="sum"), 1.0),
        # MSELoss's output Hessian is 2, the Gaussian likelihood's 1/σ0²
        (conv_linear, torch.nn.MSELoss(reduction="sum"), 0.5 / conv_linear.problem.noise_var),
    ]
    for oracle, loss, c in cases:
        p = oracle.problem
        y = p.y_train if p.likelihood == "multiclass" else p.y_train.reshape(-1, 1)
        op = curvlinops.KFACLinearOperator(
            p.model,
            loss,
            list(p.model.parameters()),
            [(p.X_train, y)],
            fisher_type="type-2",
            kfac_approx=approximation,
            separate_weight_and_bias=separate,
            check_deterministic=False,
        )
        op.compute_kronecker_factors()
        ours = SharedKFACOracle(oracle, convention, approximation).factors
        names = [n for n, m in p.model.named_modules() if hasattr(m, "weight")]
        assert len(names) == len(ours)
        for name, f in zip(names, ours, strict=True):
            A = f.A[:-1, :-1] if separate else f.A
            G = op._gradient_covariances[name].numpy() * c
            np.testing.assert_allclose(
                op._input_covariances[name].numpy(), A, rtol=0, atol=1e-13 * np.abs(A).max()
            )
            np.testing.assert_allclose(G, f.G, rtol=0, atol=1e-13 * np.abs(f.G).max())


def test_conventions_and_approximations_differ_by_far_more_than_the_tolerance():
    from laplace_lab.conformance import cases
    from laplace_lab.conformance.catalog.kfac import approximation_gap

    conv = {c.problem for n, c in cases().items() if n.startswith("kfac/") and "-expand" in n}
    assert conv == {"cnn-multiclass", "conv-linear-gaussian"}
    o = DenseOracle(build_problem("cnn-multiclass", seed=0))
    for convention in ("joint", "separate"):
        expand = SharedKFACOracle(o, convention, "expand")
        ratio = approximation_gap(o, convention) * expand.predictive_variance()
        assert (ratio / expand.variance_tolerance()).min() > 1e9
    for approximation in ("expand", "reduce"):
        joint = SharedKFACOracle(o, "joint", approximation).predictive_variance()
        separate = SharedKFACOracle(o, "separate", approximation).predictive_variance()
        assert np.min(np.abs(joint - separate) / joint) > 0.01
