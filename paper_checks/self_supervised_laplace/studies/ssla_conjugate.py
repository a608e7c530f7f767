"""Study ``ssla-conjugate``: SSLA and ASSLA against the analytic predictive, over n.

Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification", arXiv:2605.12208, §3–4 (SSLA eq. 12, ASSLA eq. 17) and App. B.1 (the
conjugate experiments). Per replication: n observations from the paper's setup
(normal–normal μ_true = 4, σ² = 2, prior N(4, 1); Poisson–gamma λ_true = 3, prior
Gamma(6, 2): :func:`laplace_lab.theory.ssla_rates.paper_model`), the four approximations
(SSLA / ASSLA × likelihood / posterior Hessian, :func:`laplace_lab.theory.ssla.ssla_predictive`,
normalised over ŷ) and their divergences from the analytic predictive
(:func:`laplace_lab.theory.divergences.divergences`: KL(approx‖exact), total variation, W1).

Unlike the single nested sample of the paper's figures, every n gets independent data sets,
so the means over replications, their intervals and the fitted slopes are those of the
*expected* divergence. The slopes derived in :mod:`laplace_lab.theory.ssla_rates`: ASSLA
— TV, W1 ∝ n⁻¹, KL ∝ n⁻²; SSLA (likelihood Hessian) — normal–normal in the paper's setup
(μ_true = μ0) TV ∝ n^-5/2, KL ∝ n⁻⁵; Poisson–gamma TV ∝ n⁻², KL ∝ n⁻⁴; SSLA (posterior
Hessian) — exact for normal–normal, Poisson–gamma TV ∝ n⁻², KL ∝ n⁻⁴.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from laplace_lab._checks import one_of, positive_int
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study
from laplace_lab.studies.summary import SummaryRow, fit_rates
from laplace_lab.theory.divergences import divergences
from laplace_lab.theory.ssla import ssla_predictive
from laplace_lab.theory.ssla_rates import PAPER_NS, exact_predictive, paper_model

__all__ = ["EXPECTED_SLOPES", "FLOORS", "STUDY", "check_params", "run_one"]

#: (method, Hessian) → the variant names of :func:`laplace_lab.theory.ssla.ssla_predictive`.
METHODS = {
    "ssla_lik": ("refit", "likelihood"),
    "ssla_post": ("refit", "posterior"),
    "assla_lik": ("approx", "likelihood"),
    "assla_post": ("approx", "posterior"),
}
#: Means at or below these are roundoff (TV of two equal densities ~1e-16), not a rate.
FLOORS = {"kl": 1e-24, "tv": 1e-12, "w1": 1e-12}
#: Slopes in n derived in theory.ssla_rates; None: exact (divergence at roundoff).
EXPECTED_SLOPES = {
    ("normal-normal", "ssla_lik"): {"kl": -5.0, "tv": -2.5, "w1": -2.5},
    ("normal-normal", "ssla_post"): None,
    ("normal-normal", "assla_lik"): {"kl": -2.0, "tv": -1.0, "w1": -1.0},
    ("normal-normal", "assla_post"): {"kl": -2.0, "tv": -1.0, "w1": -1.0},
    ("poisson-gamma", "ssla_lik"): {"kl": -4.0, "tv": -2.0, "w1": -2.0},
    ("poisson-gamma", "ssla_post"): {"kl": -4.0, "tv": -2.0, "w1": -2.0},
    ("poisson-gamma", "assla_lik"): {"kl": -2.0, "tv": -1.0, "w1": -1.0},
    ("poisson-gamma", "assla_post"): {"kl": -2.0, "tv": -1.0, "w1": -1.0},
}


def check_params(params: dict) -> None:
    """Refuse a grid point ``run_one`` cannot run (a paper model, n ≥ 1)."""
    one_of(params["model"], "model", ("normal-normal", "poisson-gamma"))
    positive_int(params["n"], "n")


def run_one(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    """One data set of size n; divergences of the four approximations from the exact one."""
    model, theta_true = paper_model(params["model"])
    stats = model.sufficient_statistics(model.sample_data(params["n"], theta_true, rng=rng))
    exact = exact_predictive(model, stats)
    out = {}
    for method, (variant, hessian) in METHODS.items():
        approx = ssla_predictive(model, stats, variant=variant, hessian=hessian)
        d = divergences(approx, exact)
        out[f"{method}_kl"] = d.kl_forward
        out[f"{method}_tv"] = d.total_variation
        out[f"{method}_w1"] = d.wasserstein1
    return out


#: Legend names of the four approximations and the axis label of each divergence.
LABELS = {
    "ssla_lik": "SSLA, likelihood Hessian",
    "ssla_post": "SSLA, posterior Hessian",
    "assla_lik": "ASSLA, likelihood Hessian",
    "assla_post": "ASSLA, posterior Hessian",
}
DIVERGENCES = {
    "kl": "mean KL(approx ‖ exact)",
    "tv": "mean total variation",
    "w1": "mean Wasserstein-1",
}


def plot(summary: list[SummaryRow], path: Path) -> None:
    """One panel per model and divergence: the four approximations against n (log–log,
    95% intervals), fitted exponents in the legends, the derived slopes dashed."""
    from laplace_lab.studies.output import plot_rate

    models = sorted({s.params["model"] for s in summary})
    fig = Figure(figsize=(15.0, 4.4 * len(models)), layout="constrained")
    axes = fig.subplots(len(models), len(DIVERGENCES), squeeze=False)
    for row, model in zip(axes, models, strict=True):
        for ax, (div, ylabel) in zip(row, DIVERGENCES.items(), strict=True):
            for method, name in LABELS.items():
                items = [
                    s
                    for s in summary
                    if s.params["model"] == model and s.metric == f"{method}_{div}"
                ]
                expected = EXPECTED_SLOPES.get((model, method))
                if expected is None or all(s.mean <= FLOORS[div] for s in items):
                    ax.plot([], [], " ", label=f"{name}: exact (at roundoff, not drawn)")
                    continue
                plot_rate(ax, items, "n", label=name, expected=expected[div], floor=FLOORS[div])
            ax.set_xlabel("n")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{model}: {div.upper()} (dashed: derived slope)")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7)
    fig.suptitle("SSLA / ASSLA against the analytic predictive (fitted exponent [95% CI])")
    fig.savefig(path, dpi=110)


def report(summary: list[SummaryRow]) -> str:
    """Fitted slopes of the mean divergences in n next to the derived ones."""
    lines = ["Mean divergence from the analytic predictive against n (log-log OLS, 95% CI):"]
    for (model, method), expected in EXPECTED_SLOPES.items():
        for div in ("kl", "tv", "w1"):
            fits = fit_rates(summary, f"{method}_{div}", x="n", floor=FLOORS[div])
            fit = fits.get((("model", model),))
            want = "exact" if expected is None else f"{expected[div]:g}"
            got = (
                "at roundoff (no rate)"
                if fit is None
                else f"n^{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}]"
            )
            lines.append(f"  {model:13s} {method:10s} {div:2s}: {got}  derived: {want}")
    return "\n".join(lines)


STUDY = register(
    Study(
        name="ssla-conjugate",
        description=(
            "SSLA / ASSLA (likelihood and posterior Hessians) against the analytic "
            "predictive on the paper's normal-normal and Poisson-gamma setups: KL, TV, W1 "
            "over n with replications, fitted rates vs the derived ones."
        ),
        grid={"model": ("normal-normal", "poisson-gamma"), "n": PAPER_NS[:-1]},
        full_grid={"model": ("normal-normal", "poisson-gamma"), "n": PAPER_NS},
        replications=50,
        full_replications=500,
        run_one=run_one,
        x="n",
        plot=plot,
        report=report,
        check_params=check_params,
    )
)
