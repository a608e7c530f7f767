"""Low-rank posterior cases: predictive variances with Ω_r = U_r diag(λ_r) U_rᵀ + V.

(λ_r, U_r) are the exact top-r eigenpairs of the GGN part Σ_n J_nᵀH_nJ_n (dense ``eigh`` in
float64). The rank is the r ∈ [2, 5] with the largest relative spectral gap
(λ_r − λ_{r+1})/λ_1, so that the top-r subspace is well determined; the tolerance adds the
eigensolver term of :func:`laplace_lab.conformance.tolerance.low_rank_tolerance`.

References
----------
.. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
   Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
   arXiv:2407.13711, §3.2 (low-rank factors of the posterior covariance).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import low_rank_tolerance


def gapped_rank(eigenvalues: np.ndarray, candidates: range = range(2, 6)) -> int:
    """The r among ``candidates`` with the largest (λ_r − λ_{r+1}) / λ_1."""
    lam = np.asarray(eigenvalues)
    return max(candidates, key=lambda r: (lam[r - 1] - lam[r]) / lam[0])


def check_low_rank(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """The target's rank-r variances against the exact top-r eigenpairs."""
    lam, _ = oracle.ggn_spectrum
    r = gapped_rank(lam)
    out = call_target(target, "low_rank_predictive_variance", problem, rows=slice(None), rank=r)
    expected = oracle.low_rank_variance(r)
    expr = call_expression("low_rank_predictive_variance", problem, rows=slice(None), rank=r)
    got = target_array(out, "the low-rank predictive variance", expected.shape, expr)
    G = oracle.G.reshape(-1, problem.p)
    tol = low_rank_tolerance(
        oracle.low_rank_omega(r), G, oracle.V, lam, r, dtype=problem.dtype, n_rows=oracle.n_rows
    ).reshape(expected.shape)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression("low_rank_predictive_variance", problem, rows=rows, rank=r)

    return compare_values(
        got, expected, tol, what=f"rank-{r} variance vs exact top-{r}", call=call
    )


_PROBLEMS = {
    "linear-gaussian-spectrum": "a linear model whose feature spectrum has clear gaps",
    "mlp-regression": "the GGN of a tanh MLP (not the loss Hessian)",
    "mlp-multiclass": "the softmax GGN of a 3-logit MLP",
}

for _problem, _text in _PROBLEMS.items():
    conformance_case(
        f"low-rank/{_problem}",
        capability="low_rank_predictive_variance",
        problem=_problem,
        description=_text,
    )(check_low_rank)
