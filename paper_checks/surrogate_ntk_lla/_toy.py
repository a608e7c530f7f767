"""A small network on which ScaLLA can be compared with the exact LLA in seconds.

Three Gaussian blobs in the plane (3 classes) are fitted by a tanh MLP 2 → 16 → 16 → 3
(p = 371). Context inputs and out-of-distribution (OOD) inputs are independent draws,
uniform on the square [−6, 6]² at distance ≥ 3 from every blob centre: the context set
represents the OOD region without containing the OOD test inputs (§2.4 of the paper: the
bias helps only where the context resembles the OOD data). The exact LLA (dense, p = 371)
is the reference for the surrogate kernel and for ScaLLA's predictive (Ortega et al.,
arXiv:2601.21835, §2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._checks import one_of
from laplace_lab._random import keyed_generator, spawn
from laplace_lab.numerics import LinearizedLaplace, ScaLLA, per_sample_jacobian
from laplace_lab.paper_checks.surrogate_ntk_lla._threads import one_thread
from laplace_lab.paper_checks.verification import cached, require

#: Blob centres (one per class), blob standard deviation and the half-width of the square.
CENTRES = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
SPREAD, BOX = 0.6, 6.0
#: Prior precision α of the LLA (the MAP is trained with the same Gaussian prior).
ALPHA = 1.0


@dataclass(frozen=True)
class Toy:
    """The fitted toy: the MAP network, its inputs and the exact LLA."""

    model: Any
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    X_context: np.ndarray
    X_ood: np.ndarray
    lla: LinearizedLaplace


def _blobs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = np.arange(n) % len(CENTRES)
    return (CENTRES[y] + SPREAD * rng.standard_normal((n, 2))).astype(np.float32), y


def _far(n: int, rng: np.random.Generator) -> np.ndarray:
    """n points uniform on the square at distance ≥ 3 from every centre."""
    out: list[np.ndarray] = []
    while sum(len(o) for o in out) < n:
        X = rng.uniform(-BOX, BOX, (4 * n, 2))
        d = np.min(np.linalg.norm(X[:, None] - CENTRES[None], axis=2), axis=1)
        out.append(X[d >= 3.0])
    return np.concatenate(out)[:n].astype(np.float32)


def _replicated(replicate: int) -> tuple[int, ...]:
    """The key suffix of a replicate (none for the first, whose streams predate replicates)."""
    return (replicate,) if replicate else ()


@cached(maxsize=8)
@one_thread
def toy(seed: int, replicate: int = 0) -> Toy:
    """The toy problem of one seed: data, MAP (full-batch Adam) and the exact LLA; replicate
    r > 0 draws another, independent toy (data, initialisation, training) under the seed."""
    from laplace_lab.networks.models import mlp
    from laplace_lab.networks.training import adam_recipe, build_seeded, train_map

    key = ("toy", *_replicated(replicate))
    r_data, r_init, r_train = spawn(keyed_generator("surrogate-ntk-lla", *key, seed=seed), 3)
    X, y = _blobs(90, r_data)
    X_test, _ = _blobs(60, r_data)
    X_context = _far(300, r_data)
    X_ood = _far(60, r_data)
    context = {row.tobytes() for row in X_context}
    shared = sum(row.tobytes() in context for row in (*X_test, *X_ood))
    require(shared == 0, f"{shared} test or OOD inputs are among the context inputs")
    model = build_seeded(lambda: mlp(2, [16, 16], 3, activation="tanh"), rng=r_init)
    config = adam_recipe(lr=1e-2, epochs=300, batch_size=90, prior_precision=ALPHA)
    train_map(model, X, y, likelihood="multiclass", config=config, rng=r_train)
    lla = LinearizedLaplace.fit(model, X, likelihood="multiclass", prior_precision=ALPHA)
    return Toy(model, X, y, X_test, X_context, X_ood, lla)


def ntk(model: Any, X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
    """The NTK Gram J(X1) J(X2)ᵀ as an (N1·C, N2·C) float64 matrix (dense, small p)."""
    J1 = per_sample_jacobian(model, X1).double().numpy()
    J2 = J1 if X2 is None else per_sample_jacobian(model, X2).double().numpy()
    return np.einsum("iap,jbp->iajb", J1, J2).reshape(J1.shape[0] * J1.shape[1], -1)


#: The toy's input sets, by the name of their :class:`Toy` field.
INPUTS = ("X_train", "X_test", "X_context", "X_ood")


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@cached(maxsize=80)
def toy_ntk(seed: int, replicate: int, first: str, second: str | None = None) -> np.ndarray:
    """:func:`ntk` of one toy's inputs named ``first`` (and ``second``; one of
    :data:`INPUTS`), read-only: it depends on the toy alone, so that a mutant of the
    surrogate's training or evaluation can reuse it."""
    one_of(first, "first", INPUTS)
    if second is not None:
        one_of(second, "second", INPUTS)
    t = toy(seed, replicate)
    return _read_only(
        ntk(t.model, getattr(t, first), None if second is None else getattr(t, second))
    )


@cached(maxsize=40)
def exact_variance(seed: int, replicate: int, inputs: str) -> np.ndarray:
    """The exact LLA's marginal predictive variances (N, C) at one toy's inputs named
    ``inputs`` (one of :data:`INPUTS`), read-only: reused like :func:`toy_ntk`."""
    one_of(inputs, "inputs", INPUTS)
    t = toy(seed, replicate)
    return _read_only(t.lla.predictive(getattr(t, inputs)).variance())


def learned(fit: ScaLLA, X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
    """The surrogate kernel g(X1) g(X2)ᵀ in the layout of :func:`ntk`."""
    K = fit.kernel(X1, X2)
    return K.reshape(K.shape[0] * K.shape[1], -1)


def relative_error(A: np.ndarray, B: np.ndarray) -> float:
    """‖A − B‖_F / ‖B‖_F."""
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


#: Surrogate training of the toy: steps by mode, batch, probes, learning rate.
STEPS = {False: 300, True: 2000}
TRAINING = {"batch_size": 128, "num_probes": 8, "lr": 1e-2}


@cached(maxsize=40)
@one_thread
def surrogate(
    seed: int, full: bool, m: int, context: bool, biased: bool, steps: int = 0, replicate: int = 0
) -> ScaLLA:
    """ScaLLA on the toy (cached per configuration), on the ``replicate``-th toy of the seed
    with its own training stream."""
    t = toy(seed, replicate)
    return ScaLLA.fit(
        t.model,
        t.X_train,
        likelihood="multiclass",
        prior_precision=ALPHA,
        m=m,
        context=t.X_context if context else None,
        biased=biased,
        steps=steps or STEPS[full],
        rng=keyed_generator(
            "surrogate-ntk-lla",
            "toy-surrogate",
            m,
            context,
            biased,
            steps,
            *_replicated(replicate),
            seed=seed,
        ),
        progress=False,
        **TRAINING,
    )
