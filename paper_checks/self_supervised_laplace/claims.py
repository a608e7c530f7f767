"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", TMLR, arXiv:2605.12208: the conjugate experiments of §5 / App. B.1, Lemma 1,
Theorem 1 and Corollary 1 (§4).

All computations are exact closed forms on sufficient statistics (theory.conjugate,
theory.ssla), so the paper's n = 10⁶ costs one pass over the sample. One sample of size 10⁶
per model and replication is drawn; the smaller n are its prefixes. Quick mode: one
replication; full mode: thirty (rates are fitted on all points pooled).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from laplace_lab.paper_checks.registry import Context, Status, Verdict, claim
from laplace_lab.paper_checks.self_supervised_laplace._experiment import (
    MODELS,
    PAPER,
    SLOPE_TOL,
    TV_CLOSE,
    Y_FIXED,
    at_least_as_fast,
    experiment,
    fit,
    fit_json,
    float32_eq16,
    gaps_figure,
    predictive_figure,
    rates_figure,
    slopes_text,
)
from laplace_lab.theory.rates import fit_rate
from laplace_lab.theory.ssla import ssla_predictive
from laplace_lab.theory.ssla_rates import PAPER_NS, paper_model


def _gap_rate_verdict(ctx: Context, col: int, what: str, note: str) -> Verdict:
    """Verdict for 'gap column ``col`` is O(1/n)' in both models (Lemma 1, Theorem 1)."""
    exp = experiment(ctx.seed, ctx.full)
    fits = {m: fit(exp[m]["gaps"][:, :, col]) for m in MODELS}
    ok = all(at_least_as_fast(f, -1.0) for f in fits.values())
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=max(f.slope for f in fits.values()),
        expected=-1.0,
        tolerance=f"95% CI of the slope reaches -1 + {SLOPE_TOL} or below",
        evidence=f"OLS slope of log {what} on log n, n = 20..10⁶, ŷ = {Y_FIXED}: "
        + slopes_text(fits)
        + note,
        details={m: fit_json(f) for m, f in fits.items()},
    )


# --------------------------------------------------------------------------- claims
@claim(
    paper=PAPER,
    name="lemma1-refit-gap-rate",
    location="Lemma 1, §4",
    statement="For a fixed self-predicted ŷ, θ̃ = θ̂ + O(1/n).",
)
def _lemma1(ctx: Context) -> Verdict:
    verdict = _gap_rate_verdict(ctx, 0, "|θ̃ − θ̂|", ". Exactly (ŷ − θ̂)/(n + 1) in both models.")
    exp = experiment(ctx.seed, ctx.full)
    figs = ctx.save_figure(gaps_figure(exp), "ssla_refit_gaps.png")
    return dataclasses.replace(verdict, figures=figs)


@claim(
    paper=PAPER,
    name="theorem1-rate",
    location="Theorem 1, §4",
    statement="ℓ̃(θ̃) = ℓ̃(θ̂) + O((Ln + 1)/n²), i.e. the refit changes ℓ̃ by O(1/n).",
)
def _theorem1(ctx: Context) -> Verdict:
    return _gap_rate_verdict(
        ctx, 1, "(ℓ̃(θ̃) − ℓ̃(θ̂))", ". Normal–normal: exactly (ŷ − x̄)²/(2σ²(n + 1))."
    )


