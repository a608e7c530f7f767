"""The dtype-aware tolerance rule of the conformance suite, fixed before any target ran.

A target computes in the dtype of the model it is given (float32 or float64); the oracle
computes in float64 from the same parameters. A correct target then differs from the oracle
by its own rounding errors, which a first-order perturbation bound of a backward-stable
evaluation in that dtype covers. With u = eps(dtype)/2 the unit roundoff and

    γ = (N′ + k + 10) · u

(N′ rows of the weighted Jacobian — N, or N·C for C classes — and k Laplace parameters: the
longest sums and the Cholesky size of the computation), every predictive variance
v = gᵀΩ⁻¹g (w = Ω⁻¹g, Ω and g restricted to the subset) must satisfy

    |v_target − v_oracle| ≤ 4γ · (‖Ω‖₂ ‖w‖² + 2 ‖g‖ ‖w‖ + gᵀV⁻¹g).

The first term is the effect of a relative perturbation γ of Ω (δv = −wᵀδΩw; note
‖Ω‖₂‖w‖² ≥ v, so it is at least a relative error γ·v and grows with the conditioning of Ω),
the second that of a relative perturbation γ of the Jacobian row g, the third that of an
evaluation by Woodbury, which subtracts from the prior variance gᵀV⁻¹g; the factor 4
absorbs the constants of the bounds.

The same γ serves the other quantities:

- masks: a rule's criterion values (scores, diag(Ω), |θ̂|, diag(Ω⁻¹)) are compared at
  4γ·max|criterion|, so only exact ties (up to roundoff) may be broken differently;
- the log marginal likelihood: 4γ·(|log p(y|θ̂)| + |log p(θ̂)| + k·κ(Ω) + ½Σ|log λ_i(Ω)|),
  the perturbation of each term (δ log det Ω = tr(Ω⁻¹δΩ) ≤ k·κ(Ω)·γ);
- low-rank posteriors: the variance rule with Ω_r = U_r diag(λ_r) U_rᵀ + V in place of Ω,
  plus 4√u·(λ_1²/δ_r)·‖w‖² for eigenpairs computed iteratively to a relative residual √u
  (Davis–Kahan: a residual ρ turns the top-r subspace by ρ/δ_r, δ_r = λ_r − λ_{r+1});
- diagonal Laplace, v = Σ_i g_i²/Ω_ii: each Ω_ii is a sum of N′ terms J_n,iᵀ H_n J_n,i plus
  V_i, evaluated (however H_n is factorised) to within γ·D_i with
  D_i = Σ_n ‖|H_n|‖₂ ‖J_n,i‖² + V_i (= Ω_ii for one output); δv = −Σ_i g_i² δΩ_ii/Ω_ii²
  and a relative error γ in g gives 2γv, so τ = 4γ·(Σ_i g_i² D_i/Ω_ii² + 2v);
- KFAC Laplace: the variance rule with the KFAC precision P in place of Ω (its Kronecker
  factors are sums of N terms and their eigendecompositions are backward stable, so P is
  formed to a relative error γ, and the exact prior form λ_G,i λ_A,j + α subtracts nothing);
- the output covariance Σ_kl = g_kᵀΩ⁻¹g_l of C logits at one test point (w_k = Ω⁻¹g_k):
  4γ·(‖Ω‖₂‖w_k‖‖w_l‖ + ‖g_k‖‖w_l‖ + ‖g_l‖‖w_k‖ + |g_k|ᵀV⁻¹|g_l|), the same three effects
  for a bilinear form (the variance rule on the diagonal);
- the logits' mean f̂(x*): a forward pass in the dtype is backward stable, the computed
  output being the network's at weights perturbed by at most γ relatively (Higham §3.5 for
  each matrix product; the rounding of an activation is a relative perturbation of the next
  layer's weights), so |δf_k| ≤ 4γ·|g_k|ᵀ|θ̂| to first order;
- class probabilities p(μ, Σ) by a closed-form link (probit, Laplace bridge): the first-order
  propagation Σ_k |∂p/∂μ_k| τ_μ,k + Σ_kl |∂p/∂Σ_kl| τ_Σ,kl of the two rules above (the
  derivatives by central differences on the oracle) plus 4(C + 10)u for evaluating the link;
- Monte Carlo class probabilities: the rounding term with the bounds |∂E[p_j]/∂μ_k| ≤ ¼ and
  |∂E[p_j]/∂Σ_kl| ≤ ¼ (Price's theorem, ∂E[p]/∂Σ_kl = ½E[∂²p/∂f_k∂f_l]; the first
  derivatives of σ and softmax, p_j(δ_jk − p_k), are at most ¼ in magnitude and the second,
  p_j[(δ_jk − p_k)(δ_jl − p_l) − p_k(δ_kl − p_l)], at most ½), plus the sampling
  error of n draws: Bernstein's inequality for the mean of n draws of a variable in [0, 1] of
  variance s², P(|p̂ − p| ≥ t) ≤ 2 exp(−n t²/(2s² + 2t/3)), at level δ/E per entry (E
  entries, Bonferroni), i.e. t = (ℓ/3 + √(ℓ²/9 + 2ns²ℓ))/n with ℓ = log(2E/δ);
- posterior samples are tested statistically (:mod:`.catalog.sampling`,
  :mod:`.catalog.calibration`), not by roundoff.

Every rule reads u through :func:`unit_roundoff`; inside :func:`judged_at` it reads the unit
roundoff of another dtype, so that a float64 case can be judged again as if it were float32
(:mod:`laplace_lab.conformance.diagnosis`: a failure that passes the float32 rule is an error
of float32 size).

References
----------
.. [1] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM (2002),
   §3.1 (γ_n = n·u for sums), §3.5 (matrix products) and Thm. 10.3 (Cholesky backward
   error).
.. [2] S. Boucheron, G. Lugosi, P. Massart, "Concentration Inequalities", Oxford University
   Press (2013), Thm. 2.10 (Bernstein's inequality).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from laplace_lab._checks import dtype_eps

__all__ = [
    "covariance_tolerance",
    "criterion_tolerance",
    "diagonal_tolerance",
    "gamma",
    "judged_at",
    "lml_tolerance",
    "low_rank_tolerance",
    "mean_tolerance",
    "monte_carlo_bound",
    "unit_roundoff",
    "variance_tolerance",
]

#: The constant of every bound of the rule (module docstring).
SAFETY = 4.0


#: The dtype whose unit roundoff every rule uses instead of the case's (None: the case's).
_JUDGED_AT: ContextVar[Any] = ContextVar("judged_at", default=None)


def unit_roundoff(dtype: Any) -> float:
    """u = eps(dtype)/2 for a NumPy or torch floating dtype (inside :func:`judged_at`, the
    u of the dtype given there)."""
    override = _JUDGED_AT.get()
    return 0.5 * dtype_eps(dtype if override is None else override)


@contextmanager
def judged_at(dtype: Any) -> Iterator[None]:
    """Evaluate every rule of this module at the unit roundoff of ``dtype``, whatever dtype
    the case passes (the statistical terms are unchanged)."""
    token = _JUDGED_AT.set(dtype)
    try:
        yield
    finally:
        _JUDGED_AT.reset(token)


def gamma(dtype: Any, n_rows: int, k: int) -> float:
    """γ = (N′ + k + 10)·u: the relative error of sums of N′ terms and a size-k Cholesky."""
    return (int(n_rows) + int(k) + 10) * unit_roundoff(dtype)


def _solve_terms(
    omega: np.ndarray, G: np.ndarray, prior_precision: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(‖w‖², ‖g‖‖w‖, gᵀV⁻¹g) for each row g of G with w = Ω⁻¹g (float64)."""
    W = np.linalg.solve(omega, G.T).T
    w2 = np.sum(W * W, axis=1)
    gw = np.linalg.norm(G, axis=1) * np.sqrt(w2)
    prior_var = np.sum(G * G / prior_precision, axis=1)
    return w2, gw, prior_var


