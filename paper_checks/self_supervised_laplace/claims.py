"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", TMLR, arXiv:2605.12208: Lemma 1, Theorem 1 (and eq. 19 of its proof),
Corollary 1 (§4) and the highest-density region of App. A.1.

The rates are measured on the conjugate experiments of App. B.1 (:mod:`.experiments`): exact
closed forms on sufficient statistics, so the paper's n = 10⁶ costs one pass over the sample.
One sample of size 10⁶ per model and replication is drawn; the smaller n are its prefixes.
Quick mode: eight replications; full mode: thirty (rates are fitted on all points pooled).
"""

from __future__ import annotations

import dataclasses

from laplace_lab.paper_checks.self_supervised_laplace import _hdr, _mutants
from laplace_lab.paper_checks.self_supervised_laplace._experiment import (
    MODELS,
    PAPER,
    REUSES_DIVERGENCES,
    REUSES_SAMPLES,
    SLOPE_TOL,
    SLOPES_AT_THRESHOLD,
    Y_FIXED,
    experiment,
    fit,
    fit_json,
    gaps_figure,
    rate_decision,
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
)
from laplace_lab.theory.conjugate import NormalNormal, PoissonGamma
from laplace_lab.theory.ssla_rates import PAPER_NS, refit_gaps

#: The rate claims rest on the paper's own conjugate models of App. B.1 at its sizes.
_PAPER_MODELS = Setting.paper()
#: What runs more replications of the conjugate experiments.
_FULL = "laplace-lab check --full --claim self-supervised-laplace/{}"

#: One unit of work with conjugate.py: both read the cached conjugate experiments (cached
#: experiments are per process).
WORK_UNIT = "conjugate-experiments"

#: The refit quantities of Lemma 1, Theorem 1 and Corollary 1 as mutants change them.
_REFIT_SQRT_N = Mutant(
    "refit-moves-theta-by-n-to-the-minus-half",
    "ŷ counted √n times in ℓ̃, so θ̃ − θ̂ = O(n^-½)",
    {
        (NormalNormal, "_augment"): _mutants.normal_augment_sqrt_n,
        (PoissonGamma, "_augment"): _mutants.poisson_augment_sqrt_n,
    },
    reuses=REUSES_SAMPLES,
)


def _gap_rate_verdict(ctx: Context, col: int, what: str, note: str, name: str) -> Verdict:
    """Verdict for 'gap column ``col`` is O(1/n)' in both models (Lemma 1, Theorem 1)."""
    exp = experiment(ctx.seed, ctx.full)
    series = {f"{what} ({m})": exp[m]["gaps"][:, :, col] for m in MODELS}
    d = rate_decision(series, -1.0, command=_FULL.format(name))
    fits = {m: fit(exp[m]["gaps"][:, :, col]) for m in MODELS}
    worst = max(t.mean for t in d.tests)
    return Verdict(
        d.status,
        measured=worst,
        expected=-1.0,
        tolerance=d.rule,
        summary=f"{what} decays with slope {worst:.3f} in n (O(1/n) is −1)",
        decision=d,
        evidence=[
            f"Slope of log {what} on log n, n = 20..10⁶, ŷ = {Y_FIXED}, one per replication "
            f"({replications(exp)}), against −1 + {SLOPE_TOL}; pooled OLS for the figure: "
            + slopes_text(fits)
            + ".",
            f"Tolerance {SLOPE_TOL} on the exponent: finite-n curvature (1/(n + 1) against 1/n "
            "at n = 20) moves a fitted slope by a few hundredths.",
            note,
        ],
        details={m: fit_json(f) for m, f in fits.items()},
    )


# --------------------------------------------------------------------------- claims
@claim(
    paper=PAPER,
    name="lemma1-refit-gap-rate",
    location="Lemma 1, §4",
    statement="For a fixed self-predicted ŷ, θ̃ = θ̂ + O(1/n).",
    kind=Kind.SUPERIORITY,
    setting=_PAPER_MODELS,
    mutants=(_REFIT_SQRT_N, SLOPES_AT_THRESHOLD),
)
def _lemma1(ctx: Context) -> Verdict:
    """Lemma 1: "It holds that θ̃ = θ̂ + O(n⁻¹) [...] That is, θ̃ ≈ θ̂ for growing n."

    A rate, decided on the slopes of log |θ̃ − θ̂| against log n, one per replication
    (:func:`~._experiment.rate_decision`).
    """
    verdict = _gap_rate_verdict(
        ctx,
        0,
        "|θ̃ − θ̂|",
        "Exactly (ŷ − θ̂)/(n + 1) in both models.",
        "lemma1-refit-gap-rate",
    )
    exp = experiment(ctx.seed, ctx.full)
    figs = ctx.save_figure(
        gaps_figure(exp),
        "ssla_refit_gaps.png",
        caption=(
            "Refit gaps against n (geometric mean over replications) with their OLS slopes. "
            "Dashed grey: n⁻¹, the rate Lemma 1 and Theorem 1 need (a gap parallel to it or "
            "steeper confirms); dotted black: n⁻², the rate eq. (19) claims."
        ),
    )
    return dataclasses.replace(verdict, figures=figs)


@claim(
    paper=PAPER,
    name="theorem1-rate",
    location="Theorem 1, §4",
    statement="ℓ̃(θ̃) = ℓ̃(θ̂) + O((Ln + 1)/n²), i.e. the refit changes ℓ̃ by O(1/n).",
    kind=Kind.SUPERIORITY,
    setting=_PAPER_MODELS,
    mutants=(
        Mutant(
            "augmented-gap-order-n-to-the-minus-half",
            "ℓ̃(θ̃) − ℓ̃(θ̂) decaying like n^-½",
            {refit_gaps: _mutants.augmented_gap_slower},
            reuses=REUSES_DIVERGENCES,
        ),
        SLOPES_AT_THRESHOLD,
    ),
)
def _theorem1(ctx: Context) -> Verdict:
    """Theorem 1: "ℓ̃(θ̃) = ℓ̃(θ̂) + O((Ln + 1)/n²)" — "an approximation error that decreases
    linearly in n" (§4)."""
    return _gap_rate_verdict(
        ctx,
        1,
        "ℓ̃(θ̃) − ℓ̃(θ̂)",
        "Normal–normal: exactly (ŷ − x̄)²/(2σ²(n + 1)).",
        "theorem1-rate",
    )


