"""Measured costs for cost and complexity claims: single-thread CPU time per stage.

A cost c(x) ∝ x^a shows as slope a of log c against log x (fitted by
:func:`laplace_lab.theory.rates.fit_rate`, OLS with a t-interval). Times are the CPU time of the
calling thread (``time.thread_time``) with BLAS pinned to one thread, minimum over repeats:
another busy process on the machine delays the thread but does not add CPU time to it, and
with one BLAS thread all the work is done on the timed thread.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from laplace_lab.paper_checks.verification.registry import Status

__all__ = [
    "MAX_EXPONENT_CI",
    "StageClock",
    "Timing",
    "best_stage_times",
    "exponent_status",
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


#: The widest 95% interval of a fitted time exponent that may decide a verdict: wider, the
#: clock was too noisy on this machine (load, frequency changes) and the verdict is
#: NOT_REPRODUCIBLE_HERE, whatever the point estimate says.
MAX_EXPONENT_CI = 0.8


def exponent_status(
    fit: Any, low: float, high: float, *, max_width: float = MAX_EXPONENT_CI
) -> tuple[Status, str]:
    """What a fitted time exponent may decide about a claim "the exponent lies in [low, high]".

    CONFIRMED when the estimate lies in the band; REFUTED only when the whole 95% interval
    misses it (a noisy clock never refutes: an interval that reaches the band gives
    NOT_REPRODUCIBLE_HERE); NOT_REPRODUCIBLE_HERE too when the interval is wider than
    ``max_width``. ``fit`` is a :class:`laplace_lab.theory.rates.RateFit`; returns the status
    and the reason in words.
    """
    interval = f"[{fit.ci_low:.2f}, {fit.ci_high:.2f}]"
    width = fit.ci_high - fit.ci_low
    if not width <= max_width:
        return Status.NOT_REPRODUCIBLE_HERE, (
            f"clock too noisy here to decide: the exponent's 95% interval {interval} is "
            f"{width:.2f} wide (> {max_width})"
        )
    if low <= fit.slope <= high:
        return Status.CONFIRMED, ""
    if fit.ci_high < low or fit.ci_low > high:
        return Status.REFUTED, ""
    return Status.NOT_REPRODUCIBLE_HERE, (
        f"undecided on this machine's clock: the exponent {fit.slope:.2f} is outside "
        f"[{low:g}, {high:g}] but its 95% interval {interval} reaches it"
    )