def variance_tolerance(
    omega: np.ndarray, G: np.ndarray, prior_precision: np.ndarray, *, dtype: Any, n_rows: int
) -> np.ndarray:
    """τ for the variances gᵀΩ⁻¹g of the rows g of ``G`` (module docstring).

    Parameters
    ----------
    omega : (k, k) float64 array
        The oracle's precision (restricted to the subset).
    G : (R, k) float64 array
        Jacobian rows (restricted to the subset).
    prior_precision : (k,) float64 array
        V on the subset.
    dtype : dtype
        The dtype the target computes in (the model's).
    n_rows : int
        N′, the rows of the weighted Jacobian.
    """
    w2, gw, prior_var = _solve_terms(omega, G, prior_precision)
    norm = float(np.linalg.norm(omega, 2))
    g = gamma(dtype, n_rows, omega.shape[0])
    return SAFETY * g * (norm * w2 + 2.0 * gw + prior_var)


def low_rank_tolerance(
    omega_r: np.ndarray,
    G: np.ndarray,
    prior_precision: np.ndarray,
    eigenvalues: np.ndarray,
    rank: int,
    *,
    dtype: Any,
    n_rows: int,
) -> np.ndarray:
    """τ for low-rank variances: :func:`variance_tolerance` on Ω_r plus the eigensolver term.

    ``eigenvalues`` are those of the GGN part in decreasing order; δ_r = λ_r − λ_{r+1}.
    """
    base = variance_tolerance(omega_r, G, prior_precision, dtype=dtype, n_rows=n_rows)
    lam = np.asarray(eigenvalues, dtype=np.float64)
    gap = lam[rank - 1] - (lam[rank] if rank < lam.size else 0.0)
    w2, _, _ = _solve_terms(omega_r, G, prior_precision)
    eig_term = np.sqrt(unit_roundoff(dtype)) * lam[0] ** 2 / gap * w2
    return base + SAFETY * eig_term


