"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification" (TMLR, arXiv:2605.12208) on conjugate Bayesian linear regression (§5, the
third conjugate model), the Gaussian integral of eq. (8) and the evidence approximation of
eq. (11).

The paper names "a conjugate Bayesian linear regression" among its conjugate checks without a
set-up; the one here: y = 1 − 0.5x + N(0, 1) with an intercept (q = 2), x ~ N(0, 1), prior
N(0, I), σ² = 1 known, n = 20 and 100 (quick; the approximations improve with n, so the
smallest n binds) or 20 … 10⁶ (full), prefixes of one sample. The
predictive of a regression model depends on the test input x*, so it is compared at test
inputs drawn from the input distribution.
"""

from __future__ import annotations

import sys

import numpy as np

from laplace_lab.paper_checks.self_supervised_laplace import _audits, _mutants
from laplace_lab.paper_checks.self_supervised_laplace._experiment import (
    FITTED_SLOPE_AT_THRESHOLD,
    TV_CLOSE,
    fit_decision,
)
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
    step,
)
from laplace_lab.theory import BayesianLinearRegression, divergences, ssla_predictive
from laplace_lab.theory.rates import fit_rate
from laplace_lab.theory.ssla_identities import (
    exact_log_evidence,
    gaussian_integral,
    laplace_log_evidence,
)
from laplace_lab.theory.ssla_rates import PAPER_NS, paper_model

PAPER = "self-supervised-laplace"
#: "Close to perfect" (§5) as a margin on the total variation, and where it comes from.
CLOSE_MARGIN = (
    f"δ = {TV_CLOSE} in total variation (5% of the probability mass misplaced): §5 gives no "
    "number for 'close to perfect'; fixed before measuring, the same for the three conjugate "
    "models"
)
#: Data sets drawn (replications) by mode.
REPLICATIONS = {False: 5, True: 10}
COEF = np.array([1.0, -0.5])


def _model() -> BayesianLinearRegression:
    return BayesianLinearRegression(np.zeros(2), np.eye(2), 1.0)


@cached
def _blr_data(seed: int, full: bool) -> dict:
    """The data sets' sufficient statistics per n (replication, n), the test inputs x* and the
    analytic predictives per data set, n and x*: nested lists [r][i][j] of frozen
    distributions."""
    rng = Context(seed=seed).rng("bayesian-linear-regression")
    ns = PAPER_NS if full else PAPER_NS[:2]
    n_max, m, reps = max(ns), (400 if full else 100), REPLICATIONS[full]
    model = _model()
    suff, stars, exact = [], np.zeros((reps, m, 2)), []
    for r in range(reps):
        step(r, reps, "data sets")
        X = np.c_[np.ones(n_max), rng.standard_normal(n_max)]
        y = X @ COEF + rng.standard_normal(n_max)
        stars[r] = np.c_[np.ones(m), rng.standard_normal(m)]
        suff.append([model.sufficient_statistics((X[:n], y[:n])) for n in ns])
        exact.append([[model.predictive(s, xs) for xs in stars[r]] for s in suff[r]])
    step(reps, reps, "data sets")
    return {"ns": ns, "suff": suff, "x_star": stars, "exact": exact}


@cached
def _blr_predictives(seed: int, full: bool) -> dict:
    """SSLA's and ASSLA's (likelihood Hessian) predictives and the analytic one, per data set
    (replication), n and x*: nested lists [r][i][j] of frozen distributions."""
    data = _blr_data(seed, full)
    model = _model()
    pred = {"SSLA": [], "ASSLA": [], "exact": data["exact"]}
    for suffs, x_star in zip(data["suff"], data["x_star"], strict=True):
        for label, variant in (("SSLA", "refit"), ("ASSLA", "approx")):
            pred[label].append(
                [
                    [ssla_predictive(model, s, x_new=xs, variant=variant) for xs in x_star]
                    for s in suffs
                ]
            )
    return {"ns": data["ns"], "predictives": pred, "x_star": data["x_star"][:, :, 1]}


@cached
def _blr(seed: int, full: bool) -> dict:
    """TV of SSLA and ASSLA (likelihood Hessian) to the analytic predictive, per data set
    (replication), n and x*: arrays (R, len(ns), m)."""
    res = _blr_predictives(seed, full)
    pred = res["predictives"]
    exact = np.array(pred["exact"], dtype=object)
    tv = {
        label: np.vectorize(lambda a, e: divergences(a, e).total_variation, otypes=[float])(
            np.array(pred[label], dtype=object), exact
        )
        for label in ("SSLA", "ASSLA")
    }
    var = np.vectorize(lambda a: a.var(), otypes=[float])(np.array(pred["ASSLA"], dtype=object))
    return {"ns": res["ns"], "tv": tv, "assla_var": var, "x_star": res["x_star"]}


def _exact_predictive(model, data, *, x_new=None, variant="refit", hessian="likelihood"):
    """An 'approximation' that returns the analytic predictive itself."""
    return model.predictive(data, x_new)


@claim(
    paper=PAPER,
    name="blr-ssla-assla-recover-analytic-ppd",
    location="§5 Experiments (conjugate Bayesian linear regression)",
    statement="SSLA and ASSLA recover the analytic posterior predictive of conjugate Bayesian "
    "linear regression close to perfect for n between 20 and 100 000.",
    expected=Status.INCONCLUSIVE,
    kind=Kind.EQUIVALENCE,
    setting=Setting.substitute(
        "the set-up is ours: §5 names 'a conjugate Bayesian linear regression' without its "
        "design, prior or noise (here y = 1 − 0.5x + N(0, 1), prior N(0, I), x ~ N(0, 1))"
    ),
    margin=CLOSE_MARGIN,
    mutants=(
        Mutant(
            "total-variation-twice-the-margin",
            "every total variation set to 2δ, beyond the margin",
            {divergences: _mutants.total_variation_twice_margin},
            reuses=(_blr_predictives,),
            expect=Status.REFUTED,
        ),
        Mutant(
            "analytic-instead-of-approximation",
            "the approximations replaced by the analytic predictive",
            {ssla_predictive: _exact_predictive},
            expect=Status.CONFIRMED,
            reuses=(_blr_data,),
        ),
    ),
)
def blr_recover(ctx: Context) -> Verdict:
    """§5: "We compare three types of conjugate prior models: The normal-normal model, the
    Poisson-gamma model, and a conjugate Bayesian linear regression. [...] SSLA and ASSLA are
    able to recover the analytic PPD close to perfect for sample sizes between n = 20 and
    n = 100000."

    A statement about the methods. Per data set (replication), the largest over n and method
    of the 95th percentile over test inputs x* of TV(approx, analytic); equivalence
    (non-inferiority) against :data:`CLOSE_MARGIN`.
    """
    res = _blr(ctx.seed, ctx.full)
    upto = [i for i, n in enumerate(res["ns"]) if n <= 100_000]
    q95 = {k: np.quantile(v[:, upto], 0.95, axis=2) for k, v in res["tv"].items()}
    per_rep = np.max([q.max(axis=1) for q in q95.values()], axis=0)
    worst = float(per_rep.max())
    dec = decisions.equivalence(
        decisions.test(
            "largest 95th percentile over x* of TV(approx, analytic), n = 20..10⁵",
            per_rep,
            side=-1,
        ),
        margin=TV_CLOSE,
        source=CLOSE_MARGIN,
        side=-1,
        command="laplace-lab check --full --claim "
        "self-supervised-laplace/blr-ssla-assla-recover-analytic-ppd",
    )
    tv_a = res["tv"]["ASSLA"]
    j = int(np.argmax(tv_a[0, 0]))
    var_err = float(np.max(np.abs(res["assla_var"] - 1.0)))
    return Verdict(
        dec.status,
        measured=round(worst, 4),
        expected=f"< {TV_CLOSE}",
        tolerance="per data set, the 95th percentile over test inputs x* ~ N(0, 1) of the "
        "total variation at every n in 20..10⁵, below the margin (non-inferiority)",
        decision=dec,
        summary=dec.summary,
        evidence=(
            f"{tv_a.shape[0]} data sets × {tv_a.shape[2]} test inputs, n = "
            f"{', '.join(f'{n:g}' for n in res['ns'])}. 95th percentile of TV(approx, "
            "analytic) per n, mean over data sets: "
            + "; ".join(
                f"{k} " + ", ".join(f"{v:.2g}" for v in q.mean(axis=0)) for k, q in q95.items()
            )
            + f". Worst ASSLA case of the first data set at n = 20: x* = "
            f"{res['x_star'][0, j]:+.2f}, TV {tv_a[0, 0, j]:.3f}. ASSLA's variance is σ² = 1 "
            "at every x* and n (largest "
            f"deviation {var_err:.1e}): the determinant term of eq. (17) does not depend on ŷ, "
            "so ASSLA normalises to the plug-in N(x*ᵀθ̂, σ²) and drops the epistemic term "
            "x*ᵀS_n x*, which grows with the leverage of x*; SSLA keeps it (its TV is below "
            "1e-3 at n = 20)."
        ),
        details={k: v.tolist() for k, v in q95.items()},
    )


def _eq8_right_hand_side(J: np.ndarray, J_tilde: np.ndarray) -> float:
    """Eq. (8) as printed: (2π)^{q/2} |J(θ̃)|^{−1/2}."""
    return float((2 * np.pi) ** (J.shape[0] / 2) / np.sqrt(np.linalg.det(J)))


def _corrected_eq8(J: np.ndarray, J_tilde: np.ndarray) -> float:
    """Eq. (8) with the augmented information: (2π)^{q/2} |J̃(θ̃)|^{−1/2}."""
    return float((2 * np.pi) ** (J.shape[0] / 2) / np.sqrt(np.linalg.det(J_tilde)))


@claim(
    paper=PAPER,
    name="eq8-gaussian-integral-determinant",
    location="§3, eq. (8)",
    statement="∫ exp[−½(θ − θ̃)ᵀ J̃(θ̃)(θ − θ̃)] dθ = (2π)^{q/2} |J(θ̃)|^{−1/2}.",
    expected=Status.REFUTED,
    kind=Kind.ERRATUM,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "augmented-determinant",
            "eq. (8) read with |J̃(θ̃)| (the corrected equation)",
            {_eq8_right_hand_side: _corrected_eq8},
            expect=Status.CONFIRMED,
        ),
    ),
)
def eq8_determinant(ctx: Context) -> Verdict:
    """§3, eq. (8): "∫ exp[−½(θ − θ̃)ᵀ J̃(θ̃)(θ − θ̃)] dθ = (2π)^{q/2} |Σ|^{1/2} ∫ φ_Σ(θ) dθ =
    (2π)^{q/2} |J(θ̃)|^{−1/2}" with Σ := [J̃(θ̃)]⁻¹.

    A slip of a symbol (J for J̃) that the next line, eq. (9), does not carry: an erratum of
    the text (REFUTED: the text has it).
    """
    rng = ctx.rng("eq8-gaussian-integral-determinant")
    model = _model()
    n = 20
    X = np.c_[np.ones(n), rng.standard_normal(n)]
    y = X @ COEF + rng.standard_normal(n)
    J = np.asarray(model.fisher_information(COEF, (X, y)))
    x_star = np.array([1.0, 2.0])
    J_tilde = J + np.outer(x_star, x_star) / model.noise_var
    integral = gaussian_integral(J_tilde)
    printed = _eq8_right_hand_side(J, J_tilde)
    corrected = _corrected_eq8(J, J_tilde)
    rel = abs(integral / printed - 1.0)
    # quadrature error is ≤ 1e-12 relative at 401 nodes; 1e-8 leaves a wide margin
    return Verdict(
        Status.CONFIRMED if rel <= 1e-8 else Status.REFUTED,
        summary=f"the Gaussian integral is (2π)^(q/2)|J̃|^(−1/2); eq. (8)'s |J| is off by "
        f"{rel:.3g} (relative)",
        measured=round(rel, 6),
        expected=0.0,
        tolerance="|integral / printed − 1| ≤ 1e-8",
        evidence=(
            f"Bayesian linear regression with an intercept, n = {n}, σ² = 1, new input "
            f"x* = (1, 2): J = XᵀX/σ², J̃ = J + x*x*ᵀ/σ². The integral by quadrature is "
            f"{integral:.10g}; (2π)|J̃|^(−1/2) = {corrected:.10g} (relative difference "
            f"{abs(integral / corrected - 1):.1e}); the right-hand side checked is "
            f"{printed:.10g}; the printed (2π)|J|^(−1/2) is off by the factor "
            "√(1 + x*ᵀJ⁻¹x*/σ²) = "
            f"{np.sqrt(np.linalg.det(J_tilde) / np.linalg.det(J)):.4f}. Eq. (9) and what "
            "follows use |J̃(θ̃)|, so the slip is confined to eq. (8)."
        ),
        details={"integral": integral, "printed": printed, "corrected": corrected},
    )


def _no_log_det(model, data):
    """Eq. (11) without its −½ log|J(θ̂)| term (a wrong variant)."""
    theta = np.atleast_1d(np.asarray(model.mle(data), dtype=np.float64))
    point = theta[0] if theta.size == 1 else theta
    total = model.log_likelihood(point, data) + model.log_prior(point)
    return float(np.squeeze(total)) + 0.5 * theta.size * np.log(2 * np.pi)


def _exact_with_log_n_penalty(model, data, _true=exact_log_evidence):
    """The reference evidence lowered by ½ log(n/20) (a BIC-like penalty, nil at the audited
    n = 20): eq. (11)'s error then grows with n."""
    n = len(data[1]) if isinstance(data, tuple) else np.size(data)
    return _true(model, data) - 0.5 * np.log(n / PAPER_NS[0])


