"""Stationary GP covariance functions and a matrix-free kernel Gram operator.

The priors of FSP-Laplace (Cinquin et al., arXiv:2407.13711, §4 and App. B: RBF,
Matérn-1/2, 3/2, 5/2 and periodic covariance functions). With r = ‖x − x'‖, variance σ²
and length scale ℓ (Rasmussen & Williams 2006, eqs. 4.9, 4.14, 4.16–4.17, 4.31)::

    RBF          σ² exp(−r² / (2ℓ²))
    Matérn-1/2   σ² exp(−r/ℓ)
    Matérn-3/2   σ² (1 + √3 r/ℓ) exp(−√3 r/ℓ)
    Matérn-5/2   σ² (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ)
    periodic     σ² exp(−2 sin²(π r / T) / ℓ²)

Kernels evaluate on any array-API backend. :class:`KernelGram` offers ``Σ(C, C) v`` in row
blocks, so the n_C × n_C matrix is never held in memory (Algorithm 2 is matrix-free).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from array_api_compat import array_namespace

from laplace_lab._checks import positive_float
from laplace_lab.numerics.backend import as_float

__all__ = ["RBF", "KernelGram", "Matern12", "Matern32", "Matern52", "Periodic"]

Array = Any


def _points(X: Array, name: str) -> Array:
    X = as_float(X, name)
    if X.ndim not in (1, 2) or int(X.shape[0]) == 0:
        raise ValueError(f"{name} must be a non-empty (n, d) or (n,) array of inputs")
    return array_namespace(X).reshape(X, (-1, 1)) if X.ndim == 1 else X


#: Up to this input dimension distances are summed from coordinate differences (exact at
#: r = 0, where Matérn-1/2 has a kink); above it the Gram expansion ‖a‖² + ‖b‖² − 2a·b.
_DIRECT_MAX_DIM = 16


def _distance(A: Array, B: Array) -> Array:
    """Euclidean distances ‖a_i − b_j‖ (n1 × n2)."""
    xp = array_namespace(A, B)
    if int(A.shape[1]) != int(B.shape[1]):
        raise ValueError(
            f"X1 and X2 must have the same input dimension; got {A.shape[1]} and {B.shape[1]}"
        )
    d = int(A.shape[1])
    if d <= _DIRECT_MAX_DIM:  # exact differences: no cancellation near r = 0
        sq = None
        for k in range(d):
            diff = A[:, k][:, None] - B[:, k][None, :]
            sq = diff * diff if sq is None else sq + diff * diff
    else:  # ‖a‖² + ‖b‖² − 2a·b about a common centre, accumulated in float64: in float32
        # the expansion alone loses ~1e-2 of r² for unit-scale inputs with d = 784
        A64, B64 = xp.astype(A, xp.float64), xp.astype(B, xp.float64)
        centre = xp.mean(A64, axis=0)
        A64, B64 = A64 - centre, B64 - centre
        sq = xp.sum(A64 * A64, axis=1)[:, None] + xp.sum(B64 * B64, axis=1)[None, :]
        sq = sq - 2.0 * (A64 @ B64.T)
        if A is B:  # a Gram of the points with themselves: symmetric, zero on the diagonal
            n = int(A.shape[0])
            sq = 0.5 * (sq + sq.T)
            sq = xp.where(xp.eye(n, dtype=sq.dtype, device=sq.device) > 0, 0.0, sq)
        sq = xp.astype(sq, A.dtype)
    return xp.sqrt(xp.clip(sq, 0.0, None))


@dataclass(frozen=True)
class _Stationary:
    """A stationary kernel k(x, x') = σ² ρ(‖x − x'‖ / ℓ)."""

    variance: float = 1.0
    lengthscale: float = 1.0

    def __post_init__(self) -> None:
        positive_float(self.variance, "variance")
        positive_float(self.lengthscale, "lengthscale")

    def _profile(self, xp: Any, r: Array) -> Array:  # ρ(r) with r already divided by ℓ
        raise NotImplementedError

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        """The Gram matrix k(X1, X2) (n1 × n2); ``X2=None`` means X2 = X1."""
        X1 = _points(X1, "X1")
        X2 = X1 if X2 is None else _points(X2, "X2")
        xp = array_namespace(X1, X2)
        A = X1 / self.lengthscale
        r = _distance(A, A if X2 is X1 else X2 / self.lengthscale)
        return self.variance * self._profile(xp, r)

    def diag(self, X: Array) -> Array:
        """k(x, x) = σ² for every row of X."""
        X = _points(X, "X")
        xp = array_namespace(X)
        return xp.full((int(X.shape[0]),), self.variance, dtype=X.dtype, device=X.device)


@dataclass(frozen=True)
class RBF(_Stationary):
    """Squared-exponential kernel σ² exp(−r²/(2ℓ²))."""

    def _profile(self, xp: Any, r: Array) -> Array:
        return xp.exp(-0.5 * r * r)


@dataclass(frozen=True)
class Matern12(_Stationary):
    """Matérn-1/2 (exponential) kernel σ² exp(−r/ℓ)."""

    def _profile(self, xp: Any, r: Array) -> Array:
        return xp.exp(-r)


@dataclass(frozen=True)
class Matern32(_Stationary):
    """Matérn-3/2 kernel σ² (1 + √3 r/ℓ) exp(−√3 r/ℓ)."""

    def _profile(self, xp: Any, r: Array) -> Array:
        s = math.sqrt(3.0) * r
        return (1.0 + s) * xp.exp(-s)


@dataclass(frozen=True)
class Matern52(_Stationary):
    """Matérn-5/2 kernel σ² (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ)."""

    def _profile(self, xp: Any, r: Array) -> Array:
        s = math.sqrt(5.0) * r
        return (1.0 + s + s * s / 3.0) * xp.exp(-s)


@dataclass(frozen=True)
class Periodic(_Stationary):
    """Periodic (exp-sine-squared) kernel σ² exp(−2 sin²(π r/T)/ℓ²), period T.

    Positive definite for 1-D inputs; with r the Euclidean distance in d > 1 dimensions (as
    scikit-learn's ``ExpSineSquared``) it need not be — add jitter or use 1-D inputs.
    """

    period: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_float(self.period, "period")

    def __call__(self, X1: Array, X2: Array | None = None) -> Array:
        X1 = _points(X1, "X1")
        X2 = X1 if X2 is None else _points(X2, "X2")
        xp = array_namespace(X1, X2)
        r = _distance(X1, X2)
        s = xp.sin(math.pi * r / self.period) / self.lengthscale
        return self.variance * xp.exp(-2.0 * s * s)


@dataclass(frozen=True, eq=False)
class KernelGram:
    """The Gram operator Σ(C, C) of a kernel at context points C, applied in row blocks.

    Parameters
    ----------
    kernel : callable
        One of the kernels of this module (``kernel(X1, X2)`` and ``kernel.diag(X)``).
    points : array, shape (n_C, d) or (n_C,)
        Context points C.
    jitter : float
        Added to the diagonal (Σ(C, C) + jitter·I); 0 by default.
    block : int
        Rows per block of the matrix-free product.
    """

    kernel: Any
    points: Array
    jitter: float = 0.0
    block: int = 2048

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", _points(self.points, "points"))
        if float(self.jitter) < 0.0 or not math.isfinite(float(self.jitter)):
            raise ValueError(f"jitter must be >= 0 and finite; got jitter={self.jitter!r}")
        if int(self.block) < 1:
            raise ValueError(f"block must be >= 1; got block={self.block}")

    @property
    def n(self) -> int:
        """n_C, the number of context points."""
        return int(self.points.shape[0])

    def matvec(self, v: Array) -> Array:
        """Σ(C, C) v without forming Σ(C, C)."""
        xp = array_namespace(v)
        if tuple(v.shape) != (self.n,):
            raise ValueError(f"v must have shape ({self.n},); got {tuple(v.shape)}")
        parts = [
            self.kernel(self.points[i : min(i + self.block, self.n), ...], self.points) @ v
            for i in range(0, self.n, self.block)
        ]
        out = parts[0] if len(parts) == 1 else xp.concat(parts)
        return out + self.jitter * v if self.jitter else out

    __call__ = matvec

    def diagonal(self) -> Array:
        """diag Σ(C, C) (+ jitter): the prior marginal variances at the context points."""
        return self.kernel.diag(self.points) + self.jitter

    def dense(self) -> Array:
        """Σ(C, C) (+ jitter·I) as a matrix, for small n_C and dense references."""
        xp = array_namespace(self.points)
        K = self.kernel(self.points, self.points)
        if self.jitter:
            K = K + self.jitter * xp.eye(self.n, dtype=K.dtype, device=K.device)
        return K
