"""KFAC-Laplace vs a dense Kronecker construction and vs the exact Laplace of a linear model."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.numerics.jacobians import parameter_layout, per_sample_jacobian  # noqa: E402
from laplace_lab.numerics.kfac import fit_kfac, layer_signals  # noqa: E402


def _data(n=25, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(7, d))


def test_kfac_is_exact_for_a_linear_regression_model():
    X, Xs = _data()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1).double()
    kf = fit_kfac(model, X, likelihood="regression", prior_precision=0.7, noise_var=0.4)
    J = per_sample_jacobian(model, X).numpy()
    G = per_sample_jacobian(model, Xs).numpy()
    omega = J.T @ J / 0.4 + 0.7 * np.eye(J.shape[1])
    ref = np.einsum("mi,ij,mj->m", G, np.linalg.inv(omega), G)
    np.testing.assert_allclose(kf.variance(model, Xs), ref, rtol=1e-10)


@pytest.mark.parametrize("convention", ["joint", "separate"])
@pytest.mark.parametrize("likelihood", ["regression", "binary"])
def test_kfac_equals_dense_block_diagonal_kronecker(likelihood, convention):
    X, Xs = _data(seed=1)
    torch.manual_seed(1)
    model = mlp(3, [4, 5], 1, activation="tanh").double().eval()
    alpha, s2 = 1.3, 0.25
    kf = fit_kfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    )
    f, sig = layer_signals(model, X)
    w = (
        np.full(len(f), 1 / s2)
        if likelihood == "regression"
        else ((1 / (1 + np.exp(-f))) * (1 - 1 / (1 + np.exp(-f))))
    )
    lay = parameter_layout(model)
    p = lay.p
    omega = alpha * np.eye(p)
    for li, (a, d) in enumerate(sig):
        A = a.T @ a / len(f)
        Gm = (d * w[:, None]).T @ d
        out, inp1 = d.shape[1], a.shape[1]
        wb, bb = [b for b in lay.blocks if b.layer == li]
        if convention == "separate":  # G ⊗ (1/N) Σ a aᵀ on W, G alone on b
            W_idx = wb.slice.start + np.arange(out * (inp1 - 1))
            B_idx = bb.slice.start + np.arange(out)
            omega[np.ix_(W_idx, W_idx)] += np.kron(Gm, A[:-1, :-1])
            omega[np.ix_(B_idx, B_idx)] += Gm
            continue
        K = np.kron(Gm, A)  # row-major vec of M = [W b]: index i·(in+1) + j
        flat = np.empty(out * inp1, dtype=np.int64)
        for i in range(out):
            flat[i * inp1 : i * inp1 + inp1 - 1] = (
                wb.slice.start + i * (inp1 - 1) + np.arange(inp1 - 1)
            )
            flat[i * inp1 + inp1 - 1] = bb.slice.start + i
        omega[np.ix_(flat, flat)] += K
    G = per_sample_jacobian(model, Xs).numpy()
    ref = np.einsum("mi,ij,mj->m", G, np.linalg.inv(omega), G)
    np.testing.assert_allclose(kf.variance(model, Xs), ref, rtol=1e-9)


def test_the_conventions_differ_by_the_mean_input_only():
    # one Linear layer: joint KFAC is the GGN; separate drops G ⊗ x̄, so it is exact too
    # when the inputs are centred, and differs otherwise
    X, Xs = _data(seed=2)
    torch.manual_seed(2)
    model = torch.nn.Linear(3, 1).double()
    G = per_sample_jacobian(model, Xs).numpy()

    def both(X):
        return [
            fit_kfac(
                model, X, likelihood="regression", prior_precision=0.7, noise_var=0.4, convention=c
            ).variance(model, Xs)
            for c in ("joint", "separate")
        ]

    Xc = X - X.mean(axis=0)
    J = per_sample_jacobian(model, Xc).numpy()
    exact = np.einsum("mi,ij,mj->m", G, np.linalg.inv(J.T @ J / 0.4 + 0.7 * np.eye(4)), G)
    for v in both(Xc):
        np.testing.assert_allclose(v, exact, rtol=1e-10)
    joint, separate = both(X + 1.0)
    assert np.min(np.abs(joint - separate) / joint) > 1e-3


def test_kfac_bad_input():
    X, _ = _data()
    conv = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 3)), torch.nn.Conv1d(1, 1, 2), torch.nn.Flatten()
    )
    with pytest.raises(ValueError, match="MLP"):
        fit_kfac(conv, X, likelihood="regression", prior_precision=1.0)
    with pytest.raises(ValueError, match="likelihood"):
        fit_kfac(mlp(3, [2]), X, likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="one output"):
        fit_kfac(mlp(3, [2], 2), X, likelihood="regression", prior_precision=1.0)
    with pytest.raises(ValueError, match="convention"):
        fit_kfac(mlp(3, [2]), X, likelihood="regression", prior_precision=1.0, convention="kron")
