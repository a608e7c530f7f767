"""Linearized-Laplace variances with the GGN accumulated a few training rows at a time.

For many outputs the weighted Jacobian of the data, N·C × p, is the largest array of the
dense route (0.96 GB in float64 for N = 40, C = 1000, p = 3,008). Here each chunk of rows
of the per-sample Jacobian is
weighted by a square root of its output Hessian, R_n = L_nᵀ J_n with L_n L_nᵀ = H_n, and
added to Ω by a symmetric rank update (BLAS ``dsyrk``); for the softmax Hessian
H_n = diag(π_n) − π_n π_nᵀ the root L_n = diag(s_n) − π_n s_nᵀ, s_n = √π_n (so
L_n L_nᵀ = diag(π_n) − 2π_nπ_nᵀ + π_n (s_nᵀs_n) π_nᵀ = H_n, as Σ_c π_nc = 1) makes R_n a
rank-one correction of diag(s_n) J_n, with no C × C factorisation. The chunks come from
:func:`laplace_lab.numerics.jacobians.jacobian_chunks` by ``vmap`` of ``jacrev`` (the
outer-product route runs C backward passes per chunk, and its signals of many rows hold
B·C² one-hot gradients). The variances are then
‖U⁻ᵀg‖² (Ω = UᵀU) for each row g of the test Jacobians. Memory: Ω and its factor (p × p),
the test Jacobians (M·C × p) and one chunk.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2)–(3) and App. C.5.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.numerics.jacobians import jacobian_chunks, parameter_layout

__all__ = ["CHUNK_BYTES", "DENSE_LIMIT_BYTES", "streamed_variance", "weighted_jacobian_bytes"]

#: Above this size of the weighted Jacobian (N·C·p·8 bytes) the GGN is streamed.
DENSE_LIMIT_BYTES = 1 << 28
#: The per-sample Jacobian rows of one chunk take at most this much (at least one row).
CHUNK_BYTES = 1 << 25


def weighted_jacobian_bytes(model: Any, X: Any, n_outputs: int) -> int:
    """N·C·p·8: the bytes of the float64 weighted Jacobian of the data."""
    return int(X.shape[0]) * int(n_outputs) * parameter_layout(model).p * 8


def _jacobian_chunks(model: Any, X: Any, chunk: int) -> Any:
    """Yield (J (b, C, p), f (b, C)) over chunks of at most ``chunk`` rows of X (``vmap`` of
    ``jacrev``: one batched backward pass per chunk, whatever C)."""
    for _, J, f in jacobian_chunks(model, X, chunk_size=chunk, method="vmap"):
        yield (J[:, None, :], f[:, None]) if J.ndim == 2 else (J, f)


def _weighted_rows(J: Any, f: Any, likelihood: str, noise_var: Any) -> np.ndarray:
    """R = L_nᵀ J_n for a chunk (J (b, C, p), f (b, C)), stacked as (b·C, p) float64
    (module docstring)."""
    J = J.detach().double().numpy()
    f = f.detach().double().numpy()
    if likelihood in ("regression", "multioutput-regression"):
        s2 = np.broadcast_to(np.asarray(noise_var, dtype=np.float64), (J.shape[1],))
        R = J / np.sqrt(s2)[None, :, None]
    elif likelihood == "binary":
        s = 1.0 / (1.0 + np.exp(-f))
        R = np.sqrt(s * (1.0 - s))[:, :, None] * J
    else:
        z = np.exp(f - f.max(axis=1, keepdims=True))
        pi = z / z.sum(axis=1, keepdims=True)
        s = np.sqrt(pi)
        R = s[:, :, None] * J - s[:, :, None] * np.einsum("bc,bcp->bp", pi, J)[:, None, :]
    return R.reshape(-1, J.shape[2])


def streamed_variance(
    model: Any,
    X_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_vector: np.ndarray,
    noise_var: Any,
) -> np.ndarray:
    """gᵀΩ⁻¹g for every test point and output, (M,) or (M, C), float64; Ω streamed.

    Parameters
    ----------
    model : torch.nn.Module
    X_train, X_test : tensors (N, d), (M, d)
    likelihood : {"regression", "binary", "multiclass", "multioutput-regression"}
    prior_vector : (p,) float64 array
        V.
    noise_var : float or (C,) array
        σ0² or the σ_c² (Gaussian likelihoods).
    """
    import scipy.linalg
    import scipy.linalg.blas

    p = prior_vector.size
    row_bytes = max(1, weighted_jacobian_bytes(model, X_train[:1], _n_outputs(model, X_test)))
    chunk = max(1, CHUNK_BYTES // row_bytes)
    omega = np.zeros((p, p), order="F")
    for J, f in _jacobian_chunks(model, X_train, chunk):
        R = _weighted_rows(J, f, likelihood, noise_var)
        omega = scipy.linalg.blas.dsyrk(1.0, R, trans=1, beta=1.0, c=omega, overwrite_c=1)
        del R
    omega[np.diag_indices(p)] += prior_vector
    # dsyrk filled the upper triangle: Ω = UᵀU from it, in place
    U = scipy.linalg.cholesky(omega, lower=False, overwrite_a=True, check_finite=False)
    del omega
    G = [J.detach().double().numpy() for J, _ in _jacobian_chunks(model, X_test, chunk)]
    G = np.concatenate(G)
    M, C = G.shape[:2]
    W = scipy.linalg.solve_triangular(U, G.reshape(-1, p).T, trans="T", check_finite=False)
    v = np.einsum("ij,ij->j", W, W).reshape(M, C)
    return v[:, 0] if likelihood in ("regression", "binary") else v


def _n_outputs(model: Any, X: Any) -> int:
    import torch

    with torch.no_grad():
        f = model(X[:1])
    return int(f.reshape(1, -1).shape[1])
