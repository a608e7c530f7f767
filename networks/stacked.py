"""K multilayer perceptrons of one architecture as one stacked ensemble.

The weights of the K networks are stacked (K, ...) and the forward pass is one batched
product per layer (``torch.baddbmm``). A loss that is the sum of the K networks' own losses
gives each network's slice that network's gradient alone, and Adam is elementwise, so one
Adam over the stacked tensors is K independent Adams: training K small networks this way is
the one-network training up to float32 rounding, at a fraction of torch's per-operation
overhead (which dominates networks of a few thousand weights).

Examples
--------
Two networks 3 → 4 → 1 on their own inputs give their own outputs:

>>> import torch
>>> from laplace_lab.networks.models import mlp
>>> from laplace_lab.networks.stacked import Stacked
>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> models = [mlp(3, [4], 1), mlp(3, [4], 1)]
>>> stack = Stacked.of(models)
>>> X = torch.randn(2, 5, 3)
>>> out = stack(X)
>>> bool(torch.allclose(out[1], models[1](X[1]), atol=1e-6))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["Stacked"]

_ACTIVATIONS = {torch.nn.ReLU: torch.relu, torch.nn.Tanh: torch.tanh}


@dataclass
class Stacked:
    """The stacked weights (K, d_in, d_out) and biases (K, 1, d_out) of K MLPs.

    ``weights[l][k]`` is the transposed weight of layer l of network k, so that a layer is
    ``h ↦ act(h W + b)`` on row vectors; ``activation`` is the elementwise map between
    layers (none after the last).
    """

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]
    activation: object

    @classmethod
    def of(cls, models: Sequence[torch.nn.Module]) -> Stacked:
        """Copy the parameters of ``models`` (``torch.nn.Sequential`` of ``Linear`` layers and
        one kind of ReLU or tanh activation, all of one architecture) into leaf tensors that
        require gradients."""
        if not models:
            raise ValueError("models must hold at least one network")
        linears = [
            [m for m in model.modules() if isinstance(m, torch.nn.Linear)] for model in models
        ]
        kinds = {type(m) for model in models for m in model.modules() if type(m) in _ACTIVATIONS}
        other = {
            type(m).__name__
            for model in models
            for m in model.modules()
            if not isinstance(m, (torch.nn.Sequential, torch.nn.Linear, *_ACTIVATIONS))
            or (isinstance(m, torch.nn.Linear) and m.bias is None)
        }
        if other:
            raise ValueError(
                "models must be Sequential MLPs of biased Linear layers and ReLU or Tanh; got "
                + ", ".join(sorted(other))
            )
        shapes = {tuple(tuple(m.weight.shape) for m in lin) for lin in linears}
        if len(shapes) != 1 or len(kinds) > 1 or not linears[0]:
            raise ValueError("models must be MLPs of one architecture and one activation")
        depth = len(linears[0])
        weights = [
            torch.stack([lin[i].weight.detach().T for lin in linears]).contiguous()
            for i in range(depth)
        ]
        biases = [
            torch.stack([lin[i].bias.detach()[None, :] for lin in linears]) for i in range(depth)
        ]
        act = _ACTIVATIONS[kinds.pop()] if kinds else None
        for t in (*weights, *biases):
            t.requires_grad_()
        return cls(weights, biases, act)

    @property
    def parameters(self) -> list[torch.Tensor]:
        """Every stacked tensor, weights first."""
        return [*self.weights, *self.biases]

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        """The K networks on their own inputs: X (K, B, d_in) → outputs (K, B, d_out)."""
        h = X
        last = len(self.weights) - 1
        for layer, (W, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b, h, W)
            if layer < last and self.activation is not None:
                h = self.activation(h)
        return h

    def squared_norms(self) -> torch.Tensor:
        """‖θ_k‖² of each network, (K,)."""
        return sum(t.pow(2).sum(dim=(1, 2)) for t in self.parameters)

    def state(self, k: int) -> list[torch.Tensor]:
        """A detached copy of network k's stacked slices."""
        return [t.detach()[k].clone() for t in self.parameters]

    def write_to(
        self, models: Sequence[torch.nn.Module], states: Sequence[list] | None = None
    ) -> None:
        """Copy each network's slices (or ``states[k]``, as from :meth:`state`) back into
        ``models``, in place."""
        n = len(self.weights)
        for k, model in enumerate(models):
            src = self.state(k) if states is None else states[k]
            lin = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
            with torch.no_grad():
                for i, layer in enumerate(lin):
                    layer.weight.copy_(src[i].T)
                    layer.bias.copy_(src[n + i][0])
