"""SSLA / ASSLA vs linearized Laplace on the heteroscedastic toy (self-supervised-laplace §5.1).

The Table 1 setting: a 2×50 MLP fitted by MAP to y = 7 sin x + 3|cos(x/2)| ε (eq. 18),
Gauss–Newton Fisher with an N(0, 1/α) prior, σ0² from the residual MSE; coverage at the
95/90/75/50% levels, NLL and CRPS of the held-out targets under linearized Laplace
(N(f̂, σ0² + v)), SSLA and ASSLA (:mod:`laplace_lab.numerics.network_ssla`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab._random import spawn
from laplace_lab.networks.data import Dataset, heteroscedastic_toy
from laplace_lab.networks.models import mlp_2x50
from laplace_lab.networks.training import (
    TrainConfig,
    adam_recipe,
    build_seeded,
    noise_variance,
    predict,
    single_threaded,
)
from laplace_lab.networks.training import train_map as _train
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.network_ssla import (
    NormalPredictive,
    assla_predictive,
    gaussian_scores,
    ssla_predictive,
)
from laplace_lab.numerics.predictive import predictive_variance
from laplace_lab.paper_checks.self_supervised_laplace.experiments.batched import train_stacked

__all__ = [
    "HeteroscedasticFit",
    "fit_heteroscedastic",
    "fit_heteroscedastic_batch",
    "heteroscedastic_comparison",
]


@dataclass(frozen=True)
class HeteroscedasticFit:
    """A MAP fit to the heteroscedastic toy: the data, the model (float64, eval mode), the
    training and test Jacobians J and G, σ0² and the MAP outputs f at the test inputs."""

    data: Dataset
    model: Any
    J: np.ndarray
    G: np.ndarray
    noise_var: float
    f_test: np.ndarray


def fit_heteroscedastic(
    *,
    rng: np.random.Generator | int,
    n_train: int = 500,
    n_test: int = 500,
    config: TrainConfig | None = None,
) -> HeteroscedasticFit:
    """Fit the 2×50 MLP by MAP to one seeded draw of the toy of eq. (18) (module docstring)."""
    data_rng, init_rng, train_rng = spawn(rng, 3)
    ds = heteroscedastic_toy(
        n_train + n_test, test_fraction=n_test / (n_train + n_test), rng=data_rng
    )
    config = config or adam_recipe(lr=1e-2, epochs=300, batch_size=64)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = build_seeded(lambda: mlp_2x50(1), rng=init_rng)
        _train(
            model, ds.X_train, ds.y_train, likelihood="regression", config=config, rng=train_rng
        )
        model = model.double().eval()
        J = per_sample_jacobian(model, ds.X_train).numpy()
        G = per_sample_jacobian(model, ds.X_test).numpy()
    finally:
        torch.set_num_threads(previous)
    s2 = noise_variance(model, ds.X_train, ds.y_train)
    return HeteroscedasticFit(ds, model, J, G, s2, predict(model, ds.X_test))


def _squared_error(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The unit-variance Gaussian NLL per point, ½(y − f)² (the regression loss of
    :func:`laplace_lab.networks.training.train_map`)."""
    return 0.5 * (out[:, 0] - y) ** 2


@single_threaded()
def fit_heteroscedastic_batch(
    rngs: list[np.random.Generator],
    *,
    n_train: int = 500,
    n_test: int = 500,
    config: TrainConfig | None = None,
) -> list[HeteroscedasticFit]:
    """:func:`fit_heteroscedastic` for K seeds, the K networks trained together
    (:func:`.batched.train_stacked`): each has the data, initialisation and minibatch order
    of its own seed, as :func:`fit_heteroscedastic` draws them, and the same function up to
    float32 rounding (Adam recipes without weight decay or gradient clipping only)."""
    config = config or adam_recipe(lr=1e-2, epochs=300, batch_size=64)
    if config.optimizer != "adam" or config.weight_decay or config.grad_clip is not None:
        raise ValueError("the batched trainer runs Adam without weight decay or clipping")
    datasets, models, orders = [], [], []
    for rng in rngs:
        data_rng, init_rng, train_rng = spawn(rng, 3)
        datasets.append(
            heteroscedastic_toy(
                n_train + n_test, test_fraction=n_test / (n_train + n_test), rng=data_rng
            )
        )
        models.append(build_seeded(lambda: mlp_2x50(1), rng=init_rng))
        orders.append(np.random.default_rng(train_rng))
    train_stacked(
        models,
        [np.asarray(ds.X_train) for ds in datasets],
        [np.asarray(ds.y_train) for ds in datasets],
        orders,
        _squared_error,
        lr=config.lr,
        epochs=config.epochs,
        batch_size=config.batch_size,
        prior_precision=config.prior_precision,
    )
    fits = []
    for ds, model in zip(datasets, models, strict=True):
        model = model.double().eval()
        J = per_sample_jacobian(model, ds.X_train).numpy()
        G = per_sample_jacobian(model, ds.X_test).numpy()
        s2 = noise_variance(model, ds.X_train, ds.y_train)
        fits.append(HeteroscedasticFit(ds, model, J, G, s2, predict(model, ds.X_test)))
    return fits


def heteroscedastic_comparison(
    *,
    rng: np.random.Generator | int,
    n_train: int = 500,
    n_test: int = 500,
    prior_precision: float = 1.0,
    config: TrainConfig | None = None,
) -> dict[str, Any]:
    """Scores of linearized Laplace, SSLA and ASSLA on one seeded heteroscedastic toy.

    Returns ``{"LA": scores, "SSLA": scores, "ASSLA": scores, "noise_var": σ0²}`` with the
    scores of :func:`laplace_lab.numerics.network_ssla.gaussian_scores` on the held-out targets.
    """
    fit = fit_heteroscedastic(rng=rng, n_train=n_train, n_test=n_test, config=config)
    s2, G, f = fit.noise_var, fit.G, fit.f_test
    ggn = GGN.regression(fit.J, noise_var=s2, prior_precision=prior_precision)
    y = fit.data.y_test
    la = NormalPredictive(f, s2 + np.asarray(predictive_variance(ggn, G)))
    return {
        "LA": gaussian_scores(la, y),
        "SSLA": gaussian_scores(ssla_predictive(ggn, G, f, noise_var=s2), y),
        "ASSLA": gaussian_scores(assla_predictive(ggn, G, f, noise_var=s2), y),
        "noise_var": s2,
    }
