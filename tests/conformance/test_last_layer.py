"""The last-layer oracles: which parameters form the last layer, and the regime where the
last layer's KFAC block is exact."""

from __future__ import annotations

import numpy as np
import torch

from laplace_lab.conformance import DenseOracle, build_problem
from laplace_lab.conformance.catalog.last_layer import expected_variance, last_layer_indices
from laplace_lab.conformance.kronecker import KFACOracle


def test_last_layer_indices_are_the_last_linear_weight_then_bias():
    p = build_problem("mlp-multiclass", seed=0)  # 3 → 8 → 3: 32 + 27 parameters
    weight, bias = last_layer_indices(p.model)
    np.testing.assert_array_equal(weight, np.arange(32, 56))
    np.testing.assert_array_equal(bias, np.arange(56, 59))


def test_regression_last_layer_kfac_is_the_ggn_block():
    # one output: δ = 1 for the last layer and w_n = 1/σ0², so the joint KFAC block
    # G ⊗ A = (N/σ0²)·(1/N) Σ ã ãᵀ is Ω_SS's GGN part exactly, and the separate one is it
    # without the W–b entries (1/σ0²) Σ_n a_n
    o = DenseOracle(build_problem("mlp-regression", seed=0))
    weight, bias = last_layer_indices(o.problem.model)
    S = np.concatenate([weight, bias])
    block = o.ggn[np.ix_(S, S)]
    joint = KFACOracle(o, "joint").curvature[np.ix_(S, S)]
    separate = KFACOracle(o, "separate").curvature[np.ix_(S, S)]
    scale = np.abs(block).max()
    np.testing.assert_allclose(joint, block, rtol=0, atol=1e-13 * scale)
    cut = block.copy()
    cut[:8, 8:] = cut[8:, :8] = 0.0
    np.testing.assert_allclose(separate, cut, rtol=0, atol=1e-13 * scale)
    assert np.abs(block[:8, 8]).max() > 0.1 * scale  # the mean hidden activation is not 0
    # so the closed form of the case is the KFAC oracle's answer
    v, tol = expected_variance(o, "kron")
    P = separate + np.diag(o.V[S])
    G = o.G[:, 0, S]
    np.testing.assert_allclose(v, np.sum(np.linalg.solve(P, G.T).T * G, axis=1), rtol=1e-12)
    assert np.all(tol < 1e-12 * v)


def test_binary_last_layer_kfac_is_not_the_ggn_block():
    # w_n = σ(1 − σ) varies: Σ w ã ãᵀ ≠ (Σ w)·(1/N) Σ ã ãᵀ, so the case checks KFAC itself
    o = DenseOracle(build_problem("mlp-binary", seed=0))
    S = np.concatenate(last_layer_indices(o.problem.model))
    block = o.ggn[np.ix_(S, S)]
    joint = KFACOracle(o, "joint").curvature[np.ix_(S, S)]
    assert np.abs(joint - block).max() > 1e-3 * np.abs(block).max()


def test_multiclass_last_layer_kfac_is_the_summed_softmax_hessian_times_the_input_factor():
    # the last layer is the output (D_n = I): G = Σ_n H_n, the separate block is
    # G ⊗ (1/N) Σ a aᵀ on W and G on b; written here from H_n and the hidden activations
    # (the first layer's columns of the Jacobian are not used), per output (M, C)
    o = DenseOracle(build_problem("mlp-multiclass", seed=0))
    weight, bias = last_layer_indices(o.problem.model)
    S = np.concatenate([weight, bias])
    model = o.problem.model
    with torch.no_grad():
        a = torch.tanh(model[0](o.problem.X_train)).numpy()  # 3 → 8 → tanh → 3
    G = o.H.sum(axis=0)
    P = np.zeros((S.size, S.size))
    P[:24, :24] = np.kron(G, a.T @ a / len(a))
    P[24:, 24:] = G
    P += np.diag(o.V[S])
    rows = o.G[:, :, S].reshape(-1, S.size)
    expected = np.sum(np.linalg.solve(P, rows.T).T * rows, axis=1).reshape(6, 3)
    v, tol = expected_variance(o, "kron")
    assert v.shape == tol.shape == (6, 3)
    np.testing.assert_allclose(v, expected, rtol=1e-12)
    assert np.all(tol < 1e-11 * v)
    # and it is not the GGN block: H_n varies between points
    block = o.ggn[np.ix_(S, S)]
    joint = KFACOracle(o, "joint").curvature[np.ix_(S, S)]
    assert np.abs(joint - block).max() > 1e-2 * np.abs(block).max()
