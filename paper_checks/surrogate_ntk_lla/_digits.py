"""The offline substitute of Table 1 of Ortega et al., arXiv:2601.21835 (§3).

The paper: a CNN trained on FMNIST, KMNIST as OOD set, the MNIST test set as context points,
m = 100. FMNIST, KMNIST and MNIST are not available offline; the substitute keeps the roles:

- in-distribution: scikit-learn's 8 × 8 digits (1,348 training, 449 test images, 10
  classes), the small CNN ``digits_cnn(channels=(4, 8))`` (p = 666: the exact LLA is dense
  and cheap), MAP by Adam with the Gaussian prior of precision α₀ = 10;
- OOD: the 449 test images rotated by 90° — glyphs of the same strokes and scale that are
  not any of the ten digits, as KMNIST's characters are no FMNIST garment (both sets
  are grey strokes on a black background);
- context: the 1,348 training images transposed (mirrored about the diagonal): like the
  paper's MNIST context, a glyph data set that resembles the OOD set without being it
  (different images, a different transformation).

Hyper-parameters as in §3: the prior precision of the LLA is chosen by maximising the
Laplace estimate of the marginal likelihood (exact LLA; the last-layer LLA its own); ScaLLA
uses the exact LLA's α (the surrogate kernel stands for the NTK; a feature-space evidence
without θ* has no maximum). Predictive probabilities are the Monte Carlo average of the
softmax over 1,000 draws of the Gaussian logits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._random import keyed_generator, keyed_seed, spawn
from laplace_lab.numerics import (
    GaussianPredictive,
    LinearizedLaplace,
    ScaLLA,
    entropy,
)
from laplace_lab.paper_checks.surrogate_ntk_lla._threads import one_thread
from laplace_lab.paper_checks.verification import cached, require

#: Prior precision of the MAP training and the grid of the evidence maximisation.
MAP_PRIOR = 10.0
ALPHA_GRID = np.logspace(-2, 3, 41)
#: Surrogate: features per class (the paper's m), steps by mode, batch, probes, rate.
M = 100
STEPS = {False: 500, True: 3000}
TRAINING = {"batch_size": 64, "num_probes": 4, "lr": 3e-3}
#: Training seeds (data split, MAP, surrogate) a comparison is pooled over, by mode.
TRAINING_SEEDS = {False: 3, True: 5}
#: Monte Carlo draws of the logits per input.
SAMPLES = 1000
METHODS = ("MAP", "LLA", "LLLA", "ScaLLA", "ScaLLA biased")


def training_seeds(seed: int, full: bool) -> tuple[int, ...]:
    """The base seed, then further training seeds drawn from a stream named by it."""
    more = keyed_seed("surrogate-ntk-lla", "digits-training-seeds", seed=seed)
    extra = more.generate_state(TRAINING_SEEDS[full] - 1, dtype=np.uint32)
    return (seed, *(int(x) for x in extra))


@dataclass(frozen=True)
class DigitsData:
    """Inputs (float32, standardised) and labels of the substitute."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_ood: np.ndarray
    X_context: np.ndarray


def _rotate(X: np.ndarray) -> np.ndarray:
    return np.rot90(X.reshape(-1, 8, 8), axes=(1, 2)).reshape(-1, 64).copy()


def _transpose(X: np.ndarray) -> np.ndarray:
    return X.reshape(-1, 8, 8).transpose(0, 2, 1).reshape(-1, 64).copy()


def context_set(d: Any) -> np.ndarray:
    """The context inputs of a split ``d``: its training digits transposed (module docstring)."""
    return _transpose(d.X_train)


#: Standardisation on the training rows leaves every training column with mean 0 and standard
#: deviation 1 (0 for a pixel constant on the training rows) up to float32 rounding.
STANDARDISED_TOL = 1e-5


def _audit(data: DigitsData) -> None:
    """Invariants of the substitute's data, in the run (else ERROR).

    - Standardised with statistics of the training rows only: every training column has mean
      0 and standard deviation 1 (0 for a pixel constant on them); statistics taken over all
      rows, or the test rows, leave a training mean off 0 by about 1e-2.
    - No context input is a test input or an OOD input (exact rows): the surrogate is fitted on
      the context, the metrics are taken on the test and OOD sets.
    """
    X = data.X_train.astype(np.float64)
    mean, std = np.abs(X.mean(0)).max(), X.std(0)
    off = float(np.max(np.minimum(std, np.abs(std - 1.0))))
    require(
        mean <= STANDARDISED_TOL and off <= 10 * STANDARDISED_TOL,
        f"the training inputs are not standardised on their own rows: largest |column mean| "
        f"{mean:.2e}, largest deviation of a column's standard deviation from 1 (or 0) {off:.2e}",
    )
    seen = {row.tobytes() for row in np.ascontiguousarray(data.X_context)}
    for name, X_eval in (("test", data.X_test), ("OOD", data.X_ood)):
        shared = sum(row.tobytes() in seen for row in np.ascontiguousarray(X_eval))
        require(shared == 0, f"{shared} {name} inputs are among the context inputs")


