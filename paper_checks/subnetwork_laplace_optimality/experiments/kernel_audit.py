"""The kernels an Experiment-1 run rests on, checked against the dense oracle on its own inputs.

Experiment 1 of Raha, Khare & Patra ("Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075, §5.1 and App. C) compares selection methods with one
another: a wrong kernel that every method shares — Gradient-Laplace scores off by a factor,
a sub-network variance with the prior counted twice, a wrong W2 — moves every curve alike and
leaves every ordering intact. So the first replication of every run checks those kernels on a
small instance of its own network and data (the first :data:`TRAIN_ROWS` training and
:data:`TEST_ROWS` test inputs) against :class:`laplace_lab.conformance.oracle.DenseOracle`,
which builds Ω = Σ_n J_nᵀ H_n J_n + αI from autograd Jacobians and dense NumPy algebra,
independently of :mod:`laplace_lab.numerics`:

- the scores s_i = (1/N) Σ_n w_n g_i(x_n)² of Alg. 1 (every parameter);
- the full predictive variance gᵀ Ω⁻¹ g (eq. 3) and the sub-network variance
  g_Sᵀ Ω_SS⁻¹ g_S (eq. 5) on a random S of :data:`SUBSET` weights, by the direct call and by the
  nested prefixes (both the Cholesky prefixes with k ≤ N′ and the Woodbury ones with k > N′);
- W2(x*) = |σ_full − σ_S| of the two variances, averaged over the classes for C > 1
  (docs/mathematics.md, "Metrics").

Each error is divided by its tolerance
(:func:`laplace_lab.conformance.tolerance.variance_tolerance` for the sub-network variances,
relative ones otherwise); a ratio above 1 is our code's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.networks.training import predict
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.predictive import (
    predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)

__all__ = [
    "SUBSET",
    "TEST_ROWS",
    "TRAIN_ROWS",
    "AuditReference",
    "audit_kernels",
    "audit_reference",
]

#: The small instance: training rows (N′ = N·C rows of J_w), test rows, sub-network size.
TRAIN_ROWS = 24
TEST_ROWS = 4
SUBSET = 64
#: Relative tolerance of the float64 scores, the full variance and W2: far above roundoff
#: (≈ 1e-13 on these sizes) and far below any error of substance.
RELATIVE = 1e-8


def _to_tolerance(got: Any, want: np.ndarray, tol: np.ndarray) -> float:
    """max |got − want| / tol; an entry with tolerance 0 (a sub-network whose weights are all
    dead ReLUs at that test point: variance exactly 0) counts 0 if exact, inf otherwise."""
    err = np.abs(np.asarray(got, dtype=np.float64) - want)
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), err.shape)
    ratio = np.divide(err, tol, out=np.where(err == 0.0, 0.0, np.inf), where=tol > 0)
    return float(np.max(ratio))


def _relative(got: Any, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return np.inf
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-300))


@dataclass(frozen=True, eq=False)
class AuditReference:
    """The dense oracle's side of the audit: the sub-network S, its prefix, and the oracle's
    scores, variances and variance tolerances on the small instance."""

    #: The parameter count p, the random sub-network S (sorted) and its order of selection.
    p: int
    subset: np.ndarray
    order: np.ndarray
    #: The nested prefix's size (≤ N′, the Cholesky branch of the prefixes).
    small: int
    scores: np.ndarray
    full: np.ndarray
    sub: np.ndarray
    prefix: np.ndarray
    sub_tolerance: np.ndarray
    prefix_tolerance: np.ndarray


def audit_reference(
    model: Any,
    X_train: Any,
    X_test: Any,
    *,
    task: str,
    noise_var: float,
    prior_precision: float,
    rng: np.random.Generator,
) -> AuditReference:
    """The oracle's answers on the small instance (:func:`audit_kernels`'s arguments): they
    depend on the network, the data and ``rng`` only, never on :mod:`laplace_lab.numerics`."""
    import torch

    Xa = torch.as_tensor(np.asarray(X_train)[:TRAIN_ROWS], dtype=torch.float64)
    Xt = torch.as_tensor(np.asarray(X_test)[:TEST_ROWS], dtype=torch.float64)
    oracle = DenseOracle(
        Problem(
            name="experiment1-audit",
            seed=0,
            model=model,
            X_train=Xa,
            y_train=torch.zeros(Xa.shape[0], dtype=torch.float64),
            X_test=Xt,
            likelihood=task,
            prior_precision=float(prior_precision),
            noise_var=float(noise_var) if task == "regression" else 1.0,
        )
    )
    p = int(oracle.theta.size)
    S = np.sort(rng.choice(p, size=min(SUBSET, p), replace=False)).astype(np.int64)
    order = rng.permutation(S)
    small = min(TRAIN_ROWS // 2, S.size)
    return AuditReference(
        p=p,
        subset=S,
        order=order,
        small=small,
        scores=oracle.scores,
        full=oracle.predictive_variance(),
        sub=oracle.predictive_variance(S),
        prefix=oracle.predictive_variance(order[:small]),
        sub_tolerance=oracle.variance_tolerance(S),
        prefix_tolerance=oracle.variance_tolerance(order[:small]),
    )


def audit_kernels(
    model: Any,
    X_train: Any,
    X_test: Any,
    *,
    task: str,
    noise_var: float,
    prior_precision: float,
    make_ggn: Callable[..., Any],
    rng: np.random.Generator | None = None,
    reference: AuditReference | None = None,
) -> dict[str, float]:
    """Error-to-tolerance ratios of the Experiment-1 kernels on a small instance (≤ 1 passes).

    Parameters
    ----------
    model : torch.nn.Module
        The replication's MAP network, float64 and in evaluation mode.
    X_train, X_test : array_like
        Its training and test inputs (the first :data:`TRAIN_ROWS` / :data:`TEST_ROWS` used).
    task : {"regression", "binary", "multiclass"}
    noise_var, prior_precision : float
        σ0² and α of the run.
    make_ggn : callable
        ``make_ggn(task, J, f, noise_var, prior_precision)``: the run's own GGN builder.
    rng : numpy.random.Generator, optional
        Draws the sub-network S (:func:`audit_reference`); required without ``reference``.
    reference : AuditReference, optional
        The oracle's side, computed before by :func:`audit_reference` on the same arguments.

    Returns
    -------
    dict
        Kernel name → error / tolerance.
    """
    import torch

    if reference is None:
        if rng is None:
            raise ValueError("rng is required when no reference is given")
        reference = audit_reference(
            model,
            X_train,
            X_test,
            task=task,
            noise_var=noise_var,
            prior_precision=prior_precision,
            rng=rng,
        )
    ref = reference
    Xa = torch.as_tensor(np.asarray(X_train)[:TRAIN_ROWS], dtype=torch.float64)
    Xt = torch.as_tensor(np.asarray(X_test)[:TEST_ROWS], dtype=torch.float64)
    J = per_sample_jacobian(model, Xa).numpy()
    G = per_sample_jacobian(model, Xt).numpy()
    ggn = make_ggn(task, J, predict(model, Xa), noise_var, prior_precision)
    if ggn.p != ref.p:
        raise ValueError(f"reference: p = {ref.p} for a network with p = {ggn.p}")
    S, order, small = ref.subset, ref.order, ref.small
    ratios = {
        "scores": _relative(ggn.scores(), ref.scores) / RELATIVE,
        "full variance": _relative(predictive_variance(ggn, G), ref.full) / RELATIVE,
    }
    tol = ref.sub_tolerance
    ratios["sub-network variance"] = _to_tolerance(subnetwork_variance(ggn, G, S), ref.sub, tol)
    path = np.asarray(subnetwork_variance_path(ggn, G, order, [small, S.size]))
    ratios["nested prefixes"] = max(
        _to_tolerance(path[0], ref.prefix, ref.prefix_tolerance),
        _to_tolerance(path[1], ref.sub, tol),
    )
    noise = float(noise_var) if task == "regression" else 0.0
    w2 = np.abs(np.sqrt(ref.full + noise) - np.sqrt(ref.sub + noise))
    w2 = w2.mean(axis=1) if w2.ndim == 2 else w2  # multiclass: the mean over classes
    ratios["W2"] = _relative(wasserstein_gap(ref.full, ref.sub, noise_var=noise), w2) / RELATIVE
    return ratios
