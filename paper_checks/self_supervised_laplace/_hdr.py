"""The highest-density-region derivation of Rodemann et al. App. A.1, step by step.

App. A.1 derives the region R(p̂^α) of the SSLA predictive for the L2 loss through a chain
of displayed equalities (eqs. 25–29 and the unnumbered lines after them). Each displayed
expression is written here as a function of the same named quantities, in the paper's
notation:

- ``log_ratio`` = log(2π/n) (the paper's normalisation term), ``q`` the dimension of θ;
- ``logdet_I`` = log|I(θ̂)|, ``logdet_ID`` = log|I_ℓD(θ̂)|;
- ``ell_D`` = ℓ_D(θ̂), ``ell_tilde`` = ℓ̃(θ̂), ``log_prior`` = log π(θ̂), ``alpha`` = α.

Evaluating consecutive expressions at the same random values shows which equalities hold as
algebra and which do not (:func:`chain_discrepancies`); the integral of eq. (27) is checked
by quadrature (:func:`eq27_error`) and the shape of the final region against the Gaussian
predictive that A.1's first paragraph asserts (:func:`gaussian_region`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import integrate, stats

__all__ = [
    "STEPS",
    "Region",
    "Step",
    "chain_discrepancies",
    "eq27_error",
    "eq27_likelihood_vs_loss",
    "gaussian_region",
    "random_inputs",
]

Inputs = dict[str, float]


def _K(v: Inputs) -> float:
    """Exponent of the density constant in eq. (26): 3q/2·log(2π/n) − ½log|I| − log|I_D| + 2ℓ_D
    + 3 log π (so that p(y) = L(y)·e^K)."""
    return (
        1.5 * v["q"] * v["log_ratio"]
        - 0.5 * v["logdet_I"]
        - v["logdet_ID"]
        + 2.0 * v["ell_D"]
        + 3.0 * v["log_prior"]
    )


def _c(v: Inputs) -> float:
    """𝔠 of eq. (29): −3q/2·log(2π/n) + ½log|I| + log|I_D| − 2ℓ_D − 3 log π = −K."""
    return (
        -1.5 * v["q"] * v["log_ratio"]
        + 0.5 * v["logdet_I"]
        + v["logdet_ID"]
        - 2.0 * v["ell_D"]
        - 3.0 * v["log_prior"]
    )


def b_from_26_27(v: Inputs) -> float:
    """b* implied by eqs. (26)–(27): (2/3)b³ = (1 − α)e^{−K}."""
    return float(np.cbrt(1.5 * (1 - v["alpha"]) * np.exp(-_K(v))))


def b_eq28(v: Inputs) -> float:
    """b* as printed in eq. (28), with its extra −ℓ̃(θ̂) in the exponent."""
    return float(np.cbrt(1.5 * (1 - v["alpha"]) * np.exp(-_K(v) - v["ell_tilde"])))


def _p1(v: Inputs) -> float:  # p̂^α = p(ŷ + b*) with the density L(y)e^K of eq. (26), L = (y − f)²
    return b_eq28(v) ** 2 * np.exp(_K(v))


def _p2(v: Inputs) -> float:  # printed: |ŷ + b* − f| e^K = |b*| e^K, b* of eq. (28)
    return abs(b_eq28(v)) * np.exp(_K(v))


def _p3(v: Inputs) -> float:  # printed: |∛(3/2 (1 − α) e^{−K})| e^K (ℓ̃ gone)
    return abs(np.cbrt(1.5 * (1 - v["alpha"]) * np.exp(-_K(v)))) * np.exp(_K(v))


def _p4(v: Inputs) -> float:  # printed: ∛ of 3/2(1 − α) exp[−q/2 L + I/6 + I_D/6 − 2ℓ_D/3 − log π]
    inner = (
        -0.5 * v["q"] * v["log_ratio"]
        + v["logdet_I"] / 6
        + v["logdet_ID"] / 6
        - 2 * v["ell_D"] / 3
        - v["log_prior"]
    )
    return abs(np.cbrt(1.5 * (1 - v["alpha"]) * np.exp(inner))) * np.exp(_K(v))


def _p5(
    v: Inputs,
) -> float:  # printed: ∛(3/2(1 − α)) exp[−qL + I/3 + I_D/3 − 4ℓ_D/3 − 2 log π] e^K
    inner = (
        -v["q"] * v["log_ratio"]
        + v["logdet_I"] / 3
        + v["logdet_ID"] / 3
        - 4 * v["ell_D"] / 3
        - 2 * v["log_prior"]
    )
    return abs(np.cbrt(1.5 * (1 - v["alpha"]))) * np.exp(inner) * np.exp(_K(v))


def _p6(
    v: Inputs,
) -> float:  # printed: ∛(9/4)(1 − α)^{2/3} exp[−q/2 L − I/6 − 2I_D/3 + 2ℓ_D/3 + log π]
    inner = (
        -0.5 * v["q"] * v["log_ratio"]
        - v["logdet_I"] / 6
        - 2 * v["logdet_ID"] / 3
        + 2 * v["ell_D"] / 3
        + v["log_prior"]
    )
    return np.cbrt(9 / 4) * (1 - v["alpha"]) ** (2 / 3) * np.exp(inner)


def _p7(v: Inputs) -> float:  # printed rewrite: ∛(9/4)(1 − α)^{2/3} exp[𝔠/3 + log π]
    return np.cbrt(9 / 4) * (1 - v["alpha"]) ** (2 / 3) * np.exp(_c(v) / 3 + v["log_prior"])


def _threshold_29(v: Inputs) -> float:  # eq. (29): |y − f| ≥ p̂^α e^𝔠, with p̂^α of the rewrite
    return _p7(v) * np.exp(_c(v))


def _threshold_final(v: Inputs) -> float:  # printed: p̂_L = p̂^α exp[𝔠 − 3 log π]
    return _p7(v) * np.exp(_c(v) - 3 * v["log_prior"])


def _threshold_closed(v: Inputs) -> float:  # printed: ∛(9/4)(1 − α)^{2/3} exp[4𝔠/3 − 2 log π]
    return (
        np.cbrt(9 / 4) * (1 - v["alpha"]) ** (2 / 3) * np.exp(4 * _c(v) / 3 - 2 * v["log_prior"])
    )


def _threshold_equivalent(v: Inputs) -> float:  # printed: ∛(9/4 (1 − α)²) e^{4𝔠/3} π^{−2}
    return (
        np.cbrt(9 / 4 * (1 - v["alpha"]) ** 2)
        * np.exp(4 * _c(v) / 3)
        / np.exp(v["log_prior"]) ** 2
    )


class Step(NamedTuple):
    """One displayed equality ``left = right`` of App. A.1.

    ``error`` names the mistake a failure points to (two steps can share one, e.g. a typo
    that appears and then silently disappears); ``reading`` is non-empty when the step's
    outcome depends on how an ambiguous definition is read.
    """

    label: str
    left: Callable[[Inputs], float]
    right: Callable[[Inputs], float]
    error: str
    reading: str = ""


_EQ28 = "eq. (28) carries an extra −ℓ̃(θ̂) that eqs. (26)-(27) do not give"
_C_READING = (
    "𝔠 read as its underbrace defines it (containing −3 log π); the text also calls 𝔠 "
    "prior-free, under which reading this step holds"
)

#: The consecutive equalities of App. A.1 after eq. (26), in the paper's order.
STEPS = (
    Step("eqs. (26)-(27) => eq. (28): b*", b_from_26_27, b_eq28, _EQ28),
    Step(
        "p̂^α = p(ŷ + b*): eq. (27)'s integrand (b*)²e^K vs the printed |b*|e^K (ŷ = f)",
        _p1,
        _p2,
        "the p̂^α display uses |y − f| where eq. (27) integrates (y − f)²",
    ),
    Step("|b*|e^K with b* of eq. (28) = |∛(3/2(1 − α)e^{−K})|e^K", _p2, _p3, _EQ28),
    Step(
        "line 3 → line 4 (∛ taken into the exponent)",
        _p3,
        _p4,
        "line 4: the exponent is divided by 3 inside a cube root that is kept; even with the "
        "root applied once, log|I_ℓD|/6 should be log|I_ℓD|/3",
    ),
    Step("line 4 = line 5", _p4, _p5, "line 4 → line 5"),
    Step("line 5 = line 6 (final p̂^α)", _p5, _p6, "line 5 → line 6"),
    Step(
        "final p̂^α = rewrite ∛(9/4)(1 − α)^{2/3}exp[𝔠/3 + log π]",
        _p6,
        _p7,
        "the rewrite of p̂^α in terms of 𝔠",
    ),
    Step(
        "threshold of eq. (29) = p̂_L = p̂^α exp[𝔠 − 3 log π]",
        _threshold_29,
        _threshold_final,
        "−3 log π counted twice in p̂_L",
        _C_READING,
    ),
    Step(
        "p̂_L = ∛(9/4)(1 − α)^{2/3} exp[4𝔠/3 − 2 log π]",
        _threshold_final,
        _threshold_closed,
        "",
    ),
    Step(
        "… = ∛(9/4 (1 − α)²) e^{4𝔠/3} π(θ̂)^{−2} (final display)",
        _threshold_closed,
        _threshold_equivalent,
        "",
    ),
)


def random_inputs(rng: np.random.Generator) -> Inputs:
    """Values of the named quantities in ranges a small model produces (α ∈ (0, 0.5))."""
    n = float(rng.integers(20, 10_000))
    return {
        "q": float(rng.integers(1, 4)),
        "log_ratio": float(np.log(2 * np.pi / n)),
        "logdet_I": float(rng.uniform(-2.0, 2.0)),
        "logdet_ID": float(rng.uniform(-2.0, 2.0)),
        "ell_D": float(rng.uniform(-3.0, 0.0)),
        "ell_tilde": float(rng.uniform(-3.0, -0.1)),
        "log_prior": float(rng.uniform(-3.0, -0.5)),
        "alpha": float(rng.uniform(0.01, 0.5)),
    }


def chain_discrepancies(samples: list[Inputs]) -> dict[str, float]:
    """Largest |log(left / right)| of every step of :data:`STEPS` over ``samples``."""
    out = {}
    for step in STEPS:
        gaps = [abs(np.log(step.left(v) / step.right(v))) for v in samples]
        out[step.label] = float(max(gaps))
    return out


def eq27_error(y_hat: float, f: float, b: float) -> float:
    """Relative error of eq. (27)'s antiderivative, ∫_{ŷ−b}^{ŷ+b}(y − f)²dy = 2b³/3 (its
    integrand is wrong: :func:`eq27_likelihood_vs_loss`), by adaptive quadrature."""
    if not b > 0:
        raise ValueError(f"b must be positive; got b={b}")
    value, _ = integrate.quad(lambda y: (y - f) ** 2, y_hat - b, y_hat + b, epsabs=0, epsrel=1e-12)
    return abs(value - 2 * b**3 / 3) / value


def eq27_likelihood_vs_loss(bs: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0)) -> float:
    """Spread of log[∫ 𝓛 dy / ∫ (y − f)² dy] over half-widths b, 𝓛 = exp ℓ̃ (Gaussian in y).

    Eq. (26) turns ∫ exp ℓ̃(θ̂) dy into ∫ 𝓛 dy, so 𝓛 is the likelihood (eq. 32:
    ℓ = log 𝓛); for the L2 loss, ℓ̃ = −(y − f)²/(2σ²) + const. Eq. (27) then sets
    𝓛 = (y − f)², the loss itself. If the two were proportional, the log ratio of their
    integrals over [f − b, f + b] would not depend on b; the returned max − min measures by
    how much it does (σ = 1; any σ and constant only shift the log ratio).
    """
    if len(bs) < 2 or not all(b > 0 for b in bs):
        raise ValueError(f"bs must hold at least two positive half-widths; got {bs!r}")
    logs = []
    for b in bs:
        lik, _ = integrate.quad(lambda y: np.exp(-(y**2) / 2), -b, b, epsabs=0, epsrel=1e-12)
        logs.append(np.log(lik / (2 * b**3 / 3)))
    return float(max(logs) - min(logs))


class Region(NamedTuple):
    """The A.1 region {|y − f| ≥ t} under a Gaussian predictive N(f, s²), in units of s."""

    t_for_coverage: float  # the t at which P(|Y − f| ≥ t) = 1 − α
    hdr_half_width: float  # the true (1 − α) HDR is |y − f| ≤ this
    density_ratio: float  # sup of the density on the region / density at the excluded mode


def gaussian_region(alpha: float) -> Region:
    """Shape of the final region of App. A.1 against the Gaussian predictive of its ¶1."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got alpha={alpha}")
    t = float(stats.norm.ppf(0.5 + alpha / 2))
    return Region(t, float(stats.norm.ppf(1 - alpha / 2)), float(np.exp(-(t**2) / 2)))
