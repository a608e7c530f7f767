"""Claims of Raha, Khare & Patra, arXiv:2605.09075: Theorems 1–3 (§4, App. A).

Population statements are checked exactly against the theory layer (exhaustive search over
subsets); the finite-N statement of Theorem 2 by the replications of the
``theorem2-consistency`` study.
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
    CPI_WITHOUT_OFF_DIAGONALS,
    DOMINANCE_TWICE_AS_LAX,
    IPV_MARGINAL_READING,
    IPV_POSTERIOR_VARIANCE,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import theorem2_consistency
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    cached,
    claim,
    decisions,
    require,
)
from laplace_lab.studies.runner import replicate
from laplace_lab.theory import (
    check_monotonicity,
    check_theorem2,
    check_theorem3,
    cpi_matrix,
    is_cpi,
    random_cpi,
    random_diagonally_dominant,
    random_psd,
    theorem1_decomposition,
)

PAPER = "subnetwork-laplace-optimality"


def _random_problem(
    rng: np.random.Generator, p: int
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """A PSD Λ (full rank, rank-deficient or ill-conditioned up to 1e10), N, σ0², V."""
    rank = int(rng.integers(1, p + 1)) if rng.random() < 0.5 else p
    Lam = random_psd(p, rank=rank, cond=10.0 ** rng.uniform(0, 10), rng=rng)
    n = float(10 ** rng.uniform(0, 6))
    return Lam, n, float(10 ** rng.uniform(-2, 1)), rng.uniform(0.1, 10.0, size=p)


def _nested(rng: np.random.Generator, p: int) -> tuple[np.ndarray, np.ndarray]:
    sup = rng.permutation(p)[: rng.integers(1, p + 1)]
    return rng.permutation(sup)[: rng.integers(0, sup.size + 1)], sup


def _monotonicity_sweep(ctx: Context, key: str, lam_of) -> Verdict:
    rng = ctx.rng(key)
    cases = 3000 if ctx.full else 300
    worst, worst_case, violations = np.inf, None, 0
    for _ in range(cases):
        p = int(rng.integers(2, 13))
        Lam, n, s2, v = _random_problem(rng, p)
        Lam, s2 = lam_of(rng, Lam, s2)
        S, S_sup = _nested(rng, p)
        check = check_monotonicity(Lam, S, S_sup, n=n, noise_var=s2, prior_precision=v)
        ratio = check.margin / max(check.details["tolerance"], np.finfo(float).tiny)
        violations += not check.holds
        if ratio < worst:
            worst, worst_case = ratio, {"S": S.tolist(), "S_sup": S_sup.tolist(), "n": n}
    return Verdict(
        Status.CONFIRMED if violations == 0 else Status.REFUTED,
        measured=violations,
        expected=0,
        tolerance="roundoff bound 10·k²·eps·κ(Λ_S'S' + cV)·v_max/v_min per case",
        evidence=(
            f"{cases} random cases (p ≤ 12; PSD Λ full-rank, rank-deficient, condition "
            f"numbers to 1e10; N in [1, 1e6]; random positive V; random S ⊆ S′): "
            f"{violations} with IPV(S) > IPV(S′) beyond roundoff. Smallest margin / "
            f"tolerance: {worst:.3g}."
        ),
        details={"cases": cases, "worst_margin_over_tolerance": worst, "worst_case": worst_case},
    )


@claim(
    paper=PAPER,
    name="theorem-1",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="Theorem 1 (§4), proof App. A.2",
    statement="S ⊆ S′ implies IPV(S) ≤ IPV(S′); hence Dis(S) = IPV_full − IPV(S) ≥ 0.",
    mutants=(IPV_MARGINAL_READING,),
)
def theorem_1(ctx: Context) -> Verdict:
    """Theorem 1 (§4): "Suppose S ⊆ S′ ⊆ {1, 2, …, p}. Then IPV(S) ≤ IPV(S′)"."""
    return _monotonicity_sweep(ctx, "theorem-1", lambda rng, Lam, s2: (Lam, s2))


def _classification_lambda(rng: np.random.Generator, Lam: np.ndarray, _s2: float):
    """Λ^C = E[ū ḡ ḡᵀ] from 40 gradients ḡ ~ N(0, Λ) with Bernoulli variances ū; σ0² = 1."""
    g = rng.multivariate_normal(np.zeros(Lam.shape[0]), Lam, size=40, method="eigh")
    prob = rng.uniform(0.01, 0.99, size=40)
    return (g * (prob * (1 - prob))[:, None]).T @ g / 40, 1.0


@claim(
    paper=PAPER,
    name="classification-monotonicity",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="Theorem (Classification monotonicity), App. A.3",
    statement="For binary classification, S ⊆ S′ implies IPV_C(S) ≤ IPV_C(S′).",
    mutants=(IPV_MARGINAL_READING,),
)
def classification_monotonicity(ctx: Context) -> Verdict:
    """App. A.3, "Theorem (Classification monotonicity). For subsets S, S′ ⊆ {1, 2, …, p}", S ⊆
    S′ gives IPV_C(S) ≤ IPV_C(S′)."""
    return _monotonicity_sweep(ctx, "classification-monotonicity", _classification_lambda)


def _without_cross_term(*args, original=theorem1_decomposition, **kwargs):
    """The proof's identity without its cross term tr(F⁻¹Bᵀ(Ã⁻¹AÃ⁻¹ − 2Ã⁻¹ + A⁻¹)B)."""
    return original(*args, **kwargs)._replace(cross_term=0.0)


