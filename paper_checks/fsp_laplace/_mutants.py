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


def p_in_place_of_p0(result, Jw, *, _true=dropped_terms):
    """‖PΛP‖_F / ‖Λ‖_F reported as Table C.2's ‖P₀ΛP₀‖_F / ‖Λ‖_F (the kept block for the
    dropped one): by Pythagoras √(1 − total_ratio²)."""
    true = _true(result, Jw)
    return true._replace(p0_ratio=float(np.sqrt(max(1.0 - true.total_ratio**2, 0.0))))


#: Table C.2 with the Matérn-1/2 classification entry a hundred times smaller.
WRONG_TABLE_C2 = {
    **TABLE_C2,
    ("Matern-1/2", "classification"): TABLE_C2[("Matern-1/2", "classification")] / 100,
}


def expected_improvement_for_minimisation(mean, variance, best):
    """E max(best − f, 0) for f ~ N(mean, variance): the acquisition of a minimiser, applied to
    the reward the loop maximises."""
    from scipy.stats import norm

    mu = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.clip(np.asarray(variance, dtype=np.float64), 0.0, None))
    safe = np.where(sd > 0, sd, 1.0)
    z = (float(best) - mu) / safe
    return np.where(sd > 0, safe * (z * norm.cdf(z) + norm.pdf(z)), np.maximum(-mu + best, 0.0))


# --- Real-data experiments (Mauna Loa CO₂, UCI regression) -----------------------------------

from laplace_lab.networks.fsp_training import ContextBox  # noqa: E402
from laplace_lab.paper_checks.fsp_laplace._real_data import co2_scores  # noqa: E402


def unwidened_box(cls, X, *, widen=0.5, _true=ContextBox.around.__func__):
    """The context box of the data without its widening: [v_min, v_max] per feature."""
    return _true(cls, X, widen=0.0)


def co2_scores_without_effect(method, metric, full, seed, _true=co2_scores):
    """Every method's Mauna Loa scores replaced by FSP-Laplace's, and the test-optimal σ by
    the learned σ: every difference a Mauna Loa claim tests is zero."""
    metric = "noise_std" if metric == "ell_optimal_noise_std" else metric
    return _true("FSP-Laplace", metric, full, seed)


def standardise_on_all_rows(X, y, train, parts):
    """The UCI scaler fitted on every row (training, validation and test together)."""
    xm, xs = X.mean(0), X.std(0)
    xs = np.where(xs > 0, xs, 1.0)
    ym, ys = y.mean(), y.std()
    return {k: ((X[i] - xm) / xs, (y[i] - ym) / ys) for k, i in parts.items()}


def context_box_over_all_splits(data, *, widen=0.5):
    """The UCI context box fitted over the training, validation and test inputs together."""
    return ContextBox.around(np.vstack([x for x, _ in data.values()]), widen=widen)


def evidence_without_log_determinant(alpha, singular_values, p, theta_sq, log_lik):
    """The linearised-Laplace evidence without its Occam factor ½p log α − ½ log det(αI + JᵀJ)."""
    return float(log_lik - 0.5 * alpha * theta_sq)
