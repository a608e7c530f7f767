"""Heteroscedastic SSLA/ASSLA comparison: SSLA equals LA; ASSLA intervals are nested inside."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from laplace_lab.networks.training import adam_recipe
from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
    heteroscedastic_comparison,
)


def test_ssla_equals_la_and_assla_never_covers_more():
    r = heteroscedastic_comparison(
        rng=0, n_train=80, n_test=60, config=adam_recipe(lr=1e-2, epochs=20, batch_size=40)
    )
    for key, val in r["LA"].items():
        assert r["SSLA"][key] == pytest.approx(val, rel=1e-9, abs=1e-12), key
    # ASSLA's σ0² < σ0² + v at every point: its intervals lie inside LA's at every level
    for key in ("coverage_95", "coverage_90", "coverage_75", "coverage_50"):
        assert r["ASSLA"][key] <= r["LA"][key]
    assert r["noise_var"] >= 1e-3


def test_batched_fits_are_the_one_network_fits():
    import numpy as np

    from laplace_lab.paper_checks.self_supervised_laplace.experiments.network import (
        fit_heteroscedastic,
        fit_heteroscedastic_batch,
    )

    config = adam_recipe(lr=1e-2, epochs=3, batch_size=32)
    one = fit_heteroscedastic(rng=4, n_train=96, n_test=32, config=config)
    (batch,) = fit_heteroscedastic_batch(
        [np.random.default_rng(4)], n_train=96, n_test=32, config=config
    )
    np.testing.assert_allclose(batch.f_test, one.f_test, rtol=1e-4, atol=1e-5)
    assert batch.noise_var == pytest.approx(one.noise_var, rel=1e-4)
    np.testing.assert_allclose(batch.J, one.J, atol=1e-5)
    # networks of a batch are independent: another second seed leaves the first bit-identical
    a = fit_heteroscedastic_batch(
        [np.random.default_rng(1), np.random.default_rng(2)], n_train=64, n_test=16, config=config
    )
    b = fit_heteroscedastic_batch(
        [np.random.default_rng(1), np.random.default_rng(9)], n_train=64, n_test=16, config=config
    )
    assert np.array_equal(a[0].f_test, b[0].f_test)
    assert not np.array_equal(a[1].f_test, b[1].f_test)
