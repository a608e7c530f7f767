"""Deliberately wrong variants of what the SSLA claims rely on (their mutants).

Each replaces a function or class attribute the claims reach at run time; the claims declare
them with the verdict they must then give (:mod:`laplace_lab.paper_checks.verification.mutants`). A
variant that calls the true function holds it as a default argument, which the mutant does
not rebind.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats
from scipy.special import gammaln

from laplace_lab.networks.data import split_standardise
from laplace_lab.paper_checks.self_supervised_laplace._experiment import TV_CLOSE
from laplace_lab.paper_checks.self_supervised_laplace._hdr import STEPS, Region
from laplace_lab.theory import ssla as ssla_theory
from laplace_lab.theory.conjugate import NormalNormal, NormalStats, PoissonGamma, PoissonStats
from laplace_lab.theory.divergences import divergences
from laplace_lab.theory.rates import fit_rate
from laplace_lab.theory.ssla import ssla_predictive
from laplace_lab.theory.ssla_rates import refit_gaps


def no_logdet(H, what):
    """log|H| ≡ 0: eqs. (12) and (17) without their log-determinant terms."""
    return np.zeros(np.shape(H)[:-2])


def normal_augment_sqrt_n(self, s, y_new, x_new):
    """ŷ counted √n times in ℓ̃ (normal–normal): the refit moves θ by O(n^-½)."""
    w = np.sqrt(s.n)
    d = y_new - s.mean
    n1 = s.n + w
    return NormalStats(n1 + 0.0 * d, s.mean + w * d / n1, s.m2 + s.n * w * d * d / n1)


def poisson_augment_sqrt_n(self, s, y_new, x_new):
    """ŷ counted √n times in ℓ̃ (Poisson–gamma)."""
    w = np.sqrt(s.n)
    return PoissonStats(
        s.n + w + 0.0 * y_new, s.total + w * y_new, s.log_fact + w * gammaln(y_new + 1)
    )


def augmented_gap_slower(model, s, y_new, _true=refit_gaps):
    """ℓ̃(θ̃) − ℓ̃(θ̂) decaying like n^-½ (Theorem 1 false)."""
    g = _true(model, s, y_new)
    return g._replace(augmented_gap=g.augmented_gap * np.sqrt(s.n))


def data_gap_of_mean_loglik(model, s, y_new, _true=refit_gaps):
    """ℓ_D read as the mean log-likelihood (1/n)Σ log p: eq. (19)'s O(n⁻²) then holds."""
    g = _true(model, s, y_new)
    return g._replace(data_loglik_gap=g.data_loglik_gap / s.n)


def information_gap_unnormalised(model, s, y_new, _true=refit_gaps):
    """|J̃(θ̃) − J̃(θ̂)| without the 1/n of Corollary 1."""
    g = _true(model, s, y_new)
    return g._replace(information_gap=g.information_gap * s.n)


def _shifted(true):
    def mle(self, s):
        return true(self, s) + 0.5

    mle.__doc__ = "θ̂ + 0.5: an inconsistent plug-in estimate."
    return mle


normal_mle_shifted = _shifted(NormalNormal._mle)
poisson_mle_shifted = _shifted(PoissonGamma._mle)


def new_loglik_double_noise(self, theta, y_new, x_new):
    """ℓ_new of the normal model with variance 2σ² (a misspecified likelihood for ŷ)."""
    r = y_new - theta[..., 0]
    var = 2.0 * self.noise_var
    return -0.5 * np.log(2.0 * np.pi * var) - r * r / (2.0 * var)


def assla_is_analytic(
    model, data, *, x_new=None, variant="refit", hessian="likelihood", _true=ssla_predictive
):
    """An 'ASSLA' that returns the analytic predictive (epistemic variance included)."""
    if variant == "approx":
        return model.predictive(data, x_new)
    return _true(model, data, x_new=x_new, variant=variant, hessian=hessian)


def ssla_without_refit(model, s, y, x, variant, hessian, _true=ssla_theory._log_unnormalised):
    """SSLA with θ̃ replaced by θ̂ in eq. (12) — which is ASSLA, eq. (17)."""
    return _true(model, s, y, x, "approx", hessian)


