"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification" (TMLR, arXiv:2605.12208) on the heteroscedastic toy of §5.1 (eq. 18, Table 1), run
by
:func:`laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature.curvature_coverage`:
a 2×50 MLP with a homoscedastic Gaussian likelihood, λ tuned by the Laplace evidence, LA / SSLA /
ASSLA under the dense, diagonal and KFAC curvature, coverage on 2,000 held-out points per fitted
network, 500 training points and the study's Adam recipe (quick: 5 fitted networks, full: 10;
the coverage is pooled over the fits' test points). A MAP trained for half as long has a
larger σ0² and makes LA conservative: the verdicts on LA need the fitted MAP. Table 1's
coverages are all multiples of 4%, i.e. 25 test points, where one point moves a coverage by 4
percentage points.

Coverage is compared with the nominal level by one-sided exact binomial tests at family-wise
level 5% (Bonferroni over the levels tested), fixed before running.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from laplace_lab.networks.training import single_threaded
from laplace_lab.numerics.network_ssla import (
    NormalPredictive,
    assla_log_density_from_variance,
    gaussian_scores,
    log_det_ratio,
    ssla_log_density_from_variance,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import (
    CURVATURES,
    LEVELS,
    CurvatureCoverage,
    curvature_coverage,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
    HeteroscedasticFit,
    fit_heteroscedastic,
)
from laplace_lab.paper_checks.verification import Context, Mutant, Status, Verdict, cached, claim
from laplace_lab.paper_checks.verification.sequential import Looks

PAPER = "self-supervised-laplace"
ALPHA = 0.05


#: Fitted MAP networks (seeds) whose held-out coverage the Table-1 claims pool, by mode. The
#: seed is the unit of replication: coverage moves by 1–2 percentage points from one MAP
#: fit to the next, far more than the binomial noise of 2,000 test points.
SEEDS = {False: 5, True: 10}
#: The seeds a claim whose test is still undecided on :data:`SEEDS` looks at once more.
MORE_SEEDS = {False: 10, True: 20}


def _generator(seed: int, index: int) -> np.random.Generator:
    """The ``index``-th stream of the base seed (the same for every number of seeds)."""
    return Context(seed=seed).rng("heteroscedastic-curvatures").spawn(index + 1)[index]


@cached
def _fit(seed: int, index: int) -> HeteroscedasticFit:
    """The ``index``-th MAP network of the base seed, with 2,000 held-out test points."""
    with single_threaded():
        return fit_heteroscedastic(rng=_generator(seed, index), n_train=500, n_test=2000)


@cached
def _run(seed: int, index: int) -> CurvatureCoverage:
    return curvature_coverage(_fit(seed, index))


def _runs(seed: int, full: bool, n: int | None = None) -> tuple[CurvatureCoverage, ...]:
    """The first ``n`` (default :data:`SEEDS`) fitted networks of the base seed and their
    coverage under every curvature."""
    return tuple(_run(seed, i) for i in range(SEEDS[full] if n is None else n))


def _pooled(runs, method: str, curvature: str) -> tuple[np.ndarray, int]:
    """Coverage per level pooled over seeds, and the number of test points."""
    n = sum(r.n_test for r in runs)
    cov = sum(r.coverage[method][curvature] * r.n_test for r in runs) / n
    return cov, n


def _below(cov: float, n: int, level: float) -> float:
    """One-sided exact binomial p-value of coverage below ``level``."""
    return float(stats.binomtest(round(cov * n), n, level, alternative="less").pvalue)


def _above(cov: float, n: int, level: float) -> float:
    return float(stats.binomtest(round(cov * n), n, level, alternative="greater").pvalue)


def _table(runs, method: str) -> str:
    parts = []
    for c in CURVATURES:
        cov, _ = _pooled(runs, method, c)
        parts.append(f"{c} " + "/".join(f"{100 * v:.1f}" for v in cov))
    return f"{method} coverage (%) at {'/'.join(f'{100 * lv:g}' for lv in LEVELS)}: " + "; ".join(
        parts
    )


def _label(runs) -> str:
    return (
        f"{len(runs)} fitted networks × {runs[0].n_test} test points, σ0² ≈ "
        f"{np.mean([r.noise_var for r in runs]):.3f}, λ = "
        + ", ".join(f"{r.prior_precision:g}" for r in runs)
        + " by the evidence"
    )


def _observed_curvature_assla(v, f_test, y, *, noise_var):
    """ASSLA whose new-point curvature grows with the residual (depends on ŷ)."""
    f = np.asarray(f_test)[:, None]
    r2 = (np.asarray(y) - f) ** 2
    vv = np.asarray(v)[:, None]
    base = -0.5 * np.log(2 * np.pi * noise_var) - r2 / (2 * noise_var)
    return base + log_det_ratio(vv * (1.0 + r2 / noise_var), noise_var)


@claim(
    paper=PAPER,
    name="table1-assla-identical-across-curvatures",
    location="§5.1, Table 1 (ASSLA columns KFAC / DIAG / DENSE)",
    statement="ASSLA's coverage is the same whichever representation of the Fisher "
    "information (KFAC, diagonal, dense) it uses.",
    mutants=(
        Mutant(
            "curvature-depends-on-y",
            "the new point's curvature grows with the residual ŷ − f̂ (as an observed "
            "information would), so the determinant term depends on ŷ",
            {assla_log_density_from_variance: _observed_curvature_assla},
            reuses=(_fit,),
        ),
    ),
)
def assla_identical(ctx: Context) -> Verdict:
    runs = _runs(ctx.seed, ctx.full)
    covs = np.array([_pooled(runs, "ASSLA", c)[0] for c in CURVATURES])
    spread = float(np.max(covs.max(0) - covs.min(0)))
    density = max(r.density_spread["ASSLA"] for r in runs)
    la = np.array([_pooled(runs, "LA", c)[0] for c in CURVATURES])
    ok = spread == 0.0 and density < 1e-10
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=spread,
        expected=0.0,
        tolerance="identical coverage; normalised densities equal to 1e-10 of their peak",
        evidence=(
            f"{_label(runs)}. {_table(runs, 'ASSLA')}; the normalised ASSLA densities of the "
            f"three curvatures differ by at most {density:.1e} of their peak. Why: with a "
            "Gaussian likelihood the Gauss–Newton information of the new point, g gᵀ/σ0², "
            "does not depend on ŷ, so eq. (17)'s ½ log|J| − ½ log|J̃| = −½ log(1 + v/σ0²) is "
            "a constant in ŷ whatever approximates J; normalised over ŷ, ASSLA is the plug-in "
            "N(f̂, σ0²) for every curvature (and carries no epistemic variance). It would "
            "differ only with a curvature of the new point that depends on ŷ (an observed "
            "information). LA's coverage, in contrast, does depend on the curvature here "
            f"(largest spread {np.max(la.max(0) - la.min(0)):.3f}), while Table 1's LA "
            "columns are identical too."
        ),
        details={c: cov.tolist() for c, cov in zip(CURVATURES, covs, strict=True)},
    )


