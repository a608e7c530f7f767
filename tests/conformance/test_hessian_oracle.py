"""The true-Hessian oracle: the GGN on a linear model, the GGN plus the residual term
Σ_n Σ_c r_nc ∇²f_c(x_n) on an MLP, and curvlinops' HessianLinearOperator."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.conformance import DenseOracle, build_problem
from laplace_lab.conformance.catalog.predictive import blr_variances
from laplace_lab.conformance.oracle import HessianOracle


def _oracles(name: str) -> tuple[DenseOracle, HessianOracle]:
    oracle = DenseOracle(build_problem(name, seed=0))
    return oracle, HessianOracle(oracle)


def test_on_a_linear_gaussian_model_the_hessian_is_the_ggn_and_blr():
    oracle, hessian = _oracles("linear-gaussian")
    p = oracle.problem
    X = p.X_train.numpy()
    Phi = np.hstack([X, np.ones((X.shape[0], 1))])
    closed_form = Phi.T @ Phi / p.noise_var  # the precision of Bayesian linear regression
    np.testing.assert_allclose(hessian.nll_hessian, closed_form, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(oracle.ggn, closed_form, rtol=1e-13, atol=1e-13)
    assert hessian.relative_difference < 1e-14
    assert hessian.gradient_norm < 1e-12  # the exact posterior mean
    got = hessian.predictive_variance()
    np.testing.assert_array_less(np.abs(got - blr_variances(p)), hessian.variance_tolerance())


def _residual_term(problem) -> np.ndarray:
    """Σ_n Σ_c r_nc ∇²_θ f_c(x_n), one torch.func.hessian of the scalar f_c(x_n) per row and
    output, r_n from the likelihood's closed form."""
    model = problem.model
    names = [n for n, _ in model.named_parameters()]
    shapes = [t.shape for t in model.parameters()]
    sizes = [t.numel() for t in model.parameters()]
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach()

    def f(flat, x):
        tensors = {n: t.view(s) for n, s, t in zip(names, shapes, flat.split(sizes), strict=True)}
        return torch.func.functional_call(model, tensors, (x[None],))[0]

    with torch.no_grad():
        out = model(problem.X_train)
    y = problem.y_train
    if problem.likelihood == "regression":
        r = (out[:, 0] - y)[:, None] / problem.noise_var
    else:  # softmax: π_n − e_{y_n}
        r = torch.softmax(out, dim=1) - torch.nn.functional.one_hot(y, out.shape[1])
    total = torch.zeros(theta.numel(), theta.numel(), dtype=torch.float64)
    for n, x in enumerate(problem.X_train):
        for c in range(out.shape[1]):
            Hc = torch.func.hessian(lambda t, x=x, c=c: f(t, x)[c])(theta)
            total += r[n, c] * Hc
    return total.numpy()


@pytest.mark.parametrize("name", ["mlp-regression", "mlp-multiclass"])
def test_on_an_mlp_the_hessian_is_the_ggn_plus_the_residual_term(name):
    oracle, hessian = _oracles(name)
    R = _residual_term(oracle.problem)
    scale = np.abs(hessian.nll_hessian).max()
    np.testing.assert_allclose(hessian.nll_hessian - oracle.ggn, R, rtol=0, atol=1e-13 * scale)
    # at the MAP the residual term is far from zero: ‖H − GGN‖/‖GGN‖ = 0.17 and 0.88
    assert hessian.relative_difference > 0.1
    assert hessian.min_eigenvalue > 0.1  # a minimum: Ω_H positive definite


@pytest.mark.parametrize("name", ["mlp-regression", "mlp-multiclass"])
def test_the_hessian_is_curvlinops_hessian_linear_operator(name):
    curvlinops = pytest.importorskip("curvlinops")
    oracle, hessian = _oracles(name)
    p = oracle.problem
    if p.likelihood == "regression":  # MSELoss(sum) is 2σ0² times the Gaussian's −log p
        loss, y, c = torch.nn.MSELoss(reduction="sum"), p.y_train[:, None], 0.5 / p.noise_var
    else:
        loss, y, c = torch.nn.CrossEntropyLoss(reduction="sum"), p.y_train, 1.0
    params = list(p.model.parameters())
    op = curvlinops.HessianLinearOperator(
        p.model, loss, params, [(p.X_train[:7], y[:7]), (p.X_train[7:], y[7:])]
    )
    identity = torch.eye(p.p, dtype=torch.float64)
    H = c * (op @ identity).detach().numpy()
    scale = np.abs(hessian.nll_hessian).max()
    np.testing.assert_allclose(H, hessian.nll_hessian, rtol=0, atol=1e-13 * scale)