@claim(
    paper=PAPER,
    name="theorem1-proof-eq19",
    location="Proof of Theorem 1, eqs. (19)-(20), App. A",
    statement="ℓ_D(θ̃) = ℓ_D(θ̂) + O(‖θ̂ − θ̃‖²) = ℓ_D(θ̂) + O(n⁻²).",
    expected=Status.REFUTED,
    kind=Kind.SUPERIORITY,
    setting=_PAPER_MODELS,
    mutants=(
        Mutant(
            "loglik-as-mean",
            "ℓ_D read as the mean log-likelihood (1/n)Σ log p (a reading the paper rules out)",
            {refit_gaps: _mutants.data_gap_of_mean_loglik},
            expect=Status.CONFIRMED,
            reuses=REUSES_DIVERGENCES,
        ),
        SLOPES_AT_THRESHOLD,
    ),
)
def _theorem1_eq19(ctx: Context) -> Verdict:
    """Proof of Theorem 1, eq. (19): "ℓ(θ̃) = ℓ(θ̂) + O(‖θ̂ − θ̃‖²)", and with Lemma 1 "we
    have ℓ̃(θ̃) = ℓ_(x_{n+1}, ŷ_{n+1})(θ̃) + ℓ(θ̂) + O(n⁻²)".

    A step of the proof, not a typo: the O(‖θ̂ − θ̃‖²) remainder hides the factor
    J = −ℓ_D'' ∝ n, so the displayed order n⁻² is a wrong rate (decided as a rate, the erratum
    of the proof is in :mod:`.errata`); the theorem's own O(1/n) holds (``theorem1-rate``).
    """
    exp = experiment(ctx.seed, ctx.full)
    fits = {m: fit(exp[m]["gaps"][:, :, 2]) for m in MODELS}
    d = rate_decision(
        {f"ℓ_D(θ̂) − ℓ_D(θ̃) ({m})": exp[m]["gaps"][:, :, 2] for m in MODELS},
        -2.0,
        tol=0.1,
        command=_FULL.format("theorem1-proof-eq19"),
    )
    g = exp["normal-normal"]["gaps"][0, -1, 2]
    return Verdict(
        d.status,
        decision=d,
        measured=max(t.mean for t in d.tests),
        expected=-2.0,
        tolerance=d.rule,
        summary=(
            f"ℓ_D(θ̂) − ℓ_D(θ̃) = {g:.2e} at n = 10⁶; fitted slope up to "
            f"{max(f.slope for f in fits.values()):.2f} (O(n⁻²) is −2)"
        ),
        evidence=[
            "The O(‖θ̂ − θ̃‖²) remainder carries the factor J = −ℓ_D'' ∝ n, so the gap is "
            "Θ(1/n): normal–normal ℓ_D(θ̂) − ℓ_D(θ̃) = n(ŷ − x̄)²/(2σ²(n + 1)²) exactly.",
            f"Counterexample: at n = 10⁶, ŷ = {Y_FIXED} the gap is {g:.3e}, 2·10⁶ times "
            "n⁻² = 1e-12.",
            "Fitted slopes: " + slopes_text(fits) + " (O(n⁻²) needs −2; tolerance 0.1).",
            "Theorem 1's conclusion O(1/n) survives (the ℓ_new term is O(1/n) anyway).",
        ],
        details={m: fit_json(f) for m, f in fits.items()},
    )


