"""The classical Laplace approximation on the mean + log-variance network of Rodemann et al.,
"Self-Supervised Laplace Approximation for Bayesian Uncertainty Quantification", TMLR,
arXiv:2605.12208, App. C.1 eq. (37) and App. C.3 (the heteroscedastic toy of §5.1, Table 1).

The network f_θ(x) = [μ̂(x), log σ̂²(x)] (eq. 37; two hidden ReLU layers of 50) is fitted by
MAP to the Gaussian negative log-likelihood of App. C.3, ½ Σ [log σ(x_i)² + (y_i −
μ(x_i))²/σ(x_i)²], plus the prior term α‖θ‖²/2 (α = 1, as the homoscedastic fit). The
generalised Gauss–Newton matrix of that likelihood has the output Hessian
Λ_i = diag(1/σ̂_i², ½) per point (the Fisher information of a Gaussian in (μ, log σ²)), so
Ω = Σ_i J_iᵀ Λ_i J_i + λI with J_i the 2 × p Jacobian of the outputs; LA's predictive is the
linearised N(μ̂(x*), σ̂²(x*) + v(x*)), v = g_μᵀ Ω⁻¹ g_μ, under the dense, diagonal and KFAC
representations of Ω, with λ tuned by the Laplace evidence (App. C.2, "post-hoc tuning of the
prior precision using the marginal likelihood").

ASSLA (eq. 17) on the same network: log p(ŷ | D) ≈ ℓ_new(θ̂) + ½ log|Ω| − ½ log|Ω̃|, with
ℓ_new(θ̂) = log N(ŷ; μ̂(x*), σ̂²(x*)) and Ω̃ = Ω + J_*ᵀΛ_*J_* the curvature with the new point
(the dense GGN; the determinant lemma gives ½ log|Ω| − ½ log|Ω̃| =
−½ log|I₂ + Λ_*^{1/2} J_* Ω⁻¹ J_*ᵀ Λ_*^{1/2}|). It is evaluated on a grid of ŷ around μ̂(x*)
and normalised numerically, and its central intervals come from the grid CDF, as for the
homoscedastic network (:mod:`.curvature`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from laplace_lab._random import spawn
from laplace_lab.networks.data import heteroscedastic_toy
from laplace_lab.networks.models import mlp_2x50
from laplace_lab.networks.training import build_seeded, single_threaded
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.kfac import kfac_from_signals, layer_signals
from laplace_lab.numerics.laplace_variants import SpectralLaplace, diagonal_laplace_variance
from laplace_lab.numerics.network_ssla import NormalPredictive, gaussian_scores
from laplace_lab.numerics.predictive import predictive_variance
from laplace_lab.paper_checks.self_supervised_laplace.experiments.batched import train_stacked
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import (
    CURVATURES,
    LEVELS,
    grid_intervals,
)

__all__ = [
    "MeanVarianceCoverage",
    "MeanVarianceCurvature",
    "assla_log_density",
    "fit_mean_variance",
    "fit_mean_variance_batch",
    "fit_mean_variance_to",
    "gaussian_nll",
    "la_coverage",
    "la_curvature",
    "output_hessian_root",
]

#: log σ̂² is clipped to this range in the loss (a guard against a collapsing variance early
#: in training; the fitted values lie well inside it).
LOG_VAR_RANGE = (-10.0, 10.0)


@dataclass(frozen=True)
class MeanVarianceFit:
    """A MAP fit of eq. (37)'s network: the data, the model (float64, eval mode), the output
    Jacobians at the training (N, 2, p) and test (M, 2, p) inputs, and the outputs."""

    data: Any
    model: Any
    J: np.ndarray
    G: np.ndarray
    out_train: np.ndarray
    out_test: np.ndarray


def gaussian_nll(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """App. C.3's NLL per point, ½[log σ² + (y − μ)²/σ²], for outputs [μ, log σ²]."""
    mu, s = out[:, 0], out[:, 1].clamp(*LOG_VAR_RANGE)
    return 0.5 * (s + (y - mu) ** 2 * torch.exp(-s))


@single_threaded()
def fit_mean_variance(
    *,
    rng: np.random.Generator | int,
    n_train: int = 500,
    n_test: int = 2000,
    lr: float = 1e-2,
    epochs: int = 300,
    batch_size: int = 64,
    prior_precision: float = 1.0,
) -> MeanVarianceFit:
    """Fit eq. (37)'s network by MAP to one seeded draw of the toy of eq. (18) (Adam, cosine
    annealing, the same recipe as the homoscedastic fit)."""
    data_rng, init_rng, train_rng = spawn(rng, 3)
    ds = heteroscedastic_toy(
        n_train + n_test, test_fraction=n_test / (n_train + n_test), rng=data_rng
    )
    return fit_mean_variance_to(
        ds,
        rng=(init_rng, train_rng),
        lr=lr,
        epochs=epochs,
        batch_size=batch_size,
        prior_precision=prior_precision,
    )


