"""Subnetwork inference in large models vs full inference in small ones on UCI regression
(Daxberger et al. §6.2, Fig. 3), on the UCI sets shipped offline (Boston housing, concrete).

E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato, "Bayesian
Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.2: four ReLU MLPs
with hd ∈ {1, 2} hidden layers of width wd ∈ {50, 100} (D = (id + 1)·wd + (hd − 1)·wd²
weights, inference over weights, not biases); a MAP estimate and the homoscedastic noise
variance; 15% of the training split held out for early stopping and for the prior precision;
full-network GGN-Laplace for every network; in the largest network, Wasserstein subnetworks
(marginal variances from the diagonal Laplace approximation, i.e. the largest diag(Ω)⁻¹) of
the sizes of the smaller networks, with λ_S = λ·S/D (§4); the linearized predictive (eq. 18);
mean test log-likelihood.

Details the paper leaves open, fixed here: 90/10 random splits (Hernández-Lobato and Adams,
2015), inputs and targets standardised on the training split, full-batch Adam (lr 1e-2, α = 1
weight penalty) with the validation MSE checked every 10 epochs (the best state is kept),
σ0² = the training residual mean square (the maximum-likelihood noise variance given the
MAP), λ from a log grid by validation log-likelihood.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from laplace_lab._checks import one_of
from laplace_lab._random import spawn
from laplace_lab.networks.data import load_boston, load_concrete
from laplace_lab.networks.models import mlp, weight_indices
from laplace_lab.networks.stacked import Stacked
from laplace_lab.networks.training import build_seeded, noise_variance, predict, single_threaded
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.laplace_variants import SpectralLaplace, with_prior_precision
from laplace_lab.numerics.predictive import subnetwork_variance_path
from laplace_lab.numerics.selection import subnet_diagonal
from laplace_lab.paper_checks.subnetwork_inference.experiments.toy_regression import (
    subnetwork_prior_precision,
)
from laplace_lab.paper_checks.verification import require

__all__ = [
    "ARCHITECTURES",
    "LARGEST",
    "FullPosteriors",
    "TrainedSplit",
    "UCISplit",
    "evaluate_split",
    "full_posteriors",
    "require_standardised_on_training_rows",
    "subnetwork_posteriors",
    "train_splits",
    "uci_split",
]

#: hidden widths of the four networks of §6.2, smallest first.
ARCHITECTURES = {"1x50": (50,), "1x100": (100,), "2x50": (50, 50), "2x100": (100, 100)}
#: The largest network, whose subnetworks are compared.
LARGEST = tuple(ARCHITECTURES)[-1]
#: The prior-precision grid searched on the validation log-likelihood.
PRIOR_GRID = tuple(float(v) for v in np.logspace(-2, 3, 11))
_LOADERS = {"boston": load_boston, "concrete": load_concrete}


@dataclass(frozen=True)
class UCISplit:
    """One random split of one data set.

    ``weights[a]``: D of network ``a``; ``prior_precision[a]``: its λ; ``ll_full[a]``:
    per-test-point log-likelihoods of full-network Laplace; ``ll_map[a]``: of the MAP with σ0²
    only; ``ll_subnetwork[a]``: of the largest network with a Wasserstein subnetwork of D(a)
    weights and λ_S = λ·S/D; ``ll_subnetwork_fixed[a]``: the same with λ; ``decreases`` /
    ``decreases_fixed``: the share of (test point, step) pairs along the nested sizes
    D(1×50) < D(1×100) < D(2×50) < D(2×100) whose predictive variance falls, with λ_S = λ·S/D
    and with λ; ``dead[a]``: weights of ``a`` with an all-zero training Jacobian;
    ``dead_in_subnetwork[a]``: dead weights in the subnetwork of size D(a).
    """

    dataset: str
    weights: dict[str, int]
    prior_precision: dict[str, float]
    ll_map: dict[str, np.ndarray]
    ll_full: dict[str, np.ndarray]
    ll_subnetwork: dict[str, np.ndarray]
    ll_subnetwork_fixed: dict[str, np.ndarray]
    decreases: float
    decreases_fixed: float
    dead: dict[str, int]
    dead_in_subnetwork: dict[str, int]


#: A step counts as a decrease only beyond this relative roundoff of the variance path.
ROUNDOFF = 1e-8


def _decreases(path: np.ndarray) -> float:
    """Share of (step, test point) pairs along ``path`` (sizes × points) that decrease."""
    scale = np.maximum(np.abs(path[1:]), np.abs(path[:-1]))
    return float(np.mean(np.diff(path, axis=0) < -ROUNDOFF * scale))


def _log_likelihood(y: np.ndarray, f: np.ndarray, var: np.ndarray) -> np.ndarray:
    return -0.5 * np.log(2 * np.pi * var) - 0.5 * (y - f) ** 2 / var


def _fit(models, Xs, ys, Xvs, yvs, *, epochs: int, lr: float = 1e-2, alpha: float = 1.0):
    """Full-batch Adam of K networks of one architecture, network k on mean ½(y − f)² +
    α‖θ‖²/(2N) of its own split (Xs[k], ys[k]); each keeps its state of least validation MSE
    on (Xvs[k], yvs[k]), checked every 10 epochs.

    The K networks train as one :class:`~laplace_lab.networks.stacked.Stacked` ensemble on
    the sum of their objectives: each network's slice gets its own gradient, and Adam is
    elementwise, so this is K separate trainings up to float32 rounding.
    """
    stack = Stacked.of(models)
    X, y, Xv, yv = (torch.as_tensor(np.stack(a), dtype=torch.float32) for a in (Xs, ys, Xvs, yvs))
    opt = torch.optim.Adam(stack.parameters, lr=lr, foreach=True)  # bit-identical on CPU
    best, states, penalty = (
        np.full(len(models), np.inf),
        [None] * len(models),
        alpha / (2.0 * y.shape[1]),
    )
    for epoch in range(epochs):
        opt.zero_grad(set_to_none=True)
        loss = 0.5 * torch.mean((stack(X)[..., 0] - y) ** 2, dim=1).sum()
        loss = loss + penalty * stack.squared_norms().sum()
        loss.backward()
        opt.step()
        if epoch % 10 == 9 or epoch == epochs - 1:
            with torch.no_grad():
                mse = torch.mean((stack(Xv)[..., 0] - yv) ** 2, dim=1).numpy()
            for k in np.flatnonzero(mse < best):
                best[k], states[k] = mse[k], stack.state(k)
    stack.write_to(models, states)
    return [model.double().eval() for model in models]


@dataclass(frozen=True)
class TrainedSplit:
    """One split of a UCI data set and the four MAP networks fitted on it (before any Laplace
    step): the data set, the training and validation rows, the models in
    :data:`ARCHITECTURES` order."""

    dataset: str
    data: object
    train_rows: np.ndarray
    validation_rows: np.ndarray
    models: tuple[object, ...]


#: Roundoff of a column mean or standard deviation of standardised rows (≈ 1e-15 here); a
#: scaler fitted on other rows misses 0 and 1 by the shift of the split, ≳ 1e-3.
STANDARDISED_TOL = 1e-8


def require_standardised_on_training_rows(ds) -> None:
    """The audit of the split: inputs and targets standardised with the mean and standard
    deviation of the training rows only (every training column has mean 0 and standard
    deviation 1, or 0 for a constant column), so that no statistic of the test rows enters
    the networks, the noise variance or λ."""
    X, y = np.asarray(ds.X_train, dtype=np.float64), np.asarray(ds.y_train, dtype=np.float64)
    sd = X.std(0)
    off = max(
        float(np.max(np.abs(X.mean(0)))),
        float(np.max(np.minimum(np.abs(sd - 1.0), sd))),
        abs(float(y.mean())),
        abs(float(y.std()) - 1.0),
    )
    require(
        off <= STANDARDISED_TOL,
        f"the standardised training split has column means/standard deviations off 0/1 by "
        f"{off:.2g}: its scaler was not fitted on the training rows only",
    )


@single_threaded()
def train_splits(
    dataset: str, *, rngs: Sequence[np.random.Generator | int], epochs: int = 1000
) -> tuple[TrainedSplit, ...]:
    """Draw one split of ``dataset`` per generator and fit the four networks of each by MAP
    (§6.2 of [1]_); the networks of one architecture train together (:func:`_fit`).

    Parameters
    ----------
    dataset : {"boston", "concrete"}
    rngs : sequence of numpy.random.Generator or int
        One per split: the source of its rows, its validation rows and its initialisations.
    epochs : int
        The most full-batch Adam epochs of each MAP (early stopping keeps the best).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.2.
    """
    one_of(dataset, "dataset", tuple(_LOADERS))
    if not len(rngs):
        raise ValueError("rngs must hold at least one generator (one per split)")
    drawn = []
    for rng in rngs:
        data_rng, val_rng, init_rng = spawn(rng, 3)
        ds = _LOADERS[dataset](rng=data_rng, test_fraction=0.1)
        require_standardised_on_training_rows(ds)
        n = ds.y_train.size
        perm = val_rng.permutation(n)
        va, tr = np.sort(perm[: int(0.15 * n)]), np.sort(perm[int(0.15 * n) :])
        models = [
            build_seeded(functools.partial(mlp, ds.n_features, widths, 1), rng=r)
            for widths, r in zip(ARCHITECTURES.values(), spawn(init_rng, 4), strict=True)
        ]
        drawn.append((ds, tr, va, models))
    fitted = [
        _fit(
            [m[a] for *_, m in drawn],
            [ds.X_train[tr] for ds, tr, _, _ in drawn],
            [ds.y_train[tr] for ds, tr, _, _ in drawn],
            [ds.X_train[va] for ds, _, va, _ in drawn],
            [ds.y_train[va] for ds, _, va, _ in drawn],
            epochs=epochs,
        )
        for a in range(len(ARCHITECTURES))
    ]
    return tuple(
        TrainedSplit(dataset, ds, tr, va, tuple(f[i] for f in fitted))
        for i, (ds, tr, va, _) in enumerate(drawn)
    )


@single_threaded()
def uci_split(dataset: str, *, rng: np.random.Generator | int, epochs: int = 1000) -> UCISplit:
    """Train the four networks on one split of ``dataset`` and evaluate every posterior:
    :func:`evaluate_split` of :func:`train_splits`.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.2 and
       Fig. 3.
    """
    return evaluate_split(train_splits(dataset, rngs=[rng], epochs=epochs)[0])


@dataclass(frozen=True)
class FullPosteriors:
    """What :func:`evaluate_split` computes of a trained split before any subnetwork prior:
    per network ``a`` its D (``weights[a]``), λ (``prior_precision[a]``), the per-test-point
    log-likelihoods of the MAP with σ0² only (``ll_map[a]``) and of full-network Laplace
    (``ll_full[a]``), its dead weights (``dead[a]``); of the largest network its σ0²
    (``noise_var``), test predictions (``f_test``), dead-weight mask (``dead_mask``), the
    Wasserstein order (``order``) and the nested subnetwork variances with the full
    network's λ (``fixed``: sizes × test points)."""

    trained: TrainedSplit
    weights: dict[str, int]
    prior_precision: dict[str, float]
    ll_map: dict[str, np.ndarray]
    ll_full: dict[str, np.ndarray]
    dead: dict[str, int]
    noise_var: float
    f_test: np.ndarray
    dead_mask: np.ndarray
    order: np.ndarray
    fixed: np.ndarray


