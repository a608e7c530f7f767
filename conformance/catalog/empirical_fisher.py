"""Empirical-Fisher Laplace cases: the posterior N(θ̂, (EF + V)⁻¹), full and diagonal.

The capability ``ef_predictive_variance`` returns the linearized-Laplace variances with the
empirical Fisher (EF) in place of the GGN,

    EF = Σ_n g_n g_nᵀ,   g_n = ∇_θ [−log p(y_n | f(x_n; θ))] at θ̂ = J_nᵀ r_n,

r_n = (f_n − y_n)/σ0² (Gaussian), σ(f_n) − y_n (Bernoulli) or π_n − e_{y_n} (softmax):
``structure`` ``"full"`` gives gᵀ(EF + V)⁻¹g, ``"diag"`` gᵀ diag(EF + V)⁻¹ g, per output for
C logits. The oracle (:meth:`~laplace_lab.conformance.oracle.DenseOracle.ef_variance`) forms
g_n from its float64 autograd Jacobians and the residuals, EF densely, and solves. On
``linear-gaussian-diagonal-prior`` the closed form is written from the design alone: with
φ = (x, 1) and the residuals r_n = φ_nᵀθ̂ − y_n of the Bayesian-linear-regression posterior
mean, EF = Σ_n φ_n φ_nᵀ r_n²/σ0⁴.

Tolerance (:meth:`~laplace_lab.conformance.oracle.DenseOracle.ef_tolerance`): the variance
(full) or diagonal rule of :mod:`laplace_lab.conformance.tolerance` on P = EF + V, with the
perturbation of P widened by the gradients' own errors: a target's g_n is off by at most
γ·ĝ_n with ĝ_n = |J_n|ᵀ(|r_n| + s_n), where s_n bounds the residual's error (the forward pass
|δf| ≤ γ|J_n||θ̂| of the mean rule through H_n, the Jacobian of σ and softmax; for regression
also the subtraction f − y), so δ(wᵀPw) ≤ 2γ Σ_n |g_nᵀw| ĝ_nᵀ|w| (w = P⁻¹g) and
δP_ii ≤ 2γ Σ_n |g_ni| ĝ_ni.

What each case rules out: the EF is not the GGN — on every problem the residuals are of the
noise's size and the two posteriors' variances differ by 7.9–85% per test point (each case
records the range, ``ggn_relative_difference``), at least 9e10 tolerances in float64 and 170
in float32 (seed 0), so a target that returns the GGN fails every case; the mean EF/N (the
``reduction="mean"`` reading of a torch loss) differs by 9.8–598%. Every case breaks the
symmetric readings: α = 2.5 or a non-isotropic V, σ0² = 0.3 (where EF/σ0⁴ ≠ EF/σ0² ≠ EF),
three classes.

References
----------
.. [1] F. Kunstner, L. Balles, P. Hennig, "Limitations of the Empirical Fisher Approximation
   for Natural Gradient Descent", NeurIPS 2019, arXiv:1905.12558.
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux – Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (the EF as
   the Hessian approximation of a Laplace posterior).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

CAPABILITY = "ef_predictive_variance"


def linear_ef_variances(problem: Problem) -> np.ndarray:
    """φ(x*)ᵀ(Φᵀ diag(r²/σ0⁴) Φ + V)⁻¹φ(x*) for f(x) = wᵀx + b, from the design and the
    residuals r = Φθ̂ − y alone (θ̂ = (w, b) in ``parameters()`` order)."""
    import torch

    X = problem.X_train.detach().double().numpy()
    Xs = problem.X_test.detach().double().numpy()
    y = problem.y_train.detach().double().numpy()
    theta = torch.nn.utils.parameters_to_vector(problem.model.parameters()).detach().double()
    Phi, Phi_s = (np.hstack([A, np.ones((A.shape[0], 1))]) for A in (X, Xs))
    r = Phi @ theta.numpy() - y
    P = (Phi * (r**2 / problem.noise_var**2)[:, None]).T @ Phi + np.diag(problem.prior_vector())
    return np.einsum("mi,mi->m", Phi_s, np.linalg.solve(P, Phi_s.T).T)


def ggn_gap(oracle: DenseOracle, structure: str) -> list[float]:
    """[min, max] over test points (and outputs) of |v_EF − v_GGN| / v_EF."""
    ef = oracle.ef_variance(structure)
    ggn = oracle.predictive_variance() if structure == "full" else oracle.diagonal_variance()
    gap = np.abs(ef - ggn) / ef
    return [float(gap.min()), float(gap.max())]


def check_ef(
    target, problem: Problem, oracle: DenseOracle, *, structure: str, exact: bool
) -> Check:
    """The target's empirical-Fisher variances against the closed form (``exact``: a linear
    model) or the dense oracle."""
    out = call_target(target, CAPABILITY, problem, rows=slice(None), structure=structure)
    expected = linear_ef_variances(problem) if exact else oracle.ef_variance(structure)
    expr = call_expression(CAPABILITY, problem, rows=slice(None), structure=structure)
    got = target_array(out, f"the empirical-Fisher {structure} variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows, structure=structure)

    what = "Σ φφᵀ r²/σ0⁴ of the linear model" if exact else f"the dense {structure} EF"
    tol = oracle.ef_tolerance(structure)
    check = compare_values(got, expected, tol, what=f"variance vs {what}", call=call)
    details = {**check.details, "ggn_relative_difference": ggn_gap(oracle, structure)}
    return Check(check.passed, check.summary, details, check.reproducer)


_CASES = {
    ("linear-gaussian-diagonal-prior", "full"): (
        "exact: Σ φφᵀ r²/σ0⁴ + V on (x, 1), a diagonal V, σ0² = 0.3"
    ),
    ("mlp-regression", "full"): "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5: g_n = J_nᵀ(f_n − y_n)/σ0²",
    ("mlp-regression", "diag"): "the same, diag(EF + V)",
    ("mlp-regression-diagonal-prior", "diag"): "a non-isotropic diagonal prior V, diag",
    ("mlp-binary", "full"): "one logit, Bernoulli: g_n = J_nᵀ(σ(f_n) − y_n)",
    ("mlp-binary", "diag"): "one logit, diag",
    ("mlp-multiclass", "full"): "3 logits, softmax: g_n = J_nᵀ(π_n − e_{y_n}), (M, C)",
    ("mlp-multiclass", "diag"): "3 logits, diag, (M, C)",
    ("mlp-multiclass-float32", "full"): "3 logits in float32",
}


def _register(problem: str, structure: str, text: str) -> None:
    exact = problem.startswith("linear")

    @conformance_case(
        f"empirical-fisher/{problem}-{structure}",
        capability=CAPABILITY,
        problem=problem,
        description=text,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_ef(target, problem, oracle, structure=structure, exact=exact)


for (_problem, _structure), _text in _CASES.items():
    _register(_problem, _structure, _text)
