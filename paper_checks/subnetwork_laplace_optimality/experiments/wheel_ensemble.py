"""B reward networks trained in lockstep: stacked parameters, one Adam step for all.

The Wheel-bandit agents of Raha, Khare & Patra (arXiv:2605.09075, App. D.2) each train a
small ReLU MLP with Adam (gradient-norm clip 1.0, mean squared error) — 80,000 updates of
a 512-row batch per run at T = 16,000, where torch's per-update overhead (autograd graph,
module calls, the optimizer's per-tensor loop) costs more than the arithmetic. Here B
independent networks of one architecture (B seeds of one agent) share one parameter
storage (B, P), each parameter tensor of each network at a 64-byte boundary as if it were
allocated alone:

- :meth:`StackedMLP.gradients` computes the mean-squared-error gradients of every network
  by hand, with, per network, exactly the matrix products autograd runs for
  ``nn.Linear`` (``addmm`` forward; ``gᵀa`` and ``g W`` backward) and the same reductions;
- :class:`StackedAdam` and :func:`clip_grad_norms_` apply ``torch.optim.Adam``'s and
  ``torch.nn.utils.clip_grad_norm_``'s element-wise arithmetic to all B networks at once.

Each network's trajectory is therefore bit for bit the one that ``nn.Sequential`` + autograd +
``clip_grad_norm_`` + ``torch.optim.Adam`` produce alone, whatever B (products are per network;
element-wise IEEE operations do not depend on the layout; the per-network norms reduce the same
contiguous blocks) — tested in
``tests/paper_checks/subnetwork_laplace_optimality/test_wheel_ensemble.py``.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), App. D.2.
.. [2] D. P. Kingma, J. Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015,
   arXiv:1412.6980, Algorithm 1.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from laplace_lab._checks import positive_float

__all__ = ["StackedAdam", "StackedMLP", "clip_grad_norms_"]


def _linears(model: Any) -> list[nn.Linear]:
    """The Linear layers of a ``Sequential`` of Linear and ReLU modules (ReLU between)."""
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"models must be torch.nn.Sequential; got {type(model).__name__}")
    mods = list(model)
    kinds = ["linear" if isinstance(m, nn.Linear) else "relu" for m in mods]
    bad = [m for m in mods if not isinstance(m, nn.Linear | nn.ReLU)]
    expected = ["linear", "relu"] * (len(mods) // 2) + ["linear"]
    if bad or kinds != expected:
        raise ValueError("models must alternate Linear and ReLU layers, ending in a Linear")
    lins = [m for m in mods if isinstance(m, nn.Linear)]
    if any(m.bias is None for m in lins) or lins[-1].out_features != 1:
        raise ValueError("models must have biases and one output")
    return lins


#: Every parameter tensor starts at a multiple of this many elements of the storage (64 bytes
#: of float32, as torch's allocator aligns a tensor of its own): some of MKL's small
#: products round differently for operands that are not 16-byte aligned.
_ALIGN = 16


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


class StackedMLP:
    """B ReLU MLPs of one architecture (Linear, ReLU, …, Linear → 1 output), stacked.

    Parameters
    ----------
    models : sequence of torch.nn.Sequential
        The B networks (e.g. :func:`~laplace_lab.networks.models.bandit_net` built from B
        seeds); their parameters are copied, the models are not changed.

    Attributes
    ----------
    storage : (B, P) tensor
        Every network's parameter tensors, in ``parameters()`` order, each starting at a
        64-byte boundary (zero padding between them; P ≥ p). The optimizer updates it in
        place; :meth:`theta` gives the flat (B, p) parameter vectors.
    """

    def __init__(self, models: Sequence[Any]) -> None:
        models = list(models)
        if not models:
            raise ValueError("models must hold at least one network")
        layers = [_linears(m) for m in models]
        shapes = [[tuple(m.weight.shape) for m in ls] for ls in layers]
        if any(s != shapes[0] for s in shapes):
            raise ValueError("models must share one architecture")
        self._template = copy.deepcopy(models[0])
        self.shapes = shapes[0]
        self._blocks: list[tuple[int, int, int, int]] = []  # weight start/end, bias start/end
        start = 0
        for out, inp in self.shapes:
            b0 = start + _aligned(out * inp)
            self._blocks.append((start, start + out * inp, b0, b0 + out))
            start = b0 + _aligned(out)
        dtype = layers[0][0].weight.dtype
        self.storage = torch.zeros((len(models), start), dtype=dtype)
        self._grad = torch.zeros_like(self.storage)
        # per network and layer: views (W, Wᵀ, bias) of the storage, (∂W, ∂bias) of the gradient
        self._params = [
            [self._layer(self.storage, b, i) for i in range(len(self.shapes))]
            for b in range(self.size)
        ]
        self._grads = [
            [self._layer(self._grad, b, i)[::2] for i in range(len(self.shapes))]
            for b in range(self.size)
        ]
        for b, model in enumerate(models):
            self.set_network(b, model)

    @property
    def size(self) -> int:
        """B, the number of networks."""
        return int(self.storage.shape[0])

    @property
    def p(self) -> int:
        """Parameters per network."""
        return sum(out * inp + out for out, inp in self.shapes)

    def _layer(self, storage: torch.Tensor, b: int, i: int) -> tuple[torch.Tensor, ...]:
        (out, inp), (w0, w1, b0, b1) = self.shapes[i], self._blocks[i]
        W = storage[b, w0:w1].view(out, inp)
        return W, W.t(), storage[b, b0:b1]

    def blocks(self) -> list[tuple[int, int]]:
        """(start, end) of every parameter tensor in :attr:`storage`, ``parameters()`` order."""
        out = []
        for w0, w1, b0, b1 in self._blocks:
            out += [(w0, w1), (b0, b1)]
        return out

    def theta(self) -> torch.Tensor:
        """The parameter vectors θ_b in ``parameters()`` order, (B, p) (a copy)."""
        return torch.cat([self.storage[:, a:b] for a, b in self.blocks()], dim=1)

    def _forward_one(self, b: int, X: torch.Tensor) -> list[torch.Tensor]:
        """Network b on X (n, d): the layer inputs and the output (n, 1), as nn.Linear."""
        acts = [X]
        last = len(self.shapes) - 1
        for i, (_, Wt, c) in enumerate(self._params[b]):
            z = torch.addmm(c, acts[-1], Wt)
            acts.append(z.relu_() if i < last else z)
        return acts

    @torch.no_grad()
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """f_b(X[b]) for every network: X (B, n, d) → (B, n)."""
        self._check_inputs(X)
        return torch.stack([self._forward_one(b, X[b])[-1][:, 0] for b in range(self.size)])

    def _check_inputs(self, X: Any) -> None:
        if not isinstance(X, torch.Tensor) or X.dtype != self.storage.dtype:
            raise TypeError(f"X must be a {self.storage.dtype} tensor")
        if X.ndim != 3 or X.shape[0] != self.size or X.shape[2] != self.shapes[0][1]:
            raise ValueError(
                f"X must have shape ({self.size}, n, {self.shapes[0][1]}); got {tuple(X.shape)}"
            )

    @torch.no_grad()
    def gradients(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """∇_θ mean_n (f_b(x_bn) − y_bn)² for every network b, (B, p).

        Rows are laid out as :attr:`storage` and the tensor is reused by the next call. The
        products and reductions are autograd's for ``nn.Linear`` + ``mse_loss(reduction=
        "mean")``, so each network's blocks equal ``.grad`` after ``backward()``.
        """
        self._check_inputs(X)
        if y.shape != X.shape[:2] or y.dtype != X.dtype:
            raise ValueError(f"y must have shape {tuple(X.shape[:2])} and X's dtype")
        ones = torch.ones((), dtype=X.dtype)
        mse_backward = torch.ops.aten.mse_loss_backward.default
        relu_backward = torch.ops.aten.threshold_backward.default
        for b in range(self.size):
            acts = self._forward_one(b, X[b])
            g = mse_backward(ones, acts[-1].reshape(-1), y[b], 1).reshape(-1, 1)
            for i in range(len(self.shapes) - 1, -1, -1):
                gW, gb = self._grads[b][i]
                # fresh outputs, copied: MKL's sums depend on the output's alignment
                gW.copy_(g.t().mm(acts[i]))
                gb.copy_(g.sum(0))
                if i > 0:
                    g = relu_backward(g.mm(self._params[b][i][0]), acts[i], 0)
        return self._grad

    @torch.no_grad()
    def set_network(self, b: int, model: Any) -> None:
        """Overwrite network b's parameters with those of ``model`` (same architecture)."""
        lins = _linears(model)
        if [tuple(m.weight.shape) for m in lins] != self.shapes:
            raise ValueError("model must have the stacked networks' architecture")
        for (W, _, c), lin in zip(self._params[b], lins, strict=True):
            W.copy_(lin.weight)
            c.copy_(lin.bias)

    def module(self, b: int) -> Any:
        """Network b as an ``nn.Sequential`` whose parameters are views of :attr:`storage`.

        It reads the current θ_b (updates of :attr:`storage` show through), so the
        per-network tools (per-sample Jacobians, :class:`~laplace_lab.numerics.NetworkGGN`)
        apply to it unchanged.
        """
        model = copy.deepcopy(self._template)
        for (W, _, c), lin in zip(self._params[b], _linears(model), strict=True):
            lin.weight = nn.Parameter(W)
            lin.bias = nn.Parameter(c)
        return model.eval()


