"""In-run audits of what the claims of Rodemann et al., "Self-Supervised Laplace Approximation
for Bayesian Uncertainty Quantification" (TMLR, arXiv:2605.12208) rest on.

Each audit checks our own code against an independent reference on a known case, in well
under a second, and turns a disagreement into an ERROR verdict through
:func:`~laplace_lab.paper_checks.verification.registry.require`:

- :func:`evidence_on_linear_model`: the Laplace log evidence that tunes λ
  (:class:`~laplace_lab.numerics.laplace_variants.SpectralLaplace`, App. C.2's "post-hoc
  tuning of the prior precision using the marginal likelihood") against the closed-form
  evidence log N(y; 0, σ²I + XXᵀ/λ) of Bayesian linear regression, where Laplace's method is
  exact;
- :func:`eq11_on_linear_model`: eq. (11) and the exact evidence of the conjugate claims
  against their terms and the marginal N(y; Xm₀, σ²I + XS₀Xᵀ) computed by scipy;
- :func:`fit_rate`: the 95% interval of a fitted rate uses Student's t with n − 2 degrees of
  freedom (scipy's ``linregress`` and ``t.ppf``), not the normal quantile;
- :func:`t_intervals`: the interval of a mean over few replicates (fitted networks, random
  splits) is Student's t on the claim's own values (scipy), not the normal one;
- :func:`standardised_on_training_rows`: inputs and targets standardised with the training
  rows' mean and standard deviation only.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from laplace_lab.numerics.laplace_variants import SpectralLaplace
from laplace_lab.paper_checks.verification import require
from laplace_lab.theory.rates import RateFit
from laplace_lab.theory.rates import fit_rate as _fit_rate
from laplace_lab.theory.ssla_identities import exact_log_evidence, laplace_log_evidence

__all__ = [
    "eq11_on_linear_model",
    "evidence_on_linear_model",
    "fit_rate",
    "standardised_on_training_rows",
    "t_intervals",
]

#: λ grid of the evidence audit (a decade either side of 1).
_LAMBDAS = (0.1, 1.0, 10.0)


def evidence_on_linear_model(log_evidence=None) -> float:
    """Require that the Laplace log evidence of
    :meth:`SpectralLaplace.log_evidence` is exact on a linear model, up to a constant in λ.

    For y = Xθ + N(0, I), θ ~ N(0, λ⁻¹I), at each λ's MAP θ_λ, log_evidence(λ, ‖θ_λ‖²) −
    ½‖y − Xθ_λ‖² must differ from log N(y; 0, I + XXᵀ/λ) by the same constant at every λ
    (both for N ≥ p and for N < p, the two branches of the class). Returns the largest
    spread of that difference over λ.
    """
    rng = np.random.default_rng(20260512)
    worst = 0.0
    for n, p in ((12, 4), (4, 12)):
        X = rng.standard_normal((n, p))
        y = X @ rng.standard_normal(p) + rng.standard_normal(n)
        lap = SpectralLaplace(X)
        evidence = log_evidence or lap.log_evidence
        gaps = []
        for lam in _LAMBDAS:
            theta = np.linalg.solve(X.T @ X + lam * np.eye(p), X.T @ y)
            approx = float(np.asarray(evidence([lam], float(theta @ theta)))[0])
            approx -= 0.5 * float(np.sum((y - X @ theta) ** 2))
            exact = stats.multivariate_normal(np.zeros(n), np.eye(n) + X @ X.T / lam).logpdf(y)
            gaps.append(approx - float(exact))
        spread = float(np.ptp(gaps))
        worst = max(worst, spread)
        require(
            spread < 1e-8,
            f"the Laplace log evidence that tunes λ is not exact on a linear model (N = {n}, "
            f"p = {p}): its difference to log N(y; 0, I + XXᵀ/λ) moves by {spread:.3g} over "
            f"λ = {_LAMBDAS}",
        )
    return worst


def eq11_on_linear_model(
    model,
    X: np.ndarray,
    y: np.ndarray,
    *,
    laplace=laplace_log_evidence,
    exact=exact_log_evidence,
) -> float:
    """Require that :func:`laplace_log_evidence` (eq. 11) and :func:`exact_log_evidence`
    agree, on Bayesian linear regression with known σ², with their terms computed by scipy.

    Eq. (11): ℓ_D(θ̂) + (q/2) log 2π − ½ log|J(θ̂)| + log π(θ̂) at the least-squares θ̂,
    J = XᵀX/σ²; exact: log N(y; Xm₀, σ²I + XS₀Xᵀ). ``laplace`` and ``exact``: the functions
    the claim calls (its own bindings). Returns the larger absolute difference.
    """
    s2 = float(model.noise_var)
    m0, S0 = np.asarray(model.prior_mean), np.asarray(model.prior_cov)
    theta = np.linalg.lstsq(X, y, rcond=None)[0]
    q = theta.size
    ref11 = (
        float(np.sum(stats.norm.logpdf(y, X @ theta, np.sqrt(s2))))
        + 0.5 * q * np.log(2 * np.pi)
        - 0.5 * np.linalg.slogdet(X.T @ X / s2)[1]
        + float(stats.multivariate_normal(m0, S0).logpdf(theta))
    )
    ref = float(stats.multivariate_normal(X @ m0, s2 * np.eye(y.size) + X @ S0 @ X.T).logpdf(y))
    d11 = abs(laplace(model, (X, y)) - ref11)
    d = abs(exact(model, (X, y)) - ref)
    require(
        d11 < 1e-8 * max(1.0, abs(ref11)),
        f"eq. (11) on Bayesian linear regression is {d11:.3g} off its terms computed by scipy",
    )
    require(
        d < 1e-8 * max(1.0, abs(ref)),
        f"the exact log evidence of Bayesian linear regression is {d:.3g} off scipy's "
        "marginal N(y; Xm₀, σ²I + XS₀Xᵀ)",
    )
    return max(d11, d)


def fit_rate(n: object, error: object) -> RateFit:
    """:func:`laplace_lab.theory.rates.fit_rate` with its 95% interval required to be
    slope ± t_{0.975, n−2} · se, slope and se from scipy's ``linregress``."""
    f = _fit_rate(n, error)
    x, v = np.log(np.asarray(n, dtype=np.float64)), np.log(np.asarray(error, dtype=np.float64))
    if np.ptp(v) == 0.0:  # a constant error: slope 0 exactly, no spread to audit
        return f
    ref = stats.linregress(x, v)
    half = float(stats.t.ppf(0.975, x.size - 2) * ref.stderr)
    tol = 1e-6 * max(1.0, abs(ref.slope), half)
    require(
        abs(f.slope - ref.slope) < tol
        and abs(f.ci_low - (ref.slope - half)) < tol
        and abs(f.ci_high - (ref.slope + half)) < tol,
        f"the 95% interval of a fitted rate [{f.ci_low:.6g}, {f.ci_high:.6g}] is not "
        f"slope ± t(0.975, {x.size - 2})·se = [{ref.slope - half:.6g}, {ref.slope + half:.6g}] "
        "(scipy)",
    )
    return f