def _double_noise_scores(pred, y, *, levels=LEVELS, _scores=gaussian_scores):
    """LA's scores with the whole predictive variance σ0² + v doubled."""
    return _scores(NormalPredictive(pred.mean, 2.0 * pred.var), y, levels=levels)


@claim(
    paper=PAPER,
    name="table1-la-conservative",
    location="§5.1, Table 1 (LA columns)",
    statement="The classical Laplace approximation exhibits conservative calibration: wide, "
    "risk-averse intervals that cover at least the nominal level (KFAC, DIAG and DENSE).",
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "doubled-predictive-variance",
            "LA's predictive variance σ0² + v counted twice",
            {gaussian_scores: _double_noise_scores},
            reuses=(_fit,),
            expect=Status.CONFIRMED,
        ),
    ),
)
def la_conservative(ctx: Context) -> Verdict:
    runs = _runs(ctx.seed, ctx.full)
    level = ALPHA / (len(LEVELS) * len(CURVATURES))
    rows, below, not_above = [], [], []
    for c in CURVATURES:
        cov, n = _pooled(runs, "LA", c)
        for lv, v in zip(LEVELS, cov, strict=True):
            p = _below(v, n, lv)
            rows.append((c, lv, v, p))
            below += [(c, lv)] if p < level else []
            not_above += [(c, lv)] if v < lv else []
    status = (
        Status.REFUTED
        if below
        else Status.CONFIRMED
        if not not_above
        else Status.NOT_REPRODUCIBLE_HERE
    )
    return Verdict(
        status,
        measured=f"{len(below)} (curvature, level) pairs significantly below nominal",
        expected="0, and coverage ≥ nominal everywhere",
        tolerance=f"one-sided exact binomial tests, level {ALPHA:g}/{len(rows)}",
        evidence=(
            f"{_label(runs)}. {_table(runs, 'LA')}. Significantly below nominal: "
            + (", ".join(f"{c} {100 * lv:g}%" for c, lv in below) or "none")
            + ". The homoscedastic likelihood fits one σ0² to noise whose scale varies 0–3 "
            "with x (eq. 18): the wide intervals miss the noisiest points and the narrow ones "
            "over-cover the quiet ones; the epistemic term adds little at σ0² of this size. "
            "The diagonal curvature inflates v and is the one conservative variant."
        ),
        details={"rows": rows},
    )


#: The wide levels of the ASSLA claim.
WIDE = (0.95, 0.90)


def _assla_test(runs, level: float) -> tuple[Status, np.ndarray, int, dict, dict]:
    """ASSLA DENSE below nominal at both wide levels (CONFIRMED), above at one (REFUTED), or
    neither, at ``level`` per test: (status, coverage, test points, p below, p above)."""
    cov, n = _pooled(runs, "ASSLA", "DENSE")
    ps = {lv: _below(cov[LEVELS.index(lv)], n, lv) for lv in WIDE}
    above = {lv: _above(cov[LEVELS.index(lv)], n, lv) for lv in WIDE}
    status = (
        Status.CONFIRMED
        if all(p < level for p in ps.values())
        else Status.REFUTED
        if any(p < level for p in above.values())
        else Status.NOT_REPRODUCIBLE_HERE
    )
    return status, cov, n, ps, above


