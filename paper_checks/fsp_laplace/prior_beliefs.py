"""Claims that FSP-Laplace follows the GP prior's beliefs on the synthetic tasks of App. B.1
(Cinquin et al., arXiv:2407.13711, §4 "Qualitative evaluation", Figs. 1, C.2, C.5, C.6).

Set-ups (:mod:`._synthetic`): 1-D regression on sin(2πx) and two moons, tanh MLPs trained by
Algorithm 1, GP priors with marginal-likelihood hyperparameters, Algorithm 2 at 100 grid
context points; the baselines are the weight-space MAP (σ_p = 1) and its linearised Laplace
approximation (full GGN). Every quantity is measured, never read off a figure:

- ``two-moons-boundary-roughness``: the total absolute turning ∫|κ| ds of the decision boundary
  (the 0.5 contour of the predictive, i.e. f(x, w*) = 0: the probit link keeps the sign) in
  the data region, Matérn-½ against RBF;
- ``reverts-to-prior-mean``: confidence and variance away from the data, FSP against the
  MAP and the Laplace baselines;
- ``periodic-prior``: periodicity of the FSP posterior mean under a periodic prior.

Each statistic is measured on independent replicates — data set, prior fit and network
initialisation drawn afresh, the replicates shared by the three claims — and decided on the t
interval of its mean (:mod:`laplace_lab.paper_checks.verification.replicates`), looked at
after the replicate counts of :data:`LOOKS` while the interval contains the threshold, and the
replicates drawn are decided by the superiority rule
(:func:`laplace_lab.paper_checks.verification.replicates.decide`: one-sided t at the level of
one look; the reverse ordering significant refutes). A claim whose statistics are still
undecided at the last look is INCONCLUSIVE at that budget, with the command that runs the
paper-scale looks; the recorded paper-scale run (``recorded/replicated_full.json``),
re-decided by the same rule from its stored replicates, is its headline evidence.
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.networks.fsp_training import train_fsp_map
from laplace_lab.paper_checks.fsp_laplace import _synthetic as synthetic
from laplace_lab.paper_checks.fsp_laplace._real_data import REPLICATED_RECORD, redecided
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    cached,
    claim,
    decisions,
)
from laplace_lab.paper_checks.verification.replicates import (
    LEVEL,
    Check,
    conjunction,
    decide,
    design_text,
    look_level,
)

PAPER = "fsp-laplace"
#: One unit of work with algorithm2.py, whose step-9 claim reads the same FSP-Laplace fits
#: of the synthetic tasks (cached experiments are per process).
WORK_UNIT = "synthetic-fits"

#: The replicate counts at which the t interval is looked at (quick, full): the sequential
#: design of :mod:`laplace_lab.paper_checks.verification.replicates`, fixed before measuring.
LOOKS = {False: (3, 4, 5), True: (5, 10, 20, 40, 80)}

#: "Rough" vs "smooth", fixed before measuring: the Matérn-½ boundary turns at least 1.5× as
#: much as the RBF one (half again as many radians of direction change).
ROUGHNESS_RATIO = 1.5
#: The data region of two moons (inputs span [−1.1, 2.1] × [−0.7, 1.1]) and its grid.
REGION = (np.linspace(-1.5, 2.5, 101), np.linspace(-1.0, 1.5, 81))

#: Why the recorded paper-scale run of a claim counts.
FULL_WHY = (
    "the paper-scale run: the paper's network sizes and training (3000 Adam steps), the "
    "sequential design's full looks (5, 10, 20, 40, 80 replicates)"
)


def alpha(full: bool) -> float:
    """The one-sided level of one look of the design of mode ``full``."""
    return (1.0 - look_level(LOOKS[full])) / 2.0


def _command(name: str) -> str:
    return f"laplace-lab check --full --claim {PAPER}/{name}"


def _design_point(full: bool) -> str:
    return design_text(LOOKS[full], "replicates (data set, prior fit, initialisation)")


def _inconclusive(results) -> str:
    """The reason of an INCONCLUSIVE verdict: the first interval that contains its threshold
    (and how many more do)."""
    open_ = [r for r in results if r.outcome == "inconclusive"] or list(results)
    e = open_[0].estimate
    more = f" (and {len(open_) - 1} more)" if len(open_) > 1 else ""
    return (
        f"{open_[0].check.label} {e.mean:.3g}, interval [{e.low:.3g}, {e.high:.3g}] contains "
        f"{e.threshold:g}{more}"
    )


def _full_mode(name: str, ctx: Context, decide_recorded) -> tuple[tuple, list[str], str]:
    """In quick mode: the recorded full-mode run of claim ``name`` re-decided from its stored
    replicates by ``decide_recorded`` (stored details → Decision), its evidence line and
    " (full mode, recorded: STATUS)" for an undecided quick reason; in full mode nothing."""
    if ctx.full:
        return (), [], ""
    recorded, lines, d = redecided(name, decide_recorded, record=REPLICATED_RECORD, why=FULL_WHY)
    return recorded, lines, f" (full mode, recorded: {d.status.value})"


def total_turning(values: np.ndarray, level: float = 0.0) -> tuple[float, float, int]:
    """Total absolute turning Σ|Δθ| (radians), length and number of pieces of the ``level``
    contour of ``values`` on the :data:`REGION` grid (values shaped (81, 101) or flat)."""
    import contourpy

    gx, gy = REGION
    lines = contourpy.contour_generator(gx, gy, values.reshape(gy.size, gx.size)).lines(level)
    turning, length = 0.0, 0.0
    for line in lines:
        d = np.diff(line, axis=0)
        d = d[np.linalg.norm(d, axis=1) > 0]
        length += float(np.linalg.norm(d, axis=1).sum())
        angles = np.arctan2(d[:, 1], d[:, 0])
        turning += float(np.abs(np.angle(np.exp(1j * np.diff(angles)))).sum())
    return turning, length, len(lines)


def _region_grid() -> np.ndarray:
    gx, gy = REGION
    return np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)


@cached
def boundary_turning(family: str, full: bool, seed: int, rep: int) -> dict:
    """Total turning (length, pieces) of the FSP decision boundary f(x, w*) = 0 and of the GP
    classifier's 0.5 contour on two-moons replicate ``rep``, with the fitted prior."""
    grid = _region_grid()
    fsp = synthetic.fit_fsp("moons", family, full, seed, rep=rep)
    kernel, gp = synthetic.fitted_kernel("moons", family, full, seed, rep)
    return {
        "fsp": total_turning(synthetic.network_mean(fsp, grid)),
        "gp": total_turning(gp.predict_proba(grid)[:, 1], 0.5)[0],
        "lengthscale": kernel.lengthscale,
        "variance": kernel.variance,
    }


