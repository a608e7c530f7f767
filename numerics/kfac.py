"""KFAC-Laplace for MLPs and CNNs, a k-independent structured reference (Ritter et al. 2018).

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

A Conv2d layer shares its weights over its R output positions: s_{n,r} = W ã_{n,r} with
ã_{n,r} = [patch_{n,r}; 1] (the input patch that position r sees, in the weight's
(C_in, kh, kw) row-major order) and ∇_M f_c = Σ_r δ_{c,r} ã_{n,r}ᵀ, a sum of R rank-one
terms. Eschenhagen et al. (2023) give two Kronecker approximations (``approximation=``):
*expand* counts every position as a sample of its own,

    A_l = (1/(N R)) Σ_{n,r} ã_{n,r} ã_{n,r}ᵀ,   G_l = Σ_{n,c,r} g_{n,c,r} g_{n,c,r}ᵀ,

and *reduce* aggregates the positions first,

    A_l = (1/N) Σ_n ā_n ā_nᵀ, ā_n = (1/R) Σ_r ã_{n,r},   G_l = Σ_{n,c} ḡ_{n,c} ḡ_{n,c}ᵀ,
    ḡ_{n,c} = Σ_r g_{n,c,r},

with g_{n,c,r} = D_{n,r}ᵀ r_nc (D_{n,r} = ∂f(x_n)/∂s_{n,r}). Joint reduce is exact for a
linear Conv2d whose positions are summed into the output under a Gaussian likelihood (one linear
model in the features (Σ_r patch_r, R)); expand is exact where every position is an output
of its own. Both equal the Linear layer's factors at R = 1, and both are curvlinops'
``KFACLinearOperator(kfac_approx=...)`` (type-2) and laplace-torch's ``KronLaplace``
(expand by default). The epistemic variance of a Conv2d block sums
(Σ_r (Q_Gᵀ δ*_{c,r})_i (Q_Aᵀ ã*_r)_j)² / (λ_G,i λ_A,j + α) over i, j.

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
.. [4] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig, "Kronecker-Factored
   Approximate Curvature for Modern Neural Network Architectures", NeurIPS 2023,
   arXiv:2311.00636, §3 (KFAC-expand and KFAC-reduce, and where each is exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab.numerics.ggn import logistic_weight_root

__all__ = [
    "APPROXIMATIONS",
    "CONVENTIONS",
    "LIKELIHOODS",
    "KFACLaplace",
    "fit_kfac",
    "kfac_from_signals",
    "layer_signals",
    "output_gradients",
    "output_hessian_root",
    "shared_signals",
]

#: The weight–bias conventions (module docstring).
CONVENTIONS = ("joint", "separate")
#: The likelihoods and their output Hessians (module docstring).
LIKELIHOODS = ("regression", "binary", "multiclass")
#: The weight-sharing approximations of a Conv2d layer (module docstring).
APPROXIMATIONS = ("expand", "reduce")


def _layers(model: torch.nn.Module, *, shared: bool) -> list[torch.nn.Module]:
    """The Linear (and, ``shared``, Conv2d) layers holding every trainable parameter."""
    kinds = (torch.nn.Linear, torch.nn.Conv2d) if shared else (torch.nn.Linear,)
    layers = [m for m in model.modules() if isinstance(m, kinds)]
    n_lin = sum(t.numel() for m in layers for t in m.parameters() if t.requires_grad)
    n_all = sum(t.numel() for t in model.parameters() if t.requires_grad)
    if not layers or n_lin != n_all:
        what = "a torch.nn.Linear or torch.nn.Conv2d" if shared else "a torch.nn.Linear"
        raise ValueError(
            f"model must be an MLP{' or a CNN' if shared else ''}: every "
            f"trainable parameter in {what}"
        )
    if any(m.bias is None for m in layers):
        raise ValueError("model must use biases in every layer (ã = [a; 1])")
    for m in layers:
        if isinstance(m, torch.nn.Conv2d) and (
            m.groups != 1
            or m.padding_mode != "zeros"
            or (isinstance(m.padding, str) and m.padding != "valid")
        ):
            raise ValueError(
                "model's Conv2d layers must have groups=1, padding_mode='zeros' and integer "
                f"(or 'valid') padding; got {m}"
            )
    return layers


def _patches(conv: torch.nn.Conv2d, x: Any) -> Any:
    """ã_{n,r} (N, R, C_in·kh·kw + 1): the input patch of each output position r, in the
    weight's (C_in, kh, kw) row-major order, and a 1."""
    padding = 0 if conv.padding == "valid" else conv.padding
    cols = torch.nn.functional.unfold(
        x, conv.kernel_size, dilation=conv.dilation, padding=padding, stride=conv.stride
    ).transpose(1, 2)
    return torch.nn.functional.pad(cols, (0, 1), value=1.0)