@claim(
    paper=PAPER,
    name="theorem-1-proof-identity",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="App. A.2, proof of Theorem 1",
    statement=(
        "(N/σ0²)IPV(S∪T) = (N/σ0²)IPV(S) + tr(F⁻¹Bᵀ(Ã⁻¹AÃ⁻¹ − 2Ã⁻¹ + A⁻¹)B) "
        "+ tr(F⁻¹(C − BᵀA⁻¹B)), both added terms non-negative."
    ),
    mutants=(
        Mutant(
            "identity-without-cross-term",
            "the identity read without its cross term (IPV(S ∪ T) = IPV(S) + Schur term)",
            {theorem1_decomposition: _without_cross_term},
        ),
    ),
)
def theorem_1_proof_identity(ctx: Context) -> Verdict:
    """App. A.2 (Proof of Theorem 1): IPV(S ∪ T) splits into IPV(S), a cross term and the Schur
    term tr(F⁻¹(C − BᵀA⁻¹B)), "both" added terms non-negative."""
    rng = ctx.rng("theorem-1-proof-identity")
    cases = 2000 if ctx.full else 200
    worst_rel, negative, singular, loose = 0.0, 0, 0, 0
    for _ in range(cases):
        p = int(rng.integers(2, 11))
        live = rng.permutation(p)[: rng.integers(1, p + 1)]  # the rest are dead parameters
        Lam = np.zeros((p, p))
        Lam[np.ix_(live, live)] = random_psd(live.size, cond=10.0 ** rng.uniform(0, 4), rng=rng)
        perm = rng.permutation(p)
        cut = int(rng.integers(1, p))
        S, T = perm[:cut], perm[cut:]
        n, s2 = float(10 ** rng.uniform(0, 2)), float(10 ** rng.uniform(-1, 1))
        singular += np.linalg.matrix_rank(Lam[np.ix_(S, S)]) < cut
        dec = theorem1_decomposition(Lam, S, T, n=n, noise_var=s2)
        total = dec.ipv_S + dec.cross_term + dec.schur_term
        worst_rel = max(worst_rel, abs(total - dec.ipv_union) / dec.tolerance)
        negative += dec.schur_term < -dec.tolerance
        loose += dec.tolerance > 1e-6 * dec.ipv_union
    ok = worst_rel <= 1.0 and negative == 0
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=worst_rel,
        expected="≤ 1 (residual / roundoff bound)",
        tolerance=1.0,
        evidence=(
            f"{cases} random splits S ∪ T of PSD Λ (p ≤ 10, a PSD block of condition ≤ 1e4 "
            "among exactly-zero rows and columns: dead parameters; N ≤ 100): the largest "
            f"residual of the identity is {worst_rel:.2e} times its roundoff bound; Schur "
            f"terms below minus that bound: {negative} (the cross term is a squared norm); "
            f"the bound exceeded 1e-6·IPV(S∪T) in {loose} cases (ill-conditioned Λ_SS). "
            f"In {singular} cases Λ_SS was singular: the proof's A⁻¹ does not "
            "exist there, but the identity and both signs hold with the pseudo-inverse A⁺ "
            "(B lies in the range of A for PSD Λ), which is what was evaluated. The proof "
            "also calls C − BᵀA⁻¹B 'positive definite'; it is only PSD (zero for rank-one Λ), "
            "which suffices."
        ),
        details={"cases": cases, "singular_A_cases": int(singular), "loose_cases": int(loose)},
    )


