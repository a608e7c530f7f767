"""Executable forms of Theorems 1–3 of Raha, Khare & Patra (§4, Appendix A).

Each check returns a frozen :class:`Check`: ``holds`` says whether the theorem's *conclusion*
is true for the given Λ (up to a roundoff tolerance derived from the dtype's eps and the
conditioning), ``premises`` whether its hypotheses are met, ``margin`` the slack of the
conclusion (≥ 0 when it holds exactly). A counterexample to a theorem is a Check with
``refutes`` true: premises met, conclusion false beyond roundoff.

Reference: S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
Approximations: New Results and Methods", arXiv:2605.09075 (2026), §4 and Appendix A.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular

from laplace_lab._checks import check_nested, isotropic_prior, subset, subset_size
from laplace_lab.theory._ipv_terms import ipv_prefixes, ipv_terms, setup
from laplace_lab.theory.classes import is_cpi, is_diagonally_dominant
from laplace_lab.theory.exhaustive import exhaustive_extremes

__all__ = [
    "Check",
    "Theorem1Decomposition",
    "check_monotonicity",
    "check_theorem2",
    "check_theorem3",
    "roundoff_tolerance",
    "theorem1_decomposition",
]


@dataclass(frozen=True)
class Check:
    """The outcome of checking one theorem on one Λ.

    Attributes
    ----------
    holds : bool
        The conclusion is true up to the roundoff tolerance.
    margin : float
        The conclusion's slack in IPV units (≥ −tolerance when it holds).
    details : dict
        The quantities compared, the tolerance and, for composite theorems, sub-checks.
    premises : bool
        The theorem's hypotheses are met by the input.
    """

    holds: bool
    margin: float
    details: dict[str, Any] = field(default_factory=dict)
    premises: bool = True

    @property
    def refutes(self) -> bool:
        """Premises met but conclusion false: a counterexample to the theorem."""
        return self.premises and not self.holds


def roundoff_tolerance(
    Lam: np.ndarray, S: np.ndarray, scale: float, c: float, v: np.ndarray
) -> float:
    """A bound on the rounding error of IPV(S) as computed by :func:`laplace_lab.theory.ipv`, IPV
    units.

    Two parts: (i) the Cholesky factor of A = Λ_SS + cV_SS is exact for some A + δA with
    ‖δA‖₂ ≤ γ‖A‖₂, γ = 10(k+1)·eps, which moves IPV = (σ0²/N)(k − c·tr(A⁻¹V_S)) by at
    most (σ0²/N)·γ‖A‖₂·c·tr(A⁻¹V_SA⁻¹) to first order; (ii) the rounding of the k terms,
    each bounded by the rule of :func:`laplace_lab.theory._ipv_terms.ipv_terms`. The test suite
    checks the bound against 60-digit references.
    """
    if S.size == 0:
        return 0.0
    _, bounds, Rinv = ipv_terms(Lam, S, c, v)
    gamma = 10 * (S.size + 1) * np.finfo(float).eps
    Ainv = Rinv.T @ Rinv
    norm_A = float(np.linalg.norm(Lam[np.ix_(S, S)], 2) + c * v[S].max())
    first_order = gamma * norm_A * c * float(np.einsum("ij,j,ji->", Ainv, v[S], Ainv))
    return float(scale * (first_order + bounds.sum()))


def _check(margin: float, tol: float, details: dict, premises: bool = True) -> Check:
    """A Check whose conclusion holds when margin ≥ −tol; a non-finite margin is an error."""
    if not np.isfinite(margin):
        raise FloatingPointError(f"the IPV margin is not finite ({margin}); check the input")
    return Check(margin >= -tol, margin, {**details, "tolerance": tol}, premises)


def check_monotonicity(
    Lam: object,
    S: object,
    S_sup: object,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
) -> Check:
    """Theorem 1: S ⊆ S′ ⇒ IPV(S) ≤ IPV(S′) (§4, proof in Appendix A.2).

    With ``noise_var=1`` and Λ^C in place of Λ this is the classification monotonicity
    of Appendix A.3. ``margin`` = IPV(S′) − IPV(S).

    Parameters
    ----------
    Lam : (p, p) array_like
        Λ, symmetric PSD.
    n, noise_var, prior_precision
        N, σ0² and V as in :func:`laplace_lab.theory.ipv`.
    S, S_sup : sequence of int
        Nested subsets, S ⊆ S′.

    Returns
    -------
    Check
        ``holds`` when IPV(S) ≤ IPV(S′) up to the summed roundoff bounds of both.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 Theorem 1, proof in Appendix A.2;
       classification: Appendix A.3.
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    p = L.shape[0]
    s, s_sup = subset(S, p, "S"), subset(S_sup, p, "S_sup")
    check_nested(s, s_sup)
    lo = float(ipv_prefixes(L, s, scale, c, v)[-1]) if s.size else 0.0
    hi = float(ipv_prefixes(L, s_sup, scale, c, v)[-1]) if s_sup.size else 0.0
    tol = roundoff_tolerance(L, s, scale, c, v) + roundoff_tolerance(L, s_sup, scale, c, v)
    return _check(hi - lo, tol, {"ipv_S": lo, "ipv_S_sup": hi})


