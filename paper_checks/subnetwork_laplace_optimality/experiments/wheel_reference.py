"""The single-seed Wheel-bandit loop written with torch's own training tools: the oracle.

The App. D.2 recipe of Raha, Khare & Patra (arXiv:2605.09075) as a user would write it —
``nn.Sequential``, autograd, ``clip_grad_norm_`` and ``torch.optim.Adam``, one seed at a time, the
replay batch indexed from the buffer — sharing only the posterior
(:mod:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior`) and the
environment with the lockstep engine
(:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.run_bandits`).
Tests require both to give the same arms and regrets; the benchmark ``bandit`` times one against
the other. Only the text as written is supported (no readings).

Reference: S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
Approximations: New Results and Methods", arXiv:2605.09075 (2026), App. D.2.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from laplace_lab._random import as_generator
from laplace_lab.networks.models import bandit_net
from laplace_lab.networks.training import build_seeded, torch_threads
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
    BanditConfig,
    BanditResult,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
    NUM_ARMS,
    WheelBandit,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior import (
    SubnetPosterior,
    arm_inputs,
    choose_arms,
    residual_noise,
    select_subnetwork,
    subset_jacobian,
)

__all__ = ["run_bandit_reference"]


def _train_phase(model, opt, X, y, cfg: BanditConfig, rng: np.random.Generator) -> None:
    params = list(model.parameters())
    for _ in range(cfg.updates_per_phase):
        idx = torch.as_tensor(rng.integers(0, X.shape[0], size=cfg.batch_size))
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(X[idx]).reshape(-1), y[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()


def run_bandit_reference(config: BanditConfig, *, rng: np.random.Generator | int) -> BanditResult:
    """One run of ``config`` (the text as written) by the plain single-seed loop."""
    if not isinstance(config, BanditConfig):
        raise TypeError(f"config must be a BanditConfig; got {type(config).__name__}")
    if config.readings():
        raise ValueError(f"the reference loop runs App. D as written; got {config.readings()}")
    rng = as_generator(rng)
    with torch_threads(config.torch_threads), threadpool_limits(limits=1, user_api="blas"):
        return _run(config, rng)


def _run(cfg: BanditConfig, rng: np.random.Generator) -> BanditResult:
    t0 = time.perf_counter()
    env = WheelBandit(cfg.delta, cfg.variant)
    model = build_seeded(bandit_net, rng=rng).eval()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    T = cfg.horizon
    regret, arms = np.empty(T), np.empty(T, dtype=np.int64)
    X_buf, y_buf = np.empty((T, 7), dtype=np.float32), np.empty(T, dtype=np.float32)
    onehot = np.eye(NUM_ARMS)

    def record(t: int, x: np.ndarray, a: np.ndarray) -> None:
        n = x.shape[0]
        arms[t : t + n] = a
        regret[t : t + n] = env.regret(x, a)
        X_buf[t : t + n] = np.concatenate([x, onehot[a]], axis=1)
        y_buf[t : t + n] = env.reward(x, a, rng=rng)

    def forward(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model(torch.as_tensor(X, dtype=torch.float32)).reshape(-1).double().numpy()

    n_warm = NUM_ARMS * cfg.warm_pulls
    x = env.contexts(n_warm, rng=rng)
    record(0, x, rng.permutation(np.repeat(np.arange(NUM_ARMS), cfg.warm_pulls)))
    t = n_warm
    Xt, yt = torch.from_numpy(X_buf), torch.from_numpy(y_buf)
    while t < T:
        _train_phase(model, opt, Xt[:t], yt[:t], cfg, rng)
        n = min(cfg.steps_per_phase, T - t)
        x = env.contexts(n, rng=rng)
        inputs = arm_inputs(x)
        mean = forward(inputs).reshape(n, NUM_ARMS)
        var = None
        if cfg.method != "map":
            w = min(cfg.noise_window, t)
            s2 = residual_noise(forward(X_buf[t - w : t]), y_buf[t - w : t], floor=cfg.noise_floor)
            S = select_subnetwork(
                model, Xt[:t], cfg.method, cfg.k, noise_var=s2, prior_precision=cfg.prior_precision
            )
            post = SubnetPosterior.from_rows(
                S,
                subset_jacobian(model, Xt[:t], S),
                noise_var=s2,
                prior_precision=cfg.prior_precision,
            )
            G = subset_jacobian(model, torch.as_tensor(inputs, dtype=torch.float32), S)
            var = s2 + post.epistemic(G).reshape(n, NUM_ARMS)
        record(t, x, choose_arms(mean, var, rng=rng))
        t += n
    return BanditResult(cfg, regret, arms, time.perf_counter() - t0)
