"""Diagonal SWAG and dead ReLUs in the Wasserstein subnetwork selection (Daxberger et al.,
"Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §6.3).

§6.3: "We tried diagonal Laplace but found that the selected weights where those where the
Jacobian of the NN evaluated at the train points was always zero (i.e. dead ReLUs). The
posterior variance of these weights is large as it matches the prior. ... SWAG does not
suffer from this problem as it disregards weights with zero training gradients." The
diagonal-Laplace half is claim ``dead-relu-weights-selected``; the SWAG half is checked here on
a network that can be trained in seconds: a 2×50 ReLU MLP on scikit-learn's 8×8 digits, its
MAP, diagonal SWAG (:func:`laplace_lab.networks.swag.swag_diagonal_variance`, constant-lr SGD
from the MAP) and the diagonal Laplace variances diag(Ω)⁻¹ of its GGN with λ = α, the MAP's
prior precision. A weight is dead when its Jacobian column at every training input and every
class is exactly zero (the paper's definition); on the digits these are the weights of dead
ReLU units, of unit pairs never active at the same digit, and of pixels never lit in the
training digits.

The verdict is read at the paper's subnetwork fraction, 0.38 % of the weights (24 here): no
dead weight among them on any network (2 quick, 10 full). The larger selection of k = |dead|
weights, where diagonal Laplace takes dead weights only, is reported beside it: there the
weight penalty's drift of the dead weights during the SGD run (their SWAG variance is not
zero) lets a few in — 2 of 3,527 over the 10 full-mode networks of seed 0.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from laplace_lab.networks.swag import swag_diagonal_variance
from laplace_lab.numerics.selection import largest_variances
from laplace_lab.paper_checks.subnetwork_inference import _mutants
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    cached,
    claim,
    decisions,
    require,
)

PAPER = "subnetwork-inference"
#: The MLP's hidden widths and the MAP recipe (Adam, cosine; α = 1 weight penalty). At this
#: learning rate 1–4 units of the second layer die in training (at 5e-3 typically none: the
#: dead weights are then only those of never-lit pixels and of unit pairs never active together).
WIDTHS = (50, 50)
EPOCHS = 30
LEARNING_RATE = 3e-2
PRIOR_PRECISION = 1.0
#: Trained networks: quick / full mode.
NETWORKS = {False: 2, True: 10}
#: §6.3's subnetwork fraction (42,438 of ResNet-18's 11.2M weights): the selection decided on.
PAPER_FRACTION = 0.0038
#: Relative distance to the prior variance 1/λ within which a diagonal-Laplace variance sits
#: at the prior (roundoff of λ + ‖J_d‖² for a live weight with a tiny Jacobian column).
AT_PRIOR = 1e-9
SWAG_SETTING = Setting.substitute(
    "a 2×50 ReLU MLP (p = 6,310) trained on scikit-learn's 8×8 digits instead of ResNet-18 on "
    "MNIST and CIFAR-10 (not installed, and not trainable here); diagonal SWAG from 5 epochs "
    "of constant-lr SGD from the MAP; the paper's subnetwork fraction, 0.38 % (24 weights)"
)


@dataclass(frozen=True)
class DeadReluNetwork:
    """One trained MLP: per parameter (flat ``parameters()`` order) ``dead`` (all-zero
    training Jacobian), the diagonal SWAG variance ``swag`` and the diagonal Laplace variance
    ``laplace`` = 1/(λ + diag(GGN)); ``dead_units``: hidden units inactive at every training
    input; ``dead_pixel_weights``: dead first-layer weights of pixels that are 0 in every
    training digit; ``error``: the MAP's test error."""

    dead: np.ndarray
    swag: np.ndarray
    laplace: np.ndarray
    dead_units: int
    dead_pixel_weights: int
    error: float


@dataclass(frozen=True)
class _MapNetwork:
    """One trained MLP before SWAG: the model, its training digits, the generator of its SWAG
    run (not yet drawn from: :func:`_with_swag` draws from a copy), and per parameter
    ``live`` (a nonzero training Jacobian entry) and ``ggn_diag``; ``dead_units``, ``p`` and
    ``error`` as in :class:`DeadReluNetwork`."""

    model: object
    X: np.ndarray
    y: np.ndarray
    swag_rng: np.random.Generator
    live: np.ndarray
    ggn_diag: np.ndarray
    dead_units: int
    p: int
    error: float


