"""FSP MAP training loop: the same arithmetic as torch's Adam on the module, bit for bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from laplace_lab.networks.fsp_training import ContextBox, train_fsp_map, train_weight_space_map
from laplace_lab.numerics.kernels import RBF


def _mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.Tanh(),
        torch.nn.Linear(8, 1),
    ).double()  # fmt: skip


def _reference(model, X, y, box, kernel, *, n_context, steps, noise_std, mean, seed, jitter):
    """Algorithm 1 written out with torch.optim.Adam(fused=True) and the module's own calls."""
    gen = np.random.default_rng(seed)
    params = list(model.parameters())
    learn = noise_std is None
    log_std = torch.zeros((), dtype=torch.float64, requires_grad=learn)
    if not learn:
        log_std = torch.tensor(np.log(noise_std), dtype=torch.float64)
    opt = torch.optim.Adam([*params, log_std] if learn else params, lr=1e-2, fused=True)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        r = (yt - model(Xt).reshape(yt.shape)) * torch.exp(-log_std)
        loss = 0.5 * (r * r).sum() + yt.numel() * log_std
        C = gen.uniform(box.low, box.high, size=(n_context, 2))
        K = kernel(C, C)
        K = 0.5 * (K + K.T)
        K += jitter * float(np.mean(np.diag(K))) * np.eye(n_context)
        chol = torch.tensor(np.linalg.cholesky(K))
        mu = torch.tensor(np.full((n_context, 1), 0.0 if mean is None else mean))
        z = torch.linalg.solve_triangular(chol, model(torch.tensor(C)) - mu, upper=False)
        loss = loss + 0.5 * (z * z).sum()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses, float(torch.exp(log_std.detach()))


@pytest.mark.parametrize(("noise_std", "mean"), [(0.3, None), (None, 0.4)])
def test_fsp_map_equals_torch_adam_on_the_module_bit_for_bit(noise_std, mean):
    # Every loss, the final weights and the noise scale are identical (==, not approximately)
    # to a loop over torch.optim.Adam(fused=True) that calls the module, draws the context
    # points from the same generator and subtracts an explicit (zero or constant) prior mean.
    rng = np.random.default_rng(3)
    X, y = rng.uniform(-1, 1, (15, 2)), rng.standard_normal(15)
    box, kernel = ContextBox([-2, -1], [2, 3]), RBF(1.2, 0.7)
    model = _mlp()
    ref = copy.deepcopy(model)
    kw = dict(n_context=9, noise_std=noise_std)
    fit = train_fsp_map(
        model, X, y, likelihood="regression", kernel=kernel, context=box, prior_mean=mean,
        steps=40, lr=1e-2, rng=11, progress=False, **kw,
    )  # fmt: skip
    losses, std = _reference(
        ref, X, y, box, kernel, steps=40, mean=mean, seed=11, jitter=1e-6, **kw
    )
    assert list(fit.losses) == losses
    assert fit.noise_std == std
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)


def test_weight_space_map_equals_torch_adam_bit_for_bit():
    # ½α‖w‖² + Gaussian NLL with a learned noise scale: the same losses and weights as
    # torch.optim.Adam(fused=True) stepping the module's parameters and log σ.
    rng = np.random.default_rng(4)
    X, y = rng.uniform(-1, 1, (12, 2)), rng.standard_normal(12)
    model = _mlp(1)
    ref = copy.deepcopy(model)
    fit = train_weight_space_map(
        model, X, y, likelihood="regression", prior_precision=0.5, steps=30, lr=1e-2, rng=0,
        progress=False,
    )  # fmt: skip
    params = list(ref.parameters())
    log_std = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([*params, log_std], lr=1e-2, fused=True)
    Xt, yt = torch.tensor(X), torch.tensor(y)
    losses = []
    for _ in range(30):
        opt.zero_grad(set_to_none=True)
        r = (yt - ref(Xt).reshape(yt.shape)) * torch.exp(-log_std)
        loss = 0.5 * (r * r).sum() + yt.numel() * log_std
        loss = loss + 0.5 * 0.5 * sum((t * t).sum() for t in params)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert list(fit.losses) == losses
    assert fit.noise_std == float(torch.exp(log_std.detach()))
    for a, b in zip(model.parameters(), params, strict=True):
        assert torch.equal(a, b)


def test_a_hooked_module_is_called_through_its_hooks():
    # A forward hook on the network must see every evaluation: the output-size probe, then
    # the data and the context points at each of 3 steps.
    rng = np.random.default_rng(5)
    X, y = rng.uniform(-1, 1, (6, 2)), rng.standard_normal(6)
    C = rng.uniform(-2, 2, (5, 2))
    model = _mlp()
    calls = []
    model.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    train_fsp_map(
        model, X, y, likelihood="regression", kernel=RBF(), context=C, noise_std=0.5,
        steps=3, rng=0, progress=False,
    )  # fmt: skip
    assert calls == [1, 6, 5, 6, 5, 6, 5]


def test_a_forward_set_on_a_layer_keeps_the_module():
    from laplace_lab.networks.fsp_training import _plain_forward

    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    assert _plain_forward(model) is not model
    model[1].forward = lambda x: 2.0 * torch.tanh(x)
    assert _plain_forward(model) is model
