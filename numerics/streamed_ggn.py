"""Streamed reductions of a torch model's GGN: Gradient-Laplace scores and sub-network Grams.

Both read the per-sample Jacobian a chunk of rows at a time
(:func:`laplace_lab.numerics.jacobians.jacobian_chunks`) and never store J:

- :func:`gradient_scores` streams s_i = (1/N) Σ_n w_n g_i(x_n)² (the Gradient-Laplace scores;
  for Linear-layer networks (δ̃∘δ̃)ᵀ(a∘a) per layer, no Jacobian at all);
- :func:`subset_gram` streams the Gram Σ_n J_n[:, S]ᵀ H_n J_n[:, S] of a column subset in
  float64 (the data term of Ω_SS), from blocks of rows of the columns S only.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (2), §3 Alg. 1, App. C.3, App. D.2.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from laplace_lab._checks import nonnegative_float, one_of
from laplace_lab._checks import subset as check_subset
from laplace_lab.numerics._layout import _check_model, _torch, parameter_layout
from laplace_lab.numerics.ggn import logistic_weight_root
from laplace_lab.numerics.jacobians import row_chunks

__all__ = ["gradient_scores", "subset_gram"]

_LIKELIHOODS = ("regression", "binary", "multiclass")


def _weights(f: Any, likelihood: str, eps: float) -> Any:
    """Square-root weights W_n with H_n = W_n W_nᵀ, (B, C, K): K = 1 for one output, C for C."""
    torch = _torch()
    if likelihood == "regression":
        return torch.ones_like(f)[:, :, None]
    if likelihood == "binary":
        return logistic_weight_root(f)[:, :, None]
    pi = torch.softmax(f, dim=-1)
    H = torch.diag_embed(pi) - pi[:, :, None] * pi[:, None, :]
    H = H + eps * torch.eye(pi.shape[-1], dtype=pi.dtype, device=pi.device)
    lam, U = torch.linalg.eigh(H)
    return U * torch.sqrt(torch.clamp(lam, min=0.0))[:, None, :]


def gradient_scores(
    model: Any,
    X: Any,
    *,
    likelihood: str,
    chunk_size: int | None = None,
    eps: float = 0.0,
    method: str = "auto",
) -> Any:
    """Gradient-Laplace scores s_i = (1/N) Σ_n w_n g_i(x_n)², streamed without storing J.

    Alg. 1 and App. C.3 of [1]_, with weights w = 1 (regression), w = p_n(1 − p_n) with
    p_n = σ(f(x_n)) (binary), and for C classes the squared column
    norms of the weighted Jacobian, (1/N) Σ_n ‖W_nᵀ J_n[:, i]‖² with
    W_n W_nᵀ = diag(π_n) − π_n π_nᵀ + εI (the rows of ``GGN.multiclass``'s J_w).
    So ``gradient_scores`` equals ``GGN.scores()`` of the matching GGN.

    Parameters
    ----------
    model : torch.nn.Module
    X : (N, ...) tensor or array
        The reference set R (training inputs for the paper's scores).
    likelihood : {"regression", "binary", "multiclass"}
    chunk_size : int, optional
    eps : float
        Multiclass Hessian jitter ε ≥ 0 (default 0, the exact softmax Hessian, as
        ``GGN.multiclass``).
    method : {"auto", "vmap", "linear"}
        "linear" streams (δ̃∘δ̃)ᵀ(a∘a) per Linear layer — no Jacobian at all (BackPACK's sum
        of squared gradients; docs/mathematics.md, "Scores and subset columns without
        per-sample Jacobians"); see :func:`jacobian_chunks`.

    Returns
    -------
    torch.Tensor
        (p,) scores on the model's device.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 1, and App. C.3.
    """
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    eps = nonnegative_float(eps, "eps")
    chunks = row_chunks(model, X, chunk_size=chunk_size, method=method)
    return scores_of(chunks, likelihood, eps)


def scores_of(chunks: Iterable[Any], likelihood: str, eps: float) -> Any:
    """:func:`gradient_scores` over the chunks of :func:`row_chunks` (validated arguments)."""
    total, n = None, 0
    for _, f, sig, J in chunks:
        _check_outputs(f, likelihood)
        W = _weights(f, likelihood, float(eps))  # (b, C, K)
        if sig is not None:
            part = sig.weighted_square_sums(W)
        else:
            part = (W.transpose(1, 2) @ J).pow(2).sum((0, 1))
        total = part if total is None else total + part
        n += f.shape[0]
    return total / n


#: Rows of J[:, S] converted to float64 at a time by :func:`subset_gram` (cache-sized blocks).
_GRAM_ROWS = 1024


def subset_gram(
    model: Any,
    X: Any,
    subset: Any,
    *,
    likelihood: str = "regression",
    chunk_size: int | None = None,
    eps: float = 0.0,
    method: str = "auto",
) -> np.ndarray:
    """G = Σ_n J_n[:, S]ᵀ H_n J_n[:, S] (k × k, float64 on the host), streamed over rows.

    The data term of the sub-network precision Ω_SS = G + V_S (for regression Ω_SS uses
    G/σ0²) with H_n = 1 (regression), p_n(1 − p_n) (binary) or diag(π_n) − π_nπ_nᵀ + εI
    (multiclass), the weights of :func:`gradient_scores`. J[:, S] is never stored: each
    chunk of rows gives its columns in the model's precision (the values
    :func:`per_sample_jacobian` returns), which are weighted, converted to float64 in blocks
    of rows and accumulated by a symmetric rank-b update (BLAS ``dsyrk``: half the flops
    of a general product) — memory O(chunk·k + k²). On the outer-product path each block
    of rows is built directly with S's columns grouped by layer (no chunk of columns in S's
    order), and the Gram is permuted back at the end. On a CUDA model the blocks are
    accumulated on the device by ``mm``.

    Parameters
    ----------
    model : torch.nn.Module
    X : (N, ...) tensor or array
    subset : sequence of int
        Distinct flat parameter indices S, in the order of G's rows.
    likelihood : {"regression", "binary", "multiclass"}
    chunk_size : int, optional
        Rows per Jacobian chunk (:func:`per_sample_jacobian`).
    eps : float
        Multiclass Hessian jitter ε ≥ 0.
    method : {"auto", "vmap", "linear"}
        See :func:`jacobian_chunks`.

    Returns
    -------
    numpy.ndarray
        (k, k) symmetric float64.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (2) and App. D.2 (Ω_SS).
    """
    _check_model(model)
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    eps = nonnegative_float(eps, "eps")
    idx = check_subset(subset, parameter_layout(model).p, "subset", nonempty=True)
    chunks = row_chunks(model, X, chunk_size=chunk_size, method=method)
    return gram_of(chunks, idx, likelihood, eps)


def _check_outputs(fb: Any, likelihood: str) -> None:
    if (fb.shape[1] > 1) != (likelihood == "multiclass"):
        raise ValueError(
            f"likelihood={likelihood!r} does not match the model's output of shape "
            f"{tuple(fb.shape)}"
        )


def gram_of(chunks: Iterable[Any], idx: np.ndarray, likelihood: str, eps: float) -> np.ndarray:
    """:func:`subset_gram` over the chunks of :func:`row_chunks` (validated arguments)."""
    from laplace_lab.numerics._linear_jacobians import column_plan

    torch = _torch()
    gram, order = _GramSum(idx.size), None
    for _, fb, sig, J in chunks:
        _check_outputs(fb, likelihood)
        W = None if likelihood == "regression" else _weights(fb, likelihood, float(eps))
        if sig is None:  # a pass of row_chunks is all torch.func chunks or all signals
            cols = J.index_select(-1, torch.as_tensor(idx, device=J.device))
            gram.add(cols if W is None else W.transpose(1, 2) @ cols)
            continue
        # The columns of S grouped by layer, built and converted a block of rows at a time
        # (the Gram of the permuted columns is the permuted Gram: undone at the end).
        if order is None:
            cp = column_plan(sig.plan, idx, fb.device)
            order, buf = cp.order, None
        for a in range(0, fb.shape[0], _GRAM_ROWS):
            b = min(a + _GRAM_ROWS, fb.shape[0])
            reuse = buf is not None and buf.shape[0] == b - a
            buf = sig.grouped_columns(cp, a, b, out=buf if reuse else None)
            gram.add(buf if W is None else W[a:b].transpose(1, 2) @ buf)
    G = gram.result()
    if order is None:
        return G
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return G[np.ix_(inverse, inverse)]


class _GramSum:
    """Σ blockᵀblock over blocks of Jacobian rows (any leading shape, k columns), float64.

    On the host each block of at most :data:`_GRAM_ROWS` rows is converted to float64 and
    added by a symmetric rank-b update (BLAS ``dsyrk``: half the flops of a product) to the
    upper triangle; on a CUDA device the blocks are accumulated in place by ``addmm_``.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.host: np.ndarray | None = None
        self.device: Any = None

    def add(self, cols: Any) -> None:
        import scipy.linalg.blas

        cols = cols.reshape(-1, self.k)
        if cols.device.type != "cpu":
            block = cols.double()
            if self.device is None:
                self.device = block.T @ block
            else:
                self.device.addmm_(block.T, block)
            return
        if self.host is None:
            self.host = np.zeros((self.k, self.k), dtype=np.float64, order="F")
        for a in range(0, cols.shape[0], _GRAM_ROWS):
            block = cols[a : a + _GRAM_ROWS].double().numpy()
            # Fortran view of blockᵀ (k × b): syrk(trans=0) adds blockᵀblock to the upper half
            self.host = scipy.linalg.blas.dsyrk(1.0, block.T, beta=1.0, c=self.host, overwrite_c=1)

    def result(self) -> np.ndarray:
        if self.device is not None:
            return self.device.cpu().numpy()
        upper = np.triu(self.host)
        return upper + np.triu(upper, 1).T
