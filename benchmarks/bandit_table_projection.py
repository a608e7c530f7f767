"""CPU cost of the Wheel bandit's Table 1 projected from measured phases.

A run at the paper's T = 16,000 has 800 phases, each one training phase (100 Adam updates,
constant cost) and one posterior refit on the replay buffer (cost growing with its t rows).
For every agent of Table 1 this measures both, in CPU seconds per seed with ``seeds`` seeds in
lockstep, at a buffer of t = 4,000 and t = 15,980 rows (random contexts and arms), and sums
train + refit over the run's phases with the refit linear in t between the two measurements.
The result is a projection from measured phases, not a measured run.

Run: ``python -m laplace_lab.benchmarks.bandit_table_projection [seeds]``.

Reference: S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
New Results and Methods", arXiv:2605.09075 (2026), §5.2, App. D.2, Table 1.
"""

from __future__ import annotations

import sys
import time

import numpy as np

BUFFERS = (4000, 15980)


def phase_costs(method: str, k: int, t: int, seeds: int) -> tuple[float, float]:
    """(training, refit + actions) CPU seconds per seed of one phase at a buffer of t rows."""
    from threadpoolctl import threadpool_limits

    from laplace_lab.studies.training import torch_threads
    from laplace_lab.studies.wheel_bandit import BanditConfig
    from laplace_lab.studies.wheel_lockstep import Lockstep

    run = Lockstep(
        BanditConfig(method=method, k=k, horizon=16000),
        [np.random.default_rng(s) for s in range(seeds)],
    )
    rng = np.random.default_rng(0)
    for b in range(seeds):  # fill the replay buffer
        run.t = 0
        run._record(b, run.env.contexts(t, rng=rng), rng.integers(0, 5, t))
    run.t, run.phase = t, 1
    with torch_threads(1), threadpool_limits(limits=1):
        start = time.process_time()
        run._train()
        train = time.process_time() - start
        start = time.process_time()
        run._act()
        act = time.process_time() - start
    return train / seeds, act / seeds


def main(argv: list[str] | None = None) -> int:
    """Print per-agent phase costs, the projected CPU seconds per run and Table 1's total."""
    from laplace_lab.studies.catalog.wheel_bandit import agents, parse_agent

    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and not args[0].isdigit()) or (args and int(args[0]) < 1):
        print(f"usage: bandit_table_projection [seeds ≥ 1]; got {' '.join(args)}", file=sys.stderr)
        return 2
    seeds = int(args[0]) if args else 2
    phases = np.arange(15, 16000, 20)  # buffer size at each phase of a T = 16,000 run
    total = 0.0
    for agent in agents((100, 500)):
        method, k = parse_agent(agent)
        (tr0, a0), (tr1, a1) = (phase_costs(method, k, t, seeds) for t in BUFFERS)
        slope = (a1 - a0) / (BUFFERS[1] - BUFFERS[0])
        per_run = phases.size * (tr0 + tr1) / 2 + float(np.sum(a0 + slope * (phases - BUFFERS[0])))
        total += per_run
        print(
            f"{agent:22s} train/phase {(tr0 + tr1) / 2:.3f} s, refit/phase {a0:.3f} s "
            f"(t={BUFFERS[0]}) {a1:.3f} s (t={BUFFERS[1]}) -> {per_run:.0f} CPU-s per run",
            flush=True,
        )
    print(f"Table 1 (25 seeds x {len(agents((100, 500)))} agents): {total * 25 / 3600:.1f} CPU-h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