def _map_network(rng: np.random.Generator) -> _MapNetwork:
    import torch

    from laplace_lab._random import spawn
    from laplace_lab.networks.data import load_digits_data
    from laplace_lab.networks.models import mlp
    from laplace_lab.networks.training import (
        adam_recipe,
        build_seeded,
        predict,
        torch_threads,
        train_map,
    )
    from laplace_lab.numerics.jacobians import per_sample_jacobian

    data_rng, init_rng, batch_rng, swag_rng = spawn(rng, 4)
    ds = load_digits_data(rng=data_rng)
    X, y = ds.X_train, ds.y_train
    recipe = adam_recipe(
        lr=LEARNING_RATE, epochs=EPOCHS, batch_size=128, prior_precision=PRIOR_PRECISION
    )
    with torch_threads(1):
        model = build_seeded(lambda: mlp(64, WIDTHS, 10), rng=init_rng, dtype=torch.float64)
        train_map(model, X, y, likelihood="multiclass", config=recipe, rng=batch_rng)
        logits = predict(model, X)
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        p = sum(t.numel() for t in model.parameters())
        live, ggn_diag = np.zeros(p, dtype=bool), np.zeros(p)
        for a in range(0, X.shape[0], 200):  # (rows, classes, p) per chunk of rows
            J = per_sample_jacobian(model, X[a : a + 200]).numpy()
            P = probs[a : a + 200]
            live |= np.any(J != 0.0, axis=(0, 1))
            # diag of Jᵀ(diag(π) − ππᵀ)J, the softmax GGN
            ggn_diag += np.einsum("nc,ncp->p", P, J * J)
            ggn_diag -= np.sum(np.einsum("nc,ncp->np", P, J) ** 2, axis=0)
        with torch.no_grad():
            hidden, units = torch.as_tensor(X), 0
            for layer in model:
                hidden = layer(hidden)
                if isinstance(layer, torch.nn.ReLU):
                    units += int(torch.all(hidden == 0, dim=0).sum())
        # SWAG runs on a copy of the model: the MAP's test error does not depend on it
        error = float(np.mean(predict(model, ds.X_test).argmax(1) != ds.y_test))
    return _MapNetwork(model, X, y, swag_rng, live, ggn_diag, units, p, error)


def _with_swag(net: _MapNetwork) -> DeadReluNetwork:
    """The diagonal SWAG variances of a trained MLP and what is read off it."""
    from laplace_lab.networks.training import torch_threads

    with torch_threads(1):
        swag = swag_diagonal_variance(
            net.model,
            net.X,
            net.y,
            likelihood="multiclass",
            rng=copy.deepcopy(net.swag_rng),
            prior_precision=PRIOR_PRECISION,
        )
    # the first layer's weight matrix is the first parameter: (width, 64), row-major
    never_lit = np.all(net.X == 0.0, axis=0)
    pixel = np.zeros(net.p, dtype=bool)
    pixel[: WIDTHS[0] * 64] = np.tile(never_lit, WIDTHS[0])
    return DeadReluNetwork(
        ~net.live,
        np.asarray(swag),
        1.0 / (PRIOR_PRECISION + net.ggn_diag),
        net.dead_units,
        int(np.sum(pixel & ~net.live)),
        net.error,
    )


@cached
def _maps(seed: int, full: bool) -> tuple[_MapNetwork, ...]:
    """The trained networks before SWAG, stream ``swag-dead-relus`` (one spawned generator
    each): a mutant of SWAG alone reuses them."""
    streams = Context(seed=seed).rng("swag-dead-relus").spawn(NETWORKS[full])
    return tuple(_map_network(r) for r in streams)


@cached
def _networks(seed: int, full: bool) -> tuple[DeadReluNetwork, ...]:
    """The trained networks and their diagonal SWAG variances."""
    return tuple(_with_swag(net) for net in _maps(seed, full))


def _selection_variances(net: DeadReluNetwork) -> np.ndarray:
    """The marginal variances the Wasserstein selection ranks: diagonal SWAG (§6.3)."""
    return net.swag


def _laplace_variances(net: DeadReluNetwork) -> np.ndarray:
    """Diagonal Laplace in place of SWAG (the choice §6.3 rejects)."""
    return net.laplace


def _selected(variances: np.ndarray, k: int) -> np.ndarray:
    """The Wasserstein subnetwork of k weights, audited: it holds the k largest variances."""
    S = largest_variances(variances, k)
    rest = np.delete(variances, S)
    require(
        S.size == k and (rest.size == 0 or variances[S].min() >= rest.max()),
        f"the Wasserstein subnetwork of {k} weights misses a weight of larger variance than "
        "one it holds: the selection rule is wrong",
    )
    return S


