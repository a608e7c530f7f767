"""FSP-Laplace: linearized Laplace under a Gaussian-process prior.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711, §3 (docs/mathematics.md, "FSP-Laplace (Algorithm 2)"):

- :func:`rkhs_norm_estimate` — the context-point estimate of eq. (3.7),
  ``(f(C) − μ(C))ᵀ Σ(C, C)⁻¹ (f(C) − μ(C)) = ‖h_C‖²_H ≤ ‖f − μ‖²_H``.
- :func:`fsp_laplace` — Algorithm 2, steps 2–9, matrix-free in p: Lanczos on the kernel
  Gram Σ(C, C) from ``J(C)1/‖J(C)1‖`` (:func:`laplace_lab.numerics.krylov.lanczos_inverse_sqrt`),
  ``M = J(C)ᵀL``, thin SVD, the r × r matrix A of eq. (3.9), its eigendecomposition, the
  square root ``S = U_M U_A D_A^{†/2}`` and the truncation of step 9 so that marginal
  variances at the context points do not exceed the prior's.
- :func:`dropped_terms` — what eq. (3.9) drops: ``‖P₀ΛP₀‖_F/‖Λ‖_F`` (Table C.2) and the
  cross terms ``‖PΛP₀ + P₀ΛP‖_F/‖Λ‖_F`` that the decomposition ``Λ = PΛP + P₀ΛP₀``
  omits (they are not zero in general: the likelihood part of Λ is not confined to
  range(M)).

Sign convention. Eq. (3.8) writes ``Λ = Σ† − Σ_i J_iᵀ H_i J_i`` with H_i the Hessian of the
*log*-likelihood (negative semi-definite). Here the likelihood curvature is passed as the
weighted Jacobian J_w of the GGN, ``Σ_i J_iᵀ(−H_i)J_i = J_wᵀJ_w`` (docs/mathematics.md,
"Gauss–Newton precision"), so step 6 reads ``A = D_M² + (J_w U_M)ᵀ(J_w U_M)`` — positive
semi-definite by construction, which a reading of H_i as the loss Hessian would break.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from array_api_compat import array_namespace

from laplace_lab._checks import dtype_eps, nonnegative_float, positive_int
from laplace_lab.numerics._arrays import Space, as_matrix, to_host
from laplace_lab.numerics.krylov import lanczos_inverse_sqrt

__all__ = [
    "DroppedTerms",
    "FSPLaplace",
    "default_rcond",
    "dropped_terms",
    "fsp_laplace",
    "fsp_laplace_from_factor",
    "induced_weight_prior",
    "rkhs_norm_estimate",
    "thin_svd",
]

Array = Any


def rkhs_norm_estimate(f_context: Array, gram: Any, *, mean_context: Array | None = None) -> float:
    """The context-point RKHS-norm estimate of eq. (3.7) of [1]_.

    ``‖h_C‖²_H = (f(C) − μ(C))ᵀ Σ(C, C)⁻¹ (f(C) − μ(C))``, the squared norm of the
    minimum-norm interpolant h_C of f − μ at C; it never exceeds ‖f − μ‖²_H (§3.2).

    Parameters
    ----------
    f_context : array, shape (n_C,)
        f(C).
    gram : array, shape (n_C, n_C), or a :class:`laplace_lab.numerics.kernels.KernelGram`
        Σ(C, C), symmetric positive definite (Cholesky on the host).
    mean_context : array, shape (n_C,), optional
        μ(C); zero by default.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, eq. (3.7).
    """
    K = gram.dense() if hasattr(gram, "dense") else gram
    K = to_host(as_matrix(K, "gram"))
    f = to_host(f_context).reshape(-1)
    if f.size != K.shape[0] or K.shape[0] != K.shape[1]:
        raise ValueError(f"f_context must have length n_C={K.shape[0]}; got {f.size}")
    if mean_context is not None:
        f = f - to_host(mean_context).reshape(-1)
    try:
        c = scipy.linalg.cho_factor(0.5 * (K + K.T), lower=True)
    except np.linalg.LinAlgError as err:
        raise ValueError("gram must be positive definite (add jitter)") from err
    return float(f @ scipy.linalg.cho_solve(c, f))


class DroppedTerms(NamedTuple):
    """Relative size of what eq. (3.9) drops from Λ = MMᵀ + J_wᵀJ_w (Frobenius norms)."""

    p0_ratio: float  #: ‖P₀ΛP₀‖_F / ‖Λ‖_F (Table C.2)
    cross_ratio: float  #: ‖PΛP₀ + P₀ΛP‖_F / ‖Λ‖_F
    total_ratio: float  #: ‖Λ − PΛP‖_F / ‖Λ‖_F


@dataclass(frozen=True, eq=False)
class FSPLaplace:
    """The FSP-Laplace posterior N(w*, S Sᵀ) of Algorithm 2 (after the step-9 truncation).

    Attributes
    ----------
    scale : array, shape (p, r − k)
        S_{:, k:r}, the square root of the covariance.
    eigenvalues : ndarray, shape (r,)
        D_A (ascending), eigenvalues of A = U_Mᵀ Λ U_M (host).
    num_truncated : int
        k of step 9: the number of smallest eigenvalues of D_A removed.
    context_variance : ndarray, shape (n_C,)
        diag(J(C) S Sᵀ J(C)ᵀ) after truncation (≤ ``prior_variance``).
    prior_variance : ndarray, shape (n_C,)
        diag Σ(C, C).
    basis : array, shape (p, r)
        U_M, orthonormal basis of range(M); P = U_M U_Mᵀ.
    M : array, shape (p, r_L)
        J(C)ᵀ L, with M Mᵀ ≈ J(C)ᵀ Σ(C, C)⁺ J(C).
    """

    scale: Array
    eigenvalues: np.ndarray
    num_truncated: int
    context_variance: np.ndarray
    prior_variance: np.ndarray
    basis: Array
    M: Array

    def predictive_variance(self, J_test: Array) -> Array:
        """Function-space variances ``diag(J* S Sᵀ J*ᵀ)`` for rows of ``J_test`` (n × p)."""
        J_test = as_matrix(J_test, "J_test")
        if int(J_test.shape[1]) != int(self.scale.shape[0]):
            raise ValueError(
                f"J_test must have {self.scale.shape[0]} columns; got {J_test.shape[1]}"
            )
        xp = array_namespace(J_test)
        Z = J_test @ self.scale
        return xp.sum(Z * Z, axis=1)

    def covariance_matvec(self, v: Array) -> Array:
        """``S Sᵀ v``: the weight-space posterior covariance applied to v."""
        return self.scale @ (self.scale.T @ v)


def _check_inputs(J_context: Array, Jw: Array | None, prior_variance: Array):
    """Validate J(C), J_w and diag Σ(C, C); return them as (J(C), J_w, host prior)."""
    J_context = as_matrix(J_context, "J_context")
    nC, p = (int(s) for s in J_context.shape)
    if Jw is not None:
        Jw = as_matrix(Jw, "Jw")
        if int(Jw.shape[1]) != p:
            raise ValueError(f"Jw must have p={p} columns; got {Jw.shape[1]}")
    prior = to_host(prior_variance).reshape(-1)
    if prior.size != nC or not np.all(prior > 0):
        raise ValueError(f"prior_variance must be positive with length n_C={nC}")
    return J_context, Jw, prior


def fsp_laplace(
    J_context: Array,
    gram: Any,
    Jw: Array | None,
    *,
    prior_variance: Array | None = None,
    num_steps: int = 500,
    rcond: float | None = None,
    rtol: float = 1e-9,
    input_eps: float | None = None,
) -> FSPLaplace:
    """Algorithm 2 of [1]_ (steps 2–9): FSP-Laplace covariance square root.

    Parameters
    ----------
    J_context : array, shape (n_C·d', p)
        Jacobian J(C) of the network outputs at the context points.
    gram : callable or KernelGram
        ``v ↦ Σ(C, C) v`` (n_C·d' vectors); a :class:`laplace_lab.numerics.kernels.KernelGram` also
        supplies the prior variances.
    Jw : array, shape (N', p), or None
        Weighted Jacobian of the likelihood GGN, ``Σ_i J_iᵀ(−H_i)J_i = J_wᵀJ_w``.
    prior_variance : array, shape (n_C·d',), optional
        diag Σ(C, C) for the truncation (default: ``gram.diagonal()``).
    num_steps : int
        Maximum number of Lanczos iterations (the paper: 500), capped at n_C·d'.
    rcond : float, optional
        Singular values of M and eigenvalues of A below ``rcond·max`` count as zero
        (pseudo-inverses D_M⁺, D_A^{†/2}); default :func:`default_rcond` of J(C)'s dtype
        (1e-10 in float64; in float32 the rounding of M = J(C)ᵀL would otherwise pass for
        directions of the posterior).
    input_eps : float, optional
        Relative rounding of J(C)'s entries (:func:`fsp_laplace_from_factor`).
    rtol : float
        Step 9 accepts ``variance ≤ prior·(1 + rtol)`` (roundoff slack; ``numpy.inf`` skips
        the truncation).

    Returns
    -------
    FSPLaplace

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, Algorithm 2 and eqs. (3.8)–(3.9).
    """
    matvec = gram.matvec if hasattr(gram, "matvec") else gram
    if not callable(matvec):
        raise TypeError(f"gram must be callable or have .matvec; got {type(gram).__name__}")
    if prior_variance is None:
        if not hasattr(gram, "diagonal"):
            raise ValueError("prior_variance is required when gram has no .diagonal()")
        prior_variance = gram.diagonal()
    J_context, Jw, prior = _check_inputs(J_context, Jw, prior_variance)
    nC, p = (int(s) for s in J_context.shape)
    num_steps = min(positive_int(num_steps, "num_steps"), nC)
    xp = array_namespace(J_context)
    # Steps 2–3: Lanczos on Σ(C, C) from J(C)1 / ‖J(C)1‖.
    v = J_context @ xp.ones((p,), dtype=J_context.dtype, device=J_context.device)
    if float(xp.linalg.vector_norm(v)) == 0.0:
        raise ValueError("J_context @ 1 is zero: the Lanczos start vector of step 2 is undefined")
    L = lanczos_inverse_sqrt(matvec, v, num_steps)
    return fsp_laplace_from_factor(
        J_context, L, Jw, prior_variance=prior, rcond=rcond, rtol=rtol, input_eps=input_eps
    )


def default_rcond(dtype: Any, p: int, r: int) -> float:
    """The relative cut-off below which singular values count as zero:
    ``max(1e-10, max(p, r)·eps(dtype))`` — rounding of a p × r product in ``dtype`` leaves
    singular values of that relative size in directions that are exactly zero
    (:func:`numpy.linalg.matrix_rank`'s tolerance)."""
    return max(1e-10, max(int(p), int(r)) * dtype_eps(dtype))


def _rcond(rcond: Any, dtype: Any, p: int, r: int) -> float:
    if rcond is None:
        return default_rcond(dtype, p, r)
    return nonnegative_float(rcond, "rcond")


def _rtol(rtol: Any) -> float:
    try:
        value = float(rtol)
    except (TypeError, ValueError):
        value = np.nan
    if isinstance(rtol, bool) or not value >= 0:  # NaN or negative; inf skips step 9
        raise ValueError(f"rtol must be a non-negative number (inf skips step 9); got {rtol!r}")
    return value


def thin_svd(
    M: Array, *, rcond: float | None = None, atol: float = 0.0
) -> tuple[Array, np.ndarray]:
    """Left singular vectors and singular values of a tall p × r matrix in O(p r²).

    Algorithm 2, step 5 of [1]_: ``M Mᵀ = U_M D_M² U_Mᵀ`` from the thin SVD ``M = U_M D_M
    V_Mᵀ``, computed as a QR factorisation of M in its own namespace (``M = Q R``, O(p r²))
    and an SVD of the small R on the host (O(r³)): ``U_M = Q U_R``. Singular values
    ``≤ max(rcond·max, atol)`` are dropped with their vectors.

    Parameters
    ----------
    M : array, shape (p, r)
    rcond : float, optional
        Relative cut-off for numerically zero singular values (default
        :func:`default_rcond` of M's dtype).
    atol : float
        Absolute cut-off: a bound on the rounding error of M from its inputs.

    Returns
    -------
    U : array, shape (p, r')
        Orthonormal columns, in the namespace of ``M`` (r' ≤ r kept singular values).
    d : ndarray, shape (r',)
        The kept singular values, descending (host float64).

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2 ("in O(pr²) time from a thin SVD of M") and Algorithm 2.
    """
    M = as_matrix(M, "M")
    rcond = _rcond(rcond, M.dtype, *M.shape)
    xp = array_namespace(M)
    Q, R = xp.linalg.qr(M)
    UR, d, _ = scipy.linalg.svd(to_host(R))
    atol = nonnegative_float(atol, "atol")
    keep = int(np.sum(d > max(rcond * d.max(), atol))) if d.size else 0
    space = Space(int(M.shape[0]), None, M)
    return Q @ space.asarray(np.ascontiguousarray(UR[:, :keep])), d[:keep]


def fsp_laplace_from_factor(
    J_context: Array,
    L: Array,
    Jw: Array | None,
    *,
    prior_variance: Array,
    rcond: float | None = None,
    rtol: float = 1e-9,
    input_eps: float | None = None,
) -> FSPLaplace:
    """Algorithm 2 of [1]_, steps 4–9, from a given factor L with LLᵀ ≈ Σ(C, C)†.

    :func:`fsp_laplace` calls it with the Lanczos factor of step 3; passing the dense
    ``L = V Θ^{†/2}`` of ``Σ(C, C) = V Θ Vᵀ`` gives Algorithm 2 with the exact
    pseudo-inverse (the reference of the ``lanczos-factor`` paper check). Parameters as in
    :func:`fsp_laplace`; ``L`` has shape (n_C·d', r) and ``prior_variance`` is required.
    ``input_eps`` is the relative rounding of J(C)'s entries (default: the eps of its dtype;
    a float32 network's Jacobian cast to float64 carries float32's): singular values of M
    below ``input_eps·‖J(C)‖_F·‖L‖_F``, a bound on the error of M that this rounding causes,
    count as zero too.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, Algorithm 2.
    """
    J_context, Jw, prior = _check_inputs(J_context, Jw, prior_variance)
    nC, p = (int(s) for s in J_context.shape)
    L = as_matrix(L, "L")
    if int(L.shape[0]) != nC:
        raise ValueError(f"L must have n_C·d'={nC} rows; got {L.shape[0]}")
    rcond = _rcond(rcond, J_context.dtype, p, nC)
    rtol = _rtol(rtol)
    eps_in = (
        dtype_eps(J_context.dtype)
        if input_eps is None
        else nonnegative_float(input_eps, "input_eps")
    )
    xp = array_namespace(J_context)
    atol = eps_in * float(xp.linalg.matrix_norm(J_context)) * float(xp.linalg.matrix_norm(L))
    space = Space(p, None, J_context)
    # Step 4–5: M = J(C)ᵀ L and its thin SVD (drop numerically zero singular values).
    M = J_context.T @ L
    U, d_host = thin_svd(M, rcond=rcond, atol=atol)
    if d_host.size == 0:
        raise ValueError("M = J(C)ᵀL is zero: J_context has no component in the range of L")
    # Step 6: A = D_M² + (J_w U_M)ᵀ (J_w U_M)  (sign convention: module docstring).
    A = np.diag(d_host**2)
    if Jw is not None:
        JU = to_host(Jw @ U)
        A = A + JU.T @ JU
    # Step 7–8: eigh(A), S = U_M U_A D_A^{†/2} (ascending D_A: largest variances first).
    D, UA = scipy.linalg.eigh(0.5 * (A + A.T))
    inv_sqrt = np.zeros_like(D)
    pos = D > rcond * max(float(D.max()), 0.0)
    inv_sqrt[pos] = 1.0 / np.sqrt(D[pos])
    S = U @ space.asarray(np.ascontiguousarray(UA * inv_sqrt))
    # Step 9: smallest k with diag(J(C) S_{:,k:} S_{:,k:}ᵀ J(C)ᵀ) ≤ diag Σ(C, C).
    Z = to_host(J_context @ S)
    tails = np.cumsum((Z * Z)[:, ::-1], axis=1)[:, ::-1]  # tails[:, k] = Σ_{j≥k} Z_ij²
    tails = np.concatenate([tails, np.zeros((nC, 1))], axis=1)
    ok = np.all(tails <= prior[:, None] * (1.0 + rtol), axis=0)
    k = int(np.argmax(ok))
    return FSPLaplace(
        scale=S[:, k:],
        eigenvalues=D,
        num_truncated=k,
        context_variance=tails[:, k].copy(),
        prior_variance=prior,
        basis=U,
        M=M,
    )


def dropped_terms(result: FSPLaplace, Jw: Array) -> DroppedTerms:
    """Measure what eq. (3.9) drops, with Λ = M Mᵀ + J_wᵀJ_w and P = U_M U_Mᵀ.

    Computed from thin factors (F = [M, J_wᵀ], Λ = F Fᵀ): ``‖Λ‖_F = ‖FᵀF‖_F``,
    ``‖P₀ΛP₀‖_F = ‖(P₀F)ᵀ(P₀F)‖_F``, ``‖PΛP₀‖_F² = tr((PF)ᵀ(PF)·(P₀F)ᵀ(P₀F))`` — no p × p
    matrix. The first ratio is the quantity of Table C.2 of [1]_; the cross terms are what
    the decomposition before eq. (3.9) omits.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, eq. (3.9), and Table C.2.
    """
    Jw = as_matrix(Jw, "Jw")
    xp = array_namespace(Jw)
    F = xp.concat([result.M, Jw.T], axis=1)
    UF = result.basis.T @ F
    P0F = F - result.basis @ UF
    G = to_host(F.T @ F)
    X = to_host(UF.T @ UF)
    Y = to_host(P0F.T @ P0F)
    total = float(np.linalg.norm(G))
    p0 = float(np.linalg.norm(Y))
    cross_sq = max(2.0 * float(np.sum(X * Y)), 0.0)  # tr(XY) with X, Y symmetric
    return DroppedTerms(
        p0_ratio=p0 / total,
        cross_ratio=np.sqrt(cross_sq) / total,
        total_ratio=np.sqrt(p0**2 + cross_sq) / total,
    )


def induced_weight_prior(
    feature_gram: Any, v: Any, w_star: Any, *, rcond: float = 1e-12
) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian "prior" N(μ_w, Σ_w) over the weights that eq. (3.6) of [1]_ induces.

    Under the linearisation f_lin(·, w) = f(·, w*) + J(·)(w − w*),

        ½‖f_lin(·, w) − μ‖²_H = ½ (w − μ_w)ᵀ Σ_w† (w − μ_w) + const,

    with ``(Σ_w†)_ij = ⟨J_i, J_j⟩_H`` (the Gram matrix of the feature functions),
    ``v_i = ⟨J_i, f(·, w*) − μ⟩_H`` and ``μ_w = w* − Σ_w v``; Σ_w is the pseudo-inverse of
    the feature Gram matrix (singular values ≤ ``rcond·max`` count as zero).

    Parameters
    ----------
    feature_gram : (p, p) array
        Σ_w† = [⟨J_i, J_j⟩_H], symmetric positive semi-definite.
    v : (p,) array
    w_star : (p,) array

    Returns
    -------
    mean : ndarray, shape (p,)
        μ_w.
    covariance : ndarray, shape (p, p)
        Σ_w.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.1, eq. (3.6).
    """
    G = to_host(as_matrix(feature_gram, "feature_gram"))
    p = G.shape[0]
    if G.shape != (p, p):
        raise ValueError(f"feature_gram must be square; got shape {G.shape}")
    v = to_host(v).reshape(-1)
    w_star = to_host(w_star).reshape(-1)
    if v.size != p or w_star.size != p:
        raise ValueError(f"v and w_star must have length p={p}; got {v.size}, {w_star.size}")
    cov = np.linalg.pinv(0.5 * (G + G.T), rcond=rcond, hermitian=True)
    return w_star - cov @ v, cov
