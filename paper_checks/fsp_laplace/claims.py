"""Claims of Cinquin et al., "FSP-Laplace: Function-Space Priors for the Laplace
Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711 (§3.2, App. B.1,
Table C.2): the RKHS-norm estimate, the dropped term P₀ΛP₀ᵀ and the decomposition of Λ.

The Table C.2 claims run Algorithm 2 on the App. B.1 set-ups trained to the FSP MAP
(:mod:`._setups`, with its deviations from the paper).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.numerics.fsp import dropped_terms, rkhs_norm_estimate
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12
from laplace_lab.paper_checks.fsp_laplace import _mutants, _setups
from laplace_lab.paper_checks.fsp_laplace._setups import table_c2_runs
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    claim,
    require,
)

PAPER = "fsp-laplace"
#: One unit of work with lanczos.py: both read the trained set-ups of Table C.2 (cached
#: experiments are per process).
WORK_UNIT = "trained-setups"


@claim(
    paper=PAPER,
    name="rkhs-estimate-underestimates",
    location="§3.2, after eq. (3.7)",
    statement=(
        "The context-point estimate (f(C) − μ(C))ᵀΣ(C,C)⁻¹(f(C) − μ(C)) of ‖f − μ‖²_H "
        "provably underestimates it."
    ),
    kind=Kind.EXACT,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "estimate-ignores-correlations",
            "eq. (3.7) with Σ(C, C) replaced by its diagonal",
            {rkhs_norm_estimate: _mutants.rkhs_estimate_ignoring_correlations},
        ),
    ),
)
def _rkhs_underestimates(ctx: Context) -> Verdict:
    """§3.2: "Hence, the estimator of the RKHS norm provably underestimates, i.e.,
    ‖h_C(·, w)‖²_H ≤ ‖f(·, w) − μ‖²_H"."""
    rng = ctx.rng("rkhs-estimate-underestimates")
    trials = 500 if ctx.full else 100
    worst, nested_worst, exact_worst = -np.inf, -np.inf, 0.0
    for t in range(trials):
        kernel = (RBF(1.0, 0.4), Matern12(1.0, 0.4))[t % 2]
        Z = rng.uniform(-1, 1, size=(int(rng.integers(1, 6)), 2))  # f = Σ a_j k(·, z_j)
        a = rng.standard_normal(Z.shape[0])
        true = float(a @ kernel(Z) @ a)
        C_all = rng.uniform(-1.5, 1.5, size=(15, 2))
        est = [
            rkhs_norm_estimate(kernel(C_all[:m], Z) @ a, KernelGram(kernel, C_all[:m], 1e-10))
            for m in range(1, 16)
        ]
        worst = max(worst, (max(est) - true) / true)
        nested_worst = max(nested_worst, float(np.max(-np.diff(est))) / true)
        C = np.concatenate([Z, C_all[:3]])
        exact = rkhs_norm_estimate(kernel(C, Z) @ a, KernelGram(kernel, C, 1e-12))
        exact_worst = max(exact_worst, abs(exact - true) / true)
    ok = worst <= 1e-6 and nested_worst <= 1e-6 and exact_worst <= 1e-4
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=worst,
        expected="<= 0 (estimate − true) / true",
        tolerance=1e-6,
        summary=f"largest (estimate − ‖f‖²_H)/‖f‖²_H = {worst:.2e} (≤ 0 is an underestimate)",
        evidence=[
            f"{trials} functions f = Σ_j a_j k(·, z_j) in the RKHS of RBF / Matérn-1/2 kernels "
            "on ℝ² (‖f‖²_H = aᵀK_ZZ a exactly), 15 nested random context sets each.",
            "Tolerance 1e-6 relative: the Gram jitter (1e-10) and Cholesky roundoff move the "
            "estimate by far less; an overestimate beyond it is real.",
            f"Largest relative overestimate {worst:.2e}; largest decrease along nested sets "
            f"{nested_worst:.2e} (the estimate never decreases as C grows).",
            "Largest error when the representer points z_j lie in C "
            f"{exact_worst:.2e} (exact, up to the jitter).",
        ],
        details={"trials": trials, "nested_worst": nested_worst, "exact_worst": exact_worst},
    )