def _diagonal_order(L: np.ndarray) -> np.ndarray:
    """Indices m_1, m_2, … of the diagonal, largest entry first (ties: lowest index)."""
    return np.argsort(-np.diag(L), kind="stable")


def check_theorem2(
    Lam: object,
    k: int,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float = 1.0,
) -> Check:
    """Theorem 2, population statement (Appendix A.4, eqs. 19–20).

    For Λ ∈ C_PI and V = cI: S* (the k largest diagonal entries of Λ) attains
    max_{|S|=k} IPV(S), and S̃* (the k smallest) attains the minimum. Compared by value
    with the exhaustive search, so any tie-broken choice of S* counts as optimal.
    ``margin``: IPV(S*) − max IPV or min IPV − IPV(S̃*), whichever is worse relative to its
    roundoff bound (0 when the theorem holds).

    Parameters
    ----------
    Lam : (p, p) array_like
        Λ, symmetric PSD.
    n, noise_var, prior_precision
        N, σ0² and V as in :func:`laplace_lab.theory.ipv`. ``prior_precision`` must be isotropic.
    k : int
        The subset size, 1 ≤ k ≤ p.

    Returns
    -------
    Check
        ``premises`` is Λ ∈ C_PI (:func:`laplace_lab.theory.is_cpi`); ``details`` holds S*, S̃*,
        their IPVs and the exhaustive argmax/argmin.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 Theorem 2, proof in Appendix A.4.
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    p = L.shape[0]
    isotropic_prior(prior_precision, p)
    k = subset_size(k, p, "k", low=1)
    order = _diagonal_order(L)
    top, bottom = order[:k], order[::-1][:k]
    ipv_top = float(ipv_prefixes(L, top, scale, c, v)[-1])
    ipv_bottom = float(ipv_prefixes(L, bottom, scale, c, v)[-1])
    ext = exhaustive_extremes(L, k, n=n, noise_var=noise_var, prior_precision=prior_precision)
    margin_max, margin_min = ipv_top - ext.best_ipv, ext.worst_ipv - ipv_bottom
    tol_max = roundoff_tolerance(L, top, scale, c, v) + roundoff_tolerance(
        L, ext.best, scale, c, v
    )
    tol_min = roundoff_tolerance(L, bottom, scale, c, v) + roundoff_tolerance(
        L, ext.worst, scale, c, v
    )
    # One margin in units of its own tolerance decides; report the worse of the two.
    margin, tol = (
        (margin_max, tol_max)
        if margin_max / max(tol_max, 1e-300) <= margin_min / max(tol_min, 1e-300)
        else (margin_min, tol_min)
    )
    decomposition = is_cpi(L)
    details = {
        "S_star": top.tolist(),
        "S_tilde_star": bottom.tolist(),
        "ipv_S_star": ipv_top,
        "ipv_S_tilde_star": ipv_bottom,
        "max_ipv": ext.best_ipv,
        "argmax": ext.best.tolist(),
        "min_ipv": ext.worst_ipv,
        "argmin": ext.worst.tolist(),
        "in_C_PI": decomposition is not None,
    }
    return _check(margin, tol, details, premises=decomposition is not None)


def _ratio(num: float, den: float) -> float:
    """num/den for diagonal entries ≥ 0: +inf when only den is 0, 1 when both are."""
    if den > 0:
        return float(num / den)
    return float("inf") if num > 0 else 1.0


def check_theorem3(
    Lam: object,
    k: int,
    eps: float,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float = 1.0,
) -> Check:
    """Theorem 3, population statements (Appendix A.5), for ε-diagonally dominant Λ, V = cI.

    (a) If Λ_{m_k m_k} / Λ_{m_{p−k+1} m_{p−k+1}} > (1+ε)/(1−ε) then IPV(S*) ≥ IPV(S̃*).
    (b) If Λ_{m_k m_k} / Λ_{m_{k+1} m_{k+1}} > (1+ε)/(1−ε) then IPV(S*) ≥ IPV(S) for every
        |S| = k with S ∩ S* = ∅ (exhaustive over the complement of S*; vacuous if p < 2k).

    ``details["part_a"]`` and ``details["part_b"]`` are the two sub-checks, each with its
    own premises (dominance and its ratio condition). The overall check ``holds`` when every
    part whose premises are met holds (or, if none is met, when both conclusions hold).

    Parameters
    ----------
    Lam : (p, p) array_like
        Λ, symmetric PSD.
    n, noise_var, prior_precision
        N, σ0² and V as in :func:`laplace_lab.theory.ipv`. ``prior_precision`` must be isotropic.
    k : int
        The subset size, 1 ≤ k ≤ p.
    eps : float
        The dominance level ε in (0, 1).

    Returns
    -------
    Check

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 Theorem 3, proof in Appendix A.5 (which
       assumes V = cI).
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    p = L.shape[0]
    isotropic_prior(prior_precision, p)
    k = subset_size(k, p, "k", low=1)
    dominant = is_diagonally_dominant(L, eps)
    eps = float(eps)
    bound = (1 + eps) / (1 - eps)
    order = _diagonal_order(L)
    dsorted = np.diag(L)[order]
    top, bottom = order[:k], order[::-1][:k]
    ipv_top = float(ipv_prefixes(L, top, scale, c, v)[-1])
    tol_top = roundoff_tolerance(L, top, scale, c, v)

    ratio_a = _ratio(dsorted[k - 1], dsorted[p - k])
    ipv_bottom = float(ipv_prefixes(L, bottom, scale, c, v)[-1])
    part_a = _check(
        ipv_top - ipv_bottom,
        tol_top + roundoff_tolerance(L, bottom, scale, c, v),
        {"ratio": ratio_a, "bound": bound, "ipv_S_star": ipv_top, "ipv_S_tilde_star": ipv_bottom},
        premises=dominant and ratio_a > bound,
    )

    ratio_b = _ratio(dsorted[k - 1], dsorted[k]) if k < p else float("inf")
    if p - k >= k:
        ext = exhaustive_extremes(
            L, k, n=n, noise_var=noise_var, prior_precision=prior_precision, pool=order[k:]
        )
        part_b = _check(
            ipv_top - ext.best_ipv,
            tol_top + roundoff_tolerance(L, ext.best, scale, c, v),
            {
                "ratio": ratio_b,
                "bound": bound,
                "ipv_S_star": ipv_top,
                "max_disjoint_ipv": ext.best_ipv,
                "argmax_disjoint": ext.best.tolist(),
            },
            premises=dominant and ratio_b > bound,
        )
    else:
        part_b = Check(
            True,
            float("inf"),
            {"ratio": ratio_b, "bound": bound, "note": "no subset of size k is disjoint from S*"},
            premises=dominant and ratio_b > bound,
        )
    parts = [part for part in (part_a, part_b) if part.premises] or [part_a, part_b]
    details = {
        "dominant": dominant,
        "S_star": top.tolist(),
        "S_tilde_star": bottom.tolist(),
        "part_a": part_a,
        "part_b": part_b,
    }
    return Check(
        all(part.holds for part in parts),
        min(part.margin for part in parts),
        details,
        premises=part_a.premises or part_b.premises,
    )


