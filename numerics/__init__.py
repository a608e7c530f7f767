"""Scalable Laplace kernels on the array API (NumPy on CPU, CuPy on GPU, torch).

One currency: the GGN factor (:class:`GGN`: weighted Jacobian J_w and prior precision V,
Ω = J_wᵀ J_w + V). Sub-network selection, predictive variances and the empirical IPV work
from it without forming the p×p precision. ``theory`` is the oracle these kernels are
tested against.
"""

from numerics.backend import (
    as_float,
    cho_solve,
    cholesky,
    eigh,
    gram_blocks,
    namespace,
    solve_triangular,
    to_numpy,
    weighted_gram,
)
from numerics.ggn import GGN
from numerics.ipv import (
    discrepancy,
    empirical_pv,
    ggn_discrepancy,
    ggn_ipv,
    ggn_ipv_path,
    ipv,
    ipv_path,
)
from numerics.predictive import (
    coverage,
    marginal_variance,
    predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)
from numerics.selection import (
    gradient_laplace,
    greedy_laplace,
    greedy_laplace_reference,
    largest_diag_variance,
    largest_magnitude,
    largest_marginal_variance,
    last_k,
    neural_linear,
    random_subset,
    subnet_diagonal,
)

__all__ = [
    "GGN",
    "as_float",
    "cho_solve",
    "cholesky",
    "coverage",
    "discrepancy",
    "eigh",
    "empirical_pv",
    "ggn_discrepancy",
    "ggn_ipv",
    "ggn_ipv_path",
    "gradient_laplace",
    "gram_blocks",
    "greedy_laplace",
    "greedy_laplace_reference",
    "ipv",
    "ipv_path",
    "largest_diag_variance",
    "largest_magnitude",
    "largest_marginal_variance",
    "last_k",
    "marginal_variance",
    "namespace",
    "neural_linear",
    "predictive_variance",
    "random_subset",
    "solve_triangular",
    "subnet_diagonal",
    "subnetwork_variance",
    "subnetwork_variance_path",
    "to_numpy",
    "wasserstein_gap",
    "weighted_gram",
]

# Real-network Jacobians (torch imported lazily inside) and network SSLA/ASSLA.
from numerics.jacobians import (
    ParameterLayout,
    gradient_scores,
    parameter_layout,
    per_sample_jacobian,
)
from numerics.network_ssla import (
    assla_log_density,
    assla_predictive,
    gaussian_scores,
    ssla_log_density,
    ssla_predictive,
)

__all__ += [
    "ParameterLayout",
    "assla_log_density",
    "assla_predictive",
    "gaussian_scores",
    "gradient_scores",
    "parameter_layout",
    "per_sample_jacobian",
    "ssla_log_density",
    "ssla_predictive",
]
