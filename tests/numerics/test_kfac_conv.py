"""KFAC-expand and KFAC-reduce of Conv2d layers: against curvlinops' factors, a dense
Kronecker precision and the closed form of a linear convolution (Eschenhagen et al. 2023)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import digits_cnn  # noqa: E402
from laplace_lab.numerics.jacobians import per_sample_jacobian  # noqa: E402
from laplace_lab.numerics.kfac import fit_kfac, shared_signals  # noqa: E402
from tests.numerics import kronecker_reference as ref  # noqa: E402


def _cnn(seed=0):
    """digits_cnn with channels (2, 3) and 3 logits (p = 86), float64, 12 training and 5
    test images of scikit-learn's digits (pixels / 16)."""
    from sklearn.datasets import load_digits

    torch.manual_seed(seed)
    model = digits_cnn(3, channels=(2, 3)).double().eval()
    X = load_digits().data[:17] / 16.0
    return model, X[:12], X[12:]


def _factors(kf):
    return [(QA * lA) @ QA.T for lA, QA in kf.eig_A], [(QG * lG) @ QG.T for lG, QG in kf.eig_G]


@pytest.mark.parametrize("joint", [True, False])
@pytest.mark.parametrize("approximation", ["expand", "reduce"])
def test_conv_factors_equal_curvlinops(approximation, joint):
    curvlinops = pytest.importorskip("curvlinops")
    model, X, _ = _cnn()
    Xt = torch.as_tensor(X)
    y = torch.as_tensor(np.arange(len(X)) % 3)
    op = curvlinops.KFACLinearOperator(
        model,
        torch.nn.CrossEntropyLoss(reduction="sum"),
        list(model.parameters()),
        [(Xt, y)],
        fisher_type="type-2",
        kfac_approx=approximation,
        separate_weight_and_bias=not joint,
        check_deterministic=False,
    )
    op.compute_kronecker_factors()
    convention = "joint" if joint else "separate"
    kf = fit_kfac(
        model,
        X,
        likelihood="multiclass",
        prior_precision=1.0,
        convention=convention,
        approximation=approximation,
    )
    A, G = _factors(kf)
    names = [
        n for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d | torch.nn.Linear)
    ]
    assert len(A) == len(names) == 3
    for i, name in enumerate(names):
        want_A = op._input_covariances[name].numpy()
        if not joint:  # ours: blockdiag(A_W, 1)
            np.testing.assert_allclose(A[i][-1, -1], 1.0, rtol=1e-12)
            np.testing.assert_allclose(A[i][:-1, -1], 0.0, atol=1e-13)
            A[i] = A[i][:-1, :-1]
        np.testing.assert_allclose(A[i], want_A, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(
            G[i], op._gradient_covariances[name].numpy(), rtol=1e-10, atol=1e-13
        )


def test_expand_and_reduce_differ_on_conv_layers_only():
    model, X, _ = _cnn(1)
    fits = [
        fit_kfac(model, X, likelihood="multiclass", prior_precision=1.0, approximation=a)
        for a in ("expand", "reduce")
    ]
    (A_e, G_e), (A_r, G_r) = (_factors(k) for k in fits)
    for i in (0, 1):  # the convolutions: R = 64 and 16 positions
        assert np.linalg.norm(A_e[i] - A_r[i]) > 0.05 * np.linalg.norm(A_e[i])
        assert np.linalg.norm(G_e[i] - G_r[i]) > 0.05 * np.linalg.norm(G_e[i])
    np.testing.assert_allclose(A_e[2], A_r[2], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(G_e[2], G_r[2], rtol=1e-12, atol=1e-15)


def _dense_kfac(model, kf):
    """αI + ⊕_l G_l ⊗ A_l on [W b] (row-major, the bias as column in + 1), written out."""
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d | torch.nn.Linear)]
    offsets = np.cumsum([0] + [t.numel() for t in model.parameters()])
    omega = kf.prior_precision * np.eye(offsets[-1])
    A, G = _factors(kf)
    for i, m in enumerate(layers):
        n_out = m.weight.shape[0]
        n_in = m.weight[0].numel()
        weight = (offsets[2 * i] + np.arange(n_out * n_in)).reshape(n_out, n_in)
        bias = offsets[2 * i + 1] + np.arange(n_out)
        idx = np.hstack([weight, bias[:, None]]).ravel()
        omega[np.ix_(idx, idx)] += np.kron(G[i], A[i])
    return omega


