"""Hypothesis, imported once for the public strategies, with one clear error if absent."""

from __future__ import annotations

import numpy as np

from laplace_lab._checks import integer

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as err:  # exercised in a subprocess test
    raise ImportError(
        "laplace_lab.theory.strategies needs Hypothesis, an optional dependency: "
        "pip install 'laplace-lab[strategies]' (or pip install hypothesis)"
    ) from err


__all__ = ["POSITIVE_VALUES", "full_column_rank", "hnp", "integer_range", "positive_total", "st"]

#: Positive values in the order Hypothesis shrinks them (towards 1).
POSITIVE_VALUES = (1.0, 2.0, 0.5, 4.0, 0.25, 10.0, 0.1, 100.0, 0.01)


def full_column_rank(a: np.ndarray) -> bool:
    """Whether the columns of ``a`` are linearly independent (a named filter: Hypothesis
    describes a lambda by inspecting its source, on every draw)."""
    return bool(np.linalg.matrix_rank(a) == a.shape[1])


def positive_total(c: np.ndarray) -> bool:
    """Whether the counts ``c`` sum to more than zero."""
    return bool(c.sum() > 0)


def integer_range(
    low: object, high: object, names: tuple[str, str], *, floor: int
) -> tuple[int, int]:
    """(low, high) as integers ≥ ``floor`` with low ≤ high, or the error naming them."""
    lo = integer(low, names[0], low=floor)
    hi = integer(high, names[1], low=floor)
    if hi < lo:
        raise ValueError(f"{names[1]} must be >= {names[0]}; got {names[1]}={hi}, {names[0]}={lo}")
    return lo, hi
