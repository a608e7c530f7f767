"""Scalable Laplace kernels on the array API (NumPy on CPU, CuPy on GPU, torch).

One currency: the GGN factor (:class:`GGN`: weighted Jacobian J_w and prior precision V,
Ω = J_wᵀ J_w + V). Sub-network selection, predictive variances and the empirical IPV work
from it without forming the p×p precision. ``theory`` is the oracle these kernels are
tested against.
"""

from numerics.backend import cho_solve, cholesky, eigh, namespace, solve_triangular, to_numpy
from numerics.ggn import GGN

__all__ = [
    "GGN",
    "cho_solve",
    "cholesky",
    "eigh",
    "namespace",
    "solve_triangular",
    "to_numpy",
]
