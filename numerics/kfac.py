"""KFAC-Laplace for MLPs: a k-independent structured reference (paper App. B, Ritter et al. 2018).

For a linear layer s = W a + b write ã = [a; 1] and M = [W b]; the per-sample gradient of
the output f_c is ∇_M f_c = δ_c ãᵀ with δ_c = ∂f_c/∂s, the c-th row of D = ∂f/∂s (C × out).
With the output Hessian H_n of the negative log-likelihood, the GGN block of the layer is
Σ_n (D_nᵀ H_n D_n) ⊗ (ã_n ã_nᵀ) (row-major vec of M), and KFAC (Martens & Grosse 2015)
replaces the sum of Kronecker products by one product

    Ω_l ≈ G_l ⊗ A_l + α I,   A_l = (1/N) Σ_n ã_n ã_nᵀ,   G_l = Σ_n D_nᵀ H_n D_n,

with H_n = 1/σ0² (regression), σ(f_n)(1 − σ(f_n)) (binary) or diag(π_n) − π_n π_nᵀ
(multiclass, π_n = softmax f_n): the exact output Hessian ("type-2" in curvlinops' words).
G_l is evaluated as Σ_n Σ_c g_nc g_ncᵀ with g_nc = D_nᵀ r_nc, r_nc the columns of a square
root R_n R_nᵀ = H_n (for softmax R_n = diag(√π_n) − π_n √π_nᵀ, no eigendecomposition), so
one output is the special case g_n = √w_n δ_n. Layers are independent (block-diagonal). The
prior is added exactly through the eigendecompositions A = Q_A Λ_A Q_Aᵀ, G = Q_G Λ_G Q_Gᵀ
(laplace-torch's ``KronLaplace`` does the same), so the epistemic variance of output c at x* is

    Σ_l Σ_ij ((Q_Gᵀ δ*_c)_i (Q_Aᵀ ã*)_j)² / (λ_G,i λ_A,j + α).

Exact for a single linear layer with one output under regression (constant w_n, so
Σ w_n ããᵀ ⊗ δδᵀ factorises); for binary it replaces Σ w_n ã ãᵀ by (Σ w_n)·mean ã ãᵀ, for
softmax Σ H_n ⊗ ã ãᵀ by (Σ H_n) ⊗ mean ã ãᵀ (docs/mathematics.md, "Diagonal and KFAC
Laplace", for the regimes where the block is exact).

Two weight–bias conventions (``convention=``): ``"joint"`` is the [W b] factor above (Martens
& Grosse 2015, Ritter et al. 2018); ``"separate"`` gives the bias a factor of its own, G_l
on b and G_l ⊗ (1/N) Σ_n a_n a_nᵀ on W — laplace-torch's ``KronLaplace`` (curvlinops'
``separate_weight_and_bias=True``). It is the joint form with A_l replaced by
blockdiag((1/N) Σ_n a_n aᵀ_n, 1), i.e. with the cross entries (1/N) Σ_n a_n of A_l set to
zero (the corner (1/N) Σ_n 1 is 1 already), so the same eigen-form serves both. Why not
laplace-torch: it is an optional extra, not a dependency; this module is tested against a
dense Kronecker construction.

References
----------
.. [1] J. Martens, R. Grosse, "Optimizing Neural Networks with Kronecker-factored Approximate
   Curvature", ICML 2015, arXiv:1503.05671, §3.
.. [2] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §3.
.. [3] F. Dangel, B. Mucsányi, T. Weber, R. Eschenhagen, "Kronecker-factored Approximate
   Curvature (KFAC) From Scratch", arXiv:2507.05127 (v1, 2025), §3–4 (the type-2 output
   factor as a sum over the columns of the output Hessian's square root).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab.numerics.ggn import logistic_weight_root

__all__ = [
    "CONVENTIONS",
    "LIKELIHOODS",
    "KFACLaplace",
    "fit_kfac",
    "kfac_from_signals",
    "layer_signals",
    "output_gradients",
    "output_hessian_root",
]

#: The weight–bias conventions (module docstring).
CONVENTIONS = ("joint", "separate")
#: The likelihoods and their output Hessians (module docstring).
LIKELIHOODS = ("regression", "binary", "multiclass")


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
    """The outputs f(X) (N, C) and, for every Linear layer, (ã_l (N, in + 1), D_l (N, C, out)).

    D_l[n, c] = ∂f_c(x_n)/∂s_l from one backward pass of Σ_n f_c(x_n) per output c (samples
    do not interact in an MLP in eval mode); float64 NumPy arrays.
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
    if len(outputs) != len(layers):
        raise ValueError("model must call each of its Linear layers in its forward pass")
    f = f.reshape(Xt.shape[0], -1)
    outs = [outputs[id(m)] for m in layers]
    C = f.shape[1]
    per_output = [
        torch.autograd.grad(f[:, c].sum(), outs, retain_graph=c + 1 < C) for c in range(C)
    ]
    ones = torch.ones(Xt.shape[0], 1, dtype=dtype)
    sig = []
    for i, m in enumerate(layers):
        a = inputs[id(m)]
        D = torch.stack([grads[i] for grads in per_output], dim=1)  # (N, C, out)
        sig.append(
            (torch.cat([a.reshape(a.shape[0], -1), ones], 1).double().numpy(), D.double().numpy())
        )
    return f.detach().double().numpy(), sig


