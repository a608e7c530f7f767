"""EKFAC-Laplace for MLPs: KFAC's eigenbasis with the exact second moments as its spectrum.

For a Linear layer with KFAC factors G = Σ_n Σ_c g_nc g_ncᵀ = Q_G Λ_G Q_Gᵀ (g_nc = D_nᵀ r_nc,
the output gradients backpropagated from the columns of a square root R_n R_nᵀ = H_n of the
output Hessian; g_n = √w_n δ_n for one output) and A = (1/N) Σ_n ã_n ã_nᵀ = Q_A Λ_A Q_Aᵀ
(:mod:`laplace_lab.numerics.kfac`), KFAC is (Q_G ⊗ Q_A) diag(λ_G,i λ_A,j) (Q_G ⊗ Q_A)ᵀ.
EKFAC (George et al. 2018) keeps the eigenbasis Q = Q_G ⊗ Q_A and replaces the eigenvalues
by the second moments of the per-sample gradients g_nc ⊗ ã_n projected on it,

    s_ij = Σ_n Σ_c ((Q_Gᵀ g_nc)_i (Q_Aᵀ ã_n)_j)²,   Ω_l ≈ Q diag(s) Qᵀ + αI,

i.e. s = diag(Qᵀ B_l Q) for the exact GGN block B_l = Σ_n (D_nᵀ H_n D_n) ⊗ (ã_n ã_nᵀ) — the
best approximation of B_l in Frobenius norm among matrices diagonal in that basis (the sum
over c makes s independent of the choice of square root R_n). The prior is added exactly,
and the epistemic variance of output c at x* is

    Σ_l Σ_ij ((Q_Gᵀ δ*_c)_i (Q_Aᵀ ã*)_j)² / (s_ij + α).

Weight–bias conventions as in KFAC: ``"joint"`` (ã = [a; 1], one basis for [W b]) and
``"separate"`` (Q_G ⊗ Q_Ā on W with Ā = (1/N) Σ a aᵀ, and Q_G alone on b with
s_i = Σ_n Σ_c (Q_Gᵀ g_nc)_i² — which is λ_G,i, so the bias block is G itself, as in KFAC);
curvlinops' ``EKFACLinearOperator(separate_weight_and_bias=...)``. Derivation and the regimes
where it is exact: docs/mathematics.md, "EKFAC Laplace".

References
----------
.. [1] T. George, C. Laurent, X. Bouthillier, N. Ballas, P. Vincent, "Fast Approximate
   Natural Gradient Descent in a Kronecker-factored Eigenbasis", NeurIPS 2018,
   arXiv:1806.03884, §3 (eqs. (6)–(8): the eigenbasis and the re-scaling s*, and its
   optimality in Frobenius norm, Lemma / §3.1).
.. [2] J. Martens, R. Grosse, "Optimizing Neural Networks with Kronecker-factored Approximate
   Curvature", ICML 2015, arXiv:1503.05671, §3 (the factors).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab.numerics.kfac import (
    CONVENTIONS,
    LIKELIHOODS,
    layer_signals,
    output_gradients,
    output_hessian_root,
)

__all__ = ["EKFACLaplace", "EigenbasisBlock", "ekfac_from_signals", "fit_ekfac"]


@dataclass(frozen=True)
class EigenbasisBlock:
    """One parameter block: Q_G, Q_A (None for a bias of its own) and s (out × in or out)."""

    QG: np.ndarray
    QA: np.ndarray | None
    scaling: np.ndarray


@dataclass(frozen=True)
class EKFACLaplace:
    """The EKFAC blocks of every layer (one for [W b], or two: W and b) and α."""

    layers: tuple[tuple[EigenbasisBlock, ...], ...]
    convention: str
    prior_precision: float

    def variance(self, model: torch.nn.Module, X: Any) -> np.ndarray:
        """Epistemic variances g(x*)ᵀ Ω_EKFAC⁻¹ g(x*) at the rows of X, (M,) for one output
        and (M, C) for C outputs (module docstring)."""
        f, sig = layer_signals(model, X)
        total = np.zeros(f.shape)
        for blocks, (a, D) in zip(self.layers, sig, strict=True):
            for block, inputs in zip(blocks, _block_inputs(a, self.convention), strict=True):
                u2 = (D @ block.QG) ** 2  # (M, C, out)
                inv = 1.0 / (block.scaling + self.prior_precision)
                if block.QA is None:
                    total += u2 @ inv
                else:
                    total += np.einsum("mci,ij,mj->mc", u2, inv, (inputs @ block.QA) ** 2)
        return total[:, 0] if total.shape[1] == 1 else total


def _block_inputs(a: np.ndarray, convention: str) -> tuple[np.ndarray | None, ...]:
    """The inputs of each block: ã for [W b]; a for W and none for b."""
    return (a,) if convention == "joint" else (a[:, :-1], None)


def ekfac_from_signals(
    signals: list[tuple[np.ndarray, np.ndarray]],
    R: np.ndarray,
    *,
    prior_precision: float,
    convention: str = "joint",
) -> EKFACLaplace:
    """EKFAC-Laplace from the training signals of
    :func:`~laplace_lab.numerics.kfac.layer_signals` and the output Hessians' square roots
    R_n of :func:`~laplace_lab.numerics.kfac.output_hessian_root` (module docstring)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if not prior_precision > 0:
        raise ValueError(f"prior_precision must be positive; got {prior_precision!r}")
    layers = []
    for a, D in signals:
        g = output_gradients(D, R)  # (N, C, out): g_nc
        flat = g.reshape(-1, g.shape[2])
        _, QG = np.linalg.eigh(flat.T @ flat)
        u2 = ((g @ QG) ** 2).sum(axis=1)  # (N, out): Σ_c (Q_Gᵀ g_nc)_i²
        blocks = []
        for inputs in _block_inputs(a, convention):
            if inputs is None:  # the bias of its own: s_i = Σ_n Σ_c (Q_Gᵀ g_nc)_i²
                blocks.append(EigenbasisBlock(QG, None, u2.sum(axis=0)))
                continue
            _, QA = np.linalg.eigh(inputs.T @ inputs / inputs.shape[0])
            v2 = (inputs @ QA) ** 2  # (N, in): (Q_Aᵀ ã_n)_j²
            blocks.append(EigenbasisBlock(QG, QA, u2.T @ v2))
        layers.append(tuple(blocks))
    return EKFACLaplace(tuple(layers), convention, float(prior_precision))


def fit_ekfac(
    model: torch.nn.Module,
    X: Any,
    *,
    likelihood: str,
    prior_precision: float,
    noise_var: float = 1.0,
    convention: str = "joint",
) -> EKFACLaplace:
    """Fit EKFAC-Laplace on the training inputs X for an MLP.

    Parameters
    ----------
    model : torch.nn.Module
        MLP (Linear layers with bias and elementwise activations), at the MAP, eval mode.
    X : (N, d) array
    likelihood : {"regression", "binary", "multiclass"}
        The output Hessian, as in :func:`~laplace_lab.numerics.kfac.fit_kfac`.
    prior_precision : float
        α > 0 (isotropic prior).
    noise_var : float
        σ0² for regression.
    convention : {"joint", "separate"}
        The bias in the input factor (ã = [a; 1]) or a block of its own.

    Returns
    -------
    EKFACLaplace
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}; got {convention!r}")
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}; got {likelihood!r}")
    if not prior_precision > 0 or not noise_var > 0:
        raise ValueError("prior_precision and noise_var must be positive")
    f, sig = layer_signals(model, X)
    R = output_hessian_root(f, likelihood, noise_var)
    return ekfac_from_signals(sig, R, prior_precision=prior_precision, convention=convention)
