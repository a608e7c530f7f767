"""How good is the Lanczos factor L of FSP-Laplace Algorithm 2, step 3 (Cinquin et al. §3.2)?

The paper: "L ← LANCZOS(Σ(C, C), v) ∈ ℝ^{n_C d' × r}, r ≪ min(n_C d', p) and
L Lᵀ ≈ Σ(C, C)†", started at v = J(C)1/‖J(C)1‖. Algorithm 2 consumes L only through
M Mᵀ = J(C)ᵀ L Lᵀ J(C) (the prior-precision term of eq. 3.8) and, downstream, the predictive
variances. :func:`lanczos_sweep` measures, for a range of Lanczos step counts m, three errors
against the dense pseudo-inverse Σ† (same relative cutoff as the Lanczos factor):

- raw: ``‖L Lᵀ − Σ†‖_F / ‖Σ†‖_F``, with the Eckart–Young floor of *any* rank-r
  approximation of Σ†, ``(Σ_{i>r} σ_i(Σ†)²)^{1/2} / ‖Σ†‖_F``;
- precision: ``‖J(C)ᵀ(L Lᵀ − Σ†)J(C)‖_F / ‖J(C)ᵀ Σ† J(C)‖_F``, computed as
  ``‖R (L Lᵀ − Σ†) Rᵀ‖_F`` from the thin QR ``J(C)ᵀ = Q R`` (no p × p matrix);
- variance: ``max_i |v_i − v_i^†| / v_i^†`` over test points, v from Algorithm 2 (steps 4–9,
  :func:`laplace_lab.numerics.fsp.fsp_laplace_from_factor`) with L, v^† with the dense ``V
  Θ^{†/2}``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from laplace_lab.numerics.fsp import fsp_laplace_from_factor
from laplace_lab.numerics.krylov import lanczos, lanczos_inverse_sqrt

__all__ = [
    "LanczosSweep",
    "consumed_precision_error",
    "eckart_young_floor",
    "lanczos_figure",
    "lanczos_sweep",
    "pinv_factor",
    "summarize",
]


def pinv_factor(K: np.ndarray, *, rcond: float) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``L† = V Θ^{†/2}`` with ``L† L†ᵀ = K†`` and the eigenvalues Θ of K (descending).

    Eigenvalues ``θ ≤ rcond·θ_max`` count as zero — the cut :func:`lanczos_inverse_sqrt`
    applies to its Ritz values (default ``m·eps``, i.e. ``n·eps`` at m = n).
    """
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"K must be a non-empty square matrix; got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise ValueError("K must be finite")
    if not (np.isfinite(rcond) and 0.0 < rcond < 1.0):
        raise ValueError(f"rcond must lie in (0, 1); got rcond={rcond!r}")
    theta, V = np.linalg.eigh(0.5 * (K + K.T))
    theta, V = theta[::-1], V[:, ::-1]
    keep = theta > rcond * max(theta[0], 0.0)
    return V[:, keep] / np.sqrt(theta[keep]), theta


def eckart_young_floor(theta: np.ndarray, rank: int, *, rcond: float) -> float:
    """Smallest ``‖X − K†‖_F / ‖K†‖_F`` over all X of rank ≤ ``rank`` (Eckart–Young).

    ``theta`` are the eigenvalues of K; K† has singular values 1/θ for θ > rcond·θ_max.
    """
    theta = np.asarray(theta, dtype=float)
    if rank < 0:
        raise ValueError(f"rank must be non-negative; got rank={rank}")
    s = np.sort(1.0 / theta[theta > rcond * theta.max()])[::-1]
    return float(np.sqrt(np.sum(s[rank:] ** 2) / np.sum(s**2)))


def consumed_precision_error(R: np.ndarray, E: np.ndarray, exact: np.ndarray) -> float:
    """``‖Jᵀ E J‖_F / ‖Jᵀ X J‖_F`` from the R factor of ``Jᵀ = Q R`` (``‖JᵀEJ‖ = ‖R E Rᵀ‖``)."""
    return float(np.linalg.norm(R @ E @ R.T) / np.linalg.norm(R @ exact @ R.T))


