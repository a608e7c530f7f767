"""Claims of Cinquin et al., "FSP-Laplace: Function-Space Priors for the Laplace
Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711 (§3.2, App. B.1,
Table C.2).

The Table C.2 set-ups follow App. B.1: 1-D regression on y = sin(2πx) + ε (σ_n = 0.1,
x ~ U([−1, −0.5] ∪ [0.5, 1])) with a 2×50 tanh MLP, and two moons (noise 0.1) with a 2×100
tanh MLP; 100 context points on a regular grid; RBF and Matérn-1/2 priors. Networks are
trained to the FSP MAP (eq. 3.5 with the estimate of eq. 3.7 at fixed context points) by
full-batch Adam, and Algorithm 2 runs with at most 500 Lanczos steps. The same trained
networks serve the Table C.2 claims and ``lanczos-factor`` (Algorithm 2 step 3: the rank and
accuracy of the Lanczos factor L Lᵀ ≈ Σ(C, C)†; helpers in
:mod:`laplace_lab.paper_checks.fsp_laplace._lanczos_factor`). Deviations: kernel hyperparameters
are fixed (not fitted by marginal likelihood), the Gram matrices get a jitter of 1e-6·σ², and quick
mode trains for fewer steps (and, for two moons, a 2×50 MLP).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from laplace_lab.numerics.fsp import dropped_terms, fsp_laplace, rkhs_norm_estimate
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12
from laplace_lab.paper_checks.fsp_laplace._tanh_mlp import TanhMLP, train_fsp_map
from laplace_lab.paper_checks.registry import Context, Status, Verdict, claim

PAPER = "fsp-laplace"

#: Table C.2 of the paper: ‖P₀ΛP₀ᵀ‖_F / ‖Λ‖_F.
TABLE_C2 = {
    ("RBF", "regression"): 1.026e-7,
    ("RBF", "classification"): 3.548e-4,
    ("Matern-1/2", "regression"): 4.305e-6,
    ("Matern-1/2", "classification"): 1.299e-2,
}


@claim(
    paper=PAPER,
    name="rkhs-estimate-underestimates",
    location="§3.2, after eq. (3.7)",
    statement=(
        "The context-point estimate (f(C) − μ(C))ᵀΣ(C,C)⁻¹(f(C) − μ(C)) of ‖f − μ‖²_H "
        "provably underestimates it."
    ),
)
def _rkhs_underestimates(ctx: Context) -> Verdict:
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
        evidence=(
            f"{trials} functions f = Σ_j a_j k(·, z_j) in the RKHS of RBF / Matérn-1/2 kernels "
            f"on ℝ² (‖f‖²_H = aᵀK_ZZ a exactly), 15 nested random context sets each. Largest "
            f"relative overestimate {worst:.2e}; largest decrease along nested sets "
            f"{nested_worst:.2e}; largest error when the representer points z_j lie in C "
            f"{exact_worst:.2e} (exact, up to the jitter)."
        ),
        details={"trials": trials, "nested_worst": nested_worst, "exact_worst": exact_worst},
    )


def _task(name: str, full: bool, rng: np.random.Generator):
    if name == "regression":
        n = 60
        x = rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n)
        X = x[:, None]
        y = np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(n)
        C = np.linspace(-2, 2, 100)[:, None]
        return TanhMLP(1, 50), X, y, C, "gaussian"
    from sklearn.datasets import make_moons

    X, y = make_moons(100, noise=0.1, random_state=int(rng.integers(2**31)))
    g = np.linspace(-3.75, 3.75, 10)
    C = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    return TanhMLP(2, 100 if full else 50), X, y.astype(float), C, "bernoulli"


class _Setup(NamedTuple):
    """One trained (kernel, task) configuration of App. B.1 at the FSP MAP."""

    model: TanhMLP
    theta: np.ndarray
    C: np.ndarray
    gram: KernelGram
    J_C: np.ndarray
    Jw: np.ndarray
    steps: int


@functools.lru_cache(maxsize=2)
def _setups(full: bool, seed: int) -> dict:
    """Train the four (kernel, task) networks to the FSP MAP (shared by the claims below).

    BLAS runs single-threaded here (scoped): the matrices are small, and on a shared
    machine OpenBLAS's thread pool makes this several times slower (docs/performance.md,
    "Single-threaded BLAS for the FSP-Laplace set-ups").
    """
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for kname, task in TABLE_C2:
            rng = Context(full=full, seed=seed).rng(f"table-c2/{kname}/{task}")
            model, X, y, C, lik = _task(task, full, rng)
            lengthscale = 0.25 if task == "regression" else 1.0
            kernel = RBF(1.0, lengthscale) if kname == "RBF" else Matern12(1.0, lengthscale)
            gram = KernelGram(kernel, C, jitter=1e-6)
            steps = 3000 if full else 400
            theta = train_fsp_map(
                model, X, y, C, gram.dense(), likelihood=lik, steps=steps, rng=rng
            )
            f = model.forward(theta, X)
            if lik == "gaussian":
                Jw = model.jacobian(theta, X) / 0.1
            else:
                prob = 1.0 / (1.0 + np.exp(-f))
                Jw = np.sqrt(prob * (1 - prob))[:, None] * model.jacobian(theta, X)
            J_C = model.jacobian(theta, C)
            out[(kname, task)] = _Setup(model, theta, C, gram, J_C, Jw, steps)
    return out


@functools.lru_cache(maxsize=2)
def _table_c2_runs(full: bool, seed: int) -> dict:
    """Run Algorithm 2 on the four trained networks and measure the dropped terms."""
    out = {}
    for key, s in _setups(full, seed).items():
        res = fsp_laplace(s.J_C, s.gram, s.Jw, num_steps=500)
        terms = dropped_terms(res, s.Jw)
        out[key] = {
            "paper": TABLE_C2[key],
            "p0_ratio": terms.p0_ratio,
            "cross_ratio": terms.cross_ratio,
            "total_ratio": terms.total_ratio,
            "rank": int(res.basis.shape[1]),
            "truncated": res.num_truncated,
            "p": s.model.num_params,
            "steps": s.steps,
        }
    return out


def _table_text(runs: dict) -> str:
    rows = [
        f"{k} {t}: ‖P₀ΛP₀‖/‖Λ‖ = {r['p0_ratio']:.2e} (paper {r['paper']:.2e}), "
        f"cross ‖PΛP₀ + P₀ΛP‖/‖Λ‖ = {r['cross_ratio']:.2e}, rank r = {r['rank']}, "
        f"truncated k = {r['truncated']}, p = {r['p']}"
        for (k, t), r in runs.items()
    ]
    return "; ".join(rows)


@claim(
    paper=PAPER,
    name="p0-lambda-p0-negligible",
    location="§3.2 after eq. (3.9), Table C.2",
    statement=(
        "‖P₀ΛP₀ᵀ‖_F/‖Λ‖_F is negligible (1e-7 to 1.3e-2 across RBF / Matérn-1/2 priors on "
        "the synthetic regression and two-moons tasks)."
    ),
)
def _p0_negligible(ctx: Context) -> Verdict:
    runs = _table_c2_runs(ctx.full, ctx.seed)
    worst = max(r["p0_ratio"] for r in runs.values())
    ok = worst <= 0.05
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=worst,
        expected="<= 1.3e-2 (largest entry of Table C.2)",
        tolerance="negligible: <= 5e-2 in every configuration",
        evidence=(
            "Networks trained to the FSP MAP, Algorithm 2 with ≤ 500 Lanczos steps, "
            "Λ = MMᵀ + J_wᵀJ_w from thin factors. " + _table_text(runs)
        ),
        details={f"{k}/{t}": r for (k, t), r in runs.items()},
    )


@claim(
    paper=PAPER,
    name="lambda-decomposition-eq-3-9",
    location="§3.2, decomposition before eq. (3.9)",
    statement="Λ = PΛPᵀ + P₀ΛP₀ᵀ with P = U_M U_Mᵀ and P₀ = I − P.",
    expected=Status.REFUTED,
)
def _decomposition(ctx: Context) -> Verdict:
    runs = _table_c2_runs(ctx.full, ctx.seed)
    worst = max(r["cross_ratio"] for r in runs.values())
    dominant = sum(r["cross_ratio"] > r["p0_ratio"] for r in runs.values())
    holds = worst <= 1e-10
    return Verdict(
        Status.CONFIRMED if holds else Status.REFUTED,
        measured=worst,
        expected=0.0,
        tolerance="1e-10 (roundoff)",
        evidence=(
            "The identity omits the cross terms PΛP₀ + P₀ΛP, which vanish only when the "
            "likelihood Jacobian rows lie in range(M). Measured ‖PΛP₀ + P₀ΛP‖_F/‖Λ‖_F up to "
            f"{worst:.2e}; the cross terms exceed ‖P₀ΛP₀‖ in {dominant} of 4 configurations, "
            "so the error of Λ ≈ U_M A U_Mᵀ is governed by them, not by Table C.2's ratio. "
            + _table_text(runs)
        ),
        details={f"{k}/{t}": r for (k, t), r in runs.items()},
    )


#: Tolerances of the ``lanczos-factor`` check, fixed before measuring: "r ≪ n_C d'" means
#: r ≤ n_C d'/2 (at least a factor 2 saved); "L Lᵀ ≈ Σ†" means ≤ 5 % relative error in
#: what Algorithm 2 consumes (J(C)ᵀ L Lᵀ J(C) in Frobenius norm, and every predictive
#: variance at the test points) — the accuracy at which a predictive error bar is "right".
LANCZOS_RANK_FRACTION = 0.5
LANCZOS_REL_TOL = 0.05


def _test_points(task: str) -> np.ndarray:
    if task == "regression":
        return np.linspace(-2.0, 2.0, 201)[:, None]
    g = np.linspace(-3.75, 3.75, 21)
    return np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)


def _lanczos_counterexamples(details: dict) -> str:
    """The configurations that violate "r ≪ n_C d'" or "≈", in words ('' if none)."""
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
            f"LLᵀ = Σ⁻¹ to ≤ {max(d['raw'] for d in full.values()):.0e}). Stopped at "
            f"m = n_C d'/2 instead, J(C)ᵀLLᵀJ(C) is off by up to "
            f"{max(d['half_precision'] for d in full.values()):.0%} and the predictive "
            f"variances by up to {max(d['half_variance'] for d in full.values()):.0%} (worst "
            f"{next(k for k, d in full.items() if d is worst)}: step 9 truncates "
            f"{worst['half_truncated']} eigenvalues and a variance shrinks to "
            f"{worst['half_ratio_min']:.3f}× the exact one). "
        )
        needed = [d["steps_needed"] or d["n"] for d in full.values()]
        if min(needed) > min(d["n"] for d in full.values()) // 2:
            out.append(
                "No other stopping rule rescues the claim there: both consumed errors stay "
                f"≤ 5 % only from (swept) m = {', '.join(map(str, needed))} on. "
            )
    for k, d in details.items():
        if d["rank_ok"] and not d["approx_ok"]:
            out.append(
                f"{k}: Lanczos breaks down at r = {d['rank']} ≤ n_C d'/2 = {d['n'] // 2}, but "
                f"the predictive variances are off by up to {d['variance']:.0%} "
                f"(J(C)ᵀLLᵀJ(C) by {d['precision']:.1%}). "
            )
    return "".join(out)


@claim(
    paper=PAPER,
    name="lanczos-factor",
    location="§3.2 and Alg. 2 step 3",
    statement=(
        "Fully reorthogonalised Lanczos on Σ(C, C) started at J(C)1/‖J(C)1‖ gives a rank "
        "r ≪ n_C d' factor with L Lᵀ ≈ Σ(C, C)†."
    ),
    expected=Status.REFUTED,
)
def _lanczos_factor(ctx: Context) -> Verdict:
    from threadpoolctl import threadpool_limits

    from laplace_lab.paper_checks.fsp_laplace._lanczos_factor import (
        lanczos_figure,
        lanczos_sweep,
        summarize,
    )

    sweeps, details = {}, {}
    for (kname, task), s in _setups(ctx.full, ctx.seed).items():
        J_test = s.model.jacobian(s.theta, _test_points(task))
        with threadpool_limits(limits=1, user_api="blas"):  # small matrices: see _setups
            sw = lanczos_sweep(s.J_C, s.gram, s.Jw, J_test, num_points=None if ctx.full else 25)
        sweeps[f"{kname} {task}"] = sw
        details[f"{kname} {task}"] = summarize(
            sw, rank_fraction=LANCZOS_RANK_FRACTION, rel_tol=LANCZOS_REL_TOL
        ) | {"p": s.model.num_params}
    fig = lanczos_figure(sweeps, rank_fraction=LANCZOS_RANK_FRACTION, rel_tol=LANCZOS_REL_TOL)
    figs = ctx.save_figure(fig, "fsp_lanczos_factor.png")
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
        for k, d in details.items()
    ]
    summary = _lanczos_counterexamples(details)
    worst = max(max(d["precision"], d["variance"]) for d in details.values())
    raw_lo = min(d["half_raw"] for d in details.values())
    raw_hi = max(d["half_raw"] for d in details.values())
    n_floor = sum(d["half_floor"] > LANCZOS_REL_TOL for d in details.values())
    return Verdict(
        Status.REFUTED if summary else Status.CONFIRMED,
        measured="; ".join(f"{k}: r = {d['rank']}/{d['n']}" for k, d in details.items()),
        expected="r ≤ n_C d'/2 with ≤ 5 % relative error in J(C)ᵀLLᵀJ(C) and Var f(x*)",
        tolerance=(
            f"r ≤ {LANCZOS_RANK_FRACTION}·n_C d'; ≤ {LANCZOS_REL_TOL:.0%} relative error in "
            f"the consumed quantities (worst at r: {worst:.1e}); Σ† cuts eigenvalues "
            "≤ n_C d'·eps·θ_max (none here: the 1e-6 jitter keeps Σ(C, C) definite)"
        ),
        evidence=(
            (summary or "In every configuration r ≤ n_C d'/2 with consumed errors ≤ 5 %. ")
            + "In these settings (n_C d' = 100 ≤ the 500-step cap) Algorithm 2 as the paper runs "
            "it is full rank, so the paper's reported numbers do not rest on the low-rank "
            "statement; what is refuted is the statement itself. Where J(C)ᵀLLᵀJ(C) is close "
            "but the variances are not, step 9 amplifies the small precision error by "
            "truncating eigenvalues. "
            + "The verdict is driven by r (Lanczos run as Algorithm 2 prescribes: "
            "until breakdown β ≤ 50·eps·‖T‖ or min(500, n_C d') steps) and by the errors in "
            "what Algorithm 2 consumes (L enters only through J(C)ᵀLLᵀJ(C)). The raw "
            "‖LLᵀ − Σ†‖_F/‖Σ†‖_F is reported, not used: Krylov resolves the large eigenvalues "
            "of Σ first while Σ† is dominated by the small ones, so it stays near 1 until the "
            f"last steps ({raw_lo:.2f}–{raw_hi:.2f} at m = min(r, n_C d'/2)), and even the "
            f"best rank-n_C d'/2 approximation of Σ† (Eckart–Young) misses by > 5 % in "
            f"{n_floor} of {len(details)} configurations. " + "; ".join(rows)
        ),
        details=details,
        figures=figs,
    )
