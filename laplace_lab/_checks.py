"""Argument validation shared by every layer: one clear error that names the argument.

The bottom of the package: ``theory``, ``numerics``, ``studies``, ``paper_checks`` and
``benchmarks`` all validate through these functions, so one mistake always gets one
exception type and one wording:

- a value of the wrong *type* (a string for a number, a bool or float for a count, a
  float array of indices) raises ``TypeError``;
- a value of the right type but outside its domain (negative, out of range, non-finite,
  duplicate indices, not PSD) raises ``ValueError``.

Messages read ``"<name> must be <what>; got <name>=<value>"`` so that the argument, the bound
and the offending value are in one line.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "PSD_RTOL",
    "ROUNDOFF_ULPS",
    "SYMMETRY_RTOL",
    "as_psd_matrix",
    "check_nested",
    "check_psd_spectrum",
    "check_symmetry",
    "dtype_eps",
    "integer",
    "isotropic_prior",
    "nonnegative_float",
    "one_of",
    "optional_positive_int",
    "positive_float",
    "positive_int",
    "prior_precision_vector",
    "real_array",
    "real_number",
    "scaled_prior",
    "subset",
    "subset_size",
]

#: Relative tolerance for the symmetry of a float64 Λ: ‖Λ − Λᵀ‖_max ≤ SYMMETRY_RTOL · ‖Λ‖_max.
SYMMETRY_RTOL = 1e-10
#: Relative tolerance for PSD-ness of a float64 Λ: λ_min ≥ −PSD_RTOL · max(1, p/100) · λ_max.
PSD_RTOL = 1e-10
#: In a lower precision both tolerances are ROUNDOFF_ULPS · eps(dtype) when that is larger:
#: 4096 ulps bound the worst-case rounding error n·u (u = eps/2) of sums of up to 8192 terms,
#: e.g. the entries of a Gram matrix GᵀG formed in float32 (4.9e-4 relative in float32).
ROUNDOFF_ULPS = 4096


def _is_integer(value: object) -> bool:
    return isinstance(value, Integral | np.integer) and not isinstance(value, bool | np.bool_)


def integer(value: object, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in [low, high] (either bound may be None)."""
    if not _is_integer(value):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        if high is None and low in (0, 1):
            what = "a positive integer" if low == 1 else "a non-negative integer"
        else:
            lo = "-inf" if low is None else str(low)
            hi = "inf" if high is None else str(high)
            what = f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {what}; got {name}={v}")
    return v


def positive_int(value: object, name: str, *, high: int | None = None) -> int:
    """``value`` as an int ≥ 1 (and ≤ ``high`` if given)."""
    return integer(value, name, low=1, high=high)


def optional_positive_int(value: object, name: str) -> int | None:
    """None, or ``value`` as an int ≥ 1."""
    return None if value is None else positive_int(value, name)


def real_number(value: object, name: str) -> float:
    """``value`` as a finite float (bools, strings and complex numbers are refused)."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, Real | np.floating | np.integer
    ):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    x = float(value)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite; got {name}={value!r}")
    return x


def positive_float(value: object, name: str) -> float:
    """``value`` as a finite float > 0."""
    if isinstance(value, bool | np.bool_) or not isinstance(
        value, Real | np.floating | np.integer
    ):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    x = float(value)
    if not np.isfinite(x) or x <= 0.0:
        raise ValueError(f"{name} must be positive and finite; got {name}={value!r}")
    return x


def nonnegative_float(value: object, name: str) -> float:
    """``value`` as a finite float ≥ 0."""
    x = real_number(value, name)
    if x < 0.0:
        raise ValueError(f"{name} must be >= 0; got {name}={value!r}")
    return x


def one_of(value: object, name: str, choices: Collection[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a ValueError listing them."""
    try:
        ok = value in choices
    except TypeError:  # unhashable value against a set
        ok = False
    if not ok:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {name}={value!r}")
    return value


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


def dtype_eps(dtype: object) -> float:
    """Machine epsilon of a floating dtype of any backend (NumPy, torch, array-API); the
    float64 epsilon for integer and unknown dtypes (their values are exact)."""
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        name = np.dtype(dtype).name
    else:  # torch.float32, array_api_strict.float32, ...
        name = str(dtype).rsplit(".", 1)[-1]
    if name == "bfloat16":
        return 2.0**-7
    if name in ("float16", "float32", "float64", "longdouble", "float128"):
        return float(np.finfo(name).eps)
    return float(np.finfo(np.float64).eps)


def _rtol(base: float, dtype: object) -> float:
    return max(base, ROUNDOFF_ULPS * dtype_eps(dtype))