#: How far outside C_PI each twin of a generated member lies: one off-diagonal pair moved
#: by this multiple of is_cpi's tolerance, or the smallest d_i pushed this far below 0
#: (relative to max|Λ|).
CPI_NEAR_MISS = 100.0


def _cpi_twins(Lam: np.ndarray) -> tuple[np.ndarray, ...]:
    """Matrices just outside C_PI next to a member: the diagonal entry with the smallest d_i
    lowered to d_i = −1e-8 · max|Λ| (the premise d > 0 fails; still symmetric), and for
    p ≥ 3 one off-diagonal pair (Λ₀₁ = Λ₁₀) moved by :data:`CPI_NEAR_MISS` × 1e-10 · max|Λ|
    (unequal off-diagonals; at p = 2 the one pair is always "all equal")."""
    scale = float(np.abs(Lam).max())
    spread = Lam.copy()
    spread[0, 1] = spread[1, 0] = Lam[0, 1] + CPI_NEAR_MISS * 1e-10 * scale
    dec = is_cpi(Lam)
    lowered = Lam.copy()
    i = int(np.argmin(dec.d))
    lowered[i, i] -= float(dec.d[i]) + 1e-8 * scale
    return (lowered, spread) if Lam.shape[0] >= 3 else (lowered,)


@claim(
    paper=PAPER,
    name="theorem-2-population",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="Theorem 2, App. A.4 eqs. (19)–(20)",
    statement=(
        "For Λ ∈ C_PI and V = cI, the k largest diagonal entries S* maximise IPV over |S| = k "
        "(minimise Dis) and the k smallest S̃* minimise it (maximise Dis)."
    ),
    mutants=(IPV_POSTERIOR_VARIANCE, CPI_WITHOUT_OFF_DIAGONALS),
)
def theorem_2_population(ctx: Context) -> Verdict:
    """Theorem 2 (§4): "Suppose Λ belongs to the class C_PI, and V = cI_p for some c > 0"; then
    the k largest diagonal entries maximise IPV and the k smallest minimise it (App. A.4,
    eqs. (19)–(20))."""
    rng = ctx.rng("theorem-2-population")
    matrices = 200 if ctx.full else 25
    failures, worst, cases, premised = [], 0.0, 0, 0
    twins, rejected = 0, 0
    for i in range(matrices):
        p = int(rng.integers(2, 13 if ctx.full else 11))
        Lam = random_cpi(p, ties=int(rng.integers(0, p)), negative_b=bool(i % 2), rng=rng)
        n, c = float(10 ** rng.uniform(0, 5)), float(10 ** rng.uniform(-1, 1))
        for k in range(1, p + 1):
            check = check_theorem2(Lam, k, n=n, prior_precision=c)
            cases += 1
            premised += check.premises
            worst = min(worst, check.margin / max(check.details["tolerance"], 1e-300))
            if check.refutes:
                failures.append({"p": p, "k": k, "n": n, "c": c, **check.details})
        near = _cpi_twins(Lam)
        twins += len(near)
        rejected += sum(not check_theorem2(t, 1, n=n, prior_precision=c).premises for t in near)
    require(premised == cases, f"only {premised} of {cases} generated matrices are in C_PI")
    require(
        rejected == twins,
        f"the premise test accepts {twins - rejected} of {twins} near-miss non-members of "
        "C_PI (unequal off-diagonals, or a d_i ≤ 0)",
    )
    return Verdict(
        Status.CONFIRMED if not failures else Status.REFUTED,
        measured=len(failures),
        expected=0,
        tolerance="roundoff bound per case (theory.theorems.roundoff_tolerance)",
        evidence=(
            f"{matrices} random C_PI matrices diag(d) + aI + b11ᵀ (p ≤ 12, half with b < 0 "
            f"and a + p·b ≥ 0, ties in d), every k = 1..p ({cases} cases, {premised} "
            "recognised as C_PI by is_cpi), compared by IPV value with the exhaustive search "
            f"over all C(p, k) subsets: {len(failures)} failures; smallest margin / "
            f"roundoff bound {worst:.3g}. Ties in diag(Λ) make several subsets optimal, all "
            f"with equal IPV. Audited in the run: the premise test rejects all {twins} near-miss "
            "twins (one off-diagonal pair moved by 1e-8·max|Λ|, or one d_i just below 0)."
        ),
        details={"cases": cases, "premised": premised, "failures": failures[:3]},
    )


