"""Study ``theorem2-consistency``: finite-N selection by Gradient-Laplace and Subnet-Diagonal.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
Theorem 2 (§4) and its proof (Appendix A.4): for Λ ∈ C_PI (Λ = diag(d) + aI + b11ᵀ) and V = cI,
IPV(S*) = max_{|S|=k} IPV(S) for S* the k largest diagonal entries and IPV(S̃*) = min for the
k smallest; with N gradients ḡ ~ N(0, Λ), Gradient-Laplace (top-k of the empirical mean
squared gradients s_i = (1/N) Σ_n g_i(x_n)²) attains the maximum with probability → 1 under
the separation assumption (A6), and Subnet-Diagonal (bottom-k of s) attains the minimum.

Success is judged on IPV values, not on sets: with ties in diag(Λ) every tie-broken choice
is optimal, so comparing index sets would report false failures. Scenarios: ``separated``
(gaps 1/(p−1) ≥ √(log p / N) at the largest N: (A6) holds), ``ties`` (pairs of equal d, a
tie across the k/k+1 boundary; (A6) still holds, it only constrains entries *strictly* below
d_{m_k}) and ``near-ties`` (as ``separated`` but d_{m_k} − d_{m_{k+1}} = 10⁻³, and the same at
the bottom boundary: (A6) fails for N < log p / 10⁻⁶).

The paper's proof also asserts sup_i |s_i − Λ_ii| = o_P(√(log p / N)) (App. A.4); the
metric ``score_error_scaled`` = sup_i |s_i − Λ_ii| / √(log p / N) measures it.
"""

from __future__ import annotations

import math

import numpy as np

from laplace_lab._checks import integer, positive_int, real_number
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow
from laplace_lab.theory.classes import cpi_matrix
from laplace_lab.theory.ipv import ipv

__all__ = ["STUDY", "check_params", "diagonal", "gradients", "run_one", "separation"]

#: IPV values closer than this (relative) are equal: roundoff of the trace form is ~1e-15,
#: the smallest genuine difference in the grid (near-ties at N = 1e6) is ~1e-10.
RTOL = 1e-12
#: Rows of gradients drawn at a time (bounds memory at N = 10⁶; fixed, so streams agree).
CHUNK = 1 << 15
#: The near-tie gap at the k/k+1 boundaries.
NEAR_TIE = 1e-3


def diagonal(scenario: str, p: int, k: int) -> np.ndarray:
    """The diagonal d of D for a scenario, in decreasing order (index i has rank i)."""
    if not 1 <= k < p:
        raise ValueError(f"k must be in [1, p); got k={k}, p={p}")
    if scenario == "separated":
        return 2.0 - np.arange(p) / (p - 1)
    if scenario == "ties":
        levels = np.arange(p) // 2  # pairs: (0, 1), (2, 3), ...; k odd ties m_k with m_{k+1}
        return 2.0 - levels / max(levels[-1], 1)
    if scenario == "near-ties":
        d = 2.0 - np.arange(p) / (p - 1)
        d[k] = d[k - 1] - NEAR_TIE  # top boundary: m_k vs m_{k+1}
        d[p - k - 1] = d[p - k] + NEAR_TIE  # bottom boundary: m̃_k vs m̃_{k+1}
        return d
    raise ValueError(f"scenario must be separated, ties or near-ties; got {scenario!r}")


def separation(d: np.ndarray, k: int) -> float:
    """The (A6) gap: d_{m_k} minus the largest entry strictly below it (inf if none).

    ``separation(-d, k)`` is the gap at the k smallest entries (Subnet-Diagonal).
    """
    s = np.sort(d)[::-1]
    below = s[s < s[k - 1]]
    return float(s[k - 1] - below[0]) if below.size else math.inf


def gradients(
    rng: np.random.Generator, rows: int, d: np.ndarray, a: float, b: float
) -> np.ndarray:
    """``rows`` gradients g ~ N(0, Λ), Λ = diag(d) + aI + b11ᵀ (class C_PI; b may be < 0).

    b ≥ 0: g = √(d + a) ∘ z + √b · u·1 with z ~ N(0, I_p), u ~ N(0, 1) — O(p) per row;
    b < 0: g = R z with Λ = R Rᵀ (Cholesky) — O(p²) per row.
    """
    p = d.size
    if b >= 0:
        z = rng.standard_normal((rows, p + 1))
        return z[:, :p] * np.sqrt(d + a) + math.sqrt(b) * z[:, p:]
    return rng.standard_normal((rows, p)) @ np.linalg.cholesky(cpi_matrix(d, a, b)).T


def _mean_squared_gradients(
    rng: np.random.Generator, d: np.ndarray, a: float, b: float, n: int
) -> np.ndarray:
    """s_i = (1/N) Σ_n g_i(x_n)² (Alg. 1's scores on the training set), in fixed chunks."""
    total = np.zeros(d.size)
    for start in range(0, n, CHUNK):
        g = gradients(rng, min(CHUNK, n - start), d, a, b)
        total += np.einsum("ij,ij->j", g, g)
    return total / n


def _ipv(lam: np.ndarray, S: np.ndarray, n: int) -> float:
    """IPV(S) from the k×k block Λ_SS (eq. 8 needs nothing else; validates k×k, not p×p)."""
    return ipv(lam[np.ix_(S, S)], np.arange(S.size), n=n)