def assla_float32_sums(model, s, y, x, variant, hessian, _true=ssla_theory._log_unnormalised):
    """Counts model: ASSLA's log-density as ℓ̃(θ̂) − ℓ_D(θ̂) with float32 log-likelihood sums."""
    out = np.asarray(_true(model, s, y, x, variant, hessian), dtype=np.float64)
    if variant != "approx" or not model.discrete:
        return out
    ld = np.float32(model._loglik(model._mle(s), s))
    return ((ld + out.astype(np.float32)) - ld).astype(np.float64)


def every_display_holds(samples):
    """A derivation whose every displayed equality holds."""
    return {st.label: 0.0 for st in STEPS}


def likelihood_proportional_to_loss(bs=(0.25, 0.5, 1.0, 2.0, 4.0)):
    """Eq. (27)'s integrand proportional to the likelihood."""
    return 0.0


def region_with_mode(alpha):
    """A final region that contains the mode (density ratio 1)."""
    return Region(0.0, 1.96, 1.0)


def poisson_predictive_prior_rate(self, s, y_new, x_new):
    """The NegBin predictive with the prior rate β where the posterior's β + n belongs: its
    log-pmf no longer sums to one over k, and the divergences against it are not numbers."""
    r = self.shape + s.total
    b = self.rate
    k = np.asarray(y_new, dtype=np.float64)
    j = np.arange(max(int(np.max(k)) if k.size else 0, 1), dtype=np.float64)
    cum = np.concatenate([[0.0], np.cumsum(np.log1p(j / r))])
    return (
        cum[k.astype(np.int64)]
        + k * np.log(r / (b + 1.0))
        - gammaln(k + 1.0)
        - r * np.log1p(1.0 / b)
    )


def total_variation_at_margin(approx, exact, _true=divergences):
    """Every total variation set to the margin δ = 0.05 itself (the effect at the margin)."""
    return _true(approx, exact)._replace(total_variation=TV_CLOSE)


def total_variation_twice_margin(approx, exact, _true=divergences):
    """Every total variation set to twice the margin δ = 0.05 (an effect beyond it)."""
    return _true(approx, exact)._replace(total_variation=2.0 * TV_CLOSE)


def log_evidence_without_half(self, prior_precisions, theta_norm2):
    """The Laplace log evidence with the prior's quadratic term λ‖θ̂‖² without its ½."""
    lams = np.atleast_1d(np.asarray(prior_precisions, dtype=np.float64))
    mu = self._mu
    return np.array(
        [0.5 * np.sum(np.log(lam) - np.log(mu + lam)) - lam * float(theta_norm2) for lam in lams]
    )


def rate_interval_by_z(n, error, *, level=0.95, _true=fit_rate):
    """A fitted rate whose interval uses the normal quantile in place of Student's t."""
    f = _true(n, error, level=level)
    t = stats.t.ppf(0.5 + level / 2, np.size(n) - 2)
    half = (f.ci_high - f.slope) * stats.norm.ppf(0.5 + level / 2) / t
    return f._replace(ci_low=f.slope - half, ci_high=f.slope + half)


def standardise_on_all_rows(X, y, *, _true=split_standardise, **kwargs):
    """A split standardised with the mean and standard deviation of every row (test rows
    included)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ds = _true(X, y, **kwargs)
    # undo the training-row statistics, redo with all rows
    Xr = np.r_[ds.X_train, ds.X_test] * ds.x_std + ds.x_mean
    yr = np.r_[ds.y_train, ds.y_test] * ds.y_std + ds.y_mean
    xm, xs = Xr.mean(0), np.where(Xr.std(0) > 0, Xr.std(0), 1.0)
    ym, ys = float(yr.mean()), float(yr.std())
    k = ds.X_train.shape[0]
    return dataclasses.replace(
        ds,
        X_train=(Xr[:k] - xm) / xs,
        X_test=(Xr[k:] - xm) / xs,
        y_train=(yr[:k] - ym) / ys,
        y_test=(yr[k:] - ym) / ys,
    )
