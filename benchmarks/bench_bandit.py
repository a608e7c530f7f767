"""The Wheel bandit: seeds in lockstep against the plain single-seed loop, same seeds.

Ours: :func:`laplace_lab.studies.wheel_bandit.run_bandits` (one agent's seeds trained as
stacked networks); baseline: :func:`laplace_lab.studies.wheel_reference.run_bandit_reference`
(``nn.Sequential`` + autograd + ``clip_grad_norm_`` + ``torch.optim.Adam``, one seed at a
time, the same posterior code). Both are timed in CPU seconds per run (the machine may be
shared; both run on one thread) and must give the same arms and regrets. Default: 10 seeds
of Gradient-Laplace (k = 100) at T = 415 (20 phases); ``--full``: the paper's T = 16,000 with
k = 500 and 25 seeds in lockstep, the baseline on the first 3 of those seeds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from laplace_lab.benchmarks._harness import Row, benchmark, main_for


def _cpu(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def versus_single_seed_loop(
    method: str, k: int, horizon: int, seeds: int, baseline_seeds: int
) -> Row:
    """One row: CPU seconds per run, lockstep over ``seeds`` against the plain loop."""
    from laplace_lab.studies.wheel_bandit import BanditConfig, run_bandits
    from laplace_lab.studies.wheel_reference import run_bandit_reference

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


@benchmark("bandit")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench`` (small sizes unless ``full``)."""
    if full:
        return [versus_single_seed_loop("gradient_laplace", 500, 16000, 25, 3)]
    return [versus_single_seed_loop("gradient_laplace", 100, 415, 10, 10)]


if __name__ == "__main__":
    raise SystemExit(main_for(run))
