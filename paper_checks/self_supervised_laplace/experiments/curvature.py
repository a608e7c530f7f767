"""Linearized Laplace, SSLA and ASSLA on the heteroscedastic toy with three representations of
the curvature: dense GGN, diagonal, KFAC (Rodemann et al. §5.1, Table 1).

J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation for
Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5.1: "the observed Fisher
information is approximated via three covariance representations: diagonal,
Kronecker-factored (KFAC), and dense"; Table 1 reports coverage at 95/90/75/50%.

Each curvature c gives the epistemic variance v_c(x*) = g(x*)ᵀ J_c⁻¹ g(x*): dense
(Woodbury, :func:`laplace_lab.numerics.predictive.predictive_variance`), diagonal
(:func:`laplace_lab.numerics.laplace_variants.diagonal_laplace_variance`) and KFAC
(:func:`laplace_lab.numerics.kfac.fit_kfac`). LA is N(f̂, σ0² + v_c). SSLA (eq. 12, linearised
network) and ASSLA (eq. 17) are evaluated as unnormalised log densities on a grid of ŷ
around f̂ and normalised *numerically* (trapezoid), so nothing assumes their closed forms;
their central intervals come from the grid CDF.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from laplace_lab._checks import integer, positive_float
from laplace_lab.networks.training import TrainConfig, single_threaded
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.kfac import fit_kfac
from laplace_lab.numerics.laplace_variants import SpectralLaplace, diagonal_laplace_variance
from laplace_lab.numerics.network_ssla import (
    NormalPredictive,
    assla_log_density_from_variance,
    gaussian_scores,
    ssla_log_density_from_variance,
)
from laplace_lab.numerics.predictive import predictive_variance
from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
    HeteroscedasticFit,
    fit_heteroscedastic,
)

__all__ = [
    "CURVATURES",
    "LEVELS",
    "CurvatureCoverage",
    "CurvatureVariances",
    "curvature_comparison",
    "curvature_coverage",
    "curvature_variances",
    "grid_intervals",
]

CURVATURES = ("DENSE", "DIAG", "KFAC")
#: The nominal levels of Table 1.
LEVELS = (0.95, 0.90, 0.75, 0.50)


@dataclass(frozen=True)
class CurvatureCoverage:
    """``coverage[method][curvature]``: the empirical coverage of the central intervals at
    :data:`LEVELS` (method in LA, SSLA, ASSLA); ``density_spread[method]``: the largest
    difference between the normalised densities of two curvatures, relative to the density's
    peak; ``n_test``, ``noise_var`` (σ0²) and ``prior_precision``."""

    coverage: dict[str, dict[str, np.ndarray]]
    density_spread: dict[str, float]
    n_test: int
    noise_var: float
    prior_precision: float


def grid_intervals(y_grid: np.ndarray, log_density: np.ndarray, levels) -> np.ndarray:
    """Central intervals (L, M, 2) of densities known up to a constant on rows of ``y_grid``.

    Each row is normalised by the trapezoidal rule; the interval at level ℓ runs between the
    (1 − ℓ)/2 and (1 + ℓ)/2 quantiles of the piecewise-linear CDF.
    """
    return _intervals(y_grid, _unnormalised(log_density), levels)


def _unnormalised(log_density: np.ndarray) -> np.ndarray:
    """exp(log density − its row maximum): each row's density up to a constant, peak 1."""
    return np.exp(log_density - log_density.max(axis=1, keepdims=True))


def _intervals(y_grid: np.ndarray, p: np.ndarray, levels) -> np.ndarray:
    """:func:`grid_intervals` of the unnormalised densities ``p`` (:func:`_unnormalised`)."""
    steps = 0.5 * (p[:, 1:] + p[:, :-1]) * np.diff(y_grid, axis=1)
    cdf = np.empty(p.shape, dtype=steps.dtype)  # summed in the densities' own precision
    cdf[:, 0] = 0.0
    np.cumsum(steps, axis=1, out=cdf[:, 1:])
    cdf /= cdf[:, -1:]
    out = np.empty((len(levels), p.shape[0], 2))
    for i, lv in enumerate(levels):
        for side, q in enumerate(((1 - lv) / 2, (1 + lv) / 2)):
            out[i, :, side] = _interp_rows(q, cdf, y_grid)
    return out