def recorded_roughness(got: dict) -> decisions.Decision:
    """``two-moons-boundary-roughness`` on the stored replicates of a recorded run."""
    return decisions.superiority(
        # the recorded run's statistic, at the ratio 1.5 fixed before measuring
        decisions.test("FSP turning Matérn-½ − 1.5 × RBF (rad)", got["difference"]),
        alpha=alpha(True),
    )


@claim(
    paper=PAPER,
    name="two-moons-boundary-roughness",
    location="§4 'Qualitative evaluation', App. C.1, Figs. C.5 and C.6",
    statement=(
        "On two moons FSP-Laplace shows a smooth decision boundary with an RBF prior and a "
        "rough one with a Matérn-½ prior, like the GP."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "any-difference-is-rough",
            "'rough' read as turning more than 0.5× the RBF boundary",
            {(sys.modules[__name__], "ROUGHNESS_RATIO"): 0.5},
            expect=Status.CONFIRMED,
            reuses=(synthetic.fit_fsp, synthetic.fitted_kernel, boundary_turning),
        ),
    ),
)
def _roughness(ctx: Context) -> Verdict:
    """§4 "Qualitative evaluation" and App. C.1 (Figs. C.5, C.6): with an RBF prior
    FSP-Laplace's two-moons boundary is smooth, with a Matérn-½ prior rough, "like the GP";
    read as: the Matérn-½ boundary turns at least :data:`ROUGHNESS_RATIO` times as much."""
    threshold = sys.modules[__name__].ROUGHNESS_RATIO
    name = "two-moons-boundary-roughness"
    recorded, full, full_note = _full_mode(name, ctx, recorded_roughness)

    def turning(family: str, i: int) -> float:
        return boundary_turning(family, ctx.full, ctx.seed, i)["fsp"][0]

    check = Check(
        f"FSP turning Matérn-½ − {threshold:g} × RBF (rad)",
        lambda i: turning("Matern-1/2", i) - threshold * turning("RBF", i),
        0.0,
        +1,
    )
    d, (result,) = decide([check], looks=LOOKS[ctx.full], command=_command(name))
    n = result.estimate.n
    runs = {
        f: [boundary_turning(f, ctx.full, ctx.seed, i) for i in range(n)]
        for f in ("RBF", "Matern-1/2")
    }
    fsp = {f: float(np.mean([r["fsp"][0] for r in v])) for f, v in runs.items()}
    gp = {f: float(np.mean([r["gp"] for r in v])) for f, v in runs.items()}
    ratio, gp_ratio = fsp["Matern-1/2"] / fsp["RBF"], gp["Matern-1/2"] / gp["RBF"]
    rows = [
        f"{f} replicate {i} (ℓ = {r['lengthscale']:.2f}, σ² = {r['variance']:.1f}): FSP "
        f"{r['fsp'][0]:.1f} rad over length {r['fsp'][1]:.1f} in {r['fsp'][2]} piece(s), GP "
        f"{r['gp']:.1f} rad"
        for f, v in runs.items()
        for i, r in enumerate(v)
    ]
    status = d.status
    if status is Status.CONFIRMED:
        summary = f"Matérn-½ boundary turns {ratio:.2f}× the RBF one: {result.text()}"
    elif status is Status.REFUTED:
        summary = f"Matérn-½ boundary turns {ratio:.2f}× the RBF one, not {threshold:g}×"
    else:
        summary = (
            f"inconclusive at {n} replicates{full_note}: {_inconclusive([result])} (ratio of "
            f"the mean turnings {ratio:.2f})"
        )
    return Verdict(
        status,
        measured={
            "ratio of the mean turning (Matérn-½ / RBF)": round(ratio, 3),
            check.label: result.estimate.text(),
        },
        expected=f">= {threshold} (Matérn-½ turning / RBF turning)",
        tolerance=(
            "one-sided t at the level of one look of the sequential design of the mean over "
            f"replicates of the paired difference T(Matérn-½) − {threshold:g}·T(RBF) against 0"
        ),
        summary=summary,
        evidence=[
            "Total absolute turning of the decision boundary f(x, w*) = 0 (the 0.5 contour of "
            "the predictive) on a 101 × 81 grid of the data region [−1.5, 2.5] × [−1, 1.5], "
            "next to the Laplace GP classifier with the same prior.",
            _design_point(ctx.full),
            f"{result.text()}; mean turning over the {n} replicates FSP: RBF "
            f"{fsp['RBF']:.1f}, Matérn-½ {fsp['Matern-1/2']:.1f} rad (ratio {ratio:.2f}); GP: "
            f"RBF {gp['RBF']:.1f}, Matérn-½ {gp['Matern-1/2']:.1f} rad (ratio {gp_ratio:.2f}).",
            *(
                []
                if status is Status.CONFIRMED
                else [
                    "The marginal likelihood (Milios et al. labels, as in App. B.1) picks a "
                    "Matérn-½ length scale longer than the data (ℓ ≈ 4), and even the GP's "
                    "Matérn-½ boundary is nearly as smooth as its RBF one; between the context "
                    "points the network's own smoothness sets the boundary's shape."
                ]
            ),
            *rows,
            *full,
        ],
        recorded=recorded,
        details={
            "ratio": ratio,
            "gp_ratio": gp_ratio,
            "difference": result.estimate.values,
            "interval": [result.estimate.low, result.estimate.high],
            "rows": rows,
        },
        decision=d,
    )


