"""A small but real study for testing the framework (not shipped in the registry).

Monte Carlo estimate of the mean of an exponential distribution with known mean ``scale``:
each replication draws ``n`` samples and records the estimate, its error and whether the
nominal 95% normal interval covers the true mean (a 0/1 metric: its probability is 0.95 up
to the O(1/√n) skewness correction). ``pause`` (seconds) makes a replication slow enough to
be killed mid-run.
"""

from __future__ import annotations

import math
import time

import numpy as np

from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study


def run_one(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    """One Monte Carlo estimate of E[X] = scale for X ~ Exponential(scale)."""
    x = rng.exponential(params["scale"], size=params["n"])
    mean = float(x.mean())
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    if params["pause"] > 0:
        time.sleep(params["pause"])
    return {
        "estimate": mean,
        "error": mean - params["scale"],
        "covered": float(abs(mean - params["scale"]) <= 1.959963984540054 * se),
    }


TOY = register(
    Study(
        name="toy-exponential-mean",
        description="Monte Carlo mean of Exponential(scale): estimate, error, CI coverage.",
        grid={"n": (100, 1000), "scale": (0.5, 2.0), "pause": (0.0,)},
        full_grid={"n": (100, 1000, 10000), "scale": (0.5, 2.0), "pause": (0.0,)},
        replications=50,
        full_replications=1000,
        run_one=run_one,
        probabilities=("covered",),
        x="n",
    )
)


def run_batch(params: dict, *, rngs: list[np.random.Generator]) -> list[dict[str, float]]:
    """Several replications at once (what a lockstep study does, here one after another)."""
    return [run_one(params, rng=rng) for rng in rngs]


#: The toy with batches of 5 replications per task (not registered).
TOY_BATCHED = Study(
    name="toy-exponential-mean-batched",
    description="The toy study, replications run in batches of 5.",
    grid=TOY.grid,
    full_grid=TOY.full_grid,
    replications=12,
    full_replications=12,
    run_one=run_one,
    run_batch=run_batch,
    batch_size=5,
)
