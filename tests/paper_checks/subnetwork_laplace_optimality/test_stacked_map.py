"""Lockstep MAP training of several replications against the one-network training."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.networks.training import adam_recipe, build_seeded, train_map  # noqa: E402
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.stacked_map import (  # noqa: E402
    stackable,
    train_stacked,
)


def _problem(seed: int, n: int = 37, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X @ rng.standard_normal(d)) + 0.1 * rng.standard_normal(n)


def _nets(k: int):
    return [
        build_seeded(lambda: mlp(3, [6, 5], 1), rng=100 + i, dtype=torch.float64) for i in range(k)
    ]


@pytest.mark.parametrize("batch_size", [37, 8])  # full batch, and mini-batches with a remainder
def test_each_network_trains_as_train_map_trains_it_alone(batch_size):
    # float64: the stacked products differ from the one-network ones only in roundoff, so the
    # trained weights agree to ~1e-12; a wrong batch order, penalty or schedule moves them by
    # more than 1e-3 (the second assertion below)
    config = adam_recipe(lr=1e-2, epochs=30, batch_size=batch_size, prior_precision=2.0)
    data = [_problem(s) for s in range(3)]
    stacked, alone = _nets(3), _nets(3)
    train_stacked(
        stacked, [X for X, _ in data], [y for _, y in data], config=config, rngs=[7, 8, 9]
    )
    for net, (X, y), r in zip(alone, data, [7, 8, 9], strict=True):
        train_map(net, X, y, likelihood="regression", config=config, rng=r)
    for a, b, start in zip(stacked, alone, _nets(3), strict=True):
        wa, wb, w0 = (
            torch.nn.utils.parameters_to_vector(m.parameters()).detach() for m in (a, b, start)
        )
        assert not a.training
        np.testing.assert_allclose(wa.numpy(), wb.numpy(), rtol=0, atol=1e-10)
        assert float((wa - w0).abs().max()) > 1e-3  # the networks did train


def test_another_batch_stream_gives_other_weights():
    config = adam_recipe(lr=1e-2, epochs=10, batch_size=8)
    X, y = _problem(0)
    a, b = _nets(1), _nets(1)
    train_stacked(a, [X], [y], config=config, rngs=[1])
    train_map(b[0], X, y, likelihood="regression", config=config, rng=2)
    wa, wb = (torch.nn.utils.parameters_to_vector(m[0].parameters()).detach() for m in (a, b))
    assert float((wa - wb).abs().max()) > 1e-4


def test_refuses_what_it_cannot_train_as_train_map_does():
    X, y = _problem(0)
    assert stackable(adam_recipe()) and not stackable(adam_recipe(grad_clip=1.0))
    with pytest.raises(ValueError, match="config must be an Adam recipe"):
        train_stacked(_nets(1), [X], [y], config=adam_recipe(optimizer="sgd"), rngs=[0])
    with pytest.raises(ValueError, match="same positive length"):
        train_stacked(_nets(2), [X], [y], config=adam_recipe(), rngs=[0])
    with pytest.raises(ValueError, match="same positive number of rows"):
        train_stacked(_nets(2), [X, X[:5]], [y, y[:5]], config=adam_recipe(), rngs=[0, 1])