def _far_points(t: synthetic.Task) -> np.ndarray:
    """Grid points of the context box at least 1.0 (moons) / 0.5 (1-D) from every input."""
    from scipy.spatial.distance import cdist

    box = synthetic.context_box(t)
    P = box.grid(401) if box.dim == 1 else box.grid(60)
    return P[cdist(P, t.X).min(axis=1) >= (0.5 if box.dim == 1 else 1.0)]


#: "Remain confident" vs "reverts": FSP's average confidence away from the data at most half
#: that of each baseline (fixed before measuring).
CONFIDENCE_FACTOR = 0.5


def _confidence(pred, likelihood: str) -> float:
    """Mean |p − ½| (classification) or mean |f| (regression, the prior mean is 0)."""
    if likelihood == "binary":
        return float(np.mean(np.abs(pred.probability - 0.5)))
    return float(np.mean(np.abs(pred.mean)))


@cached
def baseline_confidence(name: str, full: bool, seed: int, rep: int) -> dict[str, float]:
    """Confidence of the Laplace and MAP baselines away from the data on replicate ``rep``."""
    t = synthetic.task(name, full=full, seed=seed, rep=rep)
    la_far = synthetic.fit_laplace(name, full, seed, rep).predict(_far_points(t))
    out = {"Laplace": _confidence(la_far, t.likelihood)}
    if t.likelihood == "binary":
        out["MAP"] = float(np.mean(np.abs(1 / (1 + np.exp(-la_far.mean)) - 0.5)))
    else:  # the MAP's mean is the Laplace mean (the linearised predictive keeps it)
        out["MAP"] = out["Laplace"]
    return out