def check_params(params: dict) -> None:
    """Refuse a grid point ``run_one`` cannot run (N ≥ 1, 1 ≤ k < p, a C_PI matrix)."""
    positive_int(params["N"], "N")
    p = integer(params["p"], "p", low=2)
    k = integer(params["k"], "k", low=1, high=p - 1)
    d = diagonal(params["scenario"], p, k)
    cpi_matrix(d, real_number(params["a"], "a"), real_number(params["b"], "b"))


def run_one(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    """One replication: draw N gradients, select by Gradient-Laplace and Subnet-Diagonal."""
    n, p, k = params["N"], params["p"], params["k"]
    d = diagonal(params["scenario"], p, k)
    lam = cpi_matrix(d, params["a"], params["b"])
    scores = _mean_squared_gradients(rng, d, params["a"], params["b"], n)
    # Stable sorts: ties in s (probability 0) go to the lower index.
    gradient = np.argsort(-scores, kind="stable")[:k]  # Alg. 1: top-k of s
    subnet_diagonal = np.argsort(scores, kind="stable")[:k]  # bottom-k of s (App. B)
    exact = np.diag(lam)
    s_star = np.argsort(-exact, kind="stable")[:k]
    best = _ipv(lam, s_star, n)  # Theorem 2: IPV(S*) = max over |S| = k
    worst = _ipv(lam, np.argsort(exact, kind="stable")[:k], n)  # IPV(S̃*) = min
    got_gradient = _ipv(lam, gradient, n)
    got_subnet = _ipv(lam, subnet_diagonal, n)
    return {
        "select_gradient": float(got_gradient >= best * (1 - RTOL)),
        "select_subnet_diagonal": float(got_subnet <= worst * (1 + RTOL)),
        "same_set_gradient": float(set(gradient.tolist()) == set(s_star.tolist())),
        # For C_PI, IPV(S) depends only on the multiset {d_i : i ∈ S} (App. A.4): a
        # combinatorial cross-check of the IPV comparison, exact under ties.
        "top_values_gradient": float(np.array_equal(np.sort(d[gradient]), np.sort(d[s_star]))),
        "regret_gradient": max(best - got_gradient, 0.0) / best,
        "regret_subnet_diagonal": max(got_subnet - worst, 0.0) / worst,
        "score_error_scaled": float(np.max(np.abs(scores - exact)) / math.sqrt(math.log(p) / n)),
    }


def report(summary: list[SummaryRow]) -> str:
    """P(select) at the largest N per setting, with (A6) and the Wilson interval."""
    lines = ["Theorem 2 at the largest N of each setting (95% Wilson intervals):"]
    largest: dict[tuple, SummaryRow] = {}
    for s in summary:
        if s.metric not in ("select_gradient", "select_subnet_diagonal"):
            continue
        key = (s.metric, *((k, v) for k, v in sorted(s.params.items()) if k != "N"))
        if key not in largest or s.params["N"] > largest[key].params["N"]:
            largest[key] = s
    for s in largest.values():
        p, k, n = s.params["p"], s.params["k"], s.params["N"]
        d = diagonal(s.params["scenario"], p, k)
        # Subnet-Diagonal needs the same separation at the bottom k (App. A.4, last step).
        gap = separation(d if s.metric == "select_gradient" else -d, k)
        a6 = gap >= math.sqrt(math.log(p) / n)
        lines.append(
            f"  {s.metric} {s.params['scenario']} p={p} k={k} N={n}: {s.mean:.3f} "
            f"[{s.low:.3f}, {s.high:.3f}]  (A6) gap {gap:.3g} vs sqrt(log p/N) "
            f"{math.sqrt(math.log(p) / n):.3g}: {'holds' if a6 else 'violated'}"
        )
    return "\n".join(lines)


STUDY = register(
    Study(
        name="theorem2-consistency",
        description=(
            "Theorem 2 finite-N: P(Gradient-Laplace attains max IPV) and P(Subnet-Diagonal "
            "attains min IPV) for Λ in C_PI, ḡ ~ N(0, Λ), N = 10..1e5; separated, tied and "
            "near-tied diagonals."
        ),
        grid={
            "N": (10, 100, 1_000, 10_000, 100_000),
            "scenario": ("separated", "ties", "near-ties"),
            "p": (20,),
            "k": (5,),
            "a": (0.5,),
            "b": (0.2,),
        },
        full_grid={
            "N": (10, 100, 1_000, 10_000, 100_000, 1_000_000),
            "scenario": ("separated", "ties", "near-ties"),
            "p": (20, 100),
            "k": (5, 11),
            "a": (0.5,),
            "b": (-0.004, 0.2),
        },
        replications=200,
        full_replications=1000,
        run_one=run_one,
        probabilities=(
            "select_gradient",
            "select_subnet_diagonal",
            "same_set_gradient",
            "top_values_gradient",
        ),
        x="N",
        plot_metrics=(
            "select_gradient",
            "select_subnet_diagonal",
            "same_set_gradient",
            "regret_gradient",
            "regret_subnet_diagonal",
            "score_error_scaled",
        ),
        report=report,
        check_params=check_params,
    )
)
