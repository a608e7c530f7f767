"""MAP training with the papers' recipes, deterministic seeds, and the σ0² plug-in.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations",
arXiv:2605.09075: App. C.1 (Adam 1e-3, batch 256, 100 epochs, cosine
annealing T_max = epochs, η_min = 0, MSE), App. C.2 (SGD + Nesterov 0.9, lr 0.1, weight
decay 1e-4, batch 128, cosine, BCE), App. C.5 (the same with cross-entropy), App. C.6
(Adam 1e-2, cosine). The N(0, 1/α) prior enters the MAP objective as the penalty
α‖θ‖²/(2N) added to the mean negative log-likelihood (the paper fixes α = 1); σ0² is the
residual mean squared error of the MAP estimate, floored at 1e-3 (App. C.1).

Determinism: the initialisation uses a forked torch RNG seeded from ``rng`` (the global
torch RNG is left untouched) and mini-batches are drawn from ``rng`` (a
``numpy.random.Generator`` or an integer seed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from laplace_lab._checks import (
    nonnegative_float,
    one_of,
    optional_positive_int,
    positive_float,
    positive_int,
)
from laplace_lab._random import as_generator

__all__ = [
    "NOISE_FLOOR",
    "TrainConfig",
    "TrainResult",
    "adam_recipe",
    "build_seeded",
    "noise_variance",
    "predict",
    "sgd_recipe",
    "single_threaded",
    "torch_threads",
    "train_map",
]

#: Floor of the σ0² plug-in (App. C.1: "floored at 10^-3 for numerical stability").
NOISE_FLOOR = 1e-3

_LIKELIHOODS = ("regression", "binary", "multiclass")


@dataclass(frozen=True)
class TrainConfig:
    """A MAP training recipe (cosine annealing from ``lr`` to 0 over ``epochs``)."""

    optimizer: str = "adam"
    lr: float = 1e-3
    epochs: int = 100
    batch_size: int = 256
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 0.0
    prior_precision: float = 1.0
    grad_clip: float | None = None

    def __post_init__(self) -> None:
        one_of(self.optimizer, "optimizer", ("adam", "sgd"))
        positive_float(self.lr, "lr")
        positive_int(self.epochs, "epochs")
        positive_int(self.batch_size, "batch_size")
        nonnegative_float(self.prior_precision, "prior_precision")
        nonnegative_float(self.weight_decay, "weight_decay")


def adam_recipe(**changes: Any) -> TrainConfig:
    """App. C.1: Adam, lr 1e-3, batch 256, 100 epochs, cosine, α = 1."""
    return replace(TrainConfig(), **changes)


def sgd_recipe(**changes: Any) -> TrainConfig:
    """App. C.2 / C.5: SGD + Nesterov 0.9, lr 0.1, weight decay 1e-4, batch 128, cosine."""
    base = TrainConfig(optimizer="sgd", lr=0.1, batch_size=128, weight_decay=1e-4)
    return replace(base, **changes)


@dataclass(frozen=True)
class TrainResult:
    """The trained model (eval mode), the per-epoch objective and the wall time."""

    model: torch.nn.Module
    losses: tuple[float, ...]
    seconds: float


def build_seeded(
    factory: Callable[[], torch.nn.Module], *, rng: np.random.Generator | int, dtype: Any = None
) -> Any:
    """``factory()`` with its initialisation drawn from a forked torch RNG seeded from ``rng``.

    The torch seed is one 63-bit draw of ``rng``; the global torch RNG is left untouched.
    """
    torch_seed = int(as_generator(rng).integers(2**63 - 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed)
        model = factory()
    return model if dtype is None else model.to(dtype)


def nll_loss(out: torch.Tensor, y: torch.Tensor, likelihood: str) -> torch.Tensor:
    """Mean negative log-likelihood per sample (regression: ½(y − f)², unit variance)."""
    if likelihood == "regression":
        return 0.5 * F.mse_loss(out.reshape(y.shape), y)
    if likelihood == "binary":
        return F.binary_cross_entropy_with_logits(out.reshape(y.shape), y)
    return F.cross_entropy(out, y)


def as_targets(y: Any, likelihood: str, dtype: Any) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(y))
    if likelihood == "multiclass":
        return t.long()
    return t.to(dtype)


def train_map(
    model: torch.nn.Module,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    config: TrainConfig,
    rng: np.random.Generator | int,
) -> TrainResult:
    """Train ``model`` in place to the MAP: minimise mean NLL + α‖θ‖²/(2N) (App. C).

    Parameters
    ----------
    model : torch.nn.Module
    X : (N, ...) array
    y : (N,) array
        Real targets (regression), 0/1 (binary) or class labels (multiclass).
    likelihood : {"regression", "binary", "multiclass"}
    config : TrainConfig
    rng : numpy.random.Generator or int
        The source of the mini-batch order.

    Examples
    --------
    A linear model y = w·x without bias, on y = 2x at x = 1, 2, 3 (Σx² = 14), under the
    prior precision α = 14: the MAP is w = Σxy / (Σx² + α) = 28 / 28 = 1, and the final
    objective is 7/3 (the mean NLL) + 7/3 (the penalty α w² / (2N)) = 14/3.

    >>> import numpy as np
    >>> import torch
    >>> from laplace_lab.networks.training import TrainConfig, train_map
    >>> model = torch.nn.Linear(1, 1, bias=False).double()
    >>> _ = torch.nn.init.zeros_(model.weight)
    >>> X = np.array([[1.0], [2.0], [3.0]])
    >>> config = TrainConfig(lr=0.1, epochs=300, batch_size=3, prior_precision=14.0)
    >>> result = train_map(model, X, 2.0 * X[:, 0], likelihood="regression", config=config, rng=0)
    >>> round(result.model.weight.item(), 4)
    1.0
    >>> round(result.losses[-1], 4)  # 14 / 3
    4.6667
    """
    if likelihood not in _LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {_LIKELIHOODS}; got {likelihood!r}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig; got {type(config).__name__}")
    dtype = next(model.parameters()).dtype
    Xt = torch.as_tensor(np.asarray(X), dtype=dtype)
    yt = as_targets(y, likelihood, dtype)
    n = Xt.shape[0]
    if n == 0 or yt.shape[0] != n:
        raise ValueError(f"X and y must have the same positive number of rows; got {n}, {len(yt)}")
    params = [t for t in model.parameters() if t.requires_grad]
    if config.optimizer == "adam":
        # foreach: the multi-tensor kernels, bit-identical to the per-tensor loop on CPU
        # (tests/networks) and faster for the many small tensors of an MLP
        opt = torch.optim.Adam(
            params, lr=config.lr, weight_decay=config.weight_decay, foreach=True
        )
    else:
        opt = torch.optim.SGD(
            params,
            lr=config.lr,
            momentum=config.momentum,
            nesterov=config.nesterov,
            weight_decay=config.weight_decay,
        )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=config.epochs, eta_min=0.0)
    rng = as_generator(rng)
    penalty = config.prior_precision / (2.0 * n)
    losses = []
    t0 = time.perf_counter()
    model.train()
    for _ in range(config.epochs):
        order = torch.as_tensor(rng.permutation(n))
        total = 0.0
        for a in range(0, n, config.batch_size):
            idx = order[a : a + config.batch_size]
            opt.zero_grad(set_to_none=True)
            loss = nll_loss(model(Xt[idx]), yt[idx], likelihood)
            if penalty:
                loss = loss + penalty * sum((t * t).sum() for t in params)
            loss.backward()
            if config.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            opt.step()
            total += float(loss.detach()) * idx.numel()
        sched.step()
        losses.append(total / n)
    model.eval()
    return TrainResult(model, tuple(losses), time.perf_counter() - t0)


def predict(model: torch.nn.Module, X: Any, *, batch_size: int = 4096) -> np.ndarray:
    """MAP outputs f_θ̂(X) as float64 NumPy: (N,) for one output, (N, C) for C."""
    dtype = next(model.parameters()).dtype
    Xt = torch.as_tensor(np.asarray(X), dtype=dtype)
    with torch.no_grad():
        out = torch.cat([model(Xt[a : a + batch_size]) for a in range(0, Xt.shape[0], batch_size)])
    out = out.double().numpy()
    return out[:, 0] if out.ndim == 2 and out.shape[1] == 1 else out


def noise_variance(model: torch.nn.Module, X: Any, y: Any, *, floor: float = NOISE_FLOOR) -> float:
    """σ0² plug-in: residual mean squared error of the MAP on (X, y), floored (App. C.1)."""
    floor = positive_float(floor, "floor")
    r = predict(model, X) - np.asarray(y, dtype=np.float64)
    return max(float(np.mean(r * r)), float(floor))


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Bound torch's intra-op threads to ``n`` inside the block (None: unchanged), then restore.

    Small MLPs run several times faster on one thread on a shared 2-core machine.
    """
    n = optional_positive_int(n, "n")
    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextmanager
def single_threaded() -> Iterator[None]:
    """torch's intra-op pool and NumPy's BLAS pool on one thread inside the block.

    The small networks and few-hundred-row factorisations of the paper experiments run
    faster serially on a shared machine: a multi-threaded BLAS pays a large fixed cost per
    small call when cores are oversubscribed (docs/performance.md, "One BLAS thread for
    sequences of small products").
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"), torch_threads(1):
        yield
