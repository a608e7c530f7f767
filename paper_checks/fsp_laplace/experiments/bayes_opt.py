"""Bayesian optimisation with FSP-Laplace, linearised-Laplace and Gaussian-process surrogates.

The experiment of Cinquin et al. [1]_ (§4 "Bayesian optimization", Fig. 3, App. B.2), whose
set-up derives from Li, Rudner & Wilson [2]_. One run of :func:`bayes_opt`:

1. ``n_init`` Latin-hypercube points (McKay et al. 1979) of the search box;
2. ``n_iter`` times: fit the surrogate to every observation so far (inputs scaled to the unit
   cube, rewards r = −f standardised to zero mean and unit variance), draw ``n_candidates``
   fresh Latin-hypercube candidates, evaluate f where the acquisition is largest;
3. return the best value found after the initial design and after every iteration.

The acquisition is expected improvement over the best observed reward, on the surrogate's
marginal predictive of the latent function (Jones, Schonlau & Welch 1998) — a documented
reading: [2]_ studies several acquisitions and [1]_ does not name one; expected improvement
reads the predictive only through its mean and variance, so all three surrogates enter
through the same :class:`Surrogate` protocol, and a surrogate whose variance is wrong
explores wrongly.

Surrogates (App. B.2 of [1]_): every network is a two-hidden-layer tanh MLP of 50 units
(float64). A Matérn-5/2 prior with zero mean has its variance, length scale and a
Gaussian noise variance fitted by maximising the GP marginal likelihood on the current data
(:func:`fit_matern52`); the :class:`GPSurrogate` is that GP, the
:class:`FSPLaplaceSurrogate` uses it as its function-space prior (Algorithm 1 with
``n_context`` uniform context points per step, Algorithm 2 at ``n_covariance``
Latin-hypercube points), and the :class:`LaplaceSurrogate` is the linearised Laplace
approximation with the full GGN and an evidence-optimised prior precision. Both networks use
the fitted noise variance as their Gaussian likelihood's, so the three surrogates differ only
in their prior and inference.

References
----------
.. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
   Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
   arXiv:2407.13711, §4 ("Bayesian optimization"), Fig. 3 and App. B.2.
.. [2] Y. L. Li, T. G. J. Rudner, A. G. Wilson, "A Study of Bayesian Neural Network Surrogates
   for Bayesian Optimization", ICLR 2024.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.stats import norm, qmc

from laplace_lab._checks import integer, positive_float, positive_int, real_array
from laplace_lab._random import as_generator, spawn
from laplace_lab.numerics.kernels import Matern52
from laplace_lab.paper_checks.fsp_laplace.experiments.bo_objectives import Objective
from laplace_lab.paper_checks.fsp_laplace.experiments.scores import tanh_mlp

__all__ = [
    "BOTrace",
    "FSPLaplaceSurrogate",
    "Fitted",
    "GPSurrogate",
    "LaplaceSurrogate",
    "MaternPrior",
    "Surrogate",
    "bayes_opt",
    "expected_improvement",
    "fit_matern52",
    "latin_hypercube",
]


class Fitted(Protocol):
    """A fitted surrogate: ``predict(X) -> (mean, variance)`` of the latent function."""

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]: ...


class Surrogate(Protocol):
    """A surrogate model: ``fit(X, y, *, rng)`` on unit-cube inputs and standardised rewards."""

    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> Fitted: ...


def latin_hypercube(n: int, d: int, *, rng: Any) -> np.ndarray:
    """n Latin-hypercube points of the unit cube [0, 1]^d (McKay et al. 1979), (n, d)."""
    sampler = qmc.LatinHypercube(d=positive_int(d, "d"), rng=as_generator(rng))
    return sampler.random(positive_int(n, "n"))


def expected_improvement(mean: Any, variance: Any, best: float) -> np.ndarray:
    """E max(f − best, 0) for f ~ N(mean, variance): σ (z Φ(z) + φ(z)), z = (μ − best)/σ.

    A zero variance gives max(μ − best, 0).
    """
    mu = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.clip(np.asarray(variance, dtype=np.float64), 0.0, None))
    gain = mu - float(best)
    safe = np.where(sd > 0, sd, 1.0)
    z = gain / safe
    return np.where(sd > 0, safe * (z * norm.cdf(z) + norm.pdf(z)), np.maximum(gain, 0.0))


@dataclass(frozen=True)
class MaternPrior:
    """A zero-mean Matérn-5/2 GP prior and the Gaussian noise variance of its likelihood."""

    kernel: Matern52
    noise_var: float


def fit_matern52(X: Any, y: Any, *, rng: Any, restarts: int = 2) -> MaternPrior:
    """Variance, length scale and noise variance of a zero-mean isotropic Matérn-5/2 GP by
    maximising its log-marginal likelihood (scikit-learn, ``restarts`` random restarts).

    Bounds on the unit cube with standardised targets: variance [1e-2, 1e2], length scale
    [1e-2, 10], noise variance [1e-4, 1] (the floor keeps Σ + σ²I well conditioned).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as skk

    kernel = skk.ConstantKernel(1.0, (1e-2, 1e2)) * skk.Matern(
        0.3, (1e-2, 10.0), nu=2.5
    ) + skk.WhiteKernel(1e-2, (1e-4, 1.0))
    gp = GaussianProcessRegressor(
        kernel,
        n_restarts_optimizer=integer(restarts, "restarts", low=0),
        random_state=int(as_generator(rng).integers(2**31)),
    )
    with warnings.catch_warnings():  # a hyperparameter at its bound is expected (noise-free f)
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp.fit(X, y)
    p = gp.kernel_.get_params()
    matern = Matern52(float(p["k1__k1__constant_value"]), float(p["k1__k2__length_scale"]))
    return MaternPrior(matern, float(p["k2__noise_level"]))