def _jacobians(model, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    W = weight_indices(model)
    return tuple(per_sample_jacobian(model, A, subset=W).numpy() for A in inputs)


def _full_posteriors(trained: TrainedSplit) -> tuple[FullPosteriors, np.ndarray, np.ndarray]:
    """:class:`FullPosteriors` and the largest network's training and test Jacobians."""
    ds, tr, va = trained.data, trained.train_rows, trained.validation_rows
    X, y, Xv, yv = ds.X_train[tr], ds.y_train[tr], ds.X_train[va], ds.y_train[va]
    grid = np.asarray(PRIOR_GRID)
    out: dict[str, dict] = {k: {} for k in ("D", "lam", "map", "full", "dead")}
    for name, model in zip(ARCHITECTURES, trained.models, strict=True):
        J, Gv, Gt = _jacobians(model, X, Xv, ds.X_test)
        s2 = noise_variance(model, X, y)
        f_val, f_test = predict(model, Xv), predict(model, ds.X_test)
        spectral = SpectralLaplace(J / np.sqrt(s2))
        val_ll = [_log_likelihood(yv, f_val, s2 + v).mean() for v in spectral.variance(Gv, grid)]
        lam = float(grid[int(np.argmax(val_ll))])
        full = spectral.variance(Gt, [lam])[0]
        out["D"][name], out["lam"][name] = J.shape[1], lam
        out["map"][name] = _log_likelihood(ds.y_test, f_test, np.full_like(f_test, s2))
        out["full"][name] = _log_likelihood(ds.y_test, f_test, s2 + full)
        out["dead"][name] = int(np.all(J == 0.0, axis=0).sum())
    # the largest network (the last one fitted): nested Wasserstein subnetworks
    ggn = GGN.regression(J, noise_var=s2, prior_precision=lam)
    order = subnet_diagonal(ggn, J.shape[1])
    sizes = [out["D"][a] for a in ARCHITECTURES]
    posteriors = FullPosteriors(
        trained=trained,
        weights={a: int(v) for a, v in out["D"].items()},
        prior_precision=out["lam"],
        ll_map=out["map"],
        ll_full=out["full"],
        dead={a: int(v) for a, v in out["dead"].items()},
        noise_var=s2,
        f_test=f_test,
        dead_mask=np.all(J == 0.0, axis=0),
        order=order,
        fixed=np.asarray(subnetwork_variance_path(ggn, Gt, order, sizes)),
    )
    return posteriors, J, Gt


@single_threaded()
def full_posteriors(trained: TrainedSplit) -> FullPosteriors:
    """The posteriors of a trained split that need no subnetwork prior: the full Laplace of
    each network (λ by validation log-likelihood) and the nested Wasserstein subnetworks of
    the largest one with the full network's λ (§6.2 of [1]_); :func:`subnetwork_posteriors`
    adds those with λ_S = λ·S/D.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §4 and
       §6.2.
    """
    return _full_posteriors(trained)[0]


@single_threaded()
def subnetwork_posteriors(
    posteriors: FullPosteriors, J: np.ndarray | None = None, Gt: np.ndarray | None = None
) -> UCISplit:
    """Every posterior of a split from its :class:`FullPosteriors`: adds the nested
    Wasserstein subnetworks of the largest network with the prior λ_S = λ·S/D (§4 of [1]_).

    ``J`` and ``Gt``, the largest network's training and test Jacobians, are recomputed
    when not given (both or neither).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §4 and
       §6.2.
    """
    if (J is None) != (Gt is None):
        raise ValueError(
            "J and Gt must be given together (the largest network's training and test "
            f"Jacobians); got J {'None' if J is None else 'given'}, Gt "
            f"{'None' if Gt is None else 'given'}"
        )
    post = posteriors
    trained = post.trained
    ds = trained.data
    if J is None:
        J, Gt = _jacobians(trained.models[-1], ds.X_train[trained.train_rows], ds.X_test)
    s2, f_test, order = post.noise_var, post.f_test, post.order
    lam, D = post.prior_precision[LARGEST], J.shape[1]
    sizes = list(post.weights.values())
    ggn = GGN.regression(J, noise_var=s2, prior_precision=lam)
    scaled = np.stack(
        [
            np.asarray(
                subnetwork_variance_path(
                    with_prior_precision(ggn, subnetwork_prior_precision(lam, k, D)),
                    Gt,
                    order,
                    [k],
                )
            )[0]
            for k in sizes
        ]
    )
    smaller = list(ARCHITECTURES)[:-1]
    return UCISplit(
        dataset=trained.dataset,
        weights=post.weights,
        prior_precision=post.prior_precision,
        ll_map=post.ll_map,
        ll_full=post.ll_full,
        ll_subnetwork={
            a: _log_likelihood(ds.y_test, f_test, s2 + scaled[i]) for i, a in enumerate(smaller)
        },
        ll_subnetwork_fixed={
            a: _log_likelihood(ds.y_test, f_test, s2 + post.fixed[i])
            for i, a in enumerate(smaller)
        },
        decreases=_decreases(scaled),
        decreases_fixed=_decreases(post.fixed),
        dead=post.dead,
        dead_in_subnetwork={
            a: int(post.dead_mask[order[: post.weights[a]]].sum()) for a in smaller
        },
    )


@single_threaded()
def evaluate_split(trained: TrainedSplit) -> UCISplit:
    """Every posterior of a trained split: the full Laplace of each network (λ by validation
    log-likelihood), and the nested Wasserstein subnetworks of the largest one with the
    prior λ_S = λ·S/D and with a fixed λ (§4 and §6.2 of [1]_):
    :func:`subnetwork_posteriors` of :func:`full_posteriors`.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §4 and
       §6.2.
    """
    return subnetwork_posteriors(*_full_posteriors(trained))
