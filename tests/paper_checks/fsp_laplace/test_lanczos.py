"""The Lanczos-factor measurements of the FSP-Laplace check against dense closed forms."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from laplace_lab.numerics.kernels import KernelGram, Matern12
from laplace_lab.paper_checks.fsp_laplace._lanczos_factor import (
    consumed_precision_error,
    eckart_young_floor,
    lanczos_sweep,
    pinv_factor,
    summarize,
)

EPS = np.finfo(float).eps


@dataclass(frozen=True)
class DenseGram:
    """Σ as a dense matrix with the KernelGram interface (matvec, dense, diagonal)."""

    K: np.ndarray

    def matvec(self, v):
        return self.K @ v

    def dense(self):
        return self.K

    def diagonal(self):
        return np.diag(self.K).copy()


def test_pinv_factor_inverts_spd_and_pseudo_inverts_psd():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((8, 8))
    K = A @ A.T + 0.5 * np.eye(8)
    L, theta = pinv_factor(K, rcond=8 * EPS)
    np.testing.assert_allclose(L @ L.T, np.linalg.inv(K), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(theta, np.sort(np.linalg.eigvalsh(K))[::-1], rtol=1e-12)
    B = rng.standard_normal((8, 3))  # rank 3: the cut removes five zero eigenvalues
    L, _ = pinv_factor(B @ B.T, rcond=1e-10)
    assert L.shape == (8, 3)
    np.testing.assert_allclose(L @ L.T, np.linalg.pinv(B @ B.T, rcond=1e-10), atol=1e-10)


def test_pinv_factor_rejects_bad_input():
    with pytest.raises(ValueError, match="K must be a non-empty square"):
        pinv_factor(np.ones((2, 3)), rcond=1e-12)
    with pytest.raises(ValueError, match="K must be finite"):
        pinv_factor(np.full((2, 2), np.nan), rcond=1e-12)
    with pytest.raises(ValueError, match="rcond must lie in"):
        pinv_factor(np.eye(2), rcond=0.0)


def test_eckart_young_floor_is_the_truncated_svd_error_of_the_inverse():
    theta = np.array([4.0, 2.0, 1.0])  # K = diag(θ): K⁻¹ has singular values 1, 1/2, 1/4
    total = 1.0 + 0.25 + 0.0625
    assert eckart_young_floor(theta, 0, rcond=1e-12) == pytest.approx(1.0)
    assert eckart_young_floor(theta, 1, rcond=1e-12) == pytest.approx(np.sqrt(0.3125 / total))
    assert eckart_young_floor(theta, 2, rcond=1e-12) == pytest.approx(np.sqrt(0.0625 / total))
    assert eckart_young_floor(theta, 3, rcond=1e-12) == 0.0
    # The cut drops θ = 1 (≤ 0.3·4): K† = diag(1/4, 1/2, 0).
    assert eckart_young_floor(theta, 1, rcond=0.3) == pytest.approx(np.sqrt(0.0625 / 0.3125))
    with pytest.raises(ValueError, match="rank must be non-negative"):
        eckart_young_floor(theta, -1, rcond=1e-12)


def test_consumed_precision_error_equals_the_dense_p_by_p_ratio():
    rng = np.random.default_rng(1)
    J = rng.standard_normal((6, 40))  # n × p, p > n
    E = rng.standard_normal((6, 6))
    E = E + E.T
    X = rng.standard_normal((6, 6))
    X = X @ X.T
    R = np.linalg.qr(J.T, mode="r")
    dense = np.linalg.norm(J.T @ E @ J) / np.linalg.norm(J.T @ X @ J)
    assert consumed_precision_error(R, E, X) == pytest.approx(dense, rel=1e-12)


def test_full_rank_sweep_recovers_the_exact_inverse_and_algorithm_2():
    # Matérn-1/2 on a grid is a well-conditioned KMS matrix: Lanczos runs all n steps and
    # the full-rank factor gives L Lᵀ = Σ⁻¹, hence Algorithm 2 exactly.
    rng = np.random.default_rng(2)
    n, p = 20, 30
    C = np.linspace(-1, 1, n)[:, None]
    gram = KernelGram(Matern12(1.0, 0.3), C, jitter=1e-6)
    J_C = rng.standard_normal((n, p))
    Jw = rng.standard_normal((5, p))
    sw = lanczos_sweep(J_C, gram, Jw, rng.standard_normal((7, p)))
    assert sw.steps_reached == n and not sw.breakdown
    np.testing.assert_array_equal(sw.steps, np.arange(1, n + 1))
    assert sw.rank[-1] == n and sw.floor[-1] == 0.0
    assert sw.raw[-1] < 1e-8 and sw.precision[-1] < 1e-8 and sw.variance[-1] < 1e-8
    assert sw.raw[n // 2 - 1] > 0.1  # half-way the inverse is far off
    assert np.all(sw.raw >= sw.floor - 1e-12)  # no rank-r factor beats Eckart–Young


def test_sweep_on_an_invariant_subspace_matches_the_closed_form():
    # Σ = diag(θ) and J(C) supported on coordinates {0, 1}: J(C)1 ∈ span(e0, e1), an
    # invariant subspace, so Lanczos breaks down after 2 steps with L Lᵀ = diag(1/θ0, 1/θ1,
    # 0, ...). Then J(C)ᵀ L Lᵀ J(C) = J(C)ᵀ Σ⁻¹ J(C) exactly (Algorithm 2 is exact) while
    # the raw error is ‖diag(1/θ_2..)‖_F / ‖Σ⁻¹‖_F, above the Eckart–Young floor, which
    # would keep the two *smallest* θ instead.
    theta = np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.25])
    rng = np.random.default_rng(3)
    J_C = np.zeros((6, 9))
    J_C[:2] = rng.uniform(0.5, 1.5, size=(2, 9))
    sw = lanczos_sweep(J_C, DenseGram(np.diag(theta)), None, rng.standard_normal((4, 9)))
    assert sw.steps_reached == 2 and sw.breakdown
    inv_sq = theta**-2.0
    assert sw.raw[-1] == pytest.approx(np.sqrt(inv_sq[2:].sum() / inv_sq.sum()), rel=1e-10)
    assert sw.floor[-1] == pytest.approx(np.sqrt(inv_sq[:4].sum() / inv_sq.sum()), rel=1e-10)
    assert sw.precision[-1] < 1e-12 and sw.variance[-1] < 1e-10
    assert sw.truncated[-1] == 0 and sw.ratio_min[-1] == pytest.approx(1.0, abs=1e-10)


def test_a_coarser_pseudo_inverse_cut_drops_the_small_eigenvalues_on_both_sides():
    # Σ = diag(θ) with J(C)1 touching every coordinate: Lanczos runs all 4 steps. A cut at
    # 0.1·θ_max treats θ = 0.5 and 0.01 as zero, for the Ritz values (rank 2) and for Σ†
    # alike, so the factor equals the cut pseudo-inverse diag(1/10, 1/2, 0, 0).
    theta = np.array([10.0, 2.0, 0.5, 0.01])
    J_C = np.eye(4)
    J_test = np.array([[1.0, 1.0, 0.0, 0.0]])
    sw = lanczos_sweep(J_C, DenseGram(np.diag(theta)), None, J_test, rcond=0.1)
    assert sw.rcond == 0.1 and sw.steps_reached == 4
    assert sw.rank[-1] == 2 and sw.raw[-1] < 1e-12
    default = lanczos_sweep(J_C, DenseGram(np.diag(theta)), None, J_test)
    assert default.rank[-1] == 4 and default.rcond == pytest.approx(4 * EPS)


def test_summarize_reads_the_rank_the_half_point_and_the_steps_needed():
    rng = np.random.default_rng(4)
    n, p = 16, 24
    gram = KernelGram(Matern12(1.0, 0.3), np.linspace(-1, 1, n)[:, None], jitter=1e-6)
    sw = lanczos_sweep(rng.standard_normal((n, p)), gram, None, rng.standard_normal((3, p)))
    d = summarize(sw, rank_fraction=0.5, rel_tol=0.05)
    assert (d["n"], d["rank"], d["half_steps"]) == (n, n, n // 2)
    assert d["rank_ok"] is False and d["approx_ok"] is True
    ok = np.maximum(sw.precision, sw.variance) <= 0.05
    first = next(i for i in range(n) if ok[i:].all())
    assert d["steps_needed"] == sw.steps[first]
    assert d["half_raw"] == sw.raw[n // 2 - 1]
    coarse = summarize(
        lanczos_sweep(rng.standard_normal((n, p)), gram, None, np.ones((1, p)), num_points=4),
        rank_fraction=0.5,
        rel_tol=0.05,
    )
    assert coarse["half_steps"] == n // 2  # m = n_C d'/2 is always among the swept steps
    with pytest.raises(ValueError, match="max_steps must be positive"):
        lanczos_sweep(rng.standard_normal((n, p)), gram, None, np.ones((1, p)), max_steps=0)
