"""Exact, small-p mathematics of Laplace approximations: the ground truth (NumPy/SciPy/SymPy).

The sub-network Laplace theory of Raha, Khare & Patra (*subnetwork-laplace-optimality*):
the idealized predictive variance IPV(S), the discrepancy Dis(S), matrix classes
(C_PI, ε-diagonally dominant) and executable forms of Theorems 1–3.
"""

# --- self-supervised Laplace (SSLA / ASSLA) on conjugate models: issue #3 ---------------
from theory.conjugate import NormalNormal, PoissonGamma
from theory.conjugate_regression import BayesianLinearRegression, NormalInverseGammaRegression
from theory.divergences import (
    Divergences,
    divergences,
    kl_divergence,
    total_variation,
    wasserstein1,
)
from theory.ipv import discrepancy, ipv, ipv_classification, ipv_full, ipv_path
from theory.predictive_dists import DiscretePredictive, QuadraturePredictive
from theory.rates import RateFit, fit_rate
from theory.ssla import ssla_log_predictive, ssla_predictive

# --- end of issue #3 block --------------------------------------------------------------

__all__ = [
    # self-supervised Laplace (issue #3)
    "BayesianLinearRegression",
    "DiscretePredictive",
    "Divergences",
    "NormalInverseGammaRegression",
    "NormalNormal",
    "PoissonGamma",
    "QuadraturePredictive",
    "RateFit",
    "discrepancy",
    "divergences",
    "fit_rate",
    "ipv",
    "ipv_classification",
    "ipv_full",
    "ipv_path",
    "kl_divergence",
    "ssla_log_predictive",
    "ssla_predictive",
    "total_variation",
    "wasserstein1",
]