@torch.no_grad()
def clip_grad_norms_(
    grad: torch.Tensor, blocks: Sequence[tuple[int, int]], max_norm: float
) -> torch.Tensor:
    """Scale each row of ``grad`` (B, P) as ``torch.nn.utils.clip_grad_norm_`` scales one
    network's gradients: by min(1, max_norm / (‖(‖g_t‖)_t‖ + 1e-6)), where g_t are the
    parameter tensors (``blocks``: their column ranges). In place; returns the total norms.
    """
    max_norm = positive_float(max_norm, "max_norm")
    norms = torch.stack([torch.linalg.vector_norm(grad[:, a:b], 2, dim=1) for a, b in blocks], 1)
    total = torch.linalg.vector_norm(norms, 2, dim=1)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    grad.mul_(coef[:, None])
    return total


class StackedAdam:
    """``torch.optim.Adam`` (default betas and ε, no weight decay) on every row of ``params``
    (e.g. :attr:`StackedMLP.storage`; zero padding with zero gradients stays zero).

    The same element-wise operations in the same order as torch's single-tensor Adam, so a
    row follows exactly the trajectory Adam gives that network alone. :meth:`reset` clears
    the moments and the step count (a fresh optimizer).
    """

    def __init__(
        self,
        params: torch.Tensor,
        *,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = params
        self.lr = positive_float(lr, "lr")
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = positive_float(eps, "eps")
        self.reset()

    def reset(self) -> None:
        """Clear the moments and the step count: a fresh optimizer."""
        self.exp_avg = torch.zeros_like(self.params)
        self.exp_avg_sq = torch.zeros_like(self.params)
        self.steps = 0

    @torch.no_grad()
    def step(self, grad: torch.Tensor) -> None:
        """One Adam update of every row of ``params`` with the gradients ``grad``."""
        beta1, beta2 = self.betas
        self.steps += 1
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = float(self.steps)
        step_size = self.lr / (1 - beta1**step)
        denom = (self.exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
        self.params.addcdiv_(self.exp_avg, denom, value=-step_size)
