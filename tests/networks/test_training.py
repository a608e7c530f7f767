"""MAP training: the prior as weight decay reaches the ridge solution; seeds; σ0² plug-in."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.networks.training import (  # noqa: E402
    TrainConfig,
    adam_recipe,
    build_seeded,
    noise_variance,
    predict,
    sgd_recipe,
    train_map,
)


def _linear_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X @ np.array([1.5, -0.7]) + 0.3 + 0.2 * rng.normal(size=40)
    return X, y


def test_map_with_gaussian_prior_equals_ridge_closed_form():
    X, y = _linear_problem()
    alpha = 5.0
    model = build_seeded(lambda: torch.nn.Linear(2, 1), dtype=torch.float64, rng=0)
    cfg = adam_recipe(lr=0.05, epochs=600, batch_size=40, prior_precision=alpha)
    res = train_map(model, X, y, likelihood="regression", config=cfg, rng=0)
    # argmin Σ½(y − Xw − b)² + α/2 (‖w‖² + b²): (AᵀA + αI)θ = Aᵀy, A = [X, 1]
    A = np.column_stack([X, np.ones(len(y))])
    theta = np.linalg.solve(A.T @ A + alpha * np.eye(3), A.T @ y)
    got = np.concatenate([model.weight.detach().numpy()[0], model.bias.detach().numpy()])
    np.testing.assert_allclose(got, theta, atol=2e-4)
    assert res.losses[-1] < res.losses[0] and not model.training


def test_seeds_are_deterministic_and_leave_global_rng_alone():
    X, y = _linear_problem()
    state = torch.random.get_rng_state()
    outs = []
    for seed in (3, 3, 4):
        m = build_seeded(lambda: mlp(2, [8]), dtype=torch.float64, rng=seed)
        train_map(
            m, X, y, likelihood="regression", config=adam_recipe(epochs=3, batch_size=8), rng=seed
        )
        outs.append(predict(m, X))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.max(np.abs(outs[0] - outs[2])) > 1e-6
    assert torch.equal(state, torch.random.get_rng_state())


def test_classification_recipes_learn():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    yb = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    m = build_seeded(lambda: mlp(2, [16]), rng=0)
    train_map(
        m, X, yb, likelihood="binary", config=sgd_recipe(epochs=40, lr=0.1, batch_size=50), rng=0
    )
    assert np.mean((predict(m, X) > 0) == yb) > 0.95
    yc = (X[:, 0] > 0).astype(np.int64) + 2 * (X[:, 1] > 0)
    m = build_seeded(lambda: mlp(2, [16], 4), rng=0)
    train_map(
        m,
        X,
        yc,
        likelihood="multiclass",
        config=adam_recipe(lr=2e-2, epochs=25, batch_size=100),
        rng=0,
    )
    assert np.mean(predict(m, X).argmax(1) == yc) > 0.9


def test_noise_variance_plugin_and_floor():
    X, y = _linear_problem()
    m = build_seeded(lambda: torch.nn.Linear(2, 1), dtype=torch.float64, rng=0)
    r = predict(m, X) - y
    assert noise_variance(m, X, y) == pytest.approx(np.mean(r**2), rel=1e-12)
    assert noise_variance(m, X, predict(m, X)) == 1e-3


def test_bad_arguments():
    X, y = _linear_problem()
    m = torch.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="lbfgs")
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0.0)
    with pytest.raises(ValueError, match="likelihood"):
        train_map(m, X, y, likelihood="poisson", config=TrainConfig(), rng=0)
    with pytest.raises(TypeError, match="config"):
        train_map(m, X, y, likelihood="regression", config={}, rng=0)
    with pytest.raises(ValueError, match="floor"):
        noise_variance(m, X, y, floor=0.0)


def test_adam_steps_are_bit_identical_to_the_per_tensor_loop(monkeypatch):
    """train_map's multi-tensor Adam gives the same weights, bit for bit, as torch's
    single-tensor loop, with weight decay and the prior penalty on (float32 and float64)."""
    X, y = _linear_problem()
    cfg = adam_recipe(lr=0.01, epochs=5, batch_size=8, prior_precision=2.0, weight_decay=1e-3)
    for dtype in (torch.float32, torch.float64):
        got = []
        for foreach in (True, False):
            original = torch.optim.Adam

            def adam(params, *, _foreach=foreach, _original=original, **kwargs):
                kwargs["foreach"] = _foreach
                return _original(params, **kwargs)

            monkeypatch.setattr(torch.optim, "Adam", adam)
            m = build_seeded(lambda: mlp(2, [16, 16]), dtype=dtype, rng=5)
            train_map(m, X, y, likelihood="regression", config=cfg, rng=6)
            monkeypatch.setattr(torch.optim, "Adam", original)
            got.append(torch.nn.utils.parameters_to_vector(m.parameters()).detach())
        assert torch.equal(got[0], got[1])
