"""Hypothesis strategies for property-testing the sub-network Laplace theory and conjectures.

Every strategy builds its object from small integers, so that when a property fails,
Hypothesis shrinks the counterexample to a small matrix one can read and check by hand:
a PSD Λ is G Gᵀ with an integer factor G (shrinking towards fewer rows, fewer columns and
entries of 0 and ±1), a C_PI matrix is diag(d) + a·I + b·11ᵀ with integer d and a, an
ε-dominant matrix has integer entries. Drawing Λ from a random seed instead shrinks only the
seed and ends in an opaque float matrix.

The strategies need Hypothesis, an optional dependency: ``pip install 'laplace-lab[strategies]'``
(the rest of :mod:`laplace_lab.theory` does not import this module).

Strategies (all arguments keyword-only and validated):

- :func:`psd_matrices` — PSD Λ with rank and conditioning controls;
- :func:`cpi_matrices` — Λ ∈ C_PI, with ties in diag(d) and b < 0;
- :func:`dominant_matrices` — ε-diagonally dominant Λ meeting the premises of Theorem 3;
- :func:`subsets`, :func:`supersets`, :func:`nested_subsets` — ordered index subsets;
- :func:`prior_precisions` — positive prior precision vectors V = diag(v);
- :func:`ggn_factors` — Jacobians and logits for the regression, binary and multiclass GGN;
- :func:`conjugate_datasets` — data for the conjugate models (normal–normal,
  Poisson–gamma, Bayesian linear regression);
- :func:`sample_sizes`, :func:`noise_variances` — the scalars N and σ0².

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §4 (IPV, C_PI, Theorems 1–3) and App. A.
.. [2] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
   for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, App. B.1 (conjugate
   models).
"""

from laplace_lab.theory._matrix_strategies import (
    DominantCase,
    cpi_matrices,
    dominant_matrices,
    psd_matrices,
)
from laplace_lab.theory._sample_strategies import (
    GGNFactor,
    conjugate_datasets,
    ggn_factors,
    nested_subsets,
    noise_variances,
    prior_precisions,
    sample_sizes,
    subsets,
    supersets,
)

__all__ = [
    "DominantCase",
    "GGNFactor",
    "conjugate_datasets",
    "cpi_matrices",
    "dominant_matrices",
    "ggn_factors",
    "nested_subsets",
    "noise_variances",
    "prior_precisions",
    "psd_matrices",
    "sample_sizes",
    "subsets",
    "supersets",
]
