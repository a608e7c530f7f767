"""LowRankLaplace against the dense linearized-Laplace predictive and log-determinant."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.lowrank import LowRankLaplace
from laplace_lab.numerics.thick_restart import eigsh
from tests.numerics.conftest import host


def _problem(seed: int = 0, N: int = 12, p: int = 40, n_test: int = 7):
    rng = np.random.default_rng(seed)
    Jw = rng.standard_normal((N, p)) * np.geomspace(3.0, 0.1, N)[:, None]
    V = rng.uniform(0.5, 2.0, p)
    G = rng.standard_normal((n_test, p))
    return Jw, V, G


def _dense_pv(Jw, V, G, U=None, lam=None):
    Omega = np.diag(V) + (Jw.T @ Jw if U is None else (U * lam) @ U.T)
    return np.einsum("ij,ji->i", G, np.linalg.solve(Omega, G.T)), np.linalg.slogdet(Omega)[1]


def test_full_rank_equals_dense_predictive_and_logdet():
    Jw, V, G = _problem()
    lr = LowRankLaplace.from_factor(Jw, V, 12, rng=np.random.default_rng(1))
    pv, logdet = _dense_pv(Jw, V, G)
    np.testing.assert_allclose(lr.predictive_variance(G), pv, rtol=1e-10)
    np.testing.assert_allclose(lr.logdet(), logdet, rtol=1e-12)
    assert lr.rank == 12 and lr.lanczos.converged


@pytest.mark.parametrize("r", [1, 3, 6, 11])
def test_truncated_rank_equals_dense_rank_r_reference(r):
    Jw, V, G = _problem()
    lr = LowRankLaplace.from_factor(Jw, V, r, rng=0)
    lam, U = np.linalg.eigh(Jw.T @ Jw)
    pv, logdet = _dense_pv(Jw, V, G, U[:, ::-1][:, :r], lam[::-1][:r])
    np.testing.assert_allclose(lr.predictive_variance(G), pv, rtol=1e-9)
    np.testing.assert_allclose(lr.logdet(), logdet, rtol=1e-12)


def test_predictive_variance_decreases_monotonically_to_the_full_one():
    Jw, V, G = _problem(seed=3)
    full, _ = _dense_pv(Jw, V, G)
    curves = np.array(
        [LowRankLaplace.from_factor(Jw, V, r, rng=0).predictive_variance(G) for r in range(1, 16)]
    )
    steps = np.diff(curves, axis=0)
    assert np.all(steps <= 1e-12 * full)  # non-increasing in r
    assert np.all(curves[0] > full * (1 + 1e-6))  # rank 1 is strictly above the full one
    # from r = rank(J_w) = 12 on it equals the full predictive variance
    np.testing.assert_allclose(curves[11:], np.broadcast_to(full, curves[11:].shape), rtol=1e-9)


def test_from_ggn_reads_the_factor_and_prior():
    @dataclass(frozen=True)
    class FakeGGN:
        Jw: np.ndarray
        prior_precision: np.ndarray

    Jw, V, G = _problem()
    a = LowRankLaplace.from_ggn(FakeGGN(Jw, V), 5, rng=np.random.default_rng(0))
    b = LowRankLaplace.from_factor(Jw, V, 5, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(a.predictive_variance(G), b.predictive_variance(G))


def test_from_ggn_with_the_numerics_ggn_and_its_matvec():
    Jw, V, G = _problem(seed=8)
    ggn = GGN(Jw, V)
    lr = LowRankLaplace.from_ggn(ggn, 12, rng=0)
    np.testing.assert_allclose(lr.predictive_variance(G), _dense_pv(Jw, V, G)[0], rtol=1e-10)
    # eigsh on the GGN's own matvec (Ω = J_wᵀJ_w + V) agrees with dense eigh
    res = eigsh(ggn.matvec, 40, 4, rng=0)
    dense = np.linalg.eigvalsh(Jw.T @ Jw + np.diag(V))[::-1][:4]
    np.testing.assert_allclose(res.values, dense, rtol=0, atol=1e-10 * dense[0])


def test_isotropic_scalar_prior_and_single_test_point():
    Jw, _, G = _problem()
    lr = LowRankLaplace.from_factor(Jw, 0.7, 12, rng=0)
    pv, _ = _dense_pv(Jw, np.full(40, 0.7), G)
    np.testing.assert_allclose(lr.predictive_variance(G[2][None]), pv[2:3], rtol=1e-10)


def test_one_dimensional_test_jacobians_are_refused_like_predictive_variance():
    from laplace_lab.numerics import GGN, predictive_variance

    Jw, V, G = _problem()
    lr = LowRankLaplace.from_factor(Jw, V, 12, rng=0)
    ggn = GGN.regression(Jw, noise_var=1.0, prior_precision=V)
    for f in (lr.predictive_variance, lambda g: predictive_variance(ggn, g)):
        with pytest.raises(ValueError, match=r"G_test must have shape \(M, p\)"):
            f(G[2])


def test_backends_agree_with_dense(backend):
    Jw, V, G = _problem(seed=5)
    lr = LowRankLaplace.from_factor(backend(Jw), backend(V), 12, rng=0)
    pv = lr.predictive_variance(backend(G))
    np.testing.assert_allclose(host(pv), _dense_pv(Jw, V, G)[0], rtol=1e-9)
    np.testing.assert_allclose(lr.logdet(), _dense_pv(Jw, V, G)[1], rtol=1e-12)


@pytest.mark.parametrize("alpha", [1e-4, 1e-2, 1.0])
def test_float32_keeps_float32_accuracy_at_training_rows_under_weak_priors(alpha):
    """gᵀDg − ‖R⁻¹BᵀDg‖² cancels at g = training rows when α is small: the Woodbury factor
    is kept in float64, so float32 input loses only its own rounding (≈ 6e-8 relative),
    not the 1/α amplification of it."""
    rng = np.random.default_rng(0)
    Jw = rng.standard_normal((10, 40)).astype(np.float32)
    J = Jw.astype(np.float64)
    pv = _dense_pv(J, np.full(40, alpha), J)[0]
    lr = LowRankLaplace.from_factor(Jw, alpha, 10, rng=0)
    out = lr.predictive_variance(Jw)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, pv, rtol=20 * np.finfo(np.float32).eps)


def test_bad_input_is_rejected_with_the_argument_named():
    Jw, V, G = _problem()
    with pytest.raises(ValueError, match="rank must be in"):
        LowRankLaplace.from_factor(Jw, V, 41, rng=0)
    with pytest.raises(TypeError, match="rank must be an integer"):
        LowRankLaplace.from_factor(Jw, V, 2.5, rng=0)
    with pytest.raises(ValueError, match="prior_precision must be positive"):
        LowRankLaplace.from_factor(Jw, -V, 3, rng=0)
    with pytest.raises(ValueError, match="prior_precision must be a scalar"):
        LowRankLaplace.from_factor(Jw, V[:5], 3, rng=0)
    with pytest.raises(ValueError, match="Jw must be finite"):
        LowRankLaplace.from_factor(np.full((3, 4), np.nan), 1.0, 2, rng=0)
    with pytest.raises(ValueError, match="Jw must be a non-empty 2-D"):
        LowRankLaplace.from_factor(np.ones(4), 1.0, 2, rng=0)
    with pytest.raises(TypeError, match="ggn must have attribute"):
        LowRankLaplace.from_ggn(object(), 2, rng=0)
    lr = LowRankLaplace.from_factor(Jw, V, 3, rng=0)
    with pytest.raises(ValueError, match="G_test must have shape"):
        lr.predictive_variance(G[:, :10])


@pytest.mark.parametrize("r", [3, 12])
def test_draws_have_the_covariance_of_the_low_rank_posterior(r, backend):
    # the linear map [z, z_r] ↦ Δθ, read off from identity inputs: T Tᵀ = Ω_r⁻¹ with
    # Ω_r = U diag(λ) Uᵀ + V of the exact top-r eigenpairs, on a non-isotropic V
    Jw, V, _ = _problem(seed=2)
    lr = LowRankLaplace.from_factor(backend(Jw), backend(V), r, rng=0)
    p = V.size
    T = np.vstack(
        [
            host(lr.draws(backend(np.eye(p)), backend(np.zeros((p, r))))),
            host(lr.draws(backend(np.zeros((r, p))), backend(np.eye(r)))),
        ]
    ).T
    lam, U = np.linalg.eigh(Jw.T @ Jw)
    U, lam = U[:, ::-1][:, :r], lam[::-1][:r]
    exact = np.linalg.inv(np.diag(V) + (U * lam) @ U.T)
    np.testing.assert_allclose(T @ T.T, exact, rtol=0, atol=1e-10 * np.abs(exact).max())


def test_draws_name_a_misshapen_argument():
    Jw, V, _ = _problem()
    lr = LowRankLaplace.from_factor(Jw, V, 3, rng=0)
    with pytest.raises(ValueError, match="z must have shape"):
        lr.draws(np.zeros((2, 5)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="z_rank must have shape"):
        lr.draws(np.zeros((2, V.size)), np.zeros((2, 4)))
