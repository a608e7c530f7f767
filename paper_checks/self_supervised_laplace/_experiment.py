"""The conjugate experiments of Rodemann et al. (App. B.1) shared by the claims in
:mod:`laplace_lab.paper_checks.self_supervised_laplace.claims`: one cached run per (seed, mode),
OLS rate fits and the figures (the paper's Figures 1 and 3, divergence and refit-gap rates, float32
eq. 16).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from laplace_lab.paper_checks.self_supervised_laplace import _audits
from laplace_lab.paper_checks.verification import (
    Context,
    Mutant,
    Status,
    cached,
    decisions,
    require,
)
from laplace_lab.paper_checks.verification.comparisons import t_quantile
from laplace_lab.theory.conjugate_base import ConjugateModel
from laplace_lab.theory.rates import RateFit
from laplace_lab.theory.ssla import ssla_predictive
from laplace_lab.theory.ssla_rates import (
    PAPER_NS,
    divergence_curve,
    exact_predictive,
    paper_model,
    prefix_statistics,
    refit_gaps,
)

PAPER = "self-supervised-laplace"
MODELS = ("normal-normal", "poisson-gamma")
#: (label, variant, hessian): the paper's SSLA (eq. 12) and ASSLA (eq. 17), and the
#: log-joint ("posterior") variants (exact for Gaussian-linear models).
METHODS = (
    ("SSLA", "refit", "likelihood"),
    ("ASSLA", "approx", "likelihood"),
    ("SSLA-post", "refit", "posterior"),
    ("ASSLA-post", "approx", "posterior"),
)
DIVERGENCES = ("KL(approx||exact)", "KL(exact||approx)", "TV", "W1")
#: fixed self-predicted value for Lemma 1 / Theorem 1 (≈ 2 sd above both true means)
Y_FIXED = 7.0
#: "close to perfect" (§5): at most 5 % of the probability mass misplaced
TV_CLOSE = 0.05


@cached(maxsize=4)
def samples(seed: int, full: bool) -> dict[str, list[list[Any]]]:
    """The prefix statistics (one list over :data:`PAPER_NS`) of every replication, per model.

    The experiments' only random draws, in the order of :data:`MODELS` and then of the
    replications; everything computed from them is deterministic.
    """
    rng = Context(seed=seed).rng("conjugate-experiment")
    reps = 30 if full else 8
    out: dict[str, list[list[Any]]] = {}
    for name in MODELS:
        model, truth = paper_model(name)
        out[name] = [
            prefix_statistics(model, rng, PAPER_NS, theta_true=truth) for _ in range(reps)
        ]
    return out


@cached(maxsize=4)
def divergence_curves(seed: int, full: bool) -> dict[str, dict[str, np.ndarray]]:
    """Divergences (R × n × 4) per model and method, on the statistics of :func:`samples`."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, reps in samples(seed, full).items():
        model, _ = paper_model(name)
        curves: dict[str, list[np.ndarray]] = {label: [] for label, _, _ in METHODS}
        for st in reps:
            exact = [exact_predictive(model, s) for s in st]  # shared by the four methods
            for label, v, h in METHODS:
                curve = divergence_curve(model, st, variant=v, hessian=h, exact=exact)
                curves[label].append(np.array(curve))
        out[name] = {label: np.stack(c) for label, c in curves.items()}
    return out


@cached(maxsize=4)
def experiment(seed: int, full: bool) -> dict[str, Any]:
    """Divergences (R × n × 4) per model and method, refit gaps (R × n × 5) per model."""
    stats, divs = samples(seed, full), divergence_curves(seed, full)
    out: dict[str, Any] = {}
    for name in MODELS:
        model, _ = paper_model(name)
        out[name] = {
            "model": model,
            "stats": stats[name][0],
            "div": divs[name],
            "gaps": np.stack(
                [np.array([refit_gaps(model, s, Y_FIXED) for s in st]) for st in stats[name]]
            ),
        }
    return out


