"""Study ``gradient-vs-greedy``: Dis(S) of the selection rules against the exhaustive optimum.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075:
Gradient-Laplace (Alg. 1), Greedy-Laplace (Alg. 2), Subnet-Diagonal and Last-k (App. B), a
random subset, and the best subset by exhaustive search over all C(p, k) subsets, on four
families of Λ (outside C_PI Gradient-Laplace need not be optimal; this study records how
the rules compare there):

- ``cpi``: C_PI, ``random_cpi`` — Theorem 2's class, where the top-k diagonal is optimal;
- ``dominant``: ε-diagonally dominant (ε = 0.5), ``random_diagonally_dominant`` — Theorem 3;
- ``lowrank``: a rank-2 PSD part (scale 5) plus a diagonal uniform on [0.1, 1];
- ``block``: blocks of 4 coordinates with correlation 0.9 inside a block, scales uniform on
  [0.5, 2] — large gradients come in correlated groups.

Per replication: Λ from the family; N gradients g ~ N(0, Λ); the GGN Ω = JᵀJ + I
(σ0² = 1, V = I; :class:`laplace_lab.numerics.GGN`); each rule selects k indices from Ω (Greedy
from the top m = 2k candidates, its default); IPV(S) is evaluated with the population Λ at the same
N (eq. 8) and reported as the normalised regret (IPV_best − IPV(S)) / (IPV_best − IPV_worst)
over all subsets of size k (exhaustive), i.e. (Dis(S) − min Dis) / (max Dis − min Dis).
``diag_top`` / ``diag_bottom`` are the top- / bottom-k of the exact diag(Λ) (S*, S̃*).
"""

from __future__ import annotations

import math

import numpy as np

from laplace_lab._checks import integer, one_of, positive_int
from laplace_lab.numerics import GGN
from laplace_lab.numerics.selection_registry import SubnetProblem, select, selection_methods
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow
from laplace_lab.theory.classes import random_cpi, random_diagonally_dominant, random_psd
from laplace_lab.theory.exhaustive import MAX_SUBSETS, exhaustive_extremes
from laplace_lab.theory.ipv import ipv, ipv_full

__all__ = ["EPS", "FAMILIES", "STUDY", "check_params", "population_lambda", "rules", "run_one"]

#: Dominance level of the ``dominant`` family.
EPS = 0.5
#: Block size and within-block correlation of the ``block`` family.
BLOCK, RHO = 4, 0.9
FAMILIES = ("cpi", "dominant", "lowrank", "block")
#: Normalised regrets closer than this are a tie (their roundoff is ≲ 1e-10 on this grid).
TIE = 1e-6


def population_lambda(family: str, p: int, rng: np.random.Generator) -> np.ndarray:
    """A random Λ of the family (see the module docstring)."""
    if family == "cpi":
        return random_cpi(p, rng=rng)
    if family == "dominant":
        return random_diagonally_dominant(p, EPS, rng=rng)
    if family == "lowrank":
        return 5.0 * random_psd(p, rank=2, rng=rng) + np.diag(rng.uniform(0.1, 1.0, size=p))
    if family == "block":
        scale = np.sqrt(rng.uniform(0.5, 2.0, size=p))
        same = np.arange(p)[:, None] // BLOCK == np.arange(p)[None, :] // BLOCK
        corr = np.where(same, RHO, 0.0) + (1 - RHO) * np.eye(p)
        return scale[:, None] * corr * scale[None, :]
    raise ValueError(f"family must be one of {FAMILIES}; got {family!r}")


def check_params(params: dict) -> None:
    """Refuse a grid point ``run_one`` cannot run (a family, N ≥ 1, 1 ≤ k ≤ p and an
    exhaustive search within ``MAX_SUBSETS``)."""
    one_of(params["family"], "family", FAMILIES)
    positive_int(params["N"], "N")
    p = integer(params["p"], "p", low=2)
    k = integer(params["k"], "k", low=1, high=p)
    if math.comb(p, k) > MAX_SUBSETS:
        raise ValueError(
            f"p and k must keep the exhaustive search within {MAX_SUBSETS:.3g} subsets; "
            f"got C(p={p}, k={k}) = {math.comb(p, k):.3g}"
        )


