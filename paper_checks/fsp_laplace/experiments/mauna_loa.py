"""The Mauna Loa CO₂ experiment of FSP-Laplace (§4.1, Table 1, App. B.2) on offline data.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711, §4.1 "Mauna Loa dataset", Table 1 and App. B.2 "Mauna Loa".

Data: the paper uses NOAA's monthly means 1974–2024, which no installed package ships; the
weekly Mauna Loa series of ``statsmodels.datasets.co2`` (March 1958 – December 2001) averaged
per calendar month (months without a measurement dropped: 521 months) stands in. Protocol of
App. B.2: the first 70 % of the months in chronological order train, the rest test; time and
CO₂ are standardised with the training split's mean and standard deviation. Every network is a
2 × 50 tanh MLP on the features (t, sin 2πt/T, cos 2πt/T), T = one year (the period of
Rasmussen & Williams 2006, §5.4.3), computed inside the network (:class:`PeriodicFeatures`) so
that the GP prior, the context points and the Jacobians all live on the time axis.

Methods (:func:`mauna_loa_experiment`):

- ``GP``: the covariance function of Rasmussen & Williams §5.4.3 (eq. 5.19: a long-term RBF
  trend, an RBF × periodic seasonal term, a rational-quadratic medium term, a short RBF term and
  white noise) with hyperparameters by maximising the marginal likelihood (scikit-learn), the
  period fixed to one year; the exact posterior
  (:func:`~laplace_lab.paper_checks.fsp_laplace.experiments.scores.gp_predictive`);
- ``FSP-Laplace``: the same prior (without the white noise), 100 context points on a regular
  grid of the widened box of App. B.2 (the training times ± half their range, which covers the
  test period), Algorithm 1 at those fixed points, Algorithm 2 with at most 500 Lanczos steps,
  learned noise scale;
- ``Laplace``: MAP under w ~ N(0, I), the full GGN, the prior precision by the linearised
  evidence (Immer et al. 2021), learned noise scale; ``MAP`` is its mean with zero epistemic
  variance.

The objective of both networks is deterministic (full batch, fixed context points), so they are
trained with L-BFGS (strong-Wolfe line search) for a fixed number of evaluations.

Audits in the run (:mod:`~laplace_lab.paper_checks.fsp_laplace.experiments.audits`): the
standardised training months have mean 0 and standard deviation 1 (scaler fitted on them
alone), and the context grid lies within the training times' widened box and on no test month.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import torch

from laplace_lab._checks import one_of, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.networks.fsp_laplace import FSPLaplaceModel, LinearizedLaplaceModel
from laplace_lab.networks.fsp_training import ContextBox
from laplace_lab.paper_checks.fsp_laplace.experiments.audits import (
    require_context_apart,
    require_evidence_exact_on_linear_model,
    require_standardised,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.scores import (
    gp_predictive,
    regression_scores,
    tanh_mlp,
)

__all__ = [
    "METHODS",
    "MaunaLoa",
    "PeriodicFeatures",
    "co2_gp_scores",
    "co2_kernel",
    "fit_co2_gp",
    "load_mauna_loa",
    "mauna_loa_experiment",
]

METHODS = ("FSP-Laplace", "Laplace", "MAP", "GP")


class MaunaLoa(NamedTuple):
    """Standardised chronological split: time (n, 1) and CO₂ (n,), with the scales."""

    t_train: np.ndarray
    y_train: np.ndarray
    t_test: np.ndarray
    y_test: np.ndarray
    t_scale: float
    y_scale: float
    years: np.ndarray


def load_mauna_loa(train_fraction: float = 0.7) -> MaunaLoa:
    """Monthly means of the statsmodels weekly Mauna Loa series, split chronologically."""
    import statsmodels.datasets.co2 as co2

    f = float(train_fraction)
    if not 0.0 < f < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1); got train_fraction={train_fraction}")
    monthly = co2.load_pandas().data.resample("MS").mean().dropna()
    years = np.asarray(monthly.index.year + (monthly.index.month - 0.5) / 12, dtype=np.float64)
    y = monthly["co2"].to_numpy(np.float64)
    n_train = round(f * y.size)
    t_mean, t_scale = years[:n_train].mean(), years[:n_train].std()
    y_mean, y_scale = y[:n_train].mean(), y[:n_train].std()
    t, z = (years - t_mean) / t_scale, (y - y_mean) / y_scale
    return MaunaLoa(
        t[:n_train, None], z[:n_train], t[n_train:, None], z[n_train:], t_scale, y_scale, years
    )


def co2_kernel(t_scale: float, y_scale: float, *, periodic: bool = True) -> Any:
    """Rasmussen & Williams §5.4.3's CO₂ covariance on standardised time and CO₂ (scikit-learn),
    initialised at their values (ppm, years) and with the period fixed to one year;
    ``periodic=False`` drops the seasonal term. Includes the white-noise term."""
    from sklearn.gaussian_process import kernels as k

    a, s = 1.0 / y_scale**2, 1.0 / t_scale
    trend = k.ConstantKernel(66.0**2 * a) * k.RBF(67.0 * s)
    seasonal = (
        k.ConstantKernel(2.4**2 * a)
        * k.RBF(90.0 * s)
        * k.ExpSineSquared(1.3, s, periodicity_bounds="fixed")
    )
    medium = k.ConstantKernel(0.66**2 * a) * k.RationalQuadratic(1.2 * s, 0.78)
    short = k.ConstantKernel(0.18**2 * a) * k.RBF(0.134 * s)
    smooth = trend + seasonal + medium + short if periodic else trend + medium + short
    return smooth + k.WhiteKernel(0.19**2 * a)


def fit_co2_gp(data: MaunaLoa, *, periodic: bool = True) -> tuple[Any, float]:
    """The prior covariance of f (fitted, white noise removed) and the noise variance, by
    maximising the GP marginal likelihood on the training months."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    from laplace_lab.networks.training import single_threaded

    gp = GaussianProcessRegressor(co2_kernel(data.t_scale, data.y_scale, periodic=periodic))
    with single_threaded():
        fitted = gp.fit(data.t_train, data.y_train).kernel_
    return fitted.k1, float(fitted.k2.noise_level)


