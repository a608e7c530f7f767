"""SSLA and ASSLA for regression networks with the Gauss–Newton Fisher.

J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation for
Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, eqs. (12) and (17); the
network form is derived in docs/mathematics.md, "Networks with the Gauss–Newton Fisher".
For a new input x* with MAP output f̂ = f(x*), gradient g = g(x*), candidate ŷ and residual
r = ŷ − f̂, the Gauss–Newton Fisher gains the rank-one term of the new point:
J̃ = J + g gᵀ/σ0². The matrix determinant lemma gives

    ½ log|J| − ½ log|J̃| = −½ log(1 + v/σ0²),   v = gᵀ J⁻¹ g,

so no p×p log-determinant is needed; v comes from the GGN factor by Woodbury
(docs/mathematics.md, "Woodbury predictive"). We use the *posterior variant* (Laplace on the
log-joint, J = Ω = J_wᵀJ_w + V, its Hessian): the likelihood-only Fisher JᵀJ/σ0² is singular
for networks with p > N.

- **ASSLA** (eq. 17): log p(ŷ|D) ≈ log N(ŷ; f̂, σ0²) − ½ log(1 + v/σ0²). The determinant term
  does not depend on ŷ, so normalised over ŷ ASSLA is N(f̂, σ0²): it carries no epistemic
  variance (as in the normal–normal model, where ASSLA is exactly N(x̄, σ²) and under-covers
  by the posterior variance σ_n²).
- **SSLA** (eq. 12) in the linearised network f(x, θ) ≈ f̂ + gᵀ(θ − θ̂) (the GGN model): the
  augmented mode is θ̃ = θ̂ + Ω̃⁻¹ g r/σ0² = θ̂ + Ω⁻¹g · r/(σ0² + v) (Sherman–Morrison), and
  the terms ℓ̃(θ̃) − ℓ_D(θ̂) + log π(θ̃) − log π(θ̂) = log N(ŷ; f̂ + gᵀ(θ̃−θ̂), σ0²) −
  ½(θ̃−θ̂)ᵀΩ(θ̃−θ̂) sum with the determinant term to log N(ŷ; f̂, σ0² + v) — the linearized-Laplace
  predictive. :func:`ssla_log_density` evaluates the terms one by one (the test checks them against
  a dense p×p computation), not the closed form.

Kernels accept any array-API backend (through
:func:`laplace_lab.numerics.predictive.predictive_variance`); scores (coverage, NLL, CRPS) are
computed on the host in float64.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri

from laplace_lab._checks import positive_float
from laplace_lab.numerics.backend import as_float, namespace, to_numpy
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.predictive import predictive_variance

__all__ = [
    "NormalPredictive",
    "assla_log_density",
    "assla_log_density_from_variance",
    "assla_predictive",
    "gaussian_scores",
    "log_det_ratio",
    "ssla_log_density",
    "ssla_log_density_from_variance",
    "ssla_predictive",
]


class NormalPredictive(NamedTuple):
    """A Gaussian predictive N(mean, var) per test point (host float64 arrays)."""

    mean: np.ndarray
    var: np.ndarray


def _inputs(ggn: Any, G_test: Any, f_test: Any, noise_var: Any) -> tuple[Any, Any, float]:
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    if ggn.likelihood in ("binary", "multiclass"):
        raise ValueError(f"ggn must be a regression GGN; got likelihood={ggn.likelihood!r}")
    s2 = positive_float(noise_var, "noise_var")
    if ggn.likelihood == "regression" and not np.isclose(s2, ggn.noise_var, rtol=1e-12, atol=0):
        raise ValueError(
            f"noise_var must be the σ² of the GGN's Ω ({ggn.noise_var:g}); got noise_var={s2:g}"
        )
    v = predictive_variance(ggn, G_test)
    if v.ndim != 1:
        raise ValueError(
            f"G_test must have shape (M, p) (one regression output); got {G_test.shape}"
        )
    f = as_float(f_test, "f_test")
    if tuple(f.shape) != tuple(v.shape):
        raise ValueError(f"f_test must have shape {tuple(v.shape)}; got {tuple(f.shape)}")
    return v, f, s2


def _variance_inputs(v: Any, f_test: Any, noise_var: Any) -> tuple[Any, Any, float]:
    v, f = as_float(v, "v"), as_float(f_test, "f_test")
    if v.ndim != 1 or tuple(f.shape) != tuple(v.shape):
        raise ValueError(
            f"v and f_test must be (M,) vectors of one length; got {tuple(v.shape)}, "
            f"{tuple(f.shape)}"
        )
    return v, f, positive_float(noise_var, "noise_var")


def log_det_ratio(v: Any, noise_var: float) -> Any:
    """½log|J| − ½log|J + ggᵀ/σ0²| = −½ log(1 + v/σ0²) with v = gᵀJ⁻¹g (determinant lemma)."""
    xp = namespace(v)
    s2 = positive_float(noise_var, "noise_var")
    return -0.5 * xp.log1p(v / s2)


def _y(y: Any, like: Any) -> Any:
    yv = as_float(y, "y")
    if yv.ndim == 1:
        yv = yv[:, None]
    if yv.ndim != 2 or yv.shape[0] != like.shape[0]:
        raise ValueError(
            f"y must have shape (M,) or (M, n_grid) with M={like.shape[0]}; got {tuple(yv.shape)}"
        )
    return yv


def assla_log_density(ggn: GGN, G_test: Any, f_test: Any, y: Any, *, noise_var: float) -> Any:
    """Unnormalised ASSLA log p(ŷ | D), eq. (17): log N(ŷ; f̂, σ0²) − ½ log(1 + v/σ0²).

    Parameters
    ----------
    ggn : GGN
        The posterior precision Ω (regression GGN with prior).
    G_test : (M, p) array
        g(x*) at the test inputs.
    f_test : (M,) array
        MAP outputs f̂(x*).
    y : (M,) or (M, n_grid) array
        Candidate values ŷ per test point.
    noise_var : float
        σ0².

    Returns
    -------
    (M, n_grid) array

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §4 eq. (17).
    """
    v, f, s2 = _inputs(ggn, G_test, f_test, noise_var)
    return assla_log_density_from_variance(v, f, y, noise_var=s2)


def assla_log_density_from_variance(v: Any, f_test: Any, y: Any, *, noise_var: float) -> Any:
    """Eq. (17) from the epistemic variances v = gᵀJ⁻¹g of any curvature (dense GGN,
    diagonal, KFAC): log N(ŷ; f̂, σ0²) − ½ log(1 + v/σ0²). Shapes as :func:`assla_log_density`.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §4 eq. (17).
    """
    v, f, s2 = _variance_inputs(v, f_test, noise_var)
    r = _y(y, v) - f[:, None]
    return -0.5 * math.log(2 * math.pi * s2) - r * r / (2 * s2) + log_det_ratio(v, s2)[:, None]


def ssla_log_density(ggn: GGN, G_test: Any, f_test: Any, y: Any, *, noise_var: float) -> Any:
    """Unnormalised SSLA log p(ŷ | D), eq. (12), for the linearised network (module docstring).

    Evaluates ℓ_new(θ̃) + [log-joint(θ̃) − log-joint(θ̂)] + [½log|Ω| − ½log|Ω̃|] with
    θ̃ − θ̂ = Ω⁻¹g · r/(σ0² + v), so gᵀ(θ̃ − θ̂) = v r/(σ0² + v) and
    (θ̃ − θ̂)ᵀΩ(θ̃ − θ̂) = v r²/(σ0² + v)². Shapes as :func:`assla_log_density`.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3 eq. (12).
    """
    v, f, s2 = _inputs(ggn, G_test, f_test, noise_var)
    return ssla_log_density_from_variance(v, f, y, noise_var=s2)


def ssla_log_density_from_variance(v: Any, f_test: Any, y: Any, *, noise_var: float) -> Any:
    """Eq. (12) for the linearised network from the epistemic variances v of any curvature;
    the terms of :func:`ssla_log_density`, evaluated one by one.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3 eq. (12).
    """
    v, f, s2 = _variance_inputs(v, f_test, noise_var)
    r = _y(y, v) - f[:, None]
    vv = v[:, None]
    step = vv * r / (s2 + vv)  # gᵀ(θ̃ − θ̂): the refit's move of the prediction
    quad = vv * r * r / (s2 + vv) ** 2  # (θ̃ − θ̂)ᵀ Ω (θ̃ − θ̂)
    ell_new = -0.5 * math.log(2 * math.pi * s2) - (r - step) ** 2 / (2 * s2)
    return ell_new - 0.5 * quad + log_det_ratio(v, s2)[:, None]


def assla_predictive(ggn: GGN, G_test: Any, f_test: Any, *, noise_var: float) -> NormalPredictive:
    """ASSLA normalised over ŷ ∈ ℝ: N(f̂, σ0²) (the determinant term is constant in ŷ)."""
    _, f, s2 = _inputs(ggn, G_test, f_test, noise_var)
    f = np.asarray(to_numpy(f), dtype=np.float64)
    return NormalPredictive(f, np.full(f.shape, s2))


def ssla_predictive(ggn: GGN, G_test: Any, f_test: Any, *, noise_var: float) -> NormalPredictive:
    """SSLA normalised over ŷ: N(f̂, σ0² + v) — equal to linearized Laplace (module docstring)."""
    v, f, s2 = _inputs(ggn, G_test, f_test, noise_var)
    return NormalPredictive(
        np.asarray(to_numpy(f), dtype=np.float64), np.asarray(to_numpy(v), dtype=np.float64) + s2
    )


def gaussian_scores(
    pred: NormalPredictive, y: Any, *, levels: tuple[float, ...] = (0.95, 0.90, 0.75, 0.50)
) -> dict[str, float]:
    """Coverage of central intervals at ``levels``, mean NLL and mean CRPS of N(mean, var) at y.

    CRPS(N(μ, σ²), y) = σ [z(2Φ(z) − 1) + 2φ(z) − 1/√π], z = (y − μ)/σ (Gneiting & Raftery
    2007); the metrics of Tables 1 and 3 of Rodemann et al., arXiv:2605.12208.
    """
    if not isinstance(pred, NormalPredictive):
        raise TypeError(f"pred must be a NormalPredictive; got {type(pred).__name__}")
    yv = np.asarray(to_numpy(as_float(y, "y")), dtype=np.float64)
    if yv.shape != pred.mean.shape:
        raise ValueError(f"y must have shape {pred.mean.shape}; got {yv.shape}")
    if np.any(pred.var <= 0):
        raise ValueError("pred.var must be positive")
    for lv in levels:
        if not 0.0 < lv < 1.0:
            raise ValueError(f"levels must lie in (0, 1); got {lv!r}")
    sd = np.sqrt(pred.var)
    z = (yv - pred.mean) / sd
    out = {
        f"coverage_{round(100 * lv)}": float(np.mean(np.abs(z) <= ndtri(0.5 + lv / 2)))
        for lv in levels
    }
    out["nll"] = float(np.mean(0.5 * np.log(2 * np.pi * pred.var) + 0.5 * z * z))
    pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    out["crps"] = float(np.mean(sd * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / np.sqrt(np.pi))))
    return out
