"""Study ``ipv-vs-pv``: how fast the empirical predictive variance PV(S) approaches IPV(S).

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
§4 eqs. (5)–(8) and Appendix A.1 (docs/mathematics.md, "Empirical counterpart"). With
σ0² = 1, V = I (the appendix's assumptions) and N gradients g(x_n) ~ N(0, Λ) stacked in J
(N × p),

    PV(S)(x*) = (1/N) g_S(x*)ᵀ Â_S⁻¹ g_S(x*),   Â_S = (1/N) J_Sᵀ J_S + (1/N) I_k   (eqs. 6–7),
    IPV(S)    = (1/N) tr((Λ_SS + (1/N) I_k)⁻¹ Λ_SS)                             (eq. 8),

and App. A.1 concludes |E_{x*}[PV(S)] − IPV(S)| = O_P(√(k³ log p / N)) uniformly in |S| = k.

Per replication: Λ = ``random_psd(p, cond=10, rng=rng)``; J from N(0, Λ); two subsets — the fixed
S = {0, …, k−1} and the Gradient-Laplace choice (top-k of the mean squared gradients, so
p enters through a selection over p coordinates). E_{x*}[PV(S)] is computed exactly,
(1/N) tr(Â_S⁻¹ Λ_SS); the average over ``n_test`` sampled test gradients is recorded too.

What the theory predicts beyond the paper's bound (fixed S, Gaussian gradients): write
(1/N) J_Sᵀ J_S = Λ_SS^{1/2} W Λ_SS^{1/2} with W ~ Wishart_k(N, I/N). Then
N · (E_{x*}PV − IPV) = tr(W⁻¹) − k + O(k²/N²), whose mean is k(k+1)/(N − k − 1) and whose
standard deviation is ≈ √(2k/N). So the absolute error decays like N^{-3/2} (IPV itself is
O(k/N)) and the error in trace units N·|E PV − IPV| like N^{-1/2}; the paper's bound has
exponent −1/2 in absolute units — true, but loose by a factor of order N (it bounds
‖Â_S⁻¹‖ by N instead of by ‖Λ_SS⁻¹‖).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy.linalg import cho_factor, cho_solve

from laplace_lab._checks import integer, positive_int
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow, fit_rates
from laplace_lab.theory.classes import random_psd
from laplace_lab.theory.ipv import ipv

__all__ = ["STUDY", "check_params", "expected_pv", "run_one", "wishart_bias"]

#: Rows of gradients drawn at a time (bounds memory; fixed, so random streams agree).
CHUNK = 1 << 12
#: Condition number of the random Λ (eigenvalues log-uniform on [0.1, 1]).
COND = 10.0


def expected_pv(gram_ss: np.ndarray, lam_ss: np.ndarray, n: int) -> float:
    """E_{x*}[PV(S)] = (1/N) tr(Â_S⁻¹ Λ_SS), Â_S = Gram_SS/N + I/N (eqs. 6–7, σ0² = 1, V = I)."""
    a_hat = gram_ss / n + np.eye(gram_ss.shape[0]) / n
    return float(np.trace(cho_solve(cho_factor(a_hat), lam_ss)) / n)


def wishart_bias(n: int, k: int) -> float:
    """E[tr(W⁻¹)] − k = k(k+1)/(N−k−1) for W ~ Wishart_k(N, I/N): N·E[PV − IPV] as 1/N → 0."""
    if n <= k + 1:
        raise ValueError(f"the Wishart mean needs N > k + 1; got N={n}, k={k}")
    return k * (k + 1) / (n - k - 1)


def check_params(params: dict) -> None:
    """Refuse a grid point ``run_one`` cannot run (N, n_test ≥ 1; 1 ≤ k ≤ p ≤ 10⁴)."""
    positive_int(params["N"], "N")
    p = positive_int(params["p"], "p", high=10**4)
    integer(params["k"], "k", low=1, high=p)
    positive_int(params["n_test"], "n_test")


def run_one(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    """One replication: Λ, N training gradients, PV and IPV for a fixed and a selected S."""
    n, p, k, n_test = params["N"], params["p"], params["k"], params["n_test"]
    lam = random_psd(p, cond=COND, rng=rng)
    factor = np.linalg.cholesky(lam)
    zz = np.zeros((p, p))
    for start in range(0, n, CHUNK):  # ZᵀZ in row blocks (tiled: OpenBLAS syrk hazard)
        z = rng.standard_normal((min(CHUNK, n - start), p))
        zz += z.T @ z
    gram = factor @ zz @ factor.T  # JᵀJ for the gradients J = Z Lᵀ, Λ = L Lᵀ
    gram = 0.5 * (gram + gram.T)
    subsets = {
        "fixed": np.arange(k),
        "selected": np.argsort(-np.diag(gram), kind="stable")[:k],  # Alg. 1 on the train set
    }
    out: dict[str, float] = {}
    bound = math.sqrt(k**3 * math.log(p) / n)
    for name, S in subsets.items():
        lam_ss = lam[np.ix_(S, S)]
        gram_ss = gram[np.ix_(S, S)]
        exact = ipv(lam_ss, np.arange(k), n=n)  # IPV(S) depends on Λ_SS only
        pv = expected_pv(gram_ss, lam_ss, n)
        test = rng.standard_normal((n_test, k)) @ np.linalg.cholesky(lam_ss).T
        a_hat = cho_factor(gram_ss / n + np.eye(k) / n)
        pv_test = float(np.einsum("ij,ji->", test, cho_solve(a_hat, test.T)) / (n * n_test))
        out[f"ipv_{name}"] = exact
        out[f"error_{name}"] = abs(pv - exact)
        out[f"scaled_error_{name}"] = n * abs(pv - exact)  # trace units: N·|E PV − IPV|
        out[f"scaled_signed_{name}"] = n * (pv - exact)
        out[f"relative_error_{name}"] = abs(pv - exact) / exact
        out[f"test_error_{name}"] = abs(pv_test - exact)
        out[f"within_bound_{name}"] = float(abs(pv - exact) <= bound)
    return out


def plot(summary: list[SummaryRow], path: Path) -> None:
    """Mean |E PV(S) − IPV(S)| against N (log-log) with its 95% intervals and fitted
    exponent, beside the paper's √(k³ log p / N)."""
    from laplace_lab.studies.output import plot_rate

    fig = Figure(figsize=(11.0, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, subset in zip(axes, ("fixed", "selected"), strict=True):
        series: dict[tuple[int, int], list[SummaryRow]] = {}
        for s in summary:
            if s.metric == f"error_{subset}":
                series.setdefault((s.params["k"], s.params["p"]), []).append(s)
        for i, ((k, p), items) in enumerate(sorted(series.items())):
            color = f"C{i}"
            plot_rate(ax, items, "N", label=f"k={k}, p={p}", color=color)
            ns = np.array(sorted(s.params["N"] for s in items), dtype=float)
            ax.loglog(ns, np.sqrt(k**3 * math.log(p) / ns), "--", color=color, lw=0.8)
        ax.set_xlabel("N")
        ax.set_title(f"S {subset}: |E PV - IPV| (dashed: sqrt(k^3 log p / N))")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, title="mean, 95% interval; fitted exponent [95% CI]")
    axes[0].set_ylabel("mean |E PV(S) - IPV(S)|")
    fig.savefig(path, dpi=110)


def report(summary: list[SummaryRow]) -> str:
    """Fitted exponents of N next to the paper's O(√(k³ log p / N)) (exponent −1/2)."""
    lines = [
        "|E PV(S) - IPV(S)| against N (log-log OLS of the means, 95% CI); the paper's "
        "App. A.1 bound sqrt(k^3 log p / N) has exponent -0.5:"
    ]
    for subset in ("fixed", "selected"):
        absolute = fit_rates(summary, f"error_{subset}", x="N")
        scaled = fit_rates(summary, f"scaled_error_{subset}", x="N")
        for key, fit in absolute.items():
            k, p = dict(key)["k"], dict(key)["p"]
            fs = scaled[key]
            lines.append(
                f"  S {subset:8s} k={k:<3d} p={p:<5d} absolute: N^{fit.slope:.2f} "
                f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]   N-scaled (trace units): "
                f"N^{fs.slope:.2f} [{fs.ci_low:.2f}, {fs.ci_high:.2f}]"
            )
    within = [s for s in summary if s.metric.startswith("within_bound")]
    if within:
        worst = min(within, key=lambda s: s.mean)
        lines.append(
            f"  fraction of replications inside sqrt(k^3 log p / N): lowest {worst.mean:.3f} "
            f"({worst.metric}, {worst.params})"
        )
    return "\n".join(lines)


STUDY = register(
    Study(
        name="ipv-vs-pv",
        description=(
            "|E PV(S) - IPV(S)| against N for several k and p (random PSD Λ, Gaussian "
            "gradients), fixed and Gradient-Laplace S; fitted rate vs the paper's "
            "O(sqrt(k^3 log p / N))."
        ),
        grid={
            "N": (30, 100, 300, 1_000, 3_000, 10_000),
            "k": (2, 8),
            "p": (20, 200),
            "n_test": (1000,),
        },
        full_grid={
            "N": (30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000),
            "k": (2, 4, 8, 16),
            "p": (20, 200, 500),
            "n_test": (10_000,),
        },
        replications=100,
        full_replications=500,
        run_one=run_one,
        probabilities=("within_bound_fixed", "within_bound_selected"),
        x="N",
        plot=plot,
        report=report,
        check_params=check_params,
    )
)