@cached
def fsp_away(name: str, family: str, full: bool, seed: int, rep: int) -> dict[str, float]:
    """FSP-Laplace's confidence away from the data and its mean predictive sd away from the
    data over that at the data, on replicate ``rep``."""
    t = synthetic.task(name, full=full, seed=seed, rep=rep)
    fsp = synthetic.fit_fsp(name, family, full, seed, rep=rep)
    pf = fsp.predict(_far_points(t))
    sd_ratio = float(np.sqrt(pf.variance).mean() / np.sqrt(fsp.predict(t.X).variance).mean())
    return {"FSP": _confidence(pf, t.likelihood), "sd_ratio": sd_ratio}


def _flat_prior():
    original = train_fsp_map

    class Flat:
        """The prior's covariance × 1e6: the RKHS term no longer pulls towards μ."""

        def __init__(self, kernel):
            self.kernel = kernel

        def __call__(self, X1, X2=None):
            return 1e6 * self.kernel(X1, X2)

        def diag(self, X):
            return 1e6 * self.kernel.diag(X)

    def wrong(model, X, y, **kwargs):
        return original(model, X, y, **{**kwargs, "kernel": Flat(kwargs["kernel"])})

    return wrong


#: The (task, family) configurations of ``reverts-to-prior-mean``, the cheaper fits first.
REVERT_CONFIGS = (
    ("moons", "RBF"),
    ("moons", "Matern-1/2"),
    ("regression", "Matern-1/2"),
    ("regression", "RBF"),
)


