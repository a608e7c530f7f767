"""K MLPs as one stacked ensemble: the same outputs and the same per-network gradients as
the K networks one by one, and their parameters back in place."""

from __future__ import annotations

import pytest
import torch

from laplace_lab.networks.models import mlp
from laplace_lab.networks.stacked import Stacked


def _models(k: int, activation: str = "tanh") -> list[torch.nn.Module]:
    torch.manual_seed(3)
    return [mlp(3, [5, 4], 2, activation=activation) for _ in range(k)]


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_outputs_and_gradients_are_each_networks_own(activation):
    models = _models(3, activation)
    stack = Stacked.of(models)
    X = torch.randn(3, 7, 3, generator=torch.Generator().manual_seed(0))
    out = stack(X)
    (out.pow(2).sum() + stack.squared_norms().sum()).backward()
    for k, model in enumerate(models):
        assert torch.allclose(out[k], model(X[k]), atol=1e-6)
        params = list(model.parameters())
        (model(X[k]).pow(2).sum() + sum(p.pow(2).sum() for p in params)).backward()
        lin = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        for i, layer in enumerate(lin):
            assert torch.allclose(stack.weights[i].grad[k], layer.weight.grad.T, atol=1e-5)
            assert torch.allclose(stack.biases[i].grad[k, 0], layer.bias.grad, atol=1e-5)


def test_write_to_puts_each_networks_slices_or_saved_states_back():
    models = _models(2)
    stack = Stacked.of(models)
    saved = [stack.state(0), stack.state(1)]
    with torch.no_grad():
        for t in stack.parameters:
            t.add_(1.0)
    before = [p.detach().clone() for p in models[1].parameters()]
    stack.write_to(models)
    assert all(
        torch.equal(p, q + 1.0) for p, q in zip(models[1].parameters(), before, strict=True)
    )
    stack.write_to(models, saved)
    assert all(torch.equal(p, q) for p, q in zip(models[1].parameters(), before, strict=True))


def test_networks_of_different_architectures_are_refused():
    with pytest.raises(ValueError, match="one architecture"):
        Stacked.of([mlp(3, [5], 1), mlp(3, [6], 1)])
    with pytest.raises(ValueError, match="at least one"):
        Stacked.of([])
    gelu = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 1))
    with pytest.raises(ValueError, match="GELU"):  # never silently linear
        Stacked.of([gelu])
    with pytest.raises(ValueError, match="Linear"):  # no bias to stack
        Stacked.of([torch.nn.Sequential(torch.nn.Linear(3, 1, bias=False))])
