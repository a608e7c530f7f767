"""k extreme eigenpairs of a symmetric operator by thick-restart Lanczos.

:func:`eigsh` (Wu & Simon 2000; equivalent to ARPACK's implicit restart with exact shifts)
runs the reorthogonalised, breakdown-guarded process of :mod:`laplace_lab.numerics.krylov` and
accepts a Ritz pair by the relative test ``|β_m s_{m,i}| ≤ tol·|θ_max|`` (relative to the
largest Ritz value, so it means the same at every scale; docs/mathematics.md, "Convergence
test"). Matrix-free and array-API generic; deterministic given ``rng``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from laplace_lab._checks import integer, one_of, positive_float, positive_int
from laplace_lab._random import as_generator, spawn
from laplace_lab.numerics._arrays import Space as _Space
from laplace_lab.numerics.krylov import (
    BREAKDOWN_EPS_FACTOR,
    Array,
    KrylovBasis,
    Matvec,
    start_vector,
)

__all__ = ["EigshResult", "eigsh"]

#: Thick restart keeps k + max(#converged, _KEEP_FRAC·(ncv − k)) Ritz vectors. The matvec
#: count is insensitive to the fraction over a wide range (docs/performance.md).
_KEEP_FRAC = 0.5


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


def _wanted_order(theta: np.ndarray, which: str) -> np.ndarray:
    if which == "LA":
        return np.argsort(-theta, kind="stable")
    if which == "SA":
        return np.argsort(theta, kind="stable")
    return np.argsort(-np.abs(theta), kind="stable")


def _asymmetry(
    matvec: Matvec,
    space: _Space,
    rng: np.random.Generator,
    x: Array | None = None,
    ax: Array | None = None,
) -> float:
    """|yᵀAx − xᵀAy| / (‖y‖‖Ax‖ + ‖x‖‖Ay‖) for Gaussian x, y from ``rng``: 0 for symmetric A.

    ``eigsh`` passes its random start vector as x with the product ``ax`` of its first Lanczos
    step, so that the probe costs one matvec instead of two.

    Roundoff keeps it below the dtype's eps for GGN products JᵀJv (measured in float32 and
    float64 up to p = 50,000); a non-symmetric A gives about ‖A − Aᵀ‖_F / (‖A‖_F √n).
    """
    if x is None:
        x = space.asarray(rng.standard_normal(space.n))
        ax = matvec(x)
    y = space.asarray(rng.standard_normal(space.n))
    ay = matvec(y)
    for w in (ax, ay):
        if tuple(w.shape) != (space.n,):
            raise ValueError(f"matvec must return shape ({space.n},); got {tuple(w.shape)}")
    xp = space.xp
    gap = abs(float(xp.sum(y * ax)) - float(xp.sum(x * ay)))
    scale = space.norm(y) * space.norm(ax) + space.norm(x) * space.norm(ay)
    if not np.isfinite(gap) or not np.isfinite(scale):
        raise ValueError("matvec returned non-finite values; the operator must be finite")
    return gap / scale if scale > 0 else 0.0


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
    rng: np.random.Generator | int,
    like: Array | None = None,
    verify: bool = False,
    check_symmetry: bool = True,
) -> EigshResult:
    """k extreme eigenpairs of a symmetric operator by thick-restart Lanczos.

    Each cycle extends an orthonormal basis (full reorthogonalisation, breakdown guard as in
    :func:`lanczos`) to ``ncv`` vectors, solves the projected eigenproblem on the host, and
    keeps the ``k + (ncv − k)//2`` most wanted Ritz vectors plus the residual vector
    (Wu & Simon 2000, "Thick-restart Lanczos"). A Ritz pair has converged when
    ``|β_m s_{m,i}| ≤ tol·|θ_max|`` (relative, not absolute: an absolute threshold means
    different things at different scales of the operator).

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
    v0, like
        As in :func:`lanczos`.
    rng : numpy.random.Generator or int
        Source of the start vector (unless ``v0`` is given), of the fresh vectors after
        breakdowns and of the verification vectors. Required.
    verify : bool
        After convergence, run deflated cycles from fresh random vectors orthogonal to the
        kept Ritz vectors until the wanted values stop changing. Single-vector Krylov finds
        one copy of a repeated eigenvalue per direction it is started in, so without this a
        multiplicity above the rounding-induced copies (ARPACK shares the limitation) can be
        reported converged with a copy missing; verification costs extra matvecs.
    check_symmetry : bool
        First compare yᵀAx with xᵀAy for two random vectors: x the random start vector,
        whose product is the first Lanczos step's, and y from a child stream of ``rng``, so
        the iteration itself is unchanged (one extra matvec, counted in ``num_matvecs``; two
        when ``v0`` is given, which is not a random probe). Lanczos on a non-symmetric A
        returns wrong values that its residual test reports converged; the probe refuses A
        when the relative gap |yᵀAx − xᵀAy| / (‖y‖‖Ax‖ + ‖x‖‖Ay‖) exceeds √eps of the dtype
        (1.5e-8 in float64, 3.5e-4 in float32), far above roundoff (below eps) and a gap that
        a non-symmetric part of relative size δ reaches once δ ≳ √(eps·n).

    Returns
    -------
    EigshResult
        ``(values, vectors, residuals, num_matvecs, num_restarts, converged)``.
    """
    n = positive_int(n, "n")
    k = positive_int(k, "k", high=n)
    one_of(which, "which", ("LA", "SA", "LM"))
    tol_given = None if tol is None else positive_float(tol, "tol")
    max_restarts = integer(max_restarts, "max_restarts", low=0)
    m = min(n, max(2 * k + 1, 20)) if ncv is None else positive_int(ncv, "ncv", high=n)
    if m < min(n, k + 2) and m != n:
        raise ValueError(f"ncv must be >= k + 2 (or n); got ncv={m}, k={k}, n={n}")
    if not callable(matvec):
        raise TypeError(f"matvec must be callable; got {type(matvec).__name__}")
    rng = as_generator(rng)
    space = _Space(n, v0, like)
    tol = max(1e-10, 100.0 * space.eps) if tol_given is None else tol_given
    probe_rng = spawn(rng, 1)[0]  # a child stream: the iteration's draws are unchanged
    q0 = start_vector(space, v0, rng)
    kry = KrylovBasis(
        matvec,
        space,
        m,
        rng=rng,
        tol=BREAKDOWN_EPS_FACTOR * space.eps,
        full=True,
        restart_on_breakdown=True,
    )
    kry.Q[0, :] = q0
    first, probes = None, 0
    if check_symmetry:
        # a random start vector is a Gaussian probe already; a given v0 is not
        if v0 is None:
            first, probes = matvec(q0), 2  # A q0 (the first step's product) and A y
            gap = _asymmetry(matvec, space, probe_rng, q0, first)
        else:
            gap, probes = _asymmetry(matvec, space, probe_rng), 2
        if gap > np.sqrt(space.eps):
            raise ValueError(
                f"matvec must be a symmetric operator; |yᵀAx − xᵀAy| / (‖y‖‖Ax‖ + ‖x‖‖Ay‖) "
                f"= {gap:.3g} for random x, y exceeds sqrt(eps) = {np.sqrt(space.eps):.3g} "
                "(pass check_symmetry=False to skip this test)"
            )
    start, restarts = 0, 0
    previous: np.ndarray | None = None
    while True:
        seen = len(kry.breakdowns)
        m_eff = kry.extend(start, m, first_product=first)
        first = None
        theta, S = np.linalg.eigh(kry.T[:m_eff, :m_eff])  # tiny: less overhead than SciPy
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
                num_matvecs=kry.num_matvecs + probes,
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
