"""Calibration under rotation shift on scikit-learn's 8×8 digits: the MAP, linearized Laplace
(full, diagonal, subnetwork) with the probit predictive, and a deep ensemble.

An offline substitute for the rotated-MNIST benchmark of Daxberger et al., "Bayesian Deep
Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3 (Fig. 4): a small CNN
(:func:`laplace_lab.networks.models.digits_cnn`, p = 1,898) is trained on the unrotated digits
and evaluated on test digits rotated by each angle (``scipy.ndimage.rotate``, bilinear,
zero fill). Images enter the network on their raw scale divided by 16 (pixels in [0, 1]):
per-pixel standardisation would blow up pixels that are constant in the training digits but
lit by a rotation.

Methods (all Laplace variants share the softmax-Hessian GGN of the MAP, App. C.5 of Raha et
al. arXiv:2605.09075 / eq. 9 of Daxberger et al., and the probit predictive of eqs. 13 and 19,
:func:`laplace_lab.theory.probit.probit_softmax`):

- ``"MAP"``: softmax of the MAP logits;
- ``"Laplace (full)"``: full-covariance GGN-Laplace over all p parameters (tractable here);
- ``"Laplace (diagonal)"``: the posterior N(θ̂, diag(Ω)⁻¹)
  (:func:`laplace_lab.numerics.laplace_variants.diagonal_laplace_variance`);
- ``"Subnetwork (Wasserstein)"``: the k weights of largest marginal variance (eq. 23),
  estimated by diagonal SWAG as in the paper's §6.3
  (:func:`laplace_lab.networks.swag.swag_diagonal_variance`), full covariance Ω_SS⁻¹ over them
  (eqs. 14–16);
- ``"Subnetwork (random)"``: k weights drawn uniformly (the paper's "Ours (Rand)");
- ``"Ensemble"``: the mean softmax of independently initialised and trained MAPs
  (:func:`ensemble_rotation_shift`, on the same split for the same ``rng``).

The prior precision λ maximises the Laplace evidence of the full network over a log grid
(:meth:`laplace_lab.numerics.laplace_variants.SpectralLaplace.log_evidence`); the diagonal
posterior uses the same λ and the subnetworks λ_S = λ·S/D (§4). The paper tunes λ by grid
search, which on in-distribution validation digits selects the largest λ of any grid (every
added variance costs NLL on easy digits), i.e. the MAP; the evidence does not collapse so.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import ndimage

from laplace_lab._checks import positive_int
from laplace_lab._random import spawn
from laplace_lab.networks.data import Dataset, load_digits_data
from laplace_lab.networks.models import digits_cnn
from laplace_lab.networks.swag import swag_diagonal_variance
from laplace_lab.networks.training import (
    adam_recipe,
    build_seeded,
    predict,
    single_threaded,
    train_map,
)
from laplace_lab.numerics.classification_metrics import expected_calibration_error
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.laplace_variants import (
    SpectralLaplace,
    diagonal_laplace_variance,
    with_prior_precision,
)
from laplace_lab.numerics.predictive import subnetwork_variance
from laplace_lab.numerics.selection import largest_variances, random_subset
from laplace_lab.paper_checks.subnetwork_inference.experiments.toy_regression import (
    subnetwork_prior_precision,
)
from laplace_lab.theory.probit import probit_softmax

__all__ = [
    "LAPLACE_METHODS",
    "RotationFit",
    "RotationShift",
    "ensemble_rotation_shift",
    "fit_rotation_map",
    "rotate_digits",
    "rotation_shift",
    "score_rotation_shift",
]

#: The Laplace variants, in report order.
LAPLACE_METHODS = (
    "Laplace (full)",
    "Laplace (diagonal)",
    "Subnetwork (Wasserstein)",
    "Subnetwork (random)",
)
#: The prior-precision grid over which the evidence is maximised.
PRIOR_GRID = tuple(float(v) for v in np.logspace(-2, 5, 29))


def rotate_digits(images: Any, angle: float) -> np.ndarray:
    """8×8 digits (rows of 64 pixels in [0, 1]) rotated counter-clockwise by ``angle`` degrees.

    Bilinear interpolation about the image centre, zero outside the frame, clipped to [0, 1].
    """
    X = np.asarray(images, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 64:
        raise ValueError(f"images must have shape (n, 64); got {X.shape}")
    if float(angle) % 360 == 0:
        return X.copy()
    out = ndimage.rotate(X.reshape(-1, 8, 8), float(angle), axes=(2, 1), reshape=False, order=1)
    return np.clip(out, 0.0, 1.0).reshape(-1, 64)


def _unit_scale(ds: Dataset) -> Dataset:
    """``ds`` with raw pixels / 16 in [0, 1] instead of per-pixel standardisation."""

    def raw(X: np.ndarray) -> np.ndarray:
        return (X * ds.x_std + ds.x_mean) / 16.0

    return replace(
        ds,
        X_train=raw(ds.X_train),
        X_test=raw(ds.X_test),
        x_mean=np.zeros(64),
        x_std=np.full(64, 16.0),
    )


@dataclass(frozen=True)
class RotationShift:
    """Per method and angle: NLL, ECE and error; for the Laplace variants also the share of
    test digits whose decision differs from the MAP's (``flips``). ``log_likelihood[m]`` and
    ``correct[m]`` hold the per-digit values (angles × test digits, the same digits at every
    angle and for every method). ``prior_precision``: the λ per Laplace variant; ``p``:
    parameters; ``subnetwork_size``: k; ``n_test``: test digits per angle; ``dead``: parameters
    whose training Jacobian (every class) is exactly zero; ``dead_in_wasserstein``: how many
    of them the Wasserstein subnetwork holds; ``wasserstein_margin``: the smallest SWAG
    variance in it minus the largest outside it (≥ 0 when it holds the largest ones)."""

    angles: tuple[float, ...]
    nll: dict[str, np.ndarray]
    ece: dict[str, np.ndarray]
    error: dict[str, np.ndarray]
    flips: dict[str, np.ndarray]
    log_likelihood: dict[str, np.ndarray]
    correct: dict[str, np.ndarray]
    prior_precision: dict[str, float]
    p: int
    subnetwork_size: int
    n_test: int
    dead: int = 0
    dead_in_wasserstein: int = 0
    wasserstein_margin: float = 0.0


_FIELDS = ("nll", "ece", "error", "flips", "log_likelihood", "correct")


@dataclass(frozen=True)
class _Split:
    ds: Dataset
    train: np.ndarray
    val: np.ndarray
    ggn_rows: np.ndarray
    test: np.ndarray
    map_rng: np.random.Generator
    subnetwork_rng: np.random.Generator
    ensemble_rng: np.random.Generator


def _split(rng: np.random.Generator | int, n_ggn: int | None, n_test: int | None) -> _Split:
    """The data split and the named streams; equal for equal ``rng``."""
    data_rng, val_rng, map_rng, sub_rng, ens_rng = spawn(rng, 5)
    ds = _unit_scale(load_digits_data(rng=data_rng))
    n = ds.X_train.shape[0]
    perm = val_rng.permutation(n)
    val, tr = np.sort(perm[: n // 5]), np.sort(perm[n // 5 :])
    ggn_rows = tr if n_ggn is None else np.sort(val_rng.choice(tr, size=n_ggn, replace=False))
    test = np.arange(ds.X_test.shape[0])
    if n_test is not None:
        test = np.sort(val_rng.choice(test, size=n_test, replace=False))
    return _Split(ds, tr, val, ggn_rows, test, map_rng, sub_rng, ens_rng)


def _point_ll(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.log(np.clip(probs[np.arange(y.size), y], 1e-300, None))


def _train(split: _Split, rng: np.random.Generator, epochs: int) -> Any:
    init_rng, batch_rng = spawn(rng, 2)
    model = build_seeded(digits_cnn, rng=init_rng)
    config = adam_recipe(lr=5e-3, epochs=epochs, batch_size=128)
    ds = split.ds
    rows = split.train
    train_map(
        model,
        ds.X_train[rows],
        ds.y_train[rows],
        likelihood="multiclass",
        config=config,
        rng=batch_rng,
    )
    return model.double().eval()


def _collect(out: dict[str, dict[str, list[float]]], probs: dict, y, decision) -> None:
    """Append NLL, ECE, error (and flips for the Laplace variants) of one angle."""
    for name, P in probs.items():
        ll = _point_ll(P, y)
        out["log_likelihood"].setdefault(name, []).append(ll)
        out["correct"].setdefault(name, []).append(P.argmax(1) == y)
        out["nll"].setdefault(name, []).append(float(-ll.mean()))
        out["ece"].setdefault(name, []).append(expected_calibration_error(P, y))
        out["error"].setdefault(name, []).append(float(np.mean(P.argmax(1) != y)))
        if name in LAPLACE_METHODS:
            out["flips"].setdefault(name, []).append(float(np.mean(P.argmax(1) != decision)))


def _result(
    out, angles, lam, p: int, k: int, n_test: int, dead=(0, 0), margin: float = 0.0
) -> RotationShift:
    arrays = {key: {m: np.asarray(v) for m, v in d.items()} for key, d in out.items()}
    return RotationShift(
        tuple(float(a) for a in angles),
        arrays["nll"],
        arrays["ece"],
        arrays["error"],
        arrays["flips"],
        arrays["log_likelihood"],
        arrays["correct"],
        {m: float(v) for m, v in lam.items()},
        p,
        k,
        n_test,
        *dead,
        margin,
    )


@dataclass(frozen=True)
class RotationFit:
    """What :func:`rotation_shift` computes before any Laplace step: the split, the MAP
    (double precision, eval mode), its diagonal SWAG variances and the generator of the
    random subnetwork, not yet drawn from (:func:`score_rotation_shift` draws from a copy)."""

    split: _Split
    model: Any
    swag: np.ndarray
    random_rng: np.random.Generator


@single_threaded()
def fit_rotation_map(
    *,
    rng: np.random.Generator | int,
    n_ggn: int | None = None,
    n_test: int | None = None,
    epochs: int = 20,
) -> RotationFit:
    """The split, the MAP and its diagonal SWAG variances of :func:`rotation_shift` (same
    parameters, same streams): the part of it that no Laplace variant, subnetwork selection
    or score enters.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3
       (diagonal SWAG variances for the Wasserstein selection).
    """
    split = _split(rng, n_ggn, n_test)
    ds = split.ds
    model = _train(split, split.map_rng, epochs)
    swag_rng, random_rng = spawn(split.subnetwork_rng, 2)
    rows = split.train
    swag = swag_diagonal_variance(
        model, ds.X_train[rows], ds.y_train[rows], likelihood="multiclass", rng=swag_rng
    )
    return RotationFit(split, model, np.asarray(swag), random_rng)


@single_threaded()
def score_rotation_shift(
    fit: RotationFit,
    *,
    angles: tuple[float, ...] = (0, 15, 30, 45, 60, 75, 90, 120, 150, 180),
    subnetwork_size: int = 100,
) -> RotationShift:
    """The Laplace variants of a :class:`RotationFit` scored on rotated digits: the rest of
    :func:`rotation_shift` (``fit`` is not changed, so it can be scored again).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §4
       (λ_S = λ·S/D), §6.3 and Fig. 4.
    """
    if not isinstance(fit, RotationFit):
        raise TypeError(f"fit must be a RotationFit; got {type(fit).__name__}")
    k = positive_int(subnetwork_size, "subnetwork_size")
    split, model, swag = fit.split, fit.model, fit.swag
    ds = split.ds
    J = per_sample_jacobian(model, ds.X_train[split.ggn_rows]).numpy()
    # a subsample of n rows estimates the GGN of all N training rows up to the factor N/n
    J *= np.sqrt(split.train.size / split.ggn_rows.size)
    ggn = GGN.multiclass(J, predict(model, ds.X_train[split.ggn_rows]), prior_precision=1.0)
    spectral = SpectralLaplace(ggn.Jw)
    theta2 = float(sum((t.detach().double() ** 2).sum() for t in model.parameters()))
    evidence = spectral.log_evidence(PRIOR_GRID, theta2)
    full_lam = PRIOR_GRID[int(np.argmax(evidence))]
    lam = {"Laplace (full)": full_lam, "Laplace (diagonal)": full_lam}
    subsets = {
        "Subnetwork (Wasserstein)": largest_variances(swag, k),
        "Subnetwork (random)": random_subset(ggn.p, k, rng=copy.deepcopy(fit.random_rng)),
    }
    for name in subsets:
        lam[name] = subnetwork_prior_precision(full_lam, k, ggn.p)
    out: dict[str, dict[str, list]] = {m: {} for m in _FIELDS}
    y = ds.y_test[split.test]
    for angle in angles:
        X = rotate_digits(ds.X_test[split.test], angle)
        G = per_sample_jacobian(model, X).numpy()
        f = predict(model, X)
        variances = {
            "MAP": np.zeros_like(f),
            "Laplace (full)": spectral.variance(G, [lam["Laplace (full)"]])[0],
            "Laplace (diagonal)": diagonal_laplace_variance(
                with_prior_precision(ggn, lam["Laplace (diagonal)"]), G
            ),
        }
        for name, S in subsets.items():
            post = with_prior_precision(ggn, lam[name])
            variances[name] = np.asarray(subnetwork_variance(post, G, S))
        probs = {m: probit_softmax(f, v) for m, v in variances.items()}
        _collect(out, probs, y, f.argmax(axis=1))
    dead = np.all(J == 0.0, axis=(0, 1))
    S = subsets["Subnetwork (Wasserstein)"]
    counts = (int(dead.sum()), int(dead[S].sum()))
    left = np.delete(swag, S)
    margin = float(swag[S].min() - left.max()) if left.size else 0.0
    return _result(out, angles, lam, ggn.p, k, int(split.test.size), counts, margin)


@single_threaded()
def rotation_shift(
    *,
    rng: np.random.Generator | int,
    angles: tuple[float, ...] = (0, 15, 30, 45, 60, 75, 90, 120, 150, 180),
    subnetwork_size: int = 100,
    n_ggn: int | None = None,
    n_test: int | None = None,
    epochs: int = 20,
) -> RotationShift:
    """Train one MAP on unrotated digits; score it and its Laplace variants on rotated digits:
    :func:`score_rotation_shift` of :func:`fit_rotation_map`.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Source of the split, the validation rows, the initialisation, the batches and the
        random subnetwork (independent spawned streams).
    angles : tuple of float
        Rotation angles in degrees.
    subnetwork_size : int
        k, the number of weights of the subnetworks.
    n_ggn : int, optional
        Training rows in the GGN (all training rows by default); a subsample's GGN is scaled
        by N/n_ggn, an unbiased estimate of the full-data GGN.
    n_test : int, optional
        Test digits per angle (all 449 by default).
    epochs : int
        Adam epochs of the MAP (lr 5e-3, batch 128, cosine).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3
       and Fig. 4 (rotated MNIST).
    """
    k = positive_int(subnetwork_size, "subnetwork_size")
    fit = fit_rotation_map(rng=rng, n_ggn=n_ggn, n_test=n_test, epochs=epochs)
    return score_rotation_shift(fit, angles=angles, subnetwork_size=k)


@single_threaded()
def ensemble_rotation_shift(
    *,
    rng: np.random.Generator | int,
    angles: tuple[float, ...] = (0, 15, 30, 45, 60, 75, 90, 120, 150, 180),
    ensemble_size: int = 5,
    n_test: int | None = None,
    epochs: int = 20,
    n_ggn: int | None = None,
) -> RotationShift:
    """The deep ensemble (mean softmax of ``ensemble_size`` MAPs) on the split of
    :func:`rotation_shift` for the same ``rng``; its only method is ``"Ensemble"``. Pass the
    ``n_ggn`` of that run too: the GGN rows are drawn before the test digits, so the same
    ``rng`` and ``n_ggn`` give the same test digits (paired comparisons).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3
       (ensembles of 5 networks).
    """
    size = positive_int(ensemble_size, "ensemble_size")
    split = _split(rng, n_ggn, n_test)
    members = [_train(split, r, epochs) for r in spawn(split.ensemble_rng, size)]
    out: dict[str, dict[str, list]] = {m: {} for m in _FIELDS}
    y = split.ds.y_test[split.test]
    for angle in angles:
        X = rotate_digits(split.ds.X_test[split.test], angle)
        P = np.mean(
            [probit_softmax(f, np.zeros_like(f)) for f in (predict(m, X) for m in members)], 0
        )
        _collect(out, {"Ensemble": P}, y, None)
    return _result(out, angles, {}, 0, 0, int(split.test.size))
