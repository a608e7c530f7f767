"""A NaN divergence or coverage of the conjugate experiment is an ERROR, never a verdict."""

from __future__ import annotations

import copy

import numpy as np

from laplace_lab.paper_checks.self_supervised_laplace import conjugate
from laplace_lab.paper_checks.verification.registry import Context, Status, all_claims, run_claim


def _claim(name: str):
    return next(c for c in all_claims("self-supervised-laplace") if c.name == name)


def test_a_nan_total_variation_is_an_error_not_an_instability(monkeypatch):
    true = conjugate.experiment(0, False)
    broken = copy.deepcopy(true)
    broken["poisson-gamma"]["div"]["ASSLA"][:, -1, 2] = np.nan
    monkeypatch.setattr(conjugate, "experiment", lambda seed, full: broken)
    v = run_claim(_claim("assla-numerically-unstable-large-n"), Context())
    assert v.status is Status.ERROR and "not a finite positive number" in v.reason


def test_a_nan_variance_error_is_an_error_not_a_confirmation(monkeypatch):
    true = conjugate.ssla_predictive

    class NanVariance:
        def __init__(self, inner):
            self.inner = inner

        def interval(self, level):
            return self.inner.interval(level)

        def var(self):
            return np.nan

    monkeypatch.setattr(conjugate, "ssla_predictive", lambda *a, **k: NanVariance(true(*a, **k)))
    v = run_claim(_claim("assla-underestimates-uncertainty"), Context())
    assert v.status is Status.ERROR and "not finite" in v.reason
