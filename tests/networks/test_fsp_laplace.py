"""FSP MAP training (Algorithm 1), FSPLaplaceModel end to end, the linearised-Laplace baseline."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from laplace_lab.networks.fsp_laplace import (
    FSPLaplaceModel,
    LinearizedLaplaceModel,
    expected_log_likelihood,
    linearized_log_evidence,
)
from laplace_lab.networks.fsp_training import ContextBox, train_fsp_map, train_weight_space_map
from laplace_lab.numerics.kernels import RBF, Matern12, Matern32


class Features(torch.nn.Module):
    """f(x, w) = W φ(x) + b with fixed random Fourier features φ (linear in w)."""

    def __init__(self, p: int, n_out: int = 1, bias: bool = False) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.register_buffer("omega", 4.0 * torch.randn(2, p, generator=g, dtype=torch.float64))
        self.register_buffer("phase", 6.3 * torch.rand(p, generator=g, dtype=torch.float64))
        self.out = torch.nn.Linear(p, n_out, bias=bias, dtype=torch.float64)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cos(X @ self.omega + self.phase))


def _mlp(d_in=2, d_out=1, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d_in, 6), torch.nn.Tanh(), torch.nn.Linear(6, d_out)
    ).double()


def _out(model, X):
    with torch.no_grad():
        return model(torch.as_tensor(X)).numpy().reshape(len(X), -1)


def _rkhs(model, C, kernel, mean=0.0, jitter=1e-6):
    K = kernel(C)
    K = K + jitter * np.mean(np.diag(K)) * np.eye(len(C))
    r = _out(model, C) - mean
    return 0.5 * np.sum(r * np.linalg.solve(K, r))


@pytest.mark.parametrize("likelihood", ["regression", "learned-noise", "binary", "multiclass"])
def test_first_loss_is_the_fsp_objective_of_eq_3_5(likelihood):
    # losses[0] is R_FSP at the initial weights: −Σ log p(y|f) + ½ (f(C) − μ)ᵀ K⁻¹ (f(C) − μ)
    # (Gaussian NLL without the ½ log 2π constant), computed here by hand.
    rng = np.random.default_rng(0)
    X, C = rng.uniform(-1, 1, (10, 2)), rng.uniform(-2, 2, (7, 2))
    kernel, mean = Matern32(1.5, 0.7), 0.3
    d_out = 3 if likelihood == "multiclass" else 1
    model = _mlp(d_out=d_out)
    f = _out(copy.deepcopy(model), X)
    if likelihood == "multiclass":
        y = rng.integers(0, 3, 10)
        z = f - f.max(1, keepdims=True)
        nll = -np.sum((z - np.log(np.exp(z).sum(1, keepdims=True)))[np.arange(10), y])
    elif likelihood == "binary":
        y = rng.integers(0, 2, 10).astype(float)
        nll = np.sum(np.logaddexp(0, f[:, 0]) - y * f[:, 0])
    else:
        y = rng.standard_normal(10)
        s = 0.4 if likelihood == "regression" else 1.0
        nll = np.sum(0.5 * (y - f[:, 0]) ** 2 / s**2 + np.log(s))
    expected = nll + _rkhs(model, C, kernel, mean)
    lik = {"learned-noise": "regression"}.get(likelihood, likelihood)
    fit = train_fsp_map(
        model, X, y, likelihood=lik, kernel=kernel, context=C, prior_mean=mean,
        noise_std=0.4 if likelihood == "regression" else None, steps=1, rng=0, progress=False,
    )  # fmt: skip
    assert fit.losses[0] == pytest.approx(expected, rel=1e-12)
    assert (fit.noise_std is None) == (likelihood in ("binary", "multiclass"))


def test_minibatch_and_context_sampling_follow_algorithm_1():
    # Line 3: (n/b)·NLL of a batch of b distinct rows; line 4: n_C i.i.d. uniform context
    # points from P_C; both drawn from rng in that order (reproduced here with the same seed).
    rng = np.random.default_rng(1)
    X, y = rng.uniform(-1, 1, (20, 2)), rng.standard_normal(20)
    box, kernel = ContextBox([-2, -1], [2, 3]), RBF(1.0, 0.8)
    model = _mlp()
    ref = copy.deepcopy(model)
    gen = np.random.default_rng(5)
    idx = gen.choice(20, size=4, replace=False)
    C = gen.uniform(box.low, box.high, size=(6, 2))
    f = _out(ref, X[idx])[:, 0]
    expected = 5.0 * np.sum(0.5 * (y[idx] - f) ** 2 / 0.25 + np.log(0.5)) + _rkhs(ref, C, kernel)
    fit = train_fsp_map(
        model, X, y, likelihood="regression", kernel=kernel, context=box, n_context=6,
        noise_std=0.5, steps=1, batch_size=4, rng=5, progress=False,
    )  # fmt: skip
    assert fit.losses[0] == pytest.approx(expected, rel=1e-12)


def _linear_gp_problem(kernel, noise):
    rng = np.random.default_rng(2)
    C = rng.uniform(-2, 2, (20, 2))
    idx = np.arange(0, 20, 3)
    y = np.sin(2 * C[idx, 0]) + noise * rng.standard_normal(idx.size)
    K = kernel(C) + 1e-6 * kernel.variance * np.eye(20)
    gain = K[:, idx] @ np.linalg.inv(K[np.ix_(idx, idx)] + noise**2 * np.eye(idx.size))
    return C, idx, y, gain @ y, K - gain @ K[idx]


def test_fsp_laplace_model_recovers_the_exact_gp_posterior_end_to_end():
    # Linear model with p = n_C features, training inputs among the context points: the FSP
    # objective is a convex quadratic whose minimiser has f(C) = the GP posterior mean, and
    # Algorithm 2 gives the GP posterior covariance (it does not depend on w here). Adam must
    # close 99.8 % of the objective gap R(w₀) − R(w*) in 1000 steps, never going below R(w*).
    kernel, noise = Matern12(1.0, 0.8), 0.2
    C, idx, y, gp_mean, gp_cov = _linear_gp_problem(kernel, noise)
    K = kernel(C) + 1e-6 * np.eye(20)
    best = (
        np.sum((y - gp_mean[idx]) ** 2) / (2 * noise**2)
        + idx.size * np.log(noise)
        + 0.5 * gp_mean @ np.linalg.solve(K, gp_mean)
    )
    model = Features(20)
    torch.nn.init.zeros_(model.out.weight)
    fsp = FSPLaplaceModel.fit(
        model, C[idx], y, likelihood="regression", kernel=kernel, context=C, noise_std=noise,
        steps=1000, lr=0.1, rng=0, progress=False,
    )  # fmt: skip
    assert fsp.losses[-1] - best <= 2e-3 * (fsp.losses[0] - best)
    assert min(fsp.losses) >= best - 1e-9 * abs(best)
    pred = fsp.predict(C)
    np.testing.assert_allclose(pred.variance, np.diag(gp_cov), atol=1e-6)
    assert fsp.noise_var == pytest.approx(noise**2)
    np.testing.assert_allclose(pred.total_variance, pred.variance + noise**2)
    assert pred.probability is None


def test_lbfgs_reaches_the_closed_form_map_and_needs_a_deterministic_objective():
    # L-BFGS on the convex quadratic of the linear-features problem: f(C) at the end equals
    # the GP posterior mean (the closed-form FSP MAP) to 1e-6 relative.
    kernel, noise = Matern32(1.0, 0.8), 0.2
    C, idx, y, gp_mean, _ = _linear_gp_problem(kernel, noise)
    model = Features(20)
    fit = train_fsp_map(
        model, C[idx], y, likelihood="regression", kernel=kernel, context=C, noise_std=noise,
        steps=1000, lr=1.0, rng=0, progress=False, optimizer="lbfgs",
    )  # fmt: skip
    assert len(fit.losses) <= 1000
    np.testing.assert_allclose(_out(model, C)[:, 0], gp_mean, atol=1e-6 * np.abs(gp_mean).max())
    for bad in ({"context": ContextBox([-2, -2], [2, 2]), "n_context": 5}, {"batch_size": 3}):
        kw = {"context": C, **bad}
        with pytest.raises(ValueError, match="deterministic"):
            train_fsp_map(
                Features(20), C[idx], y, likelihood="regression", kernel=kernel, steps=5,
                rng=0, progress=False, optimizer="lbfgs", **kw,
            )  # fmt: skip


def test_context_box_around_halton_and_grid():
    X = np.array([[0.0, 10.0], [2.0, 14.0], [1.0, 12.0]])
    box = ContextBox.around(X, widen=0.5)  # App. B.2: [v_min − Δ/2, v_max + Δ/2]
    np.testing.assert_allclose(box.low, [-1.0, 8.0])
    np.testing.assert_allclose(box.high, [3.0, 16.0])
    H = box.halton(64)
    assert H.shape == (64, 2) and np.all((H > box.low) & (H < box.high))
    # Halton points 1/2, 1/4, 3/4 in base 2 and 1/3, 2/3, 1/9 in base 3
    np.testing.assert_allclose(
        (H[:3] - box.low) / (box.high - box.low), [[0.5, 1 / 3], [0.25, 2 / 3], [0.75, 1 / 9]]
    )
    G = ContextBox(-1, 1).grid(5)
    np.testing.assert_allclose(G[:, 0], np.linspace(-1, 1, 5))
    assert ContextBox([0, 0], [1, 2]).grid(3).shape == (9, 2)
    S = box.sample(1000, rng=0)
    assert np.all((S >= box.low) & (S <= box.high))
    with pytest.raises(ValueError, match="low"):
        ContextBox([0, 1], [1, 1])


def test_linearized_laplace_equals_the_dense_posterior_at_the_evidence_maximum():
    rng = np.random.default_rng(3)
    X, y = rng.uniform(-1, 1, (15, 2)), rng.standard_normal(15)
    model = _mlp(seed=1)
    la = LinearizedLaplaceModel.fit(
        model, X, y, likelihood="regression", noise_std=0.3, steps=200, lr=1e-2, rng=0,
        progress=False,
    )  # fmt: skip
    J, Jw = la.ggn.Jw * 0.3, la.ggn.Jw
    p = J.shape[1]
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy()
    f = _out(model, X)[:, 0]
    loglik = np.sum(expected_log_likelihood(y, f, 0.0, 0.09))

    def dense_evidence(a):
        logdet = np.linalg.slogdet(a * np.eye(p) + Jw.T @ Jw)[1]
        return loglik - 0.5 * a * theta @ theta + 0.5 * p * np.log(a) - 0.5 * logdet

    s = np.linalg.svd(Jw, compute_uv=False)
    for a in (0.01, 1.0, 30.0):
        assert linearized_log_evidence(a, s, p, theta @ theta, loglik) == pytest.approx(
            dense_evidence(a), rel=1e-10
        )
    grid = np.exp(np.linspace(np.log(1e-4), np.log(1e4), 801))
    assert dense_evidence(la.prior_precision) >= max(dense_evidence(a) for a in grid) - 1e-6
    T = rng.uniform(-2, 2, (5, 2))
    G = np.stack([_grad(model, t) for t in T])  # autograd, one test point at a time
    cov = np.linalg.inv(J.T @ J / 0.09 + la.prior_precision * np.eye(p))
    np.testing.assert_allclose(
        la.predict(T).variance, np.einsum("ij,jk,ik->i", G, cov, G), rtol=1e-8
    )


def _grad(model, x):
    model.zero_grad()
    model(torch.as_tensor(x)[None])[0, 0].backward()
    return np.concatenate([t.grad.numpy().ravel() for t in model.parameters()])


def test_weight_space_map_minimises_nll_plus_half_alpha_norm():
    rng = np.random.default_rng(4)
    X, y = rng.uniform(-1, 1, (12, 2)), rng.standard_normal(12)
    model = _mlp(seed=2)
    ref = copy.deepcopy(model)
    fit = train_weight_space_map(
        model, X, y, likelihood="regression", prior_precision=2.0, noise_std=0.5, steps=1,
        rng=0, progress=False,
    )  # fmt: skip
    theta = torch.nn.utils.parameters_to_vector(ref.parameters()).detach().numpy()
    f = _out(ref, X)[:, 0]
    expected = np.sum(0.5 * (y - f) ** 2 / 0.25 + np.log(0.5)) + theta @ theta
    assert fit.losses[0] == pytest.approx(expected, rel=1e-12)


def test_expected_log_likelihood_matches_monte_carlo():
    rng = np.random.default_rng(5)
    y, mu, v, s2 = 0.7, -0.2, 0.5, 0.3
    f = mu + np.sqrt(v) * rng.standard_normal(400_000)
    mc = np.mean(-0.5 * np.log(2 * np.pi * s2) - (y - f) ** 2 / (2 * s2))
    # MC standard error ≈ 0.004 here; 5 s.e.
    assert expected_log_likelihood(y, mu, v, s2) == pytest.approx(mc, abs=0.02)


def test_bad_arguments_are_named():
    X, y = np.zeros((4, 2)), np.zeros(4)
    C = np.random.default_rng(0).uniform(-1, 1, (5, 2))
    kw = dict(likelihood="regression", kernel=RBF(), steps=1, rng=0, progress=False)
    with pytest.raises(ValueError, match="n_context"):
        train_fsp_map(_mlp(), X, y, context=ContextBox(-1, 1), **kw)
    with pytest.raises(TypeError, match="rng"):
        train_fsp_map(_mlp(), X, y, context=C, **{**kw, "rng": None})
    with pytest.raises(ValueError, match="steps"):
        train_fsp_map(_mlp(), X, y, context=C, **{**kw, "steps": 0})
    with pytest.raises(ValueError, match="noise_std"):
        train_fsp_map(_mlp(), X, y, context=C, **{**kw, "likelihood": "binary"}, noise_std=1.0)
    with pytest.raises(ValueError, match="prior_mean"):
        train_fsp_map(_mlp(), X, y, context=C, prior_mean=np.zeros(3), **kw)
    with pytest.raises(ValueError, match="same positive number of rows"):
        train_fsp_map(_mlp(), X, y[:3], context=C, **kw)
    with pytest.raises(ValueError, match="covariance_context"):
        FSPLaplaceModel.fit(_mlp(), X, y, context=C, covariance_context=10, **kw)
