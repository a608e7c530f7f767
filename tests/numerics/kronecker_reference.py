"""Dense references for the KFAC and EKFAC tests, built without numerics.kfac's signals.

Layer inputs by forward hooks, output Jacobians D_n = ∂f(x_n)/∂s_l as the bias columns of
the per-sample Jacobian (∂f/∂b = ∂f/∂s), output Hessians H_n written out, and the GGN
Σ_n J_nᵀ H_n J_n as a p × p matrix.
"""

from __future__ import annotations

import numpy as np
import torch

from laplace_lab.numerics.jacobians import parameter_layout, per_sample_jacobian


def output_hessians(f: np.ndarray, likelihood: str, noise_var: float) -> np.ndarray:
    """H_n (N, C, C): 1/σ0², σ(1 − σ) or diag(π) − ππᵀ."""
    N, C = f.shape
    if likelihood == "regression":
        return np.broadcast_to(np.eye(C) / noise_var, (N, C, C)).copy()
    if likelihood == "binary":
        s = 1.0 / (1.0 + np.exp(-f[:, 0]))
        return (s * (1.0 - s))[:, None, None]
    pi = np.exp(f) / np.exp(f).sum(axis=1, keepdims=True)
    return np.einsum("nc,cd->ncd", pi, np.eye(C)) - np.einsum("nc,nd->ncd", pi, pi)


def layers(model, X, likelihood: str, noise_var: float):
    """(ggn (p × p), [(ã (N, in + 1), D (N, C, out), weight indices (out, in), bias
    indices (out,))] per Linear layer, H (N, C, C))."""
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    inputs = {}
    handles = [
        m.register_forward_pre_hook(lambda mod, inp: inputs.__setitem__(id(mod), inp[0]))
        for m in linears
    ]
    Xt = torch.as_tensor(X, dtype=torch.float64)
    with torch.no_grad():
        f = model(Xt).reshape(len(X), -1).numpy()
    for h in handles:
        h.remove()
    J = per_sample_jacobian(model, Xt).numpy().reshape(len(X), f.shape[1], -1)
    H = output_hessians(f, likelihood, noise_var)
    ggn = np.einsum("ncp,ncd,ndq->pq", J, H, J)
    lay = parameter_layout(model)
    out = []
    for li, m in enumerate(linears):
        wb, bb = [b for b in lay.blocks if b.layer == li]
        n_out, n_in = m.weight.shape
        weight = (wb.slice.start + np.arange(n_out * n_in)).reshape(n_out, n_in)
        bias = bb.slice.start + np.arange(n_out)
        a = inputs[id(m)].numpy()
        out.append((np.hstack([a, np.ones((len(X), 1))]), J[:, :, bias], weight, bias))
    return ggn, out, H


def variances(model, X_test, omega: np.ndarray) -> np.ndarray:
    """gᵀΩ⁻¹g per test point and output, (M,) for one output, (M, C) otherwise."""
    G = per_sample_jacobian(model, torch.as_tensor(X_test, dtype=torch.float64)).numpy()
    G = G.reshape(len(X_test), -1, omega.shape[0])
    v = np.einsum("mcp,pq,mcq->mc", G, np.linalg.inv(omega), G)
    return v[:, 0] if v.shape[1] == 1 else v
