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
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.networks.fsp_training import train_fsp_map
from laplace_lab.paper_checks.fsp_laplace import _synthetic as synthetic
from laplace_lab.paper_checks.verification import Context, Mutant, Status, Verdict, claim

PAPER = "fsp-laplace"

#: "Rough" vs "smooth", fixed before measuring: the Matérn-½ boundary turns at least 1.5× as
#: much as the RBF one (half again as many radians of direction change).
ROUGHNESS_RATIO = 1.5
#: The data region of two moons (inputs span [−1.1, 2.1] × [−0.7, 1.1]) and its grid.
REGION = (np.linspace(-1.5, 2.5, 101), np.linspace(-1.0, 1.5, 81))


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


def _reps(full: bool) -> range:
    return range(5 if full else 2)


@claim(
    paper=PAPER,
    name="two-moons-boundary-roughness",
    location="§4 'Qualitative evaluation', App. C.1, Figs. C.5 and C.6",
    statement=(
        "On two moons FSP-Laplace shows a smooth decision boundary with an RBF prior and a "
        "rough one with a Matérn-½ prior, like the GP."
    ),
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "any-difference-is-rough",
            "'rough' read as turning more than 0.5× the RBF boundary",
            {(sys.modules[__name__], "ROUGHNESS_RATIO"): 0.5},
            expect=Status.CONFIRMED,
            reuses=(synthetic.fit_fsp, synthetic.fitted_kernel),
        ),
    ),
)
def _roughness(ctx: Context) -> Verdict:
    gx, gy = REGION
    grid = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    per, rows = {}, []
    for family in ("RBF", "Matern-1/2"):
        fsp_t, gp_t = [], []
        for rep in _reps(ctx.full):
            fsp = synthetic.fit_fsp("moons", family, ctx.full, ctx.seed, rep=rep)
            kernel, gp = synthetic.fitted_kernel("moons", family, ctx.full, ctx.seed, rep=rep)
            fsp_t.append(total_turning(fsp.predict(grid).mean))
            gp_t.append(total_turning(gp.predict_proba(grid)[:, 1], 0.5))
            rows.append(
                f"{family} replicate {rep} (ℓ = {kernel.lengthscale:.2f}, σ² = "
                f"{kernel.variance:.1f}): FSP {fsp_t[-1][0]:.1f} rad over length "
                f"{fsp_t[-1][1]:.1f} in {fsp_t[-1][2]} piece(s), GP {gp_t[-1][0]:.1f} rad"
            )
        per[family] = (np.mean([t[0] for t in fsp_t]), np.mean([t[0] for t in gp_t]))
    ratio = per["Matern-1/2"][0] / per["RBF"][0]
    gp_ratio = per["Matern-1/2"][1] / per["RBF"][1]
    threshold = sys.modules[__name__].ROUGHNESS_RATIO
    ok = ratio >= threshold
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured=round(ratio, 3),
        expected=f">= {threshold} (Matérn-½ turning / RBF turning)",
        tolerance="ratio of the mean total turning over replicates",
        evidence=(
            "Total absolute turning of the decision boundary f(x, w*) = 0 (the 0.5 contour of "
            "the predictive) on a 101 × 81 grid of the data region [−1.5, 2.5] × [−1, 1.5], "
            f"FSP networks of {len(_reps(ctx.full))} replicates (data, prior fit, "
            "initialisation), next to the Laplace GP classifier with the same prior. Mean "
            f"turning FSP: RBF {per['RBF'][0]:.1f}, Matérn-½ {per['Matern-1/2'][0]:.1f} rad "
            f"(ratio {ratio:.2f}); GP: RBF {per['RBF'][1]:.1f}, Matérn-½ "
            f"{per['Matern-1/2'][1]:.1f} rad (ratio {gp_ratio:.2f}). "
            + (
                ""
                if ok
                else "The Matérn-½ boundary is not measurably rougher. The marginal "
                "likelihood (Milios et al. labels, as in App. B.1) picks a Matérn-½ length "
                "scale longer than the data (ℓ ≈ 4), and even the GP's Matérn-½ boundary is "
                "nearly as smooth as its RBF one; between the context points the network's "
                "own smoothness sets the boundary's shape. "
            )
            + "; ".join(rows)
        ),
        details={"ratio": ratio, "gp_ratio": gp_ratio, "rows": rows},
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


