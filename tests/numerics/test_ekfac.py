"""EKFAC-Laplace vs a dense construction from the exact GGN blocks, and its exact regimes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.numerics.ekfac import fit_ekfac  # noqa: E402
from laplace_lab.numerics.jacobians import parameter_layout, per_sample_jacobian  # noqa: E402
from laplace_lab.numerics.kfac import fit_kfac, layer_signals  # noqa: E402


def _data(n=25, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(7, d))


def _weights(f, likelihood, s2):
    if likelihood == "regression":
        return np.full(len(f), 1 / s2)
    s = 1 / (1 + np.exp(-f))
    return s * (1 - s)


def _dense_ekfac(model, X, likelihood, alpha, s2, convention):
    """α I + ⊕ Q diag(diag(Qᵀ B Q)) Qᵀ with B the exact GGN block JᵀWJ of each layer."""
    f, sig = layer_signals(model, X)
    w = _weights(f, likelihood, s2)
    J = per_sample_jacobian(model, X).numpy()
    ggn = (J * w[:, None]).T @ J
    lay = parameter_layout(model)
    omega = alpha * np.eye(lay.p)
    for li, (a, d) in enumerate(sig):
        wb, bb = [b for b in lay.blocks if b.layer == li]
        out, inp = d.shape[1], a.shape[1] - 1
        W_idx = (wb.slice.start + np.arange(out * inp)).reshape(out, inp)
        B_idx = bb.slice.start + np.arange(out)
        QG = np.linalg.eigh((d * w[:, None]).T @ d)[1]
        if convention == "joint":
            QA = np.linalg.eigh(a.T @ a / len(f))[1]
            blocks = [(np.hstack([W_idx, B_idx[:, None]]).reshape(-1), np.kron(QG, QA))]
        else:
            QA = np.linalg.eigh(a[:, :-1].T @ a[:, :-1] / len(f))[1]
            blocks = [(W_idx.reshape(-1), np.kron(QG, QA)), (B_idx, QG)]
        for idx, Q in blocks:
            s = np.diag(Q.T @ ggn[np.ix_(idx, idx)] @ Q)
            omega[np.ix_(idx, idx)] += (Q * s) @ Q.T
    return omega


@pytest.mark.parametrize("convention", ["joint", "separate"])
@pytest.mark.parametrize("likelihood", ["regression", "binary"])
def test_ekfac_equals_the_dense_eigenbasis_construction(likelihood, convention):
    X, Xs = _data(seed=1)
    torch.manual_seed(1)
    model = mlp(3, [4, 5], 1, activation="tanh").double().eval()
    alpha, s2 = 1.3, 0.25
    ek = fit_ekfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    )
    omega = _dense_ekfac(model, X, likelihood, alpha, s2, convention)
    G = per_sample_jacobian(model, Xs).numpy()
    ref = np.einsum("mi,ij,mj->m", G, np.linalg.inv(omega), G)
    np.testing.assert_allclose(ek.variance(model, Xs), ref, rtol=1e-10)
    kfac = fit_kfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    ).variance(model, Xs)
    assert np.max(np.abs(kfac / ref - 1.0)) > 5e-3  # not KFAC: the eigenvalues differ


@pytest.mark.parametrize("convention", ["joint", "separate"])
def test_ekfac_is_kfac_and_exact_where_kfac_is_exact(convention):
    # one Linear layer under a Gaussian likelihood: δ_n = 1, w_n = 1/σ0², so the block is
    # G ⊗ A itself and its eigenvalues are the second moments; joint: the exact Laplace
    X, Xs = _data(seed=2)
    X = X + 1.0  # uncentred: the conventions differ
    torch.manual_seed(2)
    model = torch.nn.Linear(3, 1).double()
    opts = {"likelihood": "regression", "prior_precision": 0.7, "noise_var": 0.4}
    ek = fit_ekfac(model, X, convention=convention, **opts).variance(model, Xs)
    kf = fit_kfac(model, X, convention=convention, **opts).variance(model, Xs)
    np.testing.assert_allclose(ek, kf, rtol=1e-12)
    if convention == "joint":
        J, G = per_sample_jacobian(model, X).numpy(), per_sample_jacobian(model, Xs).numpy()
        omega = J.T @ J / 0.4 + 0.7 * np.eye(4)
        np.testing.assert_allclose(ek, np.einsum("mi,ij,mj->m", G, np.linalg.inv(omega), G))


def test_ekfac_bad_input():
    X, _ = _data()
    with pytest.raises(ValueError, match="convention"):
        fit_ekfac(mlp(3, [2]), X, likelihood="regression", prior_precision=1.0, convention="x")
    with pytest.raises(ValueError, match="likelihood"):
        fit_ekfac(mlp(3, [2]), X, likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="positive"):
        fit_ekfac(mlp(3, [2]), X, likelihood="regression", prior_precision=0.0)
