"""Greedy-Laplace candidate rules on a random GGN."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from laplace_lab.numerics import GGN, predictive_variance, subnetwork_variance, wasserstein_gap
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.greedy_candidates import (
    greedy_candidate_rules,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.setup_networks import (
    SetupDNetwork,
)


def test_candidate_rules_counts_and_w2():
    rng = np.random.default_rng(0)
    J = rng.standard_normal((30, 1200)) * rng.uniform(0.1, 2.0, 1200)
    net = SetupDNetwork(
        GGN.regression(J, noise_var=0.5, prior_precision=1.0), rng.standard_normal((8, 1200)), 0.5
    )
    r = greedy_candidate_rules(net, (10, 150))
    assert r.m == {"2k": [20, 300], "paper": [1020, 1199]}
    assert r.p == 1200 and np.all((r.jaccard > 0) & (r.jaccard <= 1))
    # the W2 of the full network against itself is zero; a subnetwork's is positive
    full = predictive_variance(net.ggn, net.G_test)
    assert float(np.max(np.asarray(wasserstein_gap(full, full, noise_var=0.5)))) == 0.0
    sub = subnetwork_variance(net.ggn, net.G_test, np.arange(10))
    assert np.mean(np.asarray(wasserstein_gap(full, sub, noise_var=0.5))) > 0
    assert np.all(r.w2["2k"] > 0) and np.all(r.w2["paper"] > 0)
