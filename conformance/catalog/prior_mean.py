"""A prior with a non-zero mean μ0: the evidence and the predictive at the MAP it moves.

With the prior N(μ0, V⁻¹) the Laplace evidence is

    log p(y|θ̂) − ½(θ̂ − μ0)ᵀV(θ̂ − μ0) + ½ log det V − ½ log det Ω,

θ̂ the MAP of the loss regularised by ½(θ − μ0)ᵀV(θ − μ0). Ω = GGN(θ̂) + V does not
depend on μ0 given θ̂, so the predictive variances are the usual ones at the moved MAP
(the target is passed ``prior_mean`` and must not, e.g., re-fit or re-centre the model);
a target that ignores μ0 in the evidence is off by ½(θ̂ − μ0)ᵀV(θ̂ − μ0) − ½θ̂ᵀVθ̂. On
the linear-Gaussian model the evidence is exact: log N(y; Φμ0, σ0²I + ΦV⁻¹Φᵀ), the
evidence of Bayesian linear regression with prior mean μ0, computed without network code.

References
----------
.. [1] C. M. Bishop, "Pattern Recognition and Machine Learning", Springer 2006, §3.3 eqs.
   (3.48)–(3.51) (the posterior of Bayesian linear regression with prior mean m_0) and §4.4.1
   (the Laplace approximation of the evidence).
.. [2] A. Immer, M. Bauer, V. Fortuin, G. Rätsch, M. E. Khan, "Scalable Marginal Likelihood
   Estimation for Model Selection in Deep Learning", ICML 2021, arXiv:2104.04975, §3 (the
   Laplace evidence with a Gaussian prior).
"""

from __future__ import annotations

import inspect

import numpy as np

from laplace_lab.conformance.catalog.evidence import check_evidence
from laplace_lab.conformance.catalog.predictive import check_variances
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import NotOfferedError, call_expression
from laplace_lab.theory import BayesianLinearRegression


def require_prior_mean(target, capability: str, problem: Problem) -> None:
    """Refuse (N/A) a target whose ``capability`` takes no keyword ``prior_mean``: one written
    before the keyword existed is not offered the case rather than crashed by it."""
    fn = (
        target.predictive_variance
        if capability == "predictive_variance"
        else target.capabilities[capability]
    )
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it
        return
    if not any(p.name == "prior_mean" or p.kind is p.VAR_KEYWORD for p in params):
        raise NotOfferedError(
            f"not offered by the target: its {capability} takes no keyword prior_mean "
            "(a prior N(μ0, V⁻¹) with μ0 ≠ 0)",
            call_expression(capability, problem),
        )


def blr_prior_mean_evidence(problem: Problem) -> float:
    """log N(y; Φμ0, σ0²I + ΦV⁻¹Φᵀ): Bayesian linear regression on (x, 1), prior N(μ0, V⁻¹)."""
    X = problem.X_train.detach().double().numpy()
    y = problem.y_train.detach().double().numpy()
    Phi = np.hstack([X, np.ones((X.shape[0], 1))])
    V = problem.prior_vector()
    blr = BayesianLinearRegression(
        problem.prior_mean_vector(), np.diag(1.0 / V), problem.noise_var
    )
    return blr.log_evidence((Phi, y))


@conformance_case(
    "prior-mean/evidence-linear-gaussian",
    capability="log_marginal_likelihood",
    problem="linear-gaussian-prior-mean",
    description="exact: Bayesian linear regression with prior mean μ0 ≠ 0, at its MAP",
)
def evidence_linear(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    require_prior_mean(target, "log_marginal_likelihood", problem)
    return check_evidence(target, problem, oracle, expected=blr_prior_mean_evidence(problem))


@conformance_case(
    "prior-mean/evidence-mlp-regression",
    capability="log_marginal_likelihood",
    problem="mlp-regression-prior-mean",
    description="tanh MLP 3-8-1 at the MAP of N(μ0, V⁻¹): scatter (θ̂ − μ0)ᵀV(θ̂ − μ0)",
)
def evidence_mlp(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    require_prior_mean(target, "log_marginal_likelihood", problem)
    return check_evidence(target, problem, oracle)


@conformance_case(
    "prior-mean/predictive-mlp-regression",
    capability="predictive_variance",
    problem="mlp-regression-prior-mean",
    description="the GGN variances at the MAP μ0 moves (Ω does not depend on μ0 given θ̂)",
)
def predictive_mlp(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    require_prior_mean(target, "predictive_variance", problem)
    return check_variances(target, problem, oracle)
