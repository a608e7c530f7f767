"""Simulation-based calibration of a target's Laplace posterior on a GLM: a measurement.

If θ ~ p(θ) and y ~ p(y | θ), the rank of u(θ) among L exact posterior draws u(θ_1), …,
u(θ_L) is uniform on {0, …, L} for any function u (Talts et al. 2018, Thm. 1). On Bayesian
linear regression the Laplace posterior is the posterior, and the ``sbc/*`` cases
(:mod:`laplace_lab.conformance.catalog.calibration`) PASS or FAIL a target on it. On a
generalised linear model with a non-Gaussian likelihood it is not: the Laplace posterior
N(θ̂, Ω⁻¹), θ̂ the MAP and Ω = Σ_n w_n φ_n φ_nᵀ + V (w_n = σ(f_n)(1 − σ(f_n)) for the logistic
link, the exact Hessian of the negative log joint there), is symmetric while the posterior
is skewed, so a *correct* Laplace sampler makes the ranks non-uniform. This module measures
that departure; it never turns it into a verdict on the target.

One simulation, from a seeded stream, repeated R times: x_n ~ N(0, I_d) (n = 1, …, N),
φ_n = (x_n, 1), θ ~ N(0, α⁻¹ I) (weight, then bias: ``parameters()`` order of
``torch.nn.Linear(d, 1)``), y_n ~ Bernoulli(σ(φ_nᵀθ)) (``"binary"``) or
y_n ~ N(φ_nᵀθ, σ0²) (``"regression"``, the control where the Laplace posterior is exact),
θ̂ by Newton's method on the negative log joint (strictly convex: the prior makes it so),
the model set to θ̂, and L draws asked of the target's ``posterior_samples``. Ranked: each
coordinate θ_i and the log-likelihood log p(y | θ) (a data-dependent test quantity, as
Modrák et al. recommend). Each quantity's R ranks are summarised by

- Pearson's χ² on ``BINS`` equal bins (Talts et al. §4), the omnibus departure;
- the *dispersion* D = var(q)/Var₀(q), q = (rank + ½)/(L + 1) − ½ and Var₀ under uniform
  ranks: D > 1 is a ∪-shaped histogram (the true value falls in the draws' tails: the draws
  are too narrow), D < 1 a ∩ (too wide); a z statistic from the uniform law's moments
  (the sample variance about the sample mean, so that a shift alone does not read as ∪);
- the *shift* 2·mean(q) ∈ (−1, 1): > 0 when the true value tends to lie above the draws
  (a histogram rising to the right: the draws sit too low), with its z statistic.

The Bernstein–von Mises theorem says the posterior approaches N(θ̂, Ω⁻¹) in total variation
at rate N^{-1/2} in a regular parametric model, so the departure shrinks as N grows; the
docs/validation.md section "Class probabilities and simulation-based calibration" shows it
in numbers for laplace-lab's own target.

References
----------
.. [1] S. Talts, M. Betancourt, D. Simpson, A. Vehtari, A. Gelman, "Validating Bayesian
   inference algorithms with simulation-based calibration", arXiv:1804.06788 (2018), §2
   (Thm. 1) and §4–5 (the rank histogram, its χ² test, and the ∪, ∩ and skewed shapes of
   too narrow, too wide and biased posteriors).
.. [2] M. Modrák, A. H. Moon, S. Kim, P. Bürkner, N. Huurre, K. Faltejsková, A. Gelman,
   A. Vehtari, "Simulation-based calibration checking for Bayesian computation: the choice
   of test quantities shapes sensitivity", Bayesian Analysis (2023), arXiv:2211.02383
   (the log-likelihood as a test quantity).
.. [3] A. W. van der Vaart, *Asymptotic Statistics*, Cambridge University Press (1998),
   Thm. 10.1 (Bernstein–von Mises).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from laplace_lab._checks import integer, one_of, positive_float
from laplace_lab._random import keyed_generator
from laplace_lab.conformance.compare import target_array
from laplace_lab.conformance.contract import Target, load_target
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.runner import call_expression, call_target

__all__ = [
    "BINS",
    "LEVEL",
    "LIKELIHOODS",
    "GLMCalibration",
    "RankSummary",
    "departure_table",
    "glm_sbc",
    "rank_summary",
]

#: The GLMs: logistic regression (Laplace approximate) and the Gaussian control (exact).
LIKELIHOODS = ("binary", "regression")
#: Bins of the rank histogram (n_draws + 1 must be a multiple).
BINS = 10
#: Family-wise level of :meth:`GLMCalibration.flagged` and of each shape's reading.
LEVEL = 1e-3


def _uniform_moments(n_draws: int) -> tuple[float, float]:
    """Var₀(q) = E₀[q²] and Var₀(q²) for q = (rank + ½)/(L + 1) − ½, rank uniform on
    {0, …, L} (E₀[q] = 0)."""
    m = n_draws + 1
    q2 = ((np.arange(m) + 0.5) / m - 0.5) ** 2
    return float(q2.mean()), float(q2.var())


@dataclass(frozen=True)
class RankSummary:
    """The rank histogram of one quantity over R simulated data sets.

    Attributes
    ----------
    quantity : str
        What was ranked (``"w_1"``, …, ``"b"``, ``"log-lik"``: log p(y | θ)).
    counts : tuple of int
        The histogram, ``BINS`` equal bins of {0, …, L}.
    chi2, chi2_p : float
        Pearson's statistic against uniform (``BINS`` − 1 degrees of freedom), its p-value.
    dispersion, dispersion_z, dispersion_p : float
        D = var(q)/Var₀(q) (1 under uniform ranks; > 1 ∪, < 1 ∩), its z statistic and
        two-sided p-value.
    shift, shift_z, shift_p : float
        2·mean(q) (0 under uniform ranks; > 0: the true value lies above the draws), its z
        statistic and two-sided p-value.
    """

    quantity: str
    counts: tuple[int, ...]
    chi2: float
    chi2_p: float
    dispersion: float
    dispersion_z: float
    dispersion_p: float
    shift: float
    shift_z: float
    shift_p: float

    @property
    def p_values(self) -> tuple[float, float, float]:
        """(χ², dispersion, shift) p-values."""
        return self.chi2_p, self.dispersion_p, self.shift_p

    def shape(self, level: float = LEVEL) -> str:
        """The histogram's reading: ``"∪"``/``"∩"`` (dispersion), ``"rising"``/``"falling"``
        (shift), each when its p-value is below ``level``; ``"flat"`` otherwise."""
        words = []
        if self.dispersion_p < level:
            words.append("∪" if self.dispersion > 1 else "∩")
        if self.shift_p < level:
            words.append("rising" if self.shift > 0 else "falling")
        return ", ".join(words) or "flat"


def rank_summary(ranks: Any, n_draws: int, *, quantity: str = "u") -> RankSummary:
    """Summarise R ranks in {0, …, n_draws} (module docstring).

    Parameters
    ----------
    ranks : (R,) array of int
        The rank of the true value among ``n_draws`` draws, per simulated data set.
    n_draws : int
        L; L + 1 must be a multiple of ``BINS``.
    quantity : str
        The label of the summary.
    """
    n_draws = integer(n_draws, "n_draws", low=BINS - 1)
    if (n_draws + 1) % BINS:
        raise ValueError(f"n_draws + 1 must be a multiple of {BINS}; got n_draws={n_draws}")
    r = np.asarray(ranks)
    if r.ndim != 1 or r.size < 2 or not np.issubdtype(r.dtype, np.integer):
        raise ValueError(
            f"ranks must be a 1-D integer array of length ≥ 2; got {r.shape} {r.dtype}"
        )
    if r.min() < 0 or r.max() > n_draws:
        raise ValueError(f"ranks must lie in [0, n_draws={n_draws}]; got [{r.min()}, {r.max()}]")
    n = r.size
    counts = np.bincount(r * BINS // (n_draws + 1), minlength=BINS)
    expected = n / BINS
    chi2 = float(np.sum((counts - expected) ** 2) / expected)
    q = (r + 0.5) / (n_draws + 1) - 0.5
    m2, v2 = _uniform_moments(n_draws)
    spread = float(np.var(q, ddof=1))
    dz = float((spread - m2) / np.sqrt(v2 / n))
    sz = float(np.mean(q) / np.sqrt(m2 / n))
    return RankSummary(
        quantity=quantity,
        counts=tuple(int(c) for c in counts),
        chi2=chi2,
        chi2_p=float(stats.chi2.sf(chi2, BINS - 1)),
        dispersion=spread / m2,
        dispersion_z=dz,
        dispersion_p=float(2 * stats.norm.sf(abs(dz))),
        shift=float(2 * np.mean(q)),
        shift_z=sz,
        shift_p=float(2 * stats.norm.sf(abs(sz))),
    )


@dataclass(frozen=True)
class GLMCalibration:
    """SBC ranks of a target's posterior samples on one GLM setting (:func:`glm_sbc`).

    Attributes
    ----------
    likelihood : str
    n_train, n_features : int
        N and d (p = d + 1 parameters).
    prior_precision, noise_var : float
    n_draws : int
    ranks : (R, p + 1) ndarray of int
        Per data set, the ranks of θ_1, …, θ_p and of log p(y | θ).
    summaries : tuple of RankSummary
        One per column of ``ranks``.
    """

    likelihood: str
    n_train: int
    n_features: int
    prior_precision: float
    noise_var: float
    n_draws: int
    ranks: np.ndarray
    summaries: tuple[RankSummary, ...]

    @property
    def p_value(self) -> float:
        """The Bonferroni p-value of no departure: the smallest of the 3(p + 1) p-values
        times their number, at most 1."""
        ps = [p for s in self.summaries for p in s.p_values]
        return min(1.0, len(ps) * min(ps))

    def flagged(self, level: float = LEVEL) -> bool:
        """Whether the ranks depart from uniform at family-wise level ``level``."""
        return self.p_value < level

    def reading(self, level: float = LEVEL) -> str:
        """Each quantity whose histogram departs (Bonferroni over the quantities), e.g.
        ``"w_1 ∪; log-lik rising"``; ``"flat"`` if none."""
        share = level / len(self.summaries)
        parts = [f"{s.quantity} {s.shape(share)}" for s in self.summaries]
        return "; ".join(p for p in parts if not p.endswith(" flat")) or "flat"


def _log_likelihood(
    Phi: np.ndarray, y: np.ndarray, theta: np.ndarray, likelihood: str, noise_var: float
) -> np.ndarray:
    """log p(y | θ) for each row of θ (k, p), up to a constant shared by every θ."""
    f = theta @ Phi.T  # (k, N)
    if likelihood == "binary":
        return np.sum(y * f - np.logaddexp(0.0, f), axis=1)
    return -0.5 * np.sum((y - f) ** 2, axis=1) / noise_var


def _map(Phi: np.ndarray, y: np.ndarray, likelihood: str, alpha: float, noise_var: float):
    """θ̂ = argmin −log p(y | θ) + (α/2)‖θ‖² by Newton's method with step halving."""
    p = Phi.shape[1]
    if likelihood == "regression":
        return np.linalg.solve(Phi.T @ Phi / noise_var + alpha * np.eye(p), Phi.T @ y / noise_var)

    def objective(t: np.ndarray) -> float:
        f = Phi @ t
        return float(np.sum(np.logaddexp(0.0, f) - y * f) + 0.5 * alpha * t @ t)

    theta, value = np.zeros(p), objective(np.zeros(p))
    for _ in range(100):
        pi = special.expit(Phi @ theta)
        grad = Phi.T @ (pi - y) + alpha * theta
        hess = (Phi * (pi * (1 - pi))[:, None]).T @ Phi + alpha * np.eye(p)
        step = np.linalg.solve(hess, grad)
        decrement = float(grad @ step)  # twice the decrease the Newton step predicts
        if decrement <= 1e-12 * max(1.0, abs(value)):
            return theta - step  # one more full step: quadratic convergence, to rounding
        t = 1.0  # step halving to the Armijo condition (strictly convex objective)
        while objective(theta - t * step) > value - 1e-4 * t * decrement and t > 1e-10:
            t /= 2
        theta = theta - t * step
        value = objective(theta)
    raise RuntimeError("Newton's method did not reach the MAP in 100 steps")


