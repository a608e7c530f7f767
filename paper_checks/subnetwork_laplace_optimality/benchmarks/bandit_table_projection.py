"""CPU cost of the Wheel bandit's Table 1 projected from measured phases.

A run at the paper's T = 16,000 has 800 phases, each one training phase (100 Adam updates,
constant cost) and one posterior refit on the replay buffer (cost growing with its t rows).
For every agent of Table 1 this measures both, in CPU seconds per seed with ``seeds`` seeds in
lockstep, at a buffer of t = 4,000 and t = 15,980 rows (random contexts and arms), and sums
train + refit over the run's phases with the refit linear in t between the two measurements.
The result is a projection from measured phases, not a measured run.

It also prints a lower bound that no implementation of App. D.2 on this CPU can beat: the
three 512 × 100 × 100 float32 products of every Adam update (forward, weight gradient, input
gradient of the hidden layer) and the float64 Gram J_SᵀJ_S (Greedy-Laplace: its 2k
candidates' Gram) of every refit, at the rates this CPU runs exactly those shapes on one
thread (torch ``addmm``/``mm``, BLAS ``dsyrk``), nothing else counted, and the ratio of the
projection to it.

Run: ``python -m
laplace_lab.paper_checks.subnetwork_laplace_optimality.benchmarks.bandit_table_projection
[seeds]``.

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

    from laplace_lab.networks.training import torch_threads
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        BanditConfig,
    )
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_lockstep import (
        Lockstep,
    )

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


#: The buffer size t at each phase's refit of a T = 16,000 run (15 warm pulls, 20 per phase).
PHASES = np.arange(15, 16000, 20)


def _best(fn, repeats: int) -> float:
    """Best of 5 mean CPU seconds of ``fn`` over ``repeats`` calls."""
    fn()
    times = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            fn()
        times.append((time.process_time() - start) / repeats)
    return min(times)


def update_floor() -> float:
    """CPU seconds of one Adam update's three hidden-layer float32 products (one seed)."""
    import torch

    from laplace_lab.networks.training import torch_threads

    g = torch.Generator().manual_seed(0)
    a, d = torch.randn(512, 100, generator=g), torch.randn(512, 100, generator=g)
    W, b = torch.randn(100, 100, generator=g), torch.randn(100, generator=g)
    with torch_threads(1):
        return (
            _best(lambda: torch.addmm(b, a, W.t()), 200)
            + _best(lambda: d.t().mm(a), 200)
            + _best(lambda: d.mm(W), 200)
        )


def gram_floor(columns: int, rows: int = 8000) -> float:
    """CPU seconds per replay row of the float64 Gram of ``columns`` columns (BLAS dsyrk)."""
    import scipy.linalg.blas
    from threadpoolctl import threadpool_limits

    block = np.random.default_rng(0).standard_normal((rows, columns))
    G = np.zeros((columns, columns), order="F")
    with threadpool_limits(limits=1):
        sec = _best(lambda: scipy.linalg.blas.dsyrk(1.0, block.T, beta=1.0, c=G), 2)
    return sec / rows


def gram_columns(method: str, k: int) -> int:
    """Columns of the Gram an agent forms at each refit (0 for MAP; NeuralLinear: the last
    layer's weights and bias)."""
    from laplace_lab.networks.models import bandit_net

    last_layer = sum(t.numel() for t in list(bandit_net().parameters())[-2:])
    return {"map": 0, "neural_linear": last_layer, "greedy_laplace": 2 * k}.get(method, k)


def table_floor(agent_list: tuple[str, ...], seeds: int = 25) -> tuple[float, float]:
    """(training, Gram) CPU-hours below which Table 1 cannot run here (module docstring)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import (
        parse_agent,
    )

    train = PHASES.size * 100 * update_floor() * len(agent_list) * seeds / 3600
    rates: dict[int, float] = {}
    gram = 0.0
    for agent in agent_list:
        cols = gram_columns(*parse_agent(agent))
        if cols:
            rate = rates.setdefault(cols, gram_floor(cols))
            gram += rate * float(PHASES.sum()) * seeds / 3600
    return train, gram


def main(argv: list[str] | None = None) -> int:
    """Print per-agent phase costs, the projected CPU seconds per run and Table 1's total."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import (
        agents,
        parse_agent,
    )

    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and not args[0].isdigit()) or (args and int(args[0]) < 1):
        print(f"usage: bandit_table_projection [seeds ≥ 1]; got {' '.join(args)}", file=sys.stderr)
        return 2
    seeds = int(args[0]) if args else 2
    phases = PHASES
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
    projected = total * 25 / 3600
    print(f"Table 1 (25 seeds x {len(agents((100, 500)))} agents): {projected:.1f} CPU-h")
    train, gram = table_floor(agents((100, 500)))
    print(
        f"Lower bound on this CPU (one thread): {train:.2f} CPU-h of hidden-layer products "
        f"in training + {gram:.2f} CPU-h of float64 Grams = {train + gram:.2f} CPU-h"
    )
    print(f"ratio to the floor: {projected / (train + gram):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
