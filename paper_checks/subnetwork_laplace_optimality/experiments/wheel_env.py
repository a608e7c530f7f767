"""The Wheel Bandit environment (Riquelme et al. 2018; Raha, Khare & Patra, App. D.1).

References: C. Riquelme, G. Tucker, J. Snoek, "Deep Bayesian Bandits Showdown", ICLR 2018;
S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026), App. D.1.

Contexts x are uniform on the unit disk. Five arms: arm 0 is the central arm, arms 1–4 the
outer arms, one per quadrant. For ‖x‖ > δ the outer arm of x's quadrant pays N(μ_h, σ_h²);
every other arm pays its base mean. Two parameterisations:

- ``"paper"`` (App. D.1): all base means μ_c = 1.0, σ = 0.01; inside the disk every arm is
  optimal, so regret accrues only in the annulus.
- ``"riquelme"`` (Riquelme et al.'s sampler): central arm 1.2, outer arms 1.0, σ = 0.05
  inside; μ_h = 50, σ_h = 0.01 — the central arm is optimal inside the disk.

Regret is the expected regret, max_a E[r | x, a] − E[r | x, a_t], so that it measures the
policy and not the reward noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = ["NUM_ARMS", "WheelBandit"]

NUM_ARMS = 5


@dataclass(frozen=True)
class WheelBandit:
    """The Wheel Bandit with sparsity δ (the high-reward annulus has area 1 − δ²)."""

    delta: float = 0.95
    variant: Literal["paper", "riquelme"] = "paper"
    mu_high: float = 50.0

    def __post_init__(self) -> None:
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1); got delta={self.delta}")
        if self.variant not in ("paper", "riquelme"):
            raise ValueError(f"variant must be 'paper' or 'riquelme'; got {self.variant!r}")

    @property
    def noise_var(self) -> float:
        """σ0², the reward-noise variance of the base arms (App. D.1: 0.01² = 1e-4)."""
        return float(self._base[1][0] ** 2)

    def optimal_arms(self, x: np.ndarray) -> np.ndarray:
        """argmax_a E[r | x, a] per context (ties: the lowest arm)."""
        return np.argmax(self.mean_rewards(x), axis=1)

    @property
    def _base(self) -> tuple[np.ndarray, np.ndarray]:
        if self.variant == "paper":
            return np.full(NUM_ARMS, 1.0), np.full(NUM_ARMS, 0.01)
        return np.array([1.2, 1.0, 1.0, 1.0, 1.0]), np.full(NUM_ARMS, 0.05)

    def contexts(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        """n contexts uniform on the unit disk (radius √U, angle uniform), shape (n, 2)."""
        r = np.sqrt(rng.uniform(size=n))
        phi = rng.uniform(0.0, 2 * np.pi, size=n)
        return np.stack([r * np.cos(phi), r * np.sin(phi)], axis=1)

    @staticmethod
    def quadrant_arm(x: np.ndarray) -> np.ndarray:
        """The outer arm (1–4) of each context's quadrant: 1 (+,+), 2 (+,−), 3 (−,+), 4 (−,−)."""
        x = np.atleast_2d(x)
        return 1 + 2 * (x[:, 0] < 0) + (x[:, 1] < 0)

    def mean_rewards(self, x: np.ndarray) -> np.ndarray:
        """E[r | x, a] for every context and arm, shape (n, 5)."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        if x.ndim != 2 or x.shape[1] != 2:
            raise ValueError(f"x must have shape (n, 2); got {x.shape}")
        means = np.tile(self._base[0], (x.shape[0], 1))
        outer = np.linalg.norm(x, axis=1) > self.delta
        rows = np.flatnonzero(outer)
        means[rows, self.quadrant_arm(x[outer])] = self.mu_high
        return means

    def reward(self, x: np.ndarray, arm: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
        """Sampled rewards of pulling ``arm`` at contexts ``x``."""
        x = np.atleast_2d(x)
        arm = np.asarray(arm, dtype=np.int64).reshape(-1)
        if arm.shape[0] != x.shape[0] or np.any((arm < 0) | (arm >= NUM_ARMS)):
            raise ValueError("arm must hold one index in [0, 5) per context")
        means = self.mean_rewards(x)[np.arange(x.shape[0]), arm]
        high = means == self.mu_high
        sd = np.where(high, 0.01, self._base[1][arm])
        return means + sd * rng.standard_normal(x.shape[0])

    def regret(self, x: np.ndarray, arm: np.ndarray) -> np.ndarray:
        """Expected regret max_a E[r|x,a] − E[r|x,arm] per context."""
        means = self.mean_rewards(x)
        arm = np.asarray(arm, dtype=np.int64).reshape(-1)
        return means.max(axis=1) - means[np.arange(means.shape[0]), arm]
