"""Predictive variances of the Laplace variants compared by Daxberger et al.

The variants are the diagonal Laplace and the full GGN over a grid of isotropic prior
precisions.

E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato, "Bayesian
Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689: §3 (the linearized
predictive Σ(x*) = J(x*) H̃⁻¹ J(x*)ᵀ, eq. 12), §5 (diagonal Laplace diag(H̃⁻¹) ≈ diag(H̃)⁻¹) and
§6 (prior precisions chosen by grid search).

- :func:`diagonal_laplace_variance`: g(x*)ᵀ diag(Ω)⁻¹ g(x*), the factorised ("Diag") Laplace
  posterior N(θ̂, diag(Ω)⁻¹);
- :class:`SpectralLaplace` / :func:`prior_precision_path`: g(x*)ᵀ (J_wᵀJ_w + λI)⁻¹ g(x*) and
  diag((J_wᵀJ_w + λI)⁻¹) for many λ from one eigendecomposition. With the thin SVD
  J_w = U diag(s) Wᵀ,

      gᵀ(J_wᵀJ_w + λI)⁻¹g = ‖g‖²/λ − Σ_i (u_iᵀ J_w g)² / (λ (s_i² + λ)),

  from the N′ × N′ Gram J_w J_wᵀ = U diag(s²) Uᵀ when N′ < p, or directly
  Σ_i (q_iᵀ g)² / (μ_i + λ) from J_wᵀJ_w = Q diag(μ) Qᵀ when N′ ≥ p. Each extra λ costs
  O(M · min(N′, p)); a grid search never refactorises.

Both take (M, p) or (M, C, p) test gradients and return (M,) or (M, C) (per-class diagonal of
J Ω⁻¹ Jᵀ for C outputs), like :func:`laplace_lab.numerics.predictive.predictive_variance`.
Computed in float64 on the host (the Woodbury form cancels in float32:
docs/numerical-hazards.md, "Float32 Woodbury cancellation").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import positive_float
from laplace_lab.numerics.backend import gram_blocks, to_numpy
from laplace_lab.numerics.ggn import GGN

__all__ = [
    "SpectralLaplace",
    "diagonal_laplace_variance",
    "prior_precision_path",
    "with_prior_precision",
]


def _rows(G_test: Any, p: int) -> tuple[np.ndarray, tuple[int, ...]]:
    G = np.asarray(to_numpy(G_test), dtype=np.float64)
    if G.ndim not in (2, 3) or G.shape[-1] != p or G.shape[0] == 0:
        raise ValueError(
            f"G_test must have shape (M, p) or (M, C, p) with p={p}; got {tuple(G.shape)}"
        )
    return G.reshape(-1, p), G.shape[:-1]


def with_prior_precision(ggn: GGN, prior_precision: Any) -> GGN:
    """The same GGN factor J_w with another prior precision V (a scalar means λI).

    Subnetwork priors λ_S = λ·S/D and grid searches over λ reuse one weighted Jacobian.
    """
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    return GGN(
        ggn.Jw,
        prior_precision,
        noise_var=ggn.noise_var,
        n_data=ggn.n_data,
        likelihood=ggn.likelihood,
    )


def diagonal_laplace_variance(ggn: GGN, G_test: Any) -> np.ndarray:
    """g(x*)ᵀ diag(Ω)⁻¹ g(x*): the linearized predictive of the diagonal Laplace posterior.

    Parameters
    ----------
    ggn : GGN
        Ω = J_wᵀJ_w + V; only its diagonal is used.
    G_test : (M, p) or (M, C, p) array

    Returns
    -------
    (M,) or (M, C) float64 array

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5
       (diag(H̃⁻¹) ≈ diag(H̃)⁻¹) and §6.1 ("Diag").
    """
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    G, shape = _rows(G_test, ggn.p)
    d = np.asarray(to_numpy(ggn.diagonal()), dtype=np.float64)
    return ((G * G) @ (1.0 / d)).reshape(shape)


def _lambdas(prior_precisions: Any) -> np.ndarray:
    lams = np.atleast_1d(np.asarray(prior_precisions, dtype=np.float64))
    if lams.ndim != 1 or lams.size == 0:
        raise ValueError(
            f"prior_precisions must be a non-empty sequence; got {prior_precisions!r}"
        )
    return np.array([positive_float(v, "prior_precisions") for v in lams])


class SpectralLaplace:
    """Ω(λ) = J_wᵀJ_w + λI for every isotropic λ from one eigendecomposition of the data part.

    Build it with ``SpectralLaplace(Jw)``; then :meth:`variance` and :meth:`marginal_variance`
    cost O(M · min(N′, p)) and O(p · min(N′, p)) per λ (module docstring). Host float64.

    Parameters
    ----------
    Jw : (N′, p) array
        The weighted Jacobian (``GGN.Jw``; J/σ0 for regression).

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §3 eq.
       (12), §5 eq. (23) (marginal variances) and §6 (prior precision by grid search).
    """

    def __init__(self, Jw: Any) -> None:
        J = np.asarray(to_numpy(Jw), dtype=np.float64)
        if J.ndim != 2 or J.shape[0] == 0 or not np.all(np.isfinite(J)):
            raise ValueError(f"Jw must be a finite (N', p) matrix; got shape {J.shape}")
        self.p = int(J.shape[1])
        self._gram = J.shape[0] < self.p
        if self._gram:  # J Jᵀ = U diag(s²) Uᵀ; B = Jᵀ U (p × N′)
            mu, U = np.linalg.eigh(gram_blocks(J.T))
            self._B = J.T @ U
        else:  # Jᵀ J = Q diag(μ) Qᵀ
            mu, self._B = np.linalg.eigh(gram_blocks(J))
        self._mu = np.clip(mu, 0.0, None)

    def variance(self, G_test: Any, prior_precisions: Any) -> np.ndarray:
        """gᵀΩ(λ)⁻¹g for every λ: (L, M) or (L, M, C) for (M, p) or (M, C, p) gradients."""
        lams = _lambdas(prior_precisions)
        G, shape = _rows(G_test, self.p)
        proj2 = (G @ self._B) ** 2  # (u_iᵀ J g)² or (q_iᵀ g)²
        if self._gram:
            g2 = np.sum(G * G, axis=1)
            out = np.stack([g2 / lam - proj2 @ (1.0 / (lam * (self._mu + lam))) for lam in lams])
        else:
            out = np.stack([proj2 @ (1.0 / (self._mu + lam)) for lam in lams])
        return np.clip(out, 0.0, None).reshape((lams.size, *shape))

    def log_evidence(self, prior_precisions: Any, theta_norm2: float) -> np.ndarray:
        """The λ-dependent part of the Laplace log marginal likelihood at the MAP θ̂, per λ.

        log p(D | λ) ≈ log p(D | θ̂) + log N(θ̂; 0, λ⁻¹I) − ½ log|Ω(λ)/(2π)| reduces, up to
        terms free of λ, to ½ Σ_i [log λ − log(μ_i + λ)] − λ‖θ̂‖²/2 over the min(N′, p)
        eigenvalues μ_i of the data part (the other directions of Ω(λ) are λ itself)
        (MacKay 1992; the evidence that tunes λ in Immer et al. 2021).

        Parameters
        ----------
        prior_precisions : sequence of float
        theta_norm2 : float
            ‖θ̂‖² of the MAP parameters.
        """
        lams = _lambdas(prior_precisions)
        t2 = float(theta_norm2)
        if not np.isfinite(t2) or t2 < 0:
            raise ValueError(f"theta_norm2 must be finite and non-negative; got {theta_norm2!r}")
        return np.array(
            [0.5 * np.sum(np.log(lam) - np.log(self._mu + lam)) - 0.5 * lam * t2 for lam in lams]
        )

    def marginal_variance(self, prior_precision: float) -> np.ndarray:
        """diag(Ω(λ)⁻¹) (p,): the exact posterior marginal variances of eq. (23) of [1]_."""
        lam = positive_float(prior_precision, "prior_precision")
        if self._gram:
            return 1.0 / lam - (self._B**2) @ (1.0 / (lam * (self._mu + lam)))
        return (self._B**2) @ (1.0 / (self._mu + lam))


def prior_precision_path(Jw: Any, G_test: Any, prior_precisions: Any) -> np.ndarray:
    """g(x*)ᵀ (J_wᵀJ_w + λI)⁻¹ g(x*) for every λ in ``prior_precisions``, one factorisation.

    Parameters
    ----------
    Jw : (N′, p) array
        The weighted Jacobian (``GGN.Jw``; J/σ0 for regression).
    G_test : (M, p) or (M, C, p) array
        Test gradients.
    prior_precisions : sequence of float
        Isotropic prior precisions λ > 0.

    Returns
    -------
    (L, M) or (L, M, C) float64 array
        Row i holds the epistemic variances under λ = ``prior_precisions[i]``.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §3 eq.
       (12) and §6 (prior precision by grid search).
    """
    return SpectralLaplace(Jw).variance(G_test, prior_precisions)