@claim(
    paper=PAPER,
    name="reverts-to-prior-mean",
    location="§4 'Qualitative evaluation'; App. C.1; Figs. 1, C.1, C.5, C.6",
    statement=(
        "Unlike the Laplace and MAP baselines, whose predictions remain confident beyond the "
        "support of the data, FSP-Laplace's posterior mean reverts to the zero prior mean and "
        "its posterior variance increases."
    ),
    mutants=(
        Mutant(
            "prior-scale-ignored",
            "Algorithm 1 with the prior covariance scaled by 1e6 (no pull towards μ = 0)",
            {train_fsp_map: _flat_prior()},
            reuses=(synthetic.fit_laplace, synthetic.fitted_kernel),
        ),
    ),
)
def _reverts(ctx: Context) -> Verdict:
    rows, ok = [], True
    factor = CONFIDENCE_FACTOR
    for name in ("regression", "moons"):
        t = synthetic.task(name, full=ctx.full, seed=ctx.seed)
        far = _far_points(t)
        la = synthetic.fit_laplace(name, ctx.full, ctx.seed)
        la_far = la.predict(far)
        base = {"Laplace": _confidence(la_far, t.likelihood)}
        if t.likelihood == "binary":
            base["MAP"] = float(np.mean(np.abs(1 / (1 + np.exp(-la_far.mean)) - 0.5)))
        else:  # the MAP's mean is the Laplace mean (the linearised predictive keeps it)
            base["MAP"] = base["Laplace"]
        for family in ("RBF", "Matern-1/2"):
            fsp = synthetic.fit_fsp(name, family, ctx.full, ctx.seed)
            pf = fsp.predict(far)
            conf = _confidence(pf, t.likelihood)
            sd_ratio = float(
                np.sqrt(pf.variance).mean() / np.sqrt(fsp.predict(t.X).variance).mean()
            )
            good = all(conf <= factor * b for b in base.values()) and sd_ratio > 1.0
            ok &= good
            rows.append(
                f"{name} {family}: {'mean |p − ½|' if t.likelihood == 'binary' else 'mean |f|'} "
                f"away from the data FSP {conf:.3f}, Laplace {base['Laplace']:.3f}, MAP "
                f"{base['MAP']:.3f}; FSP sd away / at the data {sd_ratio:.2f}"
                + ("" if good else " ✗")
            )
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured="; ".join(rows),
        expected=f"FSP confidence ≤ {factor}× each baseline's; sd away / at data > 1",
        tolerance="thresholds fixed before measuring",
        evidence=(
            "Grid points of the context box at least 0.5 (1-D) / 1.0 (two moons) from every "
            "training input; confidence = mean |p − ½| of the probit predictive (two moons) or "
            "mean |f| (regression; the prior mean is 0, the targets have scale 1). "
            + "; ".join(rows)
        ),
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


@claim(
    paper=PAPER,
    name="periodic-prior",
    location="§4 'Qualitative evaluation', App. C.1, Fig. C.2",
    statement=(
        "Unlike the linearized Laplace, FSP-Laplace incorporates periodicity within the "
        "support of the context points through a periodic prior covariance, without periodic "
        "features."
    ),
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "periodic-within-40-percent",
            "'periodic' read loosely: RMS(m(x + T) − m(x)) ≤ 0.4 · RMS(m)",
            {(sys.modules[__name__], "PERIODICITY_TOL"): 0.4},
            expect=Status.CONFIRMED,
            reuses=(synthetic.fit_fsp, synthetic.fitted_kernel, synthetic.fit_laplace),
        ),
    ),
)
def _periodic(ctx: Context) -> Verdict:
    t = synthetic.task("regression", full=ctx.full, seed=ctx.seed)
    kernel, _ = synthetic.fitted_kernel("regression", "Periodic", ctx.full, ctx.seed)
    la = synthetic.fit_laplace("regression", ctx.full, ctx.seed)
    T = kernel.period
    e_la = periodicity_error(lambda x: la.predict(x).mean, T, t.low, t.high)
    runs = {}
    for jitter in JITTERS:
        fsp = synthetic.fit_fsp("regression", "Periodic", ctx.full, ctx.seed, jitter=jitter)
        runs[jitter] = (
            periodicity_error(lambda x, f=fsp: f.predict(x).mean, T, t.low, t.high),
            float(np.sqrt(np.mean((fsp.predict(t.X).mean - t.y) ** 2))),
        )
    tol = sys.modules[__name__].PERIODICITY_TOL
    good = [j for j, (e, r) in runs.items() if e <= tol and r <= DATA_RMSE_TOL]
    ok = bool(good) and e_la > tol
    rows = [f"jitter {j:g}: periodicity {e:.3f}, data RMSE {r:.3f}" for j, (e, r) in runs.items()]
    return Verdict(
        Status.CONFIRMED if ok else Status.REFUTED,
        measured={f"FSP jitter {j:g}": [round(e, 3), round(r, 3)] for j, (e, r) in runs.items()}
        | {"Laplace periodicity": round(e_la, 3)},
        expected=f"FSP periodicity ≤ {tol} with data RMSE ≤ {DATA_RMSE_TOL:g} "
        f"(some jitter); Laplace periodicity > {tol}",
        tolerance="RMS(m(x + T) − m(x)) / RMS(m(x)) over the context box [−2, 2]",
        evidence=(
            f"Periodic prior with marginal-likelihood period T = {T:.3f}, length scale "
            f"{kernel.lengthscale:.2f}, variance {kernel.variance:.2f} (data y = sin(2πx) + ε "
            "on [−1, −0.5] ∪ [0.5, 1]); Algorithm 1 with 100 uniform context points per step "
            "on [−2, 2]. FSP posterior mean by the jitter on Σ(C, C): "
            + "; ".join(rows)
            + f". Laplace (same network, no periodic features): periodicity {e_la:.3f}. The "
            "long fitted length scale makes Σ(C, C) numerically low-rank: the RKHS estimate "
            "of eq. (3.7) then charges ≈ 1/jitter for every departure from exact periodicity "
            "at the context points, which a tanh network cannot meet — with a small jitter it "
            "collapses to a (periodic) constant that misses the data, with a large one it is "
            "no longer periodic. "
            + (
                f"The claim holds at jitter {good[0]:g}."
                if ok
                else "No jitter gives a periodic mean that also fits the data."
            )
        ),
        details={"period": T, "runs": {str(j): v for j, v in runs.items()}},
    )
