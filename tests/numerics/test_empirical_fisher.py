"""The empirical Fisher against per-sample autograd gradients of the negative log-likelihood,
against the closed form of a linear model, and its bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.numerics import predictive_variance  # noqa: E402
from laplace_lab.numerics.empirical_fisher import (  # noqa: E402
    empirical_fisher,
    output_residuals,
    per_sample_gradients,
)


def _problem(likelihood, outputs, seed=0, n=11):
    rng = np.random.default_rng(seed)
    X = torch.as_tensor(rng.normal(size=(n, 3)))
    if likelihood == "regression":
        y = torch.as_tensor(rng.normal(size=(n, outputs) if outputs > 1 else n))
    elif likelihood == "binary":
        y = torch.as_tensor(rng.integers(0, 2, size=n).astype(np.float64))
    else:
        y = torch.as_tensor(rng.integers(0, outputs, size=n))
    torch.manual_seed(seed)
    model = mlp(3, [5], outputs, activation="tanh").double().eval()
    return model, X, y


def _autograd_gradients(model, X, y, likelihood, s2):
    """∇_θ of −log p(y_n | f(x_n)) by one backward pass per sample (no Jacobians)."""
    rows = []
    for x, t in zip(X, y, strict=True):
        f = model(x[None])
        if likelihood == "regression":
            nll = 0.5 * torch.sum((f.reshape(-1) - t.reshape(-1)) ** 2) / s2
        elif likelihood == "binary":
            nll = torch.nn.functional.binary_cross_entropy_with_logits(f[0, 0], t)
        else:
            nll = torch.nn.functional.cross_entropy(f, t[None])
        grads = torch.autograd.grad(nll, list(model.parameters()))
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    return torch.stack(rows)


@pytest.mark.parametrize(
    ("likelihood", "outputs"),
    [("regression", 1), ("regression", 2), ("binary", 1), ("multiclass", 4)],
)
def test_per_sample_gradients_are_those_of_the_negative_log_likelihood(likelihood, outputs):
    model, X, y = _problem(likelihood, outputs)
    s2 = 0.3
    g = per_sample_gradients(model, X, y, likelihood=likelihood, noise_var=s2, chunk_size=4)
    expected = _autograd_gradients(model, X, y, likelihood, s2)
    assert g.shape == expected.shape and g.dtype == torch.float64
    torch.testing.assert_close(g, expected, rtol=1e-12, atol=1e-14)


def test_the_precision_is_the_gram_of_the_gradients_plus_the_prior():
    model, X, y = _problem("multiclass", 3, seed=2)
    V = np.linspace(0.5, 2.0, sum(t.numel() for t in model.parameters()))
    ef = empirical_fisher(model, X, y, likelihood="multiclass", prior_precision=V)
    g = _autograd_gradients(model, X, y, "multiclass", 1.0).numpy()
    assert ef.Jw.shape == g.shape and ef.n_data == len(X)  # N rows, not N·C
    np.testing.assert_allclose(np.asarray(ef.dense()), g.T @ g + np.diag(V), rtol=1e-12)


def test_a_linear_gaussian_model_has_the_closed_form_and_its_rows_balance_the_prior():
    # f = wᵀx + b at the exact MAP θ̂ = (ΦᵀΦ/σ0² + αI)⁻¹Φᵀy/σ0²: EF = Σ φφᵀ r²/σ0⁴, and the
    # rows sum to −αθ̂ (the gradient of the log joint vanishes)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(15, 4)), rng.normal(size=15)
    Phi, s2, alpha = np.hstack([X, np.ones((15, 1))]), 0.3, 2.5
    theta = np.linalg.solve(Phi.T @ Phi / s2 + alpha * np.eye(5), Phi.T @ y / s2)
    model = torch.nn.Linear(4, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.as_tensor(theta[:4])[None])
        model.bias.copy_(torch.as_tensor(theta[4:]))
    ef = empirical_fisher(
        model, X, torch.as_tensor(y), likelihood="regression", prior_precision=alpha, noise_var=s2
    )
    r = Phi @ theta - y
    expected = (Phi * (r**2 / s2**2)[:, None]).T @ Phi + alpha * np.eye(5)
    np.testing.assert_allclose(np.asarray(ef.dense()), expected, rtol=1e-12)
    np.testing.assert_allclose(ef.Jw.sum(0).numpy(), -alpha * theta, atol=1e-12)
    Xs = rng.normal(size=(3, 4))
    Phi_s = np.hstack([Xs, np.ones((3, 1))])
    v = predictive_variance(ef, torch.as_tensor(Phi_s)).numpy()
    np.testing.assert_allclose(
        v, np.einsum("mi,mi->m", Phi_s, np.linalg.solve(expected, Phi_s.T).T)
    )


def test_float32_models_get_float32_gradients_within_float32_rounding():
    model, X, y = _problem("binary", 1, seed=4)
    ref = per_sample_gradients(model, X, y, likelihood="binary")
    g = per_sample_gradients(model.float(), X.float(), y.float(), likelihood="binary")
    assert g.dtype == torch.float32
    assert float((g.double() - ref).abs().max()) < 1e-6 * float(ref.abs().max())


@pytest.mark.parametrize(
    ("likelihood", "y", "message"),
    [
        ("multiclass", [0, 1, 3], r"class labels in \[0, 3\)"),
        ("multiclass", [0.0, 1.0, 2.0], "integer class labels"),
        ("binary", [0.0, 0.5, 1.0], "0/1 labels"),
        ("regression", [0.0, float("nan"), 1.0], "y must be finite"),
        ("regression", [0.0, 1.0], "one row per row of X"),
        ("ordinal", [0.0, 1.0, 2.0], "likelihood must be one of"),
    ],
)
def test_bad_targets_are_refused_naming_the_argument(likelihood, y, message):
    outputs = 3 if likelihood == "multiclass" else 1
    f = torch.zeros(3, outputs, dtype=torch.float64)
    with pytest.raises(ValueError, match=message):
        output_residuals(f, torch.as_tensor(y), likelihood=likelihood)


def test_bad_outputs_and_noise_are_refused():
    f = torch.zeros(3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="one logit"):
        output_residuals(f, torch.zeros(3), likelihood="binary")
    with pytest.raises(ValueError, match="noise_var"):
        output_residuals(f[:, :1], torch.zeros(3), likelihood="regression", noise_var=0.0)
    with pytest.raises(TypeError, match=r"f must be a floating torch\.Tensor"):
        output_residuals(np.zeros((3, 1)), torch.zeros(3), likelihood="regression")
