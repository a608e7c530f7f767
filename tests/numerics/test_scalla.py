"""ScaLLA: JVP matching against the exact NTK and LLA; the Jacobian is never formed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from laplace_lab.networks.models import mlp
from laplace_lab.networks.training import build_seeded
from laplace_lab.numerics import (
    LinearizedLaplace,
    ScaLLA,
    draw_probes,
    kernel_matching_loss,
    model_jvp,
    per_sample_jacobian,
    surrogate_like,
    train_surrogate,
)
from laplace_lab.numerics import jacobians as jacobians_module


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Small networks: torch's default threads spin against each other on a shared machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _net(d=3, widths=(6,), C=3, seed=0):
    return build_seeded(
        lambda: mlp(d, list(widths), C, activation="tanh"), rng=seed, dtype=torch.float64
    ).eval()


def test_model_jvp_equals_the_jacobian_times_the_probes():
    model = _net()
    X = torch.as_tensor(np.random.default_rng(0).standard_normal((5, 3)))
    P = sum(t.numel() for t in model.parameters())
    V = draw_probes(4, P, rng=1, dtype=torch.float64)
    J = per_sample_jacobian(model, X)  # (5, 3, P)
    np.testing.assert_allclose(
        model_jvp(model, X, V), torch.einsum("ncp,sp->snc", J, V), rtol=1e-12
    )
    with pytest.raises(ValueError, match="V must have shape"):
        model_jvp(model, X, V[:, 1:])


@pytest.mark.parametrize("dist", ["rademacher", "gaussian"])
def test_probes_have_zero_mean_and_identity_covariance(dist):
    V = draw_probes(40_000, 4, rng=2, dist=dist, dtype=torch.float64).numpy()
    if dist == "rademacher":
        assert set(np.unique(V)) == {-1.0, 1.0}
    # mean and covariance of 4e4 draws: standard errors 1/200 (and √2/200 on the diagonal)
    np.testing.assert_allclose(V.mean(axis=0), 0.0, atol=0.03)
    np.testing.assert_allclose(np.cov(V.T), np.eye(4), atol=0.04)
    np.testing.assert_array_equal(
        draw_probes(3, 4, rng=5, dist=dist), draw_probes(3, 4, rng=5, dist=dist)
    )


def test_kernel_matching_loss_is_the_mean_squared_kernel_error():
    rng = np.random.default_rng(3)
    G, Z = (
        torch.as_tensor(rng.standard_normal((12, 4))),
        torch.as_tensor(rng.standard_normal((12, 3))),
    )
    Q, K = G @ G.T, Z @ Z.T
    np.testing.assert_allclose(kernel_matching_loss(G, Z), ((Q - K) ** 2).mean(), rtol=1e-12)
    biased = K.clone()
    biased[:8, 8:] = biased[8:, :8] = 0.0  # eq. (9): rows 0–7 training, 8–11 context
    np.testing.assert_allclose(
        kernel_matching_loss(G, Z, n_first=8), ((Q - biased) ** 2).mean(), rtol=1e-12
    )
    with pytest.raises(ValueError, match="same R"):
        kernel_matching_loss(G, Z[:5])


def test_surrogate_like_widens_the_head_and_reinitialises():
    model = _net(widths=(5, 5))
    g = surrogate_like(model, 24, rng=0)
    assert g(torch.zeros(2, 3, dtype=torch.float64)).shape == (2, 24)
    assert not torch.equal(g[0].weight, model[0].weight)
    assert model[-1].out_features == 3  # the model is untouched
    with pytest.raises(ValueError, match="Linear"):
        surrogate_like(torch.nn.Sequential(torch.nn.Tanh()), 4, rng=0)


class _JacobianFeatures(torch.nn.Module):
    """A 'surrogate' returning the exact Jacobian: g(x) = J(x), m = P."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.held = [model]  # not a submodule: its parameters are not the surrogate's
        self.unused = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():  # features are evaluated under no_grad
            return per_sample_jacobian(self.held[0], x)


