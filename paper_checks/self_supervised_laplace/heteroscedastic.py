"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification" (TMLR, arXiv:2605.12208) on the heteroscedastic toy of §5.1 (eq. 18, Table 1).

LA (every curvature) and ASSLA's coverage at the wide levels are run on the paper's own
mean + log-variance network of App. C.1 eq. (37), fitted by the Gaussian NLL of App. C.3
(:mod:`.experiments.mean_variance`). The curvature comparisons of SSLA and ASSLA (the claims
on how they vary with KFAC, DIAG and DENSE) are run by
:func:`laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature.curvature_coverage`
on a 2×50 MLP with a homoscedastic Gaussian likelihood (one σ0² from the residuals; SSLA on
the mean + log-variance network is not implemented here). Both: λ tuned by the Laplace
evidence, coverage on 2,000 held-out points per fitted network, 500 training points and the
study's Adam recipe (quick: 5 fitted networks, full: 10, more where a sequential look is
undecided). Table 1's coverages are all multiples of 4%,
i.e. 25 test points, where one point moves a coverage by 4 percentage points.

The unit of replication is the fitted network (a fresh draw of the toy, initialisation and
training order): coverage moves by 1–2 percentage points from one fit to the next, far more
than the binomial noise of its 2,000 test points. Coverage is compared with the nominal level
by one-sided t tests over the fits (:mod:`laplace_lab.paper_checks.verification.decisions`),
looked at sequentially (:func:`laplace_lab.paper_checks.verification.replicates.decide`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from laplace_lab._random import spawn
from laplace_lab.networks.data import heteroscedastic_toy, split_standardise
from laplace_lab.numerics.laplace_variants import SpectralLaplace
from laplace_lab.numerics.network_ssla import (
    NormalPredictive,
    assla_log_density_from_variance,
    gaussian_scores,
    log_det_ratio,
    ssla_log_density_from_variance,
)
from laplace_lab.paper_checks.self_supervised_laplace import _audits, _mutants
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import (
    CURVATURES,
    LEVELS,
    CurvatureCoverage,
    CurvatureVariances,
    curvature_coverage,
    curvature_variances,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
    MeanVarianceCoverage,
    MeanVarianceCurvature,
    MeanVarianceFit,
    assla_log_density,
    fit_mean_variance_batch,
    la_coverage,
    la_curvature,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
    HeteroscedasticFit,
    fit_heteroscedastic_batch,
)
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
    step,
)
from laplace_lab.paper_checks.verification.replicates import Check, decide, design_text

PAPER = "self-supervised-laplace"
#: What differs from §5.1 and App. C: the likelihood and the training budget.
HOMOSCEDASTIC = (
    "homoscedastic MLP in place of App. C.1 eq. (37)'s mean + log-variance network (one σ0² "
    "from the residuals instead of C.3's Gaussian NLL with a predicted variance), a fixed "
    "Adam recipe in place of App. C.2's Optuna search, the toy of eq. (18) drawn here, "
    "2,000 test points per fit where Table 1's coverages are multiples of 4% (25 points)"
)
#: What differs from §5.1 and App. C for LA and ASSLA on the paper's mean + log-variance
#: network.
MEAN_VARIANCE = (
    "App. C.1 eq. (37)'s mean + log-variance network fitted by C.3's Gaussian NLL as in the "
    "paper, but a fixed Adam recipe (lr 1e-2, 300 epochs, batch 64, cosine) in place of "
    "App. C.2's Optuna search and C.4's early stopping, λ by the Laplace evidence on a grid, "
    "the toy of eq. (18) drawn here, 2,000 test points per fit where Table 1's coverages are "
    "multiples of 4% (25 points)"
)


#: Fitted MAP networks (seeds) whose held-out coverage the Table-1 claims pool, by mode. The
#: seed is the unit of replication: coverage moves by 1–2 percentage points from one MAP
#: fit to the next, far more than the binomial noise of 2,000 test points.
SEEDS = {False: 5, True: 10}
#: The seeds a claim whose test is still undecided on :data:`SEEDS` looks at once more.
MORE_SEEDS = {False: 10, True: 20}