@claim(
    paper=PAPER,
    name="corollary1-rates",
    location="Corollary 1, §4",
    statement="J̃(θ̃)/n = J̃(θ̂)/n + O(1/n) and π(θ̃) = π(θ̂) + O(1/n).",
    kind=Kind.SUPERIORITY,
    setting=_PAPER_MODELS,
    mutants=(
        Mutant(
            "information-gap-without-1-over-n",
            "|J̃(θ̃) − J̃(θ̂)| without Corollary 1's 1/n",
            {refit_gaps: _mutants.information_gap_unnormalised},
            reuses=REUSES_DIVERGENCES,
        ),
        SLOPES_AT_THRESHOLD,
    ),
)
def _corollary1(ctx: Context) -> Verdict:
    """Corollary 1: "−ℓ̃''(θ̃)/n = −ℓ̃''(θ̂)/n + O((Ln + 1)/n²) and π(θ̃) = π(θ̂) +
    O((Ln + 1)/n²)"."""
    exp = experiment(ctx.seed, ctx.full)
    # O(1/n) is asymptotic: fit on n ≥ 1000. Below it the prior term's gap bends (π'(θ̂)
    # still moves with θ̂), which pulls a slope fitted from n = 20 up to ≈ −0.96.
    big = PAPER_NS.index(1000)
    g = exp["poisson-gamma"]["gaps"][:, big:]
    ns = PAPER_NS[big:]
    fi, fp = fit(g[:, :, 3], ns), fit(g[:, :, 4], ns)
    fp_n = fit(exp["normal-normal"]["gaps"][:, big:, 4], ns)
    d = rate_decision(
        {
            "|J̃(θ̃) − J̃(θ̂)|/n (poisson-gamma)": g[:, :, 3],
            "|π(θ̃) − π(θ̂)| (poisson-gamma)": g[:, :, 4],
            "|π(θ̃) − π(θ̂)| (normal-normal)": exp["normal-normal"]["gaps"][:, big:, 4],
        },
        -1.0,
        ns=ns,
        command=_FULL.format("corollary1-rates"),
    )
    return Verdict(
        d.status,
        decision=d,
        measured=max(t.mean for t in d.tests),
        expected=-1.0,
        tolerance=d.rule,
        summary=f"slopes {fi.slope:.3f} (J̃/n), {fp.slope:.3f} and {fp_n.slope:.3f} (π)",
        evidence=[
            f"Slopes fitted on n = {', '.join(f'{n:g}' for n in ns)} (O(1/n) is asymptotic; "
            "from n = 20 the prior gap still bends).",
            f"Poisson–gamma, ŷ = {Y_FIXED}: |J̃(θ̃) − J̃(θ̂)|/n slope {fi.slope:.3f} "
            f"[{fi.ci_low:.3f}, {fi.ci_high:.3f}], |π(θ̃) − π(θ̂)| slope {fp.slope:.3f} "
            f"[{fp.ci_low:.3f}, {fp.ci_high:.3f}].",
            f"Normal–normal: J̃ is constant (n + 1)/σ²; |π(θ̃) − π(θ̂)| has slope "
            f"{fp_n.slope:.3f} (faster than 1/n because π'(θ̂) ∝ θ̂ − μ0 = O(n^-1/2) when the "
            "prior is centred at the truth).",
        ],
        details={
            "information": fit_json(fi),
            "prior_poisson": fit_json(fp),
            "prior_normal": fit_json(fp_n),
        },
    )


