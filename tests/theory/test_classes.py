"""Matrix classes: C_PI, ε-diagonal dominance, random PSD with rank and condition number."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from laplace_lab.theory import (
    cpi_matrix,
    is_cpi,
    is_diagonally_dominant,
    random_cpi,
    random_diagonally_dominant,
    random_psd,
)
from laplace_lab.theory.strategies import cpi_matrices


@given(cpi_matrices())
def test_is_cpi_recovers_a_valid_decomposition(Lam):
    dec = is_cpi(Lam)
    assert dec is not None
    assert np.all(dec.d > 0) and dec.a >= 0 and dec.a + Lam.shape[0] * dec.b >= -1e-12
    np.testing.assert_allclose(cpi_matrix(dec.d, dec.a, dec.b), Lam, rtol=0, atol=1e-12)


def test_cpi_with_negative_b_is_psd_and_recognised():
    p = 6
    Lam = cpi_matrix(np.full(p, 0.2), a=1.2, b=-1.2 / p)  # C = a(I − 11ᵀ/p): singular PSD
    assert np.linalg.eigvalsh(Lam)[0] == pytest.approx(0.2)
    dec = is_cpi(Lam)
    assert dec is not None and dec.b == pytest.approx(-0.2)


def test_not_cpi_when_off_diagonals_differ():
    Lam = random_psd(5, rng=np.random.default_rng(0))
    assert is_cpi(Lam) is None
    # Equal off-diagonals and diag − b > 0 everywhere: in C_PI even with a small entry.
    Lam = 0.9 * np.ones((3, 3)) + np.diag([0.0, 0.5, 0.5]) + 1e-3 * np.eye(3)
    assert is_cpi(Lam) is not None
    assert is_cpi(np.ones((3, 3))) is None  # diag − b = 0: no d > 0


def test_is_cpi_is_scale_free():
    rng = np.random.default_rng(9)
    not_cpi = random_psd(4, rng=rng)
    assert is_cpi(1e-11 * not_cpi) is None
    Lam = random_cpi(5, rng=rng)
    assert is_cpi(1e6 * Lam) is not None and is_cpi(1e-9 * Lam) is not None


def test_cpi_matrix_rejects_non_psd_c():
    with pytest.raises(ValueError, match="a ≥ 0 and a \\+ p·b ≥ 0"):
        cpi_matrix([1.0, 1.0, 1.0], a=0.3, b=-0.2)
    with pytest.raises(ValueError, match="d must be positive"):
        cpi_matrix([1.0, 0.0], a=0.0, b=0.0)


def test_random_cpi_has_ties_and_negative_b():
    rng = np.random.default_rng(1)
    Lam = random_cpi(10, ties=4, negative_b=True, rng=rng)
    dec = is_cpi(Lam)
    assert dec is not None and dec.b < 0
    assert np.unique(np.diag(Lam)).size == 6


def test_diagonal_dominance_definition():
    Lam = np.array([[1.0, 0.3, -0.2], [0.3, 2.0, 0.1], [-0.2, 0.1, 1.0]])
    assert is_diagonally_dominant(Lam, 0.51)
    assert not is_diagonally_dominant(Lam, 0.5)  # row 0: 0.5·1 = 0.3 + 0.2, not strict
    with pytest.raises(ValueError, match="eps must be in"):
        is_diagonally_dominant(Lam, 1.0)


def test_random_diagonally_dominant_is_dominant_and_positive_definite():
    rng = np.random.default_rng(2)
    for eps in (0.05, 0.3, 0.9):
        Lam = random_diagonally_dominant(12, eps, fill=0.99, rng=rng)
        assert is_diagonally_dominant(Lam, eps)
        assert not is_diagonally_dominant(Lam, 0.9 * eps)  # the budget is nearly used
        np.testing.assert_array_equal(Lam, Lam.T)
        assert np.linalg.eigvalsh(Lam)[0] > 0


def test_random_psd_rank_and_condition():
    rng = np.random.default_rng(3)
    Lam = random_psd(9, rank=4, cond=1e8, rng=rng)
    eig = np.linalg.eigvalsh(Lam)
    assert np.all(np.abs(eig[:5]) < 1e-14)
    assert eig[-1] == pytest.approx(1.0) and eig[5] == pytest.approx(1e-8, rel=1e-6)
    with pytest.raises(ValueError, match="rank must be in"):
        random_psd(3, rank=4, rng=rng)
    with pytest.raises(TypeError, match="rng is required"):
        random_psd(3, rng=None)
    with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator or an integer"):
        random_psd(3, rng=0.5)
    np.testing.assert_array_equal(
        random_psd(3, rng=7), random_psd(3, rng=np.random.default_rng(7))
    )
