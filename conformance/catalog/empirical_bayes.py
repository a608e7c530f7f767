"""Empirical-Bayes cases: the prior precision (and noise) that maximise the Laplace evidence.

The capability ``optimize_prior`` (:mod:`laplace_lab.conformance.contract`) returns the
isotropic prior precision α — and, when asked, the regression noise σ0² — that maximise the
Laplace log marginal likelihood *at the given MAP* θ̂ (held fixed, the post-hoc tuning of
Immer et al. [2]_ and of laplace-torch's ``optimize_prior_precision`` [3]_):

    L(α, σ0²) = log p(y|θ̂, σ0²) − α‖θ̂‖²/2 + (p/2) log α − ½ Σ_i log(λ_i(σ0²) + α),

λ_i the eigenvalues of the GGN part (for regression λ_i = μ_i/σ0², μ_i those of JᵀJ). In
a = log α and v = log σ0² the gradient is

    ∂L/∂a = ½ (γ − α‖θ̂‖²),   ∂L/∂v = ½ (‖y − f‖²/σ0² − N + γ),   γ = Σ_i λ_i/(λ_i + α),

and L is strictly concave in (a, v) (log-sum-exp, docs/mathematics.md, "Empirical Bayes at
a fixed MAP"): the optimum is unique. The oracle finds it by bracketed root-finding of the
gradient on the eigenvalues of the dense float64 GGN (O(p) per evaluation): α*(σ0²) is the
root of ∂L/∂a in [λ_max/(λ_max + α_hi)/‖θ̂‖², α_hi], α_hi = rank/‖θ̂‖², and σ0²* the root of the
profile derivative ∂L/∂v(α*(v), v), bracketed below by ‖y − f‖²/N. On the linear-Gaussian
problems this is exactly the MacKay fixed point α = γ/‖θ̂‖², σ0² = ‖y − Φθ̂‖²/(N − γ) *with θ̂
held at the problem's MAP*; the true evidence maximiser of Bayesian linear regression [1]_,
where θ̂ moves with α, is another point, reported in the details as ``refitted_optimum``
(information only, not checked).

Tolerance: on the optimum's location in log space. With C = −∇²L at the optimum (in (a, v))
and τ_L the rounding allowed in one evaluation of the evidence in the target's dtype
(:func:`laplace_lab.conformance.tolerance.lml_tolerance` at the optimum), every point where
the quadratic model of L lies within τ_L of the maximum, ½ δᵀCδ ≤ τ_L, is indistinguishable
from it by a correct evaluation; its extent along coordinate i is √(2 τ_L (C⁻¹)_ii). So

    |log α_target − log α*| ≤ √(2 τ_L (C⁻¹)_aa),   |log σ0²_target − log σ0²*| ≤ √(2 τ_L (C⁻¹)_vv)

(1-D: C = C_aa). An optimiser that stops where the evidence is flat to rounding passes;
in float64 the bounds are 4e-7–6e-6, so an α off by 1% (0.00995 in log α) fails. When σ0²
is not optimised the returned σ0² must be the one passed (to 4u).

References
----------
.. [1] D. J. C. MacKay, "Bayesian interpolation", Neural Computation 4(3), 415–447 (1992),
   §4 (the evidence optimum, γ the number of well-determined parameters).
.. [2] A. Immer, M. Bauer, V. Fortuin, G. Rätsch, M. E. Khan, "Scalable marginal likelihood
   estimation for model selection in deep learning", ICML 2021, §3 (Laplace evidence of
   hyperparameters).
.. [3] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, §2 (post-hoc prior precision).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import TargetError, call_expression, call_target
from laplace_lab.conformance.tolerance import SAFETY, lml_tolerance, unit_roundoff

__all__ = ["EvidenceSurface", "check_optimum", "refitted_optimum"]

_XTOL = 1e-15  # brentq: absolute tolerance on log α, log σ0² (machine precision)
_RTOL = 4.0 * np.finfo(np.float64).eps


@dataclass(frozen=True)
class EvidenceSurface:
    """The Laplace evidence L(α, σ0²) at a fixed MAP, from the spectrum of the dense GGN.

    Attributes
    ----------
    mu : (p,) ndarray
        Eigenvalues of the GGN part at noise ``noise_var`` (clipped at 0); at σ0² they are
        ``mu * noise_var / σ0²`` for regression and unchanged for classification.
    noise_var : float
        The σ0² of ``mu``.
    theta_norm2 : float
        ‖θ̂‖².
    regression : bool
    rss : float
        ‖y − f(θ̂)‖² (regression).
    n : int
        N, the training points.
    log_likelihood : float
        log p(y|θ̂) at ``noise_var``.
    n_rows : int
        N′, for the tolerance rule.
    """

    mu: np.ndarray
    noise_var: float
    theta_norm2: float
    regression: bool
    rss: float
    n: int
    log_likelihood: float
    n_rows: int

    @classmethod
    def from_oracle(cls, oracle: DenseOracle) -> EvidenceSurface:
        """The surface of the oracle's problem (its GGN, θ̂ and training fit)."""
        problem = oracle.problem
        regression = problem.likelihood == "regression"
        rss = 0.0
        if regression:
            y = problem.y_train.detach().double().numpy()
            rss = float(np.sum((y - oracle.f[:, 0]) ** 2))
        t2 = float(oracle.theta @ oracle.theta)
        if t2 <= 0.0:
            raise ValueError("the MAP must be non-zero: with θ̂ = 0 the evidence grows with α")
        return cls(
            mu=np.clip(np.linalg.eigvalsh(oracle.ggn), 0.0, None),
            noise_var=float(problem.noise_var),
            theta_norm2=t2,
            regression=regression,
            rss=rss,
            n=int(oracle.J.shape[0]),
            log_likelihood=oracle.log_likelihood,
            n_rows=oracle.n_rows,
        )

    @property
    def p(self) -> int:
        """The number of parameters."""
        return int(self.mu.size)

    def eigenvalues(self, noise_var: float) -> np.ndarray:
        """λ_i(σ0²), the GGN part's eigenvalues at the noise ``noise_var``."""
        return self.mu * (self.noise_var / noise_var) if self.regression else self.mu

    def log_likelihood_at(self, noise_var: float) -> float:
        """log p(y|θ̂, σ0²) (constant for classification)."""
        if not self.regression:
            return self.log_likelihood
        return -0.5 * self.rss / noise_var - 0.5 * self.n * math.log(2 * math.pi * noise_var)

    def log_prior(self, alpha: float) -> float:
        """log N(θ̂; 0, α⁻¹I)."""
        return -0.5 * alpha * self.theta_norm2 + 0.5 * self.p * math.log(alpha / (2 * math.pi))

    def value(self, alpha: float, noise_var: float) -> float:
        """L(α, σ0²): the Laplace log marginal likelihood at θ̂."""
        lam = self.eigenvalues(noise_var)
        return (
            self.log_likelihood_at(noise_var)
            + self.log_prior(alpha)
            + 0.5 * self.p * math.log(2 * math.pi)
            - 0.5 * float(np.sum(np.log(lam + alpha)))
        )

    def gamma(self, alpha: float, noise_var: float) -> float:
        """γ = Σ λ_i/(λ_i + α), the effective number of parameters."""
        lam = self.eigenvalues(noise_var)
        return float(np.sum(lam / (lam + alpha)))

    def gradient(self, alpha: float, noise_var: float) -> np.ndarray:
        """(∂L/∂log α, ∂L/∂log σ0²) (the second is 0 for classification)."""
        g = self.gamma(alpha, noise_var)
        da = 0.5 * (g - alpha * self.theta_norm2)
        dv = 0.5 * (self.rss / noise_var - self.n + g) if self.regression else 0.0
        return np.array([da, dv])

    def curvature(self, alpha: float, noise_var: float) -> np.ndarray:
        """C = −∇²L in (log α, log σ0²), 2 × 2 (positive definite)."""
        lam = self.eigenvalues(noise_var)
        w = alpha / (lam + alpha)
        s = float(np.sum(w * (1.0 - w)))
        c_vv = s + self.rss / noise_var if self.regression else 1.0
        return 0.5 * np.array([[s + alpha * self.theta_norm2, s], [s, c_vv]])

    def best_alpha(self, noise_var: float) -> float:
        """argmax_α L(α, σ0²): the unique root of ∂L/∂log α (module docstring bracket)."""
        lam = self.eigenvalues(noise_var)
        rank = int(np.count_nonzero(lam > 0.0))
        if rank == 0:
            raise ValueError("the GGN is zero: the evidence has no interior optimum in α")
        hi = rank / self.theta_norm2
        lo = lam.max() / (lam.max() + hi) / self.theta_norm2
        a = brentq(
            lambda t: self.gradient(math.exp(t), noise_var)[0],
            math.log(lo),
            math.log(hi),
            xtol=_XTOL,
            rtol=_RTOL,
        )
        return math.exp(a)

    def optimum(self, *, optimize_noise: bool) -> tuple[float, float]:
        """(α*, σ0²*): σ0² fixed at ``noise_var`` unless ``optimize_noise`` (regression)."""
        if not optimize_noise:
            return self.best_alpha(self.noise_var), self.noise_var
        if not self.regression:
            raise ValueError("optimize_noise needs a regression likelihood")
        if self.rss <= 0.0:
            raise ValueError("the MAP interpolates the data: the evidence grows as σ0² → 0")

        def profile(v: float) -> float:
            s2 = math.exp(v)
            return self.gradient(self.best_alpha(s2), s2)[1]

        lo = math.log(self.rss / self.n)  # ∂L/∂v = γ/2 > 0 there
        hi = lo + 1.0
        while profile(hi) > 0.0:  # ∂L/∂v → −N/2 as σ0² → ∞
            hi += 2.0 * (hi - lo)
        v = brentq(profile, lo, hi, xtol=_XTOL, rtol=_RTOL)
        return self.best_alpha(math.exp(v)), math.exp(v)

    def location_tolerance(self, alpha: float, noise_var: float, dtype) -> np.ndarray:
        """(τ_log α, τ_log σ0²) = √(2 τ_L diag(C⁻¹)) at the optimum (module docstring)."""
        lam = self.eigenvalues(noise_var)
        tau = lml_tolerance(
            self.log_likelihood_at(noise_var),
            self.log_prior(alpha),
            np.diag(lam + alpha),  # only its eigenvalues enter the rule
            dtype=dtype,
            n_rows=self.n_rows,
        )
        C = self.curvature(alpha, noise_var)
        if not self.regression:
            return np.array([math.sqrt(2.0 * tau / C[0, 0]), 0.0])
        return np.sqrt(2.0 * tau * np.diag(np.linalg.inv(C)))


