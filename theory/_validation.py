"""Input validation shared by the theory layer: clear errors that name the argument."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np

#: Relative tolerance for the symmetry of Λ: ‖Λ − Λᵀ‖_max ≤ SYMMETRY_RTOL · ‖Λ‖_max.
SYMMETRY_RTOL = 1e-10
#: Relative tolerance for PSD-ness: λ_min(Λ) ≥ −PSD_RTOL · max(1, p/100) · λ_max(Λ).
PSD_RTOL = 1e-10


def as_psd_matrix(Lam: object, name: str = "Lam") -> np.ndarray:
    """Return ``Lam`` as a symmetric float64 PSD matrix, or raise a ValueError naming it.

    Symmetric and PSD are checked up to roundoff (``SYMMETRY_RTOL``, ``PSD_RTOL``); the
    returned matrix is the exact symmetrisation (Λ + Λᵀ)/2.
    """
    A = real_array(Lam, name)
    if not (np.issubdtype(A.dtype, np.floating) or np.issubdtype(A.dtype, np.integer)):
        raise TypeError(f"{name} must be a real numeric array; got dtype {A.dtype}")
    A = A.astype(np.float64, copy=False)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix; got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    scale = float(np.max(np.abs(A)))
    asym = float(np.max(np.abs(A - A.T)))
    if asym > SYMMETRY_RTOL * scale:
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}.T| = {asym:.3g} "
            f"exceeds {SYMMETRY_RTOL:g} * max |{name}| = {SYMMETRY_RTOL * scale:.3g}"
        )
    A = 0.5 * (A + A.T)
    if scale > 0.0:
        eig = np.linalg.eigvalsh(A)
        floor = -PSD_RTOL * max(1.0, A.shape[0] / 100) * max(float(eig[-1]), 0.0)
        if eig[0] < floor:
            raise ValueError(
                f"{name} must be positive semi-definite; its smallest eigenvalue is "
                f"{eig[0]:.3g} (tolerance {floor:.3g})"
            )
    return A


def real_array(value: object, name: str) -> np.ndarray:
    """``value`` as a NumPy array of real numbers (bool, complex, strings and ragged nested
    sequences are rejected with an error naming the argument)."""
    try:
        A = np.asarray(value)
    except ValueError as err:
        raise ValueError(f"{name} must be a rectangular array; got a ragged sequence") from err
    if A.dtype == bool or not (
        np.issubdtype(A.dtype, np.floating) or np.issubdtype(A.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real numeric array; got dtype {A.dtype}")
    return A


def positive_scalar(value: object, name: str) -> float:
    """Return ``value`` as a float > 0, or raise a ValueError naming it."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, Real | np.floating | np.integer
    ):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__}")
    x = float(value)
    if not np.isfinite(x) or x <= 0.0:
        raise ValueError(f"{name} must be positive and finite; got {name}={value!r}")
    return x


def prior_precision_vector(value: object, p: int, name: str = "prior_precision") -> np.ndarray:
    """The prior precision V as a length-p vector of positive reals (V = diag(vector))."""
    v = real_array(value, name).astype(np.float64)
    if v.ndim == 0:
        v = np.full(p, positive_scalar(float(v), name))
    if v.shape != (p,):
        raise ValueError(f"{name} must be a scalar or a vector of length p={p}; got {v.shape}")
    if not np.all(np.isfinite(v)) or np.any(v <= 0.0):
        raise ValueError(f"{name} must be positive and finite in every entry")
    return v


def isotropic_prior(value: object, p: int, name: str = "prior_precision") -> float:
    """The constant c of V = cI, or a ValueError when ``value`` is not isotropic."""
    v = prior_precision_vector(value, p, name)
    if np.ptp(v) > 1e-12 * v.max():
        raise ValueError(f"{name} must be isotropic (V = cI) for this theorem; got a vector")
    return float(v[0])


def subset(S: object, p: int, name: str = "S") -> np.ndarray:
    """``S`` as an int64 array of distinct indices in [0, p), order kept."""
    try:
        idx = np.asarray(S)
    except ValueError as err:
        raise ValueError(f"{name} must be a 1-D sequence of indices; got a ragged one") from err
    if idx.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of indices; got shape {idx.shape}")
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64)
    if idx.dtype == bool or not np.issubdtype(idx.dtype, np.integer):
        raise TypeError(f"{name} must contain integer indices; got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
    if idx.min() < 0 or idx.max() >= p:
        raise ValueError(
            f"{name} has indices outside [0, {p}); got min {idx.min()}, max {idx.max()}"
        )
    if np.unique(idx).size != idx.size:
        raise ValueError(f"{name} must not contain duplicate indices")
    return idx


def subset_size(k: object, p: int, name: str = "k", *, low: int = 0) -> int:
    """``k`` as an int in [low, p]."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise TypeError(f"{name} must be an integer; got {type(k).__name__}")
    if not low <= int(k) <= p:
        raise ValueError(f"{name} must be in [{low}, p]; got {name}={k}, p={p}")
    return int(k)


def scaled_prior(scale: float, v: np.ndarray) -> np.ndarray:
    """c·v with c = σ0²/N, or a ValueError when it under- or overflows."""
    with np.errstate(over="ignore", under="ignore"):
        cv = scale * v
    if not (np.isfinite(scale) and scale > 0 and np.all(np.isfinite(cv)) and np.all(cv > 0)):
        raise ValueError(
            "noise_var / n * prior_precision must be positive and finite in float64; got "
            f"noise_var/n = {scale:.3g} and prior_precision in [{v.min():.3g}, {v.max():.3g}]"
        )
    return cv


def check_nested(S: np.ndarray, S_sup: np.ndarray, names: Sequence[str] = ("S", "S_sup")) -> None:
    """Raise unless every index of ``S`` is in ``S_sup``."""
    missing = np.setdiff1d(S, S_sup)
    if missing.size:
        raise ValueError(
            f"{names[0]} must be a subset of {names[1]}; indices {missing.tolist()} are not in it"
        )