def _revert_checks(ctx: Context) -> tuple[list[Check], dict[str, tuple[str, str]]]:
    """The checks of ``reverts-to-prior-mean`` and the configuration of each (by label)."""
    factor = CONFIDENCE_FACTOR
    checks, config = [], {}
    for name, family in REVERT_CONFIGS:
        what, start = ("mean |p − ½|" if name == "moons" else "mean |f|"), len(checks)
        for base in ("Laplace", "MAP") if name == "moons" else ("Laplace",):
            checks.append(
                Check(
                    f"{name} {family}: {what} away from the data, FSP − {factor:g}·{base}",
                    lambda i, n=name, f=family, b=base: (
                        fsp_away(n, f, ctx.full, ctx.seed, i)["FSP"]
                        - factor * baseline_confidence(n, ctx.full, ctx.seed, i)[b]
                    ),
                    0.0,
                    -1,
                )
            )
        checks.append(
            Check(
                f"{name} {family}: FSP sd away / at the data",
                lambda i, n=name, f=family: fsp_away(n, f, ctx.full, ctx.seed, i)["sd_ratio"],
                1.0,
                +1,
            )
        )
        config.update({c.label: (name, family) for c in checks[start:]})
    return checks, config


def recorded_reverts(got: dict) -> decisions.Decision:
    """``reverts-to-prior-mean`` on the stored replicates of a recorded run (label →
    {"values": ...}), with the thresholds and sides of :func:`_revert_checks`."""
    checks, _ = _revert_checks(Context(full=True))
    tests = [
        decisions.test(c.label, got[c.label]["values"], threshold=c.threshold, side=c.side)
        for c in checks
        if c.label in got
    ]
    return decisions.superiority(tests, alpha=alpha(True))


@claim(
    paper=PAPER,
    name="reverts-to-prior-mean",
    location="§4 'Qualitative evaluation'; App. C.1; Figs. 1, C.1, C.5, C.6",
    statement=(
        "Unlike the Laplace and MAP baselines, whose predictions remain confident beyond the "
        "support of the data, FSP-Laplace's posterior mean reverts to the zero prior mean and "
        "its posterior variance increases."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "prior-scale-ignored",
            "Algorithm 1 with the prior covariance scaled by 1e6 (no pull towards μ = 0)",
            {train_fsp_map: _flat_prior()},
            reuses=(synthetic.fit_laplace, synthetic.fitted_kernel, baseline_confidence),
        ),
    ),
)
def _reverts(ctx: Context) -> Verdict:
    """§4 "Qualitative evaluation": "unlike the Laplace and MAP baselines, whose predictions
    remain confident beyond the support of the data, FSP-LAPLACE's posterior mean reverts to
    the zero prior mean and its posterior variance increases" (Figs. 1, C.1, C.5, C.6)."""
    factor = CONFIDENCE_FACTOR
    claim_name = "reverts-to-prior-mean"
    checks, config = _revert_checks(ctx)
    recorded, full, full_note = _full_mode(claim_name, ctx, recorded_reverts)
    d, results = decide(checks, looks=LOOKS[ctx.full], command=_command(claim_name))
    rows = [r.text() for r in results]
    n = max(r.estimate.n for r in results)
    status = d.status
    if status is Status.CONFIRMED:
        summary = f"every configuration reverts ({n} replicates at most)"
    elif status is Status.REFUTED:
        summary = d.summary
    else:
        summary = f"inconclusive at {n} replicates{full_note}: " + _inconclusive(results)
    # replicates drawn per configuration by its confidence checks (−1) and its sd check (+1)
    drawn: dict[tuple[str, str], dict[int, int]] = {}
    for r in results:
        per = drawn.setdefault(config[r.check.label], {})
        per[r.check.side] = max(per.get(r.check.side, 0), r.estimate.n)
    means = []
    for (name, family), per in drawn.items():
        m, k = per.get(-1, 0), per.get(+1, 0)
        fsp = [fsp_away(name, family, ctx.full, ctx.seed, i) for i in range(max(m, k))]
        base = [baseline_confidence(name, ctx.full, ctx.seed, i) for i in range(m)]
        means.append(
            f"{name} {family}: mean confidence over {m} replicates FSP "
            f"{np.mean([v['FSP'] for v in fsp[:m]]):.3f}, Laplace "
            f"{np.mean([b['Laplace'] for b in base]):.3f}, MAP "
            f"{np.mean([b['MAP'] for b in base]):.3f}"
            + (
                f"; FSP sd away / at the data over {k} replicates "
                f"{np.mean([v['sd_ratio'] for v in fsp[:k]]):.2f}"
                if k
                else ""
            )
        )
    return Verdict(
        status,
        measured={r.check.label: r.estimate.text() for r in results},
        expected=f"FSP confidence ≤ {factor}× each baseline's; sd away / at data > 1",
        tolerance=(
            "thresholds fixed before measuring; one-sided t of the mean over replicates at the "
            "level of one look of the sequential design, every statistic"
        ),
        summary=summary,
        evidence=[
            "Grid points of the context box at least 0.5 (1-D) / 1.0 (two moons) from every "
            "training input; confidence = mean |p − ½| of the probit predictive (two moons) or "
            "mean |f| (regression; the prior mean is 0, the targets have scale 1). Per "
            f"replicate: FSP's confidence − {factor:g} × each baseline's (≤ 0 is 'reverts'), "
            "and FSP's mean predictive sd away from the data over that at the data (> 1).",
            _design_point(ctx.full),
            *rows,
            *means,
            *full,
        ],
        recorded=recorded,
        details={
            r.check.label: {"values": r.estimate.values, "outcome": r.outcome} for r in results
        },
        decision=d,
    )