def test_scalla_with_the_exact_kernel_is_the_exact_lla():
    model = _net()
    rng = np.random.default_rng(4)
    X, Xs = rng.standard_normal((20, 3)), rng.standard_normal((6, 3))
    P = sum(t.numel() for t in model.parameters())
    exact = LinearizedLaplace.fit(model, X, likelihood="multiclass", prior_precision=2.0)
    fit = ScaLLA.fit(
        model,
        X,
        likelihood="multiclass",
        prior_precision=2.0,
        m=P,
        surrogate=_JacobianFeatures(model),
        steps=0,
        rng=0,
        progress=False,
    )
    a, b = fit.predictive(Xs), exact.predictive(Xs)
    np.testing.assert_allclose(a.covariance, b.covariance, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(a.mean, b.mean)
    K = np.einsum("iap,jbp->iajb", *(per_sample_jacobian(model, Xs).numpy(),) * 2)
    np.testing.assert_allclose(fit.kernel(Xs), K, rtol=1e-10)


def test_jvp_matching_recovers_a_representable_ntk_and_the_exact_lla():
    """A model linear in its inputs has NTK (xᵀx' + 1) I_C; a linear surrogate with
    m ≥ C(d + 1) features can represent it exactly, so training must find it."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2).double().eval()
    rng = np.random.default_rng(5)
    X, Xs = rng.standard_normal((40, 3)), rng.standard_normal((10, 3))
    surrogate = build_seeded(lambda: torch.nn.Linear(3, 2 * 8), rng=6, dtype=torch.float64)
    fit = ScaLLA.fit(
        model,
        X,
        likelihood="multiclass",
        prior_precision=1.0,
        m=8,
        surrogate=surrogate,
        steps=1500,
        batch_size=20,
        num_probes=8,
        lr=1e-2,
        rng=7,
        progress=False,
    )
    K = np.einsum("ij,ab->iajb", Xs @ Xs.T + 1.0, np.eye(2))
    err = np.linalg.norm(fit.kernel(Xs) - K) / np.linalg.norm(K)
    assert err < 0.05, err
    exact = LinearizedLaplace.fit(model, X, likelihood="multiclass", prior_precision=1.0)
    ratio = fit.predictive(Xs).variance() / exact.predictive(Xs).variance()
    assert np.max(np.abs(ratio - 1.0)) < 0.15, ratio


def test_training_never_forms_a_jacobian(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("a Jacobian was formed")

    for owner, name in (
        (torch.func, "jacrev"),
        (torch.func, "jacfwd"),
        (torch.autograd.functional, "jacobian"),
        (jacobians_module, "per_sample_jacobian"),
        (jacobians_module, "jacobian_chunks"),
        (jacobians_module, "_vmap_chunks"),
    ):
        monkeypatch.setattr(owner, name, forbidden)
    model = _net(widths=(8,)).float()
    X = np.random.default_rng(6).standard_normal((30, 3)).astype(np.float32)
    fit = ScaLLA.fit(
        model,
        X,
        likelihood="multiclass",
        prior_precision=1.0,
        m=4,
        context=X + 3.0,
        biased=True,
        steps=5,
        batch_size=8,
        rng=0,
        progress=False,
    )
    assert fit.predictive(X[:3]).covariance.shape == (3, 3, 3)
    assert len(fit.surrogate.losses) == 5


LARGE = textwrap.dedent(
    r"""
    import re, numpy as np, torch
    from laplace_lab.numerics import train_surrogate
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 10)).eval()
    surrogate = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 80))
    X = np.random.default_rng(0).standard_normal((256, 64)).astype(np.float32)
    fit = train_surrogate(model, X, m=8, surrogate=surrogate, steps=3, batch_size=64,
                          num_probes=2, rng=0, progress=False)
    P = sum(t.numel() for t in model.parameters())
    # VmHWM, the peak of this process's own memory map (ru_maxrss would carry the pytest
    # parent's peak across fork and exec)
    hwm = re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1)
    print(P, int(hwm) * 1024, len(fit.losses))
    """
)


def test_a_network_too_large_for_dense_jacobians_trains_in_little_memory():
    out = subprocess.run(
        [sys.executable, "-c", LARGE], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    P, peak, steps = (int(v) for v in out.stdout.split())
    jacobian_bytes = 64 * 10 * P * 4  # one batch's per-sample Jacobians in float32: 11 GB
    assert P > 4_000_000 and steps == 3
    assert jacobian_bytes > 10e9
    assert peak < 1.5e9, f"peak RSS {peak / 1e9:.2f} GB"


def test_bad_arguments_name_the_argument():
    model = _net()
    X = np.zeros((4, 3))
    with pytest.raises(ValueError, match="biased=True needs context"):
        train_surrogate(model, X, m=2, biased=True, rng=0, progress=False)
    with pytest.raises(ValueError, match="m must be"):
        train_surrogate(model, X, m=0, rng=0, progress=False)
    with pytest.raises(TypeError, match="rng"):
        train_surrogate(model, X, m=2, rng=None, progress=False)
    with pytest.raises(ValueError, match="dist"):
        train_surrogate(model, X, m=2, dist="uniform", rng=0, progress=False)
    wrong = torch.nn.Linear(3, 5).double()
    with pytest.raises(ValueError, match="surrogate must return"):
        train_surrogate(model, X, m=2, surrogate=wrong, steps=1, rng=0, progress=False)
    wider = torch.nn.Linear(3, 12).double()  # (n, 2·C·m): reshapes silently unless checked
    with pytest.raises(ValueError, match="surrogate must return"):
        train_surrogate(model, X, m=2, surrogate=wider, steps=0, rng=0, progress=False)
    with pytest.raises(ValueError, match="context_batch_size must be"):
        train_surrogate(model, X, m=2, context=X, context_batch_size=0, rng=0, progress=False)
    with pytest.raises(ValueError, match="likelihood"):
        ScaLLA.fit(model, X, likelihood="poisson", prior_precision=1.0, m=2, rng=0)
    with pytest.raises(ValueError, match="X_train must be finite"):
        train_surrogate(model, X * np.nan, m=2, rng=0, progress=False)