def _generator(seed: int, index: int) -> np.random.Generator:
    """The ``index``-th stream of the base seed (the same for every number of seeds)."""
    return Context(seed=seed).rng("heteroscedastic-curvatures").spawn(index + 1)[index]


def _audit_inputs() -> str:
    """The in-run audits of what the Table-1 claims rest on (well under a second): the Laplace
    evidence that tunes λ is exact on a linear model, and the toy of eq. (18) is standardised
    on its training rows."""
    spread = _audits.evidence_on_linear_model()
    _audits.standardised_on_training_rows(
        heteroscedastic_toy(60, test_fraction=0.5, rng=0), "the toy of eq. (18)"
    )
    return (
        "Audited in the run: the Laplace evidence that tunes λ equals the closed-form evidence "
        f"of Bayesian linear regression up to a constant in λ (spread {spread:.1e}); inputs and "
        "targets are standardised on the training rows only (every fitted network's too)."
    )


#: Networks trained together as one batched ensemble (a divisor of every look of
#: :data:`SEEDS` and :data:`MORE_SEEDS`).
BLOCK = 5


@cached
def _block(seed: int, start: int) -> tuple[HeteroscedasticFit, ...]:
    """The MAP networks ``start`` … ``start + BLOCK − 1`` of the base seed, trained together
    (:func:`.experiments.network.fit_heteroscedastic_batch`), each from its own stream."""
    rngs = [_generator(seed, i) for i in range(start, start + BLOCK)]
    return tuple(fit_heteroscedastic_batch(rngs, n_train=500, n_test=2000))


@cached
def _fit(seed: int, index: int) -> HeteroscedasticFit:
    """The ``index``-th MAP network of the base seed, with 2,000 held-out test points."""
    return _block(seed, index - index % BLOCK)[index % BLOCK]


@cached
def _curvature(seed: int, index: int) -> CurvatureVariances:
    """λ by the evidence and v(x*) per curvature of the ``index``-th MAP network: the linear
    algebra, which the mutants of the SSLA and ASSLA densities reuse."""
    return curvature_variances(_fit(seed, index))


@cached
def _run(seed: int, index: int) -> CurvatureCoverage:
    fit = _fit(seed, index)
    _audits.standardised_on_training_rows(fit.data, f"fitted network {index}")
    return curvature_coverage(fit, curvature=_curvature(seed, index))


@cached
def _mv_block(seed: int, start: int) -> tuple[MeanVarianceFit, ...]:
    """The fitted mean + log-variance networks ``start`` … ``start + BLOCK − 1`` of the base
    seed, trained together (:func:`.experiments.mean_variance.fit_mean_variance_batch`); each
    has its own stream: its toy draw, initialisation and minibatch order."""
    datasets, rngs = [], []
    for index in range(start, start + BLOCK):
        rng = Context(seed=seed).rng("mean-variance-network").spawn(index + 1)[index]
        data_rng, init_rng, train_rng = spawn(rng, 3)
        datasets.append(heteroscedastic_toy(2500, test_fraction=2000 / 2500, rng=data_rng))
        rngs.append((init_rng, train_rng))
    return tuple(fit_mean_variance_batch(datasets, rngs=rngs))


@cached
def _mv_fit(seed: int, index: int) -> MeanVarianceFit:
    """The ``index``-th fitted mean + log-variance network (eq. 37) of the base seed: 500
    training and 2,000 test points."""
    return _mv_block(seed, index - index % BLOCK)[index % BLOCK]


@cached
def _mv_curvature(seed: int, index: int) -> MeanVarianceCurvature:
    """λ by the evidence, v(x*) per curvature and ASSLA's log-determinant ratio of the
    ``index``-th fitted mean + log-variance network: the costly linear algebra, which the
    mutants of the coverage scores reuse."""
    return la_curvature(_mv_fit(seed, index))


