"""Operation counts of the complexity claims of Raha, Khare & Patra, arXiv:2605.09075 (§3,
"Computational Complexity" after Algorithms 1 and 2): the same costs as the timings
(:mod:`laplace_lab.paper_checks.verification.timing`), counted from the shapes each stage
receives (deterministic, noise-free).
"""

from __future__ import annotations

from laplace_lab.numerics.backend import TILE

__all__ = ["gram_macs", "literal_greedy_macs"]


def gram_macs(n_rows: int, k: int, *, tile: int = TILE) -> int:
    """Multiply-adds of J_Sᵀ J_S (k × k from an n_rows × k block) by ``gram_blocks``.

    :func:`laplace_lab.numerics.backend.gram_blocks` multiplies the column tiles t_i ≤ ``tile`` on
    and above the diagonal: n_rows · Σ_{i≤j} t_i t_j (= n_rows · k² for k ≤ tile).
    """
    widths = [min(tile, k - a) for a in range(0, k, tile)]
    return n_rows * sum(w * sum(widths[i:]) for i, w in enumerate(widths))


def literal_greedy_macs(m: int, k: int) -> int:
    """Multiply-adds of the rank-one Schur updates of the literal Alg. 2 loop.

    Step t = 1..k of Alg. 2 (step 3 of the algorithm box) updates the
    remaining (m − t) × (m − t) block: Σ_{t=1}^{k} (m − t)² = S(m−1) − S(m−k−1) with
    S(n) = n(n+1)(2n+1)/6; for m = 2k this is k(2k − 1)(7k − 1)/6 ≈ 7k³/3.
    """
    if not 0 <= k <= m:
        raise ValueError(f"k must be in [0, m]; got k={k}, m={m}")

    def squares(n: int) -> int:
        return n * (n + 1) * (2 * n + 1) // 6

    return squares(m - 1) - squares(m - k - 1) if k else 0
