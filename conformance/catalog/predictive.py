"""Predictive-variance cases: exact Bayesian linear regression, and MLPs against the dense GGN.

On the linear-Gaussian problems the answer is analytic and computed without any network
code: linearized Laplace on f(x) = wᵀx + b is Bayesian linear regression on the features
(x, 1) with prior N(0, V⁻¹), so the epistemic variance is φ(x*)ᵀ S_n φ(x*) with
S_n = (V + ΦᵀΦ/σ0²)⁻¹; on a subset S (the other weights fixed at the MAP) it is Bayesian
linear regression on the features Φ_S with prior precision V_S. On the MLPs the answer is the
dense float64 oracle (:mod:`laplace_lab.conformance.oracle`). The tolerance is the dtype
rule of :mod:`laplace_lab.conformance.tolerance`.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2)–(5).
.. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
   "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §3.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.theory import BayesianLinearRegression


def blr_variances(problem: Problem) -> np.ndarray:
    """φ_S(x*)ᵀ S_n φ_S(x*) from the closed-form posterior of Bayesian linear regression."""
    X = problem.X_train.detach().double().numpy()
    Xs = problem.X_test.detach().double().numpy()
    y = problem.y_train.detach().double().numpy()  # (the covariance does not depend on y)
    Phi, Phi_s = (np.hstack([A, np.ones((A.shape[0], 1))]) for A in (X, Xs))
    S = np.arange(Phi.shape[1]) if problem.subset is None else problem.subset
    V = problem.prior_vector()[S]
    blr = BayesianLinearRegression(np.zeros(S.size), np.diag(1.0 / V), problem.noise_var)
    cov = blr.posterior((Phi[:, S], y)).cov
    return np.einsum("mi,ij,mj->m", Phi_s[:, S], cov, Phi_s[:, S])


def check_variances(
    target,
    problem: Problem,
    oracle: DenseOracle,
    *,
    exact: bool = False,
    expected: np.ndarray | None = None,
) -> Check:
    """The target's variances against Bayesian linear regression (``exact``), a closed form
    given as ``expected`` (judged as exact), or the oracle."""
    subset = problem.subset
    out = call_target(target, "predictive_variance", problem, rows=slice(None), subset=subset)
    exact = exact or expected is not None
    if expected is None:
        expected = blr_variances(problem) if exact else oracle.predictive_variance(subset)
    expr = call_expression("predictive_variance", problem, rows=slice(None), subset=subset)
    got = target_array(out, "the predictive variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression("predictive_variance", problem, rows=rows, subset=subset)

    what = "Bayesian linear regression" if exact else "dense GGN oracle"
    tol = oracle.variance_tolerance(subset)
    return compare_values(got, expected, tol, what=f"variance vs {what}", call=call)


_LINEAR = {
    "linear-gaussian": "linearized Laplace on a linear model is Bayesian linear regression",
    "linear-gaussian-subset": "an unsorted 3-of-5 subset: regression on those features",
    "linear-gaussian-diagonal-prior": "a diagonal prior V in parameters() order",
    "linear-gaussian-float32": "the float64 case rounded to float32 (model and data)",
}
_MLP = {
    "mlp-regression": "tanh MLP 3-8-1 (p = 41), N = 16 < p, all parameters",
    "mlp-regression-subset": "12 parameters, unsorted and non-contiguous across layers",
    "mlp-regression-diagonal-prior": "a subset with a diagonal prior (V restricted to S)",
    "mlp-regression-float32": "float32 model and data",
    "mlp-regression-subset-float32": "float32, unsorted subset",
    "mlp-binary": "one logit, Bernoulli likelihood: H = σ(f)(1 − σ(f))",
    "mlp-binary-subset": "one logit, unsorted subset",
    "mlp-multiclass": "3 logits, softmax: H = diag(π) − ππᵀ, variances (M, C)",
    "mlp-multiclass-subset": "3 logits, unsorted subset",
    "mlp-multiclass-float32": "3 logits in float32",
    "cnn-multiclass": "digits 0-2, Conv2d(1, 2, 3, stride 2) → tanh → Linear(18, 3) (p = 77)",
}


def _register(problem: str, description: str, *, exact: bool) -> None:
    @conformance_case(
        f"predictive/{problem}",
        capability="predictive_variance",
        problem=problem,
        description=description,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_variances(target, problem, oracle, exact=exact)


for _name, _text in _LINEAR.items():
    _register(_name, _text, exact=True)
for _name, _text in _MLP.items():
    _register(_name, _text, exact=False)