def t_intervals(results) -> int:
    """Require that the interval of every sequential check's mean over replicates is
    Student's t on its own values (scipy's ``t.interval`` with n − 1 degrees of freedom and
    the standard error of the mean), not a normal one. Returns the number of intervals
    checked."""
    for r in results:
        est = r.estimate
        values = np.asarray(est.values, dtype=np.float64)
        if values.size < 2 or np.ptp(values) == 0.0:
            continue
        lo, hi = stats.t.interval(est.level, values.size - 1, values.mean(), stats.sem(values))
        tol = 1e-9 * max(1.0, abs(hi - lo))
        require(
            abs(est.low - lo) < tol and abs(est.high - hi) < tol,
            f"{r.check.label}: the interval [{est.low:.6g}, {est.high:.6g}] over "
            f"{values.size} replicates is not Student's t [{lo:.6g}, {hi:.6g}] (scipy)",
        )
    return len(results)


def standardised_on_training_rows(ds, what: str) -> None:
    """Require that the training rows of ``ds`` have mean 0 and standard deviation 1 in every
    input column and in the target (the statistics of the training split only: a split
    standardised on all rows leaves its training rows off zero mean)."""
    cols = np.c_[np.asarray(ds.X_train), np.asarray(ds.y_train)]
    sd = cols.std(axis=0)
    mean_off = float(np.max(np.abs(cols.mean(axis=0))))
    sd_off = float(np.max(np.abs(sd[sd > 0] - 1.0)))
    require(
        mean_off < 1e-9 and sd_off < 1e-9,
        f"{what}: the training rows are not standardised by their own statistics (largest "
        f"|mean| {mean_off:.3g}, |sd − 1| {sd_off:.3g})",
    )