#: "Periodic" fixed before measuring: RMS(m(x + T) − m(x)) ≤ 0.25 · RMS(m(x)) over the context
#: box, T the prior's period; and the mean must fit the data, RMSE ≤ 2σ_n = 0.2 (a constant is
#: periodic too).
PERIODICITY_TOL = 0.25
DATA_RMSE_TOL = 2 * synthetic.REGRESSION_NOISE
#: Σ(C, C) jitters tried (relative to the prior variance; the paper states none).
JITTERS = (1e-6, 1e-4, 1e-3)


def periodicity_error(mean_fn, period: float, low: float, high: float) -> float:
    """RMS(m(x + T) − m(x)) / RMS(m(x)) for x ∈ [low, high − T] on a 400-point grid."""
    x = np.linspace(low, high - period, 400)[:, None]
    a, b = mean_fn(x), mean_fn(x + period)
    return float(np.sqrt(np.mean((b - a) ** 2)) / np.sqrt(np.mean(a**2)))


@cached
def periodic_run(full: bool, seed: int, rep: int, jitter: float | None) -> dict[str, float]:
    """Periodicity error and data RMSE of the posterior mean under the periodic prior on
    regression replicate ``rep``: FSP-Laplace with ``jitter`` on Σ(C, C), or (None) the
    Laplace, whose network has no periodic features; with the prior's period and length
    scale."""
    t = synthetic.task("regression", full=full, seed=seed, rep=rep)
    kernel, _ = synthetic.fitted_kernel("regression", "Periodic", full, seed, rep)
    if jitter is None:
        fit = synthetic.fit_laplace("regression", full, seed, rep)
    else:
        fit = synthetic.fit_fsp("regression", "Periodic", full, seed, rep=rep, jitter=jitter)
    T = kernel.period
    return {
        "periodicity": periodicity_error(
            lambda x: synthetic.network_mean(fit, x), T, t.low, t.high
        ),
        "rmse": float(np.sqrt(np.mean((synthetic.network_mean(fit, t.X) - t.y) ** 2))),
        "period": T,
        "lengthscale": kernel.lengthscale,
        "variance": kernel.variance,
    }


