"""Low-rank evidence: the Laplace log marginal likelihood with Ω_r = U_r diag(λ_r) U_rᵀ + V.

(λ_r, U_r) are the exact top-r eigenpairs of the GGN part (dense ``eigh`` in float64), r the
rank with the largest relative spectral gap in [2, 5] (as for the low-rank variances). With
V = αI the matrix determinant lemma, det(αI + UΛUᵀ) = α^p det(I_r + Λ/α), gives

    log det Ω_r = p log α + Σ_{i≤r} log(1 + λ_i/α),

which at α = 1 equals r log α + Σ log(1 + α λ_i), and only there: the cases have α = 2.5 and
α = 2, and one a diagonal prior V (log det Ω_r = Σ log V_i + log det(I_r + Λ^½UᵀV⁻¹UΛ^½)).
The reference is the dense log-determinant of the oracle's Ω_r; the tolerance is the rule
for the evidence on Ω_r plus the eigensolver's: eigenvalues to a relative residual √u
move each λ_i by at most √u·λ_1²/δ_r (δ_r the gap at r), hence ½ log det Ω_r by at most
½ Σ_{i≤r} √u·λ_1²/(δ_r (V_min + λ_i)).

References
----------
.. [1] A. Immer, M. Bauer, V. Fortuin, G. Rätsch, M. E. Khan, "Scalable Marginal Likelihood
   Estimation for Model Selection in Deep Learning", ICML 2021, arXiv:2104.04975, §3 and §4
   (the Laplace evidence and its structured, low-rank log-determinants).
"""

from __future__ import annotations

import math

import numpy as np

from laplace_lab.conformance.catalog.low_rank import gapped_rank
from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import SAFETY, lml_tolerance, unit_roundoff

CAPABILITY = "low_rank_log_marginal_likelihood"


def low_rank_evidence(oracle: DenseOracle, rank: int) -> float:
    """log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω_r (dense ``slogdet``)."""
    _, logdet = np.linalg.slogdet(oracle.low_rank_omega(rank))
    p = oracle.theta.size
    return (
        oracle.log_likelihood + oracle.log_prior + 0.5 * p * math.log(2 * math.pi) - 0.5 * logdet
    )


def low_rank_evidence_tolerance(oracle: DenseOracle, rank: int) -> float:
    """The evidence rule on Ω_r plus the eigensolver term (module docstring)."""
    problem = oracle.problem
    lam, _ = oracle.ggn_spectrum
    base = lml_tolerance(
        oracle.log_likelihood,
        oracle.log_prior,
        oracle.low_rank_omega(rank),
        dtype=problem.dtype,
        n_rows=oracle.n_rows,
    )
    gap = lam[rank - 1] - (lam[rank] if rank < lam.size else 0.0)
    shift = math.sqrt(unit_roundoff(problem.dtype)) * lam[0] ** 2 / gap
    eig_term = 0.5 * float(np.sum(shift / (np.min(oracle.V) + lam[:rank])))
    return base + SAFETY * eig_term


def check_low_rank_evidence(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """The target's rank-r evidence against the exact top-r eigenpairs."""
    lam, _ = oracle.ggn_spectrum
    r = gapped_rank(lam)
    expr = call_expression(CAPABILITY, problem, rank=r)
    out = call_target(target, CAPABILITY, problem, rank=r)
    got = target_array(out, "the low-rank log marginal likelihood", (1,), expr)
    return compare_values(
        got,
        np.array([low_rank_evidence(oracle, r)]),
        np.array([low_rank_evidence_tolerance(oracle, r)]),
        what=f"log p(y|X) vs the rank-{r} Laplace formula",
        call=lambda i: expr,
        per_point=False,
    )


_PROBLEMS = {
    "linear-gaussian-spectrum": "a linear model with a gapped spectrum, α = 2",
    "mlp-regression": "the GGN of a tanh MLP, α = 2.5",
    "mlp-regression-diagonal-prior": "a diagonal prior V (Σ log V_i + log det(I + ΛUᵀV⁻¹U))",
}

for _problem, _text in _PROBLEMS.items():
    conformance_case(
        f"low-rank-evidence/{_problem}",
        capability=CAPABILITY,
        problem=_problem,
        description=f"rank-r evidence, log det Ω_r = p log α + Σ log(1 + λ_i/α): {_text}",
    )(check_low_rank_evidence)