def _table_points(runs: dict) -> list[str]:
    return [
        f"{k} {t}: ‖P₀ΛP₀‖/‖Λ‖ = {r['p0_ratio']:.2e} (paper {r['paper']:.2e}), "
        f"cross ‖PΛP₀ + P₀ΛP‖/‖Λ‖ = {r['cross_ratio']:.2e}, rank r = {r['rank']}, "
        f"truncated k = {r['truncated']}, p = {r['p']}."
        for (k, t), r in runs.items()
    ]


_SETUP_POINT = (
    "Networks trained to the FSP MAP on the App. B.1 tasks (kernel hyperparameters fixed, "
    "jitter 1e-6); Algorithm 2 with ≤ 500 Lanczos steps; Λ = MMᵀ + J_wᵀJ_w from thin factors."
)
#: "negligible": dropping P₀ΛP₀ᵀ changes Λ by at most 5 % in Frobenius norm — the accuracy at
#: which a predictive error bar is "right" (the same 5 % as the ``lanczos-factor`` check).
NEGLIGIBLE = 0.05


@claim(
    paper=PAPER,
    name="p0-lambda-p0-negligible",
    location="§3.2 after eq. (3.9), Table C.2",
    statement=(
        "‖P₀ΛP₀ᵀ‖_F/‖Λ‖_F is negligible in practice (Table C.2: RBF / Matérn-1/2 priors on "
        "the synthetic regression and two-moons tasks)."
    ),
    kind=Kind.EXACT,
    setting=Setting.substitute(
        "the App. B.1 networks trained to the FSP MAP with fixed kernel hyperparameters "
        "(fitted by marginal likelihood in the paper), a 1e-6 jitter on the Gram matrices and, "
        "in quick mode, fewer training steps and a 2×50 two-moons network"
    ),
    mutants=(
        Mutant(
            "lanczos-10-steps",
            "Algorithm 2 with at most 10 Lanczos steps (a factor of rank ≤ 10)",
            {(_setups, "ALG2_MAX_STEPS"): 10},
            reuses=(_setups.trained_setups,),  # the trained networks
        ),
    ),
)
def _p0_negligible(ctx: Context) -> Verdict:
    """§3.2: "We find that P₀ΛP₀ᵀ is negligible in practice, and hence, we approximate
    Λ ≈ U_M A U_Mᵀ (see Table C.2)"."""
    runs = table_c2_runs(ctx.full, ctx.seed)
    worst = max(r["p0_ratio"] for r in runs.values())
    return Verdict(
        Status.CONFIRMED if worst <= NEGLIGIBLE else Status.REFUTED,
        measured=worst,
        expected="negligible (Table C.2: ≤ 1.3e-2)",
        tolerance=f"≤ {NEGLIGIBLE:g} in every configuration",
        summary=f"largest ‖P₀ΛP₀‖/‖Λ‖ = {worst:.1e} over the four configurations",
        evidence=[
            _SETUP_POINT,
            f"Tolerance {NEGLIGIBLE:g}: dropping P₀ΛP₀ᵀ then changes Λ by ≤ 5 % (Frobenius), "
            "the accuracy at which a predictive error bar is right.",
            *_table_points(runs),
            "Whether the four numbers reproduce Table C.2 is claim table-c2-values.",
        ],
        details={f"{k}/{t}": r for (k, t), r in runs.items()},
    )