def _unsquared_scores(
    rng: np.random.Generator, d: np.ndarray, a: float, b: float, n: int
) -> np.ndarray:
    """Alg. 1's scores without the square: the mean gradient (1/N) Σ_n g_i(x_n)."""
    chunk, total = theorem2_consistency.CHUNK, np.zeros(d.size)
    for start in range(0, n, chunk):
        total += theorem2_consistency.gradients(rng, min(chunk, n - start), d, a, b).sum(axis=0)
    return total / n


def _scores_error_one_over_n(
    rng: np.random.Generator, d: np.ndarray, a: float, b: float, n: int
) -> np.ndarray:
    """Scores that deviate from Λ_ii by O_P(1/N) — as if the score concentrated at rate 1/N,
    the o_P(√(log p / N)) the proof asserts."""
    return d + a + b + rng.standard_normal(d.size) / n


@cached
def _consistency_rows(seed: int, full: bool) -> tuple[dict[str, float], ...]:
    """Replications of the ``theorem2-consistency`` study (separated diagonal, p = 20,
    k = 5), per N: the mean of each metric. Shared by the two claims that read it."""
    Ns = [100, 1000, 10_000, 100_000] + ([1_000_000] if full else [])
    reps = 1000 if full else 100
    rows = []
    for N in Ns:
        params = {"N": N, "scenario": "separated", "p": 20, "k": 5, "a": 0.5, "b": 0.2}
        runs = replicate(theorem2_consistency.STUDY, params, reps, seed=seed)
        row: dict = {"N": N, **{m: float(np.mean([r[m] for r in runs])) for m in runs[0]}}
        for m in ("select_gradient", "select_subnet_diagonal", "score_error_scaled"):
            row[f"{m}_values"] = tuple(float(r[m]) for r in runs)
        rows.append(row)
    return tuple(rows)


#: The probability each selection must exceed at the largest N (significantly, one-sided):
#: "→ 1" read at a finite N, fixed before measuring.
PROBABILITY = 0.95


