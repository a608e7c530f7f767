"""Deliberately wrong variants of what the FSP-Laplace claims rely on (their mutants).

Each replaces a function or constant the claims use at run time; the claims declare them with the
verdict they must then give (:mod:`laplace_lab.paper_checks.verification.mutants`). A variant that
calls the true function holds it as a default argument, which the mutant does not rebind.
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


# --- Real-data experiments (Mauna Loa CO₂, UCI regression) -----------------------------------

from laplace_lab.networks.fsp_laplace import expected_log_likelihood  # noqa: E402
from laplace_lab.networks.fsp_training import ContextBox  # noqa: E402
from laplace_lab.paper_checks.fsp_laplace._real_data import ML_SEEDS, co2_scores  # noqa: E402
from laplace_lab.paper_checks.fsp_laplace.experiments.mauna_loa import fit_co2_gp  # noqa: E402


def unwidened_box(cls, X, *, widen=0.5, _true=ContextBox.around.__func__):
    """The context box of the data without its widening: [v_min, v_max] per feature."""
    return _true(cls, X, widen=0.0)


def ood_inputs_unstandardised(d, n, *, rng):
    """The out-of-distribution rows of the UCI claims without their per-feature
    standardisation: the first d breast-cancer features on their own scales (areas in the
    hundreds), which give every such row away to any uncertainty."""
    from sklearn.datasets import load_breast_cancer

    from laplace_lab._random import as_generator

    X = load_breast_cancer().data[:, :d]
    return X[np.sort(as_generator(rng).choice(X.shape[0], size=n, replace=False))]


def co2_gp_with_inflated_noise(data, *, periodic=True, _true=fit_co2_gp):
    """The fitted CO₂ prior with a noise variance a hundred times the fitted one."""
    kernel, noise = _true(data, periodic=periodic)
    return kernel, 100.0 * noise


def ell_without_variance(y, mean, variance, noise_var, _true=expected_log_likelihood):
    """log N(y; μ, σ²): the expected log-likelihood with its −v/(2σ²) term dropped."""
    return _true(y, mean, 0.0 * variance, noise_var)


def co2_scores_with_paper_gp(method, metric, full, seed, _true=co2_scores):
    """Scores of the Mauna Loa runs with the GP's MSE replaced by Table 1's 35.66 ppm²."""
    if method == "GP" and metric == "mse":
        return [35.66] * ML_SEEDS[full]
    return _true(method, metric, full, seed)


# --- Bayesian optimisation (§4, Fig. 3) -------------------------------------------------------


def _rescaled_prior(self, X, y, rng, variance: float = 1.0, lengthscale: float = 1.0):
    """The marginal-likelihood Matérn-5/2 prior with its variance and length scale scaled."""
    import dataclasses

    from laplace_lab.paper_checks.fsp_laplace.experiments.bayes_opt import fit_matern52

    prior = fit_matern52(X, y, rng=rng, restarts=self.restarts)
    k = prior.kernel
    kernel = dataclasses.replace(
        k, variance=variance * k.variance, lengthscale=lengthscale * k.lengthscale
    )
    return dataclasses.replace(prior, kernel=kernel)


def prior_lengthscale_over_100(self, X, y, *, rng):
    """A surrogate's ``prior`` with a length scale 100× too short."""
    return _rescaled_prior(self, X, y, rng, lengthscale=0.01)
