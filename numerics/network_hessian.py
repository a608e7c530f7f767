"""The true Hessian of a torch model's negative log-likelihood over its flat parameters.

For the Laplace approximation with the Hessian in place of the GGN,

    H = ∇²_θ Σ_n −log p(y_n | f(x_n; θ)) = Σ_n J_nᵀ Λ_n J_n + Σ_n Σ_c r_nc ∇²_θ f_c(x_n),

Λ_n the output Hessian of −log p(y_n | f) and r_n = ∂[−log p(y_n | f)]/∂f at f(x_n; θ): the
GGN plus a residual term, which vanishes for a model linear in θ and is what the GGN drops
(Martens 2020, §8). :func:`network_hessian` forms H densely (p × p), one
``torch.func.hessian`` per chunk of rows in the model's dtype, summed in float64; it is meant
for small networks (the cost grows as p² per row).

References
----------
.. [1] D. J. C. MacKay, "A Practical Bayesian Framework for Backpropagation Networks",
   Neural Computation 4(3), 1992, §4 (the Laplace approximation with the Hessian).
.. [2] J. Martens, "New Insights and Perspectives on the Natural Gradient Method", JMLR 21
   (2020), §8 (the Hessian as the GGN plus Σ r ∇²f).
.. [3] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets via
   local linearization", AISTATS 2021, arXiv:2008.08400, §3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import one_of, positive_int
from laplace_lab.numerics._layout import _trainable
from laplace_lab.numerics.jacobians import check_eval_mode

__all__ = ["LIKELIHOODS", "network_hessian"]

#: The likelihoods of :func:`network_hessian`.
LIKELIHOODS = ("regression", "multioutput-regression", "binary", "multiclass")


def _noise(likelihood: str, noise_var: Any, C: int) -> np.ndarray:
    s2 = np.asarray(noise_var, dtype=np.float64).reshape(-1)
    if likelihood not in ("regression", "multioutput-regression"):
        return np.ones(C)
    if s2.size not in (1, C) or not np.all(np.isfinite(s2)) or np.any(s2 <= 0):
        raise ValueError(
            f"noise_var must be one positive variance or {C} of them; got noise_var={noise_var!r}"
        )
    return np.broadcast_to(s2, (C,)).copy()


def _nll(f: Any, y: Any, likelihood: str, s2: Any) -> Any:
    """Σ_n −log p(y_n | f_n) up to constants in f (f: (n, C))."""
    import torch

    if likelihood in ("regression", "multioutput-regression"):
        return 0.5 * torch.sum((f - y.reshape(f.shape)) ** 2 / s2)
    if likelihood == "binary":
        return torch.nn.functional.binary_cross_entropy_with_logits(f[:, 0], y, reduction="sum")
    return torch.nn.functional.cross_entropy(f, y.long(), reduction="sum")


def network_hessian(
    model: Any,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    noise_var: Any = 1.0,
    chunk: int = 256,
) -> np.ndarray:
    """H = ∇²_θ Σ_n −log p(y_n | f(x_n; θ)) at the model's parameters, (p, p) float64.

    Parameters
    ----------
    model : torch.nn.Module
        In evaluation mode; θ its trainable parameters in ``parameters()`` order.
    X : torch.Tensor
        (N, d) inputs in the model's dtype.
    y : torch.Tensor
        (N,) targets: floats (regression), 0./1. (binary), int64 labels (multiclass); (N, C)
        floats for multi-output regression.
    likelihood : {"regression", "multioutput-regression", "binary", "multiclass"}
        Gaussian with variance ``noise_var`` (one output), Gaussian with per-output
        variances ``noise_var`` (C outputs), Bernoulli on one logit, categorical on C logits.
    noise_var : float or (C,) array
        σ0² (or the σ_c²); ignored for classification.
    chunk : int
        Rows per ``torch.func.hessian`` call.

    Returns
    -------
    (p, p) ndarray
        The Hessian of the summed negative log-likelihood (symmetric; not necessarily
        positive semi-definite away from a minimum).
    """
    import torch

    likelihood = one_of(likelihood, "likelihood", LIKELIHOODS)
    chunk = positive_int(chunk, "chunk")
    check_eval_mode(model)
    params = _trainable(model)
    names = list(params)
    shapes = [t.shape for t in params.values()]
    sizes = [t.numel() for t in params.values()]
    theta = torch.nn.utils.parameters_to_vector(list(params.values())).detach()
    with torch.no_grad():
        C = int(model(X[:1]).reshape(1, -1).shape[1])
    s2 = torch.as_tensor(_noise(likelihood, noise_var, C), dtype=theta.dtype)
    if len(X) != len(y):
        raise ValueError(f"X and y must have as many rows; got {len(X)} and {len(y)}")

    def nll(flat: Any, Xc: Any, yc: Any) -> Any:
        tensors = {n: t.view(s) for n, s, t in zip(names, shapes, flat.split(sizes), strict=True)}
        f = torch.func.functional_call(model, tensors, (Xc,))
        return _nll(f.reshape(len(Xc), -1), yc, likelihood, s2)

    H = np.zeros((theta.numel(), theta.numel()))
    for start in range(0, len(X), chunk):
        rows = slice(start, start + chunk)
        H += torch.func.hessian(nll)(theta, X[rows], y[rows]).detach().double().cpu().numpy()
    return 0.5 * (H + H.T)
