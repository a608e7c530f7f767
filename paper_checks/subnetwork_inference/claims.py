"""Claims of Daxberger et al., "Bayesian Deep Learning via Subnetwork Inference" (ICML 2021).

W2 selection, probit and priors; arXiv:2010.14689. Sections: §4 (probit approximation, prior
rescaling λ_S = λ·S/D), §5 (eqs. 22–23, the Wasserstein subnetwork selection), §7 (memory of
a 40K-weight Hessian).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize

from laplace_lab.paper_checks.registry import Context, Status, Verdict, claim
from laplace_lab.theory.probit import logistic_gaussian_integral, probit_approximation
from laplace_lab.theory.wasserstein import subnetwork_w2, w2_diagonal

PAPER = "subnetwork-inference"


def _random_precision(rng: np.random.Generator, p: int) -> np.ndarray:
    """Ω = JᵀJ + λI with a rank-deficient J (N < p), as for a GGN."""
    J = rng.standard_normal((max(1, p // 2), p)) * rng.uniform(0.2, 3.0, size=p)
    return J.T @ J + rng.uniform(0.5, 5.0) * np.eye(p)


@claim(
    paper=PAPER,
    name="w2-diagonal-identity",
    location="§5, eqs. (22)–(23)",
    statement=(
        "Under independence among weights, the squared W2 distance (22) between the full "
        "and the subnetwork posterior equals Σ_{d∉S} σ_d² (23), minimised by the S weights "
        "of largest marginal variance."
    ),
)
def w2_diagonal_identity(ctx: Context) -> Verdict:
    rng = ctx.rng("w2-diagonal-identity")
    cases = 200 if ctx.full else 40
    worst_diag, worst_marg, rule_misses, gaps = 0.0, 0.0, 0, []
    for _ in range(cases):
        p = int(rng.integers(2, 8))
        k = int(rng.integers(1, p))
        Omega = _random_precision(rng, p)
        variances = np.diag(np.linalg.inv(Omega))
        S = rng.permutation(p)[:k]
        # Diagonal Ω (independence): (22) equals (23) exactly.
        D = np.diag(np.diag(Omega))
        w22 = subnetwork_w2(D, S)
        worst_diag = max(worst_diag, abs(w22 - w2_diagonal(1 / np.diag(Omega), S)))
        # Full Ω, marginal block (Ω⁻¹)_SS: (23) is exact too, no independence needed.
        w22m = subnetwork_w2(Omega, S, kind="marginal")
        worst_marg = max(worst_marg, abs(w22m - w2_diagonal(variances, S)))
        # Full Ω, conditional Ω_SS⁻¹ (the paper's subnetwork posterior): (23) is off.
        gaps.append(subnetwork_w2(Omega, S) / w2_diagonal(variances, S))
        # The largest-variance rule against brute force over (23).
        best = min(itertools.combinations(range(p), k), key=lambda T: w2_diagonal(variances, T))
        rule = np.argsort(-variances)[:k]
        rule_misses += not np.isclose(w2_diagonal(variances, rule), w2_diagonal(variances, best))
    ok = worst_diag < 1e-9 and rule_misses == 0
    gaps = np.array(gaps)
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=worst_diag,
        expected=0.0,
        tolerance=1e-9,
        evidence=(
            f"{cases} random GGN-like precisions Ω = JᵀJ + λI (p ≤ 7, rank(J) = p/2) and "
            f"subsets S. Diagonal Ω: |W2(22) − W2(23)| ≤ {worst_diag:.1e}. The "
            f"largest-marginal-variance rule attains the brute-force minimum of (23) in "
            f"{cases - rule_misses}/{cases} cases. Beyond the paper: with the marginal "
            f"block (Ω⁻¹)_SS, (23) is exact for every Ω (max deviation {worst_marg:.1e}); "
            f"with the conditional Ω_SS⁻¹ the paper actually uses, W2(22)/W2(23) ranges "
            f"over [{gaps.min():.3f}, {gaps.max():.3f}] ({np.sum(gaps >= 1 - 1e-9)}/{cases} "
            "cases ≥ 1), so (23) is an optimistic proxy for the posterior the method builds."
        ),
        details={"worst_marginal_deviation": worst_marg, "conditional_ratio_min": gaps.min()},
    )


@claim(
    paper=PAPER,
    name="probit-approximation",
    location="§4, after eq. (18) (Gibbs 1998; Bishop 2006)",
    statement=(
        "The probit approximation σ(μ/√(1+πs²/8)) approximates the logistic–Gaussian "
        "predictive integral ∫σ(f)N(f; μ, s²)df."
    ),
)
def probit_approximation_error(ctx: Context) -> Verdict:
    import matplotlib.pyplot as plt

    mu = np.linspace(-8, 8, 161 if ctx.full else 41)
    s = np.linspace(0.1, 16, 160 if ctx.full else 40)
    M, Sd = np.meshgrid(mu, s)
    err = np.abs(probit_approximation(M, Sd**2) - logistic_gaussian_integral(M, Sd**2))
    i = int(np.argmax(err))

    def negative_error(x: np.ndarray) -> float:
        m, sd = float(np.clip(x[0], -8, 8)), float(np.clip(x[1], 0.1, 16))
        return -float(abs(probit_approximation(m, sd**2) - logistic_gaussian_integral(m, sd**2)))

    refined = minimize(negative_error, [M.flat[i], Sd.flat[i]], method="Nelder-Mead")
    worst = max(-refined.fun, float(err.max()))
    m_star, s_star = np.clip(refined.x, [-8, 0.1], [8, 16])
    outside = float(
        np.max(np.abs(probit_approximation(12.0, s**2) - logistic_gaussian_integral(12.0, s**2)))
    )
    fig, ax = plt.subplots(figsize=(5, 3.4))
    im = ax.pcolormesh(mu, s, err, shading="auto")
    fig.colorbar(im, ax=ax, label="|probit − exact|")
    ax.set(xlabel="μ", ylabel="s", title="Probit approximation error")
    return Verdict(
        Status.CONFIRMED if worst < 0.02 else Status.REFUTED,
        measured=worst,
        expected="≈ 0.0148",
        tolerance=0.02,
        evidence=(
            f"Max |probit − exact| over μ ∈ [−8, 8], s ∈ [0.1, 16]: {worst:.5f} at "
            f"μ = {m_star:.2f}, s = {s_star:.2f} (grid {err.shape[1]}×{err.shape[0]}, then "
            "Nelder–Mead refinement; exact integral by the geometrically convergent "
            "trapezoidal rule). The error is symmetric in μ (both sides map μ → −μ to "
            "1 − value) and vanishes at μ = 0. The maximum sits on the boundary |μ| = 8 and "
            f"grows beyond it (max over s at |μ| = 12: {outside:.4f}); the expected ≈ 0.0148 is a "
            "coarser evaluation of the same boundary maximum."
        ),
        details={"mu_star": float(m_star), "s_star": float(s_star)},
        figures=ctx.save_figure(fig, "probit_error.png"),
    )


def _pv(J: np.ndarray, g: np.ndarray, S: np.ndarray, prior: float, noise_var: float) -> float:
    """g_Sᵀ(J_SᵀJ_S/σ² + λI)⁻¹g_S: the linearized subnetwork predictive variance (eq. 15)."""
    JS = J[:, S]
    H = JS.T @ JS / noise_var + prior * np.eye(S.size)
    return float(g[S] @ np.linalg.solve(H, g[S]))


@claim(
    paper=PAPER,
    name="prior-rescaling",
    location="§4 after eq. (15); §6.1",
    statement=(
        "Updating the subnetwork prior precision to λ_S = λ·S/D preserves the magnitude "
        "of the full network's predictive variance (better than keeping λ)."
    ),
    expected=Status.CONFIRMED,
)
def prior_rescaling(ctx: Context) -> Verdict:
    rng = ctx.rng("prior-rescaling")
    p, N, lam, s2 = 60, 30, 3.0, 1.0
    fractions = [0.01 * 5, 0.1, 0.25, 0.5]
    reps = 200 if ctx.full else 40
    err_fixed, err_scaled, non_monotone = {f: [] for f in fractions}, {f: [] for f in fractions}, 0
    example = None
    for _ in range(reps):
        J = rng.standard_normal((N, p)) * rng.uniform(0.1, 2.0, size=p)
        g = rng.standard_normal(p) * rng.uniform(0.1, 2.0, size=p)
        full = _pv(J, g, np.arange(p), lam, s2)
        order = rng.permutation(p)
        prev = None
        for f in fractions:
            S = order[: max(1, int(f * p))]
            fixed = _pv(J, g, S, lam, s2)
            scaled = _pv(J, g, S, lam * S.size / p, s2)
            err_fixed[f].append(abs(np.log(fixed / full)))
            err_scaled[f].append(abs(np.log(scaled / full)))
            if prev is not None and scaled < prev[1] * (1 - 1e-9) and example is None:
                example = {"smaller": int(prev[0]), "larger": int(S.size), "pv": [prev[1], scaled]}
            non_monotone += prev is not None and scaled < prev[1] * (1 - 1e-9)
            prev = (S.size, scaled)
    mean_fixed = {f: float(np.mean(v)) for f, v in err_fixed.items()}
    mean_scaled = {f: float(np.mean(v)) for f, v in err_scaled.items()}
    wins = sum(mean_scaled[f] < mean_fixed[f] for f in fractions)
    return Verdict(
        Status.CONFIRMED if wins == len(fractions) else Status.REFUTED,
        measured=f"rescaled closer at {wins}/{len(fractions)} subnetwork fractions",
        expected=f"{len(fractions)}/{len(fractions)}",
        tolerance="mean |log PV_S / PV_full| smaller with λ_S than with λ",
        evidence=(
            f"Random linear-Gaussian GGNs (N = {N} < p = {p}, column scales 0.1–2, λ = {lam}, "
            f"σ² = {s2}), {reps} replications, random nested subnetworks. Mean "
            "|log(PV_S/PV_full)| with λ vs λ_S = λ·S/D: "
            + "; ".join(
                f"S/D = {f:g}: {mean_fixed[f]:.3f} vs {mean_scaled[f]:.3f}" for f in fractions
            )
            + f". Side effect: with λ_S the subnetwork predictive variance is no longer "
            f"monotone in nested S (Theorem-1-type monotonicity needs a fixed prior): "
            f"{non_monotone} decreases among {reps * (len(fractions) - 1)} nested steps"
            + (f", e.g. {example}." if example else ".")
        ),
        details={"fixed": mean_fixed, "scaled": mean_scaled, "non_monotone": non_monotone},
    )


@claim(
    paper=PAPER,
    name="hessian-memory-40k",
    location="§7 (Limitations)",
    statement="Storing a Hessian for 40K weights requires around 6.4GB of memory.",
)
def hessian_memory(ctx: Context) -> Verdict:
    float32 = 40_000**2 * 4 / 1e9
    float64 = 40_000**2 * 8 / 1e9
    return Verdict(
        Status.CONFIRMED if abs(float32 - 6.4) < 0.05 else Status.REFUTED,
        measured=float32,
        expected=6.4,
        tolerance=0.05,
        evidence=(
            f"40,000² entries × 4 bytes (float32) = {float32:.2f} GB (10⁹ bytes); in float64 "
            f"it would be {float64:.1f} GB, and storing only the triangle halves either."
        ),
    )
