"""Deliberately wrong targets: laplace-lab's adapter with one classic bug each.

Importable as ``tests.conformance.mutant_targets:NAME`` so that the reproducers the suite
writes for them run as printed.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.adapters import numerics as ours
from laplace_lab.numerics import GGN, per_sample_jacobian, to_numpy
from laplace_lab.numerics import predictive_variance as full_variance


def forgotten_noise(
    model, X_train, y_train, X_test, *, likelihood, prior_precision, noise_var, subset=None
):
    """Ω = JᵀJ + V: σ0² left out of the regression GGN."""
    return ours.predictive_variance(
        model,
        X_train,
        y_train,
        X_test,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=1.0,
        subset=subset,
    )


def prior_twice(
    model, X_train, y_train, X_test, *, likelihood, prior_precision, noise_var, subset=None
):
    """Ω = GGN + 2V: the prior precision added twice."""
    return ours.predictive_variance(
        model,
        X_train,
        y_train,
        X_test,
        likelihood=likelihood,
        prior_precision=2 * np.asarray(prior_precision, dtype=float),
        noise_var=noise_var,
        subset=subset,
    )


def sorted_test_columns(
    model, X_train, y_train, X_test, *, likelihood, prior_precision, noise_var, subset=None
):
    """Ω_SS in the subset's order, but the test Jacobian's columns in sorted order."""
    if subset is None:
        return ours.predictive_variance(
            model,
            X_train,
            y_train,
            X_test,
            likelihood=likelihood,
            prior_precision=prior_precision,
            noise_var=noise_var,
        )
    S = np.asarray(subset)
    ggn = ours._ggn(model, X_train, likelihood, noise_var, prior_precision)
    sub = GGN(ggn.Jw[:, S], ggn.prior_precision[S], n_data=ggn.n_data)
    G = per_sample_jacobian(model, X_test)
    return to_numpy(full_variance(sub, G[..., np.sort(S)]))


def samples_without_noise(
    model,
    X_train,
    y_train,
    *,
    likelihood,
    prior_precision,
    noise_var,
    subset=None,
    n_samples,
    seed,
):
    """Posterior samples drawn with σ0² = 1 in Ω."""
    return ours.posterior_samples(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=1.0,
        subset=subset,
        n_samples=n_samples,
        seed=seed,
    )


def lml_prior_twice(model, X_train, y_train, *, likelihood, prior_precision, noise_var):
    """The log marginal likelihood with the prior precision added twice."""
    return ours.log_marginal_likelihood(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=2 * np.asarray(prior_precision, dtype=float),
        noise_var=noise_var,
    )


def low_rank_plus_one(
    model, X_train, y_train, X_test, *, likelihood, prior_precision, noise_var, rank
):
    """One eigenpair too many."""
    return ours.low_rank_predictive_variance(
        model,
        X_train,
        y_train,
        X_test,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        rank=rank + 1,
    )


def greedy_is_gradient(*args, **kwargs):
    """Greedy-Laplace answered by Gradient-Laplace's top-k scores."""
    return ours.predictive_variance.subset_masks["gradient_laplace"](*args, **kwargs)


def _with(**capabilities):
    """laplace-lab's correct predictive variance carrying one wrong capability."""

    def target(*args, **kwargs):
        return ours.predictive_variance(*args, **kwargs)

    for name, fn in capabilities.items():
        setattr(target, name, fn)
    return target


wrong_samples = _with(posterior_samples=samples_without_noise)
wrong_evidence = _with(log_marginal_likelihood=lml_prior_twice)
wrong_low_rank = _with(low_rank_predictive_variance=low_rank_plus_one)
wrong_greedy = _with(subset_masks={"greedy_laplace": greedy_is_gradient})
