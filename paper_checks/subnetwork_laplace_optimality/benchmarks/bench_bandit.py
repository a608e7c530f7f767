"""The Wheel bandit: seeds in lockstep against the plain single-seed loop, same seeds.

Ours:
:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.run_bandits`
(one agent's seeds trained as stacked networks); baseline:
:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_reference.run_bandit_reference`
(``nn.Sequential`` + autograd + ``clip_grad_norm_`` + ``torch.optim.Adam``, one seed at a time, the
same posterior code). Both are timed in CPU seconds per run (the machine may be shared; both run on
one thread) and must give the same arms and regrets. Default: 10 seeds of Gradient-Laplace (k =
100) at T = 415 (20 phases); ``--full``: the paper's T = 16,000 with k = 500 and 25 seeds in
lockstep, the baseline on the first 3 of those seeds.

The posterior refit of one phase is timed apart, at a replay buffer of t rows (t = 4,000;
``--full``: 16,000, the last phase of a run), for Gradient- and Greedy-Laplace at k = 500:
:func:`~laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior.replay_posterior`
(Ω_SS streamed, Greedy's a sub-block of its candidates' Gram) against selection +
``subset_jacobian`` + ``from_rows`` (J_S formed, converted and multiplied), which the single-seed
loop uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from laplace_lab.benchmarks import Row, benchmark, main_for
from laplace_lab.networks.models import bandit_net
from laplace_lab.networks.training import build_seeded, torch_threads
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
    BanditConfig,
    run_bandits,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior import (
    SubnetPosterior,
    arm_inputs,
    replay_posterior,
    select_subnetwork,
    subset_jacobian,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_reference import (
    run_bandit_reference,
)


def _cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def versus_single_seed_loop(
    method: str, k: int, horizon: int, seeds: int, baseline_seeds: int
) -> Row:
    """One row: CPU seconds per run, lockstep over ``seeds`` against the plain loop."""
    cfg = BanditConfig(method=method, k=k, horizon=horizon)
    ours, t_ours = _cpu(lambda: run_bandits(cfg, rngs=list(range(seeds))))
    base, t_base = _cpu(lambda: [run_bandit_reference(cfg, rng=s) for s in range(baseline_seeds)])
    same = all(
        np.array_equal(a.arms, b.arms) and np.array_equal(a.regret, b.regret)
        for a, b in zip(ours, base, strict=False)
    )
    regret = np.mean([r.cumulative_regret[-1] for r in ours])
    return Row(
        f"wheel bandit {method} k={k}, T={horizon}, {seeds} seeds in lockstep (CPU s per run)",
        t_ours / seeds,
        f"single-seed torch loop ({baseline_seeds} of the seeds)",
        t_base / baseline_seeds,
        min_ratio=1.5,
        correct=same,
        note=f"identical arms and regrets: {same}; mean final regret {regret:.0f}",
    )


def posterior_refit(method: str, k: int, t: int) -> Row:
    """One row: CPU seconds of one phase's posterior at a replay buffer of t rows (best of
    3, alternated)."""

    rng = np.random.default_rng(0)
    model = build_seeded(bandit_net, rng=1)
    rows = arm_inputs(rng.uniform(-1, 1, size=(t, 2)))
    X = torch.from_numpy(rows[np.arange(t) * 5 + rng.integers(0, 5, t)].astype(np.float32))
    kw = {"noise_var": 0.01, "prior_precision": 1.0}

    def formed() -> SubnetPosterior:
        S = select_subnetwork(model, X, method, k, **kw)
        return SubnetPosterior.from_rows(S, subset_jacobian(model, X, S), **kw)

    t_ours, t_base = [], []
    with torch_threads(1), threadpool_limits(limits=1):
        for _ in range(3):  # alternated, best of 3: first-touch costs fall on neither side
            ours, sec = _cpu(lambda: replay_posterior(model, X, method, k, **kw))
            t_ours.append(sec)
            base, sec = _cpu(formed)
            t_base.append(sec)
    err = float(np.abs(ours.gram - base.gram).max() / np.abs(base.gram).max())
    same = np.array_equal(ours.S, base.S) and err < 1e-12
    return Row(
        f"wheel bandit posterior refit {method} k={k} at t={t} replay rows (CPU s)",
        min(t_ours),
        "selection, then J_S formed and J_SᵀJ_S",
        min(t_base),
        min_ratio=1.0,
        correct=same,
        note=f"same S: {np.array_equal(ours.S, base.S)}; Gram relative difference {err:.1e}",
    )


@benchmark("bandit")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench`` (small sizes unless ``full``)."""
    t = 16000 if full else 4000
    refits = [posterior_refit(m, 500, t) for m in ("gradient_laplace", "greedy_laplace")]
    if full:
        return [versus_single_seed_loop("gradient_laplace", 500, 16000, 25, 3), *refits]
    return [versus_single_seed_loop("gradient_laplace", 100, 415, 10, 10), *refits]


if __name__ == "__main__":
    raise SystemExit(main_for(run))
