"""True-Hessian Laplace cases: the Hessian of the negative log joint in place of the GGN, at
a MAP and away from one.

The capability ``hessian_predictive_variance`` returns gᵀΩ_H⁻¹g with
Ω_H = ∇²_θ Σ_n −log p(y_n | f(x_n; θ)) + V at the model's θ, which is the GGN precision plus
the residual term Σ_n Σ_c r_nc ∇²_θ f_c(x_n) (r_n the derivative of −log p(y_n | f) in the
outputs). The reference is :class:`~laplace_lab.conformance.oracle.HessianOracle` (autograd
Hessian in float64) and the tolerance its variance rule.

On ``linear-gaussian`` the model is linear in θ, so the residual term vanishes and the
answer is exact Bayesian linear regression. On the three MLPs at their MAP (regression,
binary, multiclass) the residual term does not vanish — residuals are not zero at a MAP,
only their Jacobian-weighted sum balances the prior — and on
``mlp-regression-nonstationary`` the model is a few Adam steps from its initialisation, its
gradient far from zero. Every case records ‖H − GGN‖_F/‖GGN‖_F, the smallest eigenvalue of
Ω_H (positive: the approximation exists), the norm of the gradient of the negative log
joint, and ``ggn_gap``, max |v_GGN − v_H| over the tolerance, by how far a target that
answers with the GGN fails (0 on the linear model).

References
----------
.. [1] D. J. C. MacKay, "A Practical Bayesian Framework for Backpropagation Networks",
   Neural Computation 4(3), 1992, §4.
.. [2] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets via
   local linearization", AISTATS 2021, arXiv:2008.08400, §3 (GGN vs. Hessian Laplace).
.. [3] J. Martens, "New Insights and Perspectives on the Natural Gradient Method", JMLR 21
   (2020), §8 (the Hessian is the GGN plus Σ r ∇²f).
"""

from __future__ import annotations

import functools

import numpy as np

from laplace_lab.conformance.catalog.predictive import blr_variances
from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle, HessianOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

CAPABILITY = "hessian_predictive_variance"


@functools.lru_cache(maxsize=8)
def hessian_oracle(oracle: DenseOracle) -> HessianOracle:
    """The :class:`HessianOracle` of ``oracle`` (built once per oracle)."""
    return HessianOracle(oracle)


def check_hessian(target, problem: Problem, oracle: DenseOracle, *, exact: bool) -> Check:
    """The target's true-Hessian variances against the dense oracle (``exact``: against
    Bayesian linear regression, which they equal for a linear model)."""
    hessian = hessian_oracle(oracle)
    out = call_target(target, CAPABILITY, problem, rows=slice(None))
    oracle_variance = hessian.predictive_variance()
    expected = blr_variances(problem) if exact else oracle_variance
    expr = call_expression(CAPABILITY, problem, rows=slice(None))
    got = target_array(out, "the true-Hessian variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows)

    what = "Bayesian linear regression" if exact else "dense Hessian oracle"
    tol = hessian.variance_tolerance()
    check = compare_values(got, expected, tol, what=f"variance vs {what}", call=call)
    gap = np.abs(oracle.predictive_variance() - oracle_variance) / tol
    details = {
        **check.details,
        "hessian_ggn_relative_difference": hessian.relative_difference,
        "min_eigenvalue": hessian.min_eigenvalue,
        "gradient_norm": hessian.gradient_norm,
        "ggn_gap": float(gap.max()),
    }
    return Check(check.passed, check.summary, details, check.reproducer)


_CASES = {
    "linear-gaussian": "linear model: the Hessian is the GGN; exact Bayesian linear regression",
    "mlp-regression": "tanh MLP 3-8-1 at its MAP, σ0² = 0.3: residual term Σ r ∇²f ≠ 0",
    "mlp-binary": "one logit at its MAP: r = σ(f) − y",
    "mlp-multiclass": "3 logits at its MAP: r = π − e_y, variances (M, C)",
    "mlp-regression-nonstationary": "tanh MLP 3-8-1 after 10 Adam steps: not a stationary point",
}


def _register(problem: str, text: str) -> None:
    exact = problem == "linear-gaussian"

    @conformance_case(
        f"hessian/{problem}", capability=CAPABILITY, problem=problem, description=text
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_hessian(target, problem, oracle, exact=exact)


for _name, _text in _CASES.items():
    _register(_name, _text)
