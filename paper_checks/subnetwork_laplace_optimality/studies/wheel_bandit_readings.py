"""Study ``wheel-bandit-readings``: the Wheel bandit under each reading of App. D.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075, §5.2 and
App. D, Tables 1–2. App. D leaves details of Experiment 2 open (which σ0² enters Ω_SS and the
Thompson variance, the arm means, the replay sampling, Adam's state, the network across phases,
reward and input scaling, the refit and re-selection cadence, the regret definition);
:class:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.BanditConfig`
implements each of them. This study runs the agents under one reading at a time away from the text
as written, and under a few combinations, and its report sets every reading's final regrets beside
Tables 1–2: whether Gradient- and Greedy-Laplace-500 are below every other agent, and how far the
regrets are from the tables' scale.

A grid point is ``reading`` × ``agent`` × ``horizon`` × ``delta``. A reading is ``"default"`` or
``field=value`` pairs joined by ``+`` (``"thompson_noise=none"``,
``"variant=riquelme+network=reinit"``; a comma separates grid values on the command line), fields
from
:data:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.READINGS`,
``variant`` or ``reselect_every``. Agents are those of the ``wheel-bandit`` study (``"map"``,
``"neural_linear"``, ``"<method>-k<k>"``). Metrics: ``regret`` (final cumulative regret) and
``seconds``.

The default grid (T = 100, four readings, five agents, 2 seeds) only exercises the study;
``--full`` is the paper's setting (T = 16,000, 25 seeds, ten agents, every reading, δ ∈
{0.95, 0.9}): thousands of CPU-hours, far beyond a small machine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import (
    agents,
    parse_agent,
)
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow

__all__ = [
    "AGENTS",
    "READING_GRID",
    "STUDY",
    "TABLES",
    "check_params",
    "parse_reading",
    "report",
    "run_batch",
    "run_one",
    "table_distance",
    "table_ordering",
]

#: The paper's horizon: Tables 1–2 report final cumulative regret at T = 16,000.
PAPER_T = 16000

#: Final cumulative regret, mean over 25 seeds: Table 1 (δ = 0.95) and Table 2 (δ = 0.9).
TABLES: dict[float, dict[str, float]] = {
    0.95: {
        "neural_linear": 30266.0,
        "map": 43298.9,
        "subnet_diagonal-k100": 47184.9,
        "subnet_diagonal-k500": 33796.4,
        "last_k-k100": 35340.1,
        "last_k-k500": 30556.2,
        "gradient_laplace-k100": 38177.4,
        "gradient_laplace-k500": 8211.9,
        "greedy_laplace-k100": 21568.7,
        "greedy_laplace-k500": 8616.7,
    },
    0.9: {
        "neural_linear": 26745.9,
        "map": 50082.2,
        "subnet_diagonal-k100": 60640.0,
        "subnet_diagonal-k500": 48953.1,
        "last_k-k100": 38473.7,
        "last_k-k500": 32131.9,
        "gradient_laplace-k100": 20747.6,
        "gradient_laplace-k500": 7654.6,
        "greedy_laplace-k100": 27527.0,
        "greedy_laplace-k500": 7732.3,
    },
}

#: The agents Tables 1–2 place below every other one (§5.2).
LEADERS = ("gradient_laplace-k500", "greedy_laplace-k500")

#: The agents of the measured grid: MAP, NeuralLinear, Last-k and the two proposed methods.
AGENTS = ("map", "neural_linear", "last_k-k500", *LEADERS)

#: One reading at a time away from the text as written, then combinations.
READING_GRID = (
    "default",
    "posterior_noise=true",
    "thompson_noise=true",
    "thompson_noise=none",
    "sampling=joint",
    "replay=without_replacement",
    "replay=whole_when_smaller",
    "optimizer_state=reset",
    "network=reinit",
    "reward_scaling=standardised",
    "input_scaling=standardised",
    "refit=round",
    "reselect_every=10",
    "regret=realised",
    "variant=riquelme",
    "variant=riquelme+network=reinit",
    "variant=riquelme+thompson_noise=none",
    "reward_scaling=standardised+input_scaling=standardised",
)


def parse_reading(reading: str) -> dict[str, Any]:
    """``"variant=riquelme+network=reinit"`` → the BanditConfig fields it sets.

    ``"default"`` sets none. Values are checked by :class:`BanditConfig`; a field that is
    not a reading is a ValueError naming it.
    """
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        READINGS,
    )

    if not isinstance(reading, str):
        raise TypeError(f"reading must be a str; got reading={reading!r}")
    if reading == "default":
        return {}
    out: dict[str, Any] = {}
    for part in reading.split("+"):
        name, sep, value = part.partition("=")
        if not sep or name in out:
            raise ValueError(
                f"reading must be 'default' or distinct 'field=value' pairs joined by '+'; got "
                f"reading={reading!r}"
            )
        if name == "reselect_every":
            if not value.isdigit():
                raise ValueError(f"reselect_every must be a positive int; got {value!r}")
            out[name] = int(value)
        elif name in READINGS or name == "variant":
            out[name] = value
        else:
            known = ", ".join((*READINGS, "variant", "reselect_every"))
            raise ValueError(f"reading field must be one of {known}; got {name!r}")
    return out


def _config(params: dict[str, Any]) -> Any:
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        BanditConfig,
    )

    method, k = parse_agent(params["agent"])
    return BanditConfig(
        method=method,
        k=k,
        delta=params["delta"],
        horizon=params["horizon"],
        **parse_reading(params["reading"]),
    )


def check_params(params: dict[str, Any]) -> None:
    """Refuse a grid point ``run_one`` cannot run (reading, agent, δ, T)."""
    _config(params)


def _metrics(res: Any) -> dict[str, float]:
    return {"regret": float(res.cumulative_regret[-1]), "seconds": res.seconds}


def run_one(params: dict[str, Any], *, rng: np.random.Generator) -> dict[str, float]:
    """One run of one agent under one reading."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        run_bandit,
    )

    return _metrics(run_bandit(_config(params), rng=rng))