def _summary(net: DeadReluNetwork) -> dict:
    """Dead weights among the selections of §6.3's fraction and of k = |dead| weights."""
    dead, k = net.dead, int(net.dead.sum())
    p = dead.size
    swag = _selection_variances(net)
    require(
        bool(np.all(np.isfinite(swag)) and swag.min() >= 0.0),
        "the SWAG variances are not finite non-negative numbers",
    )
    at_prior = np.abs(net.laplace * PRIOR_PRECISION - 1.0) <= AT_PRIOR
    # Ω_dd = λ + ‖J_d‖²_Λ ≥ λ with equality for a zero Jacobian column: every dead weight
    # sits at the prior variance 1/λ, the largest there is
    require(
        bool(np.all(at_prior[dead]) and np.all(net.laplace * PRIOR_PRECISION <= 1.0 + AT_PRIOR)),
        "a diagonal-Laplace variance of a dead weight is off the prior variance 1/λ, or one "
        "exceeds it: our diagonal GGN is wrong",
    )
    k_paper = max(1, round(PAPER_FRACTION * p))
    out = {
        "p": p,
        "dead": k,
        "dead_units": net.dead_units,
        "dead_pixel_weights": net.dead_pixel_weights,
        "error": net.error,
        "k_paper": k_paper,
    }
    if k == 0:
        return out
    laplace_paper = _selected(net.laplace, k_paper)
    return out | {
        "swag_dead_paper": int(dead[_selected(swag, k_paper)].sum()),
        "laplace_dead_paper": int(dead[laplace_paper].sum()),
        "laplace_at_prior_paper": int(at_prior[laplace_paper].sum()),
        "swag_dead": int(dead[_selected(swag, k)].sum()),
        "laplace_dead": int(dead[_selected(net.laplace, k)].sum()),
        "dead_swag_max": float(swag[dead].max()),
        "live_swag_median": float(np.median(swag[~dead])),
        "live_below_dead_max": float(np.mean(swag[~dead] <= swag[dead].max())),
    }