#: float32 roundoff: 100·eps32 ≈ 1.2e-5. A Frobenius norm of a product of p × r factors that
#: vanishes in exact arithmetic comes out at a few √p·eps of the working precision.
FLOAT32_ROUNDOFF = 100 * float(np.finfo(np.float32).eps)
#: A value "reproduces" a Table C.2 entry within a factor 10: kernel hyperparameters (fitted
#: in the paper, fixed here) and training differ, so only the order of magnitude can match.
REPRODUCE_FACTOR = 10.0


def _entry_decision(ours: float, paper: float) -> tuple[bool, str]:
    if paper <= FLOAT32_ROUNDOFF:
        ok = ours <= FLOAT32_ROUNDOFF
        return ok, (
            f"paper {paper:.2e} = {paper / np.finfo(np.float32).eps:.1f}·eps32 is float32 "
            f"roundoff (an exact zero in JAX's default precision); ours {ours:.1e} "
            + ("is zero up to roundoff too: reproduced" if ok else "is not: not reproduced")
        )
    ratio = ours / paper
    ok = 1 / REPRODUCE_FACTOR <= ratio <= REPRODUCE_FACTOR
    return ok, (
        f"paper {paper:.2e}, ours {ours:.2e} (ratio {ratio:.2f}): "
        + ("reproduced" if ok else "not reproduced")
    )


@claim(
    paper=PAPER,
    name="table-c2-values",
    location="App. C.2, Table C.2",
    statement=(
        "‖P₀ΛP₀ᵀ‖_F/‖Λ‖_F = 1.026e-7 (RBF, regression), 3.548e-4 (RBF, classification), "
        "4.305e-6 (Matérn-1/2, regression) and 1.299e-2 (Matérn-1/2, classification)."
    ),
    kind=Kind.EXACT,
    setting=Setting.substitute(
        "the App. B.1 networks trained to the FSP MAP with fixed kernel hyperparameters "
        "(fitted by marginal likelihood in the paper), a 1e-6 jitter on the Gram matrices and, "
        "in quick mode, fewer training steps and a 2×50 two-moons network",
        specific=True,
    ),
    expected=Status.NOT_REPRODUCIBLE_HERE,
    mutants=(
        Mutant(
            "kept-block-for-dropped-block",
            "‖PΛP‖_F/‖Λ‖_F reported as ‖P₀ΛP₀‖_F/‖Λ‖_F (caught by the Pythagorean audit of "
            "the dropped terms: ERROR)",
            {(_setups, "dropped_terms"): _mutants.p_in_place_of_p0},
            expect=Status.ERROR,
            reuses=(_setups.trained_setups,),  # the trained networks
        ),
    ),
)
def _table_c2_values(ctx: Context) -> Verdict:
    """App. C.2, Table C.2: "‖P₀ΛP₀ᵀ‖_F / ‖Λ‖_F for different combinations of priors and
    tasks" — the four printed values, on a substitute set-up (a specific number of a table)."""
    runs = table_c2_runs(ctx.full, ctx.seed)
    for (k, t), r in runs.items():  # Λ − PΛP = P₀ΛP₀ + cross terms, orthogonal (Frobenius)
        p0, total = r["p0_ratio"], r["total_ratio"]
        require(
            np.isfinite(p0) and 0.0 <= p0 <= total * (1 + 1e-9) + 1e-15 and total <= 1 + 1e-9,
            f"{k} {t}: ‖P₀ΛP₀‖/‖Λ‖ = {p0:.3g} against ‖Λ − PΛP‖/‖Λ‖ = {total:.3g}: the "
            "dropped block cannot exceed everything dropped",
        )
    decisions = {
        f"{k} {t}": _entry_decision(r["p0_ratio"], r["paper"]) for (k, t), r in runs.items()
    }
    missed = [k for k, (ok, _) in decisions.items() if not ok]
    return Verdict(
        Status.REFUTED if missed else Status.CONFIRMED,
        measured="; ".join(f"{k} {t}: {r['p0_ratio']:.1e}" for (k, t), r in runs.items()),
        expected="; ".join(f"{k} {t}: {r['paper']:.3e}" for (k, t), r in runs.items()),
        tolerance=(
            f"each entry within a factor {REPRODUCE_FACTOR:g}; an entry ≤ 100·eps32 = "
            f"{FLOAT32_ROUNDOFF:.1e} is float32 roundoff, reproduced by any value below it"
        ),
        summary=(
            f"{len(runs) - len(missed)} of {len(runs)} entries reproduced"
            + (f"; not: {', '.join(missed)}" if missed else "")
        ),
        evidence=[
            _SETUP_POINT,
            f"Per entry, decided with tolerances fixed in advance (factor {REPRODUCE_FACTOR:g}: "
            "only the order of magnitude can match with fixed hyperparameters; ≤ 100·eps32: "
            "the paper's value is roundoff of its float32 arithmetic).",
            *(f"{k}: {text}." for k, (_, text) in decisions.items()),
            "The regression entries are not numbers that can be reproduced: in exact "
            "arithmetic the 1-D regression likelihood rows lie in range(M) (100 context points "
            "interpolate the smooth Jacobian), so the ratio is a roundoff level — 1e-7 in "
            "float32, ours far below in float64.",
        ],
        details={k: {"reproduced": ok, "decision": text} for k, (ok, text) in decisions.items()},
    )