def refitted_optimum(problem: Problem, *, optimize_noise: bool) -> tuple[float, float]:
    """The evidence maximiser of Bayesian linear regression, θ̂ re-fitted for every α (and σ0²).

    MacKay's fixed point α = γ/‖θ̂(α)‖², σ0² = ‖y − Φθ̂(α)‖²/(N − γ), iterated to convergence
    on the features (x, 1): a different point from the fixed-MAP optimum the capability
    returns (information only).
    """
    X = problem.X_train.detach().double().numpy()
    y = problem.y_train.detach().double().numpy()
    Phi = np.hstack([X, np.ones((X.shape[0], 1))])
    mu, Q = np.linalg.eigh(Phi.T @ Phi)
    mu = np.clip(mu, 0.0, None)
    b = Q.T @ (Phi.T @ y)
    alpha, s2 = float(np.mean(problem.prior_vector())), float(problem.noise_var)
    for _ in range(10_000):
        theta_q = b / (mu + alpha * s2)  # θ̂ in the eigenbasis: (ΦᵀΦ + α σ0² I)⁻¹ Φᵀy
        g = float(np.sum(mu / (mu + alpha * s2)))
        new_alpha = g / float(theta_q @ theta_q)
        new_s2 = s2
        if optimize_noise:
            new_s2 = float(np.sum((y - Phi @ (Q @ theta_q)) ** 2)) / (y.size - g)
        done = abs(new_alpha / alpha - 1.0) < 1e-15 and abs(new_s2 / s2 - 1.0) < 1e-15
        alpha, s2 = new_alpha, new_s2
        if done:
            break
    return alpha, s2