@claim(
    paper=PAPER,
    name="hdr-derivation-app-a1",
    location="App. A.1, eqs. (25)-(29) and the displays after them",
    statement="For the L2 loss, the highest-density region of the SSLA predictive is "
    "R = {y : |y − f(θ̂, x)| ≥ ∛(9/4 (1 − α)²) e^{4𝔠/3} π(θ̂)^{−2}}, derived through eqs. "
    "(26)-(29).",
    expected=Status.REFUTED,
    kind=Kind.EXACT,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "a-derivation-that-holds",
            "every display holds, eq. (27)'s integrand is the likelihood, and the region "
            "contains the mode",
            {
                _hdr.chain_discrepancies: _mutants.every_display_holds,
                _hdr.eq27_likelihood_vs_loss: _mutants.likelihood_proportional_to_loss,
                _hdr.gaussian_region: _mutants.region_with_mode,
            },
            expect=Status.CONFIRMED,
        ),
    ),
)
def _hdr_derivation(ctx: Context) -> Verdict:
    """App. A.1: "Recall that we selected the L²-loss. Then, we have that ∫ 𝓛(θ̂, y, x) dy =
    ∫ (y − f(θ̂, x))² dy [...]" and the region that follows from eq. (28)'s b*.

    A derivation about the method (its highest-density region), not a typo: each displayed
    equality is decided as an identity to roundoff, and the final set is checked against the
    mode it must contain.
    """
    rng = ctx.rng("hdr-derivation-app-a1")
    samples = [_hdr.random_inputs(rng) for _ in range(2000 if ctx.full else 200)]
    gaps = _hdr.chain_discrepancies(samples)
    tol = 1e-10
    failed = [st for st in _hdr.STEPS if gaps[st.label] > tol]
    firm = list(dict.fromkeys(st.error for st in failed if not st.reading))
    loose = list(dict.fromkeys(st.error for st in failed if st.reading))
    spread = _hdr.eq27_likelihood_vs_loss()
    if spread > tol:
        firm.insert(0, "eq. (27) replaces the likelihood 𝓛 = exp ℓ̃ by the loss (y − f)²")
    eq27_mode = _hdr.eq27_error(0.3, 0.3, 0.7)
    region = _hdr.gaussian_region(0.05)
    if region.density_ratio < 1.0:
        firm.append("the final set {|y − f| ≥ t} excludes the mode: not a highest-density region")
    return Verdict(
        Status.REFUTED if firm else Status.CONFIRMED,
        measured=f"{len(firm)} distinct errors ({len(failed)} of {len(_hdr.STEPS)} displayed "
        f"equalities fail; {len(loose)} more under one reading)",
        expected="every step holds",
        tolerance=f"|log(left/right)| <= {tol:g} at {len(samples)} random values of "
        "(q, n, log|I|, log|I_D|, ℓ_D, ℓ̃, log π, α)",
        summary=(
            f"{len(failed)} of {len(_hdr.STEPS)} displayed equalities fail; the final set "
            + ("excludes the mode" if region.density_ratio < 1.0 else "contains the mode")
        ),
        evidence=[
            "Each display of App. A.1 after eq. (26) written as a function of the named "
            "quantities and evaluated at the same random values (eq. 25, an alternative "
            "normalisation the paper does not follow further, is not checked). Tolerance "
            f"{tol:g} on |log(left/right)|: roundoff of a few exp/log evaluations.",
            "The root error: eq. (26) turns ∫ exp ℓ̃ dy into ∫ 𝓛 dy (𝓛 the likelihood, "
            "ℓ = log 𝓛 as in eq. 32), and eq. (27) sets 𝓛 = (y − f)², the L2 loss itself. For "
            "the L2 loss 𝓛 is Gaussian in y, and log[∫𝓛 / ∫(y − f)²] over [f − b, f + b] "
            f"varies by {spread:.2f} for b = 0.25..4 (constant if they were proportional).",
            "Eq. (27)'s antiderivative itself is right at ŷ = f (relative error "
            f"{eq27_mode:.0e}).",
            "Distinct errors: " + "; ".join(firm) + ".",
        ]
        + ([f"Under one reading only: {'; '.join(loose)}."] if loose else [])
        + [
            "Largest |log(left/right)| per step: "
            + "; ".join(f"{st.label}: {gaps[st.label]:.3g}" for st in _hdr.STEPS)
            + ". The last two displays (rewriting p̂_L) hold as algebra.",
            "Whatever its constant, the final set {|y − f| ≥ t} excludes the mode f of the "
            "Gaussian predictive that A.1's first paragraph asserts, so it is not a "
            "highest-density region for any t > 0: under N(f, s²) the set of that form with "
            f"probability 0.95 has t = {region.t_for_coverage:.4f}·s, while the 95% HDR is "
            f"|y − f| ≤ {region.hdr_half_width:.3f}·s.",
        ],
        details={
            "step_log_ratio_max": gaps,
            "distinct_errors": firm,
            "reading_dependent_errors": loose,
            "eq27_log_ratio_spread": spread,
            "eq27_antiderivative_relative_error_at_mode": eq27_mode,
            "gaussian_region_alpha_0.05": region._asdict(),
        },
    )
