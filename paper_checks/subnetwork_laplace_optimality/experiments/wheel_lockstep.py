"""The Wheel-bandit loop for B seeds of one agent, run in lockstep.

Every seed owns its generator, replay buffer, network (a row of a
:class:`~laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_ensemble.StackedMLP`)
and Adam state; all seeds have the same number of rounds at every phase, so their training steps
are taken together. Each seed draws from its generator in the order of the single-seed loop — the
network initialisation, then per phase the replay batches, the contexts, the Thompson noise and the
rewards — so a seed's run does not depend on the others in its batch.

Reference: S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
Approximations: New Results and Methods", arXiv:2605.09075 (2026), App. D.2.
"""

from __future__ import annotations

import numpy as np
import torch

from laplace_lab.networks.models import bandit_net
from laplace_lab.networks.training import build_seeded
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_config import (
    BanditConfig,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_ensemble import (
    StackedAdam,
    StackedMLP,
    clip_grad_norms_,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
    NUM_ARMS,
    WheelBandit,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior import (
    SubnetPosterior,
    arm_inputs,
    choose_arms,
    replay_posterior,
    residual_noise,
    subset_jacobian,
)

__all__ = ["Lockstep"]

#: Standard deviation of one coordinate of a context uniform on the unit disk (E x₁² = 1/4).
_CONTEXT_SD = 0.5


class Lockstep:
    """B runs of ``config`` with the generators ``rngs`` (see the module docstring)."""

    def __init__(self, config: BanditConfig, rngs: list[np.random.Generator]) -> None:
        self.cfg, self.rngs = config, rngs
        self.env = WheelBandit(config.delta, config.variant)
        self.net = StackedMLP([build_seeded(bandit_net, rng=r) for r in rngs])
        self.opt = StackedAdam(self.net.storage, lr=config.lr)
        self.views = [self.net.module(b) for b in range(len(rngs))]
        B, T = len(rngs), config.horizon
        self.X = np.empty((B, T, 7), dtype=np.float32)
        self.y = np.empty((B, T), dtype=np.float32)
        self.regret = np.empty((B, T))
        self.arms = np.empty((B, T), dtype=np.int64)
        self.scale = np.ones((B, 2))  # reward standardisation (mean, sd) per seed
        self.subsets: list[np.ndarray | None] = [None] * B
        # The optimal arm's reward of a realised regret comes from a spawned stream, so that
        # the regret definition does not shift the draws of the agent and its environment.
        self.regret_rngs = [r.spawn(1)[0] for r in rngs] if config.regret == "realised" else []
        self.t, self.phase = 0, 0
        self._rows: tuple[np.ndarray, np.ndarray] | None = None  # the replay batch's arrays

    # ------------------------------------------------------------------ the environment
    def _inputs(self, x: np.ndarray) -> np.ndarray:
        """Network inputs of every arm at contexts x (n·5, 7), float64."""
        X = arm_inputs(x)
        if self.cfg.input_scaling == "standardised":
            X[:, :2] /= _CONTEXT_SD
        return X

    def _record(self, b: int, x: np.ndarray, a: np.ndarray) -> None:
        """Pull arms ``a`` at contexts ``x`` for seed b: regret, buffer rows, rewards."""
        t, n, rng = self.t, x.shape[0], self.rngs[b]
        self.arms[b, t : t + n] = a
        expected = self.env.regret(x, a)
        X = self._inputs(x).reshape(n, NUM_ARMS, -1)[np.arange(n), a]
        self.X[b, t : t + n] = X
        reward = self.env.reward(x, a, rng=rng)
        self.y[b, t : t + n] = reward
        if self.cfg.regret == "realised":
            best = self.env.optimal_arms(x)
            best_reward = self.env.reward(x, best, rng=self.regret_rngs[b])
            best_reward = np.where(best == a, reward, best_reward)
            self.regret[b, t : t + n] = best_reward - reward
        else:
            self.regret[b, t : t + n] = expected

    # ------------------------------------------------------------------ training
    def _batch(self, rng: np.random.Generator, t: int) -> np.ndarray:
        cfg = self.cfg
        if cfg.replay == "without_replacement":
            return rng.choice(t, size=min(cfg.batch_size, t), replace=False)
        if cfg.replay == "whole_when_smaller" and t <= cfg.batch_size:
            return np.arange(t)
        return rng.integers(0, t, size=cfg.batch_size)

    def _replay_rows(
        self, X: np.ndarray, y: np.ndarray, idx: list[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every seed's replay batch (rows ``idx[b]`` of its buffer), in kept arrays."""
        n = idx[0].size
        if self._rows is None or self._rows[1].shape[1] != n:
            self._rows = (
                np.empty((len(idx), n, X.shape[2]), X.dtype),
                np.empty((len(idx), n), y.dtype),
            )
        Xb, yb = self._rows
        for b, rows in enumerate(idx):
            np.take(X[b], rows, axis=0, out=Xb[b])
            np.take(y[b], rows, out=yb[b])
        return Xb, yb

    def _targets(self) -> np.ndarray:
        """The training targets (B, t): raw rewards, or standardised per seed."""
        y = self.y[:, : self.t]
        if self.cfg.reward_scaling == "raw":
            return y
        mean = y.mean(axis=1, dtype=np.float64)
        sd = y.std(axis=1, dtype=np.float64)
        sd = np.where(sd > 0, sd, 1.0)
        self.scale = np.stack([mean, sd], axis=1)
        return ((y - mean[:, None]) / sd[:, None]).astype(np.float32)

    def _train(self) -> None:
        cfg = self.cfg
        if self.phase > 0 and cfg.network == "reinit":
            for b, rng in enumerate(self.rngs):
                self.net.set_network(b, build_seeded(bandit_net, rng=rng))
            self.opt.reset()
        elif self.phase > 0 and cfg.optimizer_state == "reset":
            self.opt.reset()
        X, y = self.X, self._targets()
        blocks = self.net.blocks()
        for _ in range(cfg.updates_per_phase):
            idx = [self._batch(rng, self.t) for rng in self.rngs]
            Xb, yb = self._replay_rows(X, y, idx)
            grad = self.net.gradients(torch.from_numpy(Xb), torch.from_numpy(yb))
            clip_grad_norms_(grad, blocks, cfg.grad_clip)
            self.opt.step(grad)

    # ------------------------------------------------------------------ the posterior
    def _noise(self, b: int, f_tail: np.ndarray) -> float:
        """σ̂0² from the last residuals of seed b, in the units the network is trained in."""
        t, w = self.t, min(self.cfg.noise_window, self.t)
        mean, sd = self.scale[b] if self.cfg.reward_scaling == "standardised" else (0.0, 1.0)
        y = self.y[b, t - w : t]
        if self.cfg.reward_scaling == "standardised":
            y = (y - mean) / sd
        floor = self.cfg.noise_floor / sd**2
        return residual_noise(f_tail[b], y, floor=floor)

    def _noise_vars(self, b: int, estimate: float) -> tuple[float, float]:
        """(σ0² in Ω_SS, σ0² added to the Thompson variance) under the configured readings."""
        cfg = self.cfg
        sd = self.scale[b, 1] if cfg.reward_scaling == "standardised" else 1.0
        true = self.env.noise_var / sd**2
        omega = estimate if cfg.posterior_noise == "estimate" else true
        ts = {"estimate": estimate, "true": true, "none": 0.0}[cfg.thompson_noise]
        return omega, ts

    def _posterior(self, b: int, noise_var: float) -> SubnetPosterior:
        cfg = self.cfg
        reselect = self.subsets[b] is None or self.phase % cfg.reselect_every == 0
        post = replay_posterior(
            self.views[b],
            torch.from_numpy(self.X[b, : self.t]),
            cfg.method,
            cfg.k,
            noise_var=noise_var,
            prior_precision=cfg.prior_precision,
            S=None if reselect else self.subsets[b],
        )
        self.subsets[b] = post.S
        return post

    def _thompson(
        self, b: int, post: SubnetPosterior, mean: np.ndarray, inputs: np.ndarray, ts: float
    ) -> np.ndarray:
        """The arms of seed b for the contexts of ``inputs`` (n·5 rows), mean (n, 5)."""
        G = subset_jacobian(self.views[b], torch.from_numpy(inputs), post.S)
        rng, n = self.rngs[b], mean.shape[0]
        if self.cfg.sampling == "per_arm":
            var = ts + post.epistemic(G).reshape(n, NUM_ARMS)
            return choose_arms(mean, var, rng=rng)
        arms = np.empty(n, dtype=np.int64)
        for r in range(n):
            rows = slice(NUM_ARMS * r, NUM_ARMS * (r + 1))
            sample = mean[r] + post.draw(G[rows], rng=rng)
            arms[r] = np.argmax(sample + np.sqrt(ts) * rng.standard_normal(NUM_ARMS))
        return arms

    # ------------------------------------------------------------------ the loop
    def _tails(self) -> np.ndarray:
        w = min(self.cfg.noise_window, self.t)
        return self.net.forward(torch.from_numpy(self.X[:, self.t - w : self.t])).double().numpy()

    def _act(self) -> None:
        cfg, B = self.cfg, len(self.rngs)
        n = min(cfg.steps_per_phase, cfg.horizon - self.t)
        xs = [self.env.contexts(n, rng=rng) for rng in self.rngs]
        inputs = np.stack([self._inputs(x) for x in xs]).astype(np.float32)
        mean = self.net.forward(torch.from_numpy(inputs)).double().numpy()
        mean = mean.reshape(B, n, NUM_ARMS)
        if cfg.method == "map":
            for b in range(B):
                self._record(b, xs[b], choose_arms(mean[b], None, rng=self.rngs[b]))
            self.t += n
            return
        if cfg.refit == "round":
            self._act_by_round(xs, inputs, mean)
            return
        tails = self._tails()
        for b in range(B):
            omega, ts = self._noise_vars(b, self._noise(b, tails))
            post = self._posterior(b, omega)
            self._record(b, xs[b], self._thompson(b, post, mean[b], inputs[b], ts))
        self.t += n

    def _act_by_round(self, xs: list[np.ndarray], inputs: np.ndarray, mean: np.ndarray) -> None:
        """The phase's rounds one at a time: σ0² and Ω_SS refitted after every pull."""
        B, n = len(self.rngs), mean.shape[1]
        posts: list[SubnetPosterior | None] = [None] * B
        for r in range(n):
            tails = self._tails()
            for b in range(B):
                omega, ts = self._noise_vars(b, self._noise(b, tails))
                if posts[b] is None:
                    posts[b] = self._posterior(b, omega)
                else:
                    new = torch.from_numpy(self.X[b, self.t - 1 : self.t])
                    J = subset_jacobian(self.views[b], new, posts[b].S)
                    posts[b] = posts[b].refit(J, noise_var=omega)
                rows = inputs[b, NUM_ARMS * r : NUM_ARMS * (r + 1)]
                a = self._thompson(b, posts[b], mean[b, r : r + 1], rows, ts)
                self._record(b, xs[b][r : r + 1], a)
            self.t += 1

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """(regret (B, T), arms (B, T))."""
        cfg = self.cfg
        n_warm = NUM_ARMS * cfg.warm_pulls
        for b, rng in enumerate(self.rngs):
            x = self.env.contexts(n_warm, rng=rng)
            self._record(b, x, rng.permutation(np.repeat(np.arange(NUM_ARMS), cfg.warm_pulls)))
        self.t = n_warm
        while self.t < cfg.horizon:
            self._train()
            self._act()
            self.phase += 1
        return self.regret, self.arms