@single_threaded()
def fit_mean_variance_to(
    ds: Any,
    *,
    rng: np.random.Generator | int | tuple[np.random.Generator, np.random.Generator],
    lr: float = 1e-2,
    epochs: int = 300,
    batch_size: int = 64,
    prior_precision: float = 1.0,
    validation: tuple[np.ndarray, np.ndarray] | None = None,
) -> MeanVarianceFit:
    """Fit eq. (37)'s network (d inputs, outputs [μ̂, log σ̂²]) by MAP to a standardised
    regression :class:`~laplace_lab.networks.data.Dataset` (Adam, cosine annealing; ``rng``:
    one seed, or the initialisation's and the training order's generators).

    ``validation``: (X, y) rows held out of the fit; the parameters of the epoch with the
    lowest validation NLL are kept (early stopping, App. C.4).
    """
    init_rng, train_rng = rng if isinstance(rng, tuple) else spawn(rng, 2)
    d = int(np.asarray(ds.X_train).shape[1])
    model = build_seeded(lambda: mlp_2x50(d, 2), rng=init_rng)
    X = torch.as_tensor(np.asarray(ds.X_train), dtype=torch.float32)
    y = torch.as_tensor(np.asarray(ds.y_train), dtype=torch.float32)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr, foreach=True)  # bit-identical on CPU
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs, eta_min=0.0)
    order_rng = np.random.default_rng(train_rng)
    n = X.shape[0]
    if validation is not None:
        X_val = torch.as_tensor(np.asarray(validation[0]), dtype=torch.float32)
        y_val = torch.as_tensor(np.asarray(validation[1]), dtype=torch.float32)
        best, best_state = np.inf, None
    model.train()
    for _ in range(epochs):
        order = torch.as_tensor(order_rng.permutation(n))
        for a in range(0, n, batch_size):
            idx = order[a : a + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = gaussian_nll(model(X[idx]), y[idx]).mean()
            loss = loss + prior_precision / (2.0 * n) * sum((t * t).sum() for t in params)
            loss.backward()
            opt.step()
        sched.step()
        if validation is not None:
            with torch.no_grad():
                val = float(gaussian_nll(model(X_val), y_val).mean())
            if val < best:
                best, best_state = val, {k: v.clone() for k, v in model.state_dict().items()}
    if validation is not None:
        model.load_state_dict(best_state)
    return _finish(ds, model)


def _finish(ds: Any, model: Any) -> MeanVarianceFit:
    """The fitted ``model`` in float64 and eval mode, its output Jacobians and outputs."""
    model = model.double().eval()
    J = per_sample_jacobian(model, ds.X_train).numpy()
    G = per_sample_jacobian(model, ds.X_test).numpy()
    with torch.no_grad():
        out_train = model(torch.as_tensor(np.asarray(ds.X_train), dtype=torch.float64)).numpy()
        out_test = model(torch.as_tensor(np.asarray(ds.X_test), dtype=torch.float64)).numpy()
    return MeanVarianceFit(ds, model, J, G, out_train, out_test)


@single_threaded()
def fit_mean_variance_batch(
    datasets: list[Any],
    *,
    rngs: list[tuple[np.random.Generator, np.random.Generator]],
    lr: float = 1e-2,
    epochs: int = 300,
    batch_size: int = 64,
    prior_precision: float = 1.0,
) -> list[MeanVarianceFit]:
    """:func:`fit_mean_variance_to` (without early stopping) for K networks trained together.

    Network k has its own data ``datasets[k]``, its initialisation from ``rngs[k][0]`` (the
    single-network builder's) and its minibatch order from ``rngs[k][1]``. The K networks'
    weights are stacked (K, ...) and trained as one computation with batched products; the
    loss is the sum of the K networks' losses, so each network's gradient is its own, and
    Adam, elementwise, is K independent Adams. The same function as the one-network trainer
    up to float32 rounding; after training the networks are unstacked into K ordinary
    modules. Every dataset must have the same number of training rows and inputs.
    """
    if len(datasets) != len(rngs) or not datasets:
        raise ValueError("one (init, order) generator pair per dataset, at least one")
    Xs = [np.asarray(ds.X_train) for ds in datasets]
    if len({X.shape for X in Xs}) != 1:
        raise ValueError("every dataset needs the same training shape")
    d = int(Xs[0].shape[1])
    models = [build_seeded(lambda: mlp_2x50(d, 2), rng=init_rng) for init_rng, _ in rngs]
    train_stacked(
        models,
        Xs,
        [np.asarray(ds.y_train) for ds in datasets],
        [np.random.default_rng(train_rng) for _, train_rng in rngs],
        gaussian_nll,
        lr=lr,
        epochs=epochs,
        batch_size=batch_size,
        prior_precision=prior_precision,
    )
    return [_finish(ds, model) for ds, model in zip(datasets, models, strict=True)]


@dataclass(frozen=True)
class MeanVarianceCoverage:
    """``coverage[curvature]``: LA's held-out coverage at :data:`LEVELS`; ``plugin``: the
    coverage of the MAP's own N(μ̂, σ̂²); ``assla``: ASSLA's (eq. 17, dense GGN) coverage from
    its grid-normalised density; ``n_test``, ``prior_precision`` and the mean σ̂²(x*) and
    v(x*) per curvature."""

    coverage: dict[str, np.ndarray]
    plugin: np.ndarray
    assla: np.ndarray
    n_test: int
    prior_precision: float
    mean_noise_var: float
    mean_epistemic: dict[str, float]


def output_hessian_root(out: np.ndarray) -> np.ndarray:
    """R_i (N, 2, 2) with R_i R_iᵀ = Λ_i = diag(1/σ̂_i², ½), the Fisher information of a
    Gaussian in (μ, log σ²) at the MAP outputs."""
    s = np.clip(out[:, 1], *LOG_VAR_RANGE)
    R = np.zeros((out.shape[0], 2, 2))
    R[:, 0, 0] = np.exp(-0.5 * s)
    R[:, 1, 1] = np.sqrt(0.5)
    return R


def assla_log_density(
    y: np.ndarray, mu: np.ndarray, log_var: np.ndarray, log_det_ratio: np.ndarray
) -> np.ndarray:
    """Eq. (17) on the mean + log-variance network, unnormalised, on rows of ŷ (M, K):
    log N(ŷ; μ̂, σ̂²) + ½ log|Ω| − ½ log|Ω̃| (``log_det_ratio``, per test point)."""
    s2 = np.exp(log_var)[:, None]
    r = y - mu[:, None]
    return -0.5 * np.log(2 * np.pi * s2) - r * r / (2 * s2) + log_det_ratio[:, None]


def _rank_two_log_det(a11: np.ndarray, a22: np.ndarray, a_sum: np.ndarray) -> np.ndarray:
    """−½ log|I₂ + A| from A's diagonal and the quadratic form of the sum of its two rows."""
    a12 = 0.5 * (a_sum - a11 - a22)
    return -0.5 * np.log((1.0 + a11) * (1.0 + a22) - a12 * a12)


def _dense_log_det_ratio(ggn: GGN, G: np.ndarray, out_test: np.ndarray) -> np.ndarray:
    """½ log|Ω| − ½ log|Ω + J_*ᵀΛ_*J_*| per test point (determinant lemma, rank two)."""
    R = output_hessian_root(out_test)
    W = np.einsum("mab,map->mbp", R, G)  # rows w_1, w_2 of R_*ᵀ J_*
    a11 = np.asarray(predictive_variance(ggn, W[:, 0]))
    a22 = np.asarray(predictive_variance(ggn, W[:, 1]))
    return _rank_two_log_det(a11, a22, np.asarray(predictive_variance(ggn, W[:, 0] + W[:, 1])))


@dataclass(frozen=True)
class MeanVarianceCurvature:
    """The Laplace part of :func:`la_coverage` that does not depend on the test targets:
    λ, LA's epistemic variance v(x*) per curvature and ASSLA's ½ log|Ω| − ½ log|Ω̃| (dense
    GGN) per test point."""

    prior_precision: float
    variance: dict[str, np.ndarray]
    log_det_ratio: np.ndarray


@single_threaded()
def la_curvature(
    fit: MeanVarianceFit, *, prior_precision: float | None = None
) -> MeanVarianceCurvature:
    """λ, v(x*) under each curvature and ASSLA's log-determinant ratio on a fitted network.

    ``prior_precision=None`` tunes λ by the Laplace evidence of the dense GGN over a log grid
    (App. C.2), as the homoscedastic study does.
    """
    R = output_hessian_root(fit.out_train)
    Jw = np.einsum("nab,nap->nbp", R, fit.J).reshape(-1, fit.J.shape[2])  # rows R_iᵀ J_i
    spectral = SpectralLaplace(Jw)
    if prior_precision is None:
        grid = np.logspace(-3, 4, 57)
        theta2 = float(sum((t.detach() ** 2).sum() for t in fit.model.parameters()))
        evidence = spectral.log_evidence(grid, theta2)
        prior_precision = float(grid[int(np.argmax(evidence))])
    ggn = GGN.regression(Jw, noise_var=1.0, prior_precision=prior_precision)
    g_mu, g_lv = fit.G[:, 0, :], fit.G[:, 1, :]
    # the dense gᵀΩ⁻¹g of LA and of ASSLA's rank-two lemma from the eigenpairs of the data
    # part that tuned λ (one product with every row; the Cholesky solves cost ~3x more).
    # R_* is diagonal, so the rows w_b = R_*,bb g_b of R_*ᵀJ_* need no product of their own:
    # w_bᵀΩ⁻¹w_b = R_*,bb² g_bᵀΩ⁻¹g_b; only w_1 + w_2 is a row of its own
    r = np.diagonal(output_hessian_root(fit.out_test), axis1=1, axis2=2)  # (M, 2)
    rows = np.empty((g_mu.shape[0], 3, g_mu.shape[1]))  # g_mu, g_lv, w_1 + w_2 per point
    rows[:, :2] = fit.G
    np.multiply(r[:, :1], g_mu, out=rows[:, 2])
    rows[:, 2] += r[:, 1:] * g_lv
    q = spectral.variance(rows, [prior_precision])[0]
    quad = np.c_[q[:, 0], r[:, 0] ** 2 * q[:, 0], r[:, 1] ** 2 * q[:, 1], q[:, 2]]  # (M, 4)
    _, signals = layer_signals(fit.model, fit.data.X_train)
    kfac = kfac_from_signals(signals, R, prior_precision=prior_precision)
    variance = {
        "DENSE": quad[:, 0],
        "DIAG": np.asarray(diagonal_laplace_variance(ggn, g_mu)),
        "KFAC": np.asarray(kfac.variance(fit.model, fit.data.X_test))[:, 0],
    }
    return MeanVarianceCurvature(
        float(prior_precision), variance, _rank_two_log_det(quad[:, 1], quad[:, 2], quad[:, 3])
    )


@single_threaded()
def la_coverage(
    fit: MeanVarianceFit,
    *,
    prior_precision: float | None = None,
    curvature: MeanVarianceCurvature | None = None,
) -> MeanVarianceCoverage:
    """LA's coverage on a fitted mean + log-variance network under each curvature, the MAP's
    own N(μ̂, σ̂²) and ASSLA's (eq. 17, dense GGN) from its grid-normalised density.

    ``curvature``: the network's :func:`la_curvature` when already computed (its λ is used; a
    ``prior_precision`` beside it is refused); otherwise it is computed here with
    ``prior_precision`` (None: λ by the Laplace evidence).
    """
    if curvature is None:
        curvature = la_curvature(fit, prior_precision=prior_precision)
    elif prior_precision is not None:
        raise ValueError(
            "prior_precision must be None when curvature is given (its variances were "
            f"computed with λ = {curvature.prior_precision:.6g}); got {prior_precision!r}"
        )
    variance = curvature.variance
    mu = fit.out_test[:, 0]
    log_var = np.clip(fit.out_test[:, 1], *LOG_VAR_RANGE)
    s2 = np.exp(log_var)
    y = np.asarray(fit.data.y_test)
    half = 10.0 * np.sqrt(s2.max())
    y_grid = mu[:, None] + np.linspace(-half, half, 801)[None, :]
    logp = assla_log_density(y_grid, mu, log_var, curvature.log_det_ratio)
    iv = grid_intervals(y_grid, logp, LEVELS)
    assla = ((iv[:, :, 0] <= y) & (y <= iv[:, :, 1])).mean(axis=1)

    def cover(var: np.ndarray) -> np.ndarray:
        scores = gaussian_scores(NormalPredictive(mu, var), y, levels=LEVELS)
        return np.array([scores[f"coverage_{round(100 * lv)}"] for lv in LEVELS])

    return MeanVarianceCoverage(
        {c: cover(s2 + variance[c]) for c in CURVATURES},
        cover(s2),
        assla,
        int(y.size),
        curvature.prior_precision,
        float(np.mean(s2)),
        {c: float(np.mean(variance[c])) for c in CURVATURES},
    )
