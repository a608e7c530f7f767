"""The idealized predictive variance IPV(S) and the discrepancy Dis(S).

S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026), §4 eq. (8) and Appendix A.2 eq. (18):

    IPV(S) = (σ0²/N) · tr( (Λ_SS + c V_SS)⁻¹ Λ_SS ),   c = σ0²/N,

computed from one Cholesky factor R of A = Λ_SS + cV_SS (positive definite because V > 0)
as (σ0²/N) · Σ_i (R⁻¹Λ_SSR⁻ᵀ)_ii: a sum of non-negative terms, accurate relative to IPV
itself even when Λ ≪ cV, and — because row i of R⁻¹ only involves the first i indices —
its prefix sums are the IPVs of all prefixes (docs/mathematics.md, "IPV along nested
prefixes").
"""

from __future__ import annotations

import numpy as np

from laplace_lab._checks import subset
from laplace_lab.theory._ipv_terms import ipv_prefixes, setup

__all__ = ["discrepancy", "ipv", "ipv_classification", "ipv_full", "ipv_path"]


def ipv(
    Lam: object,
    S: object,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
) -> float:
    """Idealized predictive variance IPV(S) of a sub-network.

    IPV(S) = (σ0²/N) · tr((Λ_SS + (σ0²/N) V_SS)⁻¹ Λ_SS)   (eq. 8 of [1]_, trace form eq. 18).

    Parameters
    ----------
    Lam : (p, p) array_like
        Λ = E[ḡ ḡᵀ], the population second moment of the gradients; symmetric PSD.
    S : sequence of int
        The sub-network: distinct indices in [0, p). Empty S gives 0.0.
    n : float
        The number of training points N (> 0).
    noise_var : float
        The observation-noise variance σ0² (> 0).
    prior_precision : float or (p,) array_like
        V = diag(prior_precision), every entry > 0 (a scalar means V = cI).

    Returns
    -------
    float
        IPV(S) ≥ 0.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
       Approximations: New Results and Methods", arXiv:2605.09075 (2026), §4 eq. (8);
       trace form: Appendix A.2 eq. (18).

    Examples
    --------
    With a diagonal Λ, V = I, σ0² = 1 and N = 1, each index i of S adds λ_i / (λ_i + 1):

    >>> import numpy as np
    >>> from laplace_lab.theory import ipv
    >>> Lam = np.diag([3.0, 1.0])
    >>> round(ipv(Lam, [0], n=1), 6)  # 3 / (3 + 1)
    0.75
    >>> round(ipv(Lam, [0, 1], n=1), 6)  # 3/4 + 1/2
    1.25
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    idx = subset(S, L.shape[0])
    if idx.size == 0:
        return 0.0
    return float(ipv_prefixes(L, idx, scale, c, v)[-1])


def ipv_full(
    Lam: object, *, n: float, noise_var: float = 1.0, prior_precision: float | np.ndarray = 1.0
) -> float:
    """IPV_full = IPV({1, …, p}) (§4, after eq. 8 of [1]_); arguments as in :func:`ipv`.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
       Approximations: New Results and Methods", arXiv:2605.09075 (2026), §4.
    """
    p = np.shape(Lam)[0] if np.ndim(Lam) == 2 else 0
    return ipv(Lam, np.arange(p), n=n, noise_var=noise_var, prior_precision=prior_precision)


def discrepancy(
    Lam: object,
    S: object,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
) -> float:
    """Dis(S) = IPV_full − IPV(S) (§4; ≥ 0 by Theorem 1, so no absolute value is needed).

    Arguments as in :func:`ipv`. Returns a float ≥ 0 up to roundoff.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
       Approximations: New Results and Methods", arXiv:2605.09075 (2026), §4
       (definition of Dis(S) and Theorem 1).
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    idx = subset(S, L.shape[0])
    full = float(ipv_prefixes(L, np.arange(L.shape[0]), scale, c, v)[-1])
    part = float(ipv_prefixes(L, idx, scale, c, v)[-1]) if idx.size else 0.0
    return full - part


def ipv_path(
    Lam: object,
    order: object,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
) -> np.ndarray:
    """IPV of every prefix order[:1], order[:2], …, from one Cholesky factor.

    Entry k−1 of the result is IPV(order[:k]): the trace form eq. (18) of [1]_ evaluated
    with (R⁻¹)_{1:k,1:k} = (R_{1:k,1:k})⁻¹ for the Cholesky factor R of Λ_oo + cV_oo, so all
    prefixes share one factorisation (docs/mathematics.md, "IPV along nested prefixes").
    Cost O(m³/3) for all m prefixes instead of O(m⁴/12) for separate calls.

    Returns
    -------
    (len(order),) ndarray
        Non-decreasing by Theorem 1 (up to roundoff).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
       Approximations: New Results and Methods", arXiv:2605.09075 (2026), §4
       eq. (8), Appendix A.2 eq. (18).
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    idx = subset(order, L.shape[0], "order")
    if idx.size == 0:
        return np.zeros(0)
    return ipv_prefixes(L, idx, scale, c, v)


def ipv_classification(
    LamC: object, S: object, *, n: float, prior_precision: float | np.ndarray = 1.0
) -> float:
    """Classification IPV_C(S) (Appendix A.3 of [1]_).

    IPV_C(S) = (1/N) · E[ū ḡ_Sᵀ (Λ^C_SS + V_SS/N)⁻¹ ḡ_S] = (1/N) · tr((Λ^C_SS + V_SS/N)⁻¹ Λ^C_SS),
    with Λ^C = E[ū(x) ḡ(x) ḡ(x)ᵀ] and ū the Bernoulli variance: the regression IPV with
    σ0² = 1 and Λ replaced by Λ^C.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
       Approximations: New Results and Methods", arXiv:2605.09075 (2026),
       Appendix A.3.
    """
    return ipv(LamC, S, n=n, noise_var=1.0, prior_precision=prior_precision)