#: Mutants whose replacements reach neither the sampling nor the sufficient statistics
#: reuse the replications' statistics; those that change only the refit gaps also reuse the
#: divergences.
REUSES_SAMPLES = (samples,)
REUSES_DIVERGENCES = (samples, divergence_curves)


#: below these a divergence is roundoff (float64 means ~4 carry errors ~1e-15)
ROUNDOFF_FLOOR = {0: 1e-26, 1: 1e-26, 2: 1e-13, 3: 1e-13}


def fit(values: np.ndarray, ns: tuple[int, ...] = PAPER_NS, floor: float = 0.0) -> RateFit:
    """Pooled OLS rate over replications (values: R × len(ns)); points below ``floor``
    (roundoff) are left out."""
    n = np.tile(np.asarray(ns, float), values.shape[0])
    v = values.reshape(-1)
    keep = v > floor
    return _audits.fit_rate(n[keep], v[keep])


def replications(exp: dict[str, Any]) -> int:
    """The number of replications of an :func:`experiment` run."""
    return int(exp["normal-normal"]["gaps"].shape[0])


def fit_json(f: RateFit) -> dict[str, float]:
    return {"slope": round(f.slope, 4), "ci95": [round(f.ci_low, 4), round(f.ci_high, 4)]}


#: tolerance on a fitted exponent (finite-n curvature, e.g. 1/(n + 1) against 1/n at n = 20)
SLOPE_TOL = 0.05


def replicate_slopes(
    values: np.ndarray, ns: tuple[int, ...] = PAPER_NS, floor: float = 0.0
) -> np.ndarray:
    """The OLS slope of log value on log n of each replication (values: R × len(ns)); points
    at or below ``floor`` (roundoff) are left out, and a replication needs 3 points left."""
    x = np.log(np.asarray(ns, dtype=np.float64))
    out = []
    for row in np.asarray(values, dtype=np.float64):
        require(bool(np.all(np.isfinite(row))), f"a gap or divergence is not finite: {row}")
        keep = row > floor
        require(int(keep.sum()) >= 3, f"fewer than 3 points above the floor {floor:g}: {row}")
        out.append(float(np.polyfit(x[keep], np.log(row[keep]), 1)[0]))
    return np.asarray(out)


def rate_decision(
    series: dict[str, np.ndarray],
    rate: float,
    tol: float = SLOPE_TOL,
    *,
    ns: tuple[int, ...] = PAPER_NS,
    floor: float = 0.0,
    command: str = "",
) -> decisions.Decision:
    """ "Every series decays like O(n^rate) or faster", by the superiority rule.

    One statistic per replication: the slope of each replication's log series on log n
    (:func:`replicate_slopes`; the n of one replication share its data, so they are not
    replicates). Each series' mean slope must lie significantly below ``rate + tol`` (the
    one-sided t over replications, every series); a slope significantly above it at α/m
    refutes; otherwise INCONCLUSIVE. ``tol`` is the slack for finite-n curvature.
    """
    this = sys.modules[__name__]
    tests = [
        this._slope_test(
            f"slope of log {label} on log n", replicate_slopes(values, ns, floor), rate + tol
        )
        for label, values in series.items()
    ]
    return decisions.superiority(tests, command=command)


def _slope_test(label: str, slopes: np.ndarray, threshold: float) -> decisions.Test:
    """The one-sided test of the mean slope below ``threshold``."""
    return decisions.test(label, slopes, threshold=threshold, side=-1)


def _slope_test_at_threshold(label: str, slopes: np.ndarray, threshold: float) -> decisions.Test:
    """The same test with the slopes moved to mean ``threshold``, their spread kept."""
    return decisions.test(label, slopes - slopes.mean() + threshold, threshold=threshold, side=-1)


#: The null mutant of every rate claim: the slopes at the threshold on average (no effect).
SLOPES_AT_THRESHOLD = Mutant(
    "slopes-at-the-threshold",
    "every series' slopes moved to the threshold rate on average, their spread kept (no "
    "effect): the rule must answer INCONCLUSIVE",
    {(sys.modules[__name__], "_slope_test"): _slope_test_at_threshold},
    expect=Status.INCONCLUSIVE,
    reuses=(experiment,),
)