@claim(
    paper=PAPER,
    name="theorem-2-finite-n",
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    location="Theorem 2 (§4), App. A.4 with (A6)",
    statement=(
        "Under separation (A6), P(Dis(S_GrL,k) = min Dis) → 1 and "
        "P(Dis(S_SubD,k) = max Dis) → 1 as N → ∞, for Λ ∈ C_PI and V = cI."
    ),
    mutants=(
        Mutant(
            "scores-unsquared",
            "Gradient-Laplace's scores without the square (the mean gradient, zero in "
            "expectation)",
            {(theorem2_consistency, "_mean_squared_gradients"): _unsquared_scores},
        ),
        Mutant(
            "probability-one-at-finite-n",
            "the selection probability required to exceed 1 (no room for any effect): the "
            "superiority rule must answer INCONCLUSIVE, never CONFIRMED",
            {(sys.modules[__name__], "PROBABILITY"): 1.0},
            expect=Status.INCONCLUSIVE,
            reuses=(_consistency_rows,),
        ),
    ),
)
def theorem_2_finite_n(ctx: Context) -> Verdict:
    """Theorem 2 (§4): under (A6), "P(Dis(S_GrL,k) = min Dis) → 1" and "P(Dis(S_SubD,k) =
    max Dis) → 1" as N → ∞. Read at the study's largest N: each probability significantly
    above :data:`PROBABILITY` (the one-sided score test of a proportion on the replications'
    indicators, both required). The smaller N are shown, not tested: the theorem states the
    limit, not a monotone approach to it."""
    import matplotlib.pyplot as plt

    rows = _consistency_rows(ctx.seed, ctx.full)
    Ns = [r["N"] for r in rows]
    grl, subd = [r["select_gradient"] for r in rows], [r["select_subnet_diagonal"] for r in rows]
    top = rows[-1]
    for key in ("select_gradient_values", "select_subnet_diagonal_values"):
        require(
            set(top[key]) <= {0.0, 1.0},
            f"{key}: a selection either attains the optimum or not; got {set(top[key])}",
        )
    tests = [
        decisions.proportion(
            f"P({name}) at N = {Ns[-1]:,}",
            int(sum(top[key])),
            len(top[key]),
            threshold=PROBABILITY,
        )
        for name, key in (
            ("Gradient-Laplace attains max IPV", "select_gradient_values"),
            ("Subnet-Diagonal attains min IPV", "select_subnet_diagonal_values"),
        )
    ]
    d = decisions.superiority(tests, command="laplace-lab check --full --claim theorem-2-finite-n")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.semilogx(Ns, grl, "o-", label="Gradient-Laplace attains max IPV")
    ax.semilogx(Ns, subd, "s--", label="Subnet-Diagonal attains min IPV")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set(xlabel="N", ylabel="probability", title="C_PI, p=20, k=5, separated diagonal")
    ax.legend(fontsize=8)
    return Verdict(
        d.status,
        measured=grl[-1],
        expected=f"> {PROBABILITY} at the largest N",
        tolerance=d.rule,
        summary=d.summary,
        decision=d,
        evidence=(
            "The theorem2-consistency study's replications (Λ = diag(d) + 0.5·I + 0.2·11ᵀ, "
            "d equally spaced on [1, 2], p = 20, k = 5, gradients ḡ ~ N(0, Λ), scores = mean "
            "squared gradients; success compares IPV values with the population optimum): "
            + "; ".join(
                f"N={N}: P(GrL)={g:.3f}, P(SubD)={d:.3f}"
                for N, g, d in zip(Ns, grl, subd, strict=True)
            )
            + "."
        ),
        details={
            "rows": [{k: v for k, v in r.items() if not k.endswith("_values")} for r in rows]
        },
        figures=ctx.save_figure(
            fig,
            "theorem2_finite_n.png",
            caption=(
                "The share of replications in which Gradient-Laplace attains the maximal IPV "
                "(circles) and Subnet-Diagonal the minimal one (squares) against N (log axis); "
                f"the claim is decided at the largest N: both above {PROBABILITY} by the "
                "one-sided score test of a proportion. The grey line is probability 1."
            ),
        ),
    )


def score_deviation_covariance(lam: np.ndarray) -> np.ndarray:
    """The covariance of (g_1², …, g_p²) for Gaussian gradients g ~ N(0, Λ): 2 Λ∘Λ (Isserlis:
    Cov(g_i², g_j²) = 2 Λ_ij²), the covariance of √N (s − diag Λ) for every N."""
    return 2.0 * lam * lam


def clt_scaled_limit(lam: np.ndarray, rng: np.random.Generator, draws: int) -> tuple[float, float]:
    """The limit of E[sup_i |s_i − Λ_ii|] / √(log p / N) as N → ∞, with its Monte Carlo s.e.

    By the central limit theorem √N (s − diag Λ) → W ~ N(0, 2 Λ∘Λ), so the scaled error
    tends in distribution to max_i |W_i| / √(log p), whose mean is positive for every fixed
    Λ ≠ 0: the error is Θ_P(√(log p / N)), not o_P.
    """
    chol = np.linalg.cholesky(score_deviation_covariance(lam))
    w = rng.standard_normal((draws, lam.shape[0])) @ chol.T
    m = np.max(np.abs(w), axis=1) / np.sqrt(np.log(lam.shape[0]))
    return float(m.mean()), float(m.std(ddof=1) / np.sqrt(draws))


