"""Arithmetic figures quoted by Raha, Khare & Patra (arXiv:2605.09075): memory, regions, k's.

Each figure is recomputed from the quantities the paper states next to it.
"""

from __future__ import annotations

from laplace_lab.paper_checks.registry import Context, Status, Verdict, claim

PAPER = "subnetwork-laplace-optimality"


def _compare(measured: float, expected: float, rel: float, how: str) -> Verdict:
    ok = abs(measured - expected) <= rel * abs(expected)
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=measured,
        expected=expected,
        tolerance=f"{rel:.0%} relative",
        evidence=how,
    )


@claim(
    paper=PAPER,
    name="woodbury-gram-memory",
    location="App. C, computational details",
    statement=(
        "The N×N Woodbury Gram kernel keeps the maximal allocation at 4N² bytes "
        "≈ 16 MB at N = 2,000."
    ),
)
def woodbury_gram_memory(ctx: Context) -> Verdict:
    mb = 4 * 2000**2 / 1e6
    return _compare(mb, 16.0, 0.05, f"4 · 2000² bytes = {mb:.1f} MB (10⁶ bytes), float32.")


@claim(
    paper=PAPER,
    name="greedy-candidate-memory",
    location="App. C, computational details",
    statement=(
        "Capping the Greedy-Laplace candidate set at k̄ = 30,000 bounds the sub-precision "
        "allocation at ≈ 3.6 GB."
    ),
)
def greedy_candidate_memory(ctx: Context) -> Verdict:
    gb = 30_000**2 * 4 / 1e9
    return _compare(
        gb,
        3.6,
        0.05,
        f"30,000² entries × 4 bytes = {gb:.2f} GB (float32); float64 would need {2 * gb:.1f} GB.",
    )


@claim(
    paper=PAPER,
    name="wheel-high-reward-area",
    location="§5.2 and App. D.4",
    statement=(
        "The high-reward region occupies 1 − δ² of the disk: 9.75% at δ = 0.95 and "
        "19.0% at δ = 0.9."
    ),
)
def wheel_high_reward_area(ctx: Context) -> Verdict:
    a, b = 1 - 0.95**2, 1 - 0.9**2
    ok = abs(a - 0.0975) < 1e-12 and abs(b - 0.19) < 1e-12
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=f"{a:.4%}, {b:.4%}",
        expected="9.75%, 19.0%",
        tolerance="exact",
        evidence="Area fraction of the annulus δ < ‖x‖ ≤ 1 in the unit disk is 1 − δ².",
    )