@cached
def _mv_run(seed: int, index: int) -> MeanVarianceCoverage:
    _audits.standardised_on_training_rows(
        _mv_fit(seed, index).data, f"fitted mean + log-variance network {index}"
    )
    return la_coverage(_mv_fit(seed, index), curvature=_mv_curvature(seed, index))


def _runs(seed: int, full: bool, n: int | None = None) -> tuple[CurvatureCoverage, ...]:
    """The first ``n`` (default :data:`SEEDS`) fitted networks of the base seed and their
    coverage under every curvature."""
    n = SEEDS[full] if n is None else n
    runs = []
    for i in range(n):
        step(i, n, "fitted networks")
        runs.append(_run(seed, i))
    step(n, n, "fitted networks")
    return tuple(runs)


def _pooled(runs, method: str, curvature: str) -> tuple[np.ndarray, int]:
    """Coverage per level pooled over seeds, and the number of test points."""
    n = sum(r.n_test for r in runs)
    cov = sum(r.coverage[method][curvature] * r.n_test for r in runs) / n
    return cov, n


def _command(name: str) -> str:
    return f"laplace-lab check --full --claim {PAPER}/{name}"


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
    kind=Kind.EXACT,
    setting=Setting.substitute(HOMOSCEDASTIC),
    mutants=(
        Mutant(
            "curvature-depends-on-y",
            "the new point's curvature grows with the residual ŷ − f̂ (as an observed "
            "information would), so the determinant term depends on ŷ",
            {assla_log_density_from_variance: _observed_curvature_assla},
            reuses=(_fit, _curvature),
        ),
    ),
)
def assla_identical(ctx: Context) -> Verdict:
    """Table 1, ASSLA columns: 76.0/68.0/60.0/56.0 under KFAC, DIAG and DENSE alike.

    An identity of eq. (17) with a Gaussian likelihood (the new point's Gauss–Newton term does
    not depend on ŷ), checked to roundoff on the normalised densities: it holds on any network
    with that likelihood, so a substitute network may decide it.
    """
    audited = _audit_inputs()
    runs = _runs(ctx.seed, ctx.full)
    covs = np.array([_pooled(runs, "ASSLA", c)[0] for c in CURVATURES])
    spread = float(np.max(covs.max(0) - covs.min(0)))
    density = max(r.density_spread["ASSLA"] for r in runs)
    la = np.array([_pooled(runs, "LA", c)[0] for c in CURVATURES])
    ok = spread == 0.0 and density < 1e-10
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        summary=f"ASSLA coverage spread across KFAC/DIAG/DENSE {spread:.3g}; normalised "
        f"densities differ by {density:.1e} of their peak",
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
            "columns are identical too. "
            f"{audited}"
        ),
        details={c: cov.tolist() for c, cov in zip(CURVATURES, covs, strict=True)},
    )


def _half_variance_scores(pred, y, *, levels=LEVELS, _scores=gaussian_scores):
    """LA's scores with the whole predictive variance halved."""
    return _scores(NormalPredictive(pred.mean, 0.5 * pred.var), y, levels=levels)


def _double_noise_scores(pred, y, *, levels=LEVELS, _scores=gaussian_scores):
    """LA's scores with the whole predictive variance σ0² + v doubled."""
    return _scores(NormalPredictive(pred.mean, 2.0 * pred.var), y, levels=levels)


