"""The 1-D toy regression of Daxberger et al. §6.1 (Fig. 2): how much of the full-covariance
linearized-Laplace uncertainty, in particular between the two input clusters, a subnetwork
keeps.

E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato, "Bayesian
Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.1: a 2×50 ReLU MLP,
a homoscedastic Gaussian likelihood with the noise variance fitted by maximum likelihood,
GGN-Laplace over the D = 2600 weights (not biases) with prior precision λ = 3, the
linearized predictive (eq. 18), subnetworks of 50%, 3% and 1% of D chosen by the Wasserstein
rule (the largest exact marginal variances diag(Ω⁻¹), eq. 23) or uniformly at random, with
λ_S = λ·S/D; baselines: the full covariance, the diagonal Laplace posterior and the final
layer. The data are two clusters of inputs
(:func:`laplace_lab.networks.data.in_between_toy`: x ∈ [−1, −0.5] ∪ [0.5, 1], y = sin 2πx +
N(0, 0.1²)), the paper's in-between set-up (its own data set is not published with it).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._random import spawn
from laplace_lab.networks.data import in_between_toy
from laplace_lab.networks.models import mlp_2x50, weight_indices
from laplace_lab.networks.training import (
    adam_recipe,
    build_seeded,
    noise_variance,
    single_threaded,
    train_map,
)
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.laplace_variants import (
    diagonal_laplace_variance,
    with_prior_precision,
)
from laplace_lab.numerics.predictive import (
    marginal_variance,
    predictive_variance,
    subnetwork_variance,
)
from laplace_lab.numerics.selection import largest_marginal_variance, random_subset

__all__ = [
    "NOISE_SD",
    "ToyFit",
    "ToyRegression",
    "fit_toy_map",
    "score_toy_regression",
    "subnetwork_prior_precision",
    "toy_regression",
]

#: The noise standard deviation of the toy data (raw scale).
NOISE_SD = 0.1


@dataclass(frozen=True)
class ToyRegression:
    """Epistemic predictive standard deviations of every method on a test grid.

    ``x``: test inputs on the raw scale; ``std[method]``: √(g(x)ᵀ Σ g(x)) per test input;
    ``weights[method]``: how many weights the method does inference over; ``gap`` / ``data``:
    masks of the test inputs between the clusters (|x| < 0.4) and inside them
    (0.5 ≤ |x| ≤ 1); ``dead``: weights whose training Jacobian column is exactly zero;
    ``dead_selected[method]``: how many of them a Wasserstein subnetwork contains;
    ``marginal_variance`` / ``diagonal_variance``: diag(Ω⁻¹) and diag(Ω)⁻¹ per weight;
    ``dead_mask``: which weights are dead; ``prior_precision``: λ; ``subsets[method]``: the
    weights of each Wasserstein subnetwork (ties to the lowest parameter index, the library's
    rule); ``std_random_ties`` / ``subsets_random_ties``: the Wasserstein subnetworks selected
    with exact ties (the dead weights all sit at 1/λ) broken at random instead — the same
    library rule applied to the weights in a seeded random order, mapped back (empty when no
    ``tie_break`` generator was given).
    """

    x: np.ndarray
    std: dict[str, np.ndarray]
    weights: dict[str, int]
    gap: np.ndarray
    data: np.ndarray
    noise_var: float
    dead: int
    dead_selected: dict[str, int]
    marginal_variance: np.ndarray
    diagonal_variance: np.ndarray
    dead_mask: np.ndarray
    prior_precision: float
    subsets: dict[str, np.ndarray]
    std_random_ties: dict[str, np.ndarray]
    subsets_random_ties: dict[str, np.ndarray]


def subnetwork_prior_precision(prior_precision: float, k: int, D: int) -> float:
    """λ_S = λ·S/D: the subnetwork prior precision that keeps the magnitude of the predictive
    variance (Daxberger et al., arXiv:2010.14689, §4 after eq. 15)."""
    return float(prior_precision) * k / D


@single_threaded()
def toy_regression(
    *,
    rng: np.random.Generator | int,
    n_train: int = 100,
    n_test: int = 121,
    fractions: tuple[float, ...] = (0.5, 0.03, 0.01),
    prior_precision: float = 3.0,
    epochs: int = 1000,
    tie_break: np.random.Generator | None = None,
) -> ToyRegression:
    """Fit the toy once and evaluate every posterior approximation of §6.1:
    :func:`score_toy_regression` of :func:`fit_toy_map`.

    The MAP minimises Σ(y − f)²/(2σ²) + λ‖θ‖²/2 at the data's noise level σ = 0.1 (Adam, lr
    1e-2, full batch, cosine); then σ0² is refitted by maximum likelihood (the residual mean
    square) and the Laplace posteriors use J over the weights only.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Source of the data, the initialisation, the batches and the random subnetworks.
    n_train, n_test : int
        Training points (two clusters) and test inputs (a grid over [−1.5, 1.5]).
    fractions : tuple of float
        Subnetwork sizes as fractions of D (the paper: 50%, 3%, 1%).
    prior_precision : float
        λ of the full network; subnetworks use λ·S/D.
    epochs : int
        Full-batch Adam epochs of the MAP.
    tie_break : numpy.random.Generator, optional
        When given, each Wasserstein subnetwork is selected a second time with the weights in
        an order drawn from it (the selection rule run on the GGN of the permuted weights,
        its indices mapped back): exact ties of the marginal variance are then broken at
        random instead of to the lowest index. The other methods do not draw from it.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.1 and
       Fig. 2.
    """
    fit = fit_toy_map(
        rng=rng, n_train=n_train, n_test=n_test, prior_precision=prior_precision, epochs=epochs
    )
    return score_toy_regression(fit, fractions=fractions, tie_break=tie_break)


@dataclass(frozen=True)
class ToyFit:
    """What :func:`toy_regression` computes before any Laplace step: the data, λ, the MAP
    (double precision, eval mode) and the generator of the random subnetworks, not yet
    drawn from (:func:`score_toy_regression` draws from a copy)."""

    ds: Any
    prior_precision: float
    model: Any
    subnetwork_rng: np.random.Generator


@single_threaded()
def fit_toy_map(
    *,
    rng: np.random.Generator | int,
    n_train: int = 100,
    n_test: int = 121,
    prior_precision: float = 3.0,
    epochs: int = 1000,
) -> ToyFit:
    """The data and the MAP of :func:`toy_regression` (same parameters, same streams): the
    part of it that no Laplace step, subnetwork selection or prior rescaling enters.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.1.
    """
    data_rng, init_rng, train_rng, sub_rng = spawn(rng, 4)
    ds = in_between_toy(n_train, rng=data_rng, noise_sd=NOISE_SD, n_test=n_test)
    lam = float(prior_precision)
    s2_true = (NOISE_SD / ds.y_std) ** 2
    config = adam_recipe(lr=1e-2, epochs=epochs, batch_size=n_train, prior_precision=lam * s2_true)
    model = build_seeded(lambda: mlp_2x50(1), rng=init_rng)
    train_map(model, ds.X_train, ds.y_train, likelihood="regression", config=config, rng=train_rng)
    return ToyFit(ds, lam, model.double().eval(), sub_rng)


@single_threaded()
def score_toy_regression(
    fit: ToyFit,
    *,
    fractions: tuple[float, ...] = (0.5, 0.03, 0.01),
    tie_break: np.random.Generator | None = None,
) -> ToyRegression:
    """Every posterior approximation of §6.1 on a :class:`ToyFit`: the rest of
    :func:`toy_regression` (``fit`` is not changed, so it can be scored again).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §4
       (λ_S = λ·S/D), §6.1 and Fig. 2.
    """
    if not isinstance(fit, ToyFit):
        raise TypeError(f"fit must be a ToyFit; got {type(fit).__name__}")
    ds, lam, model = fit.ds, fit.prior_precision, fit.model
    sub_rng = copy.deepcopy(fit.subnetwork_rng)
    W = weight_indices(model)
    J = per_sample_jacobian(model, ds.X_train, subset=W).numpy()
    G = per_sample_jacobian(model, ds.X_test, subset=W).numpy()
    s2 = noise_variance(model, ds.X_train, ds.y_train)
    D = W.size
    ggn = GGN.regression(J, noise_var=s2, prior_precision=lam)
    var = {
        "Full Cov": np.asarray(predictive_variance(ggn, G)),
        "Diag": diagonal_laplace_variance(ggn, G),
    }
    weights = {"Full Cov": D, "Diag": D}
    final = np.arange(D - 50, D)  # the output layer's 50 weights come last
    last = with_prior_precision(ggn, subnetwork_prior_precision(lam, 50, D))
    var["Final layer"] = np.asarray(subnetwork_variance(last, G, final))
    weights["Final layer"] = 50
    dead_mask = np.all(J == 0.0, axis=0)
    dead_selected, subsets, tied_std, tied_subsets = {}, {}, {}, {}
    order = None if tie_break is None else tie_break.permutation(D)
    shuffled = (
        None if order is None else GGN.regression(J[:, order], noise_var=s2, prior_precision=lam)
    )
    for frac in fractions:
        k = max(1, round(frac * D))
        sub = with_prior_precision(ggn, subnetwork_prior_precision(lam, k, D))
        label = f"{100 * frac:g}%"
        S = subsets[f"Wass {label}"] = largest_marginal_variance(ggn, k)
        var[f"Wass {label}"] = np.asarray(subnetwork_variance(sub, G, S))
        dead_selected[f"Wass {label}"] = int(dead_mask[S].sum())
        var[f"Rand {label}"] = np.asarray(
            subnetwork_variance(sub, G, random_subset(D, k, rng=sub_rng))
        )
        weights[f"Wass {label}"] = weights[f"Rand {label}"] = k
        if shuffled is not None:
            T = tied_subsets[f"Wass {label}"] = order[largest_marginal_variance(shuffled, k)]
            tied_std[f"Wass {label}"] = np.sqrt(
                np.clip(np.asarray(subnetwork_variance(sub, G, T)), 0.0, None)
            )
    x = ds.X_test[:, 0] * ds.x_std[0] + ds.x_mean[0]
    return ToyRegression(
        x=x,
        std={m: np.sqrt(np.clip(v, 0.0, None)) for m, v in var.items()},
        weights=weights,
        gap=np.abs(x) < 0.4,
        data=(np.abs(x) >= 0.5) & (np.abs(x) <= 1.0),
        noise_var=s2,
        dead=int(dead_mask.sum()),
        dead_selected=dead_selected,
        marginal_variance=np.asarray(marginal_variance(ggn)),
        diagonal_variance=1.0 / np.asarray(ggn.diagonal()),
        dead_mask=dead_mask,
        prior_precision=lam,
        subsets=subsets,
        std_random_ties=tied_std,
        subsets_random_ties=tied_subsets,
    )
