"""The dense KFAC precision of a small MLP, built from its per-sample signals.

For a layer s = W a + b of an MLP with outputs f (C of them), the per-sample gradients of
f_c are ∂f_c/∂W = δ_c aᵀ and ∂f_c/∂b = δ_c with δ_c = ∂f_c/∂s, the c-th row of
D = ∂f/∂s (C × out), so the layer's GGN block is Σ_n (D_nᵀ H_n D_n) ⊗ (ã_n ã_nᵀ) on [W b]
(ã = [a; 1], row-major vec: index i·(d + 1) + j), H_n the output Hessian of the negative
log-likelihood: 1/σ0² (regression), σ(f_n)(1 − σ(f_n)) (binary), diag(π_n) − π_n π_nᵀ
(multiclass). KFAC (Martens & Grosse) replaces the sum of Kronecker products by the product
of the sums,

    G_l = Σ_n D_nᵀ H_n D_n,   A_l = (1/N) Σ_n ã_n ã_nᵀ,   K_l = G_l ⊗ A_l  ("joint"),

— for one output G_l = Σ_n w_n δ_n δ_nᵀ, w_n = H_n; for C outputs the backpropagated exact
output Hessian ("type-2", KFAC-expand in Eschenhagen et al.'s terms) — and keeps only the
layers' diagonal blocks. laplace-torch's ``KronLaplace`` (through curvlinops'
``KFACLinearOperator(separate_weight_and_bias=True)``) keeps the weight and the bias apart
instead: G_l ⊗ (1/N) Σ_n a_n a_nᵀ on W and G_l alone on b ("separate"), i.e. the joint K_l
with the cross block G_l ⊗ ā (ā the mean input) set to zero. The precision is
P = ⊕_l K_l + V, written out as a p × p matrix in ``parameters()`` order.

EKFAC (George et al.) keeps KFAC's eigenbasis Q = Q_G ⊗ Q_A of each block and takes as its
spectrum the diagonal of the exact GGN block B in that basis, s = diag(Qᵀ B Q): the block is
Q diag(s) Qᵀ ("joint": one basis for [W b]; "separate": Q_G ⊗ Q_Ā on W with Ā the input
factor without the 1, and Q_G on b). The oracle reads B from the dense GGN, so s is computed
without the per-sample projections Σ_n Σ_c ((Q_Gᵀ g_nc)_i (Q_Aᵀ ã_n)_j)² that an
implementation evaluates (g_nc = D_nᵀ r_nc with R_n R_nᵀ = H_n; the two are equal:
B = Σ_n Σ_c (g_nc ⊗ ã_n)(g_nc ⊗ ã_n)ᵀ).

Everything is computed here, independently of :mod:`laplace_lab.numerics.kfac`: ã_n from
forward hooks on a float64 copy of the model, D_n as the bias columns of the dense oracle's
autograd Jacobian (∂f/∂b_l = D_l), H_n from the oracle's output Hessians (no square root).

Networks with ``torch.nn.Conv2d`` layers (weight sharing over R output positions) have
:class:`SharedKFACOracle`, in KFAC-expand or KFAC-reduce (Eschenhagen et al. §3): patches by
explicit index loops (:func:`conv_patches`), δ_{n,c,r} by autograd on each layer's output
(:func:`shared_signals`); on an MLP (R = 1) it is :class:`KFACOracle`.

References
----------
.. [1] J. Martens, R. Grosse, "Optimizing Neural Networks with Kronecker-factored Approximate
   Curvature", ICML 2015, arXiv:1503.05671, §3 (the Kronecker factors, ã = [a; 1]).
.. [2] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §3 (the KFAC Laplace posterior).
.. [3] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig, "Kronecker-Factored
   Approximate Curvature for Modern Neural Network Architectures", NeurIPS 2023,
   arXiv:2311.00636, §3 (KFAC-expand, exact for deep linear networks).
.. [4] T. George, C. Laurent, X. Bouthillier, N. Ballas, P. Vincent, "Fast Approximate
   Natural Gradient Descent in a Kronecker-factored Eigenbasis", NeurIPS 2018,
   arXiv:1806.03884, §3 (EKFAC).
.. [5] F. Dangel, B. Mucsányi, T. Weber, R. Eschenhagen, "Kronecker-factored Approximate
   Curvature (KFAC) From Scratch", arXiv:2507.05127 (v1, 2025), §3–4 (the type-2 output
   factor Σ_n J_nᵀ H_n J_n for C outputs).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from laplace_lab._checks import one_of
from laplace_lab.conformance.contract import KFAC_APPROXIMATIONS, KFAC_CONVENTIONS
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.tolerance import variance_tolerance

__all__ = [
    "EKFACOracle",
    "KFACOracle",
    "LayerFactors",
    "SharedKFACOracle",
]


@dataclass(frozen=True)
class LayerFactors:
    """One Linear layer's Kronecker factors and where its parameters sit in θ.

    ``A`` is (d + 1) × (d + 1) with ã = [a; 1] (the joint factor; its leading d × d block
    is the separate convention's weight factor); ``G`` is out × out.
    """

    G: np.ndarray
    A: np.ndarray
    weight: np.ndarray  # (out, d) indices of W_ij in θ
    bias: np.ndarray  # (out,) indices of b_i in θ


def _layers(model: Any, *, shared: bool = False) -> list[tuple[str, Any, int, int]]:
    """(name, module, weight offset, bias offset) of every Linear layer (and, ``shared``,
    Conv2d layer); every parameter must belong to one, with a bias; a Conv2d with
    groups = 1, dilation 1 and numeric zero padding."""
    import torch

    kinds = (torch.nn.Linear, torch.nn.Conv2d) if shared else (torch.nn.Linear,)
    offsets, start = {}, 0
    for name, t in model.named_parameters():
        offsets[name] = start
        start += int(t.numel())
    found = []
    for name, m in model.named_modules():
        if not isinstance(m, kinds):
            continue
        if m.bias is None:
            what = "layer" if shared else "Linear layer"
            raise ValueError(f"KFAC here needs a bias in every {what} ({name!r})")
        if isinstance(m, torch.nn.Conv2d) and (
            m.groups != 1
            or tuple(m.dilation) != (1, 1)
            or isinstance(m.padding, str)
            or m.padding_mode != "zeros"
        ):
            raise ValueError(f"KFAC here needs groups=1, dilation=1, zero padding ({name!r})")
        prefix = f"{name}." if name else ""
        found.append((name, m, offsets[f"{prefix}weight"], offsets[f"{prefix}bias"]))
    covered = sum(m.weight.numel() + m.bias.numel() for _, m, _, _ in found)
    if covered != start:
        if shared:
            raise ValueError("KFAC here needs every parameter in a torch.nn.Linear or Conv2d")
        raise ValueError("KFAC here needs an MLP: every parameter in a torch.nn.Linear")
    return found


def _inputs(model: Any, X: Any) -> dict[str, np.ndarray]:
    """The input a_n of every Linear layer of a float64 copy of ``model``, (N, d)."""
    import torch

    m = copy.deepcopy(model).double().eval()
    seen: dict[str, np.ndarray] = {}
    handles = []
    for name, module, _, _ in _layers(m):

        def hook(mod: Any, inp: Any, name: str = name) -> None:
            if name in seen:
                raise ValueError(f"layer {name!r} is called twice in one forward pass")
            seen[name] = inp[0].detach().reshape(inp[0].shape[0], -1).numpy().copy()

        handles.append(module.register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            m(torch.as_tensor(X).double())
    finally:
        for h in handles:
            h.remove()
    return seen


@dataclass(frozen=True, eq=False)
class KFACOracle:
    """The KFAC Laplace approximation of one MLP problem, written out densely.

    Parameters
    ----------
    oracle : DenseOracle
        The dense oracle of the problem (its Jacobian, output Hessians and prior).
    convention : {"joint", "separate"}
        The weight–bias convention (module docstring).
    """

    oracle: DenseOracle
    convention: str

    def __post_init__(self) -> None:
        one_of(self.convention, "convention", KFAC_CONVENTIONS)

    @cached_property
    def factors(self) -> tuple[LayerFactors, ...]:
        """G_l = Σ_n D_nᵀ H_n D_n and A_l = (1/N) Σ_n ã_n ã_nᵀ of every Linear layer."""
        problem, o = self.oracle.problem, self.oracle
        inputs = _inputs(problem.model, problem.X_train)
        out = []
        for name, module, w0, b0 in _layers(problem.model):
            n_out, d = module.weight.shape
            bias = b0 + np.arange(n_out)
            D = o.J[:, :, bias]  # (N, C, out): ∂f/∂b = ∂f/∂s = D
            a = np.hstack([inputs[name], np.ones((inputs[name].shape[0], 1))])
            G = np.einsum("nco,ncd,ndq->oq", D, o.H, D)
            G = 0.5 * (G + G.T)
            A = a.T @ a / a.shape[0]
            weight = w0 + np.arange(n_out * d).reshape(n_out, d)
            out.append(LayerFactors(G, A, weight, bias))
        return tuple(out)

    @cached_property
    def curvature(self) -> np.ndarray:
        """⊕_l K_l in ``parameters()`` order (p × p), the likelihood part of P."""
        p = self.oracle.theta.size
        K = np.zeros((p, p))
        for f in self.factors:
            A = f.A.copy()
            if self.convention == "separate":
                A[:-1, -1] = A[-1, :-1] = 0.0  # blockdiag((1/N) Σ a aᵀ, 1): no W–b block
            idx = np.hstack([f.weight, f.bias[:, None]]).reshape(-1)  # [W b] row-major
            K[np.ix_(idx, idx)] += np.kron(f.G, A)
        return 0.5 * (K + K.T)

    @cached_property
    def precision(self) -> np.ndarray:
        """P = ⊕_l K_l + V."""
        return self.curvature + np.diag(self.oracle.V)

    def predictive_variance(self) -> np.ndarray:
        """gᵀP⁻¹g for every test point (and output), (M,) or (M, C)."""
        return _variances(self.oracle, self.precision)

    def variance_tolerance(self) -> np.ndarray:
        """The variance rule of :mod:`.tolerance` with P in place of Ω."""
        return _tolerances(self.oracle, self.precision)


def _per_output(oracle: DenseOracle, v: np.ndarray) -> np.ndarray:
    """(M·C,) rows (m, c) as (M, C) for multiclass, (M,) for one output."""
    v = v.reshape(oracle.G.shape[:2])
    return v if oracle.problem.likelihood == "multiclass" else v[:, 0]


def _variances(oracle: DenseOracle, P: np.ndarray) -> np.ndarray:
    """gᵀP⁻¹g for every row g of the test Jacobian (every test point and output)."""
    G = oracle.G.reshape(-1, oracle.G.shape[2])
    return _per_output(oracle, np.sum(np.linalg.solve(P, G.T).T * G, axis=1))


def _tolerances(oracle: DenseOracle, P: np.ndarray) -> np.ndarray:
    """The variance rule of :mod:`.tolerance` on P for every row of the test Jacobian."""
    G = oracle.G.reshape(-1, oracle.G.shape[2])
    tol = variance_tolerance(P, G, oracle.V, dtype=oracle.problem.dtype, n_rows=oracle.n_rows)
    return _per_output(oracle, tol)


def _eigenbasis_block(ggn: np.ndarray, idx: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Q diag(diag(Qᵀ B Q)) Qᵀ for the GGN block B on the indices ``idx``."""
    s = np.einsum("ai,ab,bi->i", Q, ggn[np.ix_(idx, idx)], Q)
    return (Q * s) @ Q.T


@dataclass(frozen=True, eq=False)
class EKFACOracle:
    """The EKFAC Laplace approximation of one MLP problem, written out densely.

    Parameters
    ----------
    oracle : DenseOracle
        The dense oracle of the problem (its GGN, Jacobian and prior).
    convention : {"joint", "separate"}
        The weight–bias convention (module docstring).
    """

    oracle: DenseOracle
    convention: str

    def __post_init__(self) -> None:
        one_of(self.convention, "convention", KFAC_CONVENTIONS)

    @cached_property
    def curvature(self) -> np.ndarray:
        """⊕_l Q_l diag(s_l) Q_lᵀ in ``parameters()`` order (p × p)."""
        ggn = self.oracle.ggn
        K = np.zeros_like(ggn)
        for f in KFACOracle(self.oracle, "joint").factors:
            QG = np.linalg.eigh(f.G)[1]
            if self.convention == "joint":
                idx = np.hstack([f.weight, f.bias[:, None]]).reshape(-1)  # [W b] row-major
                blocks = [(idx, np.kron(QG, np.linalg.eigh(f.A)[1]))]
            else:
                QA = np.linalg.eigh(f.A[:-1, :-1])[1]
                blocks = [(f.weight.reshape(-1), np.kron(QG, QA)), (f.bias, QG)]
            for idx, Q in blocks:
                K[np.ix_(idx, idx)] += _eigenbasis_block(ggn, idx, Q)
        return 0.5 * (K + K.T)

    @cached_property
    def precision(self) -> np.ndarray:
        """P = ⊕_l Q_l diag(s_l) Q_lᵀ + V."""
        return self.curvature + np.diag(self.oracle.V)

    def predictive_variance(self) -> np.ndarray:
        """gᵀP⁻¹g for every test point (and output), (M,) or (M, C)."""
        return _variances(self.oracle, self.precision)

    def variance_tolerance(self) -> np.ndarray:
        """The variance rule of :mod:`.tolerance` with P in place of Ω."""
        return _tolerances(self.oracle, self.precision)


# ----------------------------------------------------------------------------- weight sharing
def conv_patches(x: np.ndarray, module: Any) -> np.ndarray:
    """The patches of a Conv2d's input x (N, C_in, H, W), (N, R, C_in·kh·kw): position
    r = i·ow + j (the output's row-major order), each patch in the weight's (C_in, kh, kw)
    row-major order, zero outside the image (padding) — by explicit index loops."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw) = module.kernel_size, module.stride, module.padding
    oh, ow = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    out = np.zeros((N, oh * ow, C, kh, kw))
    for i in range(oh):
        for j in range(ow):
            for u in range(kh):
                for v in range(kw):
                    row, col = i * sh - ph + u, j * sw - pw + v
                    if 0 <= row < H and 0 <= col < W:
                        out[:, i * ow + j, :, u, v] = x[:, :, row, col]
    return out.reshape(N, oh * ow, C * kh * kw)


def shared_signals(model: Any, X: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per layer (:func:`_layers`, ``shared``): the inputs ã_{n,r} = [patch_{n,r}; 1] (N, R, K + 1)
    and the output gradients δ_{n,c,r} = ∂f_c(x_n)/∂s_{n,r} (N, C, out, R), R = 1 for a
    Linear layer, by autograd on the layer outputs of a float64 copy of ``model`` (the
    samples of a batch do not interact in evaluation mode, so ∂Σ_n f_c(x_n)/∂s_n is
    ∂f_c(x_n)/∂s_n)."""
    import torch

    m = copy.deepcopy(model).double().eval()
    layers = _layers(m, shared=True)
    seen: dict[str, tuple[np.ndarray, Any]] = {}
    handles = []
    for name, module, _, _ in layers:

        def hook(mod: Any, inp: Any, out: Any, name: str = name) -> None:
            if name in seen:
                raise ValueError(f"layer {name!r} is called twice in one forward pass")
            seen[name] = (inp[0].detach().numpy().copy(), out)

        handles.append(module.register_forward_hook(hook))
    try:
        f = m(torch.as_tensor(X).double())
    finally:
        for h in handles:
            h.remove()
    f = f.reshape(f.shape[0], -1)
    outs = [seen[name][1] for name, _, _, _ in layers]
    per_output = [
        torch.autograd.grad(f[:, c].sum(), outs, retain_graph=c + 1 < f.shape[1])
        for c in range(f.shape[1])
    ]
    signals = {}
    for k, (name, module, _, _) in enumerate(layers):
        x = seen[name][0]
        D = torch.stack([g[k] for g in per_output], dim=1).detach().numpy()  # (N, C, out, …)
        D = D.reshape(D.shape[0], D.shape[1], D.shape[2], -1)  # (N, C, out, R)
        if isinstance(module, torch.nn.Conv2d):
            a = conv_patches(x, module)
        else:
            a = x.reshape(x.shape[0], 1, -1)
        a = np.concatenate([a, np.ones((*a.shape[:2], 1))], axis=2)
        signals[name] = (a, D)
    return signals


@dataclass(frozen=True, eq=False)
class SharedKFACOracle(KFACOracle):
    """The KFAC Laplace approximation of a network of Linear and Conv2d layers, written out
    densely, in the ``approximation`` ``"expand"`` or ``"reduce"`` of Eschenhagen et al.

    For a layer with R output positions (R = 1 for a Linear layer), inputs
    ã_{n,r} = [patch_{n,r}; 1] and output gradients δ_{n,c,r} = ∂f_c(x_n)/∂s_{n,r},
    D_{n,r} = [δ_{n,1,r} … δ_{n,C,r}]ᵀ (C × out) and H_n the output Hessian:

    - expand: A = (1/(N R)) Σ_{n,r} ã_{n,r} ã_{n,r}ᵀ, G = Σ_{n,r} D_{n,r}ᵀ H_n D_{n,r};
    - reduce: A = (1/N) Σ_n ā_n ā_nᵀ with ā_n = (1/R) Σ_r ã_{n,r},
      G = Σ_n D̄_nᵀ H_n D̄_n with D̄_n = Σ_r D_{n,r};

    (G = Σ_{n,c} Σ_r g_{n,c,r} g_{n,c,r}ᵀ and Σ_{n,c} ḡ_{n,c} ḡ_{n,c}ᵀ for the columns
    g_{n,c,r} = D_{n,r}ᵀ r_{n,c} of any R_n R_nᵀ = H_n, as curvlinops 3.0.1 computes them:
    ``kfac.py`` ``_accumulate_gradient_covariance`` and ``_hook_accumulate_input_covariance``).
    The two agree for R = 1, so on an MLP both are :class:`KFACOracle`. Blocks, conventions
    and the prior as in :class:`KFACOracle`. Computed from :func:`shared_signals` (patches by
    index loops, δ by autograd on the layer outputs), independently of
    :mod:`laplace_lab.numerics.kfac`.

    References
    ----------
    .. [1] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig,
       "Kronecker-Factored Approximate Curvature for Modern Neural Network Architectures",
       NeurIPS 2023, arXiv:2311.00636, §3 (KFAC-expand and KFAC-reduce, eqs. for the
       expand and reduce settings of linear weight-sharing layers).
    .. [2] R. Grosse, J. Martens, "A Kronecker-factored approximate Fisher matrix for
       convolution layers", ICML 2016, arXiv:1602.01407, §3 (KFC: the expanded factors).
    """

    approximation: str = "expand"

    def __post_init__(self) -> None:
        super().__post_init__()
        one_of(self.approximation, "approximation", KFAC_APPROXIMATIONS)

    @cached_property
    def factors(self) -> tuple[LayerFactors, ...]:
        """G_l and A_l of every Linear and Conv2d layer in the ``approximation``."""
        problem, H = self.oracle.problem, self.oracle.H
        signals = shared_signals(problem.model, problem.X_train)
        out = []
        for name, module, w0, b0 in _layers(problem.model, shared=True):
            a, D = signals[name]
            N, R = a.shape[:2]
            if self.approximation == "expand":
                G = np.einsum("ncor,ncd,ndqr->oq", D, H, D)
                A = np.einsum("nri,nrj->ij", a, a) / (N * R)
            else:
                Dbar, abar = D.sum(axis=3), a.mean(axis=1)
                G = np.einsum("nco,ncd,ndq->oq", Dbar, H, Dbar)
                A = abar.T @ abar / N
            n_out = module.weight.shape[0]
            weight = w0 + np.arange(module.weight.numel()).reshape(n_out, -1)
            bias = b0 + np.arange(n_out)
            out.append(LayerFactors(0.5 * (G + G.T), 0.5 * (A + A.T), weight, bias))
        return tuple(out)