@claim(
    paper=PAPER,
    name="table1-la-conservative",
    location="§5.1, Table 1 (LA columns); App. C.1 eq. (37), C.3",
    statement="The classical Laplace approximation exhibits conservative calibration: wide, "
    "risk-averse intervals that cover at least the nominal level (KFAC, DIAG and DENSE).",
    expected=Status.INCONCLUSIVE,
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(MEAN_VARIANCE),
    mutants=(
        Mutant(
            "doubled-predictive-variance",
            "LA's predictive variance σ̂²(x) + v counted twice",
            {gaussian_scores: _double_noise_scores},
            reuses=(_mv_fit, _mv_curvature),
            expect=Status.CONFIRMED,
        ),
        Mutant(
            "halved-predictive-variance",
            "LA's predictive variance σ̂²(x) + v halved (it under-covers: REFUTED)",
            {gaussian_scores: _half_variance_scores},
            reuses=(_mv_fit, _mv_curvature),
            expect=Status.REFUTED,
        ),
        Mutant(
            "evidence-prior-term-without-half",
            "the Laplace evidence that tunes λ with its prior term λ‖θ̂‖² in place of "
            "λ‖θ̂‖²/2 (caught by the audit against Bayesian linear regression's evidence)",
            {(SpectralLaplace, "log_evidence"): _mutants.log_evidence_without_half},
            expect=Status.ERROR,
        ),
    ),
)
def la_conservative(ctx: Context) -> Verdict:
    """§5.1: "The classical Laplace approximation exhibits conservative calibration,
    producing wide, risk-averse intervals" (Table 1, LA: 100/100/92/68 at 95/90/75/50% under
    KFAC, DIAG and DENSE).

    LA on the paper's mean + log-variance network (App. C.1 eq. 37, C.3's Gaussian NLL;
    :mod:`.experiments.mean_variance`): N(μ̂, σ̂²(x) + v(x)) with the GGN of the
    heteroscedastic likelihood. Superiority of coverage over the nominal level at every
    (curvature, level) pair, per fitted network, looked at sequentially.
    """
    audited = _audit_inputs()
    looks = (SEEDS[ctx.full], MORE_SEEDS[ctx.full])
    checks = [
        Check(
            f"LA {c} coverage − {100 * lv:g}%",
            lambda i, c=c, lv=lv: float(_mv_run(ctx.seed, i).coverage[c][LEVELS.index(lv)] - lv),
            0.0,
            +1,
        )
        for c in CURVATURES
        for lv in LEVELS
    ]
    d, results = decide(checks, looks=looks, command=_command("table1-la-conservative"))
    _audits.t_intervals(results)
    fits = max(r.estimate.n for r in results)
    runs = [_mv_run(ctx.seed, i) for i in range(fits)]
    cov = {c: np.mean([r.coverage[c] for r in runs], axis=0) for c in CURVATURES}
    plugin = np.mean([r.plugin for r in runs], axis=0)
    below = [r.check.label for r in results if r.outcome == "fails"]
    pct = "/".join(f"{100 * lv:g}" for lv in LEVELS)
    return Verdict(
        d.status,
        measured="; ".join(
            f"{c} " + "/".join(f"{100 * v:.1f}" for v in cov[c]) for c in CURVATURES
        ),
        expected="coverage above nominal at every (curvature, level)",
        tolerance="one-sided t over fitted networks, every pair (intersection–union)",
        decision=d,
        summary=d.summary,
        evidence=[
            f"{fits} fitted mean + log-variance networks (eq. 37) × {runs[0].n_test} test "
            f"points, λ = " + ", ".join(f"{r.prior_precision:g}" for r in runs) + " by the "
            f"evidence; mean σ̂²(x*) {np.mean([r.mean_noise_var for r in runs]):.3f}, mean "
            "v(x*) "
            + ", ".join(
                f"{c} {np.mean([r.mean_epistemic[c] for r in runs]):.4f}" for c in CURVATURES
            )
            + ".",
            f"LA coverage (%) at {pct}, mean over fits: "
            + "; ".join(f"{c} " + "/".join(f"{100 * v:.1f}" for v in cov[c]) for c in CURVATURES)
            + "; the MAP's own N(μ̂, σ̂²): "
            + "/".join(f"{100 * v:.1f}" for v in plugin)
            + ".",
            design_text(looks, "fitted networks"),
            "Below nominal at the look's level: " + (", ".join(below) or "none") + ".",
            "With the predicted variance the aleatoric part is calibrated by itself; LA adds "
            "the epistemic v, small against σ̂² at 500 points: the diagonal curvature, which "
            "ignores every correlation, inflates v and over-covers; the dense and KFAC ones "
            "stay near the nominal level. Table 1's 100% at 95% and 90% is not reached.",
            audited,
        ],
        details={
            r.check.label: {"values": list(r.estimate.values), "outcome": r.outcome}
            for r in results
        },
    )