class PeriodicFeatures(torch.nn.Module):
    """The parameter-free map t ↦ (t, sin 2πt/T, cos 2πt/T) of (n, 1) times to (n, 3)."""

    def __init__(self, period: float) -> None:
        super().__init__()
        self.omega = 2.0 * math.pi / positive_float(period, "period")

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        """The features of every row of t."""
        return torch.cat([t, torch.sin(self.omega * t), torch.cos(self.omega * t)], dim=-1)


def co2_gp_scores(data: MaunaLoa, gp: tuple[Any, float]) -> dict[str, float]:
    """Scores of the exact GP with the fitted prior ``gp`` = (kernel, noise variance) on the
    test months (:func:`.scores.regression_scores`)."""
    from laplace_lab.networks.training import single_threaded

    kernel, noise = gp
    with single_threaded():
        mean, var = gp_predictive(kernel, noise, data.t_train, data.y_train, data.t_test)
    return regression_scores(data.y_test, mean, var, noise, y_scale=data.y_scale)


def mauna_loa_experiment(
    *,
    rng: Any,
    steps: int = 1000,
    n_context: int = 100,
    num_lanczos: int = 500,
    data: MaunaLoa | None = None,
    gp: tuple[Any, float] | None = None,
    methods: tuple[str, ...] = METHODS,
) -> dict[str, dict[str, float]]:
    """One training seed of the Mauna Loa experiment: scores per method.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Initialisations of the two networks (the data split and the GP are deterministic).
    steps : int
        L-BFGS evaluations of each network's MAP.
    n_context : int
        Context points on the regular grid (the paper: 100).
    num_lanczos : int
        Maximum Lanczos steps of Algorithm 2 (the paper: 500).
    data : MaunaLoa, optional
        The split (default :func:`load_mauna_loa`).
    gp : (kernel, noise variance), optional
        The fitted prior (default :func:`fit_co2_gp` on ``data``); FSP-Laplace uses its kernel.
    methods : tuple of str
        A subset of :data:`METHODS`.

    Returns
    -------
    dict
        method → :func:`~laplace_lab.paper_checks.fsp_laplace.experiments.scores.regression_scores`
        (ELL per test month and summed, standardised scale; MSE in ppm²).

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §4.1 "Mauna Loa dataset", Table 1, App. B.2 "Mauna Loa".
    .. [2] C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning", MIT
       Press 2006, §5.4.3.
    """
    from laplace_lab.networks.training import build_seeded, single_threaded

    rng = as_generator(rng)
    steps = positive_int(steps, "steps")
    n_context = positive_int(n_context, "n_context")
    for m in methods:
        one_of(m, "methods", METHODS)
    data = load_mauna_loa() if data is None else data
    require_standardised(data.t_train, data.y_train, what="Mauna Loa training months")
    kernel, noise = fit_co2_gp(data) if gp is None else gp
    period = 1.0 / data.t_scale
    init_fsp, init_laplace = rng.spawn(2)
    out: dict[str, dict[str, float]] = {}

    def score(mean: Any, var: Any, noise_var: float) -> dict[str, float]:
        return regression_scores(data.y_test, mean, var, noise_var, y_scale=data.y_scale)

    with single_threaded():
        if "GP" in methods:
            out["GP"] = co2_gp_scores(data, (kernel, noise))
        if "FSP-Laplace" in methods:
            model = build_seeded(
                lambda: tanh_mlp(3, features=PeriodicFeatures(period)), rng=init_fsp
            )
            C = ContextBox.around(data.t_train, widen=0.5).grid(n_context)
            require_context_apart(
                C, data.t_train, data.t_test, widen=0.5, what="Mauna Loa context grid"
            )
            fsp = FSPLaplaceModel.fit(
                model, data.t_train, data.y_train, likelihood="regression", kernel=kernel,
                context=C, steps=steps, lr=1.0, optimizer="lbfgs", num_lanczos=num_lanczos,
                rng=init_fsp, progress=False,
            )  # fmt: skip
            p = fsp.predict(data.t_test)
            out["FSP-Laplace"] = score(p.mean, p.variance, p.noise_var)
        if "Laplace" in methods or "MAP" in methods:
            require_evidence_exact_on_linear_model()
            model = build_seeded(
                lambda: tanh_mlp(3, features=PeriodicFeatures(period)), rng=init_laplace
            )
            la = LinearizedLaplaceModel.fit(
                model, data.t_train, data.y_train, likelihood="regression", steps=steps, lr=1.0,
                optimizer="lbfgs", rng=init_laplace, progress=False,
            )  # fmt: skip
            q = la.predict(data.t_test)
            if "Laplace" in methods:
                out["Laplace"] = score(q.mean, q.variance, q.noise_var)
            if "MAP" in methods:
                out["MAP"] = score(q.mean, np.zeros_like(q.mean), q.noise_var)
    return out
