"""The in-run audits of the surrogate-NTK checks: wrong code gives ERROR, not a verdict.

Each test patches in a wrong implementation where the experiment looks it up and runs the
claim as ``laplace-lab check`` does (quick mode, seed 0). Cached experiments are computed
apart from the true results inside :func:`mutant_scope`, so a patched run neither reuses nor
poisons them.
"""

from __future__ import annotations

import numpy as np
import pytest

import laplace_lab.networks.data as data_module
from laplace_lab.paper_checks.surrogate_ntk_lla import _digits, _mutants, _toy, digits
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.cache import mutant_scope
from laplace_lab.paper_checks.verification.registry import Context, run_claim
from laplace_lab.papers import claims


def _claim(name: str):
    return {c.key: c for c in claims()}[f"surrogate-ntk-lla/{name}"]


def _run_apart(name: str):
    with mutant_scope():
        return run_claim(_claim(name), Context())


def test_ood_auroc_agrees_with_the_mann_whitney_count():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=40), rng.normal(0.5, size=30)
    b[:5] = a[:5]  # ties count one half
    pairs = (b[None, :] > a[:, None]).mean() + 0.5 * (b[None, :] == a[:, None]).mean()
    assert digits.ood_auroc(a, b) == pytest.approx(pairs, abs=1e-12)


# on the worker of the claims of the digits unit (``--dist loadgroup``): the true training is
# computed once for both
@pytest.mark.xdist_group(_claim("digits-biased-ood").unit)
def test_reversed_auroc_is_an_error_in_the_run(monkeypatch):
    # the AUROC is taken outside the cached experiments: the true training is reused
    monkeypatch.setattr(digits, "auroc", _mutants.reversed_auroc)
    v = run_claim(_claim("digits-biased-ood"), Context())
    assert v.status is Status.ERROR
    assert "roc_auc_score" in v.reason


def test_ood_inputs_in_the_context_are_an_error(monkeypatch):
    monkeypatch.setattr(_digits, "context_set", _mutants.context_with_ood_inputs)
    v = _run_apart("digits-scalla-predictive")
    assert v.status is Status.ERROR
    assert "OOD inputs are among the context inputs" in v.reason


def test_standardising_on_all_rows_is_an_error(monkeypatch):
    monkeypatch.setattr(data_module, "load_digits_data", _mutants.standardised_on_all_rows)
    v = _run_apart("digits-scalla-predictive")
    assert v.status is Status.ERROR
    assert "not standardised on their own rows" in v.reason


def test_toy_ood_inputs_in_the_context_are_an_error(monkeypatch):
    monkeypatch.setattr(_toy, "_far", _mutants.far_from_one_stream)
    v = _run_apart("context-points-generalise")
    assert v.status is Status.ERROR
    assert "among the context inputs" in v.reason
