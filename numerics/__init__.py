"""Scalable Laplace kernels on the array API (NumPy on CPU, CuPy on GPU, torch).

One currency: the GGN factor (:class:`GGN`: weighted Jacobian J_w and prior precision V,
Ω = J_wᵀ J_w + V). Sub-network selection, predictive variances and the empirical IPV work
from it without forming the p×p precision. ``theory`` is the oracle these kernels are
tested against.
"""

from laplace_lab.numerics.backend import (
    TILE,
    as_float,
    cho_solve,
    cholesky,
    eigh,
    eps,
    gram_blocks,
    namespace,
    serial_blas,
    solve_triangular,
    to_numpy,
    weighted_gram,
)

# Lanczos family: Lanczos / eigsh, low-rank Laplace, FSP-Laplace, kernels, NTK sketch.
from laplace_lab.numerics.fsp import (
    DroppedTerms,
    FSPLaplace,
    dropped_terms,
    fsp_laplace,
    rkhs_norm_estimate,
)
from laplace_lab.numerics.ggn import DENSE_MAX_P, GGN, prior_vector
from laplace_lab.numerics.ipv import (
    discrepancy,
    empirical_pv,
    ggn_discrepancy,
    ggn_ipv,
    ggn_ipv_path,
    ipv,
    ipv_path,
)
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12, Matern32, Matern52, Periodic
from laplace_lab.numerics.krylov import LanczosResult, lanczos, lanczos_inverse_sqrt
from laplace_lab.numerics.lowrank import LowRankLaplace
from laplace_lab.numerics.ntk_sketch import (
    jvp_ntk_estimate,
    ntk_estimate_variance,
    paper_ntk_variance,
)
from laplace_lab.numerics.predictive import (
    coverage,
    marginal_variance,
    predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)
from laplace_lab.numerics.selection import (
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
from laplace_lab.numerics.thick_restart import EigshResult, eigsh

__all__ = [
    "DENSE_MAX_P",
    "GGN",
    "TILE",
    "as_float",
    "cho_solve",
    "cholesky",
    "coverage",
    "discrepancy",
    "eigh",
    "empirical_pv",
    "eps",
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
    "prior_vector",
    "random_subset",
    "serial_blas",
    "solve_triangular",
    "subnet_diagonal",
    "subnetwork_variance",
    "subnetwork_variance_path",
    "to_numpy",
    "wasserstein_gap",
    "weighted_gram",
]

# Lanczos family
__all__ += [
    "RBF",
    "DroppedTerms",
    "EigshResult",
    "FSPLaplace",
    "KernelGram",
    "LanczosResult",
    "LowRankLaplace",
    "Matern12",
    "Matern32",
    "Matern52",
    "Periodic",
    "dropped_terms",
    "eigsh",
    "fsp_laplace",
    "jvp_ntk_estimate",
    "lanczos",
    "lanczos_inverse_sqrt",
    "ntk_estimate_variance",
    "paper_ntk_variance",
    "rkhs_norm_estimate",
]

# Real-network Jacobians (torch imported lazily inside) and network SSLA/ASSLA.
from laplace_lab.numerics.jacobians import (  # noqa: E402
    ParameterLayout,
    gradient_scores,
    parameter_layout,
    per_sample_jacobian,
)
from laplace_lab.numerics.network_ssla import (  # noqa: E402
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
