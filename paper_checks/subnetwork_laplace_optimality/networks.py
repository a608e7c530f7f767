"""Experiment 1 of Raha, Khare & Patra on a trained network (§5.1, Fig. 1, App. C.3, C.6).

The claims run the end-to-end Experiment 1
(:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1`) on a small
seeded configuration built from a package data set; the paper's Setups A–D (and why A, B and parts
of C and D cannot run here) are in :mod:`.setups`. Each claim first checks that the Greedy-Laplace
it reports is the literal Algorithm 2 (:mod:`._greedy`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from laplace_lab.numerics import subnet_diagonal
from laplace_lab.paper_checks.subnetwork_laplace_optimality._experiment1 import (
    neural_linear_paired,
    ordering_verdict,
    w2_figure,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._greedy import require_literal_greedy
from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
    GREEDY_TOP_K_DIAGONAL,
    PROPOSED_ASCENDING,
    SCORES_WITHOUT_NOISE,
    SHARED_VARIANCES_HALVED,
)
from laplace_lab.paper_checks.verification import Context, Mutant, Status, Verdict, cached, claim

PAPER = "subnetwork-laplace-optimality"


def _ordering_config(full: bool):  # -> ExperimentConfig
    from laplace_lab.networks.training import adam_recipe
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        PAPER_METHODS,
        ExperimentConfig,
    )

    if full:
        return ExperimentConfig(
            dataset="randhie",
            model="mlp_3x200",
            n_train=1000,
            n_test=500,
            ks=(50, 100, 200, 500, 1000, 2000, 5000),
            methods=PAPER_METHODS,
            train=adam_recipe(),
            ensemble_size=0,
            kfac=False,
            coverage_target="oracle",
            oracle_rows=8000,
        ), 5
    return ExperimentConfig(
        dataset="fair",
        model="mlp_2x50",
        n_train=300,
        n_test=200,
        ks=(50, 100, 200, 500),
        methods=PAPER_METHODS,
        train=adam_recipe(epochs=40, batch_size=64, lr=3e-3),
        ensemble_size=0,
        kfac=False,
        coverage_target="oracle",
        oracle_rows=2000,
        greedy_candidates="2k",
    ), 6


def _require_greedy(ctx: Context) -> str:
    """The Greedy-Laplace these claims report is the literal Alg. 2 (an ERROR otherwise)."""
    config, _ = _ordering_config(ctx.full)
    return require_literal_greedy(
        ctx.rng("greedy-self-check"), candidates=config.greedy_candidates
    )


@cached(maxsize=4)
def _experiment(full: bool, seed: int):  # -> (ExperimentConfig, seeds, ExperimentResult)
    """One Experiment-1 run shared by the claims below (same mode and base seed)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        run_experiment,
    )

    config, seeds = _ordering_config(full)
    return config, seeds, run_experiment(config, seeds, seed=seed)


def _largest_diagonal(ggn: Any, k: int) -> np.ndarray:
    """Subnet-Diagonal read as the k *largest* diagonal entries of Ω."""
    d = np.asarray(ggn.diagonal(), dtype=np.float64)
    return np.argsort(-d, kind="stable")[:k].astype(np.int64)


@claim(
    paper=PAPER,
    name="experiment1-ordering-networks",
    location="§5.1, Fig. 1, App. C.6",
    statement="On trained networks, Gradient- and Greedy-Laplace give a lower mean W2 to the "
    "full linearized-Laplace predictive than Subnet-Diagonal and Last-k at every k ≥ 200.",
    mutants=(
        GREEDY_TOP_K_DIAGONAL,
        PROPOSED_ASCENDING,
        SHARED_VARIANCES_HALVED,
        SCORES_WITHOUT_NOISE,
    ),
)
def _ordering(ctx: Context) -> Verdict:
    self_check = _require_greedy(ctx)
    config, seeds, res = _experiment(ctx.full, ctx.seed)
    title = f"Experiment 1: {config.model} on {config.dataset}"
    figs = w2_figure(ctx, {title: res}, "experiment1_ordering_networks.png")
    label = (
        f"{config.model} on {config.dataset} (N = {config.n_train}, {config.n_test} test "
        f"points, p = {res.seeds[0].p}), {seeds} seeds"
    )
    v = ordering_verdict(res, label=label, figures=figs)
    return replace(v, evidence=f"{v.evidence} {self_check}")


