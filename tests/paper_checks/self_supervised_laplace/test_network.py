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