def run_batch(params: dict[str, Any], *, rngs: list[np.random.Generator]) -> list[dict]:
    """Several seeds of one agent under one reading in lockstep (each equals run_one)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        run_bandits,
    )

    return [_metrics(res) for res in run_bandits(_config(params), rngs=rngs)]


Stats = dict[str, tuple[float, float]]  # agent → (mean, 1.96 × standard error)


def table_ordering(stats: Stats) -> tuple[bool, bool] | None:
    """Whether Gradient- and Greedy-Laplace-500 are below every other agent of ``stats``.

    Returns (the means are so ordered, the ±half-width intervals are so ordered without
    overlap), or None when a leader or every other agent is missing.
    """
    if any(a not in stats for a in LEADERS) or len(stats) <= len(LEADERS):
        return None
    others = [v for a, v in stats.items() if a not in LEADERS]
    means = all(stats[a][0] < m for a in LEADERS for m, _ in others)
    strict = all(stats[a][0] + stats[a][1] < m - h for a in LEADERS for m, h in others)
    return means, strict


def table_distance(stats: Stats, delta: float, horizon: int) -> tuple[float, float] | None:
    """(mean |log(ours / table)|, exp(mean log(ours / table))) over the tabled agents.

    The table's regrets at T = 16,000 are scaled by horizon / 16,000 (cumulative regret
    linear in T, as Table 1's MAP and NeuralLinear are), exact at the paper's horizon.
    None when no agent of ``stats`` is tabled at ``delta`` or a mean is not positive.
    """
    table = TABLES.get(delta, {})
    logs = [
        math.log(stats[a][0] / (table[a] * horizon / PAPER_T))
        for a in stats
        if a in table and stats[a][0] > 0
    ]
    if not logs or len(logs) < sum(a in table for a in stats):
        return None
    return float(np.mean(np.abs(logs))), float(np.exp(np.mean(logs)))


def _stats(rows: list[SummaryRow]) -> Stats:
    return {s.params["agent"]: (s.mean, 1.96 * s.se if s.n > 1 else math.nan) for s in rows}


def report(summary: list[SummaryRow]) -> str:
    """Per reading: each agent's final regret (mean ± 1.96 s.e.), Table 1–2's ordering, and
    the distance to the table's numbers (scaled linearly to the run's horizon)."""
    rows = [s for s in summary if s.metric == "regret"]
    groups: dict[tuple, list[SummaryRow]] = {}
    for s in rows:
        p = s.params
        groups.setdefault((p["delta"], p["horizon"], p["reading"]), []).append(s)
    lines = []
    for (delta, horizon, reading), group in sorted(groups.items(), key=lambda g: g[0]):
        group.sort(key=lambda s: s.mean)
        lines.append(f"δ = {delta}, T = {horizon}, reading {reading}:")
        for s in group:
            scaled = TABLES.get(delta, {}).get(s.params["agent"])
            paper = f"  table × T/16000: {scaled * horizon / PAPER_T:9.1f}" if scaled else ""
            spread = f"± {1.96 * s.se:7.1f}" if s.n > 1 else "(one run)"
            lines.append(f"  {s.params['agent']:24s} {s.mean:9.1f} {spread} (n={s.n}){paper}")
        stats = _stats(group)
        order = table_ordering(stats)
        if order is None:
            lines.append("  table ordering: not judged (agents missing)")
        else:
            lines.append(
                f"  table ordering (Gradient/Greedy-500 below every other agent): means "
                f"{'hold' if order[0] else 'fail'}, non-overlapping intervals "
                f"{'hold' if order[1] else 'fail'}"
            )
        dist = table_distance(stats, delta, horizon)
        if dist is not None:
            lines.append(
                f"  distance to the table: mean |log(ours/table)| = {dist[0]:.2f}, "
                f"geometric mean ratio ours/table = {dist[1]:.2f}"
            )
    return "\n".join(lines)


STUDY = register(
    Study(
        name="wheel-bandit-readings",
        description=(
            "Wheel Bandit under each reading of App. D of the optimality paper (noise in the "
            "posterior and the Thompson variance, arm means, replay, optimiser and network "
            "across phases, scaling, refit cadence, regret): final cumulative regret per "
            "agent, Table 1-2's ordering and the distance to the tables."
        ),
        grid={
            "delta": (0.95,),
            "horizon": (100,),
            "reading": (
                "default",
                "thompson_noise=none",
                "variant=riquelme",
                "network=reinit",
            ),
            "agent": AGENTS,
        },
        full_grid={
            "delta": (0.95, 0.9),
            "horizon": (PAPER_T,),
            "reading": READING_GRID,
            "agent": agents((100, 500)),
        },
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
