"""Measured cost exponents: single-thread CPU timing, log-log slopes, operation counts.

Helpers for the complexity claims of Raha, Khare & Patra, arXiv:2605.09075 (§3, "Computational
Complexity" after Algorithms 1 and 2). A cost c(x) ∝ x^a shows as slope a of log c against
log x (fitted by :func:`laplace_lab.theory.rates.fit_rate`, OLS with a t-interval). Times are the
CPU time of the calling thread (``time.thread_time``) with BLAS pinned to one thread, minimum over
repeats: another busy process on the machine delays the thread but does not add CPU time to
it, and with one BLAS thread all the work is done on the timed thread. Operation counts are
the same costs counted from the shapes each stage receives (deterministic, noise-free).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from laplace_lab.numerics.backend import TILE

__all__ = [
    "StageClock",
    "Timing",
    "best_stage_times",
    "gram_macs",
    "literal_greedy_macs",
    "single_thread",
]


@contextmanager
def single_thread() -> Iterator[None]:
    """BLAS/OpenMP pools (threadpoolctl) and torch, if imported, limited to one thread.

    Needed for ``time.thread_time`` to see all the work: BLAS worker threads would compute
    outside the timed thread. The previous limits are restored on exit.
    """
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=1):
        if torch is not None:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)


class StageClock:
    """Accumulates the thread CPU time of named stages: ``with clock("scores"): ...``."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.thread_time()
        try:
            yield
        finally:
            self.times[stage] = self.times.get(stage, 0.0) + time.thread_time() - start


class Timing(NamedTuple):
    """Per-stage minimum CPU times (with "total") and the result of the last call."""

    best: dict[str, float]
    result: object


def best_stage_times(
    run: Callable[[StageClock], object], *, repeats: int = 2, budget: float = 0.1
) -> Timing:
    """Per-stage minimum CPU time of ``run(clock)`` over repeats, plus the minimal "total".

    ``run`` is called at least ``repeats`` times and until the calls took ``budget`` seconds
    of CPU time in all (so stages of a few milliseconds get many repeats; at most 200). The
    minimum is the least disturbed run: interruptions and cache pollution only add time.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer; got repeats={repeats!r}")
    if not (isinstance(budget, int | float) and math.isfinite(budget) and budget >= 0):
        raise ValueError(f"budget must be a finite number ≥ 0; got budget={budget!r}")
    best: dict[str, float] = {}
    spent, calls, result = 0.0, 0, None
    while calls < repeats or (spent < budget and calls < 200):
        clock = StageClock()
        result = run(clock)
        total = sum(clock.times.values())
        for stage, t in {**clock.times, "total": total}.items():
            best[stage] = min(best.get(stage, math.inf), t)
        spent += total
        calls += 1
    return Timing(best, result)


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
