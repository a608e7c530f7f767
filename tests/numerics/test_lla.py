"""Feature-space LLA: dense references, the evidence, the predictive and its metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.networks.models import mlp
from laplace_lab.networks.training import build_seeded
from laplace_lab.numerics import (
    GGN,
    GaussianPredictive,
    LinearizedLaplace,
    accuracy,
    auroc,
    entropy,
    expected_calibration_error,
    feature_laplace,
    negative_log_likelihood,
    per_sample_jacobian,
    predictive_variance,
)


def _softmax(f):
    e = np.exp(f - f.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _dense_precision(F, f, alpha, eps=0.0):
    """Σ_n Φ_nᵀ (diag π − ππᵀ + εI) Φ_n + α I, written out."""
    pi = _softmax(f)
    A = alpha * np.eye(F.shape[2])
    for Phi, p in zip(F, pi, strict=True):
        H = np.diag(p) - np.outer(p, p) + eps * np.eye(p.size)
        A += Phi.T @ H @ Phi
    return A


@pytest.mark.parametrize("n", [3, 40])  # N·C < k (Woodbury) and N·C ≥ k (primal)
def test_feature_laplace_equals_the_dense_posterior(n):
    rng = np.random.default_rng(n)
    k, C = 25, 3
    F, f = rng.standard_normal((n, C, k)), rng.standard_normal((n, C))
    Fs = rng.standard_normal((7, C, k))
    post = feature_laplace(F, f, likelihood="multiclass", prior_precision=0.7)
    A = _dense_precision(F, f, 0.7)
    want = np.einsum("mak,kl,mbl->mab", Fs, np.linalg.inv(A), Fs)
    np.testing.assert_allclose(post.covariance(Fs), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(post.log_det_precision(), np.linalg.slogdet(A)[1], rtol=1e-11)
    other = post.with_prior_precision(3.0)
    A3 = _dense_precision(F, f, 3.0)
    np.testing.assert_allclose(other.log_det_precision(), np.linalg.slogdet(A3)[1], rtol=1e-11)
    grid = post.log_det_precision(np.array([0.7, 3.0]))
    np.testing.assert_allclose(grid, [np.linalg.slogdet(A)[1], np.linalg.slogdet(A3)[1]])
    jittered = feature_laplace(F, f, likelihood="multiclass", prior_precision=0.7, jitter=1e-6)
    Aj = _dense_precision(F, f, 0.7, eps=1e-6)  # the jitter is an explicit option
    np.testing.assert_allclose(jittered.log_det_precision(), np.linalg.slogdet(Aj)[1], rtol=1e-11)
    assert abs(jittered.log_det_precision() - post.log_det_precision()) > 1e-9


def test_regression_and_binary_posteriors():
    rng = np.random.default_rng(1)
    J, Js = rng.standard_normal((10, 1, 6)), rng.standard_normal((4, 1, 6))
    post = feature_laplace(
        J, np.zeros((10, 1)), likelihood="regression", prior_precision=2.0, noise_var=0.5
    )
    A = J[:, 0].T @ J[:, 0] / 0.5 + 2.0 * np.eye(6)
    want = np.einsum("mk,kl,ml->m", Js[:, 0], np.linalg.inv(A), Js[:, 0])
    np.testing.assert_allclose(post.covariance(Js)[:, 0, 0], want, rtol=1e-10)
    f = rng.standard_normal(10)
    post = feature_laplace(J, f, likelihood="binary", prior_precision=1.0)
    w = 1 / (1 + np.exp(-f))
    A = J[:, 0].T @ (J[:, 0] * (w * (1 - w))[:, None]) + np.eye(6)
    want = np.einsum("mk,kl,ml->m", Js[:, 0], np.linalg.inv(A), Js[:, 0])
    np.testing.assert_allclose(post.covariance(Js)[:, 0, 0], want, rtol=1e-10)


def _net(seed=0):
    return build_seeded(
        lambda: mlp(3, [6], 4, activation="tanh"), rng=seed, dtype=torch.float64
    ).eval()


@pytest.mark.parametrize("subset", [None, "last_layer"])
def test_linearized_laplace_matches_the_ggn_predictive_variance(subset):
    model = _net()
    rng = np.random.default_rng(2)
    X, Xs = rng.standard_normal((30, 3)), rng.standard_normal((5, 3))
    lla = LinearizedLaplace.fit(
        model, X, likelihood="multiclass", prior_precision=1.5, subset=subset
    )
    idx = None if subset is None else np.arange(6 * 3 + 6, 6 * 3 + 6 + 7 * 4)
    J = per_sample_jacobian(model, X, subset=idx).numpy()
    Js = per_sample_jacobian(model, Xs, subset=idx).numpy()
    with torch.no_grad():
        f = model(torch.as_tensor(X)).numpy()
        fs = model(torch.as_tensor(Xs)).numpy()
    ggn = GGN.multiclass(J, f, prior_precision=1.5)
    pred = lla.predictive(Xs)
    np.testing.assert_allclose(pred.variance(), predictive_variance(ggn, Js), rtol=1e-8)
    np.testing.assert_allclose(pred.mean, fs, rtol=1e-12)
    # the Laplace evidence, written out from the dense GGN
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy()
    theta = theta if idx is None else theta[idx]
    y = rng.integers(0, 4, 30)
    ll = np.log(_softmax(f)[np.arange(30), y]).sum()
    for alpha in (0.3, 4.0):
        dense = GGN.multiclass(J, f, prior_precision=alpha).dense()
        want = ll - 0.5 * alpha * theta @ theta + 0.5 * theta.size * np.log(alpha)
        want -= 0.5 * np.linalg.slogdet(dense)[1]
        np.testing.assert_allclose(lla.log_evidence(y, alpha), want, rtol=1e-10)


def test_gaussian_predictive_probabilities_and_entropy():
    rng = np.random.default_rng(3)
    mean = rng.standard_normal((5, 3))
    L = rng.standard_normal((5, 3, 3))
    cov = L @ L.transpose(0, 2, 1) * 0.01
    pred = GaussianPredictive(mean, cov)
    # small covariance: both links are the softmax of the mean to O(Σ)
    for p in (pred.probabilities(), pred.probabilities(link="mc", samples=4000, rng=0)):
        np.testing.assert_allclose(p, _softmax(mean), atol=0.02)
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    want = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1]
    np.testing.assert_allclose(pred.gaussian_entropy(), want, rtol=1e-10)
    # a large variance flattens the Monte Carlo average towards uniform
    wide = GaussianPredictive(np.array([[4.0, 0.0]]), np.array([[[100.0, 0.0], [0.0, 0.0]]]))
    p = wide.probabilities(link="mc", samples=20_000, rng=1)
    # E[σ(f)], f ~ N(4, 100): about 0.6 (the probit approximation gives 0.605)
    assert 0.55 < p[0, 0] < 0.66
    with pytest.raises(ValueError, match="link"):
        pred.probabilities(link="logit")
    with pytest.raises(TypeError, match="rng"):
        pred.probabilities(link="mc")


def test_binary_probabilities_are_the_logistic_gaussian_integral_of_the_one_logit():
    from laplace_lab.theory.probit import logistic_gaussian_integral

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1)
    ).double()
    X = torch.randn(30, 2, dtype=torch.float64)
    lla = LinearizedLaplace.fit(model, X, likelihood="binary", prior_precision=0.05)
    pred = lla.predictive(3 * torch.randn(6, 2, dtype=torch.float64))
    mu, var = pred.mean[:, 0], pred.variance()[:, 0]
    assert var.max() > 1.0  # wide enough for the variance to move the probabilities
    exact = logistic_gaussian_integral(mu, var)[:, None]
    probit = pred.probabilities()
    assert probit.shape == (6, 1)
    np.testing.assert_allclose(probit, exact, atol=0.02)  # the approximation's known error
    mc = pred.probabilities(link="mc", samples=40_000, rng=0)
    np.testing.assert_allclose(mc, exact, atol=4 * 0.5 / np.sqrt(40_000))
    # the variance pulls every probability towards ½ from the plug-in σ(μ)
    plug_in = 1 / (1 + np.exp(-mu))
    assert np.all(np.abs(exact[:, 0] - 0.5) < np.abs(plug_in - 0.5))


def test_a_regression_predictive_has_no_class_probabilities():
    torch.manual_seed(1)
    model = torch.nn.Linear(2, 1).double()
    X = torch.randn(10, 2, dtype=torch.float64)
    lla = LinearizedLaplace.fit(model, X, likelihood="regression", prior_precision=1.0)
    with pytest.raises(ValueError, match="likelihood='regression'"):
        lla.predictive(X).probabilities()
    with pytest.raises(ValueError, match="likelihood"):
        GaussianPredictive(np.zeros((1, 1)), np.ones((1, 1, 1)), "poisson")
    with pytest.raises(ValueError, match="'multiclass' needs C ≥ 2 outputs"):
        GaussianPredictive(np.zeros((1, 1)), np.ones((1, 1, 1)), "multiclass")
    with pytest.raises(ValueError, match="'binary' needs one output"):
        GaussianPredictive(np.zeros((1, 2)), np.ones((1, 2, 2)), "binary")


def test_classification_metrics_against_hand_computed_values():
    from sklearn.metrics import roc_auc_score

    P = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    y = np.array([0, 1, 1, 1])
    assert accuracy(P, y) == 0.75
    np.testing.assert_allclose(
        negative_log_likelihood(P, y), -np.mean(np.log([0.9, 0.4, 0.7, 0.8]))
    )
    # 2 bins: (0, .5] empty; (.5, 1]: all four, acc 3/4, mean confidence 0.75 → ECE 0
    assert expected_calibration_error(P, y, bins=2) == pytest.approx(0.0, abs=1e-15)
    # 10 bins: {0.9}: |1 − 0.9|, {0.6}: |0 − 0.6|, {0.7}: |1 − 0.7|, {0.8}: |1 − 0.8|
    assert expected_calibration_error(P, y, bins=10) == pytest.approx((0.1 + 0.6 + 0.3 + 0.2) / 4)
    np.testing.assert_allclose(entropy(P)[0], -(0.9 * np.log(0.9) + 0.1 * np.log(0.1)))
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(50), rng.standard_normal(40) + 0.5
    b[:5] = a[:5]  # ties
    want = roc_auc_score(np.r_[np.zeros(50), np.ones(40)], np.r_[a, b])
    assert auroc(a, b) == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="sum to 1"):
        accuracy(P * 2, y)
    with pytest.raises(ValueError, match="probs must be finite"):
        entropy(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="labels"):
        accuracy(P, np.array([0, 1, 2, 1]))
    with pytest.raises(ValueError, match="sum to 1"):
        entropy(np.array([[0.2, 0.2]]))


def test_one_probability_column_is_p_of_class_one():
    """(n, 1) probabilities (a binary predictive's P(y = 1)) are the classes (1 − p, p)."""
    q = np.array([0.5, 0.9, 0.99, 0.2])
    y = np.array([1, 1, 0, 0])
    two = np.c_[1 - q, q]
    np.testing.assert_allclose(entropy(q[:, None]), -(q * np.log(q) + (1 - q) * np.log(1 - q)))
    assert accuracy(q[:, None], y) == accuracy(two, y) == 0.5  # argmax of 0.5 ties to class 0
    assert negative_log_likelihood(q[:, None], y) == pytest.approx(
        -np.mean(np.log([0.5, 0.9, 0.01, 0.8]))
    )
    assert expected_calibration_error(q[:, None], y) == expected_calibration_error(two, y)
    with pytest.raises(ValueError, match="one column"):
        entropy(np.array([[1.5]]))


def _linear_model(theta: np.ndarray, d: int):
    model = torch.nn.Linear(d, 1).double()
    with torch.no_grad():
        model.weight[:] = torch.as_tensor(theta[:d])[None]
        model.bias[:] = float(theta[d])
    return model.eval()


def test_log_evidence_takes_a_column_of_targets_and_checks_the_labels():
    """Bayesian linear regression: the LLA evidence at the posterior mode is the exact
    Gaussian marginal likelihood N(y; 0, σ²I + ΦΦᵀ/α), for y as (N,) or (N, 1)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    N, d, alpha, s2 = 12, 3, 0.7, 0.2
    X = rng.standard_normal((N, d))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.standard_normal(N)
    Phi = np.c_[X, np.ones(N)]
    theta = np.linalg.solve(Phi.T @ Phi / s2 + alpha * np.eye(d + 1), Phi.T @ y / s2)
    lla = LinearizedLaplace.fit(
        _linear_model(theta, d), X, likelihood="regression", prior_precision=alpha, noise_var=s2
    )
    exact = stats.multivariate_normal(np.zeros(N), s2 * np.eye(N) + Phi @ Phi.T / alpha)
    for targets in (y, y[:, None], torch.as_tensor(y)):
        assert lla.log_evidence(targets, alpha)[0] == pytest.approx(exact.logpdf(y), rel=1e-10)
    with pytest.raises(ValueError, match=r"y must have shape \(12,\)"):
        lla.log_evidence(np.c_[y, y], alpha)
    with pytest.raises(ValueError, match="prior_precision must be finite and positive"):
        lla.log_evidence(y, [1.0, np.nan])
    binary = LinearizedLaplace.fit(
        _linear_model(theta, d), X, likelihood="binary", prior_precision=alpha
    )
    with pytest.raises(ValueError, match="binary labels 0 or 1"):
        binary.log_evidence(np.where(y > 0, 1.0, -1.0), alpha)
    assert binary.log_evidence(y > 0, alpha) == binary.log_evidence((y > 0).astype(int), alpha)
    multi = LinearizedLaplace.fit(_net(), X[:, :3], likelihood="multiclass", prior_precision=1.0)
    for labels in (np.full(N, -1), np.full(N, 0.9), np.full(N, 5)):
        with pytest.raises(ValueError, match="integer class labels"):
            multi.log_evidence(labels, 1.0)


def test_bad_inputs_name_the_argument():
    F = np.ones((3, 2, 4))
    with pytest.raises(ValueError, match="likelihood"):
        feature_laplace(F, np.zeros((3, 2)), likelihood="poisson", prior_precision=1.0)
    with pytest.raises(ValueError, match="prior_precision"):
        feature_laplace(F, np.zeros((3, 2)), likelihood="multiclass", prior_precision=0.0)
    with pytest.raises(ValueError, match="one output"):
        feature_laplace(F, np.zeros((3, 2)), likelihood="binary", prior_precision=1.0)
    with pytest.raises(ValueError, match="C ≥ 2 outputs"):
        feature_laplace(F[:, :1], np.zeros((3, 1)), likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="C ≥ 2 logits"):
        GGN.multiclass(F[:, :1], np.zeros((3, 1)), prior_precision=1.0)
    post = feature_laplace(F, np.zeros((3, 2)), likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="features"):
        post.covariance(np.ones((2, 2, 5)))
    with pytest.raises(ValueError, match="subset"):
        LinearizedLaplace.fit(
            _net(), np.ones((2, 3)), likelihood="multiclass", prior_precision=1.0, subset="first"
        )
