"""The ``lanczos-factor`` claim of Cinquin et al., "FSP-Laplace: Function-Space Priors for the
Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711, §3.2 and
Algorithm 2 step 3: the rank and accuracy of the Lanczos factor L Lᵀ ≈ Σ(C, C)†.

Run on the App. B.1 set-ups of :mod:`._setups`; the measurements are in :mod:`._lanczos_factor`.
The verdict rests on two numerical choices of ours — the jitter added to Σ(C, C) and the
cut of the pseudo-inverse Σ† — so the check repeats the decision over a grid of both.
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.numerics.kernels import KernelGram
from laplace_lab.paper_checks.fsp_laplace import _setups
from laplace_lab.paper_checks.fsp_laplace._lanczos_factor import (
    lanczos_figure,
    lanczos_sweep,
    summarize,
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

PAPER = "fsp-laplace"
#: One unit of work with claims.py: both read the trained set-ups of Table C.2 (cached
#: experiments are per process).
WORK_UNIT = "trained-setups"
_THIS = sys.modules[__name__]

#: Tolerances of the ``lanczos-factor`` check, fixed before measuring: "r ≪ n_C d'" means
#: r ≤ n_C d'/2 (at least a factor 2 saved); "L Lᵀ ≈ Σ†" means ≤ 5 % relative error in
#: what Algorithm 2 consumes (J(C)ᵀ L Lᵀ J(C) in Frobenius norm, and every predictive
#: variance at the test points) — the accuracy at which a predictive error bar is "right".
LANCZOS_RANK_FRACTION = 0.5
LANCZOS_REL_TOL = 0.05


#: The sensitivity grid: jitter on Σ(C, C) (kernel variance 1) and the relative cut of the
#: pseudo-inverses (None: LAPACK's n·eps for Σ†, m·eps for an m-step factor). Quick mode
#: runs the corners.
JITTERS = (1e-6, 1e-8, 1e-10)
CUTS = (None, 1e-10, 1e-6)


def _grid(full: bool) -> list[tuple[float, float | None]]:
    if full:
        return [(j, c) for j in JITTERS for c in CUTS]
    return [(j, c) for j in (JITTERS[0], JITTERS[-1]) for c in (CUTS[0], CUTS[-1])]


def _test_points(task: str) -> np.ndarray:
    if task == "regression":
        return np.linspace(-2.0, 2.0, 201)[:, None]
    g = np.linspace(-3.75, 3.75, 21)
    return np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)


def _lanczos_counterexamples(details: dict) -> list[str]:
    """The configurations that violate "r ≪ n_C d'" or "≈", in words (empty if none)."""
    out = []
    # No breakdown before n_C d'/2 refutes only if stopping at n_C d'/2 is also inaccurate.
    full = {
        k: d
        for k, d in details.items()
        if not d["rank_ok"] and max(d["half_precision"], d["half_variance"]) > LANCZOS_REL_TOL
    }
    if full:
        worst = max(full.values(), key=lambda d: d["half_variance"])
        out.append(
            f"In {len(full)} of {len(details)} configurations ({', '.join(full)}) Lanczos "
            "from J(C)1/‖J(C)1‖ does not break down before n_C d' steps: r = "
            f"{', '.join(str(d['rank']) for d in full.values())} of n_C d' = "
            f"{', '.join(str(d['n']) for d in full.values())} (full rank: "
            f"LLᵀ = Σ⁻¹ to ≤ {max(d['raw'] for d in full.values()):.0e})."
        )
        out.append(
            "Stopped at m = n_C d'/2 instead, J(C)ᵀLLᵀJ(C) is off by up to "
            f"{max(d['half_precision'] for d in full.values()):.0%} and the predictive "
            f"variances by up to {max(d['half_variance'] for d in full.values()):.0%} (worst "
            f"{next(k for k, d in full.items() if d is worst)}: step 9 truncates "
            f"{worst['half_truncated']} eigenvalues and a variance shrinks to "
            f"{worst['half_ratio_min']:.3f}× the exact one)."
        )
        needed = [d["steps_needed"] or d["n"] for d in full.values()]
        if min(needed) > min(d["n"] for d in full.values()) // 2:
            out.append(
                "No other stopping rule rescues the claim there: both consumed errors stay "
                f"≤ 5 % only from (swept) m = {', '.join(map(str, needed))} on."
            )
    for k, d in details.items():
        if d["rank_ok"] and not d["approx_ok"]:
            out.append(
                f"{k}: Lanczos breaks down at r = {d['rank']} ≤ n_C d'/2 = {d['n'] // 2}, but "
                f"the predictive variances are off by up to {d['variance']:.0%} "
                f"(J(C)ᵀLLᵀJ(C) by {d['precision']:.1%})."
            )
    return out


def _cut_text(rcond: float | None) -> str:
    return "n·eps" if rcond is None else f"{rcond:g}"


def _verdict_text(details: dict) -> str:
    fails = [k for k, d in details.items() if _lanczos_counterexamples({k: d})]
    verdict = "REFUTED" if fails else "CONFIRMED"
    return f"{verdict} ({len(fails)} of {len(details)} configurations fail)"


def _sensitivity(setups: dict, J_tests: dict, full: bool) -> dict:
    """The verdict under the other (jitter, cut) settings of the grid (Lanczos swept at three
    step counts only: the rank r, m = n_C d'/2 and m = 1 decide it)."""
    out = {}
    for jitter, rcond in _grid(full):
        if (jitter, rcond) == (_setups.GRAM_JITTER, None):
            continue  # the main run
        details = {}
        for key, s in setups.items():
            gram = KernelGram(s.gram.kernel, s.gram.points, jitter=jitter)
            sw = lanczos_sweep(s.J_C, gram, s.Jw, J_tests[key], num_points=2, rcond=rcond)
            details[f"{key[0]} {key[1]}"] = summarize(
                sw, rank_fraction=LANCZOS_RANK_FRACTION, rel_tol=LANCZOS_REL_TOL
            )
        out[(jitter, rcond)] = _verdict_text(details)
    return out


@claim(
    paper=PAPER,
    name="lanczos-factor",
    location="§3.2 and Alg. 2 step 3",
    statement=(
        "Fully reorthogonalised Lanczos on Σ(C, C) started at J(C)1/‖J(C)1‖ gives a rank "
        "r ≪ n_C d' factor with L Lᵀ ≈ Σ(C, C)†."
    ),
    kind=Kind.EXACT,
    setting=Setting.substitute(
        "the App. B.1 networks trained to the FSP MAP with fixed kernel hyperparameters "
        "(fitted by marginal likelihood in the paper), a 1e-6 jitter on the Gram matrices and, "
        "in quick mode, fewer training steps and a 2×50 two-moons network"
    ),
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "loose-reading",
            "'r ≪ n_C d'' read as r ≤ n_C d' and '≈' as 20 % (readings the paper rules out)",
            {(_THIS, "LANCZOS_RANK_FRACTION"): 1.0, (_THIS, "LANCZOS_REL_TOL"): 0.2},
            expect=Status.CONFIRMED,
        ),
    ),
)
def _lanczos_factor(ctx: Context) -> Verdict:
    """§3.2: "We start by computing a rank r ≪ min(n_C d', p) approximation of the
    (pseudo-)inverted kernel Gram matrix Σ(C, C)† ≈ LLᵀ using fully-reorthogonalized
    Lanczos iteration"."""
    from threadpoolctl import threadpool_limits

    setups = _setups.trained_setups(ctx.full, ctx.seed)
    J_tests = {key: s.model.jacobian(s.theta, _test_points(key[1])) for key, s in setups.items()}
    sweeps, details = {}, {}
    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: see _setups
        for (kname, task), s in setups.items():
            sw = lanczos_sweep(
                s.J_C, s.gram, s.Jw, J_tests[(kname, task)], num_points=None if ctx.full else 25
            )
            sweeps[f"{kname} {task}"] = sw
            details[f"{kname} {task}"] = summarize(
                sw, rank_fraction=LANCZOS_RANK_FRACTION, rel_tol=LANCZOS_REL_TOL
            ) | {"p": s.model.num_params}
        sensitivity = {(_setups.GRAM_JITTER, None): _verdict_text(details)}
        sensitivity |= _sensitivity(setups, J_tests, ctx.full)
    fig = lanczos_figure(sweeps, rank_fraction=LANCZOS_RANK_FRACTION, rel_tol=LANCZOS_REL_TOL)
    figs = ctx.save_figure(
        fig,
        "fsp_lanczos_factor.png",
        caption=(
            "Errors of Algorithm 2 with an m-step Lanczos factor against the dense Σ†, per "
            "configuration. Dashed black: the 5 % tolerance; dashed grey: m = n_C d'/2, the "
            "largest rank that counts as r ≪ n_C d'. The claim needs a curve in the middle or "
            "right panel below 5 % left of the grey line; dotted: the best any rank-m factor "
            "can do (Eckart–Young)."
        ),
    )
    rows = [
        f"{k}: {d['steps_reached']} of n_C d' = {d['n']} steps "
        f"({'breakdown' if d['breakdown'] else 'no breakdown'}), r = {d['rank']}; at r: raw "
        f"{d['raw']:.1e}, J(C)ᵀLLᵀJ(C) {d['precision']:.1e}, Var {d['variance']:.1e}; at "
        f"m = {d['half_steps']}: raw {d['half_raw']:.2f} (Eckart–Young floor "
        f"{d['half_floor']:.2f}), J(C)ᵀLLᵀJ(C) {d['half_precision']:.1e}, Var "
        f"{d['half_variance']:.1e} (step 9 cuts {d['half_truncated']}, smallest Var ratio "
        f"{d['half_ratio_min']:.3f}); "
        + (
            f"consumed errors ≤ 5 % for all swept m ≥ {d['steps_needed']}"
            if d["steps_needed"]
            else "consumed errors never all ≤ 5 %"
        )
        + "."
        for k, d in details.items()
    ]
    counterexamples = _lanczos_counterexamples(details)
    worst = max(max(d["precision"], d["variance"]) for d in details.values())
    raw_lo = min(d["half_raw"] for d in details.values())
    raw_hi = max(d["half_raw"] for d in details.values())
    n_floor = sum(d["half_floor"] > LANCZOS_REL_TOL for d in details.values())
    verdicts = {v.split(" ")[0] for v in sensitivity.values()}
    full_rank = [k for k, d in details.items() if not d["rank_ok"]]
    return Verdict(
        Status.REFUTED if counterexamples else Status.CONFIRMED,
        measured="; ".join(f"{k}: r = {d['rank']}/{d['n']}" for k, d in details.items()),
        expected="r ≤ n_C d'/2 with ≤ 5 % relative error in J(C)ᵀLLᵀJ(C) and Var f(x*)",
        tolerance=(
            f"r ≤ {LANCZOS_RANK_FRACTION}·n_C d'; ≤ {LANCZOS_REL_TOL:.0%} relative error in "
            f"the consumed quantities (worst at r: {worst:.1e}). Our choices: jitter "
            f"{_setups.GRAM_JITTER:g}·I on Σ(C, C); Σ† cuts eigenvalues ≤ n_C d'·eps·θ_max. "
            f"Verdict over jitter {min(j for j, _ in sensitivity):g}–{_setups.GRAM_JITTER:g} × "
            f"cut n·eps–{CUTS[-1]:g}: "
            + ("always " + verdicts.pop() if len(verdicts) == 1 else "varies")
        ),
        summary=(
            f"Lanczos does not break down before n_C d' steps in {len(full_rank)} of "
            f"{len(details)} configurations, and stopped at n_C d'/2 it is off by up to "
            f"{max(max(d['half_precision'], d['half_variance']) for d in details.values()):.0%}"
            if counterexamples
            else f"r ≤ {LANCZOS_RANK_FRACTION:g}·n_C d' with consumed errors ≤ "
            f"{LANCZOS_REL_TOL:.0%} in every configuration"
        ),
        evidence=[
            *(counterexamples or ["In every configuration r ≤ n_C d'/2 with errors ≤ 5 %."]),
            "In these settings (n_C d' = 100 ≤ the 500-step cap) Algorithm 2 as the paper runs "
            "it is full rank, so the paper's reported numbers do not rest on the low-rank "
            "statement; what is refuted is the statement itself.",
            "Where J(C)ᵀLLᵀJ(C) is close but the variances are not, step 9 amplifies the small "
            "precision error by truncating eigenvalues.",
            "Decision: r (Lanczos run as Algorithm 2 prescribes, until breakdown β ≤ "
            "50·eps·‖T‖ or min(500, n_C d') steps) and the errors in what Algorithm 2 consumes "
            "(L enters only through J(C)ᵀLLᵀJ(C)). The raw ‖LLᵀ − Σ†‖_F/‖Σ†‖_F is reported, "
            "not used: Krylov resolves the large eigenvalues of Σ first while Σ† is dominated "
            f"by the small ones, so it stays near 1 until the last steps ({raw_lo:.2f}–"
            f"{raw_hi:.2f} at m = min(r, n_C d'/2)); even the best rank-n_C d'/2 approximation "
            f"of Σ† (Eckart–Young) misses by > 5 % in {n_floor} of {len(details)} "
            "configurations.",
            "Sensitivity to our two choices (network trained once with jitter 1e-6; Lanczos, "
            "Σ† and Algorithm 2 redone): "
            + "; ".join(
                f"jitter {j:g}, cut {_cut_text(c)}: {v}" for (j, c), v in sensitivity.items()
            )
            + ".",
            *rows,
        ],
        details={
            **details,
            "sensitivity": [
                {"jitter": j, "cut": _cut_text(c), "verdict": v}
                for (j, c), v in sensitivity.items()
            ],
        },
        figures=figs,
    )
