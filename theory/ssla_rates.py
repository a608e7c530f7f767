"""The paper's conjugate experiments and the quantities whose rates in n are measured.

Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", arXiv:2605.12208: App. B.1 (setups), Lemma 1 and Theorem 1 (§4).

Expected rates (derived here; the tests check the fitted OLS slopes against them):

- **Lemma 1** (fixed ŷ): both models have θ̃ − θ̂ = (ŷ − θ̂)/(n + 1) exactly (normal mean and
  Poisson rate are sample means), so |θ̃ − θ̂| ∝ n⁻¹: slope −1.
- **Theorem 1** (fixed ŷ): θ̃ maximises ℓ̃, so ℓ̃(θ̃) − ℓ̃(θ̂) = ½ J̃ (θ̃ − θ̂)² (1 + O(1/n)),
  with J̃ ∝ n: ∝ n·n⁻² = n⁻¹, slope −1 (normal: exactly (ŷ − x̄)²/(2σ²(n+1))).
- **Proof of Theorem 1, eq. (19)**: ℓ_D(θ̃) − ℓ_D(θ̂) = −½ J (θ̃ − θ̂)²(1 + O(1/n)) is also
  Θ(n⁻¹), not the O(n⁻²) the proof states (it forgets that J = −ℓ_D'' grows like n).
- **ASSLA** (eq. 17), both models and both Hessians: the normalised ASSLA predictive misses
  the O(1/n) epistemic part of the predictive variance (normal–normal: it is exactly
  N(x̄, σ²) against N(μ_n, σ² + σ_n²)), i.e. a relative variance error ε ∝ n⁻¹. Then
  TV, W1 ∝ ε: slope −1; KL ≈ ε²/4 (Gaussian) ∝ n⁻²: slope −2.
- **SSLA, likelihood Hessian** (eq. 12): normal–normal normalises to a Gaussian whose
  variance differs from the analytic one by O(n⁻³) relative and whose mean differs by
  O(n⁻²)·(x̄ − μ0). Generic data: TV ∝ n⁻², KL ∝ n⁻⁴. In the paper's setup μ_true = μ0 = 4,
  so x̄ − μ0 = O_p(n^-½): TV ∝ n^-5/2, KL ∝ n⁻⁵. Poisson–gamma: the ŷ-dependent part of the
  O(1/n) Laplace error of the two evidences differs by O(n⁻²)·ŷ (an exponential tilt of
  size n⁻²): TV ∝ n⁻², KL ∝ n⁻⁴.
- **SSLA, posterior Hessian** (Laplace ratio of evidences): exact for normal–normal (zero
  up to roundoff). Poisson–gamma: Laplace on ∫λ^{a−1}e^{−bλ}dλ errs by the Stirling factor
  exp(−1/(12(a−1)) + …) with a = α + Σx + ŷ, i.e. a tilt ŷ/(12 a²); KL ≈ 1/(288 n⁴ λ³):
  slope −4, TV slope −2.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from laplace_lab.theory.conjugate import ConjugateModel, NormalNormal, PoissonGamma
from laplace_lab.theory.divergences import Divergences, divergences
from laplace_lab.theory.predictive_dists import DiscretePredictive
from laplace_lab.theory.ssla import ssla_predictive

__all__ = [
    "PAPER_NS",
    "RefitGaps",
    "divergence_curve",
    "exact_predictive",
    "paper_model",
    "prefix_statistics",
    "refit_gaps",
]

#: The paper's sample sizes (App. B.1: n = 20, …, 1 000 000).
PAPER_NS = (20, 100, 1_000, 10_000, 100_000, 1_000_000)


def paper_model(name: str) -> tuple[ConjugateModel, float]:
    """(model, θ_true) of App. B.1: ``"normal-normal"`` or ``"poisson-gamma"``.

    normal–normal: μ_true = 4, σ² = 2, prior N(4, 1) (B.1.1); Poisson–gamma: λ_true = 3,
    prior Gamma(shape 6, rate 2) (B.1.2).
    """
    if name == "normal-normal":
        return NormalNormal(prior_mean=4.0, prior_var=1.0, noise_var=2.0), 4.0
    if name == "poisson-gamma":
        return PoissonGamma(shape=6.0, rate=2.0), 3.0
    raise ValueError(f"name must be 'normal-normal' or 'poisson-gamma'; got name={name!r}")


def prefix_statistics(
    model: ConjugateModel, rng: np.random.Generator, ns: tuple[int, ...] = PAPER_NS, *, theta_true
) -> list[Any]:
    """Sufficient statistics of the first n of one sample of size max(ns), for each n."""
    x = model.sample_data(int(max(ns)), theta_true, rng=rng)
    return [model.sufficient_statistics(x[: int(n)]) for n in ns]


def exact_predictive(model: ConjugateModel, s: Any, x_new: Any = None) -> Any:
    """The analytic predictive, as an object accurate to roundoff at n = 10⁶.

    Counts: a :class:`DiscretePredictive` on the stable NegBin log-pmf (scipy's ``nbinom``
    loses ~1e-8 in log-pmf at r ≈ 3·10⁶); reals: the frozen scipy distribution.
    """
    if model.discrete:
        return DiscretePredictive(lambda k: model._log_predictive(s, k, x_new))
    return model.predictive(s, x_new)


def divergence_curve(
    model: ConjugateModel,
    stats_by_n: list[Any],
    *,
    variant: str,
    hessian: str,
    exact: list[Any] | None = None,
) -> list[Divergences]:
    """Divergences(approx, exact) of one SSLA variant for each set of statistics.

    ``exact``: the :func:`exact_predictive` of each set of statistics, when the caller
    already has them (several variants on the same statistics); built here otherwise.
    """
    if exact is None:
        exact = [exact_predictive(model, s) for s in stats_by_n]
    elif len(exact) != len(stats_by_n):
        raise ValueError(
            f"exact must hold one predictive per set of statistics ({len(stats_by_n)}); "
            f"got {len(exact)}"
        )
    return [
        divergences(ssla_predictive(model, s, variant=variant, hessian=hessian), e)
        for s, e in zip(stats_by_n, exact, strict=True)
    ]


class RefitGaps(NamedTuple):
    """Lemma 1 / Theorem 1 / Corollary 1 quantities at one n, for a fixed ŷ."""

    theta_gap: float  # |θ̃ − θ̂|                         (Lemma 1)
    augmented_gap: float  # ℓ̃(θ̃) − ℓ̃(θ̂) ≥ 0              (Theorem 1)
    data_loglik_gap: float  # ℓ_D(θ̂) − ℓ_D(θ̃) ≥ 0          (proof of Thm 1, eq. 19)
    information_gap: float  # |J̃(θ̃) − J̃(θ̂)| / n            (Corollary 1, first part)
    prior_gap: float  # |π(θ̃) − π(θ̂)|                   (Corollary 1, second part)


def refit_gaps(model: ConjugateModel, s: Any, y_new: float) -> RefitGaps:
    """The refit quantities of Lemma 1, Theorem 1 and Corollary 1, cancellation-free."""
    y = model._check_y_new(y_new)
    st = model._augment(s, y, None)
    th, tt = model._mle(s), model._mle(st)
    d_data = -float(model._loglik_change(tt, th, s))
    d_new = float(model._new_loglik(tt, y, None) - model._new_loglik(th, y, None))
    n = float(s.n)
    info = float(np.abs(model._fisher(tt, st) - model._fisher(th, st)).max()) / n
    prior = float(abs(np.exp(model._log_prior(tt)) - np.exp(model._log_prior(th))))
    return RefitGaps(float(np.abs(tt - th).max()), d_new - d_data, d_data, info, prior)
