"""FSP-Laplace end to end on a torch model, and the linearised-Laplace baseline.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711:

- :meth:`FSPLaplaceModel.fit` — Algorithm 1
  (:func:`~laplace_lab.networks.fsp_training.train_fsp_map`) then Algorithm 2 at fixed context
  points (:func:`~laplace_lab.numerics.network_fsp.network_fsp_laplace`);
  :meth:`~FSPLaplaceModel.predict` returns the linearised predictive.
- :meth:`LinearizedLaplaceModel.fit` — the "Laplace" baseline of §4: MAP under an isotropic
  Gaussian weight prior, the full GGN (eq. 2.3) and a prior precision chosen by maximising the
  linearised Laplace evidence (MacKay 1992; Immer et al. 2021).
- :func:`expected_log_likelihood` — E_{f ~ N(μ, v)} log N(y; f, σ²), the score of Table 1 and
  Table C.1, in closed form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.optimize

from laplace_lab._checks import one_of, positive_float
from laplace_lab._random import as_generator
from laplace_lab.networks.fsp_training import ContextBox, train_fsp_map, train_weight_space_map
from laplace_lab.numerics.backend import to_numpy
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.network_fsp import (
    FunctionPredictive,
    NetworkFSPLaplace,
    network_fsp_laplace,
)
from laplace_lab.numerics.predictive import predictive_variance
from laplace_lab.numerics.probit import probit_probability

__all__ = [
    "FSPLaplaceModel",
    "LinearizedLaplaceModel",
    "Predictive",
    "expected_log_likelihood",
    "linearized_log_evidence",
]


class Predictive(NamedTuple):
    """The linearised predictive at test inputs (host float64).

    ``mean`` f(x*, w*) and ``variance`` the epistemic Var f(x*); ``noise_var`` σ² of a
    Gaussian likelihood (None for classification); ``probability`` the class probabilities
    by the probit approximation (None for regression).
    """

    mean: np.ndarray
    variance: np.ndarray
    noise_var: float | None
    probability: np.ndarray | None

    @property
    def total_variance(self) -> np.ndarray:
        """Var y* = Var f(x*) + σ² (regression)."""
        return self.variance + (self.noise_var or 0.0)


def _predictive(f: FunctionPredictive, likelihood: str, noise_var: float | None) -> Predictive:
    prob = None if likelihood == "regression" else probit_probability(f.mean, f.variance)
    return Predictive(f.mean, f.variance, noise_var, prob)


def expected_log_likelihood(y: Any, mean: Any, variance: Any, noise_var: float) -> np.ndarray:
    """E_{f ~ N(μ, v)} log N(y; f, σ²) = log N(y; μ, σ²) − v / (2σ²), per point."""
    y, mu, v = (np.asarray(a, dtype=np.float64) for a in (y, mean, variance))
    s2 = positive_float(noise_var, "noise_var")
    return -0.5 * np.log(2 * np.pi * s2) - ((y - mu) ** 2 + v) / (2 * s2)


@dataclass(frozen=True, eq=False)
class FSPLaplaceModel:
    """A torch model with its FSP-Laplace posterior (Algorithms 1 and 2 of [1]_).

    Attributes
    ----------
    model : torch.nn.Module
        Trained in place to the FSP MAP.
    posterior : NetworkFSPLaplace
        Algorithm 2's posterior N(w*, S Sᵀ).
    likelihood : str
    noise_var : float or None
        σ² of the Gaussian likelihood (learned or given).
    losses : tuple of float
        The training objective per step.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3, Algorithms 1 and 2.
    """

    model: Any
    posterior: NetworkFSPLaplace
    likelihood: str
    noise_var: float | None
    losses: tuple[float, ...]

    @classmethod
    def fit(
        cls,
        model: Any,
        X: Any,
        y: Any,
        *,
        likelihood: str,
        kernel: Any,
        context: Any,
        n_context: int | None = None,
        covariance_context: Any = None,
        prior_mean: Any = None,
        noise_std: float | None = None,
        steps: int = 1000,
        lr: float = 1e-3,
        batch_size: int | None = None,
        jitter: float = 1e-6,
        num_lanczos: int = 500,
        rng: Any,
        progress: bool = True,
        optimizer: str = "adam",
        early_stopping: Any = None,
    ) -> FSPLaplaceModel:
        """Train ``model`` to the FSP MAP and compute its FSP-Laplace posterior.

        Parameters
        ----------
        model : torch.nn.Module
            Initialised network (trained in place).
        X, y : arrays
            Training data.
        likelihood : {"regression", "binary", "multiclass"}
        kernel : callable
            The GP prior's covariance function (:mod:`laplace_lab.numerics.kernels` or
            scikit-learn kernels).
        context : ContextBox or (m, d) array
            Where the training objective draws its context points (Algorithm 1).
        n_context : int, optional
            Context points per training step (required for a box).
        covariance_context : int or (n_C, d) array, optional
            The fixed context points of Algorithm 2: an array, or a number of Halton points
            in the box. Default: the ``context`` array, or 256 Halton points of the box.
        prior_mean : float or callable, optional
            The GP prior mean μ (training objective only; zero by default).
        noise_std : float, optional
            σ of the Gaussian likelihood; None learns it (regression).
        steps, lr, batch_size : training options (Adam)
        jitter : float
            Relative diagonal jitter of Σ(C, C) (training and Algorithm 2).
        num_lanczos : int
            Maximum Lanczos steps of Algorithm 2 (the paper: 500).
        rng : numpy.random.Generator or int
        progress : bool
            Show a tqdm bar during training.
        optimizer : {"adam", "lbfgs"}
            See :func:`~laplace_lab.networks.fsp_training.train_fsp_map`.
        early_stopping : EarlyStopping, optional
            Stop Adam when the validation loss stops decreasing
            (:class:`~laplace_lab.networks.fsp_training.EarlyStopping`).
        """
        rng = as_generator(rng)
        one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
        fit = train_fsp_map(
            model, X, y, likelihood=likelihood, kernel=kernel, context=context,
            n_context=n_context, prior_mean=prior_mean, noise_std=noise_std, steps=steps, lr=lr,
            batch_size=batch_size, jitter=jitter, rng=rng, progress=progress, optimizer=optimizer,
            early_stopping=early_stopping,
        )  # fmt: skip
        C = _covariance_context(context, covariance_context)
        noise_var = None if fit.noise_std is None else fit.noise_std**2
        posterior = network_fsp_laplace(
            model, X, likelihood=likelihood, kernel=kernel, context=C, noise_var=noise_var,
            jitter=jitter, num_steps=num_lanczos,
        )  # fmt: skip
        return cls(model, posterior, likelihood, noise_var, fit.losses)

    def predict(self, X: Any) -> Predictive:
        """The linearised predictive at the rows of X."""
        return _predictive(self.posterior.predict(X), self.likelihood, self.noise_var)


def _covariance_context(context: Any, covariance_context: Any) -> np.ndarray:
    if covariance_context is None:
        if isinstance(context, ContextBox):
            return context.halton(256)
        return np.asarray(context, dtype=np.float64)
    if isinstance(covariance_context, int | np.integer) and not isinstance(
        covariance_context, bool
    ):
        if not isinstance(context, ContextBox):
            raise ValueError("covariance_context may be a count only when context is a ContextBox")
        return context.halton(int(covariance_context))
    return np.asarray(covariance_context, dtype=np.float64)


def linearized_log_evidence(
    alpha: float, singular_values: np.ndarray, p: int, theta_sq: float, log_lik: float
) -> float:
    """Laplace evidence of the linearised model under w ~ N(0, α⁻¹I) (up to a constant).

    ``log p(y) ≈ log p(y | w*) − ½α‖w*‖² + ½p log α − ½ log det(αI + J_wᵀJ_w)`` with
    ``log det(αI + J_wᵀJ_w) = Σ_i log(α + s_i²) + (p − r) log α`` from the r singular values
    s_i of J_w (MacKay 1992; Immer et al., ICML 2021, eq. 4).
    """
    s2 = np.asarray(singular_values, dtype=np.float64) ** 2
    logdet = np.sum(np.log(alpha + s2)) + (p - s2.size) * np.log(alpha)
    return float(log_lik - 0.5 * alpha * theta_sq + 0.5 * p * np.log(alpha) - 0.5 * logdet)


def _log_lik(likelihood: str, f: np.ndarray, y: np.ndarray, noise_var: float | None) -> float:
    if likelihood == "regression":
        return float(np.sum(expected_log_likelihood(y, f, 0.0, noise_var)))
    if likelihood == "binary":
        return float(np.sum(y * f - np.logaddexp(0.0, f)))
    f = f - f.max(axis=1, keepdims=True)
    logp = f - np.log(np.exp(f).sum(axis=1, keepdims=True))
    return float(np.sum(logp[np.arange(y.size), y.astype(int)]))


@dataclass(frozen=True, eq=False)
class LinearizedLaplaceModel:
    """The linearised Laplace baseline of [1]_ (§2, §4): isotropic prior, full GGN.

    Attributes
    ----------
    model : torch.nn.Module
        Trained in place to the weight-space MAP.
    ggn : GGN
        Ω = J_wᵀJ_w + αI at the training inputs.
    prior_precision : float
        α of the Laplace approximation (evidence-optimised or given).
    likelihood : str
    noise_var : float or None
    losses : tuple of float

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §2, eqs. (2.1)–(2.3), and §4 ("Baselines").
    """

    model: Any
    ggn: GGN
    prior_precision: float
    likelihood: str
    noise_var: float | None
    losses: tuple[float, ...]

    @classmethod
    def fit(
        cls,
        model: Any,
        X: Any,
        y: Any,
        *,
        likelihood: str,
        map_prior_precision: float = 1.0,
        prior_precision: float | str = "evidence",
        noise_std: float | None = None,
        steps: int = 1000,
        lr: float = 1e-3,
        batch_size: int | None = None,
        rng: Any,
        progress: bool = True,
        optimizer: str = "adam",
        early_stopping: Any = None,
    ) -> LinearizedLaplaceModel:
        """Train the weight-space MAP (prior precision ``map_prior_precision``, σ_p = 1 by
        default as in App. B.1) and build the linearised Laplace posterior.

        ``prior_precision="evidence"`` maximises :func:`linearized_log_evidence` over α
        (post hoc, at the trained MAP); a float fixes α. Other arguments as in
        :meth:`FSPLaplaceModel.fit`.
        """
        one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
        fit = train_weight_space_map(
            model, X, y, likelihood=likelihood, prior_precision=map_prior_precision,
            noise_std=noise_std, steps=steps, lr=lr, batch_size=batch_size, rng=rng,
            progress=progress, optimizer=optimizer, early_stopping=early_stopping,
        )  # fmt: skip
        noise_var = None if fit.noise_std is None else fit.noise_std**2
        J = to_numpy(per_sample_jacobian(model, np.asarray(X))).astype(np.float64)
        f = _predict_mean(model, X)
        if likelihood == "regression":
            ggn = GGN.regression(J, noise_var=noise_var, prior_precision=1.0)
        elif likelihood == "binary":
            ggn = GGN.binary(J, f, prior_precision=1.0)
        else:
            ggn = GGN.multiclass(J, f, prior_precision=1.0)
        if prior_precision == "evidence":
            theta = np.concatenate(
                [to_numpy(t.detach()).ravel() for t in model.parameters() if t.requires_grad]
            )
            s = np.linalg.svd(ggn.Jw, compute_uv=False)
            ll = _log_lik(likelihood, f, np.asarray(y), noise_var)
            res = scipy.optimize.minimize_scalar(
                lambda la: -linearized_log_evidence(np.exp(la), s, ggn.p, theta @ theta, ll),
                bounds=(np.log(1e-4), np.log(1e4)),
                method="bounded",
            )
            alpha = float(np.exp(res.x))
        else:
            alpha = positive_float(prior_precision, "prior_precision")
        ggn = GGN(ggn.Jw, alpha, noise_var=ggn.noise_var, n_data=ggn.n_data, likelihood=likelihood)
        return cls(model, ggn, alpha, likelihood, noise_var, fit.losses)

    def predict(self, X: Any) -> Predictive:
        """The linearised predictive: mean f(x*, w*), variance g(x*)ᵀ Ω⁻¹ g(x*)."""
        G = to_numpy(per_sample_jacobian(self.model, np.asarray(X))).astype(np.float64)
        var = np.asarray(to_numpy(predictive_variance(self.ggn, G)), dtype=np.float64)
        mean = _predict_mean(self.model, X)
        return _predictive(FunctionPredictive(mean, var), self.likelihood, self.noise_var)


def _predict_mean(model: Any, X: Any) -> np.ndarray:
    import torch

    dtype = next(model.parameters()).dtype
    with torch.no_grad():
        out = model(torch.as_tensor(np.asarray(X), dtype=dtype)).double().numpy()
    return out[:, 0] if out.ndim == 2 and out.shape[1] == 1 else out