#: The level of the sequential design of ``periodic-prior``: the design's level shared by the
#: jitters tried ("some jitter" is a union over them: Bonferroni).
PERIODIC_LEVEL = 1.0 - (1.0 - LEVEL) / len(JITTERS)


def periodic_alpha(full: bool) -> float:
    """The one-sided level of one look of ``periodic-prior``'s design (÷ the jitters)."""
    return (1.0 - look_level(LOOKS[full], PERIODIC_LEVEL)) / 2.0


def periodic_decision(
    values: dict[str, tuple[float, ...]],
    *,
    tol: float,
    rmse_tol: float,
    alpha: float,
    command: str = "",
) -> decisions.Decision:
    """The decision of ``periodic-prior`` on the replicates drawn (label → values).

    The Laplace's periodicity error must exceed ``tol`` and, for some jitter of
    :data:`JITTERS`, FSP's data RMSE stay below ``rmse_tol`` and its periodicity error below
    ``tol``. Each jitter is decided by the superiority rule on its tests and the Laplace's at
    ``alpha`` — the caller's level, already divided by the number of jitters (Bonferroni, for
    "some jitter": :func:`periodic_alpha`): CONFIRMED when one jitter is, REFUTED when the
    Laplace's periodicity is significantly below ``tol`` or every jitter is refuted,
    INCONCLUSIVE otherwise (the first inconclusive jitter's decision).
    """
    la = decisions.test("Laplace periodicity", values["Laplace periodicity"], threshold=tol)
    laplace = decisions.superiority(la, alpha=alpha, command=command)
    if laplace.status is Status.REFUTED:
        return laplace
    per_jitter = []
    for j in JITTERS:
        tests = [la]
        for key, threshold in (("data RMSE", rmse_tol), ("periodicity", tol)):
            label = f"FSP jitter {j:g} {key}"
            if label in values:
                tests.append(decisions.test(label, values[label], threshold=threshold, side=-1))
        if len(tests) > 1:
            per_jitter.append(decisions.superiority(tests, alpha=alpha, command=command))
    for status in (Status.CONFIRMED, Status.INCONCLUSIVE, Status.REFUTED):
        found = next((d for d in per_jitter if d.status is status), None)
        if found is not None:
            return found
    return laplace


def recorded_periodic(got: dict) -> decisions.Decision:
    """``periodic-prior`` on the stored replicates of a recorded run, at the thresholds fixed
    before measuring."""
    return periodic_decision(
        {k: tuple(v["values"]) for k, v in got.items()},
        tol=PERIODICITY_TOL,
        rmse_tol=2 * synthetic.REGRESSION_NOISE,
        alpha=periodic_alpha(True),
    )