def _signals(
    model: torch.nn.Module, X: Any, *, shared: bool
) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    layers = _layers(model, shared=shared)
    dtype = layers[0].weight.dtype
    Xt = torch.as_tensor(np.asarray(X), dtype=dtype)
    inputs: dict[int, Any] = {}
    outputs: dict[int, Any] = {}

    def hook(m: Any, inp: Any, out: Any) -> None:  # by module: call order may differ
        if id(m) in outputs:
            raise ValueError("model must call each of its layers once per forward pass")
        if isinstance(m, torch.nn.Linear) and inp[0].ndim != 2:
            shape = tuple(inp[0].shape)
            raise ValueError(f"model's Linear layers must see inputs (N, in); got {shape}")
        inputs[id(m)] = inp[0].detach()
        outputs[id(m)] = out

    handles = [m.register_forward_hook(hook) for m in layers]
    try:
        f = model(Xt)
    finally:
        for h in handles:
            h.remove()
    if len(outputs) != len(layers):
        raise ValueError("model must call each of its layers in its forward pass")
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
        D = torch.stack([grads[i] for grads in per_output], dim=1)  # (N, C, out[, H', W'])
        if isinstance(m, torch.nn.Conv2d):
            a = _patches(m, a)  # (N, R, in + 1)
            D = D.flatten(3).transpose(2, 3).contiguous()  # (N, C, R, out)
        else:
            a = torch.cat([a, ones], 1)
        sig.append((a.double().numpy(), D.double().numpy()))
    return f.detach().double().numpy(), sig


def layer_signals(model: torch.nn.Module, X: Any) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """The outputs f(X) (N, C) and, for every Linear layer, (ã_l (N, in + 1), D_l (N, C, out)).

    D_l[n, c] = ∂f_c(x_n)/∂s_l from one backward pass of Σ_n f_c(x_n) per output c (samples
    do not interact in an MLP in eval mode); float64 NumPy arrays.
    """
    return _signals(model, X, shared=False)


def shared_signals(model: torch.nn.Module, X: Any) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
    """:func:`layer_signals` for Linear and Conv2d layers: a Conv2d layer's signals carry
    the weight-sharing axis of its R output positions, ã_l (N, R, in + 1) (the input patch
    of each position and a 1) and D_l (N, C, R, out) (D_l[n, c, r] = ∂f_c(x_n)/∂s_{l,r});
    a Linear layer's are those of :func:`layer_signals`."""
    return _signals(model, X, shared=True)


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


