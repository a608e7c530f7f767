"""Per-sample Jacobians of Linear-layer networks from one forward and C backward passes.

For a linear layer s = W a + b applied to each sample, ∂f/∂W_ij = δ_i a_j and ∂f/∂b_i = δ_i
with δ = ∂f/∂s (docs/mathematics.md, "Scores and subset columns without per-sample
Jacobians"). Because samples do not interact, δ for every sample comes from one backward
pass of Σ_n f_c(x_n) per output c. Then

- a full Jacobian chunk is a set of outer products (no vmap, no per-sample graph);
- a column subset S is δ[:, i_S] ∘ a[:, j_S]: O(B·k) per chunk, never B×p;
- the weighted mean squared gradients of W are (δ∘δ)ᵀ(a∘a) — one product per layer.

Applicable when every trainable parameter belongs to a ``torch.nn.Linear`` called exactly once
per forward on a 2-D (batch, features) input; :mod:`laplace_lab.numerics.jacobians` checks the
first row against autograd and falls back to ``vmap(jacrev)`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab.numerics._large_outputs import empty

__all__ = [
    "ColumnPlan",
    "LinearPlan",
    "LinearSignals",
    "column_plan",
    "linear_plan",
    "linear_signals",
]


@dataclass(frozen=True)
class LinearPlan:
    """The Linear modules and the flat offsets of their weight and bias blocks."""

    modules: tuple[Any, ...]
    weight_start: tuple[int, ...]
    bias_start: tuple[int | None, ...]
    p: int


def linear_plan(model: Any, layout: Any) -> LinearPlan | None:
    """A plan when every trainable parameter is the weight or bias of one ``nn.Linear`` (a
    weight shared by two modules, as in tied layers, is not)."""
    import torch

    owner, owners = {}, {}
    for name, m in model.named_modules(remove_duplicate=False):
        for pname, t in m.named_parameters(recurse=False):
            owner[f"{name}.{pname}" if name else pname] = (m, pname, t)
            owners.setdefault(id(t), set()).add(id(m))
    if any(len(ms) > 1 for ms in owners.values()):
        return None
    mods, w_start, b_start = [], [], []
    seen: dict[int, int] = {}
    for block in layout.blocks:
        m, pname, t = owner[block.name]
        if not isinstance(m, torch.nn.Linear):
            return None
        if id(m) not in seen:
            if not m.weight.requires_grad:
                return None
            seen[id(m)] = len(mods)
            mods.append(m)
            w_start.append(-1)
            b_start.append(None)
        i = seen[id(m)]
        if pname == "weight":
            w_start[i] = block.slice.start
        else:
            b_start[i] = block.slice.start
    return LinearPlan(tuple(mods), tuple(w_start), tuple(b_start), layout.p)


@dataclass(frozen=True)
class ColumnPlan:
    """Where the columns S come from, grouped by layer: per Linear layer the output and input
    indices (i, j) of its weight columns and the output indices of its bias columns (index
    tensors or None), and ``order``, the positions in S of the columns in that grouped order
    (weights then bias, layer by layer)."""

    weights: tuple[tuple[Any, Any] | None, ...]
    biases: tuple[Any | None, ...]
    order: np.ndarray


def column_plan(plan: LinearPlan, idx: np.ndarray, device: Any) -> ColumnPlan:
    """The :class:`ColumnPlan` of the flat parameter indices ``idx`` under ``plan``."""
    import torch

    weights, biases, order = [], [], []
    for m, ws, bs in zip(plan.modules, plan.weight_start, plan.bias_start, strict=True):
        n_out, n_in = m.weight.shape
        pos = np.flatnonzero((idx >= ws) & (idx < ws + n_out * n_in))
        if pos.size:
            i, j = np.divmod(idx[pos] - ws, n_in)
            weights.append((torch.as_tensor(i, device=device), torch.as_tensor(j, device=device)))
            order.append(pos)
        else:
            weights.append(None)
        pos = np.flatnonzero((idx >= bs) & (idx < bs + n_out)) if bs is not None else pos[:0]
        if pos.size:
            biases.append(torch.as_tensor(idx[pos] - bs, device=device))
            order.append(pos)
        else:
            biases.append(None)
    return ColumnPlan(tuple(weights), tuple(biases), np.concatenate(order))


@dataclass(frozen=True)
class LinearSignals:
    """Layer inputs a_l (B, in) and output sensitivities δ_l (B, C, out) of one chunk."""

    plan: LinearPlan
    a: tuple[Any, ...]
    delta: tuple[Any, ...]

    @property
    def nbytes(self) -> int:
        """Bytes held by the layer inputs and sensitivities."""
        return sum(t.numel() * t.element_size() for t in (*self.a, *self.delta))

    def _layers(self) -> Any:
        """(module, weight offset, bias offset, a, δ) per Linear layer."""
        p = self.plan
        return zip(p.modules, p.weight_start, p.bias_start, self.a, self.delta, strict=True)

    def full(self, out: Any = None) -> Any:
        """The (B, C, p) Jacobian chunk from outer products, written into ``out`` if given."""
        import torch

        B, C = self.delta[0].shape[:2]
        if out is None:
            out = empty((B, C, self.plan.p), dtype=self.a[0].dtype, device=self.a[0].device)
        for m, ws, bs, a, d in self._layers():
            n_o, n_i = m.weight.shape
            view = out[:, :, ws : ws + n_o * n_i].unflatten(-1, (n_o, n_i))
            torch.mul(d[:, :, :, None], a[:, None, None, :], out=view)
            if bs is not None:
                out[:, :, bs : bs + n_o] = d
        return out

    def columns(self, idx: np.ndarray) -> Any:
        """J[:, :, idx] (B, C, k) without forming the chunk: δ[:, :, i] · a[:, j] per column.

        The columns are computed layer by layer (:meth:`grouped_columns`) and placed in the
        order of ``idx`` with one ``index_copy_`` unless ``idx`` is already in that order
        (e.g. sorted); one product per entry, so the values are those of the full chunk.
        """
        import torch

        cp = column_plan(self.plan, idx, self.a[0].device)
        grouped = self.grouped_columns(cp, 0, self.a[0].shape[0])
        if np.array_equal(cp.order, np.arange(cp.order.size)):  # idx already layer by layer
            return grouped
        out = torch.empty_like(grouped)
        return out.index_copy_(2, torch.as_tensor(cp.order, device=out.device), grouped)

    def grouped_columns(self, cp: ColumnPlan, start: int, stop: int, out: Any = None) -> Any:
        """J[start:stop, :, S] with the columns of S grouped by layer (S[cp.order]), (r, C, k).

        Each layer's columns are one product δ[:, :, i] · a[:, j] written into a contiguous
        slice of ``out`` (a buffer of that shape and the signals' dtype, or a new one).
        """
        import torch

        r, C = stop - start, self.delta[0].shape[1]
        if out is None:
            out = torch.empty(
                (r, C, cp.order.size), dtype=self.a[0].dtype, device=self.a[0].device
            )
        at = 0
        for (_, _, _, a, d), weights, bias in zip(
            self._layers(), cp.weights, cp.biases, strict=True
        ):
            d2 = d[start:stop].reshape(r * C, -1)  # gathers along the last axis of 2-D are fast
            if weights is not None:
                ti, tj = weights
                n = ti.numel()
                rows = a[start:stop].index_select(1, tj)[:, None, :]
                torch.mul(d2.index_select(1, ti).view(r, C, n), rows, out=out[:, :, at : at + n])
                at += n
            if bias is not None:
                n = bias.numel()
                out[:, :, at : at + n] = d2.index_select(1, bias).view(r, C, n)
                at += n
        return out

    def weighted_square_sums(self, W: Any) -> Any:
        """Σ_n ‖W_nᵀ J_n[:, i]‖² for every column i, (p,): (δ̃∘δ̃)ᵀ(a∘a) per layer.

        ``W`` is (B, C, K): δ̃_n = W_nᵀ δ_n (K rows per sample).
        """
        import torch

        s = torch.empty(self.plan.p, dtype=self.a[0].dtype, device=self.a[0].device)
        for m, ws, bs, a, d in self._layers():
            dw = torch.einsum("bck,bco->bko", W, d)  # (B, K, out)
            d2 = (dw * dw).sum(1)  # (B, out)
            s[ws : ws + m.weight.numel()] = (d2.T @ (a * a)).reshape(-1)
            if bs is not None:
                s[bs : bs + d.shape[2]] = d2.sum(0)
        return s


def linear_signals(model: Any, plan: LinearPlan, xb: Any) -> tuple[Any, LinearSignals] | None:
    """Model outputs (B, C) and the signals of one chunk; None if a Linear is not per-sample."""
    import torch

    inputs: dict[int, list[Any]] = {id(m): [] for m in plan.modules}
    outputs: dict[int, list[Any]] = {id(m): [] for m in plan.modules}

    def hook(m: Any, inp: Any, out: Any) -> None:
        inputs[id(m)].append(inp[0])
        outputs[id(m)].append(out)

    handles = [m.register_forward_hook(hook) for m in plan.modules]
    try:
        with torch.enable_grad():
            f = model(xb)
    finally:
        for h in handles:
            h.remove()
    B = xb.shape[0]
    for m in plan.modules:
        ins, outs = inputs[id(m)], outputs[id(m)]
        if len(ins) != 1 or ins[0].ndim != 2 or ins[0].shape[0] != B:
            return None
    f2 = f.reshape(B, -1)
    outs = [outputs[id(m)][0] for m in plan.modules]
    per_c = []
    for c in range(f2.shape[1]):
        g = torch.autograd.grad(
            f2[:, c].sum(), outs, retain_graph=c + 1 < f2.shape[1], allow_unused=True
        )
        per_c.append(
            [torch.zeros_like(o) if gi is None else gi for gi, o in zip(g, outs, strict=True)]
        )
    if len(per_c) == 1:  # one output: δ (B, 1, out) is a view, not a stacked copy
        delta = tuple(g.detach().unsqueeze(1).contiguous() for g in per_c[0])
    else:
        delta = tuple(torch.stack([g[i] for g in per_c], 1).detach() for i in range(len(outs)))
    a = tuple(inputs[id(m)][0].detach() for m in plan.modules)
    return f2.detach(), LinearSignals(plan, a, delta)
