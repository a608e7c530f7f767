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
  ``nn.Linear`` (``addmm`` forward; ``gᵀa`` and ``g W`` backward) and the same reductions,
  a few networks per batched call (MKL's batched product of network b is its own product)
  into kept buffers;
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

import numpy as np
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


#: Below this many multiply-adds (rows × inner × columns) ``torch.bmm`` runs its own loops
#: instead of MKL's batched products, whose network b is the per-network product.
_MKL_BATCH_MIN = 400

#: Networks whose products are batched together: one group's activations stay in the cache.
_GROUP = 2


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
        # per group of networks and layer: (W (G, out, in), bias (G, out)) of the storage and
        # (∂W, ∂bias) of the gradient
        self._groups = []
        for start in range(0, self.size, _GROUP):
            rows = slice(start, min(start + _GROUP, self.size))
            layers = range(len(self.shapes))
            self._groups.append(
                (
                    rows,
                    [self._stacked_layer(self.storage[rows], i) for i in layers],
                    [self._stacked_layer(self._grad[rows], i) for i in layers],
                )
            )
        self._work: dict[tuple[int, int], dict[str, list[torch.Tensor]]] = {}
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

    def _stacked_layer(self, storage: torch.Tensor, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        (out, inp), (w0, w1, b0, b1) = self.shapes[i], self._blocks[i]
        return storage[:, w0:w1].view(-1, out, inp), storage[:, b0:b1]

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
        "mean")``, so each network's blocks equal ``.grad`` after ``backward()``: every
        product is one batched call (``baddbmm``/``bmm``/``matmul``), whose network b is the
        very product autograd runs for network b (see :func:`_backward_group`).
        """
        self._check_inputs(X)
        if y.shape != X.shape[:2] or y.dtype != X.dtype:
            raise ValueError(f"y must have shape {tuple(X.shape[:2])} and X's dtype")
        if X.shape[1] * min(out * inp for out, inp in self.shapes) < _MKL_BATCH_MIN:
            return self._gradients_each(X, y)
        n = X.shape[1]
        for rows, params, grads in self._groups:
            work = self._workspace(n, rows.stop - rows.start)
            acts = _forward_group(X[rows], params, work)
            # mse_loss_backward's arithmetic: (f − y) rounded, then times 2/n rounded to X's dtype
            g = torch.sub(acts[-1], y[rows, None, :], out=work["g"][-1]).mul_(2.0 / n)
            _backward_group(g, acts, params, grads, work)
        return self._grad

    def _gradients_each(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """:meth:`gradients` one network at a time (products too small for MKL's batches)."""
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

    def _workspace(self, n: int, G: int) -> dict[str, list[torch.Tensor]]:
        """Buffers of a group of G networks on n rows (kept: fresh ones cost page faults)."""
        key = (n, G)
        if key not in self._work:
            dtype = self.storage.dtype
            outs = [out for out, _ in self.shapes[:-1]]
            self._work[key] = {
                "acts": [torch.empty((G, n, out), dtype=dtype) for out in outs]
                + [torch.empty((G, 1, n), dtype=dtype)],
                "g": [torch.empty((G, n, out), dtype=dtype) for out in outs]
                + [torch.empty((G, 1, n), dtype=dtype)],
                "gW": [torch.empty((G, out, inp), dtype=dtype) for out, inp in self.shapes],
                "gb": [torch.empty((G, out), dtype=dtype) for out, _ in self.shapes],
            }
        return self._work[key]

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


def _forward_group(
    X: torch.Tensor, params: list[tuple[torch.Tensor, torch.Tensor]], work: dict
) -> list[torch.Tensor]:
    """Layer inputs (G, n, ·) of G networks on X (G, n, d) and their outputs as a row,
    (G, 1, n): per network, the ``addmm`` products of ``nn.Linear``."""
    acts = [X]
    last = len(params) - 1
    for i, (W, c) in enumerate(params):
        out = work["acts"][i]
        if i < last:
            acts.append(torch.baddbmm(c[:, None, :], acts[-1], W.transpose(1, 2), out=out).relu_())
        else:  # the one-output layer as a row: the product nn.Linear's addmm runs
            acts.append(torch.baddbmm(c[:, :, None], W, acts[-1].transpose(1, 2), out=out))
    return acts


def _backward_group(
    g: torch.Tensor,
    acts: list[torch.Tensor],
    params: list[tuple[torch.Tensor, torch.Tensor]],
    grads: list[tuple[torch.Tensor, torch.Tensor]],
    work: dict,
) -> None:
    """Back-propagate ∂loss/∂f (``g``, (G, 1, n)) through G networks into ``grads``.

    Per network and layer the products are autograd's for ``nn.Linear`` (``gᵀa``, ``g W``)
    and the bias gradient is ``g.sum(0)``; MKL's batched products equal the per-network
    ones for these layouts. The one-output layer's ``gᵀa`` is a matrix-vector product that
    MKL may split over threads, so it is run network by network, as autograd runs it; its
    ``g W`` has one term per entry, so it is the element-wise product (the same single
    rounding).
    """
    relu_backward = torch.ops.aten.threshold_backward.grad_input
    last = len(params) - 1
    for i in range(last, -1, -1):
        gW, gb = work["gW"][i], work["gb"][i]
        if i == last:  # gᵀa of one output: a gemv, which MKL may split over threads
            for b in range(g.shape[0]):  # as it splits autograd's, so network by network
                torch.mm(g[b], acts[i][b], out=gW[b])
            torch.sum(g, 2, out=gb)
            g = g.transpose(1, 2)  # (G, n, 1): the column autograd holds
        else:
            torch.bmm(g.transpose(1, 2), acts[i], out=gW)
            torch.sum(g, 1, out=gb)
        grads[i][0].copy_(gW)
        grads[i][1].copy_(gb)
        if i > 0:
            nxt = work["g"][i - 1]
            if i == last:  # g W of one output: each entry one product, g_n w_j, rounded once
                torch.mul(g, params[i][0], out=nxt)
            else:
                torch.bmm(g, params[i][0], out=nxt)
            g = relu_backward(nxt, acts[i], 0, grad_input=nxt)


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
    # max_norm / (total + 1e-6) as torch rounds it (the scalars in total's dtype, then
    # Tensor.__rtruediv__: the reciprocal times max_norm), clamped at 1
    t = total.numpy()
    one = t.dtype.type(1.0)
    coef = np.minimum(np.reciprocal(t + t.dtype.type(1e-6)) * t.dtype.type(max_norm), one)
    if not np.all(coef == one):  # a row scaled by 1 is unchanged
        grad.mul_(torch.from_numpy(coef)[:, None])
    return total


def _negligible_square(eps: float, c: float, dtype: torch.dtype) -> float:
    """A v > 0 with √v / c below a quarter of ε's spacing in ``dtype`` (so √v / c + ε rounds
    to ε), and a normal number of ``dtype``; 0 when there is none."""
    info = torch.finfo(dtype)
    v = (eps * info.eps / 8 * c) ** 2  # info.eps / 8: a quarter of the spacing at or below ε
    return v if v >= info.tiny else 0.0


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
        self._denom = torch.empty_like(self.params)
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
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        # √v̂/c + ε = ε exactly for every v ≤ floor: raising those v to the floor keeps the
        # denominator and spares torch's sqrt its slow path on zeros (dead units, padding)
        floor = _negligible_square(self.eps, bias_correction2_sqrt, self.params.dtype)
        denom = torch.clamp(self.exp_avg_sq, min=floor, out=self._denom).sqrt_()
        denom.div_(bias_correction2_sqrt).add_(self.eps)
        self.params.addcdiv_(self.exp_avg, denom, value=-step_size)