def _clt_limit_without_isserlis_factor(
    lam: np.ndarray, rng: np.random.Generator, draws: int
) -> tuple[float, float]:
    """The limit with Var(g_i²) read as Λ_ii² instead of 2 Λ_ii² (a factor √2 too small)."""
    mean, se = clt_scaled_limit(lam, rng, draws)
    return mean / np.sqrt(2.0), se / np.sqrt(2.0)


#: Monte Carlo draws of the limit's mean (s.e. ≈ 0.1% of it).
LIMIT_DRAWS = 200_000
#: The simulated mean at the largest N must lie within this many standard errors of the limit
#: (the two s.e. combined) plus :data:`LIMIT_BIAS` of it, room for the CLT's finite-N bias
#: (measured at base seed 0: 3.91 ± 0.10 at N = 100 and 3.97 ± 0.10 at N = 10⁵ against the
#: limit 4.022 ± 0.002, within the simulation's noise from N = 100 on).
LIMIT_Z = 4.0
LIMIT_BIAS = 0.02


@claim(
    paper=PAPER,
    name="score-concentration-rate",
    kind=Kind.EXISTENCE,
    setting=Setting.paper(),
    location="App. A.4, display after (A5)",
    statement=(
        "sup_i |(1/N)Σ_n g_i(x_n)² − Λ_ii| = o_P(√(log p / N)), so the empirical scores "
        "order like diag(Λ) once the gaps exceed √(log p / N)."
    ),
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "scores-error-one-over-n",
            "scores whose error is O_P(1/N), the o_P(√(log p / N)) the proof asserts: the "
            "simulation leaves the CLT limit, which the in-run audit must catch",
            {(theorem2_consistency, "_mean_squared_gradients"): _scores_error_one_over_n},
            expect=Status.ERROR,
        ),
        Mutant(
            "limit-without-isserlis-factor",
            "the limit drawn with Var(g_i²) = Λ_ii² instead of 2 Λ_ii²: the audit of the "
            "limit against the simulation must fail",
            {(sys.modules[__name__], "clt_scaled_limit"): _clt_limit_without_isserlis_factor},
            expect=Status.ERROR,
            reuses=(_consistency_rows,),
        ),
    ),
)
def score_concentration_rate(ctx: Context) -> Verdict:
    """App. A.4, the display after (A5): "sup_i |(1/N) Σ_n g_i(x_n)² − Λ_ii| = o_P(√(log p /
    N))".

    A counterexample, exact in the limit: for Gaussian gradients g ~ N(0, Λ) at fixed p the
    central limit theorem gives √N (s − diag Λ) → N(0, 2 Λ∘Λ), so the scaled error
    sup_i |s_i − Λ_ii| / √(log p / N) tends to max_i |W_i| / √(log p), a law with a positive
    mean (:func:`clt_scaled_limit`), not to 0. The theorem2-consistency study's replications
    audit that limit in the run: their mean scaled error at the largest N must agree with it.
    """
    rows = _consistency_rows(ctx.seed, ctx.full)
    scaled = [r["score_error_scaled"] for r in rows]
    top = rows[-1]
    values = np.asarray(top["score_error_scaled_values"], dtype=float)
    require(bool(np.all(np.isfinite(values))), "a scaled score error is not finite")
    p, k = 20, 5
    lam = cpi_matrix(theorem2_consistency.diagonal("separated", p, k), 0.5, 0.2)
    limit, limit_se = sys.modules[__name__].clt_scaled_limit(
        lam, ctx.rng("score-concentration-limit"), LIMIT_DRAWS
    )
    sim_se = float(values.std(ddof=1) / np.sqrt(values.size))
    gap = abs(float(values.mean()) - limit)
    allowed = LIMIT_Z * float(np.hypot(sim_se, limit_se)) + LIMIT_BIAS * limit
    require(
        gap <= allowed,
        f"the simulated scaled error at N = {top['N']:,} ({values.mean():.4f} ± {sim_se:.4f}) "
        f"is not the CLT limit {limit:.4f} ± {limit_se:.4f} (|gap| {gap:.4f} > {allowed:.4f})",
    )
    d = decisions.counterexample(
        limit > 0.0,
        witness=(
            f"Λ = C_PI (p = {p}, separated diagonal, a = 0.5, b = 0.2): the scaled error "
            f"tends to max_i |W_i| / √(log p), W ~ N(0, 2 Λ∘Λ), of mean {limit:.4f} "
            f"(± {limit_se:.4f}, {LIMIT_DRAWS:,} draws) > 0; the study's mean at "
            f"N = {top['N']:,} is {values.mean():.4f} ± {sim_se:.4f} ({values.size} "
            "replications), in agreement"
        ),
    )
    return Verdict(
        d.status,
        measured=scaled[-1],
        expected="→ 0 (o_P)",
        tolerance=d.rule,
        summary=d.summary,
        decision=d,
        evidence=(
            "E[sup_i |s_i − Λ_ii|] / √(log p / N) for Gaussian gradients (the setting of "
            "theorem-2-finite-n): "
            + ", ".join(f"N={r['N']}: {v:.3f}" for r, v in zip(rows, scaled, strict=True))
            + f"; the CLT limit is {limit:.3f}. The ratio tends to a positive constant instead "
            "of vanishing: the maximum of p sub-exponential deviations is Θ_P(√(log p / N)), "
            "so the bound holds as O_P, not o_P. The proof of Theorem 2 survives with O_P if "
            "the separation in (A6) carries a large enough constant, which is also what the "
            "finite-N study shows."
        ),
        details={
            "rows": [{"N": r["N"], "scaled_error": v} for r, v in zip(rows, scaled, strict=True)],
            "clt_limit": limit,
            "clt_limit_se": limit_se,
        },
    )


