"""Shared helpers of the Lanczos family: host ↔ backend transfers and the basis space.

The Lanczos basis and big products live in the namespace of the input (NumPy, CuPy, torch,
array_api_strict); small dense problems (tridiagonal and r × r eigenproblems) are solved on
the host in float64. :class:`Space` remembers namespace, dtype and device for the way back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from array_api_compat import array_namespace

from laplace_lab.numerics.backend import as_float, to_numpy

__all__ = ["Space", "as_matrix", "to_host"]

Array = Any


def to_host(x: Array) -> np.ndarray:
    """A small backend array as a float64 NumPy array (a device → host copy)."""
    return np.asarray(to_numpy(x), dtype=np.float64)


class Space:
    """Namespace, dtype and device of the Lanczos basis, and host → backend conversion."""

    def __init__(self, n: int, v0: Array | None, like: Array | None) -> None:
        ref = v0 if v0 is not None else like
        if ref is None:
            ref = np.zeros(0)
        self.xp = array_namespace(ref)
        self.dtype = ref.dtype
        if not self.xp.isdtype(self.dtype, "real floating"):
            self.dtype = self.xp.float64
        self.device = getattr(ref, "device", None)
        self.n = n
        self.eps = float(np.finfo(np.float32 if "32" in str(self.dtype) else np.float64).eps)

    def asarray(self, host: np.ndarray) -> Array:
        kwargs = {"dtype": self.dtype}
        if self.device is not None and not isinstance(self.device, str):
            kwargs["device"] = self.device
        try:
            return self.xp.asarray(host, **kwargs)
        except TypeError:
            return self.xp.asarray(host, dtype=self.dtype)

    def norm(self, w: Array) -> float:
        if isinstance(w, np.ndarray) and w.ndim == 1:  # the host fast path: no dispatch
            return math.sqrt(float(np.dot(w, w)))
        return float(self.xp.linalg.vector_norm(w))


def as_matrix(x: Array, name: str) -> Array:
    """``x`` as a finite, real floating, non-empty 2-D array (errors name ``name``)."""
    x = as_float(x, name)
    if x.ndim != 2 or 0 in tuple(x.shape):
        raise ValueError(f"{name} must be a non-empty 2-D array; got shape {tuple(x.shape)}")
    return x
