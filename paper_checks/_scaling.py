"""Measured cost exponents: single-thread CPU timing, log-log slopes, operation counts.

Helpers for the complexity claims of *subnetwork-laplace-optimality* (§3, "Computational
Complexity" after Algorithms 1 and 2). A cost c(x) ∝ x^a shows as slope a of log c against
log x; the slope is fitted by OLS with a Student-t confidence interval. Times are the CPU time
of the calling thread (``time.thread_time``) with BLAS pinned to one thread, minimum over
repeats: another busy process on the machine delays the thread but does not add CPU time to
it, and with one BLAS thread all the work is done on the timed thread. Operation counts are
the same costs counted from the shapes each stage receives (deterministic, noise-free).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
from scipy import stats

from numerics.backend import TILE

__all__ = [
    "ExponentFit",
    "StageClock",
    "Timing",
    "best_stage_times",
    "fit_exponent",
    "gram_macs",
    "literal_greedy_macs",
    "single_thread",
]


class ExponentFit(NamedTuple):
    """OLS fit log c = log C + a log x: the exponent a with its confidence interval."""

    exponent: float
    ci_low: float
    ci_high: float
    prefactor: float
    """C, the cost at x = 1 on the fitted line (for plotting)."""


def fit_exponent(
    sizes: Sequence[float], costs: Sequence[float], *, level: float = 0.95
) -> ExponentFit:
    """The exponent a of c ∝ x^a: OLS slope of log ``costs`` on log ``sizes`` with a t-interval.

    Parameters
    ----------
    sizes, costs : sequences of positive floats
        At least three distinct sizes (the interval needs one degree of freedom).
    level : float
        Confidence level of the interval, in (0, 1).

    Returns
    -------
    ExponentFit
        slope ± t_{(1+level)/2, n−2} · SE, SE = sqrt(RSS/(n−2) / Σ(log x − mean)²).
    """
    x = _positive_vector(sizes, "sizes")
    y = _positive_vector(costs, "costs")
    if x.size != y.size:
        raise ValueError(f"sizes and costs must have equal lengths; got {x.size} and {y.size}")
    if np.unique(x).size < 3:
        raise ValueError(f"sizes must contain at least three distinct values; got {x.tolist()}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1); got level={level!r}")
    lx, ly = np.log(x), np.log(y)
    dx = lx - lx.mean()
    slope = float(dx @ (ly - ly.mean()) / (dx @ dx))
    intercept = float(ly.mean() - slope * lx.mean())
    resid = ly - intercept - slope * lx
    se = math.sqrt(float(resid @ resid) / (x.size - 2) / float(dx @ dx))
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 2)) * se
    return ExponentFit(slope, slope - half, slope + half, math.exp(intercept))


def _positive_vector(values: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 3:
        raise ValueError(f"{name} must be a 1-D sequence of at least 3 values; got {arr.shape}")
    if not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise ValueError(f"{name} must be finite and positive; got {arr.tolist()}")
    return arr


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

    :func:`numerics.backend.gram_blocks` multiplies the column tiles t_i ≤ ``tile`` on and
    above the diagonal: n_rows · Σ_{i≤j} t_i t_j (= n_rows · k² for k ≤ tile).
    """
    widths = [min(tile, k - a) for a in range(0, k, tile)]
    return n_rows * sum(w * sum(widths[i:]) for i, w in enumerate(widths))


def literal_greedy_macs(m: int, k: int) -> int:
    """Multiply-adds of the rank-one Schur updates of the literal Alg. 2 loop.

    Step t = 1..k of Alg. 2 (subnetwork-laplace-optimality.txt, Alg. 2 step 3) updates the
    remaining (m − t) × (m − t) block: Σ_{t=1}^{k} (m − t)² = S(m−1) − S(m−k−1) with
    S(n) = n(n+1)(2n+1)/6; for m = 2k this is k(2k − 1)(7k − 1)/6 ≈ 7k³/3.
    """
    if not 0 <= k <= m:
        raise ValueError(f"k must be in [0, m]; got k={k}, m={m}")

    def squares(n: int) -> int:
        return n * (n + 1) * (2 * n + 1) // 6

    return squares(m - 1) - squares(m - k - 1) if k else 0
