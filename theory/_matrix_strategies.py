"""Strategies for the matrix classes of the theorems: PSD Λ, C_PI and ε-dominant matrices.

Public through :mod:`laplace_lab.theory.strategies`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from laplace_lab._checks import integer, positive_float, positive_int
from laplace_lab.theory._hypothesis import full_column_rank, hnp, integer_range, st

__all__ = ["DominantCase", "cpi_matrices", "dominant_matrices", "psd_matrices"]


def psd_matrices(
    *,
    min_p: int = 1,
    max_p: int = 6,
    min_rank: int = 1,
    max_rank: int | None = None,
    max_cond: float = 1.0,
    max_entry: int = 3,
) -> st.SearchStrategy[np.ndarray]:
    """Symmetric PSD matrices Λ = Σ_c s_c g_c g_cᵀ with integer columns g_c.

    G = [g_1 … g_r] is a p × r integer matrix of exact rank r, so rank(Λ) = r; every s_c is a
    power of ten in [1/max_cond, 1]. With ``max_cond=1`` (the default) Λ = G Gᵀ has integer
    entries; a larger ``max_cond`` spreads the spectrum (ill-conditioned Λ at 1e10).

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 1 ≤ min_p ≤ max_p.
    min_rank, max_rank : int
        The rank r (0 allows the zero matrix); max_rank None means p.
    max_cond : float
        ≥ 1: the largest ratio between the scales s_c of the rank-one terms.
    max_entry : int
        ≥ 1: the entries of G lie in [−max_entry, max_entry].

    Returns
    -------
    SearchStrategy of (p, p) float64 arrays

    Examples
    --------
    IPV(S) ≥ 0 for every PSD Λ (eq. 8 of [1]_):

    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv
    >>> from laplace_lab.theory.strategies import psd_matrices
    >>> @given(psd_matrices(max_p=4, max_cond=1e6))
    ... def test_ipv_is_nonnegative(Lam):
    ...     assert ipv(Lam, [0], n=10) >= 0
    >>> test_ipv_is_nonnegative()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §4, eq. (8).
    """
    lo_p, hi_p = integer_range(min_p, max_p, ("min_p", "max_p"), floor=1)
    lo_r = integer(min_rank, "min_rank", low=0, high=hi_p)
    hi_r = hi_p if max_rank is None else integer(max_rank, "max_rank", low=lo_r)
    cond = positive_float(max_cond, "max_cond")
    if cond < 1.0:
        raise ValueError(f"max_cond must be >= 1; got max_cond={max_cond!r}")
    m = positive_int(max_entry, "max_entry")
    decades = math.floor(math.log10(cond) + 1e-12)

    return _psd(lo_p, hi_p, lo_r, hi_r, decades, m)


def cpi_matrices(
    *,
    min_p: int = 2,
    max_p: int = 8,
    ties: bool = True,
    negative_b: bool | None = None,
    max_entry: int = 5,
) -> st.SearchStrategy[np.ndarray]:
    """Matrices of the class C_PI: Λ = diag(d) + a·I + b·11ᵀ, d > 0, a ≥ 0, a + p·b ≥ 0.

    d and a are integers; b = −t·a/p with t ∈ {0, 1/4, 1/2, 3/4, 1} when negative (so C is
    PSD, possibly singular), an integer when non-negative.

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 1 ≤ min_p ≤ max_p.
    ties : bool
        Allow ties in d (then d takes few distinct values); False makes d distinct.
    negative_b : bool or None
        Force b < 0 (True), b ≥ 0 (False), or draw both (None).
    max_entry : int
        ≥ 1: d lies in [1, max_entry + p] and a, b in [0, max_entry].

    Returns
    -------
    SearchStrategy of (p, p) float64 arrays

    Examples
    --------
    Theorem 2 of [1]_: on C_PI the top-k diagonal attains the exhaustive maximum of IPV.

    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_theorem2
    >>> from laplace_lab.theory.strategies import cpi_matrices
    >>> @given(cpi_matrices(max_p=6))
    ... def test_theorem2(Lam):
    ...     assert check_theorem2(Lam, 2, n=100.0).holds
    >>> test_theorem2()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §4, C_PI and Theorem 2.
    """
    lo_p, hi_p = integer_range(min_p, max_p, ("min_p", "max_p"), floor=1)
    if not isinstance(ties, bool):
        raise TypeError(f"ties must be a bool; got {type(ties).__name__} {ties!r}")
    if negative_b is not None and not isinstance(negative_b, bool):
        raise TypeError(f"negative_b must be a bool or None; got {negative_b!r}")
    m = positive_int(max_entry, "max_entry")

    return _cpi(lo_p, hi_p, ties, negative_b, m)


class DominantCase(NamedTuple):
    """An ε-diagonally dominant Λ with the premises of Theorem 3 at size k."""

    Lam: np.ndarray
    k: int
    eps: float


def dominant_matrices(
    *, min_p: int = 2, max_p: int = 8, max_entry: int = 2
) -> st.SearchStrategy[DominantCase]:
    """(Λ, k, ε) with Λ ε-diagonally dominant and both ratio premises of Theorem 3.

    Off-diagonal entries are integers in [−max_entry, max_entry]; every diagonal entry is an
    integer above its row's off-diagonal absolute sum divided by ε (dominance), and the k
    largest exceed (1+ε)/(1−ε) times all the others, so that Λ_{m_k m_k} / Λ_{m_{k+1} m_{k+1}}
    and Λ_{m_k m_k} / Λ_{m_{p−k+1} m_{p−k+1}} exceed (1+ε)/(1−ε) (k ≤ p/2).

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 2 ≤ min_p ≤ max_p.
    max_entry : int
        ≥ 1: the off-diagonal range.

    Returns
    -------
    SearchStrategy of DominantCase(Lam, k, eps)

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_theorem3
    >>> from laplace_lab.theory.strategies import dominant_matrices
    >>> @given(dominant_matrices(max_p=6))
    ... def test_theorem3(case):
    ...     assert check_theorem3(case.Lam, case.k, case.eps, n=50.0).holds
    >>> test_theorem3()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), Theorem 3 and App. A.5.
    """
    lo_p, hi_p = integer_range(min_p, max_p, ("min_p", "max_p"), floor=2)
    m = positive_int(max_entry, "max_entry")

    return _dominant(lo_p, hi_p, m)


# ----------------------------------------------------------------------------- builders
# Module-level composites: building one per call of a public function costs Hypothesis a
# source inspection every time a strategy is drawn inside another.
@st.composite
def _psd(
    draw: Any, lo_p: int, hi_p: int, lo_r: int, hi_r: int, decades: int, m: int
) -> np.ndarray:
    p = draw(st.integers(max(lo_p, lo_r), hi_p))
    r = draw(st.integers(lo_r, min(hi_r, p)))
    if r == 0:
        return np.zeros((p, p))
    G = draw(
        hnp.arrays(np.int64, (p, r), elements=st.integers(-m, m)).filter(full_column_rank)
    ).astype(np.float64)
    scales = 10.0 ** -np.array(draw(st.lists(st.integers(0, decades), min_size=r, max_size=r)))
    L = (G * scales) @ G.T
    return 0.5 * (L + L.T)


@st.composite
def _cpi(
    draw: Any, lo_p: int, hi_p: int, ties: bool, negative_b: bool | None, m: int
) -> np.ndarray:
    p = draw(st.integers(lo_p, hi_p))
    if ties:
        d = draw(st.lists(st.integers(1, m + p), min_size=p, max_size=p))
    else:
        d = draw(st.permutations(range(1, p + 1)))
    neg = draw(st.booleans()) if negative_b is None else negative_b
    if neg:
        a = draw(st.integers(1, m))
        b = -a * draw(st.sampled_from((0.25, 0.5, 0.75, 1.0))) / p
    else:
        a = draw(st.integers(0, m))
        b = float(draw(st.integers(0, m)))
    d = np.asarray(d, dtype=np.float64)
    return np.diag(d) + a * np.eye(p) + b * np.ones((p, p))


@st.composite
def _dominant(draw: Any, lo_p: int, hi_p: int, m: int) -> DominantCase:
    p = draw(st.integers(lo_p, hi_p))
    k = draw(st.integers(1, p // 2))
    eps = draw(st.sampled_from((0.5, 0.25, 0.75, 0.1)))
    bound = (1 + eps) / (1 - eps)
    E = np.zeros((p, p))
    iu = np.triu_indices(p, 1)
    E[iu] = draw(st.lists(st.integers(-m, m), min_size=iu[0].size, max_size=iu[0].size))
    E = E + E.T
    need = np.floor(np.abs(E).sum(axis=1) / eps) + 1  # ε Λ_ii > Σ_j |Λ_ij|
    small = need[k:] + np.array(draw(st.lists(st.integers(0, 3), min_size=p - k, max_size=p - k)))
    floor_large = np.floor(bound * small.max()) + 1
    large = np.maximum(need[:k], floor_large) + np.array(
        draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    )
    Lam = E + np.diag(np.concatenate([large, small]))
    order = np.asarray(draw(st.permutations(range(p))))
    return DominantCase(Lam[np.ix_(order, order)], k, float(eps))  # relabelled