@claim(
    paper=PAPER,
    name="lambda-decomposition-eq-3-9",
    location="§3.2, decomposition before eq. (3.9)",
    statement="Λ = PΛPᵀ + P₀ΛP₀ᵀ with P = U_M U_Mᵀ and P₀ = I − P.",
    kind=Kind.EXACT,
    setting=Setting.substitute(
        "the App. B.1 networks trained to the FSP MAP with fixed kernel hyperparameters "
        "(fitted by marginal likelihood in the paper), a 1e-6 jitter on the Gram matrices and, "
        "in quick mode, fewer training steps and a 2×50 two-moons network"
    ),
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "likelihood-inside-prior-subspace",
            "the likelihood Jacobian rows projected into range(M), where the identity holds",
            {dropped_terms: _mutants.likelihood_inside_prior_subspace},
            expect=Status.CONFIRMED,
            reuses=(_setups.trained_setups,),  # the trained networks
        ),
    ),
)
def _decomposition(ctx: Context) -> Verdict:
    """§3.2, before eq. (3.9): Λ = PΛPᵀ + P₀ΛP₀ᵀ with P = U_M U_Mᵀ and P₀ = I − P, an identity
    that omits the cross terms PΛP₀ᵀ + P₀ΛPᵀ."""
    runs = table_c2_runs(ctx.full, ctx.seed)
    worst = max(r["cross_ratio"] for r in runs.values())
    dominant = sum(r["cross_ratio"] > r["p0_ratio"] for r in runs.values())
    holds = worst <= 1e-10
    return Verdict(
        Status.CONFIRMED if holds else Status.REFUTED,
        measured=worst,
        expected=0.0,
        tolerance="1e-10 (roundoff)",
        summary=f"the omitted cross terms PΛP₀ + P₀ΛP are up to {worst:.1e}·‖Λ‖_F, not 0",
        evidence=[
            "The identity omits the cross terms PΛP₀ + P₀ΛP, which vanish only when the "
            "likelihood Jacobian rows lie in range(M).",
            "Tolerance 1e-10 relative: roundoff of the thin-factor products; an identity holds "
            "to ~1e-14.",
            f"Measured ‖PΛP₀ + P₀ΛP‖_F/‖Λ‖_F up to {worst:.2e}; the cross terms exceed "
            f"‖P₀ΛP₀‖ in {dominant} of 4 configurations, so the error of Λ ≈ U_M A U_Mᵀ is "
            "governed by them, not by Table C.2's ratio.",
            _SETUP_POINT,
            *_table_points(runs),
        ],
        details={f"{k}/{t}": r for (k, t), r in runs.items()},
    )
