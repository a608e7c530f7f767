"""The synthetic set-ups of App. B.1 (Cinquin et al., arXiv:2407.13711) on torch models.

1-D regression: y = sin(2πx) + ε, σ_n = 0.1, x ~ U([−1, −0.5] ∪ [0.5, 1]), two hidden tanh
layers of 50 units, context points on a regular grid of [−2, 2]. Two moons (noise 0.1), two
hidden tanh layers of 100 units (50 in quick mode), context points on a regular grid of
[−3.75, 3.75]². Priors: centred GPs whose covariance parameters are fitted by maximising the
log-marginal likelihood (App. B.1) — scikit-learn's GP regressor (with a white-noise term) for
regression; for two moons, as in the paper, a GP regressor on the labels reparameterised as
regression targets (Milios et al. 2018), whose prior then serves a Laplace GP classifier as the
GP baseline. Training follows Algorithm 1 with a uniform context distribution on the box
(§3.2: "for MAP estimation, we choose a uniform context point distribution P_C"; n_C = 100
fresh points per step) — a fixed grid would constrain the network only at the grid points,
and for separable two-moons data the objective then has no minimiser (the likelihood term →
0 with logits growing between grid points). Networks are float64, trained full-batch with
Adam; the Laplace baseline uses the isotropic prior σ_p = 1 for its MAP and the full GGN
(App. B.1).
"""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

from laplace_lab.numerics.kernels import RBF, Matern12, Periodic
from laplace_lab.paper_checks.verification import Context
from laplace_lab.paper_checks.verification.cache import Cached

__all__ = [
    "KERNELS",
    "Task",
    "context_box",
    "context_grid",
    "fit_fsp",
    "fit_laplace",
    "fitted_kernel",
    "jacobians",
    "network_mean",
    "tanh_mlp",
    "task",
]

#: The kernel families of the App. B.1 figures and their scikit-learn counterparts.
KERNELS = ("RBF", "Matern-1/2", "Periodic")
REGRESSION_NOISE = 0.1


