"""The real-data experiments of FSP-Laplace: scores, the GP baseline, the OOD threshold,
the Mauna Loa data and prior, early stopping, and input validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from laplace_lab.networks.fsp_training import EarlyStopping, train_weight_space_map
from laplace_lab.numerics.kernels import RBF
from laplace_lab.paper_checks.fsp_laplace.experiments.mauna_loa import (
    PeriodicFeatures,
    co2_kernel,
    load_mauna_loa,
    mauna_loa_experiment,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.scores import (
    gp_predictive,
    regression_scores,
    threshold_accuracy,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.uci import ood_inputs, uci_fold


def test_gp_predictive_matches_scikit_learn():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as skk

    rng = np.random.default_rng(0)
    X, Xs = rng.uniform(-2, 2, (30, 2)), rng.uniform(-3, 3, (12, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(30)
    kernel = RBF(1.3, 0.7)
    ref = GaussianProcessRegressor(
        skk.ConstantKernel(1.3, "fixed") * skk.RBF(0.7, "fixed"), alpha=0.05, optimizer=None
    ).fit(X, y)
    ref_mean, ref_sd = ref.predict(Xs, return_std=True)
    mean, var = gp_predictive(kernel, 0.05, X, y, Xs)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.sqrt(var), ref_sd, rtol=1e-7, atol=1e-9)


def test_gp_predictive_far_from_data_is_the_prior():
    X = np.array([[0.0], [0.5]])
    mean, var = gp_predictive(RBF(2.0, 0.1), 0.01, X, np.array([1.0, -1.0]), np.array([[50.0]]))
    assert mean[0] == pytest.approx(0.0, abs=1e-12)
    assert var[0] == pytest.approx(2.0, rel=1e-12)


def test_threshold_accuracy_on_constructed_cases():
    # sorted: 0 i, 1 i, 1.5 o, 2 i, 2.5 o, 3 i, 4 o, 5 o — the best cut leaves 6 of 8 right
    assert threshold_accuracy([0, 1, 2, 3], [2.5, 4, 5, 1.5]) == pytest.approx(0.75)
    assert threshold_accuracy([0.1, 0.2, 0.3], [1.0, 2.0, 3.0]) == 1.0
    # equal scores cannot be split: the best rule calls everything one kind
    assert threshold_accuracy([1.0, 1.0], [1.0, 1.0]) == 0.5
    # uncertainty lower out of distribution: no threshold of 'out iff larger' beats chance
    assert threshold_accuracy([5.0, 6.0], [1.0, 2.0]) == 0.5


def test_regression_scores_closed_form_and_optimal_noise():
    s = regression_scores([0.0], [0.0], [0.0], 1.0, y_scale=3.0)
    assert s["ell"] == pytest.approx(-0.5 * np.log(2 * np.pi))
    rng = np.random.default_rng(1)
    y, mu, v = rng.standard_normal(50), 0.3 * rng.standard_normal(50), rng.uniform(0, 0.2, 50)
    s = regression_scores(y, mu, v, 0.4, y_scale=2.0)
    assert s["mse"] == pytest.approx(4.0 * np.mean((y - mu) ** 2))
    assert s["ell_sum"] == pytest.approx(50 * s["ell"])
    best = s["ell_optimal_noise_std"] ** 2
    at_best = regression_scores(y, mu, v, best)["ell"]
    for other in (0.9 * best, 1.1 * best):
        assert regression_scores(y, mu, v, other)["ell"] < at_best


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"variance": [-1.0]}, ValueError),
        ({"mean": [0.0, 1.0]}, ValueError),
        ({"noise_var": 0.0}, ValueError),
        ({"y": ["a"]}, TypeError),
    ],
)
def test_regression_scores_rejects_bad_input(kwargs, error):
    args = {"y": [0.0], "mean": [0.0], "variance": [0.0], "noise_var": 1.0, **kwargs}
    with pytest.raises(error):
        regression_scores(**args)


def test_periodic_features():
    f = PeriodicFeatures(0.5)(torch.tensor([[0.125], [0.25]], dtype=torch.float64))
    np.testing.assert_allclose(f.numpy(), [[0.125, 1.0, 0.0], [0.25, 0.0, -1.0]], atol=1e-15)
    with pytest.raises(ValueError, match="period"):
        PeriodicFeatures(0.0)


def test_mauna_loa_split_and_prior():
    d = load_mauna_loa()
    assert d.t_train.shape == (365, 1) and d.t_test.shape == (156, 1)  # 521 months
    assert d.years[0] == pytest.approx(1958 + 2.5 / 12)  # March 1958
    assert d.years[365] > d.years[364]  # chronological
    assert d.t_train.mean() == pytest.approx(0.0, abs=1e-12)
    assert d.y_train.std() == pytest.approx(1.0)
    k = co2_kernel(d.t_scale, d.y_scale)
    seasonal = k.k1.k1.k1.k2.k2  # the ExpSineSquared factor
    assert seasonal.periodicity == pytest.approx(1.0 / d.t_scale)
    assert "ExpSineSquared" in repr(k) and "ExpSineSquared" not in repr(
        co2_kernel(d.t_scale, d.y_scale, periodic=False)
    )
    with pytest.raises(ValueError, match="train_fraction"):
        load_mauna_loa(1.0)
    with pytest.raises(ValueError, match="methods"):
        mauna_loa_experiment(rng=0, methods=("FVI",))


def test_early_stopping_keeps_the_best_weights():
    """Training fits y = x while the validation targets are −x: the validation loss is lowest
    at the zero initialisation, so training stops after `patience` checks and keeps it."""
    model = torch.nn.Linear(1, 1, bias=False).double()
    with torch.no_grad():
        model.weight.zero_()
    x = np.linspace(-1, 1, 20)[:, None]
    stop = EarlyStopping(x, -x[:, 0], every=5, patience=3)
    fit = train_weight_space_map(
        model, x, x[:, 0], likelihood="regression", prior_precision=0.0, steps=500, lr=0.05,
        rng=0, progress=False, early_stopping=stop,
    )  # fmt: skip
    assert fit.best_step == 0
    assert len(fit.losses) == 15
    assert float(model.weight.detach()) == 0.0
    assert fit.noise_std == pytest.approx(1.0)


def test_early_stopping_validation():
    with pytest.raises(ValueError, match="X and y"):
        EarlyStopping(np.zeros((3, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="every"):
        EarlyStopping(np.zeros((3, 1)), np.zeros(3), every=0)
    model = torch.nn.Linear(1, 1).double()
    with pytest.raises(ValueError, match="adam"):
        train_weight_space_map(
            model, np.zeros((3, 1)), np.zeros(3), likelihood="regression", rng=0,
            optimizer="lbfgs", early_stopping=EarlyStopping(np.zeros((3, 1)), np.zeros(3)),
        )  # fmt: skip


def test_ood_inputs_are_standardised_rows():
    X = ood_inputs(8, 100, rng=0)
    assert X.shape == (100, 8)
    full = ood_inputs(8, 569, rng=0)
    np.testing.assert_allclose(full.mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(full.std(0), 1.0)
    with pytest.raises(ValueError, match="d"):
        ood_inputs(31, 10, rng=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"fold": 5}, "fold"), ({"methods": ("FVI",)}, "methods"), ({"name": "wine"}, "name")],
)
def test_uci_fold_rejects_bad_input(kwargs, match):
    args = {"name": "boston", "fold": 0, **kwargs}
    with pytest.raises(ValueError, match=match):
        uci_fold(args.pop("name"), args.pop("fold"), rng=0, **args)