class Theorem1Decomposition(NamedTuple):
    """IPV(S ∪ T) = ipv_S + cross_term + schur_term, both terms ≥ 0 (Appendix A.2).

    ``tolerance`` bounds the roundoff of the identity and of ``schur_term``'s sign: that of
    the two Cholesky-based IPVs plus that of C − BᵀA⁺B (O(eps·κ(A)·‖Λ‖) entries, κ over the
    kept range of A, weighted by F⁻¹ ⪯ (cV_TT)⁻¹):
    roundoff_tolerance + 100·|S∪T|²·eps·κ(A)·max|Λ|/min v.
    """

    ipv_S: float
    cross_term: float
    schur_term: float
    ipv_union: float
    tolerance: float


def _range_factor(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A = Z Zᵀ on its numerical range: (Z = QΛ^{1/2}, Λ^{-1/2}Qᵀ, λ_max / λ_min kept),
    eigenvalues below 10·p·eps·λ_max dropped."""
    w, Q = np.linalg.eigh(A)
    keep = w > max(w[-1], 0.0) * A.shape[0] * np.finfo(float).eps * 10
    root = np.sqrt(w[keep])
    kappa = float(w[-1] / w[keep][0]) if keep.any() else 1.0
    return Q[:, keep] * root, Q[:, keep].T / root[:, None], kappa


def theorem1_decomposition(
    Lam: object,
    S: object,
    T: object,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
) -> Theorem1Decomposition:
    """The proof identity of Theorem 1 (Appendix A.2 of [1]_), in IPV units.

    With A = Λ_SS, B = Λ_ST, C = Λ_TT, D = cV_SS, E = cV_TT, Ã = A + D, C̃ = C + E and
    F = C̃ − BᵀÃ⁻¹B:

        (N/σ0²) IPV(S ∪ T) = (N/σ0²) IPV(S) + tr(F⁻¹Bᵀ(Ã⁻¹AÃ⁻¹ − 2Ã⁻¹ + A⁻¹)B)
                             + tr(F⁻¹(C − BᵀA⁻¹B)).

    The paper assumes A invertible; for PSD Λ the columns of B lie in the range of A, so
    the identity and the non-negativity of both terms hold with the pseudo-inverse A⁺ in
    place of A⁻¹ (the cross-term matrix becomes A^{+1/2}(Γ − P)²A^{+1/2}, Γ = A^{1/2}Ã⁻¹A^{1/2},
    P the projector on range(A); C − BᵀA⁺B is a generalised Schur complement, PSD).

    Numerics: Ã⁻¹AÃ⁻¹ − 2Ã⁻¹ + A⁻¹ is never formed (it cancels catastrophically when
    σ0²/N is small); the cross term is evaluated as tr(F⁻¹Wᵀ(I − Γ)²W) with W = Λ_A^{-1/2}QᵀB
    and I − Γ = (I + ZᵀD⁻¹Z)⁻¹, A = ZZᵀ — non-negative by construction.

    Parameters
    ----------
    Lam : (p, p) array_like
        Λ, symmetric PSD.
    n, noise_var, prior_precision
        N, σ0² and V as in :func:`laplace_lab.theory.ipv`.
    S, T : sequence of int
        Disjoint subsets.

    Returns
    -------
    Theorem1Decomposition
        ``ipv_S``, ``cross_term``, ``schur_term``, ``ipv_union`` and ``tolerance``.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), Appendix A.2 (proof of Theorem 1).
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    p = L.shape[0]
    s, t = subset(S, p, "S"), subset(T, p, "T")
    overlap = np.intersect1d(s, t)
    if overlap.size:
        raise ValueError(f"T must be disjoint from S; both contain {overlap.tolist()}")
    A, B, C = L[np.ix_(s, s)], L[np.ix_(s, t)], L[np.ix_(t, t)]
    d_inv = 1.0 / (c * v[s])
    if s.size:
        Z, Z_pinv, kappa = _range_factor(A)
        W = Z_pinv @ B  # Λ^{-1/2}QᵀB: BᵀA⁺B = WᵀW
        # I − Γ = (I + ZᵀD⁻¹Z)⁻¹ on range(A) (push-through identity): no cancellation.
        I_minus_gamma = np.linalg.inv(np.eye(Z.shape[1]) + (Z.T * d_inv) @ Z)
        At = A + np.diag(c * v[s])
        F = C + np.diag(c * v[t]) - B.T @ np.linalg.solve(At, B)
    else:
        W, I_minus_gamma, kappa = np.zeros((0, t.size)), np.zeros((0, 0)), 1.0
        F = C + np.diag(c * v[t])
    if t.size:
        R = cholesky(0.5 * (F + F.T), lower=True)
        Y = solve_triangular(R, (I_minus_gamma @ W).T, lower=True)
        cross = float(np.sum(Y**2))  # tr(F⁻¹ Wᵀ(I − Γ)²W) ≥ 0 by construction
        schur = float(np.trace(cho_solve((R, True), C - W.T @ W)))
    else:
        cross = schur = 0.0
    ipv_s = float(ipv_prefixes(L, s, scale, c, v)[-1]) if s.size else 0.0
    union = np.concatenate([s, t])
    ipv_u = float(ipv_prefixes(L, union, scale, c, v)[-1]) if union.size else 0.0
    tol = roundoff_tolerance(L, union, scale, c, v)
    if t.size:
        tol += 100 * union.size**2 * np.finfo(float).eps * kappa * np.abs(L).max() / v[union].min()
    return Theorem1Decomposition(ipv_s, scale * cross, scale * schur, ipv_u, tol)