class _Keyed(Cached):
    """A cached experiment keyed by its complete argument list, defaults filled in: a call
    with ``rep=0`` spelled out and one without it are the same fit, computed once."""

    def __init__(self, fn: Any) -> None:
        super().__init__(fn)
        self._signature = inspect.signature(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return super().__call__(*bound.args, **bound.kwargs)


class Task(NamedTuple):
    """Data of one synthetic task (inputs as (n, d) float64 arrays)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    likelihood: str
    low: float
    high: float


def task(name: str, *, full: bool, seed: int, rep: int = 0) -> Task:
    """The data of App. B.1: ``"regression"`` (n = 60) or ``"moons"`` (n = 100); ``rep``
    numbers independent replicates."""
    rng = Context(full=full, seed=seed).rng(f"fsp-synthetic/{name}/rep{rep}")
    if name == "regression":
        n = 60
        x = rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n)
        y = np.sin(2 * np.pi * x) + REGRESSION_NOISE * rng.standard_normal(n)
        return Task(name, x[:, None], y, "regression", -2.0, 2.0)
    from sklearn.datasets import make_moons

    X, y = make_moons(100, noise=0.1, random_state=int(rng.integers(2**31)))
    return Task(name, X, y.astype(float), "binary", -3.75, 3.75)


def tanh_mlp(d_in: int, width: int, d_out: int = 1) -> Any:
    """Two hidden tanh layers of ``width`` units (float64)."""
    from laplace_lab.networks.models import mlp

    return mlp(d_in, [width, width], d_out, activation="tanh").double()


def _sk_kernel(family: str) -> Any:
    from sklearn.gaussian_process import kernels as skk

    base = {
        "RBF": skk.RBF(0.5, (1e-2, 1e2)),
        "Matern-1/2": skk.Matern(0.5, (1e-2, 1e2), nu=0.5),
        "Periodic": skk.ExpSineSquared(1.0, 1.0, (1e-2, 1e2), (0.2, 5.0)),
    }[family]
    return skk.ConstantKernel(1.0, (1e-2, 1e3)) * base


def milios_targets(y: np.ndarray, alpha_eps: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Binary labels as logit-scale regression targets (Milios et al., NeurIPS 2018).

    Each class c gets Dirichlet concentrations α_c = α_ε + 1[y = c], the log-normal moment
    match σ̃_c² = log(1/α_c + 1), ỹ_c = log α_c − σ̃_c²/2; the one-logit target is
    ỹ_1 − ỹ_0 with noise variance σ̃_1² + σ̃_0².
    """
    a1, a0 = alpha_eps + (y == 1), alpha_eps + (y == 0)
    s1, s0 = np.log(1 / a1 + 1), np.log(1 / a0 + 1)
    return (np.log(a1) - s1 / 2) - (np.log(a0) - s0 / 2), s1 + s0


def _ours(family: str, variance: float, lengthscale: float, period: Any) -> Any:
    if family == "RBF":
        return RBF(variance, lengthscale)
    if family == "Matern-1/2":
        return Matern12(variance, lengthscale)
    return Periodic(variance, lengthscale, period=float(period))


@_Keyed
def fitted_kernel(name: str, family: str, full: bool, seed: int, rep: int = 0):
    """The prior covariance of ``family`` with (σ², ℓ) maximising the GP log-marginal
    likelihood on the task's data (App. B.1), and the fitted scikit-learn GP."""
    from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as skk

    t = task(name, full=full, seed=seed, rep=rep)
    if t.likelihood == "regression":
        k = _sk_kernel(family) + skk.WhiteKernel(0.01, (1e-4, 1.0))
        gp = GaussianProcessRegressor(k, random_state=0).fit(t.X, t.y)
        prior = gp.kernel_.k1
    else:  # labels as regression targets with per-point noise (Milios et al. 2018)
        z, noise = milios_targets(t.y)
        reg = GaussianProcessRegressor(_sk_kernel(family), alpha=noise, random_state=0)
        prior = reg.fit(t.X, z).kernel_
        gp = GaussianProcessClassifier(prior, optimizer=None).fit(t.X, t.y)
    params = prior.get_params()
    ls, period = params["k2__length_scale"], params.get("k2__periodicity")
    return _ours(family, float(params["k1__constant_value"]), float(ls), period), gp


def context_box(t: Task):
    """The box of the context points: [−2, 2] (regression), [−3.75, 3.75]² (two moons)."""
    from laplace_lab.networks.fsp_training import ContextBox

    d = t.X.shape[1]
    return ContextBox(np.full(d, t.low), np.full(d, t.high))


def context_grid(t: Task, n_context: int) -> np.ndarray:
    """n_context points on a regular grid of the box (App. B.1)."""
    box = context_box(t)
    return box.grid(n_context) if box.dim == 1 else box.grid(round(n_context**0.5))


def steps(full: bool) -> int:
    """Adam steps of the synthetic networks (full batch, learning rate 5e-3)."""
    return 3000 if full else 1000


def width(name: str, full: bool) -> int:
    """Hidden units per layer: 50 (regression), 100 (two moons; 50 in quick mode)."""
    return 50 if name == "regression" or not full else 100


@_Keyed
def fit_fsp(
    name: str,
    family: str,
    full: bool,
    seed: int,
    n_context: int = 100,
    rep: int = 0,
    covariance: str = "grid",
    jitter: float = 1e-6,
):
    """FSP-Laplace on a task with a fitted GP prior: Algorithm 1 with ``n_context`` uniform
    context points per step, Algorithm 2 at ``n_context`` points on a grid (App. B.1) or of
    the Halton sequence (App. C.1, context-point sweep); ``jitter`` relative to the prior
    variance on the diagonal of Σ(C, C)."""
    from laplace_lab.networks.fsp_laplace import FSPLaplaceModel
    from laplace_lab.networks.training import build_seeded, torch_threads

    t = task(name, full=full, seed=seed, rep=rep)
    kernel, _ = fitted_kernel(name, family, full, seed, rep)
    box = context_box(t)
    C = context_grid(t, n_context) if covariance == "grid" else box.halton(n_context)
    rng = Context(full=full, seed=seed).rng(
        f"fsp-synthetic/{name}/{family}/{n_context}/{covariance}/rep{rep}/{jitter}"
    )
    with torch_threads(1):
        model = build_seeded(lambda: tanh_mlp(t.X.shape[1], width(name, full)), rng=rng)
        return FSPLaplaceModel.fit(
            model, t.X, t.y, likelihood=t.likelihood, kernel=kernel, context=box,
            n_context=n_context, covariance_context=C,
            noise_std=REGRESSION_NOISE if t.likelihood == "regression" else None,
            steps=steps(full), lr=5e-3, jitter=jitter, rng=rng, progress=False,
        )  # fmt: skip


@_Keyed
def fit_laplace(name: str, full: bool, seed: int, rep: int = 0):
    """The linearised Laplace baseline (σ_p = 1 MAP, full GGN, evidence-optimised α)."""
    from laplace_lab.networks.fsp_laplace import LinearizedLaplaceModel
    from laplace_lab.networks.training import build_seeded, torch_threads

    t = task(name, full=full, seed=seed, rep=rep)
    rng = Context(full=full, seed=seed).rng(f"fsp-synthetic/{name}/laplace/rep{rep}")
    with torch_threads(1):
        model = build_seeded(lambda: tanh_mlp(t.X.shape[1], width(name, full)), rng=rng)
        return LinearizedLaplaceModel.fit(
            model, t.X, t.y, likelihood=t.likelihood,
            noise_std=REGRESSION_NOISE if t.likelihood == "regression" else None,
            steps=steps(full), lr=5e-3, rng=rng, progress=False,
        )  # fmt: skip


def network_mean(fit: Any, X: np.ndarray) -> np.ndarray:
    """The posterior mean f(X, w*) of a linearised predictive (FSP-Laplace or Laplace): the
    trained network's output, without the Jacobians the predictive variance needs."""
    import torch

    dtype = next(fit.model.parameters()).dtype
    with torch.no_grad():
        out = fit.model(torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=dtype))
    return out.double().numpy().reshape(len(X))


def jacobians(fsp, name: str, full: bool, seed: int, rep: int = 0) -> tuple[np.ndarray, ...]:
    """J(C) at the covariance context points and the GGN's weighted Jacobian J_w at the data."""
    from laplace_lab.numerics.ggn import GGN
    from laplace_lab.numerics.jacobians import per_sample_jacobian

    t = task(name, full=full, seed=seed, rep=rep)
    J_C = per_sample_jacobian(fsp.model, fsp.posterior.gram.points).numpy()
    J_X = per_sample_jacobian(fsp.model, t.X).numpy()
    if t.likelihood == "regression":
        return J_C, GGN.regression(J_X, noise_var=fsp.noise_var, prior_precision=1.0).Jw
    f = fsp.predict(t.X).mean
    return J_C, GGN.binary(J_X, f, prior_precision=1.0).Jw
