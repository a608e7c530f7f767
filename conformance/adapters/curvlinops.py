"""curvlinops 3.0.1's curvature operators behind the conformance contract::

    laplace-lab validate \\
        --target laplace_lab.conformance.adapters.curvlinops:predictive_variance

Needs ``curvlinops-for-pytorch==3.0.1`` (installed with the extra ``laplace-lab[laplace-torch]``:
see :mod:`laplace_lab.conformance.adapters.laplace_torch`). curvlinops builds linear
operators, not Laplace approximations; the adapter adds the prior and the test Jacobian:

- the loss: ``MSELoss(reduction="sum")`` (regression; its output Hessian is 2, so every
  curvature is scaled by c = 1/(2σ0²) to reach the contract's 1/σ0²), for C outputs with
  per-output noise variances a loss module of the adapter's,
  ½ Σ_n Σ_c (f_nc − y_nc)²/σ_c² with ``reduction = "sum"`` (``GGNLinearOperator`` takes
  any loss module and differentiates it twice in the outputs: H = diag(1/σ_c²), c = 1),
  ``BCEWithLogitsLoss(reduction="sum")`` (binary: σ(f)(1 − σ(f)), c = 1) and
  ``CrossEntropyLoss(reduction="sum")`` (multiclass: diag(π) − ππᵀ, c = 1). With
  ``reduction="mean"`` curvlinops divides by N (and MSE and BCE by the outputs too), which
  the contract's Ω does not;
- ``predictive_variance``: Ω = c·(``GGNLinearOperator`` @ I) + V, dense in the model's
  dtype (the identity in that dtype, applied in blocks of :data:`BLOCK` columns), g from
  ``JacobianLinearOperator`` @ I on the test inputs, gᵀΩ⁻¹g by Cholesky; a subset
  restricts both;
- ``diagonal_predictive_variance``: the diagonal of the same dense GGN operator
  (curvlinops has only stochastic diagonal estimators, ``hutchinson_diag`` and ``xdiag``;
  the exact diagonal of an operator is eᵢᵀ(G eᵢ)); a subset S restricts it and the test
  Jacobian to S, in S's order (diag(Ω_SS) = diag(Ω)_S: its operators take whole parameter
  tensors, not single entries);
- ``kfac_predictive_variance``: ``KFACLinearOperator(fisher_type="type-2")`` — the exact
  output Hessian; the default ``"mc"`` draws labels and approximates the GGN by sampling —
  with ``separate_weight_and_bias`` True ("separate") or False ("joint": ã = [a; 1], one
  factor for [W b]), inverted by ``KFACInverseLinearOperator(damping=α/c,
  use_exact_damping=True)``, which applies (K + (α/c) I)⁻¹ through the factors'
  eigendecompositions, so that (cK + αI)⁻¹ = (1/c)(K + (α/c) I)⁻¹;
  for C logits (``CrossEntropyLoss``) the type-2 output-side factor is
  Σ_n Σ_c g_nc g_ncᵀ, g_nc backpropagated from the C columns of a square root of
  diag(π_n) − π_nπ_nᵀ, i.e. Σ_n D_nᵀ H_n D_n (D_n = ∂f(x_n)/∂s_l), the contract's G_l;
  variances per output, (M, C); on a network with Conv2d layers ``approximation`` is passed
  as ``kfac_approx`` ("expand" or "reduce", curvlinops' ``kfac.py``
  ``_hook_accumulate_input_covariance`` and ``_accumulate_gradient_covariance``);
- ``ekfac_predictive_variance``: the same with ``EKFACLinearOperator`` (type-2, both
  conventions), whose corrected eigenvalues are Σ_n Σ_c ((Q_Gᵀ g_nc)_i (Q_Aᵀ ã_n)_j)² with
  g_nc the per-sample output gradients backpropagated from the output Hessian's square root;
- ``ef_predictive_variance``: P = c²·(``EFLinearOperator`` @ I) + V, dense in the model's
  dtype, with ``structure`` "full" (gᵀP⁻¹g by Cholesky) or "diag" (its diagonal).
  ``EFLinearOperator`` with ``reduction="sum"`` is Σ_n ∇_θℓ_n ∇_θℓ_nᵀ for the loss ℓ; the EF
  is quadratic in the loss's gradient, so the scale is the square of the loss's:
  ``MSELoss``'s gradient is 2(f − y)J where the Gaussian's is (f − y)J/σ0² = c·2(f − y)J,
  so the EF is scaled by c² = 1/(4σ0⁴) (not by the GGN's c = 1/(2σ0²)); c² = 1 for
  ``BCEWithLogitsLoss`` and ``CrossEntropyLoss``, whose gradients are the Bernoulli's and
  the categorical's;
- ``last_layer_predictive_variance``: the operators above handed only S = [W, b] of the last
  ``torch.nn.Linear`` module (``model.modules()`` order, as
  :func:`~laplace_lab.conformance.adapters._parameters.last_layer_indices` finds it; the
  list ``[weight, bias]`` is S's order, weight row-major then bias), so every curvature and
  the test Jacobian are over S alone and the rest of the network stays at the MAP.
  ``"full"``: Ω_SS = c·(``GGNLinearOperator(params=[W, b])`` @ I) + V_S by Cholesky;
  ``"diag"``: its diagonal; ``"kron"``: ``KFACLinearOperator(params=[W, b],
  fisher_type="type-2", separate_weight_and_bias=True)`` — curvlinops maps the two
  parameters to their module and keeps one block for it, G ⊗ A on W with A = (1/N) Σ_n
  a_n a_nᵀ (no 1 appended when separate) and G alone on b (its bias block multiplies by the
  gradient covariance only; the W–b block is absent), the contract's "separate" block;
  in a model that ends in the layer D_n = I, so G = Σ_n of the loss's output Hessians
  (``MSELoss``: 2N, and c·G = N/σ0² = Σ_n 1/σ0²; otherwise Σ_n H_n) — inverted by
  ``KFACInverseLinearOperator(damping=α/c, use_exact_damping=True)`` as above (α
  isotropic).
- ``hessian_predictive_variance``: Ω_H = c·(``HessianLinearOperator`` @ I) + V, dense in the
  model's dtype, the same losses and c (the Hessian of the loss in θ, residual term
  included; c rescales it as it does the GGN, since c·loss is the negative log-likelihood up
  to a constant), gᵀΩ_H⁻¹g by Cholesky.

References
----------
.. [1] F. Dangel, R. Eschenhagen, B. Mucsányi, "curvlinops: linear operators for curvature
   matrices in PyTorch", https://github.com/f-dangel/curvlinops (version 3.0.1).
.. [2] F. Dangel, B. Mucsányi, T. Weber, R. Eschenhagen, "Kronecker-factored Approximate
   Curvature (KFAC) From Scratch", arXiv:2507.05127 (the factors' names and order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import one_of, positive_float
from laplace_lab.conformance.adapters._parameters import last_layer_indices, subset_indices
from laplace_lab.conformance.contract import (
    EF_STRUCTURES,
    KFAC_APPROXIMATIONS,
    KFAC_CONVENTIONS,
    LAST_LAYER_STRUCTURES,
)

__all__ = ["predictive_variance"]

#: The contract's likelihood with C Gaussian outputs (per-output noise variances).
MULTI_OUTPUT = ("multioutput-regression",)

#: The curvlinops release this adapter is written against.
VERSION = "3.0.1"


def _curvlinops() -> Any:
    try:
        import curvlinops
    except ImportError as err:
        raise ImportError(
            "this target needs curvlinops: pip install --no-deps curvlinops-for-pytorch==3.0.1 "
            "(and its run-time dependencies einops, einconv, linear_operator)"
        ) from err
    return curvlinops


def _per_output_gaussian(noise_var: Any, dtype: Any) -> Any:
    """The loss ℓ(f, y) = ½ Σ_n Σ_c (f_nc − y_nc)²/σ_c² (reduction "sum"), the negative
    log-likelihood of independent per-output Gaussian noise up to its constant: its output
    Hessian is diag(1/σ_c²), so curvlinops' GGN of it is the contract's with c = 1."""
    import torch

    class PerOutputGaussianNLL(torch.nn.Module):
        reduction = "sum"

        def __init__(self, s2: Any) -> None:
            super().__init__()
            self.register_buffer("s2", s2)

        def forward(self, f: Any, y: Any) -> Any:
            return 0.5 * torch.sum((f - y) ** 2 / self.s2)

    return PerOutputGaussianNLL(torch.as_tensor(np.asarray(noise_var), dtype=dtype))


def _loss(likelihood: str, noise_var: Any, y: Any, dtype: Any) -> tuple[Any, Any, float]:
    """(loss function with reduction="sum", targets in its shape, c) for the likelihood."""
    import torch

    one_of(likelihood, "likelihood", ("regression", "binary", "multiclass", *MULTI_OUTPUT))
    if likelihood == "multioutput-regression":
        return _per_output_gaussian(noise_var, dtype), y.to(dtype), 1.0
    if likelihood == "regression":
        return torch.nn.MSELoss(reduction="sum"), y.reshape(-1, 1).to(dtype), 0.5 / noise_var
    if likelihood == "binary":
        return torch.nn.BCEWithLogitsLoss(reduction="sum"), y.reshape(-1, 1).to(dtype), 1.0
    return torch.nn.CrossEntropyLoss(reduction="sum"), y.long(), 1.0


def _trainable(model: Any) -> list[Any]:
    return [t for t in model.parameters() if t.requires_grad]


def _last_layer(model: Any) -> tuple[list[Any], np.ndarray]:
    """([W, b] of the last ``torch.nn.Linear`` module, their indices in the flat vector)."""
    import torch

    S = last_layer_indices(model)  # raises when there is no such layer or it has no bias
    layer = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    return [layer.weight, layer.bias], S


#: Columns of the identity per operator product: ``op @ I`` at once holds every column's
#: activations (p × N × C numbers for the GGN: 4.7 GB at C = 1,000, p = 3,008), so the dense
#: matrices are formed in blocks, as a curvlinops user forms them.
BLOCK = 64


def _identity(params: list[Any]) -> Any:
    import torch

    p = sum(int(t.numel()) for t in params)
    return torch.eye(p, dtype=params[0].dtype, device=params[0].device)


def _dense(op: Any, params: list[Any]) -> Any:
    """``op @ I`` in blocks of :data:`BLOCK` columns of the identity (in the model's dtype)."""
    import torch

    eye = _identity(params)
    if eye.shape[1] <= BLOCK:
        return op @ eye
    out = torch.empty(op.shape[0], eye.shape[1], dtype=eye.dtype, device=eye.device)
    for i in range(0, eye.shape[1], BLOCK):
        out[:, i : i + BLOCK] = op @ eye[:, i : i + BLOCK]
    return out


def _dense_ggn(
    model: Any, X: Any, y: Any, likelihood: str, noise_var: float, params: list[Any] | None = None
) -> Any:
    """c·GGN of ``params`` (every trainable parameter by default) as a dense tensor in the
    model's dtype."""
    cl = _curvlinops()
    params = _trainable(model) if params is None else params
    loss, target, c = _loss(likelihood, noise_var, y, params[0].dtype)
    op = cl.GGNLinearOperator(model, loss, params, [(X, target)], check_deterministic=False)
    return c * _dense(op, params)


def _dense_ef(model: Any, X: Any, y: Any, likelihood: str, noise_var: float) -> Any:
    """c²·EF as a dense p × p tensor in the model's dtype: the loss's gradient times c is the
    negative log-likelihood's, so its EF times c² is the likelihood's (c = 1/(2σ0²) for
    ``MSELoss``, 1 otherwise)."""
    cl = _curvlinops()
    params = _trainable(model)
    loss, target, c = _loss(likelihood, noise_var, y, params[0].dtype)
    op = cl.EFLinearOperator(model, loss, params, [(X, target)], check_deterministic=False)
    return c**2 * _dense(op, params)


def _test_jacobian(model: Any, X_test: Any, params: list[Any] | None = None) -> Any:
    """∂f_c(x*_m)/∂θ as an (M·C) × p tensor, rows (m, c); θ = ``params`` (every trainable
    parameter by default)."""
    cl = _curvlinops()
    params = _trainable(model) if params is None else params
    dummy = X_test.new_zeros(X_test.shape[0])  # the operator iterates (X, y); y is unused
    op = cl.JacobianLinearOperator(model, params, [(X_test, dummy)], check_deterministic=False)
    return _dense(op, params)


def _shape(v: Any, M: int, likelihood: str) -> np.ndarray:
    v = v.detach().cpu().double().numpy()
    return v.reshape(M, -1) if likelihood in ("multiclass", *MULTI_OUTPUT) else v.reshape(M)


def _prior(model: Any, prior_precision: Any) -> Any:
    import torch

    p0 = next(model.parameters())
    p = sum(int(t.numel()) for t in model.parameters())
    V = np.broadcast_to(np.asarray(prior_precision, dtype=np.float64), (p,))
    return torch.as_tensor(np.array(V), dtype=p0.dtype, device=p0.device)


def predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
    prior_mean: Any = None,
) -> np.ndarray:
    """gᵀΩ⁻¹g (g_Sᵀ Ω_SS⁻¹ g_S on a subset) with Ω from ``GGNLinearOperator`` (module
    docstring). A prior mean (``prior_mean``) is not needed: Ω does not depend on it
    given θ̂."""
    import torch

    omega = _dense_ggn(model, X_train, y_train, likelihood, noise_var)
    omega = omega + torch.diag(_prior(model, prior_precision))
    G = _test_jacobian(model, X_test)
    if subset is not None:
        S = torch.as_tensor(np.asarray(subset), dtype=torch.long)
        omega, G = omega[S][:, S], G[:, S]
    L = torch.linalg.cholesky(0.5 * (omega + omega.T))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)  # L⁻¹gᵀ
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


