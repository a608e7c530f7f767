"""Deliberately wrong variants of what the surrogate-NTK claims rely on (their mutants).

Each is a replacement for a function or constant the claims use at run time; the claims declare
them with the verdict they must then give (:mod:`laplace_lab.paper_checks.verification.mutants`). A
wrong variant that calls the true function holds it as a default argument, which the mutant does
not rebind.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from laplace_lab.networks.data import load_digits_data
from laplace_lab.numerics import auroc
from laplace_lab.numerics.ntk_sketch import (
    jvp_ntk_estimate,
    ntk_estimate_variance,
    paper_ntk_variance,
)
from laplace_lab.paper_checks.surrogate_ntk_lla._digits import _rotate, _transpose
from laplace_lab.paper_checks.surrogate_ntk_lla._moments import ProbeLaw
from laplace_lab.paper_checks.surrogate_ntk_lla._toy import _far

#: P(v_i = +1) = 0.6: E[v] ≠ 0, so E[v vᵀ] ≠ I.
BIASED_SIGNS = ProbeLaw((-1.0, 1.0), (0.4, 0.6))
#: v_i ∈ {−√6, 0, √6} with probabilities 1/12, 5/6, 1/12: E v² = 1, E v⁴ = 6 > 3 (Gaussian).
KURTOTIC = ProbeLaw((-np.sqrt(6.0), 0.0, np.sqrt(6.0)), (1 / 12, 5 / 6, 1 / 12))


def estimate_with_doubled_probes(
    J1, J2, num_probes, *, rng, dist="rademacher", _true=jvp_ntk_estimate
):
    """The JVP estimate with probes of covariance 2I (twice the NTK in expectation)."""
    return 2.0 * _true(J1, J2, num_probes, rng=rng, dist=dist)


def variance_without_cross_term(
    J1, J2=None, *, dist="rademacher", num_probes=1, _true=ntk_estimate_variance
):
    """The entrywise variance formula without its (u·w)² term."""
    J2 = J1 if J2 is None else J2
    K = np.asarray(J1) @ np.asarray(J2).T
    return _true(J1, J2, dist=dist, num_probes=num_probes) - K * K / num_probes


def eq6_without_diagonal_term(J, *, dist="rademacher", _true=paper_ntk_variance):
    """Eq. (6) read without −2‖diag(JᵀJ)‖²: the Gaussian value for both laws."""
    return _true(J, dist="gaussian")


def eq5_without_factor_two(J, *, dist="rademacher", _true=paper_ntk_variance):
    """Eqs. (5)–(6) with tr(JᵀJ)² instead of 2 tr(JᵀJ)²."""
    return _true(J, dist=dist) - 0.5 * _true(J, dist="gaussian")


def total_entry_variance(J, *, dist="rademacher", _variance=ntk_estimate_variance):
    """A formula that is right under the 'sum of the entry variances' reading."""
    return float(np.sum(_variance(J, dist=dist)))


def reversed_auroc(scores_in, scores_out, *, _true=auroc):
    """The AUROC of the score read the wrong way round: 1 − AUC."""
    return 1.0 - _true(scores_in, scores_out)


def context_with_ood_inputs(d):
    """The transposed training digits and the OOD test inputs (the rotated test digits)."""
    return np.concatenate([_transpose(d.X_train), _rotate(d.X_test)])


def standardised_on_all_rows(*, rng, _true=load_digits_data, **split):
    """The digits standardised with the mean and standard deviation of all rows, test included."""
    d = _true(rng=rng, **split)
    raw = [X * d.x_std + d.x_mean for X in (d.X_train, d.X_test)]
    both = np.concatenate(raw)
    mean, std = both.mean(0), both.std(0)
    std = np.where(std > 0, std, 1.0)
    X_train, X_test = ((X - mean) / std for X in raw)
    return dataclasses.replace(d, X_train=X_train, X_test=X_test, x_mean=mean, x_std=std)


def far_from_one_stream(n, rng, *, _true=_far):
    """The far-region sampler ignoring its random stream: every call draws the same points."""
    return _true(n, np.random.default_rng(0))
