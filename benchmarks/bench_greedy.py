"""Greedy-Laplace: blocked exact pivoted Cholesky vs the literal Algorithm 2 and vs J_KᵀJ_K.

Targets (``--full``): at m = 3000, k = 1500, N = 1500 at least 50× faster than
``greedy_laplace_reference`` with the identical S; at m = 20000, k = 10000, N = 2000 within
3× of the time of forming J_Kᵀ J_K (tiled, symmetric) for the same shapes.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.benchmarks._harness import Row, benchmark, main_for, timed
from laplace_lab.numerics import GGN, gradient_laplace, greedy_laplace, greedy_laplace_reference


def _problem(n: int, p: int, seed: int) -> GGN:
    J = np.random.default_rng(seed).standard_normal((n, p))
    return GGN.regression(J, noise_var=1.0, prior_precision=1.0)


def versus_literal(n: int, m: int, k: int, target: float = 50.0) -> Row:
    ggn = _problem(n, m, 0)
    S, ours = timed(lambda: greedy_laplace(ggn, k, n_candidates=m))
    omega, scores = ggn.dense(), ggn.scores()
    R, base = timed(lambda: greedy_laplace_reference(omega, scores, k, n_candidates=m))
    same = bool(np.array_equal(S, R))
    return Row(
        f"greedy_laplace vs literal Alg. 2 (N={n}, m={m}, k={k})",
        ours,
        "greedy_laplace_reference",
        base,
        min_ratio=target,
        correct=same,
        note=f"identical S: {same}",
    )


def versus_forming(n: int, m: int, k: int) -> Row:
    ggn = _problem(n, m, 1)
    K = gradient_laplace(ggn.scores(), m)
    S, ours = timed(lambda: greedy_laplace(ggn, k, n_candidates=m))
    _, base = timed(lambda: ggn.submatrix(K))
    return Row(
        f"greedy_laplace vs forming J_KᵀJ_K (N={n}, m={m}, k={k})",
        ours,
        "GGN.submatrix(K) (tiled)",
        base,
        min_ratio=1 / 3,
        note=f"|S|={S.size}; target: within 3x of forming Ω_KK",
    )


@benchmark("greedy")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench`` (small sizes unless ``full``)."""
    if full:
        return [versus_literal(1500, 3000, 1500), versus_forming(2000, 20000, 10000)]
    # the literal algorithm costs O(m³), ours O(N m k): small sizes get a smaller target
    return [versus_literal(400, 1000, 500, target=10.0), versus_forming(500, 5000, 2500)]


if __name__ == "__main__":
    raise SystemExit(main_for(run))
