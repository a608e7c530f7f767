"""Data loaders: train-only standardisation, splits, synthetic toys, CSV."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.networks.data import (
    heteroscedastic_toy,
    in_between_toy,
    load,
    load_csv,
    split_standardise,
)


@pytest.mark.parametrize("name", ["diabetes", "fair", "randhie", "breast_cancer", "digits"])
def test_package_datasets_standardised_on_train_split(name):
    ds = load(name, n_train=300, n_test=100, rng=np.random.default_rng(0))
    assert ds.X_train.shape[0] == 300 and ds.X_test.shape[0] == 100
    np.testing.assert_allclose(ds.X_train.mean(0), 0.0, atol=1e-12)
    sd = ds.X_train.std(0)
    np.testing.assert_allclose(sd[sd > 0], 1.0, rtol=1e-12)
    assert abs(ds.X_test.mean()) > 1e-6  # test split uses the train scaler, not its own
    if ds.task == "regression":
        assert abs(ds.y_train.mean()) < 1e-12 and abs(ds.y_train.std() - 1) < 1e-12
    else:
        assert ds.n_classes == (10 if name == "digits" else 2)


def test_split_is_disjoint_reproducible_and_invertible():
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)
    a = split_standardise(X, y, name="t", task="regression", rng=np.random.default_rng(3))
    b = split_standardise(X, y, name="t", task="regression", rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.X_train, b.X_train)
    rows_tr = a.X_train[:, 0] * a.x_std[0] + a.x_mean[0]
    rows_te = a.X_test[:, 0] * a.x_std[0] + a.x_mean[0]
    assert not set(np.round(rows_tr)) & set(np.round(rows_te))
    assert len(rows_tr) + len(rows_te) == 20 and len(rows_te) == 5
    np.testing.assert_allclose(a.y_train * a.y_std + a.y_mean, rows_tr / 2, atol=1e-12)


def test_heteroscedastic_toy_noise_model():
    ds = heteroscedastic_toy(20000, test_fraction=0.5, rng=np.random.default_rng(1))
    x = ds.X_test[:, 0] * ds.x_std[0] + ds.x_mean[0]
    f = ds.f_test * ds.y_std + ds.y_mean
    np.testing.assert_allclose(f, 7 * np.sin(x), atol=1e-10)
    sd = ds.noise_sd_test * ds.y_std
    np.testing.assert_allclose(sd, 3 * np.abs(np.cos(x / 2)), atol=1e-10)
    z = (ds.y_test - ds.f_test) / ds.noise_sd_test
    assert abs(z.std() - 1.0) < 0.03  # standardised residuals are N(0, 1)
    # mixture: about one third of inputs near each centre
    assert abs(np.mean(np.abs(x + 4) < 1.6) - 1 / 3) < 0.02


def test_in_between_toy_has_a_gap():
    ds = in_between_toy(100, n_test=50, rng=np.random.default_rng(2))
    x = ds.X_train[:, 0] * ds.x_std[0] + ds.x_mean[0]
    assert np.all((np.abs(x) >= 0.5) & (np.abs(x) <= 1.0))
    xt = ds.X_test[:, 0] * ds.x_std[0] + ds.x_mean[0]
    np.testing.assert_allclose(xt, np.linspace(-1.5, 1.5, 50), atol=1e-12)


def test_csv_loader_canonical_split(tmp_path):
    rng = np.random.default_rng(0)
    data = np.column_stack([rng.integers(1950, 2010, 30), rng.normal(size=(30, 3))])
    path = tmp_path / "year.csv"
    np.savetxt(path, data, delimiter=",")
    ds = load_csv(path, target=0, train_rows=20, rng=np.random.default_rng(0))
    assert ds.X_train.shape == (20, 3) and ds.X_test.shape == (10, 3)
    np.testing.assert_allclose(ds.y_train * ds.y_std + ds.y_mean, data[:20, 0])


def test_bad_input(tmp_path):
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="name"):
        load("mnist", rng=rng)
    with pytest.raises(ValueError, match="n_train"):
        load("diabetes", n_train=10**6, rng=rng)
    with pytest.raises(ValueError, match="task"):
        split_standardise(np.ones((4, 1)), np.ones(4), name="t", task="poisson", rng=rng)
    with pytest.raises(ValueError, match="y"):
        split_standardise(np.ones((4, 1)), np.ones(3), name="t", task="regression", rng=rng)
    with pytest.raises(ValueError, match="X"):
        split_standardise(
            np.full((4, 1), np.nan), np.ones(4), name="t", task="regression", rng=rng
        )
    with pytest.raises(TypeError, match="rng"):
        heteroscedastic_toy(10, rng=None)
    with pytest.raises(ValueError, match="path"):
        load_csv(tmp_path / "missing.csv", rng=rng)
