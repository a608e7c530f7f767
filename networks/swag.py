"""Diagonal SWAG marginal variances, the selection score of Daxberger et al.'s ResNet-18 runs.

SWAG is that of Maddox et al. (2019).

E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato, "Bayesian
Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3: "We use diagonal
SWAG to estimate the marginal weight variances needed for subnetwork selection ... SWAG does
not suffer from [dead ReLUs] as it disregards weights with zero training gradients."

From the trained MAP, SGD with a constant learning rate continues on the training loss;
after every step the flat parameters are recorded, and the variance of the recorded values
per parameter is the diagonal SWAG variance. A parameter whose gradient is always zero never
moves and gets variance 0. The model is restored to the MAP afterwards.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from laplace_lab._checks import nonnegative_float, one_of, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.networks.training import as_targets, nll_loss

__all__ = ["swag_diagonal_variance"]


def swag_diagonal_variance(
    model: torch.nn.Module,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    rng: np.random.Generator | int,
    lr: float = 1e-2,
    epochs: int = 5,
    batch_size: int = 128,
    prior_precision: float = 1.0,
) -> np.ndarray:
    """Per-parameter variance of the SGD iterates around the MAP (flat ``parameters()`` order).

    Parameters
    ----------
    model : torch.nn.Module
        The trained MAP; left unchanged on return.
    X, y : arrays
        Training inputs and targets.
    likelihood : {"regression", "binary", "multiclass"}
    rng : numpy.random.Generator or int
        Mini-batch order.
    lr, epochs, batch_size : constant-learning-rate SGD schedule.
    prior_precision : float
        α of the α‖θ‖²/(2N) penalty of the MAP objective.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3.
    """
    one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
    lr = positive_float(lr, "lr")
    epochs, batch_size = positive_int(epochs, "epochs"), positive_int(batch_size, "batch_size")
    rng = as_generator(rng)
    work = copy.deepcopy(model).train()
    params = [t for t in work.parameters() if t.requires_grad]
    dtype = params[0].dtype
    Xt = torch.as_tensor(np.asarray(X), dtype=dtype)
    yt = as_targets(y, likelihood, dtype)
    n = Xt.shape[0]
    penalty = nonnegative_float(prior_precision, "prior_precision") / (2.0 * n)
    opt = torch.optim.SGD(params, lr=lr)
    first = torch.zeros(sum(t.numel() for t in params), dtype=torch.float64)
    second = torch.zeros_like(first)
    count = 0
    for _ in range(epochs):
        order = torch.as_tensor(rng.permutation(n))
        for a in range(0, n, batch_size):
            idx = order[a : a + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = nll_loss(work(Xt[idx]), yt[idx], likelihood)
            loss = loss + penalty * sum((t * t).sum() for t in params)
            loss.backward()
            opt.step()
            with torch.no_grad():
                flat = torch.cat([t.reshape(-1) for t in params]).double()
            first += flat
            second += flat * flat
            count += 1
    mean = first / count
    return np.clip((second / count - mean * mean).numpy(), 0.0, None)
