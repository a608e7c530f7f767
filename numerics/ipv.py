"""IPV, its prefix path and the discrepancy on any backend; empirical PV(S) from a GGN.

S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026), §4 eq. (8), App. A.2 eq. (18)
(docs/mathematics.md, "Idealized predictive variance"):

    IPV(S) = (σ0²/N) · (k − c · tr((Λ_SS + cV_SS)⁻¹ V_SS)),   c = σ0²/N,

and for every prefix of an order from one Cholesky factor R of Λ_oo + cV_oo:
tr(A_k⁻¹Λ_k) = Σ_{i≤k} (R⁻¹Λ_ooR⁻ᵀ)_ii, each term in the form that keeps its digits. These
agree with :mod:`laplace_lab.theory.ipv` (the float64 NumPy oracle) and run on NumPy, CuPy,
torch or any array-API namespace.

From a GGN, the empirical Λ̂ = (σ0²/N) J_wᵀJ_w (regression: J_w = J/σ0, so Λ̂ = JᵀJ/N;
classification: Λ̂^C = Σ p(1−p) g gᵀ/N with σ0² = 1) gives Λ̂_SS + cV_SS = c Ω_SS, hence

    IPV̂(S) = (σ0²/N) · (k − tr(Ω_SS⁻¹ V_S)) = mean over the training x of PV(S)(x),

the empirical counterpart of IPV (§4 eqs. (6)–(7) of the paper; docs/mathematics.md,
"Empirical counterpart"). The full IPV̂ uses Woodbury when N' < p (:func:`ggn_ipv`).
"""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

from laplace_lab._checks import check_psd_spectrum, check_symmetry, positive_float, subset
from laplace_lab.numerics.backend import (
    as_float,
    cholesky,
    eigh,
    gram_blocks,
    namespace,
    solve_triangular,
    to_numpy,
)
from laplace_lab.numerics.ggn import GGN, prior_vector
from laplace_lab.numerics.predictive import (
    predictive_variance,
    subnetwork_variance,
    woodbury_column_squares,
)

__all__ = [
    "discrepancy",
    "empirical_pv",
    "ggn_discrepancy",
    "ggn_ipv",
    "ggn_ipv_path",
    "ipv",
    "ipv_path",
]

Array = Any


def _prefix_terms(G: Array, v: Array) -> Array:
    """t_i = (R⁻¹GR⁻ᵀ)_ii ∈ [0, 1], R = chol(G + diag(v)) (lower), for every i at once.

    The prefix sums of t are tr(A_k⁻¹G_k) for every prefix k, because
    (R⁻¹)_{1:k,1:k} = (R_{1:k,1:k})⁻¹ (docs/mathematics.md, "IPV along nested prefixes").
    Since R⁻¹AR⁻ᵀ = I, t_i = 1 − Σ_j (R⁻¹)_ij² v_j; that complement form loses every digit
    when G ≪ V (t_i ≈ 0), so terms below ½ take the direct form Σ_j (R⁻¹G)_ij (R⁻¹)_ij
    (docs/numerical-hazards.md, "IPV cancellation"). Rounding outside [0, 1] is clipped.
    """
    xp = namespace(G)
    n = G.shape[0]
    dev = array_api_compat.device(G)
    eye = xp.eye(n, dtype=G.dtype, device=dev)
    try:
        R = cholesky(G + eye * v)
    except Exception as err:  # backends raise their own LinAlgError types
        raise ValueError(
            "Lam + c·V is not positive definite: Lam must be positive semi-definite"
        ) from err
    if not bool(xp.all(xp.isfinite(R))):
        raise ValueError("Lam + c·V is not positive definite: Lam must be positive semi-definite")
    Rinv = solve_triangular(R, eye)
    t = 1.0 - (Rinv * Rinv) @ v
    small = t < 0.5
    if bool(xp.any(small)):
        t = xp.where(small, xp.sum((Rinv @ G) * Rinv, axis=1), t)
    return xp.clip(t, 0.0, 1.0)


def _lam_setup(
    Lam: Any, n: float, noise_var: float, prior_precision: Any
) -> tuple[Array, float, Array]:
    L = as_float(Lam, "Lam")
    xp = namespace(L)
    if L.ndim != 2 or L.shape[0] != L.shape[1] or L.shape[0] == 0:
        raise ValueError(f"Lam must be a non-empty square matrix; got shape {tuple(L.shape)}")
    scale = float(xp.max(xp.abs(L)))
    check_symmetry(float(xp.max(xp.abs(L - L.T))), max(scale, 1e-300), L.dtype)
    w = np.asarray(to_numpy(eigh(L)[0]), dtype=np.float64)  # PSD, as theory.ipv requires
    check_psd_spectrum(float(w[0]), float(w[-1]), L.shape[0], L.dtype)
    c = positive_float(noise_var, "noise_var") / positive_float(n, "n")
    return L, c, prior_vector(prior_precision, L.shape[0], L)