@claim(
    paper=PAPER,
    name="theorem1-proof-eq19",
    location="Proof of Theorem 1, eqs. (19)-(20), App. A",
    statement="ℓ_D(θ̃) = ℓ_D(θ̂) + O(‖θ̂ − θ̃‖²) = ℓ_D(θ̂) + O(n⁻²).",
    expected=Status.REFUTED,
)
def _theorem1_eq19(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    fits = {m: fit(exp[m]["gaps"][:, :, 2]) for m in MODELS}
    ok = all(f.ci_high <= -2.0 + 0.1 for f in fits.values())
    g = exp["normal-normal"]["gaps"][0, -1, 2]
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=max(f.slope for f in fits.values()),
        expected=-2.0,
        tolerance="slope CI upper end <= -1.9",
        evidence=(
            "The O(‖θ̂ − θ̃‖²) remainder carries the factor J = −ℓ_D'' ∝ n, so the gap is "
            "Θ(1/n): normal–normal ℓ_D(θ̂) − ℓ_D(θ̃) = n(ŷ − x̄)²/(2σ²(n + 1)²) exactly. "
            f"Counterexample: at n = 10⁶, ŷ = {Y_FIXED} the gap is {g:.3e}, 2·10⁶ times "
            "n⁻² = 1e-12. Fitted slopes: "
            + slopes_text(fits)
            + ". Theorem 1's conclusion O(1/n) survives (the ℓ_new term is O(1/n) anyway)."
        ),
        details={m: fit_json(f) for m, f in fits.items()},
    )


@claim(
    paper=PAPER,
    name="corollary1-rates",
    location="Corollary 1, §4",
    statement="J̃(θ̃)/n = J̃(θ̂)/n + O(1/n) and π(θ̃) = π(θ̂) + O(1/n).",
)
def _corollary1(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    # O(1/n) is asymptotic: fit on n ≥ 1000. Below it the prior term's gap bends (π'(θ̂)
    # still moves with θ̂), which pulls a slope fitted from n = 20 up to ≈ −0.96.
    big = PAPER_NS.index(1000)
    g = exp["poisson-gamma"]["gaps"][:, big:]
    ns = PAPER_NS[big:]
    fi, fp = fit(g[:, :, 3], ns), fit(g[:, :, 4], ns)
    fp_n = fit(exp["normal-normal"]["gaps"][:, big:, 4], ns)
    ok = all(at_least_as_fast(f, -1.0) for f in (fi, fp, fp_n))
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=max(fi.slope, fp.slope, fp_n.slope),
        expected=-1.0,
        tolerance="95% CI of the slope reaches -1 + 0.05 or below",
        evidence=(
            f"Slopes fitted on n = {', '.join(f'{n:g}' for n in ns)}. "
            f"Poisson–gamma, ŷ = {Y_FIXED}: |J̃(θ̃) − J̃(θ̂)|/n slope {fi.slope:.3f} "
            f"[{fi.ci_low:.3f}, {fi.ci_high:.3f}], |π(θ̃) − π(θ̂)| slope {fp.slope:.3f} "
            f"[{fp.ci_low:.3f}, {fp.ci_high:.3f}]; normal–normal J̃ is constant (n + 1)/σ² "
            f"and |π(θ̃) − π(θ̂)| has slope {fp_n.slope:.3f} (faster than 1/n because "
            "π'(θ̂) ∝ θ̂ − μ0 = O(n^-1/2) when the prior is centred at the truth)."
        ),
        details={
            "information": fit_json(fi),
            "prior_poisson": fit_json(fp),
            "prior_normal": fit_json(fp_n),
        },
    )