def diagonal_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
) -> np.ndarray:
    """gᵀ diag(Ω)⁻¹ g with diag(Ω) the diagonal of the dense GGN operator plus V; on a
    subset S, g_Sᵀ diag(Ω)_S⁻¹ g_S (module docstring)."""
    import torch

    ggn = _dense_ggn(model, X_train, y_train, likelihood, noise_var)
    d = ggn.diagonal() + _prior(model, prior_precision)
    G = _test_jacobian(model, X_test)
    if subset is not None:
        S = torch.as_tensor(subset_indices(model, subset), dtype=torch.long)
        d, G = d[S], G[:, S]
    return _shape((G * G) @ (1.0 / d), X_test.shape[0], likelihood)


def _kronecker_variance(
    operator: str,
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    convention: str,
    params: list[Any] | None = None,
    **options: Any,
) -> np.ndarray:
    """gᵀ(cK + αI)⁻¹g for the (E)KFAC operator K of ``params`` (every trainable parameter by
    default), the test Jacobian restricted to them; ``options`` go to the operator."""
    cl = _curvlinops()
    one_of(convention, "convention", KFAC_CONVENTIONS)
    alpha = positive_float(prior_precision, "prior_precision")
    params = _trainable(model) if params is None else params
    loss, target, c = _loss(likelihood, noise_var, y_train, params[0].dtype)
    K = getattr(cl, operator)(
        model,
        loss,
        params,
        [(X_train, target)],
        check_deterministic=False,
        fisher_type=cl.FisherType.TYPE2,
        separate_weight_and_bias=convention == "separate",
        **options,
    )
    inverse = cl.KFACInverseLinearOperator(K, damping=alpha / c, use_exact_damping=True)
    G = _test_jacobian(model, X_test, params)
    W = inverse @ G.T  # (K + (α/c) I)⁻¹ gᵀ
    return _shape((G.T * W).sum(0) / c, X_test.shape[0], likelihood)


