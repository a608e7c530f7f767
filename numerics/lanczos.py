"""Symmetric Lanczos you can trust: full reorthogonalisation, a breakdown guard, thick restarts.

Three public kernels, all matrix-free and array-API generic (NumPy, CuPy, torch,
array_api_strict): the basis lives in the namespace of the start vector (or of ``like``);
the small tridiagonal / arrowhead eigenproblems are solved on the host in float64.

- :func:`lanczos` — the Lanczos process ``A Q = Q T + β_m q_{m+1} e_mᵀ`` with classical
  Gram–Schmidt reorthogonalisation applied twice, and a breakdown guard: when
  ``β_j ≤ tol·‖T‖`` an invariant subspace was found; the process either stops or continues
  with a fresh random vector orthogonal to the basis (``SPEC.md`` §5). A GGN has rank
  ≤ N·C < p, so this is the normal case, not an edge case.
- :func:`eigsh` — thick-restart Lanczos (Wu & Simon 2000; equivalent to ARPACK's implicit
  restart with exact shifts) for k extreme eigenpairs, with the relative convergence test
  ``|β_m s_{m,i}| ≤ tol·|θ_max|``.
- :func:`lanczos_inverse_sqrt` — ``L`` with ``L Lᵀ = Q T⁺ Qᵀ ≈ A⁺`` on the Krylov space
  (fsp-laplace.txt §3.2, Algorithm 2 step 3).

Deterministic: all randomness comes from ``rng`` (a ``numpy.random.Generator``; default
``default_rng(0)``), so the same seed gives bit-identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any, Literal, NamedTuple

import numpy as np
import scipy.linalg

from numerics._arrays import Space as _Space
from numerics._arrays import check_rng as _check_rng
from numerics._arrays import positive_float as _positive_float
from numerics._arrays import positive_int as _positive_int
from numerics._arrays import to_host as _to_host

__all__ = [
    "EigshResult",
    "LanczosResult",
    "eigsh",
    "lanczos",
    "lanczos_inverse_sqrt",
]

Array = Any
Matvec = Callable[[Array], Array]

#: Default breakdown threshold, in units of the dtype's machine epsilon times ‖T‖.
_BREAKDOWN_EPS_FACTOR = 50.0
#: Thick restart keeps k + max(#converged, _KEEP_FRAC·(ncv − k)) Ritz vectors (0.3–0.7 measured
#: within ±3% matvecs on power-law and flat GGN spectra).
_KEEP_FRAC = 0.5


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


class EigshResult(NamedTuple):
    """The outcome of :func:`eigsh`, most wanted eigenpair first.

    Attributes
    ----------
    values : ndarray, shape (k,)
        Ritz values (host, float64), ordered most wanted first: descending for ``"LA"``,
        ascending for ``"SA"``, descending magnitude for ``"LM"``.
    vectors : array, shape (n, k)
        Ritz vectors (orthonormal columns, in the namespace of the basis).
    residuals : ndarray, shape (k,)
        Residual norms ``‖A y_i − θ_i y_i‖`` as estimated by ``|β_m s_{m,i}|`` (exact up to
        roundoff under full reorthogonalisation).
    num_matvecs : int
        Number of products with A.
    num_restarts : int
        Number of thick restarts performed.
    converged : bool
        Whether every returned pair met ``residual ≤ tol·|θ_max|``.
    """

    values: np.ndarray
    vectors: Array
    residuals: np.ndarray
    num_matvecs: int
    num_restarts: int
    converged: bool


def _start_vector(
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


class _Krylov:
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
        """Classical Gram–Schmidt against Q[0..j], applied twice; returns (w, coefficients)."""
        Qj = self.Q[: j + 1, :]
        h = Qj @ w
        w = w - h @ Qj
        h2 = Qj @ w
        w = w - h2 @ Qj
        return w, h + h2

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

    def extend(self, start: int, stop: int) -> int:
        """Lanczos steps j = start .. stop-1 from the unit vector in Q[start].

        Returns the number of basis vectors m (≤ stop); Q[m] holds the next vector and
        ``beta_last`` the residual norm. Stops early when the whole space is exhausted or
        (``restart_on_breakdown=False``) at the first breakdown.
        """
        Q, T = self.Q, self.T
        for j in range(start, stop):
            w = self.matvec(Q[j, :])
            self.num_matvecs += 1
            if tuple(w.shape) != (self.space.n,):
                raise ValueError(
                    f"matvec must return shape ({self.space.n},); got {tuple(w.shape)}"
                )
            if self.full:
                w, h = self._orthogonalize(w, j)
                alpha = float(h[j])
            else:
                alpha = float(Q[j, :] @ w)
                w = w - alpha * Q[j, :]
                if j > 0:
                    w = w - T[j - 1, j] * Q[j - 1, :]
            beta = self.space.norm(w)
            if not (np.isfinite(alpha) and np.isfinite(beta)):
                raise ValueError(
                    f"matvec returned non-finite values at Lanczos step {j} (alpha={alpha}, "
                    f"beta={beta}); the operator must be finite and symmetric"
                )
            T[j, j] = alpha
            row = abs(alpha) + beta + (abs(T[j - 1, j]) if j > 0 else 0.0)
            self.tnorm = max(self.tnorm, row, float(np.abs(T[j, :j]).sum()) + abs(alpha))
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
    rng: np.random.Generator | None = None,
    reorthogonalize: Literal["full", "none"] = "full",
    tol: float | None = None,
    on_breakdown: Literal["restart", "stop"] = "restart",
    like: Array | None = None,
) -> LanczosResult:
    """Run ``num_steps`` steps of symmetric Lanczos on a matrix-free operator.

    Produces ``A Q = Q T + β_m q_{m+1} e_mᵀ`` with Q (n × m) orthonormal and T tridiagonal
    (SPEC.md §5; Golub & Van Loan, *Matrix Computations*, §10.1, the reference cited by
    fsp-laplace.txt §3.2).

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
    rng : numpy.random.Generator, optional
        Source of the start vector and of the fresh vectors after breakdowns; default
        ``default_rng(0)``.
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
    """
    n = _positive_int(n, "n")
    num_steps = _positive_int(num_steps, "num_steps", high=n)
    if reorthogonalize not in ("full", "none"):
        raise ValueError(f"reorthogonalize must be 'full' or 'none'; got {reorthogonalize!r}")
    if on_breakdown not in ("restart", "stop"):
        raise ValueError(f"on_breakdown must be 'restart' or 'stop'; got {on_breakdown!r}")
    if not callable(matvec):
        raise TypeError(f"matvec must be callable; got {type(matvec).__name__}")
    rng = _check_rng(rng)
    space = _Space(n, v0, like)
    tol = _BREAKDOWN_EPS_FACTOR * space.eps if tol is None else _positive_float(tol, "tol")
    kry = _Krylov(
        matvec,
        space,
        num_steps,
        rng=rng,
        tol=tol,
        full=reorthogonalize == "full",
        restart_on_breakdown=on_breakdown == "restart",
    )
    kry.Q[0, :] = _start_vector(space, v0, rng)
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


# ----------------------------------------------------------------------------- eigsh


def _wanted_order(theta: np.ndarray, which: str) -> np.ndarray:
    if which == "LA":
        return np.argsort(-theta, kind="stable")
    if which == "SA":
        return np.argsort(theta, kind="stable")
    return np.argsort(-np.abs(theta), kind="stable")


def eigsh(
    matvec: Matvec,
    n: int,
    k: int,
    *,
    which: Literal["LA", "SA", "LM"] = "LA",
    tol: float | None = None,
    max_restarts: int = 200,
    ncv: int | None = None,
    v0: Array | None = None,
    rng: np.random.Generator | None = None,
    like: Array | None = None,
    verify: bool = False,
) -> EigshResult:
    """k extreme eigenpairs of a symmetric operator by thick-restart Lanczos.

    Each cycle extends an orthonormal basis (full reorthogonalisation, breakdown guard as in
    :func:`lanczos`) to ``ncv`` vectors, solves the projected eigenproblem on the host, and
    keeps the ``k + (ncv − k)//2`` most wanted Ritz vectors plus the residual vector
    (Wu & Simon 2000, "Thick-restart Lanczos"). A Ritz pair has converged when
    ``|β_m s_{m,i}| ≤ tol·|θ_max|`` (SPEC.md §5: relative, not absolute).

    Parameters
    ----------
    matvec : callable
        ``v ↦ A v`` for a symmetric A.
    n : int
        Dimension of A.
    k : int
        Number of eigenpairs, in [1, n].
    which : {"LA", "SA", "LM"}
        Largest algebraic, smallest algebraic, largest magnitude.
    tol : float, optional
        Relative residual tolerance; default ``max(1e-10, 100·eps)`` of the dtype (1e-10 in
        float64, 1.2e-5 in float32).
    max_restarts : int
        Give up (``converged=False``) after this many restarts.
    ncv : int, optional
        Basis size per cycle; default ``min(n, max(2k + 1, 20))`` (ARPACK's rule).
    v0, rng, like
        As in :func:`lanczos`.
    verify : bool
        After convergence, run deflated cycles from fresh random vectors orthogonal to the
        kept Ritz vectors until the wanted values stop changing. Single-vector Krylov finds
        one copy of a repeated eigenvalue per direction it is started in, so without this a
        multiplicity above the rounding-induced copies (ARPACK shares the limitation) can be
        reported converged with a copy missing; verification costs extra matvecs.

    Returns
    -------
    EigshResult
        ``(values, vectors, residuals, num_matvecs, num_restarts, converged)``.
    """
    n = _positive_int(n, "n")
    k = _positive_int(k, "k", high=n)
    if which not in ("LA", "SA", "LM"):
        raise ValueError(f"which must be 'LA', 'SA' or 'LM'; got {which!r}")
    tol_given = None if tol is None else _positive_float(tol, "tol")
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, Integral):
        raise TypeError(f"max_restarts must be an integer; got {type(max_restarts).__name__}")
    if max_restarts < 0:
        raise ValueError(f"max_restarts must be >= 0; got max_restarts={max_restarts}")
    m = min(n, max(2 * k + 1, 20)) if ncv is None else _positive_int(ncv, "ncv", high=n)
    if m < min(n, k + 2) and m != n:
        raise ValueError(f"ncv must be >= k + 2 (or n); got ncv={m}, k={k}, n={n}")
    if not callable(matvec):
        raise TypeError(f"matvec must be callable; got {type(matvec).__name__}")
    rng = _check_rng(rng)
    space = _Space(n, v0, like)
    tol = max(1e-10, 100.0 * space.eps) if tol_given is None else tol_given
    kry = _Krylov(
        matvec,
        space,
        m,
        rng=rng,
        tol=_BREAKDOWN_EPS_FACTOR * space.eps,
        full=True,
        restart_on_breakdown=True,
    )
    kry.Q[0, :] = _start_vector(space, v0, rng)
    start, restarts = 0, 0
    previous: np.ndarray | None = None
    while True:
        seen = len(kry.breakdowns)
        m_eff = kry.extend(start, m)
        theta, S = scipy.linalg.eigh(kry.T[:m_eff, :m_eff])
        beta_m = 0.0 if kry.exhausted else kry.beta_last
        res = np.abs(beta_m * S[m_eff - 1, :])
        order = _wanted_order(theta, which)
        want = order[:k]
        scale = max(float(np.max(np.abs(theta))), np.finfo(float).tiny)
        converged = bool(np.all(res[want] <= tol * scale))
        # After a breakdown the basis spans an invariant subspace: its Ritz pairs are exact,
        # but wanted eigenvalues (e.g. further copies of a repeated one, or of 0 for "SA"
        # on a GGN) may lie in the unexplored complement. Accept only once a whole cycle
        # of fresh exploration has left the wanted values unchanged.
        deflate = False
        if converged and (verify or len(kry.breakdowns) > seen):
            stable = previous is not None and np.all(np.abs(theta[want] - previous) <= tol * scale)
            previous = theta[want].copy()
            converged = bool(stable)
            deflate = verify and not converged
        done = converged or kry.exhausted or m_eff == n
        if done or restarts >= max_restarts:
            Y = space.asarray(np.ascontiguousarray(S[:, want]))
            vectors = kry.Q[:m_eff, :].T @ Y
            return EigshResult(
                values=theta[want].copy(),
                vectors=vectors,
                residuals=res[want].copy(),
                num_matvecs=kry.num_matvecs,
                num_restarts=restarts,
                converged=bool(want.size == k and np.all(res[want] <= tol * scale)),
            )
        # Thick restart: keep l Ritz vectors and the residual vector q_{m+1}.
        nconv = int(np.sum(res[want] <= tol * scale))
        keep_n = min(k + max(nconv, int(_KEEP_FRAC * (m - k))), m - 2)
        keep_n = k if deflate else max(keep_n, k)
        keep = order[:keep_n]
        Sk = space.asarray(np.ascontiguousarray(S[:, keep].T))
        new_rows = Sk @ kry.Q[:m_eff, :]
        next_q = kry.Q[m_eff, :]
        kry.Q[:keep_n, :] = new_rows
        kry.Q[keep_n, :] = next_q
        T = np.zeros_like(kry.T)
        T[np.arange(keep_n), np.arange(keep_n)] = theta[keep]
        T[:keep_n, keep_n] = T[keep_n, :keep_n] = beta_m * S[m_eff - 1, keep]
        if deflate:  # explore from a fresh direction; the converged couplings are ≤ tol
            fresh = kry._fresh_vector(keep_n - 1)
            if fresh is not None:
                kry.Q[keep_n, :] = fresh
                T[:keep_n, keep_n] = T[keep_n, :keep_n] = 0.0
        kry.T = T
        start = keep_n
        restarts += 1


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

    fsp-laplace.txt §3.2 and Algorithm 2, steps 2–3: Lanczos on the kernel Gram matrix
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
    """
    n = int(v.shape[0]) if getattr(v, "ndim", 0) == 1 else -1
    if n < 1:
        raise ValueError(f"v must be a non-empty 1-D array; got shape {tuple(v.shape)}")
    num_steps = _positive_int(num_steps, "num_steps", high=n)
    run = lanczos(matvec, n, num_steps, v0=v, tol=tol, on_breakdown="stop")
    theta, S = scipy.linalg.eigh_tridiagonal(run.alpha, run.beta)
    m = theta.size
    if theta[0] < -1e-8 * max(abs(theta[-1]), np.finfo(float).tiny):
        raise ValueError(
            f"matvec must be positive semi-definite; the Lanczos Ritz values include "
            f"{theta[0]:.3g} (largest {theta[-1]:.3g})"
        )
    cut = (m * np.finfo(float).eps if rcond is None else _positive_float(rcond, "rcond")) * max(
        theta[-1], 0.0
    )
    keep = np.nonzero(theta > cut)[0][::-1]
    W = S[:, keep] / np.sqrt(theta[keep])
    space = _Space(n, v, None)
    return run.basis @ space.asarray(np.ascontiguousarray(W))
