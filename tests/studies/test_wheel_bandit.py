"""Neural Thompson sampling on the Wheel Bandit: variance formula, selection rules, policy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.numerics import GGN, greedy_laplace_reference
from laplace_lab.numerics import subnet_diagonal as dense_subnet_diagonal
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.studies.catalog import wheel_bandit as catalog
from laplace_lab.studies.models import bandit_net, mlp
from laplace_lab.studies.registry import get_study
from laplace_lab.studies.training import build_seeded, torch_threads
from laplace_lab.studies.wheel_bandit import (
    BanditConfig,
    SubnetPosterior,
    arm_inputs,
    choose_arms,
    run_bandit,
    select_subnetwork,
    thompson_variance,
)


def _dense_jacobian(model, X):
    """Row-by-row autograd Jacobian (independent of numerics.jacobians), float64."""
    rows = []
    params = list(model.parameters())
    for x in torch.as_tensor(X, dtype=torch.float64):
        out = model(x[None]).sum()
        grads = torch.autograd.grad(out, params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows).numpy()


def _buffer(rng, n):
    x = rng.uniform(-1, 1, size=(n, 2))
    a = rng.integers(0, 5, size=n)
    return np.concatenate([x, np.eye(5)[a]], axis=1)


@pytest.mark.parametrize("k", [15, 60])  # k < n: Cholesky of Ω_SS; k > n: Woodbury
def test_thompson_variance_equals_dense_formula(k):
    rng = np.random.default_rng(0)
    model = build_seeded(bandit_net, dtype=torch.float64, rng=3)
    X, Xs = _buffer(rng, 30), arm_inputs(rng.uniform(-1, 1, size=(4, 2)))
    S = rng.choice(11001, size=k, replace=False)
    s2, alpha = 0.3, 1.0
    net = NetworkGGN(model, X, noise_var=s2, prior_precision=alpha)
    post = SubnetPosterior(S, net.columns_ggn(S), s2)
    var = thompson_variance(model, post, Xs)
    J, G = _dense_jacobian(model, X)[:, S], _dense_jacobian(model, Xs)[:, S]
    omega = J.T @ J / s2 + alpha * np.eye(k)  # App. D.2
    expected = s2 + np.einsum("ij,ij->i", G, np.linalg.solve(omega, G.T).T)
    assert var.shape == (20,)
    np.testing.assert_allclose(var, expected, rtol=1e-9)
    assert np.all(var > s2)  # the epistemic part is positive for generic gradients


def test_selection_rules_match_dense_references():
    rng = np.random.default_rng(1)
    model = build_seeded(lambda: mlp(7, [8], 1), dtype=torch.float64, rng=5)
    p = sum(t.numel() for t in model.parameters())
    X = _buffer(rng, 25)
    s2, alpha, k = 0.05, 1.0, 10
    J = _dense_jacobian(model, X)
    ggn = GGN.regression(J, noise_var=s2, prior_precision=alpha)
    omega = J.T @ J / s2 + alpha * np.eye(p)
    scores = np.mean(J**2, axis=0)
    for method, expected in [
        ("subnet_diagonal", dense_subnet_diagonal(ggn, k)),
        ("greedy_laplace", greedy_laplace_reference(omega, scores, k)),
        ("gradient_laplace", np.argsort(-scores, kind="stable")[:k]),
        ("last_k", np.arange(p - 1, p - 1 - k, -1)),
        ("neural_linear", np.arange(p - 9, p)),
    ]:
        post = select_subnetwork(model, X, method, k, noise_var=s2, prior_precision=alpha)
        np.testing.assert_array_equal(post.S, expected, err_msg=method)
        JS = J[:, post.S]  # Ω_SS of the selected columns (App. D.2)
        np.testing.assert_allclose(
            post.ggn.dense(), JS.T @ JS / s2 + alpha * np.eye(post.S.size), rtol=1e-12
        )


def test_map_never_explores_and_thompson_does():
    rng = np.random.default_rng(2)
    mean = rng.normal(size=(500, 5))
    greedy = np.argmax(mean, axis=1)
    np.testing.assert_array_equal(choose_arms(mean, None, rng=rng), greedy)
    # Vanishing variance: Thompson sampling is the greedy rule; large variance: it explores.
    np.testing.assert_array_equal(choose_arms(mean, np.full(mean.shape, 1e-20), rng=rng), greedy)
    explore = choose_arms(mean, np.full(mean.shape, 100.0), rng=rng)
    assert 0.6 < np.mean(explore != greedy) < 0.95  # ≈ 4/5 for near-uniform sampling


def test_run_is_deterministic_for_a_seed():
    cfg = BanditConfig(method="greedy_laplace", k=10, horizon=55, updates_per_phase=20)
    r1 = run_bandit(cfg, rng=np.random.default_rng(7))
    r2 = run_bandit(cfg, rng=np.random.default_rng(7))
    r3 = run_bandit(cfg, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(r1.arms, r2.arms)
    np.testing.assert_array_equal(r1.regret, r2.regret)
    assert not np.array_equal(r1.arms, r3.arms)
    assert r1.regret.shape == (55,)
    assert np.all((r1.regret == 0) | (r1.regret == 49.0))  # paper variant: 50 − 1 or 0
    np.testing.assert_array_equal(np.bincount(r1.arms[:15], minlength=5), [3] * 5)
    assert r1.cumulative_regret[-1] == pytest.approx(r1.regret.sum())


def test_arm_inputs_layout():
    x = np.array([[0.1, -0.2], [0.5, 0.3]])
    X = arm_inputs(x)
    assert X.shape == (10, 7)
    np.testing.assert_array_equal(X[:5, :2], np.repeat(x[:1], 5, axis=0))
    np.testing.assert_array_equal(X[5:, 2:], np.eye(5))


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="method"):
        BanditConfig(method="thompson")
    with pytest.raises(ValueError, match="k must"):
        BanditConfig(k=0)
    with pytest.raises(ValueError, match="horizon"):
        BanditConfig(horizon=10)
    with pytest.raises(ValueError, match="delta"):
        BanditConfig(delta=1.5)
    with pytest.raises(ValueError, match="noise_floor"):
        BanditConfig(noise_floor=0.0)
    with pytest.raises(TypeError, match="rng is required"):
        run_bandit(BanditConfig(horizon=20), rng=None)
    with pytest.raises(ValueError, match="mean"):
        choose_arms(np.zeros((3, 4)), None, rng=np.random.default_rng())
    with pytest.raises(ValueError, match="var"):
        choose_arms(np.zeros((3, 5)), -np.ones((3, 5)), rng=np.random.default_rng())
    with pytest.raises(ValueError, match="x must"):
        arm_inputs(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="method"):
        select_subnetwork(bandit_net(), np.zeros((2, 7)), "map", 5, noise_var=1.0)
    for agent in ("gradient_laplace", "last_k-kx", "foo-k10"):
        with pytest.raises(ValueError, match="agent"):
            catalog.parse_agent(agent)


def test_study_is_registered_and_runs_one_agent():
    study = get_study("wheel-bandit")
    assert study.grid["agent"] == catalog.agents((20, 100))
    assert set(study.full_grid["delta"]) == {0.95, 0.9}
    assert study.full_grid["horizon"] == (16000,) and study.full_replications == 25
    assert catalog.parse_agent("greedy_laplace-k100") == ("greedy_laplace", 100)
    out = catalog.run_one(
        {"agent": "subnet_diagonal-k20", "delta": 0.95, "horizon": 40},
        rng=np.random.default_rng(0),
    )
    assert set(out) == {"regret", "regret_half", "seconds"}
    assert 0.0 <= out["regret_half"] <= out["regret"] <= 49.0 * 40


def test_run_restores_torch_threads():
    before = torch.get_num_threads()
    run_bandit(BanditConfig(method="map", horizon=15), rng=np.random.default_rng(0))
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="torch_threads"):
        BanditConfig(torch_threads=0)
    with pytest.raises(ValueError, match="n must"):
        with torch_threads(0):
            pass


def test_oracle_thompson_sampling_beats_uniform_random():
    # With the true mean rewards and the reward-noise variance σ0² = 1e-4, Thompson sampling
    # never pulls a wrong arm (gap 49 ≫ 0.01); uniform pulls lose 49 with probability
    # (4/5)(1 − δ²) per round.
    from laplace_lab.studies.wheel_env import WheelBandit

    env, rng, n = WheelBandit(0.9), np.random.default_rng(3), 4000
    x = env.contexts(n, rng=rng)
    means = env.mean_rewards(x)
    oracle = env.regret(x, choose_arms(means, np.full(means.shape, 1e-4), rng=rng))
    uniform = env.regret(x, rng.integers(0, 5, size=n))
    q = 0.8 * (1 - 0.9**2)
    assert oracle.sum() == 0.0
    assert uniform.mean() == pytest.approx(49 * q, abs=4 * 49 * np.sqrt(q * (1 - q) / n))
