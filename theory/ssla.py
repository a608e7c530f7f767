"""Self-supervised Laplace approximations of the posterior predictive: SSLA and ASSLA.

J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3–4 (the project's
condensed form: docs/mathematics.md, "SSLA and ASSLA"). With ℓ̃ = ℓ_D + ℓ_new,
J = −∇²ℓ_D, J̃ = −∇²ℓ̃, θ̂ = argmax ℓ_D and θ̃ = argmax ℓ̃:

- SSLA (eq. 12, ``variant="refit"``):
  log p(ŷ|D) ≈ ℓ̃(θ̃) − ℓ_D(θ̂) + log π(θ̃) − log π(θ̂) − ½log|J̃(θ̃)| + ½log|J(θ̂)|;
- ASSLA (eq. 17, ``variant="approx"``):
  log p(ŷ|D) ≈ ℓ_new(θ̂) + ½log|J(θ̂)| − ½log|J̃(θ̂)|.

``hessian="posterior"`` is Laplace on the log-joint ℓ + log π instead (an addition to the
paper; docs/mathematics.md, "Posterior variant"): modes are MAPs, J is replaced by
−∇²(ℓ + log π); the refit variant is then the ratio of two Laplace evidences p(D ∪ ŷ)/p(D),
exact for Gaussian-linear models.

ℓ̃(θ̃) − ℓ_D(θ̂) is evaluated as [ℓ_D(θ̃) − ℓ_D(θ̂)] + ℓ_new(θ̃) with a cancellation-free
difference, so the result stays accurate to roundoff at n = 10⁶ (two O(n) log-likelihoods
are never subtracted).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from scipy import stats

from laplace_lab.theory.conjugate_base import ConjugateModel
from laplace_lab.theory.predictive_dists import DiscretePredictive, QuadraturePredictive

__all__ = ["ssla_log_predictive", "ssla_predictive"]

Variant = Literal["refit", "approx"]
Hessian = Literal["likelihood", "posterior"]


def _check(model: object, variant: object, hessian: object) -> None:
    if not isinstance(model, ConjugateModel):
        raise TypeError(f"model must be a ConjugateModel; got {type(model).__name__}")
    if variant not in ("refit", "approx"):
        raise ValueError(f"variant must be 'refit' or 'approx'; got variant={variant!r}")
    if hessian not in ("likelihood", "posterior"):
        raise ValueError(f"hessian must be 'likelihood' or 'posterior'; got hessian={hessian!r}")


def _logdet(H: np.ndarray, what: str) -> np.ndarray:
    sign, logdet = np.linalg.slogdet(H)
    if np.any(sign <= 0):
        raise ValueError(f"{what} is not positive definite; its log-determinant is undefined")
    return logdet


def _log_unnormalised(model: ConjugateModel, s: Any, y: np.ndarray, x: Any, variant, hessian):
    post = hessian == "posterior"
    mode = model._map if post else model._mle

    def info(theta: np.ndarray, st: Any) -> np.ndarray:
        J = model._fisher(theta, st)
        return J + model._prior_neg_hessian(theta) if post else J

    name = "−∇²(ℓ + log π)" if post else "the observed Fisher information J"
    st = model._augment(s, y, x)
    th = mode(s)
    if variant == "approx":  # eq. (17); the prior terms cancel for both Hessians
        return (
            model._new_loglik(th, y, x)
            + 0.5 * _logdet(info(th, s), name)
            - 0.5 * _logdet(info(th, st), name + " of the augmented data")
        )
    tt = mode(st)  # θ̃ = argmax of the augmented objective (exact refit)
    return (
        model._loglik_change(tt, th, s)
        + model._new_loglik(tt, y, x)
        + model._log_prior(tt)
        - model._log_prior(th)
        - 0.5 * _logdet(info(tt, st), name + " of the augmented data")
        + 0.5 * _logdet(info(th, s), name)
    )


def ssla_log_predictive(
    model: ConjugateModel,
    data: Any,
    y_new: Any,
    *,
    x_new: Any = None,
    variant: Variant = "refit",
    hessian: Hessian = "likelihood",
) -> np.ndarray | float:
    """Unnormalised log predictive of SSLA (eq. 12) or ASSLA (eq. 17) at ``y_new``.

    Parameters
    ----------
    model : ConjugateModel
        e.g. :class:`laplace_lab.theory.NormalNormal`, :class:`laplace_lab.theory.PoissonGamma`.
    data : array, tuple (X, y) or sufficient statistics
    y_new : float or array
        The self-predicted value(s) ŷ (vectorised).
    x_new : array, optional
        The new input (regression models only).
    variant : {"refit", "approx"}
        SSLA with the exact refit θ̃ (eq. 12) or ASSLA at θ̂ (eq. 17).
    hessian : {"likelihood", "posterior"}
        Laplace on the likelihood (the paper) or on the log-joint (exact for
        Gaussian-linear models).

    Returns
    -------
    The log-density up to an additive constant in ŷ (same shape as ``y_new``).

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3 eq. (12) (SSLA) and §4
       eq. (17) (ASSLA).
    """
    _check(model, variant, hessian)
    s = model.sufficient_statistics(data)
    y = model._check_y_new(y_new)
    x = model._check_x_new(x_new)
    out = np.asarray(_log_unnormalised(model, s, y, x, variant, hessian), dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def _gaussian_from_quadratic(logf, loc: float, scale: float) -> Any:
    """A frozen normal from a log-density that is exactly quadratic (checked at a 4th point)."""
    for _ in range(2):
        h = scale
        # the log-density is vectorised in ŷ: its three points in one evaluation
        f0, fp, fm = (float(v) for v in logf(np.array([loc, loc + h, loc - h])))
        c = (fp - 2.0 * f0 + fm) / (2.0 * h * h)  # log f = const + b(y − loc) + c(y − loc)²
        b = (fp - fm) / (2.0 * h)
        if not c < 0.0:
            raise ValueError("the SSLA log-density is not concave in ŷ; it cannot be normalised")
        var = -0.5 / c
        loc, scale = loc + b * var, float(np.sqrt(var))
    f0, f2 = (float(v) for v in logf(np.array([loc, loc + 2.0 * scale])))
    if not np.isclose(f2 - f0, -2.0, rtol=1e-6, atol=1e-8):
        raise RuntimeError("the log-density is not quadratic in ŷ for a Gaussian-linear model")
    return stats.norm(loc, scale)


def ssla_predictive(
    model: ConjugateModel,
    data: Any,
    *,
    x_new: Any = None,
    variant: Variant = "refit",
    hessian: Hessian = "likelihood",
) -> Any:
    """The SSLA / ASSLA predictive normalised over ŷ.

    Eqs. (12) and (17) of [1]_ are densities only up to a constant in ŷ; normalising them is
    what makes them comparable with an analytic predictive.

    Returns
    -------
    predictive
        By model:

        - counts (Poisson–gamma): :class:`laplace_lab.theory.predictive_dists.DiscretePredictive`
          on {0..K}, truncated where the remaining mass is < 1e-12;
        - Gaussian-linear models (normal–normal, known-noise regression): a frozen
          ``scipy.stats.norm`` (the log-density is exactly quadratic in ŷ);
        - otherwise: :class:`laplace_lab.theory.predictive_dists.QuadraturePredictive`
          (adaptive quadrature).

        Each has ``pdf``/``pmf``, ``logpdf``/``logpmf``, ``cdf``, ``mean()``, ``var()`` and
        ``interval(confidence)``.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §3 eq. (12) and §4 eq.
       (17).
    """
    _check(model, variant, hessian)
    s = model.sufficient_statistics(data)
    x = model._check_x_new(x_new)
    th = (model._map if hessian == "posterior" else model._mle)(s)

    def logf(y: np.ndarray) -> np.ndarray:
        return _log_unnormalised(model, s, np.asarray(y, dtype=np.float64), x, variant, hessian)

    loc, scale = model._plugin(th, x)  # mean and spread of p(y | θ̂): where the mass is
    if model.discrete:
        return DiscretePredictive(logf, start=int(loc + 10.0 * scale + 32))
    if model.gaussian_linear:
        return _gaussian_from_quadratic(logf, loc, scale)
    return QuadraturePredictive(logf, loc=loc, scale=scale)