def kfac_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    convention: str,
    approximation: str | None = None,
) -> np.ndarray:
    """gᵀP⁻¹g with P = c·``KFACLinearOperator`` + αI, the prior added exactly; on a network
    with Conv2d layers ``approximation`` ("expand" or "reduce") is its ``kfac_approx``."""
    options = {}
    if approximation is not None:
        options["kfac_approx"] = one_of(approximation, "approximation", KFAC_APPROXIMATIONS)
    return _kronecker_variance(
        "KFACLinearOperator",
        model,
        X_train,
        y_train,
        X_test,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        convention=convention,
        **options,
    )


def ekfac_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    convention: str,
) -> np.ndarray:
    """gᵀP⁻¹g with P = c·``EKFACLinearOperator`` + αI, the prior added exactly."""
    return _kronecker_variance(
        "EKFACLinearOperator",
        model,
        X_train,
        y_train,
        X_test,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        convention=convention,
    )


def ef_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    structure: str,
) -> np.ndarray:
    """gᵀP⁻¹g (``"full"``) or gᵀ diag(P)⁻¹ g (``"diag"``) with P = c²·``EFLinearOperator``
    + V (module docstring)."""
    import torch

    one_of(structure, "structure", EF_STRUCTURES)
    P = _dense_ef(model, X_train, y_train, likelihood, noise_var)
    V = _prior(model, prior_precision)
    G = _test_jacobian(model, X_test)
    if structure == "diag":
        return _shape((G * G) @ (1.0 / (P.diagonal() + V)), X_test.shape[0], likelihood)
    L = torch.linalg.cholesky(0.5 * (P + P.T) + torch.diag(V))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)  # L⁻¹gᵀ
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


