"""Experiment 1 of Raha, Khare & Patra (arXiv:2605.09075, §5.1) end to end at the paper's
sizes (``laplace-lab bench --full --only experiment1``; nothing at the small sizes).

Target: the W2-vs-k curves of every selection method for the 3×200 MLP (p = 98,801) on a
package data set (statsmodels randhie), N = 2,000 training rows, 1,000 test points,
k ∈ {50, …, 10,000} (8 values) in under 3 minutes, with the time breakdown in the note.
"""

from __future__ import annotations

import torch

from laplace_lab.benchmarks import BenchmarkSkipped, Row, benchmark, timed
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
    ExperimentConfig,
    run_seed,
    sized_methods,
)


def experiment(budget_s: float = 180.0) -> Row:
    cfg = ExperimentConfig(
        dataset="randhie",
        model="mlp_3x200",
        n_train=2000,
        n_test=1000,
        methods=sized_methods(),
        ensemble_size=0,
        kfac=False,
        coverage_target="y",
    )
    res, ours = timed(lambda: run_seed(cfg, rng=0))
    parts = ", ".join(f"{k} {v:.1f}s" for k, v in res.timings.items())
    w2 = "; ".join(f"{m} " + "/".join(f"{v:.3g}" for v in vals) for m, vals in res.w2.items())
    return Row(
        f"Experiment 1 W2-vs-k, 3x200 MLP on randhie (p={res.p}, N=2000, 1000 test, "
        f"k={list(res.ks)})",
        ours,
        "3-minute budget",
        budget_s,
        min_ratio=1.0,
        note=f"{parts}. W2 per k: {w2}",
    )


@benchmark("experiment1")
def run(full: bool = False) -> list[Row]:
    """The ``--full`` row (one torch thread); skipped at the small sizes."""
    if not full:
        raise BenchmarkSkipped("a --full benchmark (about 3 minutes)")
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [experiment()]
    finally:
        torch.set_num_threads(previous)