def _answer(out, expr: str) -> np.ndarray:
    """The target's (α, σ0²) as two positive finite floats, or a TargetError."""
    try:
        pair = np.asarray([float(v) for v in out], dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TargetError(
            f"optimize_prior must return (prior_precision, noise_var); got {out!r}", expr
        ) from err
    if pair.shape != (2,) or not np.all(np.isfinite(pair) & (pair > 0.0)):
        raise TargetError(
            "optimize_prior must return two positive finite floats (prior_precision, "
            f"noise_var); got {out!r}",
            expr,
        )
    return pair


def check_optimum(
    target, problem: Problem, oracle: DenseOracle, *, optimize_noise: bool, exact_blr: bool
) -> Check:
    """The target's (α, σ0²) against the exact fixed-MAP optimum, in log space."""
    expr = call_expression("optimize_prior", problem, optimize_noise=optimize_noise)
    out = call_target(target, "optimize_prior", problem, optimize_noise=optimize_noise)
    got = _answer(out, expr)
    surface = EvidenceSurface.from_oracle(oracle)
    alpha, s2 = surface.optimum(optimize_noise=optimize_noise)
    tol = surface.location_tolerance(alpha, s2, problem.dtype)
    if not optimize_noise:
        tol[1] = SAFETY * unit_roundoff(problem.dtype)  # σ0² must come back as passed
    err = np.abs(np.log(got) - np.log([alpha, s2]))
    ratio = err / tol
    passed = bool(np.all(err <= tol))
    worst = int(np.argmax(ratio))
    names = ("log α", "log σ0²")
    summary = (
        f"(α, σ0²) vs the exact optimum of the Laplace evidence at θ̂: max |error| / tolerance "
        f"= {float(ratio[worst]):.3g} ({names[worst]}); got α = {got[0]:.12g}, "
        f"σ0² = {got[1]:.12g}; optimum α = {alpha:.12g}, σ0² = {s2:.12g}; tolerance "
        f"{tol[0]:.3g} on log α, {tol[1]:.3g} on log σ0²"
    )
    details = {
        "max_error_over_tolerance": float(ratio[worst]),
        "worst": names[worst],
        "got": [float(got[0]), float(got[1])],
        "oracle": [alpha, s2],
        "tolerance_log": [float(tol[0]), float(tol[1])],
        "error_log": [float(err[0]), float(err[1])],
        "start": [float(problem.prior_precision), float(problem.noise_var)],
    }
    if exact_blr:
        details["refitted_optimum"] = list(
            refitted_optimum(problem, optimize_noise=optimize_noise)
        )
    body = f"got = {expr}"
    line = f"print(got)  # optimum ({alpha!r}, {s2!r}); log tolerance {tol[0]:.3g}, {tol[1]:.3g}"
    return Check(passed, summary, details, f"{body}\n{line}")


_CASES = {
    "linear-gaussian": (False, "α of Bayesian linear regression at its MAP (fixed θ̂)"),
    "linear-gaussian-noise": (True, "α and σ0² of Bayesian linear regression (fixed θ̂)"),
    "mlp-regression": (False, "α of a tanh MLP, Gaussian likelihood, σ0² = 0.3 kept"),
    "mlp-regression-noise": (True, "α and σ0² of a tanh MLP"),
    "mlp-binary": (False, "α, Bernoulli likelihood"),
    "mlp-multiclass": (False, "α, categorical likelihood"),
}


def _register(name: str, optimize_noise: bool, text: str) -> None:
    problem = name.removesuffix("-noise")

    @conformance_case(
        f"empirical-bayes/{name}",
        capability="optimize_prior",
        problem=problem,
        description=text,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_optimum(
            target,
            problem,
            oracle,
            optimize_noise=optimize_noise,
            exact_blr=problem.name.startswith("linear-gaussian"),
        )


for _name, (_noise, _text) in _CASES.items():
    _register(_name, _noise, _text)
