"""Neural Thompson sampling on the Wheel Bandit: variance formula, selection rules, policy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.networks.models import bandit_net, mlp
from laplace_lab.networks.training import build_seeded, torch_threads
from laplace_lab.numerics import GGN, greedy_laplace_reference
from laplace_lab.numerics import subnet_diagonal as dense_subnet_diagonal
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
    BanditConfig,
    run_bandit,
    run_bandits,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_posterior import (
    SubnetPosterior,
    arm_inputs,
    choose_arms,
    replay_posterior,
    select_subnetwork,
    subset_jacobian,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_reference import (
    run_bandit_reference,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import wheel_bandit as catalog
from laplace_lab.papers import get_study


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


@pytest.mark.parametrize("k", [15, 60])  # k < n and k > n (Ω_SS rank-deficient Gram)
def test_thompson_variance_equals_dense_formula(k):
    rng = np.random.default_rng(0)
    model = build_seeded(bandit_net, dtype=torch.float64, rng=3)
    X, Xs = _buffer(rng, 30), arm_inputs(rng.uniform(-1, 1, size=(4, 2)))
    S = rng.choice(11001, size=k, replace=False)
    s2, alpha = 0.3, 1.0
    post = SubnetPosterior.from_rows(
        S, subset_jacobian(model, X, S), noise_var=s2, prior_precision=alpha
    )
    var = s2 + post.epistemic(subset_jacobian(model, Xs, S))
    J, G = _dense_jacobian(model, X)[:, S], _dense_jacobian(model, Xs)[:, S]
    omega = J.T @ J / s2 + alpha * np.eye(k)  # App. D.2
    expected = s2 + np.einsum("ij,ij->i", G, np.linalg.solve(omega, G.T).T)
    assert var.shape == (20,)
    np.testing.assert_allclose(var, expected, rtol=1e-9)
    assert np.all(var > s2)  # the epistemic part is positive for generic gradients


@pytest.mark.parametrize("method", ["gradient_laplace", "greedy_laplace", "last_k"])
def test_replay_posterior_equals_selection_then_rows(method):
    """The streamed Ω_SS (for Greedy-Laplace a sub-block of its candidates' Gram) is the
    posterior of select_subnetwork + from_rows up to float64 summation order."""
    rng = np.random.default_rng(5)
    model = build_seeded(bandit_net, rng=6)  # float32, as in the runs
    X = torch.from_numpy(_buffer(rng, 700).astype(np.float32))
    kw = {"noise_var": 0.02, "prior_precision": 1.0}
    S = select_subnetwork(model, X, method, 40, **kw)
    ref = SubnetPosterior.from_rows(S, subset_jacobian(model, X, S), **kw)
    got = replay_posterior(model, X, method, 40, **kw)
    np.testing.assert_array_equal(got.S, S)
    np.testing.assert_allclose(got.gram, ref.gram, rtol=1e-12, atol=1e-12 * ref.gram.max())
    G = subset_jacobian(model, torch.from_numpy(arm_inputs(rng.uniform(-1, 1, (3, 2)))), S)
    np.testing.assert_allclose(got.epistemic(G), ref.epistemic(G), rtol=1e-9)
    kept = replay_posterior(model, X[:300], method, 40, S=S[::-1], **kw)
    np.testing.assert_array_equal(kept.S, S[::-1])  # a given S is used as it is


def test_posterior_refit_adds_rows_and_joint_draws_have_the_epistemic_variance():
    rng = np.random.default_rng(4)
    J = rng.standard_normal((40, 12))
    S = np.arange(12)
    whole = SubnetPosterior.from_rows(S, J, noise_var=0.5, prior_precision=2.0)
    part = SubnetPosterior.from_rows(S, J[:30], noise_var=0.1, prior_precision=2.0)
    grown = part.refit(J[30:], noise_var=0.5)
    G = rng.standard_normal((3, 12))
    # float64 roundoff of a 12 × 12 Cholesky: 1e-12 relative
    np.testing.assert_allclose(grown.epistemic(G), whole.epistemic(G), rtol=1e-12)
    draws = np.array([whole.draw(G, rng=rng) for _ in range(20000)])
    # Var[g_Sᵀδ] = g_Sᵀ Ω_SS⁻¹ g_S; the sample variance of 20,000 normal draws has s.e.
    # √(2/20000) ≈ 1%: 5 s.e. = 5%
    np.testing.assert_allclose(draws.var(axis=0), whole.epistemic(G), rtol=0.05)
    sd_of_mean = np.sqrt(whole.epistemic(G) / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0)) < 5 * sd_of_mean)


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
        S = select_subnetwork(model, X, method, k, noise_var=s2, prior_precision=alpha)
        np.testing.assert_array_equal(S, expected, err_msg=method)
        post = SubnetPosterior.from_rows(
            S, subset_jacobian(model, X, S), noise_var=s2, prior_precision=alpha
        )
        JS = J[:, S]  # Ω_SS of the selected columns (App. D.2)
        L, omega_SS = post.chol, JS.T @ JS / s2 + alpha * np.eye(S.size)
        # float64 roundoff relative to ‖Ω_SS‖ (exact zeros off the diagonal stay ~1e-17)
        np.testing.assert_allclose(
            L @ L.T, omega_SS, rtol=1e-12, atol=1e-13 * np.abs(omega_SS).max()
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
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
        WheelBandit,
    )

    env, rng, n = WheelBandit(0.9), np.random.default_rng(3), 4000
    x = env.contexts(n, rng=rng)
    means = env.mean_rewards(x)
    oracle = env.regret(x, choose_arms(means, np.full(means.shape, 1e-4), rng=rng))
    uniform = env.regret(x, rng.integers(0, 5, size=n))
    q = 0.8 * (1 - 0.9**2)
    assert oracle.sum() == 0.0
    assert uniform.mean() == pytest.approx(49 * q, abs=4 * 49 * np.sqrt(q * (1 - q) / n))


@pytest.mark.parametrize(
    ("method", "k"),
    [
        ("map", 1),
        ("neural_linear", 1),
        ("last_k", 30),
        ("subnet_diagonal", 30),
        ("gradient_laplace", 60),
        ("greedy_laplace", 40),
    ],
)
def test_lockstep_runs_equal_the_plain_single_seed_loop(method, k):
    # The lockstep engine (stacked networks, one Adam step for all seeds) against the loop
    # written with nn.Sequential, autograd, clip_grad_norm_ and torch.optim.Adam: the same
    # arms and regrets, bit for bit, for every seed of a batch and for a seed run alone.

    cfg = BanditConfig(method=method, k=k, horizon=115, updates_per_phase=10)
    seeds = (11, 12, 13)
    batch = run_bandits(cfg, rngs=[np.random.default_rng(s) for s in seeds])
    alone = run_bandit(cfg, rng=np.random.default_rng(seeds[1]))
    for s, res in zip(seeds, batch, strict=True):
        ref = run_bandit_reference(cfg, rng=np.random.default_rng(s))
        np.testing.assert_array_equal(res.arms, ref.arms)
        np.testing.assert_array_equal(res.regret, ref.regret)
    np.testing.assert_array_equal(alone.arms, batch[1].arms)
    assert len({tuple(r.arms) for r in batch}) == 3  # the seeds' runs differ


def test_readings_are_options_of_the_config():
    cfg = BanditConfig(thompson_noise="none", variant="riquelme", reselect_every=10)
    assert cfg.readings() == {
        "thompson_noise": "none",
        "variant": "riquelme",
        "reselect_every": 10,
    }
    assert BanditConfig().readings() == {}
    for field, bad in [
        ("posterior_noise", "none"),
        ("thompson_noise", "zero"),
        ("sampling", "shared"),
        ("replay", "fifo"),
        ("optimizer_state", "fresh"),
        ("network", "reset"),
        ("reward_scaling", "minmax"),
        ("input_scaling", "minmax"),
        ("refit", "step"),
        ("regret", "pseudo"),
    ]:
        with pytest.raises(ValueError, match=field):
            BanditConfig(**{field: bad})
    with pytest.raises(ValueError, match="reselect_every"):
        BanditConfig(reselect_every=0)

    with pytest.raises(ValueError, match="as written"):
        run_bandit_reference(cfg, rng=0)


def test_refit_every_round_is_the_phase_refit_when_a_phase_has_one_round():
    base = BanditConfig(
        method="gradient_laplace", k=20, horizon=40, steps_per_phase=1, updates_per_phase=5
    )
    by_round = BanditConfig(**{**base.__dict__, "refit": "round"})
    a, b = run_bandit(base, rng=5), run_bandit(by_round, rng=5)
    np.testing.assert_array_equal(a.arms, b.arms)


def test_replay_batches_and_scalings():
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_lockstep import (
        Lockstep,
    )

    rng = np.random.default_rng(0)
    cfg = BanditConfig(
        horizon=40,
        updates_per_phase=5,
        replay="without_replacement",
        reward_scaling="standardised",
        input_scaling="standardised",
    )
    run = Lockstep(cfg, [rng])
    assert np.unique(run._batch(rng, 300)).size == 300  # min(512, t) distinct rows
    whole = Lockstep(BanditConfig(horizon=40, replay="whole_when_smaller"), [rng])
    np.testing.assert_array_equal(whole._batch(rng, 300), np.arange(300))
    assert whole._batch(rng, 600).size == 512
    run.run()
    # contexts are stored as 2x (standard deviation 1/2 per coordinate on the unit disk)
    assert 1.0 < np.abs(run.X[0, :, :2]).max() <= 2.0
    z = run._targets()
    assert abs(float(z.mean())) < 1e-5 and float(z.std()) == pytest.approx(1.0, rel=1e-5)


def test_realised_regret_is_the_sampled_reward_gap():
    cfg = BanditConfig(method="map", horizon=300, regret="realised", updates_per_phase=5)
    res = run_bandit(cfg, rng=3)
    exp = run_bandit(BanditConfig(**{**cfg.__dict__, "regret": "expected"}), rng=3)
    # Inside the disk every arm has mean 1 (App. D.1): the realised gap is noise of sd
    # 0.01·√2, or exactly 0 when the pulled arm is the lowest optimal one; in the annulus
    # it is 49 + noise when the agent misses.
    assert np.all(np.abs(res.regret[res.regret < 10]) < 0.1)
    missed = res.regret > 10
    np.testing.assert_allclose(res.regret[missed], 49.0, atol=0.1)
    assert res.regret.shape == exp.regret.shape
