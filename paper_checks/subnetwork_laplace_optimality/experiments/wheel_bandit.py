"""Neural Thompson sampling on the Wheel Bandit with sub-network Laplace posteriors.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
§5.2 and App. D.2. The reward model f_θ(x, a) is the 2×100 ReLU MLP on the context and a
one-hot arm (:func:`laplace_lab.networks.models.bandit_net`, p = 11,001). One run:

1. warm start: three pulls of every arm at fresh contexts (15 rounds, in a random order);
2. then alternately 100 Adam updates (lr 3e-3, gradient-norm clip 1.0, replay batches of 512
   drawn uniformly with replacement, mean squared error) and 20 interaction rounds, until
   the horizon T (the warm start counts towards T; T = 16,000 gives 800 phases).

At the end of each training phase the posterior is refitted once: σ0² is the mean squared
residual of the last 200 replay entries (floored), S is re-selected on the replay inputs, and
Ω_SS = J_SᵀJ_S/σ0² + αI_k (α = 1) is factorised. In each round, for every arm a,
r̃_a ~ N(f(x, a), σ0² + g_S(x, a)ᵀ Ω_SS⁻¹ g_S(x, a)) and the arm with the largest r̃_a is
pulled; MAP pulls argmax_a f(x, a) (App. B). The model and Ω_SS are fixed within a phase and
contexts do not depend on actions, so a phase's 20 rounds are evaluated as one batch —
identical to the sequential loop. Any registered selection method
(:mod:`laplace_lab.numerics.selection_registry`) can be an agent
(:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior`).

:func:`run_bandits` runs B seeds of one agent in lockstep: their networks are trained together
(:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_ensemble`), each
with its own generator, buffer and Adam state, and each run is bit for bit the run of that seed
alone (:func:`run_bandit`).

App. D leaves details open; the fields of :class:`BanditConfig` after ``noise_floor`` choose
among the readings (defaults: the text as written, above): which σ0² enters Ω_SS and the
Thompson variance, joint or per-arm Thompson draws, the replay sampling, keeping or resetting
Adam's state or the network each phase, reward and input scaling, the refit and re-selection
cadence, and the regret definition. ``variant`` chooses the arm means (App. D.1 or Riquelme
et al.'s).

Regret is the expected regret of
:meth:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env.WheelBandit.regret`
(or, with ``regret="realised"``, the realised reward difference).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from laplace_lab._random import as_generator
from laplace_lab.networks.training import torch_threads
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_config import (
    READINGS,
    BanditConfig,
    BanditResult,
    check_config,
    methods,
)

__all__ = ["READINGS", "BanditConfig", "BanditResult", "methods", "run_bandit", "run_bandits"]


def run_bandit(config: BanditConfig, *, rng: np.random.Generator | int) -> BanditResult:
    """One Neural-Thompson-sampling run on the Wheel Bandit (module docstring).

    All randomness comes from ``rng``: the network initialisation (``torch.manual_seed`` of a
    draw of ``rng``, in a forked torch RNG), contexts, rewards, Thompson noise, replay batches.
    """
    return run_bandits(check_config(config), rngs=[as_generator(rng)])[0]


def run_bandits(
    config: BanditConfig, *, rngs: Sequence[np.random.Generator | int]
) -> list[BanditResult]:
    """Runs of one agent for several generators, trained in lockstep.

    Run b uses only ``rngs[b]`` and equals ``run_bandit(config, rng=rngs[b])`` bit for bit
    (same arms, same regrets); the networks share the work of their training steps.
    """
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_lockstep import (
        Lockstep,
    )

    config = check_config(config)
    if isinstance(rngs, np.random.Generator | int) or len(rngs) == 0:
        raise ValueError("rngs must be a non-empty sequence of generators or seeds")
    gens = [as_generator(r, "rngs") for r in rngs]
    if len({id(g) for g in gens}) != len(gens):
        raise ValueError("rngs must not repeat a generator (each run owns its stream)")
    t0 = time.perf_counter()
    with torch_threads(config.torch_threads), threadpool_limits(limits=1, user_api="blas"):
        regret, arms = Lockstep(config, gens).run()
    seconds = (time.perf_counter() - t0) / len(gens)
    return [BanditResult(config, regret[b], arms[b], seconds) for b in range(len(gens))]
