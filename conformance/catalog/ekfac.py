"""EKFAC-Laplace cases, both weight–bias conventions, against the dense EKFAC precision.

The capability ``ekfac_predictive_variance`` returns gᵀP⁻¹g with P = ⊕_l Q_l diag(s_l) Q_lᵀ
+ αI: each layer's KFAC eigenbasis Q_l = Q_G ⊗ Q_A with the exact second moments
s = diag(Q_lᵀ B_l Q_l) of the GGN block B_l as its spectrum (George et al. 2018), the prior
added exactly. The oracle (:class:`laplace_lab.conformance.kronecker.EKFACOracle`) reads
B_l from the dense GGN and writes P out as a p × p matrix; the tolerance is the variance
rule of :mod:`laplace_lab.conformance.tolerance` on P.

On ``linear-gaussian`` δ_n = 1 and w_n = 1/σ0² for every point, so KFAC's block is already
diagonal in its eigenbasis with the exact second moments: EKFAC equals KFAC in both
conventions, and the joint one is exact Bayesian linear regression. On the MLPs EKFAC and
KFAC differ by 0.2–14% per test point (at least 8 tolerances on every point in float32, 4e9
in float64), so a target returning KFAC's eigenvalues λ_G,i λ_A,j fails; each case records
the relative difference in its details (``kfac_relative_difference``). On ``mlp-multiclass``
(three logits) B_l = Σ_n (D_nᵀ H_n D_n) ⊗ (ã_n ã_nᵀ) with the softmax Hessian
H_n = diag(π_n) − π_nπ_nᵀ and D_n = ∂f(x_n)/∂s_l; an implementation's
s_ij = Σ_n Σ_c ((Q_Gᵀ g_nc)_i (Q_Aᵀ ã_n)_j)² sums over the C columns g_nc = D_nᵀ r_nc of a
square root R_n R_nᵀ = H_n (any square root gives the same s); the variances are per
output, (M, C).

References
----------
.. [1] T. George, C. Laurent, X. Bouthillier, N. Ballas, P. Vincent, "Fast Approximate
   Natural Gradient Descent in a Kronecker-factored Eigenbasis", NeurIPS 2018,
   arXiv:1806.03884, §3 (the eigenvalue-corrected KFAC).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.catalog.kfac import check_kronecker
from laplace_lab.conformance.contract import KFAC_CONVENTIONS
from laplace_lab.conformance.kronecker import EKFACOracle, KFACOracle
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case

CAPABILITY = "ekfac_predictive_variance"


def kfac_gap(oracle: DenseOracle, convention: str) -> np.ndarray:
    """|v_EKFAC − v_KFAC| / v_EKFAC per test point (how far EKFAC is from KFAC)."""
    ekfac = EKFACOracle(oracle, convention).predictive_variance()
    kfac = KFACOracle(oracle, convention).predictive_variance()
    return np.abs(ekfac - kfac) / ekfac


def check_ekfac(
    target, problem: Problem, oracle: DenseOracle, *, convention: str, exact: bool
) -> Check:
    """The target's EKFAC variances against the dense EKFAC precision (or, ``exact``,
    against Bayesian linear regression, which the joint EKFAC of one Linear layer equals)."""
    gap = ("kfac_relative_difference", kfac_gap(oracle, convention))
    return check_kronecker(
        target,
        problem,
        oracle,
        capability=CAPABILITY,
        structure=EKFACOracle,
        convention=convention,
        exact=exact,
        gap=gap,
    )


_CASES = {
    "linear-gaussian": "one Linear layer, σ0² = 0.3, α = 2: EKFAC = KFAC",
    "mlp-regression": "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5",
    "mlp-regression-float32": "float32 model and data",
    "mlp-binary": "one logit: s = Σ σ(f)(1 − σ(f)) (Qᵀ(δ ⊗ ã))²",
    "mlp-multiclass": "3 logits: s = Σ_n Σ_c (Qᵀ(g_nc ⊗ ã_n))², Σ_c g gᵀ = Dᵀ(diag(π) − ππᵀ)D",
}


def _register(problem: str, convention: str, text: str) -> None:
    exact = problem == "linear-gaussian" and convention == "joint"
    if exact:
        text += "; exact: the joint EKFAC is the GGN, Bayesian linear regression"
    elif convention == "separate":
        text += "; Q_G ⊗ Q_Ā on W, Q_G on b"
    else:
        text += "; one basis Q_G ⊗ Q_A for [W b], ã = [a; 1]"

    @conformance_case(
        f"ekfac/{problem}-{convention}", capability=CAPABILITY, problem=problem, description=text
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_ekfac(target, problem, oracle, convention=convention, exact=exact)


for _name, _text in _CASES.items():
    for _convention in KFAC_CONVENTIONS:
        _register(_name, _convention, _text)
