"""The network of Daxberger et al. §6.1 for the prior-rescaling claims.

§6.1 (Fig. 2): a 2×50 ReLU MLP on a 1-D regression task with two separated input clusters,
homoscedastic Gaussian likelihood with the noise variance fitted by maximum likelihood,
GGN-Laplace over the weights (not the biases), full-network prior precision λ = 3 and
subnetworks of 50 %, 3 % and 1 % of the weights with λ_S = λ·S/D. The two-cluster task is
the in-between toy of :func:`laplace_lab.networks.data.in_between_toy` (y = sin(2πx) + noise,
x in [−1, −0.5] ∪ [0.5, 1]); predictive variances are taken on its 200 test inputs over
[−1.5, 1.5], which cross the gap between the clusters.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.predictive import (
    marginal_variance,
    predictive_variance,
    subnetwork_variance,
)
from laplace_lab.paper_checks.verification import cached

__all__ = ["PRIOR_PRECISION", "Fit", "fitted_networks", "subnetwork_pv"]

#: λ of the full network (§6.1: "a value which we find to work well empirically").
PRIOR_PRECISION = 3.0
N_TRAIN = 100


class Fit(NamedTuple):
    """One trained network: weight Jacobians at the training and test inputs."""

    J: np.ndarray  #: (N, D) at the training inputs, weights only
    G: np.ndarray  #: (M, D) at the test inputs
    noise_var: float  #: σ² by maximum likelihood (mean squared residual)
    pv_full: np.ndarray  #: g(x*)ᵀ(JᵀJ/σ² + λI)⁻¹g(x*) at the test inputs
    marginal: np.ndarray  #: diag of the full posterior covariance (Wasserstein rule)


@cached(maxsize=2)
def fitted_networks(seed: int, count: int) -> tuple[Fit, ...]:
    """``count`` networks trained to the MAP under λ = 3 (seeded by ``seed``)."""
    import torch

    from laplace_lab._random import keyed_generator
    from laplace_lab.networks.data import in_between_toy
    from laplace_lab.networks.models import mlp_2x50
    from laplace_lab.networks.training import (
        adam_recipe,
        build_seeded,
        noise_variance,
        torch_threads,
        train_map,
    )
    from laplace_lab.numerics.jacobians import per_sample_jacobian

    fits = []
    for r in range(count):
        rng = keyed_generator("claim", "prior-rescaling-network", r, seed=seed)
        data = in_between_toy(N_TRAIN, rng=rng)
        recipe = adam_recipe(
            epochs=300, batch_size=N_TRAIN, lr=3e-3, prior_precision=PRIOR_PRECISION
        )
        with torch_threads(1):
            model = build_seeded(lambda: mlp_2x50(1), rng=rng, dtype=torch.float64)
            train_map(
                model, data.X_train, data.y_train, likelihood="regression", config=recipe, rng=rng
            )
            s2 = noise_variance(model, data.X_train, data.y_train)
            offsets = np.cumsum([0] + [t.numel() for t in model.parameters()])
            weights = np.concatenate(
                [
                    np.arange(offsets[i], offsets[i + 1])
                    for i, (name, _) in enumerate(model.named_parameters())
                    if name.endswith("weight")
                ]
            )
            J = per_sample_jacobian(model, data.X_train).numpy()[:, weights]
            G = per_sample_jacobian(model, data.X_test).numpy()[:, weights]
        ggn = GGN.regression(J, noise_var=s2, prior_precision=PRIOR_PRECISION)
        fits.append(Fit(J, G, s2, predictive_variance(ggn, G), marginal_variance(ggn)))
    return tuple(fits)


def subnetwork_pv(fit: Fit, S: np.ndarray, prior_precision: float) -> np.ndarray:
    """g_S(x*)ᵀ(J_SᵀJ_S/σ² + λ_S I)⁻¹g_S(x*) at the test inputs (eqs. 14–15, linearized)."""
    ggn = GGN.regression(fit.J[:, S], noise_var=fit.noise_var, prior_precision=prior_precision)
    return subnetwork_variance(ggn, fit.G[:, S], np.arange(S.size))
