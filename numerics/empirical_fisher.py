"""The empirical Fisher (EF) of a torch model, from its per-sample gradients.

The EF is the Gram of the per-sample gradients of the negative log-likelihood at the
labelled training points.

For the training pairs (x_n, y_n) and outputs f_n = f(x_n; θ̂), the per-sample gradient of
the negative log-likelihood is, by the chain rule through the Jacobian J_n = ∂f(x_n)/∂θ,

    g_n = ∇_θ [−log p(y_n | f_n)] = J_nᵀ r_n,   r_n = ∂[−log p(y_n | f)]/∂f at f_n,

with the output residual r_n = (f_n − y_n)/σ0² (Gaussian, noise variance σ0²),
σ(f_n) − y_n (Bernoulli, one logit) or π_n − e_{y_n} (categorical, π_n = softmax f_n). The
empirical Fisher and its Laplace precision are

    EF = Σ_n g_n g_nᵀ,   P = EF + V,

i.e. a GGN factor (:class:`~laplace_lab.numerics.GGN`) whose weighted Jacobian J_w has the
rows g_nᵀ: every kernel that takes a GGN (full and sub-network predictive variances,
diagonal Laplace, low rank) takes the EF too. Unlike the GGN Σ_n J_nᵀ H_n J_n it depends on
the labels through the residuals, and it has one row per training point whatever the number
of outputs (N rows, not N·C). It equals the GGN only in expectation over y ~ p(y | f_n) and
only where the model is the data's distribution; at a MAP its rows sum to −Vθ̂ (the
likelihood's gradient balances the prior's). Kunstner et al. [1]_ show how far the two can
be apart; Laplace libraries offer it as a cheap curvature (laplace-torch's ``*EF``
backends [2]_, curvlinops' ``EFLinearOperator``).

The gradients are read from the per-sample Jacobians of
:func:`laplace_lab.numerics.jacobians.jacobian_chunks` a chunk of rows at a time (only the
(N, p) gradients are kept, never the (N, C, p) Jacobian), in the model's dtype.

References
----------
.. [1] F. Kunstner, L. Balles, P. Hennig, "Limitations of the Empirical Fisher Approximation
   for Natural Gradient Descent", NeurIPS 2019, arXiv:1905.12558 (the EF beside the Fisher
   and the GGN, and where they part).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux – Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (the EF
   as an approximation of the Hessian of the log-likelihood).
.. [3] J. Martens, "New Insights and Perspectives on the Natural Gradient Method", JMLR 21
   (2020), arXiv:1412.1193 (the empirical Fisher beside the Fisher and the GGN).
"""

from __future__ import annotations

from typing import Any

from laplace_lab._checks import one_of, positive_float
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import jacobian_chunks, parameter_layout

__all__ = ["LIKELIHOODS", "empirical_fisher", "output_residuals", "per_sample_gradients"]

#: The likelihoods and their output residuals (module docstring).
LIKELIHOODS = ("regression", "binary", "multiclass")


def _rows(y: Any, n: int) -> Any:
    """``y`` as a tensor with one row per input (checked in full by :func:`_targets`)."""
    import torch

    if not isinstance(y, torch.Tensor):
        try:
            y = torch.as_tensor(y)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"y must be a tensor or an array; got {type(y).__name__}") from err
    if y.ndim == 0 or y.shape[0] != n:
        raise ValueError(f"y must have one row per row of X ({n}); got shape {tuple(y.shape)}")
    return y


def _targets(y: Any, f: Any, likelihood: str) -> Any:
    """``y`` as a tensor on f's device, checked against the outputs f (N, C)."""
    import torch

    y = _rows(y, f.shape[0]).to(device=f.device)
    N, C = f.shape
    want = (N, C) if likelihood == "regression" and C > 1 else (N,)
    if tuple(y.shape) == (N, 1) and want == (N,):
        y = y.reshape(N)
    if tuple(y.shape) != want:
        raise ValueError(
            f"y must have shape {want} for likelihood={likelihood!r} and outputs of shape "
            f"{tuple(f.shape)}; got {tuple(y.shape)}"
        )
    if likelihood == "multiclass":
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise ValueError(f"y must hold integer class labels; got dtype {y.dtype}")
        if bool(((y < 0) | (y >= C)).any()):
            raise ValueError(f"y must hold class labels in [0, {C}); got values outside")
        return y.long()
    if not y.is_floating_point():
        y = y.to(f.dtype)
    if not bool(torch.isfinite(y).all()):
        raise ValueError("y must be finite; it contains NaN or Inf")
    if likelihood == "binary" and not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold 0/1 labels for likelihood='binary'")
    return y.to(f.dtype)


