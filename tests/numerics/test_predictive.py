"""Predictive variances (Woodbury, nested prefixes) against dense inverses, on every backend."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from laplace_lab.numerics import (
    GGN,
    coverage,
    marginal_variance,
    predictive_variance,
    streamed_predictive_variance,
    subnetwork_variance,
    subnetwork_variance_path,
    wasserstein_gap,
)
from tests.numerics.conftest import host, random_problem, traced_peak

RTOL = 1e-10


def _quad(G: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Row-wise gᵀ A⁻¹ g by a dense solve (the reference)."""
    return np.einsum("ij,ji->i", G, np.linalg.solve(A, G.T))


@pytest.mark.parametrize(("n", "p"), [(8, 40), (40, 12)])  # Woodbury and dense Cholesky
def test_full_and_subnetwork_variance_equal_dense(backend, n, p):
    rng = np.random.default_rng(0)
    J, V = random_problem(rng, n, p, spread=0.5)
    G = rng.standard_normal((5, p))
    ggn = GGN.regression(backend(J), noise_var=0.4, prior_precision=backend(V))
    omega = J.T @ J / 0.4 + np.diag(V)
    np.testing.assert_allclose(
        host(predictive_variance(ggn, backend(G))), _quad(G, omega), rtol=RTOL
    )
    np.testing.assert_allclose(
        host(marginal_variance(ggn)), np.diag(np.linalg.inv(omega)), rtol=RTOL
    )
    for S in ([3, 1, 7], list(range(p - 1, 0, -2)), list(range(p))):
        ref = _quad(G[:, S], omega[np.ix_(S, S)])
        np.testing.assert_allclose(host(subnetwork_variance(ggn, backend(G), S)), ref, rtol=RTOL)
    np.testing.assert_allclose(
        host(subnetwork_variance(ggn, backend(G), list(range(p)))),
        host(predictive_variance(ggn, backend(G))),
        rtol=RTOL,
    )