class LanczosSweep(NamedTuple):
    """Errors of Algorithm 2 with an m-step Lanczos factor, for each m in ``steps``."""

    steps: np.ndarray  #: step counts m (the last one is ``steps_reached``)
    rank: np.ndarray  #: columns of L at each m (after the Ritz-value cut)
    raw: np.ndarray  #: ‖LLᵀ − Σ†‖_F / ‖Σ†‖_F
    floor: np.ndarray  #: Eckart–Young floor of the raw error at rank(L)
    precision: np.ndarray  #: ‖J(C)ᵀ(LLᵀ − Σ†)J(C)‖_F / ‖J(C)ᵀΣ†J(C)‖_F
    variance: np.ndarray  #: max relative error of the predictive variances at test points
    ratio_min: np.ndarray  #: min over test points of Var_L / Var_† (< 1: too confident)
    truncated: np.ndarray  #: k of Algorithm 2 step 9 with the m-step factor
    n: int  #: n_C d', the order of Σ(C, C)
    steps_reached: int  #: Lanczos steps until breakdown or the cap
    breakdown: bool  #: whether Lanczos stopped at an invariant subspace before the cap
    rcond: float  #: relative cutoff of Σ† (and of the Ritz values at m = n)


def lanczos_sweep(
    J_context: np.ndarray,
    gram: Any,
    Jw: np.ndarray | None,
    J_test: np.ndarray,
    *,
    max_steps: int = 500,
    num_points: int | None = None,
    rcond: float | None = None,
) -> LanczosSweep:
    """Run Algorithm 2 (Cinquin et al. §3.2) with m = 1, …, r Lanczos steps against dense Σ†.

    Parameters
    ----------
    J_context : ndarray, shape (n_C·d', p)
        J(C); the start vector is ``J(C)1/‖J(C)1‖`` (Algorithm 2, step 2).
    gram : KernelGram
        Σ(C, C) (``matvec``, ``dense`` and ``diagonal``).
    Jw : ndarray, shape (N', p), or None
        Weighted likelihood Jacobian (``J_wᵀJ_w`` = GGN of the likelihood).
    J_test : ndarray, shape (n_*, p)
        Jacobians at the test points of the predictive variances.
    max_steps : int
        Lanczos cap (the paper: 500), further capped at n_C·d'.
    num_points : int, optional
        Number of step counts, log-spaced in [1, r]; default every step.
    rcond : float, optional
        Relative cut of the pseudo-inverses: eigenvalues of Σ(C, C) (for Σ†) and Ritz values
        (for L) ≤ rcond·max count as zero. Default ``n_C d'·eps`` for Σ† and ``m·eps`` for an
        m-step factor (LAPACK's convention).
    """
    J_context = np.asarray(J_context, dtype=float)
    n = J_context.shape[0]
    if max_steps < 1:
        raise ValueError(f"max_steps must be positive; got max_steps={max_steps}")
    v = J_context.sum(axis=1)  # J(C) 1
    run = lanczos(gram.matvec, n, min(max_steps, n), v0=v, on_breakdown="stop")
    reached = int(run.basis.shape[1])
    if num_points is None or num_points >= reached:
        steps = np.arange(1, reached + 1)
    else:
        grid = np.geomspace(1, reached, num_points).round().astype(int)
        steps = np.unique(np.append(grid, min(n // 2, reached)))  # include m = n_C d'/2
    ritz_rcond = rcond
    rcond = n * np.finfo(float).eps if rcond is None else float(rcond)
    L_exact, theta = pinv_factor(gram.dense(), rcond=rcond)
    K_pinv = L_exact @ L_exact.T
    R = np.linalg.qr(J_context.T, mode="r")
    prior = gram.diagonal()
    var_exact = fsp_laplace_from_factor(
        J_context, L_exact, Jw, prior_variance=prior
    ).predictive_variance(J_test)
    out = {
        k: [] for k in ("rank", "raw", "floor", "precision", "variance", "ratio_min", "truncated")
    }
    for m in steps:
        L = lanczos_inverse_sqrt(gram.matvec, v, int(m), rcond=ritz_rcond)
        E = L @ L.T - K_pinv
        res = fsp_laplace_from_factor(J_context, L, Jw, prior_variance=prior)
        ratio = res.predictive_variance(J_test) / var_exact
        out["rank"].append(L.shape[1])
        out["raw"].append(np.linalg.norm(E) / np.linalg.norm(K_pinv))
        out["floor"].append(eckart_young_floor(theta, L.shape[1], rcond=rcond))
        out["precision"].append(consumed_precision_error(R, E, K_pinv))
        out["variance"].append(np.max(np.abs(ratio - 1.0)))
        out["ratio_min"].append(np.min(ratio))
        out["truncated"].append(res.num_truncated)
    return LanczosSweep(
        steps=steps,
        **{k: np.asarray(val) for k, val in out.items()},
        n=n,
        steps_reached=reached,
        breakdown=bool(run.breakdowns) and reached < min(max_steps, n),
        rcond=rcond,
    )


def summarize(sweep: LanczosSweep, *, rank_fraction: float, rel_tol: float) -> dict:
    """JSON-ready numbers of a sweep: at the rank reached, at m = n_C d'/2, and the m needed.

    ``rank_ok``: r ≤ rank_fraction·n_C d'; ``approx_ok``: both consumed errors (prior
    precision, predictive variance) ≤ rel_tol at r; ``steps_needed``: the smallest swept m
    from which both stay ≤ rel_tol (None if never).
    """
    n = sweep.n
    ok = np.maximum(sweep.precision, sweep.variance) <= rel_tol
    tail_ok = np.flip(np.cumprod(np.flip(ok))).astype(bool)  # tail_ok[i] = all(ok[i:])
    half = int(np.searchsorted(sweep.steps, min(n // 2, sweep.steps_reached)))
    out = {
        "n": n,
        "steps_reached": sweep.steps_reached,
        "rank": int(sweep.rank[-1]),
        "breakdown": sweep.breakdown,
        "rank_ok": bool(sweep.rank[-1] <= rank_fraction * n),
        "approx_ok": bool(ok[-1]),
        "steps_needed": int(sweep.steps[np.argmax(tail_ok)]) if tail_ok[-1] else None,
        "half_steps": int(sweep.steps[half]),
        "rcond": float(sweep.rcond),
    }
    for field in ("raw", "floor", "precision", "variance", "ratio_min", "truncated"):
        values = getattr(sweep, field)
        out[field] = values[-1].item()
        out[f"half_{field}"] = values[half].item()
    out["sweep"] = {
        f: getattr(sweep, f).tolist() for f in ("steps", "raw", "precision", "variance")
    }
    return out


def lanczos_figure(sweeps: dict[str, LanczosSweep], *, rank_fraction: float, rel_tol: float):
    """The three errors of each sweep against the number of Lanczos steps (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharex=True)
    titles = ("‖LLᵀ − Σ†‖_F / ‖Σ†‖_F", "‖Jᵀ(LLᵀ − Σ†)J‖_F / ‖JᵀΣ†J‖_F", "max |Var_L/Var_† − 1|")
    tiny = 1e-16
    for label, sw in sweeps.items():
        for ax, field in zip(axes, ("raw", "precision", "variance"), strict=True):
            (line,) = ax.semilogy(sw.steps, np.maximum(getattr(sw, field), tiny), label=label)
            if field == "raw":
                ax.semilogy(sw.steps, np.maximum(sw.floor, tiny), ":", color=line.get_color())
    n = max(sw.n for sw in sweeps.values())
    for ax, title in zip(axes, titles, strict=True):
        ax.axhline(rel_tol, color="k", lw=0.8, ls="--")
        ax.axvline(rank_fraction * n, color="grey", lw=0.8, ls="--")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("Lanczos steps m")
    axes[0].legend(fontsize=7, title="dotted: Eckart–Young floor", title_fontsize=7)
    fig.suptitle("FSP-Laplace Alg. 2 step 3: Lanczos factor vs dense Σ†", fontsize=10)
    fig.tight_layout()
    return fig
