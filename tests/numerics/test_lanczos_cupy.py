"""The Lanczos family on CuPy arrays (GPU). Skipped without cupy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():  # pragma: no cover - no GPU on the CI machines
    pytest.skip("no CUDA device", allow_module_level=True)

from laplace_lab.numerics import (  # noqa: E402
    RBF,
    KernelGram,
    LowRankLaplace,
    eigsh,
    fsp_laplace,
    jvp_ntk_estimate,
    lanczos_inverse_sqrt,
)

pytestmark = pytest.mark.gpu


def test_eigsh_lowrank_and_inverse_sqrt_on_cupy():
    rng = np.random.default_rng(0)
    J = rng.standard_normal((15, 120))
    A = J.T @ J + 0.5 * np.eye(120)
    Ac = cupy.asarray(A)
    res = eigsh(lambda v: Ac @ v, 120, 5, like=Ac, rng=0)
    np.testing.assert_allclose(res.values, np.linalg.eigvalsh(A)[::-1][:5], atol=1e-9)
    assert isinstance(res.vectors, cupy.ndarray)
    v = cupy.asarray(rng.standard_normal(120))
    L = lanczos_inverse_sqrt(lambda x: Ac @ x, v, 120).get()
    np.testing.assert_allclose(L @ (L.T @ v.get()), np.linalg.solve(A, v.get()), atol=1e-9)
    V = rng.uniform(0.5, 2.0, 120)
    G = rng.standard_normal((4, 120))
    lr = LowRankLaplace.from_factor(cupy.asarray(J), cupy.asarray(V), 15, rng=0)
    ref = np.einsum("ij,ji->i", G, np.linalg.solve(J.T @ J + np.diag(V), G.T))
    np.testing.assert_allclose(lr.predictive_variance(cupy.asarray(G)).get(), ref, rtol=1e-9)


def test_fsp_and_ntk_sketch_on_cupy():
    rng = np.random.default_rng(1)
    J_C = rng.standard_normal((20, 150)) / np.sqrt(150)
    C = np.linspace(-2, 2, 20)[:, None]
    ref = fsp_laplace(J_C, KernelGram(RBF(1.0, 0.5), C, jitter=1e-6), J_C[:5] / 0.3)
    res = fsp_laplace(
        cupy.asarray(J_C),
        KernelGram(RBF(1.0, 0.5), cupy.asarray(C), jitter=1e-6),
        cupy.asarray(J_C[:5] / 0.3),
    )
    np.testing.assert_allclose(
        res.predictive_variance(cupy.asarray(J_C)).get(), ref.predictive_variance(J_C), rtol=1e-7
    )
    J1 = rng.standard_normal((3, 40))
    est = jvp_ntk_estimate(cupy.asarray(J1), None, 50, rng=np.random.default_rng(2))
    np.testing.assert_allclose(
        est.get(), jvp_ntk_estimate(J1, None, 50, rng=np.random.default_rng(2))
    )
