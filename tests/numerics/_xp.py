"""Array backends for the Lanczos / low-rank / FSP / NTK-sketch tests.

NumPy, array_api_strict (rejects anything outside the standard) and torch on the CPU; CuPy
runs only when it is importable and a GPU is present.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from numerics import backend

__all__ = ["BACKENDS", "from_numpy", "namespace", "to_numpy"]


def _cupy_available() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


BACKENDS = [
    "numpy",
    "array_api_strict",
    "torch",
    pytest.param(
        "cupy",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not _cupy_available(), reason="CuPy or a GPU is not available"),
        ],
    ),
]


def namespace(name: str):
    """The array-API namespace of backend ``name``."""
    if name == "numpy":
        import array_api_compat.numpy as xp
    elif name == "array_api_strict":
        import array_api_strict as xp
    elif name == "torch":
        import array_api_compat.torch as xp
    else:
        import array_api_compat.cupy as xp
    return xp


def from_numpy(xp, a: np.ndarray):
    """``a`` (float64) as an array of namespace ``xp``."""
    return xp.asarray(np.ascontiguousarray(a), dtype=xp.float64)


def to_numpy(x) -> np.ndarray:
    """Any backend array as a float64 NumPy array."""
    return np.asarray(backend.to_numpy(x), dtype=np.float64)