def output_hessian_root(f: Any, likelihood: str, noise_var: float = 1.0) -> np.ndarray:
    """R_n (N, C, C) with R_n R_nᵀ = H_n, the output Hessian of the negative log-likelihood.

    ``"regression"``: I/σ0; ``"binary"`` (C = 1): √(σ(f)(1 − σ(f))); ``"multiclass"``
    (C ≥ 2): diag(√π) − π √πᵀ, π = softmax f — its product with its transpose is
    diag(π) − 2ππᵀ + π(Σ_k π_k)πᵀ = diag(π) − ππᵀ.
    """
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
    if not noise_var > 0:
        raise ValueError(f"noise_var must be positive; got {noise_var!r}")
    f = np.asarray(f, dtype=np.float64)
    if f.ndim != 2:
        raise ValueError(f"f must have shape (N, C); got {f.shape}")
    N, C = f.shape
    if likelihood == "regression":
        return np.broadcast_to(np.eye(C) / np.sqrt(noise_var), (N, C, C)).copy()
    if likelihood == "binary":
        if C != 1:
            raise ValueError(f"likelihood='binary' needs one logit; got f of shape {f.shape}")
        return logistic_weight_root(f)[:, :, None]
    if C < 2:
        raise ValueError(f"likelihood='multiclass' needs C ≥ 2 logits; got f of shape {f.shape}")
    e = np.exp(f - f.max(axis=1, keepdims=True))
    pi = e / e.sum(axis=1, keepdims=True)
    root = np.sqrt(pi)
    return root[:, :, None] * np.eye(C) - pi[:, :, None] * root[:, None, :]


def output_gradients(D: np.ndarray, R: np.ndarray) -> np.ndarray:
    """g_nc = D_nᵀ r_nc for every column c of R_n: (N, C, out), rows R_nᵀ D_n, so that
    Σ_c g_nc g_ncᵀ = D_nᵀ H_n D_n (the backpropagated output Hessian of sample n)."""
    return np.einsum("nkc,nko->nco", R, D)


@dataclass(frozen=True)
class KFACLaplace:
    """Eigendecomposed Kronecker factors per layer and the prior precision α."""

    eig_A: tuple[tuple[np.ndarray, np.ndarray], ...]
    eig_G: tuple[tuple[np.ndarray, np.ndarray], ...]
    prior_precision: float

    def variance(
        self, model: torch.nn.Module, X: Any, *, layers: slice = slice(None)
    ) -> np.ndarray:
        """Epistemic variances g(x*)ᵀ Ω_KFAC⁻¹ g(x*) at the rows of X, (M,) for one output and
        (M, C) for C outputs (module docstring); ``layers`` selects the Linear layers whose
        blocks are summed (``slice(-1, None)``: the last layer's Laplace, the others fixed)."""
        f, sig = layer_signals(model, X)
        total = np.zeros(f.shape)
        blocks = zip(self.eig_A[layers], self.eig_G[layers], sig[layers], strict=True)
        for (lA, QA), (lG, QG), (a, D) in blocks:
            u2 = (D @ QG) ** 2  # (M, C, out)
            v2 = (a @ QA) ** 2  # (M, in + 1)
            inv = 1.0 / (lG[:, None] * lA[None, :] + self.prior_precision)
            total += np.einsum("mci,ij,mj->mc", u2, inv, v2)
        return total[:, 0] if total.shape[1] == 1 else total


def kfac_from_signals(
    signals: list[tuple[np.ndarray, np.ndarray]],
    R: np.ndarray,
    *,
    prior_precision: float,
    convention: str = "joint",
) -> KFACLaplace:
    """KFAC-Laplace from the training signals of :func:`layer_signals` and the output
    Hessians' square roots R_n of :func:`output_hessian_root`: G_l = Σ_n Σ_c g_nc g_ncᵀ,
    A_l = (1/N) Σ_n ã_n ã_nᵀ (cross entries zeroed for ``"separate"``), eigendecomposed."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if not prior_precision > 0:
        raise ValueError(f"prior_precision must be positive; got {prior_precision!r}")
    eig_A, eig_G = [], []
    for a, D in signals:
        A = a.T @ a / a.shape[0]
        if convention == "separate":
            A[:-1, -1] = A[-1, :-1] = 0.0  # blockdiag((1/N) Σ a aᵀ, 1)
        g = output_gradients(D, R).reshape(-1, D.shape[2])  # rows g_nc
        lA, QA = np.linalg.eigh(A)
        lG, QG = np.linalg.eigh(g.T @ g)
        eig_A.append((np.clip(lA, 0.0, None), QA))
        eig_G.append((np.clip(lG, 0.0, None), QG))
    return KFACLaplace(tuple(eig_A), tuple(eig_G), float(prior_precision))


def fit_kfac(
    model: torch.nn.Module,
    X: Any,
    *,
    likelihood: str,
    prior_precision: float,
    noise_var: float = 1.0,
    convention: str = "joint",
) -> KFACLaplace:
    """Fit KFAC-Laplace on the training inputs X for an MLP.

    Parameters
    ----------
    model : torch.nn.Module
        MLP (Linear layers with bias and elementwise activations), at the MAP, eval mode.
    X : (N, d) array
    likelihood : {"regression", "binary", "multiclass"}
        Gaussian (one output or several, H = I/σ0²), Bernoulli (one logit) or categorical
        (C ≥ 2 logits, H = diag(π) − ππᵀ).
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
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
    if not prior_precision > 0 or not noise_var > 0:
        raise ValueError("prior_precision and noise_var must be positive")
    f, sig = layer_signals(model, X)
    R = output_hessian_root(f, likelihood, noise_var)
    return kfac_from_signals(sig, R, prior_precision=prior_precision, convention=convention)
