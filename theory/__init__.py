"""Exact, small-p mathematics of Laplace approximations: the ground truth (NumPy/SciPy/SymPy).

The sub-network Laplace theory of Raha, Khare & Patra (*subnetwork-laplace-optimality*):
the idealized predictive variance IPV(S), the discrepancy Dis(S), matrix classes
(C_PI, ε-diagonally dominant) and executable forms of Theorems 1–3.
"""

from theory.ipv import discrepancy, ipv, ipv_classification, ipv_full, ipv_path

__all__ = [
    "discrepancy",
    "ipv",
    "ipv_classification",
    "ipv_full",
    "ipv_path",
]
