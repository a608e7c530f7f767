"""Low-rank evidence: the oracle's rank-r log-determinant against the determinant lemma, and
the log-determinant r log α + Σ log(1 + αλ_i) failing exactly the family's cases (α ≠ 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from laplace_lab.conformance import Outcome, cases, validate
from laplace_lab.conformance.catalog.low_rank import gapped_rank
from laplace_lab.conformance.catalog.low_rank_evidence import low_rank_evidence
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import build_problem

FAMILY = {n for n in cases() if n.startswith("low-rank-evidence/")}


@pytest.mark.parametrize("name", ["linear-gaussian-spectrum", "mlp-regression"])
def test_the_reference_is_the_determinant_lemma_at_alpha_not_one(name):
    problem = build_problem(name)
    oracle = DenseOracle(problem)
    alpha, p = float(problem.prior_precision), problem.p
    assert alpha != 1.0
    lam, _ = oracle.ggn_spectrum
    r = gapped_rank(lam)
    lemma = p * math.log(alpha) + np.sum(np.log1p(lam[:r] / alpha))
    joint = oracle.log_likelihood + oracle.log_prior + 0.5 * p * math.log(2 * math.pi)
    assert low_rank_evidence(oracle, r) == pytest.approx(joint - 0.5 * lemma, rel=1e-12)
    # rank r is not the full evidence: the discarded eigenvalues matter
    assert abs(low_rank_evidence(oracle, r) - oracle.log_marginal_likelihood) > 1e-3


def test_laplace_lab_passes_and_the_inverted_alpha_fails_exactly_the_family():
    assert len(FAMILY) == 3
    ours = validate("laplace_lab.conformance.adapters.numerics:predictive_variance", only=FAMILY)
    assert all(r.outcome is Outcome.PASS for r in ours.results), ours.summary()
    wrong = validate(
        "tests.conformance.mutant_targets:low_rank_evidence_alpha_inverted", only=FAMILY
    )
    assert {r.case.name for r in wrong.results if r.outcome is Outcome.FAIL} == FAMILY
