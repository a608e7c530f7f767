"""The numerical core of IPV(S) shared by :mod:`.ipv`, :mod:`.theorems` and :mod:`.exhaustive`.

One Cholesky factor of A = Λ_oo + c·V_oo along an order o gives IPV of every prefix, with a
per-term rounding bound (docs/mathematics.md, "IPV along nested prefixes").
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from laplace_lab._checks import as_psd_matrix, positive_float, prior_precision_vector, scaled_prior

__all__ = ["inverse_factor", "ipv_prefixes", "ipv_terms", "setup"]


def setup(
    Lam: object, n: object, noise_var: object, prior_precision: object
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Validate the common arguments; return (Λ, σ0²/N, c, v)."""
    L = as_psd_matrix(Lam)
    n_ = positive_float(n, "n")
    s2 = positive_float(noise_var, "noise_var")
    v = prior_precision_vector(prior_precision, L.shape[0])
    scaled_prior(s2 / n_, v)
    return L, s2 / n_, s2 / n_, v


def inverse_factor(Lam: np.ndarray, S: np.ndarray, c: float, v: np.ndarray) -> np.ndarray:
    """R⁻¹ for the lower Cholesky factor R of A = Λ_SS + c·diag(v_S)."""
    A = Lam[np.ix_(S, S)] + np.diag(c * v[S])
    try:
        R = cholesky(A, lower=True, check_finite=False)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "Λ_SS + (noise_var/n)·V_SS is numerically singular: noise_var/n * prior_precision "
            f"(min {c * v[S].min():.3g}) is below the roundoff of Lam (max "
            f"{np.abs(Lam).max():.3g}); use a smaller n or a larger noise_var or prior_precision"
        ) from err
    return solve_triangular(R, np.eye(S.size), lower=True, check_finite=False)


def ipv_terms(
    Lam: np.ndarray, order: np.ndarray, c: float, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k terms whose prefix sums are tr(A_k⁻¹Λ_k), their rounding bounds, and R⁻¹.

    With A = Λ_oo + cV_oo = RRᵀ, term i is (R⁻¹ΛR⁻ᵀ)_ii = 1 − c·Σ_j (R⁻¹)_ij² v_j ∈ [0, 1]
    (since R⁻¹AR⁻ᵀ = I). Both forms involve only the first i indices, since
    (R⁻¹)_{1:k,1:k} = (R_{1:k,1:k})⁻¹. The *direct* form Σ_j (R⁻¹Λ)_ij (R⁻¹)_ij is accurate
    when Λ ≪ cV, the *complement* form when Λ ≫ cV; each term uses the form with the smaller
    rounding bound γ·(|R⁻¹||Λ||R⁻¹|ᵀ)_ii resp. γ·c·Σ_j (R⁻¹)_ij² v_j + 2·eps, γ = 10(k+1)·eps.
    """
    Rinv = inverse_factor(Lam, order, c, v)
    LamS = Lam[np.ix_(order, order)]
    gamma = 10 * (order.size + 1) * np.finfo(float).eps
    direct = np.einsum("ij,ij->i", Rinv @ LamS, Rinv)
    absRinv = np.abs(Rinv)
    direct_err = gamma * np.einsum("ij,ij->i", absRinv @ np.abs(LamS), absRinv)
    cq = c * ((Rinv**2) @ v[order])
    complement_err = gamma * cq + 2 * np.finfo(float).eps  # + rounding of 1 − cq
    use_direct = direct_err <= complement_err
    terms = np.where(use_direct, direct, 1.0 - cq)
    bounds = np.where(use_direct, direct_err, complement_err)
    return np.clip(terms, 0.0, 1.0), bounds, Rinv


def ipv_prefixes(Lam: np.ndarray, order: np.ndarray, scale: float, c: float, v: np.ndarray):
    """IPV of every prefix order[:k], k = 1..len(order) (prefix sums of one factor):
    (σ0²/N) times the prefix sums of :func:`ipv_terms`. Each term lies in [0, 1] (rounding
    outside is clipped, toward the truth), so the path is non-decreasing in floating point."""
    return scale * np.cumsum(ipv_terms(Lam, order, c, v)[0])
