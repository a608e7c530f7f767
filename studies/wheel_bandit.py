"""Neural Thompson sampling on the Wheel Bandit with sub-network Laplace posteriors.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
§5.2 and App. D.2. The reward model f_θ(x, a) is the 2×100
ReLU MLP on the context and a one-hot arm (:func:`laplace_lab.studies.models.bandit_net`, p =
11,001). One run:

1. warm start: three pulls of every arm at fresh contexts (15 rounds, in a random order);
2. then alternately 100 Adam updates (lr 3e-3, gradient-norm clip 1.0, replay batches of 512
   drawn uniformly with replacement, mean squared error) and 20 interaction rounds, until
   the horizon T (the warm start counts towards T; T = 16,000 gives 800 phases).

At the end of each training phase the posterior is refitted once: σ0² is the mean squared
residual of the last 200 replay entries (floored), S is re-selected on the replay inputs, and
Ω_SS = J_SᵀJ_S/σ0² + αI_k (α = 1) is factorised. In each round, for every arm a,
r̃_a ~ N(f(x, a), σ0² + g_S(x, a)ᵀ Ω_SS⁻¹ g_S(x, a)) (App. D.2) and the arm with the largest
r̃_a is pulled; MAP pulls argmax_a f(x, a) (App. B). The model and Ω_SS are fixed within a
phase and contexts do not depend on actions, so a phase's 20 rounds are evaluated as one
batch — identical to the sequential loop.

Any registered selection method (:mod:`laplace_lab.numerics.selection_registry`) can be an
agent; it runs on the replay inputs X_R (n rows) through a lazy
:class:`~laplace_lab.numerics.network_ggn.NetworkGGN`, never the p × p matrix nor the n × p
Jacobian: Gradient-Laplace = top-k streamed scores s_i = (1/n) Σ g_i(x)² (Alg. 1);
Subnet-Diagonal = the k smallest diag Ω = n·s/σ0² + α (App. B); Greedy-Laplace = Alg. 2 on
the 2k Gradient-Laplace candidates (App. C.3's default m = 2k), from their Jacobian columns
only; Last-k and NeuralLinear by position (App. B).

Regret is the expected regret of :meth:`laplace_lab.studies.wheel_env.WheelBandit.regret`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from laplace_lab._checks import one_of, optional_positive_int, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.numerics.predictive import subnetwork_variance
from laplace_lab.numerics.selection_registry import SubnetProblem, select, selection_methods
from laplace_lab.studies.models import bandit_net
from laplace_lab.studies.training import build_seeded, torch_threads
from laplace_lab.studies.wheel_env import NUM_ARMS, WheelBandit

__all__ = [
    "BanditConfig",
    "BanditResult",
    "SubnetPosterior",
    "arm_inputs",
    "choose_arms",
    "methods",
    "run_bandit",
    "select_subnetwork",
    "thompson_variance",
]


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
    Bandit").
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
        WheelBandit(self.delta, self.variant)  # validates delta and variant


@dataclass(frozen=True)
class BanditResult:
    """Per-round expected regret and pulled arms of one run, and its wall time (s)."""

    config: BanditConfig
    regret: np.ndarray
    arms: np.ndarray
    seconds: float

    @property
    def cumulative_regret(self) -> np.ndarray:
        """Σ_{t' ≤ t} regret_t' for every round t (Fig. 7's traces)."""
        return np.cumsum(self.regret)


@dataclass(frozen=True)
class SubnetPosterior:
    """The sub-network Laplace posterior of one phase: S, Ω_SS (as a GGN on J_S) and σ0²."""

    S: np.ndarray
    ggn: GGN
    noise_var: float


def arm_inputs(x: np.ndarray) -> np.ndarray:
    """Network inputs [x, onehot(a)] for every context and arm: (n·5, 7), arm fastest."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    if x.ndim != 2 or x.shape[1] != 2:
        raise ValueError(f"x must have shape (n, 2); got {x.shape}")
    n = x.shape[0]
    ctx = np.repeat(x, NUM_ARMS, axis=0)
    onehot = np.tile(np.eye(NUM_ARMS), (n, 1))
    return np.concatenate([ctx, onehot], axis=1)


def _inputs(model: torch.nn.Module, X: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(X, dtype=next(model.parameters()).dtype)


def _forward(model: torch.nn.Module, X: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(_inputs(model, X)).reshape(-1).double().numpy()


def select_subnetwork(
    model: torch.nn.Module,
    X: np.ndarray,
    method: str,
    k: int,
    *,
    noise_var: float,
    prior_precision: float = 1.0,
) -> SubnetPosterior:
    """S of ``method`` (a registered selection method) on the replay inputs ``X``, and Ω_SS.

    Ω = J_wᵀJ_w + αI of the network on ``X`` is a :class:`NetworkGGN`: the selection streams
    the scores and computes only the Jacobian columns it needs (Greedy-Laplace: its m = 2k
    candidates, App. C.3's default), and Ω_SS = J_SᵀJ_S/σ0² + αI_k is built from the columns
    of S (App. D.2).
    """
    if method == "map":
        raise ValueError("method 'map' has no sub-network")
    net = NetworkGGN(model, X, noise_var=noise_var, prior_precision=prior_precision)
    S = select(method, SubnetProblem(net), k, shared={"candidates": "2k"})
    return SubnetPosterior(np.asarray(S, dtype=np.int64), net.columns_ggn(S), float(noise_var))


def thompson_variance(
    model: torch.nn.Module, posterior: SubnetPosterior, X: np.ndarray
) -> np.ndarray:
    """Var[r̂(x*, a)] = σ0² + g_S(x*, a)ᵀ Ω_SS⁻¹ g_S(x*, a) for every row of ``X`` (App. D.2)."""
    G = per_sample_jacobian(model, _inputs(model, X), subset=posterior.S).double().numpy()
    k = posterior.S.size
    return posterior.noise_var + np.asarray(subnetwork_variance(posterior.ggn, G, np.arange(k)))


def choose_arms(
    mean: np.ndarray, var: np.ndarray | None, *, rng: np.random.Generator
) -> np.ndarray:
    """Thompson arms argmax_a r̃_a, r̃_a ~ N(mean_a, var_a); MAP (``var=None``): argmax mean.

    ``mean`` and ``var`` have shape (n, 5); ties go to the lowest arm.
    """
    mean = np.asarray(mean, dtype=np.float64)
    if mean.ndim != 2 or mean.shape[1] != NUM_ARMS:
        raise ValueError(f"mean must have shape (n, {NUM_ARMS}); got {mean.shape}")
    if var is None:
        return np.argmax(mean, axis=1)
    var = np.asarray(var, dtype=np.float64)
    if var.shape != mean.shape or np.any(~(var >= 0)):
        raise ValueError(f"var must be non-negative with shape {mean.shape}")
    return np.argmax(mean + np.sqrt(var) * rng.standard_normal(mean.shape), axis=1)


def _train_phase(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    X: torch.Tensor,
    y: torch.Tensor,
    cfg: BanditConfig,
    rng: np.random.Generator,
) -> None:
    model.train()
    params = [t for t in model.parameters() if t.requires_grad]
    for _ in range(cfg.updates_per_phase):
        idx = torch.as_tensor(rng.integers(0, X.shape[0], size=cfg.batch_size))
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(X[idx]).reshape(-1), y[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
    model.eval()


def run_bandit(config: BanditConfig, *, rng: np.random.Generator | int) -> BanditResult:
    """One Neural-Thompson-sampling run on the Wheel Bandit (module docstring).

    All randomness comes from ``rng``: the network initialisation (``torch.manual_seed`` of a
    draw of ``rng``, in a forked torch RNG), contexts, rewards, Thompson noise, replay batches.
    """
    if not isinstance(config, BanditConfig):
        raise TypeError(f"config must be a BanditConfig; got {type(config).__name__}")
    rng = as_generator(rng)
    with torch_threads(config.torch_threads):
        return _run(config, rng)


def _run(cfg: BanditConfig, rng: np.random.Generator) -> BanditResult:
    t0 = time.perf_counter()
    env = WheelBandit(cfg.delta, cfg.variant)
    model = build_seeded(bandit_net, rng=rng)
    model.eval()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    T = cfg.horizon
    regret = np.empty(T)
    arms = np.empty(T, dtype=np.int64)
    X_buf = np.empty((T, 7), dtype=np.float32)
    y_buf = np.empty(T, dtype=np.float32)
    onehot = np.eye(NUM_ARMS)

    def record(t: int, x: np.ndarray, a: np.ndarray) -> None:
        n = x.shape[0]
        arms[t : t + n] = a
        regret[t : t + n] = env.regret(x, a)
        X_buf[t : t + n] = np.concatenate([x, onehot[a]], axis=1)
        y_buf[t : t + n] = env.reward(x, a, rng=rng)

    n_warm = NUM_ARMS * cfg.warm_pulls
    record(
        0,
        env.contexts(n_warm, rng=rng),
        rng.permutation(np.repeat(np.arange(NUM_ARMS), cfg.warm_pulls)),
    )
    t = n_warm
    Xt, yt = torch.from_numpy(X_buf), torch.from_numpy(y_buf)
    while t < T:
        _train_phase(model, opt, Xt[:t], yt[:t], cfg, rng)
        n = min(cfg.steps_per_phase, T - t)
        x = env.contexts(n, rng=rng)
        inputs = arm_inputs(x)
        mean = _forward(model, inputs).reshape(n, NUM_ARMS)
        var = None
        if cfg.method != "map":
            Xr = X_buf[:t].astype(np.float64)
            tail = Xr[-cfg.noise_window :]
            resid = _forward(model, tail) - y_buf[t - tail.shape[0] : t]
            s2 = max(float(np.mean(resid**2)), cfg.noise_floor)
            post = select_subnetwork(
                model, Xr, cfg.method, cfg.k, noise_var=s2, prior_precision=cfg.prior_precision
            )
            var = thompson_variance(model, post, inputs).reshape(n, NUM_ARMS)
        record(t, x, choose_arms(mean, var, rng=rng))
        t += n
    return BanditResult(cfg, regret, arms, time.perf_counter() - t0)
