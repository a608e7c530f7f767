"""In-run audits of the real-data experiments of FSP-Laplace: what the protocol keeps apart.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space Priors
for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711,
App. B.2 (context points drawn from the training inputs' box widened by half of each
feature's range; inputs and targets standardised on the training data).

The Laplace baseline's prior precision maximises the linearised-Laplace evidence (Immer et
al., ICML 2021, eq. 4); :func:`require_evidence_exact_on_linear_model` checks that evidence
against the exact marginal likelihood of a linear model, where the two coincide.

Each audit recomputes its reference inline with numpy — never through the experiment's own
helpers — and raises :class:`~laplace_lab.paper_checks.verification.registry.ImplementationError`
(through ``require``) when it fails, which the claim reports as ERROR.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.paper_checks.verification import require

__all__ = [
    "require_context_apart",
    "require_evidence_exact_on_linear_model",
    "require_standardised",
]


def _rows(X: Any) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    return X[:, None] if X.ndim == 1 else X


def require_standardised(X_train: Any, y_train: Any, *, what: str, atol: float = 1e-8) -> None:
    """Require that the standardised training inputs and targets have mean 0 and standard
    deviation 1 on the training rows themselves (features without spread: mean 0 only).

    A scaler fitted on more rows than the training ones (training and test together) leaves
    the training rows off-centre and off-scale, which this catches.
    """
    X, y = _rows(X_train), np.asarray(y_train, dtype=np.float64).reshape(-1)
    sd = X.std(0)
    spread = sd > atol
    worst_mean = float(max(np.max(np.abs(X.mean(0))), abs(float(y.mean()))))
    worst_sd = float(max(np.max(np.abs(sd[spread] - 1.0), initial=0.0), abs(float(y.std()) - 1)))
    require(
        worst_mean < atol and worst_sd < atol,
        f"{what}: the scaler was not fitted on the training rows alone — the standardised "
        f"training split has |mean| up to {worst_mean:.3g} and |sd − 1| up to {worst_sd:.3g}",
    )


def require_context_apart(
    context: Any, X_train: Any, X_held_out: Any, *, widen: float, what: str
) -> None:
    """Require that the context points come from the training inputs alone.

    ``context`` is either an array of context points or a box with ``low`` and ``high`` from
    which Algorithm 1 draws them. The reference box is each training feature's range widened
    by ``widen`` of it on both sides (App. B.2), computed here from the training rows: the
    context (points or box) must lie inside it, so a box fitted over the held-out rows too
    (validation, test) is caught when they extend any feature's range; context points must
    also be disjoint from every held-out input (no held-out row used as a context point).
    """
    Xtr, Xho = _rows(X_train), _rows(X_held_out)
    lo, hi = Xtr.min(0), Xtr.max(0)
    delta = np.where(hi > lo, hi - lo, 1.0)
    lo_ref, hi_ref = lo - widen * delta, hi + widen * delta
    tol = 1e-9 * (1.0 + np.abs(lo_ref) + np.abs(hi_ref))
    if hasattr(context, "low") and hasattr(context, "high"):
        low, high = np.atleast_1d(context.low), np.atleast_1d(context.high)
        points = None
    else:
        points = _rows(context)
        low, high = points.min(0), points.max(0)
    require(
        low.shape == lo_ref.shape
        and bool(np.all(low >= lo_ref - tol))
        and bool(np.all(high <= hi_ref + tol)),
        f"{what}: the context points reach beyond the training inputs' widened box "
        f"(context [{np.min(low - lo_ref):+.3g}, {np.max(high - hi_ref):+.3g}] beyond it): they "
        "were placed from inputs outside the training split",
    )
    if points is not None:
        from scipy.spatial.distance import cdist

        nearest = float(np.min(cdist(points, Xho))) if Xho.size else np.inf
        require(
            nearest > 1e-9,
            f"{what}: a context point coincides with a held-out input (distance "
            f"{nearest:.3g}): test inputs leaked into the context points",
        )


def require_evidence_exact_on_linear_model() -> None:
    """Require that the linearised-Laplace evidence the Laplace baseline maximises over its prior
    precision α (:func:`laplace_lab.networks.fsp_laplace.linearized_log_evidence`, looked up
    where the baseline looks it up) equals the exact log marginal likelihood of a Bayesian
    linear regression, log N(y; 0, σ²I + XXᵀ/α), at its MAP for each α — the case where the
    Laplace evidence is exact (MacKay 1992) — and that both pick the same α on a grid.
    """
    from scipy.stats import multivariate_normal

    from laplace_lab.networks import fsp_laplace

    rng = np.random.default_rng(20240718)
    n, p, sigma = 30, 5, 0.5
    X = rng.standard_normal((n, p))
    y = X @ rng.standard_normal(p) + sigma * rng.standard_normal(n)
    s = np.linalg.svd(X / sigma, compute_uv=False)
    alphas = np.logspace(-2, 2, 9)
    ours, exact = [], []
    for a in alphas:
        w = np.linalg.solve(X.T @ X / sigma**2 + a * np.eye(p), X.T @ y / sigma**2)
        r = y - X @ w
        log_lik = float(-0.5 * n * np.log(2 * np.pi * sigma**2) - 0.5 * (r @ r) / sigma**2)
        ours.append(fsp_laplace.linearized_log_evidence(a, s, p, float(w @ w), log_lik))
        cov = sigma**2 * np.eye(n) + X @ X.T / a
        exact.append(float(multivariate_normal(np.zeros(n), cov).logpdf(y)))
    gap = np.asarray(ours) - np.asarray(exact)
    require(
        bool(np.all(np.isfinite(gap)))
        and float(np.ptp(gap)) < 1e-6
        and int(np.argmax(ours)) == int(np.argmax(exact)),
        "the Laplace evidence is not the exact evidence of a linear model: log-evidence minus "
        f"exact log N(y; 0, σ²I + XXᵀ/α) varies by {float(np.ptp(gap)):.3g} over α ∈ "
        f"[1e-2, 1e2] (argmax α {alphas[int(np.argmax(ours))]:.3g} vs "
        f"{alphas[int(np.argmax(exact))]:.3g})",
    )
