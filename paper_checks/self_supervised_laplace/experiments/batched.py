"""K small ReLU MLPs trained by MAP together, as one batched ensemble (the fitted networks of
Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", TMLR, arXiv:2605.12208, §5.1 and App. C: Adam, cosine annealing, the prior
term α‖θ‖²/(2N) added to the mean NLL of each minibatch).

The K networks are one :class:`~laplace_lab.networks.stacked.Stacked` ensemble. The
objective is the sum of the K networks' own objectives, so the gradient of each network's
slice is that network's gradient alone; Adam is elementwise, so one Adam over the stacked
tensors is K independent Adams, and the cosine schedule is shared. Each network keeps its own
data and its own minibatch order (its own generator). The result is the one-network training
up to float32 rounding, at a fraction of torch's per-operation overhead on networks this
small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from laplace_lab.networks.stacked import Stacked

__all__ = ["train_stacked"]


def train_stacked(
    models: Sequence[torch.nn.Module],
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    order_rngs: Sequence[np.random.Generator],
    per_point_nll: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    lr: float,
    epochs: int,
    batch_size: int,
    prior_precision: float,
) -> None:
    """Train K float32 ReLU MLPs of one architecture in place, each by Adam on its own mean
    ``per_point_nll(outputs (B, d_out), targets (B,))`` + α‖θ‖²/(2N) over minibatches drawn
    by its own ``order_rngs[k]`` (one permutation per epoch), with cosine annealing.

    Every network needs the same number N of training rows.
    """
    K = len(models)
    if not K or not len(Xs) == len(ys) == len(order_rngs) == K:
        raise ValueError("one X, y and generator per model, at least one model")
    if len({np.asarray(X).shape for X in Xs}) != 1:
        raise ValueError("every network needs the same training shape")
    stack = Stacked.of(models)
    X = torch.as_tensor(np.stack([np.asarray(x) for x in Xs]), dtype=torch.float32)
    y = torch.as_tensor(np.stack([np.asarray(t) for t in ys]), dtype=torch.float32)
    params = stack.parameters
    opt = torch.optim.Adam(params, lr=lr, foreach=True)  # bit-identical on CPU
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs, eta_min=0.0)
    n = X.shape[1]
    rows = torch.arange(K)[:, None]
    for _ in range(epochs):
        order = torch.as_tensor(np.stack([g.permutation(n) for g in order_rngs]))
        for a in range(0, n, batch_size):
            idx = order[:, a : a + batch_size]
            opt.zero_grad(set_to_none=True)
            out = stack(X[rows, idx])
            nll = per_point_nll(out.reshape(-1, out.shape[-1]), y[rows, idx].reshape(-1))
            loss = nll.reshape(K, -1).mean(dim=1).sum()
            loss = loss + prior_precision / (2.0 * n) * sum((t * t).sum() for t in params)
            loss.backward()
            opt.step()
        sched.step()
    stack.write_to(models)
