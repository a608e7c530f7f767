"""Exhaustive ground truth: IPV over every subset of size k.

All C(p, k) subsets are enumerated in lexicographic order and evaluated in batches with a
stacked Cholesky factorisation; the best and worst subsets are exact up to roundoff. This is
the oracle for Theorems 2–3 of Raha, Khare & Patra, arXiv:2605.09075, for p up to about 20.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from laplace_lab._checks import subset, subset_size
from laplace_lab.theory._ipv_terms import setup

__all__ = ["MAX_SUBSETS", "Extremes", "all_ipvs", "exhaustive_extremes"]

#: The largest number of subsets an exhaustive search will enumerate.
MAX_SUBSETS = 10**6
_BATCH_BYTES = 32 * 2**20


class Extremes(NamedTuple):
    """The best and worst subsets of size k by IPV, and their IPVs."""

    best: np.ndarray
    best_ipv: float
    worst: np.ndarray
    worst_ipv: float
    n_subsets: int


def _batches(pool: np.ndarray, k: int, batch: int) -> Iterator[np.ndarray]:
    combos = itertools.combinations(pool.tolist(), k)
    while True:
        block = np.array(list(itertools.islice(combos, batch)), dtype=np.int64)
        if block.size == 0:
            return
        yield block.reshape(-1, k)


def _batched_ipv(
    Lam: np.ndarray, idx: np.ndarray, scale: float, c: float, v: np.ndarray
) -> np.ndarray:
    """IPV of each row of ``idx`` (B, k) by the trace form (eq. 18), stacked Cholesky:
    tr(A⁻¹Λ_SS) = Σ_ij (R⁻¹Λ_SS)_ij (R⁻¹)_ij for A = Λ_SS + cV_SS = RRᵀ."""
    k = idx.shape[1]
    LamS = Lam[idx[:, :, None], idx[:, None, :]]
    A = LamS + c * v[idx][:, :, None] * np.eye(k)
    try:
        R = np.linalg.cholesky(A)
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "Λ_SS + (noise_var/n)·V_SS is numerically singular for some subset: use a "
            "smaller n or a larger noise_var or prior_precision"
        ) from err
    Rinv = np.linalg.solve(R, np.broadcast_to(np.eye(k), A.shape))
    return scale * np.einsum("bij,bij->b", Rinv @ LamS, Rinv)


def all_ipvs(
    Lam: object,
    k: int,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
    pool: object = None,
) -> tuple[np.ndarray, np.ndarray]:
    """IPV of every subset of size k of ``pool`` (all of {0..p-1} by default).

    Returns
    -------
    subsets : (C(m, k), k) int ndarray
        The subsets in lexicographic order.
    values : (C(m, k),) ndarray
        Their IPVs (eq. 18).

    Raises
    ------
    ValueError
        When there are more than ``MAX_SUBSETS`` subsets.
    """
    L, scale, c, v = setup(Lam, n, noise_var, prior_precision)
    p = L.shape[0]
    members = np.arange(p) if pool is None else np.sort(subset(pool, p, "pool"))
    k = subset_size(k, members.size, "k", bound="len(pool)" if pool is not None else "p")
    count = math.comb(members.size, k)
    if count > MAX_SUBSETS:
        raise ValueError(
            f"exhaustive search over C({members.size}, {k}) = {count:.3g} subsets exceeds "
            f"{MAX_SUBSETS:g}; choose a smaller p or k"
        )
    if k == 0:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(1)
    batch = max(1, _BATCH_BYTES // (16 * k * k))
    subsets, values = [], []
    for block in _batches(members, k, batch):
        subsets.append(block)
        values.append(_batched_ipv(L, block, scale, c, v))
    return np.concatenate(subsets), np.concatenate(values)


def exhaustive_extremes(
    Lam: object,
    k: int,
    *,
    n: float,
    noise_var: float = 1.0,
    prior_precision: float | np.ndarray = 1.0,
    pool: object = None,
) -> Extremes:
    """The subsets of size k with the largest and smallest IPV, by enumerating all C(p, k).

    By Theorem 1 the best subset also has the smallest discrepancy Dis(S) and the worst
    the largest. Ties go to the lexicographically first subset.

    Parameters
    ----------
    Lam, n, noise_var, prior_precision
        As in :func:`laplace_lab.theory.ipv`.
    k : int
        The subset size, 0 ≤ k ≤ p.
    pool : sequence of int, optional
        Enumerate only subsets of these indices (e.g. those disjoint from S*).

    Examples
    --------
    With a diagonal Λ, N = 1 and k = 1, IPV({i}) = λ_i / (λ_i + 1): the best single index
    has the largest λ_i, the worst the smallest.

    >>> import numpy as np
    >>> from laplace_lab.theory import exhaustive_extremes
    >>> ex = exhaustive_extremes(np.diag([4.0, 1.0, 2.0]), 1, n=1)
    >>> ex.best.tolist(), round(ex.best_ipv, 6)  # 4 / 5
    ([0], 0.8)
    >>> ex.worst.tolist(), round(ex.worst_ipv, 6)  # 1 / 2
    ([1], 0.5)
    >>> ex.n_subsets  # C(3, 1)
    3
    """
    subsets, values = all_ipvs(
        Lam, k, n=n, noise_var=noise_var, prior_precision=prior_precision, pool=pool
    )
    i_best, i_worst = int(np.argmax(values)), int(np.argmin(values))
    return Extremes(
        subsets[i_best],
        float(values[i_best]),
        subsets[i_worst],
        float(values[i_worst]),
        len(values),
    )
