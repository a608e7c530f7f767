"""Validation tolerances follow the dtype: float32 roundoff passes, float64 is unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab._checks import (
    PSD_RTOL,
    ROUNDOFF_ULPS,
    SYMMETRY_RTOL,
    as_psd_matrix,
    dtype_eps,
)
from laplace_lab.numerics import ipv as numerics_ipv
from laplace_lab.theory import ipv


def _float32_weighted_gram(seed: int = 0) -> torch.Tensor:
    """Λ^C = (G·u)ᵀG / N in float32 (N < p, so rank-deficient): the classification Λ of
    Appendix A.3 as torch computes it. Its rounding leaves it non-symmetric and indefinite
    at the float32 level."""
    g = torch.Generator().manual_seed(seed)
    G = torch.randn(6, 14, generator=g) * torch.logspace(0, 2, 14)
    u = torch.rand(6, generator=g) * 0.25
    return (G * u[:, None]).T @ G / 6


def test_float32_gram_is_beyond_float64_roundoff_but_accepted():
    L = _float32_weighted_gram()
    A = L.double().numpy()
    scale = np.abs(A).max()
    eig = np.linalg.eigvalsh(0.5 * (A + A.T))
    # the float64 rule would refuse it: asymmetric and indefinite beyond 1e-10 relative
    assert np.abs(A - A.T).max() > SYMMETRY_RTOL * scale
    assert eig[0] < -PSD_RTOL * eig[-1]
    # ... and it is only float32 roundoff, so the float32 rule accepts it
    out = as_psd_matrix(L)
    assert out.dtype == np.float64 and np.array_equal(out, out.T)
    lam, Q = np.linalg.eigh(0.5 * (A + A.T))
    nearest_psd = (Q * np.clip(lam, 0.0, None)) @ Q.T  # differs from Λ by float32 roundoff
    exact = ipv(0.5 * (nearest_psd + nearest_psd.T), [0, 3, 7], n=50, noise_var=0.5)
    assert ipv(L, [0, 3, 7], n=50, noise_var=0.5) == pytest.approx(exact, rel=1e-6)
    got = float(numerics_ipv(L, [0, 3, 7], n=50, noise_var=0.5))
    assert got == pytest.approx(exact, rel=1e-4)  # evaluated in float32


def test_float64_tolerances_are_unchanged():
    A = np.array([[2.0, 1.0], [1.0, 2.0]])
    as_psd_matrix(A + np.array([[0.0, 1e-11], [0.0, 0.0]]))  # 5e-12 relative: roundoff
    with pytest.raises(ValueError, match="Lam must be symmetric"):
        as_psd_matrix(A + np.array([[0.0, 1e-9], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="positive semi-definite"):
        as_psd_matrix(np.diag([1.0, -1e-9]))
    as_psd_matrix(np.diag([1.0, -1e-11]))
    assert dtype_eps(np.int64) == dtype_eps(np.float64)  # integers are exact


def test_float32_rule_still_refuses_what_is_not_roundoff():
    rtol32 = ROUNDOFF_ULPS * dtype_eps(np.float32)
    assert rtol32 == pytest.approx(4.88e-4, rel=1e-3)
    B = np.array([[1.0, 0.5], [0.5 + 2e-3, 1.0]], dtype=np.float32)
    with pytest.raises(ValueError, match=r"pass the symmetric part \(Lam \+ Lam.T\) / 2"):
        as_psd_matrix(B)
    with pytest.raises(ValueError, match="positive semi-definite"):
        as_psd_matrix(np.diag([1.0, -1e-3]).astype(np.float32))


def test_grossly_asymmetric_input_gets_no_symmetrisation_hint():
    with pytest.raises(ValueError, match="Lam must be symmetric") as err:
        as_psd_matrix(np.array([[1.0, 0.0], [1.0, 1.0]]))
    assert "symmetric part" not in str(err.value)
