"""Log-marginal-likelihood cases: the evidence of Bayesian linear regression, and the dense
Laplace formula on MLPs.

The Laplace approximation log p(y|X) ≈ log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω
is exact for a Gaussian-linear model at its MAP, so on the linear-Gaussian problems it must
equal the closed-form evidence log N(y; 0, σ0²I + Φ V⁻¹ Φᵀ)
(:meth:`laplace_lab.theory.BayesianLinearRegression.log_evidence`). On the MLPs (at their
MAP) the reference is the same formula evaluated by the dense oracle, which checks the
normalisation of each likelihood and of the prior.

References
----------
.. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
   Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §2
   (the Laplace approximation of the evidence) and §5 (conjugate Bayesian linear regression).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import lml_tolerance
from laplace_lab.theory import BayesianLinearRegression


def blr_evidence(problem: Problem) -> float:
    """log p(y | X) of Bayesian linear regression on the features (x, 1), prior N(0, V⁻¹)."""
    X = problem.X_train.detach().double().numpy()
    y = problem.y_train.detach().double().numpy()
    Phi = np.hstack([X, np.ones((X.shape[0], 1))])
    V = problem.prior_vector()
    blr = BayesianLinearRegression(np.zeros(V.size), np.diag(1.0 / V), problem.noise_var)
    return blr.log_evidence((Phi, y))


def check_evidence(
    target,
    problem: Problem,
    oracle: DenseOracle,
    *,
    exact: bool = False,
    expected: float | None = None,
) -> Check:
    """The target's log marginal likelihood against the evidence of Bayesian linear
    regression (``exact``), a closed form given as ``expected``, or the dense formula."""
    expr = call_expression("log_marginal_likelihood", problem)
    out = call_target(target, "log_marginal_likelihood", problem)
    got = target_array(out, "the log marginal likelihood", (1,), expr)
    exact = exact or expected is not None
    if expected is None:
        expected = blr_evidence(problem) if exact else oracle.log_marginal_likelihood
    expected = np.array([expected])
    tol = lml_tolerance(
        oracle.log_likelihood,
        oracle.log_prior,
        oracle.omega,
        dtype=problem.dtype,
        n_rows=oracle.n_rows,
    )
    what = "the evidence of Bayesian linear regression" if exact else "the dense Laplace formula"
    return compare_values(
        got,
        expected,
        np.array([tol]),
        what=f"log p(y|X) vs {what}",
        call=lambda i: expr,
        per_point=False,
    )


_CASES = {
    "linear-gaussian": (True, "exact: Laplace at the MAP of a linear-Gaussian model"),
    "linear-gaussian-diagonal-prior": (True, "exact, with a diagonal prior"),
    "linear-gaussian-float32": (True, "exact, model and data rounded to float32"),
    "mlp-regression": (False, "Gaussian likelihood with σ0² ≠ 1"),
    "mlp-binary": (False, "Bernoulli likelihood"),
    "mlp-multiclass": (False, "categorical likelihood"),
}


def _register(problem: str, exact: bool, text: str) -> None:
    @conformance_case(
        f"evidence/{problem}",
        capability="log_marginal_likelihood",
        problem=problem,
        description=text,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_evidence(target, problem, oracle, exact=exact)


for _name, (_exact, _text) in _CASES.items():
    _register(_name, _exact, _text)
