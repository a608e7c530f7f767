"""One backend fixture for every numerics test: NumPy, array_api_strict and torch (CPU).

CuPy runs the same kernels in test_cupy.py, which skips without a CUDA device.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest


@dataclass(frozen=True)
class Backend:
    """A backend under test: its name and a converter from NumPy arrays."""

    name: str
    asarray: Callable[[np.ndarray], Any]

    def __call__(self, a: Any) -> Any:
        return self.asarray(np.asarray(a))


def _numpy(a: np.ndarray) -> Any:
    return a


def _strict(a: np.ndarray) -> Any:
    import array_api_strict

    return array_api_strict.asarray(a)


def _torch(a: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))


BACKENDS = {"numpy": _numpy, "array_api_strict": _strict, "torch": _torch}


@pytest.fixture(scope="module", params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each test using this fixture runs once per CPU backend."""
    return Backend(request.param, BACKENDS[request.param])


def host(x: Any) -> np.ndarray:
    """A float64/int64 NumPy copy of a backend array (for comparisons)."""
    from laplace_lab.numerics.backend import to_numpy

    return np.asarray(to_numpy(x))


def random_problem(
    rng: np.random.Generator, n: int, p: int, *, spread: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """A Jacobian with column scales of varied size and a positive prior-precision vector."""
    J = rng.standard_normal((n, p)) * np.exp(spread * rng.standard_normal(p))
    V = rng.uniform(0.5, 2.0, p)
    return J, V


def traced_peak(fn: Callable[[], Any]) -> tuple[Any, int]:
    """(fn(), peak bytes traced by tracemalloc while it ran)."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
