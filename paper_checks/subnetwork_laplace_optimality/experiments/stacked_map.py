"""MAP training of several replications' regression MLPs in lockstep, as one stacked ensemble.

:func:`train_stacked` trains K networks of one architecture, each on its own data and its own
mini-batch stream, with the recipe of :func:`laplace_lab.networks.training.train_map`
(Adam, cosine annealing from ``lr`` to 0 over ``epochs``, mean ½(y − f)² + α‖θ‖²/(2N)). The
networks are a :class:`~laplace_lab.networks.stacked.Stacked` ensemble trained on the sum of
their objectives: each network's slice gets its own gradient, and Adam is elementwise, so this
is K separate trainings up to float32 rounding, at a fraction of torch's per-operation
overhead, which dominates the training of networks of a few thousand weights.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), App. C.1 and C.6 (the training recipes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from laplace_lab._random import as_generator
from laplace_lab.networks.stacked import Stacked
from laplace_lab.networks.training import TrainConfig

__all__ = ["stackable", "train_stacked"]


def stackable(config: TrainConfig) -> bool:
    """Whether :func:`train_stacked` trains with ``config`` as ``train_map`` does (Adam
    without gradient clipping: every step is elementwise per network)."""
    return config.optimizer == "adam" and config.grad_clip is None


def train_stacked(
    models: Sequence[torch.nn.Module],
    Xs: Sequence[Any],
    ys: Sequence[Any],
    *,
    config: TrainConfig,
    rngs: Sequence[np.random.Generator | int],
) -> None:
    """Train regression MLP ``models[k]`` on ``(Xs[k], ys[k])`` in place, its mini-batch
    order drawn from ``rngs[k]`` as in ``train_map`` (one permutation per epoch).

    Parameters
    ----------
    models : sequence of torch.nn.Module
        MLPs of one architecture (:meth:`Stacked.of`), left in eval mode.
    Xs : sequence of (N, d) arrays
    ys : sequence of (N,) arrays
        Real targets; every data set has the same N.
    config : TrainConfig
        An Adam recipe without gradient clipping (:func:`stackable`).
    rngs : sequence of numpy.random.Generator or int
        One source of mini-batch orders per network.
    """
    k = len(models)
    if not k or not len(Xs) == len(ys) == len(rngs) == k:
        raise ValueError(
            "models, Xs, ys and rngs must have the same positive length; got "
            f"{k}, {len(Xs)}, {len(ys)}, {len(rngs)}"
        )
    if not isinstance(config, TrainConfig) or not stackable(config):
        raise ValueError(f"config must be an Adam recipe without grad_clip; got {config!r}")
    sizes = {np.shape(X)[0] for X in Xs} | {np.shape(y)[0] for y in ys}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError(f"Xs and ys must all have the same positive number of rows; got {sizes}")
    stack = Stacked.of(models)
    dtype = stack.weights[0].dtype
    X = torch.as_tensor(np.stack([np.asarray(a) for a in Xs]), dtype=dtype)
    y = torch.as_tensor(np.stack([np.asarray(a) for a in ys]), dtype=dtype)
    n = X.shape[1]
    gens = [as_generator(r) for r in rngs]
    opt = torch.optim.Adam(
        stack.parameters, lr=config.lr, weight_decay=config.weight_decay, foreach=True
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=config.epochs, eta_min=0.0)
    penalty = config.prior_precision / (2.0 * n)
    rows = torch.arange(k)[:, None]
    for _ in range(config.epochs):
        order = torch.as_tensor(np.stack([g.permutation(n) for g in gens]))
        for a in range(0, n, config.batch_size):
            idx = order[:, a : a + config.batch_size]
            opt.zero_grad(set_to_none=True)
            residual = stack(X[rows, idx])[..., 0] - y[rows, idx]
            loss = 0.5 * torch.mean(residual * residual, dim=1).sum()
            if penalty:
                loss = loss + penalty * stack.squared_norms().sum()
            loss.backward()
            opt.step()
        sched.step()
    stack.write_to(models)
    for model in models:
        model.eval()