def _ipv_prefixes(L: Array, o: Array, c: float, v: Array) -> Array:
    xp = namespace(L)
    Loo = xp.take(xp.take(L, o, axis=0), o, axis=1)
    return c * xp.cumulative_sum(_prefix_terms(Loo, c * xp.take(v, o)))


def ipv_path(
    Lam: Any,
    order: Any,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: Any = 1.0,
) -> Array:
    """IPV(order[:k]) for k = 1..len(order) from one Cholesky factor (eq. 18 of [1]_).

    Backend version of :func:`laplace_lab.theory.ipv_path`; returns an array of Lam's namespace.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 eq. (8), App. A.2 eq. (18).
    """
    L, c, v = _lam_setup(Lam, n, noise_var, prior_precision)
    xp = namespace(L)
    o = xp.asarray(
        subset(order, L.shape[0], "order", nonempty=True), device=array_api_compat.device(L)
    )
    return _ipv_prefixes(L, o, c, v)


def ipv(
    Lam: Any, S: Any, *, n: float, noise_var: float = 1.0, prior_precision: Any = 1.0
) -> float:
    """IPV(S) = (σ0²/N) tr((Λ_SS + cV_SS)⁻¹ Λ_SS), c = σ0²/N, on any array backend.

    Eq. 8 of [1]_; the backend form of :func:`laplace_lab.theory.ipv`.

    An empty S gives 0.0.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 eq. (8).
    """
    L, c, v = _lam_setup(Lam, n, noise_var, prior_precision)
    if np.size(S) == 0 and not hasattr(S, "__dlpack__"):
        return 0.0
    xp = namespace(L)
    o = xp.asarray(subset(S, L.shape[0], "S", nonempty=True), device=array_api_compat.device(L))
    return float(_ipv_prefixes(L, o, c, v)[-1])


def discrepancy(
    Lam: Any, S: Any, *, n: float, noise_var: float = 1.0, prior_precision: Any = 1.0
) -> float:
    """Dis(S) = IPV_full − IPV(S) (§4; ≥ 0 by Theorem 1), on any array backend.

    The backend form of :func:`laplace_lab.theory.discrepancy`.
    """
    kw = {"n": n, "noise_var": noise_var, "prior_precision": prior_precision}
    p = int(Lam.shape[0]) if hasattr(Lam, "shape") else len(Lam)
    return ipv(Lam, np.arange(p), **kw) - ipv(Lam, S, **kw)


def _ggn_scale(ggn: GGN) -> float:
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    return ggn.noise_var / ggn.n_data


def ggn_ipv_path(ggn: GGN, order: Any) -> Array:
    """Empirical IPV̂(order[:k]) = (σ0²/N)(k − tr(Ω_kk⁻¹V_k)) for every prefix (module doc).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 eqs. (6)–(8).
    """
    scale = _ggn_scale(ggn)
    xp = ggn.xp
    dev = array_api_compat.device(ggn.Jw)
    o = xp.asarray(subset(order, ggn.p, "order", nonempty=True), device=dev)
    G = gram_blocks(xp.take(ggn.Jw, o, axis=1))  # J_wᵀJ_w on o, without V (module doc)
    return scale * xp.cumulative_sum(_prefix_terms(G, xp.take(ggn.prior_precision, o)))


def ggn_ipv(ggn: GGN, S: Any = None) -> float:
    """Empirical IPV̂(S) from a GGN (S = None: all p parameters).

    The full IPV̂ sums the terms 1 − v_i [Ω⁻¹]_ii = d_i ‖L⁻¹ J_w e_i‖² (D = V⁻¹,
    L Lᵀ = I + J_w D J_wᵀ, Woodbury) when N' < p: squares only, so no digit is lost when
    J_wᵀJ_w ≪ V; otherwise it is the last point of :func:`ggn_ipv_path`.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 eqs. (6)–(8).
    """
    scale = _ggn_scale(ggn)
    n, p = ggn.Jw.shape
    if S is not None or n >= p:
        return float(ggn_ipv_path(ggn, np.arange(p) if S is None else S)[-1])
    return scale * float(ggn.xp.sum(woodbury_column_squares(ggn) / ggn.prior_precision))


def ggn_discrepancy(ggn: GGN, S: Any) -> float:
    """Empirical Diŝ(S) = IPV̂_full − IPV̂(S) from a GGN."""
    return ggn_ipv(ggn) - ggn_ipv(ggn, S)


def empirical_pv(ggn: GGN, G_test: Any, S: Any = None) -> float:
    """Mean over test points of PV(S)(x*) = g_Sᵀ Ω_SS⁻¹ g_S (S = None: the full PV).

    With G_test = √σ0² · J_w (the training gradients J for regression, the ū-weighted
    gradients √(p(1−p)) g for binary classification) this equals :func:`ggn_ipv`.
    """
    pv = predictive_variance(ggn, G_test) if S is None else subnetwork_variance(ggn, G_test, S)
    return float(ggn.xp.mean(pv))