@claim(
    paper=PAPER,
    name="experiment1-neural-linear-matched",
    location="§5.1 (Results), App. C.3",
    statement="NeuralLinear (the last layer, a fixed k) is matched or surpassed in W2 by "
    "Gradient- or Greedy-Laplace at a comparable subset size.",
    mutants=(GREEDY_TOP_K_DIAGONAL, replace(PROPOSED_ASCENDING, heavy=True)),
)
def _neural_linear_matched(ctx: Context) -> Verdict:
    self_check = _require_greedy(ctx)
    config, seeds, res = _experiment(ctx.full, ctx.seed)
    nl = neural_linear_paired(res)
    k_nl = nl["k_neural_linear"]
    head = f"{config.model} on {config.dataset}, {seeds} seeds: NeuralLinear k = {k_nl:.0f}"
    if not nl["inside"]:
        return Verdict(
            Status.NOT_REPRODUCIBLE_HERE,
            evidence=f"{head} lies outside the k-grid: no comparison at a comparable k. "
            + self_check,
            details=nl,
        )
    readings = {
        "surpassed (paired W2 difference significantly below 0)": nl["surpassed"],
        "matched (not significantly above 0)": nl["not_worse"],
    }
    return Verdict(
        Status.CONFIRMED if nl["not_worse"] else Status.REFUTED,
        measured=nl["mean"],
        expected="≤ 0 within noise: min(Gradient, Greedy) W2 − NeuralLinear W2 at k_NL",
        tolerance=f"one-sided paired t-test at 5% (t > {nl['critical']:.2f} s.e. refutes)",
        evidence=(
            f"{head}. Per seed, min(Gradient, Greedy) W2 interpolated in log k at k_NL minus "
            f"NeuralLinear's W2: mean {nl['mean']:+.4g} ± {nl['se']:.2g} (s.e.); proposed "
            f"better in {nl['seeds_better']}/{seeds} seeds.\n"
            + "\n".join(f"- {r}: {'holds' if ok else 'fails'}" for r, ok in readings.items())
            + f"\n- {self_check}"
        ),
        details={**nl, "readings": readings},
    )


@claim(
    paper=PAPER,
    name="experiment1-subnet-diagonal-undercovers",
    location="§5.1 (Results), Fig. 1 right",
    statement="Subnet-Diagonal under-covers the nominal 95% credible interval at every subset "
    "size, while Gradient-/Greedy-Laplace approach the full Laplace's coverage at large k.",
    mutants=(
        GREEDY_TOP_K_DIAGONAL,
        replace(PROPOSED_ASCENDING, heavy=True),
        Mutant(
            "subnet-diagonal-largest",
            "Subnet-Diagonal takes the k largest diagonal entries (the reading §4 rules out)",
            {subnet_diagonal: _largest_diagonal},
        ),
    ),
)
def _subnet_diagonal_undercovers(ctx: Context) -> Verdict:
    self_check = _require_greedy(ctx)
    config, seeds, res = _experiment(ctx.full, ctx.seed)
    cov = res.coverage_mean
    full_cov = res.reference_mean["full_laplace"]["coverage"]
    sd = np.asarray(cov["subnet_diagonal"])
    ours_last = max(cov["gradient_laplace"][-1], cov["greedy_laplace"][-1])
    under = bool(np.all(sd < 0.95))
    approach = ours_last >= min(0.95, full_cov) - 0.05
    # σ_S ≤ σ_full pointwise, so when full Laplace itself under-covers, "Subnet-Diagonal
    # under-covers" holds for every method and says nothing: require full coverage ≥ 0.9
    # and Subnet-Diagonal below the proposed methods at the largest k.
    informative = full_cov >= 0.9
    below = bool(sd[-1] < ours_last)
    ev = (
        f"{config.model} on {config.dataset}, {seeds} seeds; oracle f_ref = the same "
        f"architecture trained on {config.oracle_rows} rows of the training pool (App. C.1); "
        f"coverage of 1.96σ epistemic intervals: Subnet-Diagonal {np.round(sd, 3).tolist()}, "
        f"Gradient {np.round(cov['gradient_laplace'], 3).tolist()}, Greedy "
        f"{np.round(cov['greedy_laplace'], 3).tolist()} at k = {list(res.seeds[0].ks)}; "
        f"full Laplace {full_cov:.3f}. {self_check}"
    )
    if not informative:
        ev += " Full Laplace covers < 0.9 here, so the comparison is uninformative."
    status = (
        (Status.CONFIRMED if under and approach and below else Status.REFUTED)
        if informative
        else Status.NOT_REPRODUCIBLE_HERE
    )
    return Verdict(
        status,
        measured=float(sd.max()),
        expected="< 0.95 at every k; proposed methods within 0.05 of min(0.95, full) at max k",
        tolerance=0.05,
        evidence=ev,
        details={name: [float(v) for v in vals] for name, vals in cov.items()},
    )