@claim(
    paper=PAPER,
    name="periodic-prior",
    location="§4 'Qualitative evaluation', App. C.1, Fig. C.2",
    statement=(
        "Unlike the linearized Laplace, FSP-Laplace incorporates periodicity within the "
        "support of the context points through a periodic prior covariance, without periodic "
        "features."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    expected=Status.INCONCLUSIVE,
    mutants=(
        Mutant(
            "constant-counts-as-periodic",
            "'fits the data' read loosely, RMSE ≤ 2 (twice the targets' own scale): a mean "
            "that collapsed to a constant counts as periodic",
            {(sys.modules[__name__], "DATA_RMSE_TOL"): 2.0},
            expect=Status.CONFIRMED,
            reuses=(
                synthetic.fit_fsp,
                synthetic.fitted_kernel,
                synthetic.fit_laplace,
                periodic_run,
            ),
        ),
    ),
)
def _periodic(ctx: Context) -> Verdict:
    """§4 "Qualitative evaluation" and App. C.1 (Fig. C.2): "unlike the linearized Laplace,
    FSP-LAPLACE [incorporates] periodicity within the support of the context points" through
    a periodic prior covariance, without periodic features."""
    module = sys.modules[__name__]
    tol, rmse_tol = module.PERIODICITY_TOL, module.DATA_RMSE_TOL
    recorded, full, full_note = _full_mode("periodic-prior", ctx, recorded_periodic)
    design = {"looks": LOOKS[ctx.full], "level": PERIODIC_LEVEL}

    def stat(jitter, key):
        return lambda i: periodic_run(ctx.full, ctx.seed, i, jitter)[key]

    laplace, (la,) = conjunction(
        [Check("Laplace periodicity", stat(None, "periodicity"), tol, +1)], **design
    )
    jitters: dict[float, tuple[str, tuple]] = {}
    if laplace != "fails":
        for j in JITTERS:
            jitters[j] = conjunction(
                [
                    Check(f"FSP jitter {j:g} data RMSE", stat(j, "rmse"), rmse_tol, -1),
                    Check(f"FSP jitter {j:g} periodicity", stat(j, "periodicity"), tol, -1),
                ],
                **design,
            )
            if laplace == "holds" and jitters[j][0] == "holds":
                break
    results = [la, *(r for _, rs in jitters.values() for r in rs)]
    d = periodic_decision(
        {r.check.label: r.estimate.values for r in results},
        tol=tol,
        rmse_tol=rmse_tol,
        alpha=periodic_alpha(ctx.full),
        command=_command("periodic-prior"),
    )
    status = d.status
    held = [j for j in JITTERS if any(t.label.startswith(f"FSP jitter {j:g} ") for t in d.tests)]
    n = max(r.estimate.n for r in results)
    runs = [periodic_run(ctx.full, ctx.seed, i, None) for i in range(la.estimate.n)]
    if status is Status.CONFIRMED:
        summary = f"periodic and fitting the data at jitter {held[0]:g}; the Laplace is not"
    elif status is Status.REFUTED:
        summary = (
            "the Laplace mean is periodic too"
            if len(d.tests) == 1
            else "no jitter gives a periodic mean that also fits the data"
        )
    else:
        summary = f"inconclusive at {n} replicates{full_note}: " + _inconclusive(results)
    return Verdict(
        status,
        measured={r.check.label: r.estimate.text() for r in results},
        expected=f"FSP periodicity ≤ {tol} with data RMSE ≤ {rmse_tol:g} "
        f"(some jitter); Laplace periodicity > {tol}",
        tolerance=(
            "RMS(m(x + T) − m(x)) / RMS(m(x)) over the context box [−2, 2]; one-sided t of "
            "the mean over replicates at the level of one look of the sequential design, "
            f"its level shared by the {len(JITTERS)} jitters (Bonferroni)"
        ),
        summary=summary,
        evidence=[
            "Periodic prior with marginal-likelihood period, length scale and variance per "
            "replicate (data y = sin(2πx) + ε on [−1, −0.5] ∪ [0.5, 1]); Algorithm 1 with 100 "
            "uniform context points per step on [−2, 2]; the FSP posterior mean by the jitter "
            "on Σ(C, C), the Laplace on the same network without periodic features.",
            design_text(
                LOOKS[ctx.full], "replicates (data set, prior fit, initialisation)", PERIODIC_LEVEL
            ),
            *(r.text() for r in results),
            "Priors: "
            + "; ".join(
                f"replicate {i}: T = {r['period']:.3f}, ℓ = {r['lengthscale']:.2f}, σ² = "
                f"{r['variance']:.2f}"
                for i, r in enumerate(runs)
            )
            + ".",
            "The long fitted length scales make Σ(C, C) numerically low-rank: the RKHS "
            "estimate of eq. (3.7) then charges ≈ 1/jitter for every departure from exact "
            "periodicity at the context points, which a tanh network cannot meet — with a "
            "small jitter it collapses to a (periodic) constant that misses the data, with a "
            "large one it is no longer periodic.",
            *full,
        ],
        recorded=recorded,
        details={
            r.check.label: {"values": r.estimate.values, "outcome": r.outcome} for r in results
        },
        decision=d,
    )