def test_path_equals_separate_calls(backend):
    rng = np.random.default_rng(1)
    J, V = random_problem(rng, 10, 30)
    ggn = GGN.regression(backend(J), noise_var=1.0, prior_precision=backend(V))
    G = rng.standard_normal((4, 30))
    order = rng.permutation(30)
    ks = [1, 5, 12, 30, 20]
    path = host(subnetwork_variance_path(ggn, backend(G), order, ks))
    assert path.shape == (5, 4)
    omega = J.T @ J + np.diag(V)
    for row, k in zip(path, ks, strict=True):
        S = order[:k]
        np.testing.assert_allclose(row, _quad(G[:, S], omega[np.ix_(S, S)]), rtol=RTOL)
    # Theorem 1 monotonicity along the path (in k), pointwise
    mono = host(subnetwork_variance_path(ggn, backend(G), order, list(range(1, 31))))
    assert np.all(np.diff(mono, axis=0) >= -1e-12 * mono.max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_path_woodbury_prefixes_accumulate_across_tiles(backend, dtype, monkeypatch):
    """k > N′ by Woodbury accumulated along the order, in tiles smaller than the prefixes."""
    import laplace_lab.numerics.predictive as predictive

    monkeypatch.setattr(predictive, "TILE", 4)
    rng = np.random.default_rng(0)
    J, G = rng.normal(size=(6, 20)), rng.normal(size=(4, 20))
    ggn = GGN.regression(backend(J.astype(dtype)), noise_var=0.5, prior_precision=2.0)
    order = rng.permutation(20)
    ks = [15, 3, 6, 9, 20]  # below and at N′ = 6: Cholesky prefix; above: Woodbury
    got = host(subnetwork_variance_path(ggn, backend(G.astype(dtype)), order, ks))
    assert got.dtype == dtype
    for row, k in zip(got, ks, strict=True):
        S = order[:k]
        om = J[:, S].T @ J[:, S] / 0.5 + 2.0 * np.eye(k)
        ref = np.einsum("mi,ij,mj->m", G[:, S], np.linalg.inv(om), G[:, S])
        np.testing.assert_allclose(row, ref, rtol=1e-10 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_classification_variances(backend, which):
    rng = np.random.default_rng(2)
    n, C, p = 7, 3, 20
    V = rng.uniform(0.5, 2.0, p)
    if which == "binary":
        J = rng.standard_normal((n, p))
        ggn = GGN.binary(backend(J), backend(rng.standard_normal(n)), prior_precision=backend(V))
        G = rng.standard_normal((4, p))
    else:
        J3 = rng.standard_normal((n, C, p))
        F = rng.standard_normal((n, C))
        ggn = GGN.multiclass(backend(J3), backend(F), prior_precision=backend(V))
        G = rng.standard_normal((4, C, p))  # per-class test gradients
    omega = host(ggn.dense())
    rows = G.reshape(-1, p)
    ref = _quad(rows, omega).reshape(G.shape[:-1])
    out = host(predictive_variance(ggn, backend(G)))
    assert out.shape == G.shape[:-1]
    np.testing.assert_allclose(out, ref, rtol=RTOL)
    if which == "multiclass":  # = the diagonal of J* Ω⁻¹ J*ᵀ per test point
        full = G[0] @ np.linalg.solve(omega, G[0].T)
        np.testing.assert_allclose(out[0], np.diag(full), rtol=RTOL)
    S = [4, 0, 13, 9, 2]
    ref_S = _quad(rows[:, S], omega[np.ix_(S, S)]).reshape(G.shape[:-1])
    np.testing.assert_allclose(host(subnetwork_variance(ggn, backend(G), S)), ref_S, rtol=RTOL)
    path = host(subnetwork_variance_path(ggn, backend(G), S, [5]))
    np.testing.assert_allclose(path[0], ref_S, rtol=RTOL)


def test_float32_variance(backend):
    rng = np.random.default_rng(3)
    J, _V = random_problem(rng, 6, 25, spread=0.2)
    G = rng.standard_normal((3, 25))
    ggn = GGN.regression(backend(J.astype(np.float32)), noise_var=1.0, prior_precision=1.0)
    out = host(predictive_variance(ggn, backend(G.astype(np.float32))))
    assert out.dtype == np.float32
    ref = _quad(G, J.T @ J + np.eye(25))
    np.testing.assert_allclose(out, ref, rtol=1e-3)  # float32 Woodbury cancellation: ~1e-4


def test_metrics():
    vf = np.array([4.0, 1.0, 0.0])
    vs = np.array([1.0, 1.0, 0.0])
    np.testing.assert_allclose(wasserstein_gap(vf, vs), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(
        wasserstein_gap(vf, vs, noise_var=5.0), [3.0 - 6**0.5, 0.0, 0.0], rtol=1e-15
    )
    multi = wasserstein_gap(np.array([[4.0, 9.0]]), np.array([[1.0, 4.0]]))
    np.testing.assert_allclose(multi, [1.0])  # mean over classes of |2−1| and |3−2|
    f_ref = np.array([0.0, 1.0, 2.0, -3.0])
    f_map = np.zeros(4)
    var = np.array([1.0, 0.25, 1.0, 4.0])
    # |Δ| ≤ 1.96σ: 0 ≤ 1.96 yes; 1 ≤ 0.98 no; 2 ≤ 1.96 no; 3 ≤ 3.92 yes
    assert coverage(f_ref, f_map, var) == 0.5
    assert coverage(f_ref, f_map, var, z=2.0) == 1.0  # boundaries count: 1 ≤ 1, 2 ≤ 2
    assert coverage(f_ref, f_map, var, z=1.0) == 0.25


def test_no_pxp_allocation_at_large_p():
    """Woodbury at p = 100000: peak traced memory stays O(N'p), far below p² (80 GB)."""
    rng = np.random.default_rng(4)
    n, p = 20, 100_000
    J = rng.standard_normal((n, p))
    G = rng.standard_normal((3, p))
    ggn = GGN.regression(J, noise_var=1.0, prior_precision=1.0)
    out, peak = traced_peak(lambda: predictive_variance(ggn, G))
    sub = subnetwork_variance(ggn, G, np.arange(0, p, 2))
    assert peak < 6 * J.nbytes  # a p×p float64 matrix would be 5000× J.nbytes
    # check against the small-N identity gᵀΩ⁻¹g = gᵀg − gᵀJᵀ(I + JJᵀ)⁻¹Jg (V = I)
    K = np.eye(n) + J @ J.T
    A = J @ G.T
    ref = np.sum(G * G, axis=1) - np.sum(A * np.linalg.solve(K, A), axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    assert np.all(sub <= out * (1 + 1e-12))  # Theorem 1: the sub-network underestimates


@pytest.mark.parametrize(("n", "p"), [(400, 30_000), (3000, 1500)], ids=["woodbury", "dense"])
def test_float32_inputs_are_widened_a_tile_at_a_time(n, p):
    """Float32 J_w and G are accumulated in float64 without a float64 copy of either: the
    traced peak stays below the 2·J.nbytes such a copy alone would take, while the result
    equals the float64 computation on the same float32 numbers."""
    rng = np.random.default_rng(5)
    J = (rng.standard_normal((n, p)) / np.sqrt(p)).astype(np.float32)
    G = (rng.standard_normal((20, p)) / np.sqrt(p)).astype(np.float32)
    ggn = GGN.regression(J, noise_var=0.5, prior_precision=2.0)
    out, peak = traced_peak(lambda: predictive_variance(ggn, G))
    assert out.dtype == np.float32
    ref = predictive_variance(
        GGN.regression(J.astype(np.float64), noise_var=0.5, prior_precision=2.0),
        G.astype(np.float64),
    )
    np.testing.assert_allclose(out, ref, rtol=2e-7)  # float32 rounding of the result only
    held = 8 * min(n, p) ** 2 + 8 * G.shape[0] * min(n, p)  # the float64 kernel and solves
    assert peak < held + 2 * J.nbytes, (peak, held, J.nbytes)


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda g, G: predictive_variance(g, G[:, :5]), ValueError, "G_test"),
        (lambda g, G: predictive_variance(g, G[0]), ValueError, "G_test"),
        (lambda g, G: predictive_variance(g, np.where(G > 0, np.nan, G)), ValueError, "G_test"),
        (lambda g, G: predictive_variance(g.dense(), G), TypeError, "ggn"),
        (lambda g, G: subnetwork_variance(g, G, [1, 1]), ValueError, "S"),
        (lambda g, G: subnetwork_variance(g, G, [0, 10]), ValueError, "S"),
        (lambda g, G: subnetwork_variance(g, G, []), ValueError, "S"),
        (lambda g, G: subnetwork_variance_path(g, G, [0, 1, 2], [4]), ValueError, "ks"),
        (lambda g, G: subnetwork_variance_path(g, G, [0, 1, 2], [0]), ValueError, "ks"),
        (lambda g, G: subnetwork_variance_path(g, G, [0, 1, 2], [1.5]), ValueError, "ks"),
        (lambda g, G: subnetwork_variance_path(g, G, [0, 0], [1]), ValueError, "order"),
        (lambda g, G: wasserstein_gap(np.ones(3), np.ones(2)), ValueError, "var_full"),
        (lambda g, G: wasserstein_gap(-np.ones(2), np.ones(2)), ValueError, "var_full"),
        (lambda g, G: wasserstein_gap(np.ones(2), np.ones(2), noise_var=-1), ValueError, "noise"),
        (lambda g, G: coverage(np.ones(2), np.ones(3), np.ones(2)), ValueError, "f_ref"),
        (lambda g, G: coverage(np.ones(2), np.ones(2), np.ones(2), z=0), ValueError, "z"),
    ],
)
def test_bad_input(call, exc, name):
    ggn = GGN(np.ones((2, 10)), 1.0)
    with pytest.raises(exc, match=name):
        call(ggn, np.ones((3, 10)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_streamed_predictive_equals_the_assembled_one(backend, dtype):
    rng = np.random.default_rng(11)
    J, V = random_problem(rng, 9, 50)
    G = rng.standard_normal((4, 50))
    ggn = GGN.regression(backend(J.astype(dtype)), noise_var=1.0, prior_precision=backend(V))
    ref = host(predictive_variance(ggn, backend(G.astype(dtype))))
    cuts = [0, 7, 8, 30, 50]  # uneven blocks, one of a single column
    blocks = (
        (backend(J[:, a:b].astype(dtype)), backend(V[a:b]), backend(G[:, a:b].astype(dtype)))
        for a, b in itertools.pairwise(cuts)
    )
    got = host(streamed_predictive_variance(blocks))
    assert got.dtype == dtype
    exact = _quad(G, J.T @ J + np.diag(V))
    np.testing.assert_allclose(got, exact, rtol=1e-10 if dtype == np.float64 else 1e-5)
    np.testing.assert_allclose(got, ref, rtol=1e-10 if dtype == np.float64 else 1e-5)


def test_streamed_predictive_rejects_inconsistent_blocks():
    J = np.ones((3, 4))
    with pytest.raises(ValueError, match="at least one block"):
        streamed_predictive_variance([])
    with pytest.raises(ValueError, match="block 0 has 4 columns"):
        streamed_predictive_variance([(J, np.ones(3), np.ones((2, 4)))])
    with pytest.raises(ValueError, match="block 1 has 2 rows"):
        streamed_predictive_variance(
            [(J, np.ones(4), np.ones((2, 4))), (np.ones((2, 4)), np.ones(4), np.ones((2, 4)))]
        )
