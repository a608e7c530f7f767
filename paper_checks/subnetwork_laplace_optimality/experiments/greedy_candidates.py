"""Greedy-Laplace with Algorithm 2's 2k candidates against the experiments' min(2k + 1000, p − 1)
(Raha, Khare & Patra, arXiv:2605.09075, §3 Alg. 2 and App. C.3), on a network of
:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.setup_networks`. Each
rule's subnetwork is scored by the paper's W2 (the mean over test points of |σ_full − σ_S| of the
predictive of y*).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from laplace_lab.networks.training import single_threaded
from laplace_lab.numerics.predictive import (
    predictive_variance,
    subnetwork_variance,
    wasserstein_gap,
)
from laplace_lab.numerics.selection_registry import SubnetProblem, greedy_candidates, select
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.setup_networks import (
    SetupDNetwork,
)

__all__ = ["CandidateRules", "greedy_candidate_rules"]


@dataclass(frozen=True)
class CandidateRules:
    """Per k: the candidate counts m of each rule, the W2 of each rule's subnetwork, and the
    Jaccard overlap of the two selected sets."""

    ks: tuple[int, ...]
    m: dict[str, list[int]]
    w2: dict[str, np.ndarray]
    jaccard: np.ndarray
    p: int


@single_threaded()
def greedy_candidate_rules(net: SetupDNetwork, ks: tuple[int, ...]) -> CandidateRules:
    """Greedy-Laplace on ``net`` with candidates "2k" (Alg. 2) and "paper" (App. C.3).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3 Alg. 2 and App. C.3.
    """
    ggn, G, s2 = net.ggn, net.G_test, net.noise_var
    full = predictive_variance(ggn, G)
    problem = SubnetProblem(ggn)
    rules = ("2k", "paper")
    m = {r: [greedy_candidates(r, k, ggn.p) for k in ks] for r in rules}
    w2 = {r: np.zeros(len(ks)) for r in rules}
    jac = np.zeros(len(ks))
    for i, k in enumerate(ks):
        chosen = {r: select("greedy_laplace", problem, k, candidates=r) for r in rules}
        for r, S in chosen.items():
            sub = subnetwork_variance(ggn, G, S)
            w2[r][i] = float(np.mean(np.asarray(wasserstein_gap(full, sub, noise_var=s2))))
        a, b = (set(chosen[r].tolist()) for r in rules)
        jac[i] = len(a & b) / len(a | b)
    return CandidateRules(tuple(ks), m, w2, jac, ggn.p)