def criterion_tolerance(values: np.ndarray, *, dtype: Any, n_rows: int, k: int) -> float:
    """4γ·max|criterion|: criterion values closer than this are ties."""
    return SAFETY * gamma(dtype, n_rows, k) * float(np.max(np.abs(values)))


def lml_tolerance(
    log_likelihood: float,
    log_prior: float,
    omega: np.ndarray,
    *,
    dtype: Any,
    n_rows: int,
) -> float:
    """τ for the Laplace log marginal likelihood (module docstring)."""
    lam = np.linalg.eigvalsh(omega)
    k = omega.shape[0]
    cond = float(lam[-1] / lam[0])
    terms = (
        abs(log_likelihood) + abs(log_prior) + k * cond + 0.5 * float(np.sum(np.abs(np.log(lam))))
    )
    return SAFETY * gamma(dtype, n_rows, k) * terms


def diagonal_tolerance(
    omega_diag: np.ndarray, abs_diag: np.ndarray, G: np.ndarray, *, dtype: Any, n_rows: int
) -> np.ndarray:
    """τ for the diagonal-Laplace variances Σ_i g_i²/Ω_ii of the rows g of ``G``.

    Parameters
    ----------
    omega_diag : (p,) float64 array
        diag(Ω) of the oracle.
    abs_diag : (p,) float64 array
        D_i = Σ_n ‖|H_n|‖₂ ‖J_n,i‖² + V_i, the magnitude of the terms summed into Ω_ii
        (module docstring).
    G : (R, p) float64 array
        Jacobian rows.
    dtype : dtype
        The dtype the target computes in.
    n_rows : int
        N′, the rows of the weighted Jacobian.
    """
    g2 = G * G
    v = g2 @ (1.0 / omega_diag)
    perturbation = g2 @ (abs_diag / omega_diag**2)
    return SAFETY * gamma(dtype, n_rows, omega_diag.size) * (perturbation + 2.0 * v)


def covariance_tolerance(
    omega: np.ndarray, G: np.ndarray, prior_precision: np.ndarray, *, dtype: Any, n_rows: int
) -> np.ndarray:
    """τ_kl for the output covariances g_kᵀΩ⁻¹g_l of the rows g_k of ``G`` (C, p), (C, C).

    On the diagonal it is :func:`variance_tolerance`; off it, the same bound for a bilinear
    form (module docstring).
    """
    W = np.linalg.solve(omega, G.T).T
    w = np.linalg.norm(W, axis=1)
    g = np.linalg.norm(G, axis=1)
    absG = np.abs(G)
    prior = (absG / prior_precision) @ absG.T
    norm = float(np.linalg.norm(omega, 2))
    terms = norm * np.outer(w, w) + np.outer(g, w) + np.outer(w, g) + prior
    return SAFETY * gamma(dtype, n_rows, omega.shape[0]) * terms


def mean_tolerance(G: np.ndarray, theta: np.ndarray, *, dtype: Any, n_rows: int) -> np.ndarray:
    """τ_μ = 4γ·|g_k|ᵀ|θ̂| for the outputs f_k(x*) of a forward pass, for the rows of ``G``."""
    return SAFETY * gamma(dtype, n_rows, theta.size) * (np.abs(G) @ np.abs(theta))


def monte_carlo_bound(variance: np.ndarray, n_samples: int, level: float) -> np.ndarray:
    """Bernstein's bound t on |p̂ − p| for means of ``n_samples`` draws in [0, 1] with the
    given per-draw ``variance``, each exceeded with probability ≤ ``level``/E (E entries)."""
    var = np.asarray(variance, dtype=np.float64)
    ell = float(np.log(2.0 * var.size / level))
    n = float(n_samples)
    return (ell / 3.0 + np.sqrt(ell * ell / 9.0 + 2.0 * n * var * ell)) / n