@cached(maxsize=8)
@one_thread
def digits_map(seed: int) -> tuple[DigitsData, Any]:
    """The data and the MAP network of one seed."""
    from laplace_lab.networks.data import load_digits_data
    from laplace_lab.networks.models import digits_cnn
    from laplace_lab.networks.training import adam_recipe, build_seeded, train_map

    r_split, r_init, r_train = spawn(keyed_generator("surrogate-ntk-lla", "digits", seed=seed), 3)
    d = load_digits_data(rng=r_split)
    f32 = np.float32
    data = DigitsData(
        d.X_train.astype(f32),
        d.y_train,
        d.X_test.astype(f32),
        d.y_test,
        _rotate(d.X_test).astype(f32),
        context_set(d).astype(f32),
    )
    _audit(data)
    model = build_seeded(lambda: digits_cnn(channels=(4, 8)), rng=r_init)
    config = adam_recipe(lr=1e-2, epochs=20, batch_size=64, prior_precision=MAP_PRIOR)
    train_map(
        model, data.X_train, data.y_train, likelihood="multiclass", config=config, rng=r_train
    )
    return data, model


def _tuned(lla: LinearizedLaplace, y: np.ndarray) -> LinearizedLaplace:
    return lla.with_prior_precision(float(ALPHA_GRID[np.argmax(lla.log_evidence(y, ALPHA_GRID))]))


@cached(maxsize=8)
@one_thread
def digits_lla(seed: int, subset: str | None = None) -> LinearizedLaplace:
    """The exact (``subset=None``) or last-layer LLA, α by the Laplace evidence."""
    data, model = digits_map(seed)
    lla = LinearizedLaplace.fit(
        model, data.X_train, likelihood="multiclass", prior_precision=1.0, subset=subset
    )
    return _tuned(lla, data.y_train)


@cached(maxsize=8)
@one_thread
def digits_scalla(seed: int, full: bool, biased: bool) -> ScaLLA:
    """ScaLLA (context points; biased or not) with the exact LLA's α."""
    data, model = digits_map(seed)
    return ScaLLA.fit(
        model,
        data.X_train,
        likelihood="multiclass",
        prior_precision=digits_lla(seed).posterior.prior_precision,
        m=M,
        context=data.X_context,
        biased=biased,
        steps=STEPS[full],
        rng=keyed_generator("surrogate-ntk-lla", "digits-scalla", biased, seed=seed),
        progress=False,
        **TRAINING,
    )


@dataclass(frozen=True)
class Scores:
    """Per-input quantities of one method, for metrics and paired bootstraps."""

    probs_test: np.ndarray
    entropy_test: np.ndarray
    entropy_ood: np.ndarray
    gaussian_test: np.ndarray | None
    gaussian_ood: np.ndarray | None
    variance_test: np.ndarray | None
    variance_ood: np.ndarray | None


def _map_scores(model: Any, data: DigitsData) -> Scores:
    import torch

    with torch.no_grad():
        p = [
            torch.softmax(model(torch.as_tensor(X)), 1).double().numpy()
            for X in (data.X_test, data.X_ood)
        ]
    return Scores(p[0], entropy(p[0]), entropy(p[1]), None, None, None, None)


def _gaussian_scores(method: Any, data: DigitsData, rng: np.random.Generator) -> Scores:
    a: GaussianPredictive = method.predictive(data.X_test)
    b: GaussianPredictive = method.predictive(data.X_ood)
    pa = a.probabilities(link="mc", samples=SAMPLES, rng=rng)
    pb = b.probabilities(link="mc", samples=SAMPLES, rng=rng)
    return Scores(
        pa,
        entropy(pa),
        entropy(pb),
        a.gaussian_entropy(),
        b.gaussian_entropy(),
        a.variance(),
        b.variance(),
    )


def _mc_stream(seed: int) -> np.random.Generator:
    return keyed_generator("surrogate-ntk-lla", "digits-mc", seed=seed)


@cached(maxsize=8)
@one_thread
def digits_base_scores(seed: int) -> tuple[dict[str, Scores], dict[str, Any]]:
    """Scores of the MAP, the exact and the last-layer LLA, and the state of the Monte Carlo
    stream after their draws (the surrogates' scores draw from it next).

    Apart from :func:`digits_scores` so that a change to the surrogates leaves these to be
    reused.
    """
    data, model = digits_map(seed)
    rng = _mc_stream(seed)
    out = {
        "MAP": _map_scores(model, data),
        "LLA": _gaussian_scores(digits_lla(seed), data, rng),
        "LLLA": _gaussian_scores(digits_lla(seed, "last_layer"), data, rng),
    }
    return out, rng.bit_generator.state


@cached(maxsize=8)
@one_thread
def digits_scores(seed: int, full: bool) -> dict[str, Scores]:
    """Scores of every method of :data:`METHODS` on the test and OOD inputs; one Monte Carlo
    stream per seed, drawn in the order of :data:`METHODS`."""
    data, _ = digits_map(seed)
    base, state = digits_base_scores(seed)
    rng = _mc_stream(seed)
    rng.bit_generator.state = state
    out = dict(base)
    for name, biased in (("ScaLLA", False), ("ScaLLA biased", True)):
        out[name] = _gaussian_scores(digits_scalla(seed, full, biased), data, rng)
    return {name: out[name] for name in METHODS}
