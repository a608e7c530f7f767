"""The conjugate experiments of Rodemann et al., "Self-Supervised Laplace Approximation for
Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208: §5, App. B.1 and §6.

SSLA (eq. 12) and ASSLA (eq. 17) against the analytic posterior predictive of the paper's
normal–normal and Poisson–gamma set-ups at n = 20 … 10⁶ (one shared run,
:func:`._experiment.experiment`; quick mode 8 replications, full mode 30).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from laplace_lab.paper_checks.self_supervised_laplace import _audits, _mutants
from laplace_lab.paper_checks.self_supervised_laplace._experiment import (
    MODELS,
    PAPER,
    REUSES_SAMPLES,
    ROUNDOFF_FLOOR,
    SLOPES_AT_THRESHOLD,
    TV_CLOSE,
    experiment,
    fit,
    fit_json,
    float32_eq16,
    predictive_figure,
    rate_decision,
    rates_figure,
    replications,
    slopes_text,
)
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    claim,
    decisions,
    require,
)
from laplace_lab.theory import ssla as ssla_theory
from laplace_lab.theory.conjugate import NormalNormal, PoissonGamma
from laplace_lab.theory.divergences import divergences
from laplace_lab.theory.ssla import ssla_predictive
from laplace_lab.theory.ssla_rates import PAPER_NS, paper_model

#: "Close to perfect" (§5) as a margin on the total variation, and where it comes from.
CLOSE_MARGIN = (
    f"δ = {TV_CLOSE} in total variation (5% of the probability mass misplaced): §5 and "
    "App. B.1 give no number for 'close to perfect' (Figure 1's entropy scores are only said "
    "to 'remain close to zero'); fixed before measuring, the same for the three conjugate models"
)
#: What runs more replications of the conjugate experiments.
_FULL = "laplace-lab check --full --claim self-supervised-laplace/{}"

#: One unit of work with claims.py: both read the cached conjugate experiments (cached
#: experiments are per process).
WORK_UNIT = "conjugate-experiments"


@claim(
    paper=PAPER,
    name="ssla-assla-recover-analytic-ppd",
    location="§5 Experiments; App. B.1; Figures 1 and 3",
    statement="SSLA and ASSLA recover the analytic posterior predictive close to perfect "
    "for n between 20 and 100 000 (normal–normal and Poisson–gamma).",
    kind=Kind.EQUIVALENCE,
    setting=Setting.paper(),
    margin=CLOSE_MARGIN,
    mutants=(
        Mutant(
            "total-variation-at-the-margin",
            "every total variation set to the margin δ itself",
            {divergences: _mutants.total_variation_at_margin},
            expect=Status.INCONCLUSIVE,
            reuses=REUSES_SAMPLES,
        ),
        Mutant(
            "new-point-likelihood-twice-the-noise",
            "ŷ's likelihood ℓ_new with variance 2σ² (normal–normal)",
            {(NormalNormal, "_new_loglik"): _mutants.new_loglik_double_noise},
            reuses=REUSES_SAMPLES,
        ),
        Mutant(
            "predictive-with-the-prior-rate",
            "the Poisson–gamma predictive with the prior rate β instead of β + n: its "
            "divergences are NaN, which a max() over the models would skip",
            {(PoissonGamma, "_log_predictive"): _mutants.poisson_predictive_prior_rate},
            expect=Status.ERROR,
            heavy=True,  # 90 s: the unnormalised predictive's support runs far out
            reuses=REUSES_SAMPLES,
        ),
    ),
)
def _recover(ctx: Context) -> Verdict:
    """§5: "To sum up, SSLA and ASSLA are able to recover the analytic PPD close to perfect
    for sample sizes between n = 20 and n = 100000."

    Equivalence (non-inferiority: a divergence is never negative) of the largest total
    variation per replication against the margin :data:`CLOSE_MARGIN`.
    """
    exp = experiment(ctx.seed, ctx.full)
    upto = PAPER_NS.index(100_000) + 1
    per_rep = np.max(
        [exp[m]["div"][lb][:, :upto, 2].max(axis=1) for m in MODELS for lb in ("SSLA", "ASSLA")],
        axis=0,
    )
    dec = decisions.equivalence(
        decisions.test(
            "largest TV(approx, analytic) over n = 20..10⁵, both models and methods",
            per_rep,
            side=-1,
        ),
        margin=TV_CLOSE,
        source=CLOSE_MARGIN,
        side=-1,
        command=_FULL.format("ssla-assla-recover-analytic-ppd"),
    )
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
    caption = (
        "Analytic predictive (thick green) against SSLA (red dashed) and ASSLA (black dotted) "
        "at the paper's n, first replication. The titles give the total variation, the "
        f"quantity the verdict reads: ≤ {TV_CLOSE} at every n ≤ 10⁵ confirms."
    )
    figs = ctx.save_figure(
        predictive_figure("normal-normal", exp["normal-normal"]),
        "ssla_normal_normal_predictives.png",
        caption=caption,
    )
    figs += ctx.save_figure(
        predictive_figure("poisson-gamma", exp["poisson-gamma"]),
        "ssla_poisson_gamma_predictives.png",
        caption=caption,
    )
    return Verdict(
        dec.status,
        measured=tv,
        expected=0.0,
        tolerance=f"the largest TV per replication below {TV_CLOSE} (non-inferiority)",
        decision=dec,
        summary=f"worst total variation {tv:.2e} over n = 20..10⁵ (both models, both methods)",
        evidence=[
            "Normalised SSLA/ASSLA vs the analytic predictive (exact NegBin / normal), all "
            f"four divergences, {replications(exp)} replications.",
            f"Tolerance: 'close to perfect' = at most {TV_CLOSE:.0%} of the probability mass "
            "misplaced (total variation).",
            "Worst case over n = 20..10⁵: "
            + "; ".join(
                f"{k}: TV {v['max_TV']:.2e}, KL {v['max_KL_forward']:.2e}"
                for k, v in worst.items()
            )
            + ".",
            "The worst case is ASSLA at n = 20 (missing epistemic variance).",
        ],
        details=worst,
        figures=figs,
    )


@claim(
    paper=PAPER,
    name="assla-converges-to-analytic",
    location="§4 (Theorem 1, Corollaries 1-2 => eq. 17); App. B.1",
    statement="ASSLA's predictive converges to the analytic posterior predictive as n grows.",
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "inconsistent-plug-in",
            "θ̂ shifted by 0.5 (an inconsistent estimate)",
            {
                (NormalNormal, "_mle"): _mutants.normal_mle_shifted,
                (PoissonGamma, "_mle"): _mutants.poisson_mle_shifted,
            },
            reuses=REUSES_SAMPLES,
        ),
        SLOPES_AT_THRESHOLD,
    ),
)
def _converges(ctx: Context) -> Verdict:
    """§4: "Theorem 1 and Corollary 1 eliminate the need to compute θ̃ entirely", so ASSLA
    (eq. 17) differs from SSLA by O(1/n); decided as a rate of the total variation."""
    exp = experiment(ctx.seed, ctx.full)
    fig, fits = rates_figure(exp)
    figs = ctx.save_figure(
        fig,
        "ssla_divergence_rates.png",
        caption=(
            "KL and total variation to the analytic predictive against n, per method, with "
            "OLS fits (95 % CI in the legend). Grey dashed lines: slope −1 through the first "
            "ASSLA point, the rate the claim needs for the TV (KL: −2); a TV line as steep or "
            "steeper confirms. Points below roundoff are left out."
        ),
    )
    tv_fits = {m: fit(exp[m]["div"]["ASSLA"][:, :, 2]) for m in MODELS}
    d = rate_decision(
        {f"TV(ASSLA, analytic) ({m})": exp[m]["div"]["ASSLA"][:, :, 2] for m in MODELS},
        -1.0,
        command="laplace-lab check --full --claim assla-converges-to-analytic",
    )
    worst = max(t.mean for t in d.tests)
    return Verdict(
        d.status,
        decision=d,
        measured=worst,
        expected=-1.0,
        tolerance=d.rule,
        summary=f"TV(ASSLA, analytic) falls with slope {worst:.3f} in n (O(1/n) is −1)",
        evidence=[
            f"Slope of log TV(ASSLA, analytic) on log n, n = 20..10⁶, one per replication "
            f"({replications(exp)}); pooled OLS for the figure: " + slopes_text(tv_fits) + ".",
            "Criterion: the O(1/n) rate that §4's argument gives (ASSLA = SSLA + O(1/n), "
            "Theorem 1 and Corollaries 1–2), with 0.05 slack on the exponent for finite-n "
            "curvature; a slope whose CI stays above −0.95 (e.g. a TV levelling off at a "
            "constant) refutes convergence at that rate.",
            "Rate 1/n, not faster: ASSLA misses the O(1/n) epistemic variance. All slopes "
            "(KL, TV, per method) are in details and the figure.",
        ],
        details=fits,
        figures=figs,
    )


def _rate_fits(exp: dict[str, Any], label: str) -> dict[str, Any]:
    """TV rate of one method per model (points below roundoff left out)."""
    return {m: fit(exp[m]["div"][label][:, :, 2], floor=ROUNDOFF_FLOOR[2]) for m in MODELS}


@claim(
    paper=PAPER,
    name="ssla-more-faithful-than-assla",
    location="§6 Conclusion",
    statement="SSLA provides a more faithful (but costlier) approximation than ASSLA.",
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "without-log-determinants",
            "eqs. (12) and (17) without their ½log|J| terms",
            {ssla_theory._logdet: _mutants.no_logdet},
            expect=Status.INCONCLUSIVE,
            reuses=REUSES_SAMPLES,
        ),
        Mutant(
            "ssla-without-refit",
            "θ̃ replaced by θ̂ in eq. (12), which makes it ASSLA: both arms the same method "
            "(the null)",
            {ssla_theory._log_unnormalised: _mutants.ssla_without_refit},
            expect=Status.INCONCLUSIVE,
            reuses=REUSES_SAMPLES,
        ),
    ),
)
def _more_faithful(ctx: Context) -> Verdict:
    """§6: "[...] while SSLA provides a more faithful (but costlier) self-refitting
    baseline" (beside ASSLA, which "generally delivers smoother and more computationally
    efficient uncertainty estimates than SSLA").

    Superiority on every model of two paired per-replication statistics: the largest
    log TV(SSLA)/TV(ASSLA) over n (below 0: smaller everywhere) and the difference of the
    fitted TV slopes, SSLA − ASSLA (below 0: vanishing faster).
    """
    exp = experiment(ctx.seed, ctx.full)
    ratios = {
        m: float(np.max(exp[m]["div"]["SSLA"][:, :, 2] / exp[m]["div"]["ASSLA"][:, :, 2]))
        for m in MODELS
    }
    ssla, assla = _rate_fits(exp, "SSLA"), _rate_fits(exp, "ASSLA")
    tests = []
    for m in MODELS:
        tv_s, tv_a = exp[m]["div"]["SSLA"][:, :, 2], exp[m]["div"]["ASSLA"][:, :, 2]
        tests.append(
            decisions.test(
                f"{m}: largest log TV(SSLA)/TV(ASSLA) over n",
                np.log(np.max(tv_s / tv_a, axis=1)),
                side=-1,
            )
        )
    for m in MODELS:
        tv_s, tv_a = exp[m]["div"]["SSLA"][:, :, 2], exp[m]["div"]["ASSLA"][:, :, 2]
        floor = ROUNDOFF_FLOOR[2]
        slope_gap = [
            fit(tv_s[r : r + 1], floor=floor).slope - fit(tv_a[r : r + 1], floor=floor).slope
            for r in range(tv_s.shape[0])
        ]
        tests.append(
            decisions.test(f"{m}: TV slope of SSLA − TV slope of ASSLA", slope_gap, side=-1)
        )
    d = decisions.superiority(tests, command=_FULL.format("ssla-more-faithful-than-assla"))
    return Verdict(
        d.status,
        decision=d,
        measured=max(ratios.values()),
        expected="< 1, and a steeper TV slope",
        tolerance="each paired statistic significantly below 0 (one-sided t, every model)",
        summary=(
            f"TV(SSLA)/TV(ASSLA) ≤ {max(ratios.values()):.2e}; TV slopes SSLA "
            + ", ".join(f"{ssla[m].slope:.2f}" for m in MODELS)
            + " vs ASSLA "
            + ", ".join(f"{assla[m].slope:.2f}" for m in MODELS)
        ),
        evidence=[
            "'More faithful' read two ways, both required: (a) smaller divergence from the "
            "analytic predictive at every n (per replication, the largest log ratio over n); "
            "(b) a divergence that vanishes faster — ASSLA is SSLA with O(1/n) terms dropped "
            "(§4), so SSLA must be the higher-order approximation (per replication, the "
            "difference of the fitted slopes). Replications are the paired units.",
            "Largest TV(SSLA)/TV(ASSLA) over n = 20..10⁶ and replications: "
            + "; ".join(f"{m} {r:.2e}" for m, r in ratios.items())
            + ".",
            "Pooled TV slopes, SSLA " + slopes_text(ssla) + "; ASSLA " + slopes_text(assla) + ".",
            "Reading (b) is what the log-determinant terms of eqs. (12) and (17) decide: "
            "without them the Poisson–gamma SSLA falls only like 1/n.",
        ],
        details={
            "tv_ratio_max": ratios,
            "ssla_tv_rate": {m: fit_json(f) for m, f in ssla.items()},
            "assla_tv_rate": {m: fit_json(f) for m, f in assla.items()},
        },
    )


@claim(
    paper=PAPER,
    name="assla-underestimates-uncertainty",
    location="§6 Conclusion; eq. (17) with eq. (33)",
    statement="ASSLA underestimates predictive uncertainty (normal–normal: its intervals "
    "under-cover).",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "assla-with-epistemic-variance",
            "an ASSLA that returns the analytic predictive N(μ_n, σ² + σ_n²)",
            {ssla_predictive: _mutants.assla_is_analytic},
            reuses=REUSES_SAMPLES,
        ),
    ),
)
def _undercover(ctx: Context) -> Verdict:
    """§6: "ASSLA sometimes underestimates uncertainty in regions with high variance";
    §5.1: ASSLA "systematically underestimates uncertainty in wider intervals".

    Decided as an identity on the normal–normal model of App. B.1: with J(μ) = n/σ² (eq. 33)
    eq. (17) normalises to exactly N(x̄, σ²), which drops the epistemic σ_n² > 0, so its
    intervals cover less than their level under the analytic predictive at every n.
    """
    exp = experiment(ctx.seed, ctx.full)
    model = exp["normal-normal"]["model"]
    cover, var_err = [], []
    for s in exp["normal-normal"]["stats"]:
        exact = model.predictive(s)
        assla = ssla_predictive(model, s, variant="approx", hessian="likelihood")
        lo, hi = assla.interval(0.95)
        cover.append(float(exact.cdf(hi) - exact.cdf(lo)))
        var_err.append(abs(assla.var() - model.noise_var) / model.noise_var)
    require(
        bool(np.all(np.isfinite(cover)) and np.all(np.isfinite(var_err))),
        f"a coverage or variance error is not finite: {cover}, {var_err}",
    )
    deficit = 0.95 - np.asarray(cover)
    f = _audits.fit_rate(PAPER_NS, np.maximum(deficit, 1e-300))
    ok = bool(np.all(deficit > 0) and max(var_err) < 1e-12)
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=float(cover[0]),
        expected="< 0.95",
        tolerance="coverage < 0.95 at every n; ASSLA variance = σ² to 1e-12",
        summary=(
            f"ASSLA's 95 % interval covers {cover[0]:.4f} at n = 20; below 0.95 at "
            f"{int(np.sum(deficit > 0))} of {len(cover)} n"
        ),
        evidence=[
            "J(μ) = n/σ² (eq. 33) does not depend on ŷ, so eq. 17 normalises to exactly "
            f"N(x̄, σ²) (max relative variance error {max(var_err):.1e}) and drops σ_n².",
            "Coverage of its 95% interval under the analytic predictive: "
            + ", ".join(f"n={n}: {c:.5f}" for n, c in zip(PAPER_NS, cover, strict=True))
            + ".",
            f"Deficit slope {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}] (∝ 1/n).",
        ],
        details={"coverage": cover, "deficit_rate": fit_json(f)},
    )


#: "Stable" at n = 10⁶: TV(10⁶)/TV(10⁵) in (0.05, 0.2), i.e. the 1/n trend (ratio 0.1)
#: continues within a factor 2 either way; an instability breaks it.
STABLE_RATIO = (0.05, 0.2)


def _float32_figure(model: Any, rng: np.random.Generator) -> tuple[Figure, dict[int, float]]:
    """ASSLA by eq. 16 with float32 sums against exact ASSLA at n = 10⁵ and 10⁶."""
    fig = Figure(figsize=(12, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    tv32 = {}
    for ax, n in zip(axes, (100_000, 1_000_000), strict=True):
        x = model.sample_data(n, 4.0, rng=rng)
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
    return fig, tv32


@claim(
    paper=PAPER,
    name="assla-numerically-unstable-large-n",
    location="§5 Experiments; Figure 3",
    statement="Numerical instabilities emerge for ASSLA at n ≥ 1 000 000.",
    expected=Status.REFUTED,
    kind=Kind.EXISTENCE,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "assla-float32-sums",
            "Poisson–gamma ASSLA evaluated as ℓ̃(θ̂) − ℓ_D(θ̂) with float32 log-likelihoods",
            {ssla_theory._log_unnormalised: _mutants.assla_float32_sums},
            expect=Status.CONFIRMED,
            reuses=REUSES_SAMPLES,
        ),
    ),
)
def _instability(ctx: Context) -> Verdict:
    """§5: "Numerical instabilities emerged in our experiments for n ≥ 1000000 for ASSLA.
    However, SSLA is still able to match the analytic PPD closely in these cases."

    A statement about the method at the paper's sizes (not a typo of the text): an
    instability of ASSLA exists at n = 10⁶ when its divergence leaves the 1/n trend.
    """
    exp = experiment(ctx.seed, ctx.full)
    tv = {m: exp[m]["div"]["ASSLA"][:, :, 2].mean(axis=0) for m in MODELS}
    ratio = {m: float(v[-1] / v[-2]) for m, v in tv.items()}
    require(
        all(np.all(np.isfinite(v)) and np.all(v > 0) for v in tv.values()),
        "a total variation of ASSLA to the analytic predictive is not a finite positive "
        f"number: {tv}",
    )
    stable = all(STABLE_RATIO[0] < r < STABLE_RATIO[1] for r in ratio.values())
    model, _ = paper_model("normal-normal")
    fig, tv32 = _float32_figure(model, ctx.rng("assla-numerically-unstable-large-n"))
    figs = ctx.save_figure(
        fig,
        "assla_float32_eq16.png",
        caption=(
            "Exact ASSLA (eq. 17, float64; green) against ASSLA by eq. 16 with float32 "
            "log-likelihood sums (black) at n = 10⁵ and 10⁶: the staircase at 10⁶ is the float32 "
            "spacing of ℓ_D ≈ −1.8·10⁶ — an artefact of the arithmetic, not of ASSLA."
        ),
    )
    worst = max(ratio.values(), key=lambda r: abs(np.log(r / 0.1)))
    d = decisions.existence(
        not stable,
        witness=(
            "TV(ASSLA, analytic) at n = 10⁶ over n = 10⁵: "
            + ", ".join(f"{m} {r:.4f}" for m, r in ratio.items())
            + f"; an instability leaves {STABLE_RATIO}"
        ),
    )
    return Verdict(
        d.status,
        decision=d,
        measured=worst,
        expected="instability (TV no longer falling like 1/n) at n = 10⁶",
        tolerance=f"TV(10⁶)/TV(10⁵) in {STABLE_RATIO}: the 1/n trend continues (stable)",
        summary=(
            f"stable in float64: TV(10⁶)/TV(10⁵) = {worst:.4f} (1/n gives 0.1); the "
            "instability is a float32 artefact"
            if stable
            else f"unstable: TV(10⁶)/TV(10⁵) = {worst:.3g}, off the 1/n trend"
        ),
        evidence=[
            "Read as a property of ASSLA (eq. 17), evaluated faithfully: in float64 on "
            "sufficient statistics TV(10⁶)/TV(10⁵) = "
            + ", ".join(f"{m} {r:.4f}" for m, r in ratio.items())
            + " — the 1/n trend continues; eq. 17 never forms an O(n) number.",
            f"Criterion: stable when the ratio lies in {STABLE_RATIO} (the 1/n trend's 0.1 "
            "within a factor 2).",
            "What the paper saw is reproduced by evaluating eq. 16 with float32 "
            "log-likelihood sums: ℓ̃(θ̂) − ℓ_D(θ̂) subtracts two numbers of size ≈ 1.8n whose "
            f"float32 spacing is 0.125 at n = 10⁶, giving TV {tv32[1_000_000]:.3f} against "
            f"exact ASSLA at n = 10⁶ but {tv32[100_000]:.4f} at n = 10⁵ (figure).",
            "So the instability is an artefact of that arithmetic, not of ASSLA: refuted as a "
            "statement about the method (the paper's code is not available to confirm the "
            "cause).",
        ],
        details={"tv_ratio_1e6_over_1e5": ratio, "float32_eq16_tv": tv32},
        figures=figs,
    )
