"""Compare a target's array with the oracle's under the tolerance rule, and say where it broke."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from laplace_lab.conformance.contract import as_float_array
from laplace_lab.conformance.registry import Check
from laplace_lab.conformance.runner import TargetError

__all__ = ["compare_values", "target_array"]


def target_array(value: Any, name: str, shape: tuple[int, ...], expr: str) -> np.ndarray:
    """A target's output as float64 of ``shape``; anything else is a TargetError (ERROR)."""
    try:
        return as_float_array(value, name, shape)
    except (TypeError, ValueError) as err:
        raise TargetError(str(err), expr) from err


def compare_values(
    got: np.ndarray,
    expected: np.ndarray,
    tolerance: np.ndarray,
    *,
    what: str,
    call: Callable[[int | None], str],
    per_point: bool = True,
) -> Check:
    """PASS iff |got − expected| ≤ tolerance everywhere; the summary names the worst entry.

    ``call(i)`` is the target call for the reproducer: on test point i only when
    ``per_point`` (the minimal failing input), ``call(None)`` otherwise.
    """
    err = np.abs(got - expected)
    ratio = err / tolerance
    idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    rel = float(np.max(err / np.maximum(np.abs(expected), np.finfo(np.float64).tiny)))
    passed = bool(np.all(err <= tolerance))
    where = f"test point {idx[0]}" + (f", class {idx[1]}" if len(idx) > 1 else "")
    if not per_point:
        where = "value"
    summary = (
        f"{what}: max |error| / tolerance = {float(ratio[idx]):.3g}, max relative error "
        f"{rel:.3g}; worst at {where}: got {got[idx]:.12g}, oracle {expected[idx]:.12g}, "
        f"tolerance {tolerance[idx]:.3g}"
    )
    details = {
        "max_error_over_tolerance": float(ratio[idx]),
        "max_relative_error": rel,
        "worst": [int(i) for i in idx],
        "got": float(got[idx]),
        "oracle": float(expected[idx]),
        "tolerance": float(tolerance[idx]),
    }
    body = f"got = {call(int(idx[0]) if per_point else None)}"
    line = f"print(got)  # oracle {float(expected[idx])!r} ± {float(tolerance[idx]):.3g}"
    return Check(passed, summary, details, f"{body}\n{line}")
