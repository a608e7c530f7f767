"""Claims of the Mauna Loa CO₂ experiment (Cinquin et al., arXiv:2407.13711, §4.1, Table 1,
App. B.2, Fig. C.9).

Set-up (:mod:`laplace_lab.paper_checks.fsp_laplace.experiments.mauna_loa`): monthly means of the
statsmodels Mauna Loa series 1958–2001 (the paper's NOAA series 1974–2024 is not shipped offline),
the first 70 % of the months train and the rest test; 2 × 50 tanh MLPs on (t, sin 2πt/T, cos
2πt/T), T one year; FSP-Laplace with Rasmussen & Williams's CO₂ covariance (marginal-likelihood
hyperparameters) and 100 context points on a regular grid; Laplace with the full GGN and an
evidence-optimised prior precision; the exact GP with the same prior. Quick mode: 3 training seeds,
300 L-BFGS evaluations; full mode: 10 seeds, 1,000 evaluations.

Scores: MSE in ppm² and the expected log-likelihood (ELL) per test month on the standardised
scale. Table 1's ELL values (thousands) are read as sums over the ≈ 180 test months of the
paper's series: the decisions use differences, which a per-point mean or a sum orders alike.
Decisions: paired differences over training seeds, one-sided Student-t tests at level 0.05
(:mod:`._real_data`, :func:`laplace_lab.paper_checks.verification.decisions.superiority`).
The substitute series is not the paper's: its GP forecasts far better (MSE 5.5 ppm² here,
35.7 in Table 1), so the two claims that compare a network with the GP of Table 1 are specific
numbers of the table measured on a substitute — a refutation here cannot refute them
(NOT_REPRODUCIBLE_HERE), a confirmation would still count.

- ``mauna-loa-fsp-beats-laplace``: Table 1, FSP-Laplace 8.99 vs Laplace 28.26 MSE and
  −6,015 vs −16,140 ELL — better on both;
- ``mauna-loa-fsp-beats-gp-mse``: FSP-Laplace 8.99 vs GP 35.66 MSE;
- ``mauna-loa-networks-underestimate-noise``: "all neural networks under-estimate the likelihood
  scale, which results in poorer scores than the GP".

References
----------
T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space Priors
for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711, §4.1
and App. B.2. C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning",
MIT Press 2006, §5.4.3.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.networks.fsp_training import ContextBox
from laplace_lab.paper_checks.fsp_laplace import _mutants as wrong
from laplace_lab.paper_checks.fsp_laplace._real_data import (
    ML_SEEDS,
    ML_STEPS,
    co2_fsp_network,
    co2_gp,
    co2_laplace_network,
    co2_scores,
    difference,
    redecided,
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
)

PAPER = "fsp-laplace"
NETWORKS = ("FSP-Laplace", "Laplace")
#: What differs from Table 1's set-up.
SUBSTITUTE = (
    "statsmodels' monthly Mauna Loa series 1958–2001 with its last 30 % as the test period, "
    "instead of NOAA's 1974–2024 series and the paper's forecast horizon (the GP's MSE is "
    "5.5 ppm² here against 35.7 in Table 1)"
)
#: Why the recorded full-mode run of a Table 1 comparison with the GP does not count.
NOT_COUNTED = (
    "a specific number of Table 1 measured on a substitute series, at any scale: the "
    "full-mode run cannot refute it either"
)


def _command(name: str) -> str:
    return f"laplace-lab check --full --claim {PAPER}/{name}"


def _setup(full: bool) -> str:
    return (
        f"Mauna Loa monthly CO₂ 1958–2001 (statsmodels), first 70 % of the months train; "
        f"{ML_SEEDS[full]} training seeds, {ML_STEPS[full]} L-BFGS evaluations per network; "
        "decision: one-sided Student-t test at level 0.05 of the mean paired difference over "
        "seeds, fixed before measuring."
    )


def _table(ctx: Context, metric: str, methods: tuple[str, ...], unit: str = "") -> str:
    vals = {m: co2_scores(m, metric, ctx.full, ctx.seed) for m in methods}
    return f"{metric} per seed: " + "; ".join(
        f"{m} " + ", ".join(f"{v:.4g}" for v in vals[m]) + unit for m in methods
    )


def _null() -> Mutant:
    return Mutant(
        "no-effect",
        "every method scored as FSP-Laplace (and σ as its own test-optimal value): every "
        "difference the claim tests is zero",
        {co2_scores: wrong.co2_scores_without_effect},
        expect=Status.INCONCLUSIVE,
        reuses=(co2_gp, co2_fsp_network, co2_laplace_network),
    )


def beats_laplace_decision(mse, ell, *, command: str = "") -> decisions.Decision:
    """``mauna-loa-fsp-beats-laplace``: Laplace − FSP MSE > 0 and FSP − Laplace ELL > 0 (per
    seed values), both significant."""
    return decisions.superiority(
        [
            decisions.test("MSE Laplace − FSP (ppm²)", mse),
            decisions.test("ELL per month FSP − Laplace", ell),
        ],
        command=command,
    )


@claim(
    paper=PAPER,
    name="mauna-loa-fsp-beats-laplace",
    location="§4.1 'Mauna Loa dataset', Table 1",
    statement=(
        "On Mauna Loa CO₂, FSP-Laplace (informative prior and periodic features) has a lower "
        "MSE (8.99 vs 28.26) and a higher expected log-likelihood (−6,015 vs −16,140) than the "
        "linearised Laplace with the same periodic features."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(SUBSTITUTE),
    expected=Status.CONFIRMED,
    mutants=(
        Mutant(
            "context-box-not-widened",
            "FSP-Laplace's context grid confined to the training months (the box of App. B.2 "
            "without its widening), so the prior constrains nothing in the test period",
            {(ContextBox, "around"): classmethod(wrong.unwidened_box)},
            # no better than the Laplace, and not significantly worse at three seeds
            expect=Status.INCONCLUSIVE,
            reuses=(co2_gp, co2_laplace_network),  # the Laplace has no context points
        ),
        _null(),
    ),
)
def _fsp_beats_laplace(ctx: Context) -> Verdict:
    """§4.1: "incorporating prior beliefs both via an informative prior and periodic features
    in FSP-LAPLACE significantly reduces the mean squared error (MSE) compared to Laplace";
    Table 1 caption: "[it] improves performance over the standard Laplace" (MSE 8.99 vs
    28.26, ELL −6,015 vs −16,140). The ordering is judged, not the numbers of the table."""
    mse = difference(
        *(co2_scores(m, "mse", ctx.full, ctx.seed) for m in ("Laplace", "FSP-Laplace"))
    )
    ell = difference(
        *(co2_scores(m, "ell", ctx.full, ctx.seed) for m in ("FSP-Laplace", "Laplace"))
    )
    name = "mauna-loa-fsp-beats-laplace"
    d = beats_laplace_decision(mse.values, ell.values, command=_command(name))
    recorded, full = (), []
    if not ctx.full:
        recorded, full, _ = redecided(
            name,
            lambda got: beats_laplace_decision(
                got["mse_laplace_minus_fsp"]["values"], got["ell_fsp_minus_laplace"]["values"]
            ),
            why="the paper-scale run: 10 training seeds and 1,000 L-BFGS evaluations",
        )
    return Verdict(
        d.status,
        measured={"MSE Laplace − FSP (ppm²)": mse.text(), "ELL FSP − Laplace": ell.text()},
        expected="both differences > 0, one-sided t at level 0.05",
        tolerance="paired over training seeds",
        summary=f"MSE Laplace − FSP {mse.text(' ppm²')}, ELL per month FSP − Laplace {ell.text()}"
        + ("" if d.status is Status.CONFIRMED else f": {d.status.value.lower()}"),
        evidence=[
            _setup(ctx.full),
            _table(ctx, "mse", NETWORKS, " ppm²"),
            _table(ctx, "ell", NETWORKS),
            "Laplace's MAP extrapolates the trend poorly; FSP-Laplace's GP prior at the context "
            "points beyond the training months holds it to the prior's trend.",
            *full,
        ],
        recorded=recorded,
        details={"mse_laplace_minus_fsp": mse._asdict(), "ell_fsp_minus_laplace": ell._asdict()},
        decision=d,
    )


def beats_gp_decision(values, *, command: str = "") -> decisions.Decision:
    """``mauna-loa-fsp-beats-gp-mse``: GP − FSP MSE > 0 (per seed values), significant."""
    return decisions.superiority(decisions.test("MSE GP − FSP (ppm²)", values), command=command)


@claim(
    paper=PAPER,
    name="mauna-loa-fsp-beats-gp-mse",
    location="§4.1 'Mauna Loa dataset', Table 1",
    statement=(
        "On Mauna Loa CO₂, FSP-Laplace has a lower MSE than the GP with the same prior "
        "(8.99 vs 35.66)."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(SUBSTITUTE, specific=True),
    expected=Status.NOT_REPRODUCIBLE_HERE,
    mutants=(_null(),),
)
def _fsp_beats_gp(ctx: Context) -> Verdict:
    """§4.1: FSP-Laplace "significantly reduces the mean squared error (MSE) compared to
    Laplace and GP baselines" (Table 1: 8.99 against the GP's 35.66). The GP's number is
    the paper's series': on the substitute series the GP forecasts six times better, so a
    refutation here is NOT_REPRODUCIBLE_HERE."""
    fsp = co2_scores("FSP-Laplace", "mse", ctx.full, ctx.seed)
    gps = co2_scores("GP", "mse", ctx.full, ctx.seed)
    gp = float(np.mean(gps))
    d = difference(gps, fsp)
    name = "mauna-loa-fsp-beats-gp-mse"
    decision = beats_gp_decision(d.values, command=_command(name))
    recorded, full = (), []
    if not ctx.full:
        recorded, full, _ = redecided(
            name,
            lambda got: beats_gp_decision(got["mse_gp_minus_fsp"]["values"]),
            counts=False,
            why=NOT_COUNTED,
        )
    return Verdict(
        decision.status,
        measured={"MSE GP − FSP (ppm²)": d.text(), "MSE GP (ppm²)": round(gp, 3)},
        expected="GP − FSP-Laplace MSE > 0, one-sided t at level 0.05",
        tolerance="paired over training seeds",
        summary=(
            f"MSE FSP-Laplace {gp - d.mean:.3g} ppm² vs GP {gp:.3g} ppm² "
            f"(GP − FSP {d.text(' ppm²')}; Table 1's GP: 35.66)"
        ),
        evidence=[
            _setup(ctx.full),
            _table(ctx, "mse", ("FSP-Laplace",), " ppm²") + f"; GP {gp:.4g} ppm²",
            "The GP is deterministic given the data: the standard error is that of the networks.",
            f"Setting: {SUBSTITUTE}.",
            *full,
        ],
        recorded=recorded,
        details={"mse_gp_minus_fsp": d._asdict(), "mse_gp": gp},
        decision=decision,
    )


def underestimate_decision(per: dict, *, command: str = "") -> decisions.Decision:
    """``mauna-loa-networks-underestimate-noise``: for every network, test-optimal σ − learned
    σ > 0 and GP − network ELL > 0 (``per``: network → {"under": values, "below_gp":
    values})."""
    tests = []
    for m, v in per.items():
        tests.append(decisions.test(f"{m}: test-optimal σ − learned σ", v["under"]))
        tests.append(decisions.test(f"{m}: GP − network ELL per month", v["below_gp"]))
    return decisions.superiority(tests, command=command)


@claim(
    paper=PAPER,
    name="mauna-loa-networks-underestimate-noise",
    location="§4.1 'Mauna Loa dataset', Table 1",
    statement=(
        "In terms of expected log-likelihood, all neural networks under-estimate the likelihood "
        "scale, which results in poorer scores than the GP."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(SUBSTITUTE, specific=True),
    expected=Status.NOT_REPRODUCIBLE_HERE,
    mutants=(_null(),),
)
def _networks_underestimate(ctx: Context) -> Verdict:
    """§4.1: "in terms of expected log-likelihood, all neural networks under-estimate the
    likelihood scale, which results in poorer scores than the GP" — Table 1's ordering of
    the networks below the GP, a GP that forecasts six times better on the substitute
    series."""
    gps = co2_scores("GP", "ell", ctx.full, ctx.seed)
    gp = float(np.mean(gps))
    rows, per = [], {}
    for m in NETWORKS:
        sigma = co2_scores(m, "noise_std", ctx.full, ctx.seed)
        need = co2_scores(m, "ell_optimal_noise_std", ctx.full, ctx.seed)
        under = difference(need, sigma)
        below = difference(gps, co2_scores(m, "ell", ctx.full, ctx.seed))
        per[m] = {"under": under._asdict(), "below_gp": below._asdict()}
        rows.append(
            f"{m}: test-optimal σ − learned σ {under.text()} (standardised), "
            f"GP − network ELL {below.text()}"
        )
    name = "mauna-loa-networks-underestimate-noise"
    d = underestimate_decision(
        {m: {k: v[k]["values"] for k in ("under", "below_gp")} for m, v in per.items()},
        command=_command(name),
    )
    recorded, full = (), []
    if not ctx.full:
        recorded, full, _ = redecided(
            name,
            lambda got: underestimate_decision(
                {m: {k: got[m][k]["values"] for k in ("under", "below_gp")} for m in NETWORKS}
            ),
            counts=False,
            why=NOT_COUNTED,
        )
    return Verdict(
        d.status,
        measured={
            m: f"σ gap {v['under']['mean']:+.3g}, GP − ELL {v['below_gp']['mean']:+.3g}"
            for m, v in per.items()
        },
        expected="every network: learned σ below the test-optimal σ, and ELL below the GP's",
        tolerance="one-sided t at level 0.05 over training seeds, every network and statistic",
        summary=f"GP ELL {gp:.3g} per month; " + d.summary,
        evidence=[
            _setup(ctx.full),
            "Under-estimated likelihood scale: the learned σ is below the σ that maximises the "
            "network's own test ELL, √mean((y − μ)² + Var f).",
            *rows,
            _table(ctx, "noise_std", NETWORKS),
            _table(ctx, "ell", NETWORKS) + f"; GP {gp:.4g}",
            "The GP's own σ (marginal likelihood on the training months) is "
            f"{co2_scores('GP', 'noise_std', ctx.full, ctx.seed)[0]:.3g}, its test-optimal σ "
            f"{co2_scores('GP', 'ell_optimal_noise_std', ctx.full, ctx.seed)[0]:.3g} "
            "(standardised): a GP whose σ is further below its test-optimal value than a "
            "network's can score below that network.",
            f"Setting: {SUBSTITUTE}.",
            *full,
        ],
        recorded=recorded,
        details={"gp_ell": gp, **per},
        decision=d,
    )
