"""Scalable Laplace kernels on the array API (NumPy on CPU, CuPy on GPU, torch).

One currency: the GGN factor (:class:`GGN`: weighted Jacobian J_w and prior precision V,
Ω = J_wᵀ J_w + V; :class:`NetworkGGN` computes it lazily from a torch model). Sub-network
selection, predictive variances and the empirical IPV work from it without forming the p×p
precision. :mod:`laplace_lab.theory` is the oracle these kernels are tested against.
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
from laplace_lab.numerics.classification_metrics import (
    accuracy,
    auroc,
    entropy,
    expected_calibration_error,
    negative_log_likelihood,
)
from laplace_lab.numerics.fsp import (
    DroppedTerms,
    FSPLaplace,
    dropped_terms,
    fsp_laplace,
    fsp_laplace_from_factor,
    induced_weight_prior,
    rkhs_norm_estimate,
    thin_svd,
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
from laplace_lab.numerics.jacobians import (
    ParameterLayout,
    parameter_layout,
    per_sample_jacobian,
)
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12, Matern32, Matern52, Periodic
from laplace_lab.numerics.krylov import LanczosResult, lanczos, lanczos_inverse_sqrt
from laplace_lab.numerics.lla import (
    FeatureLaplace,
    GaussianPredictive,
    LinearizedLaplace,
    feature_laplace,
)
from laplace_lab.numerics.lowrank import LowRankLaplace
from laplace_lab.numerics.network_fsp import (
    FunctionPredictive,
    NetworkFSPLaplace,
    OutputGram,
    network_fsp_laplace,
)
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.numerics.network_ssla import (
    assla_log_density,
    assla_predictive,
    gaussian_scores,
    ssla_log_density,
    ssla_predictive,
)
from laplace_lab.numerics.ntk_sketch import (
    jvp_ntk_estimate,
    ntk_estimate_variance,
    paper_ntk_variance,
)
from laplace_lab.numerics.predictive import (
    coverage,
    marginal_variance,
    predictive_variance,
    streamed_predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)
from laplace_lab.numerics.probit import probit_probability
from laplace_lab.numerics.scalla import ScaLLA
from laplace_lab.numerics.selection import (
    gradient_laplace,
    greedy_laplace,
    greedy_laplace_reference,
    largest_magnitude,
    largest_marginal_variance,
    largest_variances,
    last_k,
    neural_linear,
    random_subset,
    subnet_diagonal,
)
from laplace_lab.numerics.selection_registry import (
    SelectionMethod,
    SubnetProblem,
    get_selection,
    greedy_candidates,
    select,
    selection_method,
    selection_methods,
)
from laplace_lab.numerics.streamed_ggn import gradient_scores
from laplace_lab.numerics.surrogate_kernel import (
    SurrogateFit,
    draw_probes,
    kernel_matching_loss,
    model_jvp,
    surrogate_like,
    train_surrogate,
)
from laplace_lab.numerics.thick_restart import EigshResult, eigsh

__all__ = [
    # backend dispatch
    "TILE",
    "as_float",
    "cho_solve",
    "cholesky",
    "eigh",
    "eps",
    "gram_blocks",
    "namespace",
    "serial_blas",
    "solve_triangular",
    "to_numpy",
    "weighted_gram",
    # the GGN factor
    "DENSE_MAX_P",
    "GGN",
    "NetworkGGN",
    "prior_vector",
    # sub-network selection and its registry
    "SelectionMethod",
    "SubnetProblem",
    "get_selection",
    "gradient_laplace",
    "greedy_candidates",
    "greedy_laplace",
    "greedy_laplace_reference",
    "largest_magnitude",
    "largest_marginal_variance",
    "largest_variances",
    "last_k",
    "neural_linear",
    "random_subset",
    "select",
    "selection_method",
    "selection_methods",
    "subnet_diagonal",
    # predictive variances, W2 and coverage
    "coverage",
    "marginal_variance",
    "predictive_variance",
    "streamed_predictive_variance",
    "subnetwork_variance",
    "subnetwork_variance_path",
    "wasserstein_gap",
    # IPV on any backend
    "discrepancy",
    "empirical_pv",
    "ggn_discrepancy",
    "ggn_ipv",
    "ggn_ipv_path",
    "ipv",
    "ipv_path",
    # Lanczos, low-rank and FSP-Laplace
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
    "fsp_laplace_from_factor",
    "induced_weight_prior",
    "lanczos",
    "lanczos_inverse_sqrt",
    "rkhs_norm_estimate",
    "thin_svd",
    # FSP-Laplace on torch models
    "FunctionPredictive",
    "NetworkFSPLaplace",
    "OutputGram",
    "network_fsp_laplace",
    "probit_probability",
    # surrogate-NTK sketches
    "jvp_ntk_estimate",
    "ntk_estimate_variance",
    "paper_ntk_variance",
    # ScaLLA: surrogate kernel by JVP matching, and the linearized Laplace predictive
    "FeatureLaplace",
    "GaussianPredictive",
    "LinearizedLaplace",
    "ScaLLA",
    "SurrogateFit",
    "draw_probes",
    "feature_laplace",
    "kernel_matching_loss",
    "model_jvp",
    "surrogate_like",
    "train_surrogate",
    # classification metrics
    "accuracy",
    "auroc",
    "entropy",
    "expected_calibration_error",
    "negative_log_likelihood",
    # real networks
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
