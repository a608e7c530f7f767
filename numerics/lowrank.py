"""Low-rank Laplace: the top-r eigenpairs of the GGN's likelihood part plus the exact prior.

``Ω ≈ Ω_r = U diag(λ) Uᵀ + V`` with (λ, U) the top-r Ritz pairs of ``J_wᵀ J_w`` from
:func:`laplace_lab.numerics.thick_restart.eigsh` and V the diagonal prior precision
(docs/mathematics.md, "Low-rank Laplace"). The predictive variance and the log-determinant
follow from Woodbury on an r × r system with B = U diag(λ)^{1/2} and D = V⁻¹ (never a
p × p matrix, never an explicit inverse)::

    Ω_r⁻¹ = D − D B (I_r + Bᵀ D B)⁻¹ Bᵀ D,      gᵀ Ω_r⁻¹ g = gᵀ D g − ‖R⁻¹ Bᵀ D g‖²,
    log det Ω_r = Σ_i log V_i + 2 Σ_j log R_jj,   R = chol(I_r + Bᵀ D B).

Because Ω_r ⪯ Ω_{r+1} ⪯ Ω, the predictive variance decreases monotonically in r and equals
the full one once r reaches rank(J_w).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from array_api_compat import array_namespace

from laplace_lab._checks import positive_int, subset_size
from laplace_lab.numerics._arrays import Space, as_matrix, to_host
from laplace_lab.numerics.backend import as_float, cholesky, solve_triangular
from laplace_lab.numerics.ggn import prior_vector
from laplace_lab.numerics.thick_restart import EigshResult, eigsh

__all__ = ["LowRankLaplace"]

Array = Any


@dataclass(frozen=True, eq=False)
class LowRankLaplace:
    """Ω_r = U diag(λ) Uᵀ + V with the r×r Woodbury factor precomputed.

    Build with :meth:`from_factor` (a weighted Jacobian), :meth:`from_matvec` (the product
    v ↦ J_wᵀJ_w v alone) or :meth:`from_ggn` (a ``GGN`` or a ``NetworkGGN``).

    Attributes
    ----------
    eigenvalues : ndarray, shape (r,)
        λ, the top-r eigenvalues of ``J_wᵀ J_w`` (host, descending, clipped at 0).
    eigenvectors : array, shape (p, r)
        U (backend of ``J_w``).
    prior_precision : array, shape (p,)
        V, the diagonal prior precision.
    lanczos : EigshResult
        Diagnostics of the eigensolve (matvecs, restarts, residuals, convergence).
    """

    eigenvalues: np.ndarray
    eigenvectors: Array
    prior_precision: Array
    lanczos: EigshResult
    _B: Array  # U diag(λ)^{1/2}, float64
    _R: Array  # chol(I + Bᵀ D B), lower, r × r, float64 (backend dispatch of numerics.backend)

    @classmethod
    def from_factor(
        cls,
        Jw: Array,
        prior_precision: Array | float,
        rank: int,
        *,
        rng: np.random.Generator | int,
        tol: float | None = None,
    ) -> LowRankLaplace:
        """Low-rank Laplace from the weighted Jacobian J_w (N' × p) and the prior precision.

        Parameters
        ----------
        Jw : array, shape (N', p)
            Weighted Jacobian: Ω = J_wᵀ J_w + V (docs/mathematics.md, "Gauss–Newton
            precision").
        prior_precision : float or array, shape (p,)
            V (positive).
        rank : int
            r in [1, p]: number of eigenpairs of J_wᵀ J_w (matrix-free :func:`eigsh`).
        rng : numpy.random.Generator or int
            Source of the Lanczos start and restart vectors (a seed gives a deterministic
            result).
        tol : float, optional
            Relative residual tolerance of :func:`eigsh`.
        """
        Jw = as_matrix(Jw, "Jw")
        p = int(Jw.shape[1])
        rank = subset_size(rank, p, "rank", low=1)
        V = prior_vector(prior_precision, p, Jw)
        res = eigsh(lambda v: Jw.T @ (Jw @ v), p, int(rank), which="LA", rng=rng, tol=tol, like=Jw)
        return cls._build(res.values, res.vectors, V, res)

    @classmethod
    def from_matvec(
        cls,
        matvec: Any,
        p: int,
        prior_precision: Array | float,
        rank: int,
        *,
        rng: np.random.Generator | int,
        tol: float | None = None,
    ) -> LowRankLaplace:
        """Low-rank Laplace from the product v ↦ J_wᵀJ_w v alone (matrix-free).

        The top-``rank`` eigenpairs of the likelihood part J_wᵀJ_w of Ω = J_wᵀJ_w + V by the
        thick-restart :func:`eigsh`, which calls ``matvec`` on host float64 vectors of shape
        (p,), ``lanczos.num_matvecs`` times in all (its symmetry probe included).

        Parameters
        ----------
        matvec : callable
            ``v ↦ J_wᵀ J_w v`` for v of shape (p,) (symmetric positive semi-definite; the
            prior is not part of it).
        p : int
            The number of parameters.
        prior_precision : float or array, shape (p,)
            V (positive).
        rank : int
            r in [1, p].
        rng : numpy.random.Generator or int
            Source of the Lanczos start and restart vectors.
        tol : float, optional
            Relative residual tolerance of :func:`eigsh`.
        """
        p = positive_int(p, "p")
        rank = subset_size(rank, p, "rank", low=1)
        V = prior_vector(prior_precision, p, np.zeros(1))
        res = eigsh(matvec, p, int(rank), which="LA", rng=rng, tol=tol)
        return cls._build(res.values, res.vectors, V, res)

    @classmethod
    def from_ggn(
        cls, ggn: Any, rank: int, *, rng: np.random.Generator | int, tol: float | None = None
    ) -> LowRankLaplace:
        """Low-rank Laplace of a GGN: a factor ``Jw`` with ``prior_precision``, or a
        :class:`~.network_ggn.NetworkGGN`.

        An object with ``Jw`` goes through :meth:`from_factor`. A ``NetworkGGN`` (no J_w to
        read) goes through :meth:`from_matvec` with its streamed likelihood product
        ``ggn.matvec(v, include_prior=False)`` and its ``prior_precision``: each Lanczos
        product is one pass over the network's data (none of the model once the layer
        signals of a Linear-layer network are kept; :meth:`NetworkGGN.matvec`'s Notes), and
        the eigenvectors are host float64 arrays.

        Parameters
        ----------
        ggn : GGN or NetworkGGN
        rank : int
            r in [1, p].
        rng : numpy.random.Generator or int
            Source of the Lanczos start and restart vectors.
        tol : float, optional
            Relative residual tolerance of :func:`eigsh`.
        """
        from laplace_lab.numerics.network_ggn import NetworkGGN

        if isinstance(ggn, NetworkGGN):

            def likelihood_part(v: Any) -> Any:
                return ggn.matvec(v, include_prior=False)

            return cls.from_matvec(
                likelihood_part, ggn.p, ggn.prior_precision, rank, rng=rng, tol=tol
            )
        for attr in ("Jw", "prior_precision"):
            if not hasattr(ggn, attr):
                raise TypeError(
                    f"ggn must have attribute {attr!r} or be a NetworkGGN; got "
                    f"{type(ggn).__name__}"
                )
        return cls.from_factor(ggn.Jw, ggn.prior_precision, rank, rng=rng, tol=tol)

    @classmethod
    def _build(cls, values: np.ndarray, U: Array, V: Array, res: EigshResult) -> LowRankLaplace:
        lam = np.clip(np.asarray(values, dtype=np.float64), 0.0, None)
        # the Woodbury factor in float64 whatever the eigenpairs' dtype: gᵀDg − ‖R⁻¹BᵀDg‖²
        # cancels for g near the span of U (docs/numerical-hazards.md, "Float32 Woodbury
        # cancellation")
        xp = array_namespace(U)
        U64 = xp.astype(U, xp.float64)
        B = U64 * Space(int(U.shape[0]), None, U64).asarray(np.sqrt(lam))
        K = B.T @ (B / xp.astype(V, xp.float64)[:, None])
        K = 0.5 * (K + K.T) + xp.eye(lam.size, dtype=K.dtype, device=getattr(K, "device", None))
        return cls(lam, U, V, res, B, cholesky(K))

    @property
    def rank(self) -> int:
        """r, the number of eigenpairs kept."""
        return int(self.eigenvalues.size)

    def predictive_variance(self, G_test: Array) -> Array:
        """``g(x*)ᵀ Ω_r⁻¹ g(x*)`` for each row g(x*)ᵀ of ``G_test`` (Woodbury, module doc).

        Parameters
        ----------
        G_test : array, shape (n_test, p)
            Jacobians g(x*)ᵀ at the test points (same backend as J_w); one test point is
            ``G_test[None]``, as for :func:`laplace_lab.numerics.predictive_variance`.

        Returns
        -------
        array, shape (n_test,)
        """
        G = as_float(G_test, "G_test")
        xp = array_namespace(G)
        p = int(self.prior_precision.shape[0])
        if len(G.shape) != 2 or int(G.shape[1]) != p or int(G.shape[0]) == 0:
            raise ValueError(
                f"G_test must have shape (M, p) with p={p}; got {tuple(G.shape)}"
                + (" (one test point is G_test[None])" if len(G.shape) == 1 else "")
            )
        G64 = xp.astype(G, xp.float64)  # evaluated in float64, returned in G's dtype
        GD = G64 / xp.astype(self.prior_precision, xp.float64)
        prior_part = xp.sum(GD * G64, axis=1)
        W = solve_triangular(self._R, self._B.T @ GD.T, lower=True)  # r × n_test
        return xp.astype(prior_part - xp.sum(W * W, axis=0), G.dtype)

    def draws(self, z: Array, z_rank: Array) -> Array:
        """Δθ ~ N(0, Ω_r⁻¹) from standard normal ``z`` (n, p) and ``z_rank`` (n, r), float64
        in the eigenpairs' backend (NumPy draws are moved there).

        Perturbation and solve: y = V^{1/2} z + B z_r has covariance V + B Bᵀ = Ω_r, so
        Ω_r⁻¹ y has covariance Ω_r⁻¹; Ω_r⁻¹ y = D y − D B R⁻ᵀ R⁻¹ Bᵀ D y by the Woodbury
        factor above (docs/mathematics.md, "Sampling the structured posteriors"). The map
        is linear: identity blocks for ``z`` and ``z_rank`` give its columns.

        References
        ----------
        .. [1] G. Papandreou, A. L. Yuille, "Gaussian Sampling by Local Perturbations",
           NeurIPS 2010 (perturb the terms of the precision, then solve).
        """
        xp = array_namespace(self._B)
        V = xp.astype(self.prior_precision, xp.float64)
        space = Space(int(V.shape[0]), None, self._B)  # host draws onto the eigenpairs' device
        z, z_rank = (
            space.asarray(np.asarray(a, dtype=np.float64)) if isinstance(a, np.ndarray) else a
            for a in (z, z_rank)
        )
        z, z_rank = xp.astype(z, xp.float64), xp.astype(z_rank, xp.float64)
        p, r = int(V.shape[0]), self.rank
        if len(z.shape) != 2 or int(z.shape[1]) != p:
            raise ValueError(f"z must have shape (n, {p}); got {tuple(z.shape)}")
        if tuple(z_rank.shape) != (int(z.shape[0]), r):
            raise ValueError(
                f"z_rank must have shape ({int(z.shape[0])}, {r}); got {tuple(z_rank.shape)}"
            )
        Dy = (z * xp.sqrt(V) + z_rank @ self._B.T) / V  # rows D y
        W = solve_triangular(self._R, self._B.T @ Dy.T, lower=True)
        return Dy - (solve_triangular(self._R, W, lower=True, trans=True).T @ self._B.T) / V

    def logdet(self) -> float:
        """``log det Ω_r = Σ log V_i + 2 Σ log R_jj`` (matrix determinant lemma)."""
        V = to_host(self.prior_precision)
        return float(np.sum(np.log(V)) + 2.0 * np.sum(np.log(np.diag(to_host(self._R)))))