def _data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) as float64 arrays: X finite (n, d), y finite (n,), n ≥ 1."""
    X = np.asarray(real_array(X, "X"), dtype=np.float64)
    y = np.asarray(real_array(y, "y"), dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite (n, d) array with n >= 1; got shape {X.shape}")
    if y.shape != (X.shape[0],) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite ({X.shape[0]},) array; got shape {y.shape}")
    return X, y


@dataclass(frozen=True, kw_only=True)
class _EvidencePrior:
    """A surrogate whose prior is :func:`fit_matern52` on the current data."""

    restarts: int = 2

    def __post_init__(self) -> None:
        integer(self.restarts, "restarts", low=0)

    def prior(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> MaternPrior:
        """The marginal-likelihood Matérn-5/2 prior and noise variance on (X, y)."""
        return fit_matern52(*_data(X, y), rng=rng, restarts=self.restarts)


@dataclass(frozen=True)
class _GPPosterior:
    X: np.ndarray
    kernel: Matern52
    chol: np.ndarray
    weights: np.ndarray

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        from scipy.linalg import solve_triangular

        Ks = self.kernel(self.X, np.asarray(X, dtype=np.float64))
        V = solve_triangular(self.chol, Ks, lower=True)
        return Ks.T @ self.weights, np.clip(self.kernel.variance - np.sum(V * V, 0), 0.0, None)


@dataclass(frozen=True, kw_only=True)
class GPSurrogate(_EvidencePrior):
    """The exact GP with the marginal-likelihood Matérn-5/2 prior (:func:`fit_matern52`)."""

    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> Fitted:
        """Posterior of f given y = f(X) + ε, ε ~ N(0, σ²)."""
        from scipy.linalg import cho_solve

        X, y = _data(X, y)
        rng = as_generator(rng)
        prior = self.prior(X, y, rng=rng)
        K = prior.kernel(X, X) + prior.noise_var * np.eye(len(X))
        L = np.linalg.cholesky(K)
        return _GPPosterior(X, prior.kernel, L, cho_solve((L, True), y))


@dataclass(frozen=True)
class _NetworkPosterior:
    model: Any

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        pred = self.model.predict(np.asarray(X, dtype=np.float64))
        return pred.mean, pred.variance


def _check_network(s: Any) -> None:
    positive_int(s.width, "width")
    positive_int(s.steps, "steps")
    positive_float(s.lr, "lr")
    integer(s.restarts, "restarts", low=0)


@dataclass(frozen=True, kw_only=True)
class FSPLaplaceSurrogate(_EvidencePrior):
    """FSP-Laplace (Algorithms 1 and 2 of [1]_) under the fitted Matérn-5/2 prior.

    Parameters
    ----------
    width : int
        Units per hidden layer (App. B.2: 50).
    steps, lr : int, float
        Adam steps and learning rate of Algorithm 1, full batch.
    n_context : int
        Latin-hypercube context points of Algorithm 1, one set per fit used at every
        training step (App. B.2: 400).
    n_covariance : int
        Latin-hypercube context points of Algorithm 2 (App. B.2: 10,000).
    num_lanczos : int
        Maximum Lanczos steps of Algorithm 2.
    restarts : int
        Restarts of the marginal-likelihood fit of the prior.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace:
       Function-Space Priors for the Laplace Approximation in Bayesian Deep Learning",
       NeurIPS 2024, arXiv:2407.13711, Algorithms 1 and 2, App. B.2.
    """

    width: int = 50
    steps: int = 1000
    lr: float = 1e-2
    n_context: int = 400
    n_covariance: int = 10_000
    num_lanczos: int = 500

    def __post_init__(self) -> None:
        _check_network(self)
        for name in ("n_context", "n_covariance", "num_lanczos"):
            positive_int(getattr(self, name), name)

    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> Fitted:
        """Fit the prior, train the FSP MAP, run Algorithm 2."""
        from laplace_lab.networks.fsp_laplace import FSPLaplaceModel
        from laplace_lab.networks.training import build_seeded

        X, y = _data(X, y)
        rng = as_generator(rng)
        d = X.shape[1]
        prior = self.prior(X, y, rng=rng)
        model = build_seeded(lambda: tanh_mlp(d, self.width), rng=rng)
        fitted = FSPLaplaceModel.fit(
            model, X, y, likelihood="regression", kernel=prior.kernel,
            context=latin_hypercube(self.n_context, d, rng=rng),
            covariance_context=latin_hypercube(self.n_covariance, d, rng=rng),
            noise_std=float(np.sqrt(prior.noise_var)), steps=self.steps, lr=self.lr,
            num_lanczos=self.num_lanczos, rng=rng, progress=False,
        )  # fmt: skip
        return _NetworkPosterior(fitted)


@dataclass(frozen=True, kw_only=True)
class LaplaceSurrogate(_EvidencePrior):
    """The linearised Laplace baseline of [1]_: weight-space MAP (σ_p = 1), full GGN,
    prior precision by the linearised evidence, the fitted noise variance as likelihood.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace:
       Function-Space Priors for the Laplace Approximation in Bayesian Deep Learning",
       NeurIPS 2024, arXiv:2407.13711, §4 ("Baselines"), App. B.2.
    """

    width: int = 50
    steps: int = 1000
    lr: float = 1e-2

    def __post_init__(self) -> None:
        _check_network(self)

    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> Fitted:
        """Fit the noise variance, train the MAP, choose α by the evidence."""
        from laplace_lab.networks.fsp_laplace import LinearizedLaplaceModel
        from laplace_lab.networks.training import build_seeded
        from laplace_lab.paper_checks.fsp_laplace.experiments.audits import (
            require_evidence_exact_on_linear_model,
        )

        X, y = _data(X, y)
        rng = as_generator(rng)
        require_evidence_exact_on_linear_model()
        prior = self.prior(X, y, rng=rng)
        model = build_seeded(lambda: tanh_mlp(X.shape[1], self.width), rng=rng)
        fitted = LinearizedLaplaceModel.fit(
            model, X, y, likelihood="regression", noise_std=float(np.sqrt(prior.noise_var)),
            steps=self.steps, lr=self.lr, rng=rng, progress=False,
        )  # fmt: skip
        return _NetworkPosterior(fitted)


@dataclass(frozen=True)
class BOTrace:
    """One Bayesian-optimisation run.

    Attributes
    ----------
    X : (n_init + n_iter, d) array
        Evaluated points, in the objective's box, in order.
    values : (n_init + n_iter,) array
        f at those points.
    best : (n_iter + 1,) array
        The smallest value found after the initial design and after each iteration.
    minimum : float
        The objective's global minimum f*.
    """

    X: np.ndarray
    values: np.ndarray
    best: np.ndarray
    minimum: float

    @property
    def regret(self) -> np.ndarray:
        """Simple regret best − f* per iteration (≥ 0)."""
        return self.best - self.minimum


def bayes_opt(
    objective: Objective,
    surrogate: Surrogate,
    *,
    n_init: int,
    n_iter: int,
    n_candidates: int = 1000,
    acquisition: Callable[[Any, Any, float], np.ndarray] = expected_improvement,
    rng: Any,
) -> BOTrace:
    """Minimise ``objective`` by Bayesian optimisation with ``surrogate`` (module docstring).

    Parameters
    ----------
    objective : Objective
        The function and its box.
    surrogate : Surrogate
        ``fit(X, y, *, rng)`` on unit-cube inputs and standardised rewards, returning an
        object with ``predict(X) -> (mean, variance)``.
    n_init : int
        Latin-hypercube points before the first fit (≥ 2: the rewards are standardised).
    n_iter : int
        Evaluations chosen by the acquisition (≥ 0).
    n_candidates : int
        Fresh Latin-hypercube candidates per iteration.
    acquisition : callable
        ``acquisition(mean, variance, best_reward)`` → scores; the largest is evaluated.
    rng : numpy.random.Generator or int
        The initial design, the candidates and every surrogate fit.

    Returns
    -------
    BOTrace

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace:
       Function-Space Priors for the Laplace Approximation in Bayesian Deep Learning",
       NeurIPS 2024, arXiv:2407.13711, §4 ("Bayesian optimization"), App. B.2.
    """
    if not isinstance(objective, Objective):
        raise TypeError(f"objective must be an Objective; got {type(objective).__name__}")
    if not callable(getattr(surrogate, "fit", None)):
        raise TypeError(f"surrogate must have a fit method; got {type(surrogate).__name__}")
    n_init = integer(n_init, "n_init", low=2)
    n_iter = integer(n_iter, "n_iter", low=0)
    n_candidates = positive_int(n_candidates, "n_candidates")
    streams = spawn(as_generator(rng), n_iter + 1)
    d = objective.dim
    U = latin_hypercube(n_init, d, rng=streams[0])
    values = objective(objective.from_unit(U))
    for step in streams[1:]:
        reward = -values
        sd = float(np.std(reward))
        y = (reward - reward.mean()) / (sd if sd > 0 else 1.0)
        fit_rng, cand_rng = spawn(step, 2)
        fitted = surrogate.fit(U, y, rng=fit_rng)
        cand = latin_hypercube(n_candidates, d, rng=cand_rng)
        mean, var = fitted.predict(cand)
        score = real_array(acquisition(mean, var, float(y.max())), "acquisition scores")
        if score.shape != (n_candidates,) or not np.all(np.isfinite(score)):
            raise ValueError(
                f"acquisition must return {n_candidates} finite scores; got {score.shape}"
            )
        u = cand[int(np.argmax(score))]
        U = np.vstack([U, u])
        values = np.append(values, objective(objective.from_unit(u)))
    best = np.minimum.accumulate(values)[n_init - 1 :]
    return BOTrace(objective.from_unit(U), values, best, float(objective.minimum))
