"""Claims on Algorithm 2 of Cinquin et al., arXiv:2407.13711 (§3.2): the step-9 truncation and
the cost of the thin SVD.

- ``step-9-untruncated-exceeds-prior``: §3.2 motivates step 9 by numerical imprecision in the
  small eigenvalues of A, and by the bound "posterior variance ≤ prior variance" of a
  linear-Gaussian model. On the App. B.1 set-ups (trained torch networks, fitted GP priors),
  Algorithm 2 runs without step 9 in the three regimes that can make the context variances
  exceed the prior's: float64 with the full-rank factor L (the paper's set-ups: n_C d' = 100 ≤
  500 Lanczos steps), a literal float32 pipeline whose pseudo-inverses keep every positive
  eigenvalue, and a Lanczos factor of rank n_C d'/2 (the r ≪ n_C d' regime of §3.2).
- ``thin-svd-cost``: "an eigendecomposition of MMᵀ can be computed in O(pr²) time from a thin
  SVD of M" — the CPU time of step 5 (:func:`laplace_lab.numerics.fsp.thin_svd`) against p and r.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from laplace_lab.numerics.fsp import fsp_laplace_from_factor, thin_svd
from laplace_lab.numerics.krylov import lanczos_inverse_sqrt
from laplace_lab.paper_checks.fsp_laplace import _synthetic as synthetic
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    claim,
    require,
    step,
)
from laplace_lab.paper_checks.verification.timing import exponent_status
from laplace_lab.theory.rates import fit_rate

PAPER = "fsp-laplace"
#: One unit of work with prior_beliefs.py: step 9 reads the FSP-Laplace fits of the
#: synthetic tasks that the prior-belief claims make (cached experiments are per process).
WORK_UNIT = "synthetic-fits"
#: A context variance "exceeds" the prior variance beyond this relative roundoff slack.
EXCEED_RTOL = 1e-6
CONFIGS = tuple((t, k) for t in ("regression", "moons") for k in ("RBF", "Matern-1/2"))


def float32_algorithm2(J_context, L, Jw) -> np.ndarray:
    """Steps 4–8 of Algorithm 2 entirely in float32, pseudo-inverses keeping every positive
    eigenvalue (no cut-off): the context variances diag(J(C) S Sᵀ J(C)ᵀ) without step 9."""
    J, L, Jw = (np.asarray(a, dtype=np.float32) for a in (J_context, L, Jw))
    U, d, _ = np.linalg.svd(J.T @ L, full_matrices=False)
    U, d = U[:, d > 0], d[d > 0]
    JU = Jw @ U
    D, UA = np.linalg.eigh(np.diag(d * d) + JU.T @ JU)
    inv = np.zeros_like(D)
    inv[D > 0] = 1 / np.sqrt(D[D > 0])
    Z = J @ (U @ (UA * inv))
    return np.sum(Z.astype(np.float64) ** 2, axis=1)


def _understated_prior():
    original = fsp_laplace_from_factor

    def wrong(J_context, L, Jw, **kwargs):
        return original(J_context, 1e-3 * L, Jw, **kwargs)  # M Mᵀ 10⁶× too small

    return wrong


def _float64_pipeline(J_context, L, Jw) -> np.ndarray:
    res = fsp_laplace_from_factor(
        J_context, L, Jw, prior_variance=np.ones(J_context.shape[0]), rtol=np.inf
    )
    return res.context_variance


def _exceedance(var: np.ndarray, prior: np.ndarray) -> tuple[float, float]:
    ratio = var / prior
    return float(np.mean(ratio > 1 + EXCEED_RTOL)), float(ratio.max())


@claim(
    paper=PAPER,
    name="step-9-untruncated-exceeds-prior",
    location="§3.2 (paragraph before 'Choice of context points'), Algorithm 2 step 9",
    statement=(
        "Without step 9, numerical imprecision in telling zero from small eigenvalues of A makes "
        "the variances at the context points exceed the prior variances (they cannot in the "
        "linear-Gaussian model); truncating the smallest eigenvalues of D_A restores the bound."
    ),
    kind=Kind.EXISTENCE,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "prior-precision-understated",
            "Algorithm 2 with L scaled by 1e-3 (the prior term M Mᵀ 10⁶ times too small)",
            {fsp_laplace_from_factor: _understated_prior()},
            reuses=(synthetic.fit_fsp, synthetic.fitted_kernel),  # their model and Σ(C, C)
        ),
        Mutant(
            "float32-run-in-float64",
            "the float32 pipeline replaced by the float64 one (no imprecision)",
            {float32_algorithm2: _float64_pipeline},
            reuses=(synthetic.fit_fsp, synthetic.fitted_kernel),
        ),
    ),
)
def _step9(ctx: Context) -> Verdict:
    """§3.2: "Unfortunately, due to numerical imprecision, it is difficult to distinguish
    between zero eigenvalues of A and those with small positive magnitudes. [...] this can
    explode predictive variance" — remedied by truncating the smallest eigenvalues of D_A
    (Algorithm 2, step 9)."""
    rows, stats = [], {}
    for i, (name, family) in enumerate(CONFIGS):
        step(i, len(CONFIGS), "set-ups")
        fsp = synthetic.fit_fsp(name, family, ctx.full, ctx.seed)
        gram = fsp.posterior.gram
        prior = gram.diagonal()
        J_C, Jw = synthetic.jacobians(fsp, name, ctx.full, ctx.seed)
        start = J_C @ np.ones(J_C.shape[1])
        full = lanczos_inverse_sqrt(gram.matvec, start, gram.n)
        half = lanczos_inverse_sqrt(gram.matvec, start, gram.n // 2)
        cut = fsp_laplace_from_factor(J_C, half, Jw, prior_variance=prior)  # with step 9
        untruncated = {
            "float64": fsp_laplace_from_factor(
                J_C, full, Jw, prior_variance=prior, rtol=np.inf
            ).context_variance,
            "float32": float32_algorithm2(J_C, full, Jw),
            "rank/2": fsp_laplace_from_factor(
                J_C, half, Jw, prior_variance=prior, rtol=np.inf
            ).context_variance,
        }
        stats[f"{name}/{family}"] = s = {k: _exceedance(v, prior) for k, v in untruncated.items()}
        s["step-9"] = _exceedance(cut.context_variance, prior)
        s["truncated"] = cut.num_truncated
        rows.append(
            f"{name} {family} (r = {full.shape[1]}): "
            + ", ".join(f"{k} {100 * a:.0f}% (max ×{b:.2f})" for k, (a, b) in list(s.items())[:3])
            + f"; with step 9 at rank/2: {s['truncated']} eigenvalues cut, "
            f"max ×{s['step-9'][1]:.2f}"
        )
    step(len(CONFIGS), len(CONFIGS), "set-ups")
    exact_bound = max(s["float64"][1] for s in stats.values()) <= 1 + EXCEED_RTOL
    imprecision = max(s["float32"][0] for s in stats.values()) > 0
    restored = max(s["step-9"][1] for s in stats.values()) <= 1 + EXCEED_RTOL
    require(restored, "step 9 left a context variance above the prior variance")
    low_rank = max(s["rank/2"][0] for s in stats.values())
    ok = exact_bound and imprecision
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured={
            k: {m: v[m] for m in ("float64", "float32", "rank/2")} for k, v in stats.items()
        },
        expected="float64 full rank: never above; float32 without cut-off: above somewhere",
        tolerance=f"above = variance > prior·(1 + {EXCEED_RTOL})",
        evidence=(
            "Share of context points whose untruncated variance exceeds the prior variance "
            "(and the largest ratio) — float64 with the full-rank Lanczos factor (the paper's "
            "set-ups), a literal float32 pipeline whose pseudo-inverses keep every positive "
            "eigenvalue, and a Lanczos factor of half rank: "
            + "; ".join(rows)
            + ". "
            + (
                "With exact-rank L in float64 the bound of the linear-Gaussian model holds "
                "everywhere; it fails only through imprecision (float32, no cut-off) — the "
                "mechanism §3.2 names. "
                if ok
                else (
                    "The float64 full-rank runs exceed the prior variance: the bound the "
                    "heuristic rests on fails without imprecision. "
                    if not exact_bound
                    else "No float32 run exceeds the prior variance: the imprecision §3.2 "
                    "names does not produce the exceedance here. "
                )
            )
            + f"A low-rank factor (r = n_C d'/2) exceeds it at up to {100 * low_rank:.0f}% of "
            "the context points: L Lᵀ = Q T⁻¹ Qᵀ understates Σ(C, C)⁻¹ (it is Σ^{−½} P Σ^{−½} "
            "for a projector P), so in the r ≪ n_C d' regime step 9 also corrects an "
            "approximation error, not only roundoff."
        ),
        details=stats,
    )


#: The paper's cost exponents of step 5: O(p r²).
PAPER_EXPONENTS = {"p": 1.0, "r": 2.0}
#: O(·) is an upper bound: a measured exponent may exceed the paper's by at most COST_TOL (the
#: width of the complexity checks of the sub-network optimality paper; CPU-time exponents of
#: one sweep vary by ±0.2 here when other processes share the memory bus).
COST_TOL = 0.3


def _cpu_time(M: np.ndarray, repeats: int) -> float:
    """Minimum thread CPU time of thin_svd(M) over repeats (one BLAS thread)."""
    best = np.inf
    for _ in range(repeats):
        start = time.thread_time()
        thin_svd(M)
        best = min(best, time.thread_time() - start)
    return best


def _thin_svd_flops(p: int, r: int) -> float:
    """Flops of step 5 for M ∈ ℝ^{p×r}: Householder QR (2pr² − 2r³/3) and the SVD of the
    r × r factor R (≈ 22r³, Golub–Kahan with vectors; Golub & Van Loan, Table 8.6.1)."""
    return 2.0 * p * r * r - 2.0 * r**3 / 3.0 + 22.0 * r**3


@claim(
    paper=PAPER,
    name="thin-svd-cost",
    timed=True,
    location="§3.2 ('…in O(pr²) time from a thin SVD of M')",
    statement="The eigendecomposition of M Mᵀ (M ∈ ℝ^{p×r}) costs O(p r²) via a thin SVD of M.",
    kind=Kind.COST,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "linear-in-r",
            "the statement read as O(p r)",
            {(sys.modules[__name__], "PAPER_EXPONENTS"): {"p": 1.0, "r": 1.0}},
        ),
    ),
)
def _thin_svd_cost(ctx: Context) -> Verdict:
    """§3.2: "An eigendecomposition of MMᵀ = U_M D_M² U_Mᵀ can be computed in O(pr²) time
    from a thin SVD of M"."""
    from threadpoolctl import threadpool_limits

    rng = ctx.rng("thin-svd-cost")
    k = 5 if ctx.full else 4
    sweeps = {
        "p": ([1024 * 2**i for i in range(k)], lambda p: (p, 32)),
        "r": ([16 * 2**i for i in range(k)], lambda r: (4096, r)),
    }
    fits, rows = {}, []
    with threadpool_limits(limits=1):
        n = max(a * b for xs, sh in sweeps.values() for a, b in map(sh, xs))
        buffer = rng.standard_normal(n)
        M = buffer[: 4096 * 16].reshape(4096, 16)
        U, d = thin_svd(M)
        require(
            np.allclose((U * d**2) @ U.T, M @ M.T, atol=1e-10 * float(d[0]) ** 2),
            "thin_svd does not reproduce M Mᵀ = U_M D_M² U_Mᵀ",
        )
        for axis, (sizes, shape) in sweeps.items():
            times = [_cpu_time(buffer[: np.prod(shape(x))].reshape(shape(x)), 5) for x in sizes]
            fit = fit_rate(sizes, times)
            fits[axis] = fit
            rows.append(
                f"{axis} ∈ {sizes} ({'r = 32' if axis == 'p' else 'p = 4096'}): exponent "
                f"{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}], CPU "
                + ", ".join(f"{1e3 * t:.2f}" for t in times)
                + " ms"
            )
    paper = sys.modules[__name__].PAPER_EXPONENTS
    # decided by the flop count of the shapes run (no load moves it); the clock corroborates
    ops = {
        a: fit_rate(sizes, [_thin_svd_flops(*shape(x)) for x in sizes]).slope
        for a, (sizes, shape) in sweeps.items()
    }
    clock = {a: exponent_status(fits[a], -np.inf, paper[a] + COST_TOL) for a in paper}
    if any(ops[a] > paper[a] + COST_TOL for a in paper):
        status = Status.REFUTED
    elif any(s is Status.REFUTED for s, _ in clock.values()):
        status = Status.NOT_REPRODUCIBLE_HERE  # the clock contradicts the counts
    else:
        status = Status.CONFIRMED
    noisy = [f"{a}: {why}" for a, (s, why) in clock.items() if why]
    return Verdict(
        status,
        measured={a: round(f.slope, 3) for a, f in fits.items()},
        expected=paper,
        tolerance=f"each flop-count exponent ≤ the paper's + {COST_TOL} (an O(·) upper bound), "
        "and no time exponent's 95% interval wholly above it",
        evidence=(
            "Thread CPU time of step 5 (QR of the tall M in O(pr²), then the SVD of the r × r "
            "R factor in O(r³) ≤ O(pr²) — U_M = Q U_R), minimum of 5 runs, one BLAS thread, "
            "M Gaussian and cache-resident (≤ 4 MiB); exponent = OLS slope of log time on "
            "log size (95% interval). "
            + "; ".join(rows)
            + ". Flop-count exponents of the same shapes (QR 2pr² − 2r³/3, SVD of R ≈ 22r³), "
            "which decide: "
            + ", ".join(f"{a} {v:.2f}" for a, v in ops.items())
            + ". An exponent in r below 2 reflects LAPACK's blocked QR getting more efficient "
            "per flop as r grows."
            + (f" The clock could not corroborate ({'; '.join(noisy)})." if noisy else "")
        ),
        details={**{a: f._asdict() for a, f in fits.items()}, "flop_exponents": ops},
    )