@claim(
    paper=PAPER,
    name="swag-avoids-dead-relu-weights",
    location="§6.3 (subnetwork selection for ResNet-18)",
    expected=Status.INCONCLUSIVE,
    kind=Kind.EXISTENCE,
    setting=SWAG_SETTING,
    statement="Diagonal SWAG does not suffer from the dead-ReLU problem of diagonal Laplace: "
    "its Wasserstein selection holds no weight whose Jacobian at the training points is "
    "always zero, whereas diagonal Laplace puts them first at the prior variance.",
    mutants=(
        Mutant(
            "laplace-variances-ranked",
            "the selection ranks the diagonal-Laplace variances instead of SWAG's",
            {_selection_variances: _laplace_variances},
            reuses=(_networks,),
        ),
        Mutant(
            "iterates-with-isotropic-noise",
            "SWAG's iterates perturbed by isotropic noise of 10× the largest SWAG variance, "
            "gradient or not (a Langevin-type sampler, which does not disregard dead weights)",
            {swag_diagonal_variance: _mutants.swag_with_isotropic_noise},
            reuses=(_maps,),
        ),
        Mutant(
            "smallest-variances-selected",
            "the library's Wasserstein rule takes the smallest variances",
            {largest_variances: _mutants.smallest_variances},
            reuses=(_networks,),
            expect=Status.ERROR,
        ),
    ),
)
def swag_avoids_dead_relus(ctx: Context) -> Verdict:
    """§6.3: "We tried diagonal Laplace but found that the selected weights where those where
    the Jacobian of the NN evaluated at the train points was always zero (i.e. dead ReLUs).
    ... SWAG does not suffer from this problem as it disregards weights with zero training
    gradients." A universal statement about the selection at the paper's subnetwork fraction
    (0.38 % of the weights): on every trained network, the weights of largest diagonal SWAG
    variance hold no dead weight (one dead weight among them is a counterexample), while the
    diagonal-Laplace selection of the same size is all at the prior variance. The larger
    selection of k = |dead| weights (the size at which diagonal Laplace selects dead weights
    only) is reported beside it."""
    rows = [_summary(n) for n in _networks(ctx.seed, ctx.full)]
    tested = [r for r in rows if r["dead"] > 0]
    k_paper = rows[0]["k_paper"]
    evidence = [
        f"{len(rows)} 2×{WIDTHS[0]} ReLU MLPs (p = {rows[0]['p']:,} parameters) trained on the "
        f"digits (Adam lr {LEARNING_RATE:g}, {EPOCHS} epochs, α = {PRIOR_PRECISION:g}; test "
        "error " + ", ".join(f"{r['error']:.3f}" for r in rows) + "); diagonal SWAG from 5 "
        "epochs of SGD (lr 1e-2) from the MAP; diagonal Laplace diag(Ω)⁻¹ of the softmax GGN "
        "with λ = α.",
        "Dead parameters (all-zero Jacobian at every training digit and class) per network: "
        + "; ".join(
            f"{r['dead']} ({r['dead_pixel_weights']} of never-lit pixels, the rest of "
            f"{r['dead_units']} dead units and of unit pairs never active together)"
            for r in rows
        )
        + ".",
    ]
    if not tested:
        return Verdict(
            Status.INCONCLUSIVE,
            summary="no network has a dead weight: nothing for SWAG to avoid",
            evidence=evidence,
            details={"per_network": rows},
        )
    counter = sum(r["swag_dead_paper"] for r in tested)
    laplace = sum(r["laplace_dead_paper"] for r in tested)
    evidence += [
        f"At the paper's fraction (0.38 %, k = {k_paper}), dead weights selected per network: "
        "SWAG "
        + ", ".join(str(r["swag_dead_paper"]) for r in tested)
        + "; diagonal Laplace "
        + ", ".join(
            f"{r['laplace_dead_paper']} ({r['laplace_at_prior_paper']} at 1/λ)" for r in tested
        )
        + f" of {k_paper}.",
        "A larger selection, k = |dead| (where diagonal Laplace selects dead weights only): "
        "dead weights in the SWAG selection "
        + ", ".join(f"{r['swag_dead']}/{r['dead']}" for r in tested)
        + "; in the diagonal-Laplace one "
        + ", ".join(f"{r['laplace_dead']}/{r['dead']}" for r in tested)
        + " (live weights with numerically zero Jacobian columns tie at 1/λ with them).",
        "Beyond the paper: SWAG 'disregards' dead weights only through the data term. The α "
        "weight penalty still moves them (geometric decay towards 0 during the SGD run), so "
        "their SWAG variance is not zero: at most "
        + ", ".join(f"{r['dead_swag_max']:.1e}" for r in tested)
        + " against a median live variance of "
        + ", ".join(f"{r['live_swag_median']:.1e}" for r in tested)
        + "; the share of live parameters below the largest dead one: "
        + ", ".join(f"{r['live_below_dead_max']:.3f}" for r in tested)
        + ". They stay below the few selected weights, not below every live weight, and at "
        "k = |dead| a few of them can enter the selection.",
    ]
    # Both halves of the statement are universal over trained networks: a SWAG selection that
    # holds a dead weight, or a diagonal-Laplace selection not all at the prior variance, is a
    # counterexample; a sample of networks without one establishes neither (INCONCLUSIVE).
    laplace_short = [r for r in tested if r["laplace_at_prior_paper"] < k_paper]
    d = decisions.counterexample(
        counter > 0 or bool(laplace_short),
        witness=(
            f"dead weights in the SWAG selections of k = {k_paper} (0.38 %): {counter} over "
            f"{len(tested)} networks; diagonal-Laplace selections not all at 1/λ: "
            f"{len(laplace_short)} of {len(tested)} networks (dead weights in them: {laplace} "
            f"of {k_paper * len(tested)})"
        ),
        exhaustive=False,
    )
    return Verdict(
        d.status,
        measured=counter,
        expected=0,
        tolerance=f"no dead weight among the k = {k_paper} (0.38 %) largest SWAG variances of "
        "any network, and every diagonal-Laplace selection of that size at 1/λ (a network "
        "breaking either is a counterexample; none among a sample of networks is INCONCLUSIVE)",
        summary=(
            f"at 0.38 % (k = {k_paper}) SWAG selects {counter} dead weights, diagonal Laplace "
            f"{laplace} of {k_paper * len(tested)} ({len(tested)} networks); at k = |dead| SWAG "
            f"{sum(r['swag_dead'] for r in tested)} of {sum(r['dead'] for r in tested)}"
        ),
        evidence=evidence,
        details={"per_network": rows},
        decision=d,
    )
