"""The configuration and the result of a Wheel-bandit run (Raha, Khare & Patra,
arXiv:2605.09075, §5.2 and App. D.2): the readings of App. D a run can take, and the agents.

:mod:`.wheel_bandit` runs it; the lockstep trainer (:mod:`.wheel_lockstep`) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from laplace_lab._checks import one_of, optional_positive_int, positive_float, positive_int
from laplace_lab.numerics.selection_registry import selection_methods
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
    NUM_ARMS,
    WheelBandit,
)

__all__ = ["READINGS", "BanditConfig", "BanditResult", "check_config", "methods"]

#: The readings of App. D a run can take: field → its values, the first being the default
#: (the text as written).
READINGS: dict[str, tuple[str, ...]] = {
    "posterior_noise": ("estimate", "true"),
    "thompson_noise": ("estimate", "true", "none"),
    "sampling": ("per_arm", "joint"),
    "replay": ("with_replacement", "without_replacement", "whole_when_smaller"),
    "optimizer_state": ("keep", "reset"),
    "network": ("continue", "reinit"),
    "reward_scaling": ("raw", "standardised"),
    "input_scaling": ("raw", "standardised"),
    "refit": ("phase", "round"),
    "regret": ("expected", "realised"),
}


def methods() -> tuple[str, ...]:
    """The agents: ``"map"`` and every registered selection method."""
    return ("map", *selection_methods())


@dataclass(frozen=True)
class BanditConfig:
    """One Neural-Thompson-sampling run (defaults: App. D.2 at T = 16,000, δ = 0.95).

    ``k`` is ignored by ``"map"`` and ``"neural_linear"``. ``noise_floor`` is the lower
    bound of the residual estimate of σ0² (the environment's true σ0² is 1e-4).
    ``torch_threads`` bounds torch's intra-op threads during the run (restored afterwards;
    None leaves them alone): the small batches run an order of magnitude faster on one
    thread on a shared machine (docs/performance.md, "One torch thread for the Wheel
    Bandit"); the BLAS pools run on one thread too.

    The readings of App. D (values in :data:`READINGS`, first = default):

    - ``posterior_noise``: σ0² in Ω_SS — the residual ``"estimate"`` or the environment's
      ``"true"`` reward-noise variance;
    - ``thompson_noise``: σ0² added to the Thompson variance — ``"estimate"``, ``"true"`` or
      ``"none"`` (epistemic only);
    - ``sampling``: ``"per_arm"`` independent draws r̃_a (App. D.2), or ``"joint"``: one
      draw δ ~ N(0, Ω_SS⁻¹) per round shared by the arms, r̃_a = f + g_Sᵀδ + noise;
    - ``replay``: batches ``"with_replacement"``, ``"without_replacement"`` (min(512, t)
      distinct rows), or ``"whole_when_smaller"`` (the whole buffer while t ≤ 512);
    - ``optimizer_state``: Adam's moments ``"keep"`` or ``"reset"`` at every phase;
    - ``network``: ``"continue"`` training, or ``"reinit"`` θ (and Adam) at every phase;
    - ``reward_scaling``: ``"raw"`` rewards, or ``"standardised"`` by the buffer's mean and
      standard deviation at each phase (σ0² then in those units);
    - ``input_scaling``: ``"raw"`` contexts, or ``"standardised"`` (each coordinate of a
      context uniform on the unit disk has standard deviation 1/2, so x ↦ 2x);
    - ``refit``: σ0² and Ω_SS refitted once per ``"phase"`` or every ``"round"`` (the rows
      of the phase added, θ fixed);
    - ``reselect_every``: S re-selected every this many phases;
    - ``regret``: ``"expected"`` or ``"realised"`` (r(x, a*) − r(x, a_t), both sampled).
    """

    method: str = "gradient_laplace"
    k: int = 100
    delta: float = 0.95
    horizon: int = 16000
    variant: str = "paper"
    warm_pulls: int = 3
    steps_per_phase: int = 20
    updates_per_phase: int = 100
    lr: float = 3e-3
    grad_clip: float = 1.0
    batch_size: int = 512
    prior_precision: float = 1.0
    noise_window: int = 200
    noise_floor: float = 1e-4
    posterior_noise: str = "estimate"
    thompson_noise: str = "estimate"
    sampling: str = "per_arm"
    replay: str = "with_replacement"
    optimizer_state: str = "keep"
    network: str = "continue"
    reward_scaling: str = "raw"
    input_scaling: str = "raw"
    refit: str = "phase"
    reselect_every: int = 1
    regret: str = "expected"
    torch_threads: int | None = 1

    def __post_init__(self) -> None:
        one_of(self.method, "method", methods())
        for name in (
            "k",
            "horizon",
            "warm_pulls",
            "steps_per_phase",
            "updates_per_phase",
            "batch_size",
            "noise_window",
            "reselect_every",
        ):
            positive_int(getattr(self, name), name)
        if self.horizon < NUM_ARMS * self.warm_pulls:
            raise ValueError(
                f"horizon must cover the warm start of {NUM_ARMS * self.warm_pulls} rounds; "
                f"got horizon={self.horizon}"
            )
        optional_positive_int(self.torch_threads, "torch_threads")
        for name in ("lr", "grad_clip", "prior_precision", "noise_floor"):
            positive_float(getattr(self, name), name)
        for name, values in READINGS.items():
            one_of(getattr(self, name), name, values)
        WheelBandit(self.delta, self.variant)  # validates delta and variant

    def readings(self) -> dict[str, object]:
        """The readings that differ from the text as written (``variant`` included)."""
        out: dict[str, object] = {
            name: getattr(self, name)
            for name, values in READINGS.items()
            if getattr(self, name) != values[0]
        }
        if self.variant != "paper":
            out["variant"] = self.variant
        if self.reselect_every != 1:
            out["reselect_every"] = self.reselect_every
        return out


@dataclass(frozen=True)
class BanditResult:
    """Per-round regret and pulled arms of one run, and the run's wall time (s).

    In a lockstep batch (:func:`run_bandits`) ``seconds`` is the batch's wall time divided
    by its number of runs.
    """

    config: BanditConfig
    regret: np.ndarray
    arms: np.ndarray
    seconds: float

    @property
    def cumulative_regret(self) -> np.ndarray:
        """Σ_{t' ≤ t} regret_t' for every round t (Fig. 7's traces)."""
        return np.cumsum(self.regret)


def check_config(config: object) -> BanditConfig:
    """``config``, or a TypeError naming it when it is not a :class:`BanditConfig`."""
    if not isinstance(config, BanditConfig):
        raise TypeError(f"config must be a BanditConfig; got {type(config).__name__}")
    return config