def fit_decision(
    fits: dict[str, RateFit], rate: float, tol: float = SLOPE_TOL
) -> decisions.Decision:
    """The superiority rule on slopes fitted to one sample path each (no replications): the
    OLS slope's t test with n_points − 2 degrees of freedom, its standard error read off the
    fit's 95% interval."""
    tests = []
    for label, f in fits.items():
        df = f.n_points - 2
        se = (f.ci_high - f.slope) / t_quantile(0.975, df)
        mean = sys.modules[__name__]._fitted_slope(f, rate + tol)
        tests.append(
            decisions.test(
                f"slope of log {label} on log n",
                mean=mean,
                se=se,
                df=df,
                threshold=rate + tol,
                side=-1,
            )
        )
    return decisions.superiority(tests)


def _fitted_slope(f: RateFit, threshold: float) -> float:
    return f.slope


#: The null mutant of a rate fitted to one sample path: the slope at the threshold.
FITTED_SLOPE_AT_THRESHOLD = Mutant(
    "fitted-slope-at-the-threshold",
    "every fitted slope at the threshold rate, its standard error kept (no effect): the rule "
    "must answer INCONCLUSIVE",
    {(sys.modules[__name__], "_fitted_slope"): lambda f, threshold: threshold},
    expect=Status.INCONCLUSIVE,
)


def slopes_text(fits: dict[str, RateFit]) -> str:
    return "; ".join(
        f"{m} {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]" for m, f in fits.items()
    )


