"""Every GPU kernel of the design, on CuPy arrays, against dense NumPy references.

Each test runs on the ``device`` backends: ``cupy`` (a CUDA device; skipped without one)
and ``numpy`` (always), so the test logic itself is exercised on every machine. The
kernels: the GGN of the three likelihoods, Greedy-Laplace with both pivoting kernels, the
predictive paths, IPV, SSLA/ASSLA (network, and the conjugate Bayesian linear regression),
Lanczos/eigsh and low-rank Laplace, FSP-Laplace Algorithm 2. Each kernel that takes a
Jacobian runs on two ``source`` s of it: synthetic rows, and the per-sample Jacobian of a
real torch model computed on the same device (CUDA on a GPU) and handed to CuPy by DLPack
without a copy. References are dense float64 computations on the host from the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from laplace_lab import theory
from laplace_lab.numerics import (
    GGN,
    RBF,
    KernelGram,
    LowRankLaplace,
    assla_log_density,
    eigsh,
    fsp_laplace,
    ggn_ipv_path,
    greedy_laplace,
    greedy_laplace_reference,
    ipv_path,
    lanczos,
    marginal_variance,
    predictive_variance,
    ssla_log_density,
    ssla_predictive,
    subnetwork_variance,
    subnetwork_variance_path,
)
from laplace_lab.numerics import pivoted_cholesky as pc


@dataclass(frozen=True)
class Device:
    name: str
    put: Callable[[np.ndarray], Any]
    get: Callable[[Any], np.ndarray]


def _cupy() -> Device:
    cupy = pytest.importorskip("cupy")
    if not cupy.cuda.is_available():  # pragma: no cover - no GPU on the CI machines
        pytest.skip("no CUDA device")
    return Device("cupy", cupy.asarray, lambda a: cupy.asnumpy(a))


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def device(request) -> Device:
    if request.param == "cupy":
        return _cupy()
    return Device("numpy", np.array, np.asarray)  # put copies: a kernel that wrote into its
    # input would corrupt the device copy only, and the host reference would catch it


@dataclass(frozen=True)
class Rows:
    """Jacobian rows on the host (float64) and on the device, with the model outputs f."""

    host: np.ndarray  # (n, p) or (n, C, p)
    dev: Any
    f: np.ndarray  # (n,) or (n, C)


def _synthetic(device: Device, n: int, seed: int, outputs: int) -> Rows:
    rng = np.random.default_rng(seed)
    p = 300
    shape = (n, p) if outputs == 1 else (n, outputs, p)
    J = rng.standard_normal(shape) * np.exp(0.5 * rng.standard_normal(p))
    f = rng.standard_normal(shape[:-1])
    return Rows(J, device.put(J), f)


def _network(device: Device, n: int, seed: int, outputs: int) -> Rows:
    """J of a 3 → 16 → 16 → ``outputs`` tanh MLP (p = 353 for one output) at n inputs."""
    torch = pytest.importorskip("torch")
    from laplace_lab.numerics import per_sample_jacobian
    from laplace_lab.numerics.jacobians import to_cupy

    if device.name == "cupy" and not torch.cuda.is_available():  # pragma: no cover
        pytest.skip("needs torch with CUDA")
    where = "cuda" if device.name == "cupy" else "cpu"
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 16),
        torch.nn.Tanh(),
        torch.nn.Linear(16, 16),
        torch.nn.Tanh(),
        torch.nn.Linear(16, outputs),
    ).double()
    model = model.to(where)
    X = torch.randn(n, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    X = X.to(where)
    J = per_sample_jacobian(model, X)
    with torch.no_grad():
        f = model(X)
    f = f[:, 0] if outputs == 1 else f
    if device.name == "cupy":
        dev = to_cupy(J)
        assert dev.data.ptr == J.data_ptr()  # DLPack: the device buffer itself, no copy
    else:
        dev = J.numpy()
    return Rows(J.cpu().numpy().copy(), dev, f.cpu().numpy())


@pytest.fixture(params=["synthetic", "network"])
def source(request) -> Callable[..., Rows]:
    """``source(device, n, seed, outputs=1)``: synthetic rows or a torch model's Jacobian."""
    make = _synthetic if request.param == "synthetic" else _network

    def rows(device: Device, n: int, seed: int, outputs: int = 1) -> Rows:
        return make(device, n, seed, outputs)

    return rows


def _prior(p: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, p)