def output_residuals(f: Any, y: Any, *, likelihood: str, noise_var: float = 1.0) -> Any:
    """r_n = ∂[−log p(y_n | f)]/∂f at f_n, (N, C) in f's dtype (module docstring).

    Parameters
    ----------
    f : (N, C) or (N,) torch.Tensor
        Model outputs; (N,) is read as one output.
    y : (N,) or (N, C) tensor or array
        Targets: floats (regression; (N, C) for C outputs), 0./1. (binary), integer labels
        in [0, C) (multiclass).
    likelihood : {"regression", "binary", "multiclass"}
        Gaussian with noise variance ``noise_var``, Bernoulli (one logit), categorical
        (C ≥ 2 logits).
    noise_var : float
        σ0² > 0 (regression only).

    Returns
    -------
    (N, C) torch.Tensor
        (f − y)/σ0², σ(f) − y or softmax(f) − e_y.
    """
    import torch

    one_of(likelihood, "likelihood", LIKELIHOODS)
    s2 = positive_float(noise_var, "noise_var")
    if not isinstance(f, torch.Tensor) or not f.is_floating_point():
        raise TypeError(f"f must be a floating torch.Tensor; got {type(f).__name__}")
    f = f.reshape(f.shape[0], 1) if f.ndim == 1 else f
    if f.ndim != 2 or f.shape[0] == 0:
        raise ValueError(f"f must have shape (N, C) or (N,); got {tuple(f.shape)}")
    C = f.shape[1]
    if likelihood == "binary" and C != 1:
        raise ValueError(f"likelihood='binary' needs one logit; got f of shape {tuple(f.shape)}")
    if likelihood == "multiclass" and C < 2:
        raise ValueError(
            f"likelihood='multiclass' needs C ≥ 2 logits; got f of shape {tuple(f.shape)}"
        )
    y = _targets(y, f, likelihood)
    if likelihood == "regression":
        return (f - y.reshape(f.shape)) / s2
    if likelihood == "binary":
        return torch.sigmoid(f) - y[:, None]
    onehot = torch.nn.functional.one_hot(y, C).to(f.dtype)
    return torch.softmax(f, dim=1) - onehot


def per_sample_gradients(
    model: Any,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    noise_var: float = 1.0,
    chunk_size: int | None = None,
) -> Any:
    """g_n = ∇_θ [−log p(y_n | f(x_n; θ))] = J_nᵀ r_n at the model's θ, (N, p).

    Parameters
    ----------
    model : torch.nn.Module
        Returns (N,), (N, 1) or (N, C) outputs; in eval mode.
    X : (N, ...) tensor or array
        Training inputs.
    y : (N,) or (N, C) tensor or array
        Training targets (:func:`output_residuals`).
    likelihood : {"regression", "binary", "multiclass"}
    noise_var : float
        σ0² > 0 (regression).
    chunk_size : int, optional
        Rows of Jacobian per chunk (:func:`~laplace_lab.numerics.jacobians.jacobian_chunks`).

    Returns
    -------
    (N, p) torch.Tensor
        On the model's device, in its parameters' dtype; columns in ``parameters()`` order.
    """
    import torch

    one_of(likelihood, "likelihood", LIKELIHOODS)
    positive_float(noise_var, "noise_var")
    try:
        n = len(X)
    except TypeError as err:
        raise ValueError(f"X must have shape (N, ...) with one row per sample; got {X!r}") from err
    y = _rows(y, n)
    p = parameter_layout(model).p
    out = None
    for start, J, f in jacobian_chunks(model, X, chunk_size=chunk_size):
        if out is None:
            out = torch.empty((n, p), dtype=J.dtype, device=J.device)
        rows = slice(start, start + J.shape[0])
        r = output_residuals(f, y[rows], likelihood=likelihood, noise_var=noise_var)
        J = J[:, None, :] if J.ndim == 2 else J  # (B, C, p)
        out[rows] = torch.einsum("bcp,bc->bp", J, r)
    return out


def empirical_fisher(
    model: Any,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float = 1.0,
    chunk_size: int | None = None,
) -> GGN:
    """The empirical-Fisher Laplace precision P = Σ_n g_n g_nᵀ + V as a GGN factor.

    Parameters
    ----------
    model, X, y, likelihood, noise_var, chunk_size
        As for :func:`per_sample_gradients`.
    prior_precision : float or (p,) array
        V (a scalar means αI), every entry > 0.

    Returns
    -------
    GGN
        J_w = the (N, p) per-sample gradients (one row per training point), ``n_data`` N,
        ``likelihood="custom"``; pass it to
        :func:`~laplace_lab.numerics.predictive.predictive_variance` for gᵀP⁻¹g or to
        :func:`~laplace_lab.numerics.laplace_variants.diagonal_laplace_variance` for
        gᵀ diag(P)⁻¹ g.

    References
    ----------
    .. [1] F. Kunstner, L. Balles, P. Hennig, "Limitations of the Empirical Fisher
       Approximation for Natural Gradient Descent", NeurIPS 2019, arXiv:1905.12558.
    """
    s2 = positive_float(noise_var, "noise_var")
    g = per_sample_gradients(
        model, X, y, likelihood=likelihood, noise_var=s2, chunk_size=chunk_size
    )
    return GGN(g, prior_precision, noise_var=s2, n_data=int(g.shape[0]), likelihood="custom")
