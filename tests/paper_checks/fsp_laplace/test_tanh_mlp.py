"""The hand-written tanh-MLP Jacobian of the FSP-Laplace claims vs finite differences."""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.fsp_laplace._tanh_mlp import TanhMLP


def test_jacobian_matches_central_differences():
    mlp = TanhMLP(2, 5)
    rng = np.random.default_rng(0)
    theta = mlp.init(rng) + 0.1 * rng.standard_normal(mlp.num_params)
    X = rng.normal(size=(4, 2))
    J = mlp.jacobian(theta, X)
    assert J.shape == (4, mlp.num_params) == (4, 5 * 2 + 5 + 25 + 5 + 5 + 1)
    h = 1e-6
    fd = np.empty_like(J)
    for i in range(mlp.num_params):
        e = np.zeros(mlp.num_params)
        e[i] = h
        fd[:, i] = (mlp.forward(theta + e, X) - mlp.forward(theta - e, X)) / (2 * h)
    np.testing.assert_allclose(J, fd, atol=1e-8)


def test_paper_architectures_have_the_expected_parameter_counts():
    # App. B.1: 2 hidden tanh layers of 50 (1-D regression) and 100 (2-D two moons).
    assert TanhMLP(1, 50).num_params == 50 + 50 + 2500 + 50 + 50 + 1
    assert TanhMLP(2, 100).num_params == 200 + 100 + 10_000 + 100 + 100 + 1


def test_forward_and_jacobian_into_a_buffer_equal_the_separate_passes():
    # One pass gives the forward values and the Jacobian bit for bit, written into ``out``
    # (the training loop reuses one buffer per input set); a stale buffer is overwritten.
    mlp = TanhMLP(3, 4)
    rng = np.random.default_rng(1)
    theta = mlp.init(rng) + 0.1 * rng.standard_normal(mlp.num_params)
    X = rng.normal(size=(6, 3))
    buffer = np.full((6, mlp.num_params), np.nan)
    f, J = mlp.forward_and_jacobian(theta, X, out=buffer)
    assert J is buffer
    np.testing.assert_array_equal(f, mlp.forward(theta, X))
    ref = TanhMLP(3, 4)
    W1, b1, W2, b2, w3, _ = ref._unpack(theta)
    H1 = np.tanh(X @ W1.T + b1)
    H2 = np.tanh(H1 @ W2.T + b2)
    D2 = w3 * (1.0 - H2**2)
    D1 = (D2 @ W2) * (1.0 - H1**2)
    blocks = [np.einsum("ij,ik->ijk", D1, X).reshape(6, -1), D1,
              np.einsum("ij,ik->ijk", D2, H1).reshape(6, -1), D2, H2, np.ones((6, 1))]  # fmt: skip
    np.testing.assert_array_equal(J, np.concatenate(blocks, axis=1))