def _quad(G: np.ndarray, A: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ji->i", G, np.linalg.solve(A, G.T))


def _softmax(f: np.ndarray) -> np.ndarray:
    e = np.exp(f - f.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
def test_ggn_of_each_likelihood(device, source, likelihood):
    rows = source(device, 10, 1, outputs=3 if likelihood == "multiclass" else 1)
    J, p = rows.host, rows.host.shape[-1]
    V = _prior(p, 1)
    if likelihood == "regression":
        ggn = GGN.regression(rows.dev, noise_var=0.4, prior_precision=device.put(V))
        ref = J.T @ J / 0.4 + np.diag(V)
    elif likelihood == "binary":
        ggn = GGN.binary(rows.dev, device.put(rows.f), prior_precision=device.put(V))
        w = 1 / (1 + np.exp(-rows.f))
        ref = J.T @ (J * (w * (1 - w))[:, None]) + np.diag(V)
    else:
        pi = _softmax(rows.f)
        C = pi.shape[1]
        H = np.einsum("nc,cd->ncd", pi, np.eye(C)) - pi[:, :, None] * pi[:, None, :]
        ggn = GGN.multiclass(rows.dev, device.put(rows.f), prior_precision=device.put(V))
        ref = np.einsum("ncp,ncd,ndq->pq", J, H, J) + np.diag(V)
    scale = np.abs(ref).max()
    np.testing.assert_allclose(device.get(ggn.dense()), ref, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(device.get(ggn.diagonal()), np.diag(ref), rtol=1e-10)


@pytest.mark.parametrize("stored", [True, False], ids=["stored-omega", "jacobian-columns"])
def test_greedy_laplace_both_kernels(device, source, stored, monkeypatch):
    monkeypatch.setattr(pc, "store_omega", lambda *args: stored)
    rows = source(device, 30, 2)
    J, p = rows.host, rows.host.shape[1]
    V = _prior(p, 2)
    ggn = GGN.regression(rows.dev, noise_var=0.5, prior_precision=device.put(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    for k, m in ((40, 80), (150, p)):
        S = greedy_laplace(ggn, k, n_candidates=m)
        ref = greedy_laplace_reference(omega, device.get(ggn.scores()), k, n_candidates=m)
        np.testing.assert_array_equal(S, ref)


def test_predictive_paths(device, source):
    rows, test = source(device, 24, 3), source(device, 6, 4)
    J, G, p = rows.host, test.host, rows.host.shape[1]
    V = _prior(p, 3)
    ggn = GGN.regression(rows.dev, noise_var=0.5, prior_precision=device.put(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    np.testing.assert_allclose(
        device.get(predictive_variance(ggn, test.dev)), _quad(G, omega), rtol=1e-9
    )
    order = np.random.default_rng(4).permutation(p)
    ks = [5, 24, 100, p]  # both sides of N′ = 24: Cholesky prefix and Woodbury
    path = device.get(subnetwork_variance_path(ggn, test.dev, order, ks))
    for row, k in zip(path, ks, strict=True):
        S = order[:k]
        ref = _quad(G[:, S], omega[np.ix_(S, S)])
        np.testing.assert_allclose(row, ref, rtol=1e-9)
        np.testing.assert_allclose(
            device.get(subnetwork_variance(ggn, test.dev, S)), ref, rtol=1e-9
        )
    np.testing.assert_allclose(
        device.get(marginal_variance(ggn)), np.diag(np.linalg.inv(omega)), rtol=1e-9
    )


def test_ipv_of_a_synthetic_lambda(device):
    rng = np.random.default_rng(5)
    B = rng.standard_normal((9, 4))
    Lam = B @ B.T
    kw = {"n": 200.0, "noise_var": 0.7, "prior_precision": 1.3}
    order = rng.permutation(9)
    np.testing.assert_allclose(
        device.get(ipv_path(device.put(Lam), order, **kw)),
        theory.ipv_path(Lam, order, **kw),
        rtol=1e-10,
    )


def test_empirical_ipv_of_a_jacobian(device, source):
    rows = source(device, 20, 6)
    J, p = rows.host, rows.host.shape[1]
    ggn = GGN.regression(rows.dev, noise_var=0.5, prior_precision=1.0)
    Lam_hat = J.T @ J / 20  # σ0² J_wᵀJ_w / N
    order = np.random.default_rng(6).permutation(p)[:40]
    np.testing.assert_allclose(
        device.get(ggn_ipv_path(ggn, order)),
        theory.ipv_path(Lam_hat, order, n=20, noise_var=0.5),
        rtol=1e-9,
    )


def test_network_ssla_and_assla(device, source):
    rows, test = source(device, 15, 7), source(device, 6, 8)
    J, G, p = rows.host, test.host, rows.host.shape[1]
    V = _prior(p, 7)
    ggn = GGN.regression(rows.dev, noise_var=0.3, prior_precision=device.put(V))
    f = test.f
    y = f + 0.4
    v = _quad(G, J.T @ J / 0.3 + np.diag(V))
    # ASSLA (eq. 17): log N(y; f, σ0²) − ½ log(1 + gᵀΩ⁻¹g/σ0²) (determinant lemma), unnormalised
    ref = -0.5 * np.log(2 * np.pi * 0.3) - 0.5 * (y - f) ** 2 / 0.3 - 0.5 * np.log1p(v / 0.3)
    got = assla_log_density(ggn, test.dev, device.put(f), device.put(y), noise_var=0.3)
    np.testing.assert_allclose(device.get(got)[:, 0], ref, rtol=1e-9)
    # SSLA (eq. 12) in the linearised network sums to log N(y; f, σ0² + v)
    got = ssla_log_density(ggn, test.dev, device.put(f), device.put(y), noise_var=0.3)
    lin = -0.5 * np.log(2 * np.pi * (0.3 + v)) - 0.5 * (y - f) ** 2 / (0.3 + v)
    np.testing.assert_allclose(device.get(got)[:, 0], lin, rtol=1e-9)
    pred = ssla_predictive(ggn, test.dev, device.put(f), noise_var=0.3)  # host float64
    np.testing.assert_allclose(pred.var, 0.3 + v, rtol=1e-9)


def test_ssla_of_conjugate_bayesian_linear_regression(device):
    """The posterior SSLA is exact for Gaussian-linear models (Rodemann et al., §5): with the
    design matrix as the Jacobian and the posterior mean as the MAP, the device's SSLA
    predictive is the analytic N(x*ᵀm_n, σ² + x*ᵀS_n x*)."""
    rng = np.random.default_rng(11)
    d, n, s2 = 6, 40, 0.25
    prior_precision = rng.uniform(0.5, 2.0, d)
    model = theory.BayesianLinearRegression(np.zeros(d), np.diag(1 / prior_precision), s2)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + np.sqrt(s2) * rng.standard_normal(n)
    m_n = model.map((X, y))
    X_new = rng.standard_normal((5, d))
    ggn = GGN.regression(device.put(X), noise_var=s2, prior_precision=device.put(prior_precision))
    pred = ssla_predictive(ggn, device.put(X_new), device.put(X_new @ m_n), noise_var=s2)
    for i, x in enumerate(X_new):
        exact = model.predictive((X, y), x)
        np.testing.assert_allclose(pred.mean[i], exact.mean(), rtol=1e-12)
        np.testing.assert_allclose(pred.var[i], exact.var(), rtol=1e-10)


def test_lanczos_eigsh_and_low_rank(device, source):
    rows, test = source(device, 15, 9), source(device, 6, 10)
    J, G, p = rows.host, test.host, rows.host.shape[1]
    V = _prior(p, 9)
    A = J.T @ J + 0.5 * np.eye(p)
    Ad = device.put(A)
    res = eigsh(lambda x: Ad @ x, p, 5, like=Ad, rng=0)
    np.testing.assert_allclose(res.values, np.linalg.eigvalsh(A)[::-1][:5], rtol=1e-9)
    run = lanczos(lambda x: Ad @ x, p, 30, like=Ad, rng=1)
    Q = device.get(run.basis)
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-10)
    lr = LowRankLaplace.from_factor(rows.dev, device.put(V), 15, rng=0)
    ref = _quad(G, J.T @ J + np.diag(V))  # rank 15 = N′: the low-rank posterior is exact
    np.testing.assert_allclose(device.get(lr.predictive_variance(test.dev)), ref, rtol=1e-8)
    # its draws as a linear map of host normals (moved to the device): T Tᵀ = Ω_r⁻¹
    T = np.vstack(
        [
            device.get(lr.draws(np.eye(p), np.zeros((p, 15)))),
            device.get(lr.draws(np.zeros((15, p)), np.eye(15))),
        ]
    ).T
    exact = np.linalg.inv(J.T @ J + np.diag(V))
    np.testing.assert_allclose(T @ T.T, exact, rtol=0, atol=1e-9 * np.abs(exact).max())


def test_fsp_laplace_algorithm_2(device, source):
    """Algorithm 2 against the dense covariance U_M(U_MᵀΛU_M)⁻¹U_Mᵀ, Λ = J(C)ᵀK⁻¹J(C) + J_wᵀJ_w,
    U_M an orthonormal basis of range(J(C)ᵀ) (Cinquin et al., §3.2)."""
    context, train, test = source(device, 15, 12), source(device, 5, 13), source(device, 9, 14)
    J_C = context.host
    C = np.random.default_rng(12).uniform(-2, 2, size=(15, 3))
    gram = KernelGram(RBF(1.0, 0.7), device.put(C), jitter=1e-6)
    got = fsp_laplace(context.dev, gram, train.dev / 0.3)
    K = KernelGram(RBF(1.0, 0.7), C, jitter=1e-6).dense()
    Jw = train.host / 0.3
    Lam = J_C.T @ np.linalg.solve(K, J_C) + Jw.T @ Jw
    U = np.linalg.svd(J_C.T, full_matrices=False)[0]
    cov = U @ np.linalg.solve(U.T @ Lam @ U, U.T)
    want = np.einsum("ij,jk,ik->i", test.host, cov, test.host)
    assert got.num_truncated == 0
    np.testing.assert_allclose(device.get(got.predictive_variance(test.dev)), want, rtol=1e-7)
