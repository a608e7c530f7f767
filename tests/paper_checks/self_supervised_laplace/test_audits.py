"""The in-run audits of the SSLA claims turn wrong code into an ERROR verdict (Rodemann et al.,
arXiv:2605.12208): each test patches a wrong implementation where the claim looks it up and runs
the claim in quick mode."""

from __future__ import annotations

import numpy as np
import pytest

import laplace_lab.networks.data as data_module
from laplace_lab.numerics.laplace_variants import SpectralLaplace
from laplace_lab.paper_checks.self_supervised_laplace import _audits, _mutants, regression
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.registry import Context, run_claim
from laplace_lab.papers import claims

PAPER = "self-supervised-laplace"


def _claim(name: str):
    return {c.key: c for c in claims()}[f"{PAPER}/{name}"]


def _eq11_without_half_log_det(model, data):
    """Eq. (11) with −log|J(θ̂)| in place of −½ log|J(θ̂)|."""
    theta = np.atleast_1d(np.asarray(model.mle(data), dtype=np.float64))
    J = np.atleast_2d(np.asarray(model.fisher_information(theta, data), dtype=np.float64))
    point = theta[0] if theta.size == 1 else theta
    total = model.log_likelihood(point, data) + model.log_prior(point)
    return (
        float(np.squeeze(total)) + 0.5 * theta.size * np.log(2 * np.pi) - np.linalg.slogdet(J)[1]
    )


def test_the_audits_pass_on_the_true_code():
    assert _audits.evidence_on_linear_model() < 1e-8
    ds = data_module.heteroscedastic_toy(60, test_fraction=0.5, rng=0)
    _audits.standardised_on_training_rows(ds, "toy")
    f = _audits.fit_rate([10, 20, 40, 80], [1.0, 0.4, 0.3, 0.1])
    assert f.ci_low < f.slope < f.ci_high


def test_eq11_without_its_half_is_an_error(monkeypatch):
    monkeypatch.setattr(regression, "laplace_log_evidence", _eq11_without_half_log_det)
    v = run_claim(_claim("eq11-evidence-approximation"), Context())
    assert v.status == Status.ERROR
    assert "eq. (11)" in v.reason


def test_evidence_prior_term_without_half_is_an_error(monkeypatch):
    monkeypatch.setattr(SpectralLaplace, "log_evidence", _mutants.log_evidence_without_half)
    for name in ("table1-la-conservative", "table1-assla-undercovers-wide-intervals"):
        v = run_claim(_claim(name), Context())
        assert v.status == Status.ERROR, name
        assert "evidence" in v.reason


@pytest.mark.parametrize("name", ["eq11-evidence-approximation", "corollary1-rates"])
def test_rate_interval_by_z_is_an_error(monkeypatch, name):
    monkeypatch.setattr(_audits, "_fit_rate", _mutants.rate_interval_by_z)
    v = run_claim(_claim(name), Context())
    assert v.status == Status.ERROR
    assert "t(0.975" in v.reason


def test_standardising_on_all_rows_is_an_error(monkeypatch):
    monkeypatch.setattr(data_module, "split_standardise", _mutants.standardise_on_all_rows)
    for name in ("table1-la-conservative", "table1-ssla-varies-with-curvature"):
        v = run_claim(_claim(name), Context())
        assert v.status == Status.ERROR, name
        assert "standardised" in v.reason


def test_a_normal_interval_over_few_replicates_is_an_error(monkeypatch):
    from scipy import stats

    from laplace_lab.paper_checks.verification.replicates import Estimate

    def z_half_width(self):
        return float(stats.norm.ppf(0.5 + self.level / 2) * stats.sem(self.values))

    monkeypatch.setattr(Estimate, "half_width", property(z_half_width))
    v = run_claim(_claim("table3-auto-mpg-assla-lower-nll-than-la"), Context())
    assert v.status == Status.ERROR
    assert "Student's t" in v.reason
