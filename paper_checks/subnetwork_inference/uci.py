"""Subnetwork inference in large models vs full inference in small ones (Daxberger et al.,
"Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.2, Fig. 3), run
by :func:`laplace_lab.paper_checks.subnetwork_inference.experiments.uci.uci_split` (training,
the posteriors that need no subnetwork prior, then the subnetworks with λ_S = λ·S/D, each
cached apart) on the UCI sets that ship offline: Boston housing (quick mode:
16 splits, at most 300 epochs) and concrete (full mode: 10 splits each, at most 1,000 epochs).
With 150 epochs the log-likelihood comparison is already inconclusive: the quick budget is the
smallest that decides it. The paper's wine, kin8nm and protein sets (and their "gap" splits)
are not installed here.

The log-likelihood comparison replicates at the level of the split: every split trains its own
four networks, so the test points of one split share one draw of the networks and their
per-point differences are not independent (a single test point of one split can move that
split's mean by several nats). The replicated statistic is a split's mean test
log-likelihood, compared by a paired one-sided t-test across the splits (of both data sets in
full mode; :mod:`laplace_lab.paper_checks.subnetwork_inference._paired`), decided by the
superiority rule over the three network sizes (every one at 5% confirms, one reversed at
5%/3 refutes). With 8 Boston splits the test leaves some base seeds undecided (one split
whose far-off test point costs the subnetwork tens of nats widens the spread); with 16 every
base seed 0–4 is decided with its largest p-value at about half the level. The variance claim
reads the first 8 of the 16 splits.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.networks.data import split_standardise
from laplace_lab.paper_checks.subnetwork_inference import _mutants
from laplace_lab.paper_checks.subnetwork_inference._paired import (
    decision_summary,
    one_sided_p,
    paired_test,
)
from laplace_lab.paper_checks.subnetwork_inference.experiments.toy_regression import (
    subnetwork_prior_precision,
)
from laplace_lab.paper_checks.subnetwork_inference.experiments.uci import (
    ARCHITECTURES,
    FullPosteriors,
    TrainedSplit,
    UCISplit,
    full_posteriors,
    subnetwork_posteriors,
    train_splits,
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
    require,
    step,
)

PAPER = "subnetwork-inference"
SMALLER = tuple(ARCHITECTURES)[:-1]
LARGEST = tuple(ARCHITECTURES)[-1]
#: What differs from §6.2's benchmark.
UCI_SETTING = Setting.substitute(
    "UCI Boston housing (quick mode; Boston and concrete in full mode) instead of wine, kin8nm "
    "and protein and their gap splits, which are not installed; 90/10 random splits, "
    "fewer epochs in quick mode; the four architectures and the selection rule as in §6.2"
)


#: Splits per data set in full mode; in quick mode (Boston only) the log-likelihood comparison
#: reads QUICK_SPLITS, the variance claim the first QUICK_VARIANCE_SPLITS of them.
FULL_SPLITS = {"boston": 10, "concrete": 10}
QUICK_SPLITS = 16
QUICK_VARIANCE_SPLITS = 8


def _plan(full: bool, quick_splits: int) -> list[str]:
    """The data set of every split, in stream order."""
    plan = FULL_SPLITS if full else {"boston": quick_splits}
    return [dataset for dataset, n in plan.items() for _ in range(n)]


@cached
def _trained(seed: int, full: bool) -> tuple[TrainedSplit, ...]:
    """The networks of every split of the plan (:func:`_plan`, :data:`QUICK_SPLITS` in quick
    mode), split i from child i of the stream ``uci-subnetworks``; the splits of one data set
    train together (:func:`train_splits`). The variance claim reads the first splits."""
    plan = _plan(full, QUICK_SPLITS)
    rngs = Context(seed=seed).rng("uci-subnetworks").spawn(len(plan))
    out: list[TrainedSplit | None] = [None] * len(plan)
    for dataset in dict.fromkeys(plan):
        at = [i for i, d in enumerate(plan) if d == dataset]
        epochs = 1000 if full else 300
        for i, trained in zip(
            at, train_splits(dataset, rngs=[rngs[i] for i in at], epochs=epochs), strict=True
        ):
            out[i] = trained
    return tuple(out)


@cached
def _posteriors(seed: int, full: bool, index: int, dataset: str) -> FullPosteriors:
    """The posteriors of split ``index`` (:func:`_trained`'s networks) that need no
    subnetwork prior: a mutant of λ_S alone reuses them."""
    trained = _trained(seed, full)[index]
    require(trained.dataset == dataset, f"split {index} is of {trained.dataset}, not {dataset}")
    return full_posteriors(trained)


@cached
def _split(seed: int, full: bool, index: int, dataset: str) -> UCISplit:
    """Every posterior of split ``index``: :func:`_posteriors` and the subnetworks with
    λ_S = λ·S/D."""
    return subnetwork_posteriors(_posteriors(seed, full, index, dataset))


def _splits(seed: int, full: bool, quick_splits: int = QUICK_SPLITS) -> tuple[UCISplit, ...]:
    """Random 90/10 splits: Boston ×``quick_splits`` (quick) or Boston and concrete ×10 (full).

    A split shows a decrease of the rescaled-prior path only about every other time (its
    nested subnetworks are mostly dead weights, which hold no variance under any prior), so
    the quick mode needs several: with 2 the verdict of seed 0 changed with the CPU that
    trained the networks.
    """
    if not 0 < quick_splits <= QUICK_SPLITS:
        raise ValueError(f"quick_splits must be in 1..{QUICK_SPLITS}; got {quick_splits}")
    plan = _plan(full, quick_splits)
    out = []
    for i, dataset in enumerate(plan):
        step(i, len(plan), "splits")
        out.append(_split(seed, full, i, dataset))
    step(len(plan), len(plan), "splits")
    return tuple(out)


def _pooled(splits: tuple[UCISplit, ...], field: str, arch: str) -> np.ndarray:
    return np.concatenate([getattr(s, field)[arch] for s in splits])


def _means(splits: tuple[UCISplit, ...], field: str) -> str:
    keys = getattr(splits[0], field)
    return ", ".join(f"{a} {np.mean(_pooled(splits, field, a)):.3f}" for a in keys)


def _label(splits: tuple[UCISplit, ...]) -> str:
    sets = sorted({s.dataset for s in splits})
    w = splits[0].weights
    return (
        f"{len(splits)} random 90/10 splits of {', '.join(sets)}; networks "
        + ", ".join(f"{a} (D = {w[a]:,})" for a in ARCHITECTURES)
        + "; λ by validation log-likelihood, λ_S = λ·S/D"
    )


def _split_means(splits: tuple[UCISplit, ...], field: str, arch: str) -> np.ndarray:
    """The mean test log-likelihood of every split (the unit of replication)."""
    return np.array([np.mean(getattr(s, field)[arch]) for s in splits])


def _miswired(splits: tuple[UCISplit, ...], field: str, arch: str) -> np.ndarray:
    """Reads the smaller network's full inference wherever the subnetwork result is asked."""
    return np.array([np.mean(s.ll_full[arch]) for s in splits])


#: A scaler fitted on training and test rows together: the audit of the split in
#: :func:`~laplace_lab.paper_checks.subnetwork_inference.experiments.uci.train_splits` stops it.
_POOLED_SCALER = {split_standardise: _mutants.pooled_split_standardise}


@claim(
    paper=PAPER,
    name="uci-large-subnetwork-beats-small-full",
    location="§6.2, Fig. 3 (protocol on UCI Boston and concrete)",
    statement="The larger (2×100) models are still best when inference is performed over "
    "subnetworks of the size of the smaller models (Wasserstein selection with diagonal-"
    "Laplace variances), i.e. better than full network inference in those smaller models.",
    expected=Status.REFUTED,
    kind=Kind.SUPERIORITY,
    setting=UCI_SETTING,
    mutants=(
        Mutant(
            "scaler-fitted-on-all-rows",
            "inputs and targets standardised with the statistics of the training and test "
            "rows together",
            _POOLED_SCALER,
            expect=Status.ERROR,
        ),
        Mutant(
            "subnetwork-read-as-small-network",
            "the smaller network's full-inference log-likelihoods are read as the subnetwork's",
            {_split_means: _miswired},
            reuses=(_split,),
            expect=Status.INCONCLUSIVE,
        ),
    ),
)
def large_subnetwork_vs_small_full(ctx: Context) -> Verdict:
    """§6.2: "these larger models are still best when we perform inference over
    subnetworks of the size of smaller models." Superiority of the 2×100 subnetwork's
    split-mean test log-likelihood over each smaller network's full inference (every one of
    the three sizes), replicated over splits. The mutant that reads the smaller network's
    own full inference as the subnetwork is the null (no effect)."""
    splits = _splits(ctx.seed, ctx.full)
    tests = {}
    behind = {}
    for a in SMALLER:
        ours, theirs = _split_means(splits, "ll_subnetwork", a), _split_means(splits, "ll_full", a)
        tests[a] = paired_test(f"LL({LARGEST} subnetwork of D({a})) − LL({a} full)", ours, theirs)
        behind[a] = int(np.sum(ours < theirs))
    d = decisions.superiority(
        tuple(tests.values()),
        command=f"laplace-lab check --full --claim {PAPER}/uci-large-subnetwork-beats-small-full",
    )
    dead = [s.dead_in_subnetwork for s in splits]
    partial = {a: sum(s.dead_in_subnetwork[a] < s.dead[LARGEST] for s in splits) for a in SMALLER}
    untied = [
        a
        for a, t in tests.items()
        if not partial[a] and t.significant(d.alpha / len(tests), direction=-t.side)
    ]
    full_ll = {a: float(np.mean(_pooled(splits, "ll_full", a))) for a in ARCHITECTURES}
    best = max(full_ll, key=full_ll.get)
    per_split = {
        a: _split_means(splits, "ll_subnetwork", a) - _split_means(splits, "ll_full", a)
        for a in SMALLER
    }
    worst_point = min(
        float(np.min(s.ll_subnetwork[a] - s.ll_full[a])) for s in splits for a in SMALLER
    )
    return Verdict(
        d.status,
        summary=(
            f"{LARGEST} subnetwork − smaller full inference, mean over {len(splits)} splits: "
            + ", ".join(f"size of {a} {t.mean:+.2f}" for a, t in tests.items())
            + f": {decision_summary(d)}"
        ),
        measured="; ".join(f"size of {a}: {t.mean:+.3f} nats" for a, t in tests.items()),
        expected="2×100 subnetwork ahead of every smaller network's full inference",
        tolerance=(
            "paired one-sided t-tests across splits on the split-mean test log-likelihoods "
            f"({d.rule})"
        ),
        evidence=(
            f"{_label(splits)}. Mean test log-likelihood (standardised targets): full "
            f"inference {_means(splits, 'll_full')}; MAP {_means(splits, 'll_map')}; "
            f"{LARGEST} with a subnetwork of the size of {_means(splits, 'll_subnetwork')}; "
            f"the same with the full network's λ instead of λ·S/D "
            f"{_means(splits, 'll_subnetwork_fixed')}. Split-mean difference (subnetwork − "
            "smaller full), mean over splits, splits where the subnetwork is behind, "
            "one-sided p of the stated order: "
            + "; ".join(
                f"size of {a} {t.mean:+.3f}, {behind[a]}/{len(splits)}, p {one_sided_p(t):.2g}"
                for a, t in tests.items()
            )
            + ". Per split: "
            + "; ".join(
                f"size of {a} " + "/".join(f"{v:+.2f}" for v in diff)
                for a, diff in per_split.items()
            )
            + " (a split's mean can be dominated by a single test point far outside the "
            f"subnetwork's predictive: the per-point differences reach {worst_point:.0f} "
            f"nats). Dead weights (all-zero training Jacobian) in the {LARGEST} network: "
            + ", ".join(str(s.dead[LARGEST]) for s in splits)
            + "; the diagonal-Laplace ranking puts them first (§6.3's observation), so the "
            "subnetworks hold "
            + ", ".join("/".join(str(v) for v in d.values()) for d in dead)
            + " dead weights and keep almost none of the predictive variance. Dead weights tie "
            "at the prior variance 1/λ, so the library's tie rule (the lowest index) picks "
            "among them only where a subnetwork holds fewer weights than there are dead ones: "
            + "; ".join(
                f"size of {a} in {n}/{len(splits)} splits" for a, n in partial.items() if n
            )
            + "; the other sizes hold every dead weight"
            + (
                f", and the comparisons at {', '.join(untied)} (no tie choice in any split) "
                "are each significant in the reverse direction on their own"
                if untied and d.status is Status.REFUTED
                else ""
            )
            + f". With full inference the best network here is {best} (§6.2: 'larger (wd = "
            "100, hd = 2) models tend to perform best')."
        ),
        details={
            a: {
                "mean_difference": t.mean,
                "se": t.se,
                "p": one_sided_p(t),
                "splits_behind": behind[a],
            }
            for a, t in tests.items()
        },
        decision=d,
    )


@claim(
    paper=PAPER,
    name="uci-more-variances-more-uncertainty",
    location="§6.2",
    statement="Increasing the number of weight variances considered (nested Wasserstein "
    "subnetworks, prior λ_S = λ·S/D as in §4) will only increase predictive uncertainty.",
    expected=Status.REFUTED,
    kind=Kind.EXISTENCE,
    setting=UCI_SETTING,
    mutants=(
        Mutant(
            "scaler-fitted-on-all-rows",
            "inputs and targets standardised with the statistics of the training and test "
            "rows together",
            _POOLED_SCALER,
            expect=Status.ERROR,
        ),
        Mutant(
            "prior-not-rescaled",
            "subnetworks keep the full network's λ instead of λ·S/D",
            {subnetwork_prior_precision: lambda prior_precision, k, D: float(prior_precision)},
            expect=Status.INCONCLUSIVE,
            reuses=(_trained, _posteriors),
        ),
    ),
)
def more_variances_more_uncertainty(ctx: Context) -> Verdict:
    """§6.2: "NNs with the same number of weights make the same mean predictions.
    Increasing the number of weight variances considered will thus only increase predictive
    uncertainty." A universal statement: one (test point, nested step) whose predictive
    variance falls is a counterexample.

    Two readings of the subnetwork prior. §4 gives the rescaling as the method ("we update
    our prior precision to be λ_S = λ·S/D") and §6.1 restates it; §6.2 is silent on the
    prior of its subnetworks and says nothing to the contrary, so the verdict rests on §4's
    λ_S = λ·S/D. With a fixed λ the statement is a theorem (a Schur-complement monotonicity)
    and holds here without exception; both readings are in the evidence. A counterexample
    refutes; the quick splits finding none leave it INCONCLUSIVE (base seed 6 of 0–9 finds
    none; the other nine do), never CONFIRMED: a sample without a counterexample does not
    establish an empirical universal statement.
    """
    splits = _splits(ctx.seed, ctx.full, QUICK_VARIANCE_SPLITS)
    fixed = [s.decreases_fixed for s in splits]
    require(max(fixed) == 0.0, f"nested subnetworks with a fixed λ lost variance: {fixed}")
    scaled = [s.decreases for s in splits]
    worst = max(scaled)
    d = decisions.counterexample(
        worst > 0.0,
        witness=(
            "with λ_S = λ·S/D (§4), the largest share of (test point, step) pairs whose "
            f"variance falls is {worst:.3f}; with a fixed λ it is {max(fixed):.3f}"
        ),
    )
    return Verdict(
        d.status,
        measured=round(worst, 4),
        expected=0.0,
        tolerance="share of (test point, step) pairs whose variance falls by more than 1e-8 "
        "(relative)",
        evidence=(
            f"{_label(splits)}. Nested subnetworks of the {LARGEST} network by the diagonal-"
            "Laplace ranking, of the sizes D(1×50) < D(1×100) < D(2×50) < D(2×100) = all "
            "weights: share of (test point, step) pairs whose predictive variance decreases "
            "with λ_S = λ·S/D per split: "
            + ", ".join(f"{v:.3f}" for v in scaled)
            + "; with the full network's λ: "
            + ", ".join(f"{v:.3f}" for v in fixed)
            + " (a Schur-complement monotonicity; Theorem 1 of Raha et al.). The §4 prior "
            "rescaling makes the prior of a larger subnetwork tighter, which can outweigh the "
            "added weights."
        ),
        summary=(
            f"§4's λ_S = λ·S/D: variance falls at up to {worst:.1%} of (test point, step) "
            f"pairs of a split; a fixed λ: at {max(fixed):.1%} (the reading that holds)"
        ),
        details={"decreases_scaled": scaled, "decreases_fixed": fixed},
        decision=d,
    )
