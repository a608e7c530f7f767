"""KFAC of a network against curvlinops and laplace-torch: the factors and one inverse product.

The row: build the Kronecker factors of the GGN of an MLP (regression, σ0² = 0.25) and apply
(F + αI)⁻¹ to one vector, α = 1. Every side uses the type-2 factors (the exact output
Hessian) with the bias in a factor of its own, F_l = G_l ⊗ A_l on W and G_l on b,
G_l = Σ_n δ_n δ_nᵀ/σ0², A_l = (1/N) Σ_n a_n a_nᵀ, and inverts the damped sum exactly through
the factors' eigendecompositions (Martens & Grosse 2015, §3; laplace-torch's
``KronLaplace``):

- ours: :func:`~laplace_lab.numerics.kfac.fit_kfac` (``convention="separate"``), whose
  eigendecomposed factors give Q_G ((Q_Gᵀ M Q_A) ⊘ (λ_G λ_Aᵀ + α)) Q_Aᵀ for the layer's
  [W b] block M of the vector (composed here from the fitted factors);
- curvlinops 3.0.1: ``KFACLinearOperator(fisher_type="type-2")`` of the summed MSE loss
  (its factors are c = 2σ0² times ours) and ``KFACInverseLinearOperator(damping=α/c,
  use_exact_damping=True)``, the product divided by c;
- laplace-torch 0.3: ``Laplace(hessian_structure="kron", subset_of_weights="all")`` fitted
  on one batch of all N rows, then ``posterior_precision.bmm(v, exponent=-1)``.

Before the clock, each peer's forward product F v is compared with ours (the conventions
agree, not only the inverses); then the timed answers (F + αI)⁻¹ v must agree too.

References
----------
.. [1] J. Martens, R. Grosse, "Optimizing Neural Networks with Kronecker-factored Approximate
   Curvature", ICML 2015, arXiv:1503.05671, §3.
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux – Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806 (laplace-torch).
.. [3] F. Dangel, R. Eschenhagen, et al., curvlinops, https://github.com/f-dangel/curvlinops
   (3.0.1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from laplace_lab.benchmarks import bench_peers as peers
from laplace_lab.benchmarks._harness import Row

PRIOR_PRECISION = 1.0


def _apply(kfac: Any, v: np.ndarray, *, inverse: bool, alpha: float) -> np.ndarray:
    """(F + αI)⁻¹ v (``inverse``) or F v from our eigendecomposed factors, v in the model's
    parameter order (per Linear layer: W row-major, then b)."""
    out, i = [], 0
    for (lA, QA), (lG, QG) in zip(kfac.eig_A, kfac.eig_G, strict=True):
        n_out, n_in = QG.shape[0], QA.shape[0] - 1
        W = v[i : i + n_out * n_in].reshape(n_out, n_in)
        b = v[i + n_out * n_in : i + n_out * (n_in + 1)]
        i += n_out * (n_in + 1)
        lam = np.outer(lG, lA)
        scale = 1.0 / (lam + alpha) if inverse else lam
        M = QG @ ((QG.T @ np.column_stack([W, b]) @ QA) * scale) @ QA.T
        out += [M[:, :-1].reshape(-1), M[:, -1]]
    return np.concatenate(out)


def _ours(
    model: Any, X: Any, v: np.ndarray, *, inverse: bool = True, approximation: str = "expand"
) -> np.ndarray:
    from laplace_lab.numerics.kfac import fit_kfac

    kfac = fit_kfac(
        model,
        X,
        likelihood="regression",
        prior_precision=PRIOR_PRECISION,
        noise_var=peers.NOISE_VAR,
        convention="separate",
        approximation=approximation,
    )
    return _apply(kfac, v, inverse=inverse, alpha=PRIOR_PRECISION)


def _curvlinops(
    model: Any, X: Any, y: Any, vt: Any, *, inverse: bool = True, approximation: str = "expand"
) -> Any:
    import curvlinops
    import torch

    op = curvlinops.KFACLinearOperator(
        model,
        torch.nn.MSELoss(reduction="sum"),
        [t for t in model.parameters() if t.requires_grad],
        [(X, y.reshape(-1, 1))],
        fisher_type="type-2",
        separate_weight_and_bias=True,
        check_deterministic=False,
        kfac_approx=approximation,
    )
    c = 0.5 / peers.NOISE_VAR  # ours = c · curvlinops' (MSE's output Hessian is 2)
    if not inverse:
        return c * (op @ vt)
    inv = curvlinops.KFACInverseLinearOperator(
        op, damping=PRIOR_PRECISION / c, use_exact_damping=True
    )
    return (inv @ vt) / c


def _laplace_torch(
    model: Any, X: Any, y: Any, vt: Any, *, inverse: bool = True, approximation: str = "expand"
) -> Any:
    import torch
    from laplace import Laplace

    data = torch.utils.data.TensorDataset(X, y.reshape(-1, 1))
    la = Laplace(
        model,
        "regression",
        subset_of_weights="all",
        hessian_structure="kron",
        sigma_noise=peers.NOISE_VAR**0.5,
        prior_precision=PRIOR_PRECISION,
        asdl_fisher_kwargs={"kfac_approx": approximation},
    )
    la.fit(torch.utils.data.DataLoader(data, batch_size=X.shape[0]))
    if inverse:
        return la.posterior_precision.bmm(vt, exponent=-1)
    return la.posterior_precision.bmm(vt, exponent=1) - PRIOR_PRECISION * vt


def _sides() -> dict[str, Callable[..., Any]]:
    sides: dict[str, Callable[..., Any]] = {}
    if peers._have("curvlinops"):
        sides["curvlinops 3.0.1"] = _curvlinops
    if peers._have("laplace"):
        sides["laplace-torch 0.3"] = _laplace_torch
    return sides


def kfac_row(
    model: Any, X: Any, y: Any, dname: str, label: str, *, approximation: str = "expand"
) -> Row | None:
    """The row of ``model`` on (X, y) in ``dname``: our forward product F v checked against
    each installed peer's before the clock, then the factors and one (F + I)⁻¹ v timed; None
    when no peer is installed. ``approximation`` is the Conv2d layers' KFAC-expand or
    KFAC-reduce (the same for Linear layers)."""
    import torch

    sides = _sides()
    if not sides:
        return None
    p = sum(int(t.numel()) for t in model.parameters())
    v = np.random.default_rng(2).standard_normal(p)
    vt = torch.as_tensor(v, dtype=getattr(torch, dname))
    how = {"approximation": approximation}
    forward = _ours(model, X, v, inverse=False, **how)
    checks = []
    for name, side in sides.items():
        got = peers._numpy(side(model, X, y, vt, inverse=False, **how))
        err = float(np.max(np.abs(got - forward)) / np.max(np.abs(forward)))
        if not err <= peers._TOLERANCE[dname]:
            checks.append(f"{name}'s F v differs from ours by {err:.2g} (relative)")
    return peers._row(
        f"KFAC factors + one (F + I)^-1 v, {label}",
        lambda: _ours(model, X, v, **how),
        {name: (lambda side=side: side(model, X, y, vt, **how)) for name, side in sides.items()},
        dname,
        "type-2 factors, bias factor apart, exact damping; F v agreed before timing",
        checks=checks,
    )


def rows(kind: str = "large", dtypes: tuple[str, ...] = ("float64", "float32")) -> list[Row]:
    """One row per dtype on the ``kind`` problem of :mod:`.bench_peers`."""
    import torch

    out = []
    for dname in dtypes:
        model, X, y = peers._problem(kind, getattr(torch, dname))
        p = sum(int(t.numel()) for t in model.parameters())
        row = kfac_row(model, X, y, dname, f"{peers.LABEL[kind]} (p = {p:,}), N = {X.shape[0]:,}")
        if row is not None:
            out.append(row)
    return out
