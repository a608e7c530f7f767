"""The kernel census of the Wheel-bandit cost projection is one real Adam update.

``update_kernels`` lists the torch kernels whose costs bound Table 1's CPU time from below;
run once each, they must give autograd's clipped gradients and torch.optim.Adam's step, and
their products must be exactly nn.Linear's (three forward, three weight gradients, two input
gradients for 7 → 100 → 100 → 1).
"""

from __future__ import annotations

import numpy as np
import torch

from laplace_lab.networks.models import bandit_net
from laplace_lab.networks.training import build_seeded
from laplace_lab.paper_checks.subnetwork_laplace_optimality.benchmarks.bandit_table_projection import (  # noqa: E501
    update_kernels,
)


def _batch(n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return torch.randn(n, 7, generator=g), 3.0 * torch.randn(n, generator=g)


def _update(model, X, y, *, lr, max_norm):
    out: dict = {}
    kinds = []
    for kind, thunk in update_kernels(model, X, y, lr=lr, max_norm=max_norm, out=out):
        thunk()
        kinds.append(kind)
    return kinds, out


def test_the_kernels_are_one_clipped_adam_update_of_autograd():
    model = build_seeded(bandit_net, rng=np.random.default_rng(0))
    X, y = _batch()
    lr, max_norm = 3e-3, 0.5  # a norm the gradients exceed, so the clip scales them
    kinds, box = _update(model, X, y, lr=lr, max_norm=max_norm)

    ref = build_seeded(bandit_net, rng=np.random.default_rng(0))
    loss = torch.nn.functional.mse_loss(ref(X)[:, 0], y)
    loss.backward()
    total = torch.nn.utils.clip_grad_norm_(ref.parameters(), max_norm)
    assert float(total) > 2 * max_norm
    for ours, theirs in zip(box["grads"], ref.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs.grad, rtol=1e-6, atol=1e-9)
    torch.optim.Adam(ref.parameters(), lr=lr).step()
    theta = torch.cat([t.detach().reshape(-1) for t in ref.parameters()])
    torch.testing.assert_close(box["theta"], theta, rtol=1e-6, atol=1e-9)
    assert kinds.count("product") == 8
    # the census leaves the model alone
    before = torch.cat([t.detach().reshape(-1) for t in model.parameters()])
    fresh = build_seeded(bandit_net, rng=np.random.default_rng(0))
    assert torch.equal(before, torch.cat([t.detach().reshape(-1) for t in fresh.parameters()]))