def run_one(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    """One Λ, one gradient sample; relative Dis of every registered rule and of the optimum."""
    n, p, k = params["N"], params["p"], params["k"]
    lam = population_lambda(params["family"], p, rng)
    J = rng.standard_normal((n, p)) @ np.linalg.cholesky(lam).T
    problem = SubnetProblem(GGN.regression(J, noise_var=1.0, prior_precision=1.0))
    exact = np.diag(lam)
    subsets = {  # every sized method of the registry that runs on a dense Ω
        name: select(name, problem, k, rng=rng) for name in rules(problem)
    }
    subsets["diag_top"] = np.argsort(-exact, kind="stable")[:k]
    subsets["diag_bottom"] = np.argsort(exact, kind="stable")[:k]
    ext = exhaustive_extremes(lam, k, n=n)
    spread = ext.best_ipv - ext.worst_ipv
    out: dict[str, float] = {}
    for name, S in subsets.items():
        # Normalised regret: 0 = the best subset of size k, 1 = the worst. Dis(S) itself
        # hardly moves: IPV(S) = (σ0²/N)(k − O(σ0²/N)), so Dis/IPV_full ≈ 1 − k/p for all S.
        gap = ext.best_ipv - ipv(lam, S, n=n)
        out[f"regret_{name}"] = max(gap, 0.0) / spread if spread > 0 else 0.0
    out["dis_optimum_relative"] = (ipv_full(lam, n=n) - ext.best_ipv) / ipv_full(lam, n=n)
    for name in ("gradient_laplace", "greedy_laplace"):
        out[f"optimal_{name}"] = float(out[f"regret_{name}"] <= TIE)
    greedy, gradient = out["regret_greedy_laplace"], out["regret_gradient_laplace"]
    out["greedy_beats_gradient"] = float(greedy < gradient - TIE)
    out["gradient_beats_greedy"] = float(gradient < greedy - TIE)
    # Theorem 3 (a)'s condition on the exact diagonal, for the ε-dominant family.
    s = np.sort(exact)[::-1]
    out["theorem3_condition"] = float(s[k - 1] / s[p - k] > (1 + EPS) / (1 - EPS))
    return out


def rules(problem: SubnetProblem) -> list[str]:
    """The sized registered methods this problem can feed (a random generator is given)."""
    have = problem.provides() | {"rng"}
    return [n for n, m in selection_methods().items() if m.sized and m.needs <= have]


def report(summary: list[SummaryRow]) -> str:
    """P(Greedy beats Gradient), P(optimal) and mean relative Dis per family, N and k."""
    table: dict[tuple, dict[str, SummaryRow]] = {}
    for s in summary:
        key = (s.params["family"], s.params["N"], s.params["k"], s.params["p"])
        table.setdefault(key, {})[s.metric] = s
    methods = ("gradient_laplace", "greedy_laplace", "subnet_diagonal", "last_k", "random")
    lines = [
        "family    N      k  p   P(greedy better) [95%]  P(gradient better)  P(optimal: "
        "gradient, greedy)  mean regret: " + " ".join(methods)
    ]
    for (family, n, k, p), m in sorted(table.items()):
        g = m["greedy_beats_gradient"]
        lines.append(
            f"{family:9s} {n:<6d} {k:<2d} {p:<3d} {g.mean:.2f} [{g.low:.2f}, {g.high:.2f}]"
            f"        {m['gradient_beats_greedy'].mean:.2f}                "
            f"{m['optimal_gradient_laplace'].mean:.2f}, {m['optimal_greedy_laplace'].mean:.2f}"
            "                 " + " ".join(f"{m[f'regret_{x}'].mean:.3f}" for x in methods)
        )
    return "\n".join(lines)


STUDY = register(
    Study(
        name="gradient-vs-greedy",
        description=(
            "Regret (Dis(S) - min Dis)/(max Dis - min Dis), exhaustive, of Gradient-Laplace, "
            "Greedy-Laplace, Subnet-Diagonal, Last-k and random on C_PI, eps-dominant, "
            "low-rank+diagonal and block-correlated Λ: where does Greedy beat Gradient?"
        ),
        grid={"family": FAMILIES, "N": (100, 10_000), "k": (3, 6), "p": (14,)},
        full_grid={
            "family": FAMILIES,
            "N": (100, 1_000, 10_000, 100_000),
            "k": (3, 6, 9),
            "p": (18,),
        },
        replications=60,
        full_replications=500,
        run_one=run_one,
        probabilities=(
            "optimal_gradient_laplace",
            "optimal_greedy_laplace",
            "greedy_beats_gradient",
            "gradient_beats_greedy",
            "theorem3_condition",
        ),
        x="N",
        plot_metrics=(
            "greedy_beats_gradient",
            "optimal_gradient_laplace",
            "optimal_greedy_laplace",
            "regret_gradient_laplace",
            "regret_greedy_laplace",
            "regret_subnet_diagonal",
        ),
        report=report,
        check_params=check_params,
    )
)