@claim(
    paper=PAPER,
    name="ssla-assla-recover-analytic-ppd",
    location="§5 Experiments; App. B.1; Figures 1 and 3",
    statement="SSLA and ASSLA recover the analytic posterior predictive close to perfect "
    "for n between 20 and 100 000 (normal–normal and Poisson–gamma).",
)
def _recover(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    upto = PAPER_NS.index(100_000) + 1
    worst: dict[str, Any] = {}
    for m in MODELS:
        for label in ("SSLA", "ASSLA"):
            d = exp[m]["div"][label][:, :upto, :]
            worst[f"{m}/{label}"] = {
                "max_TV": float(d[:, :, 2].max()),
                "max_KL_forward": float(d[:, :, 0].max()),
                "max_KL_reverse": float(d[:, :, 1].max()),
                "max_W1": float(d[:, :, 3].max()),
            }
    tv = max(v["max_TV"] for v in worst.values())
    figs = ctx.save_figure(
        predictive_figure("normal-normal", exp["normal-normal"]),
        "ssla_normal_normal_predictives.png",
    )
    figs += ctx.save_figure(
        predictive_figure("poisson-gamma", exp["poisson-gamma"]),
        "ssla_poisson_gamma_predictives.png",
    )
    return Verdict(
        Status.CONFIRMED if tv <= TV_CLOSE else Status.REFUTED,
        measured=tv,
        expected=0.0,
        tolerance=f"total variation <= {TV_CLOSE} at every n in 20..10⁵",
        evidence=(
            "Normalised SSLA/ASSLA vs the analytic predictive (exact NegBin / normal), all "
            "four divergences; worst case over n = 20..10⁵: "
            + "; ".join(
                f"{k}: TV {v['max_TV']:.2e}, KL {v['max_KL_forward']:.2e}"
                for k, v in worst.items()
            )
            + ". The worst case is ASSLA at n = 20 (missing epistemic variance)."
        ),
        details=worst,
        figures=figs,
    )


@claim(
    paper=PAPER,
    name="assla-converges-to-analytic",
    location="§4 (Theorem 1, Corollaries 1-2 => eq. 17); App. B.1",
    statement="ASSLA's predictive converges to the analytic posterior predictive as n grows.",
)
def _converges(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    fig, fits = rates_figure(exp)
    figs = ctx.save_figure(fig, "ssla_divergence_rates.png")
    tv_fits = {m: fit(exp[m]["div"]["ASSLA"][:, :, 2]) for m in MODELS}
    ok = all(f.ci_high < 0 for f in tv_fits.values())
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=max(f.slope for f in tv_fits.values()),
        expected=-1.0,
        tolerance="TV slope CI entirely below 0 (derived rate: TV ∝ 1/n, KL ∝ 1/n²)",
        evidence=(
            "OLS of log TV(ASSLA, analytic) on log n, n = 20..10⁶: "
            + slopes_text(tv_fits)
            + ". Rate 1/n, not faster: ASSLA misses the O(1/n) epistemic variance. All "
            "slopes (KL, TV, per method) are in details and the figure."
        ),
        details=fits,
        figures=figs,
    )


@claim(
    paper=PAPER,
    name="ssla-more-faithful-than-assla",
    location="§6 Conclusion",
    statement="SSLA provides a more faithful (but costlier) approximation than ASSLA.",
)
def _more_faithful(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    ratios = {
        m: float(np.max(exp[m]["div"]["SSLA"][:, :, 2] / exp[m]["div"]["ASSLA"][:, :, 2]))
        for m in MODELS
    }
    worst = max(ratios.values())
    return Verdict(
        Status.CONFIRMED if worst < 1.0 else Status.REFUTED,
        measured=worst,
        expected="< 1",
        tolerance="TV(SSLA)/TV(ASSLA) < 1 at every n and replication",
        evidence="Largest TV(SSLA)/TV(ASSLA) over n = 20..10⁶: "
        + "; ".join(f"{m} {r:.2e}" for m, r in ratios.items())
        + " (SSLA's TV falls like n⁻² or faster, ASSLA's like n⁻¹).",
        details=ratios,
    )


@claim(
    paper=PAPER,
    name="assla-underestimates-uncertainty",
    location="§6 Conclusion; eq. (17) with eq. (33)",
    statement="ASSLA underestimates predictive uncertainty (normal–normal: its intervals "
    "under-cover).",
)
def _undercover(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    model = exp["normal-normal"]["model"]
    cover, var_err = [], []
    for s in exp["normal-normal"]["stats"]:
        exact = model.predictive(s)
        assla = ssla_predictive(model, s, variant="approx", hessian="likelihood")
        lo, hi = assla.interval(0.95)
        cover.append(float(exact.cdf(hi) - exact.cdf(lo)))
        var_err.append(abs(assla.var() - model.noise_var) / model.noise_var)
    deficit = 0.95 - np.asarray(cover)
    f = fit_rate(PAPER_NS, deficit)
    ok = bool(np.all(deficit > 0) and max(var_err) < 1e-12)
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=float(cover[0]),
        expected="< 0.95",
        tolerance="coverage < 0.95 at every n; ASSLA variance = σ² to 1e-12",
        evidence=(
            "J(μ) = n/σ² (eq. 33) does not depend on ŷ, so eq. 17 normalises to exactly "
            f"N(x̄, σ²) (max relative variance error {max(var_err):.1e}) and drops σ_n². "
            "Coverage of its 95% interval under the analytic predictive: "
            + ", ".join(f"n={n}: {c:.5f}" for n, c in zip(PAPER_NS, cover, strict=True))
            + f". Deficit slope {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}] (∝ 1/n)."
        ),
        details={"coverage": cover, "deficit_rate": fit_json(f)},
    )


@claim(
    paper=PAPER,
    name="assla-numerically-unstable-large-n",
    location="§5 Experiments; Figure 3",
    statement="Numerical instabilities emerge for ASSLA at n ≥ 1 000 000.",
    expected=Status.NOT_REPRODUCIBLE_HERE,
)
def _instability(ctx: Context) -> Verdict:
    exp = experiment(ctx.seed, ctx.full)
    tv = {m: exp[m]["div"]["ASSLA"][:, :, 2].mean(axis=0) for m in MODELS}
    ratio = {m: float(v[-1] / v[-2]) for m, v in tv.items()}
    stable = all(0.05 < r < 0.2 for r in ratio.values())  # TV keeps falling like 1/n
    # reproduction attempt: eq. (16) accumulated in float32
    model, truth = paper_model("normal-normal")
    rng = ctx.rng("assla-numerically-unstable-large-n")
    fig = Figure(figsize=(12, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    tv32 = {}
    for ax, n in zip(axes, (100_000, 1_000_000), strict=True):
        x = model.sample_data(n, truth, rng=rng)
        exact_assla = stats.norm(x.mean(), np.sqrt(model.noise_var))
        grid = np.linspace(x.mean() - 6 * 1.5, x.mean() + 6 * 1.5, 2001)
        lp32 = float32_eq16(model, x, grid)
        p32 = np.exp(lp32 - lp32.max())
        p32 /= np.trapezoid(p32, grid)
        tv32[n] = float(0.5 * np.trapezoid(np.abs(p32 - exact_assla.pdf(grid)), grid))
        ax.plot(
            grid,
            exact_assla.pdf(grid),
            color="green",
            lw=3,
            alpha=0.5,
            label="ASSLA, eq. 17, float64",
        )
        ax.plot(grid, p32, color="black", lw=0.8, label="ASSLA, eq. 16, float32 sums")
        ax.set_title(f"n = {n:,}: TV = {tv32[n]:.3f}", fontsize=10)
        ax.legend(fontsize=8)
    figs = ctx.save_figure(fig, "assla_float32_eq16.png")
    # The paper reports what its own (unavailable) implementation did: a stable float64
    # ASSLA cannot refute that report, an unstable one would confirm it.
    return Verdict(
        Status.CONFIRMED if not stable else Status.NOT_REPRODUCIBLE_HERE,
        measured=max(ratio.values()),
        expected="instability (TV no longer falling) at n = 10⁶",
        tolerance="TV(10⁶)/TV(10⁵) in (0.05, 0.2) = the 1/n trend continues: stable",
        evidence=(
            "In float64 on sufficient statistics ASSLA is stable at n = 10⁶: TV(10⁶)/TV(10⁵) "
            + ", ".join(f"{m} {r:.4f}" for m, r in ratio.items())
            + " (the 1/n trend continues; eq. 17 never forms an O(n) number). The reported "
            "instability is reproduced by evaluating eq. 16 with float32 log-likelihood sums: "
            "ℓ̃(θ̂) − ℓ_D(θ̂) subtracts two numbers of size ≈ 1.8n whose float32 spacing is "
            f"0.125 at n = 10⁶, giving TV {tv32[1_000_000]:.3f} against exact ASSLA at "
            f"n = 10⁶ but {tv32[100_000]:.4f} at n = 10⁵. An implementation artefact, not a "
            "property of ASSLA (our explanation; the paper's code is not available, so the "
            "report itself can be neither confirmed nor refuted here)."
        ),
        details={"tv_ratio_1e6_over_1e5": ratio, "float32_eq16_tv": tv32},
        figures=figs,
    )


@claim(
    paper=PAPER,
    name="hdr-derivation-app-a1",
    location="App. A.1, eqs. (25)-(29) and the displays after them",
    statement="For the L2 loss, the highest-density region of the SSLA predictive is "
    "R = {y : |y − f(θ̂, x)| ≥ ∛(9/4 (1 − α)²) e^{4𝔠/3} π(θ̂)^{−2}}, derived through eqs. "
    "(26)-(29).",
    expected=Status.REFUTED,
)
def _hdr_derivation(ctx: Context) -> Verdict:
    from laplace_lab.paper_checks.self_supervised_laplace._hdr import (
        STEPS,
        chain_discrepancies,
        eq27_error,
        eq27_likelihood_vs_loss,
        gaussian_region,
        random_inputs,
    )

    rng = ctx.rng("hdr-derivation-app-a1")
    samples = [random_inputs(rng) for _ in range(2000 if ctx.full else 200)]
    gaps = chain_discrepancies(samples)
    tol = 1e-10
    failed = [st for st in STEPS if gaps[st.label] > tol]
    firm = list(dict.fromkeys(st.error for st in failed if not st.reading))
    loose = list(dict.fromkeys(st.error for st in failed if st.reading))
    spread = eq27_likelihood_vs_loss()
    if spread > tol:
        firm.insert(0, "eq. (27) replaces the likelihood 𝓛 = exp ℓ̃ by the loss (y − f)²")
    eq27_mode = eq27_error(0.3, 0.3, 0.7)
    region = gaussian_region(0.05)
    return Verdict(
        Status.REFUTED if firm else Status.CONFIRMED,
        measured=f"{len(firm)} distinct errors ({len(failed)} of {len(STEPS)} displayed "
        f"equalities fail; {len(loose)} more under one reading)",
        expected="every step holds",
        tolerance=f"|log(left/right)| <= {tol:g} at {len(samples)} random values of "
        "(q, n, log|I|, log|I_D|, ℓ_D, ℓ̃, log π, α)",
        evidence=(
            "Each display of App. A.1 after eq. (26) (eq. 25, an alternative normalisation, "
            "is not followed further by the paper and not checked) written as a function of "
            "the named quantities and evaluated at the same random values. The root error: "
            "eq. (26) turns ∫ exp ℓ̃ dy into ∫ 𝓛 dy (𝓛 the likelihood, ℓ = log 𝓛 as in eq. "
            "32), and eq. (27) sets 𝓛 = (y − f)², the L2 loss itself; for the L2 loss 𝓛 is "
            "Gaussian in y, and log[∫𝓛 / ∫(y − f)²] over [f − b, f + b] varies by "
            f"{spread:.2f} for b = 0.25..4 (constant if they were proportional). Eq. (27)'s "
            f"antiderivative itself is right at ŷ = f (relative error {eq27_mode:.0e}). "
            "Distinct errors: "
            + "; ".join(firm)
            + (f". Under one reading only: {'; '.join(loose)}" if loose else "")
            + ". Largest |log(left/right)| per step: "
            + "; ".join(f"{st.label}: {gaps[st.label]:.3g}" for st in STEPS)
            + ". The last two displays (rewriting p̂_L) hold as algebra. Whatever its "
            "constant, the final set {|y − f| ≥ t} excludes the mode f of the Gaussian "
            "predictive that A.1's first paragraph asserts, so it is not a highest-density "
            "region for any t > 0: under N(f, s²) the set of that form with probability 0.95 "
            f"has t = {region.t_for_coverage:.4f}·s, while the 95% HDR is "
            f"|y − f| ≤ {region.hdr_half_width:.3f}·s."
        ),
        details={
            "step_log_ratio_max": gaps,
            "distinct_errors": firm,
            "reading_dependent_errors": loose,
            "eq27_log_ratio_spread": spread,
            "eq27_antiderivative_relative_error_at_mode": eq27_mode,
            "gaussian_region_alpha_0.05": region._asdict(),
        },
    )
