"""The Wheel Bandit environment against its definition (App. D.1; Riquelme et al. 2018)."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import (
    WheelBandit,
)


def test_contexts_are_uniform_on_the_disk():
    env = WheelBandit(delta=0.9)
    x = env.contexts(200_000, rng=np.random.default_rng(0))
    r = np.linalg.norm(x, axis=1)
    assert r.max() <= 1.0
    # P(‖x‖ > δ) = 1 − δ² = 0.19 for a uniform disk; binomial s.e. ≈ 0.0009.
    assert np.mean(r > 0.9) == pytest.approx(0.19, abs=0.004)
    assert np.mean(x[:, 0] > 0) == pytest.approx(0.5, abs=0.004)


def test_mean_rewards_and_regret_follow_the_definition():
    env = WheelBandit(delta=0.5)
    x = np.array([[0.6, 0.6], [0.6, -0.6], [-0.6, 0.6], [-0.6, -0.6], [0.1, 0.1]])
    means = env.mean_rewards(x)
    np.testing.assert_array_equal(np.argmax(means[:4], axis=1), [1, 2, 3, 4])
    assert np.all(means[:4].max(axis=1) == 50.0) and np.all(means[4] == 1.0)
    np.testing.assert_array_equal(env.regret(x, [0, 0, 3, 4, 2]), [49.0, 49.0, 0.0, 0.0, 0.0])
    rq = WheelBandit(delta=0.5, variant="riquelme")
    assert rq.mean_rewards(x[4:])[0].tolist() == [1.2, 1.0, 1.0, 1.0, 1.0]
    assert rq.regret(x[4:], [3])[0] == pytest.approx(0.2)


def test_reward_noise_levels():
    env = WheelBandit(delta=0.5)
    rng = np.random.default_rng(1)
    x = np.tile([[0.7, 0.7]], (20_000, 1))
    high = env.reward(x, np.ones(20_000, dtype=int), rng=rng)
    assert high.mean() == pytest.approx(50.0, abs=1e-3) and high.std() == pytest.approx(
        0.01, rel=0.03
    )


def test_bad_input():
    with pytest.raises(ValueError, match="delta must be in"):
        WheelBandit(delta=1.0)
    with pytest.raises(ValueError, match="variant must be"):
        WheelBandit(variant="other")
    with pytest.raises(ValueError, match="arm must hold"):
        WheelBandit().reward(np.zeros((2, 2)), [0, 5], rng=np.random.default_rng(0))
