"""Stacked reward networks against torch's own training tools, bit for bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from laplace_lab.networks.models import bandit_net, mlp
from laplace_lab.networks.training import build_seeded
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_ensemble import (
    StackedAdam,
    StackedMLP,
    clip_grad_norms_,
)


def _data(B, n, seed=0):
    rng = np.random.default_rng(seed)
    X = torch.from_numpy(rng.standard_normal((B, n, 7)).astype(np.float32))
    y = torch.from_numpy((10 * rng.standard_normal((B, n))).astype(np.float32))
    return X, y


def _flat_grad(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def test_gradients_are_autograds_bit_for_bit():
    B = 5
    models = [build_seeded(bandit_net, rng=s) for s in range(B)]
    X, y = _data(B, 512)
    stack = StackedMLP(models)
    grad = stack.gradients(X, y)
    grad = torch.cat([grad[:, a:e] for a, e in stack.blocks()], dim=1)
    for b, model in enumerate(models):
        loss = torch.nn.functional.mse_loss(model(X[b]).reshape(-1), y[b])
        loss.backward()
        assert torch.equal(grad[b], _flat_grad(model)), b


def test_gradients_of_small_batches_and_uneven_groups_are_autograds():
    # 3 rows: products too small for MKL's batches (network by network); 15 rows: batched,
    # three networks in groups of two and one
    B = 3
    models = [build_seeded(bandit_net, rng=20 + s) for s in range(B)]
    stack = StackedMLP(models)
    for n in (3, 15):
        X, y = _data(B, n, seed=n)
        grad = stack.gradients(X, y)
        grad = torch.cat([grad[:, a:e] for a, e in stack.blocks()], dim=1)
        for b, model in enumerate(models):
            model.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(X[b]).reshape(-1), y[b]).backward()
            assert torch.equal(grad[b], _flat_grad(model)), (n, b)


def test_training_follows_torch_adam_and_clipping_bit_for_bit():
    # 60 updates of App. D.2's recipe: nn.Sequential + autograd + clip_grad_norm_ + Adam,
    # one network at a time, against all networks stacked; the batch of 4 must not matter.
    B, n, steps = 4, 900, 60
    models = [build_seeded(bandit_net, rng=10 + s) for s in range(B)]
    X, y = _data(B, n, seed=1)
    idx = np.random.default_rng(2).integers(0, n, size=(steps, B, 512))
    stack = StackedMLP([copy.deepcopy(m) for m in models])
    opt = StackedAdam(stack.storage, lr=3e-3)
    totals = []
    for u in range(steps):
        Xb = torch.stack([X[b, idx[u, b]] for b in range(B)])
        yb = torch.stack([y[b, idx[u, b]] for b in range(B)])
        grad = stack.gradients(Xb, yb)
        totals.append(clip_grad_norms_(grad, stack.blocks(), 1.0))
        opt.step(grad)
    assert float(torch.stack(totals).max()) > 1.0  # the clip was active
    for b, model in enumerate(models):
        adam = torch.optim.Adam(model.parameters(), lr=3e-3)
        for u in range(steps):
            adam.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(
                model(X[b, idx[u, b]]).reshape(-1), y[b, idx[u, b]]
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
            adam.step()
        theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
        assert torch.equal(stack.theta()[b], theta), b
        view = stack.module(b)  # shares θ_b: its outputs are the trained network's
        for rows in (1, 5, 50, 200):  # sizes where MKL's products depend on alignment
            assert torch.equal(view(X[b, :rows]), model(X[b, :rows]))


def test_forward_reset_and_set_network():
    models = [build_seeded(bandit_net, rng=s) for s in range(3)]
    stack = StackedMLP(models)
    X, _ = _data(3, 40)
    out = stack.forward(X)
    for b in range(3):
        assert torch.equal(out[b], models[b](X[b])[:, 0])
    stack.set_network(1, models[2])
    assert torch.equal(stack.theta()[1], stack.theta()[2])
    opt = StackedAdam(stack.storage, lr=1e-3)
    before = stack.theta()
    opt.step(torch.ones_like(stack.storage))
    # Adam's first step moves every parameter by −lr (m̂ = g, v̂ = g², ε negligible); the
    # tolerance is float32 spacing near |θ| ≤ 1 (6e-8) plus ε/√v̂ · lr
    np.testing.assert_allclose((stack.theta() - before).numpy(), -1e-3, atol=2e-7)
    opt.reset()
    assert opt.steps == 0 and float(opt.exp_avg.abs().max()) == 0.0


def test_bad_networks_and_inputs_are_rejected():
    with pytest.raises(ValueError, match="at least one"):
        StackedMLP([])
    with pytest.raises(TypeError, match="Sequential"):
        StackedMLP([torch.nn.Linear(7, 1)])
    with pytest.raises(ValueError, match="one architecture"):
        StackedMLP([bandit_net(), mlp(7, [50, 50], 1)])
    with pytest.raises(ValueError, match="alternate"):
        StackedMLP([mlp(7, [10], 1, activation="tanh")])
    with pytest.raises(ValueError, match="one output"):
        StackedMLP([mlp(7, [10], 2)])
    stack = StackedMLP([bandit_net()])
    with pytest.raises(ValueError, match="shape"):
        stack.forward(torch.zeros(2, 5, 7))
    with pytest.raises(TypeError, match="float32"):
        stack.forward(torch.zeros(1, 5, 7, dtype=torch.float64))
    with pytest.raises(ValueError, match="y must"):
        stack.gradients(torch.zeros(1, 5, 7), torch.zeros(1, 4))
    with pytest.raises(ValueError, match="architecture"):
        stack.set_network(0, mlp(7, [100, 50], 1))
    with pytest.raises(ValueError, match="lr"):
        StackedAdam(stack.storage, lr=0.0)
