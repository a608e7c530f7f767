"""EKFAC-Laplace vs a dense construction from the exact GGN blocks, and its exact regimes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.numerics.ekfac import fit_ekfac  # noqa: E402
from laplace_lab.numerics.jacobians import per_sample_jacobian  # noqa: E402
from laplace_lab.numerics.kfac import fit_kfac  # noqa: E402
from tests.numerics import kronecker_reference as ref  # noqa: E402


def _data(n=25, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(7, d))


def _dense_ekfac(model, X, likelihood, alpha, s2, convention):
    """α I + ⊕ Q diag(diag(Qᵀ B Q)) Qᵀ with B the exact GGN block Σ_n J_nᵀ H_n J_n of each
    layer and Q = Q_G ⊗ Q_A from G = Σ_n D_nᵀ H_n D_n and A = (1/N) Σ ã ãᵀ."""
    ggn, layers, H = ref.layers(model, X, likelihood, s2)
    omega = alpha * np.eye(ggn.shape[0])
    for a, D, weight, bias in layers:
        QG = np.linalg.eigh(np.einsum("nco,ncd,ndq->oq", D, H, D))[1]
        if convention == "joint":
            QA = np.linalg.eigh(a.T @ a / len(X))[1]
            blocks = [(np.hstack([weight, bias[:, None]]).reshape(-1), np.kron(QG, QA))]
        else:
            QA = np.linalg.eigh(a[:, :-1].T @ a[:, :-1] / len(X))[1]
            blocks = [(weight.reshape(-1), np.kron(QG, QA)), (bias, QG)]
        for idx, Q in blocks:
            s = np.diag(Q.T @ ggn[np.ix_(idx, idx)] @ Q)
            omega[np.ix_(idx, idx)] += (Q * s) @ Q.T
    return omega


@pytest.mark.parametrize("convention", ["joint", "separate"])
@pytest.mark.parametrize(
    ("likelihood", "outputs"), [("regression", 1), ("binary", 1), ("multiclass", 4)]
)
def test_ekfac_equals_the_dense_eigenbasis_construction(likelihood, outputs, convention):
    X, Xs = _data(seed=1)
    torch.manual_seed(1)
    model = mlp(3, [4, 5], outputs, activation="tanh").double().eval()
    alpha, s2 = 1.3, 0.25
    ek = fit_ekfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    )
    expected = ref.variances(model, Xs, _dense_ekfac(model, X, likelihood, alpha, s2, convention))
    got = ek.variance(model, Xs)
    assert got.shape == expected.shape == ((7,) if outputs == 1 else (7, outputs))
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    kfac = fit_kfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    ).variance(model, Xs)
    assert np.max(np.abs(kfac / expected - 1.0)) > 5e-3  # not KFAC: the eigenvalues differ


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
        fit_ekfac(mlp(3, [2]), X, likelihood="poisson", prior_precision=1.0)
    with pytest.raises(ValueError, match="C ≥ 2"):
        fit_ekfac(mlp(3, [2]), X, likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="positive"):
        fit_ekfac(mlp(3, [2]), X, likelihood="regression", prior_precision=0.0)
