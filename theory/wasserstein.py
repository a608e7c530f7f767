"""2-Wasserstein distances between the full and a sub-network Gaussian posterior.

E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato, "Bayesian
Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5, eqs. (22)–(23):

    W2(N(ŵ, Σ), N(ŵ, Σ_S+))² = Tr(Σ + Σ_S+ − 2 (Σ_S+^{1/2} Σ Σ_S+^{1/2})^{1/2})     (22)
                             ≈ Σ_{d ∉ S} σ_d²                                          (23)

Σ = Ω⁻¹ is the full linearized-Laplace covariance and Σ_S+ the sub-network covariance padded
with zeros. The paper's sub-network posterior uses the *conditional* covariance Ω_SS⁻¹ (the
GGN of the sub-network, eq. 15); the *marginal* block (Ω⁻¹)_SS is the other natural choice.
For the marginal, (23) is exact for every positive definite Ω, not only under the paper's
independence assumption: the cross term of (22) then equals Tr(Σ_SS), so (22) reduces to
Tr(Σ) − Tr(Σ_SS) = Σ_{d ∉ S} σ_d². For the conditional covariance (22) has been larger than
(23) in every case sampled (docs/mathematics.md, "Wasserstein subnetwork selection").
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from laplace_lab._checks import as_psd_matrix, subset

__all__ = ["gaussian_w2", "psd_sqrt", "subnetwork_covariance", "subnetwork_w2", "w2_diagonal"]


def psd_sqrt(A: np.ndarray) -> np.ndarray:
    """The PSD square root of a symmetric PSD matrix (eigh; roundoff-negative eigenvalues → 0)."""
    w, Q = np.linalg.eigh(0.5 * (A + A.T))
    return (Q * np.sqrt(np.clip(w, 0.0, None))) @ Q.T


def gaussian_w2(mean1: np.ndarray, cov1: np.ndarray, mean2: np.ndarray, cov2: np.ndarray) -> float:
    """W2 between N(mean1, cov1) and N(mean2, cov2) (covariances PSD, possibly singular).

    W2² = ‖m1 − m2‖² + Tr(Σ1 + Σ2 − 2 (Σ2^{1/2} Σ1 Σ2^{1/2})^{1/2}) (Givens & Shortt 1984;
    [1]_ eq. 22 with equal means).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (22).
    """
    m1, m2 = np.asarray(mean1, float), np.asarray(mean2, float)
    if m1.shape != m2.shape or m1.ndim != 1:
        raise ValueError(
            f"mean1 and mean2 must be vectors of one length; got {m1.shape}, {m2.shape}"
        )
    S1, S2 = as_psd_matrix(cov1, "cov1"), as_psd_matrix(cov2, "cov2")
    if S1.shape != (m1.size, m1.size) or S2.shape != S1.shape:
        raise ValueError(f"cov1 and cov2 must be {m1.size}×{m1.size}; got {S1.shape}, {S2.shape}")
    r2 = psd_sqrt(S2)
    cross = np.trace(psd_sqrt(r2 @ S1 @ r2))
    value = float(np.sum((m1 - m2) ** 2) + np.trace(S1) + np.trace(S2) - 2 * cross)
    return float(np.sqrt(max(value, 0.0)))


def subnetwork_covariance(
    Omega: object, S: object, *, kind: Literal["conditional", "marginal"] = "conditional"
) -> np.ndarray:
    """Σ_S+: the sub-network covariance padded with zeros to p×p.

    ``kind="conditional"``: Ω_SS⁻¹ (the sub-network GGN-Laplace posterior, eq. 15–16);
    ``kind="marginal"``: (Ω⁻¹)_SS (the marginal of the full posterior).
    """
    O = as_psd_matrix(Omega, "Omega")
    idx = subset(S, O.shape[0])
    if kind == "conditional":
        block = np.linalg.inv(O[np.ix_(idx, idx)]) if idx.size else np.zeros((0, 0))
    elif kind == "marginal":
        block = np.linalg.inv(O)[np.ix_(idx, idx)]
    else:
        raise ValueError(f"kind must be 'conditional' or 'marginal'; got kind={kind!r}")
    out = np.zeros_like(O)
    out[np.ix_(idx, idx)] = block
    return out


def subnetwork_w2(
    Omega: object, S: object, *, kind: Literal["conditional", "marginal"] = "conditional"
) -> float:
    """W2 of eq. (22) of [1]_ between N(ŵ, Ω⁻¹) and the sub-network posterior N(ŵ, Σ_S+).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (22).
    """
    O = as_psd_matrix(Omega, "Omega")
    zero = np.zeros(O.shape[0])
    return gaussian_w2(zero, np.linalg.inv(O), zero, subnetwork_covariance(O, S, kind=kind))


def w2_diagonal(marginal_variances: object, S: object) -> float:
    """W2 of eq. (23) of [1]_: √(Σ_{d∉S} σ_d²), the independence approximation of eq. (22).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (23).
    """
    var = np.asarray(marginal_variances, dtype=np.float64)
    if var.ndim != 1 or np.any(~np.isfinite(var)) or np.any(var < 0):
        raise ValueError("marginal_variances must be a vector of finite non-negative variances")
    mask = np.ones(var.size, dtype=bool)
    mask[subset(S, var.size)] = False
    return float(np.sqrt(var[mask].sum()))