#: How far outside its premise each twin of a generated case lies: the off-diagonals of the
#: dominance twin use 102% of the budget ε Λ_ii in their fullest row; the ratio twin's
#: diagonal ratio is 99% of (1 + ε)/(1 − ε).
DOMINANCE_OVERSHOOT = 1.02
RATIO_UNDERSHOOT = 0.99


def _outside_twins(Lam: np.ndarray, k: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Two matrices just outside the premises of Theorem 3 next to an ε-dominant ``Lam``.

    The dominance twin scales the off-diagonals until the fullest row uses
    :data:`DOMINANCE_OVERSHOOT` of its budget ε Λ_ii (the diagonal and its ratios unchanged;
    still positive definite as ε · 1.02 < 1). The ratio twin raises every diagonal entry
    below the k largest to Λ_(k)/(ρ·(1 + ε)/(1 − ε)), ρ = :data:`RATIO_UNDERSHOOT`, so both
    ratio conditions fail by 1% while dominance holds (raising a diagonal entry only adds
    to its row's margin).
    """
    d = np.diag(Lam)
    off = Lam - np.diag(d)
    fullest = float(np.max(np.abs(off).sum(axis=1) / (eps * d)))
    dominance = np.diag(d) + off * (DOMINANCE_OVERSHOOT / fullest)
    order = np.argsort(-d, kind="stable")
    raised = d.copy()
    raised[order[k:]] = d[order[k - 1]] / (RATIO_UNDERSHOOT * (1 + eps) / (1 - eps))
    return dominance, off + np.diag(raised)


def _theorem3_sweep(ctx: Context, part: str) -> Verdict:
    rng = ctx.rng(f"theorem-3{part}")
    cases = 500 if ctx.full else 80
    failures, premised, worst = [], 0, np.inf
    twins_rejected, twins_held = 0, 0
    for _ in range(cases):
        p = int(rng.integers(2, 13 if ctx.full else 11))
        k = int(rng.integers(1, p // 2 + 1))
        eps = float(rng.uniform(0.01, 0.7))
        gap = (1 + eps) / (1 - eps) * rng.uniform(1.001, 2.0)
        diag = np.concatenate(
            [gap * rng.uniform(1.0, 2.0, size=k), rng.uniform(0.3, 1.0, size=p - k)]
        )
        Lam = random_diagonally_dominant(
            p, eps, diag=diag[rng.permutation(p)], fill=0.999, rng=rng
        )
        c = float(10 ** rng.uniform(-1, 1))
        n = float(10 ** rng.uniform(0, 4))
        check = check_theorem3(Lam, k, eps, n=n, prior_precision=c)
        sub = check.details[f"part_{part}"]
        premised += sub.premises
        worst = min(worst, sub.margin)
        if sub.refutes:
            failures.append({"p": p, "k": k, "eps": eps, "Lam": Lam.round(6).tolist()})
        for twin in _outside_twins(Lam, k, eps):
            outside = check_theorem3(twin, k, eps, n=n, prior_precision=c).details[f"part_{part}"]
            twins_rejected += not outside.premises
            twins_held += bool(outside.holds)
    require(premised == cases, f"only {premised} of {cases} generated matrices meet the premises")
    require(
        twins_rejected == 2 * cases,
        f"the premise test accepted {2 * cases - twins_rejected} of {2 * cases} matrices built "
        "just outside the premises (off-diagonals at 102% of the dominance budget, or the "
        "diagonal ratio at 99% of (1 + ε)/(1 − ε)): the premise check is wrong",
    )
    return Verdict(
        Status.CONFIRMED if not failures else Status.REFUTED,
        measured=len(failures),
        expected=0,
        tolerance="roundoff bound per case",
        evidence=(
            f"{cases} random ε-diagonally dominant Λ (ε in [0.01, 0.7], off-diagonals using "
            f"99.9% of the dominance budget, p ≤ 12, k ≤ p/2) whose diagonal meets the ratio "
            f"condition of part ({part}) ({premised} of {cases} met all premises); V = cI. "
            f"Failures: {len(failures)}; smallest margin {worst:.3g}. The premise test is "
            f"exercised both ways: next to each case, a twin just outside dominance "
            f"(off-diagonals at 102% of the budget) and one just outside the ratio condition "
            f"(99% of (1 + ε)/(1 − ε)); it rejected {twins_rejected} of {2 * cases} twins "
            f"(whose conclusion still held in {twins_held}: the premises are sufficient, not "
            "necessary). The theorem's statement omits V = cI; its proof uses it (App. A.5, "
            "'Since V is a multiple of identity')."
        ),
        details={"cases": cases, "failures": failures[:3], "twins_rejected": twins_rejected},
    )


@claim(
    paper=PAPER,
    name="theorem-3a",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="Theorem 3, first part; App. A.5",
    statement=(
        "For ε-diagonally dominant Λ with Λ_{m_k m_k}/Λ_{m_{p−k+1} m_{p−k+1}} > (1+ε)/(1−ε), "
        "IPV(S*) ≥ IPV(S̃*), i.e. Gradient-Laplace beats Subnet-Diagonal."
    ),
    mutants=(IPV_POSTERIOR_VARIANCE, DOMINANCE_TWICE_AS_LAX),
)
def theorem_3a(ctx: Context) -> Verdict:
    """Theorem 3 (§4): "If Λ is an ϵ-diagonally dominant matrix (see Appendix A.5), and if
    Λ_{m_k m_k}/Λ_{m_{p−k+1} m_{p−k+1}} > (1 + ϵ)/(1 − ϵ)", then IPV(S*) ≥ IPV(S̃*)."""
    return _theorem3_sweep(ctx, "a")


@claim(
    paper=PAPER,
    name="theorem-3b",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="Theorem 3, second part; App. A.5",
    statement=(
        "For ε-diagonally dominant Λ with Λ_{m_k m_k}/Λ_{m_{k+1} m_{k+1}} > (1+ε)/(1−ε), "
        "IPV(S*) ≥ IPV(S) for every |S| = k disjoint from S*."
    ),
    mutants=(IPV_POSTERIOR_VARIANCE, DOMINANCE_TWICE_AS_LAX),
)
def theorem_3b(ctx: Context) -> Verdict:
    """Theorem 3 (§4), second part: with Λ_{m_k m_k}/Λ_{m_{k+1} m_{k+1}} > (1 + ϵ)/(1 − ϵ),
    IPV(S*) ≥ IPV(S) for every |S| = k disjoint from S*."""
    return _theorem3_sweep(ctx, "b")