def _shared_factor_rows(
    a: np.ndarray, D: np.ndarray, R: np.ndarray, approximation: str
) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose second moments are A_l and G_l for a layer with a weight-sharing axis:
    ``"expand"`` every (n, r) as a sample of its own, ã_{n,r} and g_{n,c,r}; ``"reduce"``
    ā_n = (1/R) Σ_r ã_{n,r} and ḡ_{n,c} = Σ_r g_{n,c,r}."""
    g = np.einsum("nkc,nkro->ncro", R, D)  # g_{n,c,r} = D_{n,r}ᵀ r_nc
    if approximation == "expand":
        return a.reshape(-1, a.shape[-1]), g.reshape(-1, g.shape[-1])
    return a.mean(axis=1), g.sum(axis=2).reshape(-1, g.shape[-1])


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
        (M, C) for C outputs (module docstring); ``layers`` selects the layers whose blocks
        are summed (``slice(-1, None)``: the last layer's Laplace, the others fixed). A
        Conv2d layer's gradient Σ_r δ_{c,r} ã_rᵀ is not of rank one: its eigenbasis
        coordinates are Σ_r (Q_Gᵀ δ_{c,r})(Q_Aᵀ ã_r)ᵀ."""
        f, sig = shared_signals(model, X)
        total = np.zeros(f.shape)
        blocks = zip(self.eig_A[layers], self.eig_G[layers], sig[layers], strict=True)
        for (lA, QA), (lG, QG), (a, D) in blocks:
            inv = 1.0 / (lG[:, None] * lA[None, :] + self.prior_precision)
            if a.ndim == 3:  # Conv2d: (M, R, in + 1), (M, C, R, out)
                coords = np.einsum("mcri,mrj->mcij", D @ QG, a @ QA)
                total += np.einsum("mcij,ij->mc", coords**2, inv)
                continue
            u2 = (D @ QG) ** 2  # (M, C, out)
            v2 = (a @ QA) ** 2  # (M, in + 1)
            total += np.einsum("mci,ij,mj->mc", u2, inv, v2)
        return total[:, 0] if total.shape[1] == 1 else total


def kfac_from_signals(
    signals: list[tuple[np.ndarray, np.ndarray]],
    R: np.ndarray,
    *,
    prior_precision: float,
    convention: str = "joint",
    approximation: str = "expand",
) -> KFACLaplace:
    """KFAC-Laplace from the training signals of :func:`shared_signals` (or
    :func:`layer_signals`) and the output Hessians' square roots R_n of
    :func:`output_hessian_root`: G_l = Σ_n Σ_c g_nc g_ncᵀ, A_l = (1/N) Σ_n ã_n ã_nᵀ (cross
    entries zeroed for ``"separate"``), eigendecomposed; a Conv2d layer's rows as
    ``approximation`` says (module docstring)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {APPROXIMATIONS}; got {approximation!r}")
    if not prior_precision > 0:
        raise ValueError(f"prior_precision must be positive; got {prior_precision!r}")
    eig_A, eig_G = [], []
    for a, D in signals:
        if a.ndim == 3:
            a, g = _shared_factor_rows(a, D, R, approximation)
        else:
            g = output_gradients(D, R).reshape(-1, D.shape[2])  # rows g_nc
        A = a.T @ a / a.shape[0]
        if convention == "separate":
            A[:-1, -1] = A[-1, :-1] = 0.0  # blockdiag((1/N) Σ a aᵀ, 1)
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
    approximation: str = "expand",
) -> KFACLaplace:
    """Fit KFAC-Laplace on the training inputs X for an MLP or a CNN.

    Parameters
    ----------
    model : torch.nn.Module
        At the MAP, eval mode; every trainable parameter in a Linear or Conv2d layer with a
        bias (Conv2d: groups=1, zero padding given as integers or "valid"), elementwise
        activations, pooling and reshapes between them, each layer called once per forward
        pass.
    X : (N, d) array
        Training inputs as the model takes them (a CNN may start with ``nn.Unflatten``).
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
    approximation : {"expand", "reduce"}
        KFAC-expand or KFAC-reduce for the weight sharing of Conv2d layers (Eschenhagen et
        al. 2023, §3; module docstring); the two are the same for Linear layers.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {APPROXIMATIONS}; got {approximation!r}")
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
    if not prior_precision > 0 or not noise_var > 0:
        raise ValueError("prior_precision and noise_var must be positive")
    f, sig = shared_signals(model, X)
    R = output_hessian_root(f, likelihood, noise_var)
    return kfac_from_signals(
        sig, R, prior_precision=prior_precision, convention=convention, approximation=approximation
    )
