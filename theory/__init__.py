"""Exact, small-p mathematics of Laplace approximations: the ground truth (NumPy/SciPy/SymPy).

The sub-network Laplace theory of S. Raha, K. Khare, R. K. Patra, "Optimality of
Sub-network Laplace Approximations: New Results and Methods", arXiv:2605.09075 (2026): the
idealized predictive variance IPV(S) (§4 eq. 8), the discrepancy Dis(S), the matrix classes
of Theorems 2–3 (C_PI, ε-diagonally dominant), exhaustive search over subsets, and
executable forms of Theorems 1–3 (Appendix A). Also the self-supervised Laplace
approximations (SSLA / ASSLA) of Rodemann et al., arXiv:2605.12208, on conjugate models.
"""

from laplace_lab.theory.classes import (
    CPIDecomposition,
    cpi_matrix,
    is_cpi,
    is_diagonally_dominant,
    random_cpi,
    random_diagonally_dominant,
    random_psd,
)
from laplace_lab.theory.conjugate import NormalNormal, PoissonGamma
from laplace_lab.theory.conjugate_regression import (
    BayesianLinearRegression,
    NormalInverseGammaRegression,
)
from laplace_lab.theory.divergences import (
    Divergences,
    divergences,
    kl_divergence,
    total_variation,
    wasserstein1,
)
from laplace_lab.theory.exhaustive import Extremes, all_ipvs, exhaustive_extremes
from laplace_lab.theory.ipv import discrepancy, ipv, ipv_classification, ipv_full, ipv_path
from laplace_lab.theory.predictive_dists import DiscretePredictive, QuadraturePredictive
from laplace_lab.theory.rates import RateFit, fit_rate
from laplace_lab.theory.ssla import ssla_log_predictive, ssla_predictive
from laplace_lab.theory.theorems import (
    Check,
    Theorem1Decomposition,
    check_monotonicity,
    check_theorem2,
    check_theorem3,
    theorem1_decomposition,
)

__all__ = [
    # IPV, the discrepancy and exhaustive search
    "Extremes",
    "all_ipvs",
    "discrepancy",
    "exhaustive_extremes",
    "ipv",
    "ipv_classification",
    "ipv_full",
    "ipv_path",
    # matrix classes of Theorems 2–3
    "CPIDecomposition",
    "cpi_matrix",
    "is_cpi",
    "is_diagonally_dominant",
    "random_cpi",
    "random_diagonally_dominant",
    "random_psd",
    # Theorems 1–3 as executable checks
    "Check",
    "Theorem1Decomposition",
    "check_monotonicity",
    "check_theorem2",
    "check_theorem3",
    "theorem1_decomposition",
    # self-supervised Laplace (SSLA / ASSLA) on conjugate models
    "BayesianLinearRegression",
    "DiscretePredictive",
    "Divergences",
    "NormalInverseGammaRegression",
    "NormalNormal",
    "PoissonGamma",
    "QuadraturePredictive",
    "divergences",
    "kl_divergence",
    "ssla_log_predictive",
    "ssla_predictive",
    "total_variation",
    "wasserstein1",
    # convergence rates
    "RateFit",
    "fit_rate",
]
