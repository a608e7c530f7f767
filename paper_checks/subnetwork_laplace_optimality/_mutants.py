"""Deliberately wrong variants shared by the claims of Raha, Khare & Patra (arXiv:2605.09075).

Each is a plausible misreading or bug of something several claims rely on (IPV, Alg. 1–2,
the parameter count, NeuralLinear's layer); the claims declare them as mutants
(:mod:`laplace_lab.paper_checks.verification.mutants`) with the verdict they must then give. Wrong
variants of a single claim's own helpers live beside that claim. The originals are captured
as default arguments (bound at import time, which a mutant does not rebind), so a variant
that wraps its original does not call itself while the mutant is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from laplace_lab.networks import models
from laplace_lab.numerics import predictive, selection
from laplace_lab.numerics.ggn import GGN
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
    first_audit,
    fitted_replications,
    oracle_reference,
)
from laplace_lab.paper_checks.verification import Mutant
from laplace_lab.theory import classes, exhaustive
from laplace_lab.theory import theorems as theory_theorems

__all__ = [
    "COUNT_WITHOUT_VECTORS",
    "DOMINANCE_TWICE_AS_LAX",
    "GREEDY_TOP_K_DIAGONAL",
    "GREEDY_WITHOUT_SCHUR",
    "IPV_MARGINAL_READING",
    "IPV_POSTERIOR_VARIANCE",
    "NEURAL_LINEAR_PENULTIMATE",
    "PROPOSED_ASCENDING",
    "SCORES_WITHOUT_NOISE",
    "SHARED_VARIANCES_HALVED",
]


def _marginal_prefixes(lam: np.ndarray, order: np.ndarray, scale: float, c: float, v: np.ndarray):
    """IPV of every prefix read with the marginal of the full posterior, c·tr([(Λ + cV)⁻¹]_SS
    Λ_SS), instead of the sub-network's (Λ + cV)_SS⁻¹ (eq. 5's pseudo-inverse of [Ω_SS]⁰)."""
    marginal = np.linalg.inv(lam + np.diag(c * v))
    terms = [
        np.sum(marginal[np.ix_(order[:k], order[:k])] * lam[np.ix_(order[:k], order[:k])])
        for k in range(1, order.size + 1)
    ]
    return scale * np.asarray(terms)


def _posterior_prefixes(lam: np.ndarray, order: np.ndarray, scale: float, c: float, v: np.ndarray):
    """The posterior variance (σ0²/N)·c·tr((Λ + cV)_SS⁻¹) of every prefix: eq. (8) without
    its gradients ḡ_S, i.e. the parameters' variance instead of the predictive one."""
    A = lam[np.ix_(order, order)] + np.diag(c * v[order])
    r_inv = solve_triangular(cholesky(A, lower=True), np.eye(order.size), lower=True)
    return scale * c * np.cumsum(np.sum(r_inv**2, axis=1))


def _posterior_batched(lam: np.ndarray, idx: np.ndarray, scale: float, c: float, v: np.ndarray):
    """The exhaustive search's batched IPV under the same misreading."""
    k = idx.shape[1]
    A = lam[idx[:, :, None], idx[:, None, :]] + c * v[idx][:, :, None] * np.eye(k)
    return scale * c * np.trace(np.linalg.inv(A), axis1=1, axis2=2)


def _greedy_top_k_diagonal(ggn: Any, k: int, *, n_candidates: Any = None, scores: Any = None):
    """'Greedy-Laplace' as the k largest diagonal entries of Ω: no candidates, no Schur step."""
    d = np.asarray(ggn.diagonal(), dtype=np.float64)
    return np.argsort(-d, kind="stable")[:k].astype(np.int64)


def _greedy_without_schur(ggn: Any, k: int, *, n_candidates: Any = None, scores: Any = None):
    """Alg. 2 without step 3: the top-m candidates, then the k largest diag(Ω_KK)."""
    s = np.asarray(ggn.scores() if scores is None else scores, dtype=np.float64)
    m = min(2 * k, s.size) if n_candidates is None else n_candidates
    K = np.argsort(-s, kind="stable")[:m]
    d = np.asarray(ggn.diagonal(), dtype=np.float64)[K]
    return K[np.argsort(-d, kind="stable")[:k]].astype(np.int64)


def _gradient_ascending(
    scores: Any, k: int, original: Callable = selection.gradient_laplace
) -> np.ndarray:
    """Alg. 1 read ascending: the k *smallest* scores (Subnet-Diagonal's rule, §4)."""
    return original(-np.asarray(scores, dtype=np.float64), k)


def _greedy_ascending(
    ggn: Any,
    k: int,
    *,
    n_candidates: Any = None,
    scores: Any = None,
    original: Callable = selection.greedy_laplace,
):
    """Alg. 2 on candidates screened by the smallest scores (its Alg. 1 read ascending)."""
    s = np.asarray(ggn.scores() if scores is None else scores, dtype=np.float64)
    return original(ggn, k, n_candidates=n_candidates, scores=-s)


def _greedy_reference_ascending(
    omega: Any,
    scores: Any,
    k: int,
    *,
    n_candidates: Any = None,
    original: Callable = selection.greedy_laplace_reference,
):
    """The literal Alg. 2 under the same ascending screen."""
    return original(omega, -np.asarray(scores, dtype=np.float64), k, n_candidates=n_candidates)


def _count_without_vectors(model: Any) -> int:
    """The parameter count without biases and BatchNorm scales/shifts (matrices only)."""
    return sum(int(t.numel()) for t in model.parameters() if t.requires_grad and t.dim() >= 2)