#: The wide levels of the ASSLA claim.
WIDE = (0.95, 0.90)


def _wide_noise_assla(y, mu, log_var, log_det_ratio, *, _density=assla_log_density):
    """ASSLA with σ̂²(x*) counted twice."""
    return _density(y, mu, log_var + np.log(2.0), log_det_ratio)


def _nominal_assla(fit, *, _true=la_coverage, **kwargs):
    """ASSLA's coverage set to its nominal level on every fit (the effect set to zero)."""
    out = _true(fit, **kwargs)
    return dataclasses.replace(out, assla=np.asarray(LEVELS, dtype=float))


@claim(
    paper=PAPER,
    name="table1-assla-undercovers-wide-intervals",
    location="§5.1, Table 1 and its discussion; App. C.1 eq. (37), C.3",
    statement="ASSLA systematically underestimates uncertainty in wider intervals (coverage "
    "below the nominal 95% and 90%), a mild risk-seeking bias.",
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(MEAN_VARIANCE),
    mutants=(
        Mutant(
            "noise-counted-twice",
            "ASSLA with σ̂²(x*) counted twice (it over-covers: the reverse ordering, REFUTED)",
            {assla_log_density: _wide_noise_assla},
            reuses=(_mv_fit, _mv_curvature),
            expect=Status.REFUTED,
        ),
        Mutant(
            "coverage-at-nominal",
            "ASSLA's coverage equal to its nominal level on every fit (the effect set to zero)",
            {la_coverage: _nominal_assla},
            reuses=(_mv_fit, _mv_curvature),
            expect=Status.INCONCLUSIVE,
        ),
        Mutant(
            "standardised-on-all-rows",
            "inputs and targets standardised with the statistics of every row, test rows "
            "included (caught by the audit of the training rows)",
            {split_standardise: _mutants.standardise_on_all_rows},
            expect=Status.ERROR,
        ),
    ),
)
def assla_undercovers(ctx: Context) -> Verdict:
    """§5.1: ASSLA "systematically underestimates uncertainty in wider intervals, leading to
    a mild risk-seeking bias" (Table 1, ASSLA: 76.0 at 95%, 68.0 at 90%).

    ASSLA (eq. 17, dense GGN) on the paper's mean + log-variance network (App. C.1 eq. 37,
    :mod:`.experiments.mean_variance`), its density normalised on a grid. Superiority of the
    nominal level over its coverage at 95% and 90%, per fitted network, looked at
    sequentially.
    """
    audited = _audit_inputs()
    looks = (SEEDS[ctx.full], MORE_SEEDS[ctx.full])
    checks = [
        Check(
            f"ASSLA coverage − {100 * lv:g}%",
            lambda i, lv=lv: float(_mv_run(ctx.seed, i).assla[LEVELS.index(lv)] - lv),
            0.0,
            -1,
        )
        for lv in WIDE
    ]
    d, results = decide(
        checks, looks=looks, command=_command("table1-assla-undercovers-wide-intervals")
    )
    _audits.t_intervals(results)
    fits = max(r.estimate.n for r in results)
    runs = [_mv_run(ctx.seed, i) for i in range(fits)]
    cov = np.mean([r.assla for r in runs], axis=0)
    plugin = np.mean([r.plugin for r in runs], axis=0)
    la = np.mean([r.coverage["DENSE"] for r in runs], axis=0)
    pct = "/".join(f"{100 * lv:g}" for lv in LEVELS)
    return Verdict(
        d.status,
        measured="; ".join(f"{100 * lv:g}%: {100 * cov[LEVELS.index(lv)]:.1f}%" for lv in WIDE),
        expected="below 95% and 90%",
        tolerance="one-sided t over fitted networks at both wide levels (intersection–union)",
        decision=d,
        summary=d.summary,
        evidence=[
            f"{fits} fitted mean + log-variance networks (eq. 37) × {runs[0].n_test} test "
            "points, λ by the evidence. ASSLA coverage (%) at "
            + pct
            + ", mean over fits: "
            + "/".join(f"{100 * v:.1f}" for v in cov)
            + "; 90% coverage per fit "
            + "/".join(f"{100 * r.assla[LEVELS.index(0.90)]:.1f}" for r in runs)
            + ".",
            design_text(looks, "fitted networks"),
            "The new point's Gauss–Newton term J_*ᵀΛ_*J_* does not depend on ŷ, so eq. (17)'s "
            "½ log|Ω| − ½ log|Ω̃| is a constant in ŷ: normalised, ASSLA is the MAP's own "
            "N(μ̂, σ̂²(x*)) (its coverage "
            + "/".join(f"{100 * v:.1f}" for v in plugin)
            + ") and drops the epistemic variance that LA adds (LA DENSE "
            + "/".join(f"{100 * v:.1f}" for v in la)
            + ").",
            audited,
        ],
        details={"coverage": cov.tolist(), "fits": fits},
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
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(HOMOSCEDASTIC),
    mutants=(
        Mutant(
            "ssla-by-assla-formula",
            "SSLA evaluated with eq. (17) instead of eq. (12): identical for every curvature "
            "(the null)",
            {ssla_log_density_from_variance: _assla_as_ssla},
            reuses=(_fit, _curvature),
            expect=Status.INCONCLUSIVE,
        ),
    ),
)
def ssla_varies(ctx: Context) -> Verdict:
    """§5.1: "SSLA's uncertainty estimates vary depending on the covariance approximation and
    suffer from instability in calibration" (Table 1, SSLA at 95%: KFAC 88.0, DIAG 92.0, DENSE
    92.0).

    "Vary" is a difference of either sign between some two curvatures: per fitted network,
    the coverage difference of each pair averaged over the four levels, tested on both
    sides; some one of the six one-sided tests at α/6 confirms. A difference cannot be
    refuted this way (that would need an equivalence margin the paper does not give).
    """
    audited = _audit_inputs()
    runs = _runs(ctx.seed, ctx.full)
    covs = np.array([_pooled(runs, "SSLA", c)[0] for c in CURVATURES])
    spread = float(np.max(covs.max(0) - covs.min(0)))
    tests = []
    for a, b in (("DIAG", "DENSE"), ("KFAC", "DENSE"), ("DIAG", "KFAC")):
        diff = [float(np.mean(r.coverage["SSLA"][a] - r.coverage["SSLA"][b])) for r in runs]
        for side in (+1, -1):
            tests.append(decisions.test(f"SSLA coverage {a} − {b}", diff, side=side))
    d = decisions.superiority(
        tests, quantifier="any", command=_command("table1-ssla-varies-with-curvature")
    )
    return Verdict(
        d.status,
        measured=round(spread, 4),
        expected="some pair of curvatures differs",
        tolerance="one-sided t over fitted networks, some one of 6 at α/6",
        decision=d,
        summary=d.summary,
        evidence=[
            f"{_label(runs)}. {_table(runs, 'SSLA')}.",
            "In the linearised network SSLA normalises to N(f̂, σ0² + v) (linearized "
            "Laplace), and v depends on the curvature: the diagonal one ignores every "
            "correlation and inflates v. The paper attributes SSLA's variation to "
            "'instability'; here it is the curvature.",
            audited,
        ],
        details={c: cov.tolist() for c, cov in zip(CURVATURES, covs, strict=True)},
    )
