"""Study ``wheel-bandit``: Experiment 2 of the optimality paper (Neural Thompson sampling).

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075, §5.2,
App. D, Tables 1–2: each replication is one run of
:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.run_bandit`
for one agent — ``"map"``, ``"neural_linear"`` or a sub-network method with its size,
``"<method>-k<k>"`` (e.g. ``"greedy_laplace-k100"``). Metrics: ``regret`` (final cumulative
expected regret), ``regret_half`` (at T/2), and ``seconds`` (wall time of the run). The
replications of an agent run in lockstep batches of up to 25 seeds
(:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.run_bandits`),
each identical to the seed run alone.

The default grid is reduced (T = 600, k ∈ {20, 100}, δ = 0.95, 2 seeds) so that it runs
within the default-grid budget; ``--full`` is the paper's setting (T = 16,000,
k ∈ {100, 500}, δ ∈ {0.95, 0.9}, 25 seeds), which is far more expensive (run times in
docs/performance.md, "Wheel Bandit").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow

__all__ = ["STUDY", "agents", "check_params", "parse_agent", "report", "run_batch", "run_one"]


#: The sub-network agents of Tables 1–2 whose size k is set per agent (App. D.2).
PAPER_SIZED = ("last_k", "subnet_diagonal", "gradient_laplace", "greedy_laplace")


def agents(ks: tuple[int, ...], methods: tuple[str, ...] = PAPER_SIZED) -> tuple[str, ...]:
    """MAP, NeuralLinear and each sized selection method at every k, as grid values."""
    return ("map", "neural_linear", *(f"{m}-k{k}" for m in methods for k in ks))


def _sized(method: str) -> bool:
    from laplace_lab.numerics.selection_registry import selection_methods

    known = selection_methods()
    return method in known and known[method].sized


def parse_agent(agent: str) -> tuple[str, int]:
    """``"greedy_laplace-k100"`` → ``("greedy_laplace", 100)``; k = 1 for k-free agents.

    Any registered selection method is an agent: sized ones need a size (``-k<k>``).
    """
    from laplace_lab.numerics.selection_registry import selection_methods

    method, sep, k = agent.partition("-k")
    if not sep:
        if _sized(method):
            raise ValueError(f"agent {agent!r} needs a size: '{method}-k<k>'")
        if method != "map" and method not in selection_methods():
            raise ValueError(f"agent must be 'map' or a selection method; got {agent!r}")
        return method, 1
    if not _sized(method) or not k.isdigit() or int(k) < 1:
        raise ValueError(f"agent must be 'map', 'neural_linear' or '<method>-k<k>'; got {agent!r}")
    return method, int(k)


def check_params(params: dict[str, Any]) -> None:
    """Refuse a grid point ``run_one`` cannot run (the agent, δ and T as BanditConfig
    validates them)."""
    _config(params)


def _metrics(res: Any) -> dict[str, float]:
    cum = res.cumulative_regret
    return {
        "regret": float(cum[-1]),
        "regret_half": float(cum[res.config.horizon // 2 - 1]),
        "seconds": res.seconds,
    }


def _config(params: dict[str, Any]) -> Any:
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        BanditConfig,
    )

    method, k = parse_agent(params["agent"])
    return BanditConfig(method=method, k=k, delta=params["delta"], horizon=params["horizon"])


def run_one(params: dict[str, Any], *, rng: np.random.Generator) -> dict[str, float]:
    """One Neural-Thompson-sampling run of one agent (module docstring)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        run_bandit,
    )

    return _metrics(run_bandit(_config(params), rng=rng))


def run_batch(params: dict[str, Any], *, rngs: list[np.random.Generator]) -> list[dict]:
    """Several seeds of one agent in lockstep (equal to :func:`run_one` for each)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        run_bandits,
    )

    return [_metrics(res) for res in run_bandits(_config(params), rngs=rngs)]


def report(summary: list[SummaryRow]) -> str:
    """Final cumulative regret per agent, mean ± 1.96 s.e., best first (Tables 1–2 layout)."""
    rows = [s for s in summary if s.metric == "regret"]
    rows.sort(key=lambda s: (s.params["delta"], s.params["horizon"], s.mean))
    lines = ["delta  T      agent                     regret (mean ± 1.96 s.e., n)"]
    for s in rows:
        p = s.params
        spread = f"± {1.96 * s.se:7.1f}" if s.n > 1 else "(one run)"
        lines.append(
            f"{p['delta']:<6} {p['horizon']:<6d} {p['agent']:25s} "
            f"{s.mean:9.1f} {spread}  (n={s.n})"
        )
    return "\n".join(lines)


STUDY = register(
    Study(
        name="wheel-bandit",
        description=(
            "Wheel Bandit (delta = 0.95 / 0.9) with Neural Thompson sampling: final cumulative "
            "regret of MAP, NeuralLinear, Last-k, Subnet-Diagonal, Gradient-Laplace and "
            "Greedy-Laplace posteriors (Tables 1-2 of the optimality paper)."
        ),
        grid={"delta": (0.95,), "horizon": (600,), "agent": agents((20, 100))},
        full_grid={"delta": (0.95, 0.9), "horizon": (16000,), "agent": agents((100, 500))},
        replications=2,
        full_replications=25,
        run_one=run_one,
        run_batch=run_batch,
        batch_size=25,
        plot_metrics=("regret",),
        report=report,
        check_params=check_params,
    )
)
