"""Matrix classes of the sub-network Laplace theorems, their tests and random generators.

- C_PI (Raha, Khare & Patra, arXiv:2605.09075, §4, before Theorem 2): Λ = D + C with D
  diagonal, D > 0, and C PSD and permutation-invariant. Permutation invariance forces
  C = a·I + b·11ᵀ (a permutation-invariant matrix has one common diagonal and one common
  off-diagonal value), and C is PSD iff a ≥ 0 and a + p·b ≥ 0 (its eigenvalues are a and
  a + p·b), so b may be negative.
- ε-diagonally dominant (Appendix A.5): ε Λ_ii > Σ_{j≠i} |Λ_ij| for every i, 0 < ε < 1.
- General PSD matrices with a chosen rank or condition number (for Theorem 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from laplace_lab._checks import (
    as_psd_matrix,
    positive_float,
    positive_int,
    real_array,
    subset_size,
)
from laplace_lab._random import as_generator

__all__ = [
    "CPIDecomposition",
    "cpi_matrix",
    "is_cpi",
    "is_diagonally_dominant",
    "random_cpi",
    "random_diagonally_dominant",
    "random_psd",
]


class CPIDecomposition(NamedTuple):
    """Λ = diag(d) + a·I + b·11ᵀ with d > 0, a ≥ 0, a + p·b ≥ 0."""

    d: np.ndarray
    a: float
    b: float


def cpi_matrix(d: object, a: float, b: float) -> np.ndarray:
    """The C_PI matrix Λ = diag(d) + a·I + b·11ᵀ (class C_PI of [1]_, §4).

    C = a·I + b·11ᵀ is PSD iff its eigenvalues a and a + p·b are ≥ 0, so b may be negative.

    Parameters
    ----------
    d : (p,) array_like
        The positive diagonal of D.
    a, b : float
        The permutation-invariant part C = a·I + b·11ᵀ; needs a ≥ 0 and a + p·b ≥ 0.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4, definition of C_PI before Theorem 2.
    """
    d = real_array(d, "d").astype(np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"d must be a non-empty vector; got shape {d.shape}")
    if not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ValueError("d must be positive and finite in every entry")
    a, b = float(a), float(b)
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"a and b must be finite; got a={a}, b={b}")
    p = d.size
    if a < 0 or a + p * b < 0:
        raise ValueError(
            f"C = aI + b11ᵀ must be PSD: need a ≥ 0 and a + p·b ≥ 0; got a={a}, b={b}, p={p}"
        )
    return np.diag(d) + a * np.eye(p) + b * np.ones((p, p))


def is_cpi(
    Lam: object, *, rtol: float = 1e-10, atol: float | None = None
) -> CPIDecomposition | None:
    """Decompose Λ as a C_PI matrix, or return None when it is not one.

    Λ ∈ C_PI iff all off-diagonal entries equal one value b and some a ≥ max(0, −p·b)
    leaves d = diag(Λ) − a − b > 0. The decomposition is not unique (mass can move between
    D and a·I); the one returned has the smallest a = max(0, −p·b).

    Parameters
    ----------
    Lam : (p, p) array_like
        Symmetric PSD.
    rtol : float
        Off-diagonal entries may differ from their mean by rtol · max|Λ| (scale-free).
    atol : float, optional
        An absolute tolerance instead of ``rtol``.

    Returns
    -------
    CPIDecomposition or None
    """
    L = as_psd_matrix(Lam)
    tol = (
        positive_float(atol, "atol")
        if atol is not None
        else positive_float(rtol, "rtol") * float(np.abs(L).max())
    )
    p = L.shape[0]
    off = L[~np.eye(p, dtype=bool)]
    b = float(off.mean()) if off.size else 0.0
    if off.size and np.max(np.abs(off - b)) > tol:
        return None
    a = max(0.0, -p * b)
    d = np.diag(L) - a - b
    if np.any(d <= 0):
        return None
    return CPIDecomposition(d, a, b)


def is_diagonally_dominant(Lam: object, eps: float) -> bool:
    """True iff ε Λ_ii > Σ_{j≠i} |Λ_ij| for every i (Appendix A.5 of [1]_), 0 < ε < 1.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), Appendix A.5 (definition used by Theorem 3).
    """
    L = real_array(Lam, "Lam").astype(np.float64)
    if L.ndim != 2 or L.shape[0] != L.shape[1] or L.shape[0] == 0:
        raise ValueError(f"Lam must be a non-empty square matrix; got shape {L.shape}")
    eps = positive_float(eps, "eps")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got eps={eps}")
    off = np.abs(L).sum(axis=1) - np.abs(np.diag(L))
    return bool(np.all(eps * np.diag(L) > off))


def random_cpi(
    p: int,
    *,
    rng: np.random.Generator | int,
    ties: int = 0,
    negative_b: bool | None = None,
    d_range: tuple[float, float] = (0.1, 2.0),
) -> np.ndarray:
    """A random C_PI matrix diag(d) + a·I + b·11ᵀ.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        The source of randomness (a seed makes a new generator).
    p : int
        The dimension (≥ 1).
    ties : int
        How many entries of d copy one of the others (ties in diag(Λ)): d then has
        p − ties distinct values.
    negative_b : bool, optional
        Force b < 0 (with a + p·b ≥ 0) or b ≥ 0; random when None.
    d_range : (float, float)
        d is uniform on this interval.
    """
    rng = as_generator(rng)
    p = positive_int(p, "p", high=10**4)
    lo, hi = d_range
    if not 0 < lo <= hi:
        raise ValueError(f"d_range must satisfy 0 < low <= high; got {d_range}")
    d = rng.uniform(lo, hi, size=p)
    ties = subset_size(ties, max(p - 1, 0), "ties", bound="p - 1")
    perm = rng.permutation(p)
    targets, sources = perm[:ties], perm[ties:]
    d[targets] = d[rng.choice(sources, size=ties)]
    a = float(rng.uniform(0.0, 1.0))
    if negative_b is None:
        negative_b = bool(rng.integers(2))
    b = -float(rng.uniform(0.0, 1.0)) * a / p if negative_b else float(rng.uniform(0.0, 1.0))
    return cpi_matrix(d, a, b)


def random_diagonally_dominant(
    p: int,
    eps: float,
    *,
    rng: np.random.Generator | int,
    diag: object = None,
    fill: float = 0.9,
) -> np.ndarray:
    """A random symmetric ε-diagonally dominant matrix (Appendix A.5), hence positive definite.

    Off-diagonal entries are Gaussian, then shrunk symmetrically (entry ij by min(f_i, f_j))
    so that every row's off-diagonal absolute sum is at most ``fill`` · ε · Λ_ii.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        The source of randomness (a seed makes a new generator).
    p : int
    eps : float
        The dominance level, 0 < ε < 1.
    diag : (p,) array_like, optional
        The diagonal; uniform on [0.1, 2] when None.
    fill : float
        In (0, 1): how much of the dominance budget ε Λ_ii the off-diagonals use.
    """
    rng = as_generator(rng)
    p = positive_int(p, "p", high=10**4)
    eps = positive_float(eps, "eps")
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got eps={eps}")
    if not 0 < fill < 1:
        raise ValueError(f"fill must be in (0, 1); got fill={fill}")
    d = rng.uniform(0.1, 2.0, size=p) if diag is None else np.asarray(diag, dtype=np.float64)
    if d.shape != (p,) or not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ValueError(f"diag must be a positive finite vector of length p={p}")
    E = rng.standard_normal((p, p))
    E = np.triu(E, 1)
    E = E + E.T
    row = np.abs(E).sum(axis=1)
    f = np.where(row > 0, fill * eps * d / np.where(row > 0, row, 1.0), 0.0)
    E *= np.minimum.outer(f, f)
    return np.diag(d) + E


def random_psd(
    p: int,
    *,
    rng: np.random.Generator | int,
    rank: int | None = None,
    cond: float | None = None,
) -> np.ndarray:
    """A random symmetric PSD matrix Q diag(λ) Qᵀ with Q Haar-orthogonal.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        The source of randomness (a seed makes a new generator).
    p : int
    rank : int, optional
        Number of non-zero eigenvalues (1 ≤ rank ≤ p); p when None.
    cond : float, optional
        Ratio of the largest to the smallest non-zero eigenvalue (≥ 1); the non-zero
        eigenvalues are log-uniform on [1/cond, 1]. Random on [0.05, 1] when None.
    """
    rng = as_generator(rng)
    p = positive_int(p, "p", high=10**4)
    r = p if rank is None else subset_size(rank, p, "rank", low=1)
    if cond is None:
        lam = rng.uniform(0.05, 1.0, size=r)
    else:
        cond = positive_float(cond, "cond")
        if cond < 1:
            raise ValueError(f"cond must be ≥ 1; got cond={cond}")
        lam = np.exp(-rng.uniform(0.0, np.log(cond), size=r))
        lam[0], lam[-1] = 1.0, 1.0 / cond
    Q, R = np.linalg.qr(rng.standard_normal((p, p)))
    Q *= np.sign(np.diag(R))
    U = Q[:, :r]
    M = (U * lam) @ U.T
    return 0.5 * (M + M.T)
