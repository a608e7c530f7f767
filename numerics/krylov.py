"""Symmetric Lanczos you can trust: full reorthogonalisation and a breakdown guard.

Matrix-free and array-API generic (NumPy, CuPy, torch, array_api_strict): the basis lives in
the namespace of the start vector (or of ``like``); the small tridiagonal eigenproblems are
solved on the host in float64. :func:`laplace_lab.numerics.thick_restart.eigsh` builds on the same
process.

- :func:`lanczos` — the Lanczos process ``A Q = Q T + β_m q_{m+1} e_mᵀ`` with classical
  Gram–Schmidt reorthogonalisation applied twice, and a breakdown guard: when
  ``β_j ≤ tol·‖T‖`` an invariant subspace was found; the process either stops or continues
  with a fresh random vector orthogonal to the basis (docs/mathematics.md, "Lanczos
  breakdown guard"). A GGN has rank ≤ N·C < p, so this is the normal case, not an edge
  case; Lanczos codes without the guard return NaNs or stop early here
  (docs/numerical-hazards.md, "Lanczos in other libraries").
- :func:`lanczos_inverse_sqrt` — ``L`` with ``L Lᵀ = Q T⁺ Qᵀ ≈ A⁺`` on the Krylov space
  (Cinquin et al., "FSP-Laplace", arXiv:2407.13711, §3.2, Algorithm 2 line 3).

Deterministic: all randomness comes from ``rng`` (a ``numpy.random.Generator`` or a seed,
required whenever a random vector can be drawn), so the same seed gives bit-identical
results.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np
import scipy.linalg

from laplace_lab._checks import positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.numerics._arrays import Space as _Space
from laplace_lab.numerics._arrays import to_host as _to_host

__all__ = ["LanczosResult", "lanczos", "lanczos_inverse_sqrt"]

Array = Any
Matvec = Callable[[Array], Array]

#: Default breakdown threshold, in units of the dtype's machine epsilon times ‖T‖.
BREAKDOWN_EPS_FACTOR = 50.0
#: DGKS threshold η of :meth:`KrylovBasis._orthogonalize`: one Gram–Schmidt pass suffices
#: when it keeps more than η of the vector's norm.
DGKS_ETA = 1.0 / math.sqrt(2.0)


class LanczosResult(NamedTuple):
    """The outcome of :func:`lanczos`: ``A Q = Q T + β_m q_{m+1} e_mᵀ``.

    Attributes
    ----------
    basis : array, shape (n, m)
        Orthonormal Lanczos vectors Q (in the namespace of the start vector).
    alpha : ndarray, shape (m,)
        Diagonal of the tridiagonal T (host, float64).
    beta : ndarray, shape (m - 1,)
        Off-diagonal of T (host, float64); 0 where a breakdown was restarted.
    residual_norm : float
        β_m, the norm of the residual after the last step (0 at an invariant subspace).
    breakdowns : tuple of int
        The (0-based) steps j at which ``β_j ≤ tol·‖T‖``.
    orthogonality_loss : float
        ``max |QᵀQ − I|`` of the returned basis.
    num_matvecs : int
        Number of products with A.
    """

    basis: Array
    alpha: np.ndarray
    beta: np.ndarray
    residual_norm: float
    breakdowns: tuple[int, ...]
    orthogonality_loss: float
    num_matvecs: int


def start_vector(
    space: _Space, v0: Array | None, rng: np.random.Generator, name: str = "v0"
) -> Array:
    if v0 is None:
        v = space.asarray(rng.standard_normal(space.n))
    else:
        if tuple(v0.shape) != (space.n,):
            raise ValueError(f"{name} must have shape ({space.n},); got {tuple(v0.shape)}")
        v = space.xp.astype(v0, space.dtype) if v0.dtype != space.dtype else v0
    nrm = space.norm(v)
    if not np.isfinite(nrm):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    if nrm == 0.0:
        raise ValueError(f"{name} must be non-zero")
    return v / nrm


# ----------------------------------------------------------------------------- the process


class KrylovBasis:
    """Rows Q[0..m] of an orthonormal Krylov basis and the projected matrix T = QᵀAQ.

    T is dense on the host so that thick restarts (arrowhead + tridiagonal) fit in.
    """

    def __init__(
        self,
        matvec: Matvec,
        space: _Space,
        capacity: int,
        *,
        rng: np.random.Generator,
        tol: float,
        full: bool,
        restart_on_breakdown: bool,
    ) -> None:
        self.matvec = matvec
        self.space = space
        xp = space.xp
        kwargs = {"dtype": space.dtype}
        if space.device is not None and not isinstance(space.device, str):
            kwargs["device"] = space.device
        self.Q = xp.zeros((capacity + 1, space.n), **kwargs)
        self.T = np.zeros((capacity + 1, capacity + 1))
        self.rng = rng
        self.tol = tol
        self.full = full
        self.restart_on_breakdown = restart_on_breakdown
        self.num_matvecs = 0
        self.breakdowns: list[int] = []
        self.tnorm = 0.0
        self.beta_last = 0.0  # β of the last completed step (residual norm)
        self.exhausted = False

    def _orthogonalize(self, w: Array, j: int) -> tuple[Array, Array]:
        """Classical Gram–Schmidt against Q[0..j], repeated when needed (DGKS, see
        :meth:`_orthogonalized`); returns (w, coefficients)."""
        w, h, _ = self._orthogonalized(w, j)
        return w, h

    def _orthogonalized(self, w: Array, j: int) -> tuple[Array, Array, float]:
        """:meth:`_orthogonalize` returning ‖w‖ of the result too.

        The second pass runs when the first removed more than 1 − η of ‖w‖, η = 1/√2 (the
        criterion of Daniel, Gragg, Kaufman & Stewart, Math. Comp. 30 (1976), the one ARPACK
        uses): then cancellation may have left w far from orthogonal to Q; otherwise one
        pass is already orthogonal to working precision (Kahan's "twice is enough", in
        B. N. Parlett, The Symmetric Eigenvalue Problem, SIAM 1998).
        """
        Qj = self.Q[: j + 1, :]
        before = self.space.norm(w)
        h = Qj @ w
        w = w - h @ Qj
        after = self.space.norm(w)
        if after > DGKS_ETA * before:
            return w, h, after
        h2 = Qj @ w
        w = w - h2 @ Qj
        return w, h + h2, self.space.norm(w)

    def _fresh_vector(self, j: int) -> Array | None:
        """A random unit vector orthogonal to Q[0..j], or None if the space is exhausted."""
        if j + 1 >= self.space.n:
            return None
        for _ in range(3):
            r = self.space.asarray(self.rng.standard_normal(self.space.n))
            r0 = self.space.norm(r)
            r, _ = self._orthogonalize(r, j)
            nrm = self.space.norm(r)
            if nrm > 1e-6 * r0:
                return r / nrm
        # Random draws can lie in span(Q) (e.g. when the operator was built from the same
        # random stream): fall back to the coordinate vector farthest from span(Q), whose
        # residual norm² is 1 − Σ_i Q_ie² ≥ 1 − (j+1)/n > 0.
        leverage = np.sum(_to_host(self.Q[: j + 1, :]) ** 2, axis=0)
        e = np.zeros(self.space.n)
        e[int(np.argmin(leverage))] = 1.0
        r, _ = self._orthogonalize(self.space.asarray(e), j)
        nrm = self.space.norm(r)
        return r / nrm if nrm > 1e-6 else None

    def extend(self, start: int, stop: int, *, first_product: Array | None = None) -> int:
        """Lanczos steps j = start .. stop-1 from the unit vector in Q[start].

        ``first_product``, if given, is A Q[start] computed already (not counted here).
        Returns the number of basis vectors m (≤ stop); Q[m] holds the next vector and
        ``beta_last`` the residual norm. Stops early when the whole space is exhausted or
        (``restart_on_breakdown=False``) at the first breakdown.
        """
        Q, T = self.Q, self.T
        for j in range(start, stop):
            if j == start and first_product is not None:
                w = first_product
            else:
                w = self.matvec(Q[j, :])
                self.num_matvecs += 1
            if tuple(w.shape) != (self.space.n,):
                raise ValueError(
                    f"matvec must return shape ({self.space.n},); got {tuple(w.shape)}"
                )
            if self.full:
                w, h, beta = self._orthogonalized(w, j)
                alpha = float(h[j])
            else:
                alpha = float(Q[j, :] @ w)
                w = w - alpha * Q[j, :]
                if j > 0:
                    w = w - T[j - 1, j] * Q[j - 1, :]
                beta = self.space.norm(w)
            if not (math.isfinite(alpha) and math.isfinite(beta)):
                raise ValueError(
                    f"matvec returned non-finite values at Lanczos step {j} (alpha={alpha}, "
                    f"beta={beta}); the operator must be finite and symmetric"
                )
            T[j, j] = alpha
            row = abs(alpha) + beta + (abs(T[j - 1, j]) if j > 0 else 0.0)
            # row j of T left of the diagonal: the arrowhead of a thick restart at j = start,
            # else only T[j, j-1] (already in ``row``)
            left = float(np.abs(T[j, :j]).sum()) if j == start and j > 0 else 0.0
            self.tnorm = max(self.tnorm, row, left + abs(alpha))
            if beta <= self.tol * self.tnorm:
                self.breakdowns.append(j)
                self.beta_last = 0.0
                fresh = self._fresh_vector(j) if self.restart_on_breakdown else None
                if fresh is None:
                    self.exhausted = self.restart_on_breakdown or j + 1 >= self.space.n
                    return j + 1
                Q[j + 1, :] = fresh
                continue
            self.beta_last = beta
            Q[j + 1, :] = w / beta
            if j + 1 < stop:
                T[j, j + 1] = T[j + 1, j] = beta
        return stop


# ----------------------------------------------------------------------------- lanczos


def lanczos(
    matvec: Matvec,
    n: int,
    num_steps: int,
    *,
    v0: Array | None = None,
    rng: np.random.Generator | int | None = None,
    reorthogonalize: Literal["full", "none"] = "full",
    tol: float | None = None,
    on_breakdown: Literal["restart", "stop"] = "restart",
    like: Array | None = None,
) -> LanczosResult:
    """Run ``num_steps`` steps of symmetric Lanczos on a matrix-free operator.

    Produces ``A Q = Q T + β_m q_{m+1} e_mᵀ`` with Q (n × m) orthonormal and T tridiagonal
    (Golub & Van Loan, *Matrix Computations*, §10.1, the reference cited by [1]_, §3.2).
    Full reorthogonalisation and the breakdown guard are what make the process usable on
    rank-deficient operators (docs/mathematics.md, "Lanczos breakdown guard").

    Parameters
    ----------
    matvec : callable
        ``v ↦ A v`` for a symmetric A, mapping a length-n array to a length-n array of the
        same namespace.
    n : int
        Dimension of A.
    num_steps : int
        Number of Lanczos steps m, in [1, n].
    v0 : array, optional
        Start vector (normalised internally). Default: a standard normal vector from ``rng``.
    rng : numpy.random.Generator or int
        Source of the start vector and of the fresh vectors after breakdowns. Required
        unless ``v0`` is given and ``on_breakdown="stop"`` (then nothing random is drawn).
    reorthogonalize : {"full", "none"}
        ``"full"``: classical Gram–Schmidt against the whole basis, applied twice.
        ``"none"``: the plain three-term recurrence (loses orthogonality; for comparison).
    tol : float, optional
        Breakdown threshold: ``β_j ≤ tol·‖T‖`` (‖T‖ estimated by Gershgorin) signals an
        invariant subspace. Default ``50·eps`` of the dtype.
    on_breakdown : {"restart", "stop"}
        Continue with a fresh random vector orthogonal to the basis (T becomes block
        diagonal, ``beta`` = 0 at the break), or stop and return the invariant subspace.
    like : array, optional
        Fixes namespace, dtype and device of the basis when ``v0`` is None.

    Returns
    -------
    LanczosResult

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2.
    """
    n = positive_int(n, "n")
    num_steps = positive_int(num_steps, "num_steps", high=n)
    if reorthogonalize not in ("full", "none"):
        raise ValueError(f"reorthogonalize must be 'full' or 'none'; got {reorthogonalize!r}")
    if on_breakdown not in ("restart", "stop"):
        raise ValueError(f"on_breakdown must be 'restart' or 'stop'; got {on_breakdown!r}")
    if not callable(matvec):
        raise TypeError(f"matvec must be callable; got {type(matvec).__name__}")
    if rng is not None or v0 is None or on_breakdown == "restart":
        rng = as_generator(rng)
    space = _Space(n, v0, like)
    tol = BREAKDOWN_EPS_FACTOR * space.eps if tol is None else positive_float(tol, "tol")
    kry = KrylovBasis(
        matvec,
        space,
        num_steps,
        rng=rng,
        tol=tol,
        full=reorthogonalize == "full",
        restart_on_breakdown=on_breakdown == "restart",
    )
    kry.Q[0, :] = start_vector(space, v0, rng)
    m = kry.extend(0, num_steps)
    Qm = kry.Q[:m, :]
    gram = _to_host(Qm @ Qm.T)
    loss = float(np.max(np.abs(gram - np.eye(m))))
    T = kry.T[:m, :m]
    return LanczosResult(
        basis=Qm.T,
        alpha=np.diag(T).copy(),
        beta=np.diag(T, 1).copy(),
        residual_norm=0.0 if kry.exhausted or m < num_steps else kry.beta_last,
        breakdowns=tuple(kry.breakdowns),
        orthogonality_loss=loss,
        num_matvecs=kry.num_matvecs,
    )


# ----------------------------------------------------------------------------- A^{+1/2}


def lanczos_inverse_sqrt(
    matvec: Matvec,
    v: Array,
    num_steps: int,
    *,
    rcond: float | None = None,
    tol: float | None = None,
) -> Array:
    """A factor L with ``L Lᵀ = Q T⁺ Qᵀ ≈ A⁺`` on the Krylov space K_m(A, v).

    [1]_, §3.2 and Algorithm 2, lines 2–3: Lanczos on the kernel Gram matrix
    Σ(C, C) started at ``v`` returns low-rank factors with ``L Lᵀ ≈ Σ(C, C)†``. With
    ``T = S Θ Sᵀ`` (host eigendecomposition of the tridiagonal; the paper's embedded LDLᵀ
    gives the same product), ``L = Q S Θ^{+1/2}``, columns ordered by decreasing Ritz value.
    Because ``Q T⁻¹ Qᵀ v = Q T⁻¹ e₁ ‖v‖`` is the m-th conjugate-gradient iterate for
    ``A x = v``, ``L Lᵀ v`` reproduces CG; run to completion on an SPD A, ``L Lᵀ = A⁻¹``.

    Parameters
    ----------
    matvec : callable
        ``x ↦ A x`` for a symmetric positive semi-definite A.
    v : array, shape (n,)
        Start vector (the paper uses ``J(C)1 / ‖J(C)1‖``).
    num_steps : int
        Maximum number of Lanczos steps (the paper: at most 500); stops early at an
        invariant subspace.
    rcond : float, optional
        Ritz values ``θ ≤ rcond·θ_max`` are treated as zero (pseudo-inverse); default
        ``m·eps``.
    tol : float, optional
        Breakdown threshold of :func:`lanczos`.

    Returns
    -------
    array, shape (n, r)
        L, r ≤ num_steps, in the namespace of ``v``.

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, Algorithm 2.
    """
    n = int(v.shape[0]) if getattr(v, "ndim", 0) == 1 else -1
    if n < 1:
        raise ValueError(f"v must be a non-empty 1-D array; got shape {tuple(v.shape)}")
    num_steps = positive_int(num_steps, "num_steps", high=n)
    run = lanczos(matvec, n, num_steps, v0=v, tol=tol, on_breakdown="stop")
    theta, S = scipy.linalg.eigh_tridiagonal(run.alpha, run.beta)
    m = theta.size
    if theta[0] < -1e-8 * max(abs(theta[-1]), np.finfo(float).tiny):
        raise ValueError(
            f"matvec must be positive semi-definite; the Lanczos Ritz values include "
            f"{theta[0]:.3g} (largest {theta[-1]:.3g})"
        )
    cut = (m * np.finfo(float).eps if rcond is None else positive_float(rcond, "rcond")) * max(
        theta[-1], 0.0
    )
    keep = np.nonzero(theta > cut)[0][::-1]
    W = S[:, keep] / np.sqrt(theta[keep])
    space = _Space(n, v, None)
    return run.basis @ space.asarray(np.ascontiguousarray(W))
