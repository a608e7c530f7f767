"""Deliberately wrong variants of what the FSP-Laplace claims rely on (their mutants).

Each replaces a function or constant the claims use at run time; the claims declare them with
the verdict they must then give (:mod:`laplace_lab.paper_checks.mutants`). A variant that calls
the true function holds it as a default argument, which the mutant does not rebind.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.numerics.fsp import dropped_terms
from laplace_lab.paper_checks.fsp_laplace._setups import TABLE_C2


def rkhs_estimate_ignoring_correlations(f_context, gram, *, mean_context=None):
    """Σ_i f(c_i)²/k(c_i, c_i): eq. (3.7) with the Gram matrix replaced by its diagonal."""
    K = gram.dense() if hasattr(gram, "dense") else np.asarray(gram)
    f = np.asarray(f_context, dtype=float).reshape(-1)
    if mean_context is not None:
        f = f - np.asarray(mean_context, dtype=float).reshape(-1)
    return float(np.sum(f * f / np.diag(K)))


def likelihood_inside_prior_subspace(result, Jw, _true=dropped_terms):
    """The dropped terms with the likelihood Jacobian rows in range(M): J_w P for J_w."""
    U = result.basis
    return _true(result, (np.asarray(Jw) @ U) @ U.T)


#: Table C.2 with the Matérn-1/2 classification entry a hundred times smaller.
WRONG_TABLE_C2 = {
    **TABLE_C2,
    ("Matern-1/2", "classification"): TABLE_C2[("Matern-1/2", "classification")] / 100,
}