def _count_at_most(x: float, xp: np.ndarray) -> np.ndarray:
    """The number of entries ≤ ``x`` in each row of ``xp``, by bisection: rows non-decreasing
    up to a NaN tail (a CDF whose cumulative sum turned NaN stays NaN; NaN ≤ x is false)."""
    lo = np.zeros(xp.shape[0], dtype=np.intp)
    hi = np.full(xp.shape[0], xp.shape[1], dtype=np.intp)
    rows = np.arange(xp.shape[0])
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        below = open_ & (xp[rows, np.minimum(mid, xp.shape[1] - 1)] <= x)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)


def _interp_rows(x: float, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``np.interp(x, xp[j], fp[j])`` for every row j at once, with its arithmetic: the
    segment xp[j, k] ≤ x < xp[j, k + 1], slope·(x − xp[j, k]) + fp[j, k] (from the right end
    where that is NaN), fp[j, k] where x hits a node, the end values outside."""
    rows = np.arange(xp.shape[0])
    last = xp.shape[1] - 1
    k = np.minimum(_count_at_most(x, xp) - 1, last - 1)  # rows of a non-decreasing xp
    k = np.maximum(k, 0)
    x0, x1, f0, f1 = xp[rows, k], xp[rows, k + 1], fp[rows, k], fp[rows, k + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (f1 - f0) / (x1 - x0)
        out = slope * (x - x0) + f0
        back = slope * (x - x1) + f1
    nan = np.isnan(out)
    out = np.where(nan, back, out)
    out = np.where(nan & np.isnan(back) & (f0 == f1), f0, out)
    out = np.where(x0 == x, f0, out)
    out = np.where(x < xp[:, 0], fp[:, 0], out)
    return np.where(x >= xp[:, last], fp[:, last], out)


def _normalised(y_grid: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The unnormalised densities ``p`` (:func:`_unnormalised`) normalised by the trapezoid."""
    return p / np.trapezoid(p, y_grid, axis=1)[:, None]


@single_threaded()
def curvature_comparison(
    *,
    rng: np.random.Generator | int,
    n_train: int = 500,
    n_test: int = 500,
    prior_precision: float | None = None,
    config: TrainConfig | None = None,
    grid_points: int = 801,
) -> CurvatureCoverage:
    """Coverage of LA, SSLA and ASSLA under each curvature on one seeded toy (module docstring):
    :func:`fit_heteroscedastic`, then :func:`curvature_coverage` on its fit.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5.1
       and Table 1.
    """
    grid_points = integer(grid_points, "grid_points", low=2)
    if prior_precision is not None:
        prior_precision = positive_float(prior_precision, "prior_precision")
    fit = fit_heteroscedastic(rng=rng, n_train=n_train, n_test=n_test, config=config)
    return curvature_coverage(fit, prior_precision=prior_precision, grid_points=grid_points)


@dataclass(frozen=True)
class CurvatureVariances:
    """The Laplace part of :func:`curvature_coverage` that does not depend on the test
    targets: λ and the epistemic variance v_c(x*) per curvature c."""

    prior_precision: float
    variance: dict[str, np.ndarray]


@single_threaded()
def curvature_variances(
    fit: HeteroscedasticFit, *, prior_precision: float | None = None
) -> CurvatureVariances:
    """λ and v_c(x*) = g(x*)ᵀ J_c⁻¹ g(x*) under each curvature c on a fitted MAP network.

    ``prior_precision=None`` tunes λ post hoc by the Laplace evidence of the dense GGN over a
    log grid (the paper tunes LA's prior precision by the marginal likelihood, App. C.2);
    every curvature then uses that λ.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5.1
       and App. C.2.
    """
    if not isinstance(fit, HeteroscedasticFit):
        raise TypeError(f"fit must be a HeteroscedasticFit; got {type(fit).__name__}")
    s2 = fit.noise_var
    if prior_precision is None:
        grid = np.logspace(-3, 4, 57)
        theta2 = float(sum((t.detach() ** 2).sum() for t in fit.model.parameters()))
        evidence = SpectralLaplace(fit.J / np.sqrt(s2)).log_evidence(grid, theta2)
        prior_precision = float(grid[int(np.argmax(evidence))])
    else:
        prior_precision = positive_float(prior_precision, "prior_precision")
    ggn = GGN.regression(fit.J, noise_var=s2, prior_precision=prior_precision)
    kfac = fit_kfac(
        fit.model,
        fit.data.X_train,
        likelihood="regression",
        prior_precision=prior_precision,
        noise_var=s2,
    )
    variance = {
        "DENSE": np.asarray(predictive_variance(ggn, fit.G)),
        "DIAG": diagonal_laplace_variance(ggn, fit.G),
        "KFAC": kfac.variance(fit.model, fit.data.X_test),
    }
    return CurvatureVariances(float(prior_precision), variance)


@single_threaded()
def curvature_coverage(
    fit: HeteroscedasticFit,
    *,
    prior_precision: float | None = None,
    grid_points: int = 801,
    curvature: CurvatureVariances | None = None,
) -> CurvatureCoverage:
    """Coverage of LA, SSLA and ASSLA under each curvature on a fitted MAP network.

    ``curvature``: the network's :func:`curvature_variances` when already computed (their
    λ is used; a ``prior_precision`` beside them is refused); otherwise they are computed
    here with ``prior_precision`` (None: λ by the Laplace evidence). Split from the fit so
    that the coverage of one fit can be recomputed (e.g. under another scoring rule) without
    training again.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5.1
       and Table 1.
    """
    if not isinstance(fit, HeteroscedasticFit):
        raise TypeError(f"fit must be a HeteroscedasticFit; got {type(fit).__name__}")
    grid_points = integer(grid_points, "grid_points", low=2)
    if curvature is None:
        curvature = curvature_variances(fit, prior_precision=prior_precision)
    elif not isinstance(curvature, CurvatureVariances):
        raise TypeError(
            f"curvature must be CurvatureVariances or None; got {type(curvature).__name__}"
        )
    elif prior_precision is not None:
        raise ValueError(
            "prior_precision must be None when curvature is given (its variances were "
            f"computed with λ = {curvature.prior_precision:.6g}); got {prior_precision!r}"
        )
    s2, f, y = fit.noise_var, fit.f_test, fit.data.y_test
    prior_precision, variance = curvature.prior_precision, curvature.variance
    half = 10.0 * np.sqrt(s2 + max(float(v.max()) for v in variance.values()))
    y_grid = f[:, None] + np.linspace(-half, half, grid_points)[None, :]
    coverage: dict[str, dict[str, np.ndarray]] = {"LA": {}, "SSLA": {}, "ASSLA": {}}
    densities: dict[str, list[np.ndarray]] = {"SSLA": [], "ASSLA": []}
    for c, v in variance.items():
        scores = gaussian_scores(NormalPredictive(f, s2 + v), y, levels=LEVELS)
        coverage["LA"][c] = np.array([scores[f"coverage_{round(100 * lv)}"] for lv in LEVELS])
        for method, density in (
            ("SSLA", ssla_log_density_from_variance),
            ("ASSLA", assla_log_density_from_variance),
        ):
            p = _unnormalised(np.asarray(density(v, f, y_grid, noise_var=s2)))
            densities[method].append(_normalised(y_grid, p))
            iv = _intervals(y_grid, p, LEVELS)
            inside = (iv[:, :, 0] <= y) & (y <= iv[:, :, 1])
            coverage[method][c] = inside.mean(axis=1)
    spread = {}
    for method, ps in densities.items():
        # the largest pointwise range across curvatures over the largest density (no stack)
        hi, lo = functools.reduce(np.maximum, ps), functools.reduce(np.minimum, ps)
        spread[method] = float(np.max(hi - lo) / np.max(hi))
    return CurvatureCoverage(coverage, spread, int(y.size), float(s2), float(prior_precision))
