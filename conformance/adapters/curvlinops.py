"""curvlinops 3.0.1's curvature operators behind the conformance contract::

    laplace-lab validate \\
        --target laplace_lab.conformance.adapters.curvlinops:predictive_variance

Needs ``curvlinops-for-pytorch==3.0.1`` (installed with the extra ``laplace-lab[laplace-torch]``:
see :mod:`laplace_lab.conformance.adapters.laplace_torch`). curvlinops builds linear
operators, not Laplace approximations; the adapter adds the prior and the test Jacobian:

- the loss: ``MSELoss(reduction="sum")`` (regression; its output Hessian is 2, so every
  curvature is scaled by c = 1/(2σ0²) to reach the contract's 1/σ0²),
  ``BCEWithLogitsLoss(reduction="sum")`` (binary: σ(f)(1 − σ(f)), c = 1) and
  ``CrossEntropyLoss(reduction="sum")`` (multiclass: diag(π) − ππᵀ, c = 1). With
  ``reduction="mean"`` curvlinops divides by N (and MSE and BCE by the outputs too), which
  the contract's Ω does not;
- ``predictive_variance``: Ω = c·(``GGNLinearOperator`` @ I) + V, dense in the model's
  dtype (the identity in that dtype), g from ``JacobianLinearOperator`` @ I on the test
  inputs, gᵀΩ⁻¹g by Cholesky; a subset restricts both;
- ``diagonal_predictive_variance``: the diagonal of the same dense GGN operator
  (curvlinops has only stochastic diagonal estimators, ``hutchinson_diag`` and ``xdiag``;
  the exact diagonal of an operator is eᵢᵀ(G eᵢ));
- ``kfac_predictive_variance``: ``KFACLinearOperator(fisher_type="type-2")`` — the exact
  output Hessian; the default ``"mc"`` draws labels and approximates the GGN by sampling —
  with ``separate_weight_and_bias`` True ("separate") or False ("joint": ã = [a; 1], one
  factor for [W b]), inverted by ``KFACInverseLinearOperator(damping=α/c,
  use_exact_damping=True)``, which applies (K + (α/c) I)⁻¹ through the factors'
  eigendecompositions, so that (cK + αI)⁻¹ = (1/c)(K + (α/c) I)⁻¹;
  for C logits (``CrossEntropyLoss``) the type-2 output-side factor is
  Σ_n Σ_c g_nc g_ncᵀ, g_nc backpropagated from the C columns of a square root of
  diag(π_n) − π_nπ_nᵀ, i.e. Σ_n D_nᵀ H_n D_n (D_n = ∂f(x_n)/∂s_l), the contract's G_l;
  variances per output, (M, C);
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
  the categorical's.

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

__all__ = ["predictive_variance"]

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


def _loss(likelihood: str, noise_var: float, y: Any, dtype: Any) -> tuple[Any, Any, float]:
    """(loss function with reduction="sum", targets in its shape, c) for the likelihood."""
    import torch

    one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
    if likelihood == "regression":
        return torch.nn.MSELoss(reduction="sum"), y.reshape(-1, 1).to(dtype), 0.5 / noise_var
    if likelihood == "binary":
        return torch.nn.BCEWithLogitsLoss(reduction="sum"), y.reshape(-1, 1).to(dtype), 1.0
    return torch.nn.CrossEntropyLoss(reduction="sum"), y.long(), 1.0


def _identity(model: Any) -> Any:
    import torch

    p0 = next(model.parameters())
    p = sum(int(t.numel()) for t in model.parameters())
    return torch.eye(p, dtype=p0.dtype, device=p0.device)


def _dense_ggn(model: Any, X: Any, y: Any, likelihood: str, noise_var: float) -> Any:
    """c·GGN as a dense p × p tensor in the model's dtype."""
    cl = _curvlinops()
    params = [t for t in model.parameters() if t.requires_grad]
    loss, target, c = _loss(likelihood, noise_var, y, params[0].dtype)
    op = cl.GGNLinearOperator(model, loss, params, [(X, target)], check_deterministic=False)
    return c * (op @ _identity(model))


def _dense_ef(model: Any, X: Any, y: Any, likelihood: str, noise_var: float) -> Any:
    """c²·EF as a dense p × p tensor in the model's dtype: the loss's gradient times c is the
    negative log-likelihood's, so its EF times c² is the likelihood's (c = 1/(2σ0²) for
    ``MSELoss``, 1 otherwise)."""
    cl = _curvlinops()
    params = [t for t in model.parameters() if t.requires_grad]
    loss, target, c = _loss(likelihood, noise_var, y, params[0].dtype)
    op = cl.EFLinearOperator(model, loss, params, [(X, target)], check_deterministic=False)
    return c**2 * (op @ _identity(model))


def _test_jacobian(model: Any, X_test: Any) -> Any:
    """∂f_c(x*_m)/∂θ as an (M·C) × p tensor, rows (m, c)."""
    cl = _curvlinops()
    params = [t for t in model.parameters() if t.requires_grad]
    dummy = X_test.new_zeros(X_test.shape[0])  # the operator iterates (X, y); y is unused
    op = cl.JacobianLinearOperator(model, params, [(X_test, dummy)], check_deterministic=False)
    return op @ _identity(model)


def _shape(v: Any, M: int, likelihood: str) -> np.ndarray:
    v = v.detach().cpu().double().numpy()
    return v.reshape(M, -1) if likelihood == "multiclass" else v.reshape(M)


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
) -> np.ndarray:
    """gᵀΩ⁻¹g (g_Sᵀ Ω_SS⁻¹ g_S on a subset) with Ω from ``GGNLinearOperator`` (module
    docstring)."""
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
) -> np.ndarray:
    """gᵀ diag(Ω)⁻¹ g with diag(Ω) the diagonal of the dense GGN operator plus V."""
    ggn = _dense_ggn(model, X_train, y_train, likelihood, noise_var)
    d = ggn.diagonal() + _prior(model, prior_precision)
    G = _test_jacobian(model, X_test)
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
) -> np.ndarray:
    cl = _curvlinops()
    one_of(convention, "convention", ("joint", "separate"))
    alpha = positive_float(prior_precision, "prior_precision")
    params = [t for t in model.parameters() if t.requires_grad]
    loss, target, c = _loss(likelihood, noise_var, y_train, params[0].dtype)
    K = getattr(cl, operator)(
        model,
        loss,
        params,
        [(X_train, target)],
        check_deterministic=False,
        fisher_type=cl.FisherType.TYPE2,
        separate_weight_and_bias=convention == "separate",
    )
    inverse = cl.KFACInverseLinearOperator(K, damping=alpha / c, use_exact_damping=True)
    G = _test_jacobian(model, X_test)
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
) -> np.ndarray:
    """gᵀP⁻¹g with P = c·``KFACLinearOperator`` + αI, the prior added exactly."""
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

    one_of(structure, "structure", ("full", "diag"))
    P = _dense_ef(model, X_train, y_train, likelihood, noise_var)
    V = _prior(model, prior_precision)
    G = _test_jacobian(model, X_test)
    if structure == "diag":
        return _shape((G * G) @ (1.0 / (P.diagonal() + V)), X_test.shape[0], likelihood)
    L = torch.linalg.cholesky(0.5 * (P + P.T) + torch.diag(V))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)  # L⁻¹gᵀ
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.kfac_predictive_variance = kfac_predictive_variance
predictive_variance.ekfac_predictive_variance = ekfac_predictive_variance
predictive_variance.ef_predictive_variance = ef_predictive_variance