def _double_noise_assla(v, f_test, y, *, noise_var, _density=assla_log_density_from_variance):
    """ASSLA with σ0² counted twice."""
    return _density(v, f_test, y, noise_var=2.0 * noise_var)


@claim(
    paper=PAPER,
    name="table1-assla-undercovers-wide-intervals",
    location="§5.1, Table 1 and its discussion",
    statement="ASSLA systematically underestimates uncertainty in wider intervals (coverage "
    "below the nominal 95% and 90%), a mild risk-seeking bias.",
    mutants=(
        Mutant(
            "noise-counted-twice",
            "ASSLA with σ0² counted twice",
            {assla_log_density_from_variance: _double_noise_assla},
            reuses=(_fit,),
        ),
    ),
)
def assla_undercovers(ctx: Context) -> Verdict:
    # two looks (SEEDS fits, then MORE_SEEDS if undecided), each at half the level
    design = Looks((SEEDS[ctx.full], MORE_SEEDS[ctx.full]), ALPHA / len(WIDE))
    fits, (status, cov, n, ps, _) = design.run(
        lambda k, level: _assla_test(_runs(ctx.seed, ctx.full, k), level),
        lambda result: result[0] is not Status.NOT_REPRODUCIBLE_HERE,
    )
    looks = design.counts[: design.counts.index(fits) + 1]
    runs = _runs(ctx.seed, ctx.full, fits)
    la, _ = _pooled(runs, "LA", "DENSE")
    per_seed = [r.coverage["ASSLA"]["DENSE"][LEVELS.index(0.90)] for r in runs]
    return Verdict(
        status,
        measured="; ".join(f"{100 * lv:g}%: {100 * cov[LEVELS.index(lv)]:.1f}%" for lv in WIDE),
        expected="below 95% and 90%",
        tolerance=(
            f"one-sided exact binomial tests on the pooled test points, level "
            f"{ALPHA:g}/{len(WIDE)}/2 (two looks: {SEEDS[ctx.full]} fits, then "
            f"{MORE_SEEDS[ctx.full]} if undecided)"
        ),
        evidence=(
            f"{_label(runs)} (looked at {' then '.join(map(str, looks))} fits). "
            f"{_table(runs, 'ASSLA')}; one-sided p (below nominal): "
            + ", ".join(f"{100 * lv:g}% {p:.2g}" for lv, p in ps.items())
            + "; 90% coverage per fit "
            + "/".join(f"{100 * v:.1f}" for v in per_seed)
            + ". ASSLA is N(f̂, σ0²): its intervals lie inside LA's (LA DENSE "
            + "/".join(f"{100 * v:.1f}" for v in la)
            + "), narrower by the dropped epistemic variance; at the narrow levels it "
            "over-covers (the heteroscedastic noise is heavy-tailed around one σ0²)."
        ),
        details={"coverage": cov.tolist(), "p_below": ps, "fits": fits, "n_test": n},
    )


def _assla_as_ssla(v, f_test, y, *, noise_var, _density=assla_log_density_from_variance):
    """'SSLA' computed by the ASSLA formula (curvature-free once normalised)."""
    return _density(v, f_test, y, noise_var=noise_var)


@claim(
    paper=PAPER,
    name="table1-ssla-varies-with-curvature",
    location="§5.1, Table 1 (SSLA columns) and its discussion",
    statement="SSLA's uncertainty estimates vary depending on the covariance approximation "
    "(KFAC, diagonal, dense).",
    mutants=(
        Mutant(
            "ssla-by-assla-formula",
            "SSLA evaluated with eq. (17) instead of eq. (12)",
            {ssla_log_density_from_variance: _assla_as_ssla},
            reuses=(_fit,),
            expect=Status.REFUTED,
        ),
    ),
)
def ssla_varies(ctx: Context) -> Verdict:
    runs = _runs(ctx.seed, ctx.full)
    covs = np.array([_pooled(runs, "SSLA", c)[0] for c in CURVATURES])
    n = sum(r.n_test for r in runs)
    spread = float(np.max(covs.max(0) - covs.min(0)))
    tol = 3.0 * np.sqrt(0.25 / n)  # three standard errors of a proportion, at worst
    return Verdict(
        Status.CONFIRMED if spread > tol else Status.REFUTED,
        measured=round(spread, 4),
        expected=f"> {tol:.3f}",
        tolerance="largest coverage difference between two curvatures above 3 standard errors",
        evidence=(
            f"{_label(runs)}. {_table(runs, 'SSLA')}. In the linearised network SSLA "
            "normalises to N(f̂, σ0² + v) (linearized Laplace), and v depends on the "
            "curvature: the diagonal one ignores every correlation and inflates v. The "
            "paper attributes SSLA's variation to 'instability'; here it is the curvature."
        ),
        details={c: cov.tolist() for c, cov in zip(CURVATURES, covs, strict=True)},
    )