# --------------------------------------------------------------------------- figures
def predictive_figure(name: str, exp: dict[str, Any]) -> Figure:
    model: ConjugateModel = exp["model"]
    fig = Figure(figsize=(13, 7), layout="constrained")
    axes = fig.subplots(2, 3).ravel()
    for ax, n, s in zip(axes, PAPER_NS, exp["stats"], strict=True):
        exact = exact_predictive(model, s)
        ssla = ssla_predictive(model, s, variant="refit", hessian="likelihood")
        assla = ssla_predictive(model, s, variant="approx", hessian="likelihood")
        if model.discrete:
            k = np.arange(0, 13)
            ax.plot(k, exact.pmf(k), "o-", color="green", label="analytic", lw=3, alpha=0.5)
            ax.plot(k, ssla.pmf(k), "s--", color="red", label="SSLA", ms=4)
            ax.plot(k, assla.pmf(k), "x:", color="black", label="ASSLA")
        else:
            m, sd = exact.mean(), exact.std()
            y = np.linspace(m - 4 * sd, m + 4 * sd, 400)
            ax.plot(y, exact.pdf(y), color="green", label="analytic", lw=3, alpha=0.5)
            ax.plot(y, ssla.pdf(y), "--", color="red", label="SSLA")
            ax.plot(y, assla.pdf(y), ":", color="black", label="ASSLA")
        i = PAPER_NS.index(n)
        tv_s, tv_a = exp["div"]["SSLA"][0, i, 2], exp["div"]["ASSLA"][0, i, 2]
        ax.set_title(f"n = {n:,}\nTV: SSLA {tv_s:.1e}, ASSLA {tv_a:.1e}", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{name}: analytic vs SSLA (eq. 12) vs ASSLA (eq. 17) predictive")
    return fig


def rates_figure(exp: dict[str, Any]) -> tuple[Figure, dict[str, Any]]:
    fig = Figure(figsize=(12, 8), layout="constrained")
    axes = fig.subplots(2, 2)
    fits: dict[str, Any] = {}
    ns = np.asarray(PAPER_NS, float)
    for row, name in enumerate(MODELS):
        fits[name] = {}
        for col, (j, dname) in enumerate(((0, "KL(approx||exact)"), (2, "TV"))):
            ax = axes[row, col]
            for label, _, _ in METHODS:
                vals = exp[name]["div"][label][:, :, j]
                floor = ROUNDOFF_FLOOR[j]
                if np.sum(np.all(vals > floor, axis=0)) < 3:  # exact up to roundoff
                    fits[name].setdefault(label, {})[dname] = f"exact (<= {floor:g}, roundoff)"
                    continue
                f = fit(vals, floor=floor)
                fits[name].setdefault(label, {})[dname] = fit_json(f)
                logs = np.log(np.maximum(vals, floor))
                valid = vals > floor
                cnt = valid.sum(axis=0)
                mean = np.full(cnt.shape, np.nan)  # geometric mean over replications
                mean[cnt > 0] = np.exp((logs * valid).sum(axis=0)[cnt > 0] / cnt[cnt > 0])
                line = ax.loglog(ns, mean, "o", ms=4)[0]
                ax.loglog(
                    ns,
                    np.exp(f.intercept) * ns**f.slope,
                    "-",
                    color=line.get_color(),
                    label=f"{label}: slope {f.slope:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]",
                )
            first = float(np.exp(np.mean(np.log(exp[name]["div"]["ASSLA"][:, 0, j]))))
            rate = -1.0 if dname == "TV" else -2.0
            ax.loglog(
                ns, first * (ns / ns[0]) ** rate, "--", color="grey", lw=1, label=f"slope {rate:g}"
            )
            ax.set_title(f"{name}: {dname}", fontsize=10)
            ax.set_xlabel("n")
            ax.legend(fontsize=7)
    fig.suptitle("Divergence from the analytic predictive vs n (OLS on log-log, 95% CI)")
    return fig, fits


def gaps_figure(exp: dict[str, Any]) -> Figure:
    fig = Figure(figsize=(12, 4.5), layout="constrained")
    axes = fig.subplots(1, 2)
    ns = np.asarray(PAPER_NS, float)
    labels = ("|θ̃ − θ̂| (Lemma 1)", "ℓ̃(θ̃) − ℓ̃(θ̂) (Thm 1)", "ℓ_D(θ̂) − ℓ_D(θ̃) (eq. 19)")
    for ax, name in zip(axes, MODELS, strict=True):
        g = exp[name]["gaps"]
        for j, lab in enumerate(labels):
            if not np.all(g[:, :, j] > 0):  # a gap that is not positive has no log-log rate
                continue
            f = fit(g[:, :, j])
            ax.loglog(
                ns,
                np.exp(np.mean(np.log(g[:, :, j]), axis=0)),
                "o-",
                label=f"{lab}: slope {f.slope:.2f}",
            )
        ax.loglog(ns, 0.5 * ns**-1.0, "--", color="grey", lw=1, label="n^-1 (Lemma 1, Thm 1)")
        ax.loglog(ns, 0.5 * ns**-2.0, "k:", label="n^-2 (what eq. 19 claims)")
        ax.set_title(f"{name}, fixed ŷ = {Y_FIXED}", fontsize=10)
        ax.set_xlabel("n")
        ax.legend(fontsize=7)
    return fig


def float32_eq16(model: ConjugateModel, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """ASSLA by eq. (16), ℓ̃(θ̂) − ℓ_D(θ̂) + ½log J − ½log J̃, with the log-likelihoods
    accumulated in float32 (as a float32 deep-learning loss would be)."""
    f32 = np.float32
    x32 = x.astype(f32)
    th = f32(np.mean(x, dtype=np.float64))
    s2 = f32(model.noise_var)
    c = f32(-0.5) * f32(np.log(2 * np.pi * model.noise_var))
    ld = np.sum(c - (x32 - th) ** 2 / (f32(2) * s2), dtype=f32)
    lnew = c - (grid.astype(f32) - th) ** 2 / (f32(2) * s2)
    lt = (ld + lnew).astype(f32)  # ℓ̃(θ̂) = ℓ_D(θ̂) + ℓ_new(θ̂), rounded to float32
    return (lt - ld).astype(np.float64)  # J = J̃ = n/σ²: the log-det terms cancel