@pytest.mark.parametrize("approximation", ["expand", "reduce"])
def test_conv_variances_equal_the_dense_kronecker_precision(approximation):
    model, X, Xs = _cnn(2)
    kf = fit_kfac(
        model, X, likelihood="multiclass", prior_precision=0.8, approximation=approximation
    )
    got = kf.variance(model, Xs)
    assert got.shape == (5, 3)
    want = ref.variances(model, Xs, _dense_kfac(model, kf))
    np.testing.assert_allclose(got, want, rtol=1e-9)
    last = kf.variance(model, Xs, layers=slice(-1, None))
    assert np.all(last < got)  # the convolutions' blocks add variance


class _SumPositions(torch.nn.Module):
    def forward(self, s):
        return s.sum(dim=(2, 3)).reshape(len(s), 1)


def test_reduce_is_exact_for_a_summed_linear_convolution():
    # f(x) = Σ_r (w · patch_r + b) = w · Σ_r patch_r + R b: Bayesian linear regression in the
    # features (Σ_r patch_r, R), which joint KFAC-reduce reproduces and expand does not
    rng = np.random.default_rng(3)
    X, Xs = rng.normal(size=(15, 25)), rng.normal(size=(6, 25))
    torch.manual_seed(3)
    conv = torch.nn.Conv2d(1, 1, 3, stride=2, padding=1)  # 5×5 → 3×3: R = 9
    model = torch.nn.Sequential(torch.nn.Unflatten(1, (1, 5, 5)), conv, _SumPositions()).double()
    cols = torch.nn.functional.unfold(
        torch.as_tensor(X).reshape(-1, 1, 5, 5), 3, padding=1, stride=2
    )
    assert cols.shape[2] == 9
    Phi = np.hstack([cols.sum(2).numpy(), np.full((15, 1), 9.0)])
    np.testing.assert_allclose(per_sample_jacobian(model, X).numpy(), Phi, rtol=1e-12)
    Gs = per_sample_jacobian(model, Xs).numpy()
    s2, alpha = 0.3, 1.7
    cov = np.linalg.inv(Phi.T @ Phi / s2 + alpha * np.eye(10))
    exact = np.einsum("mi,ij,mj->m", Gs, cov, Gs)
    fit = {"likelihood": "regression", "prior_precision": alpha, "noise_var": s2}
    reduce = fit_kfac(model, X, approximation="reduce", **fit).variance(model, Xs)
    np.testing.assert_allclose(reduce, exact, rtol=1e-10)
    expand = fit_kfac(model, X, approximation="expand", **fit).variance(model, Xs)
    assert np.min(np.abs(expand - exact) / exact) > 1e-2


def test_shared_signals_shapes_and_bad_input():
    model, X, _ = _cnn()
    f, sig = shared_signals(model, X)
    assert f.shape == (12, 3)
    assert [(a.shape, D.shape) for a, D in sig] == [
        ((12, 64, 10), (12, 3, 64, 2)),
        ((12, 16, 19), (12, 3, 16, 3)),
        ((12, 13), (12, 3, 3)),
    ]
    opts = {"likelihood": "multiclass", "prior_precision": 1.0}
    with pytest.raises(ValueError, match="approximation"):
        fit_kfac(model, X, approximation="mean", **opts)
    grouped = torch.nn.Sequential(
        torch.nn.Unflatten(1, (2, 4, 8)), torch.nn.Conv2d(2, 2, 3, groups=2), torch.nn.Flatten()
    ).double()
    with pytest.raises(ValueError, match="groups=1"):
        fit_kfac(grouped, X, **opts)
    same = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 2, 3, padding="same"),
        torch.nn.Flatten(),
    ).double()
    with pytest.raises(ValueError, match="'valid'"):
        fit_kfac(same, X, **opts)
    torch.manual_seed(5)
    valid = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 2, 3, padding="valid"),
        torch.nn.Flatten(),
    ).double()
    zero = copy.deepcopy(valid)
    zero[1].padding = (0, 0)
    reg = {"likelihood": "regression", "prior_precision": 1.0}
    np.testing.assert_array_equal(
        fit_kfac(valid, X, **reg).variance(valid, X[:3]),
        fit_kfac(zero, X, **reg).variance(zero, X[:3]),
    )
    shared_linear = torch.nn.Sequential(
        torch.nn.Unflatten(1, (8, 8)), torch.nn.Linear(8, 2)
    ).double()
    with pytest.raises(ValueError, match=r"inputs \(N, in\)"):
        fit_kfac(shared_linear, X, **opts)
