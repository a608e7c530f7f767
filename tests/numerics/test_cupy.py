"""The same kernels on CuPy arrays (GPU). Skipped without cupy or a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():  # pragma: no cover - no GPU on the CI machines
    pytest.skip("no CUDA device", allow_module_level=True)

from laplace_lab import theory  # noqa: E402
from laplace_lab.numerics import (  # noqa: E402
    GGN,
    greedy_laplace,
    greedy_laplace_reference,
    ipv_path,
    predictive_variance,
    subnetwork_variance_path,
)

pytestmark = pytest.mark.gpu


def test_ggn_predictive_and_greedy_on_cupy():
    rng = np.random.default_rng(0)
    J = rng.standard_normal((20, 200))
    V = rng.uniform(0.5, 2.0, 200)
    G = rng.standard_normal((5, 200))
    ggn = GGN.regression(cupy.asarray(J), noise_var=0.5, prior_precision=cupy.asarray(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    np.testing.assert_allclose(ggn.dense().get(), omega, rtol=1e-10)
    ref = np.einsum("ij,ji->i", G, np.linalg.solve(omega, G.T))
    np.testing.assert_allclose(predictive_variance(ggn, cupy.asarray(G)).get(), ref, rtol=1e-10)
    order = rng.permutation(200)
    path = subnetwork_variance_path(ggn, cupy.asarray(G), order, [200]).get()
    np.testing.assert_allclose(path[0], ref, rtol=1e-10)
    S = greedy_laplace(ggn, 60)
    np.testing.assert_array_equal(S, greedy_laplace_reference(omega, ggn.scores().get(), 60))


def test_ipv_on_cupy():
    rng = np.random.default_rng(1)
    B = rng.standard_normal((8, 5))
    Lam = B @ B.T
    kw = {"n": 100.0, "noise_var": 1.0, "prior_precision": 1.0}
    out = ipv_path(cupy.asarray(Lam), np.arange(8), **kw).get()
    np.testing.assert_allclose(out, theory.ipv_path(Lam, np.arange(8), **kw), rtol=1e-10)
