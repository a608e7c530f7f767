"""Cost-exponent helpers: OLS log-log slope, CPU timing, operation counts (closed forms)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from laplace_lab.numerics.backend import gram_blocks
from laplace_lab.paper_checks.subnetwork_laplace_optimality._scaling import (
    gram_macs,
    literal_greedy_macs,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.complexity import OP_TOL, TOL, Check
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.timing import (
    MAX_EXPONENT_CI,
    StageClock,
    best_stage_times,
    single_thread,
)


class _CountingArray(np.ndarray):
    """Counts the multiply-adds of every matmul it takes part in (m·n·r for (m,n)@(n,r))."""

    macs = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(a) if isinstance(a, _CountingArray) else a for a in inputs]
        if ufunc is np.matmul:
            a, b = plain
            _CountingArray.macs += a.shape[0] * a.shape[1] * b.shape[1]
        return getattr(ufunc, method)(*plain, **kwargs)


@pytest.mark.parametrize(("n", "k", "tile"), [(5, 7, 16), (5, 16, 16), (3, 17, 16), (4, 50, 16)])
def test_gram_macs_counts_the_products_gram_blocks_makes(n, k, tile):
    B = np.random.default_rng(0).standard_normal((n, k)).view(_CountingArray)
    _CountingArray.macs = 0
    G = gram_blocks(B, tile=tile)
    assert np.allclose(np.asarray(G), np.asarray(B).T @ np.asarray(B))
    widths = [min(tile, k - a) for a in range(0, k, tile)]
    closed = n * (k * k + sum(w * w for w in widths)) // 2  # Σ_{i≤j} t_i t_j = (k² + Σt²)/2
    assert _CountingArray.macs == gram_macs(n, k, tile=tile) == closed


def test_gram_macs_single_tile_is_n_k_squared():
    assert gram_macs(300, 4096) == 300 * 4096**2


@pytest.mark.parametrize("k", [1, 2, 3, 10, 257])
def test_literal_greedy_macs_closed_forms(k):
    assert literal_greedy_macs(2 * k, k) == k * (2 * k - 1) * (7 * k - 1) // 6
    assert literal_greedy_macs(3 * k, k) == sum((3 * k - t) ** 2 for t in range(1, k + 1))
    assert literal_greedy_macs(k, k) == sum(j * j for j in range(k))


def test_literal_greedy_macs_rejects_k_above_m():
    with pytest.raises(ValueError, match="k must be in"):
        literal_greedy_macs(3, 4)


def test_stage_clock_measures_cpu_not_wall_time():
    def run(clock: StageClock) -> str:
        with clock("sleep"):
            time.sleep(0.05)  # no CPU time
        with clock("work"):
            end = time.thread_time() + 0.02
            while time.thread_time() < end:
                pass
        return "done"

    timing = best_stage_times(run, repeats=2, budget=0.0)
    assert timing.result == "done"
    assert timing.best["sleep"] < 0.01
    assert 0.02 <= timing.best["work"] < 0.04
    assert timing.best["total"] >= timing.best["work"]


def test_best_stage_times_repeats_until_the_budget_and_takes_the_minimum():
    costs = iter([0.03, 0.01, 0.02, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01])
    calls = []

    def run(clock: StageClock) -> None:
        calls.append(1)
        with clock("work"):
            end = time.thread_time() + next(costs)
            while time.thread_time() < end:
                pass

    timing = best_stage_times(run, repeats=2, budget=0.08)
    assert 5 <= len(calls) <= 7  # 0.03 + 0.01 + 0.02 + 0.01 + 0.01 ≥ 0.08
    assert 0.01 <= timing.best["work"] < 0.02


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"repeats": 0}, "repeats"), ({"budget": -1}, "budget")]
)
def test_best_stage_times_rejects_bad_options(kwargs, name):
    with pytest.raises(ValueError, match=name):
        best_stage_times(lambda clock: None, **kwargs)


def test_single_thread_pins_blas_and_restores_it():
    def blas_threads() -> list[int]:
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    with single_thread():
        assert blas_threads() and all(t == 1 for t in blas_threads())
    assert blas_threads() == before


@pytest.mark.parametrize(
    ("measured", "half_width", "op", "probed", "regime", "status"),
    [
        # the operation counts decide: work growing faster than the bound refutes
        (2.0, 0.1, 2.0 + OP_TOL + 0.01, False, False, Status.REFUTED),
        (2.0, 0.1, 1.8, True, True, Status.NOT_REPRODUCIBLE_HERE),  # sizes outside the regime
        (2.0, 0.1, 1.8, False, False, Status.CONFIRMED),  # a non-dominant stage: no regime check
        # the clock corroborates, and never refutes
        (2.0 + TOL - 0.01, 0.1, 2.0, True, True, Status.CONFIRMED),
        (2.0 + TOL + 0.2, 0.1, 2.0, False, False, Status.NOT_REPRODUCIBLE_HERE),  # contradicts
        (2.0 + TOL + 0.01, 0.1, 2.0, False, False, Status.CONFIRMED),  # interval reaches it
        (2.0 - TOL - 0.2, 0.1, 2.0, True, True, Status.NOT_REPRODUCIBLE_HERE),  # not probed
        (2.0 - TOL - 0.2, 0.1, 2.0, False, True, Status.CONFIRMED),  # total: upper bound only
        (2.0 + TOL + 0.5, 0.6, 2.0, False, False, Status.CONFIRMED),  # too noisy to decide
    ],
)
def test_check_status(measured, half_width, op, probed, regime, status):
    ci = (measured - half_width, measured + half_width)
    check = Check("k", "Ω_SS", 2.0, measured, ci, op, probed, regime)
    assert check.status is status
    assert check.corroborated is (2 * half_width <= MAX_EXPONENT_CI)


def test_a_check_says_why_it_does_not_confirm():
    refuted = Check("k", "Ω_SS", 2.0, 2.0, (1.9, 2.1), 2.0 + OP_TOL + 0.1, False, False)
    assert "counted work grows" in refuted.reason
    regime = Check("k", "Ω_SS", 2.0, 2.0, (1.9, 2.1), 1.8, True, True)
    assert "not in the term's regime" in regime.reason
    clock = Check("k", "Ω_SS", 2.0, 2.0 + TOL + 0.2, (2.0 + TOL + 0.1, 2.6), 2.0, False, False)
    assert "clock" in clock.reason  # what test_claims lets a busy machine skip
    assert Check("k", "Ω_SS", 2.0, 2.0, (1.9, 2.1), 2.0, True, True).reason == ""