def _problem(X: np.ndarray, y: np.ndarray, theta: np.ndarray, likelihood, alpha, noise_var):
    import torch

    d = X.shape[1]
    model = torch.nn.Linear(d, 1).double()
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.as_tensor(theta), model.parameters())
    model.eval()
    Xt = torch.as_tensor(X)
    return Problem(
        name=f"glm-sbc-{likelihood}",
        seed=0,
        model=model,
        X_train=Xt,
        y_train=torch.as_tensor(y),
        X_test=Xt[:1],
        likelihood=likelihood,
        prior_precision=float(alpha),
        noise_var=float(noise_var),
    )


def glm_sbc(
    target: Any,
    *,
    n_train: int,
    seed: int,
    likelihood: str = "binary",
    n_features: int = 2,
    prior_precision: float = 0.04,
    noise_var: float = 1.0,
    n_datasets: int = 400,
    n_draws: int = 99,
) -> GLMCalibration:
    """SBC ranks of the target's ``posterior_samples`` on a GLM (module docstring).

    Parameters
    ----------
    target : Target, callable or str
        Declares ``posterior_samples`` (the conformance contract); a string is a target
        ``MODULE:CALLABLE``, as for :func:`~laplace_lab.conformance.validate`.
    n_train : int
        N, training points per simulated data set.
    seed : int
        ≥ 0; keys the stream of designs, parameters, responses and the target's sampling
        seeds (the same for every target, so two targets see the same data sets).
    likelihood : {"binary", "regression"}
        Logistic regression, or the linear-Gaussian control.
    n_features : int
        d; the model is ``torch.nn.Linear(d, 1)``, p = d + 1.
    prior_precision : float
        α of the isotropic prior N(0, α⁻¹ I), from which θ is drawn.
    noise_var : float
        σ0² of the regression control (classification uses 1.0).
    n_datasets : int
        R simulated data sets.
    n_draws : int
        L draws per data set; L + 1 a multiple of ``BINS``.

    Returns
    -------
    GLMCalibration
    """
    if isinstance(target, str):
        target = load_target(target)
    elif not isinstance(target, Target):
        target = Target.from_callable(target)
    one_of(likelihood, "likelihood", LIKELIHOODS)
    n_train = integer(n_train, "n_train", low=1)
    n_features = integer(n_features, "n_features", low=1)
    n_datasets = integer(n_datasets, "n_datasets", low=2)
    n_draws = integer(n_draws, "n_draws", low=BINS - 1)
    if (n_draws + 1) % BINS:
        raise ValueError(f"n_draws + 1 must be a multiple of {BINS}; got n_draws={n_draws}")
    alpha = positive_float(prior_precision, "prior_precision")
    noise_var = positive_float(noise_var, "noise_var") if likelihood == "regression" else 1.0
    if not target.has("posterior_samples"):
        raise ValueError("target must declare posterior_samples")
    key = ("conformance-glm-sbc", likelihood, n_train, n_features, alpha, noise_var)
    rng = keyed_generator(*key, seed=integer(seed, "seed", low=0))
    p = n_features + 1
    ranks = np.empty((n_datasets, p + 1), dtype=np.int64)
    for r in range(n_datasets):
        X = rng.normal(size=(n_train, n_features))
        Phi = np.hstack([X, np.ones((n_train, 1))])
        theta = rng.normal(size=p) / np.sqrt(alpha)
        f = Phi @ theta
        if likelihood == "binary":
            y = (rng.random(n_train) < special.expit(f)).astype(np.float64)
        else:
            y = f + rng.normal(0.0, np.sqrt(noise_var), size=n_train)
        problem = _problem(
            X, y, _map(Phi, y, likelihood, alpha, noise_var), likelihood, alpha, noise_var
        )
        kw = {"subset": None, "n_samples": n_draws, "seed": int(rng.integers(2**31))}
        out = call_target(target, "posterior_samples", problem, **kw)
        expr = call_expression("posterior_samples", problem, **kw)
        draws = target_array(out, "the posterior samples", (n_draws, p), expr)
        ranks[r, :p] = np.sum(draws < theta, axis=0)
        ll = _log_likelihood(Phi, y, np.vstack([theta, draws]), likelihood, noise_var)
        ranks[r, p] = np.sum(ll[1:] < ll[0])
    names = [*(f"w_{i + 1}" for i in range(n_features)), "b", "log-lik"]
    summaries = tuple(rank_summary(ranks[:, j], n_draws, quantity=q) for j, q in enumerate(names))
    return GLMCalibration(
        likelihood, n_train, n_features, alpha, noise_var, n_draws, ranks, summaries
    )


def departure_table(
    target: Any, *, sizes: tuple[int, ...] = (10, 40, 160, 640), seed: int = 0, **options: Any
) -> str:
    """A Markdown table of :func:`glm_sbc` at each N in ``sizes`` (``options`` passed on).

    Columns: N; the dispersion D of each coordinate (w_1, …, b); the shift of
    log p(y | θ) and its z statistic; the smallest χ² p-value; the Bonferroni p-value of
    :attr:`GLMCalibration.p_value`; the reading of :meth:`GLMCalibration.reading`.
    """
    rows = []
    for n in sizes:
        c = glm_sbc(target, n_train=n, seed=seed, **options)
        *coords, ll = c.summaries
        rows.append(
            f"| {n} | {', '.join(f'{s.dispersion:.2f}' for s in coords)} | "
            f"{ll.shift:+.3f} (z = {ll.shift_z:.1f}) | "
            f"{min(s.chi2_p for s in c.summaries):.2g} | {c.p_value:.2g} | {c.reading()} |"
        )
    head = (
        "| N | dispersion D (w, b) | log-lik shift | min χ²₉ p | p (Bonferroni) | reading |\n"
        "|---|---|---|---|---|---|"
    )
    return "\n".join([head, *rows])