def check_symmetry(asym: float, scale: float, dtype: object, name: str = "Lam") -> None:
    """Raise unless max|Λ − Λᵀ| = ``asym`` is roundoff of ``dtype`` relative to max|Λ| = ``scale``.

    The tolerance is ``SYMMETRY_RTOL`` (float64) or ``ROUNDOFF_ULPS`` · eps(dtype) when larger
    (4.9e-4 in float32), so a Gram matrix formed in float32 by torch or NumPy is accepted. A
    nearly symmetric matrix (asymmetry ≤ 1% of its scale) gets the fix in the message.
    """
    rtol = _rtol(SYMMETRY_RTOL, dtype)
    if asym > rtol * scale:
        hint = (
            f"; if the asymmetry is roundoff, pass the symmetric part ({name} + {name}.T) / 2"
            if asym <= 1e-2 * scale
            else ""
        )
        raise ValueError(
            f"{name} must be symmetric; got max |{name} - {name}.T| = {asym:.3g}, above "
            f"{rtol:.3g} * max |{name}| = {rtol * scale:.3g} for dtype {dtype}{hint}"
        )


def check_psd_spectrum(
    eig_min: float, eig_max: float, p: int, dtype: object, name: str = "Lam"
) -> None:
    """Raise unless λ_min ≥ −rtol · max(1, p/100) · max(λ_max, 0), rtol = ``PSD_RTOL`` (float64)
    or ``ROUNDOFF_ULPS`` · eps(dtype) when larger: a PSD matrix rounded to ``dtype`` passes."""
    floor = -_rtol(PSD_RTOL, dtype) * max(1.0, p / 100) * max(float(eig_max), 0.0)
    if eig_min < floor:
        raise ValueError(
            f"{name} must be positive semi-definite; got smallest eigenvalue {eig_min:.3g} "
            f"(tolerance {floor:.3g} for dtype {dtype})"
        )


def as_psd_matrix(Lam: object, name: str = "Lam") -> np.ndarray:
    """``Lam`` as a symmetric float64 PSD matrix, or an error naming it.

    Symmetric and PSD are checked up to the roundoff of the input's dtype
    (:func:`check_symmetry`, :func:`check_psd_spectrum`: 1e-10 relative in float64, 4.9e-4 in
    float32); the returned matrix is the exact symmetrisation (Λ + Λᵀ)/2 in float64.
    """
    raw = real_array(_host(Lam), name)
    A = raw.astype(np.float64, copy=False)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix; got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    scale = float(np.max(np.abs(A)))
    check_symmetry(float(np.max(np.abs(A - A.T))), scale, raw.dtype, name)
    A = 0.5 * (A + A.T)
    if scale > 0.0:
        eig = np.linalg.eigvalsh(A)
        check_psd_spectrum(float(eig[0]), float(eig[-1]), A.shape[0], raw.dtype, name)
    return A


def prior_precision_vector(value: object, p: int, name: str = "prior_precision") -> np.ndarray:
    """The prior precision V as a length-p vector of positive reals (V = diag(vector))."""
    v = real_array(value, name).astype(np.float64)
    if v.ndim == 0:
        v = np.full(p, positive_float(float(v), name))
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


def _host(x: object) -> object:
    """A device or array-API array (CuPy, torch, array_api_strict) as a host NumPy array."""
    if isinstance(x, np.ndarray) or not hasattr(x, "__dlpack__"):
        return x
    for convert in (lambda a: a.get(), lambda a: a.detach().cpu().numpy(), np.from_dlpack):
        try:
            return np.asarray(convert(x))
        except (AttributeError, TypeError, RuntimeError, BufferError):
            continue
    return x


def subset(S: object, p: int, name: str = "S", *, nonempty: bool = False) -> np.ndarray:
    """``S`` as an int64 host array of distinct indices in [0, p), order kept.

    ``S`` may be a sequence or an array of any backend that supports DLPack (CuPy, torch).
    """
    S = _host(S)
    try:
        idx = np.asarray(S)
    except ValueError as err:
        raise ValueError(f"{name} must be a 1-D sequence of indices; got a ragged one") from err
    if idx.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of indices; got shape {idx.shape}")
    if idx.size == 0:
        if nonempty:
            raise ValueError(f"{name} must contain at least one index")
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


def subset_size(k: object, p: int, name: str = "k", *, low: int = 0, bound: str = "p") -> int:
    """``k`` as an int in [low, p]; the error also names the upper bound (``bound``, e.g.
    ``"len(order)"`` when p is the length of an ordering rather than the parameter count)."""
    if not _is_integer(k):
        raise TypeError(f"{name} must be an integer; got {type(k).__name__} {k!r}")
    if not low <= int(k) <= p:
        raise ValueError(f"{name} must be in [{low}, {bound}]; got {name}={k}, {bound}={p}")
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
