"""Every GPU kernel of the design, on CuPy arrays, against dense NumPy references.

Each test runs on the ``device`` backends: ``cupy`` (a CUDA device; skipped without one)
and ``numpy`` (always), so the test logic itself is exercised on every machine. The kernels:
the GGN of the three likelihoods, Greedy-Laplace with both pivoting kernels, the predictive
paths, IPV, network SSLA/ASSLA, Lanczos/eigsh and low-rank Laplace, FSP-Laplace Algorithm 2,
and Jacobians of a real torch model handed to CuPy by DLPack without a copy.
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
    return Device("numpy", np.asarray, np.asarray)


def _problem(seed: int, n: int = 24, p: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((n, p)) * np.exp(0.5 * rng.standard_normal(p))
    V = rng.uniform(0.5, 2.0, p)
    G = rng.standard_normal((6, p))
    return J, V, G


def _quad(G: np.ndarray, A: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ji->i", G, np.linalg.solve(A, G.T))


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
def test_ggn_of_each_likelihood(device, likelihood):
    rng = np.random.default_rng(1)
    n, C, p = 10, 3, 40
    V = rng.uniform(0.5, 2.0, p)
    if likelihood == "regression":
        J = rng.standard_normal((n, p))
        ggn = GGN.regression(device.put(J), noise_var=0.4, prior_precision=device.put(V))
        ref = J.T @ J / 0.4 + np.diag(V)
    elif likelihood == "binary":
        J, f = rng.standard_normal((n, p)), rng.standard_normal(n)
        ggn = GGN.binary(device.put(J), device.put(f), prior_precision=device.put(V))
        w = 1 / (1 + np.exp(-f))
        ref = J.T @ (J * (w * (1 - w))[:, None]) + np.diag(V)
    else:
        J, f = rng.standard_normal((n, C, p)), rng.standard_normal((n, C))
        ggn = GGN.multiclass(device.put(J), device.put(f), prior_precision=device.put(V))
        pi = np.exp(f - f.max(1, keepdims=True))
        pi /= pi.sum(1, keepdims=True)
        H = np.einsum("nc,cd->ncd", pi, np.eye(C)) - pi[:, :, None] * pi[:, None, :]
        H += 1e-6 * np.eye(C)
        ref = np.einsum("ncp,ncd,ndq->pq", J, H, J) + np.diag(V)
    np.testing.assert_allclose(device.get(ggn.dense()), ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(device.get(ggn.diagonal()), np.diag(ref), rtol=1e-10)


@pytest.mark.parametrize("stored", [True, False], ids=["stored-omega", "jacobian-columns"])
def test_greedy_laplace_both_kernels(device, stored, monkeypatch):
    monkeypatch.setattr(pc, "store_omega", lambda *args: stored)
    J, V, _ = _problem(2, n=30, p=400)
    ggn = GGN.regression(device.put(J), noise_var=0.5, prior_precision=device.put(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    for k, m in ((40, 80), (150, 400)):
        S = greedy_laplace(ggn, k, n_candidates=m)
        ref = greedy_laplace_reference(omega, device.get(ggn.scores()), k, n_candidates=m)
        np.testing.assert_array_equal(S, ref)


def test_predictive_paths(device):
    J, V, G = _problem(3)
    ggn = GGN.regression(device.put(J), noise_var=0.5, prior_precision=device.put(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    Gd = device.put(G)
    np.testing.assert_allclose(
        device.get(predictive_variance(ggn, Gd)), _quad(G, omega), rtol=1e-9
    )
    order = np.random.default_rng(4).permutation(300)
    ks = [5, 24, 100, 300]  # both sides of N′ = 24: Cholesky prefix and Woodbury
    path = device.get(subnetwork_variance_path(ggn, Gd, order, ks))
    for row, k in zip(path, ks, strict=True):
        S = order[:k]
        ref = _quad(G[:, S], omega[np.ix_(S, S)])
        np.testing.assert_allclose(row, ref, rtol=1e-9)
        np.testing.assert_allclose(device.get(subnetwork_variance(ggn, Gd, S)), ref, rtol=1e-9)
    np.testing.assert_allclose(
        device.get(marginal_variance(ggn)), np.diag(np.linalg.inv(omega)), rtol=1e-9
    )


def test_ipv(device):
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
    J, _, _ = _problem(6, n=20, p=12)
    ggn = GGN.regression(device.put(J), noise_var=0.5, prior_precision=1.0)
    Lam_hat = 0.5 * (J.T @ J / 0.5) / 20  # σ0² J_wᵀJ_w / N
    np.testing.assert_allclose(
        device.get(ggn_ipv_path(ggn, order[:9])),
        theory.ipv_path(Lam_hat, order[:9], n=20, noise_var=0.5),
        rtol=1e-9,
    )


def test_network_ssla_and_assla(device):
    J, V, G = _problem(7, n=15, p=60)
    ggn = GGN.regression(device.put(J), noise_var=0.3, prior_precision=device.put(V))
    f = np.random.default_rng(8).standard_normal(6)
    y = f + 0.4
    v = _quad(G, J.T @ J / 0.3 + np.diag(V))
    # ASSLA (eq. 17): log N(y; f, σ0²) − ½ log(1 + gᵀΩ⁻¹g/σ0²) (determinant lemma), unnormalised
    ref = -0.5 * np.log(2 * np.pi * 0.3) - 0.5 * (y - f) ** 2 / 0.3 - 0.5 * np.log1p(v / 0.3)
    got = assla_log_density(ggn, device.put(G), device.put(f), device.put(y), noise_var=0.3)
    np.testing.assert_allclose(device.get(got)[:, 0], ref, rtol=1e-9)
    pred = ssla_predictive(ggn, device.put(G), device.put(f), noise_var=0.3)  # host float64
    np.testing.assert_allclose(pred.var, 0.3 + v, rtol=1e-9)


def test_lanczos_eigsh_and_low_rank(device):
    J, V, G = _problem(9, n=15, p=120)
    A = J.T @ J + 0.5 * np.eye(120)
    Ad = device.put(A)
    res = eigsh(lambda x: Ad @ x, 120, 5, like=Ad, rng=0)
    np.testing.assert_allclose(res.values, np.linalg.eigvalsh(A)[::-1][:5], rtol=1e-9)
    run = lanczos(lambda x: Ad @ x, 120, 30, like=Ad, rng=1)
    Q = device.get(run.basis)
    np.testing.assert_allclose(Q.T @ Q, np.eye(Q.shape[1]), atol=1e-10)
    lr = LowRankLaplace.from_factor(device.put(J), device.put(V), 15, rng=0)
    ref = _quad(G, J.T @ J + np.diag(V))  # rank 15 = N′: the low-rank posterior is exact
    np.testing.assert_allclose(device.get(lr.predictive_variance(device.put(G))), ref, rtol=1e-8)


def test_fsp_laplace_algorithm_2(device):
    rng = np.random.default_rng(10)
    J_C = rng.standard_normal((20, 150)) / np.sqrt(150)
    C = np.linspace(-2, 2, 20)[:, None]
    Jw = J_C[:5] / 0.3
    ref = fsp_laplace(J_C, KernelGram(RBF(1.0, 0.5), C, jitter=1e-6), Jw)
    got = fsp_laplace(
        device.put(J_C),
        KernelGram(RBF(1.0, 0.5), device.put(C), jitter=1e-6),
        device.put(Jw),
    )
    np.testing.assert_allclose(
        device.get(got.predictive_variance(device.put(J_C))),
        ref.predictive_variance(J_C),
        rtol=1e-7,
    )


def test_real_network_jacobians_reach_the_kernels(device):
    torch = pytest.importorskip("torch")
    from laplace_lab.numerics import per_sample_jacobian
    from laplace_lab.numerics.jacobians import to_cupy

    if device.name == "cupy" and not torch.cuda.is_available():  # pragma: no cover
        pytest.skip("needs torch with CUDA")
    dev = "cuda" if device.name == "cupy" else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)
    ).double()
    X = torch.randn(40, 3, dtype=torch.float64)
    J_host = per_sample_jacobian(model, X).numpy()
    J_dev = per_sample_jacobian(model.to(dev), X.to(dev))
    J = to_cupy(J_dev) if device.name == "cupy" else J_dev.numpy()  # DLPack: no copy
    ggn = GGN.regression(J, noise_var=0.2, prior_precision=1.0)
    omega = J_host.T @ J_host / 0.2 + np.eye(J_host.shape[1])
    G = J_host[:5]
    np.testing.assert_allclose(
        device.get(predictive_variance(ggn, device.put(G))), _quad(G, omega), rtol=1e-9
    )
    S = greedy_laplace(ggn, 10)
    np.testing.assert_array_equal(S, greedy_laplace_reference(omega, device.get(ggn.scores()), 10))