def last_layer_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    structure: str,
) -> np.ndarray:
    """The linearized Laplace over the last ``torch.nn.Linear`` layer's [W, b] alone, the
    operators built on those two parameters only: ``"full"`` g_Sᵀ Ω_SS⁻¹ g_S and ``"diag"``
    g_Sᵀ diag(Ω_SS)⁻¹ g_S from ``GGNLinearOperator``, ``"kron"`` from ``KFACLinearOperator``
    in the separate convention with α added exactly (module docstring)."""
    import torch

    one_of(structure, "structure", LAST_LAYER_STRUCTURES)
    params, S = _last_layer(model)
    if structure == "kron":
        return _kronecker_variance(
            "KFACLinearOperator",
            model,
            X_train,
            y_train,
            X_test,
            likelihood=likelihood,
            prior_precision=prior_precision,
            noise_var=noise_var,
            convention="separate",
            params=params,
        )
    ggn = _dense_ggn(model, X_train, y_train, likelihood, noise_var, params)
    V = _prior(model, prior_precision)[torch.as_tensor(S, dtype=torch.long)]
    G = _test_jacobian(model, X_test, params)
    if structure == "diag":
        return _shape((G * G) @ (1.0 / (ggn.diagonal() + V)), X_test.shape[0], likelihood)
    L = torch.linalg.cholesky(0.5 * (ggn + ggn.T) + torch.diag(V))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)  # L⁻¹gᵀ
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.kfac_predictive_variance = kfac_predictive_variance
predictive_variance.ekfac_predictive_variance = ekfac_predictive_variance
predictive_variance.ef_predictive_variance = ef_predictive_variance
predictive_variance.last_layer_predictive_variance = last_layer_predictive_variance


def hessian_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: Any,
) -> np.ndarray:
    """gᵀΩ_H⁻¹g with Ω_H = c·(``HessianLinearOperator`` @ I) + V (module docstring)."""
    import torch

    cl = _curvlinops()
    params = _trainable(model)
    loss, target, c = _loss(likelihood, noise_var, y_train, params[0].dtype)
    op = cl.HessianLinearOperator(
        model, loss, params, [(X_train, target)], check_deterministic=False
    )
    omega = c * _dense(op, params) + torch.diag(_prior(model, prior_precision))
    L = torch.linalg.cholesky(0.5 * (omega + omega.T))
    W = torch.linalg.solve_triangular(L, _test_jacobian(model, X_test).T, upper=False)
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


predictive_variance.hessian_predictive_variance = hessian_predictive_variance
