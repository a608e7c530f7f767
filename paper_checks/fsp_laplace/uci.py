"""Claims of the UCI regression experiment (Cinquin et al., arXiv:2407.13711, App. B.2 and
App. C "Regression with UCI datasets", Table C.1).

Set-up (:mod:`laplace_lab.paper_checks.fsp_laplace.experiments.uci`): Boston housing and concrete
(the Table C.1 sets shipped offline), 5-fold cross-validation, 20 % of the training folds for early
stopping (App. C; App. B.2 says 10 %), 2 × 50 tanh MLPs with a learned noise scale; FSP-Laplace
with an RBF prior of marginal-likelihood hyperparameters and context points drawn uniformly from
the widened box of App. B.2; Laplace with the full GGN and an evidence-optimised prior precision.
Quick mode: three test folds of Boston; full mode: all five folds of both sets. Every fold
audits, in the run, that the standardised training rows have mean 0 and standard deviation 1
(the scaler fitted on them alone) and that the context box lies within the training inputs'
widened box (validation and test inputs kept out of it), and that the evidence the Laplace's
prior precision maximises is exact on a linear model; any failing gives ERROR
(:mod:`laplace_lab.paper_checks.fsp_laplace.experiments.audits`).

- ``uci-fsp-beats-laplace-ell`` (superiority): "our method is noticeably more accurate than
  the Laplace" (Table C.1: Boston −0.641 vs −0.733, concrete −0.352 vs −0.538 expected
  log-likelihood per test point) — the mean over test folds of the paired difference, one-sided
  t at level 0.05 on every data set (:mod:`._real_data`).

- ``uci-fsp-ood-near-laplace`` (equivalence, non-inferiority): "FSP-Laplace ... is almost as
  accurate as the Laplace approximation" at out-of-distribution detection with a single
  threshold on the predictive uncertainty — the mean paired accuracy difference at most 0.02
  below on every data set, over test folds of repeated cross-validations drawn by the
  sequential design of :mod:`laplace_lab.paper_checks.verification.replicates` (looked at
  after the fold counts of :data:`OOD_LOOKS` while the interval contains −0.02) and decided by
  the non-inferiority rule of
  :func:`laplace_lab.paper_checks.verification.decisions.equivalence` at the level of one
  look. The paper's out-of-distribution
  inputs (the song data set) are not shipped offline; the first d breast-cancer features
  stand in
  (:func:`laplace_lab.paper_checks.fsp_laplace.experiments.uci.ood_inputs`).

References
----------
T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space Priors
for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711,
App. B.2, App. C and Table C.1.
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.networks.fsp_laplace import linearized_log_evidence
from laplace_lab.paper_checks.fsp_laplace import _mutants as wrong
from laplace_lab.paper_checks.fsp_laplace._real_data import (
    REPLICATED_RECORD,
    UCI_RUNS,
    difference,
    redecided,
    uci_fold_scores,
    uci_replicate,
    uci_scores,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.uci import (
    context_box,
    ood_inputs,
    standardise_split,
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
from laplace_lab.paper_checks.verification.replicates import (
    Check,
    Result,
    conjunction,
    design_text,
    look_level,
)

PAPER = "fsp-laplace"
#: Table C.1's expected log-likelihoods (FSP-Laplace, Laplace, MAP, GP) of the sets run here.
TABLE_C1 = {
    "boston": (-0.641, -0.733, -0.908, -1.136),
    "concrete": (-0.352, -0.538, -0.199, -0.766),
}
#: "Almost as accurate": at most 0.02 below the Laplace — two points of accuracy, the size of
#: the larger standard errors of the out-of-distribution columns of Table C.1 (0.015–0.029 for
#: FSP-Laplace and Laplace), where the paper's mean gap over its 11 sets is +0.002. This margin
#: was fixed after a quick-mode gap on Boston (−0.043 ± 0.027) had been seen, so the verdict
#: also states the margins at which it would hold and fail (:func:`margin_range`) beside the
#: paper's own per-set gaps (:data:`TABLE_C1_OOD`).
OOD_MARGIN = 0.02
#: Replicates of the out-of-distribution gap — test folds of repeated 5-fold cross-validations,
#: the first repetition shared with ``uci-fsp-beats-laplace-ell`` — at which the t interval is
#: looked at (quick: within one cross-validation; full: up to eight of them).
OOD_LOOKS = {False: (3, 4, 5), True: (5, 10, 20, 40)}

#: Table C.1's out-of-distribution accuracies (FSP-Laplace, Laplace) on all 11 data sets: the
#: gaps the authors summarise as "almost as accurate" (their mean rank 1.818 vs 1.727).
TABLE_C1_OOD = {
    "boston": (0.923, 0.913),
    "concrete": (0.914, 0.859),
    "energy": (1.000, 1.000),
    "kin8nm": (0.626, 0.609),
    "navigator": (1.000, 1.000),
    "power": (0.818, 0.821),
    "protein": (0.917, 0.992),
    "wine": (0.591, 0.761),
    "yacht": (0.973, 0.851),
    "wave": (0.912, 0.810),
    "denmark": (0.677, 0.711),
}


def margin_range(results: tuple[Result, ...]) -> tuple[float, float]:
    """(m_R, m_C) at the replicates drawn: the claim is REFUTED for every margin below m_R
    (some data set's whole interval lies below −margin), CONFIRMED for every margin of at
    least m_C (every data set's whole interval lies at or above −margin), inconclusive
    between."""
    refuted_below = max(0.0, *(-r.estimate.high for r in results))
    confirmed_from = max(0.0, *(-r.estimate.low for r in results))
    return refuted_below, confirmed_from


def _paper_gaps() -> str:
    gaps = {n: f - lap for n, (f, lap) in TABLE_C1_OOD.items()}
    below = [n for n, g in gaps.items() if g < -OOD_MARGIN]
    return (
        "Table C.1's own FSP − Laplace gaps: "
        + ", ".join(f"{n} {g:+.3f}" for n, g in gaps.items())
        + f" (mean {np.mean(list(gaps.values())):+.3f}); {len(below)} of {len(gaps)} sets "
        f"({', '.join(below)}) are more than {OOD_MARGIN} below, so a per-set reading at this "
        "margin is stricter than the paper's own use of 'almost as accurate' (its mean rank)."
    )


def _row(name: str, s: dict) -> str:
    mean = {m: float(np.mean(v["ell"])) for m, v in s.items()}
    ood = {m: float(np.mean(v["ood_accuracy"])) for m, v in s.items() if "ood_accuracy" in v}
    paper = dict(zip(("FSP-Laplace", "Laplace", "MAP", "GP"), TABLE_C1[name], strict=True))
    return (
        f"{name}: ELL per test point "
        + ", ".join(
            f"{m} {v:.3f} (paper {paper[m]})" if m in paper else f"{m} {v:.3f}"
            for m, v in mean.items()
        )
        + "; OOD accuracy "
        + ", ".join(f"{m} {v:.3f}" for m, v in ood.items())
    )


def _per_fold(diff: dict) -> str:
    return "Per fold FSP − Laplace: " + "; ".join(
        f"{n} " + ", ".join(f"{v:+.3f}" for v in d.values) for n, d in diff.items()
    )


def _command(name: str) -> str:
    return f"laplace-lab check --full --claim {PAPER}/{name}"


#: The ELL difference FSP − Laplace per test point that "noticeably more accurate" must
#: exceed: any improvement, tested one-sided at level 0.05 (fixed before measuring).
ELL_BETTER_BY = 0.0


def ell_decision(diffs: dict[str, list[float]], *, command: str = "") -> decisions.Decision:
    """``uci-fsp-beats-laplace-ell``: per data set, the paired ELL difference FSP − Laplace
    over test folds (``diffs``: name → values) significantly above :data:`ELL_BETTER_BY`, on
    every data set."""
    by = sys.modules[__name__].ELL_BETTER_BY
    return decisions.superiority(
        [
            decisions.test(f"{n}: ELL per test point FSP − Laplace", v, threshold=by)
            for n, v in diffs.items()
        ],
        command=command,
    )


@claim(
    paper=PAPER,
    name="uci-fsp-beats-laplace-ell",
    location="App. C 'Regression with UCI datasets', Table C.1",
    statement=(
        "On UCI regression, FSP-Laplace is noticeably more accurate than the Laplace in "
        "expected log-likelihood (Boston −0.641 vs −0.733, concrete −0.352 vs −0.538)."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(
        "two of the eleven Table C.1 sets (Boston, concrete; quick mode: three test folds of "
        "Boston), full-GGN Laplace, 20 % of the training folds for early stopping"
    ),
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "not-worse-read-as-better",
            "'noticeably more accurate' read as 'not worse by more than 1 nat per test point' "
            "(the FSP − Laplace ELL difference above −1)",
            {(sys.modules[__name__], "ELL_BETTER_BY"): -1.0},
            expect=Status.CONFIRMED,
            reuses=(uci_fold_scores,),
        ),
        Mutant(
            "scaler-fitted-on-all-rows",
            "inputs and targets standardised with the mean and standard deviation of every "
            "row, test rows included (the in-run audit must report it)",
            {standardise_split: wrong.standardise_on_all_rows},
            expect=Status.ERROR,
        ),
        Mutant(
            "context-box-over-all-splits",
            "the context points drawn from the box of the training, validation and test "
            "inputs together (the in-run audit must report it)",
            {context_box: wrong.context_box_over_all_splits},
            expect=Status.ERROR,
        ),
        Mutant(
            "evidence-without-occam-factor",
            "the Laplace baseline's prior precision chosen by an evidence without its "
            "log-determinant terms (the in-run audit must report it)",
            {linearized_log_evidence: wrong.evidence_without_log_determinant},
            expect=Status.ERROR,
        ),
    ),
)
def _fsp_beats_laplace(ctx: Context) -> Verdict:
    """App. C: "our method is noticeably more accurate than the Laplace" in expected
    log-likelihood (Table C.1)."""
    names, folds = UCI_RUNS[ctx.full]
    name = "uci-fsp-beats-laplace-ell"
    scores = {n: uci_scores(n, ctx.full, ctx.seed) for n in names}
    diff = {n: difference(s["FSP-Laplace"]["ell"], s["Laplace"]["ell"]) for n, s in scores.items()}
    d = ell_decision({n: v.values for n, v in diff.items()}, command=_command(name))
    recorded, full = (), []
    if not ctx.full:
        recorded, full, _ = redecided(
            name,
            lambda got: ell_decision({n: got[n]["diff"]["values"] for n in got}),
            why="the paper-scale run: Boston and concrete, all 5 test folds",
        )
    return Verdict(
        d.status,
        measured={f"{n}: ELL FSP − Laplace": v.text() for n, v in diff.items()},
        expected="FSP − Laplace ELL > 0, one-sided t at level 0.05, on every data set",
        tolerance="paired over test folds",
        summary="ELL per test point FSP − Laplace: "
        + ", ".join(f"{n} {v.text()}" for n, v in diff.items())
        + ("" if d.status is Status.CONFIRMED else f": {d.status.value.lower()}"),
        evidence=[
            f"{', '.join(names)}; test folds {folds} of one 5-fold cross-validation; 20 % of "
            "the training folds stop Adam early (validation loss, every 25 steps, patience 4).",
            "Decision fixed before measuring: one-sided Student-t test at level 0.05 of the "
            "mean paired difference over the test folds, on every data set.",
            *(_row(n, s) for n, s in scores.items()),
            _per_fold(diff),
            "Out of distribution: the first d breast-cancer features (scikit-learn), each "
            "standardised, as many rows as the test fold; accuracy of the best single threshold "
            "on Var f(x*) (0.5 is chance).",
            *full,
        ],
        recorded=recorded,
        details={n: {"diff": v._asdict(), "scores": scores[n]} for n, v in diff.items()},
        decision=d,
    )


def ood_gap(name: str, full: bool, seed: int, i: int) -> float:
    """FSP-Laplace's out-of-distribution accuracy minus the Laplace's on replicate i (test fold
    i mod 5 of cross-validation repetition ⌊i / 5⌋)."""
    s = uci_replicate(name, full, seed, i)
    return s["FSP-Laplace"]["ood_accuracy"] - s["Laplace"]["ood_accuracy"]


#: Where the margin of ``uci-fsp-ood-near-laplace`` comes from.
OOD_SOURCE = (
    "0.02 accuracy: the larger standard errors of the out-of-distribution columns of Table "
    "C.1 (0.015–0.029 for FSP-Laplace and Laplace); fixed after a quick-mode Boston gap of "
    "−0.043 ± 0.027 had been seen, so the verdict also states the margins at which it would "
    "hold and fail"
)


def ood_alpha(full: bool) -> float:
    """The one-sided level of one look of the sequential design of :data:`OOD_LOOKS`."""
    return (1.0 - look_level(OOD_LOOKS[full])) / 2.0


def ood_decision(
    gaps: dict[str, tuple[float, ...]], *, margin: float, alpha: float, command: str = ""
) -> decisions.Decision:
    """``uci-fsp-ood-near-laplace``: non-inferiority of FSP-Laplace's out-of-distribution
    accuracy against the Laplace's (``gaps``: label → per-fold FSP − Laplace), margin
    ``margin``, on every data set."""
    return decisions.equivalence(
        [decisions.test(label, v, threshold=0.0) for label, v in gaps.items()],
        margin=margin,
        source=OOD_SOURCE,
        alpha=alpha,
        side=+1,
        command=command,
    )


@claim(
    paper=PAPER,
    name="uci-fsp-ood-near-laplace",
    location="App. C 'Out-of-distribution detection on tabular data', Table C.1",
    statement=(
        "On tabular regression data FSP-Laplace detects out-of-distribution inputs with a "
        "single threshold on its predictive uncertainty almost as accurately as the Laplace "
        "(Table C.1: Boston 0.923 vs 0.913, concrete 0.914 vs 0.859)."
    ),
    kind=Kind.EQUIVALENCE,
    setting=Setting.substitute(
        "breast-cancer features (scikit-learn) as the out-of-distribution inputs instead of "
        "the song data set; two of the eleven Table C.1 sets (quick mode: Boston only)"
    ),
    margin=OOD_SOURCE,
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "ood-rows-not-standardised",
            "the out-of-distribution rows on their raw feature scales: their scale alone "
            "gives them away, to FSP-Laplace and the Laplace alike",
            {ood_inputs: wrong.ood_inputs_unstandardised},
            expect=Status.CONFIRMED,
        ),
    ),
)
def _ood_near_laplace(ctx: Context) -> Verdict:
    """App. C: FSP-Laplace "is almost as accurate as the Laplace approximation" at detecting
    out-of-distribution inputs (Table C.1)."""
    names, _ = UCI_RUNS[ctx.full]
    margin = sys.modules[__name__].OOD_MARGIN
    name = "uci-fsp-ood-near-laplace"
    checks = [
        Check(
            f"{n}: OOD accuracy FSP − Laplace",
            lambda i, n=n: ood_gap(n, ctx.full, ctx.seed, i),
            -margin,
            +1,
        )
        for n in names
    ]
    _, results = conjunction(checks, looks=OOD_LOOKS[ctx.full])
    d = ood_decision(
        {r.check.label: r.estimate.values for r in results},
        margin=margin,
        alpha=ood_alpha(ctx.full),
        command=_command(name),
    )
    status = d.status
    refuted_below, confirmed_from = margin_range(results)
    n = max(r.estimate.n for r in results)
    scores = {
        r.check.label.split(":")[0]: [
            uci_replicate(r.check.label.split(":")[0], ctx.full, ctx.seed, i)
            for i in range(r.estimate.n)
        ]
        for r in results
    }
    recorded, full = (), []
    if not ctx.full:
        replicated, full_rep, rep_d = redecided(
            name,
            lambda got: ood_decision(
                {label: tuple(v["values"]) for label, v in got.items()},
                margin=OOD_MARGIN,
                alpha=ood_alpha(True),
            ),
            record=REPLICATED_RECORD,
            why=(
                "of the two recorded full-mode runs this one counts: the sequential design's "
                "full looks drew 40 test folds of eight repeated cross-validations of Boston "
                "(its gap decided before concrete was reached), against 5 folds of one "
                "cross-validation per set in the real-data run"
            ),
        )
        single, full_single, _ = redecided(
            name,
            lambda got: ood_decision(
                {f"{n}: OOD accuracy FSP − Laplace": tuple(v["values"]) for n, v in got.items()},
                margin=OOD_MARGIN,
                alpha=decisions.ALPHA,
            ),
            counts=False,
            why=(
                "5 folds of one cross-validation per set (Boston, concrete), one look at level "
                "0.05; the replicated run with 40 folds counts"
            ),
        )
        recorded, full = (*replicated, *single), [*full_rep, *full_single]
        note = f" (full mode, recorded: {rep_d.status.value})"
    else:
        note = ""
    if status is Status.INCONCLUSIVE:
        e = results[0].estimate
        summary = (
            f"inconclusive at {n} test folds{note}: OOD accuracy FSP − Laplace "
            f"{e.mean:+.3g}, interval [{e.low:+.3g}, {e.high:+.3g}] contains −{margin:g}"
        )
    else:
        summary = "OOD accuracy FSP − Laplace: " + ", ".join(
            f"{r.check.label.split(':')[0]} {r.estimate.text('+.3g')}" for r in results
        )
        if status is Status.REFUTED:
            summary += f"; more than {margin} below"
    return Verdict(
        status,
        measured={r.check.label: r.estimate.text("+.3g") for r in results},
        expected=f"FSP − Laplace OOD accuracy ≥ −{margin}",
        tolerance=(
            f"non-inferiority at the margin {margin}, one-sided t of the mean paired difference "
            "over test folds at the level of one look of the sequential design"
        ),
        summary=summary,
        evidence=[
            f"{', '.join(names)}; test folds of repeated 5-fold cross-validations (the first "
            "repetition that of uci-fsp-beats-laplace-ell), 20 % of the training folds for "
            "early stopping.",
            design_text(OOD_LOOKS[ctx.full], "test folds"),
            "In distribution: the test fold; out of distribution: as many rows of the first d "
            "breast-cancer features (scikit-learn), each standardised on its own — the song "
            "data set of the paper (Malinin et al.'s set-up) is not shipped offline.",
            "Accuracy of the best single threshold 'out iff Var f(x*) > t' on the pooled "
            "inputs (a decision stump; 0.5 is chance).",
            f"'Almost as accurate': at most {margin} below the Laplace's accuracy — the "
            "paper's two sets show FSP-Laplace 0.010 and 0.055 above the Laplace, and its "
            "mean over the 11 sets of Table C.1 is 0.002 above.",
            *(r.text("+.3g") for r in results),
            f"At these folds: REFUTED for every margin below {refuted_below:.3f}, CONFIRMED "
            f"for every margin of at least {confirmed_from:.3f}, inconclusive between (the "
            f"margin {margin} was fixed after a quick-mode Boston gap of −0.043 ± 0.027 had "
            "been seen).",
            _paper_gaps(),
            *(_row(n, _by_method(v)) for n, v in scores.items()),
            "Per fold FSP − Laplace: "
            + "; ".join(
                f"{r.check.label.split(':')[0]} "
                + ", ".join(f"{v:+.3f}" for v in r.estimate.values)
                for r in results
            ),
            *full,
        ],
        recorded=recorded,
        details={
            **{
                r.check.label: {"values": r.estimate.values, "outcome": r.outcome} for r in results
            },
            "margin_range": [refuted_below, confirmed_from],
        },
        decision=d,
    )


def _by_method(folds: list[dict]) -> dict[str, dict[str, list[float]]]:
    """method → metric → values over ``folds`` (outputs of :func:`uci_fold_scores`)."""
    out: dict[str, dict[str, list[float]]] = {}
    for f in folds:
        for method, sc in f.items():
            for metric, value in sc.items():
                out.setdefault(method, {}).setdefault(metric, []).append(value)
    return out