def _neural_linear_penultimate(layout: Any) -> np.ndarray:
    """NeuralLinear as the penultimate layer (weights and bias) instead of the last."""
    sizes = np.asarray(layout)
    end = int(sizes.sum() - sizes[-1])
    return np.arange(end - int(sizes[-2]), end, dtype=np.int64)


IPV_MARGINAL_READING = Mutant(
    "ipv-marginal-reading",
    "IPV(S) read with the marginal [(Λ + cV)⁻¹]_SS of the full posterior instead of the "
    "sub-network's (Λ + cV)_SS⁻¹",
    {theory_theorems.ipv_prefixes: _marginal_prefixes},
)


def _dominant_at_twice_eps(Lam: Any, eps: float, _true=classes.is_diagonally_dominant) -> bool:
    """ε-diagonal dominance read twice as laxly: Σ_{j≠i} |Λ_ij| < 2ε Λ_ii."""
    return _true(Lam, min(2.0 * float(eps), 0.999))


DOMINANCE_TWICE_AS_LAX = Mutant(
    "dominance-premise-twice-as-lax",
    "Theorem 3's ε-dominance premise tested with 2ε (a matrix outside it counts as inside)",
    {(theory_theorems, "is_diagonally_dominant"): _dominant_at_twice_eps},
    expect="ERROR",
)
IPV_POSTERIOR_VARIANCE = Mutant(
    "ipv-posterior-variance",
    "IPV(S) without its gradients: the posterior variance c·tr((Λ + cV)_SS⁻¹) of the "
    "parameters instead of the predictive variance",
    {
        theory_theorems.ipv_prefixes: _posterior_prefixes,
        (exhaustive, "_batched_ipv"): _posterior_batched,
    },
)


def _cpi_without_off_diagonals(Lam: object, *, rtol: float = 1e-10, atol=None):
    """is_cpi that reads b as the mean off-diagonal without checking that all are equal."""
    L = np.asarray(Lam, dtype=float)
    p = L.shape[0]
    off = L[~np.eye(p, dtype=bool)]
    b = float(off.mean()) if off.size else 0.0
    a = max(0.0, -p * b)
    d = np.diag(L) - a - b
    return None if np.any(d <= 0) else classes.CPIDecomposition(d, a, b)


CPI_WITHOUT_OFF_DIAGONALS = Mutant(
    "cpi-without-off-diagonals",
    "the C_PI premise test without its check that every off-diagonal entry is equal (caught "
    "by the near-miss twins: ERROR)",
    {(theory_theorems, "is_cpi"): _cpi_without_off_diagonals},
    expect="ERROR",
)
GREEDY_TOP_K_DIAGONAL = Mutant(
    "greedy-top-k-diagonal",
    "Greedy-Laplace replaced by the k largest diagonal entries of Ω (our implementation "
    "wrong: must be an ERROR, not a verdict on the paper)",
    {selection.greedy_laplace: _greedy_top_k_diagonal},
    expect="ERROR",
)
GREEDY_WITHOUT_SCHUR = Mutant(
    "greedy-without-schur",
    "Greedy-Laplace without the Schur-complement updates of Alg. 2 step 3 (our "
    "implementation wrong: must be an ERROR)",
    {selection.greedy_laplace: _greedy_without_schur},
    expect="ERROR",
)
PROPOSED_ASCENDING = Mutant(
    "proposed-ascending",
    "Gradient- and Greedy-Laplace screen by the smallest scores (Alg. 1 read ascending, "
    "Subnet-Diagonal's rule), in the fast and the literal Greedy-Laplace alike",
    {
        selection.gradient_laplace: _gradient_ascending,
        selection.greedy_laplace: _greedy_ascending,
        selection.greedy_laplace_reference: _greedy_reference_ascending,
    },
    # the selection comes after training, and the kernel audit never selects
    reuses=(fitted_replications, first_audit),
)


def _halved(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def wrong(*args: Any, **kwargs: Any) -> Any:
        return 0.5 * kernel(*args, **kwargs)

    return wrong


def _scores_without_noise(self: GGN, _true=GGN.scores) -> Any:
    """Gradient-Laplace scores colsum(J_w²)/N: σ0² not multiplied back (regression)."""
    return _true(self) / self.noise_var


SHARED_VARIANCES_HALVED = Mutant(
    "shared-variances-halved",
    "the full and every sub-network predictive variance halved alike (every method shares "
    "the error, so no ordering moves: must be an ERROR of the kernel audit)",
    {
        predictive.predictive_variance: _halved(predictive.predictive_variance),
        predictive.subnetwork_variance: _halved(predictive.subnetwork_variance),
        predictive.subnetwork_variance_path: _halved(predictive.subnetwork_variance_path),
    },
    expect="ERROR",
    # the variances come after training; the audit's dense oracle never calls them
    reuses=(fitted_replications, oracle_reference),
)
SCORES_WITHOUT_NOISE = Mutant(
    "scores-without-noise-variance",
    "Gradient-Laplace scores colsum(J_w²)/N with σ0² left out (regression): every score "
    "scaled alike, the ranking unchanged (must be an ERROR of the kernel audit)",
    {(GGN, "scores"): _scores_without_noise},
    expect="ERROR",
    # the scores come after training; the audit's dense oracle computes its own
    reuses=(fitted_replications, oracle_reference),
)
COUNT_WITHOUT_VECTORS = Mutant(
    "count-without-biases",
    "parameters counted without biases and BatchNorm scales/shifts",
    {models.count_parameters: _count_without_vectors},
)
NEURAL_LINEAR_PENULTIMATE = Mutant(
    "neural-linear-penultimate",
    "NeuralLinear as the penultimate layer instead of the last",
    {selection.neural_linear: _neural_linear_penultimate},
)
