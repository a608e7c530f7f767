"""The Wheel Bandit's geometry and recorded runs (Raha, Khare & Patra, §5.2 and App. D).

The paper's high-reward region is the annulus δ < ‖x‖ ≤ 1 of the unit disk, of area fraction 1 −
δ². The environment the bandit claims run
(:class:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env.WheelBandit`)
must pay the high reward exactly there: :func:`require_wheel_geometry` checks it by sampling its
contexts (an ERROR otherwise, never a verdict on the paper). Runs at the paper's horizon take hours
here; those made are recorded as data in ``recorded/`` and loaded by :func:`bandit_records`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
    WheelBandit,
)
from laplace_lab.paper_checks.verification import Mutant, Recorded, load_recorded, require
from laplace_lab.studies.store import Row

__all__ = [
    "WHEEL_PAYS_INNER_DISK",
    "annulus_fraction",
    "bandit_records",
    "regret_table",
    "require_wheel_geometry",
]

RECORDED = Path(__file__).with_name("recorded")
#: Contexts sampled by the geometry check: the fraction's standard error is ≈ 7e-4 at δ = 0.95.
SAMPLES = 200_000


def annulus_fraction(delta: float) -> float:
    """Area of δ < ‖x‖ ≤ 1 over the area of the unit disk: 1 − δ²."""
    return 1.0 - delta**2


def require_wheel_geometry(delta: float, rng: np.random.Generator) -> str:
    """Require the environment to pay μ_h exactly on the annulus, on the quadrant's outer arm.

    On ``SAMPLES`` contexts: the fraction whose best arm pays the high mean must be within 5
    standard errors of 1 − δ², every such context must have ‖x‖ > δ and its best arm must
    be its quadrant's outer arm. Returns a sentence for the evidence.
    """
    env = WheelBandit(delta=delta)
    x = env.contexts(SAMPLES, rng=rng)
    means = env.mean_rewards(x)
    high = means.max(axis=1) == env.mu_high
    target = 1.0 - delta**2  # π(1 − δ²)/π, independent of the claim under check
    se = math.sqrt(target * (1 - target) / SAMPLES)
    frac = float(high.mean())
    radius = np.linalg.norm(x, axis=1)
    require(
        abs(frac - target) <= 5 * se,
        f"the Wheel environment pays μ_h on {frac:.4%} of the disk at δ = {delta}, "
        f"not 1 − δ² = {target:.4%} (± {5 * se:.2%})",
    )
    require(
        bool(np.all(radius[high] > delta))
        and bool(np.all(means[high].argmax(axis=1) == env.quadrant_arm(x[high]))),
        f"the Wheel environment at δ = {delta} pays μ_h inside ‖x‖ ≤ δ or on a wrong arm",
    )
    return (
        f"Environment check: μ_h is paid on {frac:.3%} of {SAMPLES:,} uniform contexts at "
        f"δ = {delta} (1 − δ² = {target:.3%}), only outside ‖x‖ = δ, on the quadrant's arm."
    )


def bandit_records(delta: float) -> tuple[Recorded, ...]:
    """The recorded Wheel-bandit runs at sparsity ``delta``, longest horizon first, then most
    seeds first."""
    records = [load_recorded(f) for f in sorted(RECORDED.glob("wheel_bandit_*.json"))]
    chosen = [r for r in records if r.data.get("delta") == delta]
    return tuple(sorted(chosen, key=lambda r: (-int(r.data["horizon"]), -int(r.data["seeds"]))))


def _inner_disk_rewards(self: WheelBandit, x: np.ndarray) -> np.ndarray:
    """A Wheel that pays μ_h inside ‖x‖ ≤ δ instead of outside."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    means = np.tile(self._base[0], (x.shape[0], 1))
    inner = np.linalg.norm(x, axis=1) <= self.delta
    means[np.flatnonzero(inner), self.quadrant_arm(x[inner])] = self.mu_high
    return means


WHEEL_PAYS_INNER_DISK = Mutant(
    "wheel-pays-inner-disk",
    "the Wheel environment pays μ_h inside ‖x‖ ≤ δ instead of on the annulus (our "
    "implementation wrong: must be an ERROR)",
    {(WheelBandit, "mean_rewards"): _inner_disk_rewards},
    expect="ERROR",
)


def regret_table(rows: Iterable[Row], delta: float, horizon: int) -> dict[str, Any]:
    """The recorded form of a ``wheel-bandit`` study store's runs at (δ, T).

    Final cumulative expected regret per agent: every seed's value (by replication index) and
    [mean, 1.96 × standard error] over them (:func:`laplace_lab.studies.summary.summarise`),
    agents ordered by mean (Tables 1–2 layout), with the mean wall seconds per run (a lockstep
    batch's time shared by its seeds). An agent with one seed gets an infinite half-width (no
    interval); agents with different numbers of seeds are a ValueError.
    """
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import STUDY
    from laplace_lab.studies.summary import summarise

    chosen = [r for r in rows if (r.params["delta"], r.params["horizon"]) == (delta, horizon)]
    if not chosen:
        raise ValueError(f"rows hold no run at delta={delta}, horizon={horizon}")
    summary = {(s.params["agent"], s.metric): s for s in summarise(STUDY, chosen)}
    counts = {a: s.n for (a, metric), s in summary.items() if metric == "regret"}
    if len(set(counts.values())) > 1:
        raise ValueError(f"agents have different numbers of seeds: {counts}")
    order = sorted(counts, key=lambda a: summary[a, "regret"].mean)
    per_seed: dict[str, dict[int, float]] = {a: {} for a in order}
    seconds: dict[str, list[float]] = {a: [] for a in order}
    for r in chosen:
        per_seed[r.params["agent"]][r.rep] = round(r.metrics["regret"], 2)
        seconds[r.params["agent"]].append(r.seconds)
    final = {}
    for a in order:
        s = summary[a, "regret"]
        half = 1.96 * s.se if s.n > 1 else math.inf
        final[a] = [round(s.mean, 1), round(half, 1)]
    return {
        "horizon": horizon,
        "delta": delta,
        "seeds": next(iter(counts.values())),
        "statistic": "final cumulative expected regret: [mean, 1.96 × standard error] over seeds",
        "final_regret": final,
        "per_seed": {a: [v for _, v in sorted(per_seed[a].items())] for a in order},
        "wall_seconds_per_run": {a: round(float(np.mean(seconds[a])), 1) for a in order},
    }