@claim(
    paper=PAPER,
    name="eq11-evidence-approximation",
    location="§3, eq. (11) (Konishi & Kitagawa 2008, §9.1.3)",
    statement="log p(D) ≈ ℓ_D(θ̂) + (q/2) log 2π − ½ log|J(θ̂)| + log π(θ̂), θ̂ the MLE, with an "
    "error that vanishes as n grows.",
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(),
    mutants=(
        Mutant(
            "without-log-determinant",
            "eq. (11) without the −½ log|J(θ̂)| term",
            {laplace_log_evidence: _no_log_det},
            expect=Status.ERROR,
        ),
        Mutant(
            "reference-with-log-n-penalty",
            "the exact evidence the error is measured against lowered by ½ log(n/20), nil at "
            "the audited n = 20, so only the rate sees it",
            {(sys.modules[__name__], "exact_log_evidence"): _exact_with_log_n_penalty},
            expect=Status.REFUTED,
        ),
        Mutant(
            "rate-interval-by-z",
            "the 95% interval of each fitted rate with the normal quantile in place of "
            "Student's t (caught by the audit against scipy)",
            {fit_rate: _mutants.rate_interval_by_z},
            expect=Status.ERROR,
        ),
        FITTED_SLOPE_AT_THRESHOLD,
    ),
)
def eq11_evidence(ctx: Context) -> Verdict:
    """§3, eq. (11): "log p(D) ≈ ℓ_D(θ̂) + (q/2) log 2π − ½ log|J(θ̂)| + log π(θ̂)" (Laplace's
    method for the evidence, Konishi & Kitagawa 2008, §9.1.3); decided as a vanishing error.

    Audited in the run: on the linear regression below (n = 20), eq. (11) and the exact
    evidence must equal their terms and the marginal N(y; Xm₀, σ²I + XS₀Xᵀ) computed by scipy
    (:func:`._audits.eq11_on_linear_model`).
    """
    rng = ctx.rng("eq11-evidence-approximation")
    ns = PAPER_NS
    errors = {}
    for name in ("normal-normal", "poisson-gamma"):
        model, truth = paper_model(name)
        x = model.sample_data(max(ns), truth, rng=rng)
        errors[name] = [
            abs(laplace_log_evidence(model, x[:n]) - exact_log_evidence(model, x[:n])) for n in ns
        ]
    model = _model()
    X = np.c_[np.ones(max(ns)), rng.standard_normal(max(ns))]
    y = X @ COEF + rng.standard_normal(max(ns))
    audit = _audits.eq11_on_linear_model(
        model,
        X[: ns[0]],
        y[: ns[0]],
        laplace=laplace_log_evidence,
        exact=exact_log_evidence,
    )
    errors["linear regression"] = [
        abs(
            laplace_log_evidence(model, (X[:n], y[:n])) - exact_log_evidence(model, (X[:n], y[:n]))
        )
        for n in ns
    ]
    fits = {k: _audits.fit_rate(ns, v) for k, v in errors.items()}
    d = fit_decision({f"|eq. (11) − exact| ({k})": f for k, f in fits.items()}, 0.0, tol=0.0)
    return Verdict(
        d.status,
        decision=d,
        summary="|eq. (11) − exact log evidence| falls with slopes "
        + ", ".join(f"{f.slope:.2f}" for f in fits.values())
        + " in n",
        measured=max(f.slope for f in fits.values()),
        expected="< 0 (derived: −1)",
        tolerance="95% CI of the log-log slope of |error| on n at or below 0 (wholly above "
        "refutes)",
        evidence=(
            "|eq. (11) − exact log evidence| (exact by Bayes' rule at the posterior mean) at "
            f"n = {', '.join(f'{n:g}' for n in ns)}: "
            + "; ".join(f"{k} " + ", ".join(f"{e:.2g}" for e in v) for k, v in errors.items())
            + ". Slopes: "
            + "; ".join(
                f"{k} {f.slope:.3f} [{f.ci_low:.3f}, {f.ci_high:.3f}]" for k, f in fits.items()
            )
            + f". Audit: eq. (11) and the exact evidence of the linear regression at n = "
            f"{ns[0]} equal their terms and scipy's marginal N(y; Xm₀, σ²I + XS₀Xᵀ) to "
            f"{audit:.1e}"
            + ". The error is O(1/n): the prior's curvature and the MLE-for-MAP substitution "
            "are what eq. (11) drops. SSLA (eq. 12) subtracts two such approximations, whose "
            "errors largely cancel."
        ),
        details={k: v for k, v in errors.items()},
    )
