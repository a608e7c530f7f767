"""KFAC-Laplace vs a dense Kronecker construction and vs the exact Laplace of a linear model."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import mlp  # noqa: E402
from laplace_lab.numerics.jacobians import per_sample_jacobian  # noqa: E402
from laplace_lab.numerics.kfac import fit_kfac, output_hessian_root  # noqa: E402
from tests.numerics import kronecker_reference as ref  # noqa: E402


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
    expected = np.einsum("mi,ij,mj->m", G, np.linalg.inv(omega), G)
    np.testing.assert_allclose(kf.variance(model, Xs), expected, rtol=1e-10)


def _dense_kfac(model, X, likelihood, alpha, s2, convention):
    """αI + ⊕_l G_l ⊗ A_l, G_l = Σ_n D_nᵀ H_n D_n, A_l = (1/N) Σ ã ãᵀ (cross block zero
    for "separate"), written out on [W b] row-major."""
    ggn, layers, H = ref.layers(model, X, likelihood, s2)
    omega = alpha * np.eye(ggn.shape[0])
    for a, D, weight, bias in layers:
        G = np.einsum("nco,ncd,ndq->oq", D, H, D)
        A = a.T @ a / len(X)
        if convention == "separate":  # G ⊗ (1/N) Σ a aᵀ on W, G alone on b
            omega[np.ix_(weight.ravel(), weight.ravel())] += np.kron(G, A[:-1, :-1])
            omega[np.ix_(bias, bias)] += G
            continue
        idx = np.hstack([weight, bias[:, None]]).ravel()  # index i·(in + 1) + j
        omega[np.ix_(idx, idx)] += np.kron(G, A)
    return omega


@pytest.mark.parametrize("convention", ["joint", "separate"])
@pytest.mark.parametrize(
    ("likelihood", "outputs"), [("regression", 1), ("binary", 1), ("multiclass", 4)]
)
def test_kfac_equals_dense_block_diagonal_kronecker(likelihood, outputs, convention):
    X, Xs = _data(seed=1)
    torch.manual_seed(1)
    model = mlp(3, [4, 5], outputs, activation="tanh").double().eval()
    alpha, s2 = 1.3, 0.25
    kf = fit_kfac(
        model, X, likelihood=likelihood, prior_precision=alpha, noise_var=s2, convention=convention
    )
    omega = _dense_kfac(model, X, likelihood, alpha, s2, convention)
    got = kf.variance(model, Xs)
    assert got.shape == ((7,) if outputs == 1 else (7, outputs))
    np.testing.assert_allclose(got, ref.variances(model, Xs, omega), rtol=1e-9)


def test_output_hessian_root_squares_to_the_output_hessian():
    rng = np.random.default_rng(4)
    f = 3.0 * rng.normal(size=(6, 4))
    R = output_hessian_root(f, "multiclass")
    H = ref.output_hessians(f, "multiclass", 1.0)
    np.testing.assert_allclose(R @ np.swapaxes(R, 1, 2), H, rtol=0, atol=1e-15)
    np.testing.assert_allclose(H @ np.ones(4), 0.0, atol=1e-15)  # softmax: H 1 = 0
    R1 = output_hessian_root(f[:, :1], "binary")
    np.testing.assert_allclose(
        R1[:, 0, 0] ** 2, ref.output_hessians(f[:, :1], "binary", 1.0)[:, 0, 0]
    )
    R2 = output_hessian_root(f[:, :2], "regression", noise_var=0.25)
    np.testing.assert_array_equal(R2, np.broadcast_to(2.0 * np.eye(2), (6, 2, 2)))


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
        fit_kfac(mlp(3, [2]), X, likelihood="poisson", prior_precision=1.0)
    with pytest.raises(ValueError, match="one logit"):
        fit_kfac(mlp(3, [2], 2), X, likelihood="binary", prior_precision=1.0)
    with pytest.raises(ValueError, match="C ≥ 2"):
        fit_kfac(mlp(3, [2], 1), X, likelihood="multiclass", prior_precision=1.0)
    with pytest.raises(ValueError, match="convention"):
        fit_kfac(mlp(3, [2]), X, likelihood="regression", prior_precision=1.0, convention="kron")
