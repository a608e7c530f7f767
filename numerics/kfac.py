"""KFAC-Laplace for MLPs: a k-independent structured reference (paper App. B, Ritter et al. 2018).

For a linear layer s = W a + b write ã = [a; 1] and M = [W b]; the per-sample gradient of the
scalar output is ∇_M f = δ ãᵀ with δ = ∂f/∂s. The GGN block of the layer is
Σ_n w_n (ã_n ã_nᵀ) ⊗ (δ_n δ_nᵀ) (row-major vec of M: δ ⊗ ã), and KFAC (Martens & Grosse
2015) replaces the sum of Kronecker products by one product

    Ω_l ≈ G_l ⊗ A_l + α I,   A_l = (1/N) Σ_n ã_n ã_nᵀ,   G_l = Σ_n w_n δ_n δ_nᵀ,

with w_n = 1/σ0² (regression) or p_n(1 − p_n) (binary); layers are independent
(block-diagonal). The prior is added exactly through the eigendecompositions
A = Q_A Λ_A Q_Aᵀ, G = Q_G Λ_G Q_Gᵀ (laplace-torch's ``KronLaplace`` does the same), so the
epistemic variance at x* is

    Σ_l Σ_ij ((Q_Gᵀ δ*)_i (Q_Aᵀ ã*)_j)² / (λ_G,i λ_A,j + α).

Exact for a single linear layer with one output under regression (constant w_n, so
Σ w_n ããᵀ ⊗ δδᵀ factorises); for binary it replaces Σ w_n ã ãᵀ by (Σ w_n)·mean ã ãᵀ.

Two weight–bias conventions (``convention=``): ``"joint"`` is the [W b] factor above (Martens
& Grosse 2015, Ritter et al. 2018); ``"separate"`` gives the bias a factor of its own, G_l
on b and G_l ⊗ (1/N) Σ_n a_n a_nᵀ on W — laplace-torch's ``KronLaplace`` (curvlinops'
``separate_weight_and_bias=True``). It is the joint form with A_l replaced by
blockdiag((1/N) Σ_n a_n aᵀ_n, 1), i.e. with the cross entries (1/N) Σ_n a_n of A_l set to
zero (the corner (1/N) Σ_n 1 is 1 already), so the same eigen-form serves both
(docs/mathematics.md, "Diagonal and KFAC Laplace"). Why not laplace-torch: it is an
optional extra, not a dependency; this module is ~160 lines and is tested against a dense
Kronecker construction.

References
----------
.. [1] J. Martens, R. Grosse, "Optimizing Neural Networks with Kronecker-factored Approximate
   Curvature", ICML 2015, arXiv:1503.05671, §3.
.. [2] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab.numerics.ggn import logistic_weight_root

__all__ = ["CONVENTIONS", "KFACLaplace", "fit_kfac", "layer_signals"]

#: The weight–bias conventions (module docstring).
CONVENTIONS = ("joint", "separate")


def _linears(model: torch.nn.Module) -> list[torch.nn.Linear]:
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    n_lin = sum(t.numel() for m in layers for t in m.parameters() if t.requires_grad)
    n_all = sum(t.numel() for t in model.parameters() if t.requires_grad)
    if not layers or n_lin != n_all:
        raise ValueError("model must be an MLP: every trainable parameter in a torch.nn.Linear")
    if any(m.bias is None for m in layers):
        raise ValueError("model must use biases in every Linear layer (ã = [a; 1])")
    return layers


def layer_signals(model: torch.nn.Module, X: Any) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """Per-sample (ã_l, δ_l) for every Linear layer, and the outputs f(X) (one output only).

    δ_l = ∂f/∂s_l for each sample from one backward pass of Σ_n f(x_n) (samples do not
    interact in an MLP in eval mode).
    """
    layers = _linears(model)
    dtype = layers[0].weight.dtype
    Xt = torch.as_tensor(np.asarray(X), dtype=dtype)
    inputs: dict[int, Any] = {}
    outputs: dict[int, Any] = {}

    def hook(m: Any, inp: Any, out: Any) -> None:  # by module: call order may differ
        if id(m) in outputs:
            raise ValueError("model must call each of its Linear layers once per forward pass")
        inputs[id(m)] = inp[0].detach()
        outputs[id(m)] = out

    handles = [m.register_forward_hook(hook) for m in layers]
    try:
        f = model(Xt)
    finally:
        for h in handles:
            h.remove()
    if f.ndim > 1 and f.shape[1] != 1:
        raise ValueError(f"model must have one output for KFAC here; got {tuple(f.shape)}")
    if len(outputs) != len(layers):
        raise ValueError("model must call each of its Linear layers in its forward pass")
    f = f.reshape(-1)
    outs = [outputs[id(m)] for m in layers]
    deltas = torch.autograd.grad(f.sum(), outs)
    ones = torch.ones(Xt.shape[0], 1, dtype=dtype)
    sig = [
        (torch.cat([a.reshape(a.shape[0], -1), ones], 1).double().numpy(), d.double().numpy())
        for a, d in zip((inputs[id(m)] for m in layers), deltas, strict=True)
    ]
    return f.detach().double().numpy(), sig


@dataclass(frozen=True)
class KFACLaplace:
    """Eigendecomposed Kronecker factors per layer and the prior precision α."""

    eig_A: tuple[tuple[np.ndarray, np.ndarray], ...]
    eig_G: tuple[tuple[np.ndarray, np.ndarray], ...]
    prior_precision: float

    def variance(
        self, model: torch.nn.Module, X: Any, *, layers: slice = slice(None)
    ) -> np.ndarray:
        """Epistemic variance g(x*)ᵀ Ω_KFAC⁻¹ g(x*) at the rows of X (module docstring);
        ``layers`` selects the Linear layers whose blocks are summed (``slice(-1, None)``:
        the last layer's Laplace, the others fixed)."""
        _, sig = layer_signals(model, X)
        total = 0.0
        blocks = zip(self.eig_A[layers], self.eig_G[layers], sig[layers], strict=True)
        for (lA, QA), (lG, QG), (a, d) in blocks:
            u2 = (d @ QG) ** 2  # (M, out)
            v2 = (a @ QA) ** 2  # (M, in + 1)
            inv = 1.0 / (lG[:, None] * lA[None, :] + self.prior_precision)
            total = total + np.einsum("mi,ij,mj->m", u2, inv, v2)
        return np.asarray(total)


def fit_kfac(
    model: torch.nn.Module,
    X: Any,
    *,
    likelihood: str,
    prior_precision: float,
    noise_var: float = 1.0,
    convention: str = "joint",
) -> KFACLaplace:
    """Fit KFAC-Laplace on the training inputs X for a one-output MLP.

    Parameters
    ----------
    model : torch.nn.Module
        MLP (Linear layers with bias and elementwise activations), at the MAP, eval mode.
    X : (N, d) array
    likelihood : {"regression", "binary"}
    prior_precision : float
        α > 0 (isotropic prior).
    noise_var : float
        σ0² for regression.
    convention : {"joint", "separate"}
        The bias in the input factor (ã = [a; 1]) or with a factor G_l of its own
        (module docstring).
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if likelihood not in ("regression", "binary"):
        raise ValueError(f"likelihood must be 'regression' or 'binary'; got {likelihood!r}")
    if not prior_precision > 0 or not noise_var > 0:
        raise ValueError("prior_precision and noise_var must be positive")
    f, sig = layer_signals(model, X)
    n = f.shape[0]
    if likelihood == "regression":
        w = np.full(n, 1.0 / noise_var)
    else:
        w = logistic_weight_root(f) ** 2
    eig_A, eig_G = [], []
    for a, d in sig:
        A = a.T @ a / n
        if convention == "separate":
            A[:-1, -1] = A[-1, :-1] = 0.0  # blockdiag((1/N) Σ a aᵀ, 1)
        G = (d * w[:, None]).T @ d
        lA, QA = np.linalg.eigh(A)
        lG, QG = np.linalg.eigh(G)
        eig_A.append((np.clip(lA, 0.0, None), QA))
        eig_G.append((np.clip(lG, 0.0, None), QG))
    return KFACLaplace(tuple(eig_A), tuple(eig_G), float(prior_precision))
